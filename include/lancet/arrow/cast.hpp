// Casting an array to another type of its kind, every value checked: integers to
// integers of any width and sign, integers and floats to floats, strings and binary
// between their 32- and 64-bit offset forms, lists (and fixed-size lists of one size)
// by their items. A value the target cannot hold is an
// invalid_input_error naming the column, the value and its row; a cast between other
// kinds is one naming both types.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/half.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

inline bool is_integer(type_id id) noexcept {
  return id == type_id::int8 || id == type_id::int16 || id == type_id::int32 || id == type_id::int64 ||
         id == type_id::uint8 || id == type_id::uint16 || id == type_id::uint32 || id == type_id::uint64;
}
inline bool is_floating(type_id id) noexcept {
  return id == type_id::float16 || id == type_id::float32 || id == type_id::float64;
}

namespace detail {

// Value i of an integer array, exactly.
inline int128_t integer_at(const array_data& a, std::int64_t i) {
  switch (a.type->id) {
    case type_id::int8: return a.value<std::int8_t>(i);
    case type_id::int16: return a.value<std::int16_t>(i);
    case type_id::int32: return a.value<std::int32_t>(i);
    case type_id::int64: return a.value<std::int64_t>(i);
    case type_id::uint8: return a.value<std::uint8_t>(i);
    case type_id::uint16: return a.value<std::uint16_t>(i);
    case type_id::uint32: return a.value<std::uint32_t>(i);
    default: return a.value<std::uint64_t>(i);
  }
}

inline double float_at(const array_data& a, std::int64_t i) {
  switch (a.type->id) {
    case type_id::float16: return double(half_to_float(a.value<std::uint16_t>(i)));
    case type_id::float32: return a.value<float>(i);
    case type_id::float64: return a.value<double>(i);
    default: return static_cast<double>(integer_at(a, i));
  }
}

inline std::string int128_text(int128_t v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string s;
  while (v != 0) {
    const int d = int(v % 10);
    s.insert(s.begin(), char('0' + (d < 0 ? -d : d)));
    v /= 10;
  }
  return neg ? "-" + s : s;
}

template <class T>
inline array_ptr cast_numbers(const array_data& a, const type_ptr& to, const std::string& column) {
  std::vector<std::optional<T>> out;
  out.reserve(std::size_t(a.length));
  for (std::int64_t i = 0; i < a.length; ++i) {
    if (!a.is_valid(i)) {
      out.push_back(std::nullopt);
    } else if constexpr (std::is_floating_point_v<T>) {
      out.push_back(T(float_at(a, i)));
    } else {
      const auto v = integer_at(a, i);
      if (v < int128_t(std::numeric_limits<T>::min()) || v > int128_t(std::numeric_limits<T>::max()))
        throw invalid_input_error("column '" + column + "' (" + to_string(*to) + ") cannot hold the value " +
                                  int128_text(v) + " (row " + std::to_string(i) + ")");
      out.push_back(T(v));
    }
  }
  if constexpr (std::is_same_v<T, float>)
    if (to->id == type_id::float16) return float16_array(out);
  return make_array(out, to);
}

}  // namespace detail

inline array_ptr cast(const array_ptr& a, const type_ptr& to, const std::string& column);

namespace detail {

// The validity of a's rows as make_list / make_fixed_size_list take it (empty: all valid).
inline validity_list row_validity(const array_data& a) {
  if (a.count_nulls() == 0) return {};
  validity_list v(std::size_t(a.length));
  for (std::int64_t i = 0; i < a.length; ++i) v[std::size_t(i)] = a.is_valid(i);
  return v;
}

// A list, large list or fixed-size list with its items cast to `to`'s item type (the
// same list kind; fixed-size lists of the same size); nullptr for other pairs.
inline array_ptr cast_list(const array_ptr& a, const type_ptr& to, const std::string& column) {
  const auto from = a->type->id;
  if (from != to->id || to->children.size() != 1) return nullptr;
  const auto& item = to->children[0];
  if (from == type_id::fixed_size_list) {
    const auto size = a->type->list_size;
    if (size != to->list_size) return nullptr;
    const auto items = slice(a->children.at(0), (a->offset) * size, a->length * size);
    return make_fixed_size_list(item, cast(items, item.type, column), size, row_validity(*a));
  }
  if (from != type_id::list && from != type_id::large_list) return nullptr;
  const std::int64_t first = a->length == 0 ? 0 : a->value_offset(0);
  const std::int64_t last = a->length == 0 ? 0 : a->value_offset(a->length);
  const auto items = cast(slice(a->children.at(0), first, last - first), item.type, column);
  if (from == type_id::list) {
    std::vector<std::int32_t> offsets;
    for (std::int64_t i = 0; i <= a->length; ++i) offsets.push_back(std::int32_t(a->value_offset(i) - first));
    return make_list(item, items, offsets, row_validity(*a));
  }
  std::vector<std::int64_t> offsets;
  for (std::int64_t i = 0; i <= a->length; ++i) offsets.push_back(a->value_offset(i) - first);
  return make_large_list(item, items, offsets, row_validity(*a));
}

}  // namespace detail

// `a` as type `to` (values checked; the same type: `a` itself). `column` names it in errors.
inline array_ptr cast(const array_ptr& a, const type_ptr& to, const std::string& column) {
  if (equals(*a->type, *to)) return a;
  const auto from = a->type->id;
  if (from == type_id::null) return null_array_of(to, a->length);
  if (auto l = detail::cast_list(a, to, column)) return l;
  if (is_integer(from) && is_integer(to->id)) {
    switch (to->id) {
      case type_id::int8: return detail::cast_numbers<std::int8_t>(*a, to, column);
      case type_id::int16: return detail::cast_numbers<std::int16_t>(*a, to, column);
      case type_id::int32: return detail::cast_numbers<std::int32_t>(*a, to, column);
      case type_id::int64: return detail::cast_numbers<std::int64_t>(*a, to, column);
      case type_id::uint8: return detail::cast_numbers<std::uint8_t>(*a, to, column);
      case type_id::uint16: return detail::cast_numbers<std::uint16_t>(*a, to, column);
      case type_id::uint32: return detail::cast_numbers<std::uint32_t>(*a, to, column);
      default: return detail::cast_numbers<std::uint64_t>(*a, to, column);
    }
  }
  if ((is_integer(from) || is_floating(from)) && is_floating(to->id))
    return to->id == type_id::float64 ? detail::cast_numbers<double>(*a, to, column)
                                      : detail::cast_numbers<float>(*a, to, column);
  const bool strings = (from == type_id::utf8 || from == type_id::large_utf8) &&
                       (to->id == type_id::utf8 || to->id == type_id::large_utf8);
  const bool bytes = (from == type_id::binary || from == type_id::large_binary) &&
                     (to->id == type_id::binary || to->id == type_id::large_binary);
  if (strings || bytes) {
    std::vector<std::optional<std::string>> v;
    v.reserve(std::size_t(a->length));
    for (std::int64_t i = 0; i < a->length; ++i)
      v.push_back(a->is_valid(i) ? std::optional<std::string>(a->string_value(i)) : std::nullopt);
    switch (to->id) {
      case type_id::utf8: return string_array(v);
      case type_id::large_utf8: return large_string_array(v);
      case type_id::binary: return binary_array(v);
      default: return large_binary_array(v);
    }
  }
  throw invalid_input_error("column '" + column + "' is " + to_string(*to) + "; cannot cast " + to_string(*a->type) +
                            " to it");
}

}  // namespace lancet::arrow
