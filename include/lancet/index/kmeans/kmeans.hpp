// k-means as Lance trains it (lance-index vector/kmeans.rs), on the simd/ kernels.
//
//   index::kmeans_params p;            // Lance's defaults: 50 iterations, tolerance 1e-4...
//   p.seed = 7;
//   auto km = index::train_kmeans(rows, n, dim, k, p, &pool);   // pool may be null
//   km.centroids;  // k * dim values, row-major
//
// What follows Lance:
// - training data: at most sample_rate * k rows, drawn at random (Lance samples the
//   dataset); a single flat run uses at most its first 512 * k rows (Lance's f16
//   underflow guard); rows containing NaN or +-inf are dropped first (Lance's
//   KeepFiniteVectors), and so are zero rows under cosine;
// - cosine trains on normalised rows with l2; dot trains with 1 - x.y;
// - each iteration: assign rows (argmin of distance + balance_factor * cluster size,
//   where the factor is divided by the number of training rows and capped by Lance's
//   adaptive bound), loss = sum of distances + balance loss, centroids = means, then
//   stop once |loss - previous| < tolerance * loss;
// - redos: independent runs, the lowest loss wins;
// - k > 256 and hierarchical_k > 1: hierarchical training (hierarchical_k clusters,
//   then repeatedly split the largest cluster), centroids in cluster-creation order;
// - k larger than the number of distinct rows: flat training leaves the surplus
//   centroids empty; hierarchical training cannot reach k, so train_kmeans falls back
//   to flat training (result.hierarchical is false then).
// Where lancet differs on purpose: runs are seeded (Lance uses OS entropy), each redo
// draws its own initial centroids, an empty cluster takes half of the largest cluster
// (Lance picks a cluster at random, weighted by size), and assignment is exact (Lance
// switches to an HNSW over the centroids when k * dim >= 1e6).
//
// Iterations under l2 without a balance term skip the rows whose nearest centroid
// provably cannot change (Hamerly / Yinyang-style bounds, see
// float_algo::assign_and_average; off with kmeans_params::prune = false): the result
// is the same as plain Lloyd's, bit for bit. Each iteration is one pass over the rows:
// a block is assigned and added to its chunk's centroid sums while it is in cache.
//
// Results are identical for any thread count: rows are assigned independently, each
// chunk of rows (fixed by n, k and d) sums in row order and the chunks' sums are
// added in chunk order.
// Its parameters, result and random draws are in kmeans/params.hpp, its per-iteration
// algorithms in kmeans/algorithms.hpp; this header holds the trainer (runs, redos,
// hierarchical training) and the entry points.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans/algorithms.hpp"
#include "lancet/index/kmeans/params.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"
#include "lancet/simd/topk.hpp"

namespace lancet::index {

namespace detail {

struct run_result {
  double loss = std::numeric_limits<double>::max();
  std::uint32_t iterations = 0;
};

template <class Algo>
class trainer {
 public:
  using V = typename Algo::value_type;
  using D = typename Algo::dist_type;

  trainer(const Algo& algo, const kmeans_params& p, boost::asio::thread_pool* pool, rng64& rng,
          double balance_factor, std::size_t target_k)
      : algo_(algo), p_(p), pool_(pool), rng_(rng), bf_(balance_factor), target_k_(target_k) {}

  std::uint32_t total_iterations = 0;
  std::size_t rows_assigned = 0;  // row assignments, every iteration
  std::size_t rows_pruned = 0;    // of those, skipped by the bounds
  kmeans_stage stage = kmeans_stage::flat;
  std::size_t clusters_so_far = 0;

  // One flat training (all redos) of k centroids over n rows; Lance's train_kmeans.
  std::vector<V> flat(const V* data, std::size_t n, std::size_t k, double* loss_out) {
    const std::size_t d = algo_.d;
    n = std::min(n, k * 512);  // Lance: at most 512 rows per centroid
    std::vector<V> best;
    double best_loss = std::numeric_limits<double>::max();
    for (std::size_t redo = 1; redo <= std::max<std::size_t>(p_.redos, 1); ++redo) {
      std::vector<V> cents = initial(data, n, k);
      const double loss = iterate(data, n, k, cents, redo);
      if (best.empty() || loss < best_loss) {
        best_loss = loss;
        best = std::move(cents);
      }
      (void)d;
    }
    if (loss_out) *loss_out = best_loss;
    return best;
  }

