// query/table.hpp (unit): answers on data that has lived — rows deleted (by predicate,
// 0 / 50 / 99 %), rows appended after the index, delta segments, compaction — checked
// against an exact search over a model of the live rows kept by the test; filters as
// prefilter and postfilter, fast_search, bypass_vector_index, offset / limit, distance
// ranges, probing past nprobes, projections (nested fields, _rowid, _distance), scans,
// delete_where and the errors. LanceDB's answers on the same data: test_interop_query.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/expr/filter.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/file/structural.hpp>
#include <lancet/query/file_rows.hpp>
#include <lancet/query/table.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/batch_columns.hpp"
#include "support/file_bytes.hpp"
#include "support/interop.hpp"
#include "support/nearest.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace t = lancet::testing;

namespace {

using lancet::testing::l2;

constexpr std::size_t model_dim = 16;

// What the test knows of every row it wrote.
struct model_row {
  std::int64_t id = 0;
  std::vector<float> v;
  std::optional<std::string> category;
  std::optional<double> price;
  bool live = true;
};

struct model {
  std::vector<model_row> rows;

  // n rows from id `first` on (clustered vectors, categories c0..c4 with nulls).
  arrow::record_batch add(std::size_t n, std::int64_t first, unsigned seed) {
    const auto values = t::clustered(n, model_dim, 12, 0.15f, seed);
    std::mt19937 rng(seed);
    std::vector<std::optional<std::string>> cat;
    std::vector<std::optional<double>> price;
    std::vector<std::int64_t> ids;
    for (std::size_t i = 0; i < n; ++i) {
      model_row r;
      r.id = first + std::int64_t(i);
      r.v.assign(values.begin() + std::ptrdiff_t(i * model_dim), values.begin() + std::ptrdiff_t((i + 1) * model_dim));
      if (rng() % 10 != 0) r.category = "c" + std::to_string(rng() % 5);
      if (rng() % 8 != 0) r.price = double(rng() % 1000) / 10.0;
      cat.push_back(r.category);
      price.push_back(r.price);
      ids.push_back(r.id);
      rows.push_back(std::move(r));
    }
    auto b = t::id_vector_batch(values, model_dim, first);
    return arrow::make_batch({{"id", b.columns[0]},
                              {"vector", b.columns[1]},
                              {"category", arrow::string_array(cat)},
                              {"price", arrow::make_array<double>(price)}});
  }

  const model_row& by_id(std::int64_t id) const {
    for (const auto& r : rows)
      if (r.id == id) return r;
    FAIL("no row " << id);
    return rows[0];
  }
};

// The ids of the k nearest live rows passing `keep`, nearest first.
template <class Keep>
std::vector<std::int64_t> exact(const model& m, const std::vector<float>& q, std::size_t k, Keep keep) {
  std::vector<std::pair<float, std::int64_t>> all;
  for (const auto& r : m.rows)
    if (r.live && keep(r)) all.emplace_back(l2(q, r.v), r.id);
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < std::min(k, all.size()); ++i) out.push_back(all[i].second);
  return out;
}
std::vector<std::int64_t> exact(const model& m, const std::vector<float>& q, std::size_t k) {
  return exact(m, q, k, [](const model_row&) { return true; });
}

// Every returned row is live and its distance is the exact one.
void check_model_rows(const model& m, const arrow::record_batch& b, const std::vector<float>& q, bool exact_distances = true) {
  const auto ids = t::int64_values(b);
  const auto& d = t::column_of(b, "_distance");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& r = m.by_id(ids[i]);
    CHECK_MESSAGE(r.live, "deleted row " << ids[i] << " returned");
    if (exact_distances) CHECK(std::abs(d.value<float>(std::int64_t(i)) - l2(q, r.v)) < 1e-4f);
  }
  for (std::size_t i = 1; i < ids.size(); ++i) CHECK(d.value<float>(std::int64_t(i - 1)) <= d.value<float>(std::int64_t(i)));
}

void delete_model(model& m, const std::string& root, const std::string& where, bool (*pred)(const model_row&)) {
  const auto before = dataset::dataset::open(root).count_rows();
  const auto r = dataset::delete_where(root, where);
  std::uint64_t n = 0;
  for (auto& x : m.rows)
    if (x.live && pred(x)) {
      x.live = false;
      ++n;
    }
  CHECK(r.deleted_rows == n);
  CHECK(dataset::dataset::open(root).count_rows() == before - n);
}

void append_model(model& m, const std::string& root, std::size_t n, std::int64_t first, unsigned seed) {
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, m.add(n, first, seed), wo);
}

