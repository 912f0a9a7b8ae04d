// A parsed JSON value that keeps numbers exact. nlohmann::json stores any number
// that is not a 64-bit integer as a double, which loses int64 digits, decimals and
// the correctly rounded float32 of a literal; this tree keeps such numbers as their
// source text instead. It is built from nlohmann's SAX parser (strict RFC 8259,
// UTF-8 checked) and keeps object members in source order, duplicates included, so
// that callers can refuse duplicates with a precise message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lancet/core/error.hpp"

namespace lancet::json {

struct value {
  enum class kind : std::uint8_t {
    null,
    boolean,
    integer,    // a negative integer that fits int64_t: `i`
    unsigned_,  // a non-negative integer that fits uint64_t: `u`
    number,     // any other number (fraction, exponent, or too many digits): `text`
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

// Where and why a text could not be parsed. Line and column are 1-based (0 when
// unknown). `malformed` is false for well-formed text that nlohmann cannot hold (a
// number beyond the range of a double); `path` then says where it is ("a.b[2]").
struct syntax_error {
  std::size_t line = 0;
  std::size_t column = 0;
  std::string message;
  bool malformed = true;
  std::string path;
};

namespace detail {

// JSON text of a string (quotes and escapes as JavaScript's JSON.stringify writes
// them: \" \\ \b \f \n \r \t, other control characters as \u00XX, the rest as is).
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

inline std::string quote_json(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

// Builds a `value` tree from SAX events.
class tree_builder {
 public:
  tree_builder(value& root, std::size_t max_depth, std::vector<std::size_t> negative_zeros)
      : root_(root), max_depth_(max_depth), negative_zeros_(std::move(negative_zeros)) {}

  bool null() { return put(value{}); }
  bool boolean(bool b) {
    value v;
    v.k = value::kind::boolean;
    v.b = b;
    return put(std::move(v));
  }
  bool number_integer(std::int64_t i) {
    if (i == 0 && is_negative_zero()) return number_float(0.0, "-0");
    ++numbers_;
    value v;
    v.k = value::kind::integer;
    v.i = i;
    return put(std::move(v));
  }
  bool number_unsigned(std::uint64_t u) {
    if (u == 0 && is_negative_zero()) return number_float(0.0, "-0");
    ++numbers_;
    value v;
    v.k = value::kind::unsigned_;
    v.u = u;
    return put(std::move(v));
  }
  bool number_float(double, const std::string& s) {
    ++numbers_;
    value v;
    v.k = value::kind::number;
    v.text = s;
    return put(std::move(v));
  }
  bool string(std::string& s) {
    value v;
    v.k = value::kind::string;
    v.text = std::move(s);
    return put(std::move(v));
  }
  bool binary(nlohmann::json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(value::kind::object); }
  bool key(std::string& k) {
    stack_.back()->members.emplace_back(std::move(k), value{});
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(value::kind::array); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string& token, const nlohmann::json::exception& ex) {
    if (ex.id == 406) {  // number overflow: valid JSON, but beyond a double
      error_ = syntax_error{0, 0, "the number " + token + " is out of range", false, path()};
      return false;
    }
    error_ = split(ex.what());
    return false;
  }

  const syntax_error& error() const noexcept { return error_; }

 private:
  // Where the next value goes: the root, the end of an array, or the last member.
  value* slot() {
    if (stack_.empty()) return &root_;
    value* top = stack_.back();
    if (top->k == value::kind::array) {
      top->items.emplace_back();
      return &top->items.back();
    }
    return &top->members.back().second;
  }
  bool put(value&& v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(value::kind k) {
    if (stack_.size() >= max_depth_)
      return fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    value* v = slot();
    v->k = k;
    stack_.push_back(v);
    return true;
  }
  // Is the number about to be stored the literal -0 (which nlohmann reads as the
  // integer 0, losing the sign that a float column needs)?
  bool is_negative_zero() {
    while (next_zero_ < negative_zeros_.size() && negative_zeros_[next_zero_] < numbers_) ++next_zero_;
    return next_zero_ < negative_zeros_.size() && negative_zeros_[next_zero_] == numbers_;
  }

  // Path of the value being parsed: "a.b[2]".
  std::string path() const {
    std::string s;
    for (std::size_t d = 0; d < stack_.size(); ++d) {
      const value* c = stack_[d];
      if (c->k == value::kind::array) {
        const bool innermost = d + 1 == stack_.size();
        s += '[';
        s += std::to_string(c->items.size() - (innermost ? 0 : 1));
        s += ']';
      } else if (!c->members.empty()) {
        if (!s.empty()) s += '.';
        s += c->members.back().first;
      }
    }
    return s;
  }
  bool fail(std::string message) {
    error_ = syntax_error{0, 0, std::move(message), true, {}};
    return false;
  }
  // "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error
  // while parsing value - invalid literal; last read: 'tr'" -> {1, 3, "syntax error ..."}.
  static syntax_error split(std::string_view what) {
    syntax_error e;
    if (auto p = what.find("] "); p != std::string_view::npos && what.substr(0, 1) == "[") what.remove_prefix(p + 2);
    constexpr std::string_view at = "parse error at line ";
    if (what.substr(0, at.size()) == at) {
      std::size_t p = at.size();
      auto number = [&](std::size_t& out) {
        while (p < what.size() && what[p] >= '0' && what[p] <= '9') out = out * 10 + std::size_t(what[p++] - '0');
      };
      number(e.line);
      if (what.substr(p, 9) == ", column ") {
        p += 9;
        number(e.column);
      }
      if (what.substr(p, 2) == ": ") p += 2;
      what.remove_prefix(p);
    } else if (constexpr std::string_view pe = "parse error: "; what.substr(0, pe.size()) == pe) {
      what.remove_prefix(pe.size());
    }
    e.message = std::string(what);
    return e;
  }

  value& root_;
  std::size_t max_depth_;
  std::vector<std::size_t> negative_zeros_;  // ordinals of the number tokens that are "-0"
  std::size_t numbers_ = 0;                   // number tokens seen so far
  std::size_t next_zero_ = 0;
  std::vector<value*> stack_;
  syntax_error error_;
};

// Ordinals (0-based, among the number tokens of the text) of the tokens "-0".
inline std::vector<std::size_t> negative_zero_tokens(std::string_view t) {
  std::vector<std::size_t> out;
  if (t.find("-0") == std::string_view::npos) return out;
  std::size_t ordinal = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t j = i + 1;
      while (j < t.size() && ((t[j] >= '0' && t[j] <= '9') || t[j] == '.' || t[j] == 'e' || t[j] == 'E' ||
                              t[j] == '+' || t[j] == '-'))
        ++j;
      if (t.substr(i, j - i) == "-0") out.push_back(ordinal);
      ++ordinal;
      i = j - 1;
    }
  }
  return out;
}

}  // namespace detail

// Default bound on nesting: deeper input is refused rather than risking the stack.
inline constexpr std::size_t max_json_depth = 256;

// Parses one JSON text into `out`. Returns false and fills `err` when it is not JSON.
inline bool try_parse(std::string_view text, value& out, syntax_error& err,
                      std::size_t max_depth = max_json_depth) {
  out = value{};
  detail::tree_builder b(out, max_depth, detail::negative_zero_tokens(text));
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &b);
  } catch (const nlohmann::json::exception& e) {
    err = syntax_error{0, 0, e.what(), true, {}};
    return false;
  }
  if (!ok) err = b.error();
  return ok;
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
      if (v.text.size() <= 40) return detail::quote_json(v.text);
      std::size_t cut = 40;  // do not split a UTF-8 sequence
      while (cut > 0 && (static_cast<unsigned char>(v.text[cut]) & 0xC0) == 0x80) --cut;
      return detail::quote_json(std::string_view(v.text).substr(0, cut)) + "...";
    }
    case value::kind::array: return "an array";
    case value::kind::object: return "an object";
  }
  return "?";
}

}  // namespace lancet::json
