// Exact vector search over a dataset's rows, as Lance's flat KNN computes it: the
// query cast to the column's element type, distances in the column's precision
// (float32 for float16 / float32 / uint8 columns), rows with a NULL vector or a NaN
// distance left out, the k nearest by (distance, row id). Used for the fragments no
// index covers, for bypass_vector_index, and to recompute the distances of an index's
// candidates where Lance does.
#pragma once

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/dataset/dataset.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/dataset/row_set.hpp"
#include "lancet/index/search/neighbors.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/flat/distances.hpp"
#include "lancet/index/quantizer/pq/pq.hpp"
#include "lancet/query/vector_column.hpp"

namespace lancet::query {

struct flat_search_params {
  simd::distance_type distance = simd::distance_type::l2;
  std::size_t k = 10;
  std::optional<float> distance_lower;  // [lower, upper)
  std::optional<float> distance_upper;
  const dataset::row_set* allowed = nullptr;  // only these rows (a prefilter's), by row id
  // Rows farther than this cannot matter (the k-th distance the caller already has):
  // they may be left out of the answer. The rows that can beat it come back exactly.
  float bound = std::numeric_limits<float>::infinity();
};

// Lower bounds of the exact distances of rows held in memory, so that an exact search
// computes only the distances of rows that can enter its top k. The rows (normalised
// under cosine) are product-quantized (lancet's PQ, trained on them: sub-vectors of 4
// values, 8 bits) and each row's reconstruction error e = |x - x'| is kept (rounded
// up). With p the query's distance to the reconstruction x' (the PQ table's sum), the
// triangle inequality gives: l2 |q - x| >= sqrt(p) - e; cosine (l2 of the normalised
// vectors, halved) likewise; dot 1 - q.x >= (1 - q.x') - |q| e. A row is skipped when
// its bound exceeds the k-th distance found so far (with a margin for f32 rounding):
// it cannot be among the k nearest, so the answer is the exact search's.
struct distance_bounds {
  simd::distance_type distance = simd::distance_type::l2;  // l2 and dot share one; cosine its own
  index::pq::model<float> pq;
  // The codebook transposed, [sub-vector][value][centroid]: a query's tables are then
  // built 256 centroids at a time.
  std::vector<float> columns;
  std::vector<std::uint8_t> codes;        // transposed: [code bytes][rows]
  std::vector<float> error;               // per row
  std::vector<std::uint32_t> unbounded;   // rows with a non-finite value: no bound, searched exactly
  float max_error = 0;
  std::uint64_t bytes() const noexcept {
    return codes.size() + (error.size() + unbounded.size() + columns.size() + pq.codebook.size()) * 4;
  }
};

// Vectors of a dataset's rows held in memory (non-NULL ones), for repeated exact
// searches over the same rows; with distance bounds when there are enough of them.
struct vector_rows {
  vector_column_type type;
  std::vector<std::uint64_t> ids;  // row ids, in row order
  bool ids_ascending = true;       // (stable row ids may not be, after compaction)
  aligned_buffer values;           // ids.size() x type.dimension elements, row-major
  std::shared_ptr<const distance_bounds> bounds;
  std::uint64_t bytes() const noexcept {
    return values.size() + ids.size() * sizeof(std::uint64_t) + (bounds ? bounds->bytes() : 0);
  }
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
        if (!out.ids.empty() && ids[r] <= out.ids.back()) out.ids_ascending = false;
        out.ids.push_back(ids[r]);
        out.values.append(reinterpret_cast<const std::uint8_t*>(rows + std::size_t(r) * out.type.dimension), row_bytes);
      }
    });
  }
  return out;
}

