// Dictionary arrays (Arrow `dictionary<index, value>`): encoding plain arrays into
// dictionaries and materialising dictionaries back into plain values, for one array
// or anywhere inside nested arrays. Lance stores a dictionary field's values (its
// pages are dictionary-encoded pages of the value type); the file writer materialises
// dictionaries before encoding and the reader encodes the values it decoded back into
// the field's dictionary type. Only code that handles dictionary types includes this.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

// Whether a dictionary type occurs anywhere in t.
inline bool has_dictionary(const data_type& t) noexcept {
  if (t.id == type_id::dictionary) return true;
  for (const auto& c : t.children)
    if (c.type && has_dictionary(*c.type)) return true;
  return false;
}

// t with every dictionary type replaced by its value type.
inline type_ptr without_dictionaries(const type_ptr& t) {
  if (!has_dictionary(*t)) return t;
  if (t->id == type_id::dictionary) return t->children.at(0).type;
  auto out = std::make_shared<data_type>(*t);
  for (auto& c : out->children) c.type = without_dictionaries(c.type);
  return out;
}

// Writers encode a dictionary field's values; the field they encode carries this
// metadata key (the index type's name, e.g. "int32") so that pages are written as
// dictionary pages with that index width. Never stored in files.
inline constexpr std::string_view dictionary_index_key = "lancet:dictionary_index";

// f with dictionary types replaced by their value types, each such field marked with
// dictionary_index_key (see above).
inline field physical_field(const field& f) {
  if (!f.type || !has_dictionary(*f.type)) return f;
  field out = f;
  if (f.type->id == type_id::dictionary) {
    out.type = f.type->children.at(0).type;
    out.metadata.emplace_back(std::string(dictionary_index_key), to_string(*f.type->index_type));
    return out;
  }
  auto t = std::make_shared<data_type>(*f.type);
  for (auto& c : t->children) c = physical_field(c);
  out.type = std::move(t);
  return out;
}

// The integer type named by dictionary_index_key ("int8" .. "uint64").
inline type_ptr index_type_named(std::string_view name) {
  for (auto t : {int8(), int16(), int32(), int64(), uint8(), uint16(), uint32(), uint64()})
    if (to_string(*t) == name) return t;
  throw invalid_input_error("'" + std::string(name) + "' is not a dictionary index type");
}

namespace detail {

inline std::int64_t index_max(type_id id) noexcept {
  switch (id) {
    case type_id::int8: return std::numeric_limits<std::int8_t>::max();
    case type_id::uint8: return std::numeric_limits<std::uint8_t>::max();
    case type_id::int16: return std::numeric_limits<std::int16_t>::max();
    case type_id::uint16: return std::numeric_limits<std::uint16_t>::max();
    case type_id::int32: return std::numeric_limits<std::int32_t>::max();
    case type_id::uint32: return std::numeric_limits<std::uint32_t>::max();
    default: return std::numeric_limits<std::int64_t>::max();
  }
}

}  // namespace detail

// The bytes of valid slot i of a flat (fixed-width or binary-like) array.
inline std::string_view slot_bytes(const array_data& a, std::int64_t i) {
  if (is_binary_like(a.type->id)) return a.string_value(i);
  if (a.type->id == type_id::boolean) return a.bool_value(i) ? std::string_view("\1", 1) : std::string_view("\0", 1);
  const auto w = bit_width(*a.type) / 8;
  return {reinterpret_cast<const char*>(a.buffers[1].data()) + (a.offset + i) * w, std::size_t(w)};
}

// A new flat array of `values`' type holding values[idx[k]] (idx[k] < 0: null).
inline array_ptr take_flat(const array_data& values, const std::vector<std::int64_t>& idx) {
  const auto& t = *values.type;
  if (is_nested(t.id) || t.id == type_id::dictionary || t.id == type_id::null)
    throw unsupported_error("dictionary values of type " + to_string(t) + " are not supported");
  const std::int64_t n = std::int64_t(idx.size());
  auto out = std::make_shared<array_data>();
  out->type = values.type;
  out->length = n;
  aligned_buffer valid;
  valid.resize(std::size_t((n + 7) / 8));
  if (!valid.empty()) std::memset(valid.data(), 0, valid.size());
  std::int64_t nulls = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const bool ok = idx[std::size_t(k)] >= 0 && values.is_valid(idx[std::size_t(k)]);
    if (ok) set_bit(valid.data(), k, true);
    else ++nulls;
  }
  out->null_count = nulls;
  out->buffers.push_back(nulls ? shared_bytes(std::move(valid)) : shared_bytes());
  if (is_binary_like(t.id)) {
    const bool large = is_large_binary_like(t.id);
    aligned_buffer offs, data;
    offs.resize(std::size_t(n + 1) * (large ? 8 : 4));
    std::int64_t pos = 0;
    auto put_off = [&](std::int64_t k, std::int64_t v) {
      if (large) std::memcpy(offs.data() + 8 * k, &v, 8);
      else {
        const auto v32 = std::int32_t(v);
        std::memcpy(offs.data() + 4 * k, &v32, 4);
      }
    };
    put_off(0, 0);
    std::string bytes;
    for (std::int64_t k = 0; k < n; ++k) {
      const auto j = idx[std::size_t(k)];
      if (j >= 0 && values.is_valid(j)) bytes += values.string_value(j);
      pos = std::int64_t(bytes.size());
      if (!large && pos > std::numeric_limits<std::int32_t>::max())
        throw invalid_input_error("materialising a dictionary of " + to_string(t) +
                                  " needs more than 2^31 - 1 bytes of values");
      put_off(k + 1, pos);
    }
    data.resize(bytes.size());
    if (!bytes.empty()) std::memcpy(data.data(), bytes.data(), bytes.size());
    out->buffers.push_back(shared_bytes(std::move(offs)));
    out->buffers.push_back(shared_bytes(std::move(data)));
  } else if (t.id == type_id::boolean) {
    aligned_buffer bits;
    bits.resize(std::size_t((n + 7) / 8));
    if (!bits.empty()) std::memset(bits.data(), 0, bits.size());
    for (std::int64_t k = 0; k < n; ++k) {
      const auto j = idx[std::size_t(k)];
      if (j >= 0 && values.is_valid(j) && values.bool_value(j)) set_bit(bits.data(), k, true);
    }
    out->buffers.push_back(shared_bytes(std::move(bits)));
  } else {
    const auto w = bit_width(t) / 8;
    aligned_buffer buf;
    buf.resize(std::size_t(n * w));
    if (!buf.empty()) std::memset(buf.data(), 0, buf.size());
    for (std::int64_t k = 0; k < n; ++k) {
      const auto j = idx[std::size_t(k)];
      if (j >= 0 && values.is_valid(j))
        std::memcpy(buf.data() + k * w, values.buffers[1].data() + (values.offset + j) * w, std::size_t(w));
    }
    out->buffers.push_back(shared_bytes(std::move(buf)));
  }
  return out;
}

