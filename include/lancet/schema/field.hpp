// The Lance schema's data: a tree of fields with ids, parent ids and logical type
// strings (schema::field, schema::schema), the metadata keys Lance gives meaning to,
// and field id assignment. schema/lance_schema.hpp describes what Lance does with it.
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

}  // namespace lancet::schema
