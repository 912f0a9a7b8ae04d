// Recall against speed over a sweep of the search knobs, per index type: lancet (its
// query layer, query::table), LanceDB 0.39 (vectorSearch through Node,
// tests/interop/bench_recall_speed.mjs) and FAISS 1.7.3 (the matching index), all on
// the same data and queries in one run. One CSV row per (index, system, setting);
// bench/plot_recall_speed.py draws the curves, bench/recall_speed.sh runs it all.
//
//   bench_recall_speed --csv FILE [--data clustered|low-rank] [--label NAME]
//       [--rows 100000] [--dim 128] [--queries 200] [--clusters 1000] [--spread 0.25]
//       [--latent 16] [--seed 1] [--partitions 256] [--hnsw-partitions 64]
//       [--sub-vectors D/8] [--m 20] [--ef-construction 150] [--refine 10] [--threads 2]
//       [--types flat,pq8,pq4,sq,rq,hnsw_sq,hnsw_pq] [--no-lancedb] [--no-faiss]
//
// Index types and their FAISS counterparts: flat (IndexIVFFlat), pq8 (IndexIVFPQ),
// pq4 (IndexIVFPQFastScan), sq (IndexIVFScalarQuantizer 8-bit, not by residual; no
// LanceDB: its Node API builds no IVF_SQ), rq (RaBitQ 1-bit: FAISS 1.7.3 has none),
// hnsw_sq / hnsw_pq (IndexHNSWSQ / IndexHNSWPQ over all rows: FAISS has no HNSW per IVF
// partition).
// Knobs: nprobes 1, 2, 3, 5, 8, 13, ... (steps of about 1.6x) up to every partition; quantized IVF
// types also with refine (--refine, exact re-ranking: lancet and LanceDB read the
// vectors from the dataset, FAISS's IndexRefineFlat holds them in memory); IVF_HNSW:
// nprobes x ef; FAISS HNSW: ef.
// Timing: one query at a time on one thread (LanceDB: one vectorSearch after another,
// its own threads), returning `id`, after every query once at the most expensive
// setting (warm caches); recall@10 against exact l2 neighbours. Builds: lancet on a pool
// of --threads, FAISS with --threads OpenMP threads, LanceDB its createIndex (all cores).
// Index size: the bytes under the dataset's _indices (lancet, LanceDB) or of
// faiss::write_index's file.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/query/table.hpp>

#ifdef LANCET_BENCH_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexIVFPQFastScan.h>
#include <faiss/IndexRefine.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/index_io.h>
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
using bench::since;

