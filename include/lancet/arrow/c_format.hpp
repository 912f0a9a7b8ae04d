// The Arrow C Data Interface's structs (the ABI, as the specification defines them) and
// its description of types: format strings and the metadata encoding, both ways. The
// shared ground of import and export (arrow/c_data.hpp).
//
// Supported formats: n b c C s S i I l L e f g z Z u U w:N d:P,S d:P,S,128 d:P,S,256
// tdD tdm tts ttm ttu ttn ts{s,m,u,n}:TZ tD{s,m,u,n} +l +L +w:N +s +m, and dictionary
// encoding (an integer format with a `dictionary` schema and array: the values, which
// must not be nested; the ordered flag is not kept). Others (views, unions,
// intervals, run-end) give unsupported_error.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "lancet/arrow/type.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

// ---- the ABI, exactly as the specification defines it ----------------------------
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

extern "C" {

struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};

}  // extern "C"

#endif  // ARROW_C_DATA_INTERFACE

namespace lancet::arrow {

// Calls the release callback if the struct is still live.
inline void release(ArrowSchema* s) noexcept {
  if (s && s->release) s->release(s);
}
inline void release(ArrowArray* a) noexcept {
  if (a && a->release) a->release(a);
}

// ---- format strings -------------------------------------------------------------------

namespace detail {
inline char unit_char(time_unit u) noexcept {
  switch (u) {
    case time_unit::second: return 's';
    case time_unit::milli: return 'm';
    case time_unit::micro: return 'u';
    case time_unit::nano: return 'n';
  }
  return 's';
}
}  // namespace detail

// The C Data Interface format string of a type (children are described separately).
inline std::string format_string(const data_type& t) {
  switch (t.id) {
    case type_id::null: return "n";
    case type_id::boolean: return "b";
    case type_id::int8: return "c";
    case type_id::uint8: return "C";
    case type_id::int16: return "s";
    case type_id::uint16: return "S";
    case type_id::int32: return "i";
    case type_id::uint32: return "I";
    case type_id::int64: return "l";
    case type_id::uint64: return "L";
    case type_id::float16: return "e";
    case type_id::float32: return "f";
    case type_id::float64: return "g";
    case type_id::date32: return "tdD";
    case type_id::date64: return "tdm";
    case type_id::time32: return std::string("tt") + detail::unit_char(t.unit);
    case type_id::time64: return std::string("tt") + detail::unit_char(t.unit);
    case type_id::timestamp: return std::string("ts") + detail::unit_char(t.unit) + ":" + t.timezone;
    case type_id::duration: return std::string("tD") + detail::unit_char(t.unit);
    case type_id::decimal128: return "d:" + std::to_string(t.precision) + "," + std::to_string(t.scale);
    case type_id::decimal256:
      return "d:" + std::to_string(t.precision) + "," + std::to_string(t.scale) + ",256";
    case type_id::utf8: return "u";
    case type_id::large_utf8: return "U";
    case type_id::binary: return "z";
    case type_id::large_binary: return "Z";
    case type_id::fixed_size_binary: return "w:" + std::to_string(t.byte_width);
    case type_id::fixed_size_list: return "+w:" + std::to_string(t.list_size);
    case type_id::list: return "+l";
    case type_id::large_list: return "+L";
    case type_id::struct_: return "+s";
    case type_id::map: return "+m";
    case type_id::dictionary:  // the indices' format; the values go in `dictionary`
      if (!t.index_type) throw invalid_input_error("format_string: dictionary type without an index type");
      return format_string(*t.index_type);
  }
  throw invalid_input_error("format_string: unknown type id");
}

namespace detail {

[[noreturn]] inline void bad_schema(std::string_view path, const std::string& what) {
  throw invalid_input_error("ArrowSchema '" + std::string(path) + "': " + what);
}

// Parses a decimal integer occupying all of s.
inline bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  std::int64_t v = 0;
  bool neg = false;
  std::size_t i = 0;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = neg ? -v : v;
  return true;
}

inline std::int32_t parse_int32(std::string_view s, std::string_view fmt, std::string_view path) {
  std::int64_t v = 0;
  if (!parse_int(s, v) || v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    bad_schema(path, "malformed format string '" + std::string(fmt) + "'");
  return std::int32_t(v);
}

// The type of a format string, without its children (n_children: how many the
// format requires, -1 for "any" (struct)).
inline std::shared_ptr<data_type> parse_format(std::string_view f, int& n_children, std::string_view path) {
  n_children = 0;
  auto t = std::make_shared<data_type>();
  auto simple = [&](type_id id) {
    t->id = id;
    return t;
  };
  auto unit_of = [&](char c) {
    switch (c) {
      case 's': return time_unit::second;
      case 'm': return time_unit::milli;
      case 'u': return time_unit::micro;
      case 'n': return time_unit::nano;
    }
    bad_schema(path, "malformed format string '" + std::string(f) + "'");
  };
  if (f.size() == 1) {
    switch (f[0]) {
      case 'n': return simple(type_id::null);
      case 'b': return simple(type_id::boolean);
      case 'c': return simple(type_id::int8);
      case 'C': return simple(type_id::uint8);
      case 's': return simple(type_id::int16);
      case 'S': return simple(type_id::uint16);
      case 'i': return simple(type_id::int32);
      case 'I': return simple(type_id::uint32);
      case 'l': return simple(type_id::int64);
      case 'L': return simple(type_id::uint64);
      case 'e': return simple(type_id::float16);
      case 'f': return simple(type_id::float32);
      case 'g': return simple(type_id::float64);
      case 'z': return simple(type_id::binary);
      case 'Z': return simple(type_id::large_binary);
      case 'u': return simple(type_id::utf8);
      case 'U': return simple(type_id::large_utf8);
      default: break;
    }
  }
  if (f == "tdD") return simple(type_id::date32);
  if (f == "tdm") return simple(type_id::date64);
  if (f == "tts" || f == "ttm") {
    t->id = type_id::time32;
    t->unit = unit_of(f[2]);
    return t;
  }
  if (f == "ttu" || f == "ttn") {
    t->id = type_id::time64;
    t->unit = unit_of(f[2]);
    return t;
  }
  if (f.size() == 3 && f.substr(0, 2) == "tD") {
    t->id = type_id::duration;
    t->unit = unit_of(f[2]);
    return t;
  }
  if (f.size() >= 4 && f.substr(0, 2) == "ts" && f[3] == ':') {
    t->id = type_id::timestamp;
    t->unit = unit_of(f[2]);
    t->timezone = std::string(f.substr(4));
    return t;
  }
  if (f.substr(0, 2) == "w:") {
    t->id = type_id::fixed_size_binary;
    t->byte_width = parse_int32(f.substr(2), f, path);
    if (t->byte_width < 0) bad_schema(path, "negative width in '" + std::string(f) + "'");
    return t;
  }
  if (f.substr(0, 3) == "+w:") {
    t->id = type_id::fixed_size_list;
    t->list_size = parse_int32(f.substr(3), f, path);
    if (t->list_size < 0) bad_schema(path, "negative list size in '" + std::string(f) + "'");
    n_children = 1;
    return t;
  }
  if (f.substr(0, 2) == "d:") {
    auto rest = f.substr(2);
    auto c1 = rest.find(',');
    if (c1 == std::string_view::npos) bad_schema(path, "malformed format string '" + std::string(f) + "'");
    auto c2 = rest.find(',', c1 + 1);
    t->precision = parse_int32(rest.substr(0, c1), f, path);
    t->scale = parse_int32(rest.substr(c1 + 1, c2 == std::string_view::npos ? std::string_view::npos : c2 - c1 - 1),
                           f, path);
    std::int32_t bits = 128;
    if (c2 != std::string_view::npos) bits = parse_int32(rest.substr(c2 + 1), f, path);
    if (bits == 128) t->id = type_id::decimal128;
    else if (bits == 256) t->id = type_id::decimal256;
    else throw unsupported_error("ArrowSchema '" + std::string(path) + "': " + std::to_string(bits) +
                                 "-bit decimals ('" + std::string(f) + "') are not supported");
    return t;
  }
  if (f == "+l") {
    t->id = type_id::list;
    n_children = 1;
    return t;
  }
  if (f == "+L") {
    t->id = type_id::large_list;
    n_children = 1;
    return t;
  }
  if (f == "+s") {
    t->id = type_id::struct_;
    n_children = -1;
    return t;
  }
  if (f == "+m") {
    t->id = type_id::map;
    n_children = 1;
    return t;
  }
  throw unsupported_error("ArrowSchema '" + std::string(path) + "': Arrow format '" + std::string(f) +
                          "' is not supported by lancet");
}

// Metadata: int32 count, then (int32 length, bytes) for each key and value.
inline arrow::metadata parse_metadata(const char* p, std::string_view path) {
  arrow::metadata md;
  if (!p) return md;
  auto i32 = [&]() {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    p += 4;
    if (v < 0) bad_schema(path, "negative length in metadata");
    return v;
  };
  const std::int32_t n = i32();
  for (std::int32_t k = 0; k < n; ++k) {
    const auto kl = i32();
    std::string key(p, std::size_t(kl));
    p += kl;
    const auto vl = i32();
    std::string val(p, std::size_t(vl));
    p += vl;
    md.emplace_back(std::move(key), std::move(val));
  }
  return md;
}

inline std::string encode_metadata(const arrow::metadata& md) {
  if (md.empty()) return {};
  std::string out;
  auto i32 = [&](std::size_t v) {
    if (v > std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw invalid_input_error("metadata entry longer than 2 GiB cannot be exported");
    char b[4];
    const auto x = std::int32_t(v);
    std::memcpy(b, &x, 4);
    out.append(b, 4);
  };
  i32(md.size());
  for (const auto& [k, v] : md) {
    i32(k.size());
    out += k;
    i32(v.size());
    out += v;
  }
  return out;
}

}  // namespace detail

}  // namespace lancet::arrow
