// Random takes from a dataset of 128-d float32 vectors (plus an int64 id):
//   - one take of N random row ids (dataset::take sorts them by fragment and offset);
//   - N/10 takes of one row each (an index search's re-rank does many small takes).
//   bench_take [rows] [format] [takes]      (defaults: 200000 2.2 1000)
//   BENCH_TAKE_DIR=dir bench_take ...       keeps the dataset in dir (and reuses it)
// Times are the best of three runs.
// Before a full-zip page was read only in part, each taken row fetched its whole
// vector page (~8.9 MB of 17k rows); rows/s shows the difference.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <lancet/lancet.hpp>

using namespace lancet;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

arrow::record_batch make_rows(std::int64_t begin, std::int64_t n, std::mt19937_64& rng) {
  aligned_buffer vec, ids;
  vec.resize(std::size_t(n) * 128 * 4);
  ids.resize(std::size_t(n) * 8);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < n * 128; ++i) le::store<float>(vec.data() + 4 * i, u(rng));
  for (std::int64_t i = 0; i < n; ++i) le::store<std::int64_t>(ids.data() + 8 * i, begin + i);
  auto items = std::make_shared<arrow::array_data>();
  items->type = arrow::float32();
  items->length = n * 128;
  items->buffers = {shared_bytes(), shared_bytes(std::move(vec))};
  auto v = std::make_shared<arrow::array_data>();
  v->type = arrow::fixed_size_list(arrow::float32(), 128, true);
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

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 200000;
  const std::string format = argc > 2 ? argv[2] : "2.2";
  const std::size_t takes = argc > 3 ? std::size_t(std::atoll(argv[3])) : 1000;
  if (rows <= 0 || takes == 0) {
    std::fprintf(stderr, "usage: bench_take [rows > 0] [format] [takes > 0]\n");
    return 2;
  }
  const char* keep = std::getenv("BENCH_TAKE_DIR");
  const fs::path dir = keep ? fs::path(keep) : fs::temp_directory_path() / ("lancet-bench-take-" + std::to_string(::getpid()));
  const std::string root = (dir / ("take-" + format + "-" + std::to_string(rows))).string();
  if (!fs::exists(root)) {
    std::mt19937_64 rng(1);
    std::vector<arrow::record_batch> batches;
    for (std::int64_t at = 0; at < rows; at += 8192) batches.push_back(make_rows(at, std::min<std::int64_t>(8192, rows - at), rng));
    dataset::write_options wo;
    wo.storage_version = file::parse_format_version(format);
    const auto t = clock_type::now();
    dataset::write(root, batches, wo);
    std::printf("wrote %lld rows (%s) in %.2f s\n", static_cast<long long>(rows), format.c_str(), seconds_since(t));
  }
  const auto ds = dataset::dataset::open(root);
  const auto n = std::uint64_t(ds.count_rows());
  std::mt19937_64 rng(2);
  std::vector<std::uint64_t> positions(takes);
  for (auto& p : positions) p = rng() % n;
  // Row ids of a single-fragment-per-file dataset: fragment << 32 | offset.
  std::vector<std::uint64_t> ids;
  {
    std::vector<std::uint64_t> frag_rows;
    for (const auto& f : ds.fragments()) frag_rows.push_back(f.live_rows());
    const auto frags = ds.fragments();
    for (auto p : positions) {
      std::size_t k = 0;
      while (p >= frag_rows[k]) p -= frag_rows[k++];
      ids.push_back(dataset::row_address(frags[k].id, p));
    }
  }
  // Best of three runs of each (the machine is shared).
  std::uint64_t check = 0;
  const std::size_t singles = std::max<std::size_t>(1, takes / 10);
  double one = 1e30, many = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t = clock_type::now();
    check += std::uint64_t(ds.take(ids).num_rows());
    one = std::min(one, seconds_since(t));
    t = clock_type::now();
    for (std::size_t i = 0; i < singles; ++i) check += std::uint64_t(ds.take({ids[i]}).num_rows());
    many = std::min(many, seconds_since(t));
  }
  std::printf("take of %zu random rows of %llu (%s, 128-d f32): %.3f s, %.0f rows/s\n", takes,
              static_cast<unsigned long long>(n), format.c_str(), one, double(takes) / one);
  std::printf("%zu takes of 1 row: %.3f s, %.0f rows/s (check %llu)\n", singles, many, double(singles) / many,
              static_cast<unsigned long long>(check));
  if (!keep) fs::remove_all(dir);
  return 0;
}
