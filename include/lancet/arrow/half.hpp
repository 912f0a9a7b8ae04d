// IEEE 754 binary16 ("half", Arrow float16) <-> float conversion. Arrow stores
// float16 values as their 16-bit patterns; these helpers convert exactly (half ->
// float) and with round-to-nearest-even (float -> half), keeping NaN a NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace lancet::arrow {

inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // 112 = 127 - 15
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: normalise into a float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (std::uint32_t(112 - e) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_half(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xFFu;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {  // inf or NaN; a NaN keeps a non-zero (quiet) mantissa
    return std::uint16_t(sign | 0x7C00u | (mant ? (0x200u | (mant >> 13)) : 0u));
  }
  const int e = int(exp) - 127 + 15;
  if (e >= 0x1F) return std::uint16_t(sign | 0x7C00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return sign;  // underflows to +-0
    mant |= 0x800000u;         // implicit leading 1
    const int shift = 14 - e;  // 24-bit mantissa down to the subnormal field
    std::uint32_t r = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    return std::uint16_t(sign | r);
  }
  std::uint32_t r = (std::uint32_t(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;  // may carry into inf: correct
  return std::uint16_t(sign | r);
}

}  // namespace lancet::arrow
