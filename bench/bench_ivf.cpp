// IVF build and search: lancet against LanceDB 0.39 (createIndex / vectorSearch,
// driven through Node in the same run, tests/interop/ivf_acceptance.mjs) and FAISS
// 1.7.3, on the same clustered vectors. --type picks the index:
// pq (FAISS IndexIVFPQ; with --bits 4 IndexIVFPQFastScan), sq (IndexIVFScalarQuantizer
// QT_8bit, not by residual, as Lance's SQ; LanceDB's Node API builds no IVF_SQ), rq
// (RaBitQ: no FAISS 1.7.3 counterpart) or flat (IndexIVFFlat).
//
//   bench_ivf [--type pq|sq|rq|flat] [--bits 8|4] [--rows 200000] [--dim 128]
//             [--partitions 256] [--sub-vectors 16] [--queries 200] [--nprobes 20]
//             [--refine 10] [--threads 2] [--clusters 1000] [--spread 0.25] [--seed 1]
//             [--repeat 1] [--seeds 0] [--no-lancedb] [--no-faiss] [--lance-codebook]
//
// Besides one query at a time on one thread, lancet is timed batched (search_many on a
// pool of 1 and of --threads) and with one query's partitions spread over the pool
// (the automatic split rule, and always split), with CPU time per query beside wall
// (the machine may be shared), best of --repeat rounds.
//
// Build: ours = build_ivf_index on a dataset LanceDB wrote (read, k-means, PQ training,
// encoding, writing the index files, commit), on a pool of --threads threads; LanceDB =
// its createIndex on an identical copy (it uses every core); FAISS = train + add with
// --threads OpenMP threads. Search: one query at a time, single-threaded (LanceDB: one
// vectorSearch per query, its own threads), recall@10 against exact l2 neighbours,
// without and with refine (exact re-ranking of k * refine candidates: ours and LanceDB's
// read the vectors from the dataset, FAISS's IndexRefineFlat keeps them in memory).
// When another method's recall at the same nprobes is higher than lancet's, lancet is
// timed again at growing nprobes (steps of a tenth, up to 4x) until it reaches it (QPS
// at matched recall).
// --seeds K: recall only, over K trainings each of lancet (build_options::seed 1..K)
// and FAISS (coarse and PQ k-means seeds 1..K), mean and standard error: whether one
// run's recall difference is the draws' or the methods'.
// --lance-codebook: lancet's PQ codebook is where its k-means runs end, as Lance's
// (build_options::pq_choose_iterate = false), not the iterate that ranks best.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/simd/distance.hpp>
#include <lancet/simd/topk.hpp>

#ifdef LANCET_BENCH_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexIVFPQFastScan.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/IndexRefine.h>
#include <omp.h>
#endif

#include "../tests/support/interop.hpp"
#include "vector_bench.hpp"

using namespace lancet;
namespace fs = std::filesystem;
using njson = nlohmann::json;