  // Membership of every row against the given centroids (no balance term).
  void membership(const V* cents, std::size_t k, const V* data, std::size_t n, std::vector<std::uint32_t>& member,
                  std::vector<D>& dist) {
    member.resize(n);
    dist.resize(n);
    algo_.assign(cents, k, data, n, nullptr, member.data(), dist.data(), pool_);
  }

 private:
  std::vector<V> initial(const V* data, std::size_t n, std::size_t k) {
    const std::size_t d = algo_.d;
    std::vector<V> c(k * d);
    if (p_.init == kmeans_init::given) {
      if constexpr (std::is_floating_point_v<V>) {
        for (std::size_t i = 0; i < k * d; ++i) c[i] = static_cast<V>(p_.initial_centroids[i]);
      } else {
        for (std::size_t i = 0; i < k * d; ++i)
          c[i] = static_cast<V>(std::clamp(p_.initial_centroids[i], 0.0f, 255.0f));
      }
      return c;
    }
    if (p_.init == kmeans_init::kmeans_plus_plus) {
      if constexpr (std::is_floating_point_v<V>) {
        plus_plus(data, n, k, c);
        return c;
      }
    }
    // Random: k distinct rows, in row order.
    const auto pick = sample_indices(n, k, rng_);
    for (std::size_t j = 0; j < k; ++j) std::copy(data + pick[j] * d, data + pick[j] * d + d, c.data() + j * d);
    return c;
  }

  void plus_plus(const V* data, std::size_t n, std::size_t k, std::vector<V>& c) {
    const std::size_t d = algo_.d;
    std::vector<V> mind(n, std::numeric_limits<V>::infinity()), tmp(n);
    std::size_t pick = static_cast<std::size_t>(rng_.below(n));
    const std::size_t rb = 2048;
    for (std::size_t j = 0; j < k; ++j) {
      std::copy(data + pick * d, data + pick * d + d, c.data() + j * d);
      if (j + 1 == k) break;
      const V* cj = c.data() + j * d;
      parallel_for(pool_, (n + rb - 1) / rb, [&](std::size_t b) {
        const std::size_t r0 = b * rb, cnt = std::min(rb, n - r0);
        simd::distances_to_many(simd::distance_type::l2, cj, data + r0 * d, cnt, d, tmp.data() + r0);
        for (std::size_t r = r0; r < r0 + cnt; ++r) mind[r] = std::min(mind[r], tmp[r]);
      });
      double total = 0;
      for (std::size_t r = 0; r < n; ++r) total += static_cast<double>(mind[r]);
      pick = d2_draw(mind.data(), n, total, rng_);
    }
  }

