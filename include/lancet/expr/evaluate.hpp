// Evaluating a bound filter (bind.hpp) on columns, a block of rows at a time: each
// node computes a vector of values with their validity (SQL's three-valued logic:
// comparisons with NULL are NULL, AND / OR are Kleene's), a constant computes one
// value for every row. A row passes when the filter is true (not false, not NULL).
// Floats compare in Arrow's total order (NaN equals NaN; -0 is below +0 except beside
// a zero constant, as Lance rewrites those comparisons).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/half.hpp"
#include "lancet/expr/bind.hpp"
#include "lancet/expr/error.hpp"

namespace lancet::expr {

namespace detail {

// The values one node computes for rows [0, n) of a block (or one value: scalar).
struct values {
  sql_type type{};
  bool scalar = false;
  std::vector<std::uint8_t> valid;  // 1 = valid; empty: every row valid
  std::vector<std::uint8_t> b;      // boolean
  std::vector<std::int64_t> i;      // integers but uint64, temporal
  std::vector<std::uint64_t> u;     // uint64
  std::vector<double> f;            // floats
  std::vector<arrow::int128_t> w;          // wide integers
  // bytes: row r is row base + r of `array` (or row idx[r] of it: dictionaries)
  const arrow::array_data* array = nullptr;
  std::int64_t base = 0;
  std::vector<std::int64_t> idx;
  std::string str;  // a scalar's bytes

  bool null_type() const noexcept { return type.k == sql_type::kind::null; }
  bool ok(std::size_t r) const noexcept { return valid.empty() || valid[scalar ? 0 : r]; }
  std::string_view bytes(std::size_t k) const noexcept {
    if (scalar) return str;
    const std::int64_t j = idx.empty() ? base + std::int64_t(k) : idx[k];
    if (array->type->id == arrow::type_id::fixed_size_binary) return array->fixed_binary_value(j);
    return array->string_value(j);
  }
  // Value k (k = 0 for a scalar) of a number, exactly.
  arrow::int128_t wide(std::size_t k) const noexcept {
    if (type.k == sql_type::kind::wide) return w[k];
    return type.in_u64() ? static_cast<arrow::int128_t>(u[k]) : static_cast<arrow::int128_t>(i[k]);
  }
  // Value k as a float of `bits` bits (integers converted straight to that width).
  double as_float(std::size_t k, std::uint8_t bits) const noexcept {
    switch (type.k) {
      case sql_type::kind::floating: return f[k];
      case sql_type::kind::wide: return round_float(static_cast<double>(w[k]), bits);
      default:
        if (bits == 32) return type.in_u64() ? double(float(u[k])) : double(float(i[k]));
        return round_float(type.in_u64() ? double(u[k]) : double(i[k]), bits);
    }
  }
};

inline void merge_validity(std::vector<std::uint8_t>& out, const values& a, std::size_t n) {
  if (a.valid.empty()) return;
  if (out.empty()) {
    out.resize(n);
    for (std::size_t r = 0; r < n; ++r) out[r] = a.valid[a.scalar ? 0 : r];
    return;
  }
  for (std::size_t r = 0; r < n; ++r) out[r] &= a.valid[a.scalar ? 0 : r];
}

template <class T>
inline int three_way(T a, T b) noexcept {
  return a < b ? -1 : (b < a ? 1 : 0);
}

inline bool holds(compare_op op, int c) noexcept {
  switch (op) {
    case compare_op::eq: return c == 0;
    case compare_op::ne: return c != 0;
    case compare_op::lt: return c < 0;
    case compare_op::le: return c <= 0;
    case compare_op::gt: return c > 0;
    case compare_op::ge: return c >= 0;
  }
  return false;
}

// An integer of `t`'s width from its low bits (wrapping arithmetic's result).
inline std::int64_t wrap_to(std::int64_t v, const sql_type& t) noexcept {
  if (t.bits >= 64) return v;
  const unsigned shift = 64u - t.bits;
  const auto u = static_cast<std::uint64_t>(v) << shift;
  return t.is_signed ? static_cast<std::int64_t>(u) >> shift : static_cast<std::int64_t>(u >> shift);
}

inline bool fits(std::int64_t v, const sql_type& t) noexcept { return wrap_to(v, t) == v; }

class evaluator {
 public:
  evaluator(const bound_filter& f, std::span<const arrow::array_ptr> inputs, std::int64_t begin, std::size_t n)
      : f_(f), inputs_(inputs), begin_(begin), n_(n) {}