namespace {

using bench::clock_type;
using bench::cpu_now;
using bench::ids_t;
using bench::recall;
using bench::since;
using bench::write_f32;

struct options {
  std::size_t rows = 200000, dim = 128, partitions = 256, sub_vectors = 16, queries = 200, nprobes = 20, refine = 10,
              threads = 2, clusters = 1000, repeat = 1, seeds = 0;
  float spread = 0.25f;
  unsigned seed = 1;
  bool lancedb = true, faiss = true, lance_codebook = false;
  std::string type = "pq";  // pq, sq, rq, flat
  std::uint32_t bits = 8;   // PQ: 8 or 4
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_ivf: %s\nusage: bench_ivf [--type pq|sq|rq|flat] [--bits 8|4] [--rows N] [--dim D] [--partitions P]\n"
               "                 [--sub-vectors M] [--queries Q]\n"
               "                 [--nprobes N] [--refine R] [--threads T] [--clusters C] [--spread S] [--seed S]\n"
               "                 [--repeat R] [--seeds K]\n"
               "                 [--no-lancedb] [--no-faiss] [--lance-codebook]\n",
               why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("IVF_PQ build and search, lancet vs LanceDB vs FAISS");
    if (a == "--no-lancedb") {
      o.lancedb = false;
      continue;
    }
    if (a == "--no-faiss") {
      o.faiss = false;
      continue;
    }
    if (a == "--lance-codebook") {
      o.lance_codebook = true;
      continue;
    }
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    auto num = [&] { return bench::count_arg(a, v, usage); };
    if (a == "--type") o.type = v;
    else if (a == "--bits") o.bits = std::uint32_t(num());
    else if (a == "--rows") o.rows = num();
    else if (a == "--dim") o.dim = num();
    else if (a == "--partitions") o.partitions = num();
    else if (a == "--sub-vectors") o.sub_vectors = num();
    else if (a == "--queries") o.queries = num();
    else if (a == "--nprobes") o.nprobes = num();
    else if (a == "--refine") o.refine = num();
    else if (a == "--threads") o.threads = num();
    else if (a == "--clusters") o.clusters = num();
    else if (a == "--seed") o.seed = unsigned(num());
    else if (a == "--repeat") o.repeat = num();
    else if (a == "--seeds") o.seeds = num();
    else if (a == "--spread") o.spread = bench::number_arg(a, v, usage);
    else usage("unknown option " + a);
  }
  if (o.rows == 0 || o.dim == 0 || o.partitions == 0 || o.sub_vectors == 0 || o.queries == 0 || o.nprobes == 0 ||
      o.threads == 0 || o.clusters == 0 || o.repeat == 0)
    usage("sizes must be positive");
  if (o.dim % o.sub_vectors != 0) usage("--sub-vectors must divide --dim");
  if (o.partitions > o.rows) usage("more partitions than rows");
  if (o.type != "pq" && o.type != "sq" && o.type != "rq" && o.type != "flat")
    usage("--type must be pq, sq, rq or flat, got '" + o.type + "'");
  if (o.type == "pq" && o.bits != 8 && o.bits != 4) usage("--bits must be 8 or 4 for pq");
  if (o.type == "pq" && o.bits == 4 && o.sub_vectors % 2) usage("4-bit PQ needs an even --sub-vectors");
  return o;
}

#ifdef LANCET_BENCH_FAISS
// The FAISS index of --type, owning its coarse quantizer, its k-means (coarse and PQ)
// seeded with `seed` (FAISS's default is 1234).
std::unique_ptr<faiss::IndexIVF> make_faiss(const options& o, int seed) {
  const auto d = faiss::Index::idx_t(o.dim);
  auto coarse = std::make_unique<faiss::IndexFlatL2>(d);
  std::unique_ptr<faiss::IndexIVF> made;
  if (o.type == "pq" && o.bits == 4) {
    auto p = std::make_unique<faiss::IndexIVFPQFastScan>(coarse.get(), d, o.partitions, o.sub_vectors, 4);
    p->pq.cp.seed = seed;
    made = std::move(p);
  } else if (o.type == "pq") {
    auto p = std::make_unique<faiss::IndexIVFPQ>(coarse.get(), d, o.partitions, o.sub_vectors, 8);
    p->pq.cp.seed = seed;
    made = std::move(p);
  } else if (o.type == "sq") {
    made = std::make_unique<faiss::IndexIVFScalarQuantizer>(coarse.get(), d, o.partitions,
                                                            faiss::ScalarQuantizer::QT_8bit, faiss::METRIC_L2, false);
  } else {
    made = std::make_unique<faiss::IndexIVFFlat>(coarse.get(), d, o.partitions);
  }
  made->cp.seed = seed;
  made->own_fields = true;
  coarse.release();
  return made;
}
#endif

// lancet's build of --type on `pool` (its default seed unless set).
index::build_options lancet_build_options(const options& o, boost::asio::thread_pool& pool) {
  index::build_options bo;
  bo.column = "vector";
  bo.type = o.type == "pq"   ? index::ivf_index_type::ivf_pq
            : o.type == "sq" ? index::ivf_index_type::ivf_sq
            : o.type == "rq" ? index::ivf_index_type::ivf_rq
                             : index::ivf_index_type::ivf_flat;
  bo.num_partitions = o.partitions;
  if (o.type == "pq") {
    bo.num_sub_vectors = o.sub_vectors;
    bo.num_bits = o.bits;
    bo.pq_choose_iterate = !o.lance_codebook;
  }
  bo.pool = &pool;
  return bo;
}

