// The order of a 4-bit PQ partition's rows in auxiliary.idx: nearest to the
// partition's centroid first.
//
// Why: Lance 12's 4-bit PQ scan (lance-index `compute_pq_distance_4bit`) gives the
// first 200 rows of each partition, in stored order, their exact distance; every
// later row gets a saturating u8 sum of quantized table entries. With dot tables and
// many sub-vectors nearly all of those sums saturate, so LanceDB in effect ranks only
// the first rows of each partition it probes. Rows near the centroid are the likeliest
// neighbours of a query that probes the partition, so they go first (bench/RESULTS.md,
// "4-bit PQ partitions stored nearest-first"). Lancet's own searcher computes every
// row's distance exactly and does not depend on the order.
//
// The distance is the code's: |reconstructed residual|^2 for l2 and cosine (PQ of
// residuals), |reconstructed vector - centroid|^2 for dot (PQ of the vectors). Equal
// distances keep the given order, so the order is a function of the rows' codes and
// the order they came in (a partition written again keeps its order).
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
#include "lancet/index/quantizer_storage.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::pq {

// Where row i of a partition of n rows (row-major codes of q.code_bytes() bytes each)
// goes: result[j] is the row stored j-th. Empty when the rows keep their order (not
// 4-bit PQ, fewer than two rows). `centroid` (the partition's, q.dimension values) is
// needed for dot only.
inline std::vector<std::uint32_t> scan_order(const pq_params& q, simd::distance_type distance,
                                             std::span<const std::uint8_t> codes, std::size_t n,
                                             std::span<const double> centroid) {
  if (q.num_bits != 4 || n < 2) return {};
  const std::size_t m = q.num_sub_vectors, sd = q.dimension / m, w = q.code_bytes();
  if (codes.size() != n * w)
    throw invalid_input_error("PQ row order: " + std::to_string(codes.size()) + " code bytes for " +
                              std::to_string(n) + " rows of " + std::to_string(w));
  const bool residual = distance != simd::distance_type::dot;
  if (!residual && centroid.size() != q.dimension)
    throw invalid_input_error("PQ row order: a dot index needs the partition's centroid (" +
                              std::to_string(q.dimension) + " values, got " + std::to_string(centroid.size()) + ")");
  // table[s * 16 + c]: the squared distance sub-vector s's centroid c adds.
  std::vector<double> table(m * 16);
  for (std::size_t s = 0; s < m; ++s)
    for (std::size_t c = 0; c < 16; ++c) {
      double sum = 0;
      for (std::size_t i = 0; i < sd; ++i) {
        const double v = q.codebook.at(s * 16 + c, i) - (residual ? 0.0 : centroid[s * sd + i]);
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
