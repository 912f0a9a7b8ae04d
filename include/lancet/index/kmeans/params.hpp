// What a k-means run (kmeans.hpp) takes and gives: kmeans_params, progress and
// cancellation, kmeans_result; and the seeded random draws training makes (rng64,
// sample_indices, k-means++'s d2_draw), which PQ's sub-vector k-means shares.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/simd/distance_type.hpp"
#include "lancet/simd/f16.hpp"

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
// k-means (quantizer/pq/pq.hpp).
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

}  // namespace detail

}  // namespace lancet::index
