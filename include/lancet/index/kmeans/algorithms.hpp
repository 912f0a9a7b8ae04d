// The per-iteration algorithms k-means (kmeans.hpp) runs: float_algo (float rows
// under l2 / dot, with exact Hamerly / Yinyang pruning of l2 iterations) and
// kmode_algo (binary codes under hamming: k-modes), each assigning rows and
// computing new centroids; the trainer drives either one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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
#include "lancet/index/kmeans/params.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"
#include "lancet/simd/topk.hpp"

namespace lancet::index::detail {

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
  using simd::vec;
  constexpr std::size_t NW = vec<W>::size;
  constexpr std::size_t NR = NRV * NW;
  const std::size_t d = pc.dimension();
  alignas(64) W iota[NW];
  for (std::size_t l = 0; l < NW; ++l) iota[l] = static_cast<W>(l);
  const vec<W> lane = simd::vload(iota);
  auto finish = [&]<std::size_t R>(const vec<W>(&acc)[R][NRV], std::size_t r0, std::size_t p) {
    const W* ct = pc.cterm() + p * NR;
    for (std::size_t i = 0; i < R; ++i) {
      const vec<W> a(alpha[r0 + i]);
      vec<W> bv = simd::vload(best_v + (r0 + i) * NW);
      vec<W> bi = simd::vload(best_i + (r0 + i) * NW);
      vec<W> sv = simd::vload(second_v + (r0 + i) * NW);
      for (std::size_t v = 0; v < NRV; ++v) {
        const vec<W> val = simd::vfma<W>(a, acc[i][v], simd::vload(ct + v * NW));
        const auto m = val < bv;
        const vec<W> hi = simd::vselect<W>(m, bv, val);  // the larger of val and the best so far
        sv = simd::vselect<W>(hi < sv, hi, sv);
        bv = simd::vselect<W>(m, val, bv);
        bi = simd::vselect<W>(m, lane + vec<W>(static_cast<W>(p * NR + v * NW)), bi);
      }
      simd::vstore(best_v + (r0 + i) * NW, bv);
      simd::vstore(best_i + (r0 + i) * NW, bi);
      simd::vstore(second_v + (r0 + i) * NW, sv);
    }
  };
  for (std::size_t p = 0; p < pc.panels(); ++p) {
    const W* panel = pc.panel(p);
    std::size_t r = 0;
    for (; r + MR <= rows; r += MR) {
      vec<W> acc[MR][NRV];
      simd::dot_tile<W, MR, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
    for (; r < rows; ++r) {
      vec<W> acc[1][NRV];
      simd::dot_tile<W, 1, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
  }
}

// Centroid j belongs to group j % groups (a register lane of the tiled kernel).
template <class W>
inline constexpr std::size_t bound_groups = simd::tile_plan<W>::NW;

// For rows rows of xw (contiguous, working precision): the centroid
// simd::assign_nearest picks, its exact l2 distance, and per group of centroids a
// lower bound on the (not squared) l2 distance to the group's centroids other than
// the chosen one (+inf for a group with none); lower has rows * bound_groups<W> values.
template <class W>
inline void nearest_two(const simd::packed_centroids<W>& pc, const W* xw, std::size_t rows, const double* xnorm,
                        double cmax, std::uint32_t* index, W* dist, float* lower) {
  using plan = simd::tile_plan<W>;
  constexpr std::size_t NW = plan::NW;
  static_assert(NW == bound_groups<W>);
  constexpr W inf = std::numeric_limits<W>::infinity();
  constexpr W down = W(1) - W(0x1.0p-22);
  constexpr float down_f = 1.0f - 0x1.0p-22f;
  const std::size_t d = pc.dimension();
  simd::aligned_array<W> alpha(rows), best_v(rows * NW), best_i(rows * NW), second_v(rows * NW);
  for (std::size_t r = 0; r < rows; ++r) alpha[r] = simd::tile_row_scale(pc.type(), xw + r * d, d);
  std::fill(best_v.data(), best_v.data() + rows * NW, inf);
  std::fill(second_v.data(), second_v.data() + rows * NW, inf);
  std::fill(best_i.data(), best_i.data() + rows * NW, W(0));
  simd::dispatch_tile_shape<W, simd::tile_epilogue::argmin>(pc.nrv(), [&]<std::size_t MR, std::size_t NRV>() {
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
// Large per-row and per-chunk buffers are allocated uninitialised and first written
// inside the parallel passes, so their page faults are spread over the threads rather
// than paid by one thread before the work starts.
struct l2_bounds {
  std::vector<double> xnorm;
  std::unique_ptr<float[]> lower;  // rows * groups
  bool ready = false;              // lower holds bounds for the current memberships
};

// Per-chunk centroid sums and counts (see float_algo::assign_and_average), kept
// across iterations so the buffers are allocated once per run.
struct chunk_sums {
  std::unique_ptr<double[]> sum;   // chunks * k * d (each chunk clears its own)
  std::size_t sum_size = 0;
  std::vector<std::size_t> count;  // chunks * k
  // The order the threads claim chunks in: most rows computed in the previous pass
  // first (with pruning the work per chunk varies), so that no thread is left with a
  // large chunk at the end. Only timing depends on it.
  std::vector<std::size_t> order;
};

// Rows per chunk of centroid sums: a whole number of assignment blocks, and at least
// 16 rows per centroid so that the chunks' sums (k * d doubles each) stay small next
// to the rows. Depends on n, k and d only, never on the thread count.
inline std::size_t sum_chunk_rows(std::size_t block_rows, std::size_t k) {
  const std::size_t want = std::max<std::size_t>(4096, 16 * k);
  return (want + block_rows - 1) / block_rows * block_rows;
}

// Sizes the chunks' sums and counts for chunks chunks of k centroids of d values
// (the sums are reallocated only when their size changes).
inline void size_chunk_sums(chunk_sums& sums, std::size_t chunks, std::size_t k, std::size_t d) {
  if (sums.sum_size != chunks * k * d) {
    sums.sum.reset(new double[chunks * k * d]);
    sums.sum_size = chunks * k * d;
  }
  sums.count.resize(chunks * k);
}

// On the first call of a run (bd's rows not yet sized): the rows' norms, and zero
// bounds, each chunk written by the task that later reads it (see l2_bounds).
template <class W>
inline void init_row_norms(l2_bounds& bd, const W* data, std::size_t n, std::size_t d, std::size_t chunks,
                           std::size_t cr, boost::asio::thread_pool* pool) {
  constexpr std::size_t G = bound_groups<W>;
  if (bd.xnorm.size() == n) return;
  bd.xnorm.resize(n);
  bd.lower.reset(new float[n * G]);
  bd.ready = false;
  parallel_for(pool, chunks, [&](std::size_t c) {
    const std::size_t r0 = c * cr, r1 = std::min(n, (c + 1) * cr);
    std::fill(bd.lower.get() + r0 * G, bd.lower.get() + r1 * G, 0.0f);
    for (std::size_t r = r0; r < r1; ++r) {
      double s = 0;
      for (std::size_t t = 0; t < d; ++t) s += static_cast<double>(data[r * d + t]) * data[r * d + t];
      bd.xnorm[r] = std::sqrt(s);
    }
  });
}

// The largest l2 norm of the k centroids (in double).
template <class W>
inline double max_centroid_norm(const W* centroids, std::size_t k, std::size_t d) {
  double cmax = 0;
  for (std::size_t j = 0; j < k; ++j) {
    double s = 0;
    for (std::size_t t = 0; t < d; ++t) s += static_cast<double>(centroids[j * d + t]) * centroids[j * d + t];
    cmax = std::max(cmax, std::sqrt(s));
  }
  return cmax;
}

// What one pruned pass needs to know about how the centroids moved (see the comment
// on exact pruning above): per group of centroids, the largest and second largest
// shift, the centroid that moved most, how far the group's bounds drop, and the
// groups whose top mover is checked exactly.
template <class W>
struct prune_plan {
  static constexpr std::size_t G = bound_groups<W>;
  // (lo - s) rounded to float can exceed the exact difference by half an ulp:
  // shrinking a positive result by 2^-20 makes it a true lower bound again (and a
  // bound <= 0 never prunes).
  static constexpr float shrink = 1.0f - 0x1.0p-20f;
  double cmax = 0;  // the largest centroid norm
  std::vector<float> s1 = std::vector<float>(G, 0.0f), s2 = std::vector<float>(G, 0.0f);
  std::vector<std::size_t> top, outliers;
  std::vector<float> drop = std::vector<float>(G, 0.0f);
  bool prune = false;  // rows may be skipped (shifts given, bounds ready)
  double dist_slack = 0;

  prune_plan(std::size_t k, std::size_t d)
      : top(G, k),
        dist_slack(1.0 + 2.0 * static_cast<double>(d + 2) * static_cast<double>(std::numeric_limits<W>::epsilon())) {}

  // Per group, the largest and second largest shift (rounded up to float): a row's
  // other centroids in a group moved at most the largest, or the second largest
  // when its own centroid is the one that moved most.
  void rank_shifts(const double* shift, std::size_t k) {
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
  }

  // Groups whose largest shift stands out (above twice the runner-up, e.g. a
  // centroid re-seeded from an empty cluster): rather than letting that one
  // centroid lower every row's bound for the group, its distance is computed
  // exactly for the rows that would otherwise be skipped, and the group's bound
  // drops by the runner-up's shift. At most 4 such groups, the largest shifts.
  void pick_outliers() {
    drop = s1;
    if (!prune) return;
    for (std::size_t g = 0; g < G; ++g)
      if (s1[g] > 2.0f * s2[g]) outliers.push_back(g);
    std::sort(outliers.begin(), outliers.end(), [&](std::size_t a, std::size_t b) { return s1[a] > s1[b]; });
    if (outliers.size() > 4) outliers.resize(4);
    for (std::size_t g : outliers) drop[g] = s2[g];
  }

  // Whether row x (norm xnorm), a member of centroid a < k with bounds low, keeps
  // its centroid for certain; then low holds the bounds after the move and *da the
  // exact distance to a. Otherwise low and *da are left as they were.
  bool keeps_centroid(const W* x, std::uint32_t a, float* low, double xnorm, const W* centroids, std::size_t d,
                      W* da_out) const {
    float moved[G];
    for (std::size_t g = 0; g < G; ++g) moved[g] = (low[g] - drop[g]) * shrink;
    const std::size_t ga = a % G;
    if (top[ga] == a) moved[ga] = (low[ga] - s2[ga]) * shrink;
    float lb = moved[0];
    for (std::size_t g = 1; g < G; ++g) lb = std::min(lb, moved[g]);
    if (!(lb > 0.0f)) return false;
    const W da = simd::l2(x, centroids + a * d, d);
    const double ub2 = static_cast<double>(da) * dist_slack;
    const double lbd = static_cast<double>(lb);
    const double margin = 2.0 * kernel_error<W>(d, xnorm, cmax);
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
      const float lj = float_at_most(std::sqrt(static_cast<double>(simd::l2(x, centroids + j * d, d)) / dist_slack) *
                                     (1.0 - 0x1.0p-40));
      keep = static_cast<double>(lj) * lj - ub2 > margin;
      moved[g] = std::min(moved[g], lj);
    }
    if (!keep) return false;
    std::copy(moved, moved + G, low);
    *da_out = da;
    return true;
  }
};

// One task's buffers for the rows of a block that are not skipped (allocated once
// per chunk).
template <class W>
struct bounded_block_scratch {
  simd::aligned_array<W> rows;  // the rows gathered, contiguous
  std::vector<std::size_t> which;
  std::vector<double> norms;
  std::vector<std::uint32_t> m;
  std::vector<W> dd;
  std::vector<float> lo;
  explicit bounded_block_scratch(std::size_t values) : rows(values) {}
};

// Adds rows b0..b1 (assigned in member) to a chunk's centroid sums acc and counts cnt.
template <class W>
inline void add_block_to_sums(const W* data, std::size_t d, std::size_t b0, std::size_t b1,
                              const std::uint32_t* member, double* acc, std::size_t* cnt) {
  for (std::size_t r = b0; r < b1; ++r) {
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

// The means: per centroid the chunks' sums added in chunk order, divided by the
// count (zeros for an empty cluster), per range of centroids.
template <class W>
inline void average_chunk_sums(const chunk_sums& sums, std::size_t chunks, std::size_t k, std::size_t d, W* next,
                               boost::asio::thread_pool* pool) {
  const std::size_t per = pool ? std::max<std::size_t>(1, (k + 7) / 8) : k;
  parallel_for(pool, (k + per - 1) / per, [&](std::size_t b) {
    std::vector<double> s(d);
    for (std::size_t j = b * per; j < std::min(k, (b + 1) * per); ++j) {
      std::fill(s.begin(), s.end(), 0.0);
      std::size_t total = 0;
      for (std::size_t c = 0; c < chunks; ++c) {
        const double* a = sums.sum.get() + (c * k + j) * d;
        for (std::size_t t = 0; t < d; ++t) s[t] += a[t];
        total += sums.count[c * k + j];
      }
      const double inv = total ? 1.0 / static_cast<double>(total) : 0.0;
      for (std::size_t t = 0; t < d; ++t) next[j * d + t] = static_cast<W>(s[t] * inv);
    }
  });
}

// The next pass claims the chunks with the most rows computed in this one first
// (see chunk_sums::order).
inline void order_chunks_by_work(chunk_sums& sums, const std::vector<std::size_t>& skipped, std::size_t n,
                                 std::size_t cr) {
  const auto computed = [&](std::size_t c) { return std::min(n, (c + 1) * cr) - c * cr - skipped[c]; };
  std::stable_sort(sums.order.begin(), sums.order.end(),
                   [&](std::size_t a, std::size_t b) { return computed(a) > computed(b); });
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
    using plan = simd::tile_plan<W>;
    const simd::packed_centroids<W> pc(dt, centroids, k, d, bd ? nullptr : bias);
    const std::size_t rb = simd::tile_rows_per_block<W>(d, plan::mr_for(pc.nrv()));
    const std::size_t cr = sum_chunk_rows(rb, k);
    const std::size_t chunks = (n + cr - 1) / cr;
    size_chunk_sums(sums, chunks, k, d);

    prune_plan<W> pp(k, d);
    if (bd) {
      init_row_norms(*bd, data, n, d, chunks, cr, pool);
      pp.cmax = max_centroid_norm(centroids, k, d);
      pp.prune = shift != nullptr && bd->ready;
      if (pp.prune) pp.rank_shifts(shift, k);
      pp.pick_outliers();
    }

    std::vector<std::size_t> skipped(chunks, 0);
    if (sums.order.size() != chunks) {
      sums.order.resize(chunks);
      for (std::size_t c = 0; c < chunks; ++c) sums.order[c] = c;
    }
    parallel_for(pool, chunks, [&](std::size_t i) {
      const std::size_t c = sums.order[i];
      const std::size_t c0 = c * cr, c1 = std::min(n, c0 + cr);
      double* acc = sums.sum.get() + c * k * d;
      std::size_t* cnt = sums.count.data() + c * k;
      std::fill(acc, acc + k * d, 0.0);
      std::fill(cnt, cnt + k, std::size_t(0));
      bounded_block_scratch<W> scratch(bd ? rb * d : 0);
      for (std::size_t b0 = c0; b0 < c1; b0 += rb) {
        const std::size_t b1 = std::min(c1, b0 + rb);
        if (!bd)
          simd::assign_nearest(pc, data + b0 * d, b1 - b0, member + b0, dist + b0);
        else
          skipped[c] += assign_block_bounded(pc, pp, centroids, k, data, b0, b1, *bd, member, dist, scratch);
        add_block_to_sums(data, d, b0, b1, member, acc, cnt);
      }
    });
    if (bd) {
      bd->ready = true;
      order_chunks_by_work(sums, skipped, n, cr);
    }

    average_chunk_sums(sums, chunks, k, d, next, pool);
    std::size_t total = 0;
    for (auto s : skipped) total += s;
    return total;
  }

  // Assigns rows b0..b1 with bounds: the rows that keep their centroid for certain
  // are skipped (their distance and bounds updated), the others gathered and
  // assigned by nearest_two, which also gives their new bounds. Returns how many
  // rows were skipped.
  std::size_t assign_block_bounded(const simd::packed_centroids<W>& pc, const prune_plan<W>& pp, const W* centroids,
                                   std::size_t k, const W* data, std::size_t b0, std::size_t b1, l2_bounds& bd,
                                   std::uint32_t* member, W* dist, bounded_block_scratch<W>& s) const {
    constexpr std::size_t G = bound_groups<W>;
    std::size_t skipped = 0;
    s.which.clear();
    s.norms.clear();
    for (std::size_t r = b0; r < b1; ++r) {
      const W* x = data + r * d;
      const std::uint32_t a = member[r];
      if (pp.prune && a < k && pp.keeps_centroid(x, a, bd.lower.get() + r * G, bd.xnorm[r], centroids, d, dist + r)) {
        ++skipped;
        continue;
      }
      std::copy(x, x + d, s.rows.data() + s.which.size() * d);
      s.which.push_back(r);
      s.norms.push_back(bd.xnorm[r]);
    }
    if (!s.which.empty()) {
      s.m.resize(s.which.size());
      s.dd.resize(s.which.size());
      s.lo.resize(s.which.size() * G);
      nearest_two(pc, s.rows.data(), s.which.size(), s.norms.data(), pp.cmax, s.m.data(), s.dd.data(), s.lo.data());
      for (std::size_t i = 0; i < s.which.size(); ++i) {
        member[s.which[i]] = s.m[i];
        dist[s.which[i]] = s.dd[i];
        std::copy(s.lo.data() + i * G, s.lo.data() + (i + 1) * G, bd.lower.get() + s.which[i] * G);
      }
    }
    return skipped;
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

}  // namespace lancet::index::detail
