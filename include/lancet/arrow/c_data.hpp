// The Arrow C Data Interface: exchange arrays and schemas with any Arrow
// implementation (Arrow C++, pyarrow, arrow-rs, DuckDB, nanoarrow...) without
// copying.
//
// Import (zero copy): the imported ArrowArray is moved into a shared owner that every
// buffer of the resulting array (children included) holds; its release callback runs
// exactly once, when the last of those buffers goes away. The caller's struct is
// marked released. Imported arrays are validated (offsets, sizes) before use, so a
// malformed producer gives invalid_input_error, never an out-of-bounds read. On
// error the input is still released (as Arrow C++ does). Schemas are copied and
// released at once. Buffers whose address is not aligned to their element size are
// copied into aligned storage (the only case where import copies).
//
// Export: the exported ArrowArray keeps our buffers alive (shared ownership) until
// the consumer calls release; each child has its own release (children may be moved
// out, as the specification allows). Exported schemas own copies of their strings.
//
// The structs and format strings (which types are supported) are in arrow/c_format.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/c_format.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

namespace detail {

inline field import_field_impl(const ArrowSchema* s, const std::string& parent_path, int depth) {
  if (!s) bad_schema(parent_path, "child schema pointer is null");
  const std::string name = s->name ? s->name : "";
  const std::string path = parent_path.empty() ? name : parent_path + "." + name;
  if (depth > 64) bad_schema(path, "nested more than 64 levels deep");
  if (!s->release) bad_schema(path, "the schema was already released");
  if (!s->format) bad_schema(path, "format string is null");
  int want = 0;
  auto t = parse_format(s->format, want, path);
  if (s->dictionary) {
    // Dictionary encoded: the format is the indices' (an integer), `dictionary` the values'.
    const auto id = t->id;
    if (!(id == type_id::int8 || id == type_id::int16 || id == type_id::int32 || id == type_id::int64 ||
          id == type_id::uint8 || id == type_id::uint16 || id == type_id::uint32 || id == type_id::uint64))
      bad_schema(path, "a dictionary-encoded field's format must be an integer type, not '" + std::string(s->format) + "'");
    auto values = import_field_impl(s->dictionary, path + ".<dictionary>", depth + 1);
    t = std::make_shared<data_type>(*dictionary(std::move(t), values.type));
  }
  if (s->n_children < 0 || (s->n_children > 0 && !s->children))
    bad_schema(path, "bad children (n_children " + std::to_string(s->n_children) + ")");
  if (want >= 0 && s->n_children != want)
    bad_schema(path, "format '" + std::string(s->format) + "' needs " + std::to_string(want) + " children, has " +
                         std::to_string(s->n_children));
  for (std::int64_t i = 0; i < s->n_children; ++i)
    t->children.push_back(import_field_impl(s->children[i], path, depth + 1));
  if (t->id == type_id::map) t->keys_sorted = (s->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;
  field f;
  f.name = name;
  f.nullable = (s->flags & ARROW_FLAG_NULLABLE) != 0;
  f.metadata = parse_metadata(s->metadata, path);
  validate_type(*t, path.empty() ? std::string_view("<root>") : std::string_view(path));
  f.type = std::move(t);
  return f;
}

// Releases a schema when leaving scope (import takes ownership even on error).
struct schema_guard {
  ArrowSchema* s;
  ~schema_guard() { release(s); }
};

}  // namespace detail

// ---- import ---------------------------------------------------------------------------

// A field (name, type, nullability, metadata) from an ArrowSchema; the schema is released.
inline field import_field(ArrowSchema* schema) {
  if (!schema) throw invalid_input_error("import_field: the ArrowSchema pointer is null");
  detail::schema_guard g{schema};
  if (!schema->release) throw invalid_input_error("import_field: the ArrowSchema was already released");
  return detail::import_field_impl(schema, "", 0);
}

inline type_ptr import_type(ArrowSchema* schema) { return import_field(schema).type; }

// A schema from a struct ("+s") ArrowSchema; the schema is released.
inline arrow::schema import_schema(ArrowSchema* s) {
  auto f = import_field(s);
  if (f.type->id != type_id::struct_)
    throw invalid_input_error("import_schema: a schema must be a struct ('+s'), got " + to_string(*f.type));
  arrow::schema out;
  out.fields = f.type->children;
  out.metadata = std::move(f.metadata);
  return out;
}

namespace detail {

struct imported_array {
  ArrowArray array{};
  ~imported_array() { release(&array); }
};

[[noreturn]] inline void bad_array(std::string_view path, const std::string& what) {
  throw invalid_input_error("ArrowArray '" + std::string(path) + "': " + what);
}

// Wraps one producer buffer; misaligned typed buffers are copied.
inline shared_bytes adopt(const std::shared_ptr<const void>& owner, const void* p, std::int64_t size,
                          std::int64_t align) {
  if (size == 0) return {};
  const auto* b = static_cast<const std::uint8_t*>(p);
  if (align > 1 && reinterpret_cast<std::uintptr_t>(b) % std::uintptr_t(align) != 0)
    return shared_bytes::copy_of(bytes_view(b, std::size_t(size)));
  return shared_bytes(owner, b, std::size_t(size));
}

inline shared_bytes zeros(std::int64_t size) {
  aligned_buffer z;
  z.resize(std::size_t(size));
  return shared_bytes(std::move(z));
}

inline array_ptr import_node(const ArrowArray* a, const type_ptr& type, const std::shared_ptr<const void>& owner,
                             const std::string& path, int depth) {
  if (!a) bad_array(path, "child array pointer is null");
  if (depth > 64) bad_array(path, "nested more than 64 levels deep");
  const auto& t = *type;
  if (a->length < 0 || a->offset < 0)
    bad_array(path, "negative length or offset (" + std::to_string(a->length) + ", " + std::to_string(a->offset) + ")");
  std::int64_t end;
  if (__builtin_add_overflow(a->length, a->offset, &end)) bad_array(path, "offset + length overflows");
  if (bool(a->dictionary) != (t.id == type_id::dictionary))
    bad_array(path, t.id == type_id::dictionary ? to_string(t) + " needs its dictionary array, the array has none"
                                                : to_string(t) + " is not dictionary encoded but the array has a dictionary");

  // The C layout is lancet's but for dictionaries, whose values come as `dictionary`.
  const auto layout = layout_of(t);
  const auto want_buffers = std::int64_t(layout.buffers);
  const auto want_children = t.id == type_id::dictionary ? std::int64_t(0) : std::int64_t(layout.children);
  // Some older producers give the null type one (null) validity buffer.
  const bool buffers_ok = a->n_buffers == want_buffers || (t.id == type_id::null && a->n_buffers == 1);
  if (!buffers_ok)
    bad_array(path, to_string(t) + " needs " + std::to_string(want_buffers) + " buffers, the array has " +
                        std::to_string(a->n_buffers));
  if (a->n_children != want_children)
    bad_array(path, to_string(t) + " needs " + std::to_string(want_children) + " children, the array has " +
                        std::to_string(a->n_children));
  if (a->n_buffers > 0 && !a->buffers) bad_array(path, "buffers pointer is null");
  if (a->n_children > 0 && !a->children) bad_array(path, "children pointer is null");

  auto out = std::make_shared<array_data>();
  out->type = type;
  out->length = a->length;
  out->offset = a->offset;
  out->null_count = a->null_count < 0 ? -1 : a->null_count;

  auto checked_bytes = [&](std::int64_t n, std::int64_t w) {
    std::int64_t r;
    if (__builtin_mul_overflow(n, w, &r)) bad_array(path, "buffer size overflows");
    return r;
  };
  auto required = [&](std::size_t i, std::int64_t size, std::int64_t align, const char* what) -> shared_bytes {
    const void* p = a->buffers[i];
    if (size == 0) return {};
    if (!p) {
      if (a->length == 0) return zeros(size);  // empty arrays may leave buffers null
      bad_array(path, std::string(what) + " buffer is null");
    }
    return adopt(owner, p, size, align);
  };

  if (t.id == type_id::null) {
    out->null_count = a->length;
  } else {
    const void* v = a->buffers[0];
    if (v) out->buffers.push_back(adopt(owner, v, (end + 7) / 8, 1));
    else out->buffers.emplace_back();
  }

  switch (t.id) {
    case type_id::null: case type_id::struct_: case type_id::fixed_size_list: break;
    case type_id::boolean: out->buffers.push_back(required(1, (end + 7) / 8, 1, "values")); break;
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary:
    case type_id::list: case type_id::large_list: case type_id::map: {
      const bool large = t.id == type_id::large_utf8 || t.id == type_id::large_binary || t.id == type_id::large_list;
      const std::int64_t w = large ? 8 : 4;
      auto offsets = required(1, checked_bytes(end + 1, w), w, "offsets");
      const auto* last = offsets.data() + end * w;
      const std::int64_t data_end = large ? le::load<std::int64_t>(last) : std::int64_t(le::load<std::int32_t>(last));
      out->buffers.push_back(std::move(offsets));
      if (!is_list_like(t.id)) {
        if (data_end < 0) bad_array(path, "last offset " + std::to_string(data_end) + " is negative");
        out->buffers.push_back(required(2, data_end, 1, "data"));
      }
      break;
    }
    default: {
      const std::int64_t bits = bit_width(t.id == type_id::dictionary ? *t.index_type : t);
      const std::int64_t bytes = bits / 8;
      const std::int64_t align = (t.id == type_id::fixed_size_binary || bytes > 8) ? 1 : bytes;
      out->buffers.push_back(required(1, checked_bytes(end, bytes), align, "values"));
      break;
    }
  }

  if (t.id == type_id::dictionary) {
    out->children.push_back(import_node(a->dictionary, t.children.at(0).type, owner, path + ".<dictionary>", depth + 1));
    return out;
  }
  for (std::int64_t i = 0; i < a->n_children; ++i) {
    const auto& f = t.children[std::size_t(i)];
    out->children.push_back(import_node(a->children[i], f.type, owner, path + "." + f.name, depth + 1));
  }
  return out;
}

}  // namespace detail

// Imports an array of a known type (zero copy); `array` is moved from (released on error).
inline array_ptr import_array(ArrowArray* array, const type_ptr& type) {
  if (!array) throw invalid_input_error("import_array: the ArrowArray pointer is null");
  if (!array->release) throw invalid_input_error("import_array: the ArrowArray was already released");
  auto owner = std::make_shared<detail::imported_array>();
  owner->array = *array;
  array->release = nullptr;  // moved
  if (!type) throw invalid_input_error("import_array: the type is null");
  validate_type(*type, "<root>");
  auto out = detail::import_node(&owner->array, type, owner, "<root>", 0);
  validate_options o;
  o.check_utf8 = false;  // structure only; writers check UTF-8 themselves
  try {
    validate(*out, "<root>", o);
  } catch (const invalid_input_error& e) {
    throw invalid_input_error(std::string("imported ") + e.what());
  }
  return out;
}

// Imports an array described by `schema` (both are released / moved from).
inline array_ptr import_array(ArrowArray* array, ArrowSchema* schema) {
  type_ptr t;
  try {
    t = import_type(schema);
  } catch (...) {
    release(array);
    throw;
  }
  return import_array(array, t);
}

// A record batch from a struct array and its schema: the struct's members are the
// columns (the struct itself must have no nulls).
inline record_batch import_record_batch(ArrowArray* array, std::shared_ptr<const arrow::schema> s) {
  if (!s) {
    release(array);
    throw invalid_input_error("import_record_batch: the schema is null");
  }
  auto st = import_array(array, struct_(s->fields));
  if (st->count_nulls() != 0)
    throw invalid_input_error("import_record_batch: the struct array has " + std::to_string(st->count_nulls()) +
                              " null rows; a record batch cannot");
  record_batch rb;
  rb.schema = std::move(s);
  for (const auto& c : st->children)
    rb.columns.push_back(st->offset == 0 && c->length == st->length ? c : slice(c, st->offset, st->length));
  return rb;
}
inline record_batch import_record_batch(ArrowArray* array, ArrowSchema* schema) {
  std::shared_ptr<const arrow::schema> s;
  try {
    s = std::make_shared<const arrow::schema>(import_schema(schema));
  } catch (...) {
    release(array);
    throw;
  }
  return import_record_batch(array, std::move(s));
}

// ---- export ---------------------------------------------------------------------------

namespace detail {

struct exported_schema {
  std::string format, name, metadata;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_ptrs;
  std::unique_ptr<ArrowSchema> dictionary;  // a dictionary type's values
};

// The release callback of an exported ArrowSchema / ArrowArray whose private data is
// `Private` (exported_schema / exported_array): children and dictionary first.
template <class Private, class C>
void release_exported(C* s) {
  if (!s || !s->release) return;
  auto* p = static_cast<Private*>(s->private_data);
  for (auto* c : p->child_ptrs) release(c);
  if (p->dictionary) release(p->dictionary.get());
  delete p;
  s->release = nullptr;
  s->private_data = nullptr;
}

inline void export_field_into(const std::string& name, const data_type& t, bool nullable, const arrow::metadata& md,
                              ArrowSchema* out) {
  auto p = std::make_unique<exported_schema>();
  p->format = format_string(t);
  p->name = name;
  p->metadata = encode_metadata(md);
  if (t.id == type_id::dictionary) {
    // No children: the values are described by `dictionary`.
    const auto& v = t.children.at(0);
    if (!v.type) throw invalid_input_error("export: dictionary field '" + name + "' has no value type");
    p->dictionary = std::make_unique<ArrowSchema>();
    export_field_into(v.name, *v.type, v.nullable, v.metadata, p->dictionary.get());
  }
  const std::size_t n_children = t.id == type_id::dictionary ? 0 : t.children.size();
  p->children.resize(n_children);
  for (std::size_t i = 0; i < n_children; ++i) {
    const auto& c = t.children[i];
    if (!c.type) throw invalid_input_error("export: field '" + c.name + "' has no type");
    try {
      export_field_into(c.name, *c.type, c.nullable, c.metadata, &p->children[i]);
    } catch (...) {
      for (std::size_t k = 0; k < i; ++k) release(&p->children[k]);
      if (p->dictionary) release(p->dictionary.get());
      throw;
    }
    p->child_ptrs.push_back(&p->children[i]);
  }
  out->format = p->format.c_str();
  out->name = p->name.c_str();
  out->metadata = p->metadata.empty() ? nullptr : p->metadata.data();
  out->flags = (nullable ? ARROW_FLAG_NULLABLE : 0) | (t.id == type_id::map && t.keys_sorted ? ARROW_FLAG_MAP_KEYS_SORTED : 0);
  out->n_children = std::int64_t(p->child_ptrs.size());
  out->children = p->child_ptrs.empty() ? nullptr : p->child_ptrs.data();
  out->dictionary = p->dictionary.get();
  out->release = &release_exported<exported_schema, ArrowSchema>;
  out->private_data = p.release();
}

struct exported_array {
  array_ptr keep;  // holds every buffer (and child) alive
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
  std::unique_ptr<ArrowArray> dictionary;  // a dictionary array's values
};

// Consumers may read a buffer's first bytes even for empty arrays (offsets[0]):
// empty non-validity buffers point here rather than at null.
alignas(64) inline const std::uint8_t zero_block[64] = {};

inline void export_array_into(const array_ptr& a, ArrowArray* out) {
  auto p = std::make_unique<exported_array>();
  p->keep = a;
  const auto& t = *a->type;
  if (t.id != type_id::null) {
    for (std::size_t i = 0; i < a->buffers.size(); ++i) {
      const auto& b = a->buffers[i];
      const void* ptr = b.data();
      if (!ptr && i > 0) ptr = zero_block;
      p->buffers.push_back(ptr);
    }
  }
  const std::size_t n_buffers = p->buffers.size();
  p->buffers.reserve(1);  // a valid pointer even with no buffers
  const bool dict = t.id == type_id::dictionary;
  if (dict) {
    p->dictionary = std::make_unique<ArrowArray>();
    export_array_into(a->children.at(0), p->dictionary.get());
  }
  const std::size_t n_children = dict ? 0 : a->children.size();
  p->children.resize(n_children);
  for (std::size_t i = 0; i < n_children; ++i) {
    try {
      export_array_into(a->children[i], &p->children[i]);
    } catch (...) {
      for (std::size_t k = 0; k < i; ++k) release(&p->children[k]);
      throw;
    }
    p->child_ptrs.push_back(&p->children[i]);
  }
  out->length = a->length;
  out->null_count = a->count_nulls();
  out->offset = a->offset;
  out->n_buffers = std::int64_t(n_buffers);
  out->n_children = std::int64_t(p->child_ptrs.size());
  out->buffers = p->buffers.data();
  out->children = p->child_ptrs.empty() ? nullptr : p->child_ptrs.data();
  out->dictionary = p->dictionary.get();
  out->release = &release_exported<exported_array, ArrowArray>;
  out->private_data = p.release();
}

}  // namespace detail

inline void export_field(const field& f, ArrowSchema* out) {
  if (!out) throw invalid_input_error("export_field: the output pointer is null");
  if (!f.type) throw invalid_input_error("export_field: field '" + f.name + "' has no type");
  detail::export_field_into(f.name, *f.type, f.nullable, f.metadata, out);
}
inline void export_type(const data_type& t, ArrowSchema* out) {
  if (!out) throw invalid_input_error("export_type: the output pointer is null");
  detail::export_field_into("", t, true, {}, out);
}
inline void export_schema(const arrow::schema& s, ArrowSchema* out) {
  if (!out) throw invalid_input_error("export_schema: the output pointer is null");
  detail::export_field_into("", *struct_(s.fields), false, s.metadata, out);
}

// Exports an array (validated first); `out_schema`, when given, receives its type.
inline void export_array(const array_ptr& a, ArrowArray* out, ArrowSchema* out_schema = nullptr) {
  if (!out) throw invalid_input_error("export_array: the output pointer is null");
  validate_options o;
  o.check_utf8 = false;
  validate(a, "export", o);
  if (out_schema) export_type(*a->type, out_schema);
  try {
    detail::export_array_into(a, out);
  } catch (...) {
    if (out_schema) release(out_schema);
    throw;
  }
}

// Exports a batch as a struct array of its columns (and its schema, when asked).
inline void export_record_batch(const record_batch& rb, ArrowArray* out, ArrowSchema* out_schema = nullptr) {
  if (!out) throw invalid_input_error("export_record_batch: the output pointer is null");
  validate_options o;
  o.check_utf8 = false;
  validate(rb, o);
  auto st = std::make_shared<array_data>();
  st->type = struct_(rb.schema->fields);
  st->length = rb.num_rows();
  st->null_count = 0;
  st->buffers.emplace_back();
  st->children = rb.columns;
  if (out_schema) export_schema(*rb.schema, out_schema);
  try {
    detail::export_array_into(st, out);
  } catch (...) {
    if (out_schema) release(out_schema);
    throw;
  }
}

}  // namespace lancet::arrow
