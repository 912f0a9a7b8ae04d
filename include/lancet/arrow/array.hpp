// Arrow-layout arrays (the same buffers and offset/slice semantics as Arrow's
// ArrayData), and record batches. Arrays are immutable and share their buffers.
//
// Buffer layout per type, as in the Arrow columnar format:
//   null                      : []                      (no validity buffer)
//   boolean / fixed width     : [validity, values]
//   utf8 / binary             : [validity, offsets(i32), data]
//   large_utf8 / large_binary : [validity, offsets(i64), data]
//   list / large_list         : [validity, offsets]      children[0] = items
//   fixed_size_list           : [validity]               children[0] = items (length*size)
//   struct                    : [validity]               children    = members
//   map                       : [validity, offsets(i32)] children[0] = entries (struct<key, value>)
//   dictionary                : [validity, indices]      children[0] = the dictionary (values;
//                                                         `offset` does not apply to it)
// An empty validity buffer means "all valid". `offset` applies to every buffer in
// units of values (bits for booleans and validity) and, for structs and fixed-size
// lists, to the children as Arrow specifies.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

inline bool get_bit(const std::uint8_t* bits, std::int64_t i) noexcept {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
inline void set_bit(std::uint8_t* bits, std::int64_t i, bool v) noexcept {
  if (v) bits[i >> 3] |= std::uint8_t(1u << (i & 7));
  else bits[i >> 3] &= std::uint8_t(~(1u << (i & 7)));
}

struct array_data;
using array_ptr = std::shared_ptr<const array_data>;

struct array_data {
  type_ptr type;
  std::int64_t length = 0;
  std::int64_t offset = 0;
  std::int64_t null_count = -1;  // -1: not yet computed
  std::vector<shared_bytes> buffers;
  std::vector<array_ptr> children;

  const data_type& dtype() const noexcept { return *type; }
  const shared_bytes* validity() const noexcept {
    if (type->id == type_id::null || buffers.empty() || !buffers[0]) return nullptr;
    return &buffers[0];
  }
  bool is_valid(std::int64_t i) const noexcept {
    if (type->id == type_id::null) return false;
    const auto* v = validity();
    return v == nullptr || get_bit(v->data(), offset + i);
  }
  bool is_null(std::int64_t i) const noexcept { return !is_valid(i); }

  // Number of nulls in [0, length); computed when not cached.
  std::int64_t count_nulls() const noexcept {
    if (null_count >= 0) return null_count;
    if (type->id == type_id::null) return length;
    const auto* v = validity();
    if (v == nullptr) return 0;
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < length; ++i) n += !get_bit(v->data(), offset + i);
    return n;
  }

  // Typed access to fixed-width values (caller picks T matching the type).
  template <class T>
  const T* values() const noexcept { return buffers[1].as<T>() + offset; }
  template <class T>
  T value(std::int64_t i) const noexcept { return values<T>()[i]; }
  bool bool_value(std::int64_t i) const noexcept { return get_bit(buffers[1].data(), offset + i); }

  // Offsets of variable-width and list arrays, widened to 64 bits.
  std::int64_t value_offset(std::int64_t i) const noexcept {
    const bool large = type->id == type_id::large_utf8 || type->id == type_id::large_binary ||
                       type->id == type_id::large_list;
    return large ? buffers[1].as<std::int64_t>()[offset + i]
                 : std::int64_t{buffers[1].as<std::int32_t>()[offset + i]};
  }
  // The dictionary index of slot i (dictionary arrays; the slot must be valid).
  std::int64_t dictionary_index(std::int64_t i) const noexcept {
    const auto* p = buffers[1].data();
    const auto j = offset + i;
    switch (type->index_type->id) {
      case type_id::int8: return reinterpret_cast<const std::int8_t*>(p)[j];
      case type_id::uint8: return p[j];
      case type_id::int16: return reinterpret_cast<const std::int16_t*>(p)[j];
      case type_id::uint16: return reinterpret_cast<const std::uint16_t*>(p)[j];
      case type_id::int32: return reinterpret_cast<const std::int32_t*>(p)[j];
      case type_id::uint32: return reinterpret_cast<const std::uint32_t*>(p)[j];
      default: return reinterpret_cast<const std::int64_t*>(p)[j];
    }
  }
  std::string_view string_value(std::int64_t i) const noexcept {
    auto b = value_offset(i), e = value_offset(i + 1);
    return {reinterpret_cast<const char*>(buffers[2].data()) + b, std::size_t(e - b)};
  }
  std::string_view fixed_binary_value(std::int64_t i) const noexcept {
    auto w = type->byte_width;
    return {reinterpret_cast<const char*>(buffers[1].data()) + (offset + i) * w, std::size_t(w)};
  }
};

// A zero-copy slice [off, off + len) of an array.
inline array_ptr slice(const array_ptr& a, std::int64_t off, std::int64_t len) {
  if (off < 0 || len < 0 || off + len > a->length)
    throw invalid_input_error("slice [" + std::to_string(off) + ", " + std::to_string(off + len) +
                              ") is outside an array of length " + std::to_string(a->length));
  auto s = std::make_shared<array_data>(*a);
  s->offset = a->offset + off;
  s->length = len;
  s->null_count = (a->null_count == 0) ? 0 : -1;
  return s;
}

struct record_batch {
  std::shared_ptr<const arrow::schema> schema;
  std::vector<array_ptr> columns;
  std::int64_t num_rows() const noexcept { return columns.empty() ? 0 : columns[0]->length; }
};

}  // namespace lancet::arrow
