// Builds one partition's HNSW graph the way Lance 12 does (hnsw/builder.rs):
// - a node lives on levels 0..L with L = min(floor(-ln(U) / ln(m)), max_level - 1);
//   the entry point is the first node with the highest L (LanceDB 0.39's files: e.g.
//   node 364 on 3 levels; the 1.0-beta source put node 0 on every level instead);
// - each node is linked on its levels to the ef_construction nearest found by a beam
//   search, kept to 2m neighbours on level 0 and m above by Lance's heuristic
//   (select_neighbors_heuristic: a candidate is kept only when it is nearer to the
//   node than to every neighbour already kept), refilled to m with the nearest
//   rejected candidates (what LanceDB 0.39's graphs show, see select_heuristic);
// - the new node is appended to a neighbour's list when it is nearer than that
//   list's cutoff (its last entry's distance once the list is full), and the list is
//   pruned the same way when it overflows. As in Lance, a list is sorted nearest first
//   only when it was last pruned: appended entries follow in insertion order (LanceDB
//   0.39's files show exactly this).
// Nodes are inserted in order (Lance inserts in parallel); partitions are built in
// parallel by the caller. dist(a, b) is the storage's distance between two nodes.
// While building, the lists live in one flat array (room for one entry over the cap,
// pruned back at once) and every scratch buffer is reused: no allocation per
// insertion. A list that overflows again is pruned with the verdicts of its last
// pruning (select_heuristic), which spares most pair distances of the reverse links.
// The result is the same graph for the same seed whatever the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

}  // namespace lancet::index::hnsw