  // The root's values for the block (an expression's).
  values compute() { return eval(f_.root); }

  // mask[r] = 1 where the filter is true.
  void run(std::uint8_t* mask) {
    values v = eval(f_.root);
    if (v.null_type()) {
      std::fill(mask, mask + n_, std::uint8_t(0));
      return;
    }
    for (std::size_t r = 0; r < n_; ++r) {
      const std::size_t k = v.scalar ? 0 : r;
      mask[r] = std::uint8_t(v.b[k] & (v.valid.empty() ? 1 : v.valid[k]));
    }
  }

 private:
  values eval(const bound_node& b) {
    switch (b.kind) {
      case node_kind::column: return column(b);
      case node_kind::constant: return constant(b);
      case node_kind::not_: return logical_not(eval(b.args[0]));
      case node_kind::and_:
      case node_kind::or_: return kleene(b);
      case node_kind::negate: return negate(b, eval(b.args[0]));
      case node_kind::arithmetic: return arithmetic(b, eval(b.args[0]), eval(b.args[1]));
      case node_kind::compare: return compare(b, eval(b.args[0]), eval(b.args[1]));
      case node_kind::is_null: return is_null(b, eval(b.args[0]));
      case node_kind::is_true:
      case node_kind::is_false: return is_bool(b, eval(b.args[0]));
      case node_kind::in_list: return in_set(b, eval(b.args[0]));
      case node_kind::like: return like(b, eval(b.args[0]));
      case node_kind::list_has: return list_has(b);
      case node_kind::between: break;  // bound as AND of comparisons
    }
    throw internal_error("filter: unexpected node in a bound filter");
  }

  values bool_result(std::size_t n) const {
    values v;
    v.type = simple_type(sql_type::kind::boolean);
    v.b.resize(n);
    return v;
  }

  static values null_scalar() {
    values v;
    v.type = simple_type(sql_type::kind::null);
    v.scalar = true;
    v.valid.assign(1, 0);
    return v;
  }

  static values constant(const bound_node& b) {
    if (b.type.k == sql_type::kind::null) return null_scalar();
    values v;
    v.type = b.type;
    v.scalar = true;
    switch (b.type.k) {
      case sql_type::kind::boolean: v.b.assign(1, b.b); break;
      case sql_type::kind::integer:
        if (b.type.in_u64()) v.u.assign(1, b.u);
        else v.i.assign(1, b.i);
        break;
      case sql_type::kind::temporal: v.i.assign(1, b.i); break;
      case sql_type::kind::floating: v.f.assign(1, b.f); break;
      case sql_type::kind::wide: v.w.assign(1, b.w); break;
      case sql_type::kind::bytes: v.str = b.s; break;
      default: break;
    }
    return v;
  }

  // ---- columns ----

  template <class T, class Out>
  static void widen(const arrow::array_data& a, std::int64_t at, std::size_t n, std::vector<Out>& out) {
    out.resize(n);
    const T* p = a.values<T>() + at;
    for (std::size_t r = 0; r < n; ++r) out[r] = static_cast<Out>(p[r]);
  }

  // Rows [at, at + n) of a leaf array (its own logical rows) into v's representation.
  static void load_leaf(const arrow::array_data& a, std::int64_t at, std::size_t n, values& v) {
    using arrow::type_id;
    switch (a.type->id) {
      case type_id::boolean:
        v.b.resize(n);
        for (std::size_t r = 0; r < n; ++r) v.b[r] = a.bool_value(at + std::int64_t(r));
        return;
      case type_id::int8: return widen<std::int8_t>(a, at, n, v.i);
      case type_id::int16: return widen<std::int16_t>(a, at, n, v.i);
      case type_id::int32: case type_id::date32: return widen<std::int32_t>(a, at, n, v.i);
      case type_id::int64: case type_id::date64: case type_id::timestamp: return widen<std::int64_t>(a, at, n, v.i);
      case type_id::uint8: return widen<std::uint8_t>(a, at, n, v.i);
      case type_id::uint16: return widen<std::uint16_t>(a, at, n, v.i);
      case type_id::uint32: return widen<std::uint32_t>(a, at, n, v.i);
      case type_id::uint64: return widen<std::uint64_t>(a, at, n, v.u);
      case type_id::float16: {
        v.f.resize(n);
        const auto* p = a.values<std::uint16_t>() + at;
        for (std::size_t r = 0; r < n; ++r) v.f[r] = arrow::half_to_float(p[r]);
        return;
      }
      case type_id::float32: return widen<float>(a, at, n, v.f);
      case type_id::float64: return widen<double>(a, at, n, v.f);
      case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary:
      case type_id::fixed_size_binary:
        v.array = &a;
        v.base = at;
        return;
      default: return;  // opaque: validity only
    }
  }

