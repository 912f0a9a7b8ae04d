// Which iterate of a PQ codebook's k-means runs to keep (pq::params::choose_iterate).
//
// Lance keeps the codebook where each sub-vector's k-means run ends. Converged code
// words minimise the squared error over the training rows, which is not what a
// search needs: it ranks a query's neighbours, and on data whose neighbours sit in
// dense regions the converged code words spread away from them (bench/RESULTS.md,
// "PQ codebooks: the iterate that ranks best"). So training keeps the same runs'
// centroids after a few iteration counts, and this check compares those codebooks
// with the runs' ends the way a search uses them:
//  - P consecutive rows of the training sample (at most 65,536, from an offset drawn
//    with the seed; the sample is itself a random draw) are coded with each
//    candidate codebook;
//  - sample rows are queries: each ranks other rows by its asymmetric distance
//    (exact query, coded rows; l2 or dot tables, the search's scan and collector)
//    and counts how many of its exact 10 nearest are in that top 10. Residual rows
//    (l2 / cosine inside an IVF index) rank the rows of their own partition, as a
//    search ranks within each partition it probes: there residual distances are the
//    rows' own. Raw rows (dot, or a plain training) rank every checked row;
//  - queries come in rounds (2,000 of at most 16,384 within partitions; 500 of at
//    most 4,000 otherwise). An earlier iterate replaces the runs' ends only when its
//    mean gain per query is at least 3 standard errors of the paired per-query gains;
//    one whose gain is not positive, or could not reach that by the last round, drops
//    out. The largest clear gain wins; where the converged codebook ranks as well,
//    Lance's codebook stays.
// Samples of fewer than 1,024 rows are not checked (too few neighbours to rank), nor
// residual samples with fewer than 200 rows in partitions of more than 40.
// Cost: per candidate P rows coded; within partitions, per query a partition's exact
// and table distances (bench_ivf's 128-d 16 x 8 build: about 1 CPU s in all); over
// every row, per round of 500 queries a tiled 500 x P product and P table sums per
// query and candidate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans/params.hpp"
#include "lancet/index/search/neighbors.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq/encode.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/index/quantizer/pq/scan.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/tiled.hpp"

