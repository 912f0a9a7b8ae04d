// Random takes from datasets of 128-d float32 vectors (plus an int64 id), written by
// lancet and by LanceDB 0.39 (through Node, tests/interop/ivf_acceptance.mjs) from the
// same vectors, timed side by side in one run:
//   - one take of 100 random row ids, the vector column only (a refine of k = 10 x 10);
//   - one take of N random row ids (dataset::take sorts them by fragment and offset);
//   - N/10 takes of one row each (an index search's re-rank does many small takes);
//   - a full scan of the dataset (id + vector; best of three, each with the dataset
//     opened anew), beside memcpy of the same bytes into fresh memory (the anchor:
//     what reading pages into new buffers costs at best).
//   bench_take [rows] [formats] [takes] [--no-lancedb]
//     defaults: 200000 2.0,2.1,2.2 1000
//   BENCH_TAKE_DIR=dir bench_take ...       keeps the datasets in dir (and reuses them)
// Datasets: lancet's writer with one write call per format; LanceDB's createTable (one
// call) per format; LanceDB's 2.0 and 2.2 in fragments of 10,000 rows (createTable, then
// appends: many fragments). Times are the best of three runs (the 100-row take: of
// five). Every 100-row take is checked against the vectors written.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <time.h>
#include <unistd.h>

#include <lancet/lancet.hpp>

#ifdef LANCET_SOURCE_ROOT
#include "../tests/support/interop.hpp"
#endif

using namespace lancet;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::int64_t dim = 128;

arrow::record_batch make_rows(const std::vector<float>& values, std::int64_t begin, std::int64_t n) {
  aligned_buffer vec, ids;
  vec.resize(std::size_t(n * dim) * 4);
  ids.resize(std::size_t(n) * 8);
  for (std::int64_t i = 0; i < n * dim; ++i) le::store<float>(vec.data() + 4 * i, values[std::size_t(begin * dim + i)]);
  for (std::int64_t i = 0; i < n; ++i) le::store<std::int64_t>(ids.data() + 8 * i, begin + i);
  auto items = std::make_shared<arrow::array_data>();
  items->type = arrow::float32();
  items->length = n * dim;
  items->buffers = {shared_bytes(), shared_bytes(std::move(vec))};
  auto v = std::make_shared<arrow::array_data>();
  v->type = arrow::fixed_size_list(arrow::float32(), dim, true);
  v->length = n;
  v->buffers = {shared_bytes()};
  v->children = {items};
  auto id = std::make_shared<arrow::array_data>();
  id->type = arrow::int64();
  id->length = n;
  id->buffers = {shared_bytes(), shared_bytes(std::move(ids))};
  return arrow::make_batch({{"id", id}, {"vector", v}});
}

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// CPU seconds of this thread (the machine is shared: wall time includes waiting for a core).
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const auto e = std::min(s.find(',', at), s.size());
    if (e > at) out.push_back(s.substr(at, e - at));
    at = e + 1;
  }
  return out;
}

// Row ids of the dataset's rows in order (ids = positions, nothing deleted).
std::vector<std::uint64_t> ids_of(const dataset::dataset& ds, const std::vector<std::uint64_t>& positions) {
  std::vector<std::uint64_t> frag_rows;
  const auto frags = ds.fragments();
  for (const auto& f : frags) frag_rows.push_back(f.live_rows());
  std::vector<std::uint64_t> ids;
  for (auto p : positions) {
    std::size_t k = 0;
    while (p >= frag_rows[k]) p -= frag_rows[k++];
    ids.push_back(dataset::row_address(frags[k].id, p));
  }
  return ids;
}

struct figures {
  double take100_ms = 0, take_n_s = 0, single_us = 0;
  double take100_cpu_ms = 0, take_n_cpu_s = 0, single_cpu_us = 0;
  double scan_ms = 0, scan_cpu_ms = 0;
  bool values_ok = true;
};

