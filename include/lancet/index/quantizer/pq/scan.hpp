// Scanning PQ codes against a query (quantizer/pq/pq.hpp says how it follows Lance):
// the lookup-table scan kernels (scalar, AVX2 and AVX-512 gathers; the u8-quantized
// filtered scan: public, for the other scans that sum code bytes' tables, RaBitQ's
// and the exact searches' bounds), distance_table (a query's table per code byte),
// and residual tables built from precomputed query and partition terms.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"

namespace lancet::index::detail {

#if defined(__AVX512F__)
// Masked forms with a zero source: GCC 12 warns about the undefined source
// registers of the plain intrinsics.

// The 16 bytes at p widened to i32 lanes.
inline __m512i widen_u8_to_i32x16(const std::uint8_t* p) {
  return _mm512_maskz_cvtepu8_epi32(static_cast<__mmask16>(0xffff), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// t[idx] for 16 i32 indices.
inline __m512 gather_f32x16(const float* t, __m512i idx) {
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), static_cast<__mmask16>(0xffff), idx, t, 4);
}
#endif

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
// Adds one code byte's quantized table entries (table qt, 256 bytes) for the 64 rows
// whose codes start at `codes`: rows 0..31 to acc0, 32..63 to acc1 (u16 lanes).
inline void add_quantized_byte(const std::uint8_t* qt, const std::uint8_t* codes, __m512i& acc0, __m512i& acc1) {
  const __m512i idx = _mm512_loadu_si512(codes);
  const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(qt), idx, _mm512_loadu_si512(qt + 64));
  const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(qt + 128), idx, _mm512_loadu_si512(qt + 192));
  const __m512i v = _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
  acc0 = _mm512_add_epi16(acc0, _mm512_maskz_cvtepu8_epi16(~__mmask32(0), _mm512_maskz_extracti64x4_epi64(static_cast<__mmask8>(0xf), v, 0)));
  acc1 = _mm512_add_epi16(acc1, _mm512_maskz_cvtepu8_epi16(~__mmask32(0), _mm512_maskz_extracti64x4_epi64(static_cast<__mmask8>(0xf), v, 1)));
}

// The rows of [j, j + 64) whose quantized sum is <= lim (bit i: row j + i). Table
// entries are >= 0, so a partial sum only grows: once every row's exceeds lim, the
// remaining code bytes are not read (a tight bound skips most of a scan's bytes).
inline std::uint64_t quantized_candidates64(const std::uint8_t* qscratch, std::size_t nbytes,
                                            const std::uint8_t* codes, std::size_t n, std::size_t j,
                                            std::uint16_t lim) {
  constexpr std::size_t check_every = 8;
  const __m512i l = _mm512_set1_epi16(static_cast<short>(lim));
  __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
  for (std::size_t b = 0; b < nbytes; ++b) {
    add_quantized_byte(qscratch + b * 256, codes + b * n + j, acc0, acc1);
    if ((b + 1) % check_every == 0 && b + 1 < nbytes &&
        (_mm512_cmple_epu16_mask(acc0, l) | _mm512_cmple_epu16_mask(acc1, l)) == 0)
      return 0;
  }
  return std::uint64_t(_mm512_cmple_epu16_mask(acc0, l)) | (std::uint64_t(_mm512_cmple_epu16_mask(acc1, l)) << 32);
}
#endif

}  // namespace lancet::index::detail