namespace lancet::index::detail {

inline constexpr std::size_t iterate_check_rows = 65536;
inline constexpr std::size_t iterate_check_queries = 4000;  // at most, in rounds of
inline constexpr std::size_t iterate_check_round = 500;
inline constexpr std::size_t iterate_check_min_rows = 1024;
// With partitions: queries among rows whose partition holds more than 40 others, at
// most 16,384 in rounds of 2,000, and no check with fewer than 200 such rows.
inline constexpr std::size_t iterate_check_min_partition = 40;
inline constexpr std::size_t iterate_check_partition_queries = 16384;
inline constexpr std::size_t iterate_check_partition_round = 2000;
inline constexpr std::size_t iterate_check_min_queries = 200;
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
inline std::uint8_t count_hits_in_truth(const topk& top, const std::vector<std::uint64_t>& truth) {
  std::uint8_t h = 0;
  for (const neighbor& nb : top.sorted()) h += std::binary_search(truth.begin(), truth.end(), nb.row_id);
  return h;
}

// The collected neighbours' row ids, ascending (count_hits_in_truth looks them up).
inline std::vector<std::uint64_t> sorted_row_ids(const topk& top) {
  std::vector<std::uint64_t> ids;
  for (const neighbor& nb : top.sorted()) ids.push_back(nb.row_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Collects the k nearest of n distances, skipping row `self` (the query's own row).
// Only distances within the current k-th are offered to the collector.
inline void collect_nearest_except(topk& top, const float* dist, std::size_t n, std::size_t first_row,
                                   std::size_t self) {
  float bound = top.full() ? top.worst().distance : HUGE_VALF;
  for (std::size_t r = 0; r < n; ++r)
    if (dist[r] <= bound && first_row + r != self) {
      top.push(dist[r], first_row + r);
      if (top.full()) bound = top.worst().distance;
    }
}

// A candidate's paired gain over the runs' end so far, in hits per query.
struct iterate_gain {
  double mean = 0;
  double z = 0;  // mean / its standard error (infinite when every query gained alike)
};

inline iterate_gain iterate_gain_of(const std::vector<std::uint8_t>& cand, const std::vector<std::uint8_t>& ends,
                                    std::size_t q) {
  double sum = 0, sumsq = 0;
  for (std::size_t qi = 0; qi < q; ++qi) {
    const double g = double(cand[qi]) - double(ends[qi]);
    sum += g;
    sumsq += g * g;
  }
  iterate_gain out;
  out.mean = sum / double(q);
  const double var = q > 1 ? std::max(0.0, (sumsq - sum * out.mean) / double(q - 1)) : 0.0;
  const double se = std::sqrt(var / double(q));
  out.z = se > 0 ? out.mean / se : (out.mean > 0 ? HUGE_VAL : 0.0);
  return out;
}

// Where a candidate stands after q of at most qmax queries: won at 3 standard errors;
// lost when no queries are left, when its gain is not positive, or when it would stay
// under 2 standard errors at qmax queries if its mean held (the standard error
// shrinks as 1 / sqrt(q)).
enum class iterate_verdict { open, won, lost };

inline iterate_verdict iterate_verdict_of(const iterate_gain& g, std::size_t q, std::size_t qmax) {
  if (g.mean > 0 && g.z >= 3.0) return iterate_verdict::won;
  if (q >= qmax || g.mean <= 0 || g.z * std::sqrt(double(qmax) / double(q)) < 2.0) return iterate_verdict::lost;
  return iterate_verdict::open;
}

// The exact k nearest (row ids, ascending) of queries qpos[q0, q1) among the p rows
// at base, each query's own row left out. The queries are packed as the centroids of
// a tiled many-to-many product and the rows streamed through it in chunks, so every
// row is read once per batch of queries.
template <class T>
std::vector<std::vector<std::uint64_t>> exact_neighbors(distance_type type, const T* base, std::size_t p,
                                                        std::size_t d, const std::vector<std::size_t>& qpos,
                                                        std::size_t q0, std::size_t q1,
                                                        boost::asio::thread_pool* pool) {
  using W = simd::work_t<T, T>;
  const std::size_t nq = q1 - q0;
  std::vector<T> qrows(nq * d);
  for (std::size_t j = 0; j < nq; ++j) std::copy_n(base + qpos[q0 + j] * d, d, qrows.data() + j * d);
  const simd::packed_centroids<W> packed(type, qrows.data(), nq, d);
  constexpr std::size_t chunk = 2048;  // rows per task: chunk x nq distances
  const std::size_t chunks = (p + chunk - 1) / chunk;
  std::vector<std::vector<topk>> part(chunks);
  parallel_for(pool, chunks, [&](std::size_t c) {
    const std::size_t r0 = c * chunk, rows = std::min(chunk, p - r0);
    std::vector<W> dist(rows * nq);
    simd::distances_many_to_many(packed, base + r0 * d, rows, dist.data());
    std::vector<float> col(rows);
    part[c].assign(nq, topk(iterate_check_k));
    for (std::size_t j = 0; j < nq; ++j) {
      for (std::size_t r = 0; r < rows; ++r) col[r] = static_cast<float>(dist[r * nq + j]);
      collect_nearest_except(part[c][j], col.data(), rows, r0, qpos[q0 + j]);
    }
  });
  std::vector<std::vector<std::uint64_t>> truth(nq);
  for (std::size_t j = 0; j < nq; ++j) {
    topk top(iterate_check_k);
    for (std::size_t c = 0; c < chunks; ++c) top.merge(part[c][j]);
    truth[j] = sorted_row_ids(top);
  }
  return truth;
}

// The distance tables of many queries against one codebook, the values
// pq::distance_table(pq, query) holds (its l2 or dot entries per sub-vector), from the
// codebook transposed once per sub-vector so each query's entries are computed a
// row of centroids at a time.
template <class W>
class pq_table_maker {
 public:
  template <class T>
  explicit pq_table_maker(const pq::model<T>& pq)
      : m_(pq.num_sub_vectors), k_(pq.num_centroids()), sd_(pq.sub_dimension()), bits_(pq.num_bits),
        dot_(pq.distance == distance_type::dot), cbt_(m_ * sd_ * k_) {
    for (std::size_t s = 0; s < m_; ++s)
      for (std::size_t j = 0; j < k_; ++j)
        for (std::size_t t = 0; t < sd_; ++t)
          cbt_[(s * sd_ + t) * k_ + j] = quantizer::to_work<W>(pq.centroids(s)[j * sd_ + t]);
  }

  template <class Q>
  pq::distance_table make(const Q* query) const {
    std::vector<float> table(m_ * k_);
    std::vector<W> acc(k_);
    for (std::size_t s = 0; s < m_; ++s) {
      std::fill(acc.begin(), acc.end(), dot_ ? W(1) : W(0));
      for (std::size_t t = 0; t < sd_; ++t) {
        const W qv = quantizer::to_work<W>(query[s * sd_ + t]);
        const W* c = cbt_.data() + (s * sd_ + t) * k_;
        if (dot_) {
          for (std::size_t j = 0; j < k_; ++j) acc[j] -= qv * c[j];
        } else {
          for (std::size_t j = 0; j < k_; ++j) acc[j] += (qv - c[j]) * (qv - c[j]);
        }
      }
      for (std::size_t j = 0; j < k_; ++j) table[s * k_ + j] = static_cast<float>(acc[j]);
    }
    return pq::distance_table(m_, bits_, std::move(table), dot_ ? -static_cast<float>(m_ - 1) : 0.0f);
  }

 private:
  std::size_t m_, k_, sd_;
  std::uint32_t bits_;
  bool dot_;
  std::vector<W> cbt_;
};

// Queries in rounds: rank(q0, q1, verdicts) fills hits[c][qi] for the queries of the
// round, for the runs' end (the last candidate) and each candidate still open. After
// each round a candidate's verdict follows its paired gain so far (iterate_verdict_of): a
// clear case costs one round, a small gain gets the queries it needs. The rounds end
// when a candidate has won or none is open; the won candidate with the largest gain
// is returned, else the runs' end. Candidates given as lost are not ranked.
template <class Rank>
std::size_t run_iterate_rounds(std::vector<iterate_verdict> st, std::size_t qmax, std::size_t round,
                               std::vector<std::vector<std::uint8_t>>& hits, Rank&& rank) {
  const std::size_t nc = st.size();
  std::vector<iterate_gain> gain(nc);
  auto undecided = [&] {
    return std::count(st.begin(), st.end() - 1, iterate_verdict::won) == 0 &&
           std::count(st.begin(), st.end() - 1, iterate_verdict::open) > 0;
  };
  for (std::size_t q = 0; q < qmax && undecided();) {
    const std::size_t q1 = std::min(qmax, q + round);
    rank(q, q1, st);
    q = q1;
    for (std::size_t c = 0; c + 1 < nc; ++c) {
      if (st[c] != iterate_verdict::open) continue;
      gain[c] = iterate_gain_of(hits[c], hits.back(), q);
      st[c] = iterate_verdict_of(gain[c], q, qmax);
    }
  }
  std::size_t pick = nc - 1;
  double best_gain = 0;
  for (std::size_t c = 0; c + 1 < nc; ++c)
    if (st[c] == iterate_verdict::won && gain[c].mean > best_gain) {
      best_gain = gain[c].mean;
      pick = c;
    }
  return pick;
}

// Returns the index in `cands` of the codebook to keep; the last is the runs' end.
// `rows` are the n prepared training rows the codebooks were trained on; with
// `partitions` (residual rows' IVF partitions), queries rank the rows of their own
// partition, as a search does within each partition it probes.
template <class W, class T>
std::size_t choose_iterate(const std::vector<pq::model<T>>& cands, const T* rows, std::size_t n,
                           const std::uint32_t* partitions, std::uint64_t seed, boost::asio::thread_pool* pool) {
  const pq::model<T>& last = cands.back();
  const std::size_t d = last.dimension, nc = cands.size();
  rng64 rng(quantizer::mix_seed(seed, 0x6c8e9cf570932bd5ull));
  // The checked rows: a window of consecutive sample rows (the sample is a random
  // draw of the column), read where they are.
  const std::size_t p = std::min(n, iterate_check_rows);
  const std::size_t first = static_cast<std::size_t>(rng.below(n - p + 1));
  const T* base = rows + first * d;
  auto row = [&](std::size_t i) { return base + i * d; };

  // Every candidate's codes of the checked rows. A candidate equal to the runs' end
  // (every run stopped before its iteration count) gains nothing and is not checked.
  std::vector<iterate_verdict> st(nc, iterate_verdict::open);
  std::vector<std::vector<std::uint8_t>> codes(nc);
  std::vector<std::optional<pq_table_maker<W>>> tables(nc);
  const std::size_t cb = last.code_bytes();
  for (std::size_t c = 0; c < nc; ++c) {
    if (c + 1 < nc && cands[c].codebook == last.codebook) {
      st[c] = iterate_verdict::lost;
      continue;
    }
    codes[c].resize(p * cb);
    pq_encode_rows<W>(cands[c], p, codes[c].data(), pool, [&](std::size_t r, W* out) {
      for (std::size_t t = 0; t < d; ++t) out[t] = quantizer::to_work<W>(base[r * d + t]);
    });
    tables[c].emplace(cands[c]);
  }
  auto shuffled = [&](std::vector<std::size_t> v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<std::size_t>(rng.below(i))]);
    return v;
  };

  if (partitions != nullptr) {
    // The rows of each partition (window positions, ascending); queries are rows
    // whose partition holds enough others to rank.
    const std::uint32_t* part = partitions + first;
    std::vector<std::size_t> members;  // window positions by partition (rows without one left out)
    members.reserve(p);
    for (std::size_t r = 0; r < p; ++r)
      if (part[r] != simd::no_index) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) { return part[a] < part[b]; });
    std::vector<std::size_t> lo(p, 0), hi(p, 0);  // each row's partition: members[lo, hi)
    for (std::size_t i = 0, j = 0; i < members.size(); i = j) {
      while (j < members.size() && part[members[j]] == part[members[i]]) ++j;
      for (std::size_t t = i; t < j; ++t) {
        lo[members[t]] = i;
        hi[members[t]] = j;
      }
    }
    std::vector<std::size_t> eligible;
    for (std::size_t r = 0; r < p; ++r)
      if (hi[r] - lo[r] > iterate_check_min_partition) eligible.push_back(r);
    if (eligible.size() < iterate_check_min_queries) return nc - 1;
    const std::vector<std::size_t> qpos =
        shuffled(sample_indices(eligible.size(), std::min(eligible.size(), iterate_check_partition_queries), rng));
    std::vector<std::vector<std::uint8_t>> hits(nc, std::vector<std::uint8_t>(qpos.size()));
    constexpr std::size_t block = 64;  // queries per task
    return run_iterate_rounds(st, qpos.size(), iterate_check_partition_round, hits,
                              [&](std::size_t q0, std::size_t q1, const std::vector<iterate_verdict>& now) {
      parallel_for(pool, (q1 - q0 + block - 1) / block, [&](std::size_t b) {
        for (std::size_t qi = q0 + b * block; qi < std::min(q1, q0 + (b + 1) * block); ++qi) {
          const std::size_t self = eligible[qpos[qi]];
          const std::size_t* m0 = members.data() + lo[self];
          const std::size_t* m1 = members.data() + hi[self];
          // Residuals of one partition are the rows less one centroid: their l2
          // distances are the rows' own, as a search ranks within a partition.
          topk top(iterate_check_k);
          for (const std::size_t* m = m0; m != m1; ++m)
            if (*m != self) top.push(static_cast<float>(simd::l2(row(self), row(*m), d)), *m);
          const std::vector<std::uint64_t> truth = sorted_row_ids(top);
          for (std::size_t c = 0; c < nc; ++c) {
            if (c + 1 < nc && now[c] != iterate_verdict::open) continue;
            const pq::distance_table table = tables[c]->make(row(self));
            topk found(iterate_check_k);
            for (const std::size_t* m = m0; m != m1; ++m)
              if (*m != self) found.push(table.distance(codes[c].data() + *m * cb), *m);
            hits[c][qi] = count_hits_in_truth(found, truth);
          }
        }
      });
    });
  }

