// What the quantizers share: element-type checks, row sampling, finite filtering,
// normalisation and residuals, each the way Lance's IVF builder prepares training
// data (lance/src/index/vector/builder.rs, load_or_build_quantizer):
//   sample -> (cosine) normalise -> drop non-finite rows -> (residual quantizers)
//   subtract the nearest IVF centroid under l2.
// Everything here is deterministic for a seed and independent of the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"

namespace lancet::index::quantizer {

// Floating element types a quantizer accepts (Lance: float16, float32, float64).
template <class T>
inline constexpr bool is_float_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, simd::f16>;

// The value of one element in working precision W.
template <class W, class T>
inline W to_work(T v) {
  if constexpr (std::is_same_v<T, simd::f16>) return static_cast<W>(v.to_float());
  else return static_cast<W>(v);
}

// W -> element type (f16 rounds to nearest even).
template <class T, class W>
inline T from_work(W v) {
  if constexpr (std::is_same_v<T, simd::f16>) return simd::f16(static_cast<float>(v));
  else return static_cast<T>(v);
}

// 64-bit mixing of a seed with a stream number, so that e.g. each sub-vector's
// k-means gets its own reproducible seed.
inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// At most `limit` distinct row indices of [0, n), ascending, drawn with the seed
// (all rows when n <= limit).
inline std::vector<std::size_t> sample_rows(std::size_t n, std::size_t limit, std::uint64_t seed) {
  index::detail::rng64 rng(seed);
  return index::detail::sample_indices(n, limit, rng);
}

// ---- row checks and normalisation (the one home of both) ------------------------
// Lance normalises a cosine row by dividing it by its norm (a zero row becomes NaN)
// and its KeepFiniteVectors transform then drops rows holding a non-finite value, so
// neither a zero row (cosine) nor a non-finite one is ever trained on or indexed. The
// two paths of lancet differ on purpose only in when they check and in precision:
//  - building / optimising an index checks each column row with indexable_row first
//    and stores normalise_row_double's rows (norm and division in double, rounded to
//    the element type) in IVF_FLAT and uses them for k-means and partition routing;
//  - quantizer training / encoding and queries normalise in the working precision
//    with normalise_row, which itself rejects a zero or non-finite norm (the caller
//    drops the row, fills it with NaN, or refuses the query).

// Whether every value of the row is finite.
template <class T>
inline bool row_is_finite(const T* row, std::size_t d) {
  for (std::size_t i = 0; i < d; ++i)
    if (!std::isfinite(to_work<double>(row[i]))) return false;
  return true;
}

// Whether a row of a vector column is indexed: every value finite and, under cosine,
// a non-zero norm (uint8 rows, hamming's, always are).
template <class T>
inline bool indexable_row(const T* row, std::size_t d, simd::distance_type metric) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    (void)row, (void)d, (void)metric;
    return true;
  } else {
    double norm_sq = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double v = to_work<double>(row[i]);
      if (!std::isfinite(v)) return false;
      norm_sq += v * v;
    }
    return metric != simd::distance_type::cosine || norm_sq > 0;
  }
}

// Scales the row (in working precision) to unit length; false for a zero or
// non-finite norm (the row is then left as it was).
template <class W>
inline bool normalise_row(W* row, std::size_t d) {
  const W n = std::sqrt(simd::norm_sq(row, d));
  if (!(n > W(0)) || !std::isfinite(n)) return false;
  const W inv = W(1) / n;
  for (std::size_t i = 0; i < d; ++i) row[i] *= inv;
  return true;
}

// Divides an indexable row (indexable_row under cosine: finite, non-zero) of element
// type T by its norm, both computed in double, each value rounded back to T.
template <class T>
inline void normalise_row_double(T* row, std::size_t d) {
  double norm_sq = 0;
  for (std::size_t i = 0; i < d; ++i) {
    const double v = to_work<double>(row[i]);
    norm_sq += v * v;
  }
  const double n = std::sqrt(norm_sq);
  for (std::size_t i = 0; i < d; ++i) row[i] = from_work<T>(to_work<double>(row[i]) / n);
}

// Rounds values of working precision W to the element type T and back: Lance keeps
// the vectors' element type through its transforms (normalisation, residuals).
template <class T, class W>
inline void round_through(W* v, std::size_t d) {
  if constexpr (!std::is_same_v<T, W>)
    for (std::size_t i = 0; i < d; ++i) v[i] = to_work<W>(from_work<T>(v[i]));
}

