// Writing JSON text: strings quoted and escaped, doubles as serde_json prints them
// (the index metadata LanceDB reads), lists of strings, and objects member by member
// (object_writer: what the command-line tools print). Numbers of Arrow
// values are written by json/rows_writer.hpp (JavaScript's layout, json/numbers.hpp).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
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

// JSON text of items that are JSON text already: [a,b].
inline std::string raw_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  return out + "]";
}

// One JSON object, written member by member in the order given, with no spaces:
//   json::object_writer o;
//   o.field("version", 3).field("name", name).field("ids", std::vector<std::uint64_t>{1, 2});
//   o.str()  // {"version":3,"name":"...","ids":[1,2]}
// Names and string values are escaped as append_quoted does; raw() takes a member's
// value as JSON text as it is (a nested object's str(), raw_list, a number).
class object_writer {
 public:
  object_writer& raw(std::string_view name, std::string_view json_text) {
    key(name);
    out_.append(json_text);
    return *this;
  }
  object_writer& field(std::string_view name, std::string_view s) {
    key(name);
    append_quoted(out_, s);
    return *this;
  }
  object_writer& field(std::string_view name, const char* s) { return field(name, std::string_view(s)); }
  object_writer& field(std::string_view name, const std::string& s) { return field(name, std::string_view(s)); }
  object_writer& field(std::string_view name, bool b) { return raw(name, b ? "true" : "false"); }
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  object_writer& field(std::string_view name, T n) {
    return raw(name, std::to_string(n));
  }
  object_writer& field(std::string_view name, const std::vector<std::string>& items) {
    return raw(name, string_list(items));
  }
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  object_writer& field(std::string_view name, const std::vector<T>& items) {
    std::vector<std::string> texts;
    texts.reserve(items.size());
    for (const auto n : items) texts.push_back(std::to_string(n));
    return raw(name, raw_list(texts));
  }
  // The object's JSON text ("{}" when no member was written).
  std::string str() const { return out_ + "}"; }

 private:
  void key(std::string_view name) {
    if (out_.size() > 1) out_.push_back(',');
    append_quoted(out_, name);
    out_.push_back(':');
  }
  std::string out_ = "{";
};

}  // namespace lancet::json