figures measure(const std::string& root, const std::vector<float>& values, std::size_t takes) {
  const auto ds = dataset::dataset::open(root);
  const auto n = std::uint64_t(ds.count_rows());
  std::mt19937_64 rng(2);
  std::vector<std::uint64_t> positions(takes), hundred(100);
  for (auto& p : positions) p = rng() % n;
  for (auto& p : hundred) p = rng() % n;
  const auto ids = ids_of(ds, positions), ids100 = ids_of(ds, hundred);
  figures f;
  f.take100_ms = f.take_n_s = f.single_us = 1e30;
  f.take100_cpu_ms = f.take_n_cpu_s = f.single_cpu_us = 1e30;
  std::uint64_t check = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t = clock_type::now();
    const auto c = thread_cpu_seconds();
    const auto b = ds.take(ids100, {"vector"});
    f.take100_ms = std::min(f.take100_ms, 1e3 * seconds_since(t));
    f.take100_cpu_ms = std::min(f.take100_cpu_ms, 1e3 * (thread_cpu_seconds() - c));
    const auto& items = *b.columns.at(0)->children.at(0);
    for (std::size_t r = 0; r < hundred.size(); ++r)
      for (std::int64_t d = 0; d < dim; ++d)
        f.values_ok &= items.value<float>(std::int64_t(r) * dim + d) == values[std::size_t(hundred[r] * dim) + std::size_t(d)];
  }
  const std::size_t singles = std::max<std::size_t>(1, takes / 10);
  for (int rep = 0; rep < 3; ++rep) {
    auto t = clock_type::now();
    auto c = thread_cpu_seconds();
    check += std::uint64_t(ds.take(ids).num_rows());
    f.take_n_s = std::min(f.take_n_s, seconds_since(t));
    f.take_n_cpu_s = std::min(f.take_n_cpu_s, thread_cpu_seconds() - c);
    t = clock_type::now();
    c = thread_cpu_seconds();
    for (std::size_t i = 0; i < singles; ++i) check += std::uint64_t(ds.take({ids[i]}).num_rows());
    f.single_us = std::min(f.single_us, 1e6 * seconds_since(t) / double(singles));
    f.single_cpu_us = std::min(f.single_cpu_us, 1e6 * (thread_cpu_seconds() - c) / double(singles));
  }
  if (check != 3 * (takes + singles)) f.values_ok = false;
  f.scan_ms = f.scan_cpu_ms = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t = clock_type::now();
    const auto c = thread_cpu_seconds();
    const auto fresh = dataset::dataset::open(root);
    std::uint64_t rows_seen = 0;
    for (auto sc = fresh.scan(); auto b = sc.next();) rows_seen += std::uint64_t(b->num_rows());
    f.scan_ms = std::min(f.scan_ms, 1e3 * seconds_since(t));
    f.scan_cpu_ms = std::min(f.scan_cpu_ms, 1e3 * (thread_cpu_seconds() - c));
    if (rows_seen != n) f.values_ok = false;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  bool lancedb = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-lancedb") == 0) lancedb = false;
    else pos.push_back(argv[i]);
  }
  const std::int64_t rows = pos.size() > 0 ? std::atoll(pos[0].c_str()) : 200000;
  const auto formats = split(pos.size() > 1 ? pos[1] : "2.0,2.1,2.2");
  const std::size_t takes = pos.size() > 2 ? std::size_t(std::atoll(pos[2].c_str())) : 1000;
  if (rows <= 0 || takes == 0 || formats.empty()) {
    std::fprintf(stderr, "usage: bench_take [rows > 0] [formats, e.g. 2.0,2.2] [takes > 0] [--no-lancedb]\n");
    return 2;
  }
#ifndef LANCET_SOURCE_ROOT
  lancedb = false;
