// The tree of a parsed filter expression (parse.hpp builds it, bind.hpp types it
// against a schema): SQL's boolean and comparison operators, arithmetic, IN, BETWEEN,
// IS [NOT] NULL / TRUE / FALSE, LIKE and list membership (array_has_any...) over
// columns (nested fields by path) and constants. Every node keeps the byte offset it starts at, for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lancet::expr {

// A constant as written: the types SQL literals have before they meet a column.
struct literal {
  enum class kind : std::uint8_t {
    null,
    boolean,
    integer,   // fits int64
    unsigned_integer,  // above INT64_MAX, fits uint64
    floating,  // a number with a fraction or exponent, or beyond uint64
    string,
    date,       // DATE '2024-01-31': days since 1970-01-01 in `i`
    timestamp,  // TIMESTAMP '2024-01-31 10:00:00': nanoseconds since the epoch in `i`
  };
  kind k = kind::null;
  bool b = false;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  std::string s;
};

enum class node_kind : std::uint8_t {
  column,      // path
  constant,    // value
  not_,        // NOT a
  negate,      // -a
  and_,        // args[0] AND args[1] AND ... (two or more)
  or_,         // args[0] OR args[1] OR ... (two or more)
  compare,     // a cmp b
  arithmetic,  // a arith b
  is_null,     // a IS [NOT] NULL (negated: NOT NULL)
  is_true,     // a IS [NOT] TRUE
  is_false,    // a IS [NOT] FALSE
  in_list,     // args[0] [NOT] IN (args[1..])
  between,     // args[0] [NOT] BETWEEN args[1] AND args[2]
  like,        // args[0] [NOT] LIKE args[1] [ESCAPE 'c']
  list_has,    // array_has_any(args[0], [args[1..]]) (`every`: array_has_all; array_has: one value)
};

enum class compare_op : std::uint8_t { eq, ne, lt, le, gt, ge };
enum class arith_op : std::uint8_t { add, sub, mul, div, mod };

struct node {
  node_kind kind = node_kind::constant;
  std::size_t position = 0;         // byte offset in the filter text
  std::vector<std::string> path{};  // column: the field path, outermost first
  bool quoted = false;              // column: its first name was `quoted` (matched exactly)
  literal value{};                  // constant
  compare_op cmp = compare_op::eq;
  arith_op arith = arith_op::add;
  bool negated = false;  // IS NOT NULL / TRUE / FALSE, NOT IN, NOT BETWEEN, NOT LIKE
  bool has_escape = false;  // LIKE ... ESCAPE 'c'
  bool every = false;       // list_has: every value (array_has_all), else any
  char escape = '\\';
  std::uint32_t depth = 1;  // levels of the tree below and including this node
  std::vector<node> args{};
};

inline const char* compare_op_name(compare_op o) noexcept {
  switch (o) {
    case compare_op::eq: return "=";
    case compare_op::ne: return "!=";
    case compare_op::lt: return "<";
    case compare_op::le: return "<=";
    case compare_op::gt: return ">";
    case compare_op::ge: return ">=";
  }
  return "?";
}

inline const char* arith_op_name(arith_op o) noexcept {
  switch (o) {
    case arith_op::add: return "+";
    case arith_op::sub: return "-";
    case arith_op::mul: return "*";
    case arith_op::div: return "/";
    case arith_op::mod: return "%";
  }
  return "?";
}

// A column path as SQL writes it: a.b, with backticks where a name needs them.
inline std::string path_to_string(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& p : path) {
    if (!out.empty()) out += '.';
    bool plain = !p.empty() && !(p[0] >= '0' && p[0] <= '9');
    for (char c : p) plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    if (plain) {
      out += p;
    } else {
      out += '`';
      for (char c : p) out += c == '`' ? std::string("``") : std::string(1, c);
      out += '`';
    }
  }
  return out;
}

}  // namespace lancet::expr
