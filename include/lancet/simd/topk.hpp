// Arg-min and top-k over distance arrays with Lance's tie-breaking: the smallest
// value wins, the lowest index wins a tie, and NaN never wins. Like Lance's
// argmin_value_float, argmin compares with a strict "<" starting from +inf, so a
// row whose distances are all NaN or +inf has no minimum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "lancet/simd/batch.hpp"

namespace lancet::simd {

// "No centroid": the index reported for a row that has no finite distance.
inline constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

template <class V>
struct arg_value {
  std::uint32_t index;
  V value;
};

namespace detail {

// Lane-wise running minimum. Lane l sees indices l, l+W, l+2W... in increasing order,
// and "<" keeps the first of equal values, so each lane holds its lowest-index
// minimum; the final cross-lane pass breaks ties by index.
template <class V>
inline std::optional<arg_value<V>> argmin_simd(const V* v, std::size_t n) {
  constexpr std::size_t W = vec<V>::size;
  std::optional<arg_value<V>> best;
  V bv = std::numeric_limits<V>::infinity();
  std::size_t i = 0;
  if constexpr (W > 1 && has_simd) {
    if (n >= W && n < (std::size_t(1) << (std::numeric_limits<V>::digits - 1))) {
      alignas(64) V iota[W];
      for (std::size_t l = 0; l < W; ++l) iota[l] = static_cast<V>(l);
      vec<V> lane_idx = vload(iota);
      const vec<V> step(static_cast<V>(W));
      vec<V> best_v(std::numeric_limits<V>::infinity());
      vec<V> best_i(V(0));
      for (; i + W <= n; i += W) {
        const vec<V> x = vload(v + i);
        const auto m = x < best_v;
        best_v = vselect<V>(m, x, best_v);
        best_i = vselect<V>(m, lane_idx, best_i);
        lane_idx = lane_idx + step;
      }
      alignas(64) V bvs[W], bis[W];
      vstore(bvs, best_v);
      vstore(bis, best_i);
      for (std::size_t l = 0; l < W; ++l) {
        if (!(bvs[l] < std::numeric_limits<V>::infinity())) continue;
        const auto idx = static_cast<std::uint32_t>(bis[l]);
        if (!best || bvs[l] < bv || (bvs[l] == bv && idx < best->index)) {
          bv = bvs[l];
          best = arg_value<V>{idx, bvs[l]};
        }
      }
    }
  }
  for (; i < n; ++i)  // tail: indices are larger than any seen, so strict "<"
    if (v[i] < bv) {
      bv = v[i];
      best = arg_value<V>{static_cast<std::uint32_t>(i), v[i]};
    }
  return best;
}

}  // namespace detail

// Index and value of the minimum of v[0..n); empty when n == 0 or no value is
// smaller than +inf (all NaN / +inf).
template <class V>
inline std::optional<arg_value<V>> argmin(const V* v, std::size_t n) {
  static_assert(std::is_floating_point_v<V>, "argmin works on float or double distances");
  return detail::argmin_simd(v, n);
}

// The k smallest values of v[0..n) in ascending order (ties: lower index first).
// NaN values are never returned; +inf values are. Writes min(k, #non-NaN) entries to
// idx (and val when not null) and returns that count.
template <class V>
inline std::size_t topk(const V* v, std::size_t n, std::size_t k, std::uint32_t* idx, V* val = nullptr) {
  static_assert(std::is_floating_point_v<V>, "topk works on float or double distances");
  if (k == 0 || n == 0) return 0;
  using item = std::pair<V, std::uint32_t>;  // (value, index): lexicographic order
  std::vector<item> heap;                    // max-heap of the best k so far
  heap.reserve(std::min(k, n));
  for (std::size_t i = 0; i < n; ++i) {
    const V x = v[i];
    if (std::isnan(x)) continue;
    const item it{x, static_cast<std::uint32_t>(i)};
    if (heap.size() < k) {
      heap.push_back(it);
      std::push_heap(heap.begin(), heap.end());
    } else if (it < heap.front()) {
      std::pop_heap(heap.begin(), heap.end());
      heap.back() = it;
      std::push_heap(heap.begin(), heap.end());
    }
  }
  std::sort_heap(heap.begin(), heap.end());
  for (std::size_t j = 0; j < heap.size(); ++j) {
    idx[j] = heap[j].second;
    if (val) val[j] = heap[j].first;
  }
  return heap.size();
}

}  // namespace lancet::simd
