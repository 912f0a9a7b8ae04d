// Full structural validation of arrays that come from outside (user input, the C
// Data Interface): buffer counts and sizes, alignment of typed buffers, offsets
// (non-negative, monotonic, in bounds), child counts, types and lengths, the
// cached null count, and optionally UTF-8. Writers call it before touching user
// arrays; after it passes, every accessor in array.hpp stays in bounds.
// Failures throw invalid_input_error naming the array path and the problem.
#pragma once

#include <bit>
#include <cstring>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

struct validate_options {
  // Check that utf8 / large_utf8 values are valid UTF-8 (Lance's readers reject
  // invalid UTF-8 in string columns).
  bool check_utf8 = true;
  // Nesting deeper than this is refused (keeps recursion bounded).
  int max_depth = 64;
};

// Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF)?
inline bool is_valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // Fast path over ASCII, 8 bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w = le::load<std::uint64_t>(p + i);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (n - i < len) return false;
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return false;
    i += len;
  }
  return true;
}

// Number of set bits in bits [offset, offset + length).
inline std::int64_t count_set_bits(const std::uint8_t* bits, std::int64_t offset, std::int64_t length) noexcept {
  std::int64_t n = 0, i = offset;
  const std::int64_t end = offset + length;
  while (i < end && (i & 7)) n += get_bit(bits, i++);
  while (i + 64 <= end) {
    n += std::popcount(le::load<std::uint64_t>(bits + (i >> 3)));
    i += 64;
  }
  while (i + 8 <= end) {
    n += std::popcount(unsigned(bits[i >> 3]));
    i += 8;
  }
  while (i < end) n += get_bit(bits, i++);
  return n;
}

// Checks that a type is well formed (parameters in range, children present).
void validate_type(const data_type& t, std::string_view path = "type");

namespace detail {

[[noreturn]] inline void invalid(std::string_view path, const std::string& what) {
  throw invalid_input_error("array '" + std::string(path) + "': " + what);
}

inline void validate_type_impl(const data_type& t, const std::string& path, int depth) {
  if (depth > 64) throw invalid_input_error("type '" + path + "': nested more than 64 levels deep");
  auto bad = [&](const std::string& what) { throw invalid_input_error("type '" + path + "': " + what); };
  switch (t.id) {
    case type_id::time32:
      if (t.unit != time_unit::second && t.unit != time_unit::milli)
        bad(std::string("time32 takes seconds or milliseconds, not ") + unit_name(t.unit));
      break;
    case type_id::time64:
      if (t.unit != time_unit::micro && t.unit != time_unit::nano)
        bad(std::string("time64 takes microseconds or nanoseconds, not ") + unit_name(t.unit));
      break;
    case type_id::decimal128:
    case type_id::decimal256: {
      const int max_p = t.id == type_id::decimal128 ? 38 : 76;
      if (t.precision < 1 || t.precision > max_p)
        bad(to_string(t) + ": precision must be in [1, " + std::to_string(max_p) + "]");
      if (t.scale > t.precision) bad(to_string(t) + ": scale larger than precision");
      break;
    }
    case type_id::fixed_size_binary:
      if (t.byte_width < 0) bad("negative fixed_size_binary width " + std::to_string(t.byte_width));
      break;
    case type_id::fixed_size_list:
      if (t.list_size < 0) bad("negative fixed_size_list size " + std::to_string(t.list_size));
      break;
    default: break;
  }
  const bool one_child = t.id == type_id::list || t.id == type_id::large_list || t.id == type_id::fixed_size_list ||
                         t.id == type_id::map || t.id == type_id::dictionary;
  if (one_child && t.children.size() != 1)
    bad(to_string(t) + " needs exactly one item field, has " + std::to_string(t.children.size()));
  if (t.id == type_id::map) {
    const auto& e = t.children[0];
    if (!e.type || e.type->id != type_id::struct_ || e.type->children.size() != 2)
      bad(to_string(t) + ": the entries field must be a struct of a key and a value");
    if (e.nullable) bad(to_string(t) + ": the entries field must not be nullable");
    if (e.type->children[0].nullable) bad(to_string(t) + ": the key field must not be nullable");
  }
  if (t.id == type_id::dictionary) {
    const auto* ix = t.index_type.get();
    if (!ix || !(ix->id == type_id::int8 || ix->id == type_id::int16 || ix->id == type_id::int32 ||
                 ix->id == type_id::int64 || ix->id == type_id::uint8 || ix->id == type_id::uint16 ||
                 ix->id == type_id::uint32 || ix->id == type_id::uint64))
      bad(to_string(t) + ": the index type must be an integer type");
    const auto* v = t.children[0].type.get();
    if (v && (is_nested(v->id) || v->id == type_id::dictionary))
      bad(to_string(t) + ": dictionary values must not be nested");
  }
  if (!one_child && t.id != type_id::struct_ && !t.children.empty())
    bad(to_string(t) + " cannot have child fields");
  for (const auto& c : t.children) {
    std::string sub = path + (t.id == type_id::struct_ ? "." + c.name : std::string(".") + c.name);
    if (!c.type) throw invalid_input_error("type '" + sub + "': field has no type");
    validate_type_impl(*c.type, sub, depth + 1);
  }
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view path) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) invalid(path, "size overflows 64 bits");
  return r;
}
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view path) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) invalid(path, "size overflows 64 bits");
  return r;
}

