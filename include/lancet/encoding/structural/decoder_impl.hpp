// The definitions of encoding/structural/decoder.hpp: decoding each leaf's pages and
// assembling a field's Arrow array from its leaves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/structural/decoder.hpp"
#include "lancet/encoding/structural/page_decoder.hpp"
#include "lancet/encoding/structural/page_ranges.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/file2.hpp"

namespace lancet::encoding::detail {

// A read of at most 1/partial_page_fraction of a page's rows fetches just those rows'
// bytes (full-zip) or chunks (mini-block) instead of the page.
inline constexpr std::uint64_t partial_page_fraction = 8;
// A mini-block page smaller than this is fetched whole (and kept by the page cache for
// the next rows of the same take) when many runs of rows want it: its chunks are small,
// so reading them one by one costs more calls than the bytes it saves (1,000 sorted
// rows of a 0.4 MB int64 page: 4x slower chunk by chunk).
inline constexpr std::uint64_t partial_mini_block_min_bytes = std::uint64_t(1) << 20;
// ... but up to this many runs read only their chunks (the page's chunk metadata and
// dictionary once, then one small read per run) when the page holds at least
// partial_mini_block_few_runs_min_bytes: a one-row take of a 0.4 MB page read it whole,
// 26 us when the memory was warm and 1.1 ms when each read landed in freshly mapped
// pages (a smaller page costs one read either way); a vector search's k rows of a
// 1M-row page are 3-4x faster chunk by chunk (bench/RESULTS.md, bench_query).
inline constexpr std::size_t partial_mini_block_max_runs = 32;
inline constexpr std::uint64_t partial_mini_block_few_runs_min_bytes = std::uint64_t(64) << 10;

inline shared_bytes bytes_of(aligned_buffer&& b) { return shared_bytes(std::move(b)); }

inline void append_node(structural::node_elements& acc, structural::node_elements&& part, bool list) {
  if (acc.length == 0 && acc.offsets.empty()) {
    acc = std::move(part);
    return;
  }
  // validity
  if (acc.null_count || part.null_count) {
    aligned_buffer v;
    v.resize(std::size_t((acc.length + part.length + 7) / 8));
    if (acc.null_count) arrow::copy_bits(acc.validity.data(), 0, v.data(), 0, std::int64_t(acc.length));
    else arrow::set_bits(v.data(), 0, std::int64_t(acc.length));
    if (part.null_count) arrow::copy_bits(part.validity.data(), 0, v.data(), std::int64_t(acc.length), std::int64_t(part.length));
    else arrow::set_bits(v.data(), std::int64_t(acc.length), std::int64_t(part.length));
    acc.validity = std::move(v);
  }
  acc.null_count += part.null_count;
  acc.length += part.length;
  if (list) {
    const auto base = acc.offsets.empty() ? 0 : acc.offsets.back();
    if (acc.offsets.empty()) acc.offsets.push_back(0);
    for (std::size_t i = 1; i < part.offsets.size(); ++i) acc.offsets.push_back(base + part.offsets[i]);
  }
}

inline shared_bytes validity_buffer(const structural::node_elements& n) {
  if (n.null_count == 0) return {};
  aligned_buffer copy;
  copy.append(n.validity.view());
  return shared_bytes(std::move(copy));
}

// Variable values as Arrow offsets (32- or 64-bit as the type needs).
inline shared_bytes arrow_offsets(const structural::data_block& b, bool large, const std::string& where) {
  aligned_buffer o;
  o.resize(std::size_t((b.num_values + 1) * (large ? 8 : 4)));
  for (std::uint64_t i = 0; i <= b.num_values; ++i) {
    const auto v = b.num_values ? b.offset(i) : 0;
    if (large) le::store<std::int64_t>(o.data() + 8 * i, std::int64_t(v));
    else {
      if (v > 0x7FFFFFFFull) throw unsupported_error(where + ": more than 2^31 bytes of values need a large type");
      le::store<std::int32_t>(o.data() + 4 * i, std::int32_t(v));
    }
  }
  return shared_bytes(std::move(o));
}

// Dictionary items gathered by indices of type I (little-endian, unaligned).
template <class I>
inline structural::data_block gather_dictionary(const structural::data_block& idx, const structural::data_block& dict,
                                                const std::string& where) {
  const std::uint64_t n = idx.num_values, m = dict.num_values;
  const std::uint8_t* ip = idx.data.data();
  const auto index = [&](std::uint64_t i) -> std::uint64_t {
    const std::uint64_t k = le::load<I>(ip + i * sizeof(I));
    if (k >= m)
      throw corrupt_error(where + ": dictionary index " + std::to_string(k) + " past " + std::to_string(m) + " items");
    return k;
  };
  if (dict.k == structural::data_block::kind::variable) {
    // The items' places once; then the offsets (whose last is the values' size), then
    // the values, short ones copied 16 bytes at a time from a padded copy of the items.
    std::vector<std::uint64_t> start(m), length(m);
    for (std::uint64_t k = 0; k < m; ++k) {
      start[k] = dict.offset(k);
      length[k] = dict.offset(k + 1) - start[k];
      if (start[k] + length[k] > dict.data.size() || dict.offset(k + 1) < start[k])
        throw corrupt_error(where + ": dictionary item " + std::to_string(k) + " lies outside its values");
    }
    const std::uint64_t w = dict.bits_per_offset / 8;
    aligned_buffer offs;
    offs.resize(std::size_t(structural::checked_mul(n + 1, w, "dictionary offsets")));
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      total += length[index(i)];
      if (w == 8) {
        le::store<std::uint64_t>(offs.data() + 8 * (i + 1), total);
      } else {
        if (total > std::numeric_limits<std::uint32_t>::max())
          throw corrupt_error(where + ": dictionary values of " + std::to_string(total) +
                              " bytes do not fit 32-bit offsets");
        le::store<std::uint32_t>(offs.data() + 4 * (i + 1), std::uint32_t(total));
      }
    }
    constexpr std::size_t pad = 16;
    structural::check_alloc(total, where);
    aligned_buffer items;
    items.resize(dict.data.size() + pad);
    std::memcpy(items.data(), dict.data.data(), dict.data.size());
    aligned_buffer bytes;
    bytes.reserve(std::size_t(total) + pad);
    bytes.resize(std::size_t(total));
    std::uint8_t* out = bytes.data();
    const std::uint8_t* src = items.data();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t k = le::load<I>(ip + i * sizeof(I));  // checked above
      const std::uint64_t len = length[k];
      if (len <= pad) std::memcpy(out, src + start[k], pad);  // within both buffers' padding
      else std::memcpy(out, src + start[k], std::size_t(len));
      out += len;
    }
    return structural::data_block::variable(n, dict.bits_per_offset, bytes_of(std::move(offs)), bytes_of(std::move(bytes)));
  }
  if (dict.k == structural::data_block::kind::fixed && dict.bits_per_value % 8 == 0) {
    const std::uint64_t w = dict.bits_per_value / 8;
    if (structural::checked_mul(m, w, "dictionary values") > dict.data.size())
      throw corrupt_error(where + ": dictionary of " + std::to_string(m) + " items holds " +
                          std::to_string(dict.data.size()) + " bytes");
    aligned_buffer out;
    out.resize(std::size_t(structural::checked_mul(n, w, "dictionary values")));
    for (std::uint64_t i = 0; i < n; ++i)
      std::memcpy(out.data() + i * w, dict.data.data() + index(i) * w, std::size_t(w));
    return structural::data_block::fixed(n, dict.bits_per_value, bytes_of(std::move(out)));
  }
  throw unsupported_error(where + ": dictionary of this kind of values");
}

