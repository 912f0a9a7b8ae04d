// Parsing a SQL filter (the WHERE clause LanceDB users write) into an expression tree:
//
//   OR, AND, NOT; = != <> < <= > >=; + - * / % and unary minus; IS [NOT] NULL,
//   IS [NOT] TRUE / FALSE; [NOT] IN (...); [NOT] BETWEEN a AND b;
//   [NOT] LIKE 'pattern' [ESCAPE 'c']; parentheses; columns (a, a.b, `quoted name`);
//   integer, float, 'string', TRUE / FALSE / NULL, DATE '...' and TIMESTAMP '...'.
//
// Precedence, loosest first: OR, AND, NOT, the predicates (comparisons, IS, IN,
// BETWEEN, LIKE), + -, * / %, unary minus. Keywords are case-insensitive. Errors are
// expr::invalid_filter (malformed) or expr::unsupported_filter (SQL lancet does not
// evaluate: function calls, subqueries, CASE, casts...), both naming the position and
// the token.
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/expr/ast.hpp"
#include "lancet/expr/error.hpp"
#include "lancet/expr/lexer.hpp"
#include "lancet/expr/temporal.hpp"

namespace lancet::expr {

namespace detail {

inline bool keyword_is(const token& t, std::string_view kw) noexcept {
  if (t.k != token::kind::name || t.text.size() != kw.size()) return false;
  for (std::size_t i = 0; i < kw.size(); ++i) {
    char c = t.text[i];
    if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    if (c != kw[i]) return false;
  }
  return true;
}

// Words that end an operand or start an operator: never column names unless quoted.
inline bool reserved(const token& t) noexcept {
  static constexpr std::string_view words[] = {"AND", "OR", "NOT", "IS", "IN", "BETWEEN", "LIKE", "ESCAPE",
                                               "NULL", "TRUE", "FALSE", "ILIKE", "SIMILAR", "RLIKE"};
  for (auto w : words)
    if (keyword_is(t, w)) return true;
  return false;
}

class parser {
 public:
  explicit parser(std::string_view text) : toks_(tokenize(text)) {}

  node run() {
    if (peek().k == token::kind::end) fail("the filter is empty");
    node n = or_expr();
    if (peek().k != token::kind::end) {
      if (peek().k == token::kind::symbol && peek().text == ")") fail("unbalanced ')'");
      fail("unexpected token after the end of the expression");
    }
    return n;
  }

 private:
  // Deeper nesting is refused (the parser recurses once per level).
  static constexpr int max_depth = 256;