// Internals of the HNSW builder live in the index module's one detail namespace.
namespace lancet::index::detail {

// A candidate of select_heuristic with what the heuristic made of it when it last
// pruned the list it comes from: kept, rejected (then refilled), or not judged (appended
// since, or a fresh search result).
enum class verdict : std::uint32_t { kept, rejected, unjudged };
struct judged_edge {
  hnsw::edge e;
  verdict was = verdict::unjudged;
};

// Sorts by distance, keeping the order of equal distances (as std::stable_sort),
// without allocating: the lists are short (2m + 1) or already sorted (beam results).
inline void stable_sort_by_distance(judged_edge* b, std::size_t n) {
  for (std::size_t i = 1; i < n; ++i) {
    const judged_edge x = b[i];
    std::size_t j = i;
    for (; j > 0 && x.e.distance < b[j - 1].e.distance; --j) b[j] = b[j - 1];
    b[j] = x;
  }
}

// What select_heuristic left in out: size entries, the first `kept` kept by the
// heuristic, the rest refilled; `judged` of them carry the heuristic's verdict (none
// when every candidate was kept without judging).
struct selection {
  std::size_t size = 0, kept = 0, judged = 0;
};

// select_heuristic over cand[0, n): candidates sorted nearest first, each kept when
// nearer to the node than to every one kept before it, at most k; then, while fewer
// than min_keep are kept, the nearest rejected ones are added back. The kept ones go
// to out (which must not overlap cand). With n <= k every candidate is kept in its
// given order. LanceDB 0.39's graphs (100k x 128 clustered, 64 partitions) have no
// level-0 list below m and level-1 lists of 19.9 on average (m 20), where the bare
// heuristic of the 1.0-beta source leaves 39% of level-0 lists below m and level-1
// lists at 9: a recall loss of 0.05 at ef 100 (0.924 vs 0.974 of the probed storage's
// neighbours, same storage).
// A list pruned again (it overflowed) keeps the verdicts of its last pruning, which
// spare most of the distances without changing the outcome:
// - a candidate kept last time passed every candidate kept before it then, and those
//   keep their order (they are stored in it, and the sort is stable): it needs
//   comparing only with the kept candidates that were not kept last time;
// - a candidate rejected last time was rejected by a candidate kept then and ordered
//   before it (also on equal distances: the kept ones are stored first); while every
//   candidate kept last time is kept again, that one is too, so it is rejected again;
// - the others are judged in full.
template <class Dist>
inline selection select_heuristic(judged_edge* cand, std::size_t n, std::size_t k, std::size_t min_keep,
                                  const Dist& dist, hnsw::edge* out, std::vector<std::uint32_t>& rejected,
                                  std::vector<std::uint32_t>& newly_kept) {
  if (n <= k) {
    for (std::size_t i = 0; i < n; ++i) out[i] = cand[i].e;
    return {n, 0, 0};
  }
  // The verdicts hold for distances that sort (a NaN one, as cosine gives a zero row,
  // breaks the order they rely on): with a NaN, every candidate is judged in full.
  for (std::size_t i = 0; i < n; ++i)
    if (std::isnan(cand[i].e.distance)) {
      for (std::size_t j = 0; j < n; ++j) cand[j].was = verdict::unjudged;
      break;
    }
  stable_sort_by_distance(cand, n);
  std::size_t kept = 0;
  bool lost = false;     // a candidate kept last time was rejected
  rejected.clear();      // positions in cand, nearest first
  newly_kept.clear();    // positions in out of kept candidates not kept last time
  const auto passes = [&](const hnsw::edge& u, std::size_t j) { return u.distance < dist(u.id, out[j].id); };
  for (std::size_t i = 0; i < n && kept < k; ++i) {
    const hnsw::edge u = cand[i].e;
    const verdict was = cand[i].was;
    bool ok = true;
    if (was == verdict::kept) {
      for (const std::uint32_t j : newly_kept)
        if (!passes(u, j)) {
          ok = false;
          break;
        }
    } else if (was == verdict::rejected && !lost) {
      ok = false;
    } else {
      for (std::size_t j = 0; j < kept; ++j)
        if (!passes(u, j)) {
          ok = false;
          break;
        }
    }
    if (ok) {
      if (was != verdict::kept) newly_kept.push_back(std::uint32_t(kept));
      out[kept++] = u;
    } else {
      lost = lost || was == verdict::kept;
      if (rejected.size() < min_keep) rejected.push_back(std::uint32_t(i));
    }
  }
  std::size_t size = kept;
  for (std::size_t i = 0; i < rejected.size() && size < min_keep; ++i) out[size++] = cand[rejected[i]].e;
  return {size, kept, size};
}

// beam_search (search.hpp) with every node kept, on one sorted array of at most ef
// entries instead of two heaps: the nearest entry not yet expanded is expanded next,
// and a node enters when it beats the farthest entry (which then drops out). As a
// node dropped from beam_search's results can only come back out of its candidate
// heap after every nearer node was expanded, and then ends the search, both expand
// the same nodes in the same (distance, id) order and return the same list. The
// result, nearest first, is left in `found`.
class candidate_pool {
 public:
  template <class Neighbors, class Dist, class Prefetch>
  void search(std::vector<hnsw::scored>& found, const Neighbors& neighbors, std::size_t level, const hnsw::scored& ep,
              std::size_t ef, const Dist& dist, hnsw::visited_set& visited, std::size_t num_nodes, const Prefetch& prefetch) {
    visited.reset(num_nodes);
    visited.insert(ep.id);
    // Expanded nodes are marked by node (this search's epoch), not beside the keys: the
    // keys then move alone.
    if (expanded_.size() < num_nodes) expanded_.resize(num_nodes, 0);
    if (++epoch_ == 0) {
      std::fill(expanded_.begin(), expanded_.end(), 0);
      epoch_ = 1;
    }
    keys_.resize(ef + 1);
    std::size_t size = 1;
    keys_[0] = key(ep);
    for (std::size_t cur = 0; cur < size;) {
      const auto expanding = std::uint32_t(keys_[cur]);
      expanded_[expanding] = epoch_;
      const auto list = neighbors(expanding, level);
      if (fresh_.size() < std::size_t(list.e - list.b)) fresh_.resize(std::size_t(list.e - list.b));
      std::size_t count = 0;
      for (const std::uint32_t n : list) {
        fresh_[count] = n;
        count += visited.insert(n);
      }
      for (std::size_t i = 0; i < count; ++i) prefetch(fresh_[i]);
      // All distances first: independent of each other, they overlap in the CPU.
      if (dists_.size() < count) dists_.resize(fresh_.size()), new_keys_.resize(fresh_.size());
      for (std::size_t i = 0; i < count; ++i) dists_[i] = dist(fresh_[i]);
      // The fresh nodes that would enter, sorted, then merged in from the back in one
      // pass (no search and shift per node): the ef nearest of the old and new entries,
      // as if entered one by one; the nearest unexpanded entry is at the first new
      // one's position or after the one just expanded.
      std::size_t entering = 0;
      const std::uint64_t bar = size >= ef ? keys_[size - 1] : ~std::uint64_t(0);  // keys are below ~0
      for (std::size_t i = 0; i < count; ++i) {  // no branch on the distances
        const std::uint64_t k = key({dists_[i], fresh_[i]});
        new_keys_[entering] = k;
        entering += k < bar;
      }
      for (std::size_t i = 1; i < entering; ++i) {
        const std::uint64_t k = new_keys_[i];
        std::size_t j = i;
        for (; j > 0 && k < new_keys_[j - 1]; --j) new_keys_[j] = new_keys_[j - 1];
        new_keys_[j] = k;
      }
      cur += 1;  // where the nearest unexpanded entry may now be
      if (entering > 0) {
        const std::size_t total = std::min(ef, size + entering);
        std::size_t old_left = size, new_left = entering;
        for (std::size_t drop = size + entering - total; drop > 0; --drop) {  // the farthest drop out
          if (new_left == 0 || (old_left > 0 && keys_[old_left - 1] > new_keys_[new_left - 1])) --old_left;
          else --new_left;
        }
        for (std::size_t w = total; new_left > 0;) {
          --w;
          if (old_left > 0 && keys_[old_left - 1] > new_keys_[new_left - 1]) {
            keys_[w] = keys_[--old_left];
          } else {
            keys_[w] = new_keys_[--new_left];
            cur = std::min(cur, w);
          }
        }
        size = total;
      }
      while (cur < size && expanded_[std::uint32_t(keys_[cur])] == epoch_) ++cur;
    }
    found.resize(size);
    for (std::size_t i = 0; i < size; ++i) found[i] = unkey(keys_[i]);
  }

