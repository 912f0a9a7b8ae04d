// table.proto's Manifest (package lance.table): one version of a dataset (schema as
// encoded lance.file.Field messages, fragments, feature flags, the writer's version,
// the data storage format, config and table metadata, and where the index section and
// the inline transaction are in the manifest file).
//
// Fields are encoded in ascending field-number order, as prost does, so that
// re-encoding a manifest that Lance wrote reproduces its bytes. The schema is kept as
// its encoded Field messages here: pb/file.hpp decodes them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/pb/message.hpp"
#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/fragment.hpp"

namespace lancet::pb {

struct manifest {
  static constexpr std::string_view message_name = "Manifest";

  struct writer_version_info {
    static constexpr std::string_view message_name = "WriterVersion";
    static constexpr std::uint32_t f_library = 1, f_version = 2, f_prerelease = 3, f_build_metadata = 4;
    std::string library;  // "lance" for Lance itself
    std::string version;  // core semver, e.g. "12.0.0"
    std::optional<std::string> prerelease;
    std::optional<std::string> build_metadata;

    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_library, &writer_version_info::library, "WriterVersion.library"),
                        pb::field(f_version, &writer_version_info::version, "WriterVersion.version"),
                        pb::field(f_prerelease, &writer_version_info::prerelease, "WriterVersion.prerelease"),
                        pb::field(f_build_metadata, &writer_version_info::build_metadata, "WriterVersion.build_metadata"));
    }
    friend bool operator==(const writer_version_info&, const writer_version_info&) = default;
  };

  struct data_storage_format {
    static constexpr std::string_view message_name = "DataStorageFormat";
    static constexpr std::uint32_t f_file_format = 1, f_version = 2;
    std::string file_format;  // "lance"
    std::string version;      // "2.0", "2.1", "2.2", ... ("0.1" = legacy)

    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_file_format, &data_storage_format::file_format, "DataStorageFormat.file_format"),
                        pb::field(f_version, &data_storage_format::version, "DataStorageFormat.version"));
    }
    friend bool operator==(const data_storage_format&, const data_storage_format&) = default;
  };

  static constexpr std::uint32_t f_fields = 1, f_fragments = 2, f_version = 3, f_version_aux_data = 4,
                                 f_schema_metadata = 5, f_index_section = 6, f_timestamp = 7, f_tag = 8,
                                 f_reader_feature_flags = 9, f_writer_feature_flags = 10, f_max_fragment_id = 11,
                                 f_transaction_file = 12, f_writer_version = 13, f_next_row_id = 14,
                                 f_data_format = 15, f_config = 16, f_blob_dataset_version = 17 /* reserved */,
                                 f_base_paths = 18, f_table_metadata = 19, f_branch = 20,
                                 f_transaction_section = 21;

  std::vector<std::string> fields_raw;  // encoded lance.file.Field messages, in schema order
  std::map<std::string, std::string> schema_metadata;
  std::vector<data_fragment> fragments;  // sorted by id
  std::uint64_t version = 0;
  std::uint64_t version_aux_data = 0;
  std::optional<std::uint64_t> index_section;  // file offset of the index section
  std::optional<pb::timestamp> timestamp;
  std::string tag;
  std::uint64_t reader_feature_flags = 0;
  std::uint64_t writer_feature_flags = 0;
  std::optional<std::uint32_t> max_fragment_id;
  std::string transaction_file;  // relative to {root}/_transactions
  std::optional<writer_version_info> writer_version;
  std::uint64_t next_row_id = 0;
  std::optional<data_storage_format> data_format;
  std::map<std::string, std::string> config;
  std::vector<base_path> base_paths;
  std::map<std::string, std::string> table_metadata;
  std::optional<std::string> branch;
  std::optional<std::uint64_t> transaction_section;  // file offset of the inline transaction

  static constexpr auto proto_fields() {
    return pb::fields(
        pb::field(f_fields, &manifest::fields_raw, "Manifest.fields"),
        pb::field(f_fragments, &manifest::fragments, "Manifest.fragments"),
        pb::field(f_version, &manifest::version, "Manifest.version"),
        pb::field(f_version_aux_data, &manifest::version_aux_data, "Manifest.version_aux_data"),
        pb::field(f_schema_metadata, &manifest::schema_metadata, "Manifest.schema_metadata"),
        pb::field(f_index_section, &manifest::index_section, "Manifest.index_section"),
        pb::field(f_timestamp, &manifest::timestamp, "Manifest.timestamp"),
        pb::field(f_tag, &manifest::tag, "Manifest.tag"),
        pb::field(f_reader_feature_flags, &manifest::reader_feature_flags, "Manifest.reader_feature_flags"),
        pb::field(f_writer_feature_flags, &manifest::writer_feature_flags, "Manifest.writer_feature_flags"),
        pb::field(f_max_fragment_id, &manifest::max_fragment_id, "Manifest.max_fragment_id"),
        pb::field(f_transaction_file, &manifest::transaction_file, "Manifest.transaction_file"),
        pb::field(f_writer_version, &manifest::writer_version, "Manifest.writer_version"),
        pb::field(f_next_row_id, &manifest::next_row_id, "Manifest.next_row_id"),
        pb::field(f_data_format, &manifest::data_format, "Manifest.data_format"),
        pb::field(f_config, &manifest::config, "Manifest.config"),
        pb::field(f_base_paths, &manifest::base_paths, "Manifest.base_paths"),
        pb::field(f_table_metadata, &manifest::table_metadata, "Manifest.table_metadata"),
        pb::field(f_branch, &manifest::branch, "Manifest.branch"),
        pb::field(f_transaction_section, &manifest::transaction_section, "Manifest.transaction_section"));
  }
  friend bool operator==(const manifest&, const manifest&) = default;
};

}  // namespace lancet::pb
