// The bytes of the blob test tables: row g of size n holds byte k = (k * 7 + g) & 255,
// as tests/interop/blob_write.mjs writes them, and their FNV-1a hash, as
// tests/interop/blob_fetch.mjs reports what LanceDB read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lancet::testing {

// The value of row g, `size` bytes long.
inline std::string blob_value(std::size_t size, std::uint64_t g) {
  std::string v(size, '\0');
  for (std::size_t k = 0; k < size; ++k) v[k] = char((k * 7 + g) & 255);
  return v;
}

// FNV-1a, 32 bits.
inline std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 0x811c9dc5u;
  for (unsigned char c : s) h = (h ^ c) * 0x01000193u;
  return h;
}

}  // namespace lancet::testing
