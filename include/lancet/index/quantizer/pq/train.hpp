// Training product quantizers (quantizer/pq/pq.hpp says how it follows Lance): one
// k-means per sub-vector on a sample of rows as given (train) or prepared as an IVF
// index's (train_for_ivf, train_for_ivf_in_place), and the choice of the iterate that
// ranks best (iterate.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq/encode.hpp"
#include "lancet/index/quantizer/pq/iterate.hpp"
#include "lancet/index/quantizer/pq/model.hpp"

namespace lancet::index::detail {

// What PQ training checks of its params for vectors of d values.
inline void check_pq_params(const pq::params& p, std::size_t d) {
  if (p.num_bits != 4 && p.num_bits != 8)
    throw invalid_input_error("PQ: num_bits " + std::to_string(p.num_bits) + " is not supported (4 or 8)");
  if (p.num_sub_vectors == 0) throw invalid_input_error("PQ: num_sub_vectors must be positive");
  if (d % p.num_sub_vectors != 0)
    throw invalid_input_error("PQ: num_sub_vectors must divide vector dimension " + std::to_string(d) +
                              ", but got " + std::to_string(p.num_sub_vectors));
  if (p.num_bits == 4 && p.num_sub_vectors % 2 != 0)
    throw invalid_input_error("PQ: num_sub_vectors must be divisible by 2 for num_bits=4, but got " +
                              std::to_string(p.num_sub_vectors));
  if (p.max_iters == 0) throw invalid_input_error("PQ: max_iters must be positive");
  if (p.sample_rate == 0) throw invalid_input_error("PQ: sample_rate must be positive");
  if (p.max_sample_rows && p.max_sample_rows < (std::size_t(1) << p.num_bits))
    throw invalid_input_error("PQ: max_sample_rows " + std::to_string(p.max_sample_rows) + " is below the " +
                              std::to_string(std::size_t(1) << p.num_bits) + " rows a " + std::to_string(p.num_bits) +
                              "-bit codebook needs");
  if (p.init && *p.init != kmeans_init::random && *p.init != kmeans_init::kmeans_plus_plus)
    throw invalid_input_error("PQ: init must be random or kmeans_plus_plus (a codebook is given as a trained model)");
}

// ---- k-means over one sub-vector ----------------------------------------------
// Lance trains each sub-vector's codebook with its generic k-means (random initial
// rows, l2, no balance term, stop once the loss changes by less than tolerance *
// loss); params::init may seed it with k-means++ instead. Sub-vectors are short
// (d / m values, often 8), where a GEMM-shaped kernel spends most of its time
// outside the multiply; this trainer keeps short sub-vectors column-major and scans
// the centroids for a block of rows held in registers (longer ones, over 16 values,
// stay row-major for the tiled kernel). Same
// algorithm as index::train_kmeans for this case (lancet's empty-cluster rule: take
// half of the largest cluster), sums in row order, so the result depends only on the
// seed.

template <class W>
struct subvector_kmeans {
  std::size_t n = 0, d = 0, k = 0;
  // The sub-vector's values, in one of two layouts (the other vector stays empty):
  // column-major (d x n: value t of row r at cols[t * n + r]) for short sub-vectors,
  // scanned a column at a time; row-major (n x d) for the long ones the tiled kernel
  // assigns (subvector_nearest_centroid::reads_rows), which would otherwise be copied back to
  // rows every iteration.
  std::vector<W> cols;
  std::vector<W> rows;

  W at(std::size_t r, std::size_t t) const { return rows.empty() ? cols[t * n + r] : rows[r * d + t]; }

  // For every row: the nearest centroid and its squared distance.
  void assign(const std::vector<W>& cents, std::uint32_t* member, W* dist) const {
    const subvector_nearest_centroid<W> near(cents.data(), k, d);
    if (!rows.empty()) near.assign_rows(rows.data(), n, member);
    else near.assign(cols.data(), n, n, member);
    for (std::size_t r = 0; r < n; ++r) {
      const W* c = cents.data() + std::size_t(member[r]) * d;
      W s = W(0);
      for (std::size_t t = 0; t < d; ++t) {
        const W e = at(r, t) - c[t];
        s += e * e;
      }
      dist[r] = s;
    }
  }

