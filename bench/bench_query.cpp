// Queries through query::table against LanceDB 0.39 (Node, tests/interop/bench_query.mjs)
// in the same run, on the same dataset directories and the same IVF_PQ index, both
// written by lancet (the query issue's benchmark):
//
//   clean: --rows rows of `id` int64, `vector` fixed_size_list<float32, --dim> (clustered),
//          `category` utf8 (c0..c4, uniform, from a hash of id), `price` float64 (uniform
//          in [0, 100), from the same hash); one IVF_PQ index built by lancet
//          (build_ivf_index: default partitions, --sub-vectors, l2) and a BTREE on id
//          (build_btree_index).
//   dirty: a copy of clean after the index: `id % 10 = 3` deleted (delete_where, 10%),
//          then rows/20 more rows appended (5%, no index covers them).
//
// Cases (k = --k, nprobes = --nprobes, every query one at a time on one thread,
// after --warmup passes over the queries; LanceDB awaited one at a time, its threads
// its own):
//   a   clean, nearest + select(id, category, price) + limit(k)        target lancet/LanceDB QPS >= 5x
//   b   a with the prefilter `category = 'c2'` (20% of rows)           target >= 3x
//   b0  b on a table that keeps no prefilter rows (query::table_options): every query
//       scans the filter's column, as with a different filter each time (vs LanceDB's b)
//   c   a on dirty                                  target: lancet dirty QPS >= 0.8 x lancet clean (a)
//   c0  c on a table that keeps no unindexed vectors: every query reads them (vs LanceDB's c)
//   cf  b on dirty (for reference)
//   d   clean, scan where `price > 90` select(id), materialised (to_batch / toArrow)  target >= 2x
//   e   a with the prefilter `id < rows / 100` (1%), which a BTREE on id (lancet's, built
//       with the dataset) can answer: LanceDB uses it          target (scalar index issue) >= 3x
//   e0  e on a table that keeps no prefilter rows (vs LanceDB's e)
//   dd  d on dirty (for reference)
// Recall@10 of each search case against the exact answer over the same rows (live,
// passing the filter), and how far lancet's and LanceDB's answers agree (same index:
// they should). Best of --repeat rounds (highest QPS, lowest scan time), lancet and
// LanceDB alternating; CPU time per query beside wall time (the machine may be shared).
//
// Datasets are kept in --dir (default /tmp/bench_query) with state.json: a rerun with
// the same data options reuses them (versions and row counts checked), else rebuilds;
// the exact answers are kept there too (truth.json, per --queries and --k).
//
//   bench_query [--rows 1000000] [--queries 200] [--dim 128] [--sub-vectors 16]
//               [--nprobes 20] [--k 10] [--clusters rows/200] [--spread 0.25] [--seed 1]
//               [--threads 2] [--warmup 1] [--repeat 3] [--scan-reps 3] [--loops 1]
//               [--dir /tmp/bench_query] [--only a,b,b0,c,c0,cf,d,dd,e,e0] [--no-lancedb]
//               [--no-recall] [--rebuild] [--marks] [--mmap]
// Data as bench_ivf's (Gaussian clusters of sigma 0.25 around centres uniform in
// [-1, 1)^dim, 200 rows a cluster): PQ 16 x 8 recall@10 about 0.2 without refine there;
// denser clusters (1,000 rows each) fall to the ~0.08 collapse.
// --loops L: measured passes over the queries per round (longer runs under perf);
// --no-recall: no exact answers (and no vectors in memory when the datasets exist).
// --marks: print to stderr when each lancet case's timed part starts and ends, in
// CLOCK_MONOTONIC seconds (what `perf record -k CLOCK_MONOTONIC` stamps samples with),
// so that a profile can leave out set-up and warm-up.
// --mmap: lancet's tables read their data files through memory mappings
// (io::file_source_options::use_mmap) instead of pread.
// Needs Node and tests/interop/node_modules (npm install there) unless --no-lancedb.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/arrow/builder.hpp>
#include <lancet/core/parallel.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/scalar/scalar_index.hpp>
#include <lancet/query/table.hpp>
#include <lancet/simd/distance.hpp>
#include <lancet/simd/topk.hpp>

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

struct options {
  std::size_t rows = 1000000, queries = 200, dim = 128, sub_vectors = 16, nprobes = 20, k = 10, clusters = 0,
              threads = 2, warmup = 1, repeat = 3, scan_reps = 3, loops = 1;
  float spread = 0.25f;
  unsigned seed = 1;
  std::string dir = "/tmp/bench_query";
  std::set<std::string> only;  // empty: every case
  bool lancedb = true, recall = true, rebuild = false, marks = false, mmap = false;

