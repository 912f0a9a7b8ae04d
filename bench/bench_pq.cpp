// Quantizer throughput on clustered vectors (default 200,000 x 128, 256 IVF
// partitions, PQ 16 x 8 as bench_ivf's IVF_PQ case):
//   - PQ codebook training as Lance does it (65,536-row residual sample, 16 k-means of
//     k = 256 over 8-d sub-vectors, 50 iterations), on 1 and on T threads;
//   - PQ encoding (residual to the row's centroid, nearest centroid per sub-vector);
//   - distance-table scans (codes/s) over Lance's transposed layout: the chosen
//     kernel, each gather kernel and the scalar loop, beside memcpy of the same code
//     bytes in the same run; 4-bit codes; RaBitQ and SQ scans.
//   bench_pq [rows] [threads] [dim] [sub-vectors]   (defaults: 200000 2 128 16)
// Encoding also prints its nearest-centroid arithmetic (2 x rows x dim x 256 FLOP)
// per CPU second as a fraction of this machine's single-core FMA peak, measured in
// the same run (bench/fma_peak.hpp).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <boost/asio/thread_pool.hpp>

#include <lancet/index/kmeans/kmeans.hpp>
#include <lancet/index/quantizer/pq/pq.hpp>
#include <lancet/index/quantizer/rabitq/rabitq.hpp>
#include <lancet/index/quantizer/sq/sq.hpp>

#include "fma_peak.hpp"
#include "vector_bench.hpp"
#include "../tests/support/vector_batch.hpp"

using namespace lancet;
using namespace lancet::index;
using clock_type = std::chrono::steady_clock;
using simd::distance_type;

namespace {

// CPU seconds of the whole process (every thread).
double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double last_cpu = 0;  // CPU seconds of the fastest repetition of the last best_seconds

// Fastest wall time of reps runs (and its CPU time in last_cpu).
template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    const double c0 = cpu_now();
    f();
    const double w = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (w < best) {
      best = w;
      last_cpu = cpu_now() - c0;
    }
  }
  return best;
}

volatile float sink = 0;

void row(const std::string& what, double seconds, double items, const std::string& unit, double bytes = 0) {
  std::cout << "| " << what << " | " << std::fixed << std::setprecision(3) << seconds << " s | " << last_cpu
            << " s | " << std::setprecision(1) << items / seconds / 1e6 << " M " << unit << "/s |";
  if (bytes > 0) std::cout << " " << std::setprecision(2) << bytes / seconds / 1e9 << " GB/s |";
  else std::cout << " |";
  std::cout << "\n";
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "bench_pq: " << why
            << "\nusage: bench_pq [rows] [threads] [dim] [sub-vectors]   (defaults: 200000 2 128 16)\n";
  std::exit(2);
}

int run(std::size_t n, std::size_t threads, std::size_t d, std::size_t m);

}  // namespace

int main(int argc, char** argv) {
  const char* names[] = {"rows", "threads", "dim", "sub-vectors"};
  // rows: at least 256 (the PQ codebook's 2^8 centroids) and 256 partitions.
  const std::size_t lo[] = {256, 1, 8, 2}, hi[] = {std::size_t(1) << 28, 256, 65536, 65536};
  std::size_t v[] = {200000, 2, 128, 16};
  if (argc > 5) usage("at most four arguments");
  for (int i = 1; i < argc; ++i) {
    v[i - 1] = lancet::bench::count_arg(names[i - 1], argv[i], usage);
    if (v[i - 1] < lo[i - 1] || v[i - 1] > hi[i - 1])
      usage(std::string(names[i - 1]) + " " + argv[i] + " is outside [" + std::to_string(lo[i - 1]) + ", " +
            std::to_string(hi[i - 1]) + "]");
  }
  if (v[3] % 2 != 0 || v[2] % v[3] != 0 || v[2] % 8 != 0)
    usage("dim " + std::to_string(v[2]) + " must be a multiple of 8 and of the sub-vectors (" + std::to_string(v[3]) +
          ", an even number)");
  try {
    return run(v[0], v[1], v[2], v[3]);
  } catch (const std::exception& e) {
    std::cerr << "bench_pq: " << e.what() << "\n";
    return 1;
  }
}

