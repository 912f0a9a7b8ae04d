// IVF_HNSW_FLAT / SQ / PQ against LanceDB 0.39 (`npm install` in tests/interop first),
// on 20000 x 32 clustered f32 vectors in 64 partitions (the 100k x 128 is the
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
#include <lancet/index/ivf_builder.hpp>

#include "support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

using ids_t = std::vector<std::vector<std::uint64_t>>;

std::vector<float> draw(std::mt19937& rng, const std::vector<float>& centres, std::size_t count, std::size_t dim,
                        float spread) {
  std::normal_distribution<float> g(0, spread);
  const std::size_t clusters = centres.size() / dim;
  std::vector<float> out(count * dim);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t c = rng() % clusters;
    for (std::size_t j = 0; j < dim; ++j) out[i * dim + j] = centres[c * dim + j] + g(rng);
  }
  return out;
}

void write_f32(const fs::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
  REQUIRE(out.good());
}

std::vector<njson> node_json(const std::string& name, const std::vector<std::string>& args) {
  std::istringstream lines(t::node(name, args));
  std::vector<njson> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    try {
      out.push_back(njson::parse(line));
    } catch (const njson::parse_error& e) {
      FAIL(name << ": line is not JSON (" << e.what() << "): '" << line.substr(0, 600) << "'");
    }
  }
  return out;
}

struct result {
  ids_t ids;
  std::vector<std::vector<double>> distances;
};

result lance_search(const fs::path& ds, const fs::path& queries, std::size_t dim, simd::distance_type metric,
                    std::size_t ef = 100) {
  result out;
  for (const auto& j : node_json("ivf_acceptance.mjs", {"search", ds.string(), "--queries", queries.string(), "--dim",
                                                        std::to_string(dim), "--k", "10", "--nprobes", "20", "--ef",
                                                        std::to_string(ef), "--metric",
                                                        std::string(simd::distance_name(metric))})) {
    if (!j.contains("rowids")) continue;
    std::vector<std::uint64_t> ids;
    for (const auto& id : j["rowids"]) ids.push_back(std::stoull(id.get<std::string>()));
    out.ids.push_back(std::move(ids));
    std::vector<double> d;
    for (const auto& x : j["distances"]) d.push_back(x.is_number() ? x.get<double>() : NAN);
    out.distances.push_back(std::move(d));
  }
  return out;
}

result our_search(const fs::path& root, const std::vector<float>& queries, std::size_t dim) {
  const auto s = *dataset::load_latest(root.string());
  auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = 10;
  sp.nprobes = 20;
  sp.ef = 100;
  result out;
  for (std::size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<std::uint64_t> ids;
    std::vector<double> d;
    for (const auto& h : ix.searcher->search(queries.data() + q * dim, dim, sp)) {
      ids.push_back(h.row_id);
      d.push_back(h.distance);
    }
    out.ids.push_back(std::move(ids));
    out.distances.push_back(std::move(d));
  }
  return out;
}

// The exact neighbours by row address (fragments of `per` rows; `live` says which ids remain).
ids_t truth(const std::vector<float>& rows, const std::vector<float>& queries, std::size_t dim,
            simd::distance_type metric, const std::vector<std::uint64_t>& addresses) {
  ids_t out;
  for (std::size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<std::uint64_t> ids;
    for (const auto& n : index::brute_force(metric, queries.data() + q * dim, rows.data(), addresses.size(), dim, 10,
                                            addresses.data()))
      ids.push_back(n.row_id);
    out.push_back(std::move(ids));
  }
  return out;
}

double recall(const ids_t& got, const ids_t& want) {
  REQUIRE(got.size() == want.size());
  double s = 0;
  for (std::size_t q = 0; q < want.size(); ++q) {
    const std::set<std::uint64_t> w(want[q].begin(), want[q].end());
    std::size_t hit = 0;
    for (auto id : got[q]) hit += w.count(id);
    s += double(hit) / double(want[q].size());
  }
  return s / double(want.size());
}

// Queries whose ids equal (or whose distances agree at every rank within f32 rounding).
std::size_t same_neighbours(const result& a, const result& b) {
  std::size_t same = 0;
  for (std::size_t q = 0; q < a.ids.size(); ++q) {
    if (a.ids[q] == b.ids[q]) {
      ++same;
      continue;
    }
    bool close = a.ids[q].size() == b.ids[q].size();
    for (std::size_t i = 0; close && i < a.ids[q].size(); ++i)
      close = std::abs(a.distances[q][i] - b.distances[q][i]) <=
              1e-5 * std::max({std::abs(a.distances[q][i]), std::abs(b.distances[q][i]), 1e-3});
    same += close;
  }
  return same;
}