  std::size_t appended() const { return rows / 20; }
  bool wants(const std::string& c) const { return only.empty() || only.count(c) > 0; }
};

const char* const delete_predicate = "id % 10 = 3";
const char* const category_filter = "category = 'c2'";
const char* const scan_filter = "price > 90";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_query: %s\n"
               "usage: bench_query [--rows N] [--queries Q] [--dim D] [--sub-vectors M] [--nprobes N] [--k K]\n"
               "                   [--clusters C] [--spread S] [--seed S] [--threads T] [--warmup W] [--repeat R]\n"
               "                   [--scan-reps S] [--loops L] [--dir DIR] [--only a,b,b0,c,c0,cf,d,dd,e,e0] [--no-lancedb]\n"
               "                   [--no-recall] [--rebuild] [--marks] [--mmap]\n",
               why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("queries (vector search, prefilter, deletions, scans): lancet vs LanceDB");
    if (a == "--no-lancedb") {
      o.lancedb = false;
      continue;
    }
    if (a == "--no-recall") {
      o.recall = false;
      continue;
    }
    if (a == "--rebuild") {
      o.rebuild = true;
      continue;
    }
    if (a == "--marks") {
      o.marks = true;
      continue;
    }
    if (a == "--mmap") {
      o.mmap = true;
      continue;
    }
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    auto num = [&] { return bench::count_arg(a, v, usage); };
    if (a == "--rows") o.rows = num();
    else if (a == "--queries") o.queries = num();
    else if (a == "--dim") o.dim = num();
    else if (a == "--sub-vectors") o.sub_vectors = num();
    else if (a == "--nprobes") o.nprobes = num();
    else if (a == "--k") o.k = num();
    else if (a == "--clusters") o.clusters = num();
    else if (a == "--threads") o.threads = num();
    else if (a == "--warmup") o.warmup = num();
    else if (a == "--repeat") o.repeat = num();
    else if (a == "--scan-reps") o.scan_reps = num();
    else if (a == "--loops") o.loops = num();
    else if (a == "--seed") o.seed = unsigned(num());
    else if (a == "--spread") o.spread = bench::number_arg(a, v, usage);
    else if (a == "--dir") o.dir = v;
    else if (a == "--only") {
      std::stringstream ss(v);
      for (std::string c; std::getline(ss, c, ',');) {
        if (c != "a" && c != "b" && c != "b0" && c != "c" && c != "c0" && c != "cf" && c != "d" && c != "dd" && c != "e" &&
            c != "e0")
          usage("unknown case '" + c + "'");
        o.only.insert(c);
      }
    } else usage("unknown option " + a);
  }
  if (o.clusters == 0) o.clusters = std::max<std::size_t>(1, o.rows / 200);
  if (o.rows < 1000 || o.queries == 0 || o.dim == 0 || o.sub_vectors == 0 || o.nprobes == 0 || o.k == 0 || o.threads == 0 || o.repeat == 0 || o.scan_reps == 0 || o.loops == 0)
    usage("sizes must be positive (--rows at least 1000)");
  if (o.dim % o.sub_vectors != 0) usage("--sub-vectors must divide --dim");
  return o;
}

// ---- data ----

// The id's category (0..4) and price, from a hash of the id: independent of the id's
// residues (so `id % 10 = 3` deletes a fifth of every category) and of the vector.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
int category_of(std::uint64_t id) { return int(mix(id) % 5); }
double price_of(std::uint64_t id) { return double((mix(id) >> 20) % 100000) / 1000.0; }

// Rows (rows + appended of them: the clean dataset's, then the dirty one's appended
// rows) and held-out queries around the same centres; the queries come from their own
// stream, so they are known without the rows.
struct data {
  std::vector<float> centres;
  std::vector<float> rows;  // empty unless generated
  std::vector<float> queries;
};

void draw(const options& o, const std::vector<float>& centres, std::mt19937& rng, std::size_t n, std::vector<float>& out) {
  std::normal_distribution<float> g(0, o.spread);
  out.resize(n * o.dim);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % o.clusters;
    for (std::size_t j = 0; j < o.dim; ++j) out[i * o.dim + j] = centres[c * o.dim + j] + g(rng);
  }
}