std::vector<float> model_query_near(const model& m, std::int64_t id, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 0.05f);
  auto q = m.by_id(id).v;
  for (auto& x : q) x += g(rng);
  return q;
}

// 3,000 rows in fragments of 1,000 with an IVF_FLAT index of 8 partitions over them.
model indexed_ivf_flat(const std::string& root, unsigned seed) {
  model m;
  dataset::write_options wo;
  wo.max_rows_per_file = 1000;
  dataset::write(root, m.add(3000, 0, seed), wo);
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_flat;
  bo.num_partitions = 8;
  index::build_ivf_index(root, bo);
  return m;
}

}  // namespace

TEST_CASE("query: an IVF_FLAT search over every partition is exact on a dataset that has lived") {
  t::temp_dir tmp("query");
  const std::string root = (tmp.path() / "ds").string();
  model m = indexed_ivf_flat(root, 1);
  delete_model(m, root, "id % 7 = 0", [](const model_row& r) { return r.id % 7 == 0; });
  delete_model(m, root, "category = 'c3' AND price > 50", [](const model_row& r) {
    return r.category == "c3" && r.price && *r.price > 50;
  });
  append_model(m, root, 500, 3000, 2);  // after the index: no segment covers it

  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    auto tbl = query::table::open(root);
    // Without caches (filters scanned and unindexed vectors read every time): the same answers.
    auto lean = query::table::open(root, std::nullopt, {}, query::table_options{0, 0});
    for (std::int64_t probe : {5, 123, 2999, 3001, 3499}) {
      CAPTURE(probe);
      const auto q = model_query_near(m, probe, unsigned(probe));
      const std::span<const float> qs(q);
      // Every partition probed: the answer is the exact one.
      auto b = tbl.search("vector", qs).nprobes(8).limit(10).to_batch();
      CHECK(t::int64_values(b) == exact(m, q, 10));
      check_model_rows(m, b, q);
      // Prefilter (LanceDB's default).
      b = tbl.search("vector", qs).nprobes(8).where("category = 'c1' OR price IS NULL").limit(7).to_batch();
      CHECK(t::int64_values(b) ==
            exact(m, q, 7, [](const model_row& r) { return r.category == "c1" || !r.price; }));
      check_model_rows(m, b, q);
      CHECK(t::int64_values(lean.search("vector", qs).nprobes(8).where("category = 'c1' OR price IS NULL").limit(7).to_batch()) ==
            t::int64_values(b));
      // Postfilter: the 10 nearest, then the filter.
      b = tbl.search("vector", qs).nprobes(8).where("price < 50").postfilter().limit(10).to_batch();
      std::vector<std::int64_t> post;
      for (auto id : exact(m, q, 10))
        if (m.by_id(id).price && *m.by_id(id).price < 50) post.push_back(id);
      CHECK(t::int64_values(b) == post);
      // offset / limit: rows 3..8 of the 8 nearest.
      b = tbl.search("vector", qs).nprobes(8).offset(3).limit(5).to_batch();
      const auto ten = exact(m, q, 8);
      CHECK(t::int64_values(b) == std::vector<std::int64_t>(ten.begin() + 3, ten.end()));
      // An exact search without the index.
      b = tbl.search("vector", qs).bypass_vector_index().limit(10).to_batch();
      CHECK(t::int64_values(b) == exact(m, q, 10));
      // fast_search: the index alone (appended rows are not searched).
      b = tbl.search("vector", qs).nprobes(8).fast_search().limit(10).to_batch();
      CHECK(t::int64_values(b) == exact(m, q, 10, [&](const model_row& r) { return r.id < 3000 || round > 0; }));
      check_model_rows(m, b, q);
      // distance_range keeps [lower, upper).
      const auto all = tbl.search("vector", qs).nprobes(8).limit(30).to_batch();
      const auto& d = t::column_of(all, "_distance");
      const float lo = d.value<float>(3), hi = d.value<float>(9);
      b = tbl.search("vector", qs).nprobes(8).distance_range(lo, hi).limit(30).to_batch();
      const auto all_ids = t::int64_values(all);
      CHECK(t::int64_values(b) == std::vector<std::int64_t>(all_ids.begin() + 3, all_ids.begin() + 9));
    }
    // A vector equal to an appended row finds it at distance 0.
    const auto& appended = m.by_id(3333).v;
    auto b = tbl.search("vector", std::span<const float>(appended)).limit(1).to_batch();
    REQUIRE(b.num_rows() == 1);
    CHECK(t::int64_values(b)[0] == 3333);
    CHECK(t::column_of(b, "_distance").value<float>(0) == 0.0f);
    if (round == 0) {
      // A delta segment covers the appended rows; then compaction rewrites fragments.
      index::optimize_options oo;
      oo.num_indices_to_merge = 0;
      const auto r = index::optimize_indices(root, oo);
      CHECK(r.indices.at(0).segments_after == 2);
      CHECK(query::table::open(root).search("vector", std::span<const float>(m.by_id(1).v)).explain().find("unindexed") ==
            std::string::npos);
    } else if (round == 1) {
      dataset::compaction_options co;
      co.remap_indexes = lancet::index::compaction_remapper();
      co.target_rows_per_fragment = 2500;
      dataset::compact_files(root, co);
    }
  }
}

