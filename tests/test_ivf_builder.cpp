// index::build_ivf_index: IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ built from a dataset
// column, written as Lance 12 writes them and committed as a new version.
//  - unit: our datasets (f32 / f16 / f64 / uint8+hamming, nulls and NaN rows skipped),
//    index files read back (partitions cover every usable row once, row ids right,
//    flat storage equals the vectors), our search recall, bad input refused with the
//    dataset unchanged (version and files), conflicts, replace, progress stages;
//  - interop (LanceDB 0.39 as the oracle, `npm install` in tests/interop first): on a
//    20000 x 32 clustered dataset LanceDB created, for each type we build an index,
//    LanceDB lists it (type, column, rows), plans its vectorSearch through it, and its
//    recall@10 (nprobes 4 of 16 partitions) is within 0.05 of the mean recall of 3
//    indexes LanceDB builds itself with the same parameters; for IVF_FLAT our own search over
//    our index returns LanceDB's neighbours exactly.
#include <doctest/doctest.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/distributed/segments.hpp>

#include "support/files.hpp"
#include "support/interop.hpp"
#include "support/nearest.hpp"
#include "support/neighbours.hpp"
#include "support/vector_batch.hpp"
#include "support/peak_memory.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

using lancet::testing::clustered;
using lancet::testing::files_under;
using lancet::testing::id_lists;
using lancet::testing::lancedb_search;
using lancet::testing::mean_recall;
using lancet::testing::write_f32;

template <class T>
arrow::record_batch vector_batch(const std::vector<T>& values, std::size_t dim, arrow::type_ptr item,
                                 const std::vector<bool>& nulls = {}) {
  const std::size_t n = values.size() / dim;
  arrow::field vf("vector", arrow::fixed_size_list(item, std::int32_t(dim)), true);
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = std::int64_t(i);
  auto idcol = index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(ids)), n);
  auto vcol = std::const_pointer_cast<arrow::array_data>(
      index::detail::fsl_array(vf, index::detail::copy_span(std::span<const T>(values)), n));
  if (!nulls.empty()) {
    aligned_buffer bits;
    bits.resize((n + 7) / 8);
    std::memset(bits.data(), 0, bits.size());
    std::int64_t nn = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!nulls[i]) bits.data()[i / 8] |= std::uint8_t(1u << (i % 8));
      else ++nn;
    }
    vcol->buffers[0] = shared_bytes(std::move(bits));
    vcol->null_count = nn;
  }
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(
      arrow::schema{{arrow::field("id", arrow::int64(), false), vf}, {}});
  b.columns = {idcol, vcol};
  return b;
}

}  // namespace

TEST_CASE("build_ivf_index: every type over f32, files and search") {
  const std::size_t n = 3000, dim = 16, nq = 30;
  const auto vecs = clustered(n, dim, 12, 0.1f, 1);
  const auto queries = clustered(nq, dim, 12, 0.12f, 2);
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq,
                    index::ivf_index_type::ivf_rq}) {
    for (auto metric : {simd::distance_type::l2, simd::distance_type::cosine, simd::distance_type::dot}) {
      const std::string label =
          std::string(index::ivf_index_type_name(type)) + " " + std::string(simd::distance_name(metric));
      INFO(label);
      t::temp_dir tmp("ivfb");
      const std::string root = (tmp.path() / "ds").string();
      dataset::write(root, vector_batch(vecs, dim, arrow::float32()));
      index::build_options o;
      o.column = "vector";
      o.type = type;
      o.num_partitions = 8;
      o.metric = metric;
      if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 8;
      std::vector<index::build_stage> stages;
      o.on_progress = [&](const index::build_progress& p) {
        if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
      };
      const auto r = index::build_ivf_index(root, o);
      CHECK(r.version == 2);
      CHECK(r.num_partitions == 8);
      CHECK(r.rows_indexed == n);
      CHECK(stages == std::vector<index::build_stage>{index::build_stage::train_ivf, index::build_stage::train_quantizer,
                                                      index::build_stage::shuffle,
                                                      index::build_stage::merge_partitions});
      const auto s = *dataset::load_latest(root);
      REQUIRE(s.version() == 2);
      const auto li = index::list_indices(s);
      REQUIRE(li.size() == 1);
      CHECK(li[0].name == "vector_idx");
      CHECK(li[0].columns == std::vector<std::string>{"vector"});
      CHECK(li[0].index_type == std::string(index::ivf_index_type_name(type)));
      CHECK(li[0].distance == metric);
      // The quantizer's parameters, from the compression its VectorIndexDetails records.
      using bits_and_subs = std::pair<std::optional<std::uint32_t>, std::optional<std::uint32_t>>;
      const bits_and_subs want = type == index::ivf_index_type::ivf_pq   ? bits_and_subs{8, 8}
                                 : type == index::ivf_index_type::ivf_sq ? bits_and_subs{8, std::nullopt}
                                 : type == index::ivf_index_type::ivf_rq ? bits_and_subs{1, std::nullopt}
                                                                         : bits_and_subs{};
      CHECK(bits_and_subs{li[0].num_bits, li[0].num_sub_vectors} == want);
      CHECK_FALSE(li[0].hnsw.has_value());
      std::vector<index::vector_index_info::file> files;
      for (const auto& f : index::index_files_in(r.directory)) files.push_back({f.path, f.size_bytes});
      CHECK(li[0].files == files);

      auto ix = index::open_vector_index(s, "vector");
      CHECK(ix.index_file.index_type == std::string(index::ivf_index_type_name(type)));
      CHECK(ix.index_file.distance == metric);
      REQUIRE(ix.storage->num_partitions() == 8);
      std::set<std::uint64_t> seen;
      for (std::size_t p = 0; p < 8; ++p) {
        const auto c = ix.storage->read_partition(p);
        for (std::size_t j = 0; j < c.size(); ++j) {
          CHECK(seen.insert(c.row_ids[j]).second);
          if (type == index::ivf_index_type::ivf_flat && metric != simd::distance_type::cosine)
            CHECK(std::memcmp(c.codes.data() + j * dim * 4, vecs.data() + c.row_ids[j] * dim, dim * 4) == 0);
        }
      }
      CHECK(seen.size() == n);
      CHECK(*seen.rbegin() == n - 1);

      // Our search over the index against brute force (floors well above chance,
      // which is ~0 here; 16-dimensional 1-bit RaBitQ is coarse).
      std::vector<std::vector<std::uint64_t>> truth;
      for (std::size_t q = 0; q < nq; ++q) {
        std::vector<std::uint64_t> ids;
        for (const auto& h : index::brute_force(metric, queries.data() + q * dim, vecs.data(), n, dim, 10))
          ids.push_back(h.row_id);
        truth.push_back(ids);
      }
      const double rc = mean_recall(truth, t::our_search(root, queries, dim, 10, 8).ids);
      MESSAGE(label << " recall@10 " << rc);
      const double floor = type == index::ivf_index_type::ivf_flat  ? 0.999
                           : type == index::ivf_index_type::ivf_rq ? 0.1
                                                                   : 0.5;
      CHECK(rc >= floor);
    }
  }
}

TEST_CASE("build_ivf_index: f16, f64, uint8 with hamming; null and non-finite rows skipped") {
  const std::size_t n = 1000, dim = 16;
  auto vecs = clustered(n, dim, 6, 0.1f, 3);
  std::vector<bool> nulls(n, false);
  nulls[5] = nulls[17] = true;
  vecs[40 * dim + 3] = std::nanf("");
  vecs[41 * dim] = INFINITY;
  SUBCASE("f16 PQ") {
    std::vector<simd::f16> h(vecs.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = simd::f16(vecs[i]);
    t::temp_dir tmp("ivfb16");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(h, dim, arrow::float16(), nulls));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_pq;
    o.num_partitions = 4;
    o.num_sub_vectors = 4;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n - 4);
    CHECK(r.rows_skipped == 4);
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.index_file.ivf.centroids->type == index::element_type::f16);
    CHECK(std::get<index::pq_params>(ix.storage->quantizer()).codebook.type == index::element_type::f16);
    std::set<std::uint64_t> seen;
    for (std::size_t p = 0; p < 4; ++p)
      for (auto id : ix.storage->read_partition(p).row_ids) seen.insert(id);
    CHECK(seen.size() == n - 4);
    for (auto bad : {5, 17, 40, 41}) CHECK(seen.count(std::uint64_t(bad)) == 0);
  }
  SUBCASE("f64 SQ") {
    std::vector<double> d(vecs.begin(), vecs.end());
    t::temp_dir tmp("ivfb64");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(d, dim, arrow::float64(), nulls));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_sq;
    o.num_partitions = 4;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n - 4);
  }
  SUBCASE("uint8 hamming flat") {
    std::vector<std::uint8_t> b(n * 8);
    std::mt19937 rng(4);
    for (auto& x : b) x = std::uint8_t(rng());
    t::temp_dir tmp("ivfbu8");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(b, 8, arrow::uint8()));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_flat;
    o.num_partitions = 4;
    o.metric = simd::distance_type::hamming;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n);
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.index_file.distance == simd::distance_type::hamming);
    index::search_params sp;
    sp.k = 1;
    sp.nprobes = 4;
    const auto hits = ix.searcher->search(b.data() + 123 * 8, 8, sp);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].row_id == 123);
    CHECK(hits[0].distance == 0);
    o.type = index::ivf_index_type::ivf_pq;
    o.name = "pq";
    CHECK_THROWS_AS(index::build_ivf_index(root, o), invalid_input_error);
  }
}

