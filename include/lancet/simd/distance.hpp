// Distance kernels with Lance's conventions:
//   l2      squared Euclidean distance
//   dot     1 - x.y
//   cosine  1 - x.y / (|x| |y|)
//   hamming number of differing bits between two binary codes (uint8 only)
// for float32, float16 (IEEE half), float64 and uint8 elements and any dimension.
// Results are float (double for float64 inputs). Vector tails are handled with
// scalar code, so no kernel reads past the end of a vector.
//
//   float d = lancet::simd::l2(a, b, dim);
//   lancet::simd::distances_to_many(distance_type::cosine, q, block, n, dim, out);
#pragma once

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "lancet/core/error.hpp"
#include "lancet/simd/batch.hpp"
#include "lancet/simd/distance_type.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::simd {

template <class T>
inline constexpr bool is_element_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, f16> || std::is_same_v<T, std::uint8_t>;

// The type a distance between two T vectors is reported in.
template <class T>
using distance_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

namespace detail {

// ---- floating point kernels (float, double, f16) -----------------------------------
// Four independent accumulators hide FMA latency; tails go through scalar code.

// The four-accumulator loop of l2_float and dot_float: s = vstep(x, y, s) over whole
// vectors, then r = sstep(x, y, r) over the tail.
template <class T, class VecStep, class ScalarStep>
inline acc_t<T> reduce_float(const T* a, const T* b, std::size_t d, VecStep vstep, ScalarStep sstep) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  vec<A> s0(A(0)), s1(A(0)), s2(A(0)), s3(A(0));
  std::size_t i = 0;
  for (; i + 4 * W <= d; i += 4 * W) {
    s0 = vstep(vload_as_acc(a + i), vload_as_acc(b + i), s0);
    s1 = vstep(vload_as_acc(a + i + W), vload_as_acc(b + i + W), s1);
    s2 = vstep(vload_as_acc(a + i + 2 * W), vload_as_acc(b + i + 2 * W), s2);
    s3 = vstep(vload_as_acc(a + i + 3 * W), vload_as_acc(b + i + 3 * W), s3);
  }
  for (; i + W <= d; i += W) s0 = vstep(vload_as_acc(a + i), vload_as_acc(b + i), s0);
  A r = vsum<A>((s0 + s1) + (s2 + s3));
  for (; i < d; ++i) r = sstep(to_acc(a[i]), to_acc(b[i]), r);
  return r;
}

template <class T>
inline acc_t<T> l2_float(const T* a, const T* b, std::size_t d) {
  using A = acc_t<T>;
  return reduce_float(
      a, b, d,
      [](vec<A> x, vec<A> y, vec<A> s) {
        const vec<A> t = x - y;
        return vfma<A>(t, t, s);
      },
      [](A x, A y, A r) {
        const A t = x - y;
        return r + t * t;
      });
}

template <class T>
inline acc_t<T> dot_float(const T* a, const T* b, std::size_t d) {
  using A = acc_t<T>;
  return reduce_float(
      a, b, d, [](vec<A> x, vec<A> y, vec<A> s) { return vfma<A>(x, y, s); }, [](A x, A y, A r) { return r + x * y; });
}

// x.y and y.y in one pass (cosine against a query whose norm is known).
template <class T>
inline void dot_and_norm_float(const T* x, const T* y, std::size_t d, acc_t<T>& xy, acc_t<T>& yy) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  vec<A> p0(A(0)), p1(A(0)), q0(A(0)), q1(A(0));
  std::size_t i = 0;
  for (; i + 2 * W <= d; i += 2 * W) {
    auto x0 = vload_as_acc(x + i), y0 = vload_as_acc(y + i);
    auto x1 = vload_as_acc(x + i + W), y1 = vload_as_acc(y + i + W);
    p0 = vfma<A>(x0, y0, p0);
    q0 = vfma<A>(y0, y0, q0);
    p1 = vfma<A>(x1, y1, p1);
    q1 = vfma<A>(y1, y1, q1);
  }
  for (; i + W <= d; i += W) {
    auto x0 = vload_as_acc(x + i), y0 = vload_as_acc(y + i);
    p0 = vfma<A>(x0, y0, p0);
    q0 = vfma<A>(y0, y0, q0);
  }
  A rxy = vsum<A>(p0 + p1), ryy = vsum<A>(q0 + q1);
  for (; i < d; ++i) {
    const A xv = to_acc(x[i]), yv = to_acc(y[i]);
    rxy += xv * yv;
    ryy += yv * yv;
  }
  xy = rxy;
  yy = ryy;
}

