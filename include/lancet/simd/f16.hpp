// IEEE 754 half precision (binary16) as stored in Arrow / Lance float16 columns, with
// exact conversions: F16C instructions where the compiler may use them, bit
// manipulation (round to nearest even) elsewhere.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lancet::simd {

namespace detail {

inline float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (man == 0) return std::bit_cast<float>(sign);
    // Subnormal: man * 2^-24 is exact in float.
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) | sign);
  }
  if (exp == 31) bits = sign | 0x7f800000u | (man << 13);  // inf / NaN (payload kept)
  else bits = sign | ((exp + 112u) << 23) | (man << 13);
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_half_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN: keep NaN quiet and non-zero
    if (a == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x38800000u) {  // result is a normal half (or overflows to inf)
    std::uint32_t h = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
    if (h >= 0x7c00u) h = 0x7c00u;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (a <= 0x33000000u) return sign;  // below half the smallest subnormal: +-0
  // Subnormal half: value = m * 2^(e-150); in units of 2^-24 that is m >> (126 - e).
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // 14..24
  std::uint32_t h = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace detail

// A 16-bit IEEE half. Layout-compatible with uint16_t so that Arrow float16 buffers
// can be viewed as arrays of f16.
struct f16 {
  std::uint16_t bits;  // no initialiser: f16 stays trivial, like float

  f16() = default;
  explicit f16(float v) noexcept : bits(detail::float_to_half_bits(v)) {}
  static constexpr f16 from_bits(std::uint16_t b) noexcept {
    f16 h{};
    h.bits = b;
    return h;
  }
  explicit operator float() const noexcept { return detail::half_bits_to_float(bits); }
  float to_float() const noexcept { return detail::half_bits_to_float(bits); }
  friend constexpr bool operator==(f16 a, f16 b) noexcept { return a.bits == b.bits; }
};
static_assert(sizeof(f16) == 2 && alignof(f16) == 2);

// Converts n halves to floats (vectorised with F16C / AVX-512 where available).
inline void f16_to_f32(const f16* src, float* dst, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    __m256i h;
    std::memcpy(&h, src + i, 32);
    _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(static_cast<__mmask16>(0xffff), h));
  }
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h;
    std::memcpy(&h, src + i, 16);
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = src[i].to_float();
}

// Converts n floats to halves, round to nearest even.
inline void f32_to_f16(const float* src, f16* dst, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(dst + i, &h, 16);
  }
#endif
  for (; i < n; ++i) dst[i] = f16(src[i]);
}

}  // namespace lancet::simd
