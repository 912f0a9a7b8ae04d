// Which iterate of a PQ codebook's k-means runs to keep (pq::params::choose_iterate).
//
// Lance keeps the codebook where each sub-vector's k-means run ends. Converged code
// words minimise the squared error over the training rows, which is not what a
// search needs: it ranks a query's neighbours, and on data whose neighbours sit in
// dense regions the converged code words spread away from them (bench/RESULTS.md,
// "PQ codebooks: the iterate that ranks best"). So training keeps the same runs'
// centroids after a few iteration counts, and this check compares those codebooks
// with the runs' ends the way a search uses them:
//  - P consecutive rows of the training sample (at most 16,384, from an offset drawn
//    with the seed; the sample is itself a random draw) are coded with each
//    candidate codebook, in place (the check copies no rows);
//  - Q of them (at most 500) are queries: each ranks the other P - 1 rows by its
//    asymmetric distance (exact query, coded rows; l2 or dot, the codebook's tables)
//    and counts how many of its exact 10 nearest among them are in that top 10;
//  - an earlier iterate replaces the runs' ends only when its mean gain per query
//    is positive and at least 3 standard errors (of the paired per-query gains), the
//    largest such gain winning. Where the converged codebook ranks as well, Lance's
//    codebook stays.
// Samples of fewer than 1,024 rows are not checked (too few neighbours to rank).
// Cost: P x Q exact distances once, and per candidate P rows coded and P x Q
// distance-table sums: 0.3 s on 2 cores for 128-dimensional 8-bit codes (16 x 8), the
// training itself about 1 s.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans_params.hpp"
#include "lancet/index/neighbors.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq_scan.hpp"
#include "lancet/index/quantizer/pq_train.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::pq::detail {

inline constexpr std::size_t iterate_check_rows = 16384;
inline constexpr std::size_t iterate_check_queries = 500;
inline constexpr std::size_t iterate_check_min_rows = 1024;
inline constexpr std::size_t iterate_check_k = 10;

// The iteration counts whose centroids training keeps besides the runs' ends.
inline std::vector<std::uint32_t> iterate_candidates(std::uint32_t max_iters, std::size_t sample_rows) {
  std::vector<std::uint32_t> at;
  if (sample_rows < iterate_check_min_rows) return at;
  for (const std::uint32_t it : {1u, 3u, 10u})
    if (it < max_iters) at.push_back(it);
  return at;
}

// How many of `truth` (row ids, ascending) the collected neighbours hold.
inline std::uint8_t hits_of(const topk& top, const std::vector<std::uint64_t>& truth) {
  std::uint8_t h = 0;
  for (const neighbor& nb : top.sorted()) h += std::binary_search(truth.begin(), truth.end(), nb.row_id);
  return h;
}

// Returns the index in `cands` of the codebook to keep; the last is the runs' end.
// `rows` are the n prepared training rows the codebooks were trained on.
template <class W, class T>
std::size_t choose_iterate(const std::vector<model<T>>& cands, const T* rows, std::size_t n, std::uint64_t seed,
                           boost::asio::thread_pool* pool) {
  const model<T>& last = cands.back();
  const std::size_t d = last.dimension;
  const bool dot = last.distance == distance_type::dot;
  index::detail::rng64 rng(quantizer::mix_seed(seed, 0x6c8e9cf570932bd5ull));
  // The checked rows: a window of consecutive sample rows (the sample is a random
  // draw of the column), read where they are; the queries drawn among them.
  const std::size_t p = std::min(n, iterate_check_rows);
  const T* base = rows + static_cast<std::size_t>(rng.below(n - p + 1)) * d;
  const std::vector<std::size_t> qpos = index::detail::sample_indices(p, std::min(p, iterate_check_queries), rng);
  const std::size_t q = qpos.size();
  auto row = [&](std::size_t i) { return base + i * d; };
  constexpr std::size_t block = 16;  // queries per task
  const std::size_t blocks = (q + block - 1) / block;

  // The exact neighbours of each query among the checked rows (row ids, ascending).
  std::vector<std::vector<std::uint64_t>> truth(q);
  const distance_type exact = dot ? distance_type::dot : distance_type::l2;
  parallel_for(pool, blocks, [&](std::size_t b) {
    std::vector<simd::distance_t<T>> dist(p);
    for (std::size_t qi = b * block; qi < std::min(q, (b + 1) * block); ++qi) {
      simd::distances_to_many(exact, row(qpos[qi]), base, p, d, dist.data());
      topk top(iterate_check_k);
      for (std::size_t r = 0; r < p; ++r)
        if (r != qpos[qi]) top.push(static_cast<float>(dist[r]), r);
      for (const neighbor& nb : top.sorted()) truth[qi].push_back(nb.row_id);
      std::sort(truth[qi].begin(), truth[qi].end());
    }
  });
  // Per candidate, each query's hits. A candidate equal to the runs' end (every run
  // stopped before its iteration count) gains nothing and is not scanned.
  std::vector<std::vector<std::uint8_t>> hits(cands.size());
  const std::size_t cb = last.code_bytes();
  std::vector<std::uint8_t> packed(p * cb), transposed(p * cb);
  for (std::size_t c = 0; c < cands.size(); ++c) {
    const model<T>& pq = cands[c];
    if (c + 1 < cands.size() && pq.codebook == last.codebook) continue;
    hits[c].resize(q);
    encode_rows<W>(pq, p, packed.data(), pool, [&](std::size_t r, W* out) {
      for (std::size_t t = 0; t < d; ++t) out[t] = quantizer::to_work<W>(row(r)[t]);
    });
    transpose_codes(packed.data(), p, cb, transposed.data());
    // The search's own tables, scan and collector, so the check ranks as a search will.
    parallel_for(pool, blocks, [&](std::size_t b) {
      std::vector<float> dist(p);
      for (std::size_t qi = b * block; qi < std::min(q, (b + 1) * block); ++qi) {
        const distance_table table(pq, row(qpos[qi]));
        table.scan(transposed.data(), p, dist.data());
        topk top(iterate_check_k);
        for (std::size_t r = 0; r < p; ++r)
          if (r != qpos[qi]) top.push(dist[r], r);
        hits[c][qi] = hits_of(top, truth[qi]);
      }
    });
  }

  // The earlier iterate with the largest clear gain over the runs' end.
  std::size_t pick = cands.size() - 1;
  double best_gain = 0;
  for (std::size_t c = 0; c + 1 < cands.size(); ++c) {
    if (hits[c].empty()) continue;
    double sum = 0, sumsq = 0;
    for (std::size_t qi = 0; qi < q; ++qi) {
      const double g = double(hits[c][qi]) - double(hits.back()[qi]);
      sum += g;
      sumsq += g * g;
    }
    const double mean = sum / double(q);
    const double var = q > 1 ? std::max(0.0, (sumsq - sum * mean) / double(q - 1)) : 0.0;
    if (mean > best_gain && mean >= 3.0 * std::sqrt(var / double(q))) {
      best_gain = mean;
      pick = c;
    }
  }
  return pick;
}

}  // namespace lancet::index::pq::detail