namespace lancet::index::pq {

// out[j] = sum_b lut[b][codes[b * n + j]] for j in [0, n): one 256-entry f32 table
// per code byte, codes transposed (Lance's layout). Rows are summed in byte order
// starting from 0, as Lance does.
inline void lut_scan_scalar(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n,
                            std::size_t j0, std::size_t j1, float* out) {
  constexpr std::size_t B = 64;
  for (std::size_t j = j0; j < j1; j += B) {
    const std::size_t e = std::min(j1, j + B);
    float acc[B] = {};
    for (std::size_t b = 0; b < nbytes; ++b) {
      const float* t = lut + b * 256;
      const std::uint8_t* c = codes + b * n;
      for (std::size_t r = j; r < e; ++r) acc[r - j] += t[c[r]];
    }
    for (std::size_t r = j; r < e; ++r) out[r] = acc[r - j];
  }
}

#if defined(__AVX512F__)
// 64 rows per step: four gathers in flight per code byte.
inline std::size_t lut_scan_avx512(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n,
                                   float* out) {
  std::size_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (std::size_t b = 0; b < nbytes; ++b) {
      const float* t = lut + b * 256;
      const std::uint8_t* c = codes + b * n + j;
      a0 = _mm512_add_ps(a0, detail::gather_f32x16(t, detail::widen_u8_to_i32x16(c)));
      a1 = _mm512_add_ps(a1, detail::gather_f32x16(t, detail::widen_u8_to_i32x16(c + 16)));
      a2 = _mm512_add_ps(a2, detail::gather_f32x16(t, detail::widen_u8_to_i32x16(c + 32)));
      a3 = _mm512_add_ps(a3, detail::gather_f32x16(t, detail::widen_u8_to_i32x16(c + 48)));
    }
    _mm512_storeu_ps(out + j, a0);
    _mm512_storeu_ps(out + j + 16, a1);
    _mm512_storeu_ps(out + j + 32, a2);
    _mm512_storeu_ps(out + j + 48, a3);
  }
  return j;
}
#endif

#if defined(__AVX2__)
// 32 rows per step: four 8-lane gathers in flight per code byte.
inline std::size_t lut_scan_avx2(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n,
                                 float* out) {
  std::size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (std::size_t b = 0; b < nbytes; ++b) {
      const float* t = lut + b * 256;
      const std::uint8_t* c = codes + b * n + j;
      __m128i lo, hi;
      std::memcpy(&lo, c, 16);
      std::memcpy(&hi, c + 16, 16);
      const __m256i i0 = _mm256_cvtepu8_epi32(lo);
      const __m256i i1 = _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8));
      const __m256i i2 = _mm256_cvtepu8_epi32(hi);
      const __m256i i3 = _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8));
      a0 = _mm256_add_ps(a0, _mm256_i32gather_ps(t, i0, 4));
      a1 = _mm256_add_ps(a1, _mm256_i32gather_ps(t, i1, 4));
      a2 = _mm256_add_ps(a2, _mm256_i32gather_ps(t, i2, 4));
      a3 = _mm256_add_ps(a3, _mm256_i32gather_ps(t, i3, 4));
    }
    _mm256_storeu_ps(out + j, a0);
    _mm256_storeu_ps(out + j + 8, a1);
    _mm256_storeu_ps(out + j + 16, a2);
    _mm256_storeu_ps(out + j + 24, a3);
  }
  return j;
}
#endif

// The 8-lane gather kernel where AVX2 exists (bench_pq: faster than 16-lane gathers
// and than the scalar loop on AMD Zen; on par on Intel), the scalar loop elsewhere
// and for the tail.
inline void lut_scan(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n, float* out) {
  std::size_t done = 0;
#if defined(__AVX2__)
  done = lut_scan_avx2(lut, nbytes, codes, n, out);
#endif
  lut_scan_scalar(lut, nbytes, codes, n, done, n, out);
}

// ---- filtered scan: u8-quantized tables as a conservative filter --------------
// For a top-k search most rows cannot enter the result: their distance exceeds the
// current k-th. lut_scan_filtered sums, for 64 rows at a time, a u8 quantization of
// each code byte's table with byte shuffles (AVX-512 VBMI: vpermi2b over the 256
// entries, u16 sums), and computes the exact f32 distance (the same sum, in the same
// byte order, as lut_scan) only for the rows whose quantized lower bound does not
// exceed the threshold. Quantization rounds down, so bias + delta * sum is a lower
// bound of the exact distance; the comparison carries a relative margin for f32
// rounding: every row whose exact distance could be <= the threshold is emitted with
// that exact distance, so a top-k over the emitted rows equals one over all rows.
// Where VBMI is missing (or a table holds a non-finite value) every row is emitted.
inline constexpr bool has_filtered_lut_scan =
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    true;
#else
    false;
#endif

