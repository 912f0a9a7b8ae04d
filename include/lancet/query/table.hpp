// Queries over a dataset version, answered as LanceDB 0.39 answers them:
//
//   auto t = query::table::open("/data/items");          // a version, with its caches
//   auto hits = t.search("vector", q)                    // k nearest, as LanceDB's nearestTo
//                  .where("category = 'shoes'")          // a prefilter (SQL, expr/filter.hpp)
//                  .select({"id", "price"})              // + `_distance` (+ `_rowid`)
//                  .refine_factor(5).limit(10)
//                  .to_batch();
//   auto rows = t.query().where("price > 10").select({"id", "st.x"}).offset(5).limit(3).to_batch();
//
// What every answer honours: deleted rows (deletion files) and rows of fragments the
// version no longer has never come back; rows no index segment covers (appended after
// the index was built, or rewritten by compaction) are searched exactly and merged
// with the index's candidates (their distances then all exact), unless fast_search;
// several segments of one index are searched together. A vector search probes
// minimum_nprobes partitions and, when a filter leaves fewer than k rows there, more
// up to maximum_nprobes (Lance's late search); refine re-ranks k x refine_factor
// candidates on the dataset's own vectors. distance_range keeps [lower, upper). The
// result: the selected columns (a struct's field `a.b` as a column named `a.b`), then
// `_distance` (float32, nearest first; ties by row id), then `_rowid` (uint64) when
// asked. A scan without nearest returns the matching rows in row order; offset and
// limit count matching rows.
//
// A table is a snapshot: cheap to copy, safe to query from several threads at once.
// Its deletion mask and opened index segments are built once and shared by every
// query; latest() moves to the newest version keeping the segments that did not change.
//
// Declared here; defined in table_impl.hpp (included here in header-only programs; in
// compiled mode the library holds the definitions).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/query/request.hpp"

namespace lancet::query {

namespace detail {
struct table_state;  // table_impl.hpp
struct scan_state;   // table_impl.hpp
}  // namespace detail

// The batches of a query's answer, one at a time (a scan streams; a vector search has one).
class batch_reader {
 public:
  LANCET_INLINE explicit batch_reader(std::unique_ptr<detail::scan_state> st);
  LANCET_INLINE batch_reader(batch_reader&&) noexcept;
  LANCET_INLINE batch_reader& operator=(batch_reader&&) noexcept;
  LANCET_INLINE ~batch_reader();

  LANCET_INLINE const std::shared_ptr<const arrow::schema>& schema() const noexcept;
  // The next batch, or nullopt at the end.
  LANCET_INLINE std::optional<arrow::record_batch> next();

 private:
  std::unique_ptr<detail::scan_state> st_;
};

class builder;

// What a table may hold in memory for its queries.
struct table_options {
  // The rows each recent prefilter kept (by its text; a version's answer never changes):
  // repeated filters skip their scan.
  std::size_t filter_cache_entries = 32;
  // Vectors held in memory, up to this many bytes all told: those of the rows searched
  // exactly (fragments no index covers) and those refine re-ranks (the fragments the
  // index covers; loaded by the first search with a refine factor, as FAISS's
  // IndexRefineFlat holds them). What does not fit is read by each search.
  std::uint64_t vector_cache_bytes = std::uint64_t(256) << 20;
};

class table {
 public:
  // The latest version (or `version`) of the dataset at `path` (not_found_error when
  // there is none).
  LANCET_INLINE static table open(const std::string& path, std::optional<std::uint64_t> version = std::nullopt,
                                  dataset::source_factory sources = {}, table_options options = {});
  LANCET_INLINE explicit table(dataset::dataset ds, table_options options = {});

  LANCET_INLINE const dataset::dataset& dataset() const noexcept;
  // The newest version now, reusing the index segments this table opened.
  LANCET_INLINE table latest() const;

  // A query builder over this version: a scan, or a vector search once nearest() is set.
  LANCET_INLINE builder query() const;
  // query().nearest(column, vector).
  LANCET_INLINE builder search(const std::string& column, std::span<const float> vector) const;
  LANCET_INLINE builder search(const std::string& column, std::span<const double> vector) const;