  double iterate(const V* data, std::size_t n, std::size_t k, std::vector<V>& cents, std::size_t redo) {
    std::vector<std::size_t> sizes(k, 0);
    std::vector<std::uint32_t> member(n);
    std::vector<D> dist(n), bias(k);
    std::vector<double> losses(k);
    std::vector<D> radius(k);
    std::vector<V> next(cents.size());
    double adjusted_bf = std::numeric_limits<float>::max();
    double loss = std::numeric_limits<double>::max();
    double last_loss = loss;
    constexpr bool prunable = std::is_same_v<Algo, float_algo<V>>;
    bool use_bounds = false;
    if constexpr (prunable) use_bounds = p_.prune && bf_ == 0.0 && algo_.dt == simd::distance_type::l2;
    l2_bounds bounds;
    chunk_sums sums;
    std::vector<double> shift(use_bounds ? k : 0);
    for (std::uint32_t it = 1; it <= p_.max_iters; ++it) {
      const double bf = std::min(adjusted_bf, bf_);
      const bool biased = bf != 0.0;
      if (biased)
        for (std::size_t j = 0; j < k; ++j) bias[j] = static_cast<D>(bf * static_cast<double>(sizes[j]));
      rows_assigned += n;
      if constexpr (prunable)  // assignment and the new means in one pass
        rows_pruned += algo_.assign_and_average(cents.data(), k, data, n, biased ? bias.data() : nullptr,
                                                use_bounds ? &bounds : nullptr, it == 1 ? nullptr : shift.data(),
                                                member.data(), dist.data(), next.data(), sums, pool_);
      else
        algo_.assign(cents.data(), k, data, n, biased ? bias.data() : nullptr, member.data(), dist.data(), pool_);

      // Cluster sizes, radius and loss per cluster, in row order (Lance's
      // compute_cluster_sizes: the largest cluster is the first to reach the maximum).
      std::fill(sizes.begin(), sizes.end(), 0);
      std::fill(losses.begin(), losses.end(), 0.0);
      std::fill(radius.begin(), radius.end(), D(0));
      std::size_t max_id = 0, max_size = 0;
      for (std::size_t r = 0; r < n; ++r) {
        const std::uint32_t m = member[r];
        if (m == simd::no_index) continue;
        radius[m] = std::max(radius[m], dist[r]);
        losses[m] += static_cast<double>(dist[r]);
        if (++sizes[m] > max_size) {
          max_size = sizes[m];
          max_id = m;
        }
      }
      if (max_size > 0)
        adjusted_bf = (static_cast<double>(radius[max_id]) - losses[max_id] / static_cast<double>(max_size)) /
                      static_cast<double>(n);
      double sq = 0;
      for (auto s : sizes) sq += static_cast<double>(s) * static_cast<double>(s);
      const double balance_loss = bf * (sq - static_cast<double>(n) * static_cast<double>(n) / static_cast<double>(k));
      last_loss = balance_loss;
      for (double l : losses) last_loss += l;

      if constexpr (!prunable) algo_.means(data, n, member.data(), sizes, k, next.data(), pool_);
      split_empty(next, sizes, data, n, member);
      if (use_bounds)  // how far each centroid moved, rounded up
        for (std::size_t j = 0; j < k; ++j) {
          double s = 0;
          for (std::size_t t = 0; t < algo_.d; ++t) {
            const double e = static_cast<double>(next[j * algo_.d + t]) - static_cast<double>(cents[j * algo_.d + t]);
            s += e * e;
          }
          shift[j] = std::sqrt(s) * (1.0 + 1e-9);
        }
      cents.swap(next);
      ++total_iterations;

      if (p_.on_progress) {
        const kmeans_progress pr{stage, redo, it, p_.max_iters, last_loss,
                                 stage == kmeans_stage::flat ? k : clusters_so_far, target_k_};
        if (!p_.on_progress(pr)) cancelled(pr);
      }
      if (std::fabs(loss - last_loss) < p_.tolerance * last_loss) break;
      loss = last_loss;
    }
    return last_loss;
  }

  // Each empty cluster (in index order) takes half of the currently largest cluster
  // (lowest index on a tie; the old cluster keeps the larger half).
  void split_empty(std::vector<V>& cents, std::vector<std::size_t>& sizes, const V* data, std::size_t n,
                   const std::vector<std::uint32_t>& member) {
    const std::size_t k = sizes.size();
    for (std::size_t i = 0; i < k; ++i) {
      if (sizes[i] != 0) continue;
      std::size_t j = 0;
      for (std::size_t q = 1; q < k; ++q)
        if (sizes[q] > sizes[j]) j = q;
      if (sizes[j] < 2) {
        // Nothing to split (more centroids than assigned rows): keep a copy of the
        // largest cluster's centroid rather than an undefined one.
        std::copy(cents.begin() + static_cast<std::ptrdiff_t>(j * algo_.d),
                  cents.begin() + static_cast<std::ptrdiff_t>((j + 1) * algo_.d),
                  cents.begin() + static_cast<std::ptrdiff_t>(i * algo_.d));
        continue;
      }
      sizes[i] = sizes[j] / 2;
      sizes[j] -= sizes[i];
      algo_.split(cents.data(), i, j, data, n, member.data(), nullptr);
    }
  }