// Materializes dictionary indices into values.
inline structural::data_block resolve_dictionary(const structural::data_block& idx, const structural::data_block& dict,
                                                 const std::string& where) {
  if (idx.k != structural::data_block::kind::fixed)
    throw corrupt_error(where + ": dictionary indices are not 8/16/32/64-bit integers");
  if (idx.data.size() < structural::checked_mul(idx.num_values, idx.bits_per_value / 8, "dictionary indices"))
    throw corrupt_error(where + ": " + std::to_string(idx.num_values) + " dictionary indices in " +
                        std::to_string(idx.data.size()) + " bytes");
  switch (idx.bits_per_value) {
    case 8: return gather_dictionary<std::uint8_t>(idx, dict, where);
    case 16: return gather_dictionary<std::uint16_t>(idx, dict, where);
    case 32: return gather_dictionary<std::uint32_t>(idx, dict, where);
    case 64: return gather_dictionary<std::uint64_t>(idx, dict, where);
    default: throw corrupt_error(where + ": dictionary indices are not 8/16/32/64-bit integers");
  }
}

// A constant scalar repeated n times, shaped for the leaf type.
inline structural::data_block expand_constant(const std::string& v, const arrow::data_type& t, std::uint64_t n, const std::string& where) {
  structural::check_alloc(structural::checked_mul(n, std::max<std::uint64_t>(v.size(), 8), "constant values"), where);
  if (arrow::is_binary_like(t.id)) {
    const bool large = arrow::is_large_binary_like(t.id);
    aligned_buffer offs, bytes;
    offs.resize(std::size_t((n + 1) * (large ? 8 : 4)));
    bytes.reserve(std::size_t(structural::checked_mul(n, v.size(), "constant values")));
    for (std::uint64_t i = 0; i < n; ++i) {
      bytes.append(std::string_view(v));
      if (large) le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
      else le::store<std::uint32_t>(offs.data() + 4 * (i + 1), std::uint32_t(bytes.size()));
    }
    return structural::data_block::variable(n, large ? 64 : 32, bytes_of(std::move(offs)), bytes_of(std::move(bytes)));
  }
  if (t.id == arrow::type_id::boolean) {
    if (v.size() != 1) throw corrupt_error(where + ": boolean constant of " + std::to_string(v.size()) + " bytes");
    aligned_buffer b;
    b.resize(std::size_t((n + 7) / 8));
    if (v[0] & 1) arrow::set_bits(b.data(), 0, std::int64_t(n));
    return structural::data_block::fixed(n, 1, bytes_of(std::move(b)));
  }
  const auto w = std::uint64_t(arrow::bit_width(t) / 8);
  if (w == 0 || v.size() != w)
    throw corrupt_error(where + ": constant of " + std::to_string(v.size()) + " bytes for " + arrow::to_string(t));
  aligned_buffer b;
  b.reserve(std::size_t(structural::checked_mul(n, w, "constant values")));
  for (std::uint64_t i = 0; i < n; ++i) b.append(std::string_view(v));
  return structural::data_block::fixed(n, w * 8, bytes_of(std::move(b)));
}

