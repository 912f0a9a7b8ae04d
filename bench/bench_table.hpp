// The 1M-row benchmark table of the file-format issues (id, x, a 14-byte string and a
// 128-d float vector), shared by bench_write, bench_scan and bench_object_store, a full
// scan and a best-of-N timer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>

namespace lancet::bench {

// raw_bytes: the table's decoded size (what throughput is measured against).
inline arrow::record_batch make_table(std::int64_t rows, std::uint64_t& raw_bytes) {
  std::mt19937_64 rng(1);
  const auto n = static_cast<std::size_t>(rows);
  std::vector<std::int64_t> ids(n);
  std::vector<float> xs(n), vec(n * 128);
  std::vector<std::string> strs(n);
  std::normal_distribution<float> nd;
  for (std::int64_t i = 0; i < rows; ++i) {
    ids[std::size_t(i)] = i;
    xs[std::size_t(i)] = nd(rng);
    strs[std::size_t(i)] = "s-" + std::to_string(rng() % 100000000000ull);
    strs[std::size_t(i)].resize(14, 'x');
  }
  for (auto& v : vec) v = nd(rng);
  raw_bytes = std::uint64_t(rows) * (8 + 4 + 14 + 4 + 512);
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                            {"x", arrow::make_array<float>(xs)},
                            {"s", arrow::string_array(strs)},
                            {"vector", arrow::make_fixed_size_list(arrow::make_array<float>(vec), 128)}});
}

// The rows of a full scan of the dataset at `root` (a path or a mounted URI).
inline std::uint64_t scan_all(const std::string& root) {
  auto ds = dataset::dataset::open(root);
  std::uint64_t rows = 0;
  auto sc = ds.scan();
  while (auto b = sc.next()) rows += std::uint64_t(b->num_rows());
  return rows;
}

// The fastest of `reps` runs of f, in seconds.
template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace lancet::bench
