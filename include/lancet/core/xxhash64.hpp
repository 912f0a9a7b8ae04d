// XXH64 (Yann Collet's xxHash, 64-bit variant) of a byte string: the hash Lance's
// split-block bloom filters (as Parquet's) take of a value's bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace lancet {

namespace detail::xxh64 {
inline constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full, p3 = 0x165667B19E3779F9ull,
                               p4 = 0x85EBCA77C2B2AE63ull, p5 = 0x27D4EB2F165667C5ull;
inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline std::uint32_t load32(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}
inline std::uint64_t round(std::uint64_t acc, std::uint64_t input) { return rotl(acc + input * p2, 31) * p1; }
inline std::uint64_t merge(std::uint64_t h, std::uint64_t v) { return (h ^ round(0, v)) * p1 + p4; }
}  // namespace detail::xxh64

inline std::uint64_t xxhash64(std::string_view bytes, std::uint64_t seed = 0) {
  using namespace detail::xxh64;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  const auto* end = p + n;
  std::uint64_t h;
  if (n >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    for (; p + 32 <= end; p += 32) {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + p5;
  }
  h += n;
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round(0, load64(p)), 27) * p1 + p4;
  if (p + 4 <= end) {
    h = rotl(h ^ (std::uint64_t(load32(p)) * p1), 23) * p2 + p3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (std::uint64_t(*p) * p5), 11) * p1;
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}

}  // namespace lancet
