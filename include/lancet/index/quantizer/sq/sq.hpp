// Scalar quantization as Lance 12 builds and searches it (lance-index vector/sq):
//
//   auto sq = index::sq::train(rows, n, dim);            // bounds over the sample
//   std::vector<uint8_t> codes(n * dim);
//   index::sq::encode(sq, rows, n, codes.data());        // row-major, one byte per value
//   index::sq::distance_estimator est(sq, query, distance_type::l2);
//   est.scan(codes.data(), n, distances);
//
// What follows Lance:
// - ONE pair of bounds for the whole vector, not per dimension: the minimum and the
//   maximum of every value of the training sample (sample_rate * 2^num_bits rows;
//   NaN values are ignored like Rust's f64::min/max; Lance's builder drops
//   non-finite rows first, and so does train). Bounds start at (f64::MAX, f64::MIN).
// - code = (v - lower) * 255 / (upper - lower), truncated and saturated into
//   [0, 255] (Rust's `as u8`: NaN -> 0); every code is 0 when lower == upper;
// - no residuals; cosine indexes quantize normalised vectors;
// - search quantizes the query with the same bounds; l2 and cosine estimate
//   sum (q_i - c_i)^2 (integer sums converted to f32) times (upper - lower)^2 / 255^2.
// Verified against LanceDB 0.39: the bounds and codes of LanceDB's HNSW_SQ storage.
// Where lancet differs: decode (the centre of each code's bucket) is lancet's, Lance
// never decodes; for dot, Lance scales 1 - sum q_i c_i over the codes, which ignores
// the lower bound and does not rank by x.y (recall near zero on ordinary data), so
// lancet estimates 1 - sum q_i x_i over the decoded values instead; the Lance formula
// stays available (dot_estimate::lance).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace lancet::index::sq {

using simd::distance_type;

struct params {
  std::uint16_t num_bits = 8;   // Lance supports 8
  std::size_t sample_rate = 256;
  std::uint64_t seed = 42;      // for the training sample

  std::size_t sample_size() const noexcept { return sample_rate << num_bits; }
};

struct model {
  std::size_t dimension = 0;
  std::uint16_t num_bits = 8;
  double lower = std::numeric_limits<double>::max();     // Lance's bounds.start
  double upper = std::numeric_limits<double>::lowest();  // Lance's bounds.end

  bool has_bounds() const noexcept { return lower <= upper; }
  // Bytes of one row's code.
  std::size_t code_bytes() const noexcept { return dimension; }

  void validate() const {
    if (num_bits != 8)
      throw invalid_input_error("SQ: num_bits " + std::to_string(num_bits) + " is not supported (8)");
    if (dimension == 0) throw invalid_input_error("SQ: vector dimension must be positive");
    if (!has_bounds())
      throw invalid_input_error("SQ: the quantizer has no bounds (trained on no values)");
    if (!std::isfinite(lower) || !std::isfinite(upper))
      throw invalid_input_error("SQ: bounds must be finite, got [" + std::to_string(lower) + ", " +
                                std::to_string(upper) + "]");
  }
};

}  // namespace lancet::index::sq

namespace lancet::index::detail {

// Rust's `f64 as u8`: truncate toward zero, saturate, NaN -> 0.
inline std::uint8_t saturate_u8(double v) noexcept {
  if (!(v > 0.0)) return 0;
  if (v >= 255.0) return 255;
  return static_cast<std::uint8_t>(v);
}

template <class T>
inline void fold_bounds(const T* v, std::size_t count, double& lo, double& hi) {
  for (std::size_t i = 0; i < count; ++i) {
    const double x = quantizer::to_work<double>(v[i]);
    if (x < lo) lo = x;  // NaN never compares: skipped, as f64::min / max do
    if (x > hi) hi = x;
  }
}

}  // namespace lancet::index::detail

namespace lancet::index::sq {

// Widens the bounds to cover n more rows (Lance's update_bounds / retrain). Rows
// are taken as given (no filtering): infinities widen the bounds to infinity.
template <class T>
inline void update_bounds(model& m, const T* rows, std::size_t n, boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "SQ quantizes float, double or f16 vectors");
  quantizer::check_shape("SQ", rows, n, m.dimension);
  const std::size_t d = m.dimension, block = 4096, blocks = (n + block - 1) / block;
  std::vector<double> lo(blocks, m.lower), hi(blocks, m.upper);
  parallel_for(pool, blocks, [&](std::size_t b) {
    const std::size_t r0 = b * block, cnt = std::min(block, n - r0);
    detail::fold_bounds(rows + r0 * d, cnt * d, lo[b], hi[b]);
  });
  for (std::size_t b = 0; b < blocks; ++b) {
    m.lower = std::min(m.lower, lo[b]);
    m.upper = std::max(m.upper, hi[b]);
  }
}

