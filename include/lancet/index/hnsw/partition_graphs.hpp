// HNSW graphs for every partition of an IVF index's storage (auxiliary.idx): each
// partition's rows are decoded to f32 (quantizer_traits::decode_rows; flat: as
// stored; SQ: dequantized; PQ: the codebook entries, i.e. the residual for l2 / cosine) and linked by the distance
// Lance's storage measures between two rows (l2 for quantized cosine, whose vectors
// were normalised before quantizing; 1 - x.y for dot; 1 - cos for flat cosine).
// Partitions are built in parallel on the pool, in windows bounded by a memory budget
// (build_partition_graphs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/core/release_memory.hpp"
#include "lancet/index/hnsw/builder.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index::hnsw {

inline float row_distance(simd::distance_type d, const float* a, const float* b, std::size_t dim) {
  switch (d) {
    case simd::distance_type::l2: return simd::l2(a, b, dim);
    case simd::distance_type::dot: return simd::dot_distance(a, b, dim);
    case simd::distance_type::cosine: return simd::cosine(a, b, dim);
    case simd::distance_type::hamming: break;
  }
  throw unsupported_error("HNSW does not support hamming distance");
}

}  // namespace lancet::index::hnsw

// Internals of the HNSW builder live in the index module's one detail namespace.
namespace lancet::index::detail {

// Prefetches the first cache lines of a row (up to 512 bytes: a 128-d f32 row).
inline void prefetch_row(const void* p, std::size_t bytes) noexcept {
  const auto* c = static_cast<const char*>(p);
  for (std::size_t o = 0; o < std::min<std::size_t>(bytes, 512); o += 64) __builtin_prefetch(c + o);
}

}  // namespace lancet::index::detail

namespace lancet::index::hnsw {

// One partition's graph.
inline graph build_partition(const quantizer_params& q, simd::distance_type distance, const partition_contents& pc,
                             std::size_t dim, const build_params& p) {
  const auto d = graph_distance(q, distance);
  if (const auto scale = graph_code_scale(q, d)) {
    // Measured on the codes (SQ: a quarter of the bytes per distance), no decoded copy.
    const std::uint8_t* codes = pc.codes.data();
    const std::size_t w = code_bytes(q);
    return build(
        pc.size(), p,
        [codes, w, s = *scale](std::uint32_t a, std::uint32_t b) {
          return simd::l2(codes + std::size_t(a) * w, codes + std::size_t(b) * w, w) * s;
        },
        [codes, w](std::uint32_t a) { detail::prefetch_row(codes + std::size_t(a) * w, w); });
  }
  const auto rows = decode_rows(q, pc.codes.data(), pc.size(), dim);
  return build(
      pc.size(), p,
      [&](std::uint32_t a, std::uint32_t b) {
        return row_distance(d, rows.data() + std::size_t(a) * dim, rows.data() + std::size_t(b) * dim, dim);
      },
      [&](std::uint32_t a) { detail::prefetch_row(rows.data() + std::size_t(a) * dim, dim * sizeof(float)); });
}

// What building one partition's graph of `rows` rows holds, in bytes (an estimate from
// above): the rows as read (codes and row ids), their f32 copy unless the graph is
// measured on SQ codes, the builder's flat lists (2m + 1 entries per node on level 0,
// about one more list of m + 1 above), the finished graph (one allocation per node
// and level) and its columns while index.idx takes them (two copies of the lists).
inline std::uint64_t partition_graph_bytes(const quantizer_params& q, simd::distance_type distance, std::size_t rows,
                                           std::size_t dim, const build_params& p) {
  const bool on_codes = graph_code_scale(q, graph_distance(q, distance)).has_value();
  const std::uint64_t list = (std::uint64_t(p.max_neighbors(0)) + 1) * sizeof(edge);
  const std::uint64_t per_row = code_bytes(q) + sizeof(std::uint64_t) + (on_codes ? 0 : dim * sizeof(float)) + 4 * list + 256;
  return std::uint64_t(rows) * per_row;
}

// Builds the graph of every partition of `storage` (a storage_reader) on the pool and
// hands each to add(partition, graph) in partition order. Partitions are built in
// windows whose estimated holdings (partition_graph_bytes) fit memory_budget: the
// whole index at once under a large budget, one partition at a time (however large)
// under a small one; a window's graphs are released once added, and the freed memory
// returned to the system. The graphs do not
// depend on the windows or the thread count (partition p's levels are drawn with
// seed + p).
template <class Storage, class Add>
void build_partition_graphs(const Storage& storage, simd::distance_type distance, std::size_t dim,
                            const build_params& p, boost::asio::thread_pool* pool, std::uint64_t memory_budget,
                            const Add& add) {
  const std::size_t k = storage.num_partitions();
  std::mutex mu;  // the reader is not shared between threads
  for (std::size_t first = 0; first < k;) {
    std::size_t last = first;
    for (std::uint64_t held = 0; last < k; ++last) {
      const auto bytes = partition_graph_bytes(storage.quantizer(), distance, storage.ivf().lengths[last], dim, p);
      if (last > first && held + bytes > memory_budget) break;
      held += bytes;
    }
    std::vector<graph> window(last - first);
    // Largest partitions first: the threads then finish together (a large one started
    // last would run alone).
    std::vector<std::size_t> order(window.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return storage.ivf().lengths[first + a] > storage.ivf().lengths[first + b];
    });
    parallel_for(pool, window.size(), [&](std::size_t task) {
      const std::size_t i = order[task];
      const std::size_t part = first + i;
      partition_contents pc;
      {
        std::lock_guard<std::mutex> lock(mu);
        pc = storage.read_partition(part);
      }
      build_params pp = p;
      pp.seed = p.seed + part;
      window[i] = build_partition(storage.quantizer(), distance, pc, dim, pp);
    });
    for (std::size_t i = 0; i < window.size(); ++i) {
      add(first + i, window[i]);
      window[i] = graph{};
    }
    // The window's graphs, builders' lists and decoded rows are freed: their pages go
    // back to the system, so the next window's peak is its own (glibc would keep them
    // resident, above the budget).
    release_free_memory();
    first = last;
  }
}

}  // namespace lancet::index::hnsw