TEST_CASE("build_ivf_index: bad input leaves the dataset unchanged") {
  const std::size_t n = 500, dim = 12;
  const auto vecs = clustered(n, dim, 4, 0.1f, 5);
  t::temp_dir tmp("ivfbbad");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write(root, vector_batch(vecs, dim, arrow::float32()));
  const auto before = files_under(root, true);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_pq;
  o.num_partitions = 4;
  auto refused = [&](index::build_options x, const std::string& text) {
    INFO(text);
    try {
      index::build_ivf_index(root, x);
      FAIL("no error");
    } catch (const invalid_input_error& e) {
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
    CHECK(files_under(root, true) == before);
  };
  auto x = o;
  x.column = "id";
  refused(x, "not a fixed-size list");
  x.column = "nope";
  refused(x, "no column 'nope'");
  x = o;
  x.num_sub_vectors = 5;
  refused(x, "does not divide dimension 12");
  x = o;
  x.num_partitions = 501;
  refused(x, "cannot build 501 partitions from 500");
  x = o;
  x.type = index::ivf_index_type::ivf_rq;
  refused(x, "not a multiple of 8");
  x = o;
  x.metric = simd::distance_type::hamming;
  refused(x, "hamming distance needs a column of uint8");

  // A name that exists: refused unless replace.
  o.num_sub_vectors = 4;
  const auto r1 = index::build_ivf_index(root, o);
  CHECK(r1.version == 2);
  const auto after1 = files_under(root, true);
  try {
    index::build_ivf_index(root, o);
    FAIL("no error");
  } catch (const invalid_input_error& e) {
    CHECK(std::string(e.what()).find("already has an index named 'vector_idx'") != std::string::npos);
  }
  CHECK(files_under(root, true) == after1);
  o.replace = true;
  o.type = index::ivf_index_type::ivf_flat;
  o.num_sub_vectors.reset();
  const auto r2 = index::build_ivf_index(root, o);
  CHECK(r2.version == 3);
  const auto li = index::list_indices(*dataset::load_latest(root));
  REQUIRE(li.size() == 1);
  CHECK(li[0].index_type == "IVF_FLAT");

  // Rows appended while the index is built: as Lance, the index commits on top of
  // the append, covering the fragments it read (the new ones stay unindexed).
  const auto before_conflict = files_under(root, true);
  o.name = "other";
  o.replace = false;
  bool appended = false;
  o.on_progress = [&](const index::build_progress& p) {
    if (p.stage == index::build_stage::shuffle && !appended) {
      appended = true;
      dataset::write_options wo;
      wo.mode = dataset::write_mode::append;
      dataset::write(root, vector_batch(vecs, dim, arrow::float32()), wo);
    }
  };
  const auto other = index::build_ivf_index(root, o);
  const auto s = *dataset::load_latest(root);
  CHECK(s.version() == 5);  // the append, then the index
  CHECK(other.version == 5);
  REQUIRE(index::list_indices(s).size() == 2);
  const auto appended_fragment = s.manifest().fragments.back().id;
  const auto covered = index::list_indices(s)[1].fragment_ids;
  CHECK(std::find(covered.begin(), covered.end(), appended_fragment) == covered.end());
  std::size_t dirs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "_indices")) dirs += e.is_directory();
  CHECK(dirs == 3);  // the replaced index's directory, the replacement's and the other's
}

TEST_CASE("build_ivf_index: default partitions follow Lance's target partition sizes") {
  CHECK(index::recommended_num_partitions(100000, index::default_target_partition_size(index::ivf_index_type::ivf_flat)) == 24);
  CHECK(index::recommended_num_partitions(100000, index::default_target_partition_size(index::ivf_index_type::ivf_pq)) == 12);
  CHECK(index::recommended_num_partitions(100, 8192) == 1);
  CHECK(index::recommended_num_partitions(1ull << 40, 8192) == 4096);
  CHECK(index::parse_ivf_index_type("IVF_PQ") == index::ivf_index_type::ivf_pq);
  CHECK_THROWS_AS(index::parse_ivf_index_type("hnsw"), invalid_input_error);
}

namespace {

// LanceDB's recall@10 over indexes it builds itself on `ds` (its training is unseeded,
// so one build is noisy): the mean over `builds` builds, the first writing the dataset
// from `vectors`, the next ones replacing the index. `each` lists the builds' recalls.
struct lancedb_own_recall {
  double mean = 0;
  std::string each;
};
lancedb_own_recall lancedb_mean_recall(const fs::path& ds, const fs::path& vectors, std::size_t dim,
                                       const std::vector<std::string>& index_args, const fs::path& qf,
                                       const std::vector<std::string>& search_args,
                                       const std::vector<std::vector<std::uint64_t>>& truth, int builds) {
  lancedb_own_recall out;
  std::ostringstream each;
  for (int b = 0; b < builds; ++b) {
    std::vector<std::string> args = {ds.string(), b == 0 ? "--create" : "--replace", "--vectors", vectors.string(),
                                     "--dim", std::to_string(dim)};
    args.insert(args.end(), index_args.begin(), index_args.end());
    t::node("create_index.mjs", args);
    const auto hits = lancedb_search(ds, qf, dim, 10, search_args);
    REQUIRE(hits.ids.size() == truth.size());
    const double rc = mean_recall(truth, hits.ids);
    each << (b ? ", " : "") << rc;
    out.mean += rc / builds;
  }
  out.each = each.str();
  return out;
}

}  // namespace