  values column(const bound_node& b) {
    values v;
    v.type = b.type;
    const arrow::array_data* a = inputs_[b.column.input].get();
    std::int64_t at = begin_;  // logical row of `a` for block row 0
    std::vector<std::uint8_t>& valid = v.valid;
    const auto and_validity = [&](const arrow::array_data& x, std::int64_t from) {
      if (x.type->id == arrow::type_id::null) {
        valid.assign(n_, 0);
        return;
      }
      if (x.validity() == nullptr || x.null_count == 0) return;
      if (valid.empty()) valid.assign(n_, 1);
      for (std::size_t r = 0; r < n_; ++r) valid[r] &= std::uint8_t(x.is_valid(from + std::int64_t(r)));
    };
    and_validity(*a, at);
    for (auto m : b.column.members) {
      at += a->offset;  // a struct's offset applies to its members
      a = a->children.at(m).get();
      and_validity(*a, at);
    }
    if (b.type.k == sql_type::kind::null || b.type.k == sql_type::kind::opaque) return v;
    if (a->type->id == arrow::type_id::dictionary) {
      const arrow::array_data& dict = *a->children.at(0);
      std::vector<std::int64_t> ix(n_);
      for (std::size_t r = 0; r < n_; ++r) {
        ix[r] = (valid.empty() || valid[r]) ? a->dictionary_index(at + std::int64_t(r)) : 0;
        if (ix[r] < 0 || (ix[r] >= dict.length && (valid.empty() || valid[r])))
          throw corrupt_error("filter: column '" + b.column.name + "' has dictionary index " + std::to_string(ix[r]) +
                              " beyond its " + std::to_string(dict.length) + " values");
      }
      if (dict.validity() && dict.null_count != 0) {  // a null value is a null
        if (valid.empty()) valid.assign(n_, 1);
        for (std::size_t r = 0; r < n_; ++r)
          if (valid[r] && !dict.is_valid(ix[r])) valid[r] = 0;
      }
      if (b.type.k == sql_type::kind::bytes) {
        v.array = &dict;
        v.idx = std::move(ix);
      } else {
        values all;
        load_leaf(dict, 0, std::size_t(dict.length), all);
        gather(all.b, ix, v.b);
        gather(all.i, ix, v.i);
        gather(all.u, ix, v.u);
        gather(all.f, ix, v.f);
      }
      return v;
    }
    load_leaf(*a, at, n_, v);
    return v;
  }

  template <class T>
  static void gather(const std::vector<T>& all, const std::vector<std::int64_t>& ix, std::vector<T>& out) {
    if (all.empty()) return;
    out.resize(ix.size());
    for (std::size_t r = 0; r < ix.size(); ++r) out[r] = all[std::size_t(ix[r])];
  }

  // ---- logic ----

  static values logical_not(values a) {
    if (a.null_type()) return a;
    for (auto& x : a.b) x = std::uint8_t(!x);
    return a;
  }

  // AND / OR over any number of operands, Kleene's logic: AND is false if any operand
  // is false, else NULL if any is NULL; OR is true if any is true, else NULL if any is.
  values kleene(const bound_node& b) {
    const bool is_and = b.kind == node_kind::and_;
    std::vector<std::uint8_t> decided(n_, 0), unknown(n_, 0);
    const std::uint8_t want = is_and ? 0 : 1;
    for (const auto& arg : b.args) {
      values a = eval(arg);
      if (a.null_type()) {
        std::fill(unknown.begin(), unknown.end(), std::uint8_t(1));
        continue;
      }
      for (std::size_t r = 0; r < n_; ++r) {
        const std::size_t k = a.scalar ? 0 : r;
        const bool ok = a.valid.empty() || a.valid[k];
        decided[r] |= std::uint8_t(ok && a.b[k] == want);
        unknown[r] |= std::uint8_t(!ok);
      }
    }
    values out = bool_result(n_);
    bool any_null = false;
    for (std::size_t r = 0; r < n_; ++r) {
      out.b[r] = is_and ? std::uint8_t(!decided[r]) : decided[r];
      any_null = any_null || (!decided[r] && unknown[r]);
    }
    if (any_null) {
      out.valid.resize(n_);
      for (std::size_t r = 0; r < n_; ++r) out.valid[r] = std::uint8_t(decided[r] || !unknown[r]);
    }
    return out;
  }

