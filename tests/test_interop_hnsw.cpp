// IVF_HNSW_FLAT / SQ / PQ against LanceDB 0.39 (`npm install` in tests/interop first),
// on 20000 x 32 clustered f32 vectors in 64 partitions (100k x 128 is the
// bench's size), searched with nprobes 20, ef 100, k 10 as LanceDB's
// vectorSearch(...).nprobes(20).ef(100).limit(10):
//  - LanceDB lists our index with its type and row count;
//  - its recall@10 over our index is within 0.01 of its recall over the index it
//    builds itself with the same parameters (m 20, ef_construction 150; SQ and PQ:
//    LanceDB's Node API builds no IVF_HNSW_FLAT), over 1000 queries: LanceDB's PQ
//    training is random, and two of its own IVF_HNSW_PQ builds differed by 0.011 on
//    the first 100 queries of this data but by 0.0025 over 1000 (recall 0.870 /
//    0.867; 100-query slices of one build range over 0.85-0.88), and by up to 0.014
//    over 1000 between other builds (0.861-0.875), so for PQ the reference is the mean
//    of five LanceDB builds; and the graphs' loss
//    (recall at ef 1000 minus at ef 100) within 0.01 of LanceDB's for both;
//  - our search over LanceDB's index has LanceDB's recall within 0.01;
//  - over our IVF_HNSW_FLAT index our neighbours equal LanceDB's for >= 95% of queries.
// Plus cosine / dot and f16 listings and a dataset of 3 fragments with deletions.
#include <doctest/doctest.h>

#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/index/build/ivf_builder.hpp>

#include "support/interop.hpp"
#include "support/nearest.hpp"
#include "support/neighbours.hpp"
#include "support/node_json.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

using lancet::testing::id_lists;
using lancet::testing::mean_recall;
using lancet::testing::node_json;
using lancet::testing::write_f32;

// The exact neighbours by row address (fragments of `per` rows; `live` says which ids remain).
id_lists exact_neighbours(const std::vector<float>& rows, const std::vector<float>& queries, std::size_t dim,
                          simd::distance_type metric, const std::vector<std::uint64_t>& addresses) {
  id_lists out;
  for (std::size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<std::uint64_t> ids;
    for (const auto& n : index::brute_force(metric, queries.data() + q * dim, rows.data(), addresses.size(), dim, 10,
                                            addresses.data()))
      ids.push_back(n.row_id);
    out.push_back(std::move(ids));
  }
  return out;
}

njson listed_index(const fs::path& ds) {
  const auto j = njson::parse(t::node("list_indices.mjs", {ds.string()}));
  REQUIRE(j["indices"].size() == 1);
  return j["indices"][0];
}