// ---- uint8 kernels: exact integer arithmetic (the compiler vectorises these) --------
// Partial sums stay in uint32 for blocks short enough not to overflow.
inline constexpr std::size_t u8_block = 32768;  // 32768 * 255^2 < 2^32

// The sum of the eight / sixteen i32 lanes, modulo 2^32, folded in registers (GCC 12
// warns about _mm512_reduce_add_epi32's own code; summing the lanes through memory took
// about 6% of the HNSW builder's time on 128-d SQ codes).
#if defined(__AVX2__)
inline std::uint32_t lane_sum(__m256i v) noexcept {
  const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i q = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_add_epi32(q, _mm_shuffle_epi32(q, 0xb1))));
}
#endif
#if defined(__AVX512BW__)
inline std::uint32_t lane_sum(__m512i v) noexcept {
  // Zero-masked extracts: the plain ones (and the cast) trip GCC 12's -Wmaybe-uninitialized.
  const __m256i lo = _mm512_maskz_extracti64x4_epi64(0xff, v, 0), hi = _mm512_maskz_extracti64x4_epi64(0xff, v, 1);
  return lane_sum(_mm256_add_epi32(lo, hi));
}
#endif

// Written out for AVX-512BW / AVX2 (differences widened to i16, squared and pair-summed
// into i32 lanes: at most 1024 steps of 2 * 255^2 per lane in a block): GCC leaves the
// portable loop scalar once it is inlined into a caller's loop (the HNSW graph builder
// measured 255 ns per 128-d pair, against ~15 ns so).
inline std::uint64_t l2_u8(const std::uint8_t* a, const std::uint8_t* b, std::size_t d) {
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < d; s += u8_block) {
    const std::size_t e = std::min(d, s + u8_block);
    std::size_t i = s;
    std::uint32_t acc = 0;
#if defined(__AVX512BW__)
    __m512i v = _mm512_setzero_si512();
    for (; i + 32 <= e; i += 32) {
      const __m512i x = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
      const __m512i y = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
      const __m512i t = _mm512_sub_epi16(x, y);
      v = _mm512_add_epi32(v, _mm512_madd_epi16(t, t));
    }
    acc = lane_sum(v);
#elif defined(__AVX2__)
    __m256i v = _mm256_setzero_si256();
    for (; i + 16 <= e; i += 16) {
      const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
      const __m256i y = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
      const __m256i t = _mm256_sub_epi16(x, y);
      v = _mm256_add_epi32(v, _mm256_madd_epi16(t, t));
    }
    acc = lane_sum(v);
#endif
    for (; i < e; ++i) {
      const std::int32_t t = static_cast<std::int32_t>(a[i]) - static_cast<std::int32_t>(b[i]);
      acc += static_cast<std::uint32_t>(t * t);
    }
    total += acc;
  }
  return total;
}

inline std::uint64_t dot_u8(const std::uint8_t* a, const std::uint8_t* b, std::size_t d) {
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < d; s += u8_block) {
    const std::size_t e = std::min(d, s + u8_block);
    std::uint32_t acc = 0;
    for (std::size_t i = s; i < e; ++i)
      acc += static_cast<std::uint32_t>(a[i]) * static_cast<std::uint32_t>(b[i]);
    total += acc;
  }
  return total;
}

}  // namespace detail

// ---- one-to-one -------------------------------------------------------------------

// Squared Euclidean distance.
template <class T>
inline distance_t<T> l2(const T* a, const T* b, std::size_t d) {
  static_assert(is_element_v<T>, "lancet::simd: element type must be float, double, f16 or uint8_t");
  if constexpr (std::is_same_v<T, std::uint8_t>) return static_cast<float>(detail::l2_u8(a, b, d));
  else return detail::l2_float(a, b, d);
}

