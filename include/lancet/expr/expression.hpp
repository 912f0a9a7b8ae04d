// A SQL value expression (what Lance's add_columns, update and merge insert take as
// SQL): the filter grammar (parse.hpp) without the boolean root, typed as filters are
// (bind.hpp: literals take the type of the column beside them, DataFusion's numeric
// coercion), evaluated to an Arrow array. `id * 2` over int64 is int64, `price * 1.5`
// float64, `name` a copy of the column, `id > 3` boolean. Its Arrow type: booleans,
// integers and floats of the computed width, strings as utf8, dates as date32,
// timestamps in their unit; a bare column keeps its own type. An expression typed NULL
// or as an exact 128-bit integer has no column type: invalid_filter at compile.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/expr/bind.hpp"
#include "lancet/expr/error.hpp"
#include "lancet/expr/evaluate.hpp"
#include "lancet/expr/parse.hpp"

namespace lancet::expr {

namespace detail {

inline arrow::type_ptr arrow_type_of(const bound_node& root, const arrow::schema& schema, std::string_view sql) {
  if (root.kind == node_kind::column) {
    arrow::type_ptr t;
    for (const auto& f : schema.fields)
      if (f.name == root.column.name) t = f.type;
    // A struct member: its own type, down the members.
    if (t)
      for (auto m : root.column.members) t = t->children.at(m).type;
    if (t && (root.column.members.empty() || root.type.k != sql_type::kind::opaque)) return t;
  }
  const auto& ty = root.type;
  switch (ty.k) {
    case sql_type::kind::boolean: return arrow::boolean();
    case sql_type::kind::integer:
      switch (ty.bits) {
        case 8: return ty.is_signed ? arrow::int8() : arrow::uint8();
        case 16: return ty.is_signed ? arrow::int16() : arrow::uint16();
        case 32: return ty.is_signed ? arrow::int32() : arrow::uint32();
        default: return ty.is_signed ? arrow::int64() : arrow::uint64();
      }
    case sql_type::kind::floating:
      return ty.bits == 16 ? arrow::float16() : ty.bits == 32 ? arrow::float32() : arrow::float64();
    case sql_type::kind::bytes: return arrow::utf8();
    case sql_type::kind::temporal:
      switch (ty.unit) {
        case tick::day: return arrow::date32();
        case tick::second: return arrow::timestamp(arrow::time_unit::second);
        case tick::milli: return arrow::timestamp(arrow::time_unit::milli);
        case tick::micro: return arrow::timestamp(arrow::time_unit::micro);
        case tick::nano: return arrow::timestamp(arrow::time_unit::nano);
      }
      break;
    default: break;
  }
  throw invalid_filter("the expression '" + std::string(sql) + "' gives " + type_name(ty) +
                           ", which no column can hold",
                       root.position, "");
}

// Whether a node's value can be NULL: a nullable column (or struct member on the way),
// a NULL constant, or an operand that can be.
inline bool can_be_null(const bound_node& b, const arrow::schema& schema) {
  if (b.kind == node_kind::constant) return b.is_null_constant || b.type.k == sql_type::kind::null;
  if (b.kind == node_kind::column) {
    for (const auto& f : schema.fields)
      if (f.name == b.column.name) {
        if (f.nullable) return true;
        const arrow::data_type* t = f.type.get();
        for (auto m : b.column.members) {
          if (t->children.at(m).nullable) return true;
          t = t->children.at(m).type.get();
        }
        return false;
      }
    return true;
  }
  if (b.kind == node_kind::is_null) return false;
  for (const auto& a : b.args)
    if (can_be_null(a, schema)) return true;
  return false;
}

// Appends rows [0, n) of a block's values to the arrays being built.
struct value_sink {
  explicit value_sink(const arrow::type_ptr& t) : type(t) {}
  const arrow::type_ptr& type;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::int64_t>> i;
  std::vector<std::optional<std::uint64_t>> u;
  std::vector<std::optional<double>> f;
  std::vector<std::optional<std::string>> s;

  void add(const values& v, std::size_t n) {
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t k = v.scalar ? 0 : r;
      const bool ok = !v.null_type() && v.ok(r);
      switch (v.type.k) {
        case sql_type::kind::boolean: b.push_back(ok ? std::optional<bool>(v.b[k] != 0) : std::nullopt); break;
        case sql_type::kind::integer:
          if (v.type.in_u64()) u.push_back(ok ? std::optional<std::uint64_t>(v.u[k]) : std::nullopt);
          else i.push_back(ok ? std::optional<std::int64_t>(v.i[k]) : std::nullopt);
          break;
        case sql_type::kind::temporal: i.push_back(ok ? std::optional<std::int64_t>(v.i[k]) : std::nullopt); break;
        case sql_type::kind::floating: f.push_back(ok ? std::optional<double>(v.f[k]) : std::nullopt); break;
        case sql_type::kind::bytes: s.push_back(ok ? std::optional<std::string>(v.bytes(k)) : std::nullopt); break;
        default: break;
      }
    }
  }