TEST_CASE("query: no deleted row at 0, 50 and 99 % deleted; IVF_PQ with refine; HNSW") {
  for (auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_hnsw_sq}) {
    for (int share : {0, 50, 99}) {
      CAPTURE(share);
      CAPTURE(index::ivf_index_type_name(type));
      t::temp_dir tmp("query-del");
      const std::string root = (tmp.path() / "ds").string();
      model m;
      dataset::write_options wo;
      wo.max_rows_per_file = 1500;
      dataset::write(root, m.add(3000, 0, 11), wo);
      index::build_options bo;
      bo.column = "vector";
      bo.type = type;
      bo.num_partitions = 4;
      bo.num_sub_vectors = 4;
      index::build_ivf_index(root, bo);
      if (share == 50) delete_model(m, root, "id % 2 = 1", [](const model_row& r) { return r.id % 2 == 1; });
      if (share == 99) delete_model(m, root, "id % 100 != 0", [](const model_row& r) { return r.id % 100 != 0; });
      auto tbl = query::table::open(root);
      std::size_t found = 0, wanted = 0;
      for (std::int64_t probe = 0; probe < 3000; probe += 300) {
        const auto q = model_query_near(m, probe, unsigned(probe + 7));
        auto b = tbl.search("vector", std::span<const float>(q)).nprobes(4).refine_factor(20).limit(10).to_batch();
        check_model_rows(m, b, q);
        const auto want = exact(m, q, 10);
        const auto got = t::int64_values(b);
        wanted += want.size();
        for (auto id : want) found += std::count(got.begin(), got.end(), id);
        // Without refine the distances are the index's estimates; still no deleted row.
        b = tbl.search("vector", std::span<const float>(q)).nprobes(2).limit(10).to_batch();
        check_model_rows(m, b, q, false);
        if (share < 99) CHECK(b.num_rows() == 10);  // at 99 %, 2 of 4 partitions hold fewer live rows
      }
      CHECK(double(found) / double(wanted) > 0.9);
    }
  }
}

TEST_CASE("query: refine re-ranks with the covered rows' vectors held in memory, as with vectors read") {
  // Two indexed fragments, a third of the rows deleted, rows appended after the index.
  for (bool stable : {false, true}) {
    CAPTURE(stable);
    t::temp_dir tmp("query-refine-held");
    const std::string root = (tmp.path() / "ds").string();
    model m;
    dataset::write_options wo;
    wo.max_rows_per_file = 1500;
    wo.enable_stable_row_ids = stable;
    dataset::write(root, m.add(3000, 0, 41), wo);
    index::build_options bo;
    bo.column = "vector";
    bo.num_partitions = 4;
    bo.num_sub_vectors = 4;
    index::build_ivf_index(root, bo);
    delete_model(m, root, "id % 3 = 2", [](const model_row& r) { return r.id % 3 == 2; });
    append_model(m, root, 400, 3000, 42);
    query::table_options none;
    none.vector_cache_bytes = 0;
    const auto held = query::table::open(root), read = query::table::open(root, std::nullopt, {}, none);
    auto search = [&](const query::table& tbl, const std::vector<float>& q, std::vector<std::string> cols) {
      return tbl.search("vector", std::span<const float>(q)).nprobes(2).refine_factor(5).select(std::move(cols)).limit(10).to_batch();
    };
    std::vector<std::vector<float>> queries;
    for (std::int64_t probe = 0; probe < 3400; probe += 170) queries.push_back(model_query_near(m, probe, unsigned(probe + 3)));
    for (const auto& q : queries) {
      const auto a = search(held, q, {"id", "_rowid"}), b = search(read, q, {"id", "_rowid"});
      check_model_rows(m, a, q);
      CHECK(t::int64_values(a) == t::int64_values(b));
      const auto& da = t::column_of(a, "_distance");
      const auto& db = t::column_of(b, "_distance");
      for (std::int64_t i = 0; i < a.num_rows(); ++i) CHECK(da.value<float>(i) == db.value<float>(i));
    }
    // The held table answers without the data files (its vectors and the deletion masks
    // are in memory); the other one reads them, and fails without them.
    const auto before = search(held, queries[0], {"_rowid"});
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(fs::path(root) / "data")) fs::rename(e.path(), e.path().string() + ".moved");
    const auto after = search(held, queries[0], {"_rowid"});
    CHECK_FALSE(arrow::first_difference(*before.columns[0], *after.columns[0]));
    CHECK_THROWS(search(read, queries[0], {"_rowid"}));
  }
}

