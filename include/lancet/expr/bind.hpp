// Typing a parsed filter against an Arrow schema (bind), as Lance 12 types it:
//
// 1. Lance's literal coercion: in the comparisons, arithmetic, BETWEEN and IN reached
//    from the root through AND / OR only, a constant beside a column (or a struct
//    member; IN: a top-level column) takes the column's type when it converts
//    exactly (integers that fit, integers to floats, floats to float32, strings to
//    strings); one that does not is an error, as there (`int8_col > 1000`,
//    `int_col = 2.5`, `date_col > '2024-01-01'`).
// 2. DataFusion's coercion for the rest: numbers meet in the narrowest type holding
//    both (float64 > float32 > float16 > integers; uint64 beside a signed integer:
//    an exact 128-bit integer), arithmetic wraps at that width, a string constant
//    beside a date or timestamp is read as one, dates and timestamps compare at the
//    finer unit.
//
// Column names match exactly, else the first column whose name matches ignoring case
// (struct members match exactly). The bound tree is what evaluate.hpp runs.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/decimal.hpp"
#include "lancet/arrow/half.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/expr/ast.hpp"
#include "lancet/expr/error.hpp"
#include "lancet/expr/temporal.hpp"

namespace lancet::expr {

// Units of temporal values (dates count days).
enum class tick : std::uint8_t { day, second, milli, micro, nano };

// Nanoseconds per tick.
constexpr std::int64_t tick_ns(tick t) noexcept {
  switch (t) {
    case tick::day: return 86400LL * 1000000000LL;
    case tick::second: return 1000000000LL;
    case tick::milli: return 1000000LL;
    case tick::micro: return 1000LL;
    case tick::nano: return 1LL;
  }
  return 1;
}

// The SQL type of a value, as far as evaluation needs it.
struct sql_type {
  enum class kind : std::uint8_t {
    null,      // the NULL constant
    boolean,
    integer,   // bits 8..64, is_signed
    floating,  // bits 16, 32, 64
    wide,      // an exact 128-bit integer (DataFusion's decimal(20, 0) of uint64 beside a signed integer)
    bytes,     // utf8, large_utf8, binary, large_binary, fixed_size_binary
    temporal,  // date32 / date64 / timestamp: int64 ticks of `unit`
    opaque,    // a column of another type: only IS [NOT] NULL looks at it
  };
  kind k = kind::null;
  std::uint8_t bits = 0;
  bool is_signed = true;
  tick unit = tick::day;

