// IVF_HNSW_SQ build and search, one run, same data for all:
//  - build time: lancet's build_ivf_index (IVF_HNSW_SQ) against LanceDB 0.39's createIndex
//    (Index.hnswSq, driven through Node, tests/interop/ivf_acceptance.mjs), and the
//    ratio; the peak RSS of our build (run in a forked child: its ru_maxrss, next to
//    what the bench process held when it forked); and lancet's IVF_SQ build of the same
//    data (no graphs: the difference is the graph stage's);
//  - recall@10 and QPS at ef 50, 100, 200 (nprobes --nprobes) of: lancet's own searcher
//    over our index (in process, one query at a time), LanceDB's vectorSearch over our
//    index and over its own, FAISS IndexHNSWFlat and IndexHNSWSQ (8 bit) over all rows
//    (efSearch = ef, M = --m, efConstruction = --ef-construction);
//  - lancet's IVF_PQ at the same size (nprobes --nprobes, no refine) as a reference;
//  - with --flat-pq also IVF_HNSW_FLAT and IVF_HNSW_PQ (--sub-vectors): lancet's builds
//    searched by LanceDB and by lancet, and LanceDB's own IVF_HNSW_PQ (its Node API
//    builds no IVF_HNSW_FLAT).
// Builds report wall and CPU seconds (user + system of the build's process: the
// machine's load stretches wall time, not CPU time); LanceDB's CPU seconds are its
// Node process's, from start to exit (opening the dataset included).
//
//   bench_hnsw [--rows 100000] [--dim 128] [--partitions 64] [--m 20] [--ef-construction 150]
//              [--queries 200] [--nprobes 20] [--threads 2] [--clusters 64] [--spread 0.1]
//              [--seed 1] [--sub-vectors 16] [--budget-mib 512] [--near-queries]
//              [--no-lancedb] [--no-faiss] [--flat-pq]
//
// Data: --clusters Gaussian blobs (centres uniform in [-1, 1)^dim, sigma --spread), as
// tests/interop/create_index.mjs; queries uniform in [-0.8, 0.8]^dim (away from the blobs:
// the hard case bench_hnsw.sh measured), or drawn like the rows with --near-queries.
// Recall is against exact l2 neighbours (row id = position: LanceDB writes one fragment).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/simd/distance.hpp>
#include <lancet/simd/topk.hpp>

#ifdef LANCET_BENCH_FAISS
#include <faiss/IndexHNSW.h>
#include <omp.h>
#endif

#include "../tests/support/interop.hpp"
#include "vector_bench.hpp"

using namespace lancet;
namespace fs = std::filesystem;
using njson = nlohmann::json;