  const Algo& algo_;
  const kmeans_params& p_;
  boost::asio::thread_pool* pool_;
  rng64& rng_;
  double bf_;
  std::size_t target_k_;
};

// Lance's hierarchical k-means. Returns nothing when it cannot reach k clusters.
template <class Algo>
inline std::optional<std::vector<typename Algo::value_type>> hierarchical(trainer<Algo>& tr, const Algo& algo,
                                                                          const typename Algo::value_type* data,
                                                                          std::size_t n, std::size_t target_k,
                                                                          std::size_t hk, double* loss_out) {
  using V = typename Algo::value_type;
  using D = typename Algo::dist_type;
  const std::size_t d = algo.d;
  struct cluster {
    std::size_t id;
    std::vector<std::size_t> rows;
    std::vector<V> centroid;
    double loss;
    bool finalized;
  };
  // Non-finalized first, then larger first, then older (lower id) first.
  auto lower = [](const cluster& a, const cluster& b) {
    if (a.finalized != b.finalized) return a.finalized;
    if (a.rows.size() != b.rows.size()) return a.rows.size() < b.rows.size();
    return a.id > b.id;
  };
  std::priority_queue<cluster, std::vector<cluster>, decltype(lower)> heap(lower);
  std::size_t next_id = 0;

  auto add_clusters = [&](const std::vector<V>& cents, std::size_t k, const std::vector<std::size_t>* rows_of,
                          const V* sub, std::size_t sub_n) {
    std::vector<std::uint32_t> member;
    std::vector<D> dist;
    tr.membership(cents.data(), k, sub, sub_n, member, dist);
    std::vector<cluster> made(k);
    std::size_t distinct = 0;
    std::uint32_t first = simd::no_index;
    bool all_same = true;
    for (std::size_t r = 0; r < sub_n; ++r) {
      const std::uint32_t m = member[r];
      if (m == simd::no_index) continue;
      if (first == simd::no_index) first = m;
      else if (m != first) all_same = false;
      made[m].rows.push_back(rows_of ? (*rows_of)[r] : r);
      made[m].loss += static_cast<double>(dist[r]);
    }
    for (auto& c : made) distinct += !c.rows.empty();
    if (rows_of && (all_same || distinct < 2)) return false;
    for (std::size_t j = 0; j < k; ++j) {
      if (made[j].rows.empty()) continue;
      made[j].id = next_id++;
      made[j].centroid.assign(cents.begin() + static_cast<std::ptrdiff_t>(j * d),
                              cents.begin() + static_cast<std::ptrdiff_t>((j + 1) * d));
      made[j].finalized = false;
      heap.push(std::move(made[j]));
    }
    return true;
  };

  const std::size_t initial_k = std::min({hk, target_k, n});
  tr.clusters_so_far = 0;
  const auto root = tr.flat(data, n, initial_k, nullptr);
  add_clusters(root, initial_k, nullptr, data, n);
  tr.stage = kmeans_stage::hierarchical;

  std::vector<V> sub;
  while (heap.size() < target_k) {
    cluster big = std::move(const_cast<cluster&>(heap.top()));  // pop() never compares the moved-from top
    heap.pop();
    if (big.finalized || big.rows.size() <= 1) {
      heap.push(std::move(big));
      break;
    }
    const std::size_t size = big.rows.size();
    const std::size_t remaining = target_k - heap.size();
    const std::size_t ck = size <= hk ? std::min({std::size_t(2), remaining, size})
                                      : std::max<std::size_t>(std::min({size / hk, remaining, hk}), 2);
    sub.resize(size * d);
    for (std::size_t r = 0; r < size; ++r)
      std::copy(data + big.rows[r] * d, data + big.rows[r] * d + d, sub.data() + r * d);
    tr.clusters_so_far = heap.size() + 1;
    const auto cents = tr.flat(sub.data(), size, ck, nullptr);
    if (!add_clusters(cents, ck, &big.rows, sub.data(), size)) {
      big.finalized = true;  // the split did not separate anything
      heap.push(std::move(big));
    }
  }
  if (heap.size() < target_k) return std::nullopt;

  std::vector<cluster> all;
  while (!heap.empty()) {
    all.push_back(std::move(const_cast<cluster&>(heap.top())));
    heap.pop();
  }
  std::sort(all.begin(), all.end(), [](const cluster& a, const cluster& b) { return a.id < b.id; });
  std::vector<V> out;
  out.reserve(target_k * d);
  double loss = 0;
  for (const auto& c : all) {
    out.insert(out.end(), c.centroid.begin(), c.centroid.end());
    loss += c.loss;
  }
  if (loss_out) *loss_out = loss;
  return out;
}

inline void check_common(std::size_t n, std::size_t d, std::size_t k, const kmeans_params& p, const void* data) {
  if (d == 0) throw invalid_input_error("k-means: dimension must be positive");
  if (k == 0) throw invalid_input_error("k-means: k must be positive");
  if (n > 0 && data == nullptr) throw invalid_input_error("k-means: data is null");
  if (p.max_iters == 0) throw invalid_input_error("k-means: max_iters must be positive");
  if (!(p.tolerance >= 0)) throw invalid_input_error("k-means: tolerance must be >= 0");
  if (!(p.balance_factor >= 0) || !std::isfinite(p.balance_factor))
    throw invalid_input_error("k-means: balance_factor must be finite and >= 0");
  if (p.init == kmeans_init::given && p.initial_centroids.size() != k * d)
    throw invalid_input_error("k-means: initial_centroids has " + std::to_string(p.initial_centroids.size()) +
                              " values, expected k * dimension = " + std::to_string(k * d));
}

[[noreturn]] inline void too_few_rows(std::size_t rows, std::size_t k, std::size_t dropped) {
  throw invalid_input_error("k-means: can not train " + std::to_string(k) + " centroids with " +
                            std::to_string(rows) + " vectors" +
                            (dropped ? " (" + std::to_string(dropped) + " dropped as not finite)" : std::string()) +
                            "; choose a smaller k");
}

template <class Algo, class R>
inline void run_training(const Algo& algo, const typename Algo::value_type* rows, std::size_t n, std::size_t k,
                         const kmeans_params& p, boost::asio::thread_pool* pool, rng64& rng, R& res) {
  trainer<Algo> tr(algo, p, pool, rng, static_cast<double>(p.balance_factor) / static_cast<double>(n), k);
  std::optional<std::vector<typename Algo::value_type>> cents;
  double loss = 0;
  if (k > 256 && p.hierarchical_k > 1 && p.init != kmeans_init::given) {
    cents = hierarchical(tr, algo, rows, n, k, p.hierarchical_k, &loss);
    res.hierarchical = cents.has_value();
  }
  if (!cents) {
    tr.stage = kmeans_stage::flat;
    cents = tr.flat(rows, n, k, &loss);
  }
  res.loss = loss;
  res.iterations = tr.total_iterations;
  res.rows_assigned = tr.rows_assigned;
  res.rows_pruned = tr.rows_pruned;
  res.k = k;
  res.centroids.resize(cents->size());
  for (std::size_t i = 0; i < cents->size(); ++i) {
    using C = typename R::value_type_t;
    if constexpr (std::is_same_v<C, simd::f16>) res.centroids[i] = simd::f16(static_cast<float>((*cents)[i]));
    else res.centroids[i] = static_cast<C>((*cents)[i]);
  }
}

template <class C>
struct result_with_type : kmeans_result<C> {
  using value_type_t = C;
};

}  // namespace detail

// Trains k centroids over n rows of d values (row-major). T is float, double,
// simd::f16 or uint8_t. Distance l2, dot or cosine (hamming: see train_kmodes).
// Throws invalid_input_error for bad parameters or fewer usable rows than k, and
// cancelled_error when the progress callback asks to stop.
template <class T>
inline kmeans_result<centroid_t<T>> train_kmeans(const T* data, std::size_t n, std::size_t d, std::size_t k,
                                                 const kmeans_params& p = {},
                                                 boost::asio::thread_pool* pool = nullptr) {
  static_assert(simd::is_element_v<T>, "train_kmeans: rows must be float, double, f16 or uint8_t");
  using W = simd::work_t<T, T>;  // double for double rows, float otherwise
  detail::check_common(n, d, k, p, data);
  if (p.distance == simd::distance_type::hamming)
    throw invalid_input_error("k-means: hamming distance trains binary codes with train_kmodes");
  const bool cos = p.distance == simd::distance_type::cosine;
  if (n < k) detail::too_few_rows(n, k, 0);

  detail::rng64 rng(p.seed);
  const std::size_t cap = p.sample_rate == 0 ? n : std::min(n, p.sample_rate * k);
  const auto pick = detail::sample_indices(n, cap, rng);

  // Training rows in working precision; non-finite (and, for cosine, zero) rows
  // dropped; cosine rows normalised.
  // k-means normalises here and in assign_partitions on its own, not with
  // quantizer/common.hpp's normalise_row, because the results would not stay bit for
  // bit the same: this loop divides each value by the norm (normalise_row multiplies
  // by the norm's inverse, which rounds differently), and assign_partitions scales by
  // the inverse even when the norm of a finite row overflows W (inverse 0: the row
  // becomes zero and still gets a partition), where normalise_row refuses the row.
  // Rows are checked (and converted) in blocks on the pool, straight into an
  // uninitialised buffer, so the copy and its first-touch page faults are not a serial
  // prelude to the parallel iterations; blocks that dropped rows are then closed up in
  // order. Float rows under l2 / dot with every row picked and none dropped are not
  // copied at all: training reads the caller's rows.
  const std::size_t picked = pick.size();
  bool in_place = std::is_same_v<T, W> && !cos && picked == n;  // picked == n: pick is 0..n-1
  constexpr std::size_t block = 4096;
  const std::size_t blocks = (picked + block - 1) / block;
  std::unique_ptr<W[]> copy;
  std::vector<std::size_t> kept(blocks, 0);
  const auto prepare = [&] {
    if (!in_place) copy.reset(new W[picked * d]);
    parallel_for(pool, blocks, [&](std::size_t b) {
      const std::size_t r0 = b * block, r1 = std::min(picked, r0 + block);
      std::size_t out = r0;
      for (std::size_t i = r0; i < r1; ++i) {
        const W* row = reinterpret_cast<const W*>(data + pick[i] * d);  // used as is only when T is W
        if (!in_place) {
          W* dst = copy.get() + out * d;
          simd::convert_row(data + pick[i] * d, dst, d);
          row = dst;
        }
        const W nsq = simd::norm_sq(row, d);
        bool ok = std::isfinite(nsq);
        for (std::size_t t = 0; ok && t < d; ++t) ok = std::isfinite(row[t]);
        if (ok && cos) {
          const W nrm = std::sqrt(nsq);
          ok = nrm > W(0);
          W* dst = copy.get() + out * d;
          for (std::size_t t = 0; t < d && ok; ++t) dst[t] /= nrm;
        }
        if (ok) ++out;
      }
      kept[b] = out - r0;
    });
  };
  prepare();
  std::size_t m = 0;
  for (std::size_t b = 0; b < blocks; ++b) m += kept[b];
  if (in_place && m < picked) {  // some rows are not finite: train on a copy without them
    in_place = false;
    prepare();
  }
  const std::size_t dropped = picked - m;
  if (dropped > 0) {  // close up the blocks, in order
    std::size_t out = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
      if (out != b * block) std::memmove(copy.get() + out * d, copy.get() + b * block * d, kept[b] * d * sizeof(W));
      out += kept[b];
    }
  }
  const W* rows = copy ? copy.get() : reinterpret_cast<const W*>(data);
  if (m < k) detail::too_few_rows(m, k, dropped);