  const token& peek(std::size_t ahead = 0) const noexcept {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const token& take() noexcept {
    const token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool symbol(std::string_view s) const noexcept { return peek().k == token::kind::symbol && peek().text == s; }
  bool eat_symbol(std::string_view s) noexcept {
    if (!symbol(s)) return false;
    take();
    return true;
  }
  bool keyword(std::string_view kw, std::size_t ahead = 0) const noexcept { return keyword_is(peek(ahead), kw); }
  bool eat_keyword(std::string_view kw) noexcept {
    if (!keyword(kw)) return false;
    take();
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(message, peek()); }
  [[noreturn]] static void fail_at(const std::string& message, const token& t) {
    throw invalid_filter(message, t.position, t.text_for_error());
  }
  [[noreturn]] static void unsupported_at(const std::string& message, const token& t) {
    throw unsupported_filter(message, t.position, t.text_for_error());
  }
  void expect_symbol(std::string_view s, const std::string& what) {
    if (!eat_symbol(s)) fail(std::string("expected '") + std::string(s) + "' " + what);
  }

  struct depth_guard {
    parser& p;
    explicit depth_guard(parser& q) : p(q) {
      if (++p.depth_ > max_depth) p.fail("the filter is nested more than " + std::to_string(max_depth) + " levels deep");
    }
    ~depth_guard() { --p.depth_; }
  };

  node make(node_kind k, std::size_t at, std::vector<node> args) const {
    node n;
    n.kind = k;
    n.position = at;
    for (const auto& a : args) n.depth = std::max<std::uint32_t>(n.depth, a.depth + 1);
    // Chains of arithmetic or comparisons grow the tree without nesting the text.
    if (n.depth > max_depth) fail("the filter is nested more than " + std::to_string(max_depth) + " levels deep");
    n.args = std::move(args);
    return n;
  }

  // a OP b OP c (OR, AND): one node of every operand, so long generated chains stay one level.
  node chain(std::string_view op, node_kind kind, node (parser::*operand)()) {
    node first = (this->*operand)();
    if (!keyword(op)) return first;
    std::vector<node> args;
    args.push_back(std::move(first));
    while (eat_keyword(op)) args.push_back((this->*operand)());
    const auto at = args[0].position;
    return make(kind, at, std::move(args));
  }

  node or_expr() {
    depth_guard g(*this);
    return chain("OR", node_kind::or_, &parser::and_expr);
  }

  node and_expr() { return chain("AND", node_kind::and_, &parser::not_expr); }

  node not_expr() {
    if (keyword("NOT")) {
      depth_guard g(*this);
      const auto at = take().position;
      return make(node_kind::not_, at, vec(not_expr()));
    }
    return predicate();
  }

  // additive [comparison additive | IS ... | [NOT] IN | [NOT] BETWEEN | [NOT] LIKE]*
  node predicate() {
    node left = additive();
    for (;;) {
      const token& t = peek();
      if (t.k == token::kind::symbol) {
        compare_op op;
        if (t.text == "=") op = compare_op::eq;
        else if (t.text == "!=" || t.text == "<>") op = compare_op::ne;
        else if (t.text == "<") op = compare_op::lt;
        else if (t.text == "<=") op = compare_op::le;
        else if (t.text == ">") op = compare_op::gt;
        else if (t.text == ">=") op = compare_op::ge;
        else return left;
        take();
        if (keyword("ANY") || keyword("ALL") || keyword("SOME"))
          unsupported_at("quantified comparisons (" + peek().text + ") are not supported", peek());
        node right = additive();
        node n = make(node_kind::compare, left.position, vec(std::move(left), std::move(right)));
        n.cmp = op;
        left = std::move(n);
        continue;
      }
      if (t.k == token::kind::other && t.text == "==") {  // Lance reads == as =
        take();
        node right = additive();
        node n = make(node_kind::compare, left.position, vec(std::move(left), std::move(right)));
        n.cmp = compare_op::eq;
        left = std::move(n);
        continue;
      }
      if (keyword("IS")) {
        take();
        const bool neg = eat_keyword("NOT");
        node_kind k;
        if (eat_keyword("NULL")) k = node_kind::is_null;
        else if (eat_keyword("TRUE")) k = node_kind::is_true;
        else if (eat_keyword("FALSE")) k = node_kind::is_false;
        else if (keyword("DISTINCT") || keyword("UNKNOWN")) unsupported_at("IS " + peek().text + " is not supported", peek());
        else fail("expected NULL, TRUE or FALSE after IS");
        node n = make(k, left.position, vec(std::move(left)));
        n.negated = neg;
        left = std::move(n);
        continue;
      }
      bool neg = false;
      if (keyword("NOT") && (keyword("IN", 1) || keyword("BETWEEN", 1) || keyword("LIKE", 1) || keyword("ILIKE", 1))) {
        take();
        neg = true;
      }
      if (keyword("IN")) {
        take();
        if (!symbol("(")) fail("expected '(' after IN");
        take();
        if (keyword("SELECT")) unsupported_at("subqueries are not supported", peek());
        std::vector<node> args;
        args.push_back(std::move(left));
        if (symbol(")")) fail("IN needs at least one value");
        for (;;) {
          args.push_back(additive());
          if (eat_symbol(",")) continue;
          expect_symbol(")", "to close the IN list");
          break;
        }
        const auto at = args[0].position;
        node n = make(node_kind::in_list, at, std::move(args));
        n.negated = neg;
        left = std::move(n);
        continue;
      }
      if (keyword("BETWEEN")) {
        take();
        node lo = additive();
        if (!eat_keyword("AND")) fail("expected AND in BETWEEN ... AND ...");
        node hi = additive();
        const auto at = left.position;
        std::vector<node> args;
        args.push_back(std::move(left));
        args.push_back(std::move(lo));
        args.push_back(std::move(hi));
        node n = make(node_kind::between, at, std::move(args));
        n.negated = neg;
        left = std::move(n);
        continue;
      }
      if (keyword("ILIKE")) unsupported_at("ILIKE is not supported (LIKE is)", peek());
      if (keyword("SIMILAR") || keyword("RLIKE")) unsupported_at(peek().text + " is not supported (LIKE is)", peek());
      if (keyword("LIKE")) {
        take();
        node pattern = additive();
        node n = make(node_kind::like, left.position, vec(std::move(left), std::move(pattern)));
        n.negated = neg;
        if (keyword("ESCAPE")) {
          take();
          const token& e = peek();
          if (e.k != token::kind::string || e.text.size() != 1) fail("ESCAPE needs a string of one character");
          if (e.text[0] != '\\')
            unsupported_at("LIKE supports only the backslash (\\) as its escape character", e);
          n.has_escape = true;
          n.escape = e.text[0];
          take();
        }
        left = std::move(n);
        continue;
      }
      return left;
    }
  }

  node additive() {
    node left = multiplicative();
    for (;;) {
      arith_op op;
      if (symbol("+")) op = arith_op::add;
      else if (symbol("-")) op = arith_op::sub;
      else if (peek().k == token::kind::other && peek().text == "||")
        unsupported_at("string concatenation (||) is not supported", peek());
      else return left;
      take();
      node right = multiplicative();
      node n = make(node_kind::arithmetic, left.position, vec(std::move(left), std::move(right)));
      n.arith = op;
      left = std::move(n);
    }
  }

  node multiplicative() {
    node left = unary();
    for (;;) {
      arith_op op;
      if (symbol("*")) op = arith_op::mul;
      else if (symbol("/")) op = arith_op::div;
      else if (symbol("%")) op = arith_op::mod;
      else return left;
      take();
      node right = unary();
      node n = make(node_kind::arithmetic, left.position, vec(std::move(left), std::move(right)));
      n.arith = op;
      left = std::move(n);
    }
  }

  node unary() {
    if (symbol("+")) unsupported_at("unary '+' is not supported", peek());
    if (symbol("-")) {
      depth_guard g(*this);
      const token& t = take();
      const auto at = t.position;
      node operand = unary();
      // A negated number is one constant, as Lance reads it: an integer negated when
      // it fits int64, else a float (so -9223372036854775808 is a float, as there).
      if (operand.kind == node_kind::constant) {
        auto& v = operand.value;
        if (v.k == literal::kind::integer) {
          v.i = -v.i;
          operand.position = at;
          return operand;
        }
        if (v.k == literal::kind::unsigned_integer) {
          v.k = literal::kind::floating;
          v.f = -static_cast<double>(v.u);
          operand.position = at;
          return operand;
        }
        if (v.k == literal::kind::floating) {
          v.f = -v.f;
          operand.position = at;
          return operand;
        }
      }
      return make(node_kind::negate, at, vec(std::move(operand)));
    }
    return postfix(primary());
  }

  // Access to a struct's member of an expression, e.g. (a).b, is not SQL lancet takes;
  // a trailing '[' (array indexing) or '::' (a cast) is named.
  node postfix(node n) {
    const token& t = peek();
    if (t.k == token::kind::other && (t.text == "[" || t.text == "::" || t.text == "->"))
      unsupported_at(t.text == "[" ? "indexing ([...]) is not supported"
                                   : t.text == "::" ? "casts (::) are not supported" : "'->' is not supported",
                     t);
    return n;
  }

  node primary() {
    const token& t = peek();
    switch (t.k) {
      case token::kind::number: return number(take());
      case token::kind::string: {
        node n;
        n.kind = node_kind::constant;
        n.position = t.position;
        n.value.k = literal::kind::string;
        n.value.s = take().text;
        return n;
      }
      case token::kind::quoted_name: return column();
      case token::kind::name: {
        if (keyword("NULL") || keyword("TRUE") || keyword("FALSE")) {
          node n;
          n.kind = node_kind::constant;
          n.position = t.position;
          if (keyword("NULL")) n.value.k = literal::kind::null;
          else {
            n.value.k = literal::kind::boolean;
            n.value.b = keyword("TRUE");
          }
          take();
          return n;
        }
        if ((keyword("DATE") || keyword("TIMESTAMP")) && peek(1).k == token::kind::string) return typed_literal();
        // These words start SQL constructs when an operand follows them; else they
        // are column names (Lance takes `select`, `date`, `order`... as names).
        const token& next = peek(1);
        const bool operand_follows = next.k == token::kind::name || next.k == token::kind::string ||
                                     next.k == token::kind::number || next.k == token::kind::quoted_name ||
                                     (next.k == token::kind::symbol && next.text == "(");
        if (operand_follows) {
          if (keyword("SELECT") || keyword("EXISTS")) unsupported_at("subqueries are not supported", t);
          if (keyword("CASE")) unsupported_at("CASE expressions are not supported", t);
          if (keyword("INTERVAL")) unsupported_at("INTERVAL literals are not supported", t);
          if (keyword("CAST") || keyword("TRY_CAST")) unsupported_at("casts are not supported", t);
        }
        if (reserved(t)) fail("expected a value or a column, found the keyword " + t.text);
        if (peek(1).k == token::kind::symbol && peek(1).text == "(") {
          if (list_function(t)) return list_has();
          unsupported_at("function calls are not supported ('" + t.text + "(...)')", t);
        }
        return column();
      }
      case token::kind::symbol:
        if (t.text == "(") {
          depth_guard g(*this);
          take();
          if (keyword("SELECT")) unsupported_at("subqueries are not supported", peek());
          if (symbol(")")) fail("expected an expression inside '(' ')'");
          node inner = or_expr();
          expect_symbol(")", "to close '('");
          return inner;
        }
        fail("expected a value or a column");
      case token::kind::other:
        if (t.text == "[") unsupported_at("array literals are not supported", t);
        if (t.text == "?" || t.text == "$" || t.text == ":") unsupported_at("parameters are not supported", t);
        fail("unexpected character");
      case token::kind::end: fail("the filter ends where a value or a column was expected");
    }
    fail("unexpected token");
  }

  // The list membership functions (DataFusion's names and aliases): 1 = one value,
  // 2 = any of a list, 3 = all of a list, 0 = none of them.
  static int list_function(const token& t) noexcept {
    for (const char* f : {"ARRAY_HAS", "ARRAY_CONTAINS", "LIST_HAS", "LIST_CONTAINS"})
      if (keyword_is(t, f)) return 1;
    for (const char* f : {"ARRAY_HAS_ANY", "LIST_HAS_ANY"})
      if (keyword_is(t, f)) return 2;
    for (const char* f : {"ARRAY_HAS_ALL", "LIST_HAS_ALL"})
      if (keyword_is(t, f)) return 3;
    return 0;
  }

  // array_has(list, value), array_has_any(list, [values]), array_has_all(list, [values]).
  node list_has() {
    depth_guard g(*this);
    const token& name = take();
    const int kind = list_function(name);
    take();  // (
    std::vector<node> args;
    args.push_back(additive());
    expect_symbol(",", "after the list in " + name.text + "(list, ...)");
    if (kind == 1) {
      args.push_back(list_value());
    } else {
      if (!(peek().k == token::kind::other && peek().text == "["))
        fail(name.text + " takes a list of values in brackets: " + name.text + "(column, [a, b])");
      take();
      while (!(peek().k == token::kind::other && peek().text == "]")) {
        args.push_back(list_value());
        if (eat_symbol(",")) continue;
        if (!(peek().k == token::kind::other && peek().text == "]")) fail("expected ',' or ']' in the list of values");
      }
      take();  // ]
    }
    expect_symbol(")", "to close " + name.text + "(...)");
    node n = make(node_kind::list_has, name.position, std::move(args));
    n.every = kind == 3;
    return n;
  }

  // A value of a list function: an expression, or arrow_cast(value, 'Type') as LanceDB's
  // users write to match the list's item type (the item type is what values take here).
  node list_value() {
    if (keyword("ARROW_CAST") && peek(1).k == token::kind::symbol && peek(1).text == "(") {
      take();
      take();
      node v = additive();
      expect_symbol(",", "after the value in arrow_cast(value, 'Type')");
      if (peek().k != token::kind::string) fail("arrow_cast takes the type as a string: arrow_cast(value, 'Int32')");
      take();
      expect_symbol(")", "to close arrow_cast(...)");
      return v;
    }
    return additive();
  }

  // name(.name)*: a column, or a field of a struct column.
  node column() {
    node n;
    n.kind = node_kind::column;
    n.position = peek().position;
    for (;;) {
      const token& t = peek();
      if (t.k == token::kind::quoted_name) {
        if (t.text.empty()) fail("a quoted name is empty");
        if (n.path.empty()) n.quoted = true;
        n.path.push_back(take().text);
      } else if (t.k == token::kind::name && !reserved(t)) {
        n.path.push_back(take().text);
      } else {
        fail("expected a field name after '.'");
      }
      if (!symbol(".")) break;
      take();
    }
    return n;
  }

  node number(const token& t) {
    node n;
    n.kind = node_kind::constant;
    n.position = t.position;
    const std::string& s = t.text;
    const bool integral = s.find_first_of(".eE") == std::string::npos;
    if (integral) {
      std::uint64_t u = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), u);
      if (ec == std::errc() && p == s.data() + s.size()) {
        if (u <= std::uint64_t(INT64_MAX)) {
          n.value.k = literal::kind::integer;
          n.value.i = std::int64_t(u);
        } else {
          n.value.k = literal::kind::unsigned_integer;
          n.value.u = u;
        }
        return n;
      }
    }
    // A fraction, an exponent or an integer beyond uint64: a double.
    errno = 0;
    char* end = nullptr;
    const double f = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) fail_at("malformed number", t);
    n.value.k = literal::kind::floating;
    n.value.f = f;
    return n;
  }

  node typed_literal() {
    const bool date = keyword("DATE");
    const token& kw = take();
    const token& str = take();
    node n;
    n.kind = node_kind::constant;
    n.position = kw.position;
    if (date) {
      auto d = parse_date(str.text);
      if (!d) fail_at("not a date (YYYY-MM-DD)", str);
      n.value.k = literal::kind::date;
      n.value.i = *d;
    } else {
      auto ts = parse_timestamp(str.text);
      if (!ts) fail_at("not a timestamp (YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM])", str);
      n.value.k = literal::kind::timestamp;
      n.value.i = *ts;
    }
    return n;
  }

  template <class... N>
  static std::vector<node> vec(N&&... n) {
    std::vector<node> v;
    v.reserve(sizeof...(N));
    (v.push_back(std::forward<N>(n)), ...);
    return v;
  }

  std::vector<token> toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace detail

// The expression tree of a filter (invalid_filter / unsupported_filter on bad input).
inline node parse(std::string_view text) { return detail::parser(text).run(); }

}  // namespace lancet::expr
