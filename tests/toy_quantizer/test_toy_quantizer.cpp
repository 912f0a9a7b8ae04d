// A quantizer a program registers (docs/quantizers.md): tests/toy_quantizer/ holds a
// 4-bit scalar quantizer with a range per dimension, and the one line that registers
// it is this executable's LANCET_QUANTIZER_EXTENSION definition (tests/meson.build).
// With nothing else changed, lancet builds IVF_Q4 indexes, searches them through the
// query layer, optimizes them after appends, remaps them through compaction and trains
// them for distributed builds, on a dataset with deleted rows and several fragments.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/distributed/model_file.hpp>
#include <lancet/index/distributed/segments.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/query/table.hpp>

#include "support/batch_columns.hpp"
#include "support/interop.hpp"
#include "support/nearest.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace t = lancet::testing;
using toy_q4::q4_params;

namespace {

constexpr auto q4_type = index::quantizer_traits<q4_params>::type;
constexpr std::size_t dim = 16;

static_assert(index::ivf_quantizer<q4_params>);
static_assert(std::variant_size_v<index::quantizer_params> == 5, "the four of lancet and the toy");

// The vectors of ids [0, n): row-major.
struct rows {
  std::vector<float> v;
  std::set<std::int64_t> deleted;
  std::span<const float> of(std::int64_t id) const { return {v.data() + std::size_t(id) * dim, dim}; }
  std::int64_t size() const { return std::int64_t(v.size() / dim); }
};

// The k nearest live ids by exact l2.
std::vector<std::int64_t> exact(const rows& r, std::span<const float> q, std::size_t k) {
  std::vector<std::pair<float, std::int64_t>> all;
  for (std::int64_t id = 0; id < r.size(); ++id)
    if (!r.deleted.count(id)) {
      const auto v = r.of(id);
      all.push_back({t::l2({v.begin(), v.end()}, {q.begin(), q.end()}), id});
    }
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < std::min(k, all.size()); ++i) out.push_back(all[i].second);
  return out;
}

// The l2 between q and row v as the toy stores it (each value at its nearest level).
float q4_distance(const q4_params& p, std::span<const float> v, std::span<const float> q) {
  float sum = 0;
  for (std::size_t d = 0; d < dim; ++d) {
    const float span = p.upper[d] - p.lower[d];
    const long c = std::clamp(std::lround((v[d] - p.lower[d]) / span * float(toy_q4::levels)), 0l, 15l);
    const float x = toy_q4::level(p, d, unsigned(c)) - q[d];
    sum += x * x;
  }
  return sum;
}

const q4_params& stored_q4(const index::opened_index& ix) {
  const auto* p = std::get_if<q4_params>(&ix.storage->quantizer());
  REQUIRE(p);
  return *p;
}

}  // namespace

TEST_CASE("toy quantizer: one registration line makes it an index type like lancet's own") {
  CHECK(index::parse_ivf_index_type("ivf_q4") == q4_type);
  CHECK(index::parse_ivf_index_type("IVF_Q4") == q4_type);
  CHECK(index::ivf_index_type_name(q4_type) == "IVF_Q4");
  CHECK_FALSE(index::is_hnsw(q4_type));
  // Its scanner links no graphs, so there is no IVF_HNSW_Q4.
  CHECK_THROWS_WITH_AS(index::parse_ivf_index_type("ivf_hnsw_q4"), doctest::Contains("ivf_q4"), invalid_input_error);
  CHECK(index::parse_ivf_index_type("ivf_hnsw_sq") == index::ivf_index_type::ivf_hnsw_sq);

  index::build_options o;
  o.type = q4_type;
  o.num_bits = 8;
  CHECK_THROWS_WITH_AS(index::check_quantizer_build(q4_type, o, dim), doctest::Contains("num_bits 8"),
                       invalid_input_error);
}