namespace {

using bench::clock_type;
using bench::ids_t;
using bench::recall;
using bench::since;
using bench::write_f32;

struct options {
  std::size_t rows = 100000, dim = 128, partitions = 64, m = 20, ef_construction = 150, queries = 200, nprobes = 20,
              threads = 2, clusters = 64, sub_vectors = 16, budget_mib = 512;
  float spread = 0.1f;
  unsigned seed = 1;
  bool near_queries = false, lancedb = true, faiss = true, flat_pq = false;
};

const std::size_t efs[] = {50, 100, 200};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_hnsw: %s\nusage: bench_hnsw [--rows N] [--dim D] [--partitions P] [--m M] [--ef-construction E]\n"
               "                  [--queries Q] [--nprobes N] [--threads T] [--clusters C] [--spread S] [--seed S]\n"
               "                  [--sub-vectors M] [--budget-mib B] [--near-queries] [--no-lancedb] [--no-faiss]\n"
               "                  [--flat-pq]\n",
               why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("IVF_HNSW_SQ build and search, lancet vs LanceDB vs FAISS");
    if (a == "--no-lancedb") {
      o.lancedb = false;
      continue;
    }
    if (a == "--no-faiss") {
      o.faiss = false;
      continue;
    }
    if (a == "--near-queries") {
      o.near_queries = true;
      continue;
    }
    if (a == "--flat-pq") {
      o.flat_pq = true;
      continue;
    }
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    auto num = [&] { return bench::count_arg(a, v, usage); };
    if (a == "--rows") o.rows = num();
    else if (a == "--dim") o.dim = num();
    else if (a == "--partitions") o.partitions = num();
    else if (a == "--m") o.m = num();
    else if (a == "--ef-construction") o.ef_construction = num();
    else if (a == "--queries") o.queries = num();
    else if (a == "--nprobes") o.nprobes = num();
    else if (a == "--threads") o.threads = num();
    else if (a == "--clusters") o.clusters = num();
    else if (a == "--sub-vectors") o.sub_vectors = num();
    else if (a == "--budget-mib") o.budget_mib = num();
    else if (a == "--seed") o.seed = unsigned(num());
    else if (a == "--spread") o.spread = bench::number_arg(a, v, usage);
    else usage("unknown option " + a);
  }
  if (o.rows == 0 || o.dim == 0 || o.partitions == 0 || o.m < 2 || o.ef_construction == 0 || o.queries == 0 ||
      o.nprobes == 0 || o.threads == 0 || o.clusters == 0 || o.sub_vectors == 0 || o.budget_mib == 0)
    usage("sizes must be positive (m at least 2)");
  if (o.dim % o.sub_vectors != 0) usage("--sub-vectors must divide --dim");
  if (o.partitions > o.rows) usage("more partitions than rows");
  return o;
}

struct run {
  double recall = -1, qps = -1;
};

std::uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * std::uint64_t(::sysconf(_SC_PAGESIZE));
}

struct build_run {
  double seconds = -1, cpu_seconds = -1;
  double peak_mib = -1, held_mib = -1;  // the child's peak RSS; what the bench held at fork
};

double cpu_seconds(const rusage& ru) {
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// CPU seconds of the waited-for children so far (the Node processes).
double children_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  return cpu_seconds(ru);
}

// LanceDB's createIndex of `type` (ivf_acceptance.mjs index): its seconds, and the CPU
// seconds of the whole Node process.
std::pair<double, double> lance_build(const options& o, const fs::path& root, const std::string& type) {
  const double cpu0 = children_cpu_seconds();
  const auto out = njson::parse(testing::node(
      "ivf_acceptance.mjs", {"index", root.string(), "--type", type, "--partitions", std::to_string(o.partitions), "--m",
                             std::to_string(o.m), "--ef-construction", std::to_string(o.ef_construction),
                             "--sub-vectors", std::to_string(o.sub_vectors)}));
  return {out["seconds"].get<double>(), children_cpu_seconds() - cpu0};
}

// build_ivf_index in a forked child (so its peak RSS is the build's, plus what the
// bench process held when it forked); the child reports its build time via a pipe.
build_run forked_build(const fs::path& root, const index::build_options& bo, std::size_t threads) {
  build_run r;
  r.held_mib = double(rss_bytes()) / 1048576.0;
  int fds[2];
  if (::pipe(fds) != 0) throw io_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw io_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    double secs = -1;
    try {
      boost::asio::thread_pool pool(threads);  // the parent's pool threads do not survive fork
      auto o = bo;
      o.pool = &pool;
      const auto t0 = clock_type::now();
      index::build_ivf_index(root.string(), o);
      secs = since(t0);
      pool.join();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_hnsw: build failed: %s\n", e.what());
    }
    if (::write(fds[1], &secs, sizeof secs) != ssize_t(sizeof secs)) ::_exit(3);
    ::_exit(secs < 0 ? 1 : 0);
  }
  ::close(fds[1]);
  double secs = -1;
  if (::read(fds[0], &secs, sizeof secs) != ssize_t(sizeof secs)) secs = -1;
  ::close(fds[0]);
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || secs < 0) throw io_error("the forked build failed");
  r.seconds = secs;
  r.cpu_seconds = cpu_seconds(ru);
  r.peak_mib = double(ru.ru_maxrss) / 1024.0;
  return r;
}

