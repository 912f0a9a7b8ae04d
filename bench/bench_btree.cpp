// BTREE and BITMAP scalar indexes against a scan and against LanceDB 0.39 (through Node,
// tests/interop/bench_btree.mjs), in one run:
//
//   bench_btree [--rows 1000000] [--reps 5] [--dir /tmp/bench_btree] [--no-lancedb]
//
// The dataset: `rows` rows of id int64 (0..rows), k int64 (a permutation of 0..rows),
// price float64 (uniform in [0, 100)), s utf8 ("s" + a number below rows / 10), cat
// int64 (below 1000) and tag utf8 (as s), written by lancet (2.2) into DIR/plain.
// DIR/ours is a copy with lancet's BTREEs on k, price and s and BITMAPs on cat and tag;
// DIR/theirs a copy with LanceDB's (each build timed). Filters selecting 0.1 % (k,
// price, cat), about 10 rows (s, tag) and 1 % (k BETWEEN) run as filtered scans
// selecting id, materialised, best of `reps` after a warm-up: lancet on plain (its scan),
// lancet on ours (the BTREEs), LanceDB on ours (LanceDB reading lancet's BTREEs) and
// LanceDB on theirs. Answers are compared (rows, sum of ids). Targets (issue): indexed
// >= 20x lancet's scan, >= 2x LanceDB's indexed filter; builds >= 3x LanceDB's.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/scalar/scalar_index.hpp>
#include <lancet/query/table.hpp>

#include "../tests/support/interop.hpp"

namespace fs = std::filesystem;
using namespace lancet;
using njson = nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct options {
  std::size_t rows = 1000000, reps = 5;
  std::string dir = "/tmp/bench_btree";
  bool lancedb = true;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&] {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return std::size_t(std::stoull(argv[++i]));
    };
    if (a == "--rows") o.rows = num();
    else if (a == "--reps") o.reps = num();
    else if (a == "--dir" && i + 1 < argc) o.dir = argv[++i];
    else if (a == "--no-lancedb") o.lancedb = false;
    else throw std::runtime_error("usage: bench_btree [--rows N] [--reps R] [--dir DIR] [--no-lancedb]");
  }
  return o;
}

arrow::record_batch make_rows(std::size_t n) {
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> id(n), k(n);
  std::vector<double> price(n);
  std::vector<std::string> s(n), tag(n);
  std::vector<std::int64_t> cat(n);
  for (std::size_t i = 0; i < n; ++i) id[i] = k[i] = std::int64_t(i);
  std::shuffle(k.begin(), k.end(), rng);
  std::uniform_real_distribution<double> u(0, 100);
  for (std::size_t i = 0; i < n; ++i) {
    price[i] = u(rng);
    s[i] = "s" + std::to_string(rng() % std::max<std::size_t>(1, n / 10));
    cat[i] = std::int64_t(rng() % 1000);
    tag[i] = "t" + std::to_string(rng() % std::max<std::size_t>(1, n / 10));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(id)},
                            {"k", arrow::make_array<std::int64_t>(k)},
                            {"price", arrow::make_array<double>(price)},
                            {"s", arrow::string_array(s)},
                            {"cat", arrow::make_array<std::int64_t>(cat)},
                            {"tag", arrow::string_array(tag)}});
}

struct scan_result {
  double seconds = -1;
  std::uint64_t rows = 0, id_sum = 0;
};

scan_result lancet_scan(const query::table& t, const std::string& where, std::size_t reps) {
  auto one = [&] { return t.query().where(where).select({"id"}).to_batch(); };
  (void)one();
  scan_result best;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    const auto b = one();
    const double s = since(t0);
    if (best.seconds < 0 || s < best.seconds) best.seconds = s;
    best.rows = std::uint64_t(b.num_rows());
    best.id_sum = 0;
    for (std::int64_t i = 0; i < b.num_rows(); ++i) best.id_sum += std::uint64_t(b.columns[0]->value<std::int64_t>(i));
  }
  return best;
}