inline arrow::array_ptr zeroed(const arrow::type_ptr& t, std::uint64_t n);

// A fixed-size list array from a block (layer `l` of its fsl layers).
inline arrow::array_ptr fsl_array(const arrow::type_ptr& t, const structural::data_block& b, std::size_t l,
                                  std::uint64_t rows, shared_bytes validity, std::int64_t nulls, const std::string& where) {
  const auto& item = t->children.at(0);
  const std::uint64_t dim = std::uint64_t(t->list_size);
  auto out = std::make_shared<arrow::array_data>();
  out->type = t;
  out->length = std::int64_t(rows);
  out->null_count = nulls;
  out->buffers = {std::move(validity)};
  const std::uint64_t items = rows * dim;
  shared_bytes item_validity;
  std::int64_t item_nulls = 0;
  if (l < b.fsl.size()) {
    if (b.fsl[l].dimension != dim)
      throw corrupt_error(where + ": fixed-size list of dimension " + std::to_string(b.fsl[l].dimension) + ", the schema says " +
                          std::to_string(dim));
    if (b.fsl[l].has_validity) {
      item_validity = b.fsl[l].validity;
      for (std::uint64_t i = 0; i < items; ++i) item_nulls += !arrow::get_bit(item_validity.data(), std::int64_t(i));
      if (!item_nulls) item_validity = {};
    }
  }
  if (item.type->id == arrow::type_id::fixed_size_list) {
    out->children.push_back(fsl_array(item.type, b, l + 1, items, item_validity, item_nulls, where));
    return out;
  }
  const auto bits = item.type->id == arrow::type_id::boolean ? 1 : arrow::bit_width(*item.type);
  if (bits <= 0) throw unsupported_error(where + ": fixed-size list of " + arrow::to_string(*item.type));
  if (b.bits_per_value != std::uint64_t(bits))
    throw corrupt_error(where + ": fixed-size list items of " + std::to_string(b.bits_per_value) + " bits for " +
                        arrow::to_string(*item.type));
  auto child = std::make_shared<arrow::array_data>();
  child->type = item.type;
  child->length = std::int64_t(items);
  child->null_count = item_nulls;
  child->buffers = {std::move(item_validity), b.data};
  out->children.push_back(std::move(child));
  return out;
}

// A 2.2 variable packed struct: each value is one row of the members side by side, a
// fixed member as its bytes, a variable one as a length prefix and its stored bytes
// (decoded by the member's own codec). `out` carries the struct's length, validity and
// null count; the members come back valid (an empty row, as full-zip stores a null
// struct, reads as zeros and empty values).
inline arrow::array_ptr split_variable_packed(const arrow::type_ptr& t, const structural::variable_packed_layout& vp,
                                              const structural::data_block& b, std::shared_ptr<arrow::array_data> out,
                                              const std::string& where) {
  const auto n = std::uint64_t(out->length);
  if (vp.members.size() != t->children.size())
    throw corrupt_error(where + ": packed struct of " + std::to_string(vp.members.size()) + " members, the schema has " +
                        std::to_string(t->children.size()));
  if (b.k != structural::data_block::kind::variable || b.num_values != n)
    throw corrupt_error(where + ": packed struct rows do not match the struct's " + std::to_string(n) + " slots");
  structural::check_offsets(b, b.data.size(), (where + " (packed struct rows)").c_str());
  struct member {
    bool large = false;  // variable: 64-bit Arrow offsets
    aligned_buffer values, offsets;
  };
  std::vector<member> ms(vp.members.size());
  for (std::size_t j = 0; j < ms.size(); ++j) {
    const auto& c = t->children[j];
    const auto& f = vp.members[j];
    auto& m = ms[j];
    const auto w = arrow::bit_width(*c.type);
    if (f.width) {
      if (w <= 0 || std::uint64_t(w) != f.width * 8 || c.type->id == arrow::type_id::boolean)
        throw corrupt_error(where + ": packed struct member '" + c.name + "' stored in " + std::to_string(f.width) +
                            " bytes is " + arrow::to_string(*c.type));
      m.values.reserve(std::size_t(structural::checked_mul(n, f.width, "packed struct member")));
    } else {
      if (!arrow::is_binary_like(c.type->id))
        throw corrupt_error(where + ": variable packed struct member '" + c.name + "' is " + arrow::to_string(*c.type));
      m.large = c.type->id == arrow::type_id::large_binary || c.type->id == arrow::type_id::large_utf8;
      m.offsets.resize(m.large ? 8 : 4);
    }
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto rb = b.offset(i), re = b.offset(i + 1);
    const std::uint8_t* row = b.data.data() + rb;
    const std::uint64_t len = re - rb;
    std::uint64_t pos = 0;
    for (std::size_t j = 0; j < ms.size(); ++j) {
      auto& m = ms[j];
      const auto& f = vp.members[j];
      const std::string& name = t->children[j].name;
      if (f.width) {
        if (len == 0) { m.values.resize(m.values.size() + std::size_t(f.width)); continue; }
        if (f.width > len - pos)
          throw corrupt_error(where + ": packed struct row " + std::to_string(i) + " ends inside member '" + name + "'");
        m.values.append(row + pos, std::size_t(f.width));
        pos += f.width;
      } else {
        if (len != 0) {
          if (f.prefix > len - pos)
            throw corrupt_error(where + ": packed struct row " + std::to_string(i) + " ends inside the length of member '" + name + "'");
          const auto* q = row + pos;
          const std::uint64_t vlen = f.prefix == 1 ? *q : f.prefix == 2 ? le::load<std::uint16_t>(q)
                                   : f.prefix == 4 ? le::load<std::uint32_t>(q) : le::load<std::uint64_t>(q);
          pos += f.prefix;
          if (vlen > len - pos)
            throw corrupt_error(where + ": packed struct row " + std::to_string(i) + " member '" + name + "' of " +
                                std::to_string(vlen) + " bytes runs past its row of " + std::to_string(len));
          f.values.decode_value(bytes_view(row + pos, std::size_t(vlen)), m.values);
          structural::check_alloc(m.values.size(), where + " (packed struct member '" + name + "')");
          pos += vlen;
        }
        const auto at = m.offsets.size();
        if (m.large) {
          m.offsets.resize(at + 8);
          le::store<std::uint64_t>(m.offsets.data() + at, m.values.size());
        } else {
          if (m.values.size() > 0x7FFFFFFFull)
            throw corrupt_error(where + ": packed struct member '" + name + "' exceeds 32-bit offsets");
          m.offsets.resize(at + 4);
          le::store<std::int32_t>(m.offsets.data() + at, std::int32_t(m.values.size()));
        }
      }
    }
    if (len != 0 && pos != len)
      throw corrupt_error(where + ": packed struct row " + std::to_string(i) + " has " + std::to_string(len - pos) +
                          " bytes after its members");
  }
  for (std::size_t j = 0; j < ms.size(); ++j) {
    auto child = std::make_shared<arrow::array_data>();
    child->type = t->children[j].type;
    child->length = std::int64_t(n);
    child->null_count = 0;
    if (vp.members[j].width) child->buffers = {shared_bytes(), shared_bytes(std::move(ms[j].values))};
    else child->buffers = {shared_bytes(), shared_bytes(std::move(ms[j].offsets)), shared_bytes(std::move(ms[j].values))};
    out->children.push_back(std::move(child));
  }
  return out;
}