// lancet's searcher over the dataset's index, one query at a time on this thread.
run our_search(const options& o, const fs::path& root, const std::vector<float>& queries, const ids_t& truth,
               std::optional<std::size_t> ef) {
  const auto s = dataset::dataset::open(root.string());
  auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = 10;
  sp.nprobes = o.nprobes;
  sp.ef = ef;
  ix.searcher->search(queries.data(), o.dim, sp);  // warm the partition cache
  ids_t got(o.queries);
  const auto t0 = clock_type::now();
  for (std::size_t q = 0; q < o.queries; ++q)
    for (const auto& h : ix.searcher->search(queries.data() + q * o.dim, o.dim, sp)) got[q].push_back(h.row_id);
  return {recall(got, truth), double(o.queries) / since(t0)};
}

run lance_search(const options& o, const fs::path& root, const fs::path& qf, const ids_t& truth, std::size_t ef) {
  std::istringstream lines(testing::node(
      "ivf_acceptance.mjs", {"search", root.string(), "--queries", qf.string(), "--dim", std::to_string(o.dim), "--k",
                             "10", "--nprobes", std::to_string(o.nprobes), "--ef", std::to_string(ef)}));
  ids_t got;
  run r;
  for (std::string line; std::getline(lines, line);) {
    const auto j = njson::parse(line);
    if (j.contains("rowids")) {
      got.emplace_back();
      for (const auto& id : j["rowids"]) got.back().push_back(std::stoull(id.get<std::string>()));
    } else if (j.contains("qps")) {
      r.qps = j["qps"].get<double>();
    }
  }
  r.recall = recall(got, truth);
  return r;
}

