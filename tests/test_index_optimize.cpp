// index/optimize/optimize_indices.hpp (unit): the split/join planner (partition_planner.hpp: Lance's
// scenario 9 and more), indexes over given centroids (the builder's, under a budget),
// delta segments, merging, searching several segments, rows deleted since, errors;
// IVF_HNSW_* indexes through optimize (delta, splits) and remap (compaction).
// The LanceDB checks and the larger scenarios are in test_interop_optimize.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/interop.hpp"
#include "support/stored_index.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace t = lancet::testing;

namespace {

std::vector<std::uint64_t> sizes(std::initializer_list<std::uint64_t> l) { return l; }

std::size_t segments(const std::string& root, const std::string& name = "vector_idx") {
  const auto s = *dataset::load_latest(root);
  return std::size_t(std::count_if(s.file.indices.begin(), s.file.indices.end(),
                                   [&](const pb::index_metadata& m) { return m.name == name; }));
}

// Every segment's partition sizes, and all row ids they hold.
struct index_view {
  std::vector<std::vector<std::uint64_t>> sizes;  // per segment
  std::multiset<std::uint64_t> rows;
};
index_view index_view_of(const std::string& root) {
  index_view v;
  auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  for (const auto& s : ix.segments) {
    std::vector<std::uint64_t> sz;
    for (std::size_t p = 0; p < s.storage->num_partitions(); ++p) {
      const auto c = s.storage->read_partition(p);
      sz.push_back(c.size());
      for (auto id : c.row_ids) v.rows.insert(id);
    }
    v.sizes.push_back(sz);
  }
  return v;
}

}  // namespace

TEST_CASE("plan_partitions: Lance's planner cases (scenario 9)") {
  using index::plan_partitions;
  // Small partitions join, smallest first, until one is left.
  auto p = plan_partitions(sizes({66, 65, 66, 66}), 4096);
  CHECK(p.splits.empty());
  CHECK(p.joins == std::vector<std::uint32_t>{0, 1, 2});
  // A single partition never joins.
  CHECK(plan_partitions(sizes({3}), 4096).empty());
  CHECK(plan_partitions(sizes({0}), 4096).empty());
  // A join destination is never pushed above the split threshold (4 x 4 = 16).
  // (4 x 8 = 32; joins below 2)
  p = plan_partitions(sizes({1, 32}), 8);
  CHECK(p.joins.empty());
  p = plan_partitions(sizes({1, 31}), 8);
  CHECK(p.joins == std::vector<std::uint32_t>{0});
  p = plan_partitions(sizes({1, 1, 31}), 8);  // room for one row only
  CHECK(p.joins == std::vector<std::uint32_t>{0});
  // Twenty partitions of 24 (and one 25) at target 100: 18 join, the survivors' room
  // (400 each) never exceeded.
  std::vector<std::uint64_t> s20(20, 24);
  s20[7] = 25;
  p = plan_partitions(s20, 100);
  CHECK(p.joins.size() == 18);
  CHECK(std::find(p.joins.begin(), p.joins.end(), 7u) == p.joins.end());
  // Splits: above 4 x target, into ceil(rows / target) pieces clamped to 2..1024.
  p = plan_partitions(sizes({18000, 1500}), 4096);
  REQUIRE(p.splits.size() == 1);
  CHECK(p.splits[0] == index::partition_split{0, 5});
  CHECK(p.joins.empty());  // splits take precedence (1500 is not small anyway)
  p = plan_partitions(sizes({100, 16385, 10}), 4096);
  REQUIRE(p.splits.size() == 1);
  CHECK(p.splits[0].ways == 5);
  CHECK(p.joins.empty());  // 10 would join, but splits come first
  CHECK(index::split_ways(17, 4) == 5);
  CHECK(index::split_ways(9, 100) == 2);
  CHECK(index::split_ways(10'000'000, 4) == 1024);
  // Exactly 4 x target is not split; steady state is empty.
  CHECK(plan_partitions(sizes({16384, 4096, 1024}), 4096).empty());
  CHECK_THROWS_AS(plan_partitions(sizes({1}), 0), invalid_input_error);
  // The split threshold the joins respect: 4 x target.
  CHECK(index::split_threshold(4096) == 16384);
  CHECK(index::split_threshold(1) == 4);
  CHECK_THROWS_AS(index::split_threshold(0), invalid_input_error);
  CHECK_THROWS_AS(index::split_ways(5, 0), invalid_input_error);
  // Target 8 (threshold 32, joins below 2): the second join still fits the 3 rows of
  // room the partitions of 30 and 31 leave.
  p = plan_partitions(sizes({1, 1, 30, 31}), 8);
  CHECK(p.splits.empty());
  CHECK(p.joins == std::vector<std::uint32_t>{0, 1});
  // Target 10 (threshold 40, joins below 2): the empty partitions join first, then
  // partition 0 (lowest id of the two of size 1); partition 2 would then need room
  // beside a partition already at the threshold, so it stays.
  p = plan_partitions(sizes({1, 0, 1, 0, 40}), 10);
  CHECK(p.joins == std::vector<std::uint32_t>{0, 1, 3});
}

