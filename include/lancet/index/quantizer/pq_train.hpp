// Product quantization's model (quantizer/pq.hpp says how it follows Lance): params,
// the codebook model, training (plain and inside an IVF index, on residuals),
// encoding rows to codes, decoding codes, and the model to / from the stored
// pq_params. Scanning codes against a query is in pq_scan.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>


#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer_storage.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"

namespace lancet::index::pq {

using simd::distance_type;

struct params {
  std::size_t num_sub_vectors = 16;
  std::uint32_t num_bits = 8;        // 8, or 4 (two codes per byte)
  std::uint32_t max_iters = 50;      // k-means iterations per sub-vector
  std::size_t kmeans_redos = 1;
  std::size_t sample_rate = 256;     // training rows: sample_rate * 2^num_bits
  // At most this many training rows (0: no limit beyond Lance's sample). The IVF
  // builder sets it when its memory budget cannot hold Lance's sample: fewer rows
  // than Lance trains on, a lancet deviation (at least 2^num_bits rows).
  std::size_t max_sample_rows = 0;
  // Initial centroids of each sub-vector's k-means: k distinct random rows (random,
  // Lance's) or k-means++ seeding. Unset: k-means++ for dot-product codebooks with
  // 8-bit codes and sub-vectors of 2 values, or of 4 values when there are at most 8
  // sub-vectors (raw vectors, whose top dot products sit in the tails that D^2
  // seeding covers: recall +0.04-0.09 at width 2 for 16-768 dimensions, +0.03-0.04
  // at width 4 for 16-32; bench/RESULTS.md issue 14 "PQ recall"); random rows
  // otherwise (on l2 residuals, 4-bit codes, wider or more sub-vectors k-means++
  // lowers the distortion, not the recall).
  std::optional<kmeans_init> init;
  std::uint64_t seed = 42;
  // The draw of the training sample; unset: seed. The IVF builder draws it apart from
  // its k-means sample, as Lance samples the quantizer's rows independently of the
  // IVF's: with one draw, whenever both samples are the same size (k = 2^num_bits
  // partitions) PQ would train on the residuals of exactly the rows the centroids were
  // fitted to, which are smaller than the other rows' residuals.
  std::optional<std::uint64_t> sample_seed;
  // Lance's codebook is where each sub-vector's k-means run ends. Where a codebook of
  // the same runs stopped earlier (after 1, 3 or 10 iterations) ranks the training
  // sample's own nearest neighbours clearly better, lancet keeps that one instead
  // (pq_iterate.hpp says how it is checked): converged code words minimise squared
  // error, not ranking error, and on data whose neighbours sit in dense regions they
  // spread away from them (4-bit codes: recall +0.01 to +0.04; bench_ivf's 8-bit
  // codes +0.018; bench/RESULTS.md "PQ codebooks: the iterate that ranks best" and
  // "... ranked within partitions"). false: always the ends, as Lance.
  bool choose_iterate = true;
  // Called after each sub-vector's codebook is trained (one call at a time, from the
  // thread that trained it) with the sub-vectors done so far and in all; return
  // false to cancel (training then throws lancet::cancelled_error).
  std::function<bool(std::size_t done, std::size_t total)> on_progress;

  std::uint64_t sample_draw() const noexcept { return sample_seed.value_or(seed); }

  std::size_t sample_size() const noexcept {
    const std::size_t lance = sample_rate << num_bits;
    return max_sample_rows ? std::min(lance, max_sample_rows) : lance;
  }
};

// Lance quantizes residuals for l2 and cosine, raw vectors for dot.
inline bool uses_residual(distance_type t) noexcept {
  return t == distance_type::l2 || t == distance_type::cosine;
}

// A trained product quantizer. The codebook has the element type of the vectors it
// was trained on (Lance stores an f16 codebook for f16 vectors).
template <class C>
struct model {
  std::size_t dimension = 0;
  std::size_t num_sub_vectors = 0;
  std::uint32_t num_bits = 8;
  // How distance tables are built: l2 or dot. Cosine indexes are l2 over normalised
  // vectors (Lance turns cosine into l2 when it loads a PQ index).
  distance_type distance = distance_type::l2;
  std::vector<C> codebook;  // [num_sub_vectors][2^num_bits][dimension / num_sub_vectors]
  // When training kept an earlier iterate (params::choose_iterate): its k-means
  // iterations; 0 for the end of the runs (Lance's codebook) or a given codebook.
  std::uint32_t iterate = 0;

