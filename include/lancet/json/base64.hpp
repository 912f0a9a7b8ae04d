// Base64 (RFC 4648 standard alphabet) for binary values in JSON: encoding always
// pads; decoding takes padded or unpadded text and refuses anything else
// (whitespace, the URL-safe alphabet, misplaced padding, non-zero trailing bits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lancet::json {

inline void append_base64(std::string& out, std::string_view bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  out.reserve(out.size() + (n + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const std::uint32_t v = (std::uint32_t(p[i]) << 16) | (std::uint32_t(p[i + 1]) << 8) | p[i + 2];
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  if (n - i == 1) {
    const std::uint32_t v = std::uint32_t(p[i]) << 16;
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out += "==";
  } else if (n - i == 2) {
    const std::uint32_t v = (std::uint32_t(p[i]) << 16) | (std::uint32_t(p[i + 1]) << 8);
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
}

inline std::string base64_encode(std::string_view bytes) {
  std::string out;
  append_base64(out, bytes);
  return out;
}

// Decodes `text` into `out` (appending). On failure returns a description of the
// problem ("character '!' at position 4 is not base64", ...) and leaves `out` as
// it was.
inline std::optional<std::string> base64_decode(std::string_view text, std::string& out) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::size_t n = text.size();
  std::size_t pad = 0;
  while (n > 0 && text[n - 1] == '=' && pad < 2) {
    --n;
    ++pad;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (digit(text[i]) >= 0) continue;
    const auto c = static_cast<unsigned char>(text[i]);
    static const char* hex = "0123456789abcdef";
    std::string shown = (c >= 0x20 && c < 0x7F) ? std::string(1, char(c)) : std::string("\\x") + hex[c >> 4] + hex[c & 15];
    return "character '" + shown + "' at position " + std::to_string(i) + " is not base64";
  }
  if (pad > 0 && text.size() % 4 != 0) return std::string("padding '=' must make the length a multiple of 4");
  if (n % 4 == 1) return "length " + std::to_string(text.size()) + " is not a valid base64 length";
  const std::size_t start = out.size();
  out.reserve(start + n / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc = (acc << 6) | std::uint32_t(digit(text[i]));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    out.resize(start);
    return std::string("the last character has bits set past the end of the data");
  }
  return std::nullopt;
}

}  // namespace lancet::json
