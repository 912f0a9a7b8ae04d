// Kernel throughput in GFLOP/s beside the single-core FMA peak measured in the same
// run (counter "of_peak" = fraction of that peak), single thread. Rates are per CPU
// second (Google Benchmark's default, and how the peak is measured), so other load on
// a shared machine does not distort them.
//   one_to_many      a query against a block of 2048 rows (dot-like: 2*d FLOP per row,
//                    l2: 3*d: subtract, multiply, add)
//   many_to_many     2048 rows x 256 centroids, every distance stored (2*d FLOP/pair)
//   assign           2048 rows x 256 centroids, fused arg-min (2*d FLOP/pair)
//   bench_kernels [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "fma_peak.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "lancet/simd/tiled.hpp"

using namespace lancet::simd;

namespace {

double g_peak = 1;  // FLOP/s, set in main

template <class T>
std::vector<T> random_rows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, f16>) x = f16(g(rng));
    else if constexpr (std::is_same_v<T, std::uint8_t>) x = static_cast<std::uint8_t>(rng() & 0xff);
    else x = static_cast<T>(g(rng));
  }
  return v;
}

void set_rate(benchmark::State& st, double flops_per_iter) {
  const double total = flops_per_iter * static_cast<double>(st.iterations());
  st.counters["GFLOPs"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  st.counters["of_peak"] = benchmark::Counter(total / g_peak, benchmark::Counter::kIsRate);
}

template <class T>
void one_to_many(benchmark::State& st, distance_type t) {
  const std::size_t d = static_cast<std::size_t>(st.range(0)), n = 2048;
  const auto q = random_rows<T>(d, 1);
  const auto block = random_rows<T>(n * d, 2);
  std::vector<distance_t<T>> out(n);
  for (auto _ : st) {
    distances_to_many(t, q.data(), block.data(), n, d, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, static_cast<double>(n * d) * (t == distance_type::l2 ? 3.0 : 2.0));
}

template <class T>
void many_to_many(benchmark::State& st) {
  const std::size_t d = static_cast<std::size_t>(st.range(0)), n = 2048, k = 256;
  const auto x = random_rows<T>(n * d, 3);
  const auto c = random_rows<float>(k * d, 4);
  std::vector<float> out(n * k);
  for (auto _ : st) {
    distances_many_to_many(distance_type::l2, x.data(), n, c.data(), k, d, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * static_cast<double>(n * k * d));
}

template <class T>
void assign(benchmark::State& st) {
  const std::size_t d = static_cast<std::size_t>(st.range(0)), n = 2048, k = 256;
  const auto x = random_rows<T>(n * d, 5);
  const auto c = random_rows<float>(k * d, 6);
  const packed_centroids<float> pc(distance_type::l2, c.data(), k, d);
  std::vector<std::uint32_t> idx(n);
  for (auto _ : st) {
    assign_nearest(pc, x.data(), n, idx.data());
    benchmark::DoNotOptimize(idx.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * static_cast<double>(n * k * d));
}

void one_to_many_f32(benchmark::State& st, distance_type t) { one_to_many<float>(st, t); }
void one_to_many_f16(benchmark::State& st, distance_type t) { one_to_many<f16>(st, t); }
void one_to_many_f64(benchmark::State& st, distance_type t) { one_to_many<double>(st, t); }
void one_to_many_u8(benchmark::State& st, distance_type t) { one_to_many<std::uint8_t>(st, t); }

void fma_peak(benchmark::State& st) {
  double p = 0;
  for (auto _ : st) p = bench::measure_fma_peak(2000000, 1);
  st.counters["GFLOPs"] = p / 1e9;
}

}  // namespace

BENCHMARK(fma_peak)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(one_to_many_f32, l2, distance_type::l2)->Arg(128)->Arg(768);
BENCHMARK_CAPTURE(one_to_many_f32, dot, distance_type::dot)->Arg(128)->Arg(768);
BENCHMARK_CAPTURE(one_to_many_f32, cosine, distance_type::cosine)->Arg(128)->Arg(768);
BENCHMARK_CAPTURE(one_to_many_f16, l2, distance_type::l2)->Arg(128)->Arg(768);
BENCHMARK_CAPTURE(one_to_many_f64, l2, distance_type::l2)->Arg(128)->Arg(768);
BENCHMARK_CAPTURE(one_to_many_u8, l2, distance_type::l2)->Arg(128)->Arg(768);
BENCHMARK_TEMPLATE(many_to_many, float)->Arg(128)->Arg(768)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(many_to_many, f16)->Arg(128)->Arg(768)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(assign, float)->Arg(128)->Arg(768)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(assign, f16)->Arg(128)->Arg(768)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  g_peak = bench::measure_fma_peak();
  std::printf("single-core FMA peak (register-only loop, %zu-lane float): %.1f GFLOP per CPU second\n",
              lancet::simd::vec<float>::size, g_peak / 1e9);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("single-core FMA peak measured before the runs: %.1f GFLOP/s (of_peak is relative to it)\n",
              g_peak / 1e9);
  return 0;
}