// Trains the bounds on at most p.sample_size() rows drawn with p.seed, as Lance:
// normalised under cosine, rows with a non-finite value dropped.
template <class T>
inline model train(const T* rows, std::size_t n, std::size_t dim, const params& p = {},
                   distance_type distance = distance_type::l2, boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "SQ quantizes float, double or f16 vectors");
  quantizer::check_shape("SQ", rows, n, dim);
  if (p.num_bits != 8) throw invalid_input_error("SQ: num_bits " + std::to_string(p.num_bits) + " is not supported (8)");
  if (p.sample_rate == 0) throw invalid_input_error("SQ: sample_rate must be positive");
  if (distance == distance_type::hamming) throw invalid_input_error("SQ: hamming distance is not supported");
  const auto picked = quantizer::sample_rows(n, p.sample_size(), p.seed);
  const auto prepared = quantizer::prepare_training_rows<T, T>(rows, dim, picked, distance, nullptr, 0, false, pool);
  model m;
  m.dimension = dim;
  m.num_bits = p.num_bits;
  update_bounds(m, prepared.data(), prepared.size() / dim, pool);
  if (!m.has_bounds())
    throw invalid_input_error("SQ: no finite training vectors among " + std::to_string(picked.size()) +
                              " sampled rows");
  return m;
}

// One value's code.
inline std::uint8_t quantize_value(const model& m, double v) noexcept {
  if (m.lower == m.upper) return 0;
  return detail::saturate_u8((v - m.lower) * 255.0 / (m.upper - m.lower));
}

// One code's value: the centre of its bucket, clamped into the bounds (so codes 0
// and 255 map within [lower, upper]); within (upper - lower) / 510 of any value
// inside the bounds that encodes to it.
inline double dequantize_value(const model& m, std::uint8_t c) noexcept {
  const double r = m.upper - m.lower;
  return std::clamp(m.lower + (double(c) + 0.5) * r / 255.0, m.lower, m.upper);
}

// Row-major codes of n rows as given: n x dimension bytes.
template <class T>
inline void encode(const model& m, const T* rows, std::size_t n, std::uint8_t* codes,
                   boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "SQ quantizes float, double or f16 vectors");
  m.validate();
  quantizer::check_shape("SQ encode", rows, n, m.dimension);
  if (n > 0 && codes == nullptr) throw invalid_input_error("SQ encode: output codes are null");
  const std::size_t d = m.dimension, block = 4096;
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    const std::size_t e = std::min(n * d, (b + 1) * block * d);
    for (std::size_t i = b * block * d; i < e; ++i) codes[i] = quantize_value(m, quantizer::to_work<double>(rows[i]));
  });
}

// Codes of n rows of an IVF index, as Lance's shuffle computes them: normalised
// under cosine (no residual). A zero row under cosine codes as NaN, i.e. all 0.
template <class T>
inline void encode_for_ivf(const model& m, const T* rows, std::size_t n, distance_type distance, std::uint8_t* codes,
                           boost::asio::thread_pool* pool = nullptr) {
  if (distance != distance_type::cosine) {
    encode(m, rows, n, codes, pool);
    return;
  }
  m.validate();
  quantizer::check_shape("SQ encode", rows, n, m.dimension);
  if (n > 0 && codes == nullptr) throw invalid_input_error("SQ encode: output codes are null");
  const std::size_t d = m.dimension, block = 1024;
  const quantizer::ivf_input<float> in{distance, nullptr, 0, nullptr, false};
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    std::vector<double> row(d);
    for (std::size_t r = b * block; r < std::min(n, (b + 1) * block); ++r) {
      quantizer::ivf_input_row(in, rows, r, d, row.data());
      for (std::size_t i = 0; i < d; ++i) codes[r * d + i] = quantize_value(m, row[i]);
    }
  });
}

// Approximate values of n code rows (n x dimension) into out.
template <class O>
inline void decode(const model& m, const std::uint8_t* codes, std::size_t n, O* out) {
  m.validate();
  for (std::size_t i = 0; i < n * m.dimension; ++i) out[i] = quantizer::from_work<O>(dequantize_value(m, codes[i]));
}

}  // namespace lancet::index::sq

namespace lancet::index::detail {
#if defined(__AVX512BW__)
// Sum over the first (d / 32) * 32 values of (a - b)^2 (L2) or a * b (else), mod 2^32;
// `done` is set to the number of values summed. 32 values per step widened to i16,
// vpmaddwd pairs into i32 lanes (at most 2 x 255^2 per pair, no overflow).
template <bool L2>
inline std::uint32_t u8_sums_avx512(const std::uint8_t* a, const std::uint8_t* b, std::size_t d,
                                    std::size_t& done) noexcept {
  __m512i acc = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    const __m512i x = _mm512_maskz_cvtepu8_epi16(~__mmask32(0), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    const __m512i y = _mm512_maskz_cvtepu8_epi16(~__mmask32(0), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    if constexpr (L2) {
      const __m512i t = _mm512_sub_epi16(x, y);
      acc = _mm512_add_epi32(acc, _mm512_madd_epi16(t, t));
    } else {
      acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, y));
    }
  }
  done = i;
  // Horizontal sum by halves (lane order does not matter for integer sums).
  const __m256i s8 = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(static_cast<__mmask8>(0xf), acc, 0),
                                      _mm512_maskz_extracti64x4_epi64(static_cast<__mmask8>(0xf), acc, 1));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(s4));
}
#endif
}  // namespace lancet::index::detail