  // Where values live while evaluated (evaluate.hpp): int64 holds every integer but
  // uint64, which has its own vector.
  bool in_u64() const noexcept { return k == kind::integer && bits == 64 && !is_signed; }
  friend bool operator==(const sql_type&, const sql_type&) = default;
};

inline sql_type int_type(std::uint8_t bits, bool is_signed) { return {sql_type::kind::integer, bits, is_signed, tick::day}; }
inline sql_type float_type(std::uint8_t bits) { return {sql_type::kind::floating, bits, true, tick::day}; }
inline sql_type simple_type(sql_type::kind k) { return {k, 0, true, tick::day}; }

// A column (or a member of a struct column) the filter reads.
struct column_ref {
  std::size_t input = 0;               // index into bound_filter::columns
  std::vector<std::size_t> members{};  // struct member indexes, outermost first
  arrow::type_ptr type{};              // the referenced field's Arrow type
  std::string name{};                  // as written, for messages
};

// A LIKE pattern, split at its wildcards.
struct like_pattern {
  struct piece {
    enum class kind : std::uint8_t { text, one, any } k;  // literal bytes, '_' (one character), '%'
    std::string text{};
  };
  std::vector<piece> pieces;
};

struct bound_node {
  node_kind kind = node_kind::constant;
  sql_type type{};  // of the value this node computes
  std::size_t position = 0;
  column_ref column{};
  // A constant, in its type's representation (integers in i, or u when uint64;
  // floats in f; wide in w; bytes in s; temporal in i).
  bool b = false;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  arrow::int128_t w = 0;
  std::string s{};
  bool is_null_constant = false;
  bool from_literal = false;  // a SQL literal (DATE '...' / TIMESTAMP '...' are casts)
  // Operators.
  compare_op cmp = compare_op::eq;
  arith_op arith = arith_op::add;
  bool negated = false;
  bool every = false;      // list_has: args[1..] are each one value the list must hold
  sql_type domain{};       // compare / in_list: the type both sides meet in
  bool zero_equal = false; // float comparison with a zero constant: -0 equals +0 (Lance)
  like_pattern pattern{};
  // in_list over constants: the distinct constants in the domain's representation
  // (integers and temporal in set_i, uint64 in set_u, wide in set_w, floats in
  // set_f by total order, bytes in set_s), and whether the list holds NULL.
  std::vector<std::int64_t> set_i{};
  std::vector<std::uint64_t> set_u{};
  std::vector<arrow::int128_t> set_w{};
  std::vector<double> set_f{};
  std::vector<std::string> set_s{};
  bool set_has_null = false;
  std::vector<bound_node> args{};
};

// A filter typed against a schema: the top-level columns it reads (in the order the
// evaluator wants them) and its boolean tree.
struct bound_filter {
  std::vector<std::string> columns;
  bound_node root;
};

namespace detail {

inline std::string type_name(const sql_type& t) {
  switch (t.k) {
    case sql_type::kind::null: return "NULL";
    case sql_type::kind::boolean: return "boolean";
    case sql_type::kind::integer: return std::string(t.is_signed ? "int" : "uint") + std::to_string(t.bits);
    case sql_type::kind::floating: return "float" + std::to_string(t.bits);
    case sql_type::kind::wide: return "decimal(20, 0)";
    case sql_type::kind::bytes: return "string";
    case sql_type::kind::temporal: return t.unit == tick::day ? "date" : "timestamp";
    case sql_type::kind::opaque: return "a value of another type";
  }
  return "?";
}

inline bool numeric(const sql_type& t) noexcept {
  return t.k == sql_type::kind::integer || t.k == sql_type::kind::floating || t.k == sql_type::kind::wide;
}

inline tick tick_of(arrow::time_unit u) noexcept {
  switch (u) {
    case arrow::time_unit::second: return tick::second;
    case arrow::time_unit::milli: return tick::milli;
    case arrow::time_unit::micro: return tick::micro;
    case arrow::time_unit::nano: return tick::nano;
  }
  return tick::nano;
}

// The SQL type a column of Arrow type t is read as.
inline sql_type column_type(const arrow::data_type& t) noexcept {
  using arrow::type_id;
  switch (t.id) {
    case type_id::null: return simple_type(sql_type::kind::null);
    case type_id::boolean: return simple_type(sql_type::kind::boolean);
    case type_id::int8: return int_type(8, true);
    case type_id::int16: return int_type(16, true);
    case type_id::int32: return int_type(32, true);
    case type_id::int64: return int_type(64, true);
    case type_id::uint8: return int_type(8, false);
    case type_id::uint16: return int_type(16, false);
    case type_id::uint32: return int_type(32, false);
    case type_id::uint64: return int_type(64, false);
    case type_id::float16: return float_type(16);
    case type_id::float32: return float_type(32);
    case type_id::float64: return float_type(64);
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary:
    case type_id::fixed_size_binary: return simple_type(sql_type::kind::bytes);
    case type_id::date32: return {sql_type::kind::temporal, 0, true, tick::day};
    case type_id::date64: return {sql_type::kind::temporal, 0, true, tick::milli};
    case type_id::timestamp: return {sql_type::kind::temporal, 0, true, tick_of(t.unit)};
    case type_id::dictionary:
      if (!t.children.empty() && t.children[0].type) {
        const auto v = column_type(*t.children[0].type);
        if (v.k != sql_type::kind::opaque && v.k != sql_type::kind::null) return v;
      }
      return simple_type(sql_type::kind::opaque);
    default: return simple_type(sql_type::kind::opaque);
  }
}

// DataFusion's common type of two numbers (arithmetic and comparisons).
inline sql_type numeric_common(const sql_type& a, const sql_type& b) noexcept {
  using K = sql_type::kind;
  if (a.k == K::floating || b.k == K::floating) {
    std::uint8_t bits = 0;
    for (const auto* t : {&a, &b})
      if (t->k == K::floating) bits = std::max(bits, t->bits);
    if (a.k == K::wide || b.k == K::wide) bits = 64;
    return float_type(bits);
  }
  if (a.k == K::wide || b.k == K::wide) return simple_type(K::wide);
  if (a.is_signed == b.is_signed) return int_type(std::max(a.bits, b.bits), a.is_signed);
  const sql_type& s = a.is_signed ? a : b;
  const sql_type& u = a.is_signed ? b : a;
  if (u.bits == 64) return simple_type(K::wide);
  if (u.bits < s.bits) return s;
  return int_type(std::uint8_t(u.bits * 2), true);
}

inline like_pattern compile_like(const std::string& p, std::size_t position) {
  like_pattern out;
  std::string text;
  const auto flush = [&] {
    if (!text.empty()) out.pieces.push_back({like_pattern::piece::kind::text, std::move(text)});
    text.clear();
  };
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      text += p[++i];
    } else if (c == '%') {
      flush();
      if (out.pieces.empty() || out.pieces.back().k != like_pattern::piece::kind::any)
        out.pieces.push_back({like_pattern::piece::kind::any, {}});
    } else if (c == '_') {
      flush();
      out.pieces.push_back({like_pattern::piece::kind::one, {}});
    } else {
      text += c;
    }
  }
  flush();
  (void)position;
  return out;
}