  values is_null(const bound_node& b, const values& a) const {
    values out = bool_result(n_);
    for (std::size_t r = 0; r < n_; ++r) out.b[r] = std::uint8_t(a.ok(r) == b.negated);
    return out;
  }

  values is_bool(const bound_node& b, const values& a) const {
    values out = bool_result(n_);
    const bool want = b.kind == node_kind::is_true;
    for (std::size_t r = 0; r < n_; ++r) {
      const bool hit = !a.null_type() && a.ok(r) && bool(a.b[a.scalar ? 0 : r]) == want;
      out.b[r] = std::uint8_t(hit != b.negated);
    }
    return out;
  }

  // ---- arithmetic ----

  [[noreturn]] static void arith_error(const bound_node& b, const char* what) {
    throw invalid_filter(what, b.position, arith_op_name(b.arith));
  }

  static values negate(const bound_node& b, values a) {
    if (a.type.k == sql_type::kind::integer)
      for (auto& x : a.i) x = wrap_to(std::int64_t(0ull - std::uint64_t(x)), b.type);
    else if (a.type.k == sql_type::kind::floating)
      for (auto& x : a.f) x = -x;
    return a;
  }

  values arithmetic(const bound_node& b, const values& x, const values& y) const {
    if (b.type.k == sql_type::kind::null || x.null_type() || y.null_type()) return null_scalar();
    values out;
    out.type = b.type;
    const bool scalar = x.scalar && y.scalar;
    const std::size_t n = scalar ? 1 : n_;
    out.scalar = scalar;
    merge_validity(out.valid, x, n);
    merge_validity(out.valid, y, n);
    const auto live = [&](std::size_t r) { return out.valid.empty() || out.valid[r]; };
    const std::size_t sx = x.scalar ? 0 : 1, sy = y.scalar ? 0 : 1;
    using K = sql_type::kind;
    if (b.type.k == K::floating) {
      out.f.resize(n);
      const auto bits = b.type.bits;
      for (std::size_t r = 0; r < n; ++r) {
        const double p = x.as_float(r * sx, bits), q = y.as_float(r * sy, bits);
        double v = 0;
        switch (b.arith) {
          case arith_op::add: v = p + q; break;
          case arith_op::sub: v = p - q; break;
          case arith_op::mul: v = p * q; break;
          case arith_op::div: v = p / q; break;
          case arith_op::mod: v = std::fmod(p, q); break;
        }
        out.f[r] = round_float(v, bits);
      }
      return out;
    }
    if (b.type.k == K::wide) {
      out.w.resize(n);
      for (std::size_t r = 0; r < n; ++r) {
        // DataFusion's decimal arithmetic is checked: past 128 bits is an error, not a wrap.
        const arrow::int128_t p = x.wide(r * sx), q = y.wide(r * sy);
        bool overflow = false;
        switch (b.arith) {
          case arith_op::add: overflow = __builtin_add_overflow(p, q, &out.w[r]); break;
          case arith_op::sub: overflow = __builtin_sub_overflow(p, q, &out.w[r]); break;
          case arith_op::mul: overflow = __builtin_mul_overflow(p, q, &out.w[r]); break;
          default: arith_error(b, "unsupported arithmetic");
        }
        if (overflow && live(r)) arith_error(b, "arithmetic overflow");
      }
      return out;
    }
    if (b.type.in_u64()) {
      out.u.resize(n);
      for (std::size_t r = 0; r < n; ++r) {
        const auto p = static_cast<std::uint64_t>(x.wide(r * sx)), q = static_cast<std::uint64_t>(y.wide(r * sy));
        switch (b.arith) {
          case arith_op::add: out.u[r] = p + q; break;
          case arith_op::sub: out.u[r] = p - q; break;
          case arith_op::mul: out.u[r] = p * q; break;
          case arith_op::div:
          case arith_op::mod:
            if (q == 0) {
              if (live(r)) arith_error(b, "division by zero");
              out.u[r] = 0;
              break;
            }
            out.u[r] = b.arith == arith_op::div ? p / q : p % q;
            break;
        }
      }
      return out;
    }
    // Integers held in int64 (every width but uint64): computed in 64 bits, wrapped to
    // the result's width.
    out.i.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t p = x.i[r * sx], q = y.i[r * sy];
      const auto up = std::uint64_t(p), uq = std::uint64_t(q);
      std::int64_t v = 0;
      switch (b.arith) {
        case arith_op::add: v = std::int64_t(up + uq); break;
        case arith_op::sub: v = std::int64_t(up - uq); break;
        case arith_op::mul: v = std::int64_t(up * uq); break;
        case arith_op::div:
        case arith_op::mod:
          if (q == 0) {
            if (live(r)) arith_error(b, "division by zero");
            break;
          }
          if (b.arith == arith_op::mod) {
            v = (q == -1) ? 0 : p % q;
            break;
          }
          if (p == INT64_MIN && q == -1) {
            if (live(r)) arith_error(b, "arithmetic overflow in division");
            break;
          }
          v = p / q;
          if (!fits(v, b.type) && live(r)) arith_error(b, "arithmetic overflow in division");
          break;
      }
      out.i[r] = wrap_to(v, b.type);
    }
    return out;
  }