  template <class T>
  arrow::array_ptr ints() const {
    std::vector<std::optional<T>> out;
    out.reserve(i.size() + u.size());
    for (const auto& x : i) out.push_back(x ? std::optional<T>(static_cast<T>(*x)) : std::nullopt);
    for (const auto& x : u) out.push_back(x ? std::optional<T>(static_cast<T>(*x)) : std::nullopt);
    return arrow::make_array(out, type);
  }

  arrow::array_ptr finish() const {
    using arrow::type_id;
    switch (type->id) {
      case type_id::boolean: return arrow::bool_array(b);
      case type_id::int8: return ints<std::int8_t>();
      case type_id::int16: return ints<std::int16_t>();
      case type_id::int32: return ints<std::int32_t>();
      case type_id::int64: return ints<std::int64_t>();
      case type_id::uint8: return ints<std::uint8_t>();
      case type_id::uint16: return ints<std::uint16_t>();
      case type_id::uint32: return ints<std::uint32_t>();
      case type_id::uint64: return ints<std::uint64_t>();
      case type_id::date32: return ints<std::int32_t>();
      case type_id::date64:
      case type_id::timestamp: return ints<std::int64_t>();
      case type_id::float16: {
        std::vector<std::optional<float>> out;
        for (const auto& x : f) out.push_back(x ? std::optional<float>(float(*x)) : std::nullopt);
        return arrow::float16_array(out);
      }
      case type_id::float32: {
        std::vector<std::optional<float>> out;
        for (const auto& x : f) out.push_back(x ? std::optional<float>(float(*x)) : std::nullopt);
        return arrow::make_array(out, type);
      }
      case type_id::float64: return arrow::make_array(f, type);
      default: return arrow::string_array(s);
    }
  }
};

}  // namespace detail

class expression {
 public:
  // Parses and types `sql` against `schema` (invalid_filter / unsupported_filter with
  // the position, as a filter's).
  static expression compile(std::string_view sql, const arrow::schema& schema) {
    expression e;
    e.text_ = std::string(sql);
    e.bound_ = std::make_shared<const bound_filter>(bind_value(parse(sql), schema));
    e.type_ = detail::arrow_type_of(e.bound_->root, schema, sql);
    e.nullable_ = detail::can_be_null(e.bound_->root, schema);
    return e;
  }

  const std::string& text() const noexcept { return text_; }
  // The columns it reads, in the order evaluate takes them.
  const std::vector<std::string>& columns() const noexcept { return bound_->columns; }
  const arrow::type_ptr& type() const noexcept { return type_; }
  // Whether it can be NULL (as DataFusion says: a nullable column or a NULL constant in it).
  bool nullable() const noexcept { return nullable_; }

  // Its value for each of the n rows of `inputs` (the arrays of columns(), in order).
  arrow::array_ptr evaluate(std::span<const arrow::array_ptr> inputs, std::int64_t n) const {
    if (inputs.size() != bound_->columns.size())
      throw invalid_input_error("expression '" + text_ + "' reads " + std::to_string(bound_->columns.size()) +
                                " columns, given " + std::to_string(inputs.size()));
    for (std::size_t c = 0; c < inputs.size(); ++c)
      if (!inputs[c] || inputs[c]->length < n)
        throw invalid_input_error("expression '" + text_ + "': column '" + bound_->columns[c] + "' has " +
                                  std::to_string(inputs[c] ? inputs[c]->length : 0) + " rows, " + std::to_string(n) +
                                  " needed");
    const auto& root = bound_->root;
    if (root.kind == node_kind::column && root.column.members.empty()) {
      const auto& a = inputs[root.column.input];
      return a->length == n ? a : arrow::slice(a, 0, n);
    }
    detail::value_sink out{type_};
    constexpr std::int64_t block = 4096;
    for (std::int64_t at = 0; at < n; at += block) {
      const auto m = std::size_t(std::min(block, n - at));
      out.add(detail::evaluator(*bound_, inputs, at, m).compute(), m);
    }
    return out.finish();
  }

 private:
  std::string text_;
  std::shared_ptr<const bound_filter> bound_;
  arrow::type_ptr type_;
  bool nullable_ = true;
};

}  // namespace lancet::expr
