// Write throughput of the 1M-row benchmark table (int64, float32, ~14-byte strings,
// 128-d float32 vectors) as a Lance file in memory, beside single-thread memcpy of the
// same bytes measured in the same run.
//   bench_write [rows] [format]      (defaults: 1000000 2.0)
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <optional>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <random>
#include <lancet/lancet.hpp>

#include "bench_table.hpp"

using namespace lancet;

using lancet::bench::best_seconds;
using lancet::bench::make_table;

int main(int argc, char** argv) {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const auto version = file::parse_format_version(argc > 2 ? argv[2] : "2.0");
  std::uint64_t raw = 0;
  const auto batch = make_table(rows, raw);

  // Anchor: memcpy of the same number of bytes, one thread.
  std::vector<char> src(raw, 1), dst(raw);
  const double t_memcpy = best_seconds(5, [&] { std::memcpy(dst.data(), src.data(), raw); });

  const double memcpy_mbps = double(raw) / t_memcpy / 1e6;
  std::cout << std::fixed << std::setprecision(1) << "rows " << rows << ", format " << file::to_string(version)
            << ", raw input " << double(raw) / 1e6 << " MB\n"
            << "memcpy (1 thread):         " << t_memcpy * 1e3 << " ms = " << memcpy_mbps << " MB/s\n";
  for (unsigned threads : {0u, 2u}) {
    std::optional<boost::asio::thread_pool> pool;
    file::writer_options o;
    o.rows_per_group = 1024;  // pages as dataset::write cuts them (2.1+; 2.0 ignores it)
    if (threads) {
      pool.emplace(threads);
      o.pool = &*pool;
    }
    std::uint64_t file_size = 0;
    const double t_write = best_seconds(3, [&] {
      file::with_version(version, [&]<class V>() {
        file::file_writer<V, io::memory_sink> w(io::memory_sink(std::size_t(raw) + (std::size_t(64) << 20)), o);  // no regrowth copies
        w.write_batch(batch);
        file_size = w.finish().file_size;
      });
    });
    const double mbps = double(raw) / t_write / 1e6;
    std::cout << std::setprecision(1) << "lancet write (" << (threads ? "pool of 2" : "inline   ") << "): " << t_write * 1e3
              << " ms = " << mbps << " MB/s, file " << double(file_size) / 1e6 << " MB; ratio to memcpy "
              << std::setprecision(3) << mbps / memcpy_mbps << "\n";
  }
}