  // ---- comparisons ----

  // v's value k in the temporal domain's unit (saturating: order is kept).
  static std::int64_t ticks(const values& v, std::size_t k, tick to) noexcept {
    const std::int64_t x = v.i[k];
    if (v.type.unit == to) return x;
    const std::int64_t f = tick_ns(v.type.unit) / tick_ns(to);
    std::int64_t y;
    if (__builtin_mul_overflow(x, f, &y)) return x < 0 ? INT64_MIN : INT64_MAX;
    return y;
  }

  static std::int64_t zero_key(double v, bool zero_equal) noexcept {
    return float_key(zero_equal && v == 0.0 ? 0.0 : v);
  }

  values compare(const bound_node& b, const values& x, const values& y) const {
    if (b.domain.k == sql_type::kind::null || x.null_type() || y.null_type()) {
      values v = null_scalar();
      v.type = simple_type(sql_type::kind::boolean);
      v.b.assign(1, 0);
      return v;
    }
    values out;
    out.type = simple_type(sql_type::kind::boolean);
    const bool scalar = x.scalar && y.scalar;
    const std::size_t n = scalar ? 1 : n_;
    out.scalar = scalar;
    out.b.resize(n);
    merge_validity(out.valid, x, n);
    merge_validity(out.valid, y, n);
    const std::size_t sx = x.scalar ? 0 : 1, sy = y.scalar ? 0 : 1;
    const compare_op op = b.cmp;
    // One loop per operator, so that its body is the comparison alone.
    const auto fill = [&](auto cmp3) {
      const auto loop = [&](auto pred) {
        for (std::size_t r = 0; r < n; ++r) out.b[r] = std::uint8_t(pred(cmp3(r * sx, r * sy)));
      };
      switch (op) {
        case compare_op::eq: loop([](int c) { return c == 0; }); break;
        case compare_op::ne: loop([](int c) { return c != 0; }); break;
        case compare_op::lt: loop([](int c) { return c < 0; }); break;
        case compare_op::le: loop([](int c) { return c <= 0; }); break;
        case compare_op::gt: loop([](int c) { return c > 0; }); break;
        case compare_op::ge: loop([](int c) { return c >= 0; }); break;
      }
    };
    // A column against a constant (the common filter): values against one key, no
    // stride, the operator outside the loop.
    const auto against = [&](const auto* column, auto key, bool column_first) {
      const auto loop = [&](auto pred) {
        for (std::size_t r = 0; r < n; ++r) out.b[r] = std::uint8_t(pred(column[r], key));
      };
      const compare_op o = column_first ? op
                           : op == compare_op::lt ? compare_op::gt
                           : op == compare_op::le ? compare_op::ge
                           : op == compare_op::gt ? compare_op::lt
                           : op == compare_op::ge ? compare_op::le
                                                  : op;
      switch (o) {
        case compare_op::eq: loop([](auto a, auto c) { return a == c; }); break;
        case compare_op::ne: loop([](auto a, auto c) { return a != c; }); break;
        case compare_op::lt: loop([](auto a, auto c) { return a < c; }); break;
        case compare_op::le: loop([](auto a, auto c) { return a <= c; }); break;
        case compare_op::gt: loop([](auto a, auto c) { return a > c; }); break;
        case compare_op::ge: loop([](auto a, auto c) { return a >= c; }); break;
      }
    };
    if (x.scalar != y.scalar) {
      const values& col = x.scalar ? y : x;
      const values& key = x.scalar ? x : y;
      const bool column_first = !x.scalar;
      using K = sql_type::kind;
      if (b.domain.k == K::integer && col.type.k == K::integer && key.type.k == K::integer && !col.type.in_u64() &&
          !key.type.in_u64()) {
        against(col.i.data(), key.i[0], column_first);
        return out;
      }
      if (b.domain.k == K::floating && col.type.k == K::floating && key.type.k == K::floating) {
        // Total order through the keys of the values (zero constants equal both zeros).
        thread_local std::vector<std::int64_t> keys;
        keys.resize(n);
        for (std::size_t r = 0; r < n; ++r) keys[r] = zero_key(col.f[r], b.zero_equal);
        against(keys.data(), zero_key(key.f[0], b.zero_equal), column_first);
        return out;
      }
      if (b.domain.k == K::bytes && col.type.k == K::bytes && col.idx.empty() && col.array &&
          (col.array->type->id == arrow::type_id::utf8 || col.array->type->id == arrow::type_id::binary) &&
          (op == compare_op::eq || op == compare_op::ne)) {
        // Equality with a string constant: lengths first, then the bytes.
        const auto* offs = col.array->buffers[1].as<std::int32_t>() + col.array->offset + col.base;
        const auto* data = reinterpret_cast<const char*>(col.array->buffers[2].data());
        const std::string_view k = key.str;
        const auto len = std::int32_t(k.size());
        const bool want = op == compare_op::eq;
        if (len > 0 && len <= 8) {
          // A short constant: a row of its length compares as one masked 8-byte word
          // where the values buffer holds 8 bytes from the row on.
          const std::uint64_t size = col.array->buffers[2].size();
          unsigned char ones[8] = {};
          std::memset(ones, 0xff, k.size());
          std::uint64_t mask = 0, word = 0;
          std::memcpy(&mask, ones, 8);  // the first len bytes, whatever the byte order
          std::memcpy(&word, k.data(), k.size());
          for (std::size_t r = 0; r < n; ++r) {
            bool same = offs[r + 1] - offs[r] == len;
            if (same) {
              const std::uint64_t at = std::uint64_t(offs[r]);
              if (at + 8 <= size) {
                std::uint64_t v;
                std::memcpy(&v, data + at, 8);
                same = ((v ^ word) & mask) == 0;
              } else {
                same = std::memcmp(data + at, k.data(), k.size()) == 0;
              }
            }
            out.b[r] = std::uint8_t(same == want);
          }
          return out;
        }
        for (std::size_t r = 0; r < n; ++r) {
          const bool same = offs[r + 1] - offs[r] == len && (len == 0 || std::memcmp(data + offs[r], k.data(), k.size()) == 0);
          out.b[r] = std::uint8_t(same == want);
        }
        return out;
      }
    }
    using K = sql_type::kind;
    switch (b.domain.k) {
      case K::boolean: fill([&](std::size_t i, std::size_t j) { return three_way(x.b[i], y.b[j]); }); break;
      case K::bytes:
        fill([&](std::size_t i, std::size_t j) {
          const int c = x.bytes(i).compare(y.bytes(j));
          return c < 0 ? -1 : (c > 0 ? 1 : 0);
        });
        break;
      case K::temporal:
        fill([&](std::size_t i, std::size_t j) {
          return three_way(ticks(x, i, b.domain.unit), ticks(y, j, b.domain.unit));
        });
        break;
      case K::floating: {
        const auto bits = b.domain.bits;
        const bool z = b.zero_equal;
        fill([&](std::size_t i, std::size_t j) {
          return three_way(zero_key(x.as_float(i, bits), z), zero_key(y.as_float(j, bits), z));
        });
        break;
      }
      default:  // integers and wide integers: exactly
        if (!x.type.in_u64() && !y.type.in_u64() && x.type.k == K::integer && y.type.k == K::integer)
          fill([&](std::size_t i, std::size_t j) { return three_way(x.i[i], y.i[j]); });
        else
          fill([&](std::size_t i, std::size_t j) { return three_way(x.wide(i), y.wide(j)); });
        break;
    }
    return out;
  }

