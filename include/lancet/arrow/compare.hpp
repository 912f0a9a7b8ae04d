// Deep value equality of arrays: same type, same length, nulls in the same slots and
// equal values in every valid slot, at every depth. Offsets (slices) are honoured
// and whatever lies under a null slot (values, list ranges, struct children) is
// ignored, so two arrays built differently but holding the same data compare equal.
// Fixed-width values are compared bit for bit (NaN equals the same NaN; 0.0 and
// -0.0 differ), which is what round-trip tests want.
//
// first_difference() says where two arrays differ, e.g.
//   "at [3].b[1]: 5 vs 6", "at [7]: null vs \"x\"", "types differ: int32 vs int64".
// Both arrays are assumed valid (see validate.hpp for untrusted input).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/decimal.hpp"
#include "lancet/arrow/half.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/endian.hpp"

namespace lancet::arrow {

struct compare_options {
  // Compare the nullable flags of nested fields (struct members, list items).
  bool check_nested_nullability = true;
  // Compare field metadata of nested fields.
  bool check_nested_metadata = false;
};

// Where types a and b differ, as "types differ[ at <where>]: ..." naming the first
// difference (ids, parameters, member names, and as o asks nested nullability and
// metadata), or nullopt when they match; `where` is the path reported for a and b
// themselves ("" at the top), nested fields extend it.
inline std::optional<std::string> type_difference(const data_type& a, const data_type& b,
                                                  const compare_options& o, const std::string& where) {
  auto here = [&](const std::string& what) {
    return std::optional<std::string>((where.empty() ? std::string("types differ: ") : "types differ at " + where + ": ") +
                                      what);
  };
  if (a.id != b.id || a.unit != b.unit || a.timezone != b.timezone || a.byte_width != b.byte_width ||
      a.list_size != b.list_size || a.precision != b.precision || a.scale != b.scale ||
      a.children.size() != b.children.size() || a.keys_sorted != b.keys_sorted ||
      bool(a.index_type) != bool(b.index_type) || (a.index_type && a.index_type->id != b.index_type->id))
    return here(to_string(a) + " vs " + to_string(b));
  for (std::size_t i = 0; i < a.children.size(); ++i) {
    if (a.id == type_id::dictionary) {  // the values field's name and nullability mean nothing
      if (auto d = type_difference(*a.children[i].type, *b.children[i].type, o, where + "<values>")) return d;
      continue;
    }
    const auto& x = a.children[i];
    const auto& y = b.children[i];
    const std::string sub = where + (a.id == type_id::struct_ ? "." + x.name : std::string("<item>"));
    if (a.id == type_id::struct_ && x.name != y.name)
      return here("member " + std::to_string(i) + " is named '" + x.name + "' vs '" + y.name + "'");
    if (o.check_nested_nullability && x.nullable != y.nullable)
      return here("field " + sub + " is " + (x.nullable ? "nullable" : "not nullable") + " vs " +
                  (y.nullable ? "nullable" : "not nullable"));
    if (o.check_nested_metadata && x.metadata != y.metadata) return here("field " + sub + " metadata differs");
    if (!x.type || !y.type) {
      if (x.type != y.type) return here("field " + sub + " has no type on one side");
      continue;
    }
    if (auto d = type_difference(*x.type, *y.type, o, sub)) return d;
  }
  return std::nullopt;
}

namespace detail {

// A path to an element, rendered only when a difference is reported.
struct diff_path {
  const diff_path* parent = nullptr;
  std::string_view name;   // ".name" when non-empty
  std::int64_t index = -1; // "[index]" when >= 0