// Exact distance of row r of transposed codes (the lut_scan sum).
inline float lut_scan_row(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n,
                          std::size_t r) {
  float s = 0.0f;
  for (std::size_t b = 0; b < nbytes; ++b) s += lut[b * 256 + codes[b * n + r]];
  return s;
}

// The u8 quantization of a query's lookup tables (one per code byte): per byte
// q = floor((t - min_b) / delta), delta = the largest range / 255, so that for any
// code row with quantized sum S the exact f32 sum lies in
//   [bias + delta * S - slack, bias + delta * (S + 1.01 * nbytes) + slack]
// (the 1.01 covers the factor that keeps the floor from rounding up, slack the f32
// rounding of the exact sum). ok is false when the tables cannot be quantized (a
// non-finite entry, more than 256 bytes, too few rows to pay off).
struct quantized_luts {
  bool ok = false;
  double bias = 0, delta = 1, slack = 0;
};

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
// Fills qscratch (nbytes * 256 bytes) with the quantized tables.
inline quantized_luts quantize_luts(const float* lut, std::size_t nbytes, std::uint8_t* qscratch) {
  quantized_luts out;
  double bias = 0, mag = 0;
  float range = 0.0f;
  bool finite = nbytes > 0 && nbytes <= 256;  // u16 sums of at most 256 x 255
  float mins[256];
  for (std::size_t b = 0; b < nbytes && finite; ++b) {
    const float* t = lut + b * 256;
    __m512 vmn = _mm512_loadu_ps(t), vmx = vmn;
    for (std::size_t v = 16; v < 256; v += 16) {
      const __m512 x = _mm512_loadu_ps(t + v);
      vmn = _mm512_maskz_min_ps(static_cast<__mmask16>(0xffff), vmn, x);
      vmx = _mm512_maskz_max_ps(static_cast<__mmask16>(0xffff), vmx, x);
    }
    alignas(64) float lo16[16], hi16[16];
    _mm512_store_ps(lo16, vmn);
    _mm512_store_ps(hi16, vmx);
    const float mn = *std::min_element(lo16, lo16 + 16), mx = *std::max_element(hi16, hi16 + 16);
    // NaN compares false everywhere (min/max may drop it): check the table for it.
    __mmask16 nan = 0;
    for (std::size_t v = 0; v < 256; v += 16) {
      const __m512 x = _mm512_loadu_ps(t + v);
      nan = static_cast<__mmask16>(nan | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
    }
    if (nan || !std::isfinite(mn) || !std::isfinite(mx)) finite = false;
    mins[b] = mn;
    bias += mn;
    mag += std::max(std::fabs(double(mn)), std::fabs(double(mx)));
    range = std::max(range, mx - mn);
  }
  if (!finite) return out;
  const double delta = range > 0.0f ? double(range) / 255.0 : 1.0;
  // (t - min) * inv in f32 is within 2^-22 of the exact quotient; the factor
  // 1 - 2^-18 keeps the product below it, so the floor never rounds up.
  const __m512 inv = _mm512_set1_ps(static_cast<float>((1.0 / delta) * (1.0 - 1.0 / 262144.0)));
  for (std::size_t b = 0; b < nbytes; ++b) {
    const float* t = lut + b * 256;
    const __m512 mn = _mm512_set1_ps(mins[b]);
    for (std::size_t v = 0; v < 256; v += 16) {
      const __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(t + v), mn), inv);
      const __m512i qi = _mm512_maskz_min_epi32(static_cast<__mmask16>(0xffff), _mm512_maskz_cvttps_epi32(static_cast<__mmask16>(0xffff), x), _mm512_set1_epi32(255));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qscratch + b * 256 + v), _mm512_maskz_cvtepi32_epi8(static_cast<__mmask16>(0xffff), qi));
    }
  }
  out.ok = true;
  out.bias = bias;
  out.delta = delta;
  out.slack = 1e-5 * (mag + std::fabs(bias)) + 1e-30;
  return out;
}