  // Runs a request: every batch of the answer, and the answer as one batch.
  LANCET_INLINE batch_reader execute(const request& r) const;
  LANCET_INLINE arrow::record_batch to_batch(const request& r) const;
  // How the request would run (the index and its segments, the fragments searched
  // exactly, the filter's place), one line per step.
  LANCET_INLINE std::string explain(const request& r) const;

 private:
  std::shared_ptr<detail::table_state> st_;
};

// A request built fluently over a table (LanceDB's query builder).
class builder {
 public:
  builder(table t, request r = {}) : table_(std::move(t)), r_(std::move(r)) {}

  builder& select(std::vector<std::string> columns) { r_.columns = std::move(columns); return *this; }
  builder& where(std::string filter) { r_.filter = std::move(filter); return *this; }
  builder& prefilter(bool on = true) { r_.prefilter = on; return *this; }
  builder& postfilter() { r_.prefilter = false; return *this; }
  builder& limit(std::size_t n) { r_.limit = n; return *this; }
  builder& k(std::size_t n) { r_.limit = n; return *this; }
  builder& offset(std::size_t n) { r_.offset = n; return *this; }
  builder& with_row_id(bool on = true) { r_.with_row_id = on; return *this; }
  builder& pool(boost::asio::thread_pool* p) { r_.pool = p; return *this; }

  builder& nearest(std::string column, std::span<const float> vector) {
    return nearest(std::move(column), std::vector<double>(vector.begin(), vector.end()));
  }
  builder& nearest(std::string column, std::span<const double> vector) {
    return nearest(std::move(column), std::vector<double>(vector.begin(), vector.end()));
  }
  builder& nearest(std::string column, std::vector<double> vector) {
    auto& n = vector_part();
    n.column = std::move(column);
    n.vector = std::move(vector);
    return *this;
  }
  // Both the minimum and the maximum (LanceDB's nprobes).
  builder& nprobes(std::size_t n) { vector_part().minimum_nprobes = n; vector_part().maximum_nprobes = n; return *this; }
  builder& minimum_nprobes(std::size_t n) { vector_part().minimum_nprobes = n; return *this; }
  // 0: no maximum (every partition).
  builder& maximum_nprobes(std::size_t n) {
    vector_part().maximum_nprobes = n == 0 ? std::nullopt : std::optional<std::size_t>(n);
    return *this;
  }
  builder& ef(std::size_t n) { vector_part().ef = n; return *this; }
  builder& refine_factor(std::size_t n) { vector_part().refine_factor = n; return *this; }
  builder& distance_range(std::optional<float> lower, std::optional<float> upper) {
    vector_part().distance_lower = lower;
    vector_part().distance_upper = upper;
    return *this;
  }
  builder& distance_type(simd::distance_type d) { vector_part().distance_type = d; return *this; }
  builder& fast_search(bool on = true) { vector_part().fast_search = on; return *this; }
  builder& bypass_vector_index(bool on = true) { vector_part().bypass_vector_index = on; return *this; }
  builder& index(std::string name) { vector_part().index_name = std::move(name); return *this; }
  // Refine with vectors kept elsewhere than the dataset.
  builder& refine_from(index::vector_fetch fetch) { vector_part().fetch = std::move(fetch); return *this; }

  const request& options() const noexcept { return r_; }

  batch_reader execute() const { return table_.execute(r_); }
  arrow::record_batch to_batch() const { return table_.to_batch(r_); }
  std::string explain() const { return table_.explain(r_); }

 private:
  nearest_request& vector_part() {
    if (!r_.nearest) r_.nearest.emplace();
    return *r_.nearest;
  }

  table table_;
  request r_;
};

// A dataset::row_finder answering a filter from the version's scalar indexes as a
// filtered scan is answered (the parts they answer, the rest checked on the rows they
// keep, within the same cost rules; nullopt when the scan is cheaper): for
// dataset::delete_where and dataset::update (their options' find_rows).
LANCET_INLINE dataset::row_finder indexed_row_finder();

}  // namespace lancet::query

#if LANCET_HEADER_ONLY
#include "lancet/query/table_impl.hpp"
#endif