namespace {

int run(std::size_t n, std::size_t threads, std::size_t d, std::size_t m) {
  const std::size_t parts = 256;
  const std::string mx = std::to_string(m) + "x";
  const double peak = ::bench::measure_fma_peak();
  std::cout << "rows " << n << ", dim " << d << ", " << parts << " partitions, PQ " << m << "x8, " << threads
            << " threads; single-core FMA peak " << std::fixed << std::setprecision(1) << peak / 1e9
            << " GFLOP/s\n\n";
  // 1,000 Gaussian clusters (sigma 0.25) around centres uniform in [-1, 1]^d.
  const auto rows = lancet::testing::clustered<std::mt19937_64>(n, d, 1000, 0.25f, 1);
  boost::asio::thread_pool pool(threads);

  kmeans_params kp;
  kp.balance_factor = 1.0f;  // Lance's IVF
  kmeans_result<float> km;
  const double t_ivf = best_seconds(1, [&] { km = train_kmeans(rows.data(), n, d, parts, kp, &pool); });
  const double cpu_ivf = last_cpu;
  std::vector<std::uint32_t> part(n);
  assign_partitions(km, rows.data(), n, part.data(), static_cast<float*>(nullptr), &pool);

  std::cout << "| step | wall | CPU | throughput | bytes |\n| --- | --- | --- | --- | --- |\n";
  last_cpu = cpu_ivf;
  row("IVF k-means, 256 partitions (" + std::to_string(threads) + " threads, context)", t_ivf,
      double(std::min<std::size_t>(n, 256 * parts)) * kp.max_iters, "row-iterations");

  pq::params pp;
  pp.num_sub_vectors = m;
  pq::model<float> model;
  const double t_train1 = best_seconds(1, [&] {
    model = pq::train_for_ivf(rows.data(), n, d, km.centroids.data(), parts, distance_type::l2, pp, nullptr);
  });
  const double cpu_train1 = last_cpu;
  const double sample = double(std::min(n, pp.sample_size()));
  const double t_train = best_seconds(1, [&] {
    model = pq::train_for_ivf(rows.data(), n, d, km.centroids.data(), parts, distance_type::l2, pp, &pool);
  });
  row("PQ training " + mx + "8, " + std::to_string(threads) + " threads", t_train, sample * double(pp.max_iters) * double(m),
      "sub-vector-iterations");
  last_cpu = cpu_train1;
  row("PQ training " + mx + "8, 1 thread", t_train1, sample * double(pp.max_iters) * double(m), "sub-vector-iterations");

  std::vector<std::uint8_t> codes(n * m), tcodes(n * m);
  const double t_enc = best_seconds(3, [&] {
    pq::encode_for_ivf(model, rows.data(), n, distance_type::l2, km.centroids.data(), parts, part.data(),
                       codes.data(), &pool);
  });
  row("PQ encoding (residuals), " + std::to_string(threads) + " threads", t_enc, double(n), "rows");
  const double enc_flop = 2.0 * double(n) * double(d) * double(model.num_centroids());
  std::cout << "| PQ encoding: nearest-centroid FLOP per CPU second | " << std::setprecision(1)
            << enc_flop / last_cpu / 1e9 << " GFLOP/s | " << std::setprecision(2) << enc_flop / last_cpu / peak
            << " of the FMA peak | | |\n";
  transpose_codes(codes.data(), n, m, tcodes.data());

  // Scans: one query's table over all n codes, single thread.
  const std::vector<float> q(rows.begin(), rows.begin() + d);
  const pq::distance_table table(model, q.data());
  std::vector<float> out(n);
  std::vector<std::uint8_t> copy(n * m);
  const int reps = 20;
  const double bytes = double(n * m);
  const double t_copy = best_seconds(reps, [&] {
    std::memcpy(copy.data(), tcodes.data(), n * m);
    sink = sink + float(copy[n]);
  });
  row("memcpy of the code bytes (anchor)", t_copy, double(n), "rows", bytes);
  const double t_scan = best_seconds(reps, [&] {
    table.scan(tcodes.data(), n, out.data());
    sink = sink + out[n / 2];
  });
  row("PQ " + mx + "8 scan, chosen kernel", t_scan, double(n), "codes", bytes);
  // The individual kernels, over the same 256-entry-per-byte tables.
  std::vector<float> lut(m * 256);
  std::copy(table.table().begin(), table.table().end(), lut.begin());
  const double t_scalar = best_seconds(reps, [&] {
    pq::lut_scan_scalar(lut.data(), m, tcodes.data(), n, 0, n, out.data());
    sink = sink + out[n / 2];
  });
  row("PQ " + mx + "8 scan, scalar loop", t_scalar, double(n), "codes", bytes);
#if defined(__AVX2__)
  const double t_avx2 = best_seconds(reps, [&] {
    const std::size_t done = pq::lut_scan_avx2(lut.data(), m, tcodes.data(), n, out.data());
    pq::lut_scan_scalar(lut.data(), m, tcodes.data(), n, done, n, out.data());
    sink = sink + out[n / 2];
  });
  row("PQ " + mx + "8 scan, AVX2 gathers", t_avx2, double(n), "codes", bytes);
#endif
#if defined(__AVX512F__)
  const double t_avx512 = best_seconds(reps, [&] {
    const std::size_t done = pq::lut_scan_avx512(lut.data(), m, tcodes.data(), n, out.data());
    pq::lut_scan_scalar(lut.data(), m, tcodes.data(), n, done, n, out.data());
    sink = sink + out[n / 2];
  });
  row("PQ " + mx + "8 scan, AVX-512 gathers", t_avx512, double(n), "codes", bytes);
#endif
  const double t_table = best_seconds(200, [&] {
    const pq::distance_table t(model, q.data());
    sink = sink + t.table()[7];
  });
  std::cout << "| PQ " << mx << "8 residual table, direct (per query and partition) | " << std::setprecision(1)
            << t_table * 1e6 << " us | | | |\n";
  const auto qterm = pq::query_term(model, q.data());
  const auto pterm = pq::partition_term(model, km.centroids.data());
  const double t_rtable = best_seconds(200, [&] {
    const auto t = pq::residual_table(model, qterm, pterm, q.data(), km.centroids.data());
    sink = sink + t.table()[7];
  });
  std::cout << "| PQ " << mx << "8 residual table from precomputed terms (per partition) | " << std::setprecision(1)
            << t_rtable * 1e6 << " us | | | |\n";
  const double t_qterm = best_seconds(200, [&] {
    const auto t = pq::query_term(model, q.data());
    sink = sink + float(t[7]);
  });
  std::cout << "| PQ " << mx << "8 query term (once per query) | " << std::setprecision(1) << t_qterm * 1e6
            << " us | | | |\n";

  // 4-bit codes (m / 2 bytes per row): 16-entry tables combined per byte.
  pq::params p4 = pp;
  p4.num_bits = 4;
  const auto m4 = pq::train_for_ivf(rows.data(), n, d, km.centroids.data(), parts, distance_type::l2, p4, &pool);
  const std::size_t cb4 = m4.code_bytes();
  std::vector<std::uint8_t> c4(n * cb4), t4(n * cb4);
  pq::encode_for_ivf(m4, rows.data(), n, distance_type::l2, km.centroids.data(), parts, part.data(), c4.data(), &pool);
  transpose_codes(c4.data(), n, cb4, t4.data());
  const pq::distance_table table4(m4, q.data());
  const double t_scan4 = best_seconds(reps, [&] {
    table4.scan(t4.data(), n, out.data());
    sink = sink + out[n / 2];
  });
  row("PQ " + mx + "4 scan (exact f32)", t_scan4, double(n), "codes", double(n * cb4));

  // RaBitQ: encode and scan (1 bit per dimension: d / 8 bytes per row; at 128, PQ 16x8's bytes).
  const auto rq = rabitq::make(d);
  rabitq::encoded_rows enc;
  const double t_rq_enc = best_seconds(3, [&] {
    rabitq::encode_for_ivf(rq, rows.data(), n, distance_type::l2, km.centroids.data(), parts, part.data(), enc, &pool);
  });
  row("RaBitQ encoding, " + std::to_string(threads) + " threads", t_rq_enc, double(n), "rows");
  const std::size_t rcb = rq.code_bytes();
  std::vector<std::uint8_t> rt(n * rcb);
  transpose_codes(enc.codes.data(), n, rcb, rt.data());
  const rabitq::query_estimator est(rq, q.data(), distance_type::l2);
  const double t_rq = best_seconds(reps, [&] {
    est.scan(rt.data(), n, enc.add_factors.data(), enc.scale_factors.data(), 1.0f, out.data());
    sink = sink + out[n / 2];
  });
  row("RaBitQ " + std::to_string(d) + "-bit scan (with factors)", t_rq, double(n), "codes", double(n * rcb));

  // SQ: d bytes per row.
  const auto sqm = sq::train(rows.data(), n, d, {}, distance_type::l2, &pool);
  std::vector<std::uint8_t> sc(n * d);
  sq::encode(sqm, rows.data(), n, sc.data(), &pool);
  const sq::distance_estimator se(sqm, q.data(), distance_type::l2);
  const double t_sq = best_seconds(5, [&] {
    se.scan(sc.data(), n, out.data());
    sink = sink + out[n / 2];
  });
  row("SQ 8-bit scan (" + std::to_string(d) + " B per row)", t_sq, double(n), "codes", double(n * d));
  return 0;
}

}  // namespace
