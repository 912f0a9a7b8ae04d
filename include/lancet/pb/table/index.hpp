// table.proto's index messages (package lance.table): the metadata of one index
// (IndexMetadata: UUID, covered fields and fragments, details, files) and the manifest's
// index section that lists them.
//
// Lance 12.0.0 (LanceDB 0.39) adds to the 1.0 protos IndexMetadata.files (10: repeated
// {path = 1, size_bytes = 2}).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/pb/message.hpp"
#include "lancet/pb/table/common.hpp"

namespace lancet::pb {

// One file of an index directory ({root}/_indices/{uuid}/{path}) and its size.
struct index_file {
  static constexpr std::string_view message_name = "IndexFile";
  static constexpr std::uint32_t f_path = 1, f_size_bytes = 2;
  std::string path;
  std::uint64_t size_bytes = 0;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_path, &index_file::path, "IndexFile.path"),
                      pb::field(f_size_bytes, &index_file::size_bytes, "IndexFile.size_bytes"));
  }
  friend bool operator==(const index_file&, const index_file&) = default;
};

struct index_metadata {
  static constexpr std::string_view message_name = "IndexMetadata";
  static constexpr std::uint32_t f_uuid = 1, f_fields = 2, f_name = 3, f_dataset_version = 4,
                                 f_fragment_bitmap = 5, f_index_details = 6, f_index_version = 7,
                                 f_created_at = 8, f_base_id = 9, f_files = 10;
  lancet::uuid uuid;
  std::vector<std::int32_t> fields;  // field ids the index covers
  std::string name;
  std::uint64_t dataset_version = 0;  // version the index was built from
  std::string fragment_bitmap;        // 32-bit roaring bitmap (portable format) of covered fragment ids
  std::optional<any> index_details;   // e.g. /lance.index.pb.VectorIndexDetails
  std::optional<std::int32_t> index_version;
  std::optional<std::uint64_t> created_at;  // milliseconds since the epoch, UTC
  std::optional<std::uint32_t> base_id;
  std::vector<index_file> files;

  static constexpr auto proto_fields() {
    // Lance refuses index metadata without a UUID.
    return pb::fields(pb::required(f_uuid, &index_metadata::uuid, "IndexMetadata.uuid"),
                      pb::field(f_fields, &index_metadata::fields, "IndexMetadata.fields"),
                      pb::field(f_name, &index_metadata::name, "IndexMetadata.name"),
                      pb::field(f_dataset_version, &index_metadata::dataset_version, "IndexMetadata.dataset_version"),
                      pb::field(f_fragment_bitmap, &index_metadata::fragment_bitmap, "IndexMetadata.fragment_bitmap"),
                      pb::field(f_index_details, &index_metadata::index_details, "IndexMetadata.index_details"),
                      pb::field(f_index_version, &index_metadata::index_version, "IndexMetadata.index_version"),
                      pb::field(f_created_at, &index_metadata::created_at, "IndexMetadata.created_at"),
                      pb::field(f_base_id, &index_metadata::base_id, "IndexMetadata.base_id"),
                      pb::field(f_files, &index_metadata::files, "IndexMetadata.files"));
  }
  friend bool operator==(const index_metadata&, const index_metadata&) = default;
};

struct index_section {
  static constexpr std::string_view message_name = "IndexSection";
  static constexpr std::uint32_t f_indices = 1;
  std::vector<index_metadata> indices;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_indices, &index_section::indices, "IndexSection.indices"));
  }
  friend bool operator==(const index_section&, const index_section&) = default;
};

}  // namespace lancet::pb