// LanceDB's builds (when `build` names columns) and scans on `root`.
std::pair<std::map<std::string, double>, std::map<std::string, scan_result>> lancedb_runs(
    const fs::path& root, const std::string& build, const std::vector<std::string>& filters, std::size_t reps) {
  std::istringstream lines(testing::node("bench_btree.mjs", {root.string(), "--build", build, "--where",
                                                             njson(filters).dump(), "--reps", std::to_string(reps)}));
  std::map<std::string, double> builds;
  std::map<std::string, scan_result> scans;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto j = njson::parse(line);
    if (j.contains("build")) {
      builds[j["build"]] = j["seconds"];
      continue;
    }
    scan_result r;
    r.seconds = j["seconds"];
    r.rows = j["rows"];
    r.id_sum = std::stoull(j["id_sum"].get<std::string>());
    scans[j["where"]] = r;
  }
  return {builds, scans};
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  const fs::path dir(o.dir), plain = dir / "plain", ours = dir / "ours", theirs = dir / "theirs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  dataset::write_options wo;
  wo.storage_version = file::format_version::v2_2;
  dataset::write(plain.string(), make_rows(o.rows), wo);
  fs::copy(plain, ours, fs::copy_options::recursive);
  fs::copy(plain, theirs, fs::copy_options::recursive);
  // BTREEs on k, price, s; BITMAPs on cat, tag.
  const std::vector<std::string> columns = {"k", "price", "s", "cat:bitmap", "tag:bitmap"};
  std::map<std::string, double> our_builds;
  for (const auto& c : columns) {
    index::scalar_index_options so;
    const bool bitmap = c.ends_with(":bitmap");
    so.column = c.substr(0, c.find(':'));
    const auto t0 = clock_type::now();
    if (bitmap) index::build_bitmap_index(ours.string(), so);
    else index::build_btree_index(ours.string(), so);
    our_builds[so.column] = since(t0);
  }
  const auto n = std::int64_t(o.rows);
  const std::vector<std::string> filters = {"k < " + std::to_string(n / 1000), "price < 0.1", "s = 's12345'",
                                            "k BETWEEN " + std::to_string(n / 2) + " AND " + std::to_string(n / 2 + n / 100),
                                            "cat = 17", "tag = 't4321'", "cat IN (3, 5) AND tag IS NOT NULL"};
  std::printf("bench_btree: %zu rows (id, k, price, s), 2.2 files, best of %zu after a warm-up\n\n", o.rows, o.reps);
  std::map<std::string, double> their_builds;
  std::map<std::string, scan_result> theirs_on_ours, theirs_on_theirs;
  if (o.lancedb) {
    std::string build;
    for (const auto& c : columns) build += (build.empty() ? "" : ",") + c;
    their_builds = lancedb_runs(theirs, build, filters, o.reps).first;
    theirs_on_theirs = lancedb_runs(theirs, "", filters, o.reps).second;
    theirs_on_ours = lancedb_runs(ours, "", filters, o.reps).second;
  }
  std::printf("| build | lancet s | LanceDB s | LanceDB / lancet |\n| --- | --- | --- | --- |\n");
  for (const auto& spec : columns) {
    const auto c = spec.substr(0, spec.find(':'));
    const double t = their_builds.count(c) ? their_builds[c] : -1;
    const std::string what = c + (spec.ends_with(":bitmap") ? " (BITMAP)" : " (BTREE)");
    std::printf("| %s | %.3f | %s | %s |\n", what.c_str(), our_builds[c], t > 0 ? std::to_string(t).c_str() : "-",
                t > 0 ? ("**" + std::to_string(t / our_builds[c]).substr(0, 5) + "x**").c_str() : "-");
  }
  const auto t_plain = query::table::open(plain.string()), t_ours = query::table::open(ours.string());
  std::printf("\n| filter | rows | lancet scan ms | lancet indexed ms | scan / indexed | LanceDB on lancet's index ms | "
              "LanceDB on its own ms | LanceDB / lancet |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& f : filters) {
    const auto scan = lancet_scan(t_plain, f, o.reps), idx = lancet_scan(t_ours, f, o.reps);
    const auto* a = theirs_on_ours.count(f) ? &theirs_on_ours[f] : nullptr;
    const auto* b = theirs_on_theirs.count(f) ? &theirs_on_theirs[f] : nullptr;
    char la[32] = "-", lb[32] = "-", ratio[32] = "-";
    if (a) std::snprintf(la, sizeof la, "%.2f", 1e3 * a->seconds);
    if (b) std::snprintf(lb, sizeof lb, "%.2f", 1e3 * b->seconds);
    if (a) std::snprintf(ratio, sizeof ratio, "**%.2fx**", a->seconds / idx.seconds);
    std::printf("| `%s` | %" PRIu64 " | %.2f | %.2f | **%.1fx** | %s | %s | %s |\n", f.c_str(), idx.rows, 1e3 * scan.seconds,
                1e3 * idx.seconds, scan.seconds / idx.seconds, la, lb, ratio);
    for (const auto* x : {&scan, a, b})
      if (x && (x->rows != idx.rows || x->id_sum != idx.id_sum))
        std::printf("  MISMATCH on `%s`: %" PRIu64 " rows (id sum %" PRIu64 ") against lancet's indexed answer %" PRIu64 " (%" PRIu64 ")\n",
                    f.c_str(), x->rows, x->id_sum, idx.rows, idx.id_sum);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_btree: %s\n", e.what());
  return 1;
}
