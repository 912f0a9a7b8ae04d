// Several Arrow arrays of one type (each possibly sliced) as one: their buffers gathered
// into contiguous validity bitmaps, fixed-width values, bit-packed booleans and
// variable-width offsets + bytes (what an encoded page stores, and what concat builds),
// and copies that own exactly their bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <limits>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"

namespace lancet::arrow {

enum class nullability { none, some, all };

inline std::int64_t total_length(const std::vector<array_ptr>& arrays) noexcept {
  std::int64_t n = 0;
  for (const auto& a : arrays) n += a->length;
  return n;
}

// Copies `count` bits from `src` starting at bit `src_bit` to `dst` at bit `dst_bit`.
inline void copy_bits(const std::uint8_t* src, std::int64_t src_bit, std::uint8_t* dst, std::int64_t dst_bit,
                      std::int64_t count) noexcept {
  if (count <= 0) return;
  if ((src_bit & 7) == 0 && (dst_bit & 7) == 0) {
    std::memcpy(dst + (dst_bit >> 3), src + (src_bit >> 3), std::size_t(count >> 3));
    for (std::int64_t i = count & ~std::int64_t(7); i < count; ++i)
      set_bit(dst, dst_bit + i, get_bit(src, src_bit + i));
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) set_bit(dst, dst_bit + i, get_bit(src, src_bit + i));
}

// Sets `count` bits starting at `dst_bit` to one.
inline void set_bits(std::uint8_t* dst, std::int64_t dst_bit, std::int64_t count) noexcept {
  std::int64_t i = 0;
  for (; i < count && ((dst_bit + i) & 7); ++i) set_bit(dst, dst_bit + i, true);
  const std::int64_t whole = (count - i) >> 3;
  if (whole > 0) std::memset(dst + ((dst_bit + i) >> 3), 0xFF, std::size_t(whole));
  i += whole * 8;
  for (; i < count; ++i) set_bit(dst, dst_bit + i, true);
}

struct gathered_validity {
  nullability kind = nullability::none;
  aligned_buffer bitmap;  // set only when kind == some: 1 = valid, ceil(n / 8) bytes
  std::int64_t null_count = 0;
};

// The validity of the concatenation of `arrays` (Arrow's "logical nulls": a null-type
// array is all null).
inline gathered_validity gather_validity(const std::vector<array_ptr>& arrays) {
  gathered_validity v;
  const std::int64_t n = total_length(arrays);
  for (const auto& a : arrays) v.null_count += a->count_nulls();
  if (v.null_count == 0) return v;
  if (v.null_count == n) {
    v.kind = nullability::all;
    return v;
  }
  v.kind = nullability::some;
  v.bitmap.resize(std::size_t((n + 7) / 8));
  std::int64_t at = 0;
  for (const auto& a : arrays) {
    if (a->type->id == type_id::null) {
      // all null: bits stay zero
    } else if (const auto* bits = a->validity()) {
      copy_bits(bits->data(), a->offset, v.bitmap.data(), at, a->length);
    } else {
      set_bits(v.bitmap.data(), at, a->length);
    }
    at += a->length;
  }
  return v;
}

// Fixed-width values (byte-aligned widths) of the concatenated arrays.
inline aligned_buffer gather_fixed(const std::vector<array_ptr>& arrays, std::int64_t byte_width) {
  // Appended, not resized and overwritten: zero-filling first would touch every byte
  // (and fault in every page of a large buffer) twice.
  aligned_buffer out;
  out.reserve(std::size_t(total_length(arrays) * byte_width));
  for (const auto& a : arrays)
    out.append(a->buffers[1].data() + a->offset * byte_width, std::size_t(a->length * byte_width));
  return out;
}

// Boolean values, bit-packed LSB first.
inline aligned_buffer gather_bits(const std::vector<array_ptr>& arrays) {
  aligned_buffer out;
  const std::int64_t n = total_length(arrays);
  out.resize(std::size_t((n + 7) / 8));
  std::int64_t at = 0;
  for (const auto& a : arrays) {
    copy_bits(a->buffers[1].data(), a->offset, out.data(), at, a->length);
    at += a->length;
  }
  return out;
}

// The item range [begin, end) covered by a (sliced) list or binary array.
inline std::pair<std::int64_t, std::int64_t> offset_span(const array_data& a) noexcept {
  if (a.length == 0) return {0, 0};
  return {a.value_offset(0), a.value_offset(a.length)};
}

// Variable-width bytes of the concatenated arrays (each array's covered span).
inline aligned_buffer gather_var_bytes(const std::vector<array_ptr>& arrays) {
  aligned_buffer out;
  std::size_t total = 0;
  for (const auto& a : arrays) {
    auto [b, e] = offset_span(*a);
    total += std::size_t(e - b);
  }
  out.reserve(total);
  for (const auto& a : arrays) {
    auto [b, e] = offset_span(*a);
    out.append(a->buffers[2].data() + b, std::size_t(e - b));
  }
  return out;
}

// The child of a fixed-size list restricted to the list's own rows.
inline array_ptr fsl_child(const array_data& a) {
  const std::int64_t dim = a.type->list_size;
  return slice(a.children[0], a.offset * dim, a.length * dim);
}

// The items of a list (or large list) covered by its (sliced) rows.
inline array_ptr list_items(const array_data& a) {
  auto [b, e] = offset_span(a);
  return slice(a.children[0], b, e - b);
}

// Memory the arrays' buffers take, as Arrow reports it (used for page sizing).
inline std::uint64_t buffer_memory_size(const array_data& a) noexcept {
  std::uint64_t n = 0;
  for (const auto& b : a.buffers) n += b.size();
  for (const auto& c : a.children) n += buffer_memory_size(*c);
  return n;
}

namespace detail {

// gather_fixed into shared bytes. Large gathers (a scan's read-ahead chunk of vectors:
// tens of MiB each time) are written straight into uninitialised large-block storage
// (core/buffer.hpp: huge pages, freed blocks reused), not zero-filled first.
inline shared_bytes gather_fixed_shared(const std::vector<array_ptr>& arrays, std::int64_t byte_width) {
  const auto total = std::size_t(total_length(arrays) * byte_width);
  if (total < large_alloc_threshold) return shared_bytes(gather_fixed(arrays, byte_width));
  auto mem = shared_uninitialised_bytes(total);
  std::size_t at = 0;
  for (const auto& a : arrays) {
    const auto n = std::size_t(a->length * byte_width);
    if (n) std::memcpy(mem.get() + at, a->buffers[1].data() + a->offset * byte_width, n);
    at += n;
  }
  const std::uint8_t* data = mem.get();
  return shared_bytes(std::shared_ptr<const void>(std::move(mem)), data, total);
}

}  // namespace detail

// The concatenation of arrays of one type into one array that owns exactly its bytes
// (offset 0). Also used to copy buffered arrays so that a small column does not pin a
// caller's large batch in memory.
inline array_ptr concat(const std::vector<array_ptr>& arrays, const type_ptr& type) {
  if (has_dictionary(*type)) {
    // Dictionaries differ from array to array: concatenate the values, then encode.
    std::vector<array_ptr> plain;
    for (const auto& a : arrays) plain.push_back(decode_dictionaries(a));
    return encode_dictionaries(concat(plain, without_dictionaries(type)), type);
  }
  auto out = std::make_shared<array_data>();
  out->type = type;
  out->length = total_length(arrays);
  const auto id = type->id;
  if (id == type_id::null) {
    out->null_count = out->length;
    return out;
  }
  auto v = gather_validity(arrays);
  out->null_count = v.null_count;
  if (v.kind == nullability::some) {
    out->buffers.push_back(shared_bytes(std::move(v.bitmap)));
  } else if (v.kind == nullability::all) {
    aligned_buffer zeros;
    zeros.resize(std::size_t((out->length + 7) / 8));
    out->buffers.push_back(shared_bytes(std::move(zeros)));
  } else {
    out->buffers.push_back(shared_bytes());
  }
  if (id == type_id::boolean) {
    out->buffers.push_back(shared_bytes(gather_bits(arrays)));
  } else if (is_fixed_width(*type)) {
    out->buffers.push_back(detail::gather_fixed_shared(arrays, bit_width(*type) / 8));
  } else if (is_binary_like(id) || is_list_like(id)) {
    const bool large = id == type_id::large_utf8 || id == type_id::large_binary || id == type_id::large_list;
    aligned_buffer offs;
    offs.resize(std::size_t(out->length + 1) * (large ? 8 : 4));
    std::int64_t row = 0, base = 0;
    for (const auto& a : arrays) {
      const auto start = a->length ? a->value_offset(0) : 0;
      for (std::int64_t i = 1; i <= a->length; ++i) {
        const auto o = base + a->value_offset(i) - start;
        if (large) le::store<std::int64_t>(offs.data() + 8 * (row + i), o);
        else le::store<std::int32_t>(offs.data() + 4 * (row + i), std::int32_t(o));
      }
      auto [b, e] = offset_span(*a);
      base += e - b;
      row += a->length;
    }
    if (!large && base > std::numeric_limits<std::int32_t>::max())
      throw invalid_input_error("concatenating these arrays needs " + std::to_string(base) +
                                " items, more than 32-bit offsets can address");
    out->buffers.push_back(shared_bytes(std::move(offs)));
    if (is_binary_like(id)) {
      out->buffers.push_back(shared_bytes(gather_var_bytes(arrays)));
    } else {
      std::vector<array_ptr> items;
      for (const auto& a : arrays) items.push_back(list_items(*a));
      out->children.push_back(concat(items, type->children.at(0).type));
    }
  } else if (id == type_id::fixed_size_list) {
    std::vector<array_ptr> items;
    for (const auto& a : arrays) items.push_back(fsl_child(*a));
    out->children.push_back(concat(items, type->children.at(0).type));
  } else if (id == type_id::struct_) {
    for (std::size_t c = 0; c < type->children.size(); ++c) {
      std::vector<array_ptr> parts;
      for (const auto& a : arrays) parts.push_back(slice(a->children[c], a->offset, a->length));
      out->children.push_back(concat(parts, type->children[c].type));
    }
  }
  return out;
}

namespace detail {

// concat of the slices [r.first, r.first + r.second) of `a` (logical rows), in order,
// without making the slices: the same array, built in one pass per buffer.
inline array_ptr concat_ranges(const array_ptr& a, const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges,
                               const type_ptr& type) {
  if (has_dictionary(*type)) {
    std::vector<array_ptr> parts;
    parts.reserve(ranges.size());
    for (const auto& [off, len] : ranges) parts.push_back(slice(a, off, len));
    return concat(parts, type);
  }
  for (const auto& [off, len] : ranges)
    if (off < 0 || len < 0 || off + len > a->length)
      throw invalid_input_error("slice [" + std::to_string(off) + ", " + std::to_string(off + len) +
                                ") is outside an array of length " + std::to_string(a->length));
  auto out = std::make_shared<array_data>();
  out->type = type;
  std::int64_t n = 0;
  for (const auto& r : ranges) n += r.second;
  out->length = n;
  const auto id = type->id;
  if (id == type_id::null) {
    out->null_count = n;
    return out;
  }
  // Validity as gather_validity builds it from the slices (a slice of an array with no
  // nulls has none; otherwise its nulls are counted from the bitmap).
  const auto* bits = a->validity();
  std::int64_t nulls = 0;
  if (a->null_count != 0 && a->type->id == type_id::null) nulls = n;
  else if (a->null_count != 0 && bits)
    for (const auto& [off, len] : ranges)
      for (std::int64_t i = 0; i < len; ++i) nulls += !get_bit(bits->data(), a->offset + off + i);
  out->null_count = nulls;
  if (nulls == 0) {
    out->buffers.push_back(shared_bytes());
  } else {
    aligned_buffer bitmap;
    bitmap.resize(std::size_t((n + 7) / 8));
    if (nulls != n) {
      std::int64_t at = 0;
      for (const auto& [off, len] : ranges) {
        if (a->type->id == type_id::null) {
        } else if (bits) {
          copy_bits(bits->data(), a->offset + off, bitmap.data(), at, len);
        } else {
          set_bits(bitmap.data(), at, len);
        }
        at += len;
      }
    }
    out->buffers.push_back(shared_bytes(std::move(bitmap)));
  }
  if (id == type_id::boolean) {
    aligned_buffer values;
    values.resize(std::size_t((n + 7) / 8));
    std::int64_t at = 0;
    for (const auto& [off, len] : ranges) {
      copy_bits(a->buffers[1].data(), a->offset + off, values.data(), at, len);
      at += len;
    }
    out->buffers.push_back(shared_bytes(std::move(values)));
  } else if (is_fixed_width(*type)) {
    const std::int64_t w = bit_width(*type) / 8;
    aligned_buffer values;
    values.reserve(std::size_t(n * w));
    for (const auto& [off, len] : ranges)
      values.append(a->buffers[1].data() + (a->offset + off) * w, std::size_t(len * w));
    out->buffers.push_back(shared_bytes(std::move(values)));
  } else if (is_binary_like(id) || is_list_like(id)) {
    const bool large = id == type_id::large_utf8 || id == type_id::large_binary || id == type_id::large_list;
    aligned_buffer offs;
    offs.resize(std::size_t(n + 1) * (large ? 8 : 4));
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // item / byte ranges of the rows
    spans.reserve(ranges.size());
    std::int64_t row = 0, base = 0;
    for (const auto& [off, len] : ranges) {
      const auto start = len ? a->value_offset(off) : 0;
      for (std::int64_t i = 1; i <= len; ++i) {
        const auto o = base + a->value_offset(off + i) - start;
        if (large) le::store<std::int64_t>(offs.data() + 8 * (row + i), o);
        else le::store<std::int32_t>(offs.data() + 4 * (row + i), std::int32_t(o));
      }
      const auto end = len ? a->value_offset(off + len) : 0;
      spans.emplace_back(start, end - start);
      base += end - start;
      row += len;
    }
    if (!large && base > std::numeric_limits<std::int32_t>::max())
      throw invalid_input_error("concatenating these arrays needs " + std::to_string(base) +
                                " items, more than 32-bit offsets can address");
    out->buffers.push_back(shared_bytes(std::move(offs)));
    if (is_binary_like(id)) {
      aligned_buffer bytes;
      bytes.reserve(std::size_t(base));
      for (const auto& [b, len] : spans) bytes.append(a->buffers[2].data() + b, std::size_t(len));
      out->buffers.push_back(shared_bytes(std::move(bytes)));
    } else {
      out->children.push_back(concat_ranges(a->children.at(0), spans, type->children.at(0).type));
    }
  } else if (id == type_id::fixed_size_list) {
    const std::int64_t dim = a->type->list_size;
    std::vector<std::pair<std::int64_t, std::int64_t>> items;
    items.reserve(ranges.size());
    for (const auto& [off, len] : ranges) items.emplace_back((a->offset + off) * dim, len * dim);
    out->children.push_back(concat_ranges(a->children.at(0), items, type->children.at(0).type));
  } else if (id == type_id::struct_) {
    std::vector<std::pair<std::int64_t, std::int64_t>> rows;
    rows.reserve(ranges.size());
    for (const auto& [off, len] : ranges) rows.emplace_back(a->offset + off, len);
    for (std::size_t c = 0; c < type->children.size(); ++c)
      out->children.push_back(concat_ranges(a->children.at(c), rows, type->children[c].type));
  }
  return out;
}

}  // namespace detail

// The rows of the runs [r.first, r.first + r.second) of `a`, in order, as one array
// that owns exactly its bytes (a filter's selection: runs of kept rows).
inline array_ptr take_runs(const array_ptr& a, const std::vector<std::pair<std::int64_t, std::int64_t>>& runs,
                           const type_ptr& type) {
  return detail::concat_ranges(a, runs, type);
}

// Rows idx[0], idx[1], ... of `a` (repeats allowed) as one array that owns exactly its
// bytes: the same array as concat of the one-row slices, without making them.
inline array_ptr take_rows(const array_ptr& a, std::span<const std::int64_t> idx, const type_ptr& type) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  ranges.reserve(idx.size());
  for (auto i : idx) {
    if (!ranges.empty() && ranges.back().first + ranges.back().second == i) ++ranges.back().second;
    else ranges.emplace_back(i, 1);
  }
  return detail::concat_ranges(a, ranges, type);
}

