// Index optimisation after appends: lancet's optimize_indices against LanceDB's
// optimize() (through Node, tests/interop/optimize.mjs) in the same run.
//
//   bench_optimize [--rows 200000] [--dim 128] [--partitions 16] [--sub-vectors 16]
//                  [--growth 0.1,3] [--threads T] [--no-lancedb] [--type ivf_pq]
//
// An IVF_PQ index (or --type: ivf_hnsw_sq, ...; graphs with Lance's default m 20 /
// ef_construction 150, which the optimised segments keep) built by lancet over `rows`
// clustered vectors; then, for each
// growth factor g, rows * g new rows are appended to a copy of the dataset and the
// index is optimised by lancet and (on another copy) by LanceDB. The default 16
// partitions of 12,500 rows are normal-sized at Lance's IVF_PQ target (8,192), so a
// 10% append writes a delta segment, and a 3x growth (50,000 rows per partition, above
// 4 x 8,192) forces every partition to split.
// LanceDB's Node API only offers the whole optimize(): it also compacts the two
// fragments into one (rewriting every row and remapping the index) and cleans up old
// versions, so its time is an upper bound on its index optimisation; the time of a
// Node process that only opens the table and lists its indexes is printed beside it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>

#include "../tests/support/interop.hpp"
#include "../tests/support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

namespace {

struct options {
  std::size_t rows = 200000, dim = 128, partitions = 16, sub_vectors = 16;
  std::vector<double> growth{0.1, 3.0};
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  bool lancedb = true;
  index::ivf_index_type type = index::ivf_index_type::ivf_pq;
};

arrow::record_batch batch(const std::vector<float>& values, std::size_t dim, std::int64_t first_id) {
  return lancet::testing::id_vector_batch(values, dim, first_id);
}

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rows") o.rows = std::stoul(next());
    else if (a == "--dim") o.dim = std::stoul(next());
    else if (a == "--partitions") o.partitions = std::stoul(next());
    else if (a == "--sub-vectors") o.sub_vectors = std::stoul(next());
    else if (a == "--threads") o.threads = std::max<std::size_t>(1, std::stoul(next()));
    else if (a == "--no-lancedb") o.lancedb = false;
    else if (a == "--type") o.type = index::parse_ivf_index_type(next());
    else if (a == "--growth") {
      o.growth.clear();
      std::stringstream ss(next());
      std::string g;
      while (std::getline(ss, g, ',')) o.growth.push_back(std::stod(g));
    } else {
      std::cerr << "usage: bench_optimize [--rows N] [--dim D] [--partitions P] [--sub-vectors M] [--growth 0.1,3] "
                   "[--threads T] [--no-lancedb] [--type T]\n";
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  testing::temp_dir tmp("bench-opt");
  const std::string base = (tmp.path() / "base").string();
  auto t0 = clk::now();
  // 1,000 Gaussian clusters (sigma 0.25); appended rows come from the same centres.
  testing::cluster_draws<> draws(o.dim, 1000, 0.25f, 7);
  dataset::write(base, batch(draws.draw(o.rows), o.dim, 0));
  const auto after_base = draws;
  std::printf("dataset: %zu x %zu written in %.2f s\n", o.rows, o.dim, seconds_since(t0));
  boost::asio::thread_pool pool(o.threads);
  index::build_options b;
  b.pool = &pool;
  b.column = "vector";
  b.type = o.type;
  b.num_partitions = o.partitions;
  const bool pq = o.type == index::ivf_index_type::ivf_pq || o.type == index::ivf_index_type::ivf_hnsw_pq;
  if (pq) b.num_sub_vectors = o.sub_vectors;
  t0 = clk::now();
  index::build_ivf_index(base, b);
  std::printf("%s index (%zu partitions, %zu sub-vectors) built by lancet in %.2f s\n",
              std::string(index::ivf_index_type_name(o.type)).c_str(), o.partitions, pq ? o.sub_vectors : 0,
              seconds_since(t0));
  for (double g : o.growth) {
    const std::size_t added = std::size_t(double(o.rows) * g);
    auto appended = after_base;  // every growth appends the same first rows
    const auto more = appended.draw(added);
    const std::string ours = (tmp.path() / "ours").string(), theirs = (tmp.path() / "lancedb").string();
    fs::remove_all(ours), fs::remove_all(theirs);
    fs::copy(base, ours, fs::copy_options::recursive);
    dataset::write_options wo;
    wo.mode = dataset::write_mode::append;
    dataset::write(ours, batch(more, o.dim, std::int64_t(o.rows)), wo);
    fs::copy(ours, theirs, fs::copy_options::recursive);

    t0 = clk::now();
    index::optimize_options oo;
    oo.pool = &pool;
    const auto r = index::optimize_indices(ours, oo);
    const double ours_s = seconds_since(t0);
    const auto& ir = r.indices.at(0);
    std::printf("\n+%zu rows (%.0f%%): lancet optimize (%zu threads) %.2f s: %zu -> %zu segments, %zu partitions, %llu rows in the "
                "new segment, %zu splits, %zu joins\n",
                added, g * 100, o.threads, ours_s, ir.segments_before, ir.segments_after, ir.num_partitions,
                (unsigned long long)ir.rows_in_segment, ir.splits.size(), ir.joins.size());
    if (o.lancedb) {
      t0 = clk::now();
      testing::node("list_indices.mjs", {theirs});
      const double node_s = seconds_since(t0);
      t0 = clk::now();
      const auto out = nlohmann::json::parse(testing::node("optimize.mjs", {theirs}));
      const double lance_s = seconds_since(t0);
      const auto& st = out["indices"].at(0)["stats"];
      std::printf("+%zu rows (%.0f%%): LanceDB optimize() %.2f s (a Node process listing the indexes: %.2f s): "
                  "%s indexed rows, %s segment(s), compaction %s\n",
                  added, g * 100, lance_s, node_s, st["numIndexedRows"].dump().c_str(), st["numIndices"].dump().c_str(),
                  out["stats"]["compaction"].dump().c_str());
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_optimize: " << e.what() << "\n";
  return 1;
}