struct search_run {
  double recall = 0, qps = 0;
  double p50_us = -1, p99_us = -1;  // per-query latency (one query at a time)
  double cpu_us = -1;               // process CPU time per query
};

// p50 and p99 of per-query times (seconds) into r, in microseconds.
void latencies(std::vector<double> t, search_run& r) {
  if (t.empty()) return;
  std::sort(t.begin(), t.end());
  r.p50_us = 1e6 * t[t.size() / 2];
  r.p99_us = 1e6 * t[std::min(t.size() - 1, t.size() * 99 / 100)];
}

struct method {
  std::string name;
  double build_s = -1, build_cpu_s = -1;
  search_run plain, refined;
  search_run refined_files;           // refine with the vectors read by dataset::take (lancet only)
  search_run refined_mapped;          // the same through a mapped source (io::file_source_options::use_mmap)
};

std::string faiss_name(const options& o) {
  if (o.type == "pq") return o.bits == 4 ? "FAISS 1.7.3 IVFPQFastScan" : "FAISS 1.7.3 IVFPQ";
  if (o.type == "sq") return "FAISS 1.7.3 IVFSQ8";
  return "FAISS 1.7.3 IVFFlat";
}

// Our search over the dataset's index, one query at a time on this thread. Refine
// re-ranks with the original vectors: held in memory (as FAISS's IndexRefineFlat; row
// id = position: one fragment, nothing deleted), or, with `from_files`, read from the
// dataset's files by dataset::take for every query (what `lancet search --refine` does).
search_run our_search(const options& o, const fs::path& root, const std::vector<float>& rows,
                      const std::vector<float>& queries, const ids_t& truth, std::size_t refine,
                      boost::asio::thread_pool* pool = nullptr, bool from_files = false, bool mapped = false) {
  const auto s = dataset::dataset::open(root.string());
  auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = 10;
  sp.nprobes = o.nprobes;
  sp.refine_factor = refine;
  sp.pool = pool;
  io::file_source_options fo;
  fo.use_mmap = mapped;
  const auto files = dataset::dataset::open(root.string(), std::nullopt, fo);
  if (refine > 0 && !from_files)
    sp.fetch = [&](std::span<const std::uint64_t> ids, double* out) {
      for (std::size_t r = 0; r < ids.size(); ++r)
        for (std::size_t j = 0; j < o.dim; ++j) out[r * o.dim + j] = rows[std::size_t(ids[r]) * o.dim + j];
    };
  if (refine > 0 && from_files)
    sp.fetch = [&](std::span<const std::uint64_t> ids, double* out) {
      const auto b = files.take(ids, {"vector"});
      const auto& col = *b.columns.at(0);
      const float* v = col.children.at(0)->values<float>() + std::size_t(col.offset) * o.dim;
      if (std::size_t(col.length) != ids.size()) throw corrupt_error("take returned the wrong number of rows");
      for (std::size_t i = 0; i < ids.size() * o.dim; ++i) out[i] = v[i];
    };
  // Warm the partition cache (LanceDB's index cache is warm after its first query too).
  ix.searcher->search(queries.data(), o.dim, sp);
  ids_t got(o.queries);
  std::vector<double> each(o.queries);
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  for (std::size_t q = 0; q < o.queries; ++q) {
    const auto tq = clock_type::now();
    for (const auto& h : ix.searcher->search(queries.data() + q * o.dim, o.dim, sp)) got[q].push_back(h.row_id);
    each[q] = since(tq);
  }
  const double secs = since(t0);
  search_run r{recall(got, truth), double(o.queries) / secs};
  r.cpu_us = 1e6 * (cpu_now() - c0) / double(o.queries);
  latencies(each, r);
  return r;
}