// Plain inner product x.y (not a distance; see dot_distance).
template <class T>
inline distance_t<T> dot(const T* a, const T* b, std::size_t d) {
  static_assert(is_element_v<T>, "lancet::simd: element type must be float, double, f16 or uint8_t");
  if constexpr (std::is_same_v<T, std::uint8_t>) return static_cast<float>(detail::dot_u8(a, b, d));
  else return detail::dot_float(a, b, d);
}

// Lance's dot distance: 1 - x.y.
template <class T>
inline distance_t<T> dot_distance(const T* a, const T* b, std::size_t d) {
  return distance_t<T>(1) - dot(a, b, d);
}

// Squared L2 norm x.x.
template <class T>
inline distance_t<T> norm_sq(const T* a, std::size_t d) {
  return dot(a, a, d);
}

// Cosine distance against a query whose L2 norm (not squared) is already known.
template <class T>
inline distance_t<T> cosine_with_norm(const T* x, distance_t<T> x_norm, const T* y, std::size_t d) {
  using D = distance_t<T>;
  D xy, yy;
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    xy = static_cast<float>(detail::dot_u8(x, y, d));
    yy = static_cast<float>(detail::dot_u8(y, y, d));
  } else {
    detail::dot_and_norm_float(x, y, d, xy, yy);
  }
  return D(1) - xy / (x_norm * std::sqrt(yy));
}

// Cosine distance 1 - x.y / (|x| |y|). A zero vector gives NaN, as in Lance.
template <class T>
inline distance_t<T> cosine(const T* a, const T* b, std::size_t d) {
  return cosine_with_norm(a, std::sqrt(norm_sq(a, d)), b, d);
}

// Number of differing bits between two codes of nbytes bytes.
inline float hamming(const std::uint8_t* a, const std::uint8_t* b, std::size_t nbytes) {
  std::uint64_t n = 0;
  std::size_t i = 0;
  for (; i + 8 <= nbytes; i += 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    n += static_cast<std::uint64_t>(std::popcount(x ^ y));
  }
  for (; i < nbytes; ++i) n += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(a[i] ^ b[i])));
  return static_cast<float>(n);
}

// Distance of the given type; hamming only for uint8 codes.
template <class T>
inline distance_t<T> distance(distance_type t, const T* a, const T* b, std::size_t d) {
  switch (t) {
    case distance_type::l2: return l2(a, b, d);
    case distance_type::dot: return dot_distance(a, b, d);
    case distance_type::cosine: return cosine(a, b, d);
    case distance_type::hamming:
      if constexpr (std::is_same_v<T, std::uint8_t>) return hamming(a, b, d);
      else throw invalid_input_error("hamming distance needs uint8 binary codes");
  }
  throw invalid_input_error("unknown distance type");
}

// ---- one-to-many ------------------------------------------------------------------

namespace detail {

// Four rows at a time share the query loads; each row keeps two accumulators.
// One row as many_float computes each of its four (two accumulators, alternating
// vector steps, then the tail): a row's distance does not depend on where it falls in
// a block (distances_to_many's tail rows and distance_in_block use this).
template <bool L2, class T>
inline acc_t<T> row_float(const T* q, const T* y, std::size_t d) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  vec<A> a(A(0)), b(A(0));
  std::size_t i = 0;
  auto step = [&](std::size_t off, vec<A>& s) {
    const auto x = vload_as_acc(q + off), v = vload_as_acc(y + off);
    if constexpr (L2) {
      const auto t = x - v;
      s = vfma<A>(t, t, s);
    } else {
      s = vfma<A>(x, v, s);
    }
  };
  for (; i + 2 * W <= d; i += 2 * W) {
    step(i, a);
    step(i + W, b);
  }
  for (; i + W <= d; i += W) step(i, a);
  A s = vsum<A>(a + b);
  for (; i < d; ++i) {
    const A x = to_acc(q[i]), v = to_acc(y[i]);
    s = L2 ? std::fma(x - v, x - v, s) : std::fma(x, v, s);
  }
  return s;
}