  detail::result_with_type<centroid_t<T>> res;
  res.dimension = d;
  res.distance = p.distance;
  res.rows_trained = m;
  res.rows_dropped = dropped;
  const detail::float_algo<W> algo{cos ? simd::distance_type::l2 : p.distance, d};
  detail::run_training(algo, rows, m, k, p, pool, rng, res);
  return static_cast<kmeans_result<centroid_t<T>>&&>(res);
}

// k-modes over binary codes of nbytes bytes each with hamming distance (Lance's
// KModeAlgo): centroids are bitwise majorities of their members. Same parameters,
// sampling, hierarchy and determinism as train_kmeans; p.distance is ignored.
inline kmeans_result<std::uint8_t> train_kmodes(const std::uint8_t* codes, std::size_t n, std::size_t nbytes,
                                                std::size_t k, const kmeans_params& p = {},
                                                boost::asio::thread_pool* pool = nullptr) {
  detail::check_common(n, nbytes, k, p, codes);
  if (p.init == kmeans_init::kmeans_plus_plus)
    throw invalid_input_error("k-modes: kmeans++ initialisation needs l2; use random or given");
  if (n < k) detail::too_few_rows(n, k, 0);
  detail::rng64 rng(p.seed);
  const std::size_t cap = p.sample_rate == 0 ? n : std::min(n, p.sample_rate * k);
  const auto pick = detail::sample_indices(n, cap, rng);
  std::vector<std::uint8_t> rows(pick.size() * nbytes);
  for (std::size_t i = 0; i < pick.size(); ++i)
    std::copy(codes + pick[i] * nbytes, codes + pick[i] * nbytes + nbytes, rows.data() + i * nbytes);
  detail::result_with_type<std::uint8_t> res;
  res.dimension = nbytes;
  res.distance = simd::distance_type::hamming;
  res.rows_trained = pick.size();
  const detail::kmode_algo algo{nbytes};
  detail::run_training(algo, rows.data(), pick.size(), k, p, pool, rng, res);
  return static_cast<kmeans_result<std::uint8_t>&&>(res);
}