namespace detail {

// PQ sub-vectors for bounds: sub-vectors of 4 values where the dimension allows (at
// most 256 code bytes, the filtered scan's limit), else of the smallest width that does.
inline std::size_t bound_sub_vectors(std::size_t dim) noexcept {
  for (std::size_t width : {4u, 8u, 16u, 32u, 64u, 2u, 1u})
    if (dim % width == 0 && dim / width <= 256) return dim / width;
  return 0;
}

// Rows with at least this many rows get bounds (below, a plain scan is as fast).
inline constexpr std::size_t bounds_min_rows = 4096;

// Bounds of the rows of `r` (float elements) for `distance` (l2 / dot share raw rows,
// cosine normalises them); nullptr where they cannot help (uint8 codes, hamming).
inline std::shared_ptr<const distance_bounds> build_bounds(const vector_rows& r, simd::distance_type distance) {
  const std::size_t n = r.ids.size(), dim = r.type.dimension;
  const std::size_t m = bound_sub_vectors(dim);
  if (n < bounds_min_rows || m == 0 || r.type.element == vector_element::u8 || distance == simd::distance_type::hamming)
    return nullptr;
  auto b = std::make_shared<distance_bounds>();
  b->distance = distance == simd::distance_type::cosine ? distance : simd::distance_type::l2;
  std::vector<float> work(n * dim);
  const std::size_t eb = element_bytes(r.type.element);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* row = r.values.data() + i * dim * eb;
    float* w = work.data() + i * dim;
    for (std::size_t j = 0; j < dim; ++j) {
      switch (r.type.element) {
        case vector_element::f16: w[j] = reinterpret_cast<const simd::f16*>(row)[j].to_float(); break;
        case vector_element::f32: w[j] = reinterpret_cast<const float*>(row)[j]; break;
        case vector_element::f64: w[j] = static_cast<float>(reinterpret_cast<const double*>(row)[j]); break;
        case vector_element::u8: break;
      }
    }
    if (b->distance == simd::distance_type::cosine) {
      double norm = 0;
      for (std::size_t j = 0; j < dim; ++j) norm += double(w[j]) * w[j];
      if (norm > 0) {
        const double inv = 1.0 / std::sqrt(norm);
        for (std::size_t j = 0; j < dim; ++j) w[j] = float(w[j] * inv);
      }
    }
  }
  index::pq::params pp;
  pp.num_sub_vectors = m;
  pp.num_bits = 8;
  pp.max_iters = 10;  // bounds need a fair codebook, not the best one
  pp.choose_iterate = false;
  b->pq = index::pq::train(work.data(), n, dim, pp, simd::distance_type::l2);
  const std::size_t sd = dim / m;
  b->columns.resize(m * sd * 256);
  for (std::size_t sv = 0; sv < m; ++sv)
    for (std::size_t c = 0; c < 256; ++c)
      for (std::size_t j = 0; j < sd; ++j) b->columns[(sv * sd + j) * 256 + c] = b->pq.centroids(sv)[c * sd + j];
  std::vector<std::uint8_t> codes(n * m);
  index::pq::encode(b->pq, work.data(), n, codes.data());
  b->codes.resize(n * m);
  index::transpose_codes(codes.data(), n, m, b->codes.data());
  // The reconstruction errors. The f64 source rows are what distances use: their error
  // includes the rounding to f32 done above.
  b->error.resize(n);
  std::vector<double> back(dim);
  for (std::size_t i = 0; i < n; ++i) {
    index::pq::decode(b->pq, codes.data() + i * m, back.data());
    double e2 = 0;
    const std::uint8_t* row = r.values.data() + i * dim * eb;
    double scale = 1.0;
    if (b->distance == simd::distance_type::cosine) {
      double norm = 0;
      for (std::size_t j = 0; j < dim; ++j) {
        const double x = r.type.element == vector_element::f64 ? reinterpret_cast<const double*>(row)[j] : double(work[i * dim + j]);
        norm += x * x;
      }
      if (r.type.element == vector_element::f64 && norm > 0) scale = 1.0 / std::sqrt(norm);
    }
    for (std::size_t j = 0; j < dim; ++j) {
      const double x = r.type.element == vector_element::f64 ? reinterpret_cast<const double*>(row)[j] * scale
                                                             : double(work[i * dim + j]);
      e2 += (x - back[j]) * (x - back[j]);
    }
    const double e = std::sqrt(e2);
    // Rounded up, with room for the f32 sums the bound is compared through.
    b->error[i] = std::isfinite(e) ? std::nextafter(float(e * (1.0 + 1e-6)), std::numeric_limits<float>::infinity())
                                   : std::numeric_limits<float>::infinity();
    if (std::isfinite(b->error[i])) b->max_error = std::max(b->max_error, b->error[i]);
    else b->unbounded.push_back(std::uint32_t(i));
  }
  return b;
}

// The exact distance of one row, as the plain flat search computes it (the query
// already in T).
template <class T>
inline float exact_one(simd::distance_type t, const T* q, const T* row, std::size_t dim) {
  return static_cast<float>(simd::distance_in_block(t, q, row, dim));
}

// The query as flat::distances casts it to the rows' element type.
template <class T>
inline std::vector<T> query_as(const double* query, std::size_t dim) {
  std::vector<T> q(dim);
  for (std::size_t i = 0; i < dim; ++i) q[i] = index::quantizer::from_work<T>(query[i]);
  return q;
}