// The leaf array: values (n of them) with the leaf node's validity.
inline arrow::array_ptr make_leaf(const arrow::type_ptr& t, structural::page_slice& p,
                                  const structural::node_elements& node, const std::string& where) {
  const std::uint64_t n = node.length;
  auto out = std::make_shared<arrow::array_data>();
  out->type = t;
  out->length = std::int64_t(n);
  const auto id = t->id;
  if (id == arrow::type_id::null) {
    out->null_count = std::int64_t(n);
    return out;
  }
  if (p.values.num_values != n)
    throw corrupt_error(where + ": " + std::to_string(p.values.num_values) + " values for " + std::to_string(n) + " leaf slots");
  shared_bytes validity = validity_buffer(node);
  out->null_count = std::int64_t(node.null_count);
  if (id == arrow::type_id::struct_ && t->children.empty()) {  // a struct without children
    out->buffers = {validity};
    return out;
  }
  structural::data_block b;
  if (p.constant) b = expand_constant(*p.constant, *t, n, where);
  else if (p.values.k == structural::data_block::kind::empty) {
    if (node.null_count != n) throw corrupt_error(where + ": a page without values has valid slots");
    return zeroed(t, n);
  } else if (p.dictionary) b = resolve_dictionary(p.values, *p.dictionary, where);
  else b = p.values;
  if (id == arrow::type_id::struct_ && p.packed) {
    out->buffers = {validity};
    return split_variable_packed(t, *p.packed, b, std::move(out), where);
  }
  if (id == arrow::type_id::struct_) {
    // A packed struct: rows of the members' values side by side.
    std::uint64_t row = 0;
    for (const auto& c : t->children) {
      const auto w = arrow::bit_width(*c.type);
      if (w <= 0 || w % 8 || c.type->id == arrow::type_id::boolean)
        throw unsupported_error(where + ": packed struct member '" + c.name + "' of type " + arrow::to_string(*c.type));
      row += std::uint64_t(w / 8);
    }
    if (b.k != structural::data_block::kind::fixed || b.bits_per_value != row * 8)
      throw corrupt_error(where + ": packed struct rows of " + std::to_string(b.bits_per_value) + " bits, its members need " +
                          std::to_string(row * 8));
    out->buffers = {validity};
    std::uint64_t col = 0;
    for (const auto& c : t->children) {
      const auto w = std::uint64_t(arrow::bit_width(*c.type) / 8);
      aligned_buffer vals;
      vals.resize(std::size_t(n * w));
      for (std::uint64_t i = 0; i < n; ++i) std::memcpy(vals.data() + i * w, b.data.data() + i * row + col, std::size_t(w));
      auto child = std::make_shared<arrow::array_data>();
      child->type = c.type;
      child->length = std::int64_t(n);
      child->null_count = 0;
      child->buffers = {shared_bytes(), shared_bytes(std::move(vals))};
      out->children.push_back(std::move(child));
      col += w;
    }
    return out;
  }
  if (id == arrow::type_id::fixed_size_list) {
    if (b.k == structural::data_block::kind::fixed) {  // flattened rows
      structural::data_block f;
      f.k = structural::data_block::kind::fixed_size_list;
      f.num_values = b.num_values;
      const arrow::data_type* cur = t.get();
      std::uint64_t cum = 1;
      while (cur->id == arrow::type_id::fixed_size_list) {
        f.fsl.push_back({std::uint64_t(cur->list_size), false, {}});
        cum *= std::uint64_t(cur->list_size);
        cur = cur->children.at(0).type.get();
      }
      if (cum == 0 || b.bits_per_value % cum) throw corrupt_error(where + ": fixed-size list values of the wrong width");
      f.bits_per_value = b.bits_per_value / cum;
      f.data = b.data;
      b = std::move(f);
    }
    if (b.k != structural::data_block::kind::fixed_size_list) throw corrupt_error(where + ": fixed-size list page without list values");
    return fsl_array(t, b, 0, n, validity, out->null_count, where);
  }
  if (arrow::is_binary_like(id)) {
    if (b.k != structural::data_block::kind::variable) throw corrupt_error(where + ": " + arrow::to_string(*t) + " page with fixed-width values");
    out->buffers = {validity, arrow_offsets(b, arrow::is_large_binary_like(id), where), b.data};
    return out;
  }
  const auto bits = id == arrow::type_id::boolean ? 1 : arrow::bit_width(*t);
  if (bits <= 0) throw unsupported_error(where + ": cannot decode " + arrow::to_string(*t) + " leaves");
  if (b.k != structural::data_block::kind::fixed || b.bits_per_value != std::uint64_t(bits))
    throw corrupt_error(where + ": " + arrow::to_string(*t) + " page holds values of " + std::to_string(b.bits_per_value) + " bits");
  out->buffers = {validity, b.data};
  return out;
}

