// Lance 2.0 ("legacy") page encodings: what one page of one column holds, and the
// ArrayEncoding tree that describes it. The choices follow Lance 12's 2.0 strategy:
//   fixed width, bool, null  -> Nullable{NoNull|SomeNull|AllNull} over Flat
//   utf8/binary (+ large)    -> Binary{indices: u64 ends, nulls as ends + adjustment}
//   utf8, >= 100 rows, < 100 distinct values in the page -> Dictionary{u8 indices, items}
//   fixed-size list          -> Nullable over FixedSizeList{items: (recursive)}
// Buffers are numbered in the order they are appended to the page.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/pb/encodings_v2_0.hpp"

namespace lancet::encoding::legacy {

namespace enc20 = pb::enc20;
using arrow::array_ptr;
using arrow::type_id;

// Lance's default dictionary threshold (LANCE_DICT_ENCODING_THRESHOLD).
inline constexpr std::uint64_t dictionary_threshold = 100;

// The buffers of a page under construction.
struct page_buffers {
  std::vector<shared_bytes> buffers;
  std::uint32_t add(aligned_buffer&& b) {
    buffers.emplace_back(std::move(b));
    return std::uint32_t(buffers.size() - 1);
  }
};

inline enc20::array_encoding flat(std::uint64_t bits, std::uint32_t buffer_index) {
  return enc20::array_encoding{enc20::flat{.bits_per_value = bits,
                                           .buffer = enc20::buffer{.buffer_index = buffer_index},
                                           .compression = std::nullopt}};
}

}  // namespace lancet::encoding::legacy