// The quantized sums of rows [j, j + 64) of transposed codes ([nbytes][n]): rows
// j..j+31 in acc0, j+32..j+63 in acc1 (u16 lanes). 256-entry lookups with vpermi2b.
inline void quantized_sums64(const std::uint8_t* qscratch, std::size_t nbytes, const std::uint8_t* codes,
                             std::size_t n, std::size_t j, __m512i& acc0, __m512i& acc1) {
  acc0 = _mm512_setzero_si512();
  acc1 = _mm512_setzero_si512();
  for (std::size_t b = 0; b < nbytes; ++b)
    detail::add_quantized_byte(qscratch + b * 256, codes + b * n + j, acc0, acc1);
}

#endif

// The quantized tables scan_quantized uses, written to qscratch (nbytes * 256 bytes);
// not ok where VBMI is missing (every row is then emitted).
inline quantized_luts quantize_for_scan(const float* lut, std::size_t nbytes, std::uint8_t* qscratch) {
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  return quantize_luts(lut, nbytes, qscratch);
#else
  (void)lut;
  (void)nbytes;
  (void)qscratch;
  return {};
#endif
}

// Rows [begin, end) of transposed codes holding `stride` rows per code byte, with the
// tables quantize_for_scan made (ql, qscratch). threshold(): the current bound (a row
// is needed when its distance <= it; +inf while the result is not full); it may only
// decrease between calls. emit(r, d) receives row r's exact distance d (offset not added).
template <class Threshold, class Emit>
inline void scan_quantized(const quantized_luts& ql, const std::uint8_t* qscratch, const float* lut,
                           std::size_t nbytes, const std::uint8_t* codes, std::size_t stride, std::size_t begin,
                           std::size_t end, Threshold&& threshold, Emit&& emit) {
  std::size_t j = begin;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  if (ql.ok) {
    // The u16 sum bound for a threshold: rows with sum > it cannot be <= threshold.
    auto limit = [&]() -> int {
      const double thr = double(threshold());
      if (!(thr < std::numeric_limits<double>::infinity())) return 65535;
      const double q = std::floor((thr + ql.slack - ql.bias) / ql.delta) + 1.0;
      if (q < 0) return -1;
      return q >= 65535.0 ? 65535 : static_cast<int>(q);
    };
    // Blocks of 64 rows from a multiple of 64 (a range's ends masked off), so that only
    // the rows past the last whole block of the array are summed one by one.
    for (j = begin - begin % 64; j < end && j + 64 <= stride; j += 64) {
      std::uint64_t in = ~std::uint64_t(0);
      if (j < begin) in &= ~std::uint64_t(0) << (begin - j);
      if (end < j + 64) in &= ~std::uint64_t(0) >> (j + 64 - end);
      const int lim = limit();
      if (lim < 0) continue;  // nothing here can qualify
      std::uint64_t mask = lim < 65535 ? detail::quantized_candidates64(qscratch, nbytes, codes, stride, j,
                                                                        static_cast<std::uint16_t>(lim))
                                       : ~std::uint64_t(0);
      mask &= in;
      while (mask) {
        const std::size_t r = j + static_cast<std::size_t>(std::countr_zero(mask));
        mask &= mask - 1;
        emit(r, lut_scan_row(lut, nbytes, codes, stride, r));
      }
    }
  }
#else
  (void)ql;
  (void)qscratch;
  (void)threshold;
#endif
  for (j = std::max(j, begin); j < end; ++j) emit(j, lut_scan_row(lut, nbytes, codes, stride, j));
}

// All n rows of transposed codes ([nbytes][n]): scan_quantized with its own tables.
// qscratch: nbytes * 256 bytes.
template <class Threshold, class Emit>
inline void lut_scan_filtered(const float* lut, std::size_t nbytes, const std::uint8_t* codes, std::size_t n,
                              std::uint8_t* qscratch, Threshold&& threshold, Emit&& emit) {
  const quantized_luts ql = n >= 64 ? quantize_for_scan(lut, nbytes, qscratch) : quantized_luts{};
  scan_quantized(ql, qscratch, lut, nbytes, codes, n, 0, n, std::forward<Threshold>(threshold),
                 std::forward<Emit>(emit));
}

// Distances from one query to PQ codes. Construct once per (query, partition
// centroid) — for residual indexes the query is the residual query - centroid —
// then scan a partition's codes.
class distance_table {
 public:
  distance_table() = default;