inline arrow::array_ptr zeroed(const arrow::type_ptr& t, std::uint64_t n) {
  structural::check_alloc(structural::checked_mul(n, std::max<std::uint64_t>(std::uint64_t(arrow::bit_width(*t) / 8), 8), "null values"), "all-null values");
  auto out = std::make_shared<arrow::array_data>();
  out->type = t;
  out->length = std::int64_t(n);
  out->null_count = std::int64_t(n);
  const auto id = t->id;
  if (id == arrow::type_id::null) return out;
  auto zeros = [](std::uint64_t bytes) {
    aligned_buffer b;
    b.resize(std::size_t(bytes));
    return shared_bytes(std::move(b));
  };
  out->buffers.push_back(zeros((n + 7) / 8));
  if (id == arrow::type_id::boolean) out->buffers.push_back(zeros((n + 7) / 8));
  else if (arrow::is_fixed_width(*t)) out->buffers.push_back(zeros(n * std::uint64_t(arrow::bit_width(*t) / 8)));
  else if (arrow::is_binary_like(id)) {
    out->buffers.push_back(zeros((n + 1) * (arrow::is_large_binary_like(id) ? 8 : 4)));
    out->buffers.push_back(shared_bytes());
  } else if (arrow::is_list_like(id)) {
    out->buffers.push_back(zeros((n + 1) * (id == arrow::type_id::large_list ? 8 : 4)));
    out->children.push_back(zeroed(t->children.at(0).type, 0));
  } else if (id == arrow::type_id::fixed_size_list) {
    out->children.push_back(zeroed(t->children.at(0).type, n * std::uint64_t(t->list_size)));
  } else if (id == arrow::type_id::struct_) {
    for (const auto& c : t->children) out->children.push_back(zeroed(c.type, n));
  }
  return out;
}

// The decoded layout of page p of a column (kept in col.layouts when given).
inline structural::page_layout_cache::layout_ptr page_layout_of(const structural::column_pages& col, std::size_t p,
                                                                const std::string& where) {
  if (col.layouts)
    if (auto l = col.layouts->find(p)) return l;
  const auto& page = col.metadata->pages[p];
  if (!page.encoding) throw corrupt_error(where + " has no encoding");
  const auto any = page.encoding->direct_any();
  if (any.type_url != pb::enc21::page_layout::type_url)
    throw corrupt_error(where + ": expected a " + std::string(pb::enc21::page_layout::type_url) + " page, found '" +
                        any.type_url + "'");
  auto l = std::make_shared<const pb::enc21::page_layout>(pb::unpack_any<pb::enc21::page_layout>(any));
  return col.layouts ? col.layouts->keep(p, std::move(l)) : l;
}

struct decoded_leaf {
  std::vector<structural::node_elements> nodes;  // by layer (0 = leaf)
  arrow::array_ptr leaf;
};

