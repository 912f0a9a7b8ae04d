// Scalar reference implementations of every kernel in simd/: plain loops in double
// precision, no vectorisation tricks. The tests check the fast kernels against these;
// they are also handy when debugging a suspicious result.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/simd/distance.hpp"

namespace lancet::simd::reference {

template <class T>
inline double as_double(T v) {
  if constexpr (std::is_same_v<T, f16>) return static_cast<double>(v.to_float());
  else return static_cast<double>(v);
}

template <class T>
inline double l2(const T* a, const T* b, std::size_t d) {
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    const double t = as_double(a[i]) - as_double(b[i]);
    s += t * t;
  }
  return s;
}

template <class T>
inline double dot(const T* a, const T* b, std::size_t d) {
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) s += as_double(a[i]) * as_double(b[i]);
  return s;
}

template <class T>
inline double dot_distance(const T* a, const T* b, std::size_t d) {
  return 1.0 - reference::dot(a, b, d);
}

template <class T>
inline double cosine(const T* a, const T* b, std::size_t d) {
  return 1.0 - reference::dot(a, b, d) / (std::sqrt(reference::dot(a, a, d)) * std::sqrt(reference::dot(b, b, d)));
}

inline double hamming(const std::uint8_t* a, const std::uint8_t* b, std::size_t nbytes) {
  double n = 0;
  for (std::size_t i = 0; i < nbytes; ++i)
    for (int bit = 0; bit < 8; ++bit) n += ((a[i] >> bit) & 1) != ((b[i] >> bit) & 1);
  return n;
}

template <class T>
inline double distance(distance_type t, const T* a, const T* b, std::size_t d) {
  switch (t) {
    case distance_type::l2: return reference::l2(a, b, d);
    case distance_type::dot: return reference::dot_distance(a, b, d);
    case distance_type::cosine: return reference::cosine(a, b, d);
    case distance_type::hamming:
      if constexpr (std::is_same_v<T, std::uint8_t>) return reference::hamming(a, b, d);
      else return std::numeric_limits<double>::quiet_NaN();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Lance's argmin: strict "<" from +inf, so NaN and +inf never win and the lowest
// index wins a tie. Empty when nothing qualifies.
template <class V>
inline std::optional<std::pair<std::uint32_t, V>> argmin(const V* v, std::size_t n) {
  std::optional<std::pair<std::uint32_t, V>> best;
  V m = std::numeric_limits<V>::infinity();
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] < m) {
      m = v[i];
      best = std::pair<std::uint32_t, V>(static_cast<std::uint32_t>(i), v[i]);
    }
  return best;
}

// The k smallest non-NaN values, ascending, ties by lowest index.
template <class V>
inline std::vector<std::uint32_t> topk(const V* v, std::size_t n, std::size_t k) {
  std::vector<std::uint32_t> idx;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isnan(v[i])) idx.push_back(static_cast<std::uint32_t>(i));
  // insertion sort by (value, index): slow and obviously right
  for (std::size_t i = 1; i < idx.size(); ++i)
    for (std::size_t j = i; j > 0 && (v[idx[j]] < v[idx[j - 1]] ||
                                      (v[idx[j]] == v[idx[j - 1]] && idx[j] < idx[j - 1]));
         --j)
      std::swap(idx[j], idx[j - 1]);
  if (idx.size() > k) idx.resize(k);
  return idx;
}

}  // namespace lancet::simd::reference
