// Typed access to JSON that lancet or Lance stored (index metadata, segment files):
// a member that is missing or of the wrong type means a damaged file, so errors are
// corrupt_error naming the text (`what`) and the member.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/json/parse.hpp"
#include "lancet/json/value.hpp"

namespace lancet::json {

inline const value& member(const value& obj, std::string_view key, const std::string& what) {
  if (obj.k != value::kind::object) throw corrupt_error(what + ": expected a JSON object");
  const value* v = obj.find(key);
  if (!v) throw corrupt_error(what + ": missing \"" + std::string(key) + "\"");
  return *v;
}

inline std::uint64_t as_u64(const value& v, std::string_view key, const std::string& what) {
  if (v.k != value::kind::unsigned_)
    throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a non-negative integer");
  return v.u;
}

inline std::uint32_t as_u32(const value& v, std::string_view key, const std::string& what) {
  const auto x = as_u64(v, key, what);
  if (x > UINT32_MAX) throw corrupt_error(what + ": \"" + std::string(key) + "\" = " + std::to_string(x) + " is too large");
  return std::uint32_t(x);
}

inline double as_f64(const value& v, std::string_view key, const std::string& what) {
  switch (v.k) {
    case value::kind::unsigned_: return double(v.u);
    case value::kind::integer: return double(v.i);
    case value::kind::number: {
      double out = 0;  // below the smallest double reads as 0 (the parser refused overflow)
      std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
      return out;
    }
    default: throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a number");
  }
}

inline bool as_bool(const value& v, std::string_view key, const std::string& what) {
  if (v.k != value::kind::boolean) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a boolean");
  return v.b;
}

inline const std::string& as_string(const value& v, std::string_view key, const std::string& what) {
  if (v.k != value::kind::string) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a string");
  return v.text;
}

// An array of byte values (serde's Vec<u8>); null reads as no bytes.
inline std::vector<std::uint8_t> as_bytes(const value& v, std::string_view key, const std::string& what) {
  std::vector<std::uint8_t> out;
  if (v.k == value::kind::null) return out;
  if (v.k != value::kind::array) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not an array");
  for (const auto& item : v.items) {
    const auto b = as_u64(item, key, what);
    if (b > 255) throw corrupt_error(what + ": \"" + std::string(key) + "\" holds " + std::to_string(b) + ", not a byte");
    out.push_back(std::uint8_t(b));
  }
  return out;
}

// A stored JSON array of strings (write.hpp's string_list).
inline std::vector<std::string> parse_string_list(std::string_view text, const std::string& what) {
  const auto v = parse(text, what);
  if (v.k != value::kind::array) throw corrupt_error(what + ": expected a JSON array of strings");
  std::vector<std::string> out;
  for (const auto& item : v.items) {
    if (item.k != value::kind::string) throw corrupt_error(what + ": expected a JSON array of strings");
    out.push_back(item.text);
  }
  return out;
}

}  // namespace lancet::json