struct options {
  std::string csv, data = "clustered", label, types = "flat,pq8,pq4,sq,rq,hnsw_sq,hnsw_pq";
  std::size_t rows = 100000, dim = 128, queries = 200, clusters = 1000, latent = 16, partitions = 256,
              hnsw_partitions = 64, sub_vectors = 0, m = 20, ef_construction = 150, refine = 10, threads = 2;
  float spread = 0.25f;
  unsigned seed = 1;
  bool lancedb = true, faiss = true;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_recall_speed: %s\n"
               "usage: bench_recall_speed --csv FILE [--data clustered|low-rank] [--label NAME] [--rows N] [--dim D]\n"
               "         [--queries Q] [--clusters C] [--spread S] [--latent L] [--seed S] [--partitions P]\n"
               "         [--hnsw-partitions P] [--sub-vectors M] [--m M] [--ef-construction E] [--refine R]\n"
               "         [--threads T] [--types flat,pq8,pq4,sq,rq,hnsw_sq,hnsw_pq] [--no-lancedb] [--no-faiss]\n",
               why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("recall against QPS, lancet vs LanceDB vs FAISS");
    if (a == "--no-lancedb" || a == "--no-faiss") {
      (a == "--no-lancedb" ? o.lancedb : o.faiss) = false;
      continue;
    }
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    auto num = [&] { return bench::count_arg(a, v, usage); };
    if (a == "--csv") o.csv = v;
    else if (a == "--data") o.data = v;
    else if (a == "--label") o.label = v;
    else if (a == "--types") o.types = v;
    else if (a == "--rows") o.rows = num();
    else if (a == "--dim") o.dim = num();
    else if (a == "--queries") o.queries = num();
    else if (a == "--clusters") o.clusters = num();
    else if (a == "--latent") o.latent = num();
    else if (a == "--partitions") o.partitions = num();
    else if (a == "--hnsw-partitions") o.hnsw_partitions = num();
    else if (a == "--sub-vectors") o.sub_vectors = num();
    else if (a == "--m") o.m = num();
    else if (a == "--ef-construction") o.ef_construction = num();
    else if (a == "--refine") o.refine = num();
    else if (a == "--threads") o.threads = num();
    else if (a == "--seed") o.seed = unsigned(num());
    else if (a == "--spread") o.spread = bench::number_arg(a, v, usage);
    else usage("unknown option " + a);
  }
  if (o.csv.empty()) usage("--csv FILE is required");
  if (o.data != "clustered" && o.data != "low-rank") usage("--data must be clustered or low-rank, got '" + o.data + "'");
  if (o.rows == 0 || o.dim == 0 || o.queries == 0 || o.clusters == 0 || o.latent == 0 || o.partitions == 0 ||
      o.hnsw_partitions == 0 || o.m < 2 || o.ef_construction == 0 || o.threads == 0)
    usage("sizes must be positive (m at least 2)");
  if (o.sub_vectors == 0) o.sub_vectors = std::max<std::size_t>(1, o.dim / 8);
  if (o.dim % o.sub_vectors != 0) usage("--sub-vectors must divide --dim");
  if (o.sub_vectors % 2) usage("--sub-vectors must be even (4-bit PQ packs two codes a byte)");
  if (std::max(o.partitions, o.hnsw_partitions) > o.rows) usage("more partitions than rows");
  if (o.label.empty()) o.label = o.data + "-" + std::to_string(o.dim);
  return o;
}

// An index type of the sweep: lancet's build, LanceDB's createIndex type ("" when its
// Node API builds none), whether refine is swept.
struct index_kind {
  std::string name;
  index::ivf_index_type type;
  std::uint32_t bits;
  std::string lancedb_type;
  bool refine;
};

const index_kind kinds[] = {
    {"flat", index::ivf_index_type::ivf_flat, 0, "ivf_flat", false},
    {"pq8", index::ivf_index_type::ivf_pq, 8, "ivf_pq", true},
    {"pq4", index::ivf_index_type::ivf_pq, 4, "ivf_pq", true},
    {"sq", index::ivf_index_type::ivf_sq, 8, "", true},
    {"rq", index::ivf_index_type::ivf_rq, 1, "ivf_rq", true},
    {"hnsw_sq", index::ivf_index_type::ivf_hnsw_sq, 8, "hnsw_sq", false},
    {"hnsw_pq", index::ivf_index_type::ivf_hnsw_pq, 8, "hnsw_pq", false},
};

const index_kind& kind_named(const std::string& name) {
  for (const auto& k : kinds)
    if (k.name == name) return k;
  usage("unknown index type '" + name + "' in --types (flat, pq8, pq4, sq, rq, hnsw_sq, hnsw_pq)");
}

// One search setting; 0 = not set.
struct point {
  std::size_t nprobes = 0, ef = 0, refine = 0;
};

std::size_t partitions_of(const options& o, const index_kind& k) {
  return index::is_hnsw(k.type) ? o.hnsw_partitions : o.partitions;
}

