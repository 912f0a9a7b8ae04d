// The partition planner of index optimisation, as Lance 12's optimize_indices plans
// it: from the sizes of an IVF index's partitions and the target partition size, which
// partitions to split (and into how many pieces) or, when none is too large, which
// small ones to join away. Pure arithmetic over the sizes; optimize/optimize_indices.hpp carries the
// plan out.
//
//   auto plan = index::plan_partitions(sizes, 4096);  // plan.splits, plan.joins
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lancet/core/error.hpp"

namespace lancet::index {

namespace detail {
// Lance 12's constants.
inline constexpr std::size_t split_size_factor = 4;   // split above 4 x target
inline constexpr std::size_t join_size_percent = 25;  // join below 25% of target
inline constexpr std::size_t max_split_ways = 1024;
}  // namespace detail

struct partition_split {
  std::uint32_t partition = 0;
  std::uint32_t ways = 0;
  friend bool operator==(const partition_split&, const partition_split&) = default;
};

struct partition_plan {
  std::vector<partition_split> splits;  // by partition id
  std::vector<std::uint32_t> joins;     // partitions joined away, ascending
  bool empty() const noexcept { return splits.empty() && joins.empty(); }
};

// The size above which a partition is split (and which a join never fills beyond).
inline std::uint64_t split_threshold(std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  return std::uint64_t(detail::split_size_factor) * target;
}

// Pieces a partition of `rows` is split into: ceil(rows / target), clamped to 2..1024.
inline std::uint32_t split_ways(std::uint64_t rows, std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  const std::uint64_t w = (rows + target - 1) / target;
  return std::uint32_t(std::clamp<std::uint64_t>(w, 2, detail::max_split_ways));
}

// What one optimize pass does with partitions of these sizes: split every partition
// above 4 x target; when none is, join away partitions below 25% of target, smallest
// first (lowest id on a tie), while at least one partition survives and the survivors
// keep room below the split threshold for every joined row.
inline partition_plan plan_partitions(std::span<const std::uint64_t> sizes, std::size_t target) {
  partition_plan plan;
  const std::uint64_t threshold = split_threshold(target);
  for (std::size_t p = 0; p < sizes.size(); ++p)
    if (sizes[p] > threshold) plan.splits.push_back({std::uint32_t(p), split_ways(sizes[p], target)});
  if (!plan.splits.empty() || sizes.size() <= 1) return plan;
  const std::uint64_t join_below = std::uint64_t(target) * detail::join_size_percent / 100;
  std::vector<std::uint32_t> cand;
  for (std::size_t p = 0; p < sizes.size(); ++p)
    if (sizes[p] < join_below) cand.push_back(std::uint32_t(p));
  std::stable_sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) { return sizes[a] < sizes[b]; });
  std::vector<bool> joined(sizes.size(), false);
  std::size_t survivors = sizes.size();
  std::uint64_t joined_rows = 0;
  for (auto c : cand) {
    if (survivors <= 1) break;
    std::uint64_t room = 0;
    for (std::size_t s = 0; s < sizes.size(); ++s)
      if (!joined[s] && s != c) room += threshold - std::min(threshold, sizes[s]);
    if (joined_rows + sizes[c] > room) break;
    joined[c] = true;
    joined_rows += sizes[c];
    --survivors;
    plan.joins.push_back(c);
  }
  std::sort(plan.joins.begin(), plan.joins.end());
  return plan;
}

}  // namespace lancet::index