  // k-means++ seeding (D^2 sampling, the rule of index::train_kmeans's
  // kmeans_plus_plus): the first centroid a uniform row, each next one a row drawn
  // with probability proportional to its squared distance to the nearest centroid so
  // far (a uniform row again when every row sits on a centroid). Returns the rows.
  std::vector<std::size_t> plus_plus_rows(rng64& rng) const {
    std::vector<std::size_t> pick;
    pick.reserve(k);
    std::vector<W> mind(n, std::numeric_limits<W>::infinity()), dist(n);
    std::size_t c = static_cast<std::size_t>(rng.below(n));
    for (std::size_t j = 0; j < k; ++j) {
      pick.push_back(c);
      if (j + 1 == k) break;
      std::fill(dist.begin(), dist.end(), W(0));
      if (!rows.empty()) {
        const W* v = rows.data() + c * d;
        for (std::size_t r = 0; r < n; ++r)
          for (std::size_t t = 0; t < d; ++t) {
            const W e = rows[r * d + t] - v[t];
            dist[r] += e * e;
          }
      } else {
        for (std::size_t t = 0; t < d; ++t) {
          const W* col = cols.data() + t * n;
          const W v = col[c];
          for (std::size_t r = 0; r < n; ++r) {
            const W e = col[r] - v;
            dist[r] += e * e;
          }
        }
      }
      double total = 0;
      for (std::size_t r = 0; r < n; ++r) {
        mind[r] = std::min(mind[r], dist[r]);
        total += static_cast<double>(mind[r]);
      }
      c = d2_draw(mind.data(), n, total, rng);
    }
    return pick;
  }

  // One run of Lance's k-means from the given initial centroids; returns the loss.
  // `iterates`, when given, receives a copy of the centroids after each iteration
  // count in `at` (ascending), the final ones for counts the run did not reach.
  double run(std::vector<W>& cents, std::uint32_t max_iters, double tolerance,
             const std::vector<std::uint32_t>& at = {}, std::vector<std::vector<W>>* iterates = nullptr) const {
    std::size_t next = 0;
    std::vector<std::uint32_t> member(n);
    std::vector<W> dist(n);
    std::vector<std::size_t> sizes(k);
    std::vector<double> sums(k * d);
    double loss = std::numeric_limits<double>::max(), last = loss;
    for (std::uint32_t it = 1; it <= max_iters; ++it) {
      assign(cents, member.data(), dist.data());
      last = 0;
      for (std::size_t r = 0; r < n; ++r) last += static_cast<double>(dist[r]);
      std::fill(sizes.begin(), sizes.end(), 0);
      std::fill(sums.begin(), sums.end(), 0.0);
      for (std::size_t r = 0; r < n; ++r) ++sizes[member[r]];
      if (!rows.empty()) {
        for (std::size_t r = 0; r < n; ++r)
          for (std::size_t t = 0; t < d; ++t)
            sums[std::size_t(member[r]) * d + t] += static_cast<double>(rows[r * d + t]);
      } else {
        for (std::size_t t = 0; t < d; ++t) {
          const W* col = cols.data() + t * n;
          for (std::size_t r = 0; r < n; ++r) sums[std::size_t(member[r]) * d + t] += static_cast<double>(col[r]);
        }
      }
      for (std::size_t j = 0; j < k; ++j)
        if (sizes[j] > 0)
          for (std::size_t t = 0; t < d; ++t)
            cents[j * d + t] = static_cast<W>(sums[j * d + t] / static_cast<double>(sizes[j]));
      split_empty(cents, sizes);
      for (; iterates && next < at.size() && at[next] <= it; ++next) iterates->push_back(cents);
      if (std::fabs(loss - last) < tolerance * last) break;
      loss = last;
    }
    for (; iterates && next < at.size(); ++next) iterates->push_back(cents);
    return last;
  }