// The settings swept for lancet and LanceDB, the most expensive last (it warms the caches).
std::vector<point> ivf_points(const options& o, const index_kind& k) {
  const std::size_t parts = partitions_of(o, k);
  std::vector<std::size_t> nprobes;  // steps of about 1.6x, then every partition
  for (std::size_t a = 1, b = 2; a < parts; std::tie(a, b) = std::pair{b, a + b}) nprobes.push_back(a);
  nprobes.push_back(parts);
  std::vector<point> out;
  if (index::is_hnsw(k.type)) {
    for (std::size_t n : {1, 2, 4, 8, 16})
      for (std::size_t ef : {10, 20, 40, 80, 160, 320})
        if (n <= parts) out.push_back({n, ef, 0});
    return out;
  }
  for (std::size_t n : nprobes) out.push_back({n, 0, 0});
  if (k.refine && o.refine > 0)
    for (std::size_t n : nprobes) out.push_back({n, 0, o.refine});
  return out;
}

struct measured {
  double recall = 0, qps = 0, p50_us = 0, p99_us = 0;
};

measured measure(const std::vector<double>& each_s, double total_s, const ids_t& got, const ids_t& truth) {
  std::vector<double> t = each_s;
  std::sort(t.begin(), t.end());
  return {bench::recall(got, truth), double(t.size()) / total_s, 1e6 * t[t.size() / 2],
          1e6 * t[std::min(t.size() - 1, t.size() * 99 / 100)]};
}

// One system's build of one index type.
struct built {
  double seconds = -1;
  std::uint64_t bytes = 0;
};

class csv_out {
 public:
  explicit csv_out(const std::string& path) {
    const bool fresh = !fs::exists(path) || fs::file_size(path) == 0;
    f_.open(path, std::ios::app);
    if (!f_) throw io_error("cannot open " + path);
    if (fresh) f_ << "dataset,index,system,nprobes,ef,refine,recall,qps,p50_us,p99_us,build_s,index_bytes\n";
  }
  void row(const std::string& dataset, const std::string& index, const std::string& system, const point& p,
           const measured& m, const built& b) {
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,%s,%zu,%zu,%zu,%.4f,%.1f,%.1f,%.1f,%.3f,%llu\n", dataset.c_str(),
                  index.c_str(), system.c_str(), p.nprobes, p.ef, p.refine, m.recall, m.qps, m.p50_us, m.p99_us,
                  b.seconds, static_cast<unsigned long long>(b.bytes));
    f_ << line;
    f_.flush();
    std::printf("  %-8s %-8s nprobes %4zu ef %4zu refine %2zu: recall %.4f  %8.0f QPS  p50 / p99 %7.0f / %7.0f us\n",
                system.c_str(), index.c_str(), p.nprobes, p.ef, p.refine, m.recall, m.qps, m.p50_us, m.p99_us);
    std::fflush(stdout);
  }

 private:
  std::ofstream f_;
};

