// Optimising an IVF vector index after the dataset changed, as Lance 12's
// optimize_indices does:
//
//   index::optimize_options o;                 // o.name = "vector_idx" (default: all)
//   auto r = index::optimize_indices("/data/ds", o);
//
// - Rows of fragments no segment covers (appended since) are assigned with the
//   existing centroids, encoded with the existing quantizer and written as a delta
//   segment: a new IndexMetadata with the same name and its own fragment bitmap.
// - num_indices_to_merge = N: the newest N segments are merged with the delta into one
//   (no partition adjustment). retrain: the index is rebuilt from scratch.
// - Otherwise the plan (plan_partitions, partition_planner.hpp) over the partition
//   sizes summed over the delta and every segment decides: a steady state writes the
//   delta only; splits (or else joins) merge every segment with the delta into one
//   rebalanced segment.
// - Rows a merged segment holds that were deleted or rewritten since are dropped; a
//   row held by several merged segments keeps the newest segment's entries (all of
//   them: a multivector row has one entry per vector).
// Vectors are re-read from the dataset (in chunks of at most fetch_chunk_bytes of
// decoded data) only for the rows that move: every row with an entry in a split
// partition or its neighbours, or in a joined partition; all its entries leave and
// all its vectors are placed again (a multivector row's vectors one by one).
// Memory: the delta, the entries kept from merged segments (read a partition at a
// time) and the re-encoded rows stream through shufflers (shuffler.hpp) bounded by
// memory_budget_bytes, spilling beyond it; row ids are held as sorted vectors.
// IVF_FLAT stores the column's own element type (float16 / float32 / float64).
// Stages (detail, run by optimize_one; reported through on_progress):
//   scan_unindexed   scan_delta: the delta assigned, encoded, shuffled;
//   plan             plan_stage: the plan, and the segments to merge;
//   split            candidate_rows (the rows of partitions that may move) and
//                    move_partitions: new centroids per split partition (or, joins,
//                    the survivors renumbered);
//   reassign / join  keep_entries (what stays) then reencode_stage (the rows that
//                    move, to the nearest new centroid or, joins, join_chooser);
//   merge_partitions write_segment: the new segment's files and metadata;
//   commit           optimize_indices: one commit for every index optimised.
// IVF_HNSW_* indexes go through the same plan over their flat / SQ / PQ storage; the
// new segment (delta or merged) then gets a graph per partition built over its stored
// rows, with the m / ef_construction / max_level the index's lance:hnsw records (Lance
// 12 likewise builds each partition's graph afresh when it writes a segment).
// Its options and results are in optimize/options.hpp, its row handling in
// optimize/rows.hpp, its stages in optimize/stages.hpp.
// This header declares the entry points; optimize/optimize_indices_impl.hpp runs the stages
// (optimize_one) and defines them: included here in header-only mode, compiled into
// the library in compiled mode (core/config.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/optimize/options.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

// Optimises the IVF indexes of the latest version of the dataset at `root` (the one
// named o.name, or all of them) and commits the result as one new version (Lance's
// CreateIndex with the new segments and the merged ones removed); when nothing needs
// doing nothing is committed. Errors leave the dataset as it was.
LANCET_INLINE optimize_result optimize_indices(const std::string& root, const optimize_options& o = {});

// An IVF_FLAT index over `column` with the centroids given (k x dim, row-major f32)
// instead of trained ones: build_ivf_index with them as build_options::ivf_centroids
// (every row assigned to its nearest centroid, the shuffle bounded by
// memory_budget_bytes), committed as the next version. A target partition size given
// is recorded in the index's details for later optimisation (Lance's and ours). Other
// index types, a pool or progress: set ivf_centroids on build_options directly.
LANCET_INLINE build_result create_ivf_flat_with_centroids(const std::string& root, const std::string& column,
                                                          const std::vector<float>& centroids, std::size_t k,
                                                          simd::distance_type metric = simd::distance_type::l2,
                                                          const std::string& name = {},
                                                          std::optional<std::size_t> target_partition_size = {},
                                                          std::uint64_t memory_budget_bytes =
                                                              build_options{}.memory_budget_bytes);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/optimize/optimize_indices_impl.hpp"
#endif
