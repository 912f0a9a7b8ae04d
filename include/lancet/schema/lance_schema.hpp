// The Lance schema: a tree of fields with ids, parent ids and Lance's logical type
// strings, converted from and to Arrow schemas and to and from the lance.file.Schema
// protobuf (pb/file.hpp) that files and manifests store.
//
// What Lance 12 (LanceDB 0.39) does, and therefore what this does (each verified by
// having LanceDB write the schema and decoding its bytes):
//  * Field ids are assigned depth first, a parent before its children, from 0 (or
//    after the largest existing id); top-level fields have parent_id -1.
//  * Logical types: "null" "bool" "int8".."uint64" "halffloat" "float" "double"
//    "date32:day" "date64:ms" "time32:s|ms" "time64:us|ns" "timestamp:<unit>:<tz or ->"
//    "duration:<unit>" "decimal:128|256:<p>:<s>" "string" "large_string" "binary"
//    "large_binary" "fixed_size_binary:<w>" "fixed_size_list:<item type>:<n>" "list"
//    "large_list" "list.struct" "large_list.struct" "struct"; "json" for large_binary
//    with ARROW:extension:name = lance.json; "fixed_size_list:lance.bfloat16:<n>".
//  * Struct members, list items and the struct item of a fixed_size_list<struct> are
//    child fields. Other fixed_size_list items are not fields: their type lives in the
//    logical type string and their name, nullability and metadata are lost (Lance reads
//    them back as "item", nullable). `field::fsl_item` keeps the original item within
//    this process so that to_arrow(from_arrow(s)) gives s back.
//  * Field.encoding (v1 enum) is PLAIN for fixed-width types, fixed-size lists and
//    lists, VAR_BINARY for string/binary types, NONE for null and struct.
//  * The extension name comes from the field metadata key ARROW:extension:name.
//
// What Lance cannot store gives unsupported_error naming the field: a timezone with
// ':' in it (Lance 12 cannot parse it back), fixed_size_list of list / large_list or
// of a fixed_size_list<struct>, arrow.json text columns. Invalid schemas
// (top-level names with '.', duplicate top-level names, bad primary keys) give
// invalid_input_error.
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

#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/file.hpp"

namespace lancet::schema {

inline constexpr std::string_view extension_name_key = "ARROW:extension:name";
inline constexpr std::string_view extension_metadata_key = "ARROW:extension:metadata";
inline constexpr std::string_view primary_key_key = "lance-schema:unenforced-primary-key";
inline constexpr std::string_view bfloat16_extension = "lance.bfloat16";
inline constexpr std::string_view json_extension = "lance.json";
inline constexpr std::string_view arrow_json_extension = "arrow.json";

struct field {
  std::int32_t id = -1;         // -1: not assigned yet
  std::int32_t parent_id = -1;  // -1: top level
  std::string name;
  std::string logical_type;
  bool nullable = true;
  arrow::metadata metadata;  // values are bytes
  std::vector<field> children;
  pb::file::field_encoding encoding = pb::file::field_encoding::none;
  std::optional<pb::file::dictionary> dictionary;  // v1 dictionary location, if any
  bool unenforced_primary_key = false;
  // The item of a fixed_size_list whose item is not a Lance field (see above); only
  // set by from_arrow, never stored in files.
  std::optional<arrow::field> fsl_item;