// Recall is compared with the mean over `lance_builds` of LanceDB's own indexes: its
// training is unseeded, and on this data one build's recall varies more than the 0.05
// tolerance. Measured (bench/RESULTS.md, "IVF partition quality"), 500 queries, nprobes 4,
// LanceDB searching: IVF_PQ per LanceDB build 0.467-0.542 (mean 0.516 over 6, sd 0.027),
// ours 0.484-0.545 over 8 seeds (mean 0.525; seed 42 0.515); IVF_FLAT LanceDB 0.906-0.948
// (mean 0.934 over 4; 0.943 over 8 earlier), ours seed 42 0.921; IVF_RQ (1 bit) LanceDB
// 0.156-0.176 (mean 0.166), ours 0.163. The mean of 3 builds has sd about 0.016 (PQ):
// 0.05 is 3.1 of those beyond the gap of seed 42. IVF_FLAT at these 300 queries: ours
// 0.911, LanceDB over 7 builds 0.898-0.974 (mean 0.941, sd 0.022; one run's 3 gave
// 0.955), so the 3-build mean has sd 0.013 and the gap is 0.030: 0.07 is 3.1 sd beyond
// it (0.05 was not enough; the one-build check needed 0.08).
TEST_CASE("interop: LanceDB lists and searches the indexes we build, recall like its own") {
  const std::size_t n = 20000, dim = 32, nq = 300, parts = 16, nprobes = 4;
  const int lance_builds = 3;
  const auto vecs = clustered(n, dim, 24, 0.25f, 11);
  const auto queries = clustered(nq, dim, 24, 0.3f, 12);
  t::temp_dir tmp("ivfb-interop");
  write_f32(tmp.path() / "vectors.f32", vecs);
  write_f32(tmp.path() / "queries.f32", queries);
  const auto qf = tmp.path() / "queries.f32";

  struct variant {
    index::ivf_index_type type;
    std::string lancedb_type;  // "" : LanceDB 0.39's Node API cannot build it
    std::vector<std::string> lancedb_args;
    std::string list_type, stats_type;
  };
  const std::vector<variant> variants = {
      {index::ivf_index_type::ivf_flat, "ivf_flat", {}, "IvfFlat", "IVF_FLAT"},
      {index::ivf_index_type::ivf_pq, "ivf_pq", {"--sub-vectors", "8"}, "IvfPq", "IVF_PQ"},
      {index::ivf_index_type::ivf_sq, "", {}, "IvfSq", "IVF_SQ"},
      {index::ivf_index_type::ivf_rq, "ivf_rq", {"--bits", "1"}, "IvfRq", "IVF_RQ"},
  };
  std::optional<t::neighbour_lists> exact;
  for (const auto& v : variants) {
    const std::string name(index::ivf_index_type_name(v.type));
    INFO(name);
    const auto ds = tmp.path() / ("ours-" + name);
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--type", "none"});
    if (!exact) exact = lancedb_search(ds, qf, dim, 10, {"--bypass"});
    index::build_options o;
    o.column = "vector";
    o.type = v.type;
    o.num_partitions = parts;
    if (v.type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 8;
    const auto r = index::build_ivf_index(ds.string(), o);

    const auto li = njson::parse(t::node("list_indices.mjs", {ds.string()}));
    REQUIRE(li["indices"].size() == 1);
    const auto& ix = li["indices"][0];
    CHECK(ix["name"] == "vector_idx");
    CHECK(ix["indexType"] == v.list_type);
    CHECK(ix["columns"] == njson::array({"vector"}));
    CHECK(ix["indexUuid"] == r.index.uuid.to_string());
    CHECK(ix["stats"]["numIndexedRows"] == n);
    CHECK(ix["stats"]["numUnindexedRows"] == 0);
    CHECK(ix["stats"]["indexType"] == v.stats_type);
    CHECK(ix["stats"]["distanceType"] == "l2");

    std::string plan;
    const auto lance_on_ours =
        lancedb_search(ds, qf, dim, 10, {"--nprobes", std::to_string(nprobes)}, &plan);
    CHECK(plan.find("ANNIvfPartition: uuid=" + r.index.uuid.to_string()) != std::string::npos);
    REQUIRE(lance_on_ours.ids.size() == nq);
    const double rc_ours = mean_recall(exact->ids, lance_on_ours.ids);
    const auto our_hits = t::our_search(ds, queries, dim, 10, nprobes).ids;
    const double rc_self = mean_recall(exact->ids, our_hits);

    if (v.type == index::ivf_index_type::ivf_flat) {
      // Our search over our index: LanceDB's neighbours exactly.
      for (std::size_t q = 0; q < nq; ++q) {
        INFO("query " << q);
        CHECK(our_hits[q] == lance_on_ours.ids[q]);
      }
    }

    if (v.lancedb_type.empty()) {
      // No LanceDB-built IVF_SQ to compare with: LanceDB's search over ours must agree
      // with our own search's recall, and be high (8-bit SQ is nearly exact here).
      MESSAGE(name << ": LanceDB on ours " << rc_ours << ", ours on ours " << rc_self);
      CHECK(std::abs(rc_ours - rc_self) <= 0.05);
      CHECK(rc_ours >= 0.8);
      continue;
    }
    // LanceDB's own indexes on its own dataset of the same rows.
    std::vector<std::string> index_args = {"--type", v.lancedb_type, "--partitions", std::to_string(parts)};
    index_args.insert(index_args.end(), v.lancedb_args.begin(), v.lancedb_args.end());
    const auto theirs = lancedb_mean_recall(tmp.path() / ("lancedb-" + name), tmp.path() / "vectors.f32", dim,
                                            index_args, qf, {"--nprobes", std::to_string(nprobes)}, exact->ids,
                                            lance_builds);
    const double rc_theirs = theirs.mean;
    MESSAGE(name << " recall@10 (nprobes " << nprobes << " of " << parts << "): LanceDB on ours " << rc_ours
                 << ", LanceDB on its own " << rc_theirs << " (mean of " << theirs.each << "), ours on ours "
                 << rc_self);
    CHECK(rc_ours >= rc_theirs - (v.type == index::ivf_index_type::ivf_flat ? 0.07 : 0.05));
    CHECK(std::abs(rc_self - rc_ours) <= 0.05);
  }
}

namespace {

// How well centroids partition `vecs` for IVF_FLAT search, computed here rather than
// through LanceDB: each row goes to its nearest centroid and a query searches the rows
// of its `nprobes` nearest centroids exactly, which is what LanceDB's IVF_FLAT search
// does (the test above checks our search returns LanceDB's neighbours exactly).
struct partition_quality {
  std::vector<double> recall;  // recall@10 per entry of nprobes
  double objective = 0;        // k-means objective over all rows: sum of squared l2
  std::size_t largest = 0;     // rows in the largest partition
};

struct partition_judge {
  std::size_t n, dim, nq;
  const std::vector<float>& vecs;
  std::vector<float> qd;  // nq x n squared distances
  std::vector<std::set<std::uint32_t>> truth;

  partition_judge(const std::vector<float>& v, const std::vector<float>& queries, std::size_t d)
      : n(v.size() / d), dim(d), nq(queries.size() / d), vecs(v), qd(nq * n), truth(nq) {
    for (std::size_t q = 0; q < nq; ++q) {
      for (std::size_t r = 0; r < n; ++r) qd[q * n + r] = sq_l2(queries.data() + q * dim, vecs.data() + r * dim);
      truth[q] = top10(q, nullptr);
    }
  }
  float sq_l2(const float* a, const float* b) const {
    float s = 0;
    for (std::size_t t = 0; t < dim; ++t) s += (a[t] - b[t]) * (a[t] - b[t]);
    return s;
  }
  std::set<std::uint32_t> top10(std::size_t q, const std::vector<char>* allowed) const {
    std::vector<std::pair<float, std::uint32_t>> c;
    for (std::size_t r = 0; r < n; ++r)
      if (!allowed || (*allowed)[r]) c.push_back({qd[q * n + r], std::uint32_t(r)});
    const std::size_t m = std::min<std::size_t>(10, c.size());
    std::partial_sort(c.begin(), c.begin() + std::ptrdiff_t(m), c.end());
    std::set<std::uint32_t> out;
    for (std::size_t i = 0; i < m; ++i) out.insert(c[i].second);
    return out;
  }
  partition_quality judge(std::span<const float> cents, const std::vector<float>& queries,
                          const std::vector<std::size_t>& nprobes) const {
    const std::size_t k = cents.size() / dim;
    REQUIRE(k * dim == cents.size());
    partition_quality pq;
    std::vector<std::uint32_t> part(n);
    std::vector<std::size_t> sizes(k);
    for (std::size_t r = 0; r < n; ++r) {
      float best = std::numeric_limits<float>::infinity();
      for (std::size_t j = 0; j < k; ++j) {
        const float d = sq_l2(vecs.data() + r * dim, cents.data() + j * dim);
        if (d < best) best = d, part[r] = std::uint32_t(j);
      }
      pq.objective += best;
      ++sizes[part[r]];
    }
    pq.largest = *std::max_element(sizes.begin(), sizes.end());
    for (const std::size_t np : nprobes) {
      double hits = 0;
      for (std::size_t q = 0; q < nq; ++q) {
        std::vector<std::pair<float, std::uint32_t>> cd;
        for (std::size_t j = 0; j < k; ++j) cd.push_back({sq_l2(queries.data() + q * dim, cents.data() + j * dim), std::uint32_t(j)});
        std::partial_sort(cd.begin(), cd.begin() + std::ptrdiff_t(np), cd.end());
        std::vector<char> probed(k, 0), allowed(n);
        for (std::size_t i = 0; i < np; ++i) probed[cd[i].second] = 1;
        for (std::size_t r = 0; r < n; ++r) allowed[r] = probed[part[r]];
        for (auto id : top10(q, &allowed)) hits += double(truth[q].count(id));
      }
      pq.recall.push_back(hits / double(10 * nq));
    }
    return pq;
  }
};

}  // namespace

// Partition quality, the part of IVF recall k-means decides: the recall of IVF_FLAT at
// low nprobes and the k-means objective of our builder's IVF training (eight seeds, so
// a fixed draw is not mistaken for the method) against the mean over five IVF_FLAT
// indexes LanceDB builds itself (its training is unseeded). Both run Lance's k-means
// (random initial rows, 256 x k sample, 50 iterations, tolerance 1e-4): on this data
// (24 blobs into 16 partitions) a build's recall depends mostly on its initial rows.
// Measured over 8 LanceDB builds / 12 of our seeds (bench/RESULTS.md, "IVF partition
// quality"): recall@10 at nprobes 4 per LanceDB build 0.927-0.956 (mean 0.943, sd
// 0.010), ours 0.918-0.970; nprobes 2: LanceDB 0.728-0.806 (sd 0.029); objective per
// LanceDB build 93.0k-107.7k (sd 4.7%). Ours is deterministic, so the margins only
// cover the spread of LanceDB's 5-build mean (sd 0.0046 at nprobes 4, 0.013 at 2,
// 2.1% objective): 0.02, 0.04 and 6% are each more than 2.8 of those sd, and a
// k-means cut to one iteration (0.873 at nprobes 4) fails.
TEST_CASE("interop: our IVF partitions are as good as LanceDB's own (mean over its builds)") {
  const std::size_t n = 20000, dim = 32, nq = 500, parts = 16;
  const std::vector<std::size_t> nprobes = {2, 4};
  const auto vecs = clustered(n, dim, 24, 0.25f, 11);  // the data of the test above
  const auto queries = clustered(nq, dim, 24, 0.3f, 12);
  t::temp_dir tmp("ivfb-partitions");
  write_f32(tmp.path() / "vectors.f32", vecs);
  const partition_judge judge(vecs, queries, dim);

  auto report = [&](const std::string& who, const partition_quality& q) {
    MESSAGE(who << ": recall@10 nprobes 2 " << q.recall[0] << ", nprobes 4 " << q.recall[1] << ", objective "
                << q.objective << ", largest partition " << q.largest << " of " << n);
  };
  partition_quality lance{std::vector<double>(nprobes.size()), 0, 0};
  const int lance_builds = 5;
  for (int b = 0; b < lance_builds; ++b) {
    const auto ds = tmp.path() / ("lancedb-" + std::to_string(b));
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--type", "ivf_flat", "--partitions", std::to_string(parts)});
    const auto ix = index::open_vector_index(*dataset::load_latest(ds.string()), "vector");
    REQUIRE(ix.index_file.ivf.centroids);
    const auto q = judge.judge(ix.index_file.ivf.centroids->values<float>(), queries, nprobes);
    report("LanceDB build " + std::to_string(b + 1), q);
    for (std::size_t i = 0; i < nprobes.size(); ++i) lance.recall[i] += q.recall[i] / lance_builds;
    lance.objective += q.objective / lance_builds;
  }

  const auto ours_ds = tmp.path() / "ours";
  t::node("create_index.mjs", {ours_ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(),
                               "--dim", std::to_string(dim), "--type", "none"});
  partition_quality ours{std::vector<double>(nprobes.size()), 0, 0};
  const std::vector<std::uint64_t> seeds = {42, 1, 2, 3, 4, 5, 6, 7};  // 42: build_options' default
  for (const auto seed : seeds) {
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_flat;
    o.num_partitions = parts;
    o.seed = seed;
    const auto model = index::train_model(ours_ds.string(), o).ivf;
    const auto q = judge.judge(model.centroids.values<float>(), queries, nprobes);
    report("ours, seed " + std::to_string(seed), q);
    for (std::size_t i = 0; i < nprobes.size(); ++i) ours.recall[i] += q.recall[i] / double(seeds.size());
    ours.objective += q.objective / double(seeds.size());
  }
  MESSAGE("mean over LanceDB's " << lance_builds << " builds: recall@10 " << lance.recall[0] << " / " << lance.recall[1]
                                 << ", objective " << lance.objective << "; ours over " << seeds.size()
                                 << " seeds: " << ours.recall[0] << " / " << ours.recall[1] << ", objective "
                                 << ours.objective);
  CHECK(ours.recall[0] >= lance.recall[0] - 0.04);
  CHECK(ours.recall[1] >= lance.recall[1] - 0.02);
  CHECK(ours.objective <= lance.objective * 1.06);
}

TEST_CASE("interop: f16 vectors, every type listed by LanceDB; IVF_FLAT searched exactly") {
  const std::size_t n = 2000, dim = 16, nq = 10, parts = 4;
  const auto vecs = clustered(n, dim, 8, 0.2f, 31);
  const auto queries = clustered(nq, dim, 8, 0.25f, 32);
  t::temp_dir tmp("ivfb-f16");
  write_f32(tmp.path() / "vectors.f32", vecs);
  write_f32(tmp.path() / "queries.f32", queries);
  for (auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq, index::ivf_index_type::ivf_rq,
                    index::ivf_index_type::ivf_flat}) {
    const std::string name(index::ivf_index_type_name(type));
    INFO(name);
    const auto ds = tmp.path() / ("ds-" + name);
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--element", "float16", "--type", "none"});
    index::build_options o;
    o.column = "vector";
    o.type = type;
    o.num_partitions = parts;
    if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 4;
    const auto r = index::build_ivf_index(ds.string(), o);
    const auto li = njson::parse(t::node("list_indices.mjs", {ds.string()}));
    REQUIRE(li["indices"].size() == 1);
    CHECK(li["indices"][0]["indexUuid"] == r.index.uuid.to_string());
    CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
    CHECK(li["indices"][0]["stats"]["indexType"] == name);
    std::string plan;
    const auto lance = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", std::to_string(parts)},
                                      &plan);
    CHECK(plan.find("ANNIvfPartition: uuid=" + r.index.uuid.to_string()) != std::string::npos);
    REQUIRE(lance.ids.size() == nq);
    if (type == index::ivf_index_type::ivf_flat) {
      // Every partition probed: LanceDB's exact neighbours, and ours.
      const auto exact = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass"});
      const auto ours = t::our_search(ds, queries, dim, 10, parts).ids;
      for (std::size_t q = 0; q < nq; ++q) {
        INFO("query " << q);
        CHECK(lance.ids[q] == exact.ids[q]);
        CHECK(ours[q] == lance.ids[q]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Bounded memory (spilled shuffle), precomputed inputs, distributed segments.
// ---------------------------------------------------------------------------------

namespace {

// A dataset of `chunks` appends of `rows` clustered f32 vectors each (one fragment
// per append unless max_rows_per_file cuts more); row i of the whole has id i.
void write_clustered_dataset(const std::string& root, std::size_t chunks, std::size_t rows, std::size_t dim,
                             unsigned seed, std::uint64_t max_rows_per_file = 1 << 20,
                             std::optional<std::uint64_t> max_page_bytes = std::nullopt) {
  for (std::size_t c = 0; c < chunks; ++c) {
    auto vecs = clustered(rows, dim, 16, 0.2f, seed);  // same centres every chunk
    {
      std::mt19937 rng(seed + unsigned(c) + 1);  // different rows every chunk
      std::normal_distribution<float> g(0, 0.05f);
      for (auto& v : vecs) v += g(rng);
    }
    auto b = vector_batch(vecs, dim, arrow::float32());
    dataset::write_options wo;
    wo.mode = c == 0 ? dataset::write_mode::create : dataset::write_mode::append;
    wo.max_rows_per_file = max_rows_per_file;
    if (max_page_bytes) wo.file_options.data_cache_bytes = wo.file_options.max_page_bytes = *max_page_bytes;
    dataset::write(root, b, wo);
  }
}

index::partition_contents partition_of(const std::string& dir, std::size_t p, std::size_t* parts = nullptr) {
  index::storage_reader<io::file_source> r(io::file_source(dir + "/auxiliary.idx"));
  if (parts) *parts = r.num_partitions();
  return r.read_partition(p);
}

void check_same_storage(const std::string& a, const std::string& b) {
  index::storage_reader<io::file_source> ra(io::file_source(a + "/auxiliary.idx"));
  index::storage_reader<io::file_source> rb(io::file_source(b + "/auxiliary.idx"));
  REQUIRE(ra.num_partitions() == rb.num_partitions());
  CHECK(ra.ivf().lengths == rb.ivf().lengths);
  for (std::size_t p = 0; p < ra.num_partitions(); ++p) {
    INFO("partition " << p);
    const auto x = ra.read_partition(p), y = rb.read_partition(p);
    CHECK(x.row_ids == y.row_ids);
    REQUIRE(x.codes.size() == y.codes.size());
    CHECK(std::memcmp(x.codes.data(), y.codes.data(), x.codes.size()) == 0);
    CHECK(x.add_factors == y.add_factors);
    CHECK(x.scale_factors == y.scale_factors);
    CHECK(x.error_factors == y.error_factors);
  }
  const auto ia = index::read_index_file(a + "/index.idx"), ib = index::read_index_file(b + "/index.idx");
  CHECK(ia.ivf.centroids->data.size() == ib.ivf.centroids->data.size());
  CHECK(std::memcmp(ia.ivf.centroids->data.data(), ib.ivf.centroids->data.data(), ia.ivf.centroids->data.size()) == 0);
}


}  // namespace

TEST_CASE("build_ivf_index: a given quantizer needs the IVF centroids only when its codes depend on them") {
  const std::size_t dim = 16;
  t::temp_dir tmp("ivfb-given");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 2, 1000, dim, 9);
  index::build_options o;
  o.column = "vector";
  o.num_partitions = 4;
  o.commit = false;
  for (auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_rq}) {
    INFO(index::ivf_index_type_name(type));
    o.type = type;
    o.quantizer.reset();
    o.quantizer = index::train_model(root, o).ivf.quantizer;
    CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("needs the IVF centroids it was trained with"),
                         invalid_input_error);
  }
  // SQ's codes and flat's are the vectors' own: the IVF centroids are trained here.
  o.type = index::ivf_index_type::ivf_sq;
  o.quantizer.reset();
  const auto sq = index::train_model(root, o).ivf.quantizer;
  o.quantizer = sq;
  auto r = index::build_ivf_index(root, o);
  CHECK(r.rows_indexed == 2000);
  CHECK(index::storage_reader<io::file_source>(io::file_source(r.directory + "/auxiliary.idx")).quantizer() == sq);

  // Flat storage of another element type than the column's: float32 rows stored as f16.
  o.type = index::ivf_index_type::ivf_flat;
  o.quantizer = index::flat_params{std::uint32_t(dim), index::element_type::f16};
  r = index::build_ivf_index(root, o);
  CHECK(r.rows_indexed == 2000);
  const auto ds = dataset::dataset::open(root);
  const auto rows = ds.to_batch({.columns = {"vector"}, .with_row_id = true});
  const float* values = rows.columns[0]->children[0]->values<float>();
  const auto* row_ids = rows.columns[1]->values<std::uint64_t>();
  std::map<std::uint64_t, std::size_t> at;
  for (std::int64_t i = 0; i < rows.num_rows(); ++i) at[row_ids[i]] = std::size_t(i);
  std::size_t parts = 0, checked = 0;
  partition_of(r.directory, 0, &parts);
  for (std::size_t p = 0; p < parts; ++p) {
    const auto c = partition_of(r.directory, p);
    REQUIRE(c.codes.size() == c.size() * dim * 2);
    for (std::size_t i = 0; i < c.size(); ++i, ++checked)
      for (std::size_t j = 0; j < dim; ++j) {
        simd::f16 h;
        std::memcpy(&h, c.codes.data() + (i * dim + j) * 2, 2);
        CHECK(h.bits == simd::f16(values[at.at(c.row_ids[i]) * dim + j]).bits);
      }
  }
  CHECK(checked == 2000);
  // uint8 storage is for uint8 (hamming) columns only.
  o.quantizer = index::flat_params{std::uint32_t(dim), index::element_type::u8};
  CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("encoded from rows of the same kind"),
                       unsupported_error);
}