  std::size_t sub_dimension() const noexcept { return num_sub_vectors ? dimension / num_sub_vectors : 0; }
  std::size_t num_centroids() const noexcept { return std::size_t(1) << num_bits; }
  // Bytes of one row's code: m for 8 bits, m / 2 for 4 bits.
  std::size_t code_bytes() const noexcept { return num_bits == 4 ? num_sub_vectors / 2 : num_sub_vectors; }
  // The 2^num_bits centroids of sub-vector s, [2^num_bits][sub_dimension].
  const C* centroids(std::size_t s) const noexcept { return codebook.data() + s * num_centroids() * sub_dimension(); }

  // Throws invalid_input_error when the shape is inconsistent.
  void validate() const {
    if (num_bits != 4 && num_bits != 8)
      throw invalid_input_error("PQ: num_bits " + std::to_string(num_bits) + " is not supported (4 or 8)");
    if (num_sub_vectors == 0) throw invalid_input_error("PQ: num_sub_vectors must be positive");
    if (dimension == 0 || dimension % num_sub_vectors != 0)
      throw invalid_input_error("PQ: num_sub_vectors must divide vector dimension " + std::to_string(dimension) +
                                ", but got " + std::to_string(num_sub_vectors));
    if (num_bits == 4 && num_sub_vectors % 2 != 0)
      throw invalid_input_error("PQ: num_sub_vectors must be divisible by 2 for num_bits=4, but got " +
                                std::to_string(num_sub_vectors));
    if (distance != distance_type::l2 && distance != distance_type::dot)
      throw invalid_input_error(std::string("PQ: distance tables are l2 or dot, not ") +
                                simd::distance_name(distance));
    if (codebook.size() != num_centroids() * dimension)
      throw invalid_input_error("PQ: codebook has " + std::to_string(codebook.size()) + " values, expected " +
                                std::to_string(num_centroids() * dimension) + " (2^num_bits * dimension)");
  }
};

namespace detail {

inline void check_params(const params& p, std::size_t d) {
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

// The nearest of k centroids (k x d, row-major) for short vectors stored column-major
// (value t of row r at cols[t * stride + r]); the lowest index wins a tie and a row
// without a finite distance gets 0 (Lance's compute_partition). Ranks by
// |c|^2 - 2 x.c, 2 x SIMD-width rows at a time held in registers, every centroid
// streamed past them; sub-vectors longer than 16 use the tiled kernel instead.
template <class W>
class nearest_centroid {
 public:
  nearest_centroid(const W* cents, std::size_t k, std::size_t d) : k_(k), d_(d), m2c_(k * d), csq_(k) {
    for (std::size_t j = 0; j < k; ++j) {
      W s = W(0);
      for (std::size_t t = 0; t < d; ++t) {
        m2c_[j * d + t] = W(-2) * cents[j * d + t];
        s += cents[j * d + t] * cents[j * d + t];
      }
      csq_[j] = s;
    }
    if (reads_rows(d)) tiled_ = std::make_shared<const simd::packed_centroids<W>>(distance_type::l2, cents, k, d);
  }

  // Whether sub-vectors of d values go through the tiled kernel, which reads rows.
  static constexpr bool reads_rows(std::size_t d) noexcept { return d > 16; }

  // True when the sub-vectors are better given row-major (assign_rows): long ones go
  // through the tiled kernel, which reads rows; short ones are scanned column-major.
  bool prefers_rows() const noexcept { return reads_rows(d_); }

  // assign for n sub-vectors stored row-major (d values each, contiguous): the same
  // results, without a column-major copy where the tiled kernel reads rows anyway.
  void assign_rows(const W* rows, std::size_t n, std::uint32_t* member) const {
    if (!tiled_) {
      std::vector<W> cols(n * d_);
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t t = 0; t < d_; ++t) cols[t * n + r] = rows[r * d_ + t];
      assign(cols.data(), n, n, member);
      return;
    }
    simd::assign_nearest(*tiled_, rows, n, member, static_cast<W*>(nullptr), nullptr);
    for (std::size_t i = 0; i < n; ++i)
      if (member[i] == simd::no_index) member[i] = 0;
  }

  void assign(const W* cols, std::size_t stride, std::size_t n, std::uint32_t* member) const {
    std::size_t r = 0;
    if (tiled_) {
      // Row-major a block at a time (not a second copy of the sub-vector): each row's
      // nearest centroid depends on that row only.
      constexpr std::size_t block = 4096;
      std::vector<W> rows(std::min(n, block) * d_);
      for (std::size_t r0 = 0; r0 < n; r0 += block) {
        const std::size_t cnt = std::min(block, n - r0);
        for (std::size_t i = 0; i < cnt; ++i)
          for (std::size_t t = 0; t < d_; ++t) rows[i * d_ + t] = cols[t * stride + r0 + i];
        assign_rows(rows.data(), cnt, member + r0);
      }
      return;
    }
    switch (d_) {
      case 4: r = blocks<4>(cols, stride, n, member); break;
      case 8: r = blocks<8>(cols, stride, n, member); break;
      case 16: r = blocks<16>(cols, stride, n, member); break;
      default: r = blocks<0>(cols, stride, n, member);
    }
    for (; r < n; ++r) {  // the tail, scalar, same expansion
      W best = std::numeric_limits<W>::infinity();
      std::uint32_t bi = 0;
      for (std::size_t j = 0; j < k_; ++j) {
        W a = csq_[j];
        for (std::size_t t = 0; t < d_; ++t) a += cols[t * stride + r] * m2c_[j * d_ + t];
        if (a < best) {
          best = a;
          bi = static_cast<std::uint32_t>(j);
        }
      }
      member[r] = bi;
    }
  }

 private:
  // D > 0: the sub-vector length known at compile time; 0: d_ (at most 16).
  template <std::size_t D>
  std::size_t blocks(const W* cols, std::size_t stride, std::size_t n, std::uint32_t* member) const {
    using V = simd::vec<W>;
    constexpr std::size_t L = V::size;
    const std::size_t d = D ? D : d_;
    std::size_t r = 0;
    for (; r + 2 * L <= n; r += 2 * L) {
      V x0[16], x1[16];
      for (std::size_t t = 0; t < d; ++t) {
        x0[t] = simd::vload(cols + t * stride + r);
        x1[t] = simd::vload(cols + t * stride + r + L);
      }
      V b0(std::numeric_limits<W>::infinity()), b1(std::numeric_limits<W>::infinity());
      V i0(W(0)), i1(W(0));
      for (std::size_t j = 0; j < k_; ++j) {
        const W* c = m2c_.data() + j * d;
        V a0(csq_[j]), a1(csq_[j]);
#pragma GCC unroll 16
        for (std::size_t t = 0; t < (D ? D : d); ++t) {
          const V ct(c[t]);
          a0 = simd::vfma<W>(x0[t], ct, a0);
          a1 = simd::vfma<W>(x1[t], ct, a1);
        }
        const V jv(static_cast<W>(j));
        const auto m0 = a0 < b0;
        const auto m1 = a1 < b1;
        b0 = simd::vselect<W>(m0, a0, b0);
        i0 = simd::vselect<W>(m0, jv, i0);
        b1 = simd::vselect<W>(m1, a1, b1);
        i1 = simd::vselect<W>(m1, jv, i1);
      }
      alignas(64) W idx[2 * L];
      simd::vstore(idx, i0);
      simd::vstore(idx + L, i1);
      for (std::size_t l = 0; l < 2 * L; ++l) member[r + l] = static_cast<std::uint32_t>(idx[l]);
    }
    return r;
  }

  std::size_t k_, d_;
  std::vector<W> m2c_, csq_;
  std::shared_ptr<const simd::packed_centroids<W>> tiled_;
};

template <class W>
struct subvector_kmeans {
  std::size_t n = 0, d = 0, k = 0;
  // The sub-vector's values, in one of two layouts (the other vector stays empty):
  // column-major (d x n: value t of row r at cols[t * n + r]) for short sub-vectors,
  // scanned a column at a time; row-major (n x d) for the long ones the tiled kernel
  // assigns (nearest_centroid::reads_rows), which would otherwise be copied back to
  // rows every iteration.
  std::vector<W> cols;
  std::vector<W> rows;