TEST_CASE("create_ivf_flat_with_centroids: the builder with given centroids, under the caller's memory budget") {
  t::temp_dir tmp("optgiven");
  const std::string root = (tmp.path() / "ds").string();
  // 24,000 rows around 0, 10 and 20: more encoded rows than a 1 MiB budget buffers.
  auto v = t::concat(t::concat(t::cluster_at(8000, 0, 1), t::cluster_at(8000, 10, 2)), t::cluster_at(8000, 20, 3));
  v[5 * 4 + 1] = std::numeric_limits<float>::quiet_NaN();  // row 5: not indexed
  dataset::write(root, t::id_vector_batch(v, 4, 0));
  const std::vector<float> c = {0.05f, 0.05f, 0.05f, 0.05f, 10, 10, 10, 10, 20, 20, 20, 20};
  const auto big = index::create_ivf_flat_with_centroids(root, "vector", c, 3);
  const auto small = index::create_ivf_flat_with_centroids(root, "vector", c, 3, simd::distance_type::l2, "small", {},
                                                           std::uint64_t(1) << 20);
  CHECK(big.shuffle_runs == 0);
  CHECK(small.shuffle_runs >= 1);  // the budget given bounds the shuffle
  CHECK(big.rows_indexed == 23999);
  CHECK(big.rows_skipped == 1);
  CHECK(small.rows_indexed == 23999);
  const auto snap = *dataset::load_latest(root);
  double want_loss = 0;
  for (std::size_t r = 0; r < 24000; ++r) {
    if (r == 5) continue;
    const std::size_t p = r / 8000;  // each cluster is nearest its own centroid
    for (std::size_t j = 0; j < 4; ++j) {
      const double d = double(v[r * 4 + j]) - double(c[p * 4 + j]);
      want_loss += d * d;
    }
  }
  for (const auto* name : {"vector_idx", "small"}) {
    CAPTURE(name);
    const auto ix = index::open_vector_index(snap, "", name);
    REQUIRE(ix.segments.size() == 1);
    const auto& s = ix.segments[0];
    CHECK(s.index_file.index_type == "IVF_FLAT");
    CHECK(*s.index_file.ivf.centroids == index::matrix::of(c, 3, 4));
    REQUIRE(s.index_file.ivf.loss.has_value());
    CHECK(*s.index_file.ivf.loss == doctest::Approx(want_loss).epsilon(1e-5));
    // Every row in its cluster's partition, in row order, stored as its raw floats.
    for (std::size_t p = 0; p < 3; ++p) {
      const auto d = s.storage->read_partition(p);
      REQUIRE(d.size() == (p == 0 ? 7999u : 8000u));
      std::size_t i = 0;
      for (std::size_t r = p * 8000; r < (p + 1) * 8000; ++r) {
        if (r == 5) continue;
        CHECK_MESSAGE(d.row_ids[i] == dataset::row_address(0, r), "partition ", p, " entry ", i);
        CHECK(std::memcmp(d.codes.data() + i * 16, v.data() + r * 4, 16) == 0);
        ++i;
      }
    }
  }
  CHECK_THROWS_WITH_AS(index::create_ivf_flat_with_centroids(root, "vector", c, 3, simd::distance_type::l2, "tiny", {},
                                                             1000),
                       doctest::Contains("memory_budget_bytes"), invalid_input_error);
  CHECK_THROWS_WITH_AS(index::create_ivf_flat_with_centroids(root, "vector", c, 3, simd::distance_type::l2, "t0", 0),
                       doctest::Contains("target_partition_size"), invalid_input_error);
  CHECK_THROWS_WITH_AS(index::create_ivf_flat_with_centroids(root, "vector", c, 5), doctest::Contains("12 values"),
                       invalid_input_error);
  CHECK(dataset::load_latest(root)->version() == snap.version());
}

TEST_CASE("optimize: delta segment, search over segments, steady state (scenario 4)") {
  t::temp_dir tmp("opt4");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write(root, t::id_vector_batch(t::concat(t::cluster_at(1500, 0, 1), t::cluster_at(1500, 1000, 2)), 4, 0));
  index::create_ivf_flat_with_centroids(root, "vector", {0, 0, 0, 0, 1000, 1000, 1000, 1000}, 2);
  t::append_id_vectors(root, t::concat(t::cluster_at(100, 0, 3), t::cluster_at(100, 1000, 4)), 4, 3000);
  std::vector<std::string> stages;
  index::optimize_options o;
  o.on_progress = [&](const index::optimize_progress& p) { stages.push_back(std::string(index::optimize_stage_name(p.stage))); };
  auto r = index::optimize_indices(root, o);
  REQUIRE(r.indices.size() == 1);
  CHECK(r.indices[0].changed);
  CHECK(r.indices[0].rows_added == 200);
  CHECK(r.indices[0].segments_after == 2);
  CHECK(std::find(stages.begin(), stages.end(), "scan_unindexed") != stages.end());
  CHECK(segments(root) == 2);
  auto v = index_view_of(root);
  REQUIRE(v.sizes.size() == 2);
  CHECK(v.sizes[0] == std::vector<std::uint64_t>{1500, 1500});
  CHECK(v.sizes[1] == std::vector<std::uint64_t>{100, 100});
  CHECK(v.rows.size() == 3200);
  CHECK(std::set<std::uint64_t>(v.rows.begin(), v.rows.end()).size() == 3200);
  // The new segment covers only the appended fragment.
  {
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    REQUIRE(ix.segments.size() == 2);
    CHECK(ix.segments[0].info.fragment_ids == std::vector<std::uint64_t>{0});
    CHECK(ix.segments[1].info.fragment_ids == std::vector<std::uint64_t>{1});
    // Search covers both: the 300 nearest to 1000 are all of cluster 1000.
    index::search_params sp;
    sp.k = 1600;
    sp.nprobes = 1;
    const float q[4] = {1000, 1000, 1000, 1000};
    auto hits = ix.searcher->search(q, 4, sp);
    CHECK(hits.size() == 1600);
    std::set<std::uint64_t> frag;
    for (const auto& h : hits) frag.insert(h.row_id >> 32);
    CHECK(frag == std::set<std::uint64_t>{0, 1});
  }
  const auto version = dataset::load_latest(root)->version();
  r = index::optimize_indices(root);
  CHECK_FALSE(r.indices.at(0).changed);
  CHECK(dataset::load_latest(root)->version() == version);
  CHECK(segments(root) == 2);

  // Merge the newest segment with nothing: one segment holding both... merge 2 = all.
  o = {};
  o.num_indices_to_merge = 2;
  r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).segments_after == 1);
  v = index_view_of(root);
  REQUIRE(v.sizes.size() == 1);
  CHECK(v.sizes[0] == std::vector<std::uint64_t>{1600, 1600});
}