// Threading on one opened index (partition cache warmed first, so every run reads the
// same memory): the plain loop (one query at a time on this thread), search_many on a
// pool of 1 and of `threads` (queries in batches of `batch`; p50 / p99 are of a batch's
// wall time per query), and one query at a time with its partitions split over the
// pool (automatic rule, and forced). Best of `repeat` rounds by CPU time; the batched
// results are checked against the plain loop's (ids and distances).
void threading_runs(const options& o, const fs::path& root, const std::vector<float>& queries, const ids_t& truth) {
  const auto s = dataset::dataset::open(root.string());
  auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = 10;
  sp.nprobes = o.nprobes;
  const std::size_t nq = o.queries, d = o.dim;
  ix.searcher->search_many(queries.data(), nq, d, sp);  // warm: every probed partition loaded
  const auto reference = ix.searcher->search_many(queries.data(), nq, d, sp);
  struct run {
    search_run r;
    std::size_t mismatches = 0;
  };
  auto finish = [&](const std::vector<std::vector<index::neighbor>>& hits, double secs, double cpu,
                    std::vector<double> each, run& best) {
    ids_t got(nq);
    std::size_t bad = 0;
    for (std::size_t q = 0; q < nq; ++q) {
      for (const auto& h : hits[q]) got[q].push_back(h.row_id);
      bad += hits[q] != reference[q];
    }
    search_run r{recall(got, truth), double(nq) / secs};
    r.cpu_us = 1e6 * cpu / double(nq);
    latencies(std::move(each), r);
    if (best.r.cpu_us < 0 || r.cpu_us < best.r.cpu_us) best = {r, bad};
    else best.mismatches = std::max(best.mismatches, bad);
  };
  // One query at a time on this thread (pool: one query's partitions over it).
  auto loop = [&](boost::asio::thread_pool* pool, std::size_t split_min_bytes, run& best) {
    index::search_params p = sp;
    p.pool = pool;
    p.split_min_bytes = split_min_bytes;
    std::vector<std::vector<index::neighbor>> hits(nq);
    std::vector<double> each(nq);
    const double c0 = cpu_now();
    const auto t0 = clock_type::now();
    for (std::size_t q = 0; q < nq; ++q) {
      const auto tq = clock_type::now();
      hits[q] = ix.searcher->search(queries.data() + q * d, d, p);
      each[q] = since(tq);
    }
    const double secs = since(t0), cpu = cpu_now() - c0;
    finish(hits, secs, cpu, std::move(each), best);
  };
  const std::size_t batch = 1000;
  auto batched = [&](boost::asio::thread_pool& pool, run& best) {
    index::search_params p = sp;
    p.pool = &pool;
    std::vector<std::vector<index::neighbor>> hits;
    hits.reserve(nq);
    std::vector<double> each;
    const double c0 = cpu_now();
    const auto t0 = clock_type::now();
    for (std::size_t b = 0; b < nq; b += batch) {
      const std::size_t n = std::min(batch, nq - b);
      const auto tb = clock_type::now();
      auto part = ix.searcher->search_many(queries.data() + b * d, n, d, p);
      each.push_back(since(tb) / double(n));
      for (auto& h : part) hits.push_back(std::move(h));
    }
    const double secs = since(t0), cpu = cpu_now() - c0;
    finish(hits, secs, cpu, std::move(each), best);
  };
  boost::asio::thread_pool pool1(1), pool2(o.threads);
  run plain, many1, many2, split_auto, split_forced;
  for (std::size_t rep = 0; rep < o.repeat; ++rep) {
    loop(nullptr, 0, plain);
    batched(pool1, many1);
    batched(pool2, many2);
    loop(&pool2, index::search_params::default_split_min_bytes, split_auto);
    loop(&pool2, 0, split_forced);
  }
  pool1.join();
  pool2.join();
  auto line = [&](const char* what, const run& x) {
    std::printf("  %-44s %8.0f QPS  CPU %6.1f us / query  p50 / p99 %5.0f / %5.0f us  recall %.4f%s\n", what,
                x.r.qps, x.r.cpu_us, x.r.p50_us, x.r.p99_us, x.r.recall,
                x.mismatches ? ("  MISMATCHES " + std::to_string(x.mismatches)).c_str() : "");
  };
  std::printf("  lancet threading (%zu queries, best of %zu rounds by CPU; batched p50 / p99: per query of a "
              "%zu-query batch):\n",
              nq, o.repeat, batch);
  line("plain loop, 1 thread", plain);
  line("search_many, pool of 1", many1);
  line(("search_many, pool of " + std::to_string(o.threads)).c_str(), many2);
  line(("one query over a pool of " + std::to_string(o.threads) + ", auto split").c_str(), split_auto);
  line(("one query over a pool of " + std::to_string(o.threads) + ", always split").c_str(), split_forced);
  std::printf("  search_many CPU / plain loop CPU: pool of 1 %.3fx, pool of %zu %.3fx; QPS pool of %zu / pool of 1: "
              "%.2fx (target >= 1.8x on free cores); forced split CPU / plain %.3fx\n",
              many1.r.cpu_us / plain.r.cpu_us, o.threads, many2.r.cpu_us / plain.r.cpu_us, o.threads,
              many2.r.qps / many1.r.qps, split_forced.r.cpu_us / plain.r.cpu_us);
}

