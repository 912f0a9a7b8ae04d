// Remapping an IVF vector index after its rows moved (compaction rewrote fragments):
// every partition's row ids go through an old -> new row address map, rows mapped to
// nothing are dropped, and nothing is retrained. The result is a new index directory
// (new uuid) with the same centroids, loss, quantizer and codes, as Lance 12's remap
// writes it:
//
//   dataset::row_address_map m = ...;                    // old address -> new or none
//   auto r = index::remap_index_files(root, im, m);      // _indices/{r.new_uuid}/
//   auto meta = dataset::remapped_index_metadata(im, r, new_fragment_bitmap);
//
// Facts checked against LanceDB 0.39 (its compaction of an IVF_FLAT index):
//  - ids absent from the map keep their value (rows of fragments the compaction did
//    not touch); ids mapped to none are dropped; order within a partition is kept;
//  - partitions are neither joined nor split by the remap (the partition count and the
//    centroids of index.idx are unchanged, empty partitions included);
//  - the new IndexMetadata keeps name, fields, dataset_version, index_details,
//    index_version and created_at of the old one; uuid, files and the fragment bitmap
//    change (registered by the Rewrite commit of the compaction, see
//    dataset/compact.hpp).
// IVF_HNSW_* indexes are remapped too. A graph's nodes are row positions within the
// partition, so a partition that lost no row keeps its graph as it was (its edges and
// distances still hold: the codes did not change); a partition that lost rows has its
// graph rebuilt over the rows kept, with the index's recorded m / ef_construction
// (Lance 12 rebuilds every graph on remap; keeping the intact ones is equivalent).
// Scalar indexes are unsupported_error, naming the index.
// This header declares the remap; remap_impl.hpp defines it (and the graph writer
// it shares with optimisation, write_hnsw_index_file): included here in header-only
// mode, compiled into the library in compiled mode (core/config.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/dataset/index_remap.hpp"
#include "lancet/index/hnsw/graph.hpp"
#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/index.hpp"

namespace lancet::index {

struct index_file_info;  // index_info.hpp

// The map, the remapped copy and the manifest's side of a remap are the dataset
// layer's (dataset/index_remap.hpp); the index layer writes the copy.
using dataset::remap_stats;
using dataset::remapped_index;
using dataset::remapped_index_metadata;
using dataset::rewritten_fragment_bitmap;
using dataset::row_address_map;

// The graph parameters an IVF_HNSW_* index.idx records in lance:hnsw (its first
// non-empty partition entry); Lance's defaults when every partition is empty.
LANCET_INLINE hnsw::build_params recorded_hnsw_params(const index_file_info& info, const std::string& who);

// Why lancet cannot remap index `im` of the dataset at `root` (nullopt when it can):
// it must be a single-column IVF index with the flat sub-index whose files lancet reads.
LANCET_INLINE std::optional<std::string> remap_unsupported_reason(const std::string& root, const pb::index_metadata& im);

// Writes the remapped copy of index `im` of the dataset at `root` into
// _indices/{new_uuid} (a fresh v4 uuid when not given). Reads one partition at a
// time. On failure the new directory is removed and the old index is untouched.
LANCET_INLINE remapped_index remap_index_files(const std::string& root, const pb::index_metadata& im,
                                               const row_address_map& m, std::optional<lancet::uuid> new_uuid = std::nullopt);

// What dataset::compact_files needs to carry IVF vector indexes over the rows it
// moves (compaction_options::remap_indexes): remap_unsupported_reason and
// remap_index_files.
inline dataset::index_remapper compaction_remapper() {
  return {[](const std::string& root, const pb::index_metadata& im) { return remap_unsupported_reason(root, im); },
          [](const std::string& root, const pb::index_metadata& im, const row_address_map& m) {
            return remap_index_files(root, im, m);
          }};
}

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/optimize/remap_impl.hpp"
#endif