TEST_CASE("optimize: merged segments drop deleted rows; delta + merge 1") {
  t::temp_dir tmp("optdel");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write(root, t::id_vector_batch(t::concat(t::cluster_at(300, 0, 1), t::cluster_at(300, 10, 2)), 4, 0));
  index::create_ivf_flat_with_centroids(root, "vector", {0, 0, 0, 0, 10, 10, 10, 10}, 2);
  t::append_id_vectors(root, t::cluster_at(50, 0, 3), 4, 600);
  index::optimize_options o;
  o.target_partition_size = 100;  // 300 rows are normal-sized
  index::optimize_indices(root, o);  // delta
  CHECK(segments(root) == 2);
  // Delete 10 rows of fragment 0 and 5 of fragment 1.
  std::vector<std::uint64_t> del;
  for (std::uint64_t i = 0; i < 10; ++i) del.push_back(dataset::row_address(0, i));
  for (std::uint64_t i = 0; i < 5; ++i) del.push_back(dataset::row_address(1, i));
  dataset::delete_rows(root, del);
  t::append_id_vectors(root, t::cluster_at(20, 10, 4), 4, 650);
  o.num_indices_to_merge = 1;  // the newest (fragment 1) with the delta (fragment 2)
  auto r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).rows_dropped == 5);
  CHECK(r.indices.at(0).rows_added == 20);
  CHECK(segments(root) == 2);
  auto v = index_view_of(root);
  REQUIRE(v.sizes.size() == 2);
  CHECK(v.sizes[1][0] + v.sizes[1][1] == 65);
  o.num_indices_to_merge = 5;  // all
  r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).rows_dropped == 10);
  v = index_view_of(root);
  REQUIRE(v.sizes.size() == 1);
  CHECK(v.rows.size() == 600 - 10 + 50 - 5 + 20);
  CHECK(std::set<std::uint64_t>(v.rows.begin(), v.rows.end()).size() == v.rows.size());
  for (std::uint64_t i = 0; i < 10; ++i) CHECK(v.rows.count(dataset::row_address(0, i)) == 0);
}

TEST_CASE("optimize: join of small partitions, renumbered survivors (scenario 3 shape)") {
  t::temp_dir tmp("optjoin");
  const std::string root = (tmp.path() / "ds").string();
  auto v = t::concat(t::concat(t::cluster_at(2000, 0, 1), t::cluster_at(100, 1000, 2)), t::concat(t::cluster_at(100, 2000, 3), t::cluster_at(100, 3000, 4)));
  dataset::write(root, t::id_vector_batch(v, 4, 0));
  std::vector<float> c;
  for (float x : {0.f, 1000.f, 2000.f, 3000.f})
    for (int j = 0; j < 4; ++j) c.push_back(x);
  index::create_ivf_flat_with_centroids(root, "vector", c, 4);
  t::append_id_vectors(root, t::cluster_at(10, 0, 5), 4, 2300);
  auto r = index::optimize_indices(root);
  CHECK(r.indices.at(0).joins == std::vector<std::uint32_t>{1, 2, 3});
  auto iv = index_view_of(root);
  REQUIRE(iv.sizes.size() == 1);
  CHECK(iv.sizes[0] == std::vector<std::uint64_t>{2310});
  auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  index::search_params sp;
  sp.k = 3;
  sp.nprobes = 1;
  const float q[4] = {3000, 3000, 3000, 3000};
  auto hits = ix.searcher->search(q, 4, sp);
  REQUIRE(hits.size() == 3);
  const auto ds = dataset::dataset::open(root);
  for (const auto& h : hits) {
    const auto b = ds.take({h.row_id}, {"vector"});
    const float x = b.columns[0]->children[0]->values<float>()[b.columns[0]->offset * 4];
    CHECK(x >= 3000.0f);
    CHECK(x <= 3000.1f);
  }
}

TEST_CASE("optimize: errors name the index; nothing committed") {
  t::temp_dir tmp("opterr");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write(root, t::id_vector_batch(t::cluster_at(100, 0, 1), 4, 0));
  index::optimize_options o;
  o.name = "nope";
  CHECK_THROWS_AS(index::optimize_indices(root, o), invalid_input_error);
  // No index at all: nothing to do.
  CHECK(index::optimize_indices(root).indices.empty());
  index::create_ivf_flat_with_centroids(root, "vector", {0, 0, 0, 0}, 1);
  o = {};
  o.retrain = true;
  o.num_indices_to_merge = 1;
  CHECK_THROWS_AS(index::optimize_indices(root, o), invalid_input_error);
  o = {};
  o.fetch_chunk_bytes = 0;
  CHECK_THROWS_AS(index::optimize_indices(root, o), invalid_input_error);
  o = {};
  o.memory_budget_bytes = 1000;
  CHECK_THROWS_WITH_AS(index::optimize_indices(root, o), doctest::Contains("memory_budget_bytes"), invalid_input_error);
  CHECK_THROWS_AS(index::optimize_indices((tmp.path() / "missing").string()), not_found_error);
  CHECK_THROWS_AS(index::create_ivf_flat_with_centroids(root, "vector", {0, 0, 0}, 1), invalid_input_error);
  CHECK_THROWS_AS(index::create_ivf_flat_with_centroids(root, "vector", {0, 0, 0, 0}, 1), invalid_input_error);
}