  // x [NOT] IN (constants): a binary search in the sorted constants.
  values in_set(const bound_node& b, const values& x) const { return in_set(b, x, n_); }

  // x's n values' membership in b's set.
  values in_set(const bound_node& b, const values& x, std::size_t n_) const {
    values out = bool_result(n_);
    if (x.null_type()) {
      out.valid.assign(n_, 0);
      return out;
    }
    const std::size_t sx = x.scalar ? 0 : 1;
    std::vector<std::uint8_t> found(n_, 0);
    using K = sql_type::kind;
    switch (b.domain.k) {
      case K::null: break;
      case K::bytes:
        for (std::size_t r = 0; r < n_; ++r) {
          const auto s = x.bytes(r * sx);
          found[r] = std::binary_search(b.set_s.begin(), b.set_s.end(), s,
                                        [](const auto& p, const auto& q) { return std::string_view(p) < std::string_view(q); });
        }
        break;
      case K::floating: {
        const auto bits = b.domain.bits;
        for (std::size_t r = 0; r < n_; ++r) {
          const double v = x.as_float(r * sx, bits);
          found[r] = std::binary_search(b.set_f.begin(), b.set_f.end(), v,
                                        [](double p, double q) { return float_key(p) < float_key(q); });
        }
        break;
      }
      case K::boolean:
        for (std::size_t r = 0; r < n_; ++r)
          found[r] = std::binary_search(b.set_i.begin(), b.set_i.end(), std::int64_t(x.b[r * sx]));
        break;
      case K::temporal:
        for (std::size_t r = 0; r < n_; ++r)
          found[r] = std::binary_search(b.set_i.begin(), b.set_i.end(), ticks(x, r * sx, b.domain.unit));
        break;
      case K::wide:
        for (std::size_t r = 0; r < n_; ++r) found[r] = std::binary_search(b.set_w.begin(), b.set_w.end(), x.wide(r * sx));
        break;
      default:  // integers
        for (std::size_t r = 0; r < n_; ++r) {
          const arrow::int128_t v = x.wide(r * sx);
          if (b.domain.in_u64())
            found[r] = v >= 0 && std::binary_search(b.set_u.begin(), b.set_u.end(), static_cast<std::uint64_t>(v));
          else
            found[r] = v >= INT64_MIN && v <= INT64_MAX &&
                       std::binary_search(b.set_i.begin(), b.set_i.end(), static_cast<std::int64_t>(v));
        }
        break;
    }
    // Not found in a list holding NULL: NULL.
    const bool nulls = !x.valid.empty() || b.set_has_null;
    if (nulls) out.valid.assign(n_, 1);
    for (std::size_t r = 0; r < n_; ++r) {
      out.b[r] = std::uint8_t(bool(found[r]) != b.negated);
      if (nulls) out.valid[r] = std::uint8_t(x.ok(r) && (found[r] || !b.set_has_null));
    }
    return out;
  }