// The bounded exact search (distance_bounds) over rows of element type T.
template <class T>
inline void bounded_search(const vector_rows& rows, const distance_bounds& b, const double* query,
                           const flat_search_params& p, index::topk& best) {
  const std::size_t n = rows.ids.size(), dim = rows.type.dimension;
  const auto qt = query_as<T>(query, dim);
  const T* values = reinterpret_cast<const T*>(rows.values.data());
  // The query against the codebook: normalised under cosine; dot keeps |q|.
  std::vector<double> qb(query, query + dim);
  double qnorm = 0;
  for (auto x : qb) qnorm += x * x;
  qnorm = std::sqrt(qnorm);
  const bool cosine = b.distance == simd::distance_type::cosine;
  if (cosine && qnorm > 0)
    for (auto& x : qb) x /= qnorm;
  const bool dot = p.distance == simd::distance_type::dot;
  // The query's lookup tables: per sub-vector and centroid, the squared distance of the
  // query's sub-vector to it (dot: minus their dot product; the offset 1 makes a row's
  // sum 1 - q.x').
  const std::size_t m = b.pq.num_sub_vectors, sd = b.pq.sub_dimension();
  thread_local std::vector<float> lut;
  lut.assign(m * 256, 0.0f);
  for (std::size_t sv = 0; sv < m; ++sv) {
    float* t = lut.data() + sv * 256;
    for (std::size_t j = 0; j < sd; ++j) {
      const float x = float(qb[sv * sd + j]);
      const float* col = b.columns.data() + (sv * sd + j) * 256;
      if (dot)
        for (std::size_t c = 0; c < 256; ++c) t[c] -= x * col[c];
      else
        for (std::size_t c = 0; c < 256; ++c) t[c] += (x - col[c]) * (x - col[c]);
    }
  }
  const float offset = dot ? 1.0f : 0.0f;
  constexpr double eps = 1e-4, tiny = 1e-5;
  // The k-th distance that matters now.
  const auto current = [&]() -> double {
    double k = p.bound;
    if (best.full()) k = std::min<double>(k, best.worst().distance);
    return k;
  };
  // A row's bound (in the query's distance) from its PQ distance and error.
  const auto lower = [&](double pqd, double e) -> double {
    if (dot) return pqd - qnorm * e - eps * (std::abs(pqd) + 1.0) - tiny;
    const double l = std::sqrt(std::max(0.0, pqd)) * (1.0 - eps) - e - tiny;
    if (l <= 0) return -std::numeric_limits<double>::infinity();
    return cosine ? l * l / 2.0 : l * l;
  };
  const auto exact = [&](std::size_t r) {
    const float d = exact_one(p.distance, qt.data(), values + r * dim, dim);
    if (!(d <= (best.full() ? best.worst().distance : std::numeric_limits<float>::infinity()))) return;
    if ((p.distance_lower && !(d >= *p.distance_lower)) || (p.distance_upper && !(d < *p.distance_upper))) return;
    best.push(d, rows.ids[r]);
  };
  const auto allowed = [&](std::size_t r) { return !p.allowed || p.allowed->contains(rows.ids[r]); };
  // Rows whose error is unknown (a non-finite value) are searched exactly.
  for (auto r : b.unbounded)
    if (allowed(r)) exact(r);
  // Without a bound from the caller, the k rows nearest by their PQ distance are searched
  // exactly first: their k-th distance bounds the scan from its first row on.
  std::vector<std::uint32_t> seeded;
  if (!(p.bound < std::numeric_limits<float>::infinity()) && n > p.k) {
    thread_local std::vector<float> approx;
    approx.resize(n);
    index::pq::lut_scan(lut.data(), m, b.codes.data(), n, approx.data());
    std::vector<std::uint32_t> order;
    order.reserve(n);
    for (std::uint32_t r = 0; r < n; ++r)
      if (std::isfinite(b.error[r]) && allowed(r)) order.push_back(r);
    const std::size_t take = std::min(order.size(), p.k);
    std::nth_element(order.begin(), order.begin() + std::ptrdiff_t(take), order.end(),
                     [&](std::uint32_t a, std::uint32_t c) { return approx[a] < approx[c]; });
    seeded.assign(order.begin(), order.begin() + std::ptrdiff_t(take));
    std::sort(seeded.begin(), seeded.end());
    for (auto r : seeded) exact(r);
  }
  // A row the scan may still give an exact distance: bounded, not seeded, allowed.
  const auto open = [&](std::size_t r) {
    return std::isfinite(b.error[r]) &&
           (seeded.empty() || !std::binary_search(seeded.begin(), seeded.end(), std::uint32_t(r))) && allowed(r);
  };
  thread_local std::vector<std::uint8_t> qscratch;
  if (qscratch.size() < m * 256) qscratch.resize(m * 256);
  const auto ql = index::pq::quantize_for_scan(lut.data(), m, qscratch.data());
  const auto threshold = [&]() -> float {
    // Rows whose PQ distance exceeds this cannot be within the current k-th.
    const double k = current();
    if (!(k < std::numeric_limits<double>::infinity())) return std::numeric_limits<float>::infinity();
    double t;
    if (dot) {
      t = k + qnorm * b.max_error + eps * (std::abs(k) + 1.0) + tiny;
    } else {
      const double root = std::sqrt(std::max(0.0, cosine ? 2.0 * k : k));
      const double reach = (root + b.max_error + tiny) / (1.0 - eps);
      t = reach * reach;
    }
    t = t * (1.0 + eps) + tiny - offset;
    return t >= double(std::numeric_limits<float>::max()) ? std::numeric_limits<float>::infinity() : float(t);
  };
  // In chunks: where the bounds leave a good share of a chunk's rows to compute exactly
  // (the k-th distance is far, as for a query unlike these rows), they cost more than
  // they save, and the rest of the rows are searched without them.
  constexpr std::size_t chunk = 8192;
  for (std::size_t from = 0; from < n; from += chunk) {
    const std::size_t to = std::min(n, from + chunk);
    std::size_t computed = 0;
    index::pq::scan_quantized(ql, qscratch.data(), lut.data(), m, b.codes.data(), n, from, to, threshold,
                              [&](std::size_t r, float sum) {
                                // open(r) leaves out the unbounded rows, searched above.
                                if (lower(double(sum) + offset, b.error[r]) > current() || !open(r)) return;
                                ++computed;
                                exact(r);
                              });
    if (computed * 4 > to - from) {
      for (std::size_t r = to; r < n; ++r)
        if (open(r)) exact(r);
      break;
    }
  }
}

}  // namespace detail