data make_data(const options& o, bool with_rows) {
  data d;
  std::mt19937 rc(o.seed);
  std::uniform_real_distribution<float> u(-1, 1);
  d.centres.resize(o.clusters * o.dim);
  for (auto& c : d.centres) c = u(rc);
  std::mt19937 rq(o.seed * 7919u + 2u);
  draw(o, d.centres, rq, o.queries, d.queries);
  if (with_rows) {
    std::mt19937 rr(o.seed * 7919u + 1u);
    draw(o, d.centres, rr, o.rows + o.appended(), d.rows);
  }
  return d;
}

// Rows [first, first + n) as a batch of the benchmark's schema.
arrow::record_batch make_batch(const options& o, const data& d, std::size_t first, std::size_t n) {
  std::vector<std::int64_t> ids(n);
  std::vector<std::string> cats(n);
  std::vector<double> prices(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = std::uint64_t(first + i);
    ids[i] = std::int64_t(id);
    cats[i] = "c" + std::to_string(category_of(id));
    prices[i] = price_of(id);
  }
  std::vector<float> v(d.rows.begin() + std::ptrdiff_t(first * o.dim), d.rows.begin() + std::ptrdiff_t((first + n) * o.dim));
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                            {"vector", arrow::make_fixed_size_list(arrow::make_array<float>(v), std::int32_t(o.dim))},
                            {"category", arrow::string_array(cats)},
                            {"price", arrow::make_array<double>(prices)}});
}

std::vector<arrow::record_batch> batches(const options& o, const data& d, std::size_t first, std::size_t n) {
  std::vector<arrow::record_batch> out;
  for (std::size_t at = first; at < first + n; at += 100000) out.push_back(make_batch(o, d, at, std::min<std::size_t>(100000, first + n - at)));
  return out;
}

std::uint64_t deleted_count(std::size_t rows) { return rows / 10 + (rows % 10 > 3 ? 1 : 0); }

njson data_params(const options& o) {
  return {{"rows", o.rows}, {"appended", o.appended()}, {"dim", o.dim}, {"clusters", o.clusters},
          {"spread", double(o.spread)}, {"seed", o.seed}, {"sub_vectors", o.sub_vectors},
          {"delete", delete_predicate}, {"schema", 2}};
}

// The datasets of --dir when state.json describes them with these options and their
// latest versions are the ones it recorded.
bool datasets_ready(const options& o, const fs::path& clean, const fs::path& dirty) {
  const auto sf = fs::path(o.dir) / "state.json";
  if (o.rebuild || !fs::exists(sf)) return false;
  try {
    std::ifstream in(sf);
    const auto st = njson::parse(in);
    if (st.at("params") != data_params(o)) return false;
    const auto c = dataset::dataset::open(clean.string()), x = dataset::dataset::open(dirty.string());
    return c.version() == st.at("clean_version").get<std::uint64_t>() &&
           x.version() == st.at("dirty_version").get<std::uint64_t>() && c.count_rows() == o.rows &&
           x.count_rows() == o.rows - deleted_count(o.rows) + o.appended() && c.indices().size() == 2;
  } catch (const std::exception&) {
    return false;
  }
}

void build_datasets(const options& o, const data& d, const fs::path& clean, const fs::path& dirty) {
  fs::create_directories(o.dir);
  fs::remove(fs::path(o.dir) / "state.json");
  fs::remove(fs::path(o.dir) / "truth.json");
  fs::remove_all(clean);
  fs::remove_all(dirty);
  dataset::write_options wo;
  wo.sync_data_files = false;
  auto t0 = clock_type::now();
  dataset::write(clean.string(), batches(o, d, 0, o.rows), wo);
  std::printf("  wrote %zu rows in %.1f s\n", o.rows, since(t0));
  std::fflush(stdout);
  boost::asio::thread_pool pool(o.threads);
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_pq;
  bo.num_sub_vectors = o.sub_vectors;
  bo.metric = simd::distance_type::l2;
  bo.pool = &pool;
  t0 = clock_type::now();
  const auto br = index::build_ivf_index(clean.string(), bo);
  std::printf("  IVF_PQ index: %zu partitions, %zu sub-vectors, built in %.1f s (%zu threads)\n", br.num_partitions,
              o.sub_vectors, since(t0), o.threads);
  std::fflush(stdout);
  t0 = clock_type::now();
  index::scalar_index_options so;
  so.column = "id";
  index::build_btree_index(clean.string(), so);
  std::printf("  BTREE on id built in %.2f s\n", since(t0));
  fs::copy(clean, dirty, fs::copy_options::recursive);
  t0 = clock_type::now();
  const auto dr = dataset::delete_where(dirty.string(), delete_predicate);
  std::printf("  dirty copy: delete_where(\"%s\") deleted %" PRIu64 " rows in %.2f s", delete_predicate, dr.deleted_rows,
              since(t0));
  wo.mode = dataset::write_mode::append;
  t0 = clock_type::now();
  dataset::write(dirty.string(), batches(o, d, o.rows, o.appended()), wo);
  std::printf("; appended %zu rows in %.2f s\n", o.appended(), since(t0));
  njson st = {{"params", data_params(o)},
              {"clean_version", dataset::dataset::open(clean.string()).version()},
              {"dirty_version", dataset::dataset::open(dirty.string()).version()}};
  std::ofstream(fs::path(o.dir) / "state.json") << st.dump(2) << "\n";
}