TEST_CASE("optimize: the target partition size recorded in the details (field 2) is used and kept") {
  t::temp_dir tmp("opttps");
  const std::string root = (tmp.path() / "ds").string();
  std::vector<float> v, c;
  for (int i = 0; i < 20; ++i) v = t::concat(v, t::cluster_at(24, float(i * 10), 100 + unsigned(i)));
  for (int i = 0; i < 20; ++i)
    for (int j = 0; j < 4; ++j) c.push_back(float(i * 10) + 0.05f);
  dataset::write(root, t::id_vector_batch(v, 4, 0));
  index::create_ivf_flat_with_centroids(root, "vector", c, 20, simd::distance_type::l2, {}, 100);
  {
    const auto s = *dataset::load_latest(root);
    REQUIRE(s.file.indices.size() == 1);
    CHECK(index::persisted_target_partition_size(s.file.indices[0]) == std::optional<std::uint64_t>(100));
    // The details still decode as before (metric, flat compression).
    const auto info = index::describe_index(s.manifest(), s.file.indices[0]);
    CHECK(info.index_type == "IVF_FLAT");
  }
  t::append_id_vectors(root, t::cluster_at(1, 70, 7), 4, 480);
  const auto r = index::optimize_indices(root);  // target 100 from the details: joins
  CHECK(r.indices.at(0).joins.size() == 18);
  auto iv = index_view_of(root);
  REQUIRE(iv.sizes.size() == 1);
  CHECK(iv.sizes[0].size() == 2);
  const auto s = *dataset::load_latest(root);
  CHECK(index::persisted_target_partition_size(s.file.indices.at(0)) == std::optional<std::uint64_t>(100));
  pb::index_metadata m = s.file.indices.at(0);
  index::persist_target_partition_size(m, 7);
  CHECK(index::persisted_target_partition_size(m) == std::optional<std::uint64_t>(7));
  CHECK_THROWS_AS(index::persist_target_partition_size(m, 0), invalid_input_error);
  pb::index_metadata none;
  CHECK_FALSE(index::persisted_target_partition_size(none).has_value());
}

TEST_CASE("build_ivf_index records a given target partition size in the details; none without one") {
  t::temp_dir tmp("buildtps");
  const std::string root = (tmp.path() / "ds").string();
  std::vector<float> v;
  for (int i = 0; i < 4; ++i) v = t::concat(v, t::cluster_at(100, float(i * 10), 200 + unsigned(i)));
  dataset::write(root, t::id_vector_batch(v, 4, 0));
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.target_partition_size = 100;
  auto r = index::build_ivf_index(root, o);
  CHECK(r.num_partitions == 4);
  CHECK(r.index.target_partition_size == std::optional<std::uint64_t>(100));
  o.target_partition_size.reset();
  o.num_partitions = 2;
  o.replace = true;
  r = index::build_ivf_index(root, o);
  CHECK_FALSE(r.index.target_partition_size.has_value());
}

namespace {

// `id` + `vector: fixed_size_list<T, 4>` (T = f16 or double) from row-major values.
template <class T>
arrow::record_batch typed_batch(const std::vector<T>& values, std::int64_t first_id) {
  const std::size_t n = values.size() / 4;
  arrow::field vf("vector", arrow::fixed_size_list(std::is_same_v<T, double> ? arrow::float64() : arrow::float16(), 4), true);
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = first_id + std::int64_t(i);
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(arrow::schema{{arrow::field("id", arrow::int64(), false), vf}, {}});
  b.columns = {index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(ids)), n),
               index::detail::fsl_array(vf, index::detail::copy_span(std::span<const T>(values)), n)};
  return b;
}

// n rows at `at` + noise, in T; for double the noise has more digits than a float
// keeps (a float round trip would change the stored vectors).
template <class T>
std::vector<T> typed_cluster(std::size_t n, float at, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 0.1);
  std::vector<T> v(n * 4);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, double>) x = double(at) + u(rng) + 1e-11;
    else x = simd::f16(float(at + u(rng)));
  }
  return v;
}

template <class T>
double widen(T x) {
  if constexpr (std::is_same_v<T, double>) return x;
  else return double(x.to_float());
}