TEST_CASE("toy quantizer: build, search, optimize and remap on a dataset that has lived") {
  t::temp_dir tmp("toy-q4");
  const std::string root = (tmp.path() / "ds").string();
  rows r;
  r.v = t::clustered(3000, dim, 12, 0.15f, 11);
  dataset::write_options wo;
  wo.max_rows_per_file = 1000;  // three fragments
  dataset::write(root, t::id_vector_batch(r.v, dim, 0), wo);
  dataset::delete_where(root, "id % 5 = 0");
  for (std::int64_t id = 0; id < 3000; id += 5) r.deleted.insert(id);

  index::build_options o;
  o.column = "vector";
  o.type = q4_type;
  o.num_partitions = 8;
  const auto built = index::build_ivf_index(root, o);
  CHECK(built.rows_indexed == 2400);

  // auxiliary.idx holds the toy's column and ranges: each dimension's minimum and
  // maximum over the live rows (all of them are the training rows here).
  q4_params trained;
  {
    const auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.info.index_type == "IVF_Q4");
    trained = stored_q4(ix);
    for (std::size_t d = 0; d < dim; ++d) {
      float lo = INFINITY, hi = -INFINITY;
      for (std::int64_t id = 0; id < 3000; ++id)
        if (!r.deleted.count(id)) lo = std::min(lo, r.of(id)[d]), hi = std::max(hi, r.of(id)[d]);
      CHECK(trained.lower[d] == lo);
      CHECK(trained.upper[d] == hi);
    }
  }

  const auto queries = t::cluster_draws<>(dim, 12, 0.15f, 11).draw(3020);  // the rows' draw, then 20 more
  const auto query = [&](int i) { return std::span<const float>(queries.data() + (3000 + i) * dim, dim); };
  const auto check_search = [&](const query::table& tbl, const std::string& when) {
    CAPTURE(when);
    double recall = 0, refined = 0;
    for (int i = 0; i < 20; ++i) {
      const auto q = query(i);
      const auto truth = exact(r, q, 10);
      const auto b = tbl.search("vector", q).nprobes(8).limit(10).to_batch();
      const auto got = t::int64_values(b);
      REQUIRE(got.size() == 10);
      for (std::size_t j = 0; j < got.size(); ++j) {
        CHECK_MESSAGE(!r.deleted.count(got[j]), "deleted row " << got[j] << " returned");
        // The distance is the toy scanner's: the query against the row's levels.
        CHECK(t::column_of(b, "_distance").value<float>(std::int64_t(j)) == doctest::Approx(q4_distance(trained, r.of(got[j]), q)).epsilon(1e-4));
      }
      recall += t::recall(truth, got);
      refined += t::recall(truth, t::int64_values(tbl.search("vector", q).nprobes(8).refine_factor(10).limit(10).to_batch()));
    }
    CHECK(recall / 20 >= 0.6);  // 16 levels a dimension: coarse
    CHECK(refined / 20 >= 0.99);
  };
  check_search(query::table::open(root), "built");

  // Appended rows: searched exactly until optimize encodes them into a delta segment.
  const auto more = t::cluster_draws<>(dim, 12, 0.15f, 11).draw(3500);
  r.v.insert(r.v.end(), more.begin() + 3000 * dim, more.end());
  t::append_id_vectors(root, std::vector<float>(more.begin() + 3000 * dim, more.end()), dim, 3000);
  const auto appended = r.of(3333);
  auto flat = query::table::open(root).search("vector", appended);
  CHECK(t::int64_values(flat.limit(1).to_batch()) == std::vector<std::int64_t>{3333});
  const auto fast = t::int64_values(query::table::open(root).search("vector", appended).nprobes(8).fast_search().limit(5).to_batch());
  CHECK(std::find(fast.begin(), fast.end(), 3333) == fast.end());

  index::optimize_options oo;
  oo.num_indices_to_merge = 0;
  const auto opt = index::optimize_indices(root, oo);
  REQUIRE(opt.indices.size() == 1);
  CHECK(opt.indices[0].segments_after == 2);
  {
    const auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(stored_q4(ix) == trained);  // the delta is encoded with the index's ranges
  }
  auto fast_after = query::table::open(root).search("vector", appended).nprobes(8).fast_search();
  CHECK(t::int64_values(fast_after.refine_factor(5).limit(1).to_batch()) == std::vector<std::int64_t>{3333});
  check_search(query::table::open(root), "optimized");

  // Compaction rewrites every fragment; the index's row ids follow the rows.
  dataset::compaction_options co;
  co.remap_indexes = index::compaction_remapper();
  co.target_rows_per_fragment = 4000;
  const auto before = dataset::dataset::open(root).fragments().size();
  dataset::compact_files(root, co);
  CHECK(dataset::dataset::open(root).fragments().size() < before);
  {
    auto tbl = query::table::open(root);
    CHECK(tbl.search("vector", query(0)).nprobes(8).explain().find("unindexed") == std::string::npos);
    for (std::int64_t id : {1, 777, 2999, 3333, 3499}) {
      CAPTURE(id);
      CHECK(t::int64_values(tbl.search("vector", r.of(id)).nprobes(8).fast_search().refine_factor(5).limit(1).to_batch()) ==
            std::vector<std::int64_t>{id});
    }
    check_search(tbl, "compacted");
  }

  // A full rebuild (optimize's retrain) keeps the quantizer's kind.
  index::optimize_options full;
  full.retrain = true;
  index::optimize_indices(root, full);
  CHECK(std::holds_alternative<q4_params>(
      index::open_vector_index(*dataset::load_latest(root), "vector").storage->quantizer()));
}

TEST_CASE("toy quantizer: distributed builds train it once and share it through a model file") {
  t::temp_dir tmp("toy-q4-dist");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write_options wo;
  wo.max_rows_per_file = 500;
  const auto v = t::clustered(2000, dim, 8, 0.15f, 5);
  dataset::write(root, t::id_vector_batch(v, dim, 0), wo);
  index::build_options o;
  o.column = "vector";
  o.type = q4_type;
  o.num_partitions = 4;
  o.name = "q4";
  const auto m = index::parse_model(index::serialize_model(index::train_model(root, o)));
  CHECK(m.type == q4_type);
  REQUIRE(std::holds_alternative<q4_params>(m.ivf.quantizer));
  CHECK(std::get<q4_params>(m.ivf.quantizer).lower.size() == dim);
  const auto a = index::build_segment(root, o, m, {0, 1});
  const auto b = index::build_segment(root, o, m, {2, 3});
  CHECK(a.index_type == "IVF_Q4");
  const auto c = index::commit_segments(root, "q4", "vector", {a, b});
  const auto ix = index::open_vector_index(dataset::load_version(root, c.version), "", "q4");
  CHECK(ix.segments.size() == 2);
  CHECK(stored_q4(ix) == std::get<q4_params>(m.ivf.quantizer));
  const std::span<const float> row1234(v.data() + 1234 * dim, dim);
  auto hits = query::table::open(root).search("vector", row1234).fast_search().nprobes(4).refine_factor(5);
  CHECK(t::int64_values(hits.limit(1).to_batch()) == std::vector<std::int64_t>{1234});
}