// ---- exact answers ----

struct truths {
  ids_t clean, clean_c2, dirty, dirty_c2, clean_e;  // ids, k nearest first
};

truths exact_answers(const options& o, const data& d, boost::asio::thread_pool& pool) {
  const std::size_t n = o.rows + o.appended();
  truths t;
  t.clean.resize(o.queries);
  t.clean_c2.resize(o.queries);
  t.dirty.resize(o.queries);
  t.dirty_c2.resize(o.queries);
  t.clean_e.resize(o.queries);
  std::vector<std::uint8_t> cat(n);
  for (std::size_t i = 0; i < n; ++i) cat[i] = std::uint8_t(category_of(i));
  const float inf = std::numeric_limits<float>::infinity();
  parallel_for(&pool, o.queries, [&](std::size_t q) {
    std::vector<float> dist(n), masked(n);
    simd::distances_to_many(simd::distance_type::l2, d.queries.data() + q * o.dim, d.rows.data(), n, o.dim, dist.data());
    std::vector<std::uint32_t> idx(o.k);
    auto best = [&](auto keep, std::vector<std::uint64_t>& out) {
      for (std::size_t i = 0; i < n; ++i) masked[i] = keep(i) ? dist[i] : inf;
      const std::size_t got = simd::topk(masked.data(), n, o.k, idx.data());
      for (std::size_t j = 0; j < got; ++j)
        if (masked[idx[j]] < inf) out.push_back(idx[j]);
    };
    const std::size_t rows = o.rows;
    best([&](std::size_t i) { return i < rows; }, t.clean[q]);
    best([&](std::size_t i) { return i < rows && cat[i] == 2; }, t.clean_c2[q]);
    best([&](std::size_t i) { return i >= rows || i % 10 != 3; }, t.dirty[q]);
    best([&](std::size_t i) { return (i >= rows || i % 10 != 3) && cat[i] == 2; }, t.dirty_c2[q]);
    best([&](std::size_t i) { return i < rows / 100; }, t.clean_e[q]);
  });
  return t;
}

// The exact answers kept beside the datasets (truth.json), for these data options,
// queries and k; nullopt when there are none yet.
njson truth_key(const options& o) { return {{"params", data_params(o)}, {"queries", o.queries}, {"k", o.k}}; }

