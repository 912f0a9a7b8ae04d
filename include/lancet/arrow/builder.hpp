// Array makers: the short way to make whole arrays, nested arrays and record batches
// in tests, examples and user code, from values given at once (the incremental
// builders they use are in arrow/leaf_builder.hpp).
//
//   auto a = arrow::make_array<int32_t>({1, std::nullopt, 3});
//   auto s = arrow::string_array({"a", std::nullopt});
//   auto t = arrow::make_array<int64_t>({1, 2}, arrow::timestamp(arrow::time_unit::micro, "UTC"));
//   auto l = arrow::make_list(a, {0, 2, 2, 3}, {true, false, true});
//   auto v = arrow::make_fixed_size_list(arrow::make_array<float>({1, 2, 3, 4}), 2);
//   auto st = arrow::struct_array({{"a", a}, {"s", s3}}, {true, true, false});
//
// Validity is given as std::vector<bool> (true = valid); an empty vector means
// "all valid". Builders write no validity buffer when nothing is null. Values under
// null slots are zero. Every function checks its input and throws
// invalid_input_error naming the problem.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/leaf_builder.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

// ---- one-call array makers ------------------------------------------------------

template <class T, class Values>
array_ptr make_array_from(const Values& values, type_ptr type = default_type_for<T>()) {
  builder<T> b(std::move(type));
  for (const auto& v : values) b.append(v);
  return b.finish();
}

template <class T>
array_ptr make_array(std::initializer_list<std::optional<T>> values, type_ptr type = default_type_for<T>()) {
  return make_array_from<T>(values, std::move(type));
}
template <class T>
array_ptr make_array(const std::vector<std::optional<T>>& values, type_ptr type = default_type_for<T>()) {
  return make_array_from<T>(values, std::move(type));
}
template <class T>
array_ptr make_array(const std::vector<T>& values, type_ptr type = default_type_for<T>()) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    primitive_builder<T> b(std::move(type));
    b.append_values(std::span<const T>(values.data(), values.size()));
    return b.finish();
  } else {
    return make_array_from<T>(values, std::move(type));
  }
}

inline array_ptr null_array(std::int64_t length) {
  if (length < 0) throw invalid_input_error("null_array: negative length " + std::to_string(length));
  return null_builder().append_nulls(length).finish();
}

inline array_ptr bool_array(std::initializer_list<std::optional<bool>> values) {
  return make_array_from<bool>(values);
}
inline array_ptr bool_array(const std::vector<std::optional<bool>>& values) { return make_array_from<bool>(values); }

