// Lance logical types: the type string Lance records for each field ("int32",
// "timestamp:us:UTC", "fixed_size_list:float:128", ...), made from an Arrow field and
// parsed back into one, with what Lance cannot store refused (unsupported_error).
// schema/lance_schema.hpp's opening comment lists the rules.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/schema/field.hpp"

namespace lancet::schema {

// ---- logical types -------------------------------------------------------------------

namespace detail {

inline std::string join_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

[[noreturn]] inline void cannot_store(const std::string& path, const std::string& what) {
  throw unsupported_error("field '" + path + "': " + what);
}

inline bool is_bfloat16_item(const arrow::field& f) {
  if (!f.type || f.type->id != arrow::type_id::fixed_size_binary || f.type->byte_width != 2) return false;
  for (const auto& [k, v] : f.metadata)
    if (k == extension_name_key) return v == bfloat16_extension;
  return false;
}

inline std::optional<std::string_view> metadata_of(const arrow::metadata& md, std::string_view key) {
  for (const auto& [k, v] : md)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

inline std::string logical_type_of(const arrow::data_type& t, const std::string& path) {
  using arrow::type_id;
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
    case type_id::float16: return "halffloat";
    case type_id::float32: return "float";
    case type_id::float64: return "double";
    case type_id::date32: return "date32:day";
    case type_id::date64: return "date64:ms";
    case type_id::time32: return std::string("time32:") + arrow::unit_name(t.unit);
    case type_id::time64: return std::string("time64:") + arrow::unit_name(t.unit);
    case type_id::timestamp:
      if (t.timezone.find(':') != std::string::npos)
        cannot_store(path, "timezone '" + t.timezone +
                               "' contains ':', which Lance cannot read back from its logical type string "
                               "(use a zone name such as 'Asia/Kolkata' or 'Etc/GMT-5')");
      if (t.timezone == "-") cannot_store(path, "timezone '-' means \"no timezone\" to Lance");
      return std::string("timestamp:") + arrow::unit_name(t.unit) + ":" + (t.timezone.empty() ? "-" : t.timezone);
    case type_id::duration: return std::string("duration:") + arrow::unit_name(t.unit);
    case type_id::decimal128:
      return "decimal:128:" + std::to_string(t.precision) + ":" + std::to_string(t.scale);
    case type_id::decimal256:
      return "decimal:256:" + std::to_string(t.precision) + ":" + std::to_string(t.scale);
    case type_id::utf8: return "string";
    case type_id::large_utf8: return "large_string";
    case type_id::binary: return "binary";
    case type_id::large_binary: return "large_binary";
    case type_id::fixed_size_binary: return "fixed_size_binary:" + std::to_string(t.byte_width);
    case type_id::struct_: return "struct";
    case type_id::map:
      // Lance 12 refuses sorted keys (lance-core datatypes/field.rs).
      if (t.keys_sorted) cannot_store(path, "Lance 12 does not support map fields with keys_sorted = true");
      return "map";
    case type_id::dictionary: {
      const auto& v = *t.children.at(0).type;
      if (!(arrow::is_binary_like(v.id) || (arrow::is_fixed_width(v) && v.id != type_id::boolean &&
                                            v.id != type_id::fixed_size_binary)))
        cannot_store(path, "Lance cannot store a dictionary of " + arrow::to_string(v));
      return "dict:" + logical_type_of(v, path) + ":" + logical_type_of(*t.index_type, path) + ":false";
    }
    case type_id::list:
      return t.children.at(0).type->id == type_id::struct_ ? "list.struct" : "list";
    case type_id::large_list:
      return t.children.at(0).type->id == type_id::struct_ ? "large_list.struct" : "large_list";
    case type_id::fixed_size_list: {
      const auto& item = t.children.at(0);
      const auto n = std::to_string(t.list_size);
      if (is_bfloat16_item(item)) return "fixed_size_list:lance.bfloat16:" + n;
      const auto iid = item.type->id;
      if (iid == type_id::struct_) return "fixed_size_list:struct:" + n;
      if (iid == type_id::list || iid == type_id::large_list || iid == type_id::map || iid == type_id::dictionary)
        cannot_store(path, "Lance cannot store a fixed_size_list of " + arrow::to_string(*item.type));
      if (iid == type_id::fixed_size_list) {
        // The inner list has to be described by its type string alone.
        const auto& inner_item = item.type->children.at(0);
        if (inner_item.type->id == type_id::struct_ || arrow::is_list_like(inner_item.type->id))
          cannot_store(path, "Lance cannot store a fixed_size_list of " + arrow::to_string(*item.type));
      }
      return "fixed_size_list:" + logical_type_of(*item.type, path + ".item") + ":" + n;
    }
  }
  throw invalid_input_error("field '" + path + "': unknown Arrow type");
}

inline pb::file::field_encoding encoding_of(const arrow::data_type& t) {
  using arrow::type_id;
  if (t.id == type_id::null || t.id == type_id::struct_) return pb::file::field_encoding::none;
  if (t.id == type_id::dictionary) return pb::file::field_encoding::dictionary;
  if (arrow::is_binary_like(t.id)) return pb::file::field_encoding::var_binary;
  return pb::file::field_encoding::plain;  // fixed width, fixed-size binary/list, lists
}

inline bool is_truthy(std::string_view v) {
  const std::string s = ascii_lower(v);
  return s == "true" || s == "1" || s == "yes";
}

inline field from_arrow_field(const arrow::field& af, const std::string& parent_path) {
  const std::string path = join_path(parent_path, af.name);
  if (!af.type) throw invalid_input_error("field '" + path + "' has no type");
  const auto& t = *af.type;
  field f;
  f.name = af.name;
  f.nullable = af.nullable;
  f.metadata = af.metadata;
  if (auto pk = metadata_of(af.metadata, primary_key_key)) f.unenforced_primary_key = is_truthy(*pk);
  const auto ext = metadata_of(af.metadata, extension_name_key);
  if (ext && *ext == arrow_json_extension && (t.id == arrow::type_id::utf8 || t.id == arrow::type_id::large_utf8))
    cannot_store(path, "arrow.json (JSON text) columns are stored by Lance as JSONB; lancet does not convert them "
                       "(give a large_binary column of JSONB with ARROW:extension:name = lance.json)");
  if (ext && *ext == json_extension && t.id == arrow::type_id::large_binary) {
    f.logical_type = "json";
  } else {
    f.logical_type = logical_type_of(t, path);
  }
  f.encoding = encoding_of(t);
  // Lance 12 writes an (empty) Dictionary message for every dictionary field.
  if (t.id == arrow::type_id::dictionary) f.dictionary = pb::file::dictionary{};
  switch (t.id) {
    case arrow::type_id::struct_:
      for (const auto& c : t.children) f.children.push_back(from_arrow_field(c, path));
      break;
    case arrow::type_id::list:
    case arrow::type_id::large_list:
    case arrow::type_id::map:
      f.children.push_back(from_arrow_field(t.children.at(0), path));
      break;
    case arrow::type_id::fixed_size_list:
      if (t.children.at(0).type->id == arrow::type_id::struct_)
        f.children.push_back(from_arrow_field(t.children[0], path));
      else
        f.fsl_item = t.children[0];
      break;
    default: break;
  }
  return f;
}

// ---- parsing logical types back -------------------------------------------------------

[[noreturn]] inline void bad_logical_type(const std::string& path, std::string_view lt) {
  throw invalid_input_error("field '" + path + "': malformed logical type '" + std::string(lt) + "'");
}

inline std::int32_t parse_i32(std::string_view s, const std::string& path, std::string_view lt) {
  std::size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) i = 1;
  if (i >= s.size() || s.size() - i > 10) bad_logical_type(path, lt);
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') bad_logical_type(path, lt);
    v = v * 10 + (s[i] - '0');
  }
  if (neg) v = -v;
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    bad_logical_type(path, lt);
  return std::int32_t(v);
}