// Optimises an IVF_FLAT index over a float16 / float64 column: a delta segment, then a
// split that re-encodes every row; the stored vectors are the column's, bit for bit.
template <class T>
void optimize_typed_flat(index::element_type el) {
  t::temp_dir tmp("opttyped");
  const std::string root = (tmp.path() / "ds").string();
  auto v0 = typed_cluster<T>(300, 0, 1);
  const auto v0b = typed_cluster<T>(300, 10, 2);
  v0.insert(v0.end(), v0b.begin(), v0b.end());
  const auto v1 = typed_cluster<T>(50, 0, 3);
  dataset::write(root, typed_batch(v0, 0));
  index::build_options b;
  b.column = "vector";
  b.type = index::ivf_index_type::ivf_flat;
  b.num_partitions = 2;
  index::build_ivf_index(root, b);
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, typed_batch(v1, 600), wo);
  // Row id -> the column's bytes.
  std::map<std::uint64_t, std::vector<std::uint8_t>> want;
  const auto put = [&](const std::vector<T>& v, std::uint64_t frag) {
    for (std::size_t i = 0; i < v.size() / 4; ++i) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(v.data() + i * 4);
      want[dataset::row_address(frag, i)] = std::vector<std::uint8_t>(p, p + 4 * sizeof(T));
    }
  };
  put(v0, 0);
  put(v1, 1);
  const auto check_stored = [&](std::size_t segments_wanted, std::size_t parts_wanted) {
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    REQUIRE(ix.segments.size() == segments_wanted);
    std::set<std::uint64_t> seen;
    std::size_t parts = 0;
    for (const auto& s : ix.segments) {
      const auto* f = std::get_if<index::flat_params>(&s.storage->quantizer());
      REQUIRE(f != nullptr);
      CHECK(f->element == el);
      parts = std::max(parts, s.storage->num_partitions());
      for (std::size_t p = 0; p < s.storage->num_partitions(); ++p) {
        const auto c = s.storage->read_partition(p);
        REQUIRE(c.codes.size() == c.size() * 4 * sizeof(T));
        for (std::size_t i = 0; i < c.size(); ++i) {
          INFO("row " << c.row_ids[i]);
          CHECK(seen.insert(c.row_ids[i]).second);
          const auto it = want.find(c.row_ids[i]);
          REQUIRE(it != want.end());
          CHECK(std::memcmp(c.codes.data() + i * 4 * sizeof(T), it->second.data(), 4 * sizeof(T)) == 0);
        }
      }
    }
    CHECK(seen.size() == 650);
    CHECK(parts == parts_wanted);
    // Search: the 5 nearest to (10.05, ...) are rows of the cluster at 10, at their
    // exact distances.
    index::search_params sp;
    sp.k = 5;
    sp.nprobes = 64;
    const float q[4] = {10.05f, 10.05f, 10.05f, 10.05f};
    const auto hits = ix.searcher->search(q, 4, sp);
    REQUIRE(hits.size() == 5);
    for (const auto& h : hits) {
      CHECK((h.row_id >> 32) == 0);
      CHECK((h.row_id & 0xffffffffu) >= 300);
      const auto& bytes = want.at(h.row_id);
      double d = 0;
      for (std::size_t j = 0; j < 4; ++j) {
        T x;
        std::memcpy(&x, bytes.data() + j * sizeof(T), sizeof(T));
        d += (widen(x) - double(q[j])) * (widen(x) - double(q[j]));
      }
      CHECK(h.distance == doctest::Approx(d).epsilon(1e-3));
    }
  };
  index::optimize_options o;
  o.target_partition_size = 100;  // 350 and 300 are normal: a delta segment
  auto r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).rows_added == 50);
  check_stored(2, 2);
  o.target_partition_size = 60;  // above 240: both split, every row re-encoded
  r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).splits.size() == 2);
  CHECK(r.indices.at(0).rows_in_segment == 650);
  check_stored(1, r.indices.at(0).num_partitions);
  CHECK(r.indices.at(0).num_partitions > 2);
}

}  // namespace

TEST_CASE("optimize: IVF_FLAT over float16 vectors stores float16 rows (delta and re-encode)") {
  optimize_typed_flat<simd::f16>(index::element_type::f16);
}

TEST_CASE("optimize: IVF_FLAT over float64 vectors stores float64 rows exactly (delta and re-encode)") {
  optimize_typed_flat<double>(index::element_type::f64);
}

namespace {

// Entries per row id over every segment.
std::map<std::uint64_t, std::size_t> entries_per_row(const std::string& root) {
  std::map<std::uint64_t, std::size_t> m;
  auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  for (const auto& s : ix.segments)
    for (std::size_t p = 0; p < s.storage->num_partitions(); ++p)
      for (auto id : s.storage->read_partition(p).row_ids) ++m[id];
  return m;
}

}  // namespace

