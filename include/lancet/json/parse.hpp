// Parsing JSON text (RFC 8259, strict: no comments, no trailing commas, UTF-8
// checked, a leading UTF-8 byte order mark skipped) into a json::value. The parser
// keeps an explicit stack, so deep input is refused by a depth bound, never by the
// machine stack. Errors say where: the byte offset, and the line and column.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/json/numbers.hpp"
#include "lancet/json/value.hpp"

namespace lancet::json {

// Where and why a text could not be parsed. `offset` is the byte offset of the
// offending byte (the text's size at an unexpected end); line and column are
// 1-based, 0 for an error that is about the whole text (too deep). `malformed` is
// false for well-formed text that has no value here (a number beyond the range of
// a double); `path` then says where it is ("a.b[2]").
struct syntax_error {
  std::size_t offset = 0;
  std::size_t line = 0;
  std::size_t column = 0;
  std::string message;
  bool malformed = true;
  std::string path;
};

// Default bound on nesting: deeper input is refused.
inline constexpr std::size_t max_json_depth = 256;

namespace detail {

class parser {
 public:
  parser(std::string_view text, std::size_t max_depth) : s_(text), max_depth_(max_depth) {}

  bool run(value& root, syntax_error& err) {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    try {
      parse_into(root);
    } catch (const failure&) {
      err = std::move(error_);
      return false;
    }
    return true;
  }

 private:
  struct failure {};

  [[noreturn]] void fail(std::string message) {
    error_.offset = pos_;
    error_.line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i)
      if (s_[i] == '\n') {
        ++error_.line;
        line_start = i + 1;
      }
    error_.column = pos_ - line_start + 1;
    error_.message = std::move(message);
    throw failure{};
  }

  // The byte at pos_ for a message: 'x', or "byte 0xff" when not printable.
  std::string here() const {
    if (pos_ >= s_.size()) return "end of input";
    const auto c = static_cast<unsigned char>(s_[pos_]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + char(c) + "'";
    static const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }
  [[noreturn]] void unexpected(std::string_view expected) {
    fail((pos_ >= s_.size() ? std::string("unexpected end of input") : "unexpected " + here()) + "; expected " +
         std::string(expected));
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  // Skips whitespace and takes `c` when it comes next.
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // The values are built in place: `stack` holds the open arrays and objects, each
  // an element of the one below it (which does not grow while it is open).
  void parse_into(value& root) {
    std::vector<value*> stack;
    value* slot = &root;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size()) unexpected("a value");
      const char c = s_[pos_];
      bool opened = false;
      if (c == '{' || c == '[') {
        if (stack.size() >= max_depth_) {
          error_ = syntax_error{pos_, 0, 0, "nested deeper than " + std::to_string(max_depth_) + " levels", true, {}};
          throw failure{};
        }
        ++pos_;
        slot->k = c == '{' ? value::kind::object : value::kind::array;
        stack.push_back(slot);
        if (!eat(c == '{' ? '}' : ']')) {
          slot = next_slot(*slot);
          opened = true;
        } else {
          stack.pop_back();
        }
      } else {
        scalar(*slot, stack);
      }
      if (opened) continue;
      // After a value: close what ends here, then find the next slot.
      for (;;) {
        if (stack.empty()) {
          skip_ws();
          if (pos_ != s_.size()) unexpected("end of input after the value");
          return;
        }
        value& top = *stack.back();
        const bool object = top.k == value::kind::object;
        if (eat(',')) {
          slot = next_slot(top);
          break;
        }
        if (eat(object ? '}' : ']')) {
          stack.pop_back();
          continue;
        }
        unexpected(object ? "',' or '}'" : "',' or ']'");
      }
    }
  }

  // A new element of an open array, or the value of a new member of an open object
  // (its key and ':' read here).
  value* next_slot(value& container) {
    if (container.k == value::kind::array) return &container.items.emplace_back();
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '"') unexpected("a member name (a string)");
    ++pos_;
    std::string key = string_body();
    if (!eat(':')) unexpected("':'");
    return &container.members.emplace_back(std::move(key), value{}).second;
  }