#endif
  const char* keep = std::getenv("BENCH_TAKE_DIR");
  const fs::path dir = keep ? fs::path(keep) : fs::temp_directory_path() / ("lancet-bench-take-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<float> values(std::size_t(rows * dim));
  {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : values) v = u(rng);
  }
  const auto vectors_file = dir / ("vectors-" + std::to_string(rows) + ".f32");
  if (lancedb && !fs::exists(vectors_file)) {
    std::ofstream out(vectors_file, std::ios::binary);
    for (auto v : values) {
      char b[4];
      le::store<float>(reinterpret_cast<std::uint8_t*>(b), v);
      out.write(b, 4);
    }
  }

  struct target {
    std::string label, root;
  };
  std::vector<target> targets;
  for (const auto& format : formats) {
    const std::string root = (dir / ("lancet-" + format + "-" + std::to_string(rows))).string();
    if (!fs::exists(root)) {
      std::vector<arrow::record_batch> batches;
      for (std::int64_t at = 0; at < rows; at += 8192) batches.push_back(make_rows(values, at, std::min<std::int64_t>(8192, rows - at)));
      dataset::write_options wo;
      wo.storage_version = file::parse_format_version(format);
      const auto t = clock_type::now();
      dataset::write(root, batches, wo);
      std::printf("lancet wrote %lld rows (%s) in %.2f s\n", static_cast<long long>(rows), format.c_str(), seconds_since(t));
    }
    targets.push_back({"lancet " + format + ", one write", root});
  }
#ifdef LANCET_SOURCE_ROOT
  if (lancedb) {
    auto create = [&](const std::string& format, std::int64_t fragment_rows) {
      const std::string root = (dir / ("lancedb-" + format + "-" + std::to_string(rows) + "-" +
                                       std::to_string(fragment_rows))).string();
      if (!fs::exists(root)) {
        const auto t = clock_type::now();
        testing::node("ivf_acceptance.mjs", {"create", root, "--vectors", vectors_file.string(), "--dim", std::to_string(dim),
                                             "--storage", format, "--fragment-rows", std::to_string(fragment_rows)});
        std::printf("LanceDB wrote %lld rows (%s, fragments of %lld rows) in %.2f s\n", static_cast<long long>(rows),
                    format.c_str(), static_cast<long long>(fragment_rows), seconds_since(t));
      }
      const bool one = fragment_rows >= rows;
      targets.push_back({"LanceDB " + format + (one ? ", one createTable" : ", fragments of " + std::to_string(fragment_rows)),
                         root});
    };
    for (const auto& format : formats) create(format, rows);
    for (const auto& format : formats)
      if (format == "2.0" || format == "2.2") create(format, std::min<std::int64_t>(rows, 10000));
  }
#endif
  std::printf("\n%lld rows x %lld-d float32; best of 3 (100-row take: of 5); wall time (thread CPU time)\n",
              static_cast<long long>(rows), static_cast<long long>(dim));
  // The scan's anchor: memcpy of the rows' bytes (id + vector) into fresh memory.
  double copy_ms = 1e30;
  {
    const std::size_t bytes = std::size_t(rows) * (8 + 4 * dim);
    std::vector<std::uint8_t> from(bytes, 1);
    for (int rep = 0; rep < 3; ++rep) {
      const auto t = clock_type::now();
      std::unique_ptr<std::uint8_t[]> to(new std::uint8_t[bytes]);
      std::memcpy(to.get(), from.data(), bytes);
      copy_ms = std::min(copy_ms, 1e3 * seconds_since(t));
      if (to[bytes - 1] != 1) return 1;
    }
  }
  std::printf("| dataset | take of 100 random vectors | take of %zu random rows (id + vector) | 1-row take (id + vector) | full scan (id + vector) | scan vs memcpy into fresh memory (%.1f ms) |\n",
              takes, copy_ms);
  std::printf("|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const auto& t : targets) {
    const auto f = measure(t.root, values, takes);
    ok &= f.values_ok;
    std::printf("| %s | %.2f ms (%.2f) | %.1f ms (%.1f) | %.0f us (%.0f) | %.1f ms (%.1f) | %.2fx |%s\n", t.label.c_str(),
                f.take100_ms, f.take100_cpu_ms, 1e3 * f.take_n_s, 1e3 * f.take_n_cpu_s, f.single_us, f.single_cpu_us,
                f.scan_ms, f.scan_cpu_ms, copy_ms / f.scan_ms, f.values_ok ? "" : " WRONG VALUES");
    std::fflush(stdout);
  }
  if (!keep) fs::remove_all(dir);
  return ok ? 0 : 1;
}
