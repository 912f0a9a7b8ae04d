// Measures the single-core FMA peak of this machine for the register width lancet's
// kernels use: independent fused multiply-adds on registers only (no memory traffic),
// enough chains to cover latency on every current core. The benchmarks print their
// throughput as a fraction of this number, measured in the same run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <ctime>

#include "lancet/simd/batch.hpp"

namespace bench {

// CPU time of the calling thread: on a shared machine, wall time also counts the time
// other processes hold the core; Google Benchmark's rates use CPU time too.
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of the whole process (all threads).
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Best of `rounds` runs of `iters` iterations; returns FLOP per CPU second (an FMA
// counts 2).
inline double measure_fma_peak(long iters = 20000000, int rounds = 5) {
  using lancet::simd::vec;
  using lancet::simd::vfma;
  constexpr int chains = 16;
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    vec<float> a[chains];
    for (int i = 0; i < chains; ++i) a[i] = vec<float>(1.0f + static_cast<float>(i) * 1e-3f);
    const vec<float> m(0.99999f), c(1e-6f);
    const double t0 = thread_cpu_seconds();
    for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
      for (int i = 0; i < chains; ++i) a[i] = vfma<float>(a[i], m, c);  // 16 independent chains
    }
    const double s = thread_cpu_seconds() - t0;
    vec<float> sum(0.0f);
    for (int i = 0; i < chains; ++i) sum = sum + a[i];
    float out[vec<float>::size];
    sum.store_unaligned(out);
    asm volatile("" : : "r"(out[0]) : "memory");
    best = std::max(best, static_cast<double>(iters) * chains * vec<float>::size * 2.0 / s);
  }
  return best;
}

}  // namespace bench