// x.y and y.y of one row as many_cosine computes each of its four.
template <class T>
inline void row_cosine_terms(const T* q, const T* y, std::size_t d, acc_t<T>& xy, acc_t<T>& yy) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  vec<A> p(A(0)), s(A(0));
  std::size_t i = 0;
  for (; i + W <= d; i += W) {
    const auto x = vload_as_acc(q + i), v = vload_as_acc(y + i);
    p = vfma<A>(x, v, p);
    s = vfma<A>(v, v, s);
  }
  xy = vsum<A>(p);
  yy = vsum<A>(s);
  for (; i < d; ++i) {
    const A x = to_acc(q[i]), v = to_acc(y[i]);
    xy = std::fma(x, v, xy);
    yy = std::fma(v, v, yy);
  }
}

template <bool L2, class T>
inline void many_float(const T* q, const T* block, std::size_t n, std::size_t d, acc_t<T>* out) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  std::size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const T* y0 = block + r * d;
    const T* y1 = y0 + d;
    const T* y2 = y1 + d;
    const T* y3 = y2 + d;
    vec<A> a0(A(0)), a1(A(0)), a2(A(0)), a3(A(0)), b0(A(0)), b1(A(0)), b2(A(0)), b3(A(0));
    std::size_t i = 0;
    auto step = [&](std::size_t off, vec<A>& s0, vec<A>& s1, vec<A>& s2, vec<A>& s3) {
      const auto x = vload_as_acc(q + off);
      if constexpr (L2) {
        const auto t0 = x - vload_as_acc(y0 + off), t1 = x - vload_as_acc(y1 + off);
        const auto t2 = x - vload_as_acc(y2 + off), t3 = x - vload_as_acc(y3 + off);
        s0 = vfma<A>(t0, t0, s0);
        s1 = vfma<A>(t1, t1, s1);
        s2 = vfma<A>(t2, t2, s2);
        s3 = vfma<A>(t3, t3, s3);
      } else {
        s0 = vfma<A>(x, vload_as_acc(y0 + off), s0);
        s1 = vfma<A>(x, vload_as_acc(y1 + off), s1);
        s2 = vfma<A>(x, vload_as_acc(y2 + off), s2);
        s3 = vfma<A>(x, vload_as_acc(y3 + off), s3);
      }
    };
    for (; i + 2 * W <= d; i += 2 * W) {
      step(i, a0, a1, a2, a3);
      step(i + W, b0, b1, b2, b3);
    }
    for (; i + W <= d; i += W) step(i, a0, a1, a2, a3);
    A s[4] = {vsum<A>(a0 + b0), vsum<A>(a1 + b1), vsum<A>(a2 + b2), vsum<A>(a3 + b3)};
    const T* ys[4] = {y0, y1, y2, y3};
    // Tails fused explicitly (std::fma): the same rounding whether or not the
    // compiler contracts, so that row_float gives each row's value bit for bit.
    for (; i < d; ++i) {
      const A x = to_acc(q[i]);
      for (int k = 0; k < 4; ++k) {
        const A y = to_acc(ys[k][i]);
        s[k] = L2 ? std::fma(x - y, x - y, s[k]) : std::fma(x, y, s[k]);
      }
    }
    for (int k = 0; k < 4; ++k) out[r + static_cast<std::size_t>(k)] = s[k];
  }
  for (; r < n; ++r) out[r] = row_float<L2>(q, block + r * d, d);
}