  // No partitions (raw rows: dot, or a plain training): queries rank every checked
  // row, the codes transposed as a partition's so the search's own scan sums them.
  std::vector<std::uint8_t> transposed(p * cb);
  for (std::size_t c = 0; c < nc; ++c) {
    if (codes[c].empty()) continue;
    transpose_codes(codes[c].data(), p, cb, transposed.data());
    codes[c].swap(transposed);
  }
  const distance_type exact = last.distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  const std::vector<std::size_t> qpos = shuffled(sample_indices(p, std::min(p, iterate_check_queries), rng));
  std::vector<std::vector<std::uint8_t>> hits(nc, std::vector<std::uint8_t>(qpos.size()));
  constexpr std::size_t block = 8;  // queries per task
  return run_iterate_rounds(st, qpos.size(), iterate_check_round, hits,
                            [&](std::size_t q0, std::size_t q1, const std::vector<iterate_verdict>& now) {
    const std::vector<std::vector<std::uint64_t>> truth = exact_neighbors(exact, base, p, d, qpos, q0, q1, pool);
    parallel_for(pool, (q1 - q0 + block - 1) / block, [&](std::size_t b) {
      std::vector<float> dist(p);
      for (std::size_t qi = q0 + b * block; qi < std::min(q1, q0 + (b + 1) * block); ++qi)
        for (std::size_t c = 0; c < nc; ++c) {
          if (c + 1 < nc && now[c] != iterate_verdict::open) continue;
          const pq::distance_table table = tables[c]->make(row(qpos[qi]));
          table.scan(codes[c].data(), p, dist.data());
          topk found(iterate_check_k);
          collect_nearest_except(found, dist.data(), p, 0, qpos[qi]);
          hits[c][qi] = count_hits_in_truth(found, truth[qi - q0]);
        }
    });
  });
}

}  // namespace lancet::index::detail
