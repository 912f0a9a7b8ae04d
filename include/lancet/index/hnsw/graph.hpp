// One partition's HNSW graph as Lance 12 stores it in index.idx: per node, one
// neighbour list per level it lives on (level 0 for every node), with the distances
// the builder measured (in Lance's order: see builder.hpp). Node ids are row positions inside the
// partition (auxiliary.idx order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"

namespace lancet::index::hnsw {

// Lance's HnswBuildParams (defaults as Lance: m 20, ef_construction 150, max_level 7).
struct build_params {
  std::uint32_t m = 20;
  std::uint32_t ef_construction = 150;
  std::uint16_t max_level = 7;
  std::uint32_t prefetch_distance = 2;  // recorded for Lance; no effect here
  std::uint64_t seed = 42;              // level draws (Lance uses a thread RNG)

  std::uint32_t max_neighbors(std::size_t level) const noexcept { return level == 0 ? 2 * m : m; }
  void validate(const std::string& who) const {
    if (m < 2) throw invalid_input_error(who + ": HNSW m must be at least 2, got " + std::to_string(m));
    if (ef_construction == 0) throw invalid_input_error(who + ": HNSW ef_construction must be positive");
    if (max_level == 0) throw invalid_input_error(who + ": HNSW max_level must be positive");
  }
};

struct edge {
  std::uint32_t id = 0;
  float distance = 0;
};

struct graph {
  build_params params;
  std::uint32_t entry_point = 0;
  // levels[node][level]: the node's neighbours on that level.
  std::vector<std::vector<std::vector<edge>>> levels;

  std::size_t size() const noexcept { return levels.size(); }
  std::size_t node_levels(std::uint32_t n) const noexcept { return levels[n].size(); }
  // Nodes living on `level` (level 0: all).
  std::size_t nodes_on(std::size_t level) const noexcept {
    std::size_t c = 0;
    for (const auto& l : levels) c += l.size() > level;
    return c;
  }
  // Lance's cumulative level_offsets: max_level + 1 entries, rows of level l are
  // [offsets[l], offsets[l + 1]).
  std::vector<std::uint64_t> level_offsets() const {
    std::vector<std::uint64_t> out(std::size_t(params.max_level) + 1, 0);
    for (std::size_t l = 0; l < params.max_level; ++l) out[l + 1] = out[l] + nodes_on(l);
    return out;
  }
  std::uint64_t num_rows() const { return level_offsets().back(); }
};

}  // namespace lancet::index::hnsw