// Total order on doubles (NaN above +inf, -NaN below -inf, -0 below +0), as Arrow's
// comparison kernels order floats.
inline std::int64_t float_key(double v) noexcept {
  std::int64_t k;
  __builtin_memcpy(&k, &v, sizeof k);
  return k ^ static_cast<std::int64_t>(static_cast<std::uint64_t>(k >> 63) >> 1);
}

// x rounded to a float of `bits` bits (as a double).
inline double round_float(double x, std::uint8_t bits) noexcept {
  if (bits == 32) return static_cast<double>(static_cast<float>(x));
  if (bits == 16) return static_cast<double>(arrow::half_to_float(arrow::float_to_half(static_cast<float>(x))));
  return x;
}

class binder {
 public:
  explicit binder(const arrow::schema& s) : schema_(s) {}

  // `boolean`: the root must be a boolean (a filter); else any value (an expression).
  bound_filter run(const node& root, bool boolean = true) {
    bound_filter out;
    out.root = bind(root, true);
    if (boolean && out.root.type.k != sql_type::kind::boolean)
      throw invalid_filter("the filter must be a boolean expression; this one is " +
                               (out.root.kind == node_kind::column ? "column '" + out.root.column.name + "' (" +
                                                                         type_name(out.root.type) + ")"
                                                                   : type_name(out.root.type)),
                           root.position, "");
    out.columns = std::move(inputs_);
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& message, std::size_t position, const std::string& token) {
    throw invalid_filter(message, position, token);
  }

  std::string all_columns() const {
    std::string s;
    for (const auto& f : schema_.fields) s += (s.empty() ? "" : ", ") + f.name;
    return s.empty() ? std::string("none") : s;
  }

