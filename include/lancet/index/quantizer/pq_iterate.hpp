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
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans_params.hpp"
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

// The k smallest (distance, row) pairs offered, the lower row winning a tie.
class nearest_rows {
 public:
  void offer(double dist, std::uint32_t row) {
    if (n_ == iterate_check_k && !(dist < d_[n_ - 1])) return;
    std::size_t i = n_ < iterate_check_k ? n_++ : n_ - 1;
    for (; i > 0 && dist < d_[i - 1]; --i) {
      d_[i] = d_[i - 1];
      r_[i] = r_[i - 1];
    }
    d_[i] = dist;
    r_[i] = row;
  }
  std::size_t overlap(const nearest_rows& o) const {
    std::size_t h = 0;
    for (std::size_t i = 0; i < n_; ++i) h += std::count(o.r_.begin(), o.r_.begin() + o.n_, r_[i]) > 0;
    return h;
  }

 private:
  std::size_t n_ = 0;
  std::array<double, iterate_check_k> d_{};
  std::array<std::uint32_t, iterate_check_k> r_{};
};

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

  // The exact neighbours of each query among the checked rows.
  std::vector<nearest_rows> truth(q);
  const distance_type exact = dot ? distance_type::dot : distance_type::l2;
  parallel_for(pool, blocks, [&](std::size_t b) {
    std::vector<simd::distance_t<T>> dist(p);
    for (std::size_t qi = b * block; qi < std::min(q, (b + 1) * block); ++qi) {
      simd::distances_to_many(exact, row(qpos[qi]), base, p, d, dist.data());
      for (std::size_t r = 0; r < p; ++r)
        if (r != qpos[qi]) truth[qi].offer(static_cast<double>(dist[r]), static_cast<std::uint32_t>(r));
    }
  });
  // Per candidate, each query's hits.
  std::vector<std::vector<std::uint8_t>> hits(cands.size(), std::vector<std::uint8_t>(q));
  const std::size_t cb = last.code_bytes();
  std::vector<std::uint8_t> packed(p * cb), transposed(p * cb);
  for (std::size_t c = 0; c < cands.size(); ++c) {
    const model<T>& pq = cands[c];
    encode_rows<W>(pq, p, packed.data(), pool, [&](std::size_t r, W* out) {
      for (std::size_t t = 0; t < d; ++t) out[t] = quantizer::to_work<W>(row(r)[t]);
    });
    for (std::size_t r = 0; r < p; ++r)
      for (std::size_t b = 0; b < cb; ++b) transposed[b * p + r] = packed[r * cb + b];
    // The search's own tables and scan, so the check ranks as a search will.
    parallel_for(pool, blocks, [&](std::size_t b) {
      std::vector<float> dist(p);
      for (std::size_t qi = b * block; qi < std::min(q, (b + 1) * block); ++qi) {
        const distance_table table(pq, row(qpos[qi]));
        table.scan(transposed.data(), p, dist.data());
        nearest_rows top;
        for (std::size_t r = 0; r < p; ++r)
          if (r != qpos[qi]) top.offer(dist[r], static_cast<std::uint32_t>(r));
        hits[c][qi] = static_cast<std::uint8_t>(top.overlap(truth[qi]));
      }
    });
  }

  // The earlier iterate with the largest clear gain over the runs' end.
  std::size_t pick = cands.size() - 1;
  double best_gain = 0;
  for (std::size_t c = 0; c + 1 < cands.size(); ++c) {
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