// Milliseconds of one dataset::take of k * refine vectors (what refine from disk costs).
double take_ms(const fs::path& root, std::size_t count, std::size_t rows) {
  const auto ds = dataset::dataset::open(root.string());
  std::vector<std::uint64_t> ids;
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < count; ++i) ids.push_back(rng() % rows);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const auto t0 = clock_type::now();
  const auto b = ds.take(ids, {"vector"});
  const double ms = 1e3 * since(t0);
  if (b.columns.empty()) throw corrupt_error("take returned no column");
  return ms;
}

search_run lance_search(const options& o, const fs::path& root, const fs::path& qf, const ids_t& truth,
                        std::size_t refine) {
  std::vector<std::string> args = {"search", root.string(), "--queries", qf.string(), "--dim", std::to_string(o.dim),
                                   "--k", "10", "--nprobes", std::to_string(o.nprobes)};
  if (refine > 0) {
    args.push_back("--refine");
    args.push_back(std::to_string(refine));
  }
  std::istringstream lines(testing::node("ivf_acceptance.mjs", args));
  ids_t got;
  search_run r;
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

}  // namespace

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  // FAISS: OpenMP threads that sleep when idle and one BLAS thread (spinning threads on
  // a shared 2-CPU machine multiply wall time). OpenMP reads its environment when the
  // program loads, so the program runs itself again once with them set (the caller's
  // settings win).
  if (!std::getenv("OMP_WAIT_POLICY") || !std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
    ::execv("/proc/self/exe", argv);  // returns only on failure: go on as we are
  }
  const std::string quant = o.type == "pq" ? "PQ " + std::to_string(o.sub_vectors) + " x " + std::to_string(o.bits)
                            : o.type == "sq" ? std::string("SQ 8-bit")
                            : o.type == "rq" ? std::string("RaBitQ 1-bit")
                                             : std::string("flat");
  std::printf("bench_ivf: %zu x %zu f32 vectors (%zu clusters, spread %.3g), IVF %zu partitions, %s, "
              "%zu queries, nprobes %zu, refine %zu, %zu threads\n",
              o.rows, o.dim, o.clusters, double(o.spread), o.partitions, quant.c_str(), o.queries, o.nprobes, o.refine,
              o.threads);
  std::vector<float> rows, queries;
  const bench::clustered_data data{
      .rows = o.rows, .dim = o.dim, .queries = o.queries, .clusters = o.clusters, .spread = o.spread, .seed = o.seed};
  bench::generate(data, rows, queries);
  testing::temp_dir tmp("bench-ivf");
  const auto vf = tmp.path() / "vectors.f32", qf = tmp.path() / "queries.f32";
  write_f32(vf, rows);
  write_f32(qf, queries);
  boost::asio::thread_pool pool(o.threads);
  const auto truth = bench::exact_l2(data, rows, queries, &pool);

  // The dataset, written by LanceDB (so its createIndex and our builder read the same files).
  const auto base = tmp.path() / "base";
  testing::node("ivf_acceptance.mjs", {"create", base.string(), "--vectors", vf.string(), "--dim", std::to_string(o.dim)});
  std::vector<method> results;

  {
    method m{"lancet", -1, -1, {}, {}, {}};
    const auto root = tmp.path() / "ours";
    fs::copy(base, root, fs::copy_options::recursive);
    const auto bo = lancet_build_options(o, pool);
    const double c0 = cpu_now();
    const auto t0 = clock_type::now();
    index::build_ivf_index(root.string(), bo);
    m.build_s = since(t0);
    m.build_cpu_s = cpu_now() - c0;
    std::printf("  lancet build %.3f s (CPU %.3f s)\n", m.build_s, m.build_cpu_s);
    std::fflush(stdout);
    m.plain = our_search(o, root, rows, queries, truth, 0);
    if (o.refine) {
      m.refined = our_search(o, root, rows, queries, truth, o.refine);
      m.refined_files = our_search(o, root, rows, queries, truth, o.refine, nullptr, true);
      m.refined_mapped = our_search(o, root, rows, queries, truth, o.refine, nullptr, true, true);
      std::printf("  lancet refine %zu from the dataset files (dataset::take per query): %.0f QPS, recall %.4f, "
                  "p50 / p99 %.0f / %.0f us; files mapped (use_mmap): %.0f QPS, p50 / p99 %.0f / %.0f us "
                  "(vectors in memory: %.0f QPS, recall %.4f)\n",
                  o.refine, m.refined_files.qps, m.refined_files.recall, m.refined_files.p50_us,
                  m.refined_files.p99_us, m.refined_mapped.qps, m.refined_mapped.p50_us, m.refined_mapped.p99_us,
                  m.refined.qps, m.refined.recall);
      std::printf("  lancet dataset::take of %zu random vectors: %.1f ms\n", 10 * o.refine, take_ms(root, 10 * o.refine, o.rows));
    }
    threading_runs(o, root, queries, truth);
    results.push_back(m);
  }

  if (o.lancedb && o.type == "sq") std::printf("  (LanceDB 0.39's Node API builds no IVF_SQ: no LanceDB row)\n");
  if (o.lancedb && o.type != "sq") {
    method m{"LanceDB 0.39", -1, -1, {}, {}, {}};
    const auto root = tmp.path() / "lancedb";
    fs::copy(base, root, fs::copy_options::recursive);
    const auto t0 = clock_type::now();
    const auto out = njson::parse(testing::node(
        "ivf_acceptance.mjs", o.type == "pq"
                                  ? std::vector<std::string>{"index", root.string(), "--type", "ivf_pq", "--partitions",
                                                             std::to_string(o.partitions), "--sub-vectors",
                                                             std::to_string(o.sub_vectors), "--bits", std::to_string(o.bits)}
                                  : std::vector<std::string>{"index", root.string(), "--type", "ivf_" + o.type,
                                                             "--partitions", std::to_string(o.partitions)}));
    const double wall = since(t0);
    m.build_s = out["seconds"].get<double>();
    std::printf("  LanceDB createIndex %.3f s (node process %.3f s)\n", m.build_s, wall);
    std::fflush(stdout);
    m.plain = lance_search(o, root, qf, truth, 0);
    if (o.refine) m.refined = lance_search(o, root, qf, truth, o.refine);
    results.push_back(m);
  }