// Decodes the rows of `runs` (ascending, disjoint [begin, end) pairs) of one leaf
// column; the column must have at least `end` rows.
inline decoded_leaf decode_leaf(const std::vector<structural::path_node>& path, const arrow::type_ptr& leaf_type,
                                const structural::column_pages& col, std::uint32_t column, structural::row_runs runs,
                                std::uint64_t end, const structural::fetch_page_buffers& fetch,
                                const structural::read_file_range& read_range,
                                const structural::read_file_ranges& read_ranges) {
  decoded_leaf out;
  out.nodes.resize(path.size());
  const auto& starts = col.page_starts;
  const auto& pages = col.metadata->pages;
  if (starts.size() != pages.size() + 1) throw corrupt_error("column " + std::to_string(column) + ": page starts do not match its pages");
  if (end > starts.back())
    throw corrupt_error("column " + std::to_string(column) + " has " + std::to_string(starts.back()) + " rows, " +
                        std::to_string(end) + " needed");
  std::vector<arrow::array_ptr> leaves;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> in_page;  // the runs' parts in page p, page-relative
  std::size_t first_run = 0;
  for (std::size_t p = 0; p < pages.size() && first_run < runs.size(); ++p) {
    const auto ps = starts[p], pe = starts[p + 1];
    while (first_run < runs.size() && runs[first_run].second <= ps) ++first_run;
    if (first_run == runs.size() || runs[first_run].first >= pe) continue;
    if (pe == ps) continue;
    in_page.clear();
    std::uint64_t rows = 0;
    for (std::size_t r = first_run; r < runs.size() && runs[r].first < pe; ++r) {
      in_page.emplace_back(std::max(runs[r].first, ps) - ps, std::min(runs[r].second, pe) - ps);
      rows += in_page.back().second - in_page.back().first;
    }
    const std::string where = "column " + std::to_string(column) + " page " + std::to_string(p);
    const auto& page = pages[p];
    const auto layout_ptr = page_layout_of(col, p, where);
    const auto& layout = *layout_ptr;
    auto add = [&](structural::page_slice&& slice, std::uint64_t n) {
      if (slice.layers.size() != path.size())
        throw corrupt_error(where + ": " + std::to_string(slice.layers.size()) + " layers for a field path of depth " +
                            std::to_string(path.size()));
      for (std::size_t k = 0; k < path.size(); ++k) {
        const bool list_node = arrow::is_list_like(path[path.size() - 1 - k].id);
        if (list_node != structural::is_list_layer(slice.layers[k]))
          throw corrupt_error(where + ": layer " + std::to_string(k) + " does not match the schema's nesting");
      }
      const structural::level_scheme scheme(slice.layers);
      auto nodes = structural::unravel(scheme, slice.rep.empty() ? nullptr : slice.rep.data(),
                                       slice.def.empty() ? nullptr : slice.def.data(), std::size_t(slice.num_slots),
                                       where);
      if (nodes.back().length != n)
        throw corrupt_error(where + ": levels describe " + std::to_string(nodes.back().length) + " rows, " +
                            std::to_string(n) + " expected");
      leaves.push_back(make_leaf(leaf_type, slice, nodes[0], where));
      for (std::size_t k = 0; k < path.size(); ++k) append_node(out.nodes[k], std::move(nodes[k]), structural::is_list_layer(slice.layers[k]));
    };
    // Several small runs of a full-zip page (a take of scattered rows): their rows'
    // bytes, fetched run by run, decoded together as one page.
    if (in_page.size() > 1 && read_range && structural::checked_mul(rows, detail::partial_page_fraction, "rows") <= page.length)
      if (auto part = structural::read_full_zip_row_runs(layout, page.buffer_offsets, page.buffer_sizes, page.length,
                                                         in_page, where, read_range, read_ranges)) {
        add(std::move(*part), rows);
        continue;
      }
    // A mini-block page's chunk metadata and dictionary, fetched once for all its runs.
    std::optional<structural::mini_block_index> mb_index;
    bool mb_indexed = false;
    std::uint64_t page_bytes = 0;
    for (auto n : page.buffer_sizes) page_bytes += std::min<std::uint64_t>(n, detail::partial_mini_block_min_bytes);
    const bool few_runs = in_page.size() <= detail::partial_mini_block_max_runs &&
                          page_bytes >= detail::partial_mini_block_few_runs_min_bytes;
    // Runs that are a small part of a mini-block page (a take of scattered rows): only
    // the chunks that hold them, in one request, each decoded once.
    if (read_range && structural::checked_mul(rows, detail::partial_page_fraction, "rows") <= page.length &&
        (page_bytes >= detail::partial_mini_block_min_bytes || few_runs)) {
      mb_indexed = true;
      mb_index = structural::index_mini_block(layout, page.buffer_offsets, page.buffer_sizes, where, read_range);
      if (mb_index) {
        add(structural::read_mini_block_row_runs(layout, page.buffer_offsets, page.buffer_sizes, page.length, in_page,
                                                 where, read_range, read_ranges, *mb_index),
            rows);
        continue;
      }
    }
    for (const auto& run : in_page) {
      const auto [b, e] = run;
      // A small part of a full-zip page (random takes): fetch only its rows' bytes; of a
      // mini-block page: only its chunks. Larger parts (scans) fetch the whole page, which
      // the page cache keeps for the next read.
      std::optional<structural::page_slice> part;
      if (read_range && structural::checked_mul(e - b, detail::partial_page_fraction, "rows") <= page.length) {
        part = structural::read_full_zip_rows(layout, page.buffer_offsets, page.buffer_sizes, page.length, b, e, where, read_range);
        if (!part && (page_bytes >= detail::partial_mini_block_min_bytes || few_runs)) {
          if (!mb_indexed) {
            mb_indexed = true;
            mb_index = structural::index_mini_block(layout, page.buffer_offsets, page.buffer_sizes, where, read_range);
          }
          if (mb_index)
            part = structural::read_mini_block_row_runs(layout, page.buffer_offsets, page.buffer_sizes, page.length,
                                                        structural::row_runs(&run, 1), where, read_range, read_ranges,
                                                        *mb_index);
        }
      }
      add(part ? std::move(*part) : structural::read_page(layout, fetch(column, p), page.length, b, e, where, read_range), e - b);
    }
  }
  for (std::size_t k = 0; k < path.size(); ++k)
    if (arrow::is_list_like(path[path.size() - 1 - k].id) && out.nodes[k].offsets.empty()) out.nodes[k].offsets.push_back(0);
  if (leaves.empty()) out.leaf = zeroed(leaf_type, 0);
  else if (leaves.size() == 1) out.leaf = leaves[0];
  else out.leaf = arrow::concat(leaves, leaf_type);
  return out;
}

