// The Lance schema, converted from and to Arrow schemas and to and from the
// lance.file.Schema protobuf (pb/file.hpp) that files and manifests store, and
// validated as Lance validates it. Its data (fields, ids) is in schema/field.hpp, the
// logical type strings in schema/logical_type.hpp; this header includes both.
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
#include "lancet/schema/field.hpp"
#include "lancet/schema/logical_type.hpp"

namespace lancet::schema {

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