inline std::optional<arrow::time_unit> parse_unit(std::string_view u) {
  if (u == "s") return arrow::time_unit::second;
  if (u == "ms") return arrow::time_unit::milli;
  if (u == "us") return arrow::time_unit::micro;
  if (u == "ns") return arrow::time_unit::nano;
  return std::nullopt;
}

// The Arrow type of a logical type string that describes its type on its own (every
// type but struct, list and large_list, which need their child fields).
inline arrow::type_ptr parse_leaf_type(std::string_view lt, const std::string& path, int depth = 0) {
  using namespace arrow;
  if (depth > 32) bad_logical_type(path, lt);
  if (lt == "null") return null_type();
  if (lt == "bool") return boolean();
  if (lt == "int8") return int8();
  if (lt == "int16") return int16();
  if (lt == "int32") return int32();
  if (lt == "int64") return int64();
  if (lt == "uint8") return uint8();
  if (lt == "uint16") return uint16();
  if (lt == "uint32") return uint32();
  if (lt == "uint64") return uint64();
  if (lt == "halffloat") return float16();
  if (lt == "float") return float32();
  if (lt == "double") return float64();
  if (lt == "string") return utf8();
  if (lt == "large_string") return large_utf8();
  if (lt == "binary") return binary();
  if (lt == "large_binary") return large_binary();
  if (lt == "date32:day") return date32();
  if (lt == "date64:ms") return date64();
  if (lt == "time32:s") return time32(time_unit::second);
  if (lt == "time32:ms") return time32(time_unit::milli);
  if (lt == "time64:us") return time64(time_unit::micro);
  if (lt == "time64:ns") return time64(time_unit::nano);
  const auto colon = lt.find(':');
  const auto head = lt.substr(0, colon);
  const auto rest = colon == std::string_view::npos ? std::string_view() : lt.substr(colon + 1);
  if (head == "duration") {
    if (auto u = parse_unit(rest)) return duration(*u);
    bad_logical_type(path, lt);
  }
  if (head == "timestamp") {
    // timestamp:<unit>:<tz or ->; the zone is everything after the second ':'.
    const auto c2 = rest.find(':');
    if (c2 == std::string_view::npos) bad_logical_type(path, lt);
    auto u = parse_unit(rest.substr(0, c2));
    if (!u) bad_logical_type(path, lt);
    const auto tz = rest.substr(c2 + 1);
    return timestamp(*u, tz == "-" ? std::string() : std::string(tz));
  }
  if (head == "decimal") {
    const auto c2 = rest.find(':');
    const auto c3 = c2 == std::string_view::npos ? c2 : rest.find(':', c2 + 1);
    if (c3 == std::string_view::npos || rest.find(':', c3 + 1) != std::string_view::npos)
      bad_logical_type(path, lt);
    const auto bits = parse_i32(rest.substr(0, c2), path, lt);
    const auto p = parse_i32(rest.substr(c2 + 1, c3 - c2 - 1), path, lt);
    const auto s = parse_i32(rest.substr(c3 + 1), path, lt);
    type_ptr t;
    if (bits == 128) t = decimal128(p, s);
    else if (bits == 256) t = decimal256(p, s);
    else throw unsupported_error("field '" + path + "': " + std::to_string(bits) + "-bit decimals ('" +
                                 std::string(lt) + "') are not supported");
    return t;
  }
  if (head == "fixed_size_binary") {
    const auto w = parse_i32(rest, path, lt);
    if (w < 0) bad_logical_type(path, lt);
    return fixed_size_binary(w);
  }
  if (head == "fixed_size_list") {
    const auto last = rest.rfind(':');
    if (last == std::string_view::npos) bad_logical_type(path, lt);
    const auto n = parse_i32(rest.substr(last + 1), path, lt);
    if (n < 0) bad_logical_type(path, lt);
    const auto inner = rest.substr(0, last);
    if (inner == bfloat16_extension) {
      arrow::field item{"item", fixed_size_binary(2), true,
                 {{std::string(extension_name_key), std::string(bfloat16_extension)},
                  {std::string(extension_metadata_key), std::string()}}};
      return fixed_size_list(std::move(item), n);
    }
    if (inner == "struct" || inner == "list" || inner == "large_list" || inner == "list.struct" ||
        inner == "large_list.struct")
      bad_logical_type(path, lt);  // needs a child field (handled by the caller)
    return fixed_size_list(parse_leaf_type(inner, path + ".item", depth + 1), n);
  }
  if (head == "dict") {
    // dict:<value type>:<index type>:<ordered>; the value type may hold ':' itself.
    const auto c_ord = rest.rfind(':');
    const auto c_idx = c_ord == std::string_view::npos || c_ord == 0 ? std::string_view::npos : rest.rfind(':', c_ord - 1);
    if (c_idx == std::string_view::npos) bad_logical_type(path, lt);
    auto value = parse_leaf_type(rest.substr(0, c_idx), path, depth + 1);
    auto index = parse_leaf_type(rest.substr(c_idx + 1, c_ord - c_idx - 1), path, depth + 1);
    if (!(index->id == type_id::int8 || index->id == type_id::int16 || index->id == type_id::int32 ||
          index->id == type_id::int64 || index->id == type_id::uint8 || index->id == type_id::uint16 ||
          index->id == type_id::uint32 || index->id == type_id::uint64) ||
        is_nested(value->id) || value->id == type_id::null)
      bad_logical_type(path, lt);
    return dictionary(std::move(index), std::move(value));
  }
  throw unsupported_error("field '" + path + "': Lance logical type '" + std::string(lt) +
                          "' is not supported by lancet");
}