// The bytes of one value of a field stored as plain fixed-width values: a byte-aligned
// primitive (not boolean) or a fixed_size_list of one; 0 for any other field.
inline std::uint64_t plain_value_bytes(const arrow::data_type& t) {
  const auto primitive = [](const arrow::data_type& p) -> std::uint64_t {
    if (p.id == arrow::type_id::boolean || p.id == arrow::type_id::dictionary) return 0;
    const auto bits = arrow::bit_width(p);
    return bits > 0 && bits % 8 == 0 ? std::uint64_t(bits / 8) : 0;
  };
  if (t.id != arrow::type_id::fixed_size_list) return primitive(t);
  if (t.children.size() != 1 || t.list_size <= 0) return 0;
  return primitive(*t.children[0].type) * std::uint64_t(t.list_size);
}

// Scattered rows of a field whose pages hold them as plain values at a fixed stride
// (full-zip, fixed width, no repetition or definition levels, no per-value validity,
// no compression): the rows' bytes are fetched in one request and are the values, so
// no page is parsed. nullptr where any page the runs touch is not so, or where the runs
// want so many of a page's rows that reading the page is cheaper (unless rows_in_place).
inline arrow::array_ptr read_plain_rows(const arrow::field& f, const structural::column_pages& col, std::uint32_t column,
                                        std::span<const std::pair<std::uint64_t, std::uint64_t>> runs,
                                        const structural::read_file_ranges& read_ranges, bool rows_in_place) {
  if constexpr (std::endian::native != std::endian::little) return nullptr;
  const std::uint64_t width = plain_value_bytes(*f.type);
  if (!read_ranges || width == 0 || runs.empty()) return nullptr;
  const auto& starts = col.page_starts;
  const auto& pages = col.metadata->pages;
  if (starts.size() != pages.size() + 1 || runs.back().second > starts.back()) return nullptr;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // {file offset, bytes}
  std::uint64_t rows = 0;
  std::size_t p = 0, r = 0;
  std::uint64_t at = runs[0].first;  // the next row to read, in run r
  while (r < runs.size()) {
    while (starts[p + 1] <= at) ++p;
    const auto ps = starts[p], pe = starts[p + 1];
    // The page's rows the runs want, and whether its values lie at a plain stride.
    std::uint64_t wanted = 0;
    for (std::size_t k = r; k < runs.size(); ++k) {
      const auto from = k == r ? at : runs[k].first;
      if (from >= pe) break;
      wanted += std::min(runs[k].second, pe) - from;
    }
    const auto& page = pages[p];
    if ((!rows_in_place && wanted * partial_page_fraction > page.length) || page.buffer_offsets.empty() ||
        page.buffer_offsets.size() != page.buffer_sizes.size() || pe - ps != page.length)
      return nullptr;
    const std::string where = "column " + std::to_string(column) + " page " + std::to_string(p);
    const auto layout = page_layout_of(col, p, where);
    const auto* z = std::get_if<pb::enc21::full_zip_layout>(&layout->value);
    if (!z || !z->bits_per_value || z->bits_rep || z->bits_def) return nullptr;
    for (const auto l : z->layers)
      if (l != pb::enc21::rep_def_layer::all_valid_item) return nullptr;
    const auto shape = full_zip_shape_of(*z, where);
    if (shape.cw || shape.vbytes != width) return nullptr;
    for (const auto& l : shape.dec.fsl)
      if (l.has_validity) return nullptr;
    if (structural::checked_mul(page.length, width, "full-zip rows") > page.buffer_sizes[0]) return nullptr;
    while (r < runs.size()) {
      const auto e = std::min(runs[r].second, pe);
      ranges.emplace_back(page.buffer_offsets[0] + (at - ps) * width, (e - at) * width);
      rows += e - at;
      if (runs[r].second > pe) {  // the run goes on in the next page
        at = pe;
        break;
      }
      if (++r < runs.size()) at = runs[r].first;
      if (at >= pe) break;
    }
  }
  auto mem = shared_uninitialised_bytes(static_cast<std::size_t>(rows * width));
  read_ranges(ranges, mem.get());
  const std::uint8_t* data = mem.get();
  shared_bytes values(std::move(mem), data, static_cast<std::size_t>(rows * width));
  const auto array_of = [](arrow::type_ptr t, std::uint64_t n, std::vector<shared_bytes> buffers,
                           std::vector<arrow::array_ptr> children) {
    auto a = std::make_shared<arrow::array_data>();
    a->type = std::move(t);
    a->length = std::int64_t(n);
    a->null_count = 0;
    a->buffers = std::move(buffers);
    a->children = std::move(children);
    return arrow::array_ptr(std::move(a));
  };
  if (f.type->id != arrow::type_id::fixed_size_list) return array_of(f.type, rows, {shared_bytes(), std::move(values)}, {});
  const auto& item = f.type->children[0].type;
  auto child = array_of(item, rows * std::uint64_t(f.type->list_size), {shared_bytes(), std::move(values)}, {});
  return array_of(f.type, rows, {shared_bytes()}, {std::move(child)});
}