std::uint64_t bytes_under(const fs::path& dir) {
  std::uint64_t n = 0;
  if (fs::exists(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) n += e.file_size();
  return n;
}

struct bench_data {
  std::vector<float> rows, queries;
  ids_t truth;
  fs::path query_file, base;  // raw f32 queries; the dataset LanceDB wrote
};

// A sweep over `points`: `search(q, p)` answers query q at p; every query runs once at
// the last point first.
template <class Search>
void sweep(const options& o, const bench_data& d, const std::vector<point>& points, Search&& search,
           const std::function<void(const point&, const measured&)>& record) {
  for (std::size_t q = 0; q < o.queries; ++q) (void)search(q, points.back());
  for (const auto& p : points) {
    ids_t got(o.queries);
    std::vector<double> each(o.queries);
    const auto t0 = clock_type::now();
    for (std::size_t q = 0; q < o.queries; ++q) {
      const auto tq = clock_type::now();
      got[q] = search(q, p);
      each[q] = since(tq);
    }
    record(p, measure(each, since(t0), got, d.truth));
  }
}

index::build_options lancet_options(const options& o, const index_kind& k, boost::asio::thread_pool& pool) {
  index::build_options bo;
  bo.column = "vector";
  bo.type = k.type;
  bo.num_partitions = partitions_of(o, k);
  if (k.type == index::ivf_index_type::ivf_pq || k.type == index::ivf_index_type::ivf_hnsw_pq) {
    bo.num_sub_vectors = o.sub_vectors;
    bo.num_bits = k.bits;
  }
  bo.m = std::uint32_t(o.m);
  bo.ef_construction = std::uint32_t(o.ef_construction);
  bo.pool = &pool;
  return bo;
}

void run_lancet(const options& o, const bench_data& d, const index_kind& k, const fs::path& work, csv_out& csv) {
  const auto root = work / ("lancet-" + k.name);
  fs::copy(d.base, root, fs::copy_options::recursive);
  built b;
  {
    boost::asio::thread_pool pool(o.threads);
    const auto t0 = clock_type::now();
    index::build_ivf_index(root.string(), lancet_options(o, k, pool));
    b.seconds = since(t0);
    pool.join();
  }
  b.bytes = bytes_under(root / "_indices");
  std::printf("lancet %s build %.2f s, %.1f MB\n", k.name.c_str(), b.seconds, double(b.bytes) / 1e6);
  std::fflush(stdout);
  const auto t = query::table::open(root.string());
  auto search = [&](std::size_t q, const point& p) {
    auto r = t.search("vector", std::span<const float>(d.queries.data() + q * o.dim, o.dim)).select({"id"}).limit(10);
    if (p.nprobes) r.nprobes(p.nprobes);
    if (p.ef) r.ef(p.ef);
    if (p.refine) r.refine_factor(p.refine);
    const auto batch = r.to_batch();
    const auto& col = *batch.columns.at(0);
    std::vector<std::uint64_t> ids;
    for (std::int64_t i = 0; i < batch.num_rows(); ++i) ids.push_back(std::uint64_t(col.value<std::int64_t>(i)));
    return ids;
  };
  sweep(o, d, ivf_points(o, k), search,
        [&](const point& p, const measured& m) { csv.row(o.label, k.name, "lancet", p, m, b); });
  fs::remove_all(root);
}

void run_lancedb(const options& o, const bench_data& d, const index_kind& k, const fs::path& work, csv_out& csv) {
  if (k.lancedb_type.empty()) {
    std::printf("(LanceDB 0.39's Node API builds no IVF_SQ: no LanceDB line for %s)\n", k.name.c_str());
    return;
  }
  const auto root = work / ("lancedb-" + k.name);
  fs::copy(d.base, root, fs::copy_options::recursive);
  std::vector<std::string> args = {"index", root.string(), "--type", k.lancedb_type, "--partitions",
                                   std::to_string(partitions_of(o, k))};
  if (k.lancedb_type == "ivf_pq" || k.lancedb_type == "hnsw_pq")
    args.insert(args.end(), {"--sub-vectors", std::to_string(o.sub_vectors)});
  if (k.lancedb_type == "ivf_pq") args.insert(args.end(), {"--bits", std::to_string(k.bits)});
  if (index::is_hnsw(k.type))
    args.insert(args.end(), {"--m", std::to_string(o.m), "--ef-construction", std::to_string(o.ef_construction)});
  built b;
  b.seconds = njson::parse(testing::node("ivf_acceptance.mjs", args))["seconds"].get<double>();
  b.bytes = bytes_under(root / "_indices");
  std::printf("LanceDB %s createIndex %.2f s, %.1f MB\n", k.name.c_str(), b.seconds, double(b.bytes) / 1e6);
  std::fflush(stdout);
  const auto points = ivf_points(o, k);
  njson pj = njson::array();
  for (const auto& p : points) {
    njson x = njson::object();
    if (p.nprobes) x["nprobes"] = p.nprobes;
    if (p.ef) x["ef"] = p.ef;
    if (p.refine) x["refine"] = p.refine;
    pj.push_back(x);
  }
  std::istringstream lines(testing::node("bench_recall_speed.mjs", {root.string(), "--queries", d.query_file.string(),
                                                                    "--dim", std::to_string(o.dim), "--points", pj.dump()}));
  for (std::string line; std::getline(lines, line);) {
    const auto j = njson::parse(line);
    ids_t got;
    for (const auto& q : j["ids"]) got.push_back(q.get<std::vector<std::uint64_t>>());
    const measured m{bench::recall(got, d.truth), j["qps"].get<double>(), j["p50_us"].get<double>(),
                     j["p99_us"].get<double>()};
    csv.row(o.label, k.name, "LanceDB", points.at(j["point"].get<std::size_t>()), m, b);
  }
  fs::remove_all(root);
}

#ifdef LANCET_BENCH_FAISS
std::unique_ptr<faiss::Index> make_faiss(const options& o, const index_kind& k) {
  const auto d = faiss::Index::idx_t(o.dim);
  const auto parts = o.partitions, m = o.sub_vectors;
  switch (k.type) {
    case index::ivf_index_type::ivf_hnsw_sq:
      return std::make_unique<faiss::IndexHNSWSQ>(int(d), faiss::ScalarQuantizer::QT_8bit, int(o.m));
    case index::ivf_index_type::ivf_hnsw_pq: return std::make_unique<faiss::IndexHNSWPQ>(int(d), int(m), int(o.m));
    default: break;
  }
  auto coarse = new faiss::IndexFlatL2(d);
  std::unique_ptr<faiss::IndexIVF> ivf;
  if (k.type == index::ivf_index_type::ivf_pq && k.bits == 4)
    ivf = std::make_unique<faiss::IndexIVFPQFastScan>(coarse, d, parts, m, 4);
  else if (k.type == index::ivf_index_type::ivf_pq)
    ivf = std::make_unique<faiss::IndexIVFPQ>(coarse, d, parts, m, 8);
  else if (k.type == index::ivf_index_type::ivf_sq)
    ivf = std::make_unique<faiss::IndexIVFScalarQuantizer>(coarse, d, parts, faiss::ScalarQuantizer::QT_8bit,
                                                           faiss::METRIC_L2, false);
  else
    ivf = std::make_unique<faiss::IndexIVFFlat>(coarse, d, parts);
  ivf->own_fields = true;
  return ivf;
}

void run_faiss(const options& o, const bench_data& d, const index_kind& k, const fs::path& work, csv_out& csv) {
  if (k.type == index::ivf_index_type::ivf_rq) {
    std::printf("(FAISS 1.7.3 has no RaBitQ index: no FAISS line for rq)\n");
    return;
  }
  auto ix = make_faiss(o, k);
  auto* hnsw = dynamic_cast<faiss::IndexHNSW*>(ix.get());
  auto* ivf = dynamic_cast<faiss::IndexIVF*>(ix.get());
  if (hnsw) hnsw->hnsw.efConstruction = int(o.ef_construction);
  built b;
  omp_set_num_threads(int(o.threads));
  const auto t0 = clock_type::now();
  ix->train(faiss::Index::idx_t(o.rows), d.rows.data());
  ix->add(faiss::Index::idx_t(o.rows), d.rows.data());
  b.seconds = since(t0);
  const auto file = work / ("faiss-" + k.name + ".index");
  faiss::write_index(ix.get(), file.c_str());
  b.bytes = fs::file_size(file);
  fs::remove(file);
  std::printf("FAISS %s train + add %.2f s, %.1f MB\n", k.name.c_str(), b.seconds, double(b.bytes) / 1e6);
  std::fflush(stdout);
  omp_set_num_threads(1);
  std::unique_ptr<faiss::IndexRefineFlat> refined;
  if (k.refine && o.refine > 0) {
    refined = std::make_unique<faiss::IndexRefineFlat>(ix.get(), d.rows.data());
    refined->k_factor = float(o.refine);
  }
  std::vector<point> points;
  if (hnsw) {
    for (std::size_t ef : {10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384}) points.push_back({0, ef, 0});
  } else {
    points = ivf_points(o, k);
  }
  auto search = [&](std::size_t q, const point& p) {
    if (hnsw) hnsw->hnsw.efSearch = int(p.ef);  // FAISS 1.7.3 ignores SearchParametersHNSW
    if (ivf) ivf->nprobe = p.nprobes;
    faiss::Index& on = p.refine ? static_cast<faiss::Index&>(*refined) : *ix;
    faiss::Index::idx_t labels[10];
    float dist[10];
    on.search(1, d.queries.data() + q * o.dim, 10, dist, labels);
    std::vector<std::uint64_t> ids;
    for (auto l : labels)
      if (l >= 0) ids.push_back(std::uint64_t(l));
    return ids;
  };
  sweep(o, d, points, search, [&](const point& p, const measured& m) { csv.row(o.label, k.name, "FAISS", p, m, b); });
}
#endif

bench_data make_data(const options& o, const fs::path& work) {
  bench_data d;
  if (o.data == "clustered") {
    bench::generate(bench::clustered_data{.rows = o.rows, .dim = o.dim, .queries = o.queries, .clusters = o.clusters,
                                          .spread = o.spread, .seed = o.seed},
                    d.rows, d.queries);
  } else {
    bench::generate(bench::low_rank_data{.rows = o.rows, .dim = o.dim, .queries = o.queries, .latent = o.latent,
                                         .clusters = o.clusters, .spread = o.spread, .seed = o.seed},
                    d.rows, d.queries);
  }
  {
    boost::asio::thread_pool pool(o.threads);
    d.truth = bench::exact_l2(o.dim, d.rows, d.queries, &pool);
    pool.join();
  }
  const auto vf = work / "vectors.f32";
  d.query_file = work / "queries.f32";
  bench::write_f32(vf, d.rows);
  bench::write_f32(d.query_file, d.queries);
  d.base = work / "base";
  testing::node("ivf_acceptance.mjs", {"create", d.base.string(), "--vectors", vf.string(), "--dim", std::to_string(o.dim)});
  fs::remove(vf);
  return d;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  // FAISS: OpenMP threads that sleep when idle, one BLAS thread (bench_ivf's reasons).
  if (!std::getenv("OMP_WAIT_POLICY") || !std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
    ::execv("/proc/self/exe", argv);
  }
  std::vector<const index_kind*> chosen;
  std::stringstream types(o.types);
  for (std::string t; std::getline(types, t, ',');) chosen.push_back(&kind_named(t));
  std::printf("bench_recall_speed %s: %zu x %zu f32 (%s data, %zu clusters), %zu queries, IVF %zu partitions, "
              "IVF_HNSW %zu, PQ %zu sub-vectors, HNSW m %zu ef_construction %zu, refine %zu\n",
              o.label.c_str(), o.rows, o.dim, o.data.c_str(), o.clusters, o.queries, o.partitions, o.hnsw_partitions,
              o.sub_vectors, o.m, o.ef_construction, o.refine);
  std::fflush(stdout);
  testing::temp_dir tmp("bench-recall-speed");
  const auto d = make_data(o, tmp.path());
  csv_out csv(o.csv);
  for (const auto* k : chosen) {
    run_lancet(o, d, *k, tmp.path(), csv);
    if (o.lancedb) run_lancedb(o, d, *k, tmp.path(), csv);
#ifdef LANCET_BENCH_FAISS
    if (o.faiss) run_faiss(o, d, *k, tmp.path(), csv);
#else
    if (o.faiss) std::printf("(FAISS not found at build time: no FAISS line)\n");
#endif
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_recall_speed: %s\n", e.what());
  return 1;
}