TEST_CASE("query: a selective prefilter probes more partitions up to maximum_nprobes") {
  t::temp_dir tmp("query-late");
  const std::string root = (tmp.path() / "ds").string();
  model m;
  dataset::write(root, m.add(4000, 0, 21));
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_flat;
  bo.num_partitions = 16;
  index::build_ivf_index(root, bo);
  auto tbl = query::table::open(root);
  const auto q = model_query_near(m, 17, 3);
  // Few rows pass: one probed partition may hold fewer than k of them.
  const std::string f = "id % 97 = 0";
  const auto keep = [](const model_row& r) { return r.id % 97 == 0; };
  auto fixed = tbl.search("vector", std::span<const float>(q)).nprobes(1).where(f).limit(10).to_batch();
  CHECK(fixed.num_rows() < 10);
  auto late = tbl.search("vector", std::span<const float>(q)).minimum_nprobes(1).maximum_nprobes(0).where(f).limit(10).to_batch();
  CHECK(late.num_rows() == 10);
  // Probed until 10 were found: the 10 nearest of those partitions, a superset's prefix.
  const auto all16 = tbl.search("vector", std::span<const float>(q)).nprobes(16).where(f).limit(10).to_batch();
  CHECK(t::int64_values(all16) == exact(m, q, 10, keep));
  // Fewer rows pass than k: every one of them, the unfound at +inf.
  const std::string few = "id IN (1, 2000, 3999)";
  auto b = tbl.search("vector", std::span<const float>(q)).minimum_nprobes(1).maximum_nprobes(0).where(few).limit(10).to_batch();
  auto got = t::int64_values(b);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::int64_t>{1, 2000, 3999});
  CHECK_THROWS_AS(tbl.search("vector", std::span<const float>(q)).minimum_nprobes(5).maximum_nprobes(2).to_batch(),
                  invalid_input_error);
  // Without a maximum, IVF_FLAT over float32 starts from Lance 12's floor: 6 partitions for
  // k <= 10 under l2 (when no more lie within its margin of the nearest centroid).
  for (std::int64_t probe : {17, 1234, 3999}) {
    const auto qq = model_query_near(m, probe, 5);
    const auto open = tbl.search("vector", std::span<const float>(qq)).minimum_nprobes(1).maximum_nprobes(0).limit(10).to_batch();
    const auto six = tbl.search("vector", std::span<const float>(qq)).nprobes(6).limit(10).to_batch();
    const auto one = tbl.search("vector", std::span<const float>(qq)).nprobes(1).limit(10).to_batch();
    CHECK(t::int64_values(open) == t::int64_values(six));
    CHECK(t::int64_values(open) == exact(m, qq, 10));
    CHECK(one.num_rows() == 10);
  }
}