// Cosine against four rows at a time: x.y and y.y for each row in one pass.
template <class T>
inline void many_cosine(const T* q, acc_t<T> qn, const T* block, std::size_t n, std::size_t d, acc_t<T>* out) {
  using A = acc_t<T>;
  constexpr std::size_t W = vec<A>::size;
  std::size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const T* ys[4] = {block + r * d, block + (r + 1) * d, block + (r + 2) * d, block + (r + 3) * d};
    vec<A> p0(A(0)), p1(A(0)), p2(A(0)), p3(A(0)), s0(A(0)), s1(A(0)), s2(A(0)), s3(A(0));
    std::size_t i = 0;
    for (; i + W <= d; i += W) {
      const auto x = vload_as_acc(q + i);
      const auto y0 = vload_as_acc(ys[0] + i), y1 = vload_as_acc(ys[1] + i);
      const auto y2 = vload_as_acc(ys[2] + i), y3 = vload_as_acc(ys[3] + i);
      p0 = vfma<A>(x, y0, p0);
      s0 = vfma<A>(y0, y0, s0);
      p1 = vfma<A>(x, y1, p1);
      s1 = vfma<A>(y1, y1, s1);
      p2 = vfma<A>(x, y2, p2);
      s2 = vfma<A>(y2, y2, s2);
      p3 = vfma<A>(x, y3, p3);
      s3 = vfma<A>(y3, y3, s3);
    }
    A xy[4] = {vsum<A>(p0), vsum<A>(p1), vsum<A>(p2), vsum<A>(p3)};
    A yy[4] = {vsum<A>(s0), vsum<A>(s1), vsum<A>(s2), vsum<A>(s3)};
    for (; i < d; ++i) {
      const A x = to_acc(q[i]);
      for (int k = 0; k < 4; ++k) {
        const A y = to_acc(ys[k][i]);
        xy[k] = std::fma(x, y, xy[k]);
        yy[k] = std::fma(y, y, yy[k]);
      }
    }
    for (int k = 0; k < 4; ++k) out[r + static_cast<std::size_t>(k)] = A(1) - xy[k] / (qn * std::sqrt(yy[k]));
  }
  for (; r < n; ++r) {
    A xy, yy;
    row_cosine_terms(q, block + r * d, d, xy, yy);
    out[r] = A(1) - xy / (qn * std::sqrt(yy));
  }
}

}  // namespace detail

// Distances from one query to each of n vectors stored row-major in `block`
// (n * d elements); out receives n values.
template <class T>
inline void distances_to_many(distance_type t, const T* q, const T* block, std::size_t n,
                              std::size_t d, distance_t<T>* out) {
  static_assert(is_element_v<T>, "lancet::simd: element type must be float, double, f16 or uint8_t");
  using D = distance_t<T>;
  switch (t) {
    case distance_type::l2:
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        for (std::size_t r = 0; r < n; ++r) out[r] = l2(q, block + r * d, d);
      } else {
        detail::many_float<true>(q, block, n, d, out);
      }
      return;
    case distance_type::dot:
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        for (std::size_t r = 0; r < n; ++r) out[r] = dot_distance(q, block + r * d, d);
      } else {
        detail::many_float<false>(q, block, n, d, out);
        for (std::size_t r = 0; r < n; ++r) out[r] = D(1) - out[r];
      }
      return;
    case distance_type::cosine: {
      const D qn = std::sqrt(norm_sq(q, d));
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        for (std::size_t r = 0; r < n; ++r) out[r] = cosine_with_norm(q, qn, block + r * d, d);
      } else {
        detail::many_cosine(q, qn, block, n, d, out);
      }
      return;
    }
    case distance_type::hamming:
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        for (std::size_t r = 0; r < n; ++r) out[r] = hamming(q, block + r * d, d);
        return;
      } else {
        throw invalid_input_error("hamming distance needs uint8 binary codes");
      }
  }
}

// The distance distances_to_many reports for row y (whatever the block it is in).
template <class T>
inline distance_t<T> distance_in_block(distance_type t, const T* q, const T* y, std::size_t d) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    distance_t<T> out;
    distances_to_many(t, q, y, 1, d, &out);
    return out;
  } else {
    using D = distance_t<T>;
    switch (t) {
      case distance_type::l2: return detail::row_float<true>(q, y, d);
      case distance_type::dot: return D(1) - detail::row_float<false>(q, y, d);
      case distance_type::cosine: {
        D xy, yy;
        detail::row_cosine_terms(q, y, d, xy, yy);
        return D(1) - xy / (std::sqrt(norm_sq(q, d)) * std::sqrt(yy));
      }
      case distance_type::hamming: break;
    }
    throw invalid_input_error("hamming distance needs uint8 binary codes");
  }
}

}  // namespace lancet::simd