  bool is_leaf() const noexcept { return children.empty(); }
  const field* child(std::string_view n) const noexcept {
    for (const auto& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
  std::optional<std::string_view> metadata_value(std::string_view key) const noexcept {
    for (const auto& [k, v] : metadata)
      if (k == key) return std::string_view(v);
    return std::nullopt;
  }
  // The Arrow extension name (metadata ARROW:extension:name), if any.
  std::optional<std::string_view> extension_name() const noexcept { return metadata_value(extension_name_key); }

  // Equality of everything a file stores (fsl_item is not compared).
  friend bool operator==(const field& a, const field& b) {
    return a.id == b.id && a.parent_id == b.parent_id && a.name == b.name && a.logical_type == b.logical_type &&
           a.nullable == b.nullable && a.metadata == b.metadata && a.children == b.children &&
           a.encoding == b.encoding && a.dictionary == b.dictionary &&
           a.unenforced_primary_key == b.unenforced_primary_key;
  }
};

struct schema {
  std::vector<field> fields;  // top-level fields
  arrow::metadata metadata;   // values are bytes

  const field* field_by_id(std::int32_t id) const noexcept {
    const field* found = nullptr;
    for_each([&](const field& f) {
      if (!found && f.id == id) found = &f;
    });
    return found;
  }
  field* field_by_id(std::int32_t id) noexcept {
    return const_cast<field*>(static_cast<const schema*>(this)->field_by_id(id));
  }
  const field* field_by_name(std::string_view n) const noexcept {
    for (const auto& f : fields)
      if (f.name == n) return &f;
    return nullptr;
  }
  // A nested field by the names along its path, e.g. {"st", "inner", "x"}.
  const field* field_by_path(const std::vector<std::string>& path) const noexcept {
    const std::vector<field>* level = &fields;
    const field* f = nullptr;
    for (const auto& part : path) {
      f = nullptr;
      for (const auto& c : *level)
        if (c.name == part) { f = &c; break; }
      if (!f) return nullptr;
      level = &f->children;
    }
    return f;
  }
  // The largest field id, -1 for an empty schema.
  std::int32_t max_field_id() const noexcept {
    std::int32_t m = -1;
    for_each([&](const field& f) { m = std::max(m, f.id); });
    return m;
  }
  // Every field, parents before children (the order of ids, columns and protobuf).
  std::vector<const field*> fields_pre_order() const {
    std::vector<const field*> out;
    for_each([&](const field& f) { out.push_back(&f); });
    return out;
  }
  template <class F>
  void for_each(F&& fn) const {
    struct walker {
      F& fn;
      void operator()(const field& f) const {
        fn(f);
        for (const auto& c : f.children) (*this)(c);
      }
    };
    walker w{fn};
    for (const auto& f : fields) w(f);
  }

  friend bool operator==(const schema& a, const schema& b) {
    return a.fields == b.fields && a.metadata == b.metadata;
  }
};

// The dotted path of a field ("st.inner.z"), or "" when no field has that id.
inline std::string field_path(const schema& s, std::int32_t id) {
  struct finder {
    std::int32_t id;
    std::vector<const field*> stack;
    bool operator()(const field& f) {
      stack.push_back(&f);
      if (f.id == id) return true;
      for (const auto& c : f.children)
        if ((*this)(c)) return true;
      stack.pop_back();
      return false;
    }
  };
  finder fd{id, {}};
  for (const auto& f : s.fields) {
    if (fd(f)) {
      std::string path;
      for (const auto* p : fd.stack) path += (path.empty() ? "" : ".") + p->name;
      return path;
    }
  }
  return {};
}

// Field ids in pre-order (the order in which 2.0 files give fields their columns).
inline std::vector<std::int32_t> preorder_ids(const schema& s) {
  std::vector<std::int32_t> ids;
  s.for_each([&](const field& f) { ids.push_back(f.id); });
  return ids;
}

// ---- ids ----------------------------------------------------------------------------

namespace detail {
inline void set_ids(field& f, std::int32_t parent, std::int32_t& next) {
  f.parent_id = parent;
  if (f.id < 0) f.id = next++;
  for (auto& c : f.children) set_ids(c, f.id, next);
}
}  // namespace detail

// Gives every field without an id (id < 0) the next free id, depth first, parents
// before children, and sets every parent_id. Ids continue after the larger of the
// schema's own largest id and `max_existing_id` (a dataset's largest id ever used).
inline void assign_field_ids(schema& s, std::int32_t max_existing_id = -1) {
  std::int32_t next = std::max(s.max_field_id(), max_existing_id) + 1;
  for (auto& f : s.fields) detail::set_ids(f, -1, next);
}

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
  std::string s(v);
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
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

// ---- validation ----------------------------------------------------------------------

// Checks what Lance checks on a schema (names, ids, primary keys) and that parent ids
// match the tree. Throws invalid_input_error naming the field.
inline void validate(const schema& s) {
  std::unordered_set<std::string> names;
  for (const auto& f : s.fields) {
    if (f.name.find('.') != std::string::npos)
      throw invalid_input_error("top-level field '" + f.name +
                                "' cannot contain '.' (Lance uses it for nested paths; use a struct field)");
    if (!names.insert(f.name).second) throw invalid_input_error("duplicate field name '" + f.name + "' in schema");
  }
  std::unordered_set<std::int32_t> ids;
  struct walker {
    std::unordered_set<std::int32_t>& ids;
    void operator()(const field& f, const field* parent, const std::string& parent_path, bool in_list,
                    bool ancestors_nullable, int depth) const {
      const std::string path = detail::join_path(parent_path, f.name);
      if (depth > 64) throw invalid_input_error("field '" + path + "': nested more than 64 levels deep");
      if (f.id < 0) throw invalid_input_error("field '" + path + "' has no id (" + std::to_string(f.id) + ")");
      if (!ids.insert(f.id).second)
        throw invalid_input_error("field '" + path + "' reuses field id " + std::to_string(f.id));
      const std::int32_t want_parent = parent ? parent->id : -1;
      if (f.parent_id != want_parent)
        throw invalid_input_error("field '" + path + "' has parent_id " + std::to_string(f.parent_id) +
                                  ", its parent's id is " + std::to_string(want_parent));
      const bool nullable_chain = ancestors_nullable || f.nullable;
      if (f.unenforced_primary_key) {
        if (!f.is_leaf()) throw invalid_input_error("primary key field '" + path + "' must be a leaf");
        if (nullable_chain)
          throw invalid_input_error("primary key field '" + path + "' and all its ancestors must not be nullable");
        if (in_list) throw invalid_input_error("primary key field '" + path + "' must not be inside a list");
      }
      const bool is_list = f.logical_type.starts_with("list") || f.logical_type.starts_with("large_list") ||
                           f.logical_type == "map";
      for (const auto& c : f.children) (*this)(c, &f, path, in_list || is_list, nullable_chain, depth + 1);
    }
  };
  walker w{ids};
  for (const auto& f : s.fields) w(f, nullptr, "", false, false, 0);
}

// ---- Arrow <-> Lance ------------------------------------------------------------------

// A Lance field from an Arrow field (ids unassigned: -1).
inline field from_arrow(const arrow::field& f) {
  if (!f.type) throw invalid_input_error("field '" + f.name + "' has no type");
  arrow::validate_type(*f.type, f.name);
  return detail::from_arrow_field(f, "");
}

// A Lance schema from an Arrow schema, with ids assigned from 0 and validated.
inline schema from_arrow(const arrow::schema& s) {
  schema out;
  for (const auto& f : s.fields) out.fields.push_back(from_arrow(f));
  out.metadata = s.metadata;
  assign_field_ids(out);
  validate(out);
  return out;
}

// The Arrow field of a Lance field (what a reader produces; see fsl_item above).
inline arrow::field to_arrow(const field& f) { return detail::to_arrow_field(f, "", 0); }

inline arrow::schema to_arrow(const schema& s) {
  arrow::schema out;
  for (const auto& f : s.fields) out.fields.push_back(to_arrow(f));
  out.metadata = s.metadata;
  return out;
}

// ---- protobuf --------------------------------------------------------------------------

// The flat, pre-order lance.file.Field list of a schema, as Lance writes it.
inline std::vector<pb::file::field> to_pb_fields(const schema& s) {
  std::vector<pb::file::field> out;
  struct walker {
    std::vector<pb::file::field>& out;
    void operator()(const field& f, std::int32_t parent) const {
      pb::file::field p;
      p.name = f.name;
      p.id = f.id;
      p.parent_id = parent;
      p.logical_type = f.logical_type;
      p.nullable = f.nullable;
      p.encoding = f.encoding;
      p.dictionary = f.dictionary;
      if (auto ext = f.extension_name()) p.extension_name = std::string(*ext);
      p.metadata = f.metadata;
      p.unenforced_primary_key = f.unenforced_primary_key;
      out.push_back(std::move(p));
      for (const auto& c : f.children) (*this)(c, f.id);
    }
  };
  walker w{out};
  for (const auto& f : s.fields) w(f, -1);
  return out;
}

inline pb::file::schema to_pb(const schema& s) {
  pb::file::schema p;
  p.fields = to_pb_fields(s);
  p.metadata = s.metadata;
  return p;
}

// A schema from the flat field list of a file or manifest. Structural problems
// (duplicate ids, a parent that does not precede its child, wrong child counts) are
// corrupt_error; logical types lancet cannot represent are unsupported_error.
inline schema from_pb_fields(const std::vector<pb::file::field>& pfs, arrow::metadata md = {}) {
  struct node {
    field f;
    std::vector<std::size_t> kids;
  };
  std::vector<node> nodes;
  nodes.reserve(pfs.size());
  std::vector<std::size_t> roots;
  std::unordered_map<std::int32_t, std::size_t> by_id;
  constexpr std::size_t none = std::size_t(-1);
  std::size_t blob_struct = none;  // a blob v2 description struct taking id -1 members
  for (const auto& p : pfs) {
    node n;
    n.f.id = p.id;
    n.f.parent_id = p.parent_id;
    n.f.name = p.name;
    n.f.logical_type = p.logical_type;
    n.f.nullable = p.nullable;
    n.f.metadata = p.metadata;
    n.f.encoding = p.encoding;
    n.f.dictionary = p.dictionary;
    n.f.unenforced_primary_key = p.unenforced_primary_key;
    // As Lance does: a stored extension name shows up as the field's extension metadata.
    if (!p.extension_name.empty() && !detail::metadata_of(n.f.metadata, extension_name_key))
      n.f.metadata.emplace_back(std::string(extension_name_key), p.extension_name);
    if (p.id < 0) {
      // Lance 12 writes the members of a blob v2 description struct (kind, position,
      // size, blob_id, blob_uri) right after it with id -1 and parent -1 in data files.
      if (p.id == -1 && p.parent_id == -1 && blob_struct != none) {
        nodes[blob_struct].kids.push_back(nodes.size());
        nodes.push_back(std::move(n));
        continue;
      }
      throw corrupt_error("schema field '" + p.name + "' has a negative id " + std::to_string(p.id));
    }
    blob_struct = none;
    if (p.logical_type == "struct" && detail::metadata_of(p.metadata, "lance-encoding:blob")) blob_struct = nodes.size();
    if (!by_id.emplace(p.id, nodes.size()).second)
      throw corrupt_error("schema field '" + p.name + "' reuses field id " + std::to_string(p.id));
    if (p.parent_id == -1) {
      roots.push_back(nodes.size());
    } else {
      auto it = by_id.find(p.parent_id);
      if (it == by_id.end() || it->second == nodes.size())
        throw corrupt_error("schema field '" + p.name + "' (id " + std::to_string(p.id) + ") names parent " +
                            std::to_string(p.parent_id) + ", which does not precede it");
      nodes[it->second].kids.push_back(nodes.size());
    }
    nodes.push_back(std::move(n));
  }
  struct builder {
    std::vector<node>& nodes;
    field operator()(std::size_t i, int depth) const {
      if (depth > 64)
        throw corrupt_error("schema field '" + nodes[i].f.name + "' is nested more than 64 levels deep");
      field f = std::move(nodes[i].f);
      for (auto k : nodes[i].kids) f.children.push_back((*this)(k, depth + 1));
      return f;
    }
  };
  builder b{nodes};
  schema s;
  for (auto r : roots) s.fields.push_back(b(r, 0));
  s.metadata = std::move(md);
  // Every field must convert to Arrow; malformed structure is a corrupt file.
  try {
    (void)to_arrow(s);
  } catch (const invalid_input_error& e) {
    throw corrupt_error(std::string("schema: ") + e.what());
  }
  return s;
}

inline schema from_pb(const pb::file::schema& p) { return from_pb_fields(p.fields, p.metadata); }

// Global buffer 0 of a v2.x file: the schema (with its metadata) and the row count.
inline std::string encode_file_descriptor(const schema& s, std::uint64_t num_rows) {
  validate(s);
  pb::file::file_descriptor d;
  d.schema = to_pb(s);
  d.length = num_rows;
  return pb::encode(d);
}

inline std::pair<schema, std::uint64_t> decode_file_descriptor(bytes_view bytes) {
  auto d = pb::decode<pb::file::file_descriptor>(bytes);
  if (!d.schema) throw corrupt_error("the file descriptor has no schema");
  return {from_pb(*d.schema), d.length};
}

}  // namespace lancet::schema
