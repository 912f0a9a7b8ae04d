// Splitting a filter's text into tokens: names (plain or `quoted`), numbers, 'strings',
// operators and punctuation, each with its byte offset. Keywords are plain names; the
// parser recognises them (case-insensitively).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/expr/error.hpp"

namespace lancet::expr {

struct token {
  enum class kind : unsigned char {
    name,         // an identifier or keyword (text: as written)
    quoted_name,  // `a name` (text: unquoted, `` turned into `)
    number,       // 12, 1.5, .5, 1e-3 (text: as written)
    string,       // 'text' (text: unquoted, '' turned into ')
    symbol,       // ( ) , . = != <> < <= > >= + - * / %
    other,        // SQL lancet does not evaluate (||, ::, [, ...) or a stray character
    end,
  };
  kind k = kind::end;
  std::string text;
  std::size_t position = 0;
  std::size_t length = 0;  // bytes of the source the token spans

  // The token as written, for messages.
  std::string text_for_error() const {
    if (k == kind::string) return "'" + text + "'";
    if (k == kind::quoted_name) return "`" + text + "`";
    return text;
  }
};

namespace detail {

inline bool name_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
inline bool name_char(char c) noexcept { return name_start(c) || (c >= '0' && c <= '9'); }
inline bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

}  // namespace detail

// The tokens of `text`, ending with one of kind end. Unterminated strings and quoted
// names are invalid_filter errors at their opening quote.
inline std::vector<token> tokenize(std::string_view text) {
  std::vector<token> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  const auto emit = [&](token::kind k, std::string t, std::size_t at) {
    out.push_back(token{k, std::move(t), at, i - at});
  };
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    const std::size_t at = i;
    if (c == '-' && i + 1 < n && text[i + 1] == '-') {  // -- comment to the end of the line
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (detail::name_start(c)) {
      while (i < n && detail::name_char(text[i])) ++i;
      emit(token::kind::name, std::string(text.substr(at, i - at)), at);
      continue;
    }
    // Quoted text up to the closing quote, a doubled quote standing for one.
    const auto quoted = [&](char q, const char* what) {
      std::string out;
      for (++i;;) {
        if (i >= n) throw invalid_filter(std::string("unterminated ") + what + " (no closing " + q + ")", at, std::string(1, q));
        if (text[i] == q) {
          if (i + 1 < n && text[i + 1] == q) {
            out += q;
            i += 2;
            continue;
          }
          ++i;
          return out;
        }
        out += text[i++];
      }
    };
    if (c == '`' || c == '"') {  // quoted names: `a b` (and "a b", as SQL quotes identifiers)
      auto name = quoted(c, "quoted name");
      emit(token::kind::quoted_name, std::move(name), at);
      continue;
    }
    if (c == '\'') {
      auto str = quoted(c, "string");
      emit(token::kind::string, std::move(str), at);
      continue;
    }
    if (detail::digit(c) || (c == '.' && i + 1 < n && detail::digit(text[i + 1]))) {
      while (i < n && detail::digit(text[i])) ++i;
      if (i < n && text[i] == '.') {
        ++i;
        while (i < n && detail::digit(text[i])) ++i;
      }
      if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < n && (text[j] == '+' || text[j] == '-')) ++j;
        if (j < n && detail::digit(text[j])) {
          i = j;
          while (i < n && detail::digit(text[i])) ++i;
        }
      }
      if (i < n && detail::name_start(text[i])) {  // 12abc
        while (i < n && detail::name_char(text[i])) ++i;
        throw invalid_filter("malformed number", at, std::string(text.substr(at, i - at)));
      }
      emit(token::kind::number, std::string(text.substr(at, i - at)), at);
      continue;
    }
    // Two-character operators first.
    const std::string_view two = text.substr(i, 2);
    if (two == "!=" || two == "<>" || two == "<=" || two == ">=") {
      i += 2;
      emit(token::kind::symbol, std::string(two), at);
      continue;
    }
    if (two == "||" || two == "::" || two == "->" || two == "==" || two == "<<" || two == ">>" || two == "!~" ||
        two == "@>" || two == "<@") {
      i += 2;
      emit(token::kind::other, std::string(two), at);
      continue;
    }
    switch (c) {
      case '(': case ')': case ',': case '.': case '=': case '<': case '>': case '+': case '-': case '*': case '/':
      case '%':
        ++i;
        emit(token::kind::symbol, std::string(1, c), at);
        continue;
      default:
        ++i;
        emit(token::kind::other, std::string(1, c), at);
        continue;
    }
  }
  out.push_back(token{token::kind::end, {}, n, 0});
  return out;
}

}  // namespace lancet::expr