TEST_CASE("query: scans, projections and output columns") {
  t::temp_dir tmp("query-scan");
  const std::string root = (tmp.path() / "ds").string();
  model m;
  dataset::write_options wo;
  wo.max_rows_per_file = 100;
  auto b = m.add(300, 0, 31);
  // A struct column beside: st {x: id, y: "r<id>"}, NULL every 10th row.
  std::vector<std::optional<std::int64_t>> x;
  std::vector<std::optional<std::string>> y;
  std::vector<bool> valid;
  for (int i = 0; i < 300; ++i) {
    x.push_back(i % 7 == 0 ? std::nullopt : std::optional<std::int64_t>(i));
    y.push_back("r" + std::to_string(i));
    valid.push_back(i % 10 != 3);
  }
  b = arrow::make_batch({{"id", b.columns[0]}, {"vector", b.columns[1]}, {"category", b.columns[2]},
                         {"price", b.columns[3]},
                         {"st", arrow::struct_array({{"x", arrow::make_array<std::int64_t>(x)}, {"y", arrow::string_array(y)}},
                                                    valid)}});
  dataset::write(root, b, wo);
  delete_model(m, root, "id < 10 OR id BETWEEN 150 AND 160", [](const model_row& r) {
    return r.id < 10 || (r.id >= 150 && r.id <= 160);
  });
  auto tbl = query::table::open(root);
  // Offset and limit count matching rows, in row order across fragments.
  auto s = tbl.query().where("st.x % 2 = 0").select({"id"}).offset(40).limit(5).to_batch();
  std::vector<std::int64_t> want;
  for (const auto& r : m.rows)
    if (r.live && r.id % 7 != 0 && r.id % 10 != 3 && r.id % 2 == 0) want.push_back(r.id);
  CHECK(t::int64_values(s) == std::vector<std::int64_t>(want.begin() + 40, want.begin() + 45));
  CHECK(s.schema->fields.size() == 1);
  // Nested fields come out as columns named by their path; a NULL struct makes them NULL.
  s = tbl.query().select({"st.x", "id", "st.y"}).with_row_id().limit(30).to_batch();
  REQUIRE(s.schema->fields.size() == 4);
  CHECK(s.schema->fields[0].name == "st.x");
  CHECK(s.schema->fields[2].name == "st.y");
  CHECK(s.schema->fields[3].name == "_rowid");
  for (std::int64_t r = 0; r < s.num_rows(); ++r) {
    const auto id = s.columns[1]->value<std::int64_t>(r);
    CHECK(s.columns[0]->is_valid(r) == (id % 7 != 0 && id % 10 != 3));
    CHECK(s.columns[2]->is_valid(r) == (id % 10 != 3));
    if (s.columns[2]->is_valid(r)) CHECK(s.columns[2]->string_value(r) == "r" + std::to_string(id));
    CHECK(s.columns[3]->value<std::uint64_t>(r) == ((std::uint64_t(id / 100) << 32) | std::uint64_t(id % 100)));
  }
  CHECK(s.columns[1]->value<std::int64_t>(0) == 10);  // rows 0..9 deleted
  // A vector search: selected columns, `_distance`, then `_rowid`; `_rowid` selected keeps its place.
  const auto q = m.by_id(42).v;
  auto v = tbl.search("vector", std::span<const float>(q)).select({"price", "id"}).with_row_id().limit(3).to_batch();
  REQUIRE(v.schema->fields.size() == 4);
  CHECK(v.schema->fields[2].name == "_distance");
  CHECK(v.schema->fields[3].name == "_rowid");
  CHECK(t::int64_values(v)[0] == 42);
  v = tbl.search("vector", std::span<const float>(q)).select({"_rowid", "id"}).limit(3).to_batch();
  CHECK(v.schema->fields[0].name == "_rowid");
  CHECK(v.schema->fields[2].name == "_distance");
  v = tbl.search("vector", std::span<const float>(q)).select({"_distance", "id"}).limit(3).to_batch();
  CHECK(v.schema->fields.size() == 2);
  CHECK(v.schema->fields[0].name == "_distance");
  // Every column, all rows: the live rows in order.
  s = tbl.query().to_batch();
  CHECK(s.num_rows() == std::int64_t(dataset::dataset::open(root).count_rows()));
  CHECK(s.schema->fields.size() == 5);
  // An empty answer keeps the schema.
  v = tbl.search("vector", std::span<const float>(q)).where("id < 0").select({"id"}).to_batch();
  CHECK(v.num_rows() == 0);
  CHECK(v.schema->fields.size() == 2);
  s = tbl.query().where("id < 0").to_batch();
  CHECK(s.num_rows() == 0);
  CHECK(s.schema->fields.size() == 5);
  s = tbl.query().limit(0).to_batch();
  CHECK(s.num_rows() == 0);
}

