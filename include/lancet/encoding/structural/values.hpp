// Gathering a leaf column's visible values (runs over Arrow arrays, see repdef.hpp)
// into a data block: fixed-width bytes, bitmaps for booleans, 32/64-bit offsets and
// bytes for strings and binaries (a null value is stored empty), and fixed-size lists
// with their items' validity.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/repdef.hpp"

namespace lancet::encoding::detail {

inline void gather_fsl(const arrow::data_type& t, const std::vector<structural::shredded_leaf::run>& runs, std::uint64_t rows,
                       structural::data_block& out) {
  // Runs of rows -> runs of items, one layer at a time.
  std::vector<structural::shredded_leaf::run> cur = runs;
  const arrow::data_type* type = &t;
  std::uint64_t items = rows;
  while (type->id == arrow::type_id::fixed_size_list) {
    const auto dim = std::int64_t(type->list_size);
    items *= std::uint64_t(dim);
    std::vector<structural::shredded_leaf::run> next;
    for (const auto& r : cur) {
      const auto& child = r.array->children.at(0);
      next.push_back({child, (r.array->offset + r.begin) * dim, r.count * dim});
    }
    structural::fsl_layer layer;
    layer.dimension = std::uint64_t(dim);
    std::int64_t nulls = 0;
    for (const auto& r : next) {
      if (r.array->type->id == arrow::type_id::null) { nulls += r.count; continue; }
      if (const auto* v = r.array->validity())
        for (std::int64_t i = 0; i < r.count; ++i) nulls += !arrow::get_bit(v->data(), r.array->offset + r.begin + i);
    }
    if (nulls) {
      aligned_buffer bits;
      bits.resize(std::size_t((items + 7) / 8));
      std::int64_t at = 0;
      for (const auto& r : next) {
        if (r.array->type->id == arrow::type_id::null) {
        } else if (const auto* v = r.array->validity()) {
          arrow::copy_bits(v->data(), r.array->offset + r.begin, bits.data(), at, r.count);
        } else {
          arrow::set_bits(bits.data(), at, r.count);
        }
        at += r.count;
      }
      layer.has_validity = true;
      layer.validity = shared_bytes(std::move(bits));
    }
    out.fsl.push_back(std::move(layer));
    cur = std::move(next);
    type = type->children.at(0).type.get();
  }
  const auto bits = type->id == arrow::type_id::boolean ? 1 : arrow::bit_width(*type);
  if (bits <= 0)
    throw unsupported_error("fixed-size lists of " + arrow::to_string(*type) +
                            " cannot be written by lancet (items must be fixed-width)");
  out.bits_per_value = std::uint64_t(bits);
  if (cur.size() == 1 && bits % 8 == 0 && cur[0].array->type->id != arrow::type_id::null) {
    const auto& r = cur[0];
    const auto w = bits / 8;
    out.data = r.array->buffers[1].slice(std::size_t((r.array->offset + r.begin) * w), std::size_t(r.count * w));
    return;
  }
  aligned_buffer data;
  data.resize(std::size_t((items * std::uint64_t(bits) + 7) / 8));
  std::int64_t at = 0;
  for (const auto& r : cur) {
    if (r.array->type->id == arrow::type_id::null) {
    } else if (bits == 1) {
      arrow::copy_bits(r.array->buffers[1].data(), r.array->offset + r.begin, data.data(), at, r.count);
    } else {
      const auto w = bits / 8;
      std::memcpy(data.data() + at * w, r.array->buffers[1].data() + (r.array->offset + r.begin) * w, std::size_t(r.count * w));
    }
    at += r.count;
  }
  out.data = shared_bytes(std::move(data));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// The visible values of a shredded leaf whose Arrow type is `t`.
inline data_block gather_values(const arrow::data_type& t, const shredded_leaf& leaf) {
  data_block out;
  out.num_values = leaf.num_values;
  const auto id = t.id;
  if (id == arrow::type_id::struct_ && !t.children.empty()) {
    // A packed struct: each row is its children's values side by side.
    std::vector<std::uint64_t> widths;
    std::uint64_t row = 0;
    for (const auto& c : t.children) {
      const auto w = arrow::bit_width(*c.type);
      if (w <= 0 || w % 8 || c.type->id == arrow::type_id::boolean)
        throw unsupported_error("packed struct member '" + c.name + "' is " + arrow::to_string(*c.type) +
                                "; packed structs hold byte-aligned fixed-width members only");
      widths.push_back(std::uint64_t(w / 8));
      row += std::uint64_t(w / 8);
    }
    out.k = data_block::kind::fixed;
    out.bits_per_value = row * 8;
    aligned_buffer data;
    data.resize(std::size_t(leaf.num_values * row));
    std::uint64_t at = 0;
    for (const auto& r : leaf.values) {
      const auto& a = *r.array;
      std::uint64_t col = 0;
      for (std::size_t c = 0; c < t.children.size(); ++c) {
        const auto& child = *a.children[c];
        if (child.count_nulls() > 0 && arrow::slice(a.children[c], a.offset + r.begin, r.count)->count_nulls() > 0)
          throw unsupported_error("packed struct member '" + t.children[c].name + "' holds nulls; packed structs cannot store them");
        const auto w = widths[c];
        const std::uint8_t* src = child.buffers[1].data() + (child.offset + a.offset + r.begin) * std::int64_t(w);
        for (std::int64_t i = 0; i < r.count; ++i)
          std::memcpy(data.data() + (at + std::uint64_t(i)) * row + col, src + i * std::int64_t(w), std::size_t(w));
        col += w;
      }
      at += std::uint64_t(r.count);
    }
    out.data = shared_bytes(std::move(data));
    return out;
  }
  if (id == arrow::type_id::null || id == arrow::type_id::struct_) {
    out.k = data_block::kind::empty;
    return out;
  }
  if (id == arrow::type_id::fixed_size_list) {
    out.k = data_block::kind::fixed_size_list;
    detail::gather_fsl(t, leaf.values, leaf.num_values, out);
    return out;
  }
  // One run of byte-aligned values: the Arrow buffer itself (no copy).
  if (leaf.values.size() <= 1 && !arrow::is_binary_like(id) && id != arrow::type_id::boolean && arrow::is_fixed_width(t)) {
    const auto w = arrow::bit_width(t) / 8;
    out.k = data_block::kind::fixed;
    out.bits_per_value = std::uint64_t(w * 8);
    if (leaf.values.empty()) return out;
    const auto& r = leaf.values[0];
    out.data = r.array->buffers[1].slice(std::size_t((r.array->offset + r.begin) * w), std::size_t(r.count * w));
    return out;
  }
  if (arrow::is_binary_like(id)) {
    out.k = data_block::kind::variable;
    const bool large = arrow::is_large_binary_like(id);
    out.bits_per_offset = large ? 64 : 32;
    std::uint64_t total = 0;
    for (const auto& r : leaf.values) {
      const auto& a = *r.array;
      total += std::uint64_t(a.value_offset(r.begin + r.count) - a.value_offset(r.begin));
    }
    if (!large && total > std::numeric_limits<std::uint32_t>::max())
      throw invalid_input_error("a page of " + arrow::to_string(t) + " values holds " + std::to_string(total) +
                                " bytes, more than 32-bit offsets address; use a large type");
    aligned_buffer offs, bytes;
    offs.resize(std::size_t((leaf.num_values + 1) * (large ? 8 : 4)));
    bytes.reserve(std::size_t(total));
    std::uint64_t row = 0;
    for (const auto& r : leaf.values) {
      const auto& a = *r.array;
      const bool nulls = a.validity() != nullptr;
      if (!nulls) {
        const auto b = a.value_offset(r.begin), e = a.value_offset(r.begin + r.count);
        const auto base = bytes.size();
        bytes.append(a.buffers[2].data() + b, std::size_t(e - b));
        for (std::int64_t i = 1; i <= r.count; ++i) {
          const std::uint64_t o = base + std::uint64_t(a.value_offset(r.begin + i) - b);
          if (large) le::store<std::uint64_t>(offs.data() + 8 * (row + std::uint64_t(i)), o);
          else le::store<std::uint32_t>(offs.data() + 4 * (row + std::uint64_t(i)), std::uint32_t(o));
        }
      } else {
        for (std::int64_t i = 0; i < r.count; ++i) {
          if (a.is_valid(r.begin + i)) {
            const auto sv = a.string_value(r.begin + i);
            bytes.append(sv);
          }
          const std::uint64_t o = bytes.size();
          if (large) le::store<std::uint64_t>(offs.data() + 8 * (row + std::uint64_t(i) + 1), o);
          else le::store<std::uint32_t>(offs.data() + 4 * (row + std::uint64_t(i) + 1), std::uint32_t(o));
        }
      }
      row += std::uint64_t(r.count);
    }
    out.offsets = shared_bytes(std::move(offs));
    out.data = shared_bytes(std::move(bytes));
    return out;
  }
  const auto bits = id == arrow::type_id::boolean ? 1 : arrow::bit_width(t);
  if (bits <= 0) throw unsupported_error("lancet cannot write " + arrow::to_string(t) + " leaves in 2.1+ files");
  out.k = data_block::kind::fixed;
  out.bits_per_value = std::uint64_t(bits);
  aligned_buffer data;
  data.resize(std::size_t((leaf.num_values * std::uint64_t(bits) + 7) / 8));
  std::int64_t at = 0;
  for (const auto& r : leaf.values) {
    const auto& a = *r.array;
    if (bits == 1) arrow::copy_bits(a.buffers[1].data(), a.offset + r.begin, data.data(), at, r.count);
    else {
      const auto w = bits / 8;
      std::memcpy(data.data() + at * w, a.buffers[1].data() + (a.offset + r.begin) * w, std::size_t(r.count * w));
    }
    at += r.count;
  }
  out.data = shared_bytes(std::move(data));
  return out;
}

}  // namespace lancet::encoding::structural