TEST_CASE("build_ivf_index: a spilled shuffle writes the same index as an in-memory one") {
  const std::size_t dim = 32;
  t::temp_dir tmp("ivfb-spill");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 3, 7000, dim, 5);
  const std::uint64_t n = 21000;
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq,
                    index::ivf_index_type::ivf_rq}) {
    for (auto metric : {simd::distance_type::l2, simd::distance_type::cosine}) {
      INFO(index::ivf_index_type_name(type) << " " << simd::distance_name(metric));
      index::build_options o;
      o.column = "vector";
      o.type = type;
      o.metric = metric;
      o.num_partitions = 8;
      if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 4;
      const auto model = index::train_model(root, o).ivf;
      CHECK(model.centroids.rows == 8);
      CHECK(model.centroids.cols == dim);
      CHECK(index::index_type_name(model.quantizer) == std::string(index::ivf_index_type_name(type)));
      o.ivf_centroids = model.centroids;
      o.quantizer = model.quantizer;
      o.commit = false;
      const auto big = index::build_ivf_index(root, o);
      o.memory_budget_bytes = 1 << 20;
      const auto small = index::build_ivf_index(root, o);
      CHECK(big.shuffle_runs == 0);
      if (type == index::ivf_index_type::ivf_flat) CHECK(small.shuffle_runs >= 4);
      CHECK(big.rows_indexed == n);
      CHECK(small.rows_indexed == n);
      CHECK(!fs::exists(small.directory + "/_shuffle"));
      check_same_storage(big.directory, small.directory);
      // Nothing was committed.
      CHECK(dataset::load_latest(root)->version() == 3);
      CHECK(dataset::load_latest(root)->file.indices.empty());
    }
  }
  // A trained build over data 3x the budget: every row indexed once, spilled runs
  // removed, the index committed.
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_sq;  // 44 bytes a row: spilled at 1 MiB
  o.num_partitions = 8;
  o.memory_budget_bytes = 1 << 20;
  o.sample_rate = 64;
  const auto r = index::build_ivf_index(root, o);
  CHECK(r.shuffle_runs >= 1);
  CHECK(r.rows_indexed == n);
  CHECK(r.version == 4);
  std::set<std::uint64_t> ids;
  std::size_t parts = 0;
  partition_of(r.directory, 0, &parts);
  for (std::size_t p = 0; p < parts; ++p)
    for (auto id : partition_of(r.directory, p).row_ids) CHECK(ids.insert(id).second);
  CHECK(ids.size() == n);
  CHECK(files_under(r.directory, true).size() == 2);  // index.idx, auxiliary.idx
}