TEST_CASE("query: errors name what is wrong") {
  t::temp_dir tmp("query-err");
  const std::string root = (tmp.path() / "ds").string();
  CHECK_THROWS_AS(query::table::open(root), not_found_error);
  CHECK_THROWS_AS(dataset::dataset::open(root), not_found_error);
  try {
    dataset::dataset::open(root);
  } catch (const error& e) {
    CHECK(e.code() == errc::not_found);
  }
  model m;
  dataset::write(root, m.add(200, 0, 41));
  auto tbl = query::table::open(root);
  const auto q = m.by_id(1).v;
  const std::span<const float> qs(q);
  CHECK_THROWS_WITH_AS(tbl.query().select({"nope"}).to_batch(),
                       doctest::Contains("no column 'nope' (columns: id, vector, category, price)"), invalid_input_error);
  CHECK_THROWS_WITH_AS(tbl.query().where("nope > 1").to_batch(), doctest::Contains("position 0"), expr::invalid_filter);
  CHECK_THROWS_WITH_AS(tbl.search("vector", qs.first(3)).to_batch(), doctest::Contains("has 3 values"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(tbl.search("category", qs).to_batch(), doctest::Contains("not a vector column"),
                       invalid_input_error);
  CHECK_THROWS_AS(tbl.search("vector", qs).limit(0).to_batch(), invalid_input_error);
  CHECK_THROWS_AS(tbl.search("vector", qs).index("nosuch").to_batch(), invalid_input_error);
  CHECK_THROWS_AS(tbl.query().select({"_distance"}).to_batch(), invalid_input_error);
  // Without an index: an exact search; fast_search finds nothing (as Lance 12).
  CHECK(t::int64_values(tbl.search("vector", qs).limit(5).to_batch()) == exact(m, q, 5));
  CHECK(tbl.search("vector", qs).fast_search().limit(5).to_batch().num_rows() == 0);
  // A filter error commits nothing.
  const auto v = dataset::dataset::open(root).version();
  CHECK_THROWS_AS(dataset::delete_where(root, "id / 0 = 1"), expr::invalid_filter);
  CHECK_THROWS_AS(dataset::delete_where(root, "lower(category) = 'x'"), expr::unsupported_filter);
  CHECK(dataset::dataset::open(root).version() == v);
  // A predicate matching nothing commits a version (as Lance does); one matching all
  // removes every fragment.
  CHECK(dataset::delete_where(root, "id < 0").version == v + 1);
  const auto all = dataset::delete_where(root, "true");
  CHECK(all.deleted_rows == 200);
  CHECK(dataset::dataset::open(root).manifest().fragments.empty());
  CHECK(query::table::open(root).query().to_batch().num_rows() == 0);
}

TEST_CASE("query: the exact search with distance bounds returns the plain exact search's answer") {
  t::temp_dir tmp("query-bounds");
  for (auto elem : {arrow::float32(), arrow::float16(), arrow::float64()}) {
    CAPTURE(arrow::to_string(*elem));
    const std::string root = (tmp.path() / ("ds-" + arrow::to_string(*elem))).string();
    // Several of the bounded search's chunks of rows, so that a query the bounds cannot
    // help (far from every row) leaves them for the plain search part way through.
    const std::size_t n = 20000, d = 24;
    auto v = t::clustered(n, d, 40, 0.2f, 7);
    v[5 * d + 3] = std::numeric_limits<float>::quiet_NaN();  // a row no bound covers
    for (std::size_t j = 0; j < d; ++j) v[9 * d + j] = 0.0f;  // a zero row (cosine: NaN)
    std::vector<std::int64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = std::int64_t(i);
    arrow::array_ptr items;
    if (elem->id == arrow::type_id::float32) items = arrow::make_array<float>(v);
    else if (elem->id == arrow::type_id::float64) items = arrow::make_array<double>(std::vector<double>(v.begin(), v.end()));
    else {
      std::vector<std::optional<float>> h(v.begin(), v.end());
      items = arrow::float16_array(h);
    }
    dataset::write(root, arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                                            {"vector", arrow::make_fixed_size_list(items, std::int32_t(d))}}));
    const auto ds = dataset::dataset::open(root);
    auto plain = query::load_vector_rows(ds, "vector", std::nullopt);
    std::mt19937 rng(3);
    dataset::row_set odd;
    for (std::size_t i = 1; i < n; i += 2) odd.insert(std::uint64_t(i));
    for (auto metric : {simd::distance_type::l2, simd::distance_type::cosine, simd::distance_type::dot}) {
      const std::string metric_name = simd::distance_name(metric);
      CAPTURE(metric_name);
      auto bounded = plain;
      bounded.bounds = query::detail::build_bounds(bounded, metric);
      REQUIRE(bounded.bounds);
      for (int qi = 0; qi < 25; ++qi) {
        std::vector<double> q(d);
        const std::size_t near = rng() % n;
        for (std::size_t j = 0; j < d; ++j) q[j] = double(v[near * d + j]) + (qi % 5) * 0.05 * double(int(rng() % 100) - 50) / 50.0;
        if (qi % 6 == 5)
          for (std::size_t j = 0; j < d; ++j) q[j] = 40.0 + double(int(rng() % 100) - 50) / 50.0;
        const auto qc = query::detail::in_element_type(q, bounded.type.element);
        query::flat_search_params p;
        p.distance = metric;
        p.k = qi % 3 == 0 ? 1 : 10;
        if (qi % 4 == 1) p.allowed = &odd;
        if (qi % 7 == 2) p.distance_lower = 0.01f;
        const auto want = query::flat_search(plain, qc.data(), p);
        const auto got = query::flat_search(bounded, qc.data(), p);
        if (got != want) {
          std::string a, b;
          for (const auto& x : want) a += std::to_string(x.row_id) + "@" + std::to_string(x.distance) + " ";
          for (const auto& x : got) b += std::to_string(x.row_id) + "@" + std::to_string(x.distance) + " ";
          CAPTURE(a);
          CAPTURE(b);
          CHECK(got == want);
        }
        // A caller's bound: rows beyond it may be left out, the ones within come back.
        if (want.size() >= 3) {
          p.bound = want[2].distance;
          const auto within = query::flat_search(bounded, qc.data(), p);
          REQUIRE(within.size() >= 3);
          CHECK(std::vector<index::neighbor>(within.begin(), within.begin() + 3) ==
                std::vector<index::neighbor>(want.begin(), want.begin() + 3));
        }
      }
    }
  }
}