  std::string render() const {
    std::string s = parent ? parent->render() : std::string();
    if (!name.empty()) s += "." + std::string(name);
    if (index >= 0) s += "[" + std::to_string(index) + "]";
    return s;
  }
};

inline std::string quote_bytes(std::string_view s, bool text) {
  static const char* hex = "0123456789abcdef";
  constexpr std::size_t max_shown = 48;
  std::string out;
  if (text) {
    out.push_back('"');
    for (std::size_t i = 0; i < s.size() && i < max_shown; ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(char(c));
      } else if (c >= 0x20 && c < 0x7F) {
        out.push_back(char(c));
      } else {
        out += "\\x";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
      }
    }
    if (s.size() > max_shown) out += "...";
    out.push_back('"');
    out += " (" + std::to_string(s.size()) + " bytes)";
  } else {
    out = "0x";
    for (std::size_t i = 0; i < s.size() && i < max_shown; ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
    if (s.size() > max_shown) out += "...";
    out += " (" + std::to_string(s.size()) + " bytes)";
  }
  return out;
}

inline std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The value in slot i (logical index) rendered for a message.
inline std::string format_value(const array_data& a, std::int64_t i) {
  if (a.is_null(i)) return "null";
  const auto& t = *a.type;
  const std::uint8_t* p = nullptr;
  if (is_fixed_width(t) && t.id != type_id::boolean)
    p = a.buffers[1].data() + (a.offset + i) * (bit_width(t) / 8);
  switch (t.id) {
    case type_id::boolean: return a.bool_value(i) ? "true" : "false";
    case type_id::int8: return std::to_string(le::load<std::int8_t>(p));
    case type_id::int16: return std::to_string(le::load<std::int16_t>(p));
    case type_id::int32: case type_id::date32: case type_id::time32:
      return std::to_string(le::load<std::int32_t>(p));
    case type_id::int64: case type_id::date64: case type_id::time64: case type_id::timestamp:
    case type_id::duration:
      return std::to_string(le::load<std::int64_t>(p));
    case type_id::uint8: return std::to_string(le::load<std::uint8_t>(p));
    case type_id::uint16: return std::to_string(le::load<std::uint16_t>(p));
    case type_id::uint32: return std::to_string(le::load<std::uint32_t>(p));
    case type_id::uint64: return std::to_string(le::load<std::uint64_t>(p));
    case type_id::float16: {
      auto bits = le::load<std::uint16_t>(p);
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%04x", unsigned(bits));
      return format_double(half_to_float(bits)) + " (" + buf + ")";
    }
    case type_id::float32: return format_double(le::load<float>(p));
    case type_id::float64: return format_double(le::load<double>(p));
    case type_id::decimal128: return decimal_to_string(p, 16, t.scale);
    case type_id::decimal256: return decimal_to_string(p, 32, t.scale);
    case type_id::utf8: case type_id::large_utf8: return quote_bytes(a.string_value(i), true);
    case type_id::binary: case type_id::large_binary: return quote_bytes(a.string_value(i), false);
    case type_id::fixed_size_binary: return quote_bytes(a.fixed_binary_value(i), false);
    case type_id::dictionary: return format_value(*a.children[0], a.dictionary_index(i));
    case type_id::map: return "map of " + std::to_string(a.value_offset(i + 1) - a.value_offset(i));
    case type_id::list: case type_id::large_list:
      return "list of " + std::to_string(a.value_offset(i + 1) - a.value_offset(i));
    case type_id::fixed_size_list: return "fixed_size_list of " + std::to_string(t.list_size);
    case type_id::struct_: return "struct";
    case type_id::null: return "null";
  }
  return "?";
}

// Compares slot i of a with slot j of b (logical indices; types already equal).
inline std::optional<std::string> diff_slot(const array_data& a, std::int64_t i, const array_data& b,
                                            std::int64_t j, const diff_path& at, const compare_options& o);

inline std::optional<std::string> report(const array_data& a, std::int64_t i, const array_data& b, std::int64_t j,
                                         const diff_path& at, const std::string& what = {}) {
  std::string where = at.render();
  if (where.empty()) where = "<root>";
  return "at " + where + ": " + (what.empty() ? format_value(a, i) + " vs " + format_value(b, j) : what);
}

inline std::optional<std::string> diff_slot(const array_data& a, std::int64_t i, const array_data& b,
                                            std::int64_t j, const diff_path& at, const compare_options& o) {
  const bool va = a.is_valid(i), vb = b.is_valid(j);
  if (va != vb) return report(a, i, b, j, at);
  if (!va) return std::nullopt;
  const auto& t = *a.type;
  switch (t.id) {
    case type_id::null: return std::nullopt;
    case type_id::boolean:
      if (a.bool_value(i) != b.bool_value(j)) return report(a, i, b, j, at);
      return std::nullopt;
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary:
      if (a.string_value(i) != b.string_value(j)) return report(a, i, b, j, at);
      return std::nullopt;
    case type_id::dictionary:
      return diff_slot(*a.children[0], a.dictionary_index(i), *b.children[0], b.dictionary_index(j), at, o);
    case type_id::list: case type_id::large_list: case type_id::map: {
      const auto sa = a.value_offset(i), sb = b.value_offset(j);
      const auto na = a.value_offset(i + 1) - sa, nb = b.value_offset(j + 1) - sb;
      if (na != nb)
        return report(a, i, b, j, at, "list lengths differ: " + std::to_string(na) + " vs " + std::to_string(nb));
      for (std::int64_t k = 0; k < na; ++k) {
        diff_path sub{&at, {}, k};
        if (auto d = diff_slot(*a.children[0], sa + k, *b.children[0], sb + k, sub, o)) return d;
      }
      return std::nullopt;
    }
    case type_id::fixed_size_list: {
      const std::int64_t n = t.list_size;
      for (std::int64_t k = 0; k < n; ++k) {
        diff_path sub{&at, {}, k};
        if (auto d = diff_slot(*a.children[0], (a.offset + i) * n + k, *b.children[0], (b.offset + j) * n + k, sub, o))
          return d;
      }
      return std::nullopt;
    }
    case type_id::struct_: {
      for (std::size_t c = 0; c < t.children.size(); ++c) {
        diff_path sub{&at, t.children[c].name, -1};
        if (auto d = diff_slot(*a.children[c], a.offset + i, *b.children[c], b.offset + j, sub, o)) return d;
      }
      return std::nullopt;
    }
    default: {
      const auto w = bit_width(t) / 8;
      const auto* pa = a.buffers[1].data() + (a.offset + i) * w;
      const auto* pb = b.buffers[1].data() + (b.offset + j) * w;
      if (std::memcmp(pa, pb, std::size_t(w)) != 0) return report(a, i, b, j, at);
      return std::nullopt;
    }
  }
}

}  // namespace detail

inline std::optional<std::string> first_difference(const array_data& a, const array_data& b,
                                                   const compare_options& o = {}) {
  if (!a.type || !b.type) return std::string(!a.type ? "the first" : "the second") + " array has no type";
  if (auto d = type_difference(*a.type, *b.type, o, "")) return d;
  if (a.length != b.length)
    return "lengths differ: " + std::to_string(a.length) + " vs " + std::to_string(b.length);
  for (std::int64_t i = 0; i < a.length; ++i) {
    detail::diff_path at{nullptr, {}, i};
    if (auto d = detail::diff_slot(a, i, b, i, at, o)) return d;
  }
  return std::nullopt;
}

inline std::optional<std::string> first_difference(const array_ptr& a, const array_ptr& b,
                                                   const compare_options& o = {}) {
  if (!a || !b) {
    if (!a && !b) return std::nullopt;
    return std::string(!a ? "the first" : "the second") + " array is null";
  }
  return first_difference(*a, *b, o);
}

inline bool array_equals(const array_data& a, const array_data& b, const compare_options& o = {}) {
  return !first_difference(a, b, o).has_value();
}
inline bool array_equals(const array_ptr& a, const array_ptr& b, const compare_options& o = {}) {
  return !first_difference(a, b, o).has_value();
}

// Batches: same column names and types (top-level nullability included), equal columns.
inline std::optional<std::string> first_difference(const record_batch& a, const record_batch& b,
                                                   const compare_options& o = {}) {
  if (a.columns.size() != b.columns.size())
    return "column counts differ: " + std::to_string(a.columns.size()) + " vs " + std::to_string(b.columns.size());
  for (std::size_t c = 0; c < a.columns.size(); ++c) {
    std::string name = (a.schema && c < a.schema->fields.size()) ? a.schema->fields[c].name : std::to_string(c);
    if (a.schema && b.schema && c < a.schema->fields.size() && c < b.schema->fields.size()) {
      const auto& fa = a.schema->fields[c];
      const auto& fb = b.schema->fields[c];
      if (fa.name != fb.name) return "column " + std::to_string(c) + " is named '" + fa.name + "' vs '" + fb.name + "'";
      if (fa.nullable != fb.nullable)
        return "column '" + name + "' is " + (fa.nullable ? "nullable" : "not nullable") + " vs " +
               (fb.nullable ? "nullable" : "not nullable");
    }
    if (auto d = first_difference(a.columns[c], b.columns[c], o)) return "column '" + name + "': " + *d;
  }
  return std::nullopt;
}
inline bool batch_equals(const record_batch& a, const record_batch& b, const compare_options& o = {}) {
  return !first_difference(a, b, o).has_value();
}

}  // namespace lancet::arrow
