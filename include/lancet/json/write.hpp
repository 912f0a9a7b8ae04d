// Writing JSON text: strings quoted and escaped, doubles as serde_json prints them
// (the index metadata LanceDB reads), and lists of strings. Numbers of Arrow
// values are written by json/rows_writer.hpp (JavaScript's layout, json/numbers.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lancet/json/numbers.hpp"

namespace lancet::json {

// JSON text of a string: quotes and escapes as both JavaScript's JSON.stringify and
// serde_json write them: \" \\ \b \f \n \r \t, other control characters as \u00XX,
// everything else (UTF-8 included) as is.
inline void append_quoted(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes copied verbatim
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

inline std::string quote(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

// An f64 the way serde_json (ryu) prints it: "0.0", "1.5", "1e30", "1.5e-7";
// non-finite values are null (as serde_json writes them).
inline std::string serde_number(double v) {
  std::string out;
  detail::append_serde_f64(out, v);
  return out;
}

// A JSON array of strings: ["a","b"].
inline std::string string_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    append_quoted(out, items[i]);
  }
  return out + "]";
}

}  // namespace lancet::json