  // query: dimension values of any float element type (Lance builds the table in
  // the codebook's type; lancet in float, or double for double codebooks).
  template <class C, class Q>
  distance_table(const model<C>& pq, const Q* query) {
    static_assert(quantizer::is_float_element_v<Q>, "PQ queries are float, double or f16");
    using W = simd::work_t<Q, C>;
    pq.validate();
    if (query == nullptr) throw invalid_input_error("PQ distance table: query is null");
    m_ = pq.num_sub_vectors;
    bits_ = pq.num_bits;
    const std::size_t k = pq.num_centroids(), sd = pq.sub_dimension();
    table_.assign(m_ * k, 0.0f);
    std::vector<W> q(sd), cs(k * sd), d(k);
    for (std::size_t s = 0; s < m_; ++s) {
      for (std::size_t i = 0; i < sd; ++i) q[i] = quantizer::to_work<W>(query[s * sd + i]);
      const C* c = pq.centroids(s);
      for (std::size_t i = 0; i < k * sd; ++i) cs[i] = quantizer::to_work<W>(c[i]);
      if (pq.distance == distance_type::dot) {
        simd::distances_to_many(distance_type::dot, q.data(), cs.data(), k, sd, d.data());
      } else {
        simd::distances_to_many(distance_type::l2, q.data(), cs.data(), k, sd, d.data());
      }
      for (std::size_t j = 0; j < k; ++j) table_[s * k + j] = static_cast<float>(d[j]);
    }
    offset_ = pq.distance == distance_type::dot ? -static_cast<float>(m_ - 1) : 0.0f;
    build_lut();
  }

  // A table given directly ([num_sub_vectors][2^num_bits] values, Lance's layout),
  // e.g. assembled from precomputed terms; offset is added to every summed distance.
  distance_table(std::size_t num_sub_vectors, std::uint32_t num_bits, std::vector<float> table, float offset)
      : m_(num_sub_vectors), bits_(num_bits), offset_(offset), table_(std::move(table)) {
    if ((bits_ != 4 && bits_ != 8) || m_ == 0 || (bits_ == 4 && m_ % 2) || table_.size() != m_ << bits_)
      throw invalid_input_error("PQ distance table: " + std::to_string(table_.size()) + " values do not make " +
                                std::to_string(m_) + " tables of 2^" + std::to_string(bits_));
    build_lut();
  }

 private:
  // One 256-entry table per code byte: 8-bit codes use the sub-vector's table, 4-bit
  // bytes the sum of the low (even) and high (odd) sub-vectors' entries.
  void build_lut() {
    const std::size_t nb = bits_ == 8 ? m_ : m_ / 2;
    lut_.resize(nb * 256);
    for (std::size_t b = 0; b < nb; ++b) {
      float* l = lut_.data() + b * 256;
      if (bits_ == 8) {
        std::copy(table_.begin() + std::ptrdiff_t(b * 256), table_.begin() + std::ptrdiff_t((b + 1) * 256), l);
      } else {
        const float* lo = table_.data() + (2 * b) * 16;
        const float* hi = table_.data() + (2 * b + 1) * 16;
        for (std::size_t v = 0; v < 256; ++v) l[v] = lo[v & 15] + hi[v >> 4];
      }
    }
  }

 public:
  std::size_t num_sub_vectors() const noexcept { return m_; }
  std::uint32_t num_bits() const noexcept { return bits_; }
  std::size_t code_bytes() const noexcept { return bits_ == 8 ? m_ : m_ / 2; }
  // Lance's table: [num_sub_vectors][2^num_bits] f32.
  const std::vector<float>& table() const noexcept { return table_; }
  // Added to every summed distance: -(m - 1) for dot, 0 for l2.
  float offset() const noexcept { return offset_; }
  // One 256-entry f32 table per code byte (what scan sums; 4-bit: pairs combined).
  const std::vector<float>& lut() const noexcept { return lut_; }

  // Distance of one row-major code row.
  float distance(const std::uint8_t* code_row) const noexcept {
    float s = 0.0f;
    const std::size_t nb = code_bytes();
    for (std::size_t b = 0; b < nb; ++b) s += lut_[b * 256 + code_row[b]];
    return s + offset_;
  }