std::optional<truths> load_truths(const options& o) {
  try {
    std::ifstream in(fs::path(o.dir) / "truth.json");
    if (!in) return std::nullopt;
    const auto j = njson::parse(in);
    if (j.at("key") != truth_key(o)) return std::nullopt;
    truths t;
    t.clean = j.at("clean").get<ids_t>();
    t.clean_c2 = j.at("clean_c2").get<ids_t>();
    t.dirty = j.at("dirty").get<ids_t>();
    t.dirty_c2 = j.at("dirty_c2").get<ids_t>();
    t.clean_e = j.at("clean_e").get<ids_t>();
    return t;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void save_truths(const options& o, const truths& t) {
  const njson j = {{"key", truth_key(o)}, {"clean", t.clean}, {"clean_c2", t.clean_c2}, {"dirty", t.dirty},
                   {"dirty_c2", t.dirty_c2}, {"clean_e", t.clean_e}};
  std::ofstream(fs::path(o.dir) / "truth.json") << j.dump() << "\n";
}

// ---- measuring ----

struct knn_run {
  double qps = 0, p50_us = -1, p99_us = -1, cpu_us = -1;
  ids_t ids;
  bool done = false;
};

struct scan_run {
  double seconds = -1, cpu_s = -1;
  std::uint64_t rows = 0, id_sum = 0;
  bool done = false;
};

struct case_spec {
  std::string name;     // a, b, b0, c, c0, cf, d, dd
  bool dirty = false;
  bool knn = true;
  std::string filter;   // "" none
  bool uncached = false;  // on a table that keeps no prefilter rows and no unindexed vectors
  std::string anchor;     // LanceDB's run to compare with (its own name when empty)
};

void percentiles(std::vector<double> t, knn_run& r) {
  std::sort(t.begin(), t.end());
  r.p50_us = 1e6 * t[t.size() / 2];
  r.p99_us = 1e6 * t[std::min(t.size() - 1, t.size() * 99 / 100)];
}

double monotonic_seconds(clock_type::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

void mark(const options& o, const case_spec& c, clock_type::time_point from, clock_type::time_point to) {
  if (o.marks) std::fprintf(stderr, "bench_query mark %s %.6f %.6f\n", c.name.c_str(), monotonic_seconds(from), monotonic_seconds(to));
}

std::vector<std::uint64_t> ids_column(const arrow::record_batch& b) {
  const auto& col = *b.columns.at(0);
  if (b.schema->fields.at(0).name != "id") throw std::runtime_error("the answer's first column is not id");
  std::vector<std::uint64_t> out;
  for (std::int64_t r = 0; r < b.num_rows(); ++r) out.push_back(std::uint64_t(col.value<std::int64_t>(r)));
  return out;
}

knn_run lancet_knn(const options& o, const query::table& t, const data& d, const case_spec& c) {
  const std::size_t nq = o.queries, dim = o.dim;
  auto one = [&](std::size_t q) {
    auto b = t.search("vector", std::span<const float>(d.queries.data() + q * dim, dim))
                 .nprobes(o.nprobes)
                 .select({"id", "category", "price"})
                 .limit(o.k);
    if (!c.filter.empty()) b.where(c.filter);
    return b.to_batch();
  };
  for (std::size_t w = 0; w < o.warmup; ++w)
    for (std::size_t q = 0; q < nq; ++q) (void)one(q);
  knn_run r;
  r.ids.resize(nq);
  std::vector<double> each;
  each.reserve(nq * o.loops);
  std::vector<arrow::record_batch> answers(nq);
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  for (std::size_t l = 0; l < o.loops; ++l)
    for (std::size_t q = 0; q < nq; ++q) {
      const auto tq = clock_type::now();
      answers[q] = one(q);
      each.push_back(since(tq));
    }
  const double secs = since(t0);
  mark(o, c, t0, clock_type::now());
  r.qps = double(nq * o.loops) / secs;
  r.cpu_us = 1e6 * (cpu_now() - c0) / double(nq * o.loops);
  percentiles(std::move(each), r);
  for (std::size_t q = 0; q < nq; ++q) {
    r.ids[q] = ids_column(answers[q]);
    if (c.filter == category_filter) {  // every answer passes the filter
      const auto& cat = *answers[q].columns.at(1);
      for (std::int64_t i = 0; i < cat.length; ++i)
        if (cat.string_value(i) != "c2") throw std::runtime_error("lancet returned a row of category " + std::string(cat.string_value(i)));
    }
  }
  r.done = true;
  return r;
}

scan_run lancet_scan(const options& o, const query::table& t, const case_spec& c) {
  auto one = [&] { return t.query().where(c.filter).select({"id"}).to_batch(); };
  (void)one();
  scan_run best;
  const auto start = clock_type::now();
  for (std::size_t rep = 0; rep < o.scan_reps * o.loops; ++rep) {
    const double c0 = cpu_now();
    const auto t0 = clock_type::now();
    const auto b = one();
    const double s = since(t0), cpu = cpu_now() - c0;
    if (!best.done || s < best.seconds) {
      best.seconds = s;
      best.cpu_s = cpu;
      best.done = true;
    }
    best.rows = std::uint64_t(b.num_rows());
    best.id_sum = 0;
    const auto& col = *b.columns.at(0);
    for (std::int64_t r = 0; r < b.num_rows(); ++r) best.id_sum += std::uint64_t(col.value<std::int64_t>(r));
  }
  mark(o, c, start, clock_type::now());
  return best;
}

njson node_case(const options& o, const case_spec& c) {
  if (c.knn) {
    njson j = {{"name", c.name}, {"kind", "knn"}, {"k", o.k}, {"nprobes", o.nprobes},
               {"select", {"id", "category", "price"}}};
    if (!c.filter.empty()) j["where"] = c.filter;
    return j;
  }
  return {{"name", c.name}, {"kind", "scan"}, {"select", {"id"}}, {"where", c.filter}};
}

// LanceDB's runs of the cases on one dataset (one Node process, the table opened once).
void lancedb_runs(const options& o, const fs::path& root, const fs::path& qf, const std::vector<case_spec>& cases,
                  std::map<std::string, knn_run>& knn, std::map<std::string, scan_run>& scans) {
  njson list = njson::array();
  for (const auto& c : cases) list.push_back(node_case(o, c));
  if (list.empty()) return;
  std::istringstream lines(testing::node(
      "bench_query.mjs", {root.string(), "--queries", qf.string(), "--dim", std::to_string(o.dim), "--cases",
                          list.dump(), "--warmup", std::to_string(o.warmup), "--scan-reps", std::to_string(o.scan_reps)}));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto j = njson::parse(line);
    const std::string name = j.at("name");
    if (j.contains("qps")) {
      knn_run r;
      r.qps = j["qps"];
      r.p50_us = j["p50_us"];
      r.p99_us = j["p99_us"];
      r.cpu_us = j["cpu_us"];
      for (const auto& q : j["ids"]) {
        r.ids.emplace_back();
        for (const auto& id : q) r.ids.back().push_back(id.get<std::uint64_t>());
      }
      r.done = true;
      auto& best = knn[name];
      if (!best.done || r.qps > best.qps) best = std::move(r);
    } else {
      scan_run r;
      r.seconds = j["seconds"];
      r.cpu_s = j["cpu_s"];
      r.rows = j["rows"];
      r.id_sum = std::uint64_t(j["id_sum"].get<double>());
      r.done = true;
      auto& best = scans[name];
      if (!best.done || r.seconds < best.seconds) best = r;
    }
  }
}

// Mean overlap of two systems' answers (fraction of lancet's ids LanceDB also returned).
double agreement(const ids_t& a, const ids_t& b) {
  if (a.empty() || b.size() != a.size()) return -1;
  double s = 0;
  for (std::size_t q = 0; q < a.size(); ++q) {
    const std::set<std::uint64_t> x(b[q].begin(), b[q].end());
    std::size_t hit = 0;
    for (auto id : a[q]) hit += x.count(id);
    s += a[q].empty() ? 1.0 : double(hit) / double(std::max(a[q].size(), b[q].size()));
  }
  return s / double(a.size());
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  const fs::path dir(o.dir), clean = dir / "clean", dirty = dir / "dirty", qf = dir / "queries.f32";
  std::printf("bench_query: %zu rows x %zu-d f32 (%zu clusters, spread %.3g), IVF_PQ %zu sub-vectors, %zu queries, "
              "k %zu, nprobes %zu, warm-up %zu pass(es), best of %zu rounds%s\n",
              o.rows, o.dim, o.clusters, double(o.spread), o.sub_vectors, o.queries, o.k, o.nprobes, o.warmup, o.repeat,
              o.loops > 1 ? (", " + std::to_string(o.loops) + " passes per round").c_str() : "");
  std::fflush(stdout);
  const bool ready = datasets_ready(o, clean, dirty);
  std::optional<truths> kept;
  if (ready && o.recall) kept = load_truths(o);
  const auto d = make_data(o, !ready || (o.recall && !kept));
  if (ready) {
    std::printf("  datasets in %s reused (state.json matches)\n", o.dir.c_str());
  } else {
    std::printf("  building the datasets in %s\n", o.dir.c_str());
    std::fflush(stdout);
    build_datasets(o, d, clean, dirty);
  }
  fs::create_directories(dir);
  bench::write_f32(qf, d.queries);
  {
    const auto c = dataset::dataset::open(clean.string()), x = dataset::dataset::open(dirty.string());
    std::printf("  clean: version %" PRIu64 ", %" PRIu64 " rows, %zu fragments; dirty: version %" PRIu64 ", %" PRIu64
                " live rows (%" PRIu64 " deleted, %zu unindexed), %zu fragments\n",
                c.version(), c.count_rows(), c.manifest().fragments.size(), x.version(), x.count_rows(),
                deleted_count(o.rows), o.appended(), x.manifest().fragments.size());
  }

  boost::asio::thread_pool pool(o.threads);
  truths truth;
  if (kept) {
    truth = std::move(*kept);
    std::printf("  exact answers from %s/truth.json\n", o.dir.c_str());
  } else if (o.recall) {
    const auto t0 = clock_type::now();
    truth = exact_answers(o, d, pool);
    save_truths(o, truth);
    std::printf("  exact answers in %.1f s (kept in %s/truth.json)\n", since(t0), o.dir.c_str());
  }
  pool.join();
  std::fflush(stdout);

  const std::string id_filter = "id < " + std::to_string(o.rows / 100);
  const std::vector<case_spec> all = {
      {"a", false, true, ""},
      {"b", false, true, category_filter},
      {"b0", false, true, category_filter, true, "b"},
      {"c", true, true, ""},
      {"c0", true, true, "", true, "c"},
      {"cf", true, true, category_filter},
      {"d", false, false, scan_filter},
      {"dd", true, false, scan_filter},
      {"e", false, true, id_filter},
      {"e0", false, true, id_filter, true, "e"},
  };
  std::vector<case_spec> cases;
  for (const auto& c : all)
    if (o.wants(c.name)) cases.push_back(c);

  std::map<std::string, knn_run> ours_knn, theirs_knn;
  std::map<std::string, scan_run> ours_scan, theirs_scan;
  // Each table opened once, kept over the rounds (its index and deletion mask cached);
  // the uncached ones keep no prefilter rows and no unindexed vectors (table_options 0).
  query::table_options none;
  none.filter_cache_entries = 0;
  none.vector_cache_bytes = 0;
  // --mmap: the data files mapped (io::file_source_options::use_mmap), as a latency-bound
  // user may choose; lancet's default reads with pread.
  const dataset::source_factory files(io::file_source_options{.use_mmap = o.mmap});
  const auto t_clean = query::table::open(clean.string(), std::nullopt, files),
             t_dirty = query::table::open(dirty.string(), std::nullopt, files);
  const auto u_clean = query::table::open(clean.string(), std::nullopt, files, none),
             u_dirty = query::table::open(dirty.string(), std::nullopt, files, none);
  for (std::size_t round = 0; round < o.repeat; ++round) {
    for (const bool is_dirty : {false, true}) {
      std::vector<case_spec> here;
      for (const auto& c : cases)
        if (c.dirty == is_dirty) here.push_back(c);
      if (here.empty()) continue;
      for (const auto& c : here) {
        const auto& t = c.uncached ? (is_dirty ? u_dirty : u_clean) : (is_dirty ? t_dirty : t_clean);
        if (c.knn) {
          auto r = lancet_knn(o, t, d, c);
          auto& best = ours_knn[c.name];
          if (!best.done || r.qps > best.qps) best = std::move(r);
        } else {
          const auto r = lancet_scan(o, t, c);
          auto& best = ours_scan[c.name];
          if (!best.done || r.seconds < best.seconds) best = r;
        }
      }
      std::vector<case_spec> theirs;  // the uncached cases compare with LanceDB's run of their anchor
      for (const auto& c : here)
        if (c.anchor.empty()) theirs.push_back(c);
      if (o.lancedb) lancedb_runs(o, is_dirty ? dirty : clean, qf, theirs, theirs_knn, theirs_scan);
    }
    std::printf("  round %zu done\n", round + 1);
    std::fflush(stdout);
  }

  const std::map<std::string, std::string> what = {
      {"a", "(a) k=10, 3 columns"},
      {"b", "(b) (a) + prefilter category = 'c2' (20%)"},
      {"b0", "(b) without lancet's prefilter cache (a new filter each query)"},
      {"c", "(c) (a) on dirty (10% deleted, 5% unindexed)"},
      {"c0", "(c) without lancet's unindexed-vector cache"},
      {"cf", "(c') (b) on dirty"},
      {"d", "(d) scan price > 90 -> id, materialised"},
      {"dd", "(d') (d) on dirty"},
      {"e", "(e) (a) + prefilter id < rows/100 (1%, a BTREE on id)"},
      {"e0", "(e) without lancet's prefilter cache"},
  };
  auto truth_of = [&](const std::string& n) -> const ids_t* {
    if (!o.recall) return nullptr;
    if (n == "a") return &truth.clean;
    if (n == "b" || n == "b0") return &truth.clean_c2;
    if (n == "c" || n == "c0") return &truth.dirty;
    if (n == "cf") return &truth.dirty_c2;
    if (n == "e" || n == "e0") return &truth.clean_e;
    return nullptr;
  };

  std::printf("\n| case | lancet QPS | lancet p50 / p99 us | lancet CPU us/q | LanceDB QPS | LanceDB p50 / p99 us | "
              "LanceDB CPU us/q | lancet / LanceDB QPS | recall@10 lancet / LanceDB | agreement |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& c : cases) {
    if (!c.knn) continue;
    const auto& a = ours_knn[c.name];
    const std::string anchor = c.anchor.empty() ? c.name : c.anchor;
    const auto* b = theirs_knn.count(anchor) ? &theirs_knn[anchor] : nullptr;
    const auto* tr = truth_of(c.name);
    std::printf("| %s | %.0f | %.0f / %.0f | %.0f | %s | %s | %s | %s | %s / %s | %s |\n", what.at(c.name).c_str(), a.qps,
                a.p50_us, a.p99_us, a.cpu_us, b ? fmt("%.0f", b->qps).c_str() : "-",
                b ? (fmt("%.0f", b->p50_us) + " / " + fmt("%.0f", b->p99_us)).c_str() : "-",
                b ? fmt("%.0f", b->cpu_us).c_str() : "-", b ? fmt("**%.2fx**", a.qps / b->qps).c_str() : "-",
                tr ? fmt("%.4f", recall(a.ids, *tr)).c_str() : "-",
                tr && b ? fmt("%.4f", recall(b->ids, *tr)).c_str() : "-",
                b ? fmt("%.4f", agreement(a.ids, b->ids)).c_str() : "-");
  }
  bool any_scan = false;
  for (const auto& c : cases) any_scan = any_scan || !c.knn;
  if (any_scan) {
    std::printf("\n| case | rows | lancet ms | lancet CPU ms | LanceDB ms | LanceDB CPU ms | LanceDB / lancet time |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& c : cases) {
      if (c.knn) continue;
      const auto& a = ours_scan[c.name];
      const auto* b = theirs_scan.count(c.name) ? &theirs_scan[c.name] : nullptr;
      std::printf("| %s | %" PRIu64 " | %.1f | %.1f | %s | %s | %s |\n", what.at(c.name).c_str(), a.rows, 1e3 * a.seconds,
                  1e3 * a.cpu_s, b ? fmt("%.1f", 1e3 * b->seconds).c_str() : "-",
                  b ? fmt("%.1f", 1e3 * b->cpu_s).c_str() : "-", b ? fmt("**%.2fx**", b->seconds / a.seconds).c_str() : "-");
      if (b && (b->rows != a.rows || b->id_sum != a.id_sum))
        std::printf("  MISMATCH: LanceDB returned %" PRIu64 " rows (id sum %" PRIu64 "), lancet %" PRIu64 " (id sum %" PRIu64 ")\n",
                    b->rows, b->id_sum, a.rows, a.id_sum);
    }
  }

  // Targets.
  std::printf("\n");
  auto target = [](const char* what, double x, double want) {
    std::printf("  %-58s %6.2fx  (target >= %.1fx: %s)\n", what, x, want, x >= want ? "met" : "NOT met");
  };
  auto ratio = [&](const std::string& n) {
    return ours_knn.count(n) && theirs_knn.count(n) ? ours_knn[n].qps / theirs_knn[n].qps : -1.0;
  };
  if (ratio("a") > 0) target("(a) lancet / LanceDB QPS", ratio("a"), 5);
  if (ratio("b") > 0) target("(b) lancet / LanceDB QPS, prefilter", ratio("b"), 3);
  if (ours_knn.count("b0") && theirs_knn.count("b"))
    std::printf("  %-58s %6.2fx\n", "    the same without lancet's prefilter cache",
                ours_knn["b0"].qps / theirs_knn["b"].qps);
  if (ours_knn.count("a") && ours_knn.count("c")) {
    target("(c) lancet dirty QPS / lancet clean QPS", ours_knn["c"].qps / ours_knn["a"].qps, 0.8);
    if (theirs_knn.count("a") && theirs_knn.count("c"))
      std::printf("  %-58s %6.2fx\n", "    LanceDB dirty QPS / LanceDB clean QPS (reference)",
                  theirs_knn["c"].qps / theirs_knn["a"].qps);
    if (ratio("c") > 0) std::printf("  %-58s %6.2fx\n", "    lancet / LanceDB QPS on dirty", ratio("c"));
    if (ours_knn.count("c0"))
      std::printf("  %-58s %6.2fx\n", "    lancet dirty QPS without its vector cache / clean QPS", ours_knn["c0"].qps / ours_knn["a"].qps);
  }
  if (ratio("e") > 0) target("(e) lancet / LanceDB QPS, 1% prefilter, BTREE", ratio("e"), 3);
  if (ours_knn.count("e0") && theirs_knn.count("e"))
    std::printf("  %-58s %6.2fx\n", "    the same without lancet's prefilter cache", ours_knn["e0"].qps / theirs_knn["e"].qps);
  if (ours_scan.count("d") && theirs_scan.count("d"))
    target("(d) LanceDB / lancet scan time", theirs_scan["d"].seconds / ours_scan["d"].seconds, 2);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_query: %s\n", e.what());
  return 1;
}