  // Each empty cluster (in index order) takes half of the largest (lowest index on
  // a tie): its centroid scaled by 1 +- 1/1024, alternating per value, the two moving
  // apart; with nothing to split it copies the largest centroid.
  void split_empty(std::vector<W>& cents, std::vector<std::size_t>& sizes) const {
    for (std::size_t i = 0; i < k; ++i) {
      if (sizes[i] != 0) continue;
      std::size_t j = 0;
      for (std::size_t q = 1; q < k; ++q)
        if (sizes[q] > sizes[j]) j = q;
      W* ci = cents.data() + i * d;
      W* cj = cents.data() + j * d;
      if (sizes[j] < 2) {
        std::copy(cj, cj + d, ci);
        continue;
      }
      sizes[i] = sizes[j] / 2;
      sizes[j] -= sizes[i];
      const W eps = W(1) / W(1024);
      for (std::size_t t = 0; t < d; ++t) {
        const W up = cj[t] * (W(1) + eps), down = cj[t] * (W(1) - eps);
        ci[t] = t % 2 == 0 ? up : down;
        cj[t] = t % 2 == 0 ? down : up;
      }
    }
  }
};

// Trains the codebook on prepared rows (finite, already residuals / normalised).
// `partitions` (optional): each residual row's IVF partition, for the iterate check.
template <class T>
inline pq::model<T> train_pq_prepared(const T* rows, std::size_t n, std::size_t d, const pq::params& p,
                                      simd::distance_type table_dist, boost::asio::thread_pool* pool,
                                      const std::uint32_t* partitions = nullptr) {
  using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const std::size_t m = p.num_sub_vectors, k = std::size_t(1) << p.num_bits, sd = d / m;
  if (n < k)
    throw invalid_input_error("Not enough rows to train PQ. Requires " + std::to_string(k) + " rows but only " +
                              std::to_string(n) + " available");
  // Lance: at most sample_rate * k rows per sub-vector k-means (and 512 * k); fewer
  // under params::max_sample_rows. One sub-vector's values (working precision;
  // column-major, or row-major when longer than 16) are copied per k-means running:
  // the rows themselves are not copied.
  const std::size_t use = std::min({n, p.sample_size(), k * 512});
  pq::model<T> out;
  out.dimension = d;
  out.num_sub_vectors = m;
  out.num_bits = p.num_bits;
  out.distance = table_dist;
  out.codebook.resize(k * d);
  // One k-means per sub-vector, each with its own seed: the codebook depends only
  // on the seed, never on which thread trains which sub-vector.
  const bool plus_plus = p.init ? *p.init == kmeans_init::kmeans_plus_plus
                                : table_dist == simd::distance_type::dot && p.num_bits == 8 &&
                                      (sd <= 2 || (sd <= 4 && m <= 8));
  std::mutex progress_mu;
  std::size_t done = 0;
  // The earlier iterates a recall check may prefer (iterate.hpp): every
  // sub-vector's centroids after each of these iteration counts.
  const std::vector<std::uint32_t> at = p.choose_iterate ? iterate_candidates(p.max_iters, use) : std::vector<std::uint32_t>{};
  std::vector<std::vector<std::vector<W>>> early(m);
  parallel_for(pool, m, [&](std::size_t s) {
    subvector_kmeans<W> km;
    km.n = use;
    km.d = sd;
    km.k = k;
    if (subvector_nearest_centroid<W>::reads_rows(sd)) {
      km.rows.resize(sd * use);
      for (std::size_t r = 0; r < use; ++r)
        for (std::size_t t = 0; t < sd; ++t) km.rows[r * sd + t] = quantizer::to_work<W>(rows[r * d + s * sd + t]);
    } else {
      km.cols.resize(sd * use);
      // 64 rows at a time, so each column is written in runs, not a value per page.
      for (std::size_t r0 = 0; r0 < use; r0 += 64)
        for (std::size_t t = 0; t < sd; ++t)
          for (std::size_t r = r0; r < std::min(use, r0 + 64); ++r)
            km.cols[t * use + r] = quantizer::to_work<W>(rows[r * d + s * sd + t]);
    }
    rng64 rng(quantizer::mix_seed(p.seed, s));
    std::vector<W> best;
    std::vector<std::vector<W>> best_early;
    double best_loss = std::numeric_limits<double>::max();
    for (std::size_t redo = 0; redo < std::max<std::size_t>(p.kmeans_redos, 1); ++redo) {
      // k-means++ rows, or k distinct random rows in row order (Lance's default).
      const auto pick = plus_plus ? km.plus_plus_rows(rng) : sample_indices(use, k, rng);
      std::vector<W> cents(k * sd);
      for (std::size_t j = 0; j < k; ++j)
        for (std::size_t t = 0; t < sd; ++t) cents[j * sd + t] = km.at(pick[j], t);
      std::vector<std::vector<W>> its;
      const double loss = km.run(cents, p.max_iters, 1e-4, at, &its);
      if (best.empty() || loss < best_loss) {
        best_loss = loss;
        best = std::move(cents);
        best_early = std::move(its);
      }
    }
    for (std::size_t i = 0; i < k * sd; ++i) out.codebook[s * k * sd + i] = quantizer::from_work<T>(best[i]);
    early[s] = std::move(best_early);
    if (p.on_progress) {
      std::lock_guard<std::mutex> lk(progress_mu);
      if (!p.on_progress(++done, m))
        throw cancelled_error("PQ training cancelled by the progress callback after " + std::to_string(done) +
                              " of " + std::to_string(m) + " sub-vectors");
    }
  });
  if (!at.empty()) {
    // Candidates in iteration order, the end of the runs last.
    std::vector<pq::model<T>> cands(at.size() + 1, out);
    for (std::size_t i = 0; i < at.size(); ++i) {
      cands[i].iterate = at[i];
      for (std::size_t s = 0; s < m; ++s)
        for (std::size_t j = 0; j < k * sd; ++j) cands[i].codebook[s * k * sd + j] = quantizer::from_work<T>(early[s][i][j]);
    }
    early = {};
    const std::size_t pick = choose_iterate<W>(cands, rows, use, partitions, p.seed, pool);
    if (pick < at.size()) out = std::move(cands[pick]);
  }
  return out;
}


// What train_for_ivf and train_for_ivf_in_place check first.
template <class T, class C>
inline void check_pq_ivf_training(const T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                                  simd::distance_type distance, const pq::params& p) {
  static_assert(quantizer::is_float_element_v<T>, "PQ trains on float, double or f16 vectors");
  quantizer::check_shape("PQ", rows, n, dim);
  check_pq_params(p, dim);
  if (distance == simd::distance_type::hamming) throw invalid_input_error("PQ: hamming distance is not supported");
  if (pq::uses_residual(distance) && (centroids == nullptr || k == 0))
    throw invalid_input_error("PQ: training on residuals needs the IVF centroids");
}

inline simd::distance_type pq_table_distance(simd::distance_type d) noexcept {
  return d == simd::distance_type::dot ? simd::distance_type::dot : simd::distance_type::l2;
}

}  // namespace lancet::index::detail