  // Distances of n rows stored transposed ([code_bytes][n], Lance's partition
  // layout) into out[n].
  void scan(const std::uint8_t* transposed, std::size_t n, float* out) const {
    if (n == 0) return;
    lut_scan(lut_.data(), code_bytes(), transposed, n, out);
    if (offset_ != 0.0f)
      for (std::size_t j = 0; j < n; ++j) out[j] += offset_;
  }

  // Distances of n row-major code rows into out[n].
  void scan_rows(const std::uint8_t* codes, std::size_t n, float* out) const {
    const std::size_t nb = code_bytes();
    for (std::size_t j = 0; j < n; ++j) out[j] = distance(codes + j * nb);
  }

 private:
  std::size_t m_ = 0;
  std::uint32_t bits_ = 8;
  float offset_ = 0.0f;
  std::vector<float> table_;
  std::vector<float> lut_;
};

// ---- residual tables from precomputed terms ----------------------------------------
// An l2 table of the residual query r = q - c is, per sub-vector s and centroid p,
//   |r_s - p|^2 = |q_s - c_s|^2 + (|p|^2 - 2 q_s.p) + 2 c_s.p :
// the middle term depends on the query only, the last on the partition only (FAISS's
// precomputed tables for IVF-PQ by residual). Kept in double: the terms are of the
// size of |q|^2 and |c|^2 while the result may be much smaller.

// 2 c_s.p for every sub-vector and centroid of the codebook ([m][2^bits]).
template <class C, class CC>
inline std::vector<double> partition_term(const model<C>& pq, const CC* centroid) {
  const std::size_t m = pq.num_sub_vectors, k = pq.num_centroids(), sd = pq.sub_dimension();
  std::vector<double> out(m * k);
  for (std::size_t s = 0; s < m; ++s)
    for (std::size_t j = 0; j < k; ++j) {
      const C* p = pq.centroids(s) + j * sd;
      double dot = 0;
      for (std::size_t t = 0; t < sd; ++t)
        dot += quantizer::to_work<double>(centroid[s * sd + t]) * quantizer::to_work<double>(p[t]);
      out[s * k + j] = 2.0 * dot;
    }
  return out;
}

// |p|^2 - 2 q_s.p for every sub-vector and centroid ([m][2^bits]).
template <class C, class Q>
inline std::vector<double> query_term(const model<C>& pq, const Q* query) {
  const std::size_t m = pq.num_sub_vectors, k = pq.num_centroids(), sd = pq.sub_dimension();
  std::vector<double> out(m * k);
  for (std::size_t s = 0; s < m; ++s)
    for (std::size_t j = 0; j < k; ++j) {
      const C* p = pq.centroids(s) + j * sd;
      double pp = 0, qp = 0;
      for (std::size_t t = 0; t < sd; ++t) {
        const double pv = quantizer::to_work<double>(p[t]);
        pp += pv * pv;
        qp += quantizer::to_work<double>(query[s * sd + t]) * pv;
      }
      out[s * k + j] = pp - 2.0 * qp;
    }
  return out;
}

// query_term for many queries: |p|^2 per centroid and the codebook transposed per
// sub-vector ([s][t][j], double) are prepared once; compute() then gives query_term's
// values exactly (the same products and sums, in the same order), vectorised over
// the centroids.
class query_term_plan {
 public:
  query_term_plan() = default;
  template <class C>
  explicit query_term_plan(const model<C>& pq)
      : m_(pq.num_sub_vectors), k_(pq.num_centroids()), sd_(pq.sub_dimension()), pp_(m_ * k_), cbt_(m_ * sd_ * k_) {
    for (std::size_t s = 0; s < m_; ++s)
      for (std::size_t j = 0; j < k_; ++j) {
        const C* p = pq.centroids(s) + j * sd_;
        double pp = 0;
        for (std::size_t t = 0; t < sd_; ++t) {
          const double pv = quantizer::to_work<double>(p[t]);
          pp += pv * pv;
          cbt_[(s * sd_ + t) * k_ + j] = pv;
        }
        pp_[s * k_ + j] = pp;
      }
  }