inline arrow::array_ptr assemble(const arrow::field& f, std::size_t depth, std::vector<decoded_leaf>& leaves,
                                 const std::vector<std::vector<structural::path_node>>& paths, std::size_t& next) {
  const std::size_t col = next;
  auto& leaf = leaves.at(col);
  const std::size_t k = paths[col].size() - 1 - depth;
  const auto id = f.type->id;
  if (id == arrow::type_id::struct_ && !f.type->children.empty() && !structural::is_packed_struct(f)) {
    const auto& node = leaf.nodes[k];
    auto out = std::make_shared<arrow::array_data>();
    out->type = f.type;
    out->length = std::int64_t(node.length);
    out->null_count = std::int64_t(node.null_count);
    out->buffers = {validity_buffer(node)};
    for (const auto& c : f.type->children) out->children.push_back(assemble(c, depth + 1, leaves, paths, next));
    for (const auto& c : out->children)
      if (std::uint64_t(c->length) != node.length)
        throw corrupt_error("field '" + f.name + "': children decode to different lengths");
    return out;
  }
  if (arrow::is_list_like(id)) {
    const auto& node = leaf.nodes[k];
    const bool large = id == arrow::type_id::large_list;
    auto out = std::make_shared<arrow::array_data>();
    out->type = f.type;
    out->length = std::int64_t(node.length);
    out->null_count = std::int64_t(node.null_count);
    aligned_buffer offs;
    offs.resize(std::size_t((node.length + 1) * (large ? 8 : 4)));
    for (std::size_t i = 0; i < node.offsets.size(); ++i) {
      if (large) le::store<std::int64_t>(offs.data() + 8 * i, std::int64_t(node.offsets[i]));
      else {
        if (node.offsets[i] > 0x7FFFFFFFull) throw unsupported_error("list field '" + f.name + "' has more than 2^31 items in one read");
        le::store<std::int32_t>(offs.data() + 4 * i, std::int32_t(node.offsets[i]));
      }
    }
    out->buffers = {validity_buffer(node), shared_bytes(std::move(offs))};
    out->children.push_back(assemble(f.type->children.at(0), depth + 1, leaves, paths, next));
    if (std::uint64_t(out->children[0]->length) != node.offsets.back())
      throw corrupt_error("list field '" + f.name + "': " + std::to_string(node.offsets.back()) + " items expected, " +
                          std::to_string(out->children[0]->length) + " decoded");
    return out;
  }
  ++next;
  return leaf.leaf;
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE std::uint32_t column_count(const arrow::field& f) { return std::uint32_t(leaf_paths(f).size()); }

LANCET_INLINE arrow::array_ptr decode_field_runs(const arrow::field& f, std::span<const column_pages> columns,
                                          std::uint32_t first_column, row_runs runs, const fetch_page_buffers& fetch,
                                          const read_file_range& read_range,
                                          const read_file_ranges& read_ranges, bool rows_in_place) {
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (runs[r].first > runs[r].second || (r && runs[r].first < runs[r - 1].second))
      throw invalid_input_error("row runs must be ascending and disjoint (run " + std::to_string(r) + ")");
  const auto paths = leaf_paths(f);
  if (columns.size() != paths.size())
    throw corrupt_error("field '" + f.name + "' needs " + std::to_string(paths.size()) + " columns, " +
                        std::to_string(columns.size()) + " given");
  const std::uint64_t end = runs.empty() ? 0 : runs.back().second;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> nonempty;
  for (const auto& r : runs)
    if (r.first < r.second) nonempty.push_back(r);
  if (paths.size() == 1)
    if (auto plain = detail::read_plain_rows(f, columns[0], first_column, nonempty, read_ranges, rows_in_place))
      return plain;
  std::vector<detail::decoded_leaf> leaves;
  leaves.reserve(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    // The leaf's Arrow type: walk the field's type along the path.
    const arrow::field* cur = &f;
    for (std::size_t d = 0; d + 1 < paths[i].size(); ++d) cur = &cur->type->children.at(paths[i][d].child);
    leaves.push_back(detail::decode_leaf(paths[i], cur->type, columns[i], first_column + std::uint32_t(i), nonempty, end,
                                         fetch, read_range, read_ranges));
  }
  std::size_t next = 0;
  return detail::assemble(f, 0, leaves, paths, next);
}

LANCET_INLINE arrow::array_ptr decode_field(const arrow::field& f, std::span<const column_pages> columns,
                                     std::uint32_t first_column, std::uint64_t begin, std::uint64_t end,
                                     const fetch_page_buffers& fetch, const read_file_range& read_range) {
  if (begin > end)
    throw invalid_input_error("row range [" + std::to_string(begin) + ", " + std::to_string(end) + ") is reversed");
  const std::pair<std::uint64_t, std::uint64_t> run{begin, end};
  return decode_field_runs(f, columns, first_column, row_runs(&run, 1), fetch, read_range);
}
#endif

}  // namespace lancet::encoding::structural
