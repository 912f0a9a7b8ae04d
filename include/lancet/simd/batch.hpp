// The SIMD register type every kernel is written against: xsimd's batch for the
// architecture the compiler targets (xsimd::default_arch: AVX-512, AVX2, SSE, NEON),
// or a one-lane scalar stand-in where xsimd knows no architecture, so the kernels
// compile (and stay correct) everywhere.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "lancet/simd/f16.hpp"

namespace lancet::simd {

namespace detail {

using arch = xsimd::default_arch;
inline constexpr bool has_simd = !std::is_same_v<arch, xsimd::unavailable>;

// One-lane fallback with the handful of operations the kernels use.
template <class W>
struct scalar_vec {
  static constexpr std::size_t size = 1;
  W v;
  scalar_vec() = default;
  scalar_vec(W x) : v(x) {}  // NOLINT: broadcast, as xsimd::batch
  static scalar_vec load_unaligned(const W* p) { return scalar_vec(*p); }
  void store_unaligned(W* p) const { *p = v; }
  friend scalar_vec operator+(scalar_vec a, scalar_vec b) { return a.v + b.v; }
  friend scalar_vec operator-(scalar_vec a, scalar_vec b) { return a.v - b.v; }
  friend scalar_vec operator*(scalar_vec a, scalar_vec b) { return a.v * b.v; }
  friend bool operator<(scalar_vec a, scalar_vec b) { return a.v < b.v; }
};
template <class W>
inline scalar_vec<W> fma(scalar_vec<W> a, scalar_vec<W> b, scalar_vec<W> c) { return a.v * b.v + c.v; }
template <class W>
inline W hadd(scalar_vec<W> a) { return a.v; }
template <class W>
inline scalar_vec<W> select(bool m, scalar_vec<W> a, scalar_vec<W> b) { return m ? a : b; }

template <class W, bool Simd = has_simd>
struct vec_of {
  using type = scalar_vec<W>;
};
template <class W>
struct vec_of<W, true> {
  using type = xsimd::batch<W, arch>;
};

}  // namespace detail

// vec<float> / vec<double>: the widest register for the target (xsimd's batch; one
// lane where xsimd knows no architecture), vec<W>::size lanes.
template <class W>
using vec = typename detail::vec_of<W>::type;

// The vec<W>::size values at p (no alignment needed).
template <class W>
inline vec<W> vload(const W* p) {
  if constexpr (detail::has_simd) return vec<W>::load_unaligned(p);
  else return detail::scalar_vec<W>::load_unaligned(p);
}
// Stores x's lanes at p (no alignment needed).
template <class W>
inline void vstore(W* p, const vec<W>& x) {
  x.store_unaligned(p);
}
// a * b + c per lane, fused.
template <class W>
inline vec<W> vfma(const vec<W>& a, const vec<W>& b, const vec<W>& c) {
  if constexpr (detail::has_simd) return xsimd::fma(a, b, c);
  else return detail::fma(a, b, c);
}
// Horizontal sum as a fixed pairwise tree (and without xsimd::hadd, whose AVX-512
// path trips GCC 12's -Wuninitialized inside the intrinsic headers).
template <class W>
inline W vsum(const vec<W>& a) {
  if constexpr (detail::has_simd) {
    constexpr std::size_t n = vec<W>::size;
    alignas(64) W t[n];
    a.store_unaligned(t);
    for (std::size_t s = n / 2; s > 0; s /= 2)
      for (std::size_t i = 0; i < s; ++i) t[i] += t[i + s];
    return t[0];
  } else {
    return detail::hadd(a);
  }
}
// Per lane: a where the mask m (a comparison of vecs) is set, b elsewhere.
template <class W, class M>
inline vec<W> vselect(const M& m, const vec<W>& a, const vec<W>& b) {
  if constexpr (detail::has_simd) return xsimd::select(m, a, b);
  else return detail::select(m, a, b);
}

namespace detail {

// Loads vec<float>::size halves as floats (F16C / AVX-512 conversion when the
// register width matches, scalar conversion otherwise).
inline vec<float> vload_f16(const f16* p) {
  constexpr std::size_t n = vec<float>::size;
#if defined(__AVX512F__)
  static_assert(n == 16);
  __m256i h;
  std::memcpy(&h, p, 32);
  return vec<float>(_mm512_maskz_cvtph_ps(static_cast<__mmask16>(0xffff), h));  // maskz: no undefined source
#elif defined(__F16C__) && defined(__AVX__)
  static_assert(n == 8);
  __m128i h;
  std::memcpy(&h, p, 16);
  return vec<float>(_mm256_cvtph_ps(h));
#else
  alignas(64) float tmp[n];
  for (std::size_t i = 0; i < n; ++i) tmp[i] = p[i].to_float();
  return vload(tmp);
#endif
}

// Element -> accumulation type: doubles stay double, everything else is float.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline acc_t<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, f16>) return v.to_float();
  else return static_cast<acc_t<T>>(v);
}

template <class T>
inline vec<acc_t<T>> vload_as_acc(const T* p) {
  if constexpr (std::is_same_v<T, f16>) return vload_f16(p);
  else return vload<T>(p);
}

}  // namespace detail

}  // namespace lancet::simd