// Lance's 4-bit scan ranks the first 200 rows of a partition exactly (quantizer/
// quantizer/pq/row_order.hpp): 4-bit l2 / cosine partitions go nearest to the centroid first, by
// the norm of the reconstructed residual. Dot partitions and 8-bit ones keep the
// shuffle's order (row ids ascending).
TEST_CASE("build_ivf_index: 4-bit l2 / cosine PQ partitions are stored nearest to their centroid first") {
  const std::size_t dim = 16;
  t::temp_dir tmp("ivfb-order");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 2, 3000, dim, 9);
  for (const std::uint32_t bits : {4u, 8u})
    for (auto metric : {simd::distance_type::l2, simd::distance_type::cosine, simd::distance_type::dot}) {
      INFO(bits << " bits, " << simd::distance_name(metric));
      const bool nearest_first = bits == 4 && metric != simd::distance_type::dot;
      index::build_options o;
      o.column = "vector";
      o.type = index::ivf_index_type::ivf_pq;
      o.metric = metric;
      o.num_partitions = 4;
      o.num_sub_vectors = 8;
      o.num_bits = bits;
      o.commit = false;
      const auto built = index::build_ivf_index(root, o);
      index::storage_reader<io::file_source> r(io::file_source(built.directory + "/auxiliary.idx"));
      const auto model = index::pq::from_params<double>(std::get<index::pq_params>(r.quantizer()), metric);
      std::set<std::uint64_t> all;
      for (std::size_t p = 0; p < r.num_partitions(); ++p) {
        const auto part = r.read_partition(p);
        for (auto id : part.row_ids) CHECK(all.insert(id).second);
        if (!nearest_first) {
          CHECK(std::is_sorted(part.row_ids.begin(), part.row_ids.end()));
          continue;
        }
        std::vector<double> recon(dim);
        double last = -1;
        bool sorted = true;
        for (std::size_t j = 0; j < part.size(); ++j) {
          index::pq::decode(model, part.codes.data() + j * model.code_bytes(), recon.data());
          double d2 = 0;
          for (double v : recon) d2 += v * v;
          sorted = sorted && d2 >= last - 1e-9 * std::max(1.0, last);
          last = d2;
        }
        CHECK(sorted);
        CHECK(!std::is_sorted(part.row_ids.begin(), part.row_ids.end()));  // not the row-id order
      }
      CHECK(all.size() == 6000);
    }
}

TEST_CASE("build_ivf_index: precomputed partitions and precomputed shuffle buffers") {
  const std::size_t dim = 8;
  t::temp_dir tmp("ivfb-pre");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 2, 500, dim, 9);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 4;
  const auto model = index::train_model(root, o).ivf;

  SUBCASE("precomputed partitions: rows go where the map says, others are assigned") {
    const auto ds = dataset::dataset::open(root);
    const auto b = ds.to_batch({.columns = {"vector"}, .with_row_id = true});
    const auto* rid = b.columns[1]->values<std::uint64_t>();
    auto map = std::make_shared<std::unordered_map<std::uint64_t, std::uint32_t>>();
    for (std::int64_t i = 0; i < b.num_rows(); i += 2) (*map)[rid[i]] = std::uint32_t((i / 2) % 4);
    o.precomputed_partitions = map;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == 1000);
    std::map<std::uint64_t, std::uint32_t> where;
    for (std::size_t p = 0; p < 4; ++p)
      for (auto id : partition_of(r.directory, p).row_ids) where[id] = std::uint32_t(p);
    CHECK(where.size() == 1000);
    for (const auto& [id, p] : *map) CHECK(where.at(id) == p);
    // A partition out of range: refused, nothing committed.
    (*map)[rid[1]] = 4;
    o.replace = true;
    const auto before = files_under(root, true);
    CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("out of range"), invalid_input_error);
    CHECK(files_under(root, true) == before);
  }

  SUBCASE("precomputed shuffle buffers: merged in order, no column read") {
    const auto q = index::flat::to_params<float>(dim);
    const auto schema = index::shuffle_schema(q);
    // Two buffers; rows sorted by partition; the ids are made up (need not exist).
    const auto write_buffer = [&](const std::string& path, std::vector<std::uint32_t> parts, std::uint64_t id0) {
      const std::size_t m = parts.size();
      std::vector<std::uint64_t> ids(m);
      std::vector<float> codes(m * dim);
      for (std::size_t i = 0; i < m; ++i) {
        ids[i] = id0 + i;
        for (std::size_t j = 0; j < dim; ++j) codes[i * dim + j] = float(id0 + i) + float(j) / 10;
      }
      arrow::record_batch rb;
      rb.schema = std::make_shared<arrow::schema>(schema);
      rb.columns.push_back(index::detail::primitive_array(arrow::uint64(), index::detail::copy_span(std::span<const std::uint64_t>(ids)), m));
      rb.columns.push_back(index::detail::primitive_array(arrow::uint32(), index::detail::copy_span(std::span<const std::uint32_t>(parts)), m));
      rb.columns.push_back(index::detail::fsl_array(schema.fields[2], index::detail::copy_span(std::span<const float>(codes)), m));
      file::file_writer<file::v2_0, io::file_sink> w(io::file_sink(path), schema::from_arrow(schema));
      w.write_batch(rb);
      w.finish();
    };
    const std::string f1 = (tmp.path() / "buf1.lance").string(), f2 = (tmp.path() / "buf2.lance").string();
    write_buffer(f1, {0, 0, 1, 3, 3, 3}, 100);
    write_buffer(f2, {1, 2, 3}, 200);
    o.ivf_centroids = model.centroids;
    o.quantizer = q;
    o.precomputed_shuffle_buffers = {f1, f2};
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == 9);
    const std::vector<std::vector<std::uint64_t>> want = {{100, 101}, {102, 200}, {201}, {103, 104, 105, 202}};
    for (std::size_t p = 0; p < 4; ++p) {
      const auto c = partition_of(r.directory, p);
      CHECK(c.row_ids == want[p]);
      for (std::size_t i = 0; i < c.row_ids.size(); ++i) {
        float v0;
        std::memcpy(&v0, c.codes.data() + i * dim * 4, 4);
        CHECK(v0 == float(c.row_ids[i]));
      }
    }
    CHECK(fs::exists(f1));  // given buffers are not removed

    // Unsorted, out of range, wrong schema, or no model: refused.
    write_buffer(f2, {2, 1}, 300);
    o.replace = true;
    CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("not sorted"), invalid_input_error);
    write_buffer(f2, {1, 7}, 300);
    CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("partition 7"), invalid_input_error);
    o.precomputed_shuffle_buffers = {dataset::dataset::open(root).fragments()[0].data_files[0]};  // not a buffer
    CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("has no column"), invalid_input_error);
    o.ivf_centroids.reset();
    CHECK_THROWS_AS(index::build_ivf_index(root, o), invalid_input_error);
  }
}