TEST_CASE("optimize: multivector rows keep every vector through delta, merge, deletion and split") {
  t::temp_dir tmp("optmv");
  const std::string root = (tmp.path() / "ds").string();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  const auto vec = [&](int axis) {
    std::vector<float> v(4);
    for (int j = 0; j < 4; ++j) v[std::size_t(j)] = (j == axis ? 1.0f : 0.0f) + u(rng);
    return v;
  };
  // Row r: (r % 3) + 1 vectors along axis 0 (rows < 60) or 1; row 5 is null; row 6
  // also has a zero vector (not indexable under cosine).
  const auto make_rows = [&](std::size_t n, std::size_t first) {
    std::vector<std::vector<float>> rows;
    for (std::size_t r = first; r < first + n; ++r) {
      std::vector<float> v;
      if (r != 5)
        for (std::size_t j = 0; j < r % 3 + 1; ++j) v = t::concat(v, vec(r < 60 ? 0 : 1));
      if (r == 6) v = t::concat(v, {0, 0, 0, 0});
      rows.push_back(v);
    }
    return rows;
  };
  const auto expected = [&](std::size_t r) -> std::size_t { return r == 5 ? 0 : r % 3 + 1; };
  dataset::write(root, t::id_multivector_batch(make_rows(120, 0), 4, 0));
  index::build_options b;
  b.column = "vector";
  b.type = index::ivf_index_type::ivf_flat;
  b.metric = simd::distance_type::cosine;
  b.ivf_centroids = index::matrix::of(std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0}, 2, 4);
  index::build_ivf_index(root, b);
  {
    dataset::write_options wo;
    wo.mode = dataset::write_mode::append;
    dataset::write(root, t::id_multivector_batch(make_rows(30, 120), 4, 120), wo);
  }
  index::optimize_options o;
  o.target_partition_size = 400;  // steady (~120 and ~180 entries): a delta segment
  auto r = index::optimize_indices(root, o);
  std::size_t delta_entries = 0;
  for (std::size_t i = 120; i < 150; ++i) delta_entries += expected(i);
  CHECK(r.indices.at(0).rows_added == delta_entries);
  CHECK(segments(root) == 2);
  const auto check_rows = [&](std::size_t deleted) {
    const auto m = entries_per_row(root);
    for (std::size_t i = 0; i < 150; ++i) {
      INFO("row " << i);
      const auto id = i < 120 ? dataset::row_address(0, i) : dataset::row_address(1, i - 120);
      const auto it = m.find(id);
      const std::size_t want = i < deleted ? 0 : expected(i);
      CHECK((it == m.end() ? 0 : it->second) == want);
    }
  };
  check_rows(0);
  // Merging both segments keeps every vector of every row (a row's second and third
  // entries are not duplicates).
  o.num_indices_to_merge = 2;
  r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).rows_dropped == 0);
  CHECK(segments(root) == 1);
  check_rows(0);
  // Rows deleted since drop out with all their entries.
  dataset::delete_rows(root, std::vector<std::uint64_t>{dataset::row_address(0, 0), dataset::row_address(0, 1),
                                                        dataset::row_address(0, 2)});
  {
    dataset::write_options wo;
    wo.mode = dataset::write_mode::append;
    dataset::write(root, t::id_multivector_batch({vec(0)}, 4, 150), wo);
  }
  r = index::optimize_indices(root, o);
  CHECK(r.indices.at(0).rows_dropped == 1 + 2 + 3);
  // Splits (threshold 4 x 20 = 80: the partitions hold ~120 and ~180) reassign every
  // vector of the rows involved; each row keeps all of them.
  o.num_indices_to_merge.reset();
  o.target_partition_size = 20;
  r = index::optimize_indices(root, o);
  REQUIRE_FALSE(r.indices.at(0).splits.empty());
  CHECK(segments(root) == 1);
  check_rows(3);
  const auto m = entries_per_row(root);
  CHECK(m.at(dataset::row_address(2, 0)) == 1);
  std::size_t total = 0;
  for (const auto& [id, n] : m) total += n;
  CHECK(total == r.indices.at(0).rows_in_segment);
}

// ---------------------------------------------------------------------------------
// IVF_HNSW_*: optimize and remap
// ---------------------------------------------------------------------------------

namespace {

constexpr std::size_t hnsw_dim = 16;

struct hnsw_segments_seen {
  std::size_t segments = 0;
  std::uint64_t rows = 0;
  std::size_t partitions = 0;  // of the newest segment
  bool graphs_ok = true;       // every graph: one node per stored row, bounded lists, m / ef kept
};

// Every segment of the index on "vector" as an IVF_HNSW_* index of `type` whose
// graphs (read back from index.idx) match the stored partitions.
hnsw_segments_seen hnsw_segments(const std::string& root, const std::string& type, std::uint32_t m, std::uint32_t ef) {
  hnsw_segments_seen out;
  const auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  out.segments = ix.segments.size();
  for (const auto& seg : ix.segments) {
    CHECK(seg.info.index_type == type);
    CHECK(seg.index_file.index_type == type);
    REQUIRE(seg.index_file.sub_index_key == "lance:hnsw");
    REQUIRE(seg.info.hnsw);
    CHECK(seg.info.hnsw->m == m);
    const std::string path = index::index_directory(root, seg.info.uuid) + "/index.idx";
    const file::file_reader<io::file_source> r{io::file_source(path)};
    out.partitions = seg.storage->num_partitions();
    for (std::size_t p = 0; p < seg.storage->num_partitions(); ++p) {
      const auto g = index::hnsw::read_graph(r, seg.index_file, p);
      const auto n = seg.storage->ivf().lengths.at(p);
      out.rows += n;
      if (g.size() != n) out.graphs_ok = false;
      if (n == 0) continue;
      if (g.params.m != m || g.params.ef_construction != ef) out.graphs_ok = false;
      for (const auto& node : g.levels)
        for (std::size_t l = 0; l < node.size(); ++l)
          if (node[l].size() > g.params.max_neighbors(l) || (n > 1 && l == 0 && node[l].empty())) out.graphs_ok = false;
    }
  }
  return out;
}

// The share of rows (every `step`-th id below `rows`, vectors in `all`) that a search for their own vector
// returns among its 10 nearest, by the dataset's `id` column.
double hnsw_self_recall(const std::string& root, const std::vector<float>& all, std::size_t rows, std::size_t step,
                        const std::set<std::int64_t>& gone = {}) {
  const auto s = *dataset::load_latest(root);
  const auto ds = dataset::dataset::open(root);
  const auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = 10;
  sp.nprobes = 4;
  sp.ef = 40;
  std::size_t asked = 0, found = 0;
  for (std::size_t i = 0; i < rows; i += step) {
    if (gone.count(std::int64_t(i))) continue;
    ++asked;
    const auto hits = ix.searcher->search(all.data() + i * hnsw_dim, hnsw_dim, sp);
    std::vector<std::uint64_t> ids;
    for (const auto& h : hits) ids.push_back(h.row_id);
    const auto b = ds.take(ids, {"id"});
    const auto* v = b.columns[0]->values<std::int64_t>();
    for (std::int64_t j = 0; j < b.columns[0]->length; ++j) {
      CHECK_FALSE(gone.count(v[j]));
      if (v[j] == std::int64_t(i)) ++found;
    }
  }
  return asked ? double(found) / double(asked) : 0.0;
}

void append_vectors(const std::string& root, const std::vector<float>& v, std::int64_t first_id) {
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, t::id_vector_batch(v, hnsw_dim, first_id), wo);
}

