// Strings and bytes in checks: substring tests, bytes shown as hex, a string's bytes
// as a view, a buffer's bytes as a vector to compare.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <lancet/core/buffer.hpp>

namespace lancet::testing {

inline bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Lower-case hex digits of each byte, `sep` between bytes ("" or " ").
inline std::string hex(std::string_view bytes, std::string_view sep = "") {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += sep;
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// The bytes of `s` (it must outlive the view).
inline bytes_view view(const std::string& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

// A copy of the bytes of `b`.
inline std::vector<std::uint8_t> byte_vector(const shared_bytes& b) { return {b.data(), b.data() + b.size()}; }

}  // namespace lancet::testing