TEST_CASE("build_ivf_index: segments over disjoint fragments committed as one index") {
  const std::size_t dim = 16;
  t::temp_dir tmp("ivfb-seg");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 3, 1000, dim, 13);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_pq;
  o.num_partitions = 4;
  o.num_sub_vectors = 4;
  const auto model = index::train_model(root, o);
  std::vector<index::segment_metadata> segs;
  const auto frags = dataset::dataset::open(root).fragments();
  REQUIRE(frags.size() == 3);
  for (const auto& f : frags) {
    segs.push_back(index::build_segment(root, o, model, {f.id}));
    CHECK(segs.back().rows_indexed == 1000);
    CHECK(segs.back().fragment_ids() == std::vector<std::uint64_t>{f.id});
  }
  CHECK(dataset::load_latest(root)->version() == 3);
  // Overlapping or differently named segments are refused.
  CHECK_THROWS_WITH_AS(index::commit_segments(root, "vector_idx", "vector", {segs[0], segs[0]}),
                       doctest::Contains("is given twice"), invalid_input_error);
  auto renamed = segs[1];
  index::detail::segment_access::stored(renamed).name = "other";
  CHECK_THROWS_AS(index::commit_segments(root, "vector_idx", "vector", {segs[0], renamed}), invalid_input_error);
  const auto after = dataset::load_version(root, index::commit_segments(root, "vector_idx", "vector", segs).version);
  CHECK(after.version() == 4);
  REQUIRE(after.file.indices.size() == 3);
  for (const auto& im : after.file.indices) CHECK(im.name == "vector_idx");
  // Unknown fragment: refused.
  CHECK_THROWS_WITH_AS(index::build_segment(root, o, model, {99}), doctest::Contains("fragment 99"), invalid_input_error);
}

namespace {

// Peak RSS (MiB above the start) of build_ivf_index(root, o) in a forked child with a
// 2-thread pool (support/peak_memory.hpp), printing the peak so far as each stage
// starts; -1 when the child could not measure or the build threw.
double build_peak_mib(const std::string& root, index::build_options o) {
  const long kib = t::peak_growth_kib_in_child([&] {
    boost::asio::thread_pool pool(2);
    o.pool = &pool;
    int last = -1;
    o.on_progress = [&](const index::build_progress& p) {
      if (int(p.stage) == last) return;
      last = int(p.stage);
      std::printf("  %s: VmHWM %ld KiB\n", std::string(index::build_stage_name(p.stage)).c_str(), t::status_kib("VmHWM"));
    };
    index::build_ivf_index(root, o);
    pool.join();
  });
  return kib < 0 ? -1.0 : double(kib) / 1024.0;
}

}  // namespace

TEST_CASE("interop: peak memory of a build over vectors 3x the budget stays under budget + 25%") {
  const std::size_t dim = 64, chunk = 65536, chunks = 12;  // 768 Ki rows x 256 B = 192 MiB
  const std::uint64_t budget = std::uint64_t(64) << 20;
  t::temp_dir tmp("ivfb-mem");
  const std::string root = (tmp.path() / "ds").string();
  // Data files of 16 Ki rows (4 MiB): the file reader holds a whole page (a 2.2 file
  // of this column has one page per file) while a scan cuts batches from it, which
  // the builder's budget does not control.
  write_clustered_dataset(root, chunks, chunk, dim, 17, 16384);
  const std::uint64_t n = chunk * chunks;
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 64;
  o.memory_budget_bytes = budget;
  const double used_mib = build_peak_mib(root, o);
  REQUIRE(used_mib >= 0);  // the child could reset its peak and build
  MESSAGE("build over " << n * dim * 4 / (1 << 20) << " MiB of vectors with a " << (budget >> 20)
                        << " MiB budget: peak RSS " << used_mib << " MiB above the baseline");
  CHECK(used_mib < double(budget >> 20) * 1.25);
  // The committed index covers every row once.
  const auto s = dataset::load_latest(root);
  REQUIRE(s->file.indices.size() == 1);
  const auto dir = index::index_directory(root, s->file.indices[0].uuid);
  index::storage_reader<io::file_source> r(io::file_source(dir + "/auxiliary.idx"));
  CHECK(r.num_rows() == n);
  CHECK(r.num_partitions() == 64);
  CHECK(files_under(dir, true).size() == 2);  // spilled runs removed
  const auto li = njson::parse(t::node("list_indices.mjs", {root}));
  REQUIRE(li["indices"].size() == 1);
  CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
}

TEST_CASE("interop: LanceDB searches an index committed as segments built separately") {
  const std::size_t dim = 16, nq = 10, per = 1500, parts = 4;
  t::temp_dir tmp("ivfb-seg-interop");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 3, per, dim, 23);
  const auto queries = clustered(nq, dim, 16, 0.25f, 23);
  write_f32(tmp.path() / "queries.f32", queries);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = parts;
  const auto model = index::train_model(root, o);
  std::vector<index::segment_metadata> segs;
  for (const auto& f : dataset::dataset::open(root).fragments())
    segs.push_back(index::build_segment(root, o, model, {f.id}));  // each its own build, as separate processes would
  index::commit_segments(root, "vector_idx", "vector", segs);
  const auto li = njson::parse(t::node("list_indices.mjs", {root}));
  MESSAGE("LanceDB lists: " << li["indices"].dump());
  REQUIRE(li["indices"].size() >= 1);
  CHECK(li["indices"][0]["name"] == "vector_idx");
  CHECK(li["indices"][0]["stats"]["numIndexedRows"] == 3 * per);
  CHECK(li["indices"][0]["stats"]["numUnindexedRows"] == 0);
  std::string plan;
  const auto qf = tmp.path() / "queries.f32";
  const auto lance = lancedb_search(root, qf, dim, 10, {"--nprobes", std::to_string(parts)}, &plan);
  MESSAGE("plan: " << plan);
  // LanceDB plans the segments as deltas of one index (named by its first segment).
  CHECK(plan.find("ANNIvfPartition: uuid=" + segs[0].uuid().to_string()) != std::string::npos);
  CHECK(plan.find("deltas=3") != std::string::npos);
  CHECK(li["indices"][0]["stats"]["numIndices"] == 3);
  const auto exact = lancedb_search(root, qf, dim, 10, {"--bypass"});
  REQUIRE(lance.ids.size() == nq);
  for (std::size_t q = 0; q < nq; ++q) {
    INFO("query " << q);
    CHECK(lance.ids[q] == exact.ids[q]);  // every segment's rows, each once
    CHECK(std::set<std::uint64_t>(lance.ids[q].begin(), lance.ids[q].end()).size() == lance.ids[q].size());
  }
}