std::vector<float> hnsw_rows(std::size_t n, unsigned seed) { return t::clustered(n, hnsw_dim, 8, 0.15f, seed); }

}  // namespace

TEST_CASE("optimize: IVF_HNSW_FLAT / SQ / PQ: a delta segment after +10%, split partitions and rebuilt graphs after 3x") {
  struct one {
    index::ivf_index_type type;
    const char* name;
    double min_recall;
  };
  for (const auto& c : {one{index::ivf_index_type::ivf_hnsw_flat, "IVF_HNSW_FLAT", 0.95},
                        one{index::ivf_index_type::ivf_hnsw_sq, "IVF_HNSW_SQ", 0.9},
                        one{index::ivf_index_type::ivf_hnsw_pq, "IVF_HNSW_PQ", 0.5}}) {
    const std::string type_name = c.name;
    CAPTURE(type_name);
    t::temp_dir tmp("opthnsw");
    const std::string root = (tmp.path() / "ds").string();
    // One generator for every row: the appended rows come from the same clusters.
    const auto all = hnsw_rows(9300, 11);
    const auto rows = [&](std::size_t from, std::size_t to) {
      return std::vector<float>(all.begin() + std::ptrdiff_t(from * hnsw_dim), all.begin() + std::ptrdiff_t(to * hnsw_dim));
    };
    dataset::write(root, t::id_vector_batch(rows(0, 3000), hnsw_dim, 0));
    boost::asio::thread_pool pool(2);
    index::build_options b;
    b.column = "vector";
    b.type = c.type;
    b.num_partitions = 4;
    if (c.type == index::ivf_index_type::ivf_hnsw_pq) b.num_sub_vectors = 4;
    b.m = 10;
    b.ef_construction = 40;
    b.pool = &pool;
    index::build_ivf_index(root, b);

    // +10%: a delta segment with its own graphs.
    append_vectors(root, rows(3000, 3300), 3000);
    index::optimize_options o;
    o.pool = &pool;
    o.target_partition_size = 500;  // splits above 2,000 rows (3x: every partition of 2 clusters or more)
    auto r = index::optimize_indices(root, o);
    REQUIRE(r.indices.size() == 1);
    CHECK(r.indices[0].changed);
    CHECK(r.indices[0].rows_added == 300);
    // A delta segment, or (k-means may leave a partition above 2,000) one split segment.
    std::size_t splits = r.indices[0].splits.size();
    auto seen = hnsw_segments(root, c.name, 10, 40);
    CHECK(seen.segments == (splits ? 1u : 2u));
    CHECK(seen.rows == 3300);
    CHECK(seen.graphs_ok);
    double recall = hnsw_self_recall(root, all, 3300, 7);
    CAPTURE(recall);
    CHECK(recall >= c.min_recall);
    // Steady state: nothing to do, nothing committed.
    const auto version = dataset::load_latest(root)->version();
    CHECK_FALSE(index::optimize_indices(root, o).indices.at(0).changed);
    CHECK(dataset::load_latest(root)->version() == version);

    // 3x: partitions above 2,000 rows split (one segment, every graph rebuilt), unless
    // the +10% pass split them already; over both passes something was split.
    append_vectors(root, rows(3300, 9300), 3300);
    r = index::optimize_indices(root, o);
    CHECK(r.indices.at(0).rows_added == 6000);
    splits += r.indices.at(0).splits.size();
    CHECK(splits > 0);
    seen = hnsw_segments(root, c.name, 10, 40);
    CHECK(seen.segments == r.indices.at(0).segments_after);
    CHECK(r.indices.at(0).segments_after ==
          (r.indices.at(0).splits.empty() && r.indices.at(0).joins.empty() ? r.indices.at(0).segments_before + 1 : 1u));
    CHECK(seen.rows == 9300);
    CHECK(seen.partitions > 4);
    CHECK(seen.graphs_ok);
    recall = hnsw_self_recall(root, all, 9300, 31);
    CHECK(recall >= c.min_recall);

    // num_indices_to_merge and retrain keep the type and the graph parameters.
    append_vectors(root, rows(0, 100), 9300);
    o.num_indices_to_merge = 1;
    r = index::optimize_indices(root, o);
    CHECK(r.indices.at(0).segments_after == r.indices.at(0).segments_before);
    seen = hnsw_segments(root, c.name, 10, 40);
    CHECK(seen.rows == 9400);
    CHECK(seen.graphs_ok);
    o.num_indices_to_merge.reset();
    o.retrain = true;
    r = index::optimize_indices(root, o);
    seen = hnsw_segments(root, c.name, 10, 40);
    CHECK(seen.segments == 1);
    CHECK(seen.rows == 9400);
    CHECK(seen.graphs_ok);
  }
}

