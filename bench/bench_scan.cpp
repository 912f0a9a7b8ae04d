// lancet vs LanceDB 0.39 (Lance 12), side by side in one run, on the foundation issue's
// 1M-row table (int64, float32, ~14-byte strings, 128-d float32 vectors):
//   - write: lancet writes the table as a dataset (inline, then on a pool of 2 threads;
//     with and without fsync of the data file, which LanceDB does not do);
//     LanceDB writes the same Arrow data (read from lancet's dataset, handed to its
//     native createTable as Arrow IPC bytes) — tests/interop/bench_lancedb.mjs;
//   - size: bytes per column (page buffers) of both data files;
//   - scan: a full scan of each dataset by lancet (dataset::scan) and by LanceDB
//     (query().toArrow(), which includes handing the batches to JavaScript).
//   bench_scan [rows] [format] [reps]      (defaults: 1000000 2.2 2)
//   BENCH_SCAN_DIR=dir bench_scan ...      keeps both datasets in dir
// Needs Node and tests/interop/node_modules (npm install there).
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include <lancet/lancet.hpp>

#include "bench_table.hpp"

#include "../tests/support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

using lancet::bench::best_seconds;
using lancet::bench::make_table;
using lancet::bench::scan_all;

// Page-buffer bytes per leaf column of a dataset's data files, by column name.
std::vector<std::pair<std::string, std::uint64_t>> column_bytes(const std::string& root) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& path : testing::data_files(root)) {
    file::file_reader<io::file_source> r{io::file_source(path.string())};
    std::vector<std::string> names;
    for (const auto& f : r.arrow_schema().fields)
      for (std::uint32_t i = 0, n = encoding::structural::column_count(f); i < n; ++i)
        names.push_back(n == 1 ? f.name : f.name + "#" + std::to_string(i));
    if (out.empty())
      for (const auto& n : names) out.emplace_back(n, 0);
    for (std::size_t c = 0; c < r.num_columns() && c < out.size(); ++c)
      for (const auto& p : r.column(c).metadata.pages)
        for (auto s : p.buffer_sizes) out[c].second += s;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const std::string vname = argc > 2 ? argv[2] : "2.2";
  const auto version = file::parse_format_version(vname);
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 2;
  std::uint64_t raw = 0;
  const auto batch = make_table(rows, raw);
  // BENCH_SCAN_DIR: keep both datasets there (for lance-inspect); a temporary directory otherwise.
  testing::temp_dir tmp("bench-scan");
  const fs::path dir = std::getenv("BENCH_SCAN_DIR") ? fs::path(std::getenv("BENCH_SCAN_DIR")) : tmp.path();
  fs::create_directories(dir);
  const auto ours = (dir / "ours").string(), theirs = (dir / "theirs").string();

  std::printf("rows %lld, format %s, raw input %.1f MB, best of %d\n", (long long)rows, vname.c_str(), double(raw) / 1e6, reps);
  // Best of reps for each, the two alternating (so a change in the machine's load
  // affects both); removing the previous rep's dataset is not timed.
  // k: 1 thread / pool of 2, then both without fsync of the data file (Lance 12 does
  // not sync what it writes; lancet does by default).
  double t_write[4] = {1e30, 1e30, 1e30, 1e30};
  boost::asio::thread_pool pool(2);
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 4; ++k) {
      dataset::write_options o;
      o.storage_version = version;
      if (k % 2) o.file_options.pool = &pool;
      o.sync_data_files = k < 2;
      fs::remove_all(ours);
      t_write[k] = std::min(t_write[k], best_seconds(1, [&] { dataset::write(ours, batch, o); }));
    }
  }
  // LanceDB: write the same rows, scan both datasets.
  const auto t0 = clock_type::now();
  auto res = nlohmann::json::parse(testing::node("bench_lancedb.mjs", {ours, theirs, "--version", vname, "--reps", std::to_string(reps)}));
  const double node_wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  const double l_write = res["write_s"], l_scan = res["scan_s"], l_scan_ours = res["scan_ours_s"];
  if (res["rows"].get<std::int64_t>() != rows) throw std::runtime_error("LanceDB read a different number of rows");

  std::uint64_t n_ours = 0, n_theirs = 0;
  const double s_ours = best_seconds(reps, [&] { n_ours = scan_all(ours); });
  const double s_theirs = best_seconds(reps, [&] { n_theirs = scan_all(theirs); });
  if (n_ours != std::uint64_t(rows) || n_theirs != std::uint64_t(rows)) throw std::runtime_error("scan row count mismatch");

  auto mbps = [&](double s) { return double(raw) / s / 1e6; };
  std::printf("\nwrite (raw input MB/s)          seconds     MB/s   vs LanceDB\n");
  std::printf("  LanceDB createTable         %8.3f %8.0f       1.00x\n", l_write, mbps(l_write));
  std::printf("  lancet, 1 thread            %8.3f %8.0f   %8.2fx\n", t_write[0], mbps(t_write[0]), l_write / t_write[0]);
  std::printf("  lancet, pool of 2           %8.3f %8.0f   %8.2fx\n", t_write[1], mbps(t_write[1]), l_write / t_write[1]);
  std::printf("  lancet, 1 thread, no fsync  %8.3f %8.0f   %8.2fx\n", t_write[2], mbps(t_write[2]), l_write / t_write[2]);
  std::printf("  lancet, pool of 2, no fsync %8.3f %8.0f   %8.2fx\n", t_write[3], mbps(t_write[3]), l_write / t_write[3]);
  std::printf("\nfull scan                        seconds     MB/s   vs LanceDB\n");
  std::printf("  LanceDB, its dataset        %8.3f %8.0f       1.00x\n", l_scan, mbps(l_scan));
  std::printf("  LanceDB, lancet's dataset   %8.3f %8.0f   %8.2fx\n", l_scan_ours, mbps(l_scan_ours), l_scan / l_scan_ours);
  std::printf("  lancet, lancet's dataset    %8.3f %8.0f   %8.2fx\n", s_ours, mbps(s_ours), l_scan / s_ours);
  std::printf("  lancet, LanceDB's dataset   %8.3f %8.0f   %8.2fx\n", s_theirs, mbps(s_theirs), l_scan / s_theirs);
  std::printf("\nsize per column (page buffers)   lancet MB  LanceDB MB   ratio\n");
  const auto a = column_bytes(ours), b = column_bytes(theirs);
  std::uint64_t ta = 0, tb = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    std::printf("  %-28s %10.3f %11.3f %7.3f\n", a[i].first.c_str(), double(a[i].second) / 1e6, double(b[i].second) / 1e6,
                b[i].second ? double(a[i].second) / double(b[i].second) : 0.0);
    ta += a[i].second;
    tb += b[i].second;
  }
  std::printf("  %-28s %10.3f %11.3f %7.3f\n", "total", double(ta) / 1e6, double(tb) / 1e6, tb ? double(ta) / double(tb) : 0.0);
  std::printf("\n(node process %.1f s: LanceDB reading lancet's data into memory, %d writes, %d + %d scans)\n", node_wall,
              reps, reps, reps);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_scan: %s\n", e.what());
  return 1;
}