// The dictionary array of type `dict_type` (dictionary<index, V>) holding the values of
// `plain` (of type V): distinct values in order of first appearance; a null value is
// a null index.
inline array_ptr dictionary_encode(const array_ptr& plain, const type_ptr& dict_type) {
  if (dict_type->id != type_id::dictionary) throw invalid_input_error("dictionary_encode: not a dictionary type");
  const auto& ix = *dict_type->index_type;
  const auto w = bit_width(ix) / 8;
  const std::int64_t n = plain->length;
  std::unordered_map<std::string_view, std::int64_t> seen;
  std::vector<std::int64_t> firsts;
  aligned_buffer indices;
  indices.resize(std::size_t(n * w));
  if (!indices.empty()) std::memset(indices.data(), 0, indices.size());
  aligned_buffer valid;
  valid.resize(std::size_t((n + 7) / 8));
  if (!valid.empty()) std::memset(valid.data(), 0, valid.size());
  std::int64_t nulls = 0;
  const auto limit = detail::index_max(ix.id);
  for (std::int64_t i = 0; i < n; ++i) {
    if (!plain->is_valid(i)) {
      ++nulls;
      continue;
    }
    set_bit(valid.data(), i, true);
    auto [it, fresh] = seen.emplace(slot_bytes(*plain, i), std::int64_t(firsts.size()));
    if (fresh) {
      if (std::int64_t(firsts.size()) > limit)
        throw invalid_input_error("a dictionary with index type " + to_string(ix) + " cannot hold " +
                                  std::to_string(firsts.size() + 1) + " distinct values");
      firsts.push_back(i);
    }
    const std::int64_t k = it->second;
    // Little-endian: the low `w` bytes of k are the index in any integer width.
    std::memcpy(indices.data() + i * w, &k, std::size_t(w));
  }
  auto out = std::make_shared<array_data>();
  out->type = dict_type;
  out->length = n;
  out->null_count = nulls;
  out->buffers.push_back(nulls ? shared_bytes(std::move(valid)) : shared_bytes());
  out->buffers.push_back(shared_bytes(std::move(indices)));
  out->children.push_back(take_flat(*plain, firsts));
  return out;
}

// The plain values of a dictionary array (a null index or a null dictionary value is null).
inline array_ptr dictionary_decode(const array_data& a) {
  std::vector<std::int64_t> idx(std::size_t(a.length), -1);
  for (std::int64_t i = 0; i < a.length; ++i)
    if (a.is_valid(i)) idx[std::size_t(i)] = a.dictionary_index(i);
  return take_flat(*a.children.at(0), idx);
}

// `a` with every dictionary inside it materialised (types: without_dictionaries).
inline array_ptr decode_dictionaries(const array_ptr& a) {
  if (!a || !has_dictionary(*a->type)) return a;
  if (a->type->id == type_id::dictionary) return dictionary_decode(*a);
  auto out = std::make_shared<array_data>(*a);
  out->type = without_dictionaries(a->type);
  for (auto& c : out->children) c = decode_dictionaries(c);
  return out;
}

// The inverse: `plain` (of type without_dictionaries(target)) as type `target`.
inline array_ptr encode_dictionaries(const array_ptr& plain, const type_ptr& target) {
  if (!plain || !has_dictionary(*target)) return plain;
  if (target->id == type_id::dictionary) {
    // Dictionary indices are per array: encode the slice as its own array.
    return dictionary_encode(plain, target);
  }
  auto out = std::make_shared<array_data>(*plain);
  out->type = target;
  for (std::size_t c = 0; c < out->children.size(); ++c)
    out->children[c] = encode_dictionaries(out->children[c], target->children.at(c).type);
  return out;
}

}  // namespace lancet::arrow