// The k nearest of rows held in memory, nearest first (computing exact distances only
// for rows that may be among them when the rows carry bounds for this distance).
inline std::vector<index::neighbor> flat_search(const vector_rows& rows, const double* query,
                                                const flat_search_params& p) {
  if (p.k == 0 || rows.ids.empty()) return {};
  index::topk best(p.k);
  const bool usable = rows.bounds && (rows.bounds->distance == simd::distance_type::cosine
                                          ? p.distance == simd::distance_type::cosine
                                          : (p.distance == simd::distance_type::l2 || p.distance == simd::distance_type::dot));
  if (usable) {
    switch (rows.type.element) {
      case vector_element::f16: detail::bounded_search<simd::f16>(rows, *rows.bounds, query, p, best); break;
      case vector_element::f32: detail::bounded_search<float>(rows, *rows.bounds, query, p, best); break;
      case vector_element::f64: detail::bounded_search<double>(rows, *rows.bounds, query, p, best); break;
      case vector_element::u8: break;
    }
    return best.sorted();
  }
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

// The vectors of the given rows widened to double, from rows held in memory: false
// (out partly written) when some row is not held (a NULL vector, or rows the holder
// does not cover) or the held ids cannot be searched.
inline bool fetch_held_vectors(const vector_rows& held, std::span<const std::uint64_t> row_ids, double* out) {
  if (!held.ids_ascending) return false;
  const std::size_t dim = held.type.dimension, row_bytes = dim * detail::element_bytes(held.type.element);
  for (std::size_t r = 0; r < row_ids.size(); ++r) {
    const auto it = std::lower_bound(held.ids.begin(), held.ids.end(), row_ids[r]);
    if (it == held.ids.end() || *it != row_ids[r]) return false;
    const std::uint8_t* row = held.values.data() + std::size_t(it - held.ids.begin()) * row_bytes;
    auto widen = [&](const auto* v) {
      for (std::size_t j = 0; j < dim; ++j) out[r * dim + j] = index::quantizer::to_work<double>(v[j]);
    };
    switch (held.type.element) {
      case vector_element::f16: widen(reinterpret_cast<const simd::f16*>(row)); break;
      case vector_element::f32: widen(reinterpret_cast<const float*>(row)); break;
      case vector_element::f64: widen(reinterpret_cast<const double*>(row)); break;
      case vector_element::u8: widen(row); break;
    }
  }
  return true;
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
