// Merge insert (upsert) against LanceDB's mergeInsert (through Node,
// tests/interop/bench_merge_insert.mjs) on copies of the same dataset, in one run.
//
//   bench_merge_insert [--rows 1000000] [--source 100000] [--dim 128] [--repeat 3]
//                      [--dir /tmp/bench_merge_insert] [--no-lancedb]
//
// The dataset: `rows` rows of id int64 (0..rows), category utf8 (c0..c4), price float64
// and vector fixed_size_list<float32, dim>, written by lancet (2.2) once and kept in DIR
// (base/). The source: `source` rows of the same columns, half with ids of the dataset
// (drawn at random), half new ones, written to DIR/source as a dataset (LanceDB reads it
// from there, untimed) and held in memory by lancet. Each repetition merges the source
// (update matched, insert unmatched) into a fresh copy of base/ with LanceDB and then with
// each lancet variant: the source held in memory with data files fsynced (lancet's
// default) or not (as Lance 12 writes them), and the source streamed in batches of 8,192
// rows under a 16 MiB memory budget (the rest spilled to disk and read back). Results are
// compared with LanceDB's (row count, sums of id and price). Printed: the best of
// `repeat` times, LanceDB / lancet, and lancet's peak resident memory during its merge
// beyond what the process held before (each merge runs in a forked child; VmHWM reset
// through /proc/self/clear_refs).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/dataset/write.hpp>

#include "../tests/support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

namespace {

struct options {
  std::size_t rows = 1000000, source = 100000, dim = 128, repeat = 3;
  std::string dir = "/tmp/bench_merge_insert";
  bool lancedb = true;
};

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// Rows with the given ids; values from a hash of (id, salt).
arrow::record_batch make_rows(const std::vector<std::int64_t>& ids, std::size_t dim, std::uint64_t salt) {
  std::vector<std::string> cat;
  std::vector<double> price;
  std::vector<float> vec;
  vec.reserve(ids.size() * dim);
  for (auto id : ids) {
    std::uint64_t h = std::uint64_t(id) * 0x9E3779B97F4A7C15ull ^ salt;
    h ^= h >> 29;
    cat.push_back("c" + std::to_string(h % 5));
    price.push_back(double(h % 10000) / 100.0);
    std::uint64_t x = h | 1;
    for (std::size_t j = 0; j < dim; ++j) {  // xorshift: values in [-1, 1)
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      vec.push_back(float(double(x >> 11) / double(1ull << 52) - 1.0));
    }
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                            {"category", arrow::string_array(cat)},
                            {"price", arrow::make_array<double>(price)},
                            {"vector", arrow::make_fixed_size_list(arrow::make_array<float>(vec), std::int32_t(dim))}});
}

// Peak resident memory since the last reset_peak(), in MiB.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }
double peak_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}
double current_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// A copy of the dataset whose data files are hard links (neither side changes a data
// file; writing 550 MB of copies before each merge left the page cache dirty enough to
// slow the merge's own writes) and whose other files are copies.
void copy_dataset(const fs::path& from, const fs::path& to) {
  for (const auto& e : fs::recursive_directory_iterator(from)) {
    const auto dst = to / fs::relative(e.path(), from);
    if (e.is_directory()) fs::create_directories(dst);
    else if (e.path().parent_path().filename() == "data") fs::create_hard_link(e.path(), dst);
    else fs::copy_file(e.path(), dst);
  }
}

// A merge's time, peak memory and result, measured in a forked child so that every
// measurement starts from the same heap (memory an earlier merge freed but the
// allocator kept would hide a later one's peak).
struct measured {
  double seconds = 0, peak_mib = 0;
  dataset::merge_insert_result result;
};
template <class F>
measured in_child(F&& merge) {
  int fd[2];
  if (::pipe(fd) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fd[0]);
    measured m;
    try {
      const double before = current_mib();
      reset_peak();
      const auto t0 = clk::now();
      m.result = merge();
      m.seconds = seconds_since(t0);
      m.peak_mib = peak_mib() - before;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_merge_insert: %s\n", e.what());
      ::_exit(2);
    }
    const bool sent = ::write(fd[1], &m, sizeof m) == ssize_t(sizeof m);
    ::_exit(sent ? 0 : 3);
  }
  ::close(fd[1]);
  measured m;
  const bool got = ::read(fd[0], &m, sizeof m) == ssize_t(sizeof m);
  ::close(fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the measured merge failed");
  return m;
}