  // ---- lists ----

  // Whether each row's list holds any of the values (every value: `every`); NULL for a
  // NULL list. A NULL item matches a NULL value.
  values list_has(const bound_node& b) {
    const bound_node& col = b.args[0];
    values out = bool_result(n_);
    out.valid = column(col).valid;  // the list rows' validity (struct parents included)
    const arrow::array_data* a = inputs_[col.column.input].get();
    std::int64_t at = begin_;
    for (auto m : col.column.members) {
      at += a->offset;
      a = a->children.at(m).get();
    }
    const arrow::array_data& items = *a->children.at(0);
    const auto ok = [&](std::size_t r) { return out.valid.empty() || out.valid[r]; };
    // The items of the block's valid rows, one span.
    std::int64_t first = -1, last = 0;
    for (std::size_t r = 0; r < n_; ++r)
      if (ok(r)) {
        if (first < 0) first = a->value_offset(at + std::int64_t(r));
        last = a->value_offset(at + std::int64_t(r) + 1);
      }
    if (first < 0) return out;
    const std::size_t m = std::size_t(last - first);
    values iv;
    iv.type = b.args[1].args[0].type;
    load_leaf(items, first, m, iv);
    if (items.validity() != nullptr && items.null_count != 0) {
      iv.valid.resize(m);
      for (std::size_t k = 0; k < m; ++k) iv.valid[k] = std::uint8_t(items.is_valid(first + std::int64_t(k)));
    }
    // Per set, whether each item matches it.
    std::vector<std::vector<std::uint8_t>> hit;
    for (std::size_t s = 1; s < b.args.size(); ++s) {
      const auto found = in_set(b.args[s], iv, m);
      std::vector<std::uint8_t> h(m);
      for (std::size_t k = 0; k < m; ++k)
        h[k] = iv.ok(k) ? std::uint8_t(found.b[k] && found.ok(k)) : std::uint8_t(b.args[s].set_has_null);
      hit.push_back(std::move(h));
    }
    for (std::size_t r = 0; r < n_; ++r) {
      if (!ok(r)) continue;
      const auto lo = std::size_t(a->value_offset(at + std::int64_t(r)) - first);
      const auto hi = std::size_t(a->value_offset(at + std::int64_t(r) + 1) - first);
      bool all = true;
      for (const auto& h : hit) {
        bool any = false;
        for (auto k = lo; k < hi && !any; ++k) any = h[k] != 0;
        all = all && any;
      }
      out.b[r] = std::uint8_t(all);  // array_has_all(x, []): true
    }
    return out;
  }