njson lance_index(const fs::path& ds) {
  const auto j = njson::parse(t::node("list_indices.mjs", {ds.string()}));
  REQUIRE(j["indices"].size() == 1);
  return j["indices"][0];
}

void copy_dataset(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

struct scenario {
  std::string label;
  simd::distance_type metric = simd::distance_type::l2;
  std::string element = "float32";
  std::size_t n = 20000, fragment_rows = 0;
  std::string delete_where;
  std::vector<index::ivf_index_type> types;
  bool compare_recall = true;  // else: LanceDB lists and searches ours only
  std::size_t queries = 100;
};

void run(const scenario& sc) {
  const std::size_t dim = 32, nq = sc.queries;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> centres(64 * dim);
  for (auto& c : centres) c = u(rng);
  const auto rows = draw(rng, centres, sc.n, dim, 0.25f);
  const auto queries = draw(rng, centres, nq, dim, 0.25f);
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
  const auto want = truth(live_rows, queries, dim, sc.metric, addresses);
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
    const auto listed = lance_index(ours);
    CHECK(listed["stats"]["indexType"] == name);
    CHECK(listed["stats"]["numIndexedRows"].get<std::uint64_t>() == live);
    CHECK(listed["stats"]["numUnindexedRows"].get<std::uint64_t>() == 0);
    const auto lance_ours = lance_search(ours, qf, dim, sc.metric);
    const auto us_ours = our_search(ours, queries, dim);
    const double r_lance_ours = recall(lance_ours.ids, want), r_us_ours = recall(us_ours.ids, want);
    MESSAGE(sc.label << " " << name << ": LanceDB over ours " << r_lance_ours << ", ours over ours " << r_us_ours);
    CHECK(r_lance_ours >= (type == index::ivf_index_type::ivf_hnsw_pq ? 0.3 : 0.8));
    if (type == index::ivf_index_type::ivf_hnsw_flat) {
      const auto same = same_neighbours(us_ours, lance_ours);
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
    CHECK(lance_index(theirs)["stats"]["indexType"] == name);
    const auto lance_theirs = lance_search(theirs, qf, dim, sc.metric);
    const auto us_theirs = our_search(theirs, queries, dim);
    const double r_lance_theirs = recall(lance_theirs.ids, want), r_us_theirs = recall(us_theirs.ids, want);
    MESSAGE(sc.label << " " << name << ": LanceDB over its own " << r_lance_theirs << ", ours over LanceDB's "
                     << r_us_theirs);
    CHECK(std::abs(r_us_theirs - r_lance_theirs) <= 0.01 + 1e-9);
    // The graphs' own loss: recall of the probed partitions' storage (ef 1000 walks
    // every node of a partition of ~300 rows) minus recall at ef 100, ours vs LanceDB's.
    const double full_ours = recall(lance_search(ours, qf, dim, sc.metric, 1000).ids, want);
    const double full_theirs = recall(lance_search(theirs, qf, dim, sc.metric, 1000).ids, want);
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
        const double r = recall(lance_search(again, qf, dim, sc.metric).ids, want);
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
  scenario sc;
  sc.label = "l2 f32";
  sc.queries = 1000;  // see the header: the PQ comparison needs them
  sc.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq,
              index::ivf_index_type::ivf_hnsw_pq};
  run(sc);
}

TEST_CASE("interop hnsw: cosine and dot, f32") {
  for (auto m : {simd::distance_type::cosine, simd::distance_type::dot}) {
    scenario sc;
    sc.label = std::string(simd::distance_name(m)) + " f32";
    sc.metric = m;
    sc.n = 10000;
    sc.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
    sc.compare_recall = m == simd::distance_type::cosine;
    run(sc);
  }
}

TEST_CASE("interop hnsw: f16 vectors; 3 fragments with deleted rows") {
  scenario f16;
  f16.label = "l2 f16";
  f16.element = "float16";
  f16.n = 10000;
  f16.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
  f16.compare_recall = false;
  run(f16);
  scenario frag;
  frag.label = "3 fragments, deletions";
  frag.n = 12000;
  frag.fragment_rows = 4000;
  frag.delete_where = "id % 7 = 3";
  frag.types = {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_sq};
  frag.compare_recall = false;
  run(frag);
}
