// lancet vs LanceDB 0.39 (Lance 12) on object stores, side by side in one run: the
// bench_scan table (int64, float32, 14-byte strings, 128-d float32 vectors; 2M rows,
// about 1.1 GB decoded) written as a 2.2 dataset to s3rver and to Azurite (both
// started here on 127.0.0.1, stopped at the end) and scanned back in full.
//   - write: lancet's dataset::write to the URI (a pool of 2 encoding threads; parts of
//     5 MiB uploaded 10 at a time), against LanceDB's native createTable of the same
//     rows as Arrow IPC (tests/interop/bench_object_store.mjs);
//   - scan: lancet's dataset::scan of each dataset, against LanceDB's query().toArrow();
//   - memory: the peak resident memory the write adds over the table already in memory
//     (VmHWM after clear_refs), against parts_in_flight x part_size + 64 MiB, and the
//     same write to a local file as the anchor.
//   bench_object_store [rows] [reps]      (defaults: 2000000 1)
// Needs Node and tests/interop/node_modules (npm install there).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/lancet.hpp>
#include <lancet/io/object_store/object_storage.hpp>

#include "bench_table.hpp"

#include "../tests/support/emulator.hpp"
#include "../tests/support/interop.hpp"

using namespace lancet;
namespace os = lancet::io::object_store;

namespace {

using lancet::bench::best_seconds;
using lancet::bench::make_table;
using lancet::bench::scan_all;

// A field of /proc/self/status in bytes (VmRSS, VmHWM).
std::uint64_t status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10) * 1024;
  return 0;
}
// Resets VmHWM to the current resident size.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

int main(int argc, char** argv) try {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2000000;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  std::uint64_t raw = 0;
  const auto batch = make_table(rows, raw);
  testing::temp_dir tmp("bench-object-store");
  const std::string source = (tmp.path() / "source").string();
  dataset::write(source, batch);  // LanceDB's input, read into its memory by the script
  testing::emulator s3rver({"node", "--openssl-legacy-provider", (testing::interop_dir() / "s3rver.mjs").string(),
                            (tmp.path() / "s3").string(), "lance"});
  testing::emulator azurite({"node", (testing::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"});
  const std::vector<std::pair<std::string, os::storage_options>> stores = {
      {"s3://lance/db",
       {{"aws_access_key_id", "S3RVER"}, {"aws_secret_access_key", "S3RVER"}, {"aws_endpoint", s3rver.url()},
        {"aws_region", "us-east-1"}, {"allow_http", "true"}}},
      {"az://lance/db",
       {{"azure_storage_account_name", "devstoreaccount1"}, {"azure_storage_account_key", std::string(os::emulator_key)},
        {"azure_storage_endpoint", azurite.url() + "/devstoreaccount1"}, {"allow_http", "true"}}}};
  const os::object_sink_options sink;
  const double budget = double(sink.parts_in_flight * sink.part_size + (std::uint64_t(64) << 20));
  boost::asio::thread_pool pool(2);
  auto mbps = [&](double s) { return double(raw) / s / 1e6; };
  std::printf("rows %lld, format 2.2, raw input %.1f MB, best of %d; parts of %.0f MiB, %u in flight\n", (long long)rows,
              double(raw) / 1e6, reps, double(sink.part_size) / 1048576.0, sink.parts_in_flight);

  {  // the anchor: the same write to a local file
    dataset::write_options o;
    o.file_options.pool = &pool;
    const auto before = status_bytes("VmRSS");
    reset_peak();
    const double s = best_seconds(1, [&] { dataset::write((tmp.path() / "local").string(), batch, o); });
    std::printf("local file: write %.3f s (%.0f MB/s), peak memory over the table %.0f MiB\n", s, mbps(s),
                (double(status_bytes("VmHWM")) - double(before)) / 1048576.0);
  }
  for (const auto& [db, options] : stores) {
    io::mount(db, os::open_storage(db, options, [](const std::string&) { return std::nullopt; }, sink));
    const std::string ours = db + "/ours.lance";
    double write = 1e30, peak = 0;
    for (int r = 0; r < reps; ++r) {
      dataset::write_options o;
      o.file_options.pool = &pool;
      o.mode = r == 0 ? dataset::write_mode::create : dataset::write_mode::overwrite;
      const auto before = status_bytes("VmRSS");
      reset_peak();
      write = std::min(write, best_seconds(1, [&] { dataset::write(ours, batch, o); }));
      peak = std::max(peak, double(status_bytes("VmHWM")) - double(before));
    }
    std::uint64_t n = 0;
    const double scan = best_seconds(reps, [&] { n = scan_all(ours); });
    if (n != std::uint64_t(rows)) throw std::runtime_error("lancet's scan read " + std::to_string(n) + " rows");
    const auto res = nlohmann::json::parse(testing::node(
        "bench_object_store.mjs", {source, db, nlohmann::json(options).dump(), "ours", "--reps", std::to_string(reps)}));
    if (res["rows"].get<std::int64_t>() != rows) throw std::runtime_error("LanceDB read a different number of rows");
    std::uint64_t n_theirs = 0;
    const double scan_theirs = best_seconds(reps, [&] { n_theirs = scan_all(db + "/lancedb.lance"); });
    if (n_theirs != std::uint64_t(rows)) throw std::runtime_error("lancet's scan of LanceDB's table read another count");
    const double l_write = res["write_s"], l_scan = res["scan_s"], l_scan_ours = res["scan_ours_s"];
    std::printf("\n%s                     seconds     MB/s   vs LanceDB\n", db.c_str());
    std::printf("  write: LanceDB createTable    %8.3f %8.0f       1.00x\n", l_write, mbps(l_write));
    std::printf("  write: lancet, pool of 2      %8.3f %8.0f   %8.2fx\n", write, mbps(write), l_write / write);
    std::printf("  scan: LanceDB, its table      %8.3f %8.0f       1.00x\n", l_scan, mbps(l_scan));
    std::printf("  scan: LanceDB, lancet's table %8.3f %8.0f   %8.2fx\n", l_scan_ours, mbps(l_scan_ours), l_scan / l_scan_ours);
    std::printf("  scan: lancet, lancet's table  %8.3f %8.0f   %8.2fx\n", scan, mbps(scan), l_scan / scan);
    std::printf("  scan: lancet, LanceDB's table %8.3f %8.0f   %8.2fx\n", scan_theirs, mbps(scan_theirs), l_scan / scan_theirs);
    std::printf("  write's peak memory over the table: %.0f MiB (bound %.0f MiB: %.2fx of it)\n", peak / 1048576.0,
                budget / 1048576.0, peak / budget);
    io::unmount(db);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_object_store: %s\n", e.what());
  return 1;
}
