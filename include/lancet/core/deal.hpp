// Dealing weighted work out to workers (MPI ranks, threads): the heaviest item first,
// each to the worker with the least weight so far (ties: the lower worker; items of
// equal weight: the earlier first), so that the loads end close together.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "lancet/core/error.hpp"

namespace lancet {

struct dealt_work {
  std::vector<std::vector<std::size_t>> items;  // per worker: indices into the weights, ascending
  std::vector<std::uint64_t> load;              // per worker: the sum of its items' weights
};

inline dealt_work deal_by_weight(std::span<const std::uint64_t> weights, std::size_t workers) {
  if (workers == 0) throw invalid_input_error("cannot deal work out to 0 workers");
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return weights[a] > weights[b]; });
  dealt_work d;
  d.items.resize(workers);
  d.load.assign(workers, 0);
  for (const auto i : order) {
    const auto w = std::size_t(std::min_element(d.load.begin(), d.load.end()) - d.load.begin());
    d.load[w] += weights[i];
    d.items[w].push_back(i);
  }
  for (auto& v : d.items) std::sort(v.begin(), v.end());
  return d;
}

}  // namespace lancet