namespace lancet::index::sq {

// How dot distances are estimated (see the top of this file).
enum class dot_estimate : std::uint8_t {
  dequantized,  // 1 - q . decode(code)
  lance,        // Lance's (1 - q_code . code) * (upper - lower)^2 / 255^2
};

// SQ distances: l2 / cosine as Lance (the query quantized with the model's bounds,
// integer distances between codes, scaled back by (upper - lower)^2 / 255^2); dot as
// chosen by dot_estimate.
class distance_estimator {
 public:
  distance_estimator() = default;

  template <class Q>
  distance_estimator(const model& m, const Q* query, distance_type t, dot_estimate de = dot_estimate::dequantized)
      : dim_(m.dimension) {
    static_assert(quantizer::is_float_element_v<Q>, "SQ queries are float, double or f16");
    m.validate();
    if (query == nullptr) throw invalid_input_error("SQ distance: query is null");
    if (t == distance_type::hamming) throw invalid_input_error("SQ distance: hamming is not supported");
    dot_ = t == distance_type::dot;
    lance_dot_ = de == dot_estimate::lance;
    q_.resize(dim_);
    for (std::size_t i = 0; i < dim_; ++i) q_[i] = quantize_value(m, quantizer::to_work<double>(query[i]));
    if (dot_ && !lance_dot_) {
      qf_.resize(dim_);
      for (std::size_t i = 0; i < dim_; ++i) qf_[i] = quantizer::to_work<float>(query[i]);
      for (std::size_t c = 0; c < 256; ++c) value_[c] = static_cast<float>(dequantize_value(m, std::uint8_t(c)));
    }
    const float range = static_cast<float>(m.upper - m.lower);
    range_sq_ = range * range;
  }

  const std::vector<std::uint8_t>& query_code() const noexcept { return q_; }

  // Distance to one code row (Lance's inverse_scalar_dist: v * range^2 / 255^2).
  float distance(const std::uint8_t* code) const noexcept {
    if (dot_ && !lance_dot_) {
      float s = 0.0f;
      for (std::size_t i = 0; i < dim_; ++i) s += qf_[i] * value_[code[i]];
      return 1.0f - s;
    }
    const float v = dot_ ? 1.0f - static_cast<float>(sum_u32<false>(code)) : static_cast<float>(sum_u32<true>(code));
    return v * range_sq_ / 65025.0f;
  }

  // Distances to n row-major code rows.
  void scan(const std::uint8_t* codes, std::size_t n, float* out) const noexcept {
    for (std::size_t j = 0; j < n; ++j) out[j] = distance(codes + j * dim_);
  }

 private:
  // Lance sums in u32 (wrapping past 2^32 only beyond 66051 dimensions). Integer
  // sums are exact in any order: the SIMD kernels equal the scalar loops mod 2^32.
  // L2: the sum of squared differences; else the dot product.
  template <bool L2>
  std::uint32_t sum_u32(const std::uint8_t* c) const noexcept {
    std::uint32_t s = 0;
    std::size_t i = 0;
#if defined(__AVX512BW__)
    s = detail::u8_sums_avx512<L2>(c, q_.data(), dim_, i);
#endif
    for (; i < dim_; ++i) {
      if constexpr (L2) {
        const std::int32_t t = std::int32_t(c[i]) - std::int32_t(q_[i]);
        s += static_cast<std::uint32_t>(t * t);
      } else {
        s += std::uint32_t(c[i]) * std::uint32_t(q_[i]);
      }
    }
    return s;
  }

  std::size_t dim_ = 0;
  bool dot_ = false, lance_dot_ = false;
  float range_sq_ = 0.0f;
  std::vector<std::uint8_t> q_;
  std::vector<float> qf_;
  float value_[256] = {};
};

// ---- the shared storage description (quantizer/params.hpp) ----------------------

inline sq_params to_params(const model& m) {
  m.validate();
  return sq_params{static_cast<std::uint32_t>(m.dimension), m.num_bits, m.lower, m.upper};
}

inline model from_params(const sq_params& p) {
  model m;
  m.dimension = p.dimension;
  m.num_bits = static_cast<std::uint16_t>(p.num_bits);
  m.lower = p.lower;
  m.upper = p.upper;
  m.validate();
  return m;
}

}  // namespace lancet::index::sq
