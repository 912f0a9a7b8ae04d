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
#include "lancet/expr/filter.hpp"
#include "lancet/index/neighbors.hpp"
#include "lancet/index/quantizer/flat.hpp"
#include "lancet/query/vector_column.hpp"

namespace lancet::query {

struct flat_search_params {
  simd::distance_type distance = simd::distance_type::l2;
  std::size_t k = 10;
  std::optional<float> distance_lower;  // [lower, upper)
  std::optional<float> distance_upper;
  const expr::filter* filter = nullptr;  // only rows where it is true (a prefilter)
};

namespace detail {

// Distances of n rows of a vector array (rows [0, n) of `vectors`) to the query.
inline void vector_distances(const arrow::array_data& vectors, const vector_column_type& vt, simd::distance_type d,
                             const double* query, std::size_t n, float* out) {
  with_vector_rows(vectors, vt.element, vt.dimension, [&](const auto* rows) {
    index::flat::distances(d, query, rows, n, vt.dimension, out);
  });
}

}  // namespace detail

// The k nearest live rows of the given fragments (all of ds when `fragments` is
// nullopt) to `query` (vt.dimension values), nearest first.
inline std::vector<index::neighbor> flat_search(const dataset::dataset& ds, const std::string& column,
                                                const std::optional<std::vector<std::uint64_t>>& fragments,
                                                const double* query, const flat_search_params& p) {
  const auto& schema = ds.schema();
  std::size_t field = 0;
  while (field < schema.fields.size() && schema.fields[field].name != column) ++field;
  if (field == schema.fields.size()) throw invalid_input_error("dataset '" + ds.path() + "' has no column '" + column + "'");
  const auto vt = vector_type_of(*schema.fields[field].type, column);
  index::topk best(p.k);
  if (p.k == 0 || (fragments && fragments->empty())) return {};
  dataset::scan_options so;
  so.columns = {column};
  if (p.filter)
    for (const auto& c : p.filter->columns())
      if (c != column) so.columns.push_back(c);
  so.with_row_id = true;
  so.fragment_ids = fragments;
  std::vector<float> d;
  std::vector<std::uint8_t> keep;
  std::vector<arrow::array_ptr> inputs;
  for (auto sc = ds.scan(so); auto b = sc.next();) {
    const auto n = std::size_t(b->num_rows());
    if (n == 0) continue;
    const auto& vec = *b->columns[0];
    const auto& ids = *b->columns.back();
    keep.assign(n, 1);
    if (p.filter) {
      inputs.clear();
      for (const auto& c : p.filter->columns()) {
        std::size_t k = 0;
        while (b->schema->fields[k].name != c) ++k;
        inputs.push_back(b->columns[k]);
      }
      p.filter->evaluate(inputs, 0, n, keep.data());
    }
    d.resize(n);
    detail::vector_distances(vec, vt, p.distance, query, n, d.data());
    for (std::size_t r = 0; r < n; ++r) {
      if (!keep[r] || !vec.is_valid(std::int64_t(r))) continue;
      const float x = d[r];
      if ((p.distance_lower && !(x >= *p.distance_lower)) || (p.distance_upper && !(x < *p.distance_upper))) continue;
      best.push(x, ids.value<std::uint64_t>(std::int64_t(r)));
    }
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