#ifdef LANCET_BENCH_FAISS
  if (o.faiss && o.type == "rq") std::printf("  (FAISS 1.7.3 has no RaBitQ index: no FAISS row)\n");
  if (o.faiss && o.type != "rq") {
    method m{faiss_name(o), -1, -1, {}, {}, {}};
    omp_set_num_threads(int(o.threads));
    const auto made = make_faiss(o, 1234);  // FAISS's default seed
    faiss::IndexIVF& ivfpq = *made;
    const double c0 = cpu_now();
    const auto t0 = clock_type::now();
    ivfpq.train(faiss::Index::idx_t(o.rows), rows.data());
    ivfpq.add(faiss::Index::idx_t(o.rows), rows.data());
    m.build_s = since(t0);
    m.build_cpu_s = cpu_now() - c0;
    std::printf("  FAISS train+add %.3f s (CPU %.3f s)\n", m.build_s, m.build_cpu_s);
    std::fflush(stdout);
    // Searches single-threaded, one query per call, like the others.
    omp_set_num_threads(1);
    auto run = [&](faiss::Index& ix, const faiss::SearchParameters* params) {
      ids_t got(o.queries);
      std::vector<faiss::Index::idx_t> labels(10);
      std::vector<float> dist(10);
      std::vector<double> each(o.queries);
      const double c1 = cpu_now();
      const auto t1 = clock_type::now();
      for (std::size_t q = 0; q < o.queries; ++q) {
        const auto tq = clock_type::now();
        ix.search(1, queries.data() + q * o.dim, 10, dist.data(), labels.data(), params);
        each[q] = since(tq);
        for (auto l : labels)
          if (l >= 0) got[q].push_back(std::uint64_t(l));
      }
      const double secs = since(t1);
      search_run r{recall(got, truth), double(o.queries) / secs};
      r.cpu_us = 1e6 * (cpu_now() - c1) / double(o.queries);
      latencies(each, r);
      return r;
    };
    ivfpq.nprobe = o.nprobes;
    m.plain = run(ivfpq, nullptr);
    if (o.refine) {
      faiss::IndexRefineFlat refined(&ivfpq, rows.data());
      refined.k_factor = float(o.refine);
      m.refined = run(refined, nullptr);
    }
    results.push_back(m);
  }