// The partition (nearest centroid) of each of n rows under a trained model, the way
// Lance's IVF assigns them: cosine models normalise each row and use l2 (the
// distance reported is then the l2 distance of the normalised row), dot models use
// 1 - x.y, hamming models compare codes. Rows that match nothing (NaN, +-inf, zero
// rows under cosine) get simd::no_index and a NaN distance. dist may be null.
template <class C, class T>
inline void assign_partitions(const kmeans_result<C>& km, const T* rows, std::size_t n, std::uint32_t* part,
                              simd::work_t<T, C>* dist = nullptr, boost::asio::thread_pool* pool = nullptr) {
  using W = simd::work_t<T, C>;
  const std::size_t d = km.dimension;
  if (km.k == 0 || km.centroids.size() != km.k * d)
    throw invalid_input_error("assign_partitions: the model has no centroids");
  if (km.distance == simd::distance_type::hamming) {
    simd::assign_nearest(simd::distance_type::hamming, rows, n, km.centroids.data(), km.k, d, part, dist, pool);
    return;
  }
  const bool cos = km.distance == simd::distance_type::cosine;
  const simd::packed_centroids<W> pc(cos ? simd::distance_type::l2 : km.distance, km.centroids.data(), km.k, d);
  if (!cos) {
    simd::assign_nearest(pc, rows, n, part, dist, pool);
    return;
  }
  const std::size_t block = 4096;
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    const std::size_t r0 = b * block, cnt = std::min(block, n - r0);
    std::vector<W> buf(cnt * d);
    for (std::size_t r = 0; r < cnt; ++r) {
      W* row = buf.data() + r * d;
      simd::convert_row(rows + (r0 + r) * d, row, d);
      const W nrm = std::sqrt(simd::norm_sq(row, d));
      // zero row: no match (not normalise_row: see train_kmeans's rows)
      const W inv = nrm > W(0) ? W(1) / nrm : std::numeric_limits<W>::quiet_NaN();
      for (std::size_t t = 0; t < d; ++t) row[t] *= inv;
    }
    simd::assign_nearest(pc, buf.data(), cnt, part + r0, dist ? dist + r0 : nullptr);
  });
}

}  // namespace lancet::index
