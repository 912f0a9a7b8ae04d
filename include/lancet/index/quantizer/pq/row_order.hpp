// The order of a 4-bit l2 / cosine PQ partition's rows in auxiliary.idx: nearest to
// the partition's centroid first.
//
// Why: Lance 12's 4-bit PQ scan (lance-index `compute_pq_distance_4bit`) gives the
// first 200 rows of each partition, in stored order, their exact distance; the largest
// of those sets the range of the u8-quantized distance table, and every later row gets
// a saturating u8 sum of its quantized entries. With many sub-vectors most of those
// sums saturate, so LanceDB in effect ranks the first rows of each partition it
// probes. For l2 (and cosine, l2 over normalised vectors) the rows near the centroid
// are the likeliest neighbours of a query that probes the partition: stored first,
// LanceDB's recall over the index rises (128 dimensions, 64 sub-vectors: +0.04;
// bench/RESULTS.md, "4-bit l2 / cosine PQ partitions stored nearest to the centroid
// first"). Not for dot: there the
// best rows lie far from the centroid, and nearest-first halved LanceDB's recall, so
// dot partitions keep the order they were given. Lancet's own searcher computes every
// row's distance exactly and does not depend on the order.
//
// The distance is the code's: |reconstructed residual|^2 (l2 and cosine PQ encode the
// residual to the centroid). Equal distances keep the given order, so the order is a
// function of the rows' codes and the order they came in (a partition written again
// keeps its order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::pq {

// Whether partitions of this quantizer and distance are stored nearest-first.
inline bool ordered_nearest_first(const pq_params& q, simd::distance_type distance) noexcept {
  return q.num_bits == 4 && (distance == simd::distance_type::l2 || distance == simd::distance_type::cosine);
}

// Where the rows of a partition of n rows (row-major codes of q.code_bytes() bytes
// each) go: result[j] is the row stored j-th. Empty when the rows keep their order
// (not ordered_nearest_first, fewer than two rows).
inline std::vector<std::uint32_t> scan_order(const pq_params& q, simd::distance_type distance,
                                             std::span<const std::uint8_t> codes, std::size_t n) {
  if (!ordered_nearest_first(q, distance) || n < 2) return {};
  const std::size_t m = q.num_sub_vectors, sd = q.dimension / m, w = q.code_bytes();
  if (codes.size() != n * w)
    throw invalid_input_error("PQ row order: " + std::to_string(codes.size()) + " code bytes for " +
                              std::to_string(n) + " rows of " + std::to_string(w));
  // table[s * 16 + c]: |centroid c of sub-vector s|^2.
  std::vector<double> table(m * 16);
  for (std::size_t s = 0; s < m; ++s)
    for (std::size_t c = 0; c < 16; ++c) {
      double sum = 0;
      for (std::size_t i = 0; i < sd; ++i) {
        const double v = q.codebook.at(s * 16 + c, i);
        sum += v * v;
      }
      table[s * 16 + c] = sum;
    }
  std::vector<double> key(n);
  for (std::size_t r = 0; r < n; ++r) {
    const std::uint8_t* row = codes.data() + r * w;
    double sum = 0;
    for (std::size_t s = 0; s < m; ++s) sum += table[s * 16 + code_of(row, 4, s)];
    key[r] = sum;
  }
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), std::uint32_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key[a] < key[b]; });
  return order;
}

}  // namespace lancet::index::pq