inline void need_buffer(const array_data& a, std::size_t i, std::int64_t bytes, std::int64_t align,
                        const char* what, std::string_view path) {
  const auto& b = a.buffers[i];
  if (b.data() == nullptr && b.size() != 0) invalid(path, std::string(what) + " buffer has a size but no data");
  if (std::int64_t(b.size()) < bytes || (b.size() > 0 && b.data() == nullptr))
    invalid(path, std::string(what) + " buffer holds " + std::to_string(b.size()) + " bytes, needs " +
                      std::to_string(bytes) + " for " + std::to_string(a.length) + " values at offset " +
                      std::to_string(a.offset));
  if (bytes > 0 && align > 1 && reinterpret_cast<std::uintptr_t>(b.data()) % std::uintptr_t(align) != 0)
    invalid(path, std::string(what) + " buffer is not aligned to " + std::to_string(align) + " bytes");
}

template <class Offset>
inline void check_offsets(const array_data& a, std::int64_t limit, const char* limit_what, std::string_view path,
                          bool utf8) {
  const auto* o = a.buffers[1].as<Offset>() + a.offset;
  if (o[0] < 0) invalid(path, "first offset " + std::to_string(o[0]) + " is negative");
  for (std::int64_t i = 0; i < a.length; ++i) {
    if (o[i + 1] < o[i])
      invalid(path, "offsets decrease at slot " + std::to_string(i) + " (" + std::to_string(o[i]) + " then " +
                        std::to_string(o[i + 1]) + ")");
  }
  if (std::int64_t(o[a.length]) > limit)
    invalid(path, "last offset " + std::to_string(o[a.length]) + " is past the end of the " + limit_what + " (" +
                      std::to_string(limit) + ")");
  if (utf8) {
    const char* data = reinterpret_cast<const char*>(a.buffers[2].data());
    for (std::int64_t i = 0; i < a.length; ++i) {
      if (!a.is_valid(i)) continue;
      std::string_view v(data + o[i], std::size_t(o[i + 1] - o[i]));
      if (!is_valid_utf8(v)) invalid(path, "value " + std::to_string(i) + " is not valid UTF-8");
    }
  }
}