struct summary {
  std::uint64_t rows = 0;
  double id_sum = 0, price_sum = 0;
  bool operator==(const summary&) const = default;
};
summary summarise(const std::string& root) {
  summary s;
  dataset::scan_options so;
  so.columns = {"id", "price"};
  for (auto sc = dataset::dataset::open(root).scan(so); auto b = sc.next();) {
    s.rows += std::uint64_t(b->num_rows());
    for (std::int64_t i = 0; i < b->num_rows(); ++i) {
      s.id_sum += double(b->columns[0]->value<std::int64_t>(i));
      s.price_sum += b->columns[1]->value<double>(i);
    }
  }
  return s;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: bench_merge_insert [--rows 1000000] [--source 100000] [--dim 128] [--repeat 3]\n"
                  "                          [--dir /tmp/bench_merge_insert] [--no-lancedb]\n");
      std::exit(0);
    }
    if (a == "--rows") o.rows = std::stoul(next());
    else if (a == "--source") o.source = std::stoul(next());
    else if (a == "--dim") o.dim = std::stoul(next());
    else if (a == "--repeat") o.repeat = std::max<std::size_t>(1, std::stoul(next()));
    else if (a == "--dir") o.dir = next();
    else if (a == "--no-lancedb") o.lancedb = false;
    else throw std::runtime_error("unknown argument '" + a + "' (see the header of bench/bench_merge_insert.cpp)");
  }
  if (o.rows < 2 || o.source < 2 || o.source / 2 > o.rows || o.dim == 0) throw std::runtime_error("bad sizes");
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto o = parse(argc, argv);
  const fs::path dir = o.dir, base = dir / "base", src_dir = dir / "source";
  const std::string stamp = std::to_string(o.rows) + "x" + std::to_string(o.dim) + "/" + std::to_string(o.source);
  // The dataset and the source, made once per size.
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> src_ids;
  {
    std::vector<std::int64_t> all(o.rows);
    for (std::size_t i = 0; i < o.rows; ++i) all[i] = std::int64_t(i);
    std::shuffle(all.begin(), all.end(), rng);
    src_ids.assign(all.begin(), all.begin() + std::ptrdiff_t(o.source / 2));
    for (std::size_t i = 0; src_ids.size() < o.source; ++i) src_ids.push_back(std::int64_t(o.rows + i));
    std::shuffle(src_ids.begin(), src_ids.end(), rng);
  }
  const auto source = make_rows(src_ids, o.dim, 99);
  std::string have;
  std::ifstream(dir / "state.txt") >> have;
  if (have != stamp) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::fprintf(stderr, "  writing the dataset (%zu rows) and the source (%zu rows) to %s\n", o.rows, o.source,
                 dir.c_str());
    dataset::write_options wo;
    wo.storage_version = file::format_version::v2_2;
    std::size_t done = 0;
    auto next = [&]() -> std::optional<arrow::record_batch> {
      if (done >= o.rows) return std::nullopt;
      const std::size_t n = std::min<std::size_t>(65536, o.rows - done);
      std::vector<std::int64_t> ids(n);
      for (std::size_t i = 0; i < n; ++i) ids[i] = std::int64_t(done + i);
      done += n;
      return make_rows(ids, o.dim, 1);
    };
    dataset::write(base.string(), next, wo);
    dataset::write(src_dir.string(), source, wo);
    std::ofstream(dir / "state.txt") << stamp;
  }
  const std::vector<arrow::record_batch> src{source};
  // lancet's variants: the source held in memory (data files fsynced, lancet's default;
  // or not, as Lance 12 writes), and streamed in batches of 8,192 rows under a 16 MiB
  // budget (the rest spilled to disk and read back).
  struct variant {
    const char* name;
    bool sync, streamed;
    double best = 1e30, peak = 0;
    std::uint64_t spilled = 0;
  };
  std::vector<variant> variants{{"upsert (data files fsynced)", true, false},
                                {"upsert, no fsync (as Lance 12)", false, false},
                                {"upsert, source streamed under a 16 MiB budget, fsynced", true, true}};
  dataset::merge_insert_options mo;
  mo.on = {"id"};
  mo.when_matched_update_all = true;
  mo.when_not_matched_insert_all = true;
  double best_theirs = 1e30, theirs_cpu = 0;
  bool agree = true;
  const fs::path ours = dir / "ours", theirs = dir / "theirs";
  for (std::size_t rep = 0; rep < o.repeat; ++rep) {
    std::optional<summary> expected;
    if (o.lancedb) {
      fs::remove_all(theirs);
      copy_dataset(base, theirs);
      const auto out = nlohmann::json::parse(
          lancet::testing::node("bench_merge_insert.mjs", {theirs.string(), src_dir.string(), "--on", "id"}));
      const double ts = out["seconds"].get<double>();
      if (ts < best_theirs) {
        best_theirs = ts;
        theirs_cpu = out["cpu_s"].get<double>();
      }
      std::fprintf(stderr, "  round %zu: LanceDB %.3f s", rep + 1, ts);
      expected = summarise(theirs.string());
    }
    for (auto& v : variants) {
      fs::remove_all(ours);
      copy_dataset(base, ours);
      auto mv = mo;
      mv.sync_data_files = v.sync;
      mv.memory_budget_bytes = v.streamed ? std::uint64_t(16) << 20 : mo.memory_budget_bytes;
      mv.spill_directory = (dir / "spill").string();
      std::int64_t at = 0;
      auto next = [&]() -> std::optional<arrow::record_batch> {
        if (at >= source.num_rows()) return std::nullopt;
        const auto n = std::min<std::int64_t>(8192, source.num_rows() - at);
        arrow::record_batch b;
        b.schema = source.schema;
        for (const auto& c : source.columns) b.columns.push_back(arrow::slice(c, at, n));
        at += n;
        return b;
      };
      const auto m = in_child([&] {
        return v.streamed ? dataset::merge_insert(ours.string(), next, mv, dataset::default_sink_factory{})
                          : dataset::merge_insert(ours.string(), src, mv);
      });
      const auto& r = m.result;
      const double s = m.seconds;
      v.peak = std::max(v.peak, m.peak_mib);
      v.best = std::min(v.best, s);
      v.spilled = r.spilled_source_rows;
      std::fprintf(stderr, ", %s %.3f s", v.name, s);
      agree = agree && r.updated_rows == o.source / 2 && r.inserted_rows == o.source - o.source / 2 &&
              (!expected || summarise(ours.string()) == *expected);
    }
    std::fprintf(stderr, "\n");
  }
  std::printf("bench_merge_insert: %zu source rows (half matching) into %zu rows x %zu-d, best of %zu\n", o.source,
              o.rows, o.dim, o.repeat);
  std::printf("| case | lancet s | LanceDB s | LanceDB CPU s | LanceDB / lancet | lancet peak MiB | source rows spilled | "
              "same result as LanceDB |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& v : variants) {
    if (o.lancedb)
      std::printf("| %s | %.3f | %.3f | %.3f | **%.2fx** | %.0f | %llu | %s |\n", v.name, v.best, best_theirs, theirs_cpu,
                  best_theirs / v.best, v.peak, (unsigned long long)v.spilled, agree ? "yes" : "NO");
    else
      std::printf("| %s | %.3f | - | - | - | %.0f | %llu | - |\n", v.name, v.best, v.peak, (unsigned long long)v.spilled);
  }
  fs::remove_all(ours);
  fs::remove_all(theirs);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_merge_insert: %s\n", e.what());
  return 1;
}
