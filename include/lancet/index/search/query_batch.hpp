// Running a batch of queries on a thread pool: each query on one thread, the pool's
// threads claiming chunks of queries (ivf_searcher::search_many and the segmented
// searcher's).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/index/search/neighbors.hpp"

namespace lancet::index {

namespace detail {

// Jobs posted for a batch of queries (more than any pool this library is given has threads;
// a job that starts after the work is claimed returns at once).
inline constexpr std::size_t max_batch_jobs = 64;

// Runs fn(i) for every query i in [0, n) on the pool (on this thread without one):
// a few jobs claim contiguous chunks of queries from a counter until none are left,
// so a batch posts a few jobs, not one per query, and each thread's per-thread
// scratch (scan buffers) stays warm across its chunk.
template <class F>
inline void for_each_query(boost::asio::thread_pool* pool, std::size_t n, F&& fn) {
  if (pool == nullptr || n < 2) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const std::size_t chunk = std::clamp<std::size_t>(n / 32, 1, 16);  // >= 32 chunks: threads end together
  const std::size_t chunks = (n + chunk - 1) / chunk;
  std::atomic<std::size_t> next{0};
  parallel_for(pool, std::min<std::size_t>(chunks, max_batch_jobs), [&](std::size_t) {
    for (std::size_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
      for (std::size_t i = c * chunk, e = std::min(n, i + chunk); i < e; ++i) fn(i);
  });
}

// search_many of a searcher (ivf_searcher, or vector_index.hpp's over several
// segments): each query searched on one thread through for_each_query, none split.
template <class Searcher, class Q, class Params>
inline std::vector<std::vector<neighbor>> search_each(const Searcher& s, const Q* queries, std::size_t nq,
                                                      std::size_t dim, const Params& sp) {
  std::vector<std::vector<neighbor>> out(nq);
  Params one = sp;
  one.pool = nullptr;
  for_each_query(sp.pool, nq, [&](std::size_t i) { out[i] = s.search(queries + i * dim, dim, one); });
  return out;
}

}  // namespace detail

}  // namespace lancet::index
