// What the vector-search benchmarks (bench_ivf, bench_hnsw) share: clustered data,
// exact neighbours, recall, timers and command-line numbers. Kept in one place so the
// benchmarks measure on the same data the same way.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <boost/asio/thread_pool.hpp>

#include <lancet/core/error.hpp>
#include <lancet/core/parallel.hpp>
#include <lancet/simd/distance.hpp>
#include <lancet/simd/topk.hpp>

#include "../tests/support/f32_file.hpp"

namespace lancet::bench {

using clock_type = std::chrono::steady_clock;
using ids_t = std::vector<std::vector<std::uint64_t>>;

inline double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Process CPU time (user + system), seconds: steadier than wall time on a shared machine.
inline double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct clustered_data {
  std::size_t rows = 0, dim = 0, queries = 0, clusters = 1;
  float spread = 0.1f;
  unsigned seed = 1;
  // false: queries drawn like the rows (near the clusters); true: uniform in
  // [-0.8, 0.8)^dim, away from the clusters (a hard case for graph walks).
  bool uniform_queries = false;
};

// Rows (and queries) around `clusters` centres uniform in [-1, 1)^dim, Gaussian spread.
inline void generate(const clustered_data& p, std::vector<float>& rows, std::vector<float>& queries) {
  std::mt19937 rng(p.seed);
  std::uniform_real_distribution<float> u(-1, 1), uq(-0.8f, 0.8f);
  std::normal_distribution<float> g(0, p.spread);
  std::vector<float> centres(p.clusters * p.dim);
  for (auto& c : centres) c = u(rng);
  auto draw = [&](std::vector<float>& out, std::size_t n) {
    out.resize(n * p.dim);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = rng() % p.clusters;
      for (std::size_t j = 0; j < p.dim; ++j) out[i * p.dim + j] = centres[c * p.dim + j] + g(rng);
    }
  };
  draw(rows, p.rows);
  if (p.uniform_queries) {
    queries.resize(p.queries * p.dim);
    for (auto& x : queries) x = uq(rng);
  } else {
    draw(queries, p.queries);
  }
}

// A low intrinsic dimension embedded in a high one, as embeddings are: latent points
// from `clusters` Gaussian blobs (centres uniform in [-1, 1)^latent, sigma `spread`)
// mapped into dim dimensions by one random linear map (unit-variance Gaussian entries
// scaled by 1 / sqrt(latent)), plus isotropic noise of sigma `noise`. Queries come from
// the same latent blobs but carry `query_noise` (larger than `noise`): they lie off the
// data, near it, as a new item's embedding does.
struct low_rank_data {
  std::size_t rows = 0, dim = 0, queries = 0, latent = 16, clusters = 100;
  float spread = 0.3f, noise = 0.01f, query_noise = 0.05f;
  unsigned seed = 1;
};

inline void generate(const low_rank_data& p, std::vector<float>& rows, std::vector<float>& queries) {
  std::mt19937 rng(p.seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(p.clusters * p.latent), map(p.dim * p.latent);
  for (auto& c : centres) c = u(rng);
  const float scale = 1.0f / std::sqrt(float(p.latent));
  for (auto& a : map) a = g(rng) * scale;
  std::vector<float> z(p.latent);
  auto draw = [&](std::vector<float>& out, std::size_t n, float noise) {
    out.resize(n * p.dim);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = rng() % p.clusters;
      for (std::size_t l = 0; l < p.latent; ++l) z[l] = centres[c * p.latent + l] + p.spread * g(rng);
      for (std::size_t j = 0; j < p.dim; ++j) {
        float x = noise * g(rng);
        for (std::size_t l = 0; l < p.latent; ++l) x += map[j * p.latent + l] * z[l];
        out[i * p.dim + j] = x;
      }
    }
  };
  draw(rows, p.rows, p.noise);
  draw(queries, p.queries, p.query_noise);
}

// Raw little-endian f32 (what the Node scripts read with --queries FILE).
using lancet::testing::write_f32;

// Mean fraction of each query's true neighbours found (a missing query counts 0; a
// query without true neighbours, e.g. a filter keeping no row, counts 1).
inline double recall(const ids_t& got, const ids_t& truth) {
  double s = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    if (truth[q].empty()) {
      s += 1;
      continue;
    }
    const std::set<std::uint64_t> tr(truth[q].begin(), truth[q].end());
    std::size_t hit = 0;
    if (q < got.size())
      for (auto id : got[q]) hit += tr.count(id);
    s += double(hit) / double(truth[q].size());
  }
  return s / double(truth.size());
}

// Exact l2 top-10 of each query (row id = position: one fragment, nothing deleted).
inline ids_t exact_l2(std::size_t dim, const std::vector<float>& rows, const std::vector<float>& queries,
                      boost::asio::thread_pool* pool) {
  const std::size_t n = rows.size() / dim, nq = queries.size() / dim;
  ids_t out(nq);
  parallel_for(pool, nq, [&](std::size_t q) {
    std::vector<float> d(n);
    simd::distances_to_many(simd::distance_type::l2, queries.data() + q * dim, rows.data(), n, dim, d.data());
    std::vector<std::uint32_t> idx(10);
    std::vector<float> val(10);
    const std::size_t got = simd::topk(d.data(), n, 10, idx.data(), val.data());
    out[q].assign(idx.begin(), idx.begin() + std::ptrdiff_t(got));
  });
  return out;
}

inline ids_t exact_l2(const clustered_data& p, const std::vector<float>& rows, const std::vector<float>& queries,
                      boost::asio::thread_pool* pool) {
  return exact_l2(p.dim, rows, queries, pool);
}

// A non-negative integer option's value; anything else calls usage (which exits).
inline std::size_t count_arg(const std::string& flag, const std::string& v,
                             void (*usage)(const std::string&)) {
  std::size_t pos = 0;
  unsigned long long x = 0;
  try {
    x = std::stoull(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || v[0] == '-') usage(flag + " needs a non-negative integer, got '" + v + "'");
  return std::size_t(x);
}

inline float number_arg(const std::string& flag, const std::string& v, void (*usage)(const std::string&)) {
  std::size_t pos = 0;
  float x = 0;
  try {
    x = std::stof(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty()) usage(flag + " needs a number, got '" + v + "'");
  return x;
}

}  // namespace lancet::bench
