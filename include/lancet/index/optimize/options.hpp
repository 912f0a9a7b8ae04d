// What optimising IVF indexes takes and gives (optimize/optimize_indices.hpp): optimize_options, the
// stages it reports progress for, the per-index and overall results; and Lance 12's
// constants for the optimisation (the planner's are in partition_planner.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/optimize/partition_planner.hpp"
#include "lancet/pb/table/common.hpp"

namespace lancet::index {

namespace detail {
inline constexpr std::size_t reassign_range = 64;        // neighbour partitions considered
inline constexpr std::size_t split_sample_per_piece = 256;
inline constexpr std::uint64_t default_fetch_chunk_bytes = std::uint64_t(32) << 20;
inline constexpr std::size_t route_batch_rows = 1024;
}  // namespace detail

enum class optimize_stage : std::uint8_t { scan_unindexed, plan, split, join, reassign, merge_partitions, commit };

inline std::string_view optimize_stage_name(optimize_stage s) noexcept {
  switch (s) {
    case optimize_stage::scan_unindexed: return "scan_unindexed";
    case optimize_stage::plan: return "plan";
    case optimize_stage::split: return "split";
    case optimize_stage::join: return "join";
    case optimize_stage::reassign: return "reassign";
    case optimize_stage::merge_partitions: return "merge_partitions";
    case optimize_stage::commit: return "commit";
  }
  return "?";
}

struct optimize_progress {
  std::string index;
  optimize_stage stage;
  std::uint64_t done = 0;  // rows (scan, reassign), partitions (split, join, merge)
  std::uint64_t total = 0;
};

struct optimize_options {
  std::string name;  // the index to optimise; empty: every IVF index of the dataset
  // Merge the newest N segments with the delta (no partition adjustment); 0: delta only.
  std::optional<std::size_t> num_indices_to_merge;
  bool retrain = false;  // rebuild the index (new centroids and quantizer) over all rows
  // The partition size the plan aims at (and then records in the index); default: the
  // one recorded in the index's details, else the type's (4096 flat, 8192 others).
  std::optional<std::size_t> target_partition_size;
  std::uint64_t fetch_chunk_bytes = detail::default_fetch_chunk_bytes;
  // What the shuffles of the delta and of the new segment's entries may hold in
  // memory (as the builder's budget: beyond it, runs spill to temporary files).
  std::uint64_t memory_budget_bytes = std::uint64_t(512) << 20;
  std::string spill_directory;  // where runs spill; default: the new segment's directory (for a dataset on an object store: the system's temporary directory)
  boost::asio::thread_pool* pool = nullptr;
  std::function<void(const optimize_progress&)> on_progress;
};

struct index_optimize_result {
  std::string name;
  bool changed = false;
  std::size_t segments_before = 0;
  std::size_t segments_after = 0;
  std::size_t segments_merged = 0;       // existing segments folded into the new one
  std::uint64_t rows_added = 0;          // rows of unindexed fragments indexed now
  std::uint64_t rows_dropped = 0;        // deleted / rewritten rows dropped by the merge
  std::uint64_t rows_in_segment = 0;     // rows of the new segment
  std::size_t num_partitions = 0;        // of the new segment
  std::vector<partition_split> splits;   // executed (ways = pieces kept)
  std::vector<std::uint32_t> joins;      // executed
  std::uint64_t overflow_rows = 0;       // joined rows placed without room
  std::optional<lancet::uuid> uuid;          // the new segment
};

struct optimize_result {
  std::uint64_t version = 0;  // the dataset version after the optimize
  unsigned retries = 0;       // commits lost to other writers before its own won
  std::vector<index_optimize_result> indices;
};

}  // namespace lancet::index
