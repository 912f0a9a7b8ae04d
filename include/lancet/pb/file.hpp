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
#include "lancet/pb/message.hpp"

namespace lancet::pb::file {

// map<string, bytes>, in order of appearance.
using bytes_map = std::vector<std::pair<std::string, std::string>>;

// lance.file.Encoding: the v1 per-field encoding (v2 files still fill it in).
enum class field_encoding : std::int32_t { none = 0, plain = 1, var_binary = 2, dictionary = 3, rle = 4 };

// lance.file.Dictionary: where a v1 dictionary's values live.
struct dictionary {
  static constexpr std::string_view message_name = "lance.file.Dictionary";
  static constexpr std::uint32_t f_offset = 1, f_length = 2;
  std::int64_t offset = 0;
  std::int64_t length = 0;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_offset, &dictionary::offset, "Dictionary.offset"),
                      pb::field(f_length, &dictionary::length, "Dictionary.length"));
  }
  friend bool operator==(const dictionary&, const dictionary&) = default;
};

// lance.file.Field: one node of the schema tree (children follow their parent in the
// flat list and point back at it with parent_id).
struct field {
  static constexpr std::string_view message_name = "lance.file.Field";
  static constexpr std::uint32_t f_type = 1, f_name = 2, f_id = 3, f_parent_id = 4, f_logical_type = 5,
                                 f_nullable = 6, f_encoding = 7, f_dictionary = 8, f_extension_name = 9,
                                 f_metadata = 10, f_unenforced_primary_key = 12;  // 11 (storage_class) retired
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

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_type, &field::type, "Field.type"),
                      pb::field(f_name, &field::name, "Field.name"),
                      pb::field(f_id, &field::id, "Field.id"),
                      pb::field(f_parent_id, &field::parent_id, "Field.parent_id"),
                      pb::field(f_logical_type, &field::logical_type, "Field.logical_type"),
                      pb::field(f_nullable, &field::nullable, "Field.nullable"),
                      pb::field(f_encoding, &field::encoding, "Field.encoding"),
                      pb::field(f_dictionary, &field::dictionary, "Field.dictionary"),
                      pb::field(f_extension_name, &field::extension_name, "Field.extension_name"),
                      pb::field(f_metadata, &field::metadata, "Field.metadata"),
                      pb::field(f_unenforced_primary_key, &field::unenforced_primary_key, "Field.unenforced_primary_key"));
  }
  friend bool operator==(const field&, const field&) = default;
};

// lance.file.Schema: every field, nested ones included, in pre-order; and metadata.
struct schema {
  static constexpr std::string_view message_name = "lance.file.Schema";
  static constexpr std::uint32_t f_fields = 1, f_metadata = 5;
  std::vector<field> fields;
  bytes_map metadata;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_fields, &schema::fields, "Schema.fields"),
                      pb::field(f_metadata, &schema::metadata, "Schema.metadata"));
  }
  friend bool operator==(const schema&, const schema&) = default;
};

// lance.file.FileDescriptor: global buffer 0 of a v2.x file.
struct file_descriptor {
  static constexpr std::string_view message_name = "lance.file.FileDescriptor";
  static constexpr std::uint32_t f_schema = 1, f_length = 2;
  std::optional<pb::file::schema> schema;
  std::uint64_t length = 0;  // rows

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_schema, &file_descriptor::schema, "FileDescriptor.schema"),
                      pb::field(f_length, &file_descriptor::length, "FileDescriptor.length"));
  }
  friend bool operator==(const file_descriptor&, const file_descriptor&) = default;
};

// lance.file.Metadata: the footer metadata of v1 (legacy) files.
struct file_metadata {
  static constexpr std::string_view message_name = "lance.file.Metadata";

  struct statistics_metadata {
    static constexpr std::string_view message_name = "lance.file.Metadata.StatisticsMetadata";
    static constexpr std::uint32_t f_schema = 1, f_fields = 2, f_page_table_position = 3;
    std::vector<field> schema;
    std::vector<std::int32_t> fields;  // negatives sign-extended to 64 bits on the wire
    std::uint64_t page_table_position = 0;

    static constexpr auto proto_fields() {
      return pb::fields(
          pb::field(f_schema, &statistics_metadata::schema, "StatisticsMetadata.schema"),
          pb::field(f_fields, &statistics_metadata::fields, "StatisticsMetadata.fields"),
          pb::field(f_page_table_position, &statistics_metadata::page_table_position,
                    "StatisticsMetadata.page_table_position"));
    }
    friend bool operator==(const statistics_metadata&, const statistics_metadata&) = default;
  };

  static constexpr std::uint32_t f_manifest_position = 1, f_batch_offsets = 2, f_page_table_position = 3,
                                 f_statistics = 5;
  std::uint64_t manifest_position = 0;
  std::vector<std::int32_t> batch_offsets;
  std::uint64_t page_table_position = 0;
  std::optional<statistics_metadata> statistics;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_manifest_position, &file_metadata::manifest_position, "Metadata.manifest_position"),
                      pb::field(f_batch_offsets, &file_metadata::batch_offsets, "Metadata.batch_offsets"),
                      pb::field(f_page_table_position, &file_metadata::page_table_position, "Metadata.page_table_position"),
                      pb::field(f_statistics, &file_metadata::statistics, "Metadata.statistics"));
  }
  friend bool operator==(const file_metadata&, const file_metadata&) = default;
};

}  // namespace lancet::pb::file

// The messages whose codecs compiled mode's library instantiates (pb/message.hpp).
#define LANCET_PB_FILE_CODECS(X) X(lancet::pb::file::file_descriptor) X(lancet::pb::file::field)
LANCET_PB_FILE_CODECS(LANCET_PB_EXTERN_CODEC)
