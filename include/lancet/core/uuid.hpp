// A UUID: 16 bytes, random (version 4) generation, and the text form Lance puts in
// index directory names and transaction ids. Lance's UUID message is this type on the
// wire (pb/table/common.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"

namespace lancet {

struct uuid {
  std::array<std::uint8_t, 16> bytes{};

  // Random (version 4, RFC 4122 variant) UUID from std::random_device.
  static uuid generate_v4() {
    thread_local std::random_device rd;
    uuid u;
    for (std::size_t i = 0; i < 16; i += 4) {
      std::uint32_t x = rd();
      for (std::size_t k = 0; k < 4; ++k) u.bytes[i + k] = std::uint8_t(x >> (8 * k));
    }
    u.bytes[6] = std::uint8_t((u.bytes[6] & 0x0F) | 0x40);
    u.bytes[8] = std::uint8_t((u.bytes[8] & 0x3F) | 0x80);
    return u;
  }
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase.
  std::string to_string() const {
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (std::size_t i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
      s.push_back(hex[bytes[i] >> 4]);
      s.push_back(hex[bytes[i] & 0xF]);
    }
    return s;
  }
  // Accepts the hyphenated form (either case) or 32 bare hex digits.
  static uuid parse(std::string_view text) {
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const bool hyphenated = text.size() == 36;
    if (!hyphenated && text.size() != 32)
      throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
    uuid u;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < 16; ++i) {
      if (hyphenated && (i == 4 || i == 6 || i == 8 || i == 10)) {
        if (text[pos] != '-') throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
        ++pos;
      }
      int hi = nibble(text[pos]), lo = nibble(text[pos + 1]);
      if (hi < 0 || lo < 0) throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
      u.bytes[i] = std::uint8_t(hi << 4 | lo);
      pos += 2;
    }
    return u;
  }

  friend bool operator==(const uuid&, const uuid&) = default;
};

}  // namespace lancet
