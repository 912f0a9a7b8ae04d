// Remapping an IVF vector index after its rows moved (compaction rewrote fragments):
// every partition's row ids go through an old -> new row address map, rows mapped to
// nothing are dropped, and nothing is retrained. The result is a new index directory
// (new uuid) with the same centroids, loss, quantizer and codes, as Lance 12's remap
// writes it:
//
//   index::row_address_map m = ...;                      // old address -> new or none
//   auto r = index::remap_index_files(root, im, m);      // _indices/{r.new_uuid}/
//   auto meta = index::remapped_index_metadata(im, r, new_fragment_bitmap);
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
#include "lancet/index/hnsw/graph.hpp"
#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/index.hpp"

namespace lancet::dataset {
class roaring_bitmap;  // dataset/roaring.hpp
}  // namespace lancet::dataset

namespace lancet::index {

struct index_file_info;  // index_info.hpp

// Old row address -> the new one, or nullopt when the row is gone. Addresses missing
// from the map are unchanged.
using row_address_map = std::unordered_map<std::uint64_t, std::optional<std::uint64_t>>;

struct remap_stats {
  std::uint64_t rows_before = 0;  // entries in the old index
  std::uint64_t rows_after = 0;   // entries in the new one
  std::uint64_t rows_moved = 0;   // entries whose row id changed
  std::uint64_t rows_dropped = 0; // entries mapped to nothing
};

struct remapped_index {
  pb::uuid old_uuid, new_uuid;
  std::vector<pb::index_file> files;  // of the new directory, as IndexMetadata lists them
  std::size_t num_partitions = 0;
  remap_stats stats;
};

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
                                               const row_address_map& m, std::optional<pb::uuid> new_uuid = std::nullopt);

// The IndexMetadata of a remapped index: the old one with the new uuid, files and
// fragment bitmap (Lance keeps dataset_version, details, index_version, created_at).
LANCET_INLINE pb::index_metadata remapped_index_metadata(const pb::index_metadata& old, const remapped_index& r,
                                                         const dataset::roaring_bitmap& fragments);

// Lance's recomputed fragment bitmap of an index after a rewrite: for each group
// (old fragment ids -> new fragment ids) whose old fragments the index covers, the old
// ids leave and the new ones join. A group only partly covered is invalid_input_error
// (Lance refuses such a plan: it never mixes indexed and unindexed fragments).
LANCET_INLINE dataset::roaring_bitmap rewritten_fragment_bitmap(
    const pb::index_metadata& im,
    const std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>>& groups);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/remap_impl.hpp"
#endif