void copy_dataset(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

struct hnsw_scenario {
  std::string label;
  simd::distance_type metric = simd::distance_type::l2;
  std::string element = "float32";
  std::size_t n = 20000, fragment_rows = 0;
  std::string delete_where;
  std::vector<index::ivf_index_type> types;
  bool compare_recall = true;  // else: LanceDB lists and searches ours only
  std::size_t queries = 100;
};

void run_hnsw_scenario(const hnsw_scenario& sc) {
  const std::size_t dim = 32, nq = sc.queries;
  t::cluster_draws<> draws(dim, 64, 0.25f, 11);
  const auto rows = draws.draw(sc.n);
  const auto queries = draws.draw(nq);
  t::temp_dir tmp("hnsw-interop");
  const fs::path vec = fs::path(tmp.path()) / "rows.f32", qf = fs::path(tmp.path()) / "queries.f32";
  write_f32(vec, rows);
  write_f32(qf, queries);
  const fs::path base = fs::path(tmp.path()) / "base";
  std::vector<std::string> create = {"create", base.string(), "--vectors", vec.string(), "--dim", std::to_string(dim),
                                     "--element", sc.element};
  if (sc.fragment_rows) create.insert(create.end(), {"--fragment-rows", std::to_string(sc.fragment_rows)});
  if (!sc.delete_where.empty()) create.insert(create.end(), {"--delete", sc.delete_where});
  const auto made = node_json("ivf_acceptance.mjs", create);
  REQUIRE(made.size() == 1);
  const std::uint64_t live = made[0]["countRows"].get<std::uint64_t>();
  // Row addresses of the live rows (fragment f holds rows [f * per, (f + 1) * per)).
  std::vector<float> live_rows;
  std::vector<std::uint64_t> addresses;
  const std::size_t per = sc.fragment_rows ? sc.fragment_rows : sc.n;
  std::set<std::uint64_t> deleted;
  if (!sc.delete_where.empty()) {
    // Only "id % 7 = 3" is used here.
    REQUIRE(sc.delete_where == "id % 7 = 3");
    for (std::uint64_t i = 3; i < sc.n; i += 7) deleted.insert(i);
  }
  std::vector<float> rounded = rows;
  if (sc.element == "float16")
    for (auto& x : rounded) x = simd::f16(x).to_float();
  for (std::size_t i = 0; i < sc.n; ++i) {
    if (deleted.count(i)) continue;
    addresses.push_back((std::uint64_t(i / per) << 32) | (i % per));
    live_rows.insert(live_rows.end(), rounded.begin() + std::ptrdiff_t(i * dim), rounded.begin() + std::ptrdiff_t((i + 1) * dim));
  }
  REQUIRE(addresses.size() == live);
  const auto want = exact_neighbours(live_rows, queries, dim, sc.metric, addresses);
  boost::asio::thread_pool pool(2);
  for (const auto type : sc.types) {
    const std::string name(index::ivf_index_type_name(type));
    CAPTURE(sc.label);
    CAPTURE(name);
    const fs::path ours = fs::path(tmp.path()) / ("ours-" + name);
    copy_dataset(base, ours);
    index::build_options o;
    o.column = "vector";
    o.type = type;
    o.metric = sc.metric;
    o.num_partitions = 64;
    if (type == index::ivf_index_type::ivf_hnsw_pq) o.num_sub_vectors = 16;
    o.m = 20;
    o.ef_construction = 150;
    o.pool = &pool;
    const auto built = index::build_ivf_index(ours.string(), o);
    CHECK(built.rows_indexed == live);
    const auto listed = listed_index(ours);
    CHECK(listed["stats"]["indexType"] == name);
    CHECK(listed["stats"]["numIndexedRows"].get<std::uint64_t>() == live);
    CHECK(listed["stats"]["numUnindexedRows"].get<std::uint64_t>() == 0);
    const auto lance_ours = t::acceptance_search(ours, qf, dim, sc.metric, 20, 100);
    const auto us_ours = t::our_search(ours, queries, dim, 10, 20, 100);
    const double r_lance_ours = mean_recall(want, lance_ours.ids), r_us_ours = mean_recall(want, us_ours.ids);
    MESSAGE(sc.label << " " << name << ": LanceDB over ours " << r_lance_ours << ", ours over ours " << r_us_ours);
    CHECK(r_lance_ours >= (type == index::ivf_index_type::ivf_hnsw_pq ? 0.3 : 0.8));
    if (type == index::ivf_index_type::ivf_hnsw_flat) {
      const auto same = t::same_neighbours(us_ours, lance_ours, 1e-5);
      MESSAGE("IVF_HNSW_FLAT: " << same << " of " << nq << " queries with LanceDB's neighbours");
      CHECK(same >= nq * 95 / 100);
      continue;
    }
    if (!sc.compare_recall) continue;
    // LanceDB's own index over a copy of the data, same parameters.
    const auto lance_build = [&](const fs::path& dir) {
      copy_dataset(base, dir);
      node_json("ivf_acceptance.mjs", {"index", dir.string(), "--type",
                                       type == index::ivf_index_type::ivf_hnsw_sq ? "hnsw_sq" : "hnsw_pq", "--partitions",
                                       "64", "--metric", std::string(simd::distance_name(sc.metric)), "--sub-vectors",
                                       "16", "--m", "20", "--ef-construction", "150"});
    };
    const fs::path theirs = fs::path(tmp.path()) / ("lance-" + name);
    lance_build(theirs);
    CHECK(listed_index(theirs)["stats"]["indexType"] == name);
    const auto lance_theirs = t::acceptance_search(theirs, qf, dim, sc.metric, 20, 100);
    const auto us_theirs = t::our_search(theirs, queries, dim, 10, 20, 100);
    const double r_lance_theirs = mean_recall(want, lance_theirs.ids), r_us_theirs = mean_recall(want, us_theirs.ids);
    MESSAGE(sc.label << " " << name << ": LanceDB over its own " << r_lance_theirs << ", ours over LanceDB's "
                     << r_us_theirs);
    CHECK(std::abs(r_us_theirs - r_lance_theirs) <= 0.01 + 1e-9);
    // The graphs' own loss: recall of the probed partitions' storage (ef 1000 walks
    // every node of a partition of ~300 rows) minus recall at ef 100, ours vs LanceDB's.
    const double full_ours = mean_recall(want, t::acceptance_search(ours, qf, dim, sc.metric, 20, 1000).ids);
    const double full_theirs = mean_recall(want, t::acceptance_search(theirs, qf, dim, sc.metric, 20, 1000).ids);
    MESSAGE(sc.label << " " << name << ": storage recall (ef 1000) ours " << full_ours << ", LanceDB's " << full_theirs);
    CHECK(std::abs((full_ours - r_lance_ours) - (full_theirs - r_lance_theirs)) <= 0.01 + 1e-9);
    // LanceDB trains PQ from random rows: its recall over its own IVF_HNSW_PQ of this
    // data moves between builds (0.861-0.875 over five, sd ~0.005; ours is seeded), so
    // for PQ ours is held to the mean of five of its builds, not to one draw.
    double r_lance_ref = r_lance_theirs;
    if (type == index::ivf_index_type::ivf_hnsw_pq) {
      constexpr int builds = 5;
      double sum = r_lance_theirs;
      for (int b = 1; b < builds; ++b) {
        const fs::path again = fs::path(tmp.path()) / ("lance-" + name + "-" + std::to_string(b));
        lance_build(again);
        const double r = mean_recall(want, t::acceptance_search(again, qf, dim, sc.metric, 20, 100).ids);
        MESSAGE(sc.label << " " << name << ": LanceDB over its own, build " << b + 1 << ": " << r);
        sum += r;
        fs::remove_all(again);
      }
      r_lance_ref = sum / builds;
      MESSAGE(sc.label << " " << name << ": LanceDB over its own, mean of " << builds << " builds " << r_lance_ref);
    }
    CHECK(std::abs(r_lance_ours - r_lance_ref) <= 0.01 + 1e-9);
  }
}

}  // namespace

