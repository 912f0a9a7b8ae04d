// Arrow data types, fields and schemas: the logical description of columns that
// arrays (array.hpp) hold and that the Lance schema (schema/) is derived from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lancet::arrow {

enum class type_id : std::uint8_t {
  null, boolean,
  int8, int16, int32, int64, uint8, uint16, uint32, uint64,
  float16, float32, float64,
  date32, date64, time32, time64, timestamp, duration,
  decimal128, decimal256,
  utf8, large_utf8, binary, large_binary, fixed_size_binary,
  fixed_size_list, list, large_list, struct_,
  map,         // list<struct<key, value>> physically (see array.hpp); Lance: 2.2+
  dictionary,  // indices of `index_type` into a dictionary of children[0]'s type
};

enum class time_unit : std::uint8_t { second, milli, micro, nano };

// Ordered key/value pairs; values are bytes (Lance stores metadata values as bytes).
using metadata = std::vector<std::pair<std::string, std::string>>;

struct data_type;
using type_ptr = std::shared_ptr<const data_type>;

struct field {  // members default-initialised: designated initialisers may omit them
  std::string name{};
  type_ptr type{};
  bool nullable = true;
  arrow::metadata metadata{};
};

struct data_type {
  type_id id = type_id::null;
  time_unit unit = time_unit::second;  // time32/64, timestamp, duration
  std::string timezone;                // timestamp; empty = naive
  std::int32_t byte_width = 0;         // fixed_size_binary
  std::int32_t list_size = 0;          // fixed_size_list
  std::int32_t precision = 0;          // decimal
  std::int32_t scale = 0;              // decimal
  std::vector<field> children;         // list kinds: one item field; struct: members;
                                       // map: one non-null "entries" struct<key, value>;
                                       // dictionary: one "values" field (the value type)
  bool keys_sorted = false;            // map
  type_ptr index_type{};               // dictionary: an integer type
};

struct schema {
  std::vector<field> fields;
  arrow::metadata metadata;
};

// ---- properties -----------------------------------------------------------

// Width in bits of one value of a fixed-width type (0 for variable / nested / null).
inline std::int64_t bit_width(const data_type& t) noexcept {
  switch (t.id) {
    case type_id::boolean: return 1;
    case type_id::int8: case type_id::uint8: return 8;
    case type_id::int16: case type_id::uint16: case type_id::float16: return 16;
    case type_id::int32: case type_id::uint32: case type_id::float32: case type_id::date32:
    case type_id::time32: return 32;
    case type_id::int64: case type_id::uint64: case type_id::float64: case type_id::date64:
    case type_id::time64: case type_id::timestamp: case type_id::duration: return 64;
    case type_id::decimal128: return 128;
    case type_id::decimal256: return 256;
    case type_id::fixed_size_binary: return std::int64_t{t.byte_width} * 8;
    default: return 0;
  }
}

inline bool is_fixed_width(const data_type& t) noexcept { return bit_width(t) > 0; }
inline bool is_binary_like(type_id id) noexcept {
  return id == type_id::utf8 || id == type_id::binary || id == type_id::large_utf8 ||
         id == type_id::large_binary;
}
inline bool is_large_binary_like(type_id id) noexcept {
  return id == type_id::large_utf8 || id == type_id::large_binary;
}
// Lists, and maps (a map is a list of key/value structs wherever layout matters).
inline bool is_list_like(type_id id) noexcept {
  return id == type_id::list || id == type_id::large_list || id == type_id::map;
}
inline bool is_nested(type_id id) noexcept {
  return is_list_like(id) || id == type_id::fixed_size_list || id == type_id::struct_;
}

// ---- factories (short names keep tests and examples readable) -------------

inline type_ptr make(type_id id) {
  auto t = std::make_shared<data_type>();
  t->id = id;
  return t;
}
inline type_ptr null_type() { return make(type_id::null); }
inline type_ptr boolean() { return make(type_id::boolean); }
inline type_ptr int8() { return make(type_id::int8); }
inline type_ptr int16() { return make(type_id::int16); }
inline type_ptr int32() { return make(type_id::int32); }
inline type_ptr int64() { return make(type_id::int64); }
inline type_ptr uint8() { return make(type_id::uint8); }
inline type_ptr uint16() { return make(type_id::uint16); }
inline type_ptr uint32() { return make(type_id::uint32); }
inline type_ptr uint64() { return make(type_id::uint64); }
inline type_ptr float16() { return make(type_id::float16); }
inline type_ptr float32() { return make(type_id::float32); }
inline type_ptr float64() { return make(type_id::float64); }
inline type_ptr date32() { return make(type_id::date32); }
inline type_ptr date64() { return make(type_id::date64); }
inline type_ptr utf8() { return make(type_id::utf8); }
inline type_ptr large_utf8() { return make(type_id::large_utf8); }
inline type_ptr binary() { return make(type_id::binary); }
inline type_ptr large_binary() { return make(type_id::large_binary); }