namespace {

// A dataset whose `vector` column is a list of `dim`-float vectors per row: row r
// holds (r % 3) + 1 vectors, row 7 is null. Returns the list offsets; vecs: values.
std::vector<std::int32_t> write_multivector_dataset(const std::string& root, std::size_t rows, std::size_t dim,
                                                    const std::vector<float>& vecs) {
  std::vector<std::int32_t> offs = {0};
  for (std::size_t r = 0; r < rows; ++r) offs.push_back(offs.back() + (r == 7 ? 0 : std::int32_t(r % 3) + 1));
  const std::size_t nv = std::size_t(offs.back());
  arrow::field item("item", arrow::fixed_size_list(arrow::float32(), std::int32_t(dim)), true);
  auto inner = index::detail::fsl_array(item, index::detail::copy_span(std::span<const float>(vecs.data(), nv * dim)), nv);
  auto col = std::make_shared<arrow::array_data>();
  col->type = arrow::list(item);
  col->length = std::int64_t(rows);
  aligned_buffer valid;
  valid.resize((rows + 7) / 8);
  std::memset(valid.data(), 0xff, valid.size());
  valid.data()[0] = std::uint8_t(valid.data()[0] & ~(1u << 7));
  col->null_count = 1;
  col->buffers = {shared_bytes(std::move(valid)), shared_bytes(index::detail::copy_span(std::span<const std::int32_t>(offs)))};
  col->children = {std::const_pointer_cast<arrow::array_data>(inner)};
  std::vector<std::int64_t> idv(rows);
  for (std::size_t i = 0; i < rows; ++i) idv[i] = std::int64_t(i);
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(
      arrow::schema{{arrow::field("id", arrow::int64(), false), arrow::field("vector", col->type, true)}, {}});
  b.columns = {index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(idv)), rows), col};
  dataset::write(root, b);
  return offs;
}

}  // namespace

TEST_CASE("build_ivf_index: a multivector column indexes every vector under its row's id (cosine only)") {
  const std::size_t dim = 8, rows = 300;
  const auto vecs = clustered(rows * 3, dim, 6, 0.1f, 41);
  t::temp_dir tmp("ivfb-multi");
  const std::string root = (tmp.path() / "ds").string();
  const auto offs = write_multivector_dataset(root, rows, dim, vecs);
  const std::size_t nv = std::size_t(offs.back());

  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 4;
  CHECK_THROWS_WITH_AS(index::build_ivf_index(root, o), doctest::Contains("cosine distance only"), invalid_input_error);
  o.metric = simd::distance_type::cosine;
  for (auto budget : {std::uint64_t(512) << 20, std::uint64_t(1) << 20}) {
    o.memory_budget_bytes = budget;
    o.replace = true;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == nv);
    std::map<std::uint64_t, std::vector<std::vector<float>>> got;  // row id -> its (normalised) vectors
    for (std::size_t p = 0; p < 4; ++p) {
      const auto c = partition_of(r.directory, p);
      for (std::size_t i = 0; i < c.row_ids.size(); ++i) {
        std::vector<float> v(dim);
        std::memcpy(v.data(), c.codes.data() + i * dim * 4, dim * 4);
        got[c.row_ids[i]].push_back(v);
      }
    }
    CHECK(got.size() == rows - 1);
    for (std::size_t row = 0; row < rows; ++row) {
      INFO("row " << row);
      const std::size_t want = row == 7 ? 0 : row % 3 + 1;
      const auto it = got.find(row);  // row addresses of fragment 0 are the row offsets
      REQUIRE((it == got.end() ? 0 : it->second.size()) == want);
      if (!want) continue;
      // Each stored vector is one of the row's vectors, normalised.
      for (const auto& v : it->second) {
        bool found = false;
        for (std::int32_t j = offs[row]; j < offs[row + 1]; ++j) {
          double nn = 0;
          for (std::size_t d = 0; d < dim; ++d) nn += double(vecs[std::size_t(j) * dim + d]) * vecs[std::size_t(j) * dim + d];
          bool same = true;
          for (std::size_t d = 0; d < dim; ++d)
            same = same && std::abs(double(v[d]) - vecs[std::size_t(j) * dim + d] / std::sqrt(nn)) < 1e-5;
          found = found || same;
        }
        CHECK(found);
      }
    }
  }
}

TEST_CASE("interop: LanceDB searches a multivector column through our index") {
  const std::size_t dim = 16, rows = 600, nq = 8, per = 2, parts = 4;
  const auto vecs = clustered(rows * 3, dim, 8, 0.1f, 43);
  t::temp_dir tmp("ivfb-multi-interop");
  const std::string root = (tmp.path() / "ds").string();
  const auto offs = write_multivector_dataset(root, rows, dim, vecs);
  write_f32(tmp.path() / "queries.f32", clustered(nq * per, dim, 8, 0.15f, 43));
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.metric = simd::distance_type::cosine;
  o.num_partitions = parts;
  const auto r = index::build_ivf_index(root, o);
  CHECK(r.rows_indexed == std::size_t(offs.back()));
  const auto li = njson::parse(t::node("list_indices.mjs", {root}));
  MESSAGE("LanceDB lists: " << li["indices"].dump());
  REQUIRE(li["indices"].size() == 1);
  CHECK(li["indices"][0]["indexUuid"] == r.index.uuid.to_string());
  CHECK(li["indices"][0]["stats"]["distanceType"] == "cosine");
  const std::vector<std::string> base = {root, "--queries", (tmp.path() / "queries.f32").string(), "--dim",
                                         std::to_string(dim), "--per", std::to_string(per), "--k", "10"};
  auto args = base;
  args.insert(args.end(), {"--nprobes", std::to_string(parts), "--explain"});
  const auto out = t::node("search_multivector.mjs", args);
  auto exact_args = base;
  exact_args.push_back("--bypass");
  const auto exact_out = t::node("search_multivector.mjs", exact_args);
  const auto parse = [](const std::string& text, std::string* plan) {
    std::vector<std::vector<std::uint64_t>> ids;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const auto j = njson::parse(line);
      if (j.contains("plan")) {
        if (plan) *plan = j["plan"].get<std::string>();
        continue;
      }
      std::vector<std::uint64_t> q;
      for (const auto& id : j["rowids"]) q.push_back(std::stoull(id.get<std::string>()));
      ids.push_back(q);
    }
    return ids;
  };
  std::string plan;
  const auto got = parse(out, &plan);
  const auto exact = parse(exact_out, nullptr);
  MESSAGE("plan: " << plan);
  CHECK(plan.find(r.index.uuid.to_string()) != std::string::npos);
  REQUIRE(got.size() == nq);
  REQUIRE(exact.size() == nq);
  for (const auto& q : got) {
    CHECK(q.size() == 10);
    CHECK(std::set<std::uint64_t>(q.begin(), q.end()).size() == q.size());  // each row once
  }
  const double rc = mean_recall(exact, got);
  // LanceDB's own IVF_FLAT over the same data: its multivector search takes each
  // query vector's top candidates from the index and scores those rows only, so
  // recall against exact MaxSim is well below 1 for either index.
  const std::string theirs = (tmp.path() / "theirs").string();
  write_multivector_dataset(theirs, rows, dim, vecs);
  t::node("create_index.mjs", {theirs, "--type", "ivf_flat", "--metric", "cosine", "--partitions",
                               std::to_string(parts)});
  auto their_args = args;
  their_args[0] = theirs;
  const auto their_got = parse(t::node("search_multivector.mjs", their_args), nullptr);
  const double rc_theirs = mean_recall(exact, their_got);
  MESSAGE("multivector recall@10 (every partition probed): LanceDB on ours " << rc << ", on its own " << rc_theirs);
  CHECK(rc >= rc_theirs - 0.1);
}