 private:
  // (distance, id) as one integer of the same order: the float's bits made monotonic
  // (negative distances flipped), -0 taken as +0 as the float comparison does.
  static std::uint64_t key(const hnsw::scored& s) noexcept {
    std::uint32_t b;
    const float d = s.distance + 0.0f;
    std::memcpy(&b, &d, 4);
    b = (b >> 31) ? ~b : (b | 0x80000000u);
    return (std::uint64_t(b) << 32) | s.id;
  }
  static hnsw::scored unkey(std::uint64_t k) noexcept {
    std::uint32_t b = std::uint32_t(k >> 32);
    b = (b >> 31) ? (b & 0x7fffffffu) : ~b;
    float d;
    std::memcpy(&d, &b, 4);
    return {d, std::uint32_t(k)};
  }
  std::vector<std::uint64_t> keys_, new_keys_;
  std::vector<std::uint32_t> expanded_;  // == epoch_: expanded in this search
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> fresh_;
  std::vector<float> dists_;
};

// The neighbour lists of a graph under construction in one array: node n's level-0
// list has room for 2m + 1 entries, each of its upper levels for m + 1 (a list takes
// one entry over its cap and is pruned back at once). Per list, what the heuristic
// judged when it last pruned it (select_heuristic): entries [0, kept) were kept,
// [kept, judged) rejected and refilled, the rest appended since.
class flat_lists {
 public:
  flat_lists(const std::vector<std::uint8_t>& top, const hnsw::build_params& p)
      : cap0_(std::size_t(p.max_neighbors(0)) + 1), capu_(std::size_t(p.max_neighbors(1)) + 1) {
    const std::size_t n = top.size();
    edge_at_.resize(n + 1);
    count_at_.resize(n + 1);
    for (std::size_t i = 0; i < n; ++i) {
      edge_at_[i + 1] = edge_at_[i] + cap0_ + top[i] * capu_;
      count_at_[i + 1] = count_at_[i] + top[i] + 1u;
    }
    edges_.resize(edge_at_[n]);
    counts_.assign(count_at_[n], 0);
    verdicts_.assign(count_at_[n], {});
  }
  hnsw::edge* list(std::uint32_t node, std::size_t level) noexcept {
    return edges_.data() + edge_at_[node] + (level == 0 ? 0 : cap0_ + (level - 1) * capu_);
  }
  const hnsw::edge* list(std::uint32_t node, std::size_t level) const noexcept {
    return edges_.data() + edge_at_[node] + (level == 0 ? 0 : cap0_ + (level - 1) * capu_);
  }
  std::uint32_t& count(std::uint32_t node, std::size_t level) noexcept { return counts_[count_at_[node] + level]; }
  std::uint32_t count(std::uint32_t node, std::size_t level) const noexcept { return counts_[count_at_[node] + level]; }
  std::size_t levels(std::uint32_t node) const noexcept { return count_at_[node + 1] - count_at_[node]; }
  struct verdicts {
    std::uint32_t kept = 0, judged = 0;
  };
  verdicts& verdicts_of(std::uint32_t node, std::size_t level) noexcept { return verdicts_[count_at_[node] + level]; }
  // Sets a list to out's selection (its entries already written in place).
  void set(std::uint32_t node, std::size_t level, const selection& s) noexcept {
    count(node, level) = std::uint32_t(s.size);
    verdicts_of(node, level) = {std::uint32_t(s.kept), std::uint32_t(s.judged)};
  }

