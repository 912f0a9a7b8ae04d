// What a vector search takes and returns, shared by every searcher (ivf_searcher.hpp's
// ivf_searcher, vector_index.hpp's over segments): neighbor and its order (closer),
// the prefilter (row_filter), the k-nearest collector (topk) and search_params.
// Exact distances and the ground truth (exact_distance, brute_force) are in
// brute_force.hpp, running a batch of queries on a pool in query_batch.hpp: both need
// the SIMD kernels or the thread pool, which declaring a search does not.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/dataset/row_set.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

using simd::distance_type;

struct neighbor {
  std::uint64_t row_id = 0;
  float distance = 0;
  friend bool operator==(const neighbor&, const neighbor&) = default;
};

// Search order: smaller distance first, then lower row id.
inline bool closer(const neighbor& a, const neighbor& b) noexcept {
  return a.distance < b.distance || (a.distance == b.distance && a.row_id < b.row_id);
}

// The rows a search may return: an allow-list of row ids, a set of them, or a predicate.
class row_filter {
 public:
  // Only the rows of a set (shared, not copied: a dataset's live rows, a prefilter's).
  static row_filter in(std::shared_ptr<const dataset::row_set> rows) {
    if (!rows) throw invalid_input_error("row_filter: the row set is null");
    row_filter f;
    f.set_ = std::move(rows);
    return f;
  }
  // Only these row ids (any order, duplicates allowed).
  static row_filter allow(std::vector<std::uint64_t> ids) {
    row_filter f;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    f.ids_ = std::move(ids);
    return f;
  }
  // Rows for which pred(row_id) is true.
  static row_filter where(std::function<bool(std::uint64_t)> pred) {
    if (!pred) throw invalid_input_error("row_filter: the predicate is empty");
    row_filter f;
    f.pred_ = std::move(pred);
    return f;
  }

  bool contains(std::uint64_t id) const {
    if (set_) return set_->contains(id);
    if (pred_) return pred_(id);
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }
  // The allow-list (empty for a set or a predicate filter).
  const std::vector<std::uint64_t>& ids() const noexcept { return ids_; }
  // How many rows pass, when the filter knows (a set, an allow-list).
  std::optional<std::size_t> size() const noexcept {
    if (set_) return set_->size();
    if (pred_) return std::nullopt;
    return ids_.size();
  }
  // Every row that passes, ascending (nullopt for a predicate).
  std::optional<std::vector<std::uint64_t>> rows() const {
    if (set_) return set_->to_vector();
    if (pred_) return std::nullopt;
    return ids_;
  }

 private:
  row_filter() = default;
  std::vector<std::uint64_t> ids_;
  std::shared_ptr<const dataset::row_set> set_;
  std::function<bool(std::uint64_t)> pred_;
};

// `closer` as a function object, so that the heap operations inline it.
struct closer_fn {
  bool operator()(const neighbor& a, const neighbor& b) const noexcept { return closer(a, b); }
};

// The k nearest (distance, row id) pairs seen so far; NaN distances are ignored.
class topk {
 public:
  explicit topk(std::size_t k) : k_(k) { heap_.reserve(std::min<std::size_t>(k, 4096)); }

  std::size_t k() const noexcept { return k_; }
  std::size_t size() const noexcept { return heap_.size(); }
  bool full() const noexcept { return heap_.size() >= k_; }
  // The current k-th neighbour (the one a newcomer must be closer than) once full.
  const neighbor& worst() const { return heap_.front(); }

  void push(float distance, std::uint64_t row_id) {
    if (k_ == 0 || std::isnan(distance)) return;
    const neighbor n{row_id, distance};
    if (heap_.size() < k_) {
      heap_.push_back(n);
      std::push_heap(heap_.begin(), heap_.end(), closer_fn{});
    } else if (closer(n, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), closer_fn{});
      heap_.back() = n;
      std::push_heap(heap_.begin(), heap_.end(), closer_fn{});
    }
  }

  // Pushes n rows' distances; rows outside the filter (when given) are skipped.
  void push_all(const float* distances, const std::uint64_t* row_ids, std::size_t n, const row_filter* filter) {
    for (std::size_t i = 0; i < n; ++i) {
      const float d = distances[i];
      if (!(d <= (full() ? worst().distance : std::numeric_limits<float>::infinity()))) continue;
      if (filter && !filter->contains(row_ids[i])) continue;
      push(d, row_ids[i]);
    }
  }

  void merge(const topk& other) {
    for (const auto& n : other.heap_) push(n.distance, n.row_id);
  }

  // The neighbours, nearest first.
  std::vector<neighbor> sorted() const {
    std::vector<neighbor> out(heap_);
    std::sort(out.begin(), out.end(), closer_fn{});
    return out;
  }

 private:
  std::size_t k_;
  std::vector<neighbor> heap_;  // max-heap under closer: the front is the worst
};

// Writes the original vectors of ids.size() rows into out (ids.size() x dimension
// values), NaN for a row it cannot find (e.g. deleted), which is then dropped.
using vector_fetch = std::function<void(std::span<const std::uint64_t> ids, double* out)>;

struct search_params {
  std::size_t k = 10;
  // Partitions probed, nearest first (clamped to the number of partitions): nprobes
  // first (Lance's minimum_nprobes); then, when maximum_nprobes allows more and fewer
  // than `found_target` rows were found, one more partition at a time until that many
  // are or maximum_nprobes were probed (Lance's late search). maximum_nprobes: nullopt
  // = nprobes (a fixed count, LanceDB's nprobes(n)); 0 = every partition. With a
  // maximum above nprobes, nprobes is first raised as Lance 12 raises it (its probe
  // policies: search/ivf_searcher_impl.hpp, initial_probes).
  std::size_t nprobes = 20;
  std::optional<std::size_t> maximum_nprobes;
  // The late search's goal: 0 = k, or the filter's row count when it is smaller.
  std::size_t found_target = 0;
  // Only distances in [distance_lower, distance_upper) are returned (each bound
  // optional), checked on the index's distances and again after refine.
  std::optional<float> distance_lower;
  std::optional<float> distance_upper;
  // When the late search may run and the filter keeps no more than k rows, rows of the
  // filter the first partitions did not return are added at distance +inf instead
  // (Lance's shortcut; they pass any distance range). A search over several index
  // segments does this once, over all of them.
  bool add_unfound_rows = true;
  // false: only the first partitions (nprobes after early pruning), no late search (a
  // search over several segments runs the late search after counting them all).
  bool late_search = true;
  // Return the k x refine_factor candidates unrefined (index distances): a search over
  // several segments refines once, over the best of all of them (as Lance).
  bool defer_refine = false;

  bool in_range(float d) const noexcept {
    return (!distance_lower || d >= *distance_lower) && (!distance_upper || d < *distance_upper);
  }
  std::size_t refine_factor = 0;   // > 0: re-rank k * refine_factor candidates exactly
  std::optional<std::size_t> ef;   // IVF_HNSW_*: the beam width (Lance's ef)
  const row_filter* filter = nullptr;
  vector_fetch fetch;              // original vectors, for refine
  // search(): one query's partitions are spread over the pool; search_many(): the
  // queries are (each one on one thread).
  boost::asio::thread_pool* pool = nullptr;
  // search() with a pool splits one query's partitions across its threads only when
  // the probed partitions hold at least this many code bytes (rows x bytes per row);
  // smaller queries run on the calling thread. See ivf_searcher::split_pays.
  std::size_t split_min_bytes = default_split_min_bytes;

  static constexpr std::size_t default_split_min_bytes = std::size_t(1) << 20;
};

}  // namespace lancet::index