// buffer_memory_size(*deep_copy(a)) without the copy: the bytes `a` takes once
// compacted (what a page-sizing rule measures for a slice that does not own its buffers).
inline std::uint64_t compact_size(const array_data& a) {
  const auto id = a.type->id;
  if (id == type_id::null) return 0;
  const auto n = std::uint64_t(a.length);
  std::uint64_t size = a.count_nulls() > 0 ? (n + 7) / 8 : 0;
  if (id == type_id::boolean) return size + (n + 7) / 8;
  if (is_fixed_width(*a.type)) return size + n * std::uint64_t(bit_width(*a.type) / 8);
  if (is_binary_like(id) || is_list_like(id)) {
    const bool large = id == type_id::large_utf8 || id == type_id::large_binary || id == type_id::large_list;
    size += (n + 1) * (large ? 8 : 4);
    if (is_binary_like(id)) {
      auto [b, e] = offset_span(a);
      return size + std::uint64_t(e - b);
    }
    return size + compact_size(*list_items(a));
  }
  if (id == type_id::fixed_size_list) return size + compact_size(*fsl_child(a));
  if (id == type_id::struct_) {
    for (const auto& c : a.children) size += compact_size(*slice(c, a.offset, a.length));
    return size;
  }
  return size;
}

inline array_ptr deep_copy(const array_data& a) {
  return concat({std::shared_ptr<const array_data>(std::shared_ptr<const void>(), &a)}, a.type);
}

}  // namespace lancet::arrow