namespace lancet::encoding::detail {

inline std::vector<arrow::array_ptr> fsl_children(const std::vector<arrow::array_ptr>& arrays) {
  std::vector<arrow::array_ptr> out;
  out.reserve(arrays.size());
  for (const auto& a : arrays) out.push_back(arrow::fsl_child(*a));
  return out;
}

// Values (no validity) of a fixed-width or boolean page.
inline pb::enc20::array_encoding encode_plain_values(const std::vector<arrow::array_ptr>& arrays,
                                                     const arrow::data_type& type, legacy::page_buffers& page) {
  if (type.id == arrow::type_id::boolean) return legacy::flat(1, page.add(arrow::gather_bits(arrays)));
  const auto bits = arrow::bit_width(type);
  return legacy::flat(std::uint64_t(bits), page.add(arrow::gather_fixed(arrays, bits / 8)));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::legacy {

inline enc20::array_encoding encode_array(const std::vector<array_ptr>& arrays, const arrow::data_type& type,
                                          page_buffers& page, bool top_level = true);

// Binary / utf8 (and large): u64 "end" indices where a null row's end is shifted by
// null_adjustment (= total bytes + 1), then the concatenated bytes.
inline enc20::array_encoding encode_binary(const std::vector<array_ptr>& arrays, page_buffers& page) {
  const std::int64_t n = arrow::total_length(arrays);
  std::vector<std::uint64_t> ends;
  ends.reserve(std::size_t(n));
  std::uint64_t last = 0;
  for (const auto& a : arrays)
    for (std::int64_t i = 0; i < a->length; ++i) {
      last += std::uint64_t(a->value_offset(i + 1) - a->value_offset(i));
      ends.push_back(last);
    }
  std::uint64_t null_adjustment = 0;
  if (n > 0) {
    null_adjustment = last + 1;
    std::int64_t row = 0;
    for (const auto& a : arrays)
      for (std::int64_t i = 0; i < a->length; ++i, ++row)
        if (!a->is_valid(i)) ends[std::size_t(row)] += null_adjustment;
  }
  aligned_buffer idx;
  idx.resize(ends.size() * 8);
  for (std::size_t i = 0; i < ends.size(); ++i) le::store(idx.data() + 8 * i, ends[i]);
  const auto idx_buf = page.add(std::move(idx));
  const auto bytes_buf = page.add(arrow::gather_var_bytes(arrays));
  enc20::binary b;
  b.indices = enc20::array_encoding{enc20::nullable{enc20::nullable::no_null{flat(64, idx_buf)}}};
  b.bytes = flat(8, bytes_buf);
  b.null_adjustment = null_adjustment;
  return enc20::array_encoding{std::move(b)};
}

// Whether Lance's 2.0 strategy dictionary-encodes this utf8 page: at least `threshold`
// rows and fewer than `threshold` distinct non-null values.
inline bool use_dictionary(const std::vector<array_ptr>& arrays, std::uint64_t threshold = dictionary_threshold) {
  if (std::uint64_t(arrow::total_length(arrays)) < threshold) return false;
  std::unordered_map<std::string_view, std::uint8_t> seen;
  for (const auto& a : arrays)
    for (std::int64_t i = 0; i < a->length; ++i) {
      if (!a->is_valid(i)) continue;
      seen.emplace(a->string_value(i), 0);
      if (seen.size() >= threshold) return false;
    }
  return true;
}

// Dictionary page: u8 indices (0 = null, k = item k-1) and the distinct values in order
// of first appearance, binary-encoded (a single null item when every row is null).
inline enc20::array_encoding encode_dictionary(const std::vector<array_ptr>& arrays, page_buffers& page) {
  std::unordered_map<std::string_view, std::uint8_t> index;
  aligned_buffer indices;
  indices.resize(std::size_t(arrow::total_length(arrays)));
  std::vector<std::string_view> items;
  std::size_t row = 0;
  for (const auto& a : arrays)
    for (std::int64_t i = 0; i < a->length; ++i, ++row) {
      if (!a->is_valid(i)) { indices[row] = 0; continue; }
      auto [it, inserted] = index.emplace(a->string_value(i), std::uint8_t(items.size() + 1));
      if (inserted) items.push_back(it->first);
      indices[row] = it->second;
    }
  // The items as a utf8 array.
  auto dict = std::make_shared<arrow::array_data>();
  dict->type = arrow::utf8();
  aligned_buffer offs, bytes;
  aligned_buffer validity;
  if (items.empty()) {
    dict->length = 1;
    offs.resize(8);
    validity.resize(1);
  } else {
    dict->length = std::int64_t(items.size());
    offs.resize((items.size() + 1) * 4);
    std::int32_t at = 0;
    for (std::size_t k = 0; k < items.size(); ++k) {
      bytes.append(items[k]);
      at += std::int32_t(items[k].size());
      le::store<std::int32_t>(offs.data() + 4 * (k + 1), at);
    }
  }
  dict->buffers = {validity.empty() ? shared_bytes() : shared_bytes(std::move(validity)), shared_bytes(std::move(offs)),
                   shared_bytes(std::move(bytes))};
  const auto idx_buf = page.add(std::move(indices));
  enc20::dictionary d;
  d.indices = enc20::array_encoding{enc20::nullable{enc20::nullable::no_null{flat(8, idx_buf)}}};
  d.items = encode_binary({dict}, page);
  d.num_dictionary_items = std::uint32_t(dict->length);
  return enc20::array_encoding{std::move(d)};
}

// A dictionary field's page (Lance 12's AlreadyDictionaryEncoder): Nullable{NoNull{Flat}} indices of the
// field's index width (0-based, first-appearance order) and the distinct values encoded
// as the value type; rows that are null point at one null item after the values (a
// single null item when every row is null).
inline enc20::array_encoding encode_field_dictionary(const std::vector<array_ptr>& arrays,
                                                     const arrow::type_ptr& value_type,
                                                     const arrow::data_type& index_type, page_buffers& page,
                                                     const std::string& column) {
  const auto w = std::size_t(arrow::bit_width(index_type) / 8);
  const std::int64_t n = arrow::total_length(arrays);
  std::unordered_map<std::string_view, std::int64_t> seen;
  std::vector<array_ptr> distinct;  // one-row slices, in order of first appearance
  std::vector<std::int64_t> keys(std::size_t(n), -1);
  bool nulls = false;
  std::size_t row = 0;
  for (const auto& a : arrays)
    for (std::int64_t i = 0; i < a->length; ++i, ++row) {
      if (!a->is_valid(i)) { nulls = true; continue; }
      auto [it, fresh] = seen.emplace(arrow::slot_bytes(*a, i), std::int64_t(distinct.size()));
      if (fresh) distinct.push_back(arrow::slice(a, i, 1));
      keys[row] = it->second;
    }
  const std::int64_t null_item = std::int64_t(distinct.size());
  const bool add_null = nulls || distinct.empty();
  const std::int64_t num_items = null_item + (add_null ? 1 : 0);
  const bool is_signed = index_type.id == type_id::int8 || index_type.id == type_id::int16 ||
                         index_type.id == type_id::int32 || index_type.id == type_id::int64;
  const auto value_bits = std::uint32_t(w * 8 - (is_signed ? 1 : 0));
  if (value_bits < 63 && std::uint64_t(num_items) > (std::uint64_t(1) << value_bits))
    throw invalid_input_error("column '" + column + "': a page holds " + std::to_string(num_items) +
                              " dictionary items, more than its index type " + arrow::to_string(index_type) +
                              " can index");
  aligned_buffer indices;
  indices.resize(std::size_t(n) * w);
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const std::uint64_t k = std::uint64_t(keys[r] < 0 ? null_item : keys[r]);
    std::memcpy(indices.data() + r * w, &k, w);  // little-endian: the low bytes
  }
  // The items: the distinct values, then the null item.
  if (add_null) distinct.push_back(arrow::take_flat(*arrays.at(0), {-1}));
  auto items = arrow::concat(distinct, value_type);
  const auto idx_buf = page.add(std::move(indices));
  enc20::dictionary d;
  d.indices = enc20::array_encoding{enc20::nullable{enc20::nullable::no_null{flat(w * 8, idx_buf)}}};
  d.items = encode_array({items}, *value_type, page, false);
  d.num_dictionary_items = std::uint32_t(num_items);
  return enc20::array_encoding{std::move(d)};
}

// Lance's "basic" encoder: validity (when some rows are null) around the values.
template <class Values>
enc20::array_encoding encode_nullable(const std::vector<array_ptr>& arrays, page_buffers& page, Values&& values) {
  auto v = arrow::gather_validity(arrays);
  using arrow::nullability;
  if (v.kind == nullability::all) return enc20::array_encoding{enc20::nullable{enc20::nullable::all_null{}}};
  if (v.kind == nullability::none) return enc20::array_encoding{enc20::nullable{enc20::nullable::no_null{values()}}};
  const auto validity_buf = page.add(std::move(v.bitmap));
  enc20::nullable::some_null s;
  s.validity = flat(1, validity_buf);
  s.values = values();
  return enc20::array_encoding{enc20::nullable{std::move(s)}};
}

// The encoding of a page of `type` (any type a "primitive" 2.0 column holds). Only a
// column's own utf8 values are considered for a dictionary, not items of a list.
inline enc20::array_encoding encode_array(const std::vector<array_ptr>& arrays, const arrow::data_type& type,
                                          page_buffers& page, bool top_level) {
  switch (type.id) {
    case type_id::utf8:
      if (top_level && use_dictionary(arrays)) return encode_dictionary(arrays, page);
      return encode_binary(arrays, page);
    case type_id::large_utf8:
    case type_id::binary:
    case type_id::large_binary:
      return encode_binary(arrays, page);
    case type_id::null:
      return enc20::array_encoding{enc20::nullable{enc20::nullable::all_null{}}};
    case type_id::fixed_size_list:
      return encode_nullable(arrays, page, [&] {
        const auto& item = type.children.at(0);
        enc20::fixed_size_list f;
        f.dimension = std::uint32_t(type.list_size);
        f.items = encode_array(detail::fsl_children(arrays), *item.type, page, false);
        f.has_validity = false;
        return enc20::array_encoding{std::move(f)};
      });
    case type_id::list:
    case type_id::large_list:
    case type_id::struct_:
      throw unsupported_error("a 2.0 page cannot hold a nested " +
                              std::string(type.id == type_id::struct_ ? "struct" : "list") +
                              " inside a fixed-size list");
    default:
      return encode_nullable(arrays, page, [&] { return detail::encode_plain_values(arrays, type, page); });
  }
}

}  // namespace lancet::encoding::legacy