TEST_CASE("interop hnsw: 20000 x 32 f32 l2, IVF_HNSW_FLAT / SQ / PQ") {
  hnsw_scenario sc;
  sc.label = "l2 f32";
  sc.queries = 1000;  // see the header: the PQ comparison needs them
  sc.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq,
              index::ivf_index_type::ivf_hnsw_pq};
  run_hnsw_scenario(sc);
}

TEST_CASE("interop hnsw: cosine and dot, f32") {
  for (auto m : {simd::distance_type::cosine, simd::distance_type::dot}) {
    hnsw_scenario sc;
    sc.label = std::string(simd::distance_name(m)) + " f32";
    sc.metric = m;
    sc.n = 10000;
    sc.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
    sc.compare_recall = m == simd::distance_type::cosine;
    run_hnsw_scenario(sc);
  }
}

TEST_CASE("interop hnsw: f16 vectors; 3 fragments with deleted rows") {
  hnsw_scenario f16;
  f16.label = "l2 f16";
  f16.element = "float16";
  f16.n = 10000;
  f16.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
  f16.compare_recall = false;
  run_hnsw_scenario(f16);
  hnsw_scenario frag;
  frag.label = "3 fragments, deletions";
  frag.n = 12000;
  frag.fragment_rows = 4000;
  frag.delete_where = "id % 7 = 3";
  frag.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
  frag.compare_recall = false;
  run_hnsw_scenario(frag);
}
