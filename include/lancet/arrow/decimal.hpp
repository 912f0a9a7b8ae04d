// Decimal values as Arrow stores them: little-endian two's complement integers of
// 16 (decimal128) or 32 (decimal256) bytes; the scale lives in the type.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "lancet/core/buffer.hpp"

namespace lancet::arrow {

// GCC/Clang 128-bit integers (`__extension__` keeps -Wpedantic quiet).
__extension__ typedef __int128 int128_t;
__extension__ typedef unsigned __int128 uint128_t;

// The 16 little-endian bytes of a decimal128 value.
inline std::array<std::uint8_t, 16> decimal128_bytes(int128_t v) noexcept {
  std::array<std::uint8_t, 16> b{};
  auto u = static_cast<uint128_t>(v);
  for (int i = 0; i < 16; ++i) b[std::size_t(i)] = std::uint8_t(u >> (8 * i));
  return b;
}

// The 32 little-endian bytes of a decimal256 value, sign-extended from 128 bits.
inline std::array<std::uint8_t, 32> decimal256_bytes(int128_t v) noexcept {
  std::array<std::uint8_t, 32> b{};
  auto lo = decimal128_bytes(v);
  std::memcpy(b.data(), lo.data(), 16);
  std::memset(b.data() + 16, v < 0 ? 0xFF : 0x00, 16);
  return b;
}

inline int128_t decimal128_from_bytes(const std::uint8_t* p) noexcept {
  uint128_t u = 0;
  for (int i = 15; i >= 0; --i) u = (u << 8) | p[i];
  return static_cast<int128_t>(u);
}

// Decimal digits of a 128-bit signed integer.
inline std::string int128_to_string(int128_t v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  uint128_t u = neg ? uint128_t(0) - static_cast<uint128_t>(v) : static_cast<uint128_t>(v);
  std::string s;
  while (u != 0) {
    s.push_back(char('0' + int(u % 10)));
    u /= 10;
  }
  if (neg) s.push_back('-');
  return std::string(s.rbegin(), s.rend());
}

// "12.345" for the unscaled value 12345 with scale 3 (128-bit values only; wider
// decimal256 values that do not fit print as hex).
inline std::string decimal_to_string(const std::uint8_t* p, int width_bytes, std::int32_t scale) {
  if (width_bytes == 32) {
    // Fits in 128 bits when the upper half is the sign extension of the lower.
    const std::uint8_t ext = (p[15] & 0x80) ? 0xFF : 0x00;
    bool fits = true;
    for (int i = 16; i < 32; ++i) fits = fits && p[i] == ext;
    if (!fits) {
      static const char* hex = "0123456789abcdef";
      std::string s = "0x";
      for (int i = 31; i >= 0; --i) {
        s.push_back(hex[p[i] >> 4]);
        s.push_back(hex[p[i] & 15]);
      }
      return s;
    }
  }
  std::string digits = int128_to_string(decimal128_from_bytes(p));
  if (scale <= 0) return digits + std::string(std::size_t(-scale), '0');
  std::string sign;
  if (digits[0] == '-') {
    sign = "-";
    digits.erase(0, 1);
  }
  if (digits.size() <= std::size_t(scale)) digits.insert(0, std::size_t(scale) + 1 - digits.size(), '0');
  digits.insert(digits.size() - std::size_t(scale), ".");
  return sign + digits;
}

}  // namespace lancet::arrow
