// What describes one index: vector_index_info, its entry in a dataset's manifest (as
// list_indices, registry.hpp, gives it), and index_file_info, what its index.idx says
// (read_index_file, storage_reader.hpp). Apart from the code that fills them, so that
// declarations naming them (vector_index.hpp, remap.hpp) need not include that code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lancet/file/version.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/index.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

// An index as the manifest lists it (vector indices with their type and metric).
struct vector_index_info {
  std::string name;
  lancet::uuid uuid;
  std::vector<std::int32_t> fields;
  std::vector<std::string> columns;  // dotted names of `fields`
  std::string index_type;            // "IVF_PQ", "IVF_HNSW_SQ", ... ("" for non-vector indices)
  std::optional<simd::distance_type> distance;
  std::optional<pb::index::vector_index_details> details;
  std::uint64_t dataset_version = 0;
  std::vector<std::uint64_t> fragment_ids;
  bool fragment_bitmap_present = true;  // false: an old index without one (Lance: it covers every fragment)
  std::optional<std::int32_t> index_version;
  std::optional<std::uint64_t> created_at;
  std::vector<pb::index_file> files;
};

// What index.idx says.
struct index_file_info {
  file::format_version version = file::format_version::v2_0;
  std::string index_type;  // "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_SQ", ...
  simd::distance_type distance = simd::distance_type::l2;
  ivf_model ivf;                              // centroids, loss, sub-index offsets/lengths
  std::string sub_index_key;                  // "lance:flat" (or "lance:hnsw")
  std::vector<std::string> sub_index_metadata;  // one entry per partition
};

}  // namespace lancet::index
