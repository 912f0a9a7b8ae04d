// A parsed JSON value that keeps numbers exact: integers that fit 64 bits as
// integers, every other number as its source text (a double would lose int64
// digits, decimals and the correctly rounded float32 of a literal). Object members
// stay in source order, duplicates included, so that callers can refuse duplicates
// with a precise message. json/parse.hpp builds it; json/write.hpp writes it back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/json/write.hpp"

namespace lancet::json {

struct value {
  enum class kind : std::uint8_t {
    null,
    boolean,
    integer,    // a negative integer that fits int64_t: `i`
    unsigned_,  // a non-negative integer that fits uint64_t: `u`
    number,     // any other number (fraction, exponent, "-0" or too many digits): `text`
    string,     // `text` (valid UTF-8)
    array,      // `items`
    object,     // `members`, in source order
  };
  kind k = kind::null;
  bool b = false;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  std::string text;
  std::vector<value> items;
  std::vector<std::pair<std::string, value>> members;

  // Declared here, the destructor defined after the class: clang (14) with libstdc++
  // needs value complete before destroying a vector of pair<string, value>.
  value() = default;
  value(const value&) = default;
  value(value&&) noexcept = default;
  value& operator=(const value&) = default;
  value& operator=(value&&) noexcept = default;
  ~value();

  bool is_null() const noexcept { return k == kind::null; }
  bool is_integer() const noexcept { return k == kind::integer || k == kind::unsigned_; }
  bool is_number() const noexcept { return is_integer() || k == kind::number; }
  // The first member named `name`, or nullptr.
  const value* find(std::string_view name) const noexcept {
    for (const auto& [key, v] : members)
      if (key == name) return &v;
    return nullptr;
  }
};
inline value::~value() = default;

// Compact JSON text of a value (no spaces; numbers as parsed, strings escaped as
// append_quoted does): parse(write(v)) gives v back.
inline void append_value(std::string& out, const value& v) {
  switch (v.k) {
    case value::kind::null: out += "null"; return;
    case value::kind::boolean: out += v.b ? "true" : "false"; return;
    case value::kind::integer: out += std::to_string(v.i); return;
    case value::kind::unsigned_: out += std::to_string(v.u); return;
    case value::kind::number: out += v.text; return;
    case value::kind::string: append_quoted(out, v.text); return;
    case value::kind::array:
      out.push_back('[');
      for (std::size_t n = 0; n < v.items.size(); ++n) {
        if (n) out.push_back(',');
        append_value(out, v.items[n]);
      }
      out.push_back(']');
      return;
    case value::kind::object:
      out.push_back('{');
      for (std::size_t n = 0; n < v.members.size(); ++n) {
        if (n) out.push_back(',');
        append_quoted(out, v.members[n].first);
        out.push_back(':');
        append_value(out, v.members[n].second);
      }
      out.push_back('}');
      return;
  }
}
inline std::string write(const value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

// A short rendering of a value for error messages: `"x"`, `12.5`, `true`, `null`,
// `an array`, `an object` (long strings are cut with "...").
inline std::string describe(const value& v) {
  switch (v.k) {
    case value::kind::null: return "null";
    case value::kind::boolean: return v.b ? "true" : "false";
    case value::kind::integer: return std::to_string(v.i);
    case value::kind::unsigned_: return std::to_string(v.u);
    case value::kind::number: return v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text;
    case value::kind::string: {
      if (v.text.size() <= 40) return quote(v.text);
      std::size_t cut = 40;  // do not split a UTF-8 sequence
      while (cut > 0 && (static_cast<unsigned char>(v.text[cut]) & 0xC0) == 0x80) --cut;
      return quote(std::string_view(v.text).substr(0, cut)) + "...";
    }
    case value::kind::array: return "an array";
    case value::kind::object: return "an object";
  }
  return "?";
}

}  // namespace lancet::json