// IVF_PQ recall must not trail LanceDB's own index. The data where it once trailed:
// 20,000 x 32 clustered vectors (200 Gaussian clusters, sigma 0.15), 64 partitions, 8
// sub-vectors of 4 dimensions, nprobes 20, recall@10 measured by LanceDB's search over
// our index and over the index LanceDB builds itself with the same parameters, on three
// datasets. 500 queries per dataset keep the noise of
// the query sample near +-0.005; LanceDB's build is randomised (OS entropy), ours
// seeded. Measured here (1,000 queries, 3 datasets x 4 seeds of ours): ours 0.424-0.442,
// LanceDB's 0.427-0.437, mean difference under 0.002. A gap like that one
// (0.41-0.43 against 0.43-0.45) fails the mean check; one dataset may trail by at
// most 0.02. Each dataset's LanceDB figure is the mean of 3 of its builds: one build
// varies by more than the margins (dataset 101 once gave 0.4458 and 0.436 in two
// builds against our fixed 0.4232, failing the per-dataset check on a single build
// while the means over the datasets were 0.4331 / 0.4333).
TEST_CASE("interop: IVF_PQ recall over our index is not below LanceDB's own index (3 datasets)") {
  const std::size_t n = 20000, dim = 32, nq = 500, parts = 64, m = 8, nprobes = 20;
  double sum_ours = 0, sum_theirs = 0;
  for (unsigned seed : {101u, 202u, 303u}) {
    INFO("dataset seed " << seed);
    // Rows and queries from the same clusters: one draw, the last nq rows are queries.
    const auto all = clustered(n + nq, dim, 200, 0.15f, seed);
    const std::vector<float> vecs(all.begin(), all.begin() + std::ptrdiff_t(n * dim));
    const std::vector<float> queries(all.begin() + std::ptrdiff_t(n * dim), all.end());
    t::temp_dir tmp("ivfb-pq-recall");
    write_f32(tmp.path() / "vectors.f32", vecs);
    write_f32(tmp.path() / "queries.f32", queries);
    const auto qf = tmp.path() / "queries.f32";
    const auto ours = tmp.path() / "ours", theirs = tmp.path() / "theirs";
    t::node("create_index.mjs", {ours.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(),
                                 "--dim", std::to_string(dim), "--type", "none"});
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_pq;
    o.num_partitions = parts;
    o.num_sub_vectors = m;
    index::build_ivf_index(ours.string(), o);
    // Ground truth: exact l2 over the rows (row id = position: one fragment).
    std::vector<std::vector<std::uint64_t>> truth(nq);
    for (std::size_t q = 0; q < nq; ++q)
      for (const auto& h : index::brute_force(simd::distance_type::l2, queries.data() + q * dim, vecs.data(), n, dim, 10))
        truth[q].push_back(h.row_id);
    const std::vector<std::string> sp = {"--nprobes", std::to_string(nprobes)};
    const double rc_ours = mean_recall(truth, lancedb_search(ours, qf, dim, 10, sp).ids);
    const auto own = lancedb_mean_recall(theirs, tmp.path() / "vectors.f32", dim,
                                         {"--type", "ivf_pq", "--partitions", std::to_string(parts), "--sub-vectors",
                                          std::to_string(m)},
                                         qf, sp, truth, 3);
    const double rc_theirs = own.mean;
    MESSAGE("IVF_PQ 64 partitions, 8x8, nprobes 20, dataset " << seed << ": LanceDB on ours " << rc_ours
                                                               << ", LanceDB on its own " << rc_theirs << " (mean of "
                                                               << own.each << ")");
    CHECK(rc_ours >= rc_theirs - 0.02);
    sum_ours += rc_ours;
    sum_theirs += rc_theirs;
  }
  MESSAGE("mean recall@10: LanceDB on ours " << sum_ours / 3 << ", LanceDB on its own " << sum_theirs / 3);
  CHECK(sum_ours / 3 >= sum_theirs / 3 - 0.01);
}

TEST_CASE("interop: peak memory of IVF_PQ and IVF_HNSW_PQ builds over vectors 3x the budget (PQ training inside it)") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MESSAGE("skipped under sanitizers (their shadow memory and quarantine are not the build's)");
#else
  // 192 Ki x 128 f32 rows = 96 MiB in data files of 8 Ki rows (4 MiB pages), a 32 MiB
  // budget: Lance's PQ sample (256 x 2^8 = 65,536 rows, 32.5 MiB with their ids) does
  // not fit, so PQ trains on fewer rows (49,932: a warning says so). Before PQ trained
  // inside the budget (three copies of its sample: rows, residuals in working
  // precision, residuals again) these builds peaked 110 / 107 MiB above the start;
  // measured after (2026-12-02, three runs at load 8): 39.9-43.5 / 42.7-46.8 MiB.
  // The slack granted beyond the budget: 25% as for IVF_FLAT above (allocator pages
  // not yet returned), the 4 MiB page a data file is read in (the scan holds it
  // whole, outside the budget), and 4 MiB for the spread between runs (3.6 MiB over
  // the three); for IVF_HNSW_PQ also the graph stage's 12 MiB that do not depend on
  // the budget (test_hnsw "peak memory of the graph stage").
  const double page_mib = 4, spread_mib = 4, graph_fixed_mib = 12;
  const std::size_t dim = 128, chunk = 16384, chunks = 12;
  const std::uint64_t budget = std::uint64_t(32) << 20;
  t::temp_dir tmp("ivfb-pqmem");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, chunks, chunk, dim, 29, 8192);
  const std::uint64_t n = chunk * chunks;
  for (auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_hnsw_pq}) {
    const std::string name(index::ivf_index_type_name(type));
    INFO(name);
    index::build_options o;
    o.column = "vector";
    o.type = type;
    o.replace = true;
    o.memory_budget_bytes = budget;
    const double used_mib = build_peak_mib(root, o);
    REQUIRE(used_mib >= 0);  // the child could reset its peak and build
    MESSAGE(name << " build over " << n * dim * 4 / (1 << 20) << " MiB of vectors with a " << (budget >> 20)
                 << " MiB budget: peak RSS " << used_mib << " MiB above the baseline");
    const double limit =
        double(budget >> 20) * 1.25 + page_mib + spread_mib + (index::is_hnsw(type) ? graph_fixed_mib : 0);
    CHECK(used_mib < limit);
    const auto li = njson::parse(t::node("list_indices.mjs", {root}));
    REQUIRE(li["indices"].size() == 1);
    CHECK(li["indices"][0]["stats"]["indexType"] == name);
    CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
  }
#endif
}

TEST_CASE("build_ivf_index: PQ trains on Lance's sample when the budget holds it, on fewer rows (with a warning) when not") {
  // 20000 x 64 f32 (5 MiB): a 2 MiB budget holds about 6,000 PQ training rows, not
  // Lance's 65,536 (256 x 2^8), so the sample is cut and a warning says so.
  const std::size_t dim = 64;
  t::temp_dir tmp("ivfb-pq-sample");
  const std::string root = (tmp.path() / "ds").string();
  write_clustered_dataset(root, 1, 20000, dim, 37);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_pq;
  o.num_partitions = 4;
  o.num_sub_vectors = 4;
  o.max_iters = 10;
  CHECK(index::pq_training_rows(o, dim, sizeof(float)) == 65536);  // default budget: Lance's
  CHECK(index::pq_training_rows(o, 1536, sizeof(float)) == 65536);
  std::vector<std::string> warnings;
  const auto prev = set_warning_handler(
      [](std::string_view m, void* c) { static_cast<std::vector<std::string>*>(c)->emplace_back(m); }, &warnings);
  const auto full = index::train_model(root, o).ivf;
  CHECK(warnings.empty());
  o.memory_budget_bytes = std::uint64_t(2) << 20;
  const std::size_t cut = index::pq_training_rows(o, dim, sizeof(float));
  CHECK(cut == (std::uint64_t(2) << 20) / (dim * 4 + 16 + 64 + 8));  // one trainer without a pool
  const auto small = index::train_model(root, o).ivf;
  set_warning_handler(prev.first, prev.second);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("column 'vector'") != std::string::npos);
  CHECK(warnings[0].find("PQ trained on " + std::to_string(cut) + " rows, not Lance's 65536") != std::string::npos);
  const auto& a = std::get<index::pq_params>(full.quantizer);
  const auto& b = std::get<index::pq_params>(small.quantizer);
  CHECK(a.codebook.size() == b.codebook.size());
  REQUIRE(a.codebook.data.size() == b.codebook.data.size());
  CHECK(std::memcmp(a.codebook.data.data(), b.codebook.data.data(), a.codebook.data.size()) != 0);  // other rows
}

// Lance samples the quantizer's training rows apart from the IVF's. When the two
// samples are the same size (16 partitions and 4-bit codes: 256 x 16 rows each), one
// draw would train PQ on the residuals of exactly the rows the centroids were fitted
// to; the builder draws PQ's sample with a seed of its own.
TEST_CASE("IVF_PQ training: the PQ sample is not the IVF k-means sample") {
  const std::size_t dim = 16, k = 16;
  for (const std::size_t n : {std::size_t(9000), std::size_t(4000)}) {
    CAPTURE(n);
    auto rows = clustered(n, dim, 40, 0.2f, 17);
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_pq;
    o.num_partitions = k;
    o.num_sub_vectors = 8;
    o.num_bits = 4;
    o.max_iters = 10;
    index::detail::check_parameters(o, dim);
    const auto built = index::detail::train_on_rows<float>(o, dim, static_cast<const float*>(rows.data()), n, k);
    REQUIRE(built.codec.has_value());
    const auto* pq_codec = std::get_if<index::pq::codec<float>>(&*built.codec);
    REQUIRE(pq_codec != nullptr);
    // PQ trained on the same centroids with the IVF sample's draw (the old behaviour).
    index::pq::params p;
    p.num_sub_vectors = 8;
    p.num_bits = 4;
    p.max_iters = 10;
    p.seed = o.seed;
    CHECK(p.sample_draw() == o.seed);
    const auto same_draw = index::pq::train_for_ivf(rows.data(), n, dim, built.km.centroids.data(), k,
                                                    simd::distance_type::l2, p);
    p.sample_seed = index::quantizer::mix_seed(o.seed, 1);
    CHECK(p.sample_draw() == index::quantizer::mix_seed(o.seed, 1));
    if (n > 256 * 16) {
      CHECK(pq_codec->pq_model().codebook != same_draw.codebook);  // another sample
    } else {
      CHECK(pq_codec->pq_model().codebook == same_draw.codebook);  // every row either way
    }
  }
}
