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
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"
#include "lancet/simd/topk.hpp"

namespace lancet::index {

enum class kmeans_init : std::uint8_t {
  random,            // k distinct training rows chosen at random (Lance's default)
  kmeans_plus_plus,  // D^2 seeding (Arthur & Vassilvitskii), l2 distances
  given,             // kmeans_params::initial_centroids (Lance's "incremental")
};

enum class kmeans_stage : std::uint8_t {
  flat,          // a flat run (the only stage when k <= 256)
  hierarchical,  // a sub-run while splitting clusters in hierarchical training
};

struct kmeans_progress {
  kmeans_stage stage;
  std::size_t redo;         // 1-based run number
  std::uint32_t iteration;  // 1-based, within the current run
  std::uint32_t max_iters;
  double loss;              // loss of this iteration's assignment
  std::size_t clusters;     // hierarchical: clusters made so far; flat: k of the run
  std::size_t target_k;     // the k asked for
};

// Called after every iteration; return false to cancel (train_kmeans then throws
// lancet::cancelled_error). It may also throw to abort.
using kmeans_progress_fn = std::function<bool(const kmeans_progress&)>;

struct kmeans_params {
  std::uint32_t max_iters = 50;
  double tolerance = 1e-4;  // on the relative change of the loss
  std::size_t redos = 1;
  kmeans_init init = kmeans_init::random;
  simd::distance_type distance = simd::distance_type::l2;
  float balance_factor = 0.0f;     // 0: plain k-means; Lance's IVF uses 1
  std::size_t hierarchical_k = 16; // hierarchical when k > 256 and this > 1
  std::uint64_t seed = 42;
  std::size_t sample_rate = 256;   // train on at most sample_rate * k rows; 0: all rows
  // l2 without a balance term: skip the rows whose nearest centroid cannot have changed
  // (bounds from how far the centroids moved). Exact: the same result either way.
  bool prune = true;
  std::vector<float> initial_centroids;  // k * dim, for kmeans_init::given
  kmeans_progress_fn on_progress;
};

template <class C>
struct kmeans_result {
  std::vector<C> centroids;  // k * dimension, row-major
  std::size_t k = 0;
  std::size_t dimension = 0;
  // Sum over the training rows of the distance to their centroid at the last
  // assignment (plus the balance term). Hierarchical: each row against the centroid
  // of the leaf cluster it ended in.
  double loss = 0;
  std::uint32_t iterations = 0;  // all iterations run, every redo and sub-run included
  // Row assignments made by the iterations (rows x iterations), and how many of them
  // kmeans_params::prune skipped (their centroid provably could not change).
  std::size_t rows_assigned = 0;
  std::size_t rows_pruned = 0;
  bool hierarchical = false;
  std::size_t rows_trained = 0;  // rows in the training sample after filtering
  std::size_t rows_dropped = 0;  // sampled rows dropped (non-finite; zero under cosine)
  simd::distance_type distance = simd::distance_type::l2;
};

// Centroids come back in the element type for floating inputs (as Lance) and as float
// for uint8 rows (trained in float).
template <class T>
using centroid_t = std::conditional_t<std::is_same_v<T, std::uint8_t>, float, T>;

namespace detail {

// splitmix64: small, fast and the same on every platform and standard library.
class rng64 {
 public:
  explicit rng64(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), without modulo bias (rejects the short top range).
  std::uint64_t below(std::uint64_t n) {
    if (n <= 1) return 0;
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t s_;
};

// k-means++'s D^2 draw: a row with probability proportional to mind[r] (its squared
// distance to the nearest centroid so far; `total` their sum), or a uniform row when
// every row sits on a centroid. Used by plus_plus below and by PQ's sub-vector
// k-means (quantizer/pq.hpp).
template <class D>
inline std::size_t d2_draw(const D* mind, std::size_t n, double total, rng64& rng) {
  if (!(total > 0)) return static_cast<std::size_t>(rng.below(n));
  const double target = rng.uniform01() * total;
  double acc = 0;
  for (std::size_t r = 0; r < n; ++r) {
    acc += static_cast<double>(mind[r]);
    if (acc > target && mind[r] > 0) return r;
  }
  return n - 1;
}

// m distinct indices from [0, n), ascending.
inline std::vector<std::size_t> sample_indices(std::size_t n, std::size_t m, rng64& rng) {
  std::vector<std::size_t> out;
  if (m >= n) {
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  if (m * 4 >= n) {  // selection sampling (Knuth's algorithm S)
    out.reserve(m);
    for (std::size_t i = 0; i < n && out.size() < m; ++i)
      if (rng.below(n - i) < m - out.size()) out.push_back(i);
    return out;
  }
  std::unordered_set<std::size_t> chosen;  // Floyd's algorithm
  chosen.reserve(m * 2);
  for (std::size_t j = n - m; j < n; ++j) {
    const std::size_t t = static_cast<std::size_t>(rng.below(j + 1));
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  out.assign(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

[[noreturn]] inline void cancelled(const kmeans_progress& pr) {
  throw cancelled_error("k-means cancelled by the progress callback at iteration " +
                        std::to_string(pr.iteration) + " of run " + std::to_string(pr.redo));
}

// A bound on the tiled kernel's rounding error in |c|^2 - 2 x.c (dot products and
// norms of d terms, then one fused multiply-add), doubled for safety: |x| and the
// largest centroid norm in double.
template <class W>
inline double kernel_error(std::size_t d, double xnorm, double cmax) {
  const double eps = static_cast<double>(std::numeric_limits<W>::epsilon());
  return 2.0 * static_cast<double>(d + 2) * eps * (xnorm + cmax) * (xnorm + cmax);
}

// The largest float not above v (+-inf and NaN stay as they are).
inline float float_at_most(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

// The smallest float not below v.
inline float float_at_least(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

// ---- exact pruning for l2 iterations (Hamerly / Yinyang bounds) ---------------------
//
// After the first iterations most rows keep their centroid. Per row and per group of
// centroids we keep a lower bound on the distance to the group's centroids other than
// the row's own; when the centroids move by shift[j], a group's bound drops by at most
// the largest shift in the group (triangle inequality), while the distance to the
// row's own centroid is recomputed exactly (the loss needs it anyway; the row is read
// for the centroid sums in the same pass). When one centroid of a group moved far
// more than the others (a re-seeded empty cluster), the group's bound drops by the
// runner-up's shift and that centroid's distance is checked exactly instead.
// A row is skipped when the gap between the two exceeds what the tiled kernel's
// rounding could bridge, so the kernel would pick the same centroid: results are the
// same as without pruning, bit for bit. The other rows are gathered and go through
// the tiled kernel, which also reports the runner-up, the new lower bound.

// assign_nearest's arg-min epilogue plus, per lane, the second smallest value.
template <class W, std::size_t MR, std::size_t NRV>
inline void run_panels_two(const simd::packed_centroids<W>& pc, const W* xw, std::size_t rows, const W* alpha,
                           W* best_v, W* best_i, W* second_v) {
  using simd::detail::vec;
  constexpr std::size_t NW = vec<W>::size;
  constexpr std::size_t NR = NRV * NW;
  const std::size_t d = pc.dimension();
  alignas(64) W iota[NW];
  for (std::size_t l = 0; l < NW; ++l) iota[l] = static_cast<W>(l);
  const vec<W> lane = simd::detail::vload(iota);
  auto finish = [&]<std::size_t R>(const vec<W>(&acc)[R][NRV], std::size_t r0, std::size_t p) {
    const W* ct = pc.cterm() + p * NR;
    for (std::size_t i = 0; i < R; ++i) {
      const vec<W> a(alpha[r0 + i]);
      vec<W> bv = simd::detail::vload(best_v + (r0 + i) * NW);
      vec<W> bi = simd::detail::vload(best_i + (r0 + i) * NW);
      vec<W> sv = simd::detail::vload(second_v + (r0 + i) * NW);
      for (std::size_t v = 0; v < NRV; ++v) {
        const vec<W> val = simd::detail::vfma<W>(a, acc[i][v], simd::detail::vload(ct + v * NW));
        const auto m = val < bv;
        const vec<W> hi = simd::detail::vselect<W>(m, bv, val);  // the larger of val and the best so far
        sv = simd::detail::vselect<W>(hi < sv, hi, sv);
        bv = simd::detail::vselect<W>(m, val, bv);
        bi = simd::detail::vselect<W>(m, lane + vec<W>(static_cast<W>(p * NR + v * NW)), bi);
      }
      simd::detail::vstore(best_v + (r0 + i) * NW, bv);
      simd::detail::vstore(best_i + (r0 + i) * NW, bi);
      simd::detail::vstore(second_v + (r0 + i) * NW, sv);
    }
  };
  for (std::size_t p = 0; p < pc.panels(); ++p) {
    const W* panel = pc.panel(p);
    std::size_t r = 0;
    for (; r + MR <= rows; r += MR) {
      vec<W> acc[MR][NRV];
      simd::detail::dot_tile<W, MR, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
    for (; r < rows; ++r) {
      vec<W> acc[1][NRV];
      simd::detail::dot_tile<W, 1, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
  }
}

// Centroid j belongs to group j % groups (a register lane of the tiled kernel).
template <class W>
inline constexpr std::size_t bound_groups = simd::detail::tile_plan<W>::NW;

// For rows rows of xw (contiguous, working precision): the centroid
// simd::assign_nearest picks, its exact l2 distance, and per group of centroids a
// lower bound on the (not squared) l2 distance to the group's centroids other than
// the chosen one (+inf for a group with none); lower has rows * bound_groups<W> values.
template <class W>
inline void nearest_two(const simd::packed_centroids<W>& pc, const W* xw, std::size_t rows, const double* xnorm,
                        double cmax, std::uint32_t* index, W* dist, float* lower) {
  using plan = simd::detail::tile_plan<W>;
  constexpr std::size_t NW = plan::NW;
  static_assert(NW == bound_groups<W>);
  constexpr W inf = std::numeric_limits<W>::infinity();
  constexpr W down = W(1) - W(0x1.0p-22);
  constexpr float down_f = 1.0f - 0x1.0p-22f;
  const std::size_t d = pc.dimension();
  simd::detail::aligned_array<W> alpha(rows), best_v(rows * NW), best_i(rows * NW), second_v(rows * NW);
  for (std::size_t r = 0; r < rows; ++r) alpha[r] = simd::detail::row_alpha(pc.type(), xw + r * d, d);
  std::fill(best_v.data(), best_v.data() + rows * NW, inf);
  std::fill(second_v.data(), second_v.data() + rows * NW, inf);
  std::fill(best_i.data(), best_i.data() + rows * NW, W(0));
  simd::detail::dispatch_nrv<W, simd::detail::epilogue::argmin>(pc.nrv(), [&]<std::size_t MR, std::size_t NRV>() {
    run_panels_two<W, MR, NRV>(pc, xw, rows, alpha.data(), best_v.data(), best_i.data(), second_v.data());
  });
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint32_t bi = simd::no_index;
    W bv = inf;
    std::size_t bl = 0;
    for (std::size_t l = 0; l < NW; ++l) {  // assign_nearest's reduction over lanes
      const W v = best_v[r * NW + l];
      if (!(v < inf)) continue;
      const auto j = static_cast<std::uint32_t>(best_i[r * NW + l]);
      if (bi == simd::no_index || v < bv || (v == bv && j < bi)) {
        bv = v;
        bi = j;
        bl = l;
      }
    }
    float* lo = lower + r * NW;
    if (bi == simd::no_index || std::isnan(alpha[r])) {  // not finite: never pruned
      std::uint32_t one = 0;
      W dd = 0;
      simd::assign_nearest(pc, xw + r * d, 1, &one, &dd);
      index[r] = one;
      dist[r] = dd;
      std::fill(lo, lo + NW, 0.0f);
      continue;
    }
    index[r] = bi;
    dist[r] = simd::l2(xw + r * d, pc.centroid(bi), d);
    // |x - c_j|^2 = |x|^2 + (|c_j|^2 - 2 x.c_j) >= |x|^2 + v - (the kernel's error).
    // In W, every rounding step pushed down by a factor (1 - 2^-22) (more than the
    // half ulp it can add), so each lane stays a true lower bound; +inf stays +inf.
    const double base = xnorm[r] * xnorm[r] - kernel_error<W>(d, xnorm[r], cmax);
    const W base_w = std::is_same_v<W, float> ? static_cast<W>(float_at_most(base)) : static_cast<W>(base);
    for (std::size_t l = 0; l < NW; ++l) {  // branch-free but the square root (t >= 0 here)
      const W v = l == bl ? second_v[r * NW + l] : best_v[r * NW + l];
      W t = (base_w + v) * down;
      t = t > W(0) ? t : W(0);
      lo[l] = static_cast<float>(std::sqrt(t)) * down_f;
    }
  }
}

// Per training run: the rows' norms and lower bounds for float_algo's pruned
// assignment. Bounds are stored as float, rounded down (half the memory traffic of
// doubles; a smaller lower bound only prunes less).
struct l2_bounds {
  std::vector<double> xnorm;
  std::vector<float> lower;  // rows * groups
  bool ready = false;        // lower holds bounds for the current memberships
};

// Per-chunk centroid sums and counts (see float_algo::assign_and_average), kept
// across iterations so the buffers are allocated once per run.
struct chunk_sums {
  std::vector<double> sum;         // chunks * k * d
  std::vector<std::size_t> count;  // chunks * k
};

// Rows per chunk of centroid sums: a whole number of assignment blocks, and at least
// 16 rows per centroid so that the chunks' sums (k * d doubles each) stay small next
// to the rows. Depends on n, k and d only, never on the thread count.
inline std::size_t sum_chunk_rows(std::size_t block_rows, std::size_t k) {
  const std::size_t want = std::max<std::size_t>(4096, 16 * k);
  return (want + block_rows - 1) / block_rows * block_rows;
}

// ---- algorithms: float rows (l2 / dot) and binary codes (hamming, k-modes) ---------

template <class W>
struct float_algo {
  using value_type = W;
  using dist_type = W;
  simd::distance_type dt;  // l2 or dot
  std::size_t d;

  void assign(const W* centroids, std::size_t k, const W* data, std::size_t n, const W* bias,
              std::uint32_t* member, W* dist, boost::asio::thread_pool* pool) const {
    simd::packed_centroids<W> pc(dt, centroids, k, d, bias);
    simd::assign_nearest(pc, data, n, member, dist, pool);
  }

  // One Lloyd's iteration in a single pass over the rows: each task takes a chunk of
  // rows; per block of the chunk it assigns the rows (assign()'s members and
  // distances) and, while the block is still in cache, adds them to the chunk's
  // centroid sums. The chunks' sums are then added in chunk order and divided by the
  // counts (empty clusters get zeros), so the means do not depend on the thread count.
  //
  // bd null: plain assignment (bias allowed). bd set (l2, no bias): rows whose
  // centroid cannot change are skipped (see nearest_two); shift[j] is how far
  // centroid j moved since the previous call (null: compute every row). Either way
  // members, distances and means are the same. Returns how many rows were skipped.
  std::size_t assign_and_average(const W* centroids, std::size_t k, const W* data, std::size_t n, const W* bias,
                                 l2_bounds* bd, const double* shift, std::uint32_t* member, W* dist, W* next,
                                 chunk_sums& sums, boost::asio::thread_pool* pool) const {
    using plan = simd::detail::tile_plan<W>;
    constexpr std::size_t G = bound_groups<W>;
    const simd::packed_centroids<W> pc(dt, centroids, k, d, bd ? nullptr : bias);
    const std::size_t rb = simd::detail::rows_per_block<W>(d, plan::mr_for(pc.nrv()));
    const std::size_t cr = sum_chunk_rows(rb, k);
    const std::size_t chunks = (n + cr - 1) / cr;
    sums.sum.resize(chunks * k * d);
    sums.count.resize(chunks * k);

    double cmax = 0;
    std::vector<float> s1(G, 0.0f), s2(G, 0.0f);
    std::vector<std::size_t> top(G, k), outliers;
    std::vector<float> drop(G, 0.0f);
    bool prune = false;
    if (bd) {
      if (bd->xnorm.size() != n) {
        bd->xnorm.resize(n);
        bd->lower.assign(n * G, 0.0f);
        bd->ready = false;
        parallel_for(pool, chunks, [&](std::size_t c) {
          for (std::size_t r = c * cr; r < std::min(n, (c + 1) * cr); ++r) {
            double s = 0;
            for (std::size_t t = 0; t < d; ++t) s += static_cast<double>(data[r * d + t]) * data[r * d + t];
            bd->xnorm[r] = std::sqrt(s);
          }
        });
      }
      for (std::size_t j = 0; j < k; ++j) {
        double s = 0;
        for (std::size_t t = 0; t < d; ++t) s += static_cast<double>(centroids[j * d + t]) * centroids[j * d + t];
        cmax = std::max(cmax, std::sqrt(s));
      }
      // Per group, the largest and second largest shift (rounded up to float): a
      // row's other centroids in a group moved at most the largest, or the second
      // largest when its own centroid is the one that moved most.
      prune = shift != nullptr && bd->ready;
      if (prune)
        for (std::size_t j = 0; j < k; ++j) {
          const std::size_t g = j % G;
          const float sj = float_at_least(shift[j]);
          if (sj > s1[g]) {
            s2[g] = s1[g];
            s1[g] = sj;
            top[g] = j;
          } else if (sj > s2[g]) {
            s2[g] = sj;
          }
        }
      // Groups whose largest shift stands out (above twice the runner-up, e.g. a
      // centroid re-seeded from an empty cluster): rather than letting that one
      // centroid lower every row's bound for the group, its distance is computed
      // exactly for the rows that would otherwise be skipped, and the group's bound
      // drops by the runner-up's shift. At most 4 such groups, the largest shifts.
      drop = s1;
      if (prune) {
        for (std::size_t g = 0; g < G; ++g)
          if (s1[g] > 2.0f * s2[g]) outliers.push_back(g);
        std::sort(outliers.begin(), outliers.end(), [&](std::size_t a, std::size_t b) { return s1[a] > s1[b]; });
        if (outliers.size() > 4) outliers.resize(4);
        for (std::size_t g : outliers) drop[g] = s2[g];
      }
    }
    // (lo - s) rounded to float can exceed the exact difference by half an ulp:
    // shrinking a positive result by 2^-20 makes it a true lower bound again (and a
    // bound <= 0 never prunes).
    constexpr float shrink = 1.0f - 0x1.0p-20f;
    const double dist_slack = 1.0 + 2.0 * static_cast<double>(d + 2) * static_cast<double>(std::numeric_limits<W>::epsilon());

    std::vector<std::size_t> skipped(chunks, 0);
    parallel_for(pool, chunks, [&](std::size_t c) {
      const std::size_t c0 = c * cr, c1 = std::min(n, c0 + cr);
      double* acc = sums.sum.data() + c * k * d;
      std::size_t* cnt = sums.count.data() + c * k;
      std::fill(acc, acc + k * d, 0.0);
      std::fill(cnt, cnt + k, std::size_t(0));
      simd::detail::aligned_array<W> rows(bd ? rb * d : 0);
      std::vector<std::size_t> which;
      std::vector<double> norms;
      std::vector<std::uint32_t> m;
      std::vector<W> dd;
      std::vector<float> lo;
      for (std::size_t b0 = c0; b0 < c1; b0 += rb) {
        const std::size_t b1 = std::min(c1, b0 + rb);
        if (!bd) {
          simd::assign_nearest(pc, data + b0 * d, b1 - b0, member + b0, dist + b0);
        } else {
          which.clear();
          norms.clear();
          for (std::size_t r = b0; r < b1; ++r) {
            const W* x = data + r * d;
            const std::uint32_t a = member[r];
            if (prune && a < k) {
              float* low = bd->lower.data() + r * G;
              float moved[G];
              for (std::size_t g = 0; g < G; ++g) moved[g] = (low[g] - drop[g]) * shrink;
              const std::size_t ga = a % G;
              if (top[ga] == a) moved[ga] = (low[ga] - s2[ga]) * shrink;
              float lb = moved[0];
              for (std::size_t g = 1; g < G; ++g) lb = std::min(lb, moved[g]);
              if (lb > 0.0f) {
                const W da = simd::l2(x, centroids + a * d, d);
                const double ub2 = static_cast<double>(da) * dist_slack;
                const double lbd = static_cast<double>(lb);
                const double margin = 2.0 * kernel_error<W>(d, bd->xnorm[r], cmax);
                bool keep = lbd * lbd - ub2 > margin;
                for (std::size_t i = 0; keep && i < outliers.size(); ++i) {
                  const std::size_t g = outliers[i], j = top[g];
                  if (j == a) continue;
                  const float full = (low[g] - s1[g]) * shrink;  // the bound counting the top mover's shift
                  if (full > 0.0f && static_cast<double>(full) * full - ub2 > margin) {
                    moved[g] = full;
                    continue;
                  }
                  // simd::l2 is within the same relative slack of the true distance.
                  const float lj = float_at_most(
                      std::sqrt(static_cast<double>(simd::l2(x, centroids + j * d, d)) / dist_slack) * (1.0 - 0x1.0p-40));
                  keep = static_cast<double>(lj) * lj - ub2 > margin;
                  moved[g] = std::min(moved[g], lj);
                }
                if (keep) {
                  std::copy(moved, moved + G, low);
                  dist[r] = da;
                  ++skipped[c];
                  continue;
                }
              }
            }
            std::copy(x, x + d, rows.data() + which.size() * d);
            which.push_back(r);
            norms.push_back(bd->xnorm[r]);
          }
          if (!which.empty()) {
            m.resize(which.size());
            dd.resize(which.size());
            lo.resize(which.size() * G);
            nearest_two(pc, rows.data(), which.size(), norms.data(), cmax, m.data(), dd.data(), lo.data());
            for (std::size_t i = 0; i < which.size(); ++i) {
              member[which[i]] = m[i];
              dist[which[i]] = dd[i];
              std::copy(lo.data() + i * G, lo.data() + (i + 1) * G, bd->lower.data() + which[i] * G);
            }
          }
        }
        for (std::size_t r = b0; r < b1; ++r) {  // the block's rows into the chunk's sums
          const std::uint32_t mr = member[r];
          if (mr == simd::no_index) continue;
          double* a = acc + mr * d;
          const W* row = data + r * d;
          std::size_t t = 0;
          for (; t + 8 <= d; t += 8)  // fixed-width chunks: GCC vectorises these at -O2
            for (std::size_t u = 0; u < 8; ++u) a[t + u] += static_cast<double>(row[t + u]);
          for (; t < d; ++t) a[t] += static_cast<double>(row[t]);
          ++cnt[mr];
        }
      }
    });
    if (bd) bd->ready = true;

    // Means: chunk sums added in chunk order, per range of centroids.
    const std::size_t per = pool ? std::max<std::size_t>(1, (k + 7) / 8) : k;
    parallel_for(pool, (k + per - 1) / per, [&](std::size_t b) {
      std::vector<double> s(d);
      for (std::size_t j = b * per; j < std::min(k, (b + 1) * per); ++j) {
        std::fill(s.begin(), s.end(), 0.0);
        std::size_t total = 0;
        for (std::size_t c = 0; c < chunks; ++c) {
          const double* a = sums.sum.data() + (c * k + j) * d;
          for (std::size_t t = 0; t < d; ++t) s[t] += a[t];
          total += sums.count[c * k + j];
        }
        const double inv = total ? 1.0 / static_cast<double>(total) : 0.0;
        for (std::size_t t = 0; t < d; ++t) next[j * d + t] = static_cast<W>(s[t] * inv);
      }
    });
    std::size_t total = 0;
    for (auto s : skipped) total += s;
    return total;
  }

  // Re-seeds empty cluster i from cluster j (Lance's split: scale the coordinates by
  // 1 +- 1/1024, alternating, so the two move apart).
  void split(W* centroids, std::size_t i, std::size_t j, const W*, std::size_t, const std::uint32_t*,
             const W*) const {
    const W eps = W(1) / W(1024);
    W* ci = centroids + i * d;
    W* cj = centroids + j * d;
    for (std::size_t t = 0; t < d; ++t) {
      if (t % 2 == 0) {
        ci[t] = cj[t] * (W(1) + eps);
        cj[t] *= W(1) - eps;
      } else {
        ci[t] = cj[t] * (W(1) - eps);
        cj[t] *= W(1) + eps;
      }
    }
  }
};

struct kmode_algo {
  using value_type = std::uint8_t;
  using dist_type = float;
  std::size_t d;  // bytes per code

  void assign(const std::uint8_t* centroids, std::size_t k, const std::uint8_t* data, std::size_t n,
              const float* bias, std::uint32_t* member, float* dist, boost::asio::thread_pool* pool) const {
    const std::size_t rb = 512;
    parallel_for(pool, (n + rb - 1) / rb, [&](std::size_t b) {
      for (std::size_t r = b * rb; r < std::min(n, (b + 1) * rb); ++r) {
        std::uint32_t bi = simd::no_index;
        float bv = std::numeric_limits<float>::infinity(), braw = 0;
        for (std::size_t j = 0; j < k; ++j) {
          const float h = simd::hamming(data + r * d, centroids + j * d, d);
          const float v = bias ? h + bias[j] : h;
          if (v < bv) {
            bv = v;
            braw = h;
            bi = static_cast<std::uint32_t>(j);
          }
        }
        member[r] = bi;
        dist[r] = bi == simd::no_index ? std::numeric_limits<float>::quiet_NaN() : braw;
      }
    });
  }

  // Bitwise majority of the members (a bit is set when more than half have it).
  void means(const std::uint8_t* data, std::size_t n, const std::uint32_t* member,
             const std::vector<std::size_t>& sizes, std::size_t k, std::uint8_t* out,
             boost::asio::thread_pool* pool) const {
    const std::size_t chunk = 16;
    parallel_for(pool, (k + chunk - 1) / chunk, [&](std::size_t b) {
      const std::size_t j0 = b * chunk, j1 = std::min(k, (b + 1) * chunk);
      std::vector<std::uint32_t> ones((j1 - j0) * d * 8, 0);
      for (std::size_t r = 0; r < n; ++r) {
        const std::uint32_t m = member[r];
        if (m == simd::no_index || m < j0 || m >= j1) continue;
        std::uint32_t* o = ones.data() + (m - j0) * d * 8;
        for (std::size_t t = 0; t < d; ++t)
          for (int bit = 0; bit < 8; ++bit) o[t * 8 + static_cast<std::size_t>(bit)] += (data[r * d + t] >> bit) & 1u;
      }
      for (std::size_t j = j0; j < j1; ++j) {
        const std::uint32_t* o = ones.data() + (j - j0) * d * 8;
        for (std::size_t t = 0; t < d; ++t) {
          std::uint8_t byte = 0;
          for (int bit = 0; bit < 8; ++bit)
            if (2 * static_cast<std::size_t>(o[t * 8 + static_cast<std::size_t>(bit)]) > sizes[j])
              byte = static_cast<std::uint8_t>(byte | (1u << bit));
          out[j * d + t] = byte;
        }
      }
    });
  }

  // Re-seeds empty cluster i with the member of cluster j farthest from j's centroid.
  void split(std::uint8_t* centroids, std::size_t i, std::size_t j, const std::uint8_t* data, std::size_t n,
             const std::uint32_t* member, const float*) const {
    std::size_t far = n;
    float fd = -1;
    for (std::size_t r = 0; r < n; ++r) {
      if (member[r] != j) continue;
      const float h = simd::hamming(data + r * d, centroids + j * d, d);
      if (h > fd) {
        fd = h;
        far = r;
      }
    }
    if (far < n) std::copy(data + far * d, data + far * d + d, centroids + i * d);
  }
};

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
  std::vector<W> rows;
  rows.reserve(pick.size() * d);
  std::vector<W> tmp(d);
  std::size_t dropped = 0;
  for (std::size_t r : pick) {
    simd::detail::convert_row(data + r * d, tmp.data(), d);
    const W nsq = simd::norm_sq(tmp.data(), d);
    bool ok = std::isfinite(nsq);
    if (ok)
      for (std::size_t t = 0; t < d; ++t) ok = ok && std::isfinite(tmp[t]);
    if (ok && cos) {
      const W nrm = std::sqrt(nsq);
      ok = nrm > W(0);
      for (std::size_t t = 0; t < d && ok; ++t) tmp[t] /= nrm;
    }
    if (!ok) {
      ++dropped;
      continue;
    }
    rows.insert(rows.end(), tmp.begin(), tmp.end());
  }
  const std::size_t m = rows.size() / d;
  if (m < k) detail::too_few_rows(m, k, dropped);

  detail::result_with_type<centroid_t<T>> res;
  res.dimension = d;
  res.distance = p.distance;
  res.rows_trained = m;
  res.rows_dropped = dropped;
  const detail::float_algo<W> algo{cos ? simd::distance_type::l2 : p.distance, d};
  detail::run_training(algo, rows.data(), m, k, p, pool, rng, res);
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
      simd::detail::convert_row(rows + (r0 + r) * d, row, d);
      const W nrm = std::sqrt(simd::norm_sq(row, d));
      const W inv = nrm > W(0) ? W(1) / nrm : std::numeric_limits<W>::quiet_NaN();  // zero row: no match
      for (std::size_t t = 0; t < d; ++t) row[t] *= inv;
    }
    simd::assign_nearest(pc, buf.data(), cnt, part + r0, dist ? dist + r0 : nullptr);
  });
}

}  // namespace lancet::index