namespace lancet::index::pq {

// Trains a product quantizer on n rows (n x dim, row-major) as given: no residuals,
// no normalisation (see train_for_ivf for Lance's IVF preparation). At most
// p.sample_size() rows are used, drawn with p.seed; rows with a non-finite value are
// dropped. `distance` decides the distance tables (cosine gives l2, as Lance); the
// k-means itself is always l2, as Lance trains it.
template <class T>
inline model<T> train(const T* rows, std::size_t n, std::size_t dim, const params& p = {},
                      distance_type distance = distance_type::l2, boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "PQ trains on float, double or f16 vectors");
  quantizer::check_shape("PQ", rows, n, dim);
  detail::check_pq_params(p, dim);
  if (distance == distance_type::hamming) throw invalid_input_error("PQ: hamming distance is not supported");
  const auto picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  const auto prepared = quantizer::prepare_training_rows<T, T>(rows, dim, picked, distance_type::l2, nullptr, 0,
                                                               false, pool);
  const distance_type td = distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  return detail::train_pq_prepared(prepared.data(), prepared.size() / dim, dim, p, td, pool);
}

// Trains a product quantizer for an IVF index as Lance does: a sample of
// p.sample_size() rows, normalised under cosine, non-finite rows dropped, and for
// l2 / cosine the residual to the nearest of the k IVF centroids (k x dim). The
// sample is copied once (train_for_ivf_in_place does without).
template <class T, class C>
inline model<T> train_for_ivf(const T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                              distance_type distance, const params& p = {},
                              boost::asio::thread_pool* pool = nullptr) {
  detail::check_pq_ivf_training(rows, n, dim, centroids, k, distance, p);
  const auto picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  std::vector<std::uint32_t> partitions;
  const auto prepared = quantizer::prepare_training_rows<T, C>(rows, dim, picked, distance, centroids, k,
                                                               uses_residual(distance), pool, nullptr, &partitions);
  return detail::train_pq_prepared(prepared.data(), prepared.size() / dim, dim, p,
                                   detail::pq_table_distance(distance), pool,
                                   partitions.empty() ? nullptr : partitions.data());
}

// train_for_ivf (the same codebook) on rows the caller gives up: the sample is
// prepared where it is (moved to the front of `rows`, normalised, residuals taken),
// so training holds no copy of it. `rows` is left holding prepared rows.
template <class T, class C>
inline model<T> train_for_ivf_in_place(T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                                       distance_type distance, const params& p = {},
                                       boost::asio::thread_pool* pool = nullptr) {
  detail::check_pq_ivf_training(rows, n, dim, centroids, k, distance, p);
  std::vector<std::size_t> picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  if (picked.size() == n) picked = {};  // every row, in order
  std::vector<std::uint32_t> partitions;
  const std::size_t kept = quantizer::prepare_training_rows_in_place<T, C>(
      rows, n, dim, picked.empty() ? nullptr : &picked, distance, centroids, k, uses_residual(distance), pool, nullptr,
      &partitions);
  picked = {};
  return detail::train_pq_prepared(rows, kept, dim, p, detail::pq_table_distance(distance), pool,
                                   partitions.empty() ? nullptr : partitions.data());
}

}  // namespace lancet::index::pq