  W at(std::size_t r, std::size_t t) const { return rows.empty() ? cols[t * n + r] : rows[r * d + t]; }

  // For every row: the nearest centroid and its squared distance.
  void assign(const std::vector<W>& cents, std::uint32_t* member, W* dist) const {
    const nearest_centroid<W> near(cents.data(), k, d);
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
  std::vector<std::size_t> plus_plus_rows(index::detail::rng64& rng) const {
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
      c = index::detail::d2_draw(mind.data(), n, total, rng);
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

// pq_iterate.hpp: which earlier iterates to keep, and which codebook ranks best.
inline std::vector<std::uint32_t> iterate_candidates(std::uint32_t max_iters, std::size_t sample_rows);
template <class W, class T>
std::size_t choose_iterate(const std::vector<model<T>>& cands, const T* rows, std::size_t n,
                           const std::uint32_t* partitions, std::uint64_t seed, boost::asio::thread_pool* pool);

// Trains the codebook on prepared rows (finite, already residuals / normalised).
// `partitions` (optional): each residual row's IVF partition, for the iterate check.
template <class T>
inline model<T> train_prepared(const T* rows, std::size_t n, std::size_t d, const params& p, distance_type table_dist,
                               boost::asio::thread_pool* pool, const std::uint32_t* partitions = nullptr) {
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
  model<T> out;
  out.dimension = d;
  out.num_sub_vectors = m;
  out.num_bits = p.num_bits;
  out.distance = table_dist;
  out.codebook.resize(k * d);
  // One k-means per sub-vector, each with its own seed: the codebook depends only
  // on the seed, never on which thread trains which sub-vector.
  const bool plus_plus = p.init ? *p.init == kmeans_init::kmeans_plus_plus
                                : table_dist == distance_type::dot && p.num_bits == 8 &&
                                      (sd <= 2 || (sd <= 4 && m <= 8));
  std::mutex progress_mu;
  std::size_t done = 0;
  // The earlier iterates a recall check may prefer (pq_iterate.hpp): every
  // sub-vector's centroids after each of these iteration counts.
  const std::vector<std::uint32_t> at = p.choose_iterate ? iterate_candidates(p.max_iters, use) : std::vector<std::uint32_t>{};
  std::vector<std::vector<std::vector<W>>> early(m);
  parallel_for(pool, m, [&](std::size_t s) {
    subvector_kmeans<W> km;
    km.n = use;
    km.d = sd;
    km.k = k;
    if (nearest_centroid<W>::reads_rows(sd)) {
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
    index::detail::rng64 rng(quantizer::mix_seed(p.seed, s));
    std::vector<W> best;
    std::vector<std::vector<W>> best_early;
    double best_loss = std::numeric_limits<double>::max();
    for (std::size_t redo = 0; redo < std::max<std::size_t>(p.kmeans_redos, 1); ++redo) {
      // k-means++ rows, or k distinct random rows in row order (Lance's default).
      const auto pick = plus_plus ? km.plus_plus_rows(rng) : index::detail::sample_indices(use, k, rng);
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
    std::vector<model<T>> cands(at.size() + 1, out);
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

}  // namespace detail

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
  detail::check_params(p, dim);
  if (distance == distance_type::hamming) throw invalid_input_error("PQ: hamming distance is not supported");
  const auto picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  const auto prepared = quantizer::prepare_training_rows<T, T>(rows, dim, picked, distance_type::l2, nullptr, 0,
                                                               false, pool);
  const distance_type td = distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  return detail::train_prepared(prepared.data(), prepared.size() / dim, dim, p, td, pool);
}

namespace detail {

// What train_for_ivf and train_for_ivf_in_place check first.
template <class T, class C>
inline void check_ivf_training(const T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                               distance_type distance, const params& p) {
  static_assert(quantizer::is_float_element_v<T>, "PQ trains on float, double or f16 vectors");
  quantizer::check_shape("PQ", rows, n, dim);
  check_params(p, dim);
  if (distance == distance_type::hamming) throw invalid_input_error("PQ: hamming distance is not supported");
  if (uses_residual(distance) && (centroids == nullptr || k == 0))
    throw invalid_input_error("PQ: training on residuals needs the IVF centroids");
}

inline distance_type table_distance(distance_type d) noexcept {
  return d == distance_type::dot ? distance_type::dot : distance_type::l2;
}

}  // namespace detail

// Trains a product quantizer for an IVF index as Lance does: a sample of
// p.sample_size() rows, normalised under cosine, non-finite rows dropped, and for
// l2 / cosine the residual to the nearest of the k IVF centroids (k x dim). The
// sample is copied once (train_for_ivf_in_place does without).
template <class T, class C>
inline model<T> train_for_ivf(const T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                              distance_type distance, const params& p = {},
                              boost::asio::thread_pool* pool = nullptr) {
  detail::check_ivf_training(rows, n, dim, centroids, k, distance, p);
  const auto picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  std::vector<std::uint32_t> partitions;
  const auto prepared = quantizer::prepare_training_rows<T, C>(rows, dim, picked, distance, centroids, k,
                                                               uses_residual(distance), pool, nullptr, &partitions);
  return detail::train_prepared(prepared.data(), prepared.size() / dim, dim, p, detail::table_distance(distance), pool,
                                partitions.empty() ? nullptr : partitions.data());
}

// train_for_ivf (the same codebook) on rows the caller gives up: the sample is
// prepared where it is (moved to the front of `rows`, normalised, residuals taken),
// so training holds no copy of it. `rows` is left holding prepared rows.
template <class T, class C>
inline model<T> train_for_ivf_in_place(T* rows, std::size_t n, std::size_t dim, const C* centroids, std::size_t k,
                                       distance_type distance, const params& p = {},
                                       boost::asio::thread_pool* pool = nullptr) {
  detail::check_ivf_training(rows, n, dim, centroids, k, distance, p);
  std::vector<std::size_t> picked = quantizer::sample_rows(n, p.sample_size(), p.sample_draw());
  if (picked.size() == n) picked = {};  // every row, in order
  std::vector<std::uint32_t> partitions;
  const std::size_t kept = quantizer::prepare_training_rows_in_place<T, C>(
      rows, n, dim, picked.empty() ? nullptr : &picked, distance, centroids, k, uses_residual(distance), pool, nullptr,
      &partitions);
  picked = {};
  return detail::train_prepared(rows, kept, dim, p, detail::table_distance(distance), pool,
                                partitions.empty() ? nullptr : partitions.data());
}

namespace detail {

// Encodes rows [r0, r0 + cnt) given a function that writes row r's quantizer input
// (working precision) into a buffer. The rows stay row-major; each sub-vector is
// copied out in the layout its nearest_centroid reads (rows for long sub-vectors,
// columns for short ones), so no copy strides across the whole block.
template <class W, class C, class Fill>
inline void encode_block(const model<C>& pq, const std::vector<nearest_centroid<W>>& near, std::size_t r0,
                         std::size_t cnt, std::uint8_t* codes, Fill&& fill) {
  const std::size_t d = pq.dimension, m = pq.num_sub_vectors, sd = pq.sub_dimension(), cb = pq.code_bytes();
  std::vector<W> rows(cnt * d);
  for (std::size_t r = 0; r < cnt; ++r) fill(r0 + r, rows.data() + r * d);
  std::vector<W> sub(cnt * sd);
  std::vector<std::uint32_t> idx(cnt);
  for (std::size_t s = 0; s < m; ++s) {
    const W* first = rows.data() + s * sd;  // sub-vector s of row r at first[r * d]
    if (near[s].prefers_rows()) {
      for (std::size_t r = 0; r < cnt; ++r) std::copy_n(first + r * d, sd, sub.data() + r * sd);
      near[s].assign_rows(sub.data(), cnt, idx.data());
    } else {
      for (std::size_t r = 0; r < cnt; ++r)
        for (std::size_t t = 0; t < sd; ++t) sub[t * cnt + r] = first[r * d + t];
      near[s].assign(sub.data(), cnt, cnt, idx.data());
    }
    for (std::size_t r = 0; r < cnt; ++r) {
      // Lance: a sub-vector with no finite distance (NaN, +-inf) gets code 0.
      const W* v = first + r * d;
      bool finite = true;
      for (std::size_t t = 0; t < sd; ++t) finite &= std::isfinite(v[t]);
      const auto c = finite ? static_cast<std::uint8_t>(idx[r]) : std::uint8_t(0);
      std::uint8_t* code = codes + (r0 + r) * cb;
      if (pq.num_bits == 8) code[s] = c;
      else if (s % 2 == 0) code[s / 2] = c;
      else code[s / 2] = static_cast<std::uint8_t>(code[s / 2] | (c << 4));
    }
  }
}

template <class W, class C, class Fill>
inline void encode_rows(const model<C>& pq, std::size_t n, std::uint8_t* codes, boost::asio::thread_pool* pool,
                        Fill&& fill) {
  pq.validate();
  if (n > 0 && codes == nullptr) throw invalid_input_error("PQ encode: output codes are null");
  std::vector<nearest_centroid<W>> near;
  near.reserve(pq.num_sub_vectors);
  std::vector<W> cw(pq.num_centroids() * pq.sub_dimension());
  for (std::size_t s = 0; s < pq.num_sub_vectors; ++s) {
    const C* c = pq.centroids(s);
    for (std::size_t i = 0; i < cw.size(); ++i) cw[i] = quantizer::to_work<W>(c[i]);
    near.emplace_back(cw.data(), pq.num_centroids(), pq.sub_dimension());
  }
  const std::size_t block = 1024;
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    const std::size_t r0 = b * block;
    encode_block<W>(pq, near, r0, std::min(block, n - r0), codes, fill);
  });
}

}  // namespace detail

// Codes of n rows as given (n x dimension), row-major: n x code_bytes() bytes.
template <class T, class C>
inline void encode(const model<C>& pq, const T* rows, std::size_t n, std::uint8_t* codes,
                   boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "PQ encodes float, double or f16 vectors");
  using W = simd::work_t<T, C>;
  quantizer::check_shape("PQ encode", rows, n, pq.dimension);
  const std::size_t d = pq.dimension;
  detail::encode_rows<W>(pq, n, codes, pool, [&](std::size_t r, W* out) {
    for (std::size_t i = 0; i < d; ++i) out[i] = quantizer::to_work<W>(rows[r * d + i]);
  });
}

// Codes of n rows of an IVF index, as Lance's shuffle computes them: normalised under
// cosine, minus the centroid of the row's partition for l2 / cosine (`partitions[r]`
// indexes the num_partitions x dimension `centroids`), raw for dot. Rows that cannot
// be prepared (zero under cosine, partition out of range) get code 0 everywhere, as
// Lance codes a row without finite distances; Lance's builder drops such rows first.
template <class T, class C, class CC>
inline void encode_for_ivf(const model<C>& pq, const T* rows, std::size_t n, distance_type distance,
                           const CC* centroids, std::size_t num_partitions, const std::uint32_t* partitions,
                           std::uint8_t* codes, boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "PQ encodes float, double or f16 vectors");
  using W = std::conditional_t<std::is_same_v<simd::work_t<T, C>, double> || std::is_same_v<CC, double>, double, float>;
  quantizer::check_shape("PQ encode", rows, n, pq.dimension);
  quantizer::ivf_input<CC> in{distance, centroids, num_partitions, partitions, uses_residual(distance)};
  if (in.residual && (centroids == nullptr || partitions == nullptr) && n > 0)
    throw invalid_input_error("PQ encode: residuals need the IVF centroids and each row's partition");
  const std::size_t d = pq.dimension;
  detail::encode_rows<W>(pq, n, codes, pool,
                         [&](std::size_t r, W* out) { quantizer::ivf_input_row(in, rows, r, d, out); });
}

// Reconstructs a vector from its code row (the centroids it names), into out[dim].
template <class C, class O>
inline void decode(const model<C>& pq, const std::uint8_t* code_row, O* out) {
  const std::size_t sd = pq.sub_dimension();
  for (std::size_t s = 0; s < pq.num_sub_vectors; ++s) {
    const C* c = pq.centroids(s) + std::size_t(code_of(code_row, pq.num_bits, s)) * sd;
    for (std::size_t i = 0; i < sd; ++i) out[s * sd + i] = quantizer::from_work<O>(quantizer::to_work<double>(c[i]));
  }
}

// ---- the shared storage description (quantizer_storage.hpp) ----------------------

// What the index files record about the quantizer.
template <class C>
inline pq_params to_params(const model<C>& m) {
  m.validate();
  pq_params p;
  p.num_sub_vectors = static_cast<std::uint32_t>(m.num_sub_vectors);
  p.num_bits = m.num_bits;
  p.dimension = static_cast<std::uint32_t>(m.dimension);
  p.codebook = matrix::of(m.codebook, m.num_sub_vectors * m.num_centroids(), m.sub_dimension());
  return p;
}

// A model from what an index records, with the codebook converted to C (exactly,
// for C at least as wide as the stored type). index_distance is the index's
// distance type: dot builds dot tables, l2 and cosine l2 tables (Lance's rule).
template <class C = float>
inline model<C> from_params(const pq_params& p, distance_type index_distance) {
  model<C> m;
  m.dimension = p.dimension;
  m.num_sub_vectors = p.num_sub_vectors;
  m.num_bits = p.num_bits;
  m.distance = index_distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  if (p.codebook.size() != (std::size_t(1) << p.num_bits) * std::size_t(p.dimension))
    throw invalid_input_error("PQ: codebook has " + std::to_string(p.codebook.size()) + " values, expected " +
                              std::to_string((std::size_t(1) << p.num_bits) * std::size_t(p.dimension)));
  if (p.codebook.type == element_type::u8) throw invalid_input_error("PQ: a uint8 codebook is not supported");
  m.codebook.resize(p.codebook.size());
  for (std::size_t i = 0; i < m.codebook.size(); ++i)
    m.codebook[i] = quantizer::from_work<C>(p.codebook.at(i / p.codebook.cols, i % p.codebook.cols));
  m.validate();
  return m;
}

}  // namespace lancet::index::pq

// choose_iterate ranks with the scan's own tables: pq_scan.hpp includes pq_iterate.hpp
// after them (in whichever order a program includes the three).
#include "lancet/index/quantizer/pq_scan.hpp"