// A table is queried from several threads at once (its documented use): each thread's
// answers equal the ones a fresh table gives on one thread, while the threads fill and
// evict the shared caches (prefilter rows, with fewer entries than filters in use; the
// unindexed rows' vectors and their bounds; the index segments) and copies and
// latest() share them.
TEST_CASE("query: concurrent queries on one table give the single-threaded answers") {
  t::temp_dir tmp("query-threads");
  const std::string root = (tmp.path() / "ds").string();
  model m = indexed_ivf_flat(root, 11);
  delete_model(m, root, "id % 5 = 1", [](const model_row& r) { return r.id % 5 == 1; });
  append_model(m, root, 5000, 3000, 12);  // enough unindexed rows for distance bounds

  const std::vector<std::string> filters = {"", "category = 'c1'", "price > 40 AND price < 70",
                                            "category IN ('c0', 'c4') OR price IS NULL", "id % 3 = 0"};
  struct job {
    std::vector<float> q;
    std::string filter;
    bool post = false;
  };
  std::vector<job> jobs;
  for (std::int64_t probe : {7, 1500, 2998, 3100, 5555, 7999})
    for (std::size_t f = 0; f < filters.size(); ++f)
      jobs.push_back({model_query_near(m, probe, unsigned(probe + f)), filters[f], f % 2 == 1 && probe % 2 == 1});
  const auto run = [&](const query::table& tbl, const job& j) {
    auto b = tbl.search("vector", std::span<const float>(j.q)).nprobes(8).select({"id", "category", "_distance"}).limit(10);
    if (!j.filter.empty()) b.where(j.filter);
    if (j.post) b.postfilter();
    return t::int64_values(b.to_batch());
  };
  const auto scan = [&](const query::table& tbl, const std::string& f) {
    auto b = tbl.query().select({"id"});
    if (!f.empty()) b.where(f);
    return t::int64_values(b.to_batch());
  };
  std::vector<std::vector<std::int64_t>> want;
  std::vector<std::vector<std::int64_t>> want_scans;
  {
    const auto fresh = query::table::open(root);
    for (const auto& j : jobs) want.push_back(run(fresh, j));
    for (const auto& f : filters) want_scans.push_back(scan(fresh, f));
  }
  // The exact answers hold (every partition probed) for the unfiltered prefilter jobs.
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].filter.empty()) CHECK(want[i] == exact(m, jobs[i].q, 10));

  const auto shared = query::table::open(root, std::nullopt, {}, query::table_options{2, std::uint64_t(64) << 20});
  constexpr int threads = 4, rounds = 3;
  std::vector<std::vector<std::vector<std::int64_t>>> got(threads, std::vector<std::vector<std::int64_t>>(jobs.size()));
  std::vector<std::vector<std::vector<std::int64_t>>> got_scans(threads,
                                                                std::vector<std::vector<std::int64_t>>(filters.size()));
  std::vector<std::string> errors(threads);
  {
    std::vector<std::thread> pool;
    for (int w = 0; w < threads; ++w)
      pool.emplace_back([&, w] {
        try {
          // Thread 1 queries a copy, thread 2 latest(): both share the original's caches.
          const query::table mine = w == 1 ? query::table(shared) : w == 2 ? shared.latest() : shared;
          for (int r = 0; r < rounds; ++r)
            for (std::size_t i = 0; i < jobs.size(); ++i) {
              const std::size_t at = (i * 7 + std::size_t(w) * 5 + std::size_t(r) * 3) % jobs.size();
              got[std::size_t(w)][at] = run(mine, jobs[at]);
              if (at % 6 == 0) got_scans[std::size_t(w)][at / 6 % filters.size()] = scan(mine, filters[at / 6 % filters.size()]);
            }
        } catch (const std::exception& e) {
          errors[std::size_t(w)] = e.what();
        }
      });
    for (auto& th : pool) th.join();
  }
  for (int w = 0; w < threads; ++w) {
    CAPTURE(w);
    CHECK(errors[std::size_t(w)] == "");
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      CAPTURE(i);
      CHECK(got[std::size_t(w)][i] == want[i]);
    }
    for (std::size_t f = 0; f < filters.size(); ++f)
      if (!got_scans[std::size_t(w)][f].empty()) CHECK(got_scans[std::size_t(w)][f] == want_scans[f]);
  }
}