void row(const std::string& name, const std::vector<run>& rs) {
  std::printf("| %s |", name.c_str());
  for (const auto& r : rs)
    if (r.recall < 0) std::printf(" - | - |");
    else std::printf(" %.4f | %.0f |", r.recall, r.qps);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  // FAISS: OpenMP threads that sleep when idle, one BLAS thread (bench_ivf's reasons).
  if (!std::getenv("OMP_WAIT_POLICY") || !std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
    ::execv("/proc/self/exe", argv);
  }
  std::printf("bench_hnsw: %zu x %zu f32 (%zu clusters, spread %.3g), %zu partitions, m %zu, ef_construction %zu, "
              "%zu %s queries, nprobes %zu, %zu threads, budget %zu MiB\n",
              o.rows, o.dim, o.clusters, double(o.spread), o.partitions, o.m, o.ef_construction, o.queries,
              o.near_queries ? "near" : "uniform [-0.8, 0.8]", o.nprobes, o.threads, o.budget_mib);
  std::fflush(stdout);
  std::vector<float> rows, queries;
  const bench::clustered_data data{.rows = o.rows, .dim = o.dim, .queries = o.queries, .clusters = o.clusters,
                                   .spread = o.spread, .seed = o.seed, .uniform_queries = !o.near_queries};
  bench::generate(data, rows, queries);
  testing::temp_dir tmp("bench-hnsw");
  const auto vf = tmp.path() / "vectors.f32", qf = tmp.path() / "queries.f32";
  write_f32(vf, rows);
  write_f32(qf, queries);
  ids_t truth;
  {
    boost::asio::thread_pool pool(o.threads);
    truth = bench::exact_l2(data, rows, queries, &pool);
    pool.join();
  }
  const auto base = tmp.path() / "base";
  testing::node("ivf_acceptance.mjs", {"create", base.string(), "--vectors", vf.string(), "--dim", std::to_string(o.dim)});

  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_hnsw_sq;
  bo.num_partitions = o.partitions;
  bo.m = std::uint32_t(o.m);
  bo.ef_construction = std::uint32_t(o.ef_construction);
  bo.memory_budget_bytes = std::uint64_t(o.budget_mib) << 20;
  const auto ours = tmp.path() / "ours";
  fs::copy(base, ours, fs::copy_options::recursive);
  const auto b = forked_build(ours, bo, o.threads);
  std::printf("lancet IVF_HNSW_SQ build: %.3f s (CPU %.3f s), peak RSS %.0f MiB (the bench held %.0f MiB at fork)\n",
              b.seconds, b.cpu_seconds, b.peak_mib, b.held_mib);
  {
    // The same build without graphs: what the graph stage costs is the difference.
    const auto sq = tmp.path() / "sq";
    fs::copy(base, sq, fs::copy_options::recursive);
    auto so = bo;
    so.type = index::ivf_index_type::ivf_sq;
    const auto sb = forked_build(sq, so, o.threads);
    std::printf("lancet IVF_SQ build (the same without graphs): %.3f s (CPU %.3f s); the graphs: %.3f s (CPU %.3f s)\n",
                sb.seconds, sb.cpu_seconds, b.seconds - sb.seconds, b.cpu_seconds - sb.cpu_seconds);
  }
  std::fflush(stdout);

  const auto theirs = tmp.path() / "theirs";
  double lance_seconds = -1, lance_cpu = -1;
  if (o.lancedb) {
    fs::copy(base, theirs, fs::copy_options::recursive);
    std::tie(lance_seconds, lance_cpu) = lance_build(o, theirs, "hnsw_sq");
    std::printf("LanceDB createIndex IVF_HNSW_SQ: %.3f s (CPU of its Node process %.3f s); lancet / LanceDB = %.2f "
                "(CPU %.2f)\n",
                lance_seconds, lance_cpu, b.seconds / lance_seconds, b.cpu_seconds / lance_cpu);
    std::fflush(stdout);
  }

  std::vector<std::pair<std::string, std::vector<run>>> table;
  {
    std::vector<run> rs;
    for (auto ef : efs) rs.push_back(our_search(o, ours, queries, truth, ef));
    table.emplace_back("lancet searcher, lancet's IVF_HNSW_SQ", rs);
  }
  if (o.lancedb) {
    std::vector<run> a, t;
    for (auto ef : efs) {
      a.push_back(lance_search(o, ours, qf, truth, ef));
      t.push_back(lance_search(o, theirs, qf, truth, ef));
    }
    table.emplace_back("LanceDB vectorSearch, lancet's IVF_HNSW_SQ", a);
    table.emplace_back("LanceDB vectorSearch, LanceDB's IVF_HNSW_SQ", t);
  }
  if (o.flat_pq) {
    for (const auto type : {index::ivf_index_type::ivf_hnsw_flat, index::ivf_index_type::ivf_hnsw_pq}) {
      const std::string name(index::ivf_index_type_name(type));
      const auto dir = tmp.path() / name;
      fs::copy(base, dir, fs::copy_options::recursive);
      auto fo = bo;
      fo.type = type;
      if (type == index::ivf_index_type::ivf_hnsw_pq) fo.num_sub_vectors = o.sub_vectors;
      const auto fb = forked_build(dir, fo, o.threads);
      std::printf("lancet %s build: %.3f s (CPU %.3f s), peak RSS %.0f MiB\n", name.c_str(), fb.seconds,
                  fb.cpu_seconds, fb.peak_mib);
      std::fflush(stdout);
      std::vector<run> us, them;
      for (auto ef : efs) us.push_back(our_search(o, dir, queries, truth, ef));
      table.emplace_back("lancet searcher, lancet's " + name, us);
      if (!o.lancedb) continue;
      for (auto ef : efs) them.push_back(lance_search(o, dir, qf, truth, ef));
      table.emplace_back("LanceDB vectorSearch, lancet's " + name, them);
      if (type != index::ivf_index_type::ivf_hnsw_pq) continue;
      const auto lance_dir = tmp.path() / ("lance-" + name);
      fs::copy(base, lance_dir, fs::copy_options::recursive);
      const auto [secs, cpu] = lance_build(o, lance_dir, "hnsw_pq");
      std::printf("LanceDB createIndex %s: %.3f s (CPU %.3f s)\n", name.c_str(), secs, cpu);
      std::vector<run> own;
      for (auto ef : efs) own.push_back(lance_search(o, lance_dir, qf, truth, ef));
      table.emplace_back("LanceDB vectorSearch, LanceDB's " + name, own);
    }
  }
#ifdef LANCET_BENCH_FAISS
  if (o.faiss) {
    auto faiss_runs = [&](faiss::IndexHNSW& ix, const char* name) {
      omp_set_num_threads(int(o.threads));
      ix.hnsw.efConstruction = int(o.ef_construction);
      const auto t0 = clock_type::now();
      ix.train(faiss::Index::idx_t(o.rows), rows.data());
      ix.add(faiss::Index::idx_t(o.rows), rows.data());
      std::printf("FAISS %s build (train + add, %zu threads): %.3f s\n", name, o.threads, since(t0));
      std::fflush(stdout);
      omp_set_num_threads(1);
      std::vector<run> rs;
      for (auto ef : efs) {
        // With SearchParametersHNSW the first run gave the same recall at every ef (the
        // parameter apparently not applied by FAISS 1.7.3): set the index's own efSearch.
        ix.hnsw.efSearch = int(ef);
        ids_t got(o.queries);
        std::vector<faiss::Index::idx_t> labels(10);
        std::vector<float> dist(10);
        const auto t1 = clock_type::now();
        for (std::size_t q = 0; q < o.queries; ++q) {
          ix.search(1, queries.data() + q * o.dim, 10, dist.data(), labels.data());
          for (auto l : labels)
            if (l >= 0) got[q].push_back(std::uint64_t(l));
        }
        rs.push_back({recall(got, truth), double(o.queries) / since(t1)});
      }
      table.emplace_back(std::string("FAISS ") + name + " (all rows, one graph)", rs);
    };
    faiss::IndexHNSWFlat flat(int(o.dim), int(o.m));
    faiss_runs(flat, "IndexHNSWFlat");
    faiss::IndexHNSWSQ sq(int(o.dim), faiss::ScalarQuantizer::QT_8bit, int(o.m));
    faiss_runs(sq, "IndexHNSWSQ");
  }
#else
  if (o.faiss) std::printf("(FAISS not found at build time: no FAISS rows)\n");
#endif
  {
    const auto pq = tmp.path() / "pq";
    fs::copy(base, pq, fs::copy_options::recursive);
    auto po = bo;
    po.type = index::ivf_index_type::ivf_pq;
    po.num_sub_vectors = o.sub_vectors;
    const auto pb = forked_build(pq, po, o.threads);
    std::printf("lancet IVF_PQ (%zu x 8 bit) build: %.3f s (CPU %.3f s), peak RSS %.0f MiB\n", o.sub_vectors, pb.seconds,
                pb.cpu_seconds, pb.peak_mib);
    const auto r = our_search(o, pq, queries, truth, std::nullopt);
    table.emplace_back("lancet searcher, lancet's IVF_PQ (no ef; same row at every ef)", std::vector<run>(3, r));
  }

  std::printf("\nrecall@10 and QPS (one query at a time; LanceDB: one vectorSearch per query, its own threads)\n");
  std::printf("| searcher, index | ef 50 recall | QPS | ef 100 recall | QPS | ef 200 recall | QPS |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& [name, rs] : table) row(name, rs);
  if (o.lancedb) {
    const auto& a = table[1].second;
    const auto& t = table[2].second;
    std::printf("\nbuild: lancet %.3f s / LanceDB %.3f s = %.2f (target <= 0.33); CPU %.3f s / %.3f s = %.2f; "
                "recall over ours - over LanceDB's: %+.4f / %+.4f / %+.4f at ef 50 / 100 / 200\n",
                b.seconds, lance_seconds, b.seconds / lance_seconds, b.cpu_seconds, lance_cpu, b.cpu_seconds / lance_cpu,
                a[0].recall - t[0].recall, a[1].recall - t[1].recall, a[2].recall - t[2].recall);
  }
  return 0;
}