inline type_ptr with_unit(type_id id, time_unit u, std::string tz = {}) {
  auto t = std::make_shared<data_type>();
  t->id = id;
  t->unit = u;
  t->timezone = std::move(tz);
  return t;
}
inline type_ptr time32(time_unit u) { return with_unit(type_id::time32, u); }
inline type_ptr time64(time_unit u) { return with_unit(type_id::time64, u); }
inline type_ptr timestamp(time_unit u, std::string tz = {}) {
  return with_unit(type_id::timestamp, u, std::move(tz));
}
inline type_ptr duration(time_unit u) { return with_unit(type_id::duration, u); }

inline type_ptr decimal128(std::int32_t precision, std::int32_t scale) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::decimal128;
  t->precision = precision;
  t->scale = scale;
  return t;
}
inline type_ptr decimal256(std::int32_t precision, std::int32_t scale) {
  auto t = std::make_shared<data_type>(*decimal128(precision, scale));
  t->id = type_id::decimal256;
  return t;
}
inline type_ptr fixed_size_binary(std::int32_t width) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::fixed_size_binary;
  t->byte_width = width;
  return t;
}
inline type_ptr fixed_size_list(field item, std::int32_t size) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::fixed_size_list;
  t->list_size = size;
  t->children.push_back(std::move(item));
  return t;
}
inline type_ptr fixed_size_list(type_ptr item, std::int32_t size, bool item_nullable = true) {
  return fixed_size_list(field{"item", std::move(item), item_nullable, {}}, size);
}
namespace detail {
inline type_ptr nested(type_id id, field item) {
  auto t = std::make_shared<data_type>();
  t->id = id;
  t->children.push_back(std::move(item));
  return t;
}
}  // namespace detail
inline type_ptr list(field item) { return detail::nested(type_id::list, std::move(item)); }
inline type_ptr list(type_ptr item, bool item_nullable = true) {
  return list(field{"item", std::move(item), item_nullable, {}});
}
inline type_ptr large_list(field item) { return detail::nested(type_id::large_list, std::move(item)); }
inline type_ptr large_list(type_ptr item, bool item_nullable = true) {
  return large_list(field{"item", std::move(item), item_nullable, {}});
}
// map<key, value>: entries struct<key not null, value>, named as Arrow names them.
inline type_ptr map(field key, field value, bool keys_sorted = false) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::map;
  t->keys_sorted = keys_sorted;
  key.nullable = false;
  auto entries = std::make_shared<data_type>();
  entries->id = type_id::struct_;
  entries->children = {std::move(key), std::move(value)};
  t->children.push_back(field{"entries", std::move(entries), false, {}});
  return t;
}
inline type_ptr map(type_ptr key, type_ptr value, bool value_nullable = true, bool keys_sorted = false) {
  return map(field{"key", std::move(key), false, {}}, field{"value", std::move(value), value_nullable, {}},
             keys_sorted);
}
// dictionary<index, value>: the index type is an integer type.
inline type_ptr dictionary(type_ptr index, type_ptr value) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::dictionary;
  t->index_type = std::move(index);
  t->children.push_back(field{"values", std::move(value), true, {}});
  return t;
}
inline type_ptr struct_(std::vector<field> members) {
  auto t = std::make_shared<data_type>();
  t->id = type_id::struct_;
  t->children = std::move(members);
  return t;
}

// Structural equality (names of list items are ignored, as Arrow does by default).
bool equals(const data_type& a, const data_type& b) noexcept;
inline bool equals(const field& a, const field& b) noexcept {
  return a.name == b.name && a.nullable == b.nullable && equals(*a.type, *b.type);
}
inline bool equals(const data_type& a, const data_type& b) noexcept {
  if (a.id != b.id || a.unit != b.unit || a.timezone != b.timezone ||
      a.byte_width != b.byte_width || a.list_size != b.list_size ||
      a.precision != b.precision || a.scale != b.scale || a.children.size() != b.children.size() ||
      a.keys_sorted != b.keys_sorted || bool(a.index_type) != bool(b.index_type) ||
      (a.index_type && !equals(*a.index_type, *b.index_type)))
    return false;
  for (std::size_t i = 0; i < a.children.size(); ++i) {
    const auto& x = a.children[i];
    const auto& y = b.children[i];
    if (a.id == type_id::dictionary) {
      if (!equals(*x.type, *y.type)) return false;
      continue;
    }
    if (x.nullable != y.nullable || !equals(*x.type, *y.type)) return false;
    if ((a.id == type_id::struct_) && x.name != y.name) return false;
  }
  return true;
}

