// table.proto's fragment messages (package lance.table): a fragment (DataFragment) is a
// set of data files holding the same rows, an optional deletion file, and its row-id
// and row-version sequences (inline bytes or a range of an external file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"
#include "lancet/pb/table/common.hpp"

namespace lancet::pb {

// One Lance file holding some of a fragment's columns.
struct data_file {
  static constexpr std::string_view message_name = "DataFile";
  static constexpr std::uint32_t f_path = 1, f_fields = 2, f_column_indices = 3, f_file_major_version = 4,
                                 f_file_minor_version = 5, f_file_size_bytes = 6, f_base_id = 7;
  std::string path;  // relative to {root}/data
  std::vector<std::int32_t> fields;          // field ids; -2 = tombstoned
  std::vector<std::int32_t> column_indices;  // top-level column per field, -1 if none
  std::uint32_t file_major_version = 0;
  std::uint32_t file_minor_version = 0;
  std::uint64_t file_size_bytes = 0;  // 0 = unknown
  std::optional<std::uint32_t> base_id;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_path, &data_file::path, "DataFile.path"),
                      pb::field(f_fields, &data_file::fields, "DataFile.fields"),
                      pb::field(f_column_indices, &data_file::column_indices, "DataFile.column_indices"),
                      pb::field(f_file_major_version, &data_file::file_major_version, "DataFile.file_major_version"),
                      pb::field(f_file_minor_version, &data_file::file_minor_version, "DataFile.file_minor_version"),
                      pb::field(f_file_size_bytes, &data_file::file_size_bytes, "DataFile.file_size_bytes"),
                      pb::field(f_base_id, &data_file::base_id, "DataFile.base_id"));
  }
  friend bool operator==(const data_file&, const data_file&) = default;
};

// Marks deleted rows of a fragment. File: {root}/_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}
struct deletion_file {
  static constexpr std::string_view message_name = "DeletionFile";
  static constexpr std::uint32_t f_file_type = 1, f_read_version = 2, f_id = 3, f_num_deleted_rows = 4, f_base_id = 7;
  enum class type : std::uint32_t { arrow_array = 0, bitmap = 1 };
  type file_type = type::arrow_array;
  std::uint64_t read_version = 0;
  std::uint64_t id = 0;
  std::uint64_t num_deleted_rows = 0;  // 0 = unknown
  std::optional<std::uint32_t> base_id;

  std::string_view extension() const noexcept { return file_type == type::bitmap ? "bin" : "arrow"; }
  // Path relative to the dataset root.
  std::string relative_path(std::uint64_t fragment_id) const {
    return "_deletions/" + std::to_string(fragment_id) + "-" + std::to_string(read_version) + "-" +
           std::to_string(id) + "." + std::string(extension());
  }

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_file_type, &deletion_file::file_type, "DeletionFile.file_type"),
                      pb::field(f_read_version, &deletion_file::read_version, "DeletionFile.read_version"),
                      pb::field(f_id, &deletion_file::id, "DeletionFile.id"),
                      pb::field(f_num_deleted_rows, &deletion_file::num_deleted_rows, "DeletionFile.num_deleted_rows"),
                      pb::field(f_base_id, &deletion_file::base_id, "DeletionFile.base_id"));
  }
  void check_decoded() const {
    if (file_type > type::bitmap)
      throw unsupported_error("DeletionFile: unknown file type " + std::to_string(std::uint32_t(file_type)));
  }
  friend bool operator==(const deletion_file&, const deletion_file&) = default;
};

// Inline bytes (< ~200 KB) or a range of an external file: how fragments carry their
// row-id and row-version sequences (a oneof of bytes and ExternalFile).
using inline_or_external = std::variant<std::monostate, std::string, external_file>;

// A set of files holding the same rows (one per column group).
struct data_fragment {
  static constexpr std::string_view message_name = "DataFragment";
  static constexpr std::uint32_t f_id = 1, f_files = 2, f_deletion_file = 3, f_physical_rows = 4,
                                 f_inline_row_ids = 5, f_external_row_ids = 6,
                                 f_inline_last_updated_at_versions = 7, f_external_last_updated_at_versions = 8,
                                 f_inline_created_at_versions = 9, f_external_created_at_versions = 10;
  std::uint64_t id = 0;
  std::vector<data_file> files;
  std::optional<pb::deletion_file> deletion_file;
  std::uint64_t physical_rows = 0;  // rows including deleted ones; 0 = unknown (legacy)
  inline_or_external row_id_sequence;                    // encoded pb::row_id_sequence
  inline_or_external last_updated_at_version_sequence;  // encoded row_dataset_version_sequence
  inline_or_external created_at_version_sequence;       // encoded row_dataset_version_sequence

  // Live rows: physical rows minus deleted ones (when both are known).
  std::optional<std::uint64_t> num_rows() const {
    if (physical_rows == 0) return std::nullopt;
    if (!deletion_file) return physical_rows;
    if (deletion_file->num_deleted_rows == 0 || deletion_file->num_deleted_rows > physical_rows) return std::nullopt;
    return physical_rows - deletion_file->num_deleted_rows;
  }

  static constexpr auto proto_fields() {
    return pb::fields(
        pb::field(f_id, &data_fragment::id, "DataFragment.id"),
        pb::field(f_files, &data_fragment::files, "DataFragment.files"),
        pb::field(f_deletion_file, &data_fragment::deletion_file, "DataFragment.deletion_file"),
        pb::field(f_physical_rows, &data_fragment::physical_rows, "DataFragment.physical_rows"),
        pb::oneof(&data_fragment::row_id_sequence, "DataFragment.row_id_sequence",
                  {f_inline_row_ids, f_external_row_ids}),
        pb::oneof(&data_fragment::last_updated_at_version_sequence, "DataFragment.last_updated_at_version_sequence",
                  {f_inline_last_updated_at_versions, f_external_last_updated_at_versions}),
        pb::oneof(&data_fragment::created_at_version_sequence, "DataFragment.created_at_version_sequence",
                  {f_inline_created_at_versions, f_external_created_at_versions}));
  }
  friend bool operator==(const data_fragment&, const data_fragment&) = default;
};

}  // namespace lancet::pb