  // ---- LIKE ----

  // Bytes of the UTF-8 character starting at s[i] (1 for a stray byte).
  static std::size_t char_len(std::string_view s, std::size_t i) noexcept {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return std::min(len, s.size() - i);
  }

  // Whether s[at..] matches the pattern's pieces from `piece` on. Iterative over '%':
  // the classic greedy match with one backtrack point (the last '%'), so no pattern
  // takes more than O(|s| x |pattern|) steps.
  static bool matches(const like_pattern& p, std::string_view s) {
    using kind = like_pattern::piece::kind;
    std::size_t pi = 0, si = 0;
    std::size_t star = SIZE_MAX, star_si = 0;
    for (;;) {
      if (pi < p.pieces.size()) {
        const auto& pc = p.pieces[pi];
        if (pc.k == kind::any) {
          star = pi++;
          star_si = si;
          continue;
        }
        if (pc.k == kind::text && s.substr(si, pc.text.size()) == pc.text) {
          si += pc.text.size();
          ++pi;
          continue;
        }
        if (pc.k == kind::one && si < s.size()) {
          si += char_len(s, si);
          ++pi;
          continue;
        }
      } else if (si == s.size()) {
        return true;
      }
      // Mismatch: let the last '%' take one more character, or fail.
      if (star == SIZE_MAX || star_si >= s.size()) return false;
      star_si += char_len(s, star_si);
      si = star_si;
      pi = star + 1;
    }
  }

  values like(const bound_node& b, const values& x) const {
    values out = bool_result(n_);
    if (x.null_type()) {
      out.valid.assign(n_, 0);
      return out;
    }
    if (!x.valid.empty()) {
      out.valid.resize(n_);
      for (std::size_t r = 0; r < n_; ++r) out.valid[r] = std::uint8_t(x.ok(r));
    }
    for (std::size_t r = 0; r < n_; ++r)
      out.b[r] = std::uint8_t(matches(b.pattern, x.bytes(x.scalar ? 0 : r)) != b.negated);
    return out;
  }

  const bound_filter& f_;
  std::span<const arrow::array_ptr> inputs_;
  std::int64_t begin_;
  std::size_t n_;
};

}  // namespace detail

// The rows [begin, begin + n) of `inputs` (the arrays of f.columns, in that order, all
// of the same length) where f is true: mask[r] = 1 for row begin + r.
inline void evaluate(const bound_filter& f, std::span<const arrow::array_ptr> inputs, std::int64_t begin, std::size_t n,
                     std::uint8_t* mask) {
  detail::evaluator(f, inputs, begin, n).run(mask);
}

}  // namespace lancet::expr