TEST_CASE("query: file_rows reads one file's filtered, projected rows with offset and limit, a batch at a time") {
  // 10,000 rows: id, name "n<id>" (null for every 7th), price id % 100.
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  std::vector<double> prices;
  for (std::int64_t i = 0; i < 10000; ++i) {
    ids.push_back(i);
    names.push_back(i % 7 == 0 ? std::nullopt : std::optional<std::string>("n" + std::to_string(i)));
    prices.push_back(double(i % 100));
  }
  const auto bytes = t::write_file<file::v2_1>({arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                                                                   {"name", arrow::string_array(names)},
                                                                   {"price", arrow::make_array<double>(prices)}})});
  const file::file_reader<io::memory_source> reader{io::memory_source(bytes)};
  // Every batch's rows of `column` (int64), and the batches' sizes and column names.
  struct result {
    std::vector<std::int64_t> ids;
    std::vector<std::int64_t> sizes;
    std::vector<std::string> columns;
  };
  const auto run = [&](query::file_request r) {
    result out;
    query::file_rows rows(reader, std::move(r));
    while (auto b = rows.next()) {
      out.sizes.push_back(b->num_rows());
      out.columns.clear();
      for (const auto& f : b->schema->fields) out.columns.push_back(f.name);
      for (std::size_t c = 0; c < b->columns.size(); ++c)
        if (b->schema->fields[c].name == "id")
          for (std::int64_t i = 0; i < b->num_rows(); ++i) out.ids.push_back(b->columns[c]->value<std::int64_t>(i));
    }
    return out;
  };
  const auto range = [](std::int64_t from, std::int64_t to, std::int64_t step = 1) {
    std::vector<std::int64_t> v;
    for (auto i = from; i < to; i += step) v.push_back(i);
    return v;
  };

  // No filter: offset / limit are a range, read in batches.
  auto r = run({{"id"}, "", 9000, 1500, 400});
  CHECK(r.ids == range(9000, 10000));
  CHECK(r.sizes == std::vector<std::int64_t>{400, 400, 200});
  CHECK(r.columns == std::vector<std::string>{"id"});
  CHECK(run({{}, "", 0, std::nullopt, 8192}).ids == range(0, 10000));
  CHECK(run({{"price", "id"}, "", 0, 3, 8192}).columns == std::vector<std::string>{"price", "id"});

  // A filter on a column not shown; offset and limit count matching rows only.
  r = run({{"id", "name"}, "price = 42", 10, 20, 1000});
  CHECK(r.ids == range(1042, 3042, 100));
  CHECK(r.columns == std::vector<std::string>{"id", "name"});
  CHECK(run({{"id"}, "name IS NULL AND id >= 9000", 0, std::nullopt, 333}).ids == range(9002, 10000, 7));
  r = run({{}, "price > 97", 0, std::nullopt, 8192});
  CHECK(r.columns == std::vector<std::string>{"id", "name", "price"});
  CHECK(r.ids.size() == 200);

  // Nothing left: one empty batch that still names the columns.
  r = run({{"id"}, "", 20000, 5, 8192});
  CHECK(r.sizes == std::vector<std::int64_t>{0});
  CHECK(r.columns == std::vector<std::string>{"id"});
  r = run({{"name"}, "price > 1000", 0, std::nullopt, 8192});
  CHECK(r.sizes == std::vector<std::int64_t>{0});
  CHECK(r.columns == std::vector<std::string>{"name"});
  CHECK(run({{"id"}, "price < 50", 0, 0, 8192}).sizes == std::vector<std::int64_t>{0});

  // Errors name what is wrong.
  CHECK_THROWS_WITH_AS(run({{"id", "nope"}, "", 0, std::nullopt, 8192}), doctest::Contains("no column 'nope'"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(run({{"id"}, "cost > 1", 0, std::nullopt, 8192}), doctest::Contains("cost"),
                       expr::invalid_filter);
  CHECK_THROWS_WITH_AS(run({{"id"}, "", 0, std::nullopt, 0}), doctest::Contains("batch size"), invalid_input_error);
}