  void scalar(value& v, const std::vector<value*>& stack) {
    const char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      v.k = value::kind::string;
      v.text = string_body();
    } else if (c == 't' || c == 'f' || c == 'n') {
      const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      for (char w : word) {
        if (pos_ >= s_.size() || s_[pos_] != w) fail("invalid literal (expected " + std::string(word) + ")");
        ++pos_;
      }
      v.k = c == 'n' ? value::kind::null : value::kind::boolean;
      v.b = c == 't';
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v, stack);
    } else {
      unexpected("a value");
    }
  }

  bool digit_at(std::size_t p) const { return p < s_.size() && s_[p] >= '0' && s_[p] <= '9'; }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  void number(value& v, const std::vector<value*>& stack) {
    const std::size_t start = pos_;
    const bool negative = s_[pos_] == '-';
    if (negative) ++pos_;
    if (!digit_at(pos_)) fail("invalid number: expected a digit after '-'");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit_at(pos_)) fail("invalid number: a leading zero is followed by a digit");
    } else {
      while (digit_at(pos_)) ++pos_;
    }
    const std::size_t int_end = pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit_at(pos_)) fail("invalid number: expected a digit after '.'");
      while (digit_at(pos_)) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit_at(pos_)) fail("invalid number: expected a digit in the exponent");
      while (digit_at(pos_)) ++pos_;
    }
    const std::string_view token = s_.substr(start, pos_ - start);
    if (int_end == pos_) {  // an integer: kept as one when it fits 64 bits
      std::uint64_t magnitude = 0;
      const auto digits = token.substr(negative ? 1 : 0);
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
      if (r.ec == std::errc() && !negative) {
        v.k = value::kind::unsigned_;
        v.u = magnitude;
        return;
      }
      // -0 stays text: a float column needs its sign.
      if (r.ec == std::errc() && magnitude != 0 && magnitude <= std::uint64_t(1) << 63) {
        v.k = value::kind::integer;
        v.i = magnitude == std::uint64_t(1) << 63 ? INT64_MIN : -std::int64_t(magnitude);
        return;
      }
    }
    // Any other number is kept as text, unless it is beyond a double (below the
    // smallest double is fine: it reads as zero).
    double d = 0;
    if (std::from_chars(token.data(), token.data() + token.size(), d).ec == std::errc::result_out_of_range) {
      const auto lit = parse_decimal_literal(token);
      if (lit && std::int64_t(lit->digits.size()) + lit->exponent > 0) {
        error_ = syntax_error{start, 0, 0, "the number " + std::string(token) + " is out of range", false, path(stack)};
        throw failure{};
      }
    }
    v.k = value::kind::number;
    v.text = std::string(token);
  }

  std::uint32_t hex4() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const char c = pos_ < s_.size() ? s_[pos_] : '\0';
      v <<= 4;
      if (c >= '0' && c <= '9') v |= std::uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= std::uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= std::uint32_t(c - 'A' + 10);
      else if (pos_ >= s_.size()) fail("invalid string: unexpected end of input in a \\u escape");
      else fail("invalid string: " + here() + " is not a hex digit of a \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  // Checks the UTF-8 sequence starting at pos_ (a byte >= 0x80, RFC 3629: no
  // overlong forms, no surrogates, nothing past U+10FFFF) and steps over it.
  void utf8_sequence() {
    const auto b0 = static_cast<unsigned char>(s_[pos_]);
    unsigned char lo = 0x80, hi = 0xBF;
    int more = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) more = 1;
    else if (b0 == 0xE0) more = 2, lo = 0xA0;
    else if (b0 == 0xED) more = 2, hi = 0x9F;
    else if (b0 >= 0xE1 && b0 <= 0xEF) more = 2;
    else if (b0 == 0xF0) more = 3, lo = 0x90;
    else if (b0 == 0xF4) more = 3, hi = 0x8F;
    else if (b0 >= 0xF1 && b0 <= 0xF3) more = 3;
    else fail("invalid string: ill-formed UTF-8 " + here());
    ++pos_;
    for (int i = 0; i < more; ++i, ++pos_) {
      if (pos_ >= s_.size()) fail("invalid string: unexpected end of input in a UTF-8 sequence");
      const auto b = static_cast<unsigned char>(s_[pos_]);
      if (b < lo || b > hi) fail("invalid string: ill-formed UTF-8 " + here());
      lo = 0x80, hi = 0xBF;
    }
  }

  // The rest of a string whose opening quote is read.
  std::string string_body() {
    std::string out;
    for (;;) {
      const std::size_t run = pos_;
      while (pos_ < s_.size()) {
        const auto c = static_cast<unsigned char>(s_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        if (c >= 0x80) utf8_sequence();
        else ++pos_;
      }
      out.append(s_.data() + run, pos_ - run);
      if (pos_ >= s_.size()) fail("invalid string: unexpected end of input (no closing '\"')");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c != '\\') fail("invalid string: control character " + here() + " must be escaped");
      ++pos_;
      if (pos_ >= s_.size()) fail("invalid string: unexpected end of input in an escape");
      switch (s_[pos_]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const std::size_t at = pos_ - 1;
          ++pos_;
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (s_.substr(pos_, 2) != "\\u") {
              pos_ = at;
              fail("invalid string: a high surrogate \\u escape without a low one after it");
            }
            pos_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) {
              pos_ -= 6;
              fail("invalid string: a high surrogate \\u escape is followed by no low surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            pos_ = at;
            fail("invalid string: a low surrogate \\u escape without a high one before it");
          }
          append_utf8(out, cp);
          continue;  // pos_ is past the escape
        }
        default: fail("invalid string: unknown escape \\" + std::string(1, s_[pos_]));
      }
      ++pos_;
    }
  }

  // Path of the value being parsed: "a.b[2]".
  static std::string path(const std::vector<value*>& stack) {
    std::string s;
    for (const value* c : stack) {
      if (c->k == value::kind::array) {
        s += '[';
        s += std::to_string(c->items.size() - 1);
        s += ']';
      } else if (!c->members.empty()) {
        if (!s.empty()) s += '.';
        s += c->members.back().first;
      }
    }
    return s;
  }

  std::string_view s_;
  std::size_t max_depth_;
  std::size_t pos_ = 0;
  syntax_error error_;
};

}  // namespace detail

// Parses one JSON text into `out`. Returns false and fills `err` when it is not JSON.
inline bool try_parse(std::string_view text, value& out, syntax_error& err, std::size_t max_depth = max_json_depth) {
  out = value{};
  return detail::parser(text, max_depth).run(out, err);
}

// Parses text that lancet or Lance stored (index metadata, segment files), where
// anything but JSON means the file is damaged: throws corrupt_error naming `what`
// and the offset.
inline value parse(std::string_view text, const std::string& what) {
  value v;
  syntax_error err;
  if (!try_parse(text, v, err))
    throw corrupt_error(what + ": invalid JSON at character " + std::to_string(err.offset) + ": " + err.message);
  return v;
}

}  // namespace lancet::json
