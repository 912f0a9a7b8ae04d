// Messages of Lance's file.proto (package lance.file): the schema of a Lance file or
// dataset as a flat, pre-order list of Fields, and the FileDescriptor (schema + row
// count) stored as global buffer 0 of every v2.x file. Also the v1 file Metadata.
//
// Encoding follows prost (what Lance 12 runs): fields in ascending field-number order,
// proto3 zero values omitted (so a top-level parent_id of -1 is written, as a 10-byte
// varint, while an id of 0 is not), and map entries without their key or value when
// that is empty (verified against LanceDB 0.39: a metadata value "" is written as an
// entry holding only the key). Map entries keep their order here; Lance's come out of
// a hash map in no particular order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb::file {

// map<string, bytes>, in order of appearance.
using bytes_map = std::vector<std::pair<std::string, std::string>>;

namespace detail {

inline void write_map(writer& w, std::uint32_t f, const bytes_map& m) {
  for (const auto& [k, v] : m) {
    writer e;
    e.string_opt(1, k);
    e.string_opt(2, v);
    w.bytes(f, e.bytes());
  }
}

inline std::int32_t read_int32(const reader& r, const field_view& f, std::string_view what) {
  return std::int32_t(std::int64_t(r.varint(f, what)));
}

}  // namespace detail

// lance.file.Encoding: the v1 per-field encoding (v2 files still fill it in).
enum class field_encoding : std::int32_t { none = 0, plain = 1, var_binary = 2, dictionary = 3, rle = 4 };

// lance.file.Dictionary: where a v1 dictionary's values live.
struct dictionary {
  std::int64_t offset = 0;
  std::int64_t length = 0;

  static constexpr std::string_view message_name = "lance.file.Dictionary";
  static constexpr std::uint32_t f_offset = 1, f_length = 2;

  void encode(writer& w) const {
    w.int64_opt(f_offset, offset);
    w.int64_opt(f_length, length);
  }
  static dictionary decode(reader r) {
    dictionary d;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_offset) d.offset = std::int64_t(r.varint(f, "Dictionary.offset"));
      else if (f.number == f_length) d.length = std::int64_t(r.varint(f, "Dictionary.length"));
    }
    return d;
  }
  friend bool operator==(const dictionary&, const dictionary&) = default;
};

// lance.file.Field: one node of the schema tree (children follow their parent in the
// flat list and point back at it with parent_id).
struct field {
  enum class field_type : std::int32_t { parent = 0, repeated = 1, leaf = 2 };

  field_type type = field_type::parent;  // Lance 12 always writes PARENT (0), i.e. nothing
  std::string name;
  std::int32_t id = 0;
  std::int32_t parent_id = 0;  // -1 for top-level fields
  std::string logical_type;
  bool nullable = false;
  field_encoding encoding = field_encoding::none;
  std::optional<pb::file::dictionary> dictionary;
  std::string extension_name;
  bytes_map metadata;
  bool unenforced_primary_key = false;

  static constexpr std::string_view message_name = "lance.file.Field";
  static constexpr std::uint32_t f_type = 1, f_name = 2, f_id = 3, f_parent_id = 4, f_logical_type = 5,
                                 f_nullable = 6, f_encoding = 7, f_dictionary = 8, f_extension_name = 9,
                                 f_metadata = 10, f_unenforced_primary_key = 12;

  void encode(writer& w) const {
    w.int32_opt(f_type, std::int32_t(type));
    w.string_opt(f_name, name);
    w.int32_opt(f_id, id);
    w.int32_opt(f_parent_id, parent_id);
    w.string_opt(f_logical_type, logical_type);
    w.boolean_opt(f_nullable, nullable);
    w.int32_opt(f_encoding, std::int32_t(encoding));
    if (dictionary) w.message(f_dictionary, *dictionary);
    w.string_opt(f_extension_name, extension_name);
    detail::write_map(w, f_metadata, metadata);
    w.boolean_opt(f_unenforced_primary_key, unenforced_primary_key);
  }
  static field decode(reader r) {
    field x;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_type: x.type = field_type(detail::read_int32(r, f, "Field.type")); break;
        case f_name: x.name = r.string(f, "Field.name"); break;
        case f_id: x.id = detail::read_int32(r, f, "Field.id"); break;
        case f_parent_id: x.parent_id = detail::read_int32(r, f, "Field.parent_id"); break;
        case f_logical_type: x.logical_type = r.string(f, "Field.logical_type"); break;
        case f_nullable: x.nullable = r.varint(f, "Field.nullable") != 0; break;
        case f_encoding: x.encoding = field_encoding(detail::read_int32(r, f, "Field.encoding")); break;
        case f_dictionary: x.dictionary = pb::file::dictionary::decode(r.sub(f, "Field.dictionary")); break;
        case f_extension_name: x.extension_name = r.string(f, "Field.extension_name"); break;
        case f_metadata: x.metadata.push_back(r.map_entry(f, "Field.metadata")); break;
        case f_unenforced_primary_key:
          x.unenforced_primary_key = r.varint(f, "Field.unenforced_primary_key") != 0;
          break;
        default: break;  // unknown (e.g. the retired storage_class, 11): skipped
      }
    }
    return x;
  }
  friend bool operator==(const field&, const field&) = default;
};

