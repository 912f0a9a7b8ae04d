// Searching an HNSW graph (graph.hpp) as Lance does: greedy descent from the entry
// point through the upper levels, then a beam of width ef on level 0. Distances come
// from a callable dist(node) -> float (the query against the partition's storage),
// so one search serves flat, SQ and PQ storage alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "lancet/index/hnsw/graph.hpp"

namespace lancet::index::hnsw {

struct scored {
  float distance = 0;
  std::uint32_t id = 0;
  friend bool operator<(const scored& a, const scored& b) noexcept {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  }
  friend bool operator>(const scored& a, const scored& b) noexcept { return b < a; }
};

// Marks visited nodes; reset is O(touched), so one instance serves many searches.
class visited_set {
 public:
  void reset(std::size_t n) {
    if (mark_.size() < n) mark_.resize(n, 0);
    if (++epoch_ == 0) {
      std::fill(mark_.begin(), mark_.end(), 0);
      epoch_ = 1;
    }
  }
  bool insert(std::uint32_t i) {
    const bool fresh = mark_[i] != epoch_;  // no branch: the builder's inner loop
    mark_[i] = epoch_;
    return fresh;
  }

 private:
  std::vector<std::uint32_t> mark_;
  std::uint32_t epoch_ = 0;
};

// The neighbour ids of one list, iterated in place (no copy).
struct edge_ids {
  const edge* b;
  const edge* e;
  struct it {
    const edge* p;
    std::uint32_t operator*() const noexcept { return p->id; }
    it& operator++() noexcept { return ++p, *this; }
    bool operator!=(const it& o) const noexcept { return p != o.p; }
  };
  it begin() const noexcept { return {b}; }
  it end() const noexcept { return {e}; }
};

// neighbors(node, level) over g's lists (empty above a node's top level). The lists
// must not change while a search uses it.
inline auto level_neighbors(const graph& g) {
  return [&g](std::uint32_t n, std::size_t level) {
    const auto& l = g.levels[n];
    if (level >= l.size()) return edge_ids{nullptr, nullptr};
    const auto& v = l[level];
    return edge_ids{v.data(), v.data() + v.size()};
  };
}

// neighbors(node, level) yields neighbour ids, for any adjacency representation.
template <class Neighbors, class Dist>
inline scored greedy_search(const Neighbors& neighbors, std::size_t level, scored ep, const Dist& dist) {
  for (bool moved = true; moved;) {
    moved = false;
    for (const std::uint32_t n : neighbors(ep.id, level)) {
      const scored c{dist(n), n};
      if (c < ep) ep = c, moved = true;
    }
  }
  return ep;
}

// Prefetch hook of beam_search: none.
struct no_prefetch {
  void operator()(std::uint32_t) const noexcept {}
};

// The ef nearest nodes reachable from ep on `level`, nearest first. Nodes `keep`
// rejects are walked through but not returned (Lance's prefilter bitset). A
// candidate's unvisited neighbours are gathered first, prefetch(node) is called on
// each, then their distances are measured back to back (the rows' loads overlap
// instead of each distance waiting on its own cache misses).
// The result goes to `out` (its storage reused: the builder searches once per node and
// level).
template <class Neighbors, class Dist, class Keep, class Prefetch = no_prefetch>
inline void beam_search_into(std::vector<scored>& out, const Neighbors& neighbors, std::size_t level, const scored& ep,
                             std::size_t ef, const Dist& dist, visited_set& visited, std::size_t num_nodes,
                             const Keep& keep, const Prefetch& prefetch = {}) {
  visited.reset(num_nodes);
  // Heap storage reused across calls on this thread (no allocation per search).
  thread_local std::vector<scored> candidates, results;  // min-heap; max-heap (farthest on top)
  thread_local std::vector<std::uint32_t> fresh;
  candidates.clear();
  results.clear();
  const auto nearer_first = std::greater<scored>{};
  const auto push_candidate = [&](const scored& x) {
    candidates.push_back(x);
    std::push_heap(candidates.begin(), candidates.end(), nearer_first);
  };
  const auto push_result = [&](const scored& x) {
    results.push_back(x);
    std::push_heap(results.begin(), results.end());
    if (results.size() > ef) {
      std::pop_heap(results.begin(), results.end());
      results.pop_back();
    }
  };
  visited.insert(ep.id);
  push_candidate(ep);
  if (keep(ep.id)) push_result(ep);
  while (!candidates.empty()) {
    const scored c = candidates.front();
    std::pop_heap(candidates.begin(), candidates.end(), nearer_first);
    candidates.pop_back();
    if (results.size() >= ef && results.front() < c) break;
    fresh.clear();
    for (const std::uint32_t n : neighbors(c.id, level))
      if (visited.insert(n)) fresh.push_back(n);
    for (const std::uint32_t n : fresh) prefetch(n);
    for (const std::uint32_t n : fresh) {
      const scored s{dist(n), n};
      if (results.size() < ef || s < results.front()) {
        push_candidate(s);
        if (keep(n)) push_result(s);
      }
    }
  }
  std::sort(results.begin(), results.end());
  out.assign(results.begin(), results.end());
}

template <class Neighbors, class Dist, class Keep, class Prefetch = no_prefetch>
inline std::vector<scored> beam_search(const Neighbors& neighbors, std::size_t level, const scored& ep, std::size_t ef,
                                       const Dist& dist, visited_set& visited, std::size_t num_nodes,
                                       const Keep& keep, const Prefetch& prefetch = {}) {
  std::vector<scored> out;
  beam_search_into(out, neighbors, level, ep, ef, dist, visited, num_nodes, keep, prefetch);
  return out;
}

// The ef nearest nodes of g to the query dist() measures (at most ef), nearest
// first; keep(node) == false excludes a node from the result.
template <class Dist, class Keep>
inline std::vector<scored> search(const graph& g, std::size_t ef, const Dist& dist, const Keep& keep,
                                  visited_set& visited) {
  if (g.size() == 0 || ef == 0) return {};
  const auto neighbors = level_neighbors(g);
  scored ep{dist(g.entry_point), g.entry_point};
  for (std::size_t level = g.node_levels(g.entry_point); level-- > 1;) ep = greedy_search(neighbors, level, ep, dist);
  return beam_search(neighbors, 0, ep, ef, dist, visited, g.size(), keep);
}

}  // namespace lancet::index::hnsw