  // out[m * 2^bits] = |p|^2 - 2 q_s.p.
  template <class Q>
  void compute(const Q* query, double* out) const {
    std::vector<double> qp(k_);
    for (std::size_t s = 0; s < m_; ++s) {
      std::fill(qp.begin(), qp.end(), 0.0);
      for (std::size_t t = 0; t < sd_; ++t) {
        const double qv = quantizer::to_work<double>(query[s * sd_ + t]);
        const double* c = cbt_.data() + (s * sd_ + t) * k_;
        for (std::size_t j = 0; j < k_; ++j) qp[j] += qv * c[j];
      }
      const double* pp = pp_.data() + s * k_;
      for (std::size_t j = 0; j < k_; ++j) out[s * k_ + j] = pp[j] - 2.0 * qp[j];
    }
  }

 private:
  std::size_t m_ = 0, k_ = 0, sd_ = 0;
  std::vector<double> pp_, cbt_;
};

// The l2 table of query - centroid from the two terms (negative rounding clamped to 0).
template <class C, class Q, class CC>
inline distance_table residual_table(const model<C>& pq, const std::vector<double>& qterm,
                                     const std::vector<double>& pterm, const Q* query, const CC* centroid) {
  const std::size_t m = pq.num_sub_vectors, k = pq.num_centroids(), sd = pq.sub_dimension();
  std::vector<float> t(m * k);
  for (std::size_t s = 0; s < m; ++s) {
    double r2 = 0;
    for (std::size_t i = 0; i < sd; ++i) {
      const double e = quantizer::to_work<double>(query[s * sd + i]) - quantizer::to_work<double>(centroid[s * sd + i]);
      r2 += e * e;
    }
    for (std::size_t j = 0; j < k; ++j) t[s * k + j] = static_cast<float>(std::max(0.0, r2 + qterm[s * k + j] + pterm[s * k + j]));
  }
  return distance_table(m, pq.num_bits, std::move(t), 0.0f);
}

// The same table written straight into lookup form (one 256-entry f32 table per code
// byte, what distance_table::scan uses) in lut[code_bytes * 256]: the per-partition
// step of a search without allocating. Values are those of residual_table.
template <class C, class Q, class CC>
inline void residual_lut(const model<C>& pq, const double* qterm, const double* pterm, const Q* query,
                         const CC* centroid, float* lut) {
  const std::size_t m = pq.num_sub_vectors, k = pq.num_centroids(), sd = pq.sub_dimension();
  float t16[2][16];
  for (std::size_t s = 0; s < m; ++s) {
    double r2 = 0;
    for (std::size_t i = 0; i < sd; ++i) {
      const double e = quantizer::to_work<double>(query[s * sd + i]) - quantizer::to_work<double>(centroid[s * sd + i]);
      r2 += e * e;
    }
    const double* qt = qterm + s * k;
    const double* pt = pterm + s * k;
    float* out = pq.num_bits == 8 ? lut + s * 256 : t16[s % 2];
    std::size_t j = 0;
#if defined(__AVX512F__)
    // The same operations 8 at a time: (r2 + qt) + pt, max with 0 (NaN gives 0, as
    // std::max(0.0, x)), rounded to f32.
    const __m512d vr2 = _mm512_set1_pd(r2), zero = _mm512_setzero_pd();
    for (; j + 8 <= k; j += 8) {
      const __m512d x = _mm512_add_pd(_mm512_add_pd(vr2, _mm512_loadu_pd(qt + j)), _mm512_loadu_pd(pt + j));
      const __m512d c = _mm512_maskz_max_pd(static_cast<__mmask8>(0xff), x, zero);
      _mm256_storeu_ps(out + j, _mm512_maskz_cvtpd_ps(static_cast<__mmask8>(0xff), c));
    }
#endif
    for (; j < k; ++j) out[j] = static_cast<float>(std::max(0.0, r2 + qt[j] + pt[j]));
    if (pq.num_bits == 4 && s % 2 == 1) {
      float* l = lut + (s / 2) * 256;
      for (std::size_t v = 0; v < 256; ++v) l[v] = t16[0][v & 15] + t16[1][v >> 4];
    }
  }
}

}  // namespace lancet::index::pq