inline array_ptr float16_array(std::initializer_list<std::optional<float>> values) {
  float16_builder b;
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr float16_array(const std::vector<std::optional<float>>& values) {
  float16_builder b;
  for (const auto& v : values) b.append(v);
  return b.finish();
}

#define LANCET_ARROW_BINARY_MAKER(fn, type_fn)                                                     \
  inline array_ptr fn(std::initializer_list<std::optional<std::string_view>> values) {             \
    return make_array_from<std::string_view>(values, type_fn());                                   \
  }                                                                                                \
  inline array_ptr fn(const std::vector<std::optional<std::string>>& values) {                     \
    return make_array_from<std::string>(values, type_fn());                                        \
  }                                                                                                \
  inline array_ptr fn(const std::vector<std::string>& values) {                                    \
    return make_array_from<std::string>(values, type_fn());                                        \
  }
LANCET_ARROW_BINARY_MAKER(string_array, utf8)
LANCET_ARROW_BINARY_MAKER(large_string_array, large_utf8)
LANCET_ARROW_BINARY_MAKER(binary_array, binary)
LANCET_ARROW_BINARY_MAKER(large_binary_array, large_binary)
#undef LANCET_ARROW_BINARY_MAKER

inline array_ptr fixed_size_binary_array(std::int32_t width,
                                         std::initializer_list<std::optional<std::string_view>> values) {
  fixed_size_binary_builder b(width);
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr fixed_size_binary_array(std::int32_t width, const std::vector<std::optional<std::string>>& values) {
  fixed_size_binary_builder b(width);
  for (const auto& v : values) b.append(v);
  return b.finish();
}

inline array_ptr decimal128_array(std::int32_t precision, std::int32_t scale,
                                  std::initializer_list<std::optional<int128_t>> values) {
  decimal_builder b(decimal128(precision, scale));
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr decimal256_array(std::int32_t precision, std::int32_t scale,
                                  std::initializer_list<std::optional<int128_t>> values) {
  decimal_builder b(decimal256(precision, scale));
  for (const auto& v : values) b.append(v);
  return b.finish();
}

// ---- nested arrays from children --------------------------------------------------

namespace detail {

template <class Offset>
array_ptr make_list_impl(type_id id, field item, array_ptr child, const std::vector<Offset>& offsets,
                         const validity_list& validity) {
  const char* kind = id == type_id::list ? "make_list" : "make_large_list";
  if (!child) throw invalid_input_error(std::string(kind) + ": the child array is null");
  if (!item.type) item.type = child->type;
  if (!equals(*item.type, *child->type))
    throw invalid_input_error(std::string(kind) + ": item field '" + item.name + "' has type " +
                              to_string(*item.type) + " but the child array is " + to_string(*child->type));
  if (offsets.empty())
    throw invalid_input_error(std::string(kind) + ": offsets need length + 1 entries (at least one)");
  if (offsets[0] < 0) throw invalid_input_error(std::string(kind) + ": offset 0 is negative");
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1])
      throw invalid_input_error(std::string(kind) + ": offsets decrease at index " + std::to_string(i) + " (" +
                                std::to_string(offsets[i - 1]) + " then " + std::to_string(offsets[i]) + ")");
  if (std::int64_t(offsets.back()) > child->length)
    throw invalid_input_error(std::string(kind) + ": last offset " + std::to_string(offsets.back()) +
                              " is past the child's length " + std::to_string(child->length));
  const auto length = std::int64_t(offsets.size()) - 1;
  std::int64_t nulls = 0;
  auto bitmap = pack_validity(validity, length, nulls, kind);
  aligned_buffer ob;
  ob.append(offsets.data(), offsets.size() * sizeof(Offset));
  auto t = std::make_shared<data_type>();
  t->id = id;
  t->children.push_back(std::move(item));
  return new_array(std::move(t), length, nulls, {std::move(bitmap), shared_bytes(std::move(ob))},
                   {std::move(child)});
}

}  // namespace detail

// list<item>: `offsets` has length + 1 entries into `child`.
inline array_ptr make_list(field item, array_ptr child, const std::vector<std::int32_t>& offsets,
                           const validity_list& validity = {}) {
  return detail::make_list_impl(type_id::list, std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_list(array_ptr child, const std::vector<std::int32_t>& offsets,
                           const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_list(std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_large_list(field item, array_ptr child, const std::vector<std::int64_t>& offsets,
                                 const validity_list& validity = {}) {
  return detail::make_list_impl(type_id::large_list, std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_large_list(array_ptr child, const std::vector<std::int64_t>& offsets,
                                 const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_large_list(std::move(item), std::move(child), offsets, validity);
}

// map<key, value>: `offsets` (length + 1 entries) into `keys` and `values` (entry
// arrays of equal length; keys must not be null).
inline array_ptr make_map(array_ptr keys, array_ptr values, const std::vector<std::int32_t>& offsets,
                          const validity_list& validity = {}, bool value_nullable = true) {
  if (!keys || !values) throw invalid_input_error("make_map: the key or value array is null");
  if (keys->length != values->length)
    throw invalid_input_error("make_map: " + std::to_string(keys->length) + " keys but " +
                              std::to_string(values->length) + " values");
  if (keys->count_nulls() > 0) throw invalid_input_error("make_map: map keys cannot be null");
  auto t = map(keys->type, values->type, value_nullable);
  const auto& entries_field = t->children[0];
  auto entries = detail::new_array(entries_field.type, keys->length, 0, {shared_bytes()}, {keys, values});
  auto list = detail::make_list_impl(type_id::list, entries_field, std::move(entries), offsets, validity);
  auto out = std::make_shared<array_data>(*list);
  out->type = std::move(t);
  return out;
}

// dictionary<index, value>: integer `indices` (nulls are null slots) into `dictionary`.
inline array_ptr make_dictionary(array_ptr indices, array_ptr dictionary_values) {
  if (!indices || !dictionary_values) throw invalid_input_error("make_dictionary: an array is null");
  auto out = std::make_shared<array_data>(*indices);
  out->type = dictionary(indices->type, dictionary_values->type);
  out->children = {std::move(dictionary_values)};
  return out;
}

// fixed_size_list<item>[size]: the child holds length * size values.
inline array_ptr make_fixed_size_list(field item, array_ptr child, std::int32_t size,
                                      const validity_list& validity = {}) {
  if (!child) throw invalid_input_error("make_fixed_size_list: the child array is null");
  if (size < 0) throw invalid_input_error("make_fixed_size_list: negative list size " + std::to_string(size));
  if (!item.type) item.type = child->type;
  if (!equals(*item.type, *child->type))
    throw invalid_input_error("make_fixed_size_list: item field '" + item.name + "' has type " +
                              to_string(*item.type) + " but the child array is " + to_string(*child->type));
  std::int64_t length = 0;
  if (size == 0) {
    length = std::int64_t(validity.size());
  } else {
    if (child->length % size != 0)
      throw invalid_input_error("make_fixed_size_list: child length " + std::to_string(child->length) +
                                " is not a multiple of the list size " + std::to_string(size));
    length = child->length / size;
  }
  std::int64_t nulls = 0;
  auto bitmap = detail::pack_validity(validity, length, nulls, "make_fixed_size_list");
  return detail::new_array(fixed_size_list(std::move(item), size), length, nulls, {std::move(bitmap)},
                           {std::move(child)});
}
inline array_ptr make_fixed_size_list(array_ptr child, std::int32_t size, const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_fixed_size_list(std::move(item), std::move(child), size, validity);
}

// struct<fields...>: one child per field, all of the struct's length. With no
// fields, the length is the validity list's size.
inline array_ptr make_struct(std::vector<field> fields, std::vector<array_ptr> children,
                             const validity_list& validity = {}) {
  if (fields.size() != children.size())
    throw invalid_input_error("make_struct: " + std::to_string(fields.size()) + " fields but " +
                              std::to_string(children.size()) + " children");
  std::int64_t length = children.empty() ? std::int64_t(validity.size()) : -1;
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto& f = fields[i];
    if (!children[i]) throw invalid_input_error("make_struct: child '" + f.name + "' is null");
    if (!f.type) f.type = children[i]->type;
    if (!equals(*f.type, *children[i]->type))
      throw invalid_input_error("make_struct: field '" + f.name + "' has type " + to_string(*f.type) +
                                " but its child array is " + to_string(*children[i]->type));
    if (length < 0) length = children[i]->length;
    if (children[i]->length != length)
      throw invalid_input_error("make_struct: child '" + f.name + "' has length " +
                                std::to_string(children[i]->length) + ", expected " + std::to_string(length));
  }
  std::int64_t nulls = 0;
  auto bitmap = detail::pack_validity(validity, length, nulls, "make_struct");
  return detail::new_array(struct_(std::move(fields)), length, nulls, {std::move(bitmap)}, std::move(children));
}

// struct from named children (fields nullable, types from the children).
inline array_ptr struct_array(const std::vector<std::pair<std::string, array_ptr>>& members,
                              const validity_list& validity = {}) {
  std::vector<field> fields;
  std::vector<array_ptr> children;
  for (const auto& [name, child] : members) {
    fields.push_back(field{name, child ? child->type : nullptr, true, {}});
    children.push_back(child);
  }
  return make_struct(std::move(fields), std::move(children), validity);
}

// list<T> from nested values: list_array<int32_t>({{1, 2}, {}, {3, std::nullopt}}, {true, false, true}).
template <class T>
array_ptr list_array(const std::vector<std::vector<std::optional<T>>>& lists, const validity_list& validity = {},
                     type_ptr item_type = default_type_for<T>()) {
  builder<T> b(std::move(item_type));
  std::vector<std::int32_t> offsets{0};
  for (const auto& l : lists) {
    for (const auto& v : l) b.append(v);
    if (b.length() > std::numeric_limits<std::int32_t>::max())
      throw invalid_input_error("list_array: more than 2^31 - 1 items; use make_large_list");
    offsets.push_back(std::int32_t(b.length()));
  }
  return make_list(b.finish(), offsets, validity);
}

// ---- record batches ------------------------------------------------------------------

// An array of `length` nulls of any type (zero-length: an empty array of the type).
inline array_ptr null_array_of(const type_ptr& type, std::int64_t length) {
  auto a = std::make_shared<array_data>();
  a->type = type;
  a->length = length;
  a->null_count = length;
  if (type->id == type_id::null) return a;
  aligned_buffer validity;
  validity.resize(std::size_t((length + 7) / 8));
  a->buffers.push_back(shared_bytes(std::move(validity)));
  const auto id = type->id;
  if (is_fixed_width(*type)) {
    aligned_buffer values;
    values.resize(std::size_t((length * bit_width(*type) + 7) / 8));
    a->buffers.push_back(shared_bytes(std::move(values)));
  } else if (is_binary_like(id) || is_list_like(id)) {
    const bool large = id == type_id::large_utf8 || id == type_id::large_binary || id == type_id::large_list;
    aligned_buffer offsets;
    offsets.resize(std::size_t(length + 1) * (large ? 8 : 4));
    a->buffers.push_back(shared_bytes(std::move(offsets)));
    if (is_binary_like(id)) a->buffers.push_back(shared_bytes());
    else a->children.push_back(null_array_of(type->children.at(0).type, 0));
  } else if (id == type_id::fixed_size_list) {
    a->children.push_back(null_array_of(type->children.at(0).type, length * type->list_size));
  } else if (id == type_id::struct_) {
    for (const auto& c : type->children) a->children.push_back(null_array_of(c.type, length));
  } else if (id == type_id::dictionary) {
    // Zero indices (every slot null) into an empty dictionary of the value type.
    aligned_buffer indices;
    indices.resize(std::size_t(length * bit_width(*type->index_type) / 8));
    a->buffers.push_back(shared_bytes(std::move(indices)));
    a->children.push_back(null_array_of(type->children.at(0).type, 0));
  }
  return a;
}

// A batch from named columns (fields nullable, types from the arrays).
inline record_batch make_batch(const std::vector<std::pair<std::string, array_ptr>>& columns,
                               arrow::metadata schema_metadata = {}) {
  auto s = std::make_shared<schema>();
  record_batch rb;
  for (const auto& [name, col] : columns) {
    if (!col) throw invalid_input_error("make_batch: column '" + name + "' is null");
    if (!rb.columns.empty() && col->length != rb.columns[0]->length)
      throw invalid_input_error("make_batch: column '" + name + "' has " + std::to_string(col->length) +
                                " rows, expected " + std::to_string(rb.columns[0]->length));
    s->fields.push_back(field{name, col->type, true, {}});
    rb.columns.push_back(col);
  }
  s->metadata = std::move(schema_metadata);
  rb.schema = std::move(s);
  return rb;
}

// A batch against a given schema: column count, types and lengths are checked.
inline record_batch make_batch(std::shared_ptr<const schema> s, std::vector<array_ptr> columns) {
  if (!s) throw invalid_input_error("make_batch: the schema is null");
  if (s->fields.size() != columns.size())
    throw invalid_input_error("make_batch: the schema has " + std::to_string(s->fields.size()) + " fields but " +
                              std::to_string(columns.size()) + " columns were given");
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& f = s->fields[i];
    if (!columns[i]) throw invalid_input_error("make_batch: column '" + f.name + "' is null");
    if (!f.type || !equals(*f.type, *columns[i]->type))
      throw invalid_input_error("make_batch: column '" + f.name + "' is " + to_string(*columns[i]->type) +
                                ", the schema says " + (f.type ? to_string(*f.type) : std::string("nothing")));
    if (columns[i]->length != columns[0]->length)
      throw invalid_input_error("make_batch: column '" + f.name + "' has " + std::to_string(columns[i]->length) +
                                " rows, expected " + std::to_string(columns[0]->length));
  }
  record_batch rb;
  rb.schema = std::move(s);
  rb.columns = std::move(columns);
  return rb;
}

}  // namespace lancet::arrow
