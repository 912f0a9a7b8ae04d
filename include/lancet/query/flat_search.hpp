// Exact vector search over a dataset's rows, as Lance's flat KNN computes it: the
// query cast to the column's element type, distances in the column's precision
// (float32 for float16 / float32 / uint8 columns), rows with a NULL vector or a NaN
// distance left out, the k nearest by (distance, row id). Used for the fragments no
// index covers, for bypass_vector_index, and to recompute the distances of an index's
// candidates where Lance does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/dataset/dataset.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/dataset/row_set.hpp"
#include "lancet/index/neighbors.hpp"
#include "lancet/index/quantizer/flat.hpp"
#include "lancet/query/vector_column.hpp"

namespace lancet::query {

struct flat_search_params {
  simd::distance_type distance = simd::distance_type::l2;
  std::size_t k = 10;
  std::optional<float> distance_lower;  // [lower, upper)
  std::optional<float> distance_upper;
  const dataset::row_set* allowed = nullptr;  // only these rows (a prefilter's), by row id
};

// Vectors of a dataset's rows held in memory (non-NULL ones), for repeated exact
// searches over the same rows.
struct vector_rows {
  vector_column_type type;
  std::vector<std::uint64_t> ids;  // row ids, in row order
  aligned_buffer values;           // ids.size() x type.dimension elements, row-major
  std::uint64_t bytes() const noexcept { return values.size() + ids.size() * sizeof(std::uint64_t); }
};

namespace detail {

// Distances of n rows of a vector array (rows [0, n) of `vectors`) to the query.
inline void vector_distances(const arrow::array_data& vectors, const vector_column_type& vt, simd::distance_type d,
                             const double* query, std::size_t n, float* out) {
  with_vector_rows(vectors, vt.element, vt.dimension, [&](const auto* rows) {
    index::flat::distances(d, query, rows, n, vt.dimension, out);
  });
}

inline std::size_t element_bytes(vector_element e) noexcept {
  switch (e) {
    case vector_element::f16: return 2;
    case vector_element::f32: return 4;
    case vector_element::f64: return 8;
    case vector_element::u8: return 1;
  }
  return 4;
}

inline vector_column_type column_vector_type(const dataset::dataset& ds, const std::string& column) {
  const auto& schema = ds.schema();
  for (const auto& f : schema.fields)
    if (f.name == column) return vector_type_of(*f.type, column);
  throw invalid_input_error("dataset '" + ds.path() + "' has no column '" + column + "'");
}

// Pushes the rows of one block (distances d of rows with ids) into best.
inline void push_block(index::topk& best, const float* d, const std::uint64_t* ids, std::size_t n,
                       const flat_search_params& p, const std::uint8_t* valid = nullptr) {
  for (std::size_t r = 0; r < n; ++r) {
    const float x = d[r];
    if (!(x <= (best.full() ? best.worst().distance : std::numeric_limits<float>::infinity()))) continue;
    if (valid && !valid[r]) continue;
    if ((p.distance_lower && !(x >= *p.distance_lower)) || (p.distance_upper && !(x < *p.distance_upper))) continue;
    if (p.allowed && !p.allowed->contains(ids[r])) continue;
    best.push(x, ids[r]);
  }
}

}  // namespace detail

// The k nearest live rows of the given fragments (all of ds when `fragments` is
// nullopt) to `query` (the column's dimension of values), nearest first, read from
// the dataset.
inline std::vector<index::neighbor> flat_search(const dataset::dataset& ds, const std::string& column,
                                                const std::optional<std::vector<std::uint64_t>>& fragments,
                                                const double* query, const flat_search_params& p) {
  const auto vt = detail::column_vector_type(ds, column);
  if (p.k == 0 || (fragments && fragments->empty())) return {};
  index::topk best(p.k);
  dataset::scan_options so;
  so.columns = {column};
  so.with_row_id = true;
  so.fragment_ids = fragments;
  std::vector<float> d;
  std::vector<std::uint8_t> valid;
  for (auto sc = ds.scan(so); auto b = sc.next();) {
    const auto n = std::size_t(b->num_rows());
    if (n == 0) continue;
    const auto& vec = *b->columns[0];
    d.resize(n);
    detail::vector_distances(vec, vt, p.distance, query, n, d.data());
    valid.resize(n);
    for (std::size_t r = 0; r < n; ++r) valid[r] = vec.is_valid(std::int64_t(r));
    detail::push_block(best, d.data(), b->columns[1]->values<std::uint64_t>(), n, p, valid.data());
  }
  return best.sorted();
}

// The vectors of the live rows of the given fragments (NULL vectors left out).
inline vector_rows load_vector_rows(const dataset::dataset& ds, const std::string& column,
                                    const std::optional<std::vector<std::uint64_t>>& fragments) {
  vector_rows out;
  out.type = detail::column_vector_type(ds, column);
  const std::size_t row_bytes = out.type.dimension * detail::element_bytes(out.type.element);
  dataset::scan_options so;
  so.columns = {column};
  so.with_row_id = true;
  so.fragment_ids = fragments;
  for (auto sc = ds.scan(so); auto b = sc.next();) {
    const auto& vec = *b->columns[0];
    const auto* ids = b->columns[1]->values<std::uint64_t>();
    with_vector_rows(vec, out.type.element, out.type.dimension, [&](const auto* rows) {
      for (std::int64_t r = 0; r < b->num_rows(); ++r) {
        if (!vec.is_valid(r)) continue;
        out.ids.push_back(ids[r]);
        out.values.append(reinterpret_cast<const std::uint8_t*>(rows + std::size_t(r) * out.type.dimension), row_bytes);
      }
    });
  }
  return out;
}

// The k nearest of rows held in memory, nearest first.
inline std::vector<index::neighbor> flat_search(const vector_rows& rows, const double* query,
                                                const flat_search_params& p) {
  if (p.k == 0 || rows.ids.empty()) return {};
  index::topk best(p.k);
  constexpr std::size_t block = 4096;
  std::vector<float> d(std::min(block, rows.ids.size()));
  const std::size_t row_bytes = rows.type.dimension * detail::element_bytes(rows.type.element);
  for (std::size_t at = 0; at < rows.ids.size(); at += block) {
    const std::size_t n = std::min(block, rows.ids.size() - at);
    const std::uint8_t* base = rows.values.data() + at * row_bytes;
    switch (rows.type.element) {
      case vector_element::f16:
        index::flat::distances(p.distance, query, reinterpret_cast<const simd::f16*>(base), n, rows.type.dimension, d.data());
        break;
      case vector_element::f32:
        index::flat::distances(p.distance, query, reinterpret_cast<const float*>(base), n, rows.type.dimension, d.data());
        break;
      case vector_element::f64:
        index::flat::distances(p.distance, query, reinterpret_cast<const double*>(base), n, rows.type.dimension, d.data());
        break;
      case vector_element::u8:
        index::flat::distances(p.distance, query, base, n, rows.type.dimension, d.data());
        break;
    }
    detail::push_block(best, d.data(), rows.ids.data() + at, n, p);
  }
  return best.sorted();
}

// The exact distances of the given rows (by row id; all live) to `query`; NaN for a
// row whose vector is NULL.
inline std::vector<float> exact_distances(const dataset::dataset& ds, const std::string& column,
                                          std::span<const std::uint64_t> row_ids, const double* query,
                                          simd::distance_type distance) {
  std::vector<float> out(row_ids.size(), std::numeric_limits<float>::quiet_NaN());
  if (row_ids.empty()) return out;
  const auto b = ds.take(row_ids, {column});
  const auto& vec = *b.columns.at(0);
  const auto vt = vector_type_of(*b.schema->fields.at(0).type, column);
  detail::vector_distances(vec, vt, distance, query, row_ids.size(), out.data());
  for (std::size_t r = 0; r < row_ids.size(); ++r)
    if (!vec.is_valid(std::int64_t(r))) out[r] = std::numeric_limits<float>::quiet_NaN();
  return out;
}

// The vectors of the given rows widened to double (NaN for a NULL vector): the fetch
// refine uses (index::search_params::fetch).
inline void fetch_vectors(const dataset::dataset& ds, const std::string& column, std::span<const std::uint64_t> row_ids,
                          double* out) {
  if (row_ids.empty()) return;
  const auto b = ds.take(row_ids, {column});
  const auto& vec = *b.columns.at(0);
  const auto vt = vector_type_of(*b.schema->fields.at(0).type, column);
  with_vector_rows(vec, vt.element, vt.dimension, [&](const auto* rows) {
    for (std::size_t r = 0; r < row_ids.size(); ++r) {
      const bool valid = vec.is_valid(std::int64_t(r));
      for (std::size_t j = 0; j < vt.dimension; ++j)
        out[r * vt.dimension + j] = valid ? index::quantizer::to_work<double>(rows[r * vt.dimension + j])
                                          : std::numeric_limits<double>::quiet_NaN();
    }
  });
}

}  // namespace lancet::query