 private:
  std::size_t cap0_, capu_;
  std::vector<std::uint64_t> edge_at_;
  std::vector<std::uint32_t> count_at_;
  std::vector<hnsw::edge> edges_;
  std::vector<std::uint32_t> counts_;
  std::vector<verdicts> verdicts_;
};

}  // namespace lancet::index::detail

namespace lancet::index::hnsw {

// The graph over n nodes; dist(a, b) -> float; prefetch(a) hints that node a's data
// is about to be read.
template <class Dist, class Prefetch = no_prefetch>
inline graph build(std::size_t n, const build_params& p, const Dist& dist, const Prefetch& prefetch = {}) {
  p.validate("HNSW build");
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw invalid_input_error("HNSW build: " + std::to_string(n) + " nodes exceed 32-bit node ids");
  graph g;
  g.params = p;
  if (n == 0) return g;
  std::mt19937_64 rng(p.seed);
  std::size_t top = 0;
  std::vector<std::uint8_t> levels_above(n);  // a draw of 53 bits gives at most 53 levels at m 2
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t l = draw_level(rng, p);
    if (l > 255) throw invalid_input_error("HNSW build: a node drew " + std::to_string(l) + " levels (at most 255)");
    levels_above[i] = std::uint8_t(l);
    if (l > top || i == 0) top = l, g.entry_point = std::uint32_t(i);
  }
  detail::flat_lists lists(levels_above, p);
  // Lists change only after a node's searches, never during one.
  const auto neighbors = [&lists](std::uint32_t node, std::size_t level) {
    if (level >= lists.levels(node)) return edge_ids{nullptr, nullptr};
    const edge* b = lists.list(node, level);
    return edge_ids{b, b + lists.count(node, level)};
  };
  detail::candidate_pool pool;
  visited_set visited;
  std::vector<scored> found;
  std::vector<detail::judged_edge> scratch;
  std::vector<std::uint32_t> rejected, newly_kept;
  scratch.reserve(std::max<std::size_t>(p.ef_construction, p.max_neighbors(0)) + 1);
  // Pruned lists are refilled to m on every level (see select_heuristic): LanceDB's
  // level-0 lists never fall below m and its upper-level lists are nearly all full (m).
  const std::size_t keep_at_least = p.m;
  for (std::size_t i = 0; i < n; ++i) {
    const auto node = std::uint32_t(i);
    if (node == g.entry_point) continue;
    const std::size_t target = levels_above[node];
    const auto from_node = [&](std::uint32_t o) { return dist(node, o); };
    scored ep{from_node(g.entry_point), g.entry_point};
    for (std::size_t level = top; level > target; --level) ep = greedy_search(neighbors, level, ep, from_node);
    for (std::size_t level = target + 1; level-- > 0;) {
      pool.search(found, neighbors, level, ep, p.ef_construction, from_node, visited, n, prefetch);
      scratch.clear();
      for (const auto& s : found)
        if (s.id != node) scratch.push_back({{s.id, s.distance}});
      lists.set(node, level,
                detail::select_heuristic(scratch.data(), scratch.size(), p.max_neighbors(level), keep_at_least, dist,
                                         lists.list(node, level), rejected, newly_kept));
      if (!found.empty()) ep = found.front();
    }
    for (std::size_t level = 0; level <= target; ++level) {
      const std::size_t m_max = p.max_neighbors(level);
      const edge* mine = lists.list(node, level);
      const std::size_t count = lists.count(node, level);
      for (std::size_t j = 0; j < count; ++j) {
        const edge e = mine[j];
        edge* theirs = lists.list(e.id, level);
        std::uint32_t& size = lists.count(e.id, level);
        const float cutoff = size < m_max ? std::numeric_limits<float>::infinity() : theirs[size - 1].distance;
        if (!(e.distance < cutoff)) continue;
        theirs[size++] = {node, e.distance};
        if (size > m_max) {
          const auto v = lists.verdicts_of(e.id, level);
          scratch.resize(size);
          for (std::uint32_t x = 0; x < size; ++x)
            scratch[x] = {theirs[x], x < v.kept     ? detail::verdict::kept
                                     : x < v.judged ? detail::verdict::rejected
                                                    : detail::verdict::unjudged};
          lists.set(e.id, level,
                    detail::select_heuristic(scratch.data(), size, m_max, keep_at_least, dist, theirs, rejected,
                                             newly_kept));
        }
      }
    }
  }
  g.levels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto node = std::uint32_t(i);
    g.levels[i].resize(lists.levels(node));
    for (std::size_t l = 0; l < g.levels[i].size(); ++l) {
      const edge* b = lists.list(node, l);
      g.levels[i][l].assign(b, b + lists.count(node, l));
    }
  }
  return g;
}

}  // namespace lancet::index::hnsw