  static bool same_ignoring_case(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      char x = a[i], y = b[i];
      if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
      if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
      if (x != y) return false;
    }
    return true;
  }

  bound_node bind_column(const node& n) {
    const std::string written = path_to_string(n.path);
    const arrow::field* top = nullptr;
    for (const auto& f : schema_.fields)
      if (f.name == n.path[0]) {
        top = &f;
        break;
      }
    if (!top && !n.quoted)  // unquoted names also match ignoring case (the first such column)
      for (const auto& f : schema_.fields)
        if (same_ignoring_case(f.name, n.path[0])) {
          top = &f;
          break;
        }
    if (!top) fail("no column '" + n.path[0] + "' (columns: " + all_columns() + ")", n.position, written);
    bound_node b;
    b.kind = node_kind::column;
    b.position = n.position;
    std::size_t input = 0;
    while (input < inputs_.size() && inputs_[input] != top->name) ++input;
    if (input == inputs_.size()) inputs_.push_back(top->name);
    b.column.input = input;
    b.column.name = written;
    arrow::type_ptr t = top->type;
    for (std::size_t k = 1; k < n.path.size(); ++k) {
      const std::string parent = path_to_string({n.path.begin(), n.path.begin() + std::ptrdiff_t(k)});
      if (t->id != arrow::type_id::struct_)
        fail("'" + parent + "' is " + arrow::to_string(*t) + ", not a struct with a field '" + n.path[k] + "'",
             n.position, written);
      std::size_t m = 0;
      while (m < t->children.size() && t->children[m].name != n.path[k]) ++m;
      if (m == t->children.size()) {
        std::string have;
        for (const auto& c : t->children) have += (have.empty() ? "" : ", ") + c.name;
        fail("struct '" + parent + "' has no field '" + n.path[k] + "' (fields: " + have + ")", n.position, written);
      }
      b.column.members.push_back(m);
      t = t->children[m].type;
    }
    b.column.type = t;
    b.type = column_type(*t);
    return b;
  }

  static bound_node bind_constant(const node& n) {
    bound_node b;
    b.kind = node_kind::constant;
    b.position = n.position;
    const auto& v = n.value;
    switch (v.k) {
      case literal::kind::null:
        b.type = simple_type(sql_type::kind::null);
        b.is_null_constant = true;
        break;
      case literal::kind::boolean: b.type = simple_type(sql_type::kind::boolean); b.b = v.b; break;
      case literal::kind::integer: b.type = int_type(64, true); b.i = v.i; break;
      case literal::kind::unsigned_integer: b.type = int_type(64, false); b.u = v.u; break;
      case literal::kind::floating: b.type = float_type(64); b.f = v.f; break;
      case literal::kind::string: b.type = simple_type(sql_type::kind::bytes); b.s = v.s; break;
      case literal::kind::date: b.type = {sql_type::kind::temporal, 0, true, tick::day}; b.i = v.i; break;
      case literal::kind::timestamp:
        // TIMESTAMP '...' is a microsecond timestamp (finer digits are dropped).
        b.type = {sql_type::kind::temporal, 0, true, tick::micro};
        b.i = v.i / 1000;
        break;
    }
    return b;
  }

  static std::string describe(const bound_node& b) {
    if (b.kind == node_kind::column) return b.column.name;
    if (b.kind == node_kind::constant) {
      switch (b.type.k) {
        case sql_type::kind::null: return "NULL";
        case sql_type::kind::boolean: return b.b ? "TRUE" : "FALSE";
        case sql_type::kind::integer: return b.type.in_u64() ? std::to_string(b.u) : std::to_string(b.i);
        case sql_type::kind::floating: {
          char buf[32];
          return std::string(buf, std::to_chars(buf, buf + sizeof buf, b.f).ptr);
        }
        case sql_type::kind::bytes: return "'" + b.s + "'";
        default: break;
      }
    }
    return type_name(b.type);
  }

  // ---- Lance's literal coercion ----

  static bool is_field(const bound_node& b) noexcept { return b.kind == node_kind::column; }
  static bool is_literal(const bound_node& b) noexcept {
    // DATE '...' and TIMESTAMP '...' are casts, not literals, to Lance.
    return b.kind == node_kind::constant && b.from_literal;
  }

  // The constant c as a value of the column type `to` (Lance's safe_coerce_scalar), or
  // an error naming both.
  static void coerce_literal(bound_node& c, const bound_node& col) {
    if (c.is_null_constant) return;
    const arrow::data_type& to = *col.column.type;
    const auto fail_coerce = [&]() {
      fail("the constant " + describe(c) + " does not convert to the type of column '" + col.column.name + "' (" +
               arrow::to_string(to) + ")",
           c.position, describe(c));
    };
    const sql_type target = column_type(to);
    using K = sql_type::kind;
    if (to.id == arrow::type_id::dictionary) fail_coerce();
    if (c.type.k == K::integer) {
      // An integer literal: int64, or uint64 above INT64_MAX.
      const arrow::int128_t v = c.type.in_u64() ? static_cast<arrow::int128_t>(c.u) : static_cast<arrow::int128_t>(c.i);
      if (target.k == K::integer) {
        arrow::int128_t lo, hi;
        if (target.is_signed) {
          hi = (static_cast<arrow::int128_t>(1) << (target.bits - 1)) - 1;
          lo = -hi - 1;
        } else {
          lo = 0;
          hi = (static_cast<arrow::int128_t>(1) << target.bits) - 1;
        }
        if (v < lo || v > hi) fail_coerce();
        c.type = target;
        if (target.in_u64()) c.u = static_cast<std::uint64_t>(v);
        else c.i = static_cast<std::int64_t>(v);
        return;
      }
      if (target.k == K::floating && target.bits >= 32) {
        // Rust's `as`: one rounding, straight from the integer.
        if (target.bits == 32) c.f = c.type.in_u64() ? double(float(c.u)) : double(float(c.i));
        else c.f = c.type.in_u64() ? double(c.u) : double(c.i);
        c.type = target;
        return;
      }
      fail_coerce();
    }
    if (c.type.k == K::floating) {
      if (target.k == K::floating && target.bits >= 32) {
        c.f = round_float(c.f, target.bits);
        c.type = target;
        return;
      }
      fail_coerce();
    }
    if (c.type.k == K::bytes) {
      if (to.id == arrow::type_id::utf8 || to.id == arrow::type_id::large_utf8) return;
      fail_coerce();
    }
    if (c.type.k == K::boolean) {
      if (to.id == arrow::type_id::boolean) return;
      fail_coerce();
    }
  }

  // Lance's coerce_expr: the literals of an arithmetic tree beside column `col`.
  static void coerce_tree(bound_node& e, const bound_node& col) {
    if (e.kind == node_kind::arithmetic) {
      for (auto& a : e.args) coerce_tree(a, col);
      retype_arithmetic(e);
    } else if (is_literal(e)) {
      coerce_literal(e, col);
    }
  }

  // ---- DataFusion's typing ----

  // The arithmetic's result type from its operands' (after a coercion changed them).
  static void retype_arithmetic(bound_node& b) {
    const auto& l = b.args[0].type;
    const auto& r = b.args[1].type;
    using K = sql_type::kind;
    if (l.k == K::null || r.k == K::null) {
      b.type = simple_type(K::null);
      return;
    }
    for (const auto* x : {&b.args[0], &b.args[1]})
      if (!numeric(x->type))
        fail(std::string("arithmetic (") + arith_op_name(b.arith) + ") needs numbers, not " + type_name(x->type) +
                 " (" + describe(*x) + ")",
             x->position, describe(*x));
    b.type = numeric_common(l, r);
    if (b.type.k == K::wide && (b.arith == arith_op::div || b.arith == arith_op::mod))
      throw unsupported_filter("dividing a uint64 value by a signed one (or the reverse) is not supported", b.position,
                               arith_op_name(b.arith));
  }

  // A string constant met by a date or timestamp: read as one (DataFusion casts it).
  static void string_to_temporal(bound_node& c) {
    if (auto d = parse_date(c.s)) {
      c.i = *d;
      c.type = {sql_type::kind::temporal, 0, true, tick::day};
    } else if (auto ts = parse_timestamp(c.s)) {
      c.i = *ts;
      c.type = {sql_type::kind::temporal, 0, true, tick::nano};
    } else {
      fail("'" + c.s + "' is not a date or a timestamp (YYYY-MM-DD[ HH:MM:SS[.fraction]])", c.position, "'" + c.s + "'");
    }
  }

  // The type the two operands of a comparison meet in (out.domain); constants beside
  // dates are converted. A NULL operand: domain null (every row NULL).
  static void unify(bound_node& a, bound_node& b, const char* op, std::size_t at, bound_node& out) {
    using K = sql_type::kind;
    out.domain = simple_type(K::null);
    if (a.type.k == K::null || b.type.k == K::null) return;
    for (const auto* x : {&a, &b})
      if (x->type.k == K::opaque)
        throw unsupported_filter("comparing column '" + x->column.name + "' (" + arrow::to_string(*x->column.type) +
                                     ") is not supported; only IS [NOT] NULL applies to it",
                                 x->position, x->column.name);
    if (a.type.k == K::temporal && b.type.k == K::bytes && b.kind == node_kind::constant) string_to_temporal(b);
    if (b.type.k == K::temporal && a.type.k == K::bytes && a.kind == node_kind::constant) string_to_temporal(a);
    if (a.type.k == K::temporal && b.type.k == K::temporal) {
      out.domain = {K::temporal, 0, true, tick_ns(a.type.unit) < tick_ns(b.type.unit) ? a.type.unit : b.type.unit};
      return;
    }
    if (numeric(a.type) && numeric(b.type)) {
      out.domain = numeric_common(a.type, b.type);
      if (out.domain.k == K::floating)
        for (const auto* x : {&a, &b})
          if (x->kind == node_kind::constant && x->type.k != K::wide &&
              (x->type.k == K::floating ? x->f == 0.0 : x->type.in_u64() ? x->u == 0 : x->i == 0))
            out.zero_equal = true;
      return;
    }
    if (a.type.k == b.type.k && (a.type.k == K::boolean || a.type.k == K::bytes)) {
      out.domain = a.type;
      return;
    }
    fail(std::string("cannot compare ") + type_name(a.type) + " with " + type_name(b.type) + " (" + describe(a) + " " +
             op + " " + describe(b) + ")",
         at, op);
  }

  // Lance's coercion of a comparison's (or arithmetic's) constant operand.
  static void lance_coerce_pair(bound_node& l, bound_node& r) {
    if (is_field(l)) {
      if (is_literal(r)) coerce_literal(r, l);
      else if (r.kind == node_kind::arithmetic) coerce_tree(r, l);
    } else if (is_field(r) && is_literal(l)) {
      coerce_literal(l, r);
    }
  }

  bound_node bind(const node& n, bool lance) {
    switch (n.kind) {
      case node_kind::column: return bind_column(n);
      case node_kind::constant: {
        bound_node b = bind_constant(n);
        b.from_literal = n.value.k != literal::kind::date && n.value.k != literal::kind::timestamp;
        return b;
      }
      case node_kind::not_: {
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        b.args.push_back(bind(n.args[0], false));
        expect_boolean(b.args[0], "NOT");
        return b;
      }
      case node_kind::and_:
      case node_kind::or_: {
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        for (const auto& a : n.args) {
          b.args.push_back(bind(a, lance));
          expect_boolean(b.args.back(), n.kind == node_kind::and_ ? "AND" : "OR");
        }
        return b;
      }
      case node_kind::negate: {
        bound_node a = bind(n.args[0], false);
        if (a.type.k == sql_type::kind::null) return a;
        if (!(a.type.k == sql_type::kind::floating || (a.type.k == sql_type::kind::integer && a.type.is_signed)))
          fail("unary minus needs a signed number, not " + type_name(a.type), n.position, describe(a));
        bound_node b = shell(n, a.type);
        b.args.push_back(std::move(a));
        return b;
      }
      case node_kind::arithmetic: {
        bound_node b = shell(n, simple_type(sql_type::kind::null));
        b.args.push_back(bind(n.args[0], false));
        b.args.push_back(bind(n.args[1], false));
        if (lance) lance_coerce_pair(b.args[0], b.args[1]);
        retype_arithmetic(b);
        return b;
      }
      case node_kind::compare: {
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        b.args.push_back(bind(n.args[0], false));
        b.args.push_back(bind(n.args[1], false));
        if (lance) lance_coerce_pair(b.args[0], b.args[1]);
        unify(b.args[0], b.args[1], compare_op_name(n.cmp), n.position, b);
        return b;
      }
      case node_kind::is_null: {
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        b.args.push_back(bind(n.args[0], false));
        return b;
      }
      case node_kind::is_true:
      case node_kind::is_false: {
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        b.args.push_back(bind(n.args[0], false));
        expect_boolean(b.args[0], n.kind == node_kind::is_true ? "IS TRUE" : "IS FALSE");
        return b;
      }
      case node_kind::between: return bind_between(n, lance);
      case node_kind::in_list: return bind_in(n, lance);
      case node_kind::list_has: return bind_list_has(n);
      case node_kind::like: {
        bound_node v = bind(n.args[0], false);
        const node& p = n.args[1];
        if (v.type.k != sql_type::kind::bytes && v.type.k != sql_type::kind::null)
          fail("LIKE needs a string, not " + type_name(v.type), v.position, describe(v));
        if (p.kind != node_kind::constant || (p.value.k != literal::kind::string && p.value.k != literal::kind::null))
          throw unsupported_filter("LIKE takes a constant pattern ('...')", p.position, "");
        bound_node b = shell(n, simple_type(sql_type::kind::boolean));
        if (p.value.k == literal::kind::null) v = bind_constant(p);  // x LIKE NULL: NULL
        else b.pattern = compile_like(p.value.s, p.position);
        b.args.push_back(std::move(v));
        return b;
      }
    }
    fail("unknown expression", n.position, "");
  }

  void expect_boolean(const bound_node& b, const char* what) const {
    if (b.type.k != sql_type::kind::boolean && b.type.k != sql_type::kind::null)
      fail(std::string(what) + " needs a boolean operand, not " + type_name(b.type) + " (" + describe(b) + ")",
           b.position, describe(b));
  }

  // x BETWEEN lo AND hi: x >= lo AND x <= hi (NOT BETWEEN: the negation of that).
  bound_node bind_between(const node& n, bool lance) {
    bound_node x = bind(n.args[0], false);
    bound_node lo = bind(n.args[1], false), hi = bind(n.args[2], false);
    if (lance && is_field(x)) {
      coerce_tree(lo, x);
      coerce_tree(hi, x);
    }
    bound_node all = shell(n, simple_type(sql_type::kind::boolean));
    all.kind = node_kind::and_;
    bound_node* bounds[] = {&lo, &hi};
    for (int k = 0; k < 2; ++k) {
      bound_node c = shell(n, simple_type(sql_type::kind::boolean));
      c.kind = node_kind::compare;
      c.cmp = k == 0 ? compare_op::ge : compare_op::le;
      c.args.push_back(x);
      c.args.push_back(std::move(*bounds[k]));
      unify(c.args[0], c.args[1], "BETWEEN", n.position, c);
      all.args.push_back(std::move(c));
    }
    if (!n.negated) return all;
    bound_node neg = shell(n, simple_type(sql_type::kind::boolean));
    neg.kind = node_kind::not_;
    neg.args.push_back(std::move(all));
    return neg;
  }

  // x [NOT] IN (...): a set lookup when the list holds constants only, else x = a OR x = b ...
  bound_node bind_in(const node& n, bool lance) {
    bound_node x = bind(n.args[0], false);
    std::vector<bound_node> items;
    bool constants = true;
    for (std::size_t k = 1; k < n.args.size(); ++k) {
      items.push_back(bind(n.args[k], false));
      if (lance && is_field(x) && x.column.members.empty()) coerce_tree(items.back(), x);
      constants = constants && items.back().kind == node_kind::constant;
    }
    if (constants && x.kind != node_kind::constant) return constant_set(n, std::move(x), items);
    // General form: x = a OR x = b OR ...
    bound_node out = shell(n, simple_type(sql_type::kind::boolean));
    bound_node any = shell(n, simple_type(sql_type::kind::boolean));
    any.kind = node_kind::or_;
    for (auto& it : items) {
      bound_node c = shell(n, simple_type(sql_type::kind::boolean));
      c.kind = node_kind::compare;
      c.cmp = compare_op::eq;
      c.args.push_back(x);
      c.args.push_back(std::move(it));
      unify(c.args[0], c.args[1], "IN", n.position, c);
      any.args.push_back(std::move(c));
    }
    if (any.args.size() == 1) any = std::move(any.args[0]);
    if (!n.negated) return any;
    out.kind = node_kind::not_;
    out.args.push_back(std::move(any));
    return out;
  }

  // x [NOT] IN (constants) as one node: the constants' set in the domain x and they meet in.
  bound_node constant_set(const node& n, bound_node x, std::vector<bound_node>& items) {
    bound_node out = shell(n, simple_type(sql_type::kind::boolean));
    {
      out.kind = node_kind::in_list;
      out.negated = n.kind == node_kind::in_list && n.negated;
      // The list's domain: what x and every constant meet in.
      sql_type domain = simple_type(sql_type::kind::null);
      for (auto& it : items) {
        bound_node probe = shell(n, simple_type(sql_type::kind::boolean));
        bound_node xx = x;
        unify(xx, it, "IN", it.position, probe);
        out.zero_equal = out.zero_equal || probe.zero_equal;
        if (probe.domain.k == sql_type::kind::null) continue;
        if (domain.k == sql_type::kind::null) domain = probe.domain;
        else if (numeric(domain) && numeric(probe.domain)) domain = numeric_common(domain, probe.domain);
        else if (domain.k == sql_type::kind::temporal && probe.domain.k == sql_type::kind::temporal)
          domain.unit = tick_ns(probe.domain.unit) < tick_ns(domain.unit) ? probe.domain.unit : domain.unit;
        else if (!(domain == probe.domain))
          fail("the values of an IN list have different types", it.position, describe(it));
      }
      out.domain = domain;
      for (auto& it : items) {
        if (it.type.k == sql_type::kind::null) {
          out.set_has_null = true;
          continue;
        }
        if (it.type.k == sql_type::kind::bytes && domain.k == sql_type::kind::temporal) string_to_temporal(it);
        add_to_set(out, it);
      }
      sort_unique(out.set_i);
      sort_unique(out.set_u);
      sort_unique(out.set_w);
      sort_unique(out.set_s);
      std::sort(out.set_f.begin(), out.set_f.end(), [](double a, double b) { return float_key(a) < float_key(b); });
      out.set_f.erase(std::unique(out.set_f.begin(), out.set_f.end(),
                                  [](double a, double b) { return float_key(a) == float_key(b); }),
                      out.set_f.end());
      out.args.push_back(std::move(x));
      return out;
    }
  }

  // array_has_any(list, [values]) / array_has_all / array_has: the list column, then
  // one IN set over its items (any), or one per value (all). Values take the item type.
  bound_node bind_list_has(const node& n) {
    bound_node list = bind(n.args[0], false);
    if (list.kind != node_kind::column)
      throw unsupported_filter("list functions take a list column first, not " + describe(list), list.position, describe(list));
    const auto& lt = *list.column.type;
    if (lt.id != arrow::type_id::list && lt.id != arrow::type_id::large_list)
      fail("'" + list.column.name + "' is " + arrow::to_string(lt) + ", not a list", list.position, list.column.name);
    bound_node item = list;
    item.column.type = lt.children.at(0).type;
    item.type = column_type(*item.column.type);
    if (item.type.k == sql_type::kind::opaque || item.column.type->id == arrow::type_id::dictionary)
      throw unsupported_filter("the items of '" + list.column.name + "' are " + arrow::to_string(*item.column.type) +
                                   ", which list functions do not compare",
                               list.position, list.column.name);
    std::vector<bound_node> values;
    for (std::size_t k = 1; k < n.args.size(); ++k) {
      values.push_back(bind(n.args[k], false));
      if (values.back().kind != node_kind::constant)
        throw unsupported_filter("list functions take constant values, not " + describe(values.back()),
                                 values.back().position, describe(values.back()));
      coerce_tree(values.back(), item);
    }
    bound_node out = shell(n, simple_type(sql_type::kind::boolean));
    out.every = n.every;
    out.args.push_back(list);
    if (!n.every) {
      out.args.push_back(constant_set(n, item, values));
      return out;
    }
    for (auto& v : values) {
      std::vector<bound_node> one{std::move(v)};
      out.args.push_back(constant_set(n, item, one));
    }
    return out;
  }

  template <class T>
  static void sort_unique(std::vector<T>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // A constant of an IN list in the list's domain. Constants no value of the domain
  // can equal (a fraction beside integers, a timestamp between two of the domain's
  // ticks) are left out: they match nothing.
  static void add_to_set(bound_node& out, const bound_node& c) {
    using K = sql_type::kind;
    const auto as_wide = [](const bound_node& v) -> arrow::int128_t {
      if (v.type.k == K::wide) return v.w;
      return v.type.in_u64() ? static_cast<arrow::int128_t>(v.u) : static_cast<arrow::int128_t>(v.i);
    };
    switch (out.domain.k) {
      case K::integer: {
        const arrow::int128_t v = as_wide(c);
        if (out.domain.in_u64()) {
          if (v >= 0 && v <= static_cast<arrow::int128_t>(UINT64_MAX)) out.set_u.push_back(static_cast<std::uint64_t>(v));
        } else if (v >= INT64_MIN && v <= INT64_MAX) {
          out.set_i.push_back(static_cast<std::int64_t>(v));
        }
        break;
      }
      case K::wide: out.set_w.push_back(as_wide(c)); break;
      case K::floating: {
        double v = c.type.k == K::floating ? c.f : c.type.k == K::wide ? static_cast<double>(c.w)
                                             : c.type.in_u64()         ? static_cast<double>(c.u)
                                                                       : static_cast<double>(c.i);
        v = round_float(v, out.domain.bits);
        if (v == 0.0 && out.zero_equal) {
          out.set_f.push_back(0.0);
          out.set_f.push_back(-0.0);
        } else {
          out.set_f.push_back(v);
        }
        break;
      }
      case K::bytes: out.set_s.push_back(c.s); break;
      case K::boolean: out.set_i.push_back(c.b ? 1 : 0); break;
      case K::temporal: {
        const std::int64_t from = tick_ns(c.type.unit), to = tick_ns(out.domain.unit);
        const arrow::int128_t v = static_cast<arrow::int128_t>(c.i) * from;
        if (v % to == 0) {
          const arrow::int128_t t = v / to;
          if (t >= INT64_MIN && t <= INT64_MAX) out.set_i.push_back(static_cast<std::int64_t>(t));
        }
        break;
      }
      default: break;
    }
  }

  static bound_node shell(const node& n, sql_type t) {
    bound_node b;
    b.kind = n.kind;
    b.position = n.position;
    b.type = t;
    b.cmp = n.cmp;
    b.arith = n.arith;
    b.negated = n.negated;
    return b;
  }

  const arrow::schema& schema_;
  std::vector<std::string> inputs_;
};

}  // namespace detail

// The filter tree typed against `schema` (invalid_filter naming the column, operator
// and position when it does not type).
inline bound_filter bind(const node& root, const arrow::schema& schema) { return detail::binder(schema).run(root); }

// A value expression's tree typed against `schema` as a filter's is (any result type).
inline bound_filter bind_value(const node& root, const arrow::schema& schema) {
  return detail::binder(schema).run(root, false);
}

}  // namespace lancet::expr