inline void validate_impl(const array_data& a, const std::string& path, const validate_options& opt, int depth) {
  if (depth > opt.max_depth) invalid(path, "nested more than " + std::to_string(opt.max_depth) + " levels deep");
  if (!a.type) invalid(path, "has no type");
  const auto& t = *a.type;
  if (a.length < 0) invalid(path, "negative length " + std::to_string(a.length));
  if (a.offset < 0) invalid(path, "negative offset " + std::to_string(a.offset));
  const std::int64_t end = checked_add(a.offset, a.length, path);

  const auto [want_buffers, want_children] = layout_of(t);
  if (t.id == type_id::null) {
    for (const auto& b : a.buffers)
      if (b) invalid(path, "a null-type array has no buffers");
    if (a.null_count >= 0 && a.null_count != a.length)
      invalid(path, "null_count " + std::to_string(a.null_count) + " but a null-type array of length " +
                        std::to_string(a.length) + " is all null");
  } else if (a.buffers.size() != want_buffers) {
    invalid(path, to_string(t) + " needs " + std::to_string(want_buffers) + " buffers, has " +
                      std::to_string(a.buffers.size()));
  }
  if (a.children.size() != want_children)
    invalid(path, to_string(t) + " needs " + std::to_string(want_children) + " children, has " +
                      std::to_string(a.children.size()));

  // Validity bitmap and the cached null count.
  if (t.id != type_id::null) {
    const auto& v = a.buffers[0];
    if (v) {
      need_buffer(a, 0, (end + 7) / 8, 1, "validity", path);
      if (a.null_count >= 0) {
        const auto nulls = a.length - count_set_bits(v.data(), a.offset, a.length);
        if (nulls != a.null_count)
          invalid(path, "null_count says " + std::to_string(a.null_count) + " but the validity bitmap has " +
                            std::to_string(nulls) + " nulls");
      }
    } else if (a.null_count > 0) {
      invalid(path, "null_count is " + std::to_string(a.null_count) + " but there is no validity bitmap");
    }
  }

  switch (t.id) {
    case type_id::null: break;
    case type_id::boolean: need_buffer(a, 1, (end + 7) / 8, 1, "values", path); break;
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary: {
      const bool large = is_large_binary_like(t.id);
      const std::int64_t w = large ? 8 : 4;
      need_buffer(a, 1, checked_mul(end + 1, w, path), w, "offsets", path);
      const auto& d = a.buffers[2];
      if (d.data() == nullptr && d.size() != 0) invalid(path, "data buffer has a size but no data");
      const bool utf8 = opt.check_utf8 && (t.id == type_id::utf8 || t.id == type_id::large_utf8);
      if (large) check_offsets<std::int64_t>(a, std::int64_t(d.size()), "data buffer", path, utf8);
      else check_offsets<std::int32_t>(a, std::int64_t(d.size()), "data buffer", path, utf8);
      break;
    }
    case type_id::list: case type_id::large_list: case type_id::map: {
      const bool large = t.id == type_id::large_list;
      const std::int64_t w = large ? 8 : 4;
      const auto& child = a.children[0];
      if (!child) invalid(path, "the item array is null");
      need_buffer(a, 1, checked_mul(end + 1, w, path), w, "offsets", path);
      if (large) check_offsets<std::int64_t>(a, child->length, "item array", path, false);
      else check_offsets<std::int32_t>(a, child->length, "item array", path, false);
      break;
    }
    case type_id::fixed_size_list: {
      const auto& child = a.children[0];
      if (!child) invalid(path, "the item array is null");
      const auto need = checked_mul(end, t.list_size, path);
      if (child->length < need)
        invalid(path, "the item array has " + std::to_string(child->length) + " values, needs " +
                          std::to_string(need) + " (" + std::to_string(end) + " lists of " +
                          std::to_string(t.list_size) + ")");
      break;
    }
    case type_id::dictionary: {
      // Indices (offset applies) into the whole dictionary (children[0], never sliced).
      const auto& dict = a.children[0];
      if (!dict) invalid(path, "the dictionary array is null");
      const std::int64_t bytes = bit_width(*t.index_type) / 8;
      need_buffer(a, 1, checked_mul(end, bytes, path), bytes, "indices", path);
      const auto* p = a.buffers[1].data();
      for (std::int64_t i = 0; i < a.length; ++i) {
        if (!a.is_valid(i)) continue;
        const auto* q = p + (a.offset + i) * bytes;
        std::int64_t k = 0;
        bool neg = false;
        switch (t.index_type->id) {
          case type_id::int8: k = *reinterpret_cast<const std::int8_t*>(q); break;
          case type_id::uint8: k = *q; break;
          case type_id::int16: { std::int16_t v; std::memcpy(&v, q, 2); k = v; break; }
          case type_id::uint16: { std::uint16_t v; std::memcpy(&v, q, 2); k = v; break; }
          case type_id::int32: { std::int32_t v; std::memcpy(&v, q, 4); k = v; break; }
          case type_id::uint32: { std::uint32_t v; std::memcpy(&v, q, 4); k = v; break; }
          case type_id::int64: { std::int64_t v; std::memcpy(&v, q, 8); k = v; break; }
          default: { std::uint64_t v; std::memcpy(&v, q, 8); neg = v > std::uint64_t(INT64_MAX); k = std::int64_t(v); }
        }
        if (neg || k < 0 || k >= dict->length)
          invalid(path, "index " + std::to_string(k) + " at slot " + std::to_string(i) +
                            " is outside the dictionary of " + std::to_string(dict->length) + " values");
      }
      break;
    }
    case type_id::struct_:
      for (std::size_t c = 0; c < a.children.size(); ++c) {
        if (!a.children[c]) invalid(path, "member '" + t.children[c].name + "' array is null");
        if (a.children[c]->length < end)
          invalid(path, "member '" + t.children[c].name + "' has " + std::to_string(a.children[c]->length) +
                            " values, needs " + std::to_string(end));
      }
      break;
    default: {
      const auto bits = bit_width(t);
      const std::int64_t bytes = bits / 8;
      const std::int64_t align = (t.id == type_id::fixed_size_binary || bytes > 8) ? 1 : bytes;
      need_buffer(a, 1, checked_mul(end, bytes, path), align, "values", path);
      break;
    }
  }

  for (std::size_t c = 0; c < a.children.size(); ++c) {
    const auto& f = t.children[c];
    const auto& child = *a.children[c];
    const std::string sub = path + "." + f.name;
    if (!child.type || !f.type || !equals(*child.type, *f.type))
      invalid(sub, "the array is " + (child.type ? to_string(*child.type) : std::string("untyped")) +
                       " but its field says " + (f.type ? to_string(*f.type) : std::string("nothing")));
    validate_impl(child, sub, opt, depth + 1);
  }
}

}  // namespace detail