inline arrow::field to_arrow_field(const field& f, const std::string& parent_path, int depth) {
  const std::string path = join_path(parent_path, f.name);
  if (depth > 64) throw invalid_input_error("field '" + path + "': nested more than 64 levels deep");
  const std::string& lt = f.logical_type;
  auto need_children = [&](std::size_t n) {
    if (f.children.size() != n)
      throw invalid_input_error("field '" + path + "' of logical type '" + lt + "' has " +
                                std::to_string(f.children.size()) + " child fields, expected " + std::to_string(n));
  };
  arrow::field out;
  out.name = f.name;
  out.nullable = f.nullable;
  out.metadata = f.metadata;
  if (lt == "struct") {
    std::vector<arrow::field> members;
    for (const auto& c : f.children) members.push_back(to_arrow_field(c, path, depth + 1));
    out.type = arrow::struct_(std::move(members));
  } else if (lt == "list" || lt == "list.struct" || lt == "large_list" || lt == "large_list.struct") {
    need_children(1);
    auto item = to_arrow_field(f.children[0], path, depth + 1);
    const bool of_struct = lt.ends_with(".struct");
    if (of_struct != (item.type->id == arrow::type_id::struct_))
      throw invalid_input_error("field '" + path + "' of logical type '" + lt + "' has an item of type " +
                                arrow::to_string(*item.type));
    out.type = lt.starts_with("large_list") ? arrow::large_list(std::move(item)) : arrow::list(std::move(item));
  } else if (lt == "map") {
    need_children(1);
    auto entries = to_arrow_field(f.children[0], path, depth + 1);
    if (entries.type->id != arrow::type_id::struct_ || entries.type->children.size() != 2)
      throw invalid_input_error("field '" + path + "' of logical type 'map' has entries of type " +
                                arrow::to_string(*entries.type) + ", expected a struct of a key and a value");
    auto t = std::make_shared<arrow::data_type>();
    t->id = arrow::type_id::map;
    t->children.push_back(std::move(entries));
    out.type = std::move(t);
  } else if (lt.starts_with("fixed_size_list:struct:")) {
    need_children(1);
    const auto n = parse_i32(std::string_view(lt).substr(23), path, lt);
    if (n < 0) bad_logical_type(path, lt);
    auto item = to_arrow_field(f.children[0], path, depth + 1);
    if (item.type->id != arrow::type_id::struct_)
      throw invalid_input_error("field '" + path + "' of logical type '" + lt + "' has an item of type " +
                                arrow::to_string(*item.type));
    out.type = arrow::fixed_size_list(std::move(item), n);
  } else if (lt == "json") {
    need_children(0);
    out.type = arrow::large_binary();
    if (!metadata_of(out.metadata, extension_name_key))
      out.metadata.emplace_back(std::string(extension_name_key), std::string(json_extension));
  } else {
    need_children(0);
    out.type = parse_leaf_type(lt, path);
    // Within the process, give a fixed_size_list back the item it came with.
    if (out.type->id == arrow::type_id::fixed_size_list && f.fsl_item && f.fsl_item->type) {
      std::string item_lt;
      try {
        item_lt = is_bfloat16_item(*f.fsl_item) ? std::string(bfloat16_extension)
                                                : logical_type_of(*f.fsl_item->type, path + ".item");
      } catch (const error&) {
        item_lt.clear();
      }
      const std::string expect = "fixed_size_list:" + item_lt + ":" + std::to_string(out.type->list_size);
      if (!item_lt.empty() && expect == lt) out.type = arrow::fixed_size_list(*f.fsl_item, out.type->list_size);
    }
  }
  return out;
}

}  // namespace detail

// The Lance logical type string of an Arrow field (its metadata matters for the
// json and bfloat16 extension types).
inline std::string logical_type_of(const arrow::field& f) {
  if (!f.type) throw invalid_input_error("field '" + f.name + "' has no type");
  arrow::validate_type(*f.type, f.name);
  return detail::from_arrow_field(f, "").logical_type;
}
inline std::string logical_type_of(const arrow::data_type& t) {
  arrow::validate_type(t, "<type>");
  return detail::logical_type_of(t, "<type>");
}

}  // namespace lancet::schema