// ---- names (for error messages and debugging) --------------------------------

inline const char* unit_name(time_unit u) noexcept {
  switch (u) {
    case time_unit::second: return "s";
    case time_unit::milli: return "ms";
    case time_unit::micro: return "us";
    case time_unit::nano: return "ns";
  }
  return "?";
}

// The buffers (validity first) and children of an array of type `t` in array_data:
// Arrow's layout, with a dictionary's values as its one child.
struct array_layout {
  std::size_t buffers = 2;
  std::size_t children = 0;
};
inline array_layout layout_of(const data_type& t) {
  switch (t.id) {
    case type_id::null: return {0, 0};
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary: return {3, 0};
    case type_id::list: case type_id::large_list: case type_id::map: case type_id::dictionary: return {2, 1};
    case type_id::fixed_size_list: return {1, 1};
    case type_id::struct_: return {1, t.children.size()};
    default: return {2, 0};
  }
}

// A readable rendering of a type, e.g. "list<item: int32>", "timestamp[us, UTC]".
inline std::string to_string(const data_type& t) {
  auto child = [](const field& f) {
    return f.name + ": " + (f.type ? to_string(*f.type) : std::string("?")) +
           (f.nullable ? "" : " not null");
  };
  switch (t.id) {
    case type_id::null: return "null";
    case type_id::boolean: return "bool";
    case type_id::int8: return "int8";
    case type_id::int16: return "int16";
    case type_id::int32: return "int32";
    case type_id::int64: return "int64";
    case type_id::uint8: return "uint8";
    case type_id::uint16: return "uint16";
    case type_id::uint32: return "uint32";
    case type_id::uint64: return "uint64";
    case type_id::float16: return "float16";
    case type_id::float32: return "float32";
    case type_id::float64: return "float64";
    case type_id::date32: return "date32";
    case type_id::date64: return "date64";
    case type_id::time32: return std::string("time32[") + unit_name(t.unit) + "]";
    case type_id::time64: return std::string("time64[") + unit_name(t.unit) + "]";
    case type_id::timestamp:
      return std::string("timestamp[") + unit_name(t.unit) + (t.timezone.empty() ? "" : ", " + t.timezone) + "]";
    case type_id::duration: return std::string("duration[") + unit_name(t.unit) + "]";
    case type_id::decimal128:
      return "decimal128(" + std::to_string(t.precision) + ", " + std::to_string(t.scale) + ")";
    case type_id::decimal256:
      return "decimal256(" + std::to_string(t.precision) + ", " + std::to_string(t.scale) + ")";
    case type_id::utf8: return "utf8";
    case type_id::large_utf8: return "large_utf8";
    case type_id::binary: return "binary";
    case type_id::large_binary: return "large_binary";
    case type_id::fixed_size_binary: return "fixed_size_binary[" + std::to_string(t.byte_width) + "]";
    case type_id::fixed_size_list:
      return "fixed_size_list<" + (t.children.empty() ? std::string("?") : child(t.children[0])) + ">[" +
             std::to_string(t.list_size) + "]";
    case type_id::list: return "list<" + (t.children.empty() ? std::string("?") : child(t.children[0])) + ">";
    case type_id::large_list:
      return "large_list<" + (t.children.empty() ? std::string("?") : child(t.children[0])) + ">";
    case type_id::map: {
      if (t.children.empty() || !t.children[0].type || t.children[0].type->children.size() != 2) return "map<?>";
      const auto& kv = t.children[0].type->children;
      return "map<" + (kv[0].type ? to_string(*kv[0].type) : std::string("?")) + ", " +
             (kv[1].type ? to_string(*kv[1].type) : std::string("?")) + (kv[1].nullable ? "" : " not null") +
             (t.keys_sorted ? ", keys_sorted" : "") + ">";
    }
    case type_id::dictionary:
      return "dictionary<" + (t.index_type ? to_string(*t.index_type) : std::string("?")) + ", " +
             (t.children.empty() || !t.children[0].type ? std::string("?") : to_string(*t.children[0].type)) + ">";
    case type_id::struct_: {
      std::string s = "struct<";
      for (std::size_t i = 0; i < t.children.size(); ++i) s += (i ? ", " : "") + child(t.children[i]);
      return s + ">";
    }
  }
  return "unknown";
}

}  // namespace lancet::arrow
