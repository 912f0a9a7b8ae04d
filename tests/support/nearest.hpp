// Exact nearest-neighbour arithmetic that vector search checks compare against: the
// squared L2 distance, and recall (the share of the true neighbours a search found).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace lancet::testing {

// Row ids (or addresses) of each query's neighbours, best first.
using id_lists = std::vector<std::vector<std::uint64_t>>;

inline float l2(const std::vector<float>& a, const std::vector<float>& b) {
  float s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

// Recall of one query's answer: the share of the ids in `truth` that `got` holds (1
// when `truth` is empty). Items are ids, or neighbours with a `row_id`.
template <class Item>
double recall(const std::vector<Item>& truth, const std::vector<Item>& got) {
  auto id = [](const Item& x) {
    if constexpr (std::is_integral_v<Item>) return std::uint64_t(x);
    else return std::uint64_t(x.row_id);
  };
  std::set<std::uint64_t> t;
  for (const auto& x : truth) t.insert(id(x));
  std::size_t hit = 0;
  for (const auto& x : got) hit += t.count(id(x));
  return truth.empty() ? 1.0 : double(hit) / double(truth.size());
}

// Each query's recall (`truth` and `got` hold the same number of queries).
inline std::vector<double> recalls(const id_lists& truth, const id_lists& got) {
  if (got.size() != truth.size()) throw std::invalid_argument("recalls: answers to another number of queries");
  std::vector<double> out;
  for (std::size_t q = 0; q < truth.size(); ++q) out.push_back(recall(truth[q], got[q]));
  return out;
}

inline double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

// The mean recall over queries.
inline double mean_recall(const id_lists& truth, const id_lists& got) { return mean(recalls(truth, got)); }

}  // namespace lancet::testing