inline void validate_type(const data_type& t, std::string_view path) {
  detail::validate_type_impl(t, std::string(path), 0);
}

// Validates an array (and everything under it); `name` prefixes error messages.
inline void validate(const array_data& a, std::string_view name = "array", const validate_options& opt = {}) {
  if (a.type) validate_type(*a.type, name);
  detail::validate_impl(a, std::string(name), opt, 0);
}
inline void validate(const array_ptr& a, std::string_view name = "array", const validate_options& opt = {}) {
  if (!a) throw invalid_input_error("array '" + std::string(name) + "' is null");
  validate(*a, name, opt);
}

// Validates a batch: one column per schema field, each of the schema's type and of
// the batch's row count.
inline void validate(const record_batch& rb, const validate_options& opt = {}) {
  if (!rb.schema) throw invalid_input_error("record batch has no schema");
  const auto& fields = rb.schema->fields;
  if (fields.size() != rb.columns.size())
    throw invalid_input_error("record batch: the schema has " + std::to_string(fields.size()) + " fields but " +
                              std::to_string(rb.columns.size()) + " columns");
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    validate(rb.columns[i], f.name, opt);
    if (!f.type || !equals(*f.type, *rb.columns[i]->type))
      throw invalid_input_error("record batch column '" + f.name + "' is " + to_string(*rb.columns[i]->type) +
                                " but the schema says " + (f.type ? to_string(*f.type) : std::string("nothing")));
    if (rb.columns[i]->length != rb.columns[0]->length)
      throw invalid_input_error("record batch column '" + f.name + "' has " +
                                std::to_string(rb.columns[i]->length) + " rows, column '" + fields[0].name +
                                "' has " + std::to_string(rb.columns[0]->length));
  }
}

}  // namespace lancet::arrow
