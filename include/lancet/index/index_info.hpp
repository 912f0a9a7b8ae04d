// What describes one index: vector_index_info, its entry in a dataset's manifest (as
// list_indices, registry.hpp, gives it), and index_file_info, what its index.idx says
// (read_index_file, storage_reader.hpp). Apart from the code that fills them, so that
// declarations naming them (vector_index.hpp, remap.hpp) need not include that code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/uuid.hpp"
#include "lancet/file/version.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

// An index as the manifest lists it (vector indices with their type, metric and
// parameters, read from its VectorIndexDetails).
struct vector_index_info {
  // An IVF_HNSW_* index's graph.
  struct hnsw_graph {
    std::uint32_t m = 0;  // max connections
    std::uint32_t ef_construction = 0;
    std::uint32_t max_level = 0;
    friend bool operator==(const hnsw_graph&, const hnsw_graph&) = default;
  };
  // One file of the index directory ({root}/_indices/{uuid}/{path}).
  struct file {
    std::string path;
    std::uint64_t size_bytes = 0;
    friend bool operator==(const file&, const file&) = default;
  };

  std::string name;
  lancet::uuid uuid;
  std::vector<std::int32_t> fields;
  std::vector<std::string> columns;  // dotted names of `fields`
  std::string index_type;            // "IVF_PQ", "IVF_HNSW_SQ", ..., "BTREE", "BITMAP", "LABEL_LIST" ("" when unknown)
  std::optional<simd::distance_type> distance;
  std::optional<hnsw_graph> hnsw;
  std::optional<std::uint32_t> num_bits;         // PQ, SQ, RQ codes
  std::optional<std::uint32_t> num_sub_vectors;  // PQ
  std::vector<std::pair<std::string, std::string>> runtime_hints;  // "lance.ivf.max_iters", ...
  std::optional<std::uint64_t> target_partition_size;  // what it was built for (Lance's optimize plans with it)
  std::uint64_t dataset_version = 0;
  std::vector<std::uint64_t> fragment_ids;
  bool fragment_bitmap_present = true;  // false: an old index without one (Lance: it covers every fragment)
  std::optional<std::int32_t> index_version;
  std::optional<std::uint64_t> created_at;
  std::vector<file> files;
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
