// Builds one partition's HNSW graph the way Lance 12 does (hnsw/builder.rs):
// - a node lives on levels 0..L with L = min(floor(-ln(U) / ln(m)), max_level - 1),
//   except node 0, which lives on every level and is the entry point: LanceDB's
//   search starts its descent at node 0 whatever the file's entry_point says, so a
//   graph entered anywhere else is walked from a level-0 node without the upper
//   levels' guidance (a recall loss at 128 dimensions);
// - each node is linked on its levels to the ef_construction nearest found by a beam
//   search, kept to 2m neighbours on level 0 and m above by Lance's heuristic
//   (select_neighbors_heuristic: a candidate is kept only when it is nearer to the
//   node than to every neighbour already kept);
// - the new node is appended to a neighbour's list when it is nearer than that
//   list's cutoff (its last entry's distance once the list is full), and the list is
//   pruned the same way when it overflows. As in Lance, a list is sorted nearest first
//   only when it was last pruned: appended entries follow in insertion order (LanceDB
//   0.39's files show exactly this).
// Nodes are inserted in order (Lance inserts in parallel); partitions are built in
// parallel by the caller. dist(a, b) is the storage's distance between two nodes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "lancet/index/hnsw/graph.hpp"
#include "lancet/index/hnsw/search.hpp"

namespace lancet::index::hnsw {

// Lance's level draw: how many levels above 0 a node lives on.
inline std::size_t draw_level(std::mt19937_64& rng, const build_params& p) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double x = u(rng);
  if (x <= 0) x = std::numeric_limits<double>::min();
  const double ml = 1.0 / std::log(double(p.m));
  return std::min<std::size_t>(std::size_t(-std::log(x) * ml), std::size_t(p.max_level) - 1);
}

namespace builder_detail {

// Lance's select_neighbors_heuristic: candidates sorted nearest first, each kept when
// nearer to the node than to every one kept before it (no refill up to k).
template <class Dist>
inline std::vector<edge> select_heuristic(std::vector<edge> sorted, std::size_t k, const Dist& dist) {
  if (sorted.size() <= k) return sorted;
  std::stable_sort(sorted.begin(), sorted.end(), [](const edge& a, const edge& b) { return a.distance < b.distance; });
  std::vector<edge> out;
  out.reserve(k);
  for (const auto& u : sorted) {
    if (out.size() >= k) break;
    bool ok = true;
    for (const auto& v : out)
      if (!(u.distance < dist(u.id, v.id))) {
        ok = false;
        break;
      }
    if (ok) out.push_back(u);
  }
  return out;
}


}  // namespace builder_detail

// The graph over n nodes; dist(a, b) -> float.
template <class Dist>
inline graph build(std::size_t n, const build_params& p, const Dist& dist) {
  p.validate("HNSW build");
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw invalid_input_error("HNSW build: " + std::to_string(n) + " nodes exceed 32-bit node ids");
  graph g;
  g.params = p;
  g.levels.resize(n);
  if (n == 0) return g;
  std::mt19937_64 rng(p.seed);
  const std::size_t top = std::size_t(p.max_level) - 1;
  g.entry_point = 0;
  g.levels[0].resize(top + 1);
  for (std::size_t i = 1; i < n; ++i) g.levels[i].resize(draw_level(rng, p) + 1);
  // Lists change only after a node's searches, never during one.
  const auto neighbors = level_neighbors(g);
  const auto all = [](std::uint32_t) { return true; };
  visited_set visited;
  const auto prune = [&](std::uint32_t node, std::size_t level) {
    auto& l = g.levels[node][level];
    const std::size_t m_max = p.max_neighbors(level);
    if (l.size() > m_max) l = builder_detail::select_heuristic(l, m_max, dist);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto node = std::uint32_t(i);
    if (node == g.entry_point) continue;
    const std::size_t target = g.levels[node].size() - 1;
    const auto from_node = [&](std::uint32_t o) { return dist(node, o); };
    scored ep{from_node(g.entry_point), g.entry_point};
    for (std::size_t level = top; level > target; --level) ep = greedy_search(neighbors, level, ep, from_node);
    for (std::size_t level = target + 1; level-- > 0;) {
      const auto found = beam_search(neighbors, level, ep, p.ef_construction, from_node, visited, n, all);
      auto& mine = g.levels[node][level];
      mine.clear();
      for (const auto& s : found)
        if (s.id != node) mine.push_back({s.id, s.distance});
      prune(node, level);
      if (!found.empty()) ep = found.front();
    }
    for (std::size_t level = 0; level <= target; ++level) {
      const std::size_t m_max = p.max_neighbors(level);
      for (const auto& e : g.levels[node][level]) {
        auto& theirs = g.levels[e.id][level];
        const float cutoff = theirs.size() < m_max ? std::numeric_limits<float>::infinity() : theirs.back().distance;
        if (e.distance < cutoff) {
          theirs.push_back({node, e.distance});
          prune(e.id, level);
        }
      }
    }
  }
  return g;
}

}  // namespace lancet::index::hnsw