// lance.file.Schema: every field, nested ones included, in pre-order; and metadata.
struct schema {
  std::vector<field> fields;
  bytes_map metadata;

  static constexpr std::string_view message_name = "lance.file.Schema";
  static constexpr std::uint32_t f_fields = 1, f_metadata = 5;

  void encode(writer& w) const {
    for (const auto& f : fields) w.message(f_fields, f);
    detail::write_map(w, f_metadata, metadata);
  }
  static schema decode(reader r) {
    schema s;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_fields) s.fields.push_back(field::decode(r.sub(f, "Schema.fields")));
      else if (f.number == f_metadata) s.metadata.push_back(r.map_entry(f, "Schema.metadata"));
    }
    return s;
  }
  friend bool operator==(const schema&, const schema&) = default;
};

// lance.file.FileDescriptor: global buffer 0 of a v2.x file.
struct file_descriptor {
  std::optional<pb::file::schema> schema;
  std::uint64_t length = 0;  // rows

  static constexpr std::string_view message_name = "lance.file.FileDescriptor";
  static constexpr std::uint32_t f_schema = 1, f_length = 2;

  void encode(writer& w) const {
    if (schema) w.message(f_schema, *schema);
    w.uint64_opt(f_length, length);
  }
  static file_descriptor decode(reader r) {
    file_descriptor d;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_schema) d.schema = pb::file::schema::decode(r.sub(f, "FileDescriptor.schema"));
      else if (f.number == f_length) d.length = r.varint(f, "FileDescriptor.length");
    }
    return d;
  }
  friend bool operator==(const file_descriptor&, const file_descriptor&) = default;
};

// lance.file.Metadata: the footer metadata of v1 (legacy) files.
struct file_metadata {
  struct statistics_metadata {
    std::vector<field> schema;
    std::vector<std::int32_t> fields;
    std::uint64_t page_table_position = 0;

    static constexpr std::string_view message_name = "lance.file.Metadata.StatisticsMetadata";
    static constexpr std::uint32_t f_schema = 1, f_fields = 2, f_page_table_position = 3;

    void encode(writer& w) const {
      for (const auto& f : schema) w.message(f_schema, f);
      std::vector<std::int64_t> wide(fields.begin(), fields.end());  // sign-extend negatives
      w.packed_varint(f_fields, wide);
      w.uint64_opt(f_page_table_position, page_table_position);
    }
    static statistics_metadata decode(reader r) {
      statistics_metadata s;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == f_schema) s.schema.push_back(field::decode(r.sub(f, "StatisticsMetadata.schema")));
        else if (f.number == f_fields) r.repeated_varint(f, s.fields);
        else if (f.number == f_page_table_position)
          s.page_table_position = r.varint(f, "StatisticsMetadata.page_table_position");
      }
      return s;
    }
    friend bool operator==(const statistics_metadata&, const statistics_metadata&) = default;
  };

  std::uint64_t manifest_position = 0;
  std::vector<std::int32_t> batch_offsets;
  std::uint64_t page_table_position = 0;
  std::optional<statistics_metadata> statistics;

  static constexpr std::string_view message_name = "lance.file.Metadata";
  static constexpr std::uint32_t f_manifest_position = 1, f_batch_offsets = 2, f_page_table_position = 3,
                                 f_statistics = 5;

  void encode(writer& w) const {
    w.uint64_opt(f_manifest_position, manifest_position);
    std::vector<std::int64_t> wide(batch_offsets.begin(), batch_offsets.end());
    w.packed_varint(f_batch_offsets, wide);
    w.uint64_opt(f_page_table_position, page_table_position);
    if (statistics) w.message(f_statistics, *statistics);
  }
  static file_metadata decode(reader r) {
    file_metadata m;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_manifest_position) m.manifest_position = r.varint(f, "Metadata.manifest_position");
      else if (f.number == f_batch_offsets) r.repeated_varint(f, m.batch_offsets);
      else if (f.number == f_page_table_position) m.page_table_position = r.varint(f, "Metadata.page_table_position");
      else if (f.number == f_statistics) m.statistics = statistics_metadata::decode(r.sub(f, "Metadata.statistics"));
    }
    return m;
  }
  friend bool operator==(const file_metadata&, const file_metadata&) = default;
};

// Bytes <-> message helpers for this family.
template <class Msg>
std::string encode(const Msg& m) {
  writer w;
  m.encode(w);
  return w.take();
}
template <class Msg>
Msg decode(bytes_view data) {
  return Msg::decode(reader(data, 0, Msg::message_name));
}
template <class Msg>
Msg decode(std::string_view data) {
  return Msg::decode(reader(data, 0, Msg::message_name));
}

}  // namespace lancet::pb::file