#else
  if (o.faiss) std::printf("  (FAISS not found at build time: no FAISS row)\n");
#endif

  std::printf("\n| method | build s | build CPU s | recall@10 | QPS | recall@10 refine %zu | QPS refine |\n", o.refine);
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& m : results) {
    std::printf("| %s | %.3f | %s | %.4f | %.0f | %s | %s |\n", m.name.c_str(), m.build_s,
                m.build_cpu_s < 0 ? "-" : std::to_string(m.build_cpu_s).substr(0, 6).c_str(), m.plain.recall,
                m.plain.qps, o.refine ? std::to_string(m.refined.recall).substr(0, 6).c_str() : "-",
                o.refine ? std::to_string(long(m.refined.qps)).c_str() : "-");
  }
  std::printf("\nlatency per query (one at a time, us): p50 / p99\n");
  for (const auto& m : results)
    if (m.plain.p50_us >= 0)
      std::printf("  %s: %.0f / %.0f (CPU %.0f us / query)%s\n", m.name.c_str(), m.plain.p50_us, m.plain.p99_us,
                  m.plain.cpu_us,
                  m.refined.p50_us >= 0 ? (", refine: " + std::to_string(long(m.refined.p50_us)) + " / " +
                                           std::to_string(long(m.refined.p99_us)))
                                              .c_str()
                                        : "");
  const auto& ours = results.front();
  for (std::size_t i = 1; i < results.size(); ++i) {
    const auto& m = results[i];
    std::printf("\n%s / lancet: build time %.2fx, QPS %.2fx (lancet / it %.2fx), QPS with refine %.2fx; recall@10 "
                "difference %+.4f (refine %+.4f)\n",
                m.name.c_str(), m.build_s / ours.build_s, m.plain.qps / ours.plain.qps, ours.plain.qps / m.plain.qps,
                o.refine ? m.refined.qps / ours.refined.qps : 0.0, m.plain.recall - ours.plain.recall,
                o.refine ? m.refined.recall - ours.refined.recall : 0.0);
    if (o.refine && ours.refined_files.qps > 0)
      std::printf("  lancet refine from the dataset files / %s refine (in memory): QPS %.2fx (files mapped: %.2fx), "
                  "recall@10 %+.4f\n",
                  m.name.c_str(), ours.refined_files.qps / m.refined.qps, ours.refined_mapped.qps / m.refined.qps,
                  ours.refined_files.recall - m.refined.recall);
    // QPS at matched recall. At the same nprobes the recalls differ by the trainings'
    // draws (k-means and PQ samples, both random), either way from run to run. When
    // lancet's is the lower one, it searches again, one query at a time as above, at
    // growing nprobes (steps of a tenth, up to 4x) until it reaches the other's recall.
    if (m.plain.recall > ours.plain.recall && o.nprobes >= o.partitions) {
      std::printf("  at matched recall: lancet already probes every partition\n");
    } else if (m.plain.recall > ours.plain.recall) {
      options more = o;
      const std::size_t most = std::min(o.partitions, 4 * o.nprobes);
      search_run r;
      bool reached = false;
      for (more.nprobes = o.nprobes + 1;; more.nprobes = std::min(most, more.nprobes + (more.nprobes + 9) / 10)) {
        r = our_search(more, tmp.path() / "ours", rows, queries, truth, 0);
        reached = r.recall >= m.plain.recall;
        if (reached || more.nprobes == most) break;
      }
      if (reached)
        std::printf("  at matched recall: lancet at nprobes %zu, recall %.4f (>= %.4f), %.0f QPS, p50 / p99 %.0f / "
                    "%.0f us: lancet / %s QPS %.2fx\n",
                    more.nprobes, r.recall, m.plain.recall, r.qps, r.p50_us, r.p99_us, m.name.c_str(),
                    r.qps / m.plain.qps);
      else
        std::printf("  at matched recall: lancet does not reach %s's recall %.4f by nprobes %zu (%.4f there): its "
                    "recall is the codes', not the partitions probed (--seeds K compares the trainings)\n",
                    m.name.c_str(), m.plain.recall, most, r.recall);
    } else {
      std::printf("  lancet's recall at the same nprobes is not below %s's: the QPS ratio above is at matched recall\n",
                  m.name.c_str());
    }
  }

  // Recall over --seeds trainings of each (same data, queries and nprobes; no timing).
  if (o.seeds > 0) {
    auto summary = [](const std::vector<double>& v) {
      double mean = 0, var = 0;
      for (double x : v) mean += x;
      mean /= double(v.size());
      for (double x : v) var += (x - mean) * (x - mean);
      const double se = v.size() > 1 ? std::sqrt(var / double(v.size() - 1) / double(v.size())) : 0.0;
      return std::pair{mean, se};
    };
    auto ids_of = [&](const std::vector<std::vector<index::neighbor>>& hits) {
      ids_t got(hits.size());
      for (std::size_t q = 0; q < hits.size(); ++q)
        for (const auto& h : hits[q]) got[q].push_back(h.row_id);
      return got;
    };
    std::printf("\nrecall@10 over %zu training seeds (nprobes %zu, %zu queries):\n", o.seeds, o.nprobes, o.queries);
    std::vector<double> ours_r;
    for (std::size_t seed = 1; seed <= o.seeds; ++seed) {
      const auto root = tmp.path() / ("seed" + std::to_string(seed));
      fs::copy(base, root, fs::copy_options::recursive);
      auto bo = lancet_build_options(o, pool);
      bo.seed = seed;
      index::build_ivf_index(root.string(), bo);
      const auto ix = index::open_vector_index(dataset::dataset::open(root.string()), "vector");
      index::search_params sp;
      sp.k = 10;
      sp.nprobes = o.nprobes;
      sp.pool = &pool;
      ours_r.push_back(recall(ids_of(ix.searcher->search_many(queries.data(), o.queries, o.dim, sp)), truth));
      fs::remove_all(root);
      std::printf("  lancet seed %zu: %.4f\n", seed, ours_r.back());
      std::fflush(stdout);
    }
    const auto [om, ose] = summary(ours_r);
    std::printf("  lancet: mean %.4f, standard error %.4f\n", om, ose);
#ifdef LANCET_BENCH_FAISS
    if (o.faiss && o.type != "rq") {
      omp_set_num_threads(int(o.threads));
      std::vector<double> theirs;
      for (std::size_t seed = 1; seed <= o.seeds; ++seed) {
        const auto ix = make_faiss(o, int(seed));
        ix->train(faiss::Index::idx_t(o.rows), rows.data());
        ix->add(faiss::Index::idx_t(o.rows), rows.data());
        ix->nprobe = o.nprobes;
        std::vector<faiss::Index::idx_t> labels(o.queries * 10);
        std::vector<float> dist(o.queries * 10);
        ix->search(faiss::Index::idx_t(o.queries), queries.data(), 10, dist.data(), labels.data());
        ids_t got(o.queries);
        for (std::size_t q = 0; q < o.queries; ++q)
          for (std::size_t j = 0; j < 10; ++j)
            if (labels[q * 10 + j] >= 0) got[q].push_back(std::uint64_t(labels[q * 10 + j]));
        theirs.push_back(recall(got, truth));
        std::printf("  %s seed %zu: %.4f\n", faiss_name(o).c_str(), seed, theirs.back());
        std::fflush(stdout);
      }
      const auto [fm, fse] = summary(theirs);
      std::printf("  %s: mean %.4f, standard error %.4f\n", faiss_name(o).c_str(), fm, fse);
      std::printf("  lancet - %s: %+.4f (standard error %.4f)\n", faiss_name(o).c_str(), om - fm,
                  std::sqrt(ose * ose + fse * fse));
    }
#endif
  }
  return 0;
}