// Training rows for a quantizer, prepared as Lance prepares them, where they are:
// rows `picked` (ascending; null: all n) of `rows` (n x d, element type T) moved to
// the front, normalised under cosine, rows with a non-finite value dropped, and, when
// `residual` is set, the nearest of the k IVF centroids (l2, as Lance's residual
// transform) subtracted. Values keep the element type (Lance computes residuals in
// the vector type). Returns how many rows were kept (the first of `rows`). No second
// copy of the rows is made: a training sample is the largest thing an index build
// holds, and the residuals are assigned a block at a time. With `partitions`, each
// kept row's partition is stored there when residuals are taken (cleared otherwise).
template <class T, class C>
inline std::size_t prepare_training_rows_in_place(T* rows, std::size_t n, std::size_t d,
                                                  const std::vector<std::size_t>* picked, simd::distance_type dist,
                                                  const C* centroids, std::size_t k, bool residual,
                                                  boost::asio::thread_pool* pool, std::size_t* dropped = nullptr,
                                                  std::vector<std::uint32_t>* partitions = nullptr) {
  using W = simd::work_t<T, C>;
  const bool cosine = dist == simd::distance_type::cosine;
  std::vector<W> tmp(d);
  std::size_t m = 0, lost = 0;
  const std::size_t count = picked ? picked->size() : n;
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t r = picked ? (*picked)[j] : j;
    const T* src = rows + r * d;
    for (std::size_t i = 0; i < d; ++i) tmp[i] = to_work<W>(src[i]);
    bool ok = row_is_finite(tmp.data(), d);
    if (ok && cosine) ok = normalise_row(tmp.data(), d);
    if (!ok) {
      ++lost;
      continue;
    }
    T* dst = rows + m * d;  // m <= r: rows only move towards the front
    if (cosine) {
      for (std::size_t i = 0; i < d; ++i) dst[i] = from_work<T>(tmp[i]);
    } else if (dst != src) {
      std::memmove(dst, src, d * sizeof(T));
    }
    ++m;
  }
  if (dropped) *dropped = lost;
  if (partitions) partitions->clear();
  if (residual && m > 0) {
    if (partitions) partitions->resize(m);
    if (centroids == nullptr || k == 0)
      throw invalid_input_error("quantizer training: residuals need the IVF centroids");
    const simd::packed_centroids<W> pc(simd::distance_type::l2, centroids, k, d);
    constexpr std::size_t block = 8192;  // each row's nearest centroid depends on that row only
    std::vector<std::uint32_t> part(std::min(m, block));
    for (std::size_t r0 = 0; r0 < m; r0 += block) {
      const std::size_t cnt = std::min(block, m - r0);
      simd::assign_nearest(pc, rows + r0 * d, cnt, part.data(), static_cast<W*>(nullptr), pool);
      if (partitions) std::copy_n(part.data(), cnt, partitions->data() + r0);
      for (std::size_t r = 0; r < cnt; ++r) {
        if (part[r] == simd::no_index) continue;  // finite rows always match; kept for safety
        const W* c = pc.centroid(part[r]);
        T* row = rows + (r0 + r) * d;
        for (std::size_t i = 0; i < d; ++i) row[i] = from_work<T>(to_work<W>(row[i]) - c[i]);
      }
    }
  }
  return m;
}

// prepare_training_rows_in_place on a copy of the `picked` rows of `rows` (n x d):
// the prepared rows, row-major.
template <class T, class C>
inline std::vector<T> prepare_training_rows(const T* rows, std::size_t d, const std::vector<std::size_t>& picked,
                                            simd::distance_type dist, const C* centroids, std::size_t k,
                                            bool residual, boost::asio::thread_pool* pool,
                                            std::size_t* dropped = nullptr,
                                            std::vector<std::uint32_t>* partitions = nullptr) {
  std::vector<T> out(picked.size() * d);
  for (std::size_t j = 0; j < picked.size(); ++j)
    std::copy(rows + picked[j] * d, rows + picked[j] * d + d, out.data() + j * d);
  const std::size_t m = prepare_training_rows_in_place<T, C>(out.data(), picked.size(), d, nullptr, dist, centroids,
                                                             k, residual, pool, dropped, partitions);
  out.resize(m * d);
  return out;
}

// How a vector is turned into the quantizer's input inside an IVF index: Lance
// normalises under cosine and, for residual quantizers, subtracts the centroid of
// the row's partition. `centroids` may be null when no residual is taken.
template <class C>
struct ivf_input {
  simd::distance_type distance = simd::distance_type::l2;
  const C* centroids = nullptr;             // num_partitions x dimension
  std::size_t num_partitions = 0;
  const std::uint32_t* partitions = nullptr;  // one per row (residual quantizers)
  bool residual = false;
};

// Row r of the input (n x d) as the quantizer sees it, in working precision W (each
// step rounded to the element type T, as Lance computes it). Returns false when
// the row cannot be prepared (zero row under cosine, a partition out of range); the
// row is then filled with NaN.
template <class W, class T, class C>
inline bool ivf_input_row(const ivf_input<C>& in, const T* rows, std::size_t r, std::size_t d, W* out) {
  for (std::size_t i = 0; i < d; ++i) out[i] = to_work<W>(rows[r * d + i]);
  bool ok = true;
  if (in.distance == simd::distance_type::cosine) {
    ok = normalise_row(out, d);
    round_through<T>(out, d);
  }
  if (ok && in.residual) {
    const std::uint32_t p = in.partitions ? in.partitions[r] : simd::no_index;
    if (p >= in.num_partitions || in.centroids == nullptr) {
      ok = false;
    } else {
      const C* c = in.centroids + std::size_t(p) * d;
      for (std::size_t i = 0; i < d; ++i) out[i] -= to_work<W>(c[i]);
      round_through<T>(out, d);
    }
  }
  if (!ok)
    for (std::size_t i = 0; i < d; ++i) out[i] = std::numeric_limits<W>::quiet_NaN();
  return ok;
}

inline void check_shape(const char* who, const void* rows, std::size_t n, std::size_t d) {
  if (d == 0) throw invalid_input_error(std::string(who) + ": vector dimension must be positive");
  if (n > 0 && rows == nullptr) throw invalid_input_error(std::string(who) + ": rows are null");
}

}  // namespace lancet::index::quantizer