TEST_CASE("remap: IVF_HNSW_SQ keeps the graphs of partitions that lost no row, rebuilds the others") {
  t::temp_dir tmp("remaphnsw");
  const std::string root = (tmp.path() / "ds").string();
  const auto all = hnsw_rows(2000, 5);
  dataset::write(root, t::id_vector_batch(all, hnsw_dim, 0));
  index::build_options b;
  b.column = "vector";
  b.type = index::ivf_index_type::ivf_hnsw_sq;
  b.num_partitions = 3;
  b.m = 8;
  b.ef_construction = 30;
  const auto built = index::build_ivf_index(root, b);
  const std::string old_dir = index::index_directory(root, built.index.uuid);
  const auto old_info = index::read_index_file(old_dir + "/index.idx");
  const auto old_storage = index::open_storage(old_dir + "/auxiliary.idx");
  const file::file_reader<io::file_source> old_r{io::file_source(old_dir + "/index.idx")};
  // Every row moves by 5,000; the first 20 rows of partition 0 are dropped.
  index::row_address_map m;
  const auto p0 = old_storage.read_partition(0);
  REQUIRE(p0.size() > 40);
  std::set<std::uint64_t> dropped(p0.row_ids.begin(), p0.row_ids.begin() + 20);
  for (std::uint64_t id = 0; id < 2000; ++id)
    m[id] = dropped.count(id) ? std::optional<std::uint64_t>() : std::optional<std::uint64_t>(id + 5000);
  const auto r = index::remap_index_files(root, t::stored_index(root, built.index.uuid), m);
  CHECK(r.stats.rows_dropped == 20);
  CHECK(r.stats.rows_after == 1980);
  const std::string new_dir = index::index_directory(root, r.new_uuid);
  const auto info = index::read_index_file(new_dir + "/index.idx");
  CHECK(info.index_type == "IVF_HNSW_SQ");
  REQUIRE(info.sub_index_key == "lance:hnsw");
  for (const auto& f : r.files) CHECK(std::filesystem::file_size(new_dir + "/" + f.path) == f.size_bytes);
  const auto storage = index::open_storage(new_dir + "/auxiliary.idx");
  const file::file_reader<io::file_source> new_r{io::file_source(new_dir + "/index.idx")};
  for (std::size_t p = 0; p < 3; ++p) {
    CAPTURE(p);
    const auto before = index::hnsw::read_graph(old_r, old_info, p);
    const auto after = index::hnsw::read_graph(new_r, info, p);
    const auto rows = storage.read_partition(p);
    REQUIRE(after.size() == rows.size());
    CHECK(after.params.m == 8);
    CHECK(after.params.ef_construction == 30);
    for (auto id : rows.row_ids) CHECK(id >= 5000);
    if (p == 0) {
      CHECK(after.size() == before.size() - 20);
      continue;
    }
    // Untouched partition: the same graph, node for node.
    REQUIRE(after.size() == before.size());
    CHECK(after.entry_point == before.entry_point);
    bool same = true;
    for (std::size_t n = 0; n < after.size(); ++n) {
      if (after.levels[n].size() != before.levels[n].size()) same = false;
      for (std::size_t l = 0; same && l < after.levels[n].size(); ++l) {
        if (after.levels[n][l].size() != before.levels[n][l].size()) {
          same = false;
          break;
        }
        for (std::size_t i = 0; i < after.levels[n][l].size(); ++i)
          same &= after.levels[n][l][i].id == before.levels[n][l][i].id &&
                  after.levels[n][l][i].distance == before.levels[n][l][i].distance;
      }
    }
    CHECK(same);
  }
  CHECK_FALSE(index::remap_unsupported_reason(root, t::stored_index(root, built.index.uuid)).has_value());
}

TEST_CASE("compaction remaps an IVF_HNSW_SQ index: deleted rows gone, moved rows found under their new addresses") {
  t::temp_dir tmp("compacthnsw");
  const std::string root = (tmp.path() / "ds").string();
  const auto all = hnsw_rows(3000, 9);
  // Three fragments of 1,000 rows: compaction merges them into one.
  for (std::size_t f = 0; f < 3; ++f) {
    const std::vector<float> part(all.begin() + std::ptrdiff_t(f * 1000 * hnsw_dim),
                                  all.begin() + std::ptrdiff_t((f + 1) * 1000 * hnsw_dim));
    if (f == 0)
      dataset::write(root, t::id_vector_batch(part, hnsw_dim, 0));
    else
      append_vectors(root, part, std::int64_t(f * 1000));
  }
  index::build_options b;
  b.column = "vector";
  b.type = index::ivf_index_type::ivf_hnsw_sq;
  b.num_partitions = 4;
  b.m = 10;
  b.ef_construction = 40;
  index::build_ivf_index(root, b);
  // Delete every 10th row of fragment 1 (ids 1000, 1010, ...).
  std::vector<std::uint64_t> del;
  std::set<std::int64_t> gone;
  for (std::uint64_t i = 0; i < 1000; i += 10) del.push_back(dataset::row_address(1, i)), gone.insert(std::int64_t(1000 + i));
  dataset::delete_rows(root, del);
  const auto c = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
  CHECK(c.metrics.fragments_removed == 3);
  CHECK(c.metrics.fragments_added == 1);
  const auto seen = hnsw_segments(root, "IVF_HNSW_SQ", 10, 40);
  CHECK(seen.segments == 1);
  CHECK(seen.rows == 2900);
  CHECK(seen.graphs_ok);
  // Every stored row id is a row of the new fragment.
  const auto s = *dataset::load_latest(root);
  REQUIRE(s.manifest().fragments.size() == 1);
  const auto frag = s.manifest().fragments[0].id;
  const auto ix = index::open_vector_index(s, "vector");
  for (std::size_t p = 0; p < ix.storage->num_partitions(); ++p)
    for (auto id : ix.storage->read_partition(p).row_ids) REQUIRE((id >> 32) == frag);
  const double recall = hnsw_self_recall(root, all, 3000, 7, gone);
  CAPTURE(recall);
  CHECK(recall >= 0.9);
}
