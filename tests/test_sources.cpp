// Sources: io::any_source (a type-erased source that keeps the optional capabilities
// of the source it holds) and dataset reads through a source_factory (manifests, data
// files, deletion files, row-id sequences and blob files all opened by the factory;
// a user's source's errors name the file).
#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/io/any_source.hpp>
#include <lancet/io/file_source.hpp>

using namespace lancet;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;

#include "support/temp_dir.hpp"

namespace {

using lancet::testing::scratch_dir;

fs::path source_fixture(const std::string& dir, const std::string& name) {
  return fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / dir / name;
}

shared_bytes shared_bytes_of(const std::string& s) {
  aligned_buffer b;
  b.append(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  return shared_bytes(std::move(b));
}

doctest::Contains has(const std::string& s) { return doctest::Contains(s.c_str()); }

std::string text_of(const shared_bytes& b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

// Only the two members the concept requires.
struct bare_source {
  shared_bytes bytes;
  std::uint64_t size() const { return bytes.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    io::check_range(offset, length, size(), "bare");
    return bytes.slice(std::size_t(offset), std::size_t(length));
  }
};

// What the counting sources saw, shared by all of them.
struct counters {
  std::mutex mu;
  std::set<std::string> opened;  // paths
  std::atomic<std::uint64_t> reads{0}, bytes{0}, largest{0};
  std::set<std::thread::id> threads;  // that read
  std::atomic<std::uint64_t> most_ranges{0};  // in one read_into
  bool opened_any(const std::string& part) {
    std::lock_guard lock(mu);
    return std::any_of(opened.begin(), opened.end(), [&](const std::string& p) { return p.find(part) != std::string::npos; });
  }
  bool opened_path(const std::string& p) {
    std::lock_guard lock(mu);
    return opened.count(fs::path(p).lexically_normal().string()) > 0;
  }
};

// Wraps another source, counting reads; says it prefers whole reads when `whole`.
class counting_source {
 public:
  counting_source(io::any_source inner, counters& c, bool whole) : inner_(std::move(inner)), c_(&c), whole_(whole) {}
  std::uint64_t size() const { return inner_.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    c_->reads += 1;
    c_->bytes += length;
    {
      std::lock_guard lock(c_->mu);
      c_->threads.insert(std::this_thread::get_id());
    }
    auto prev = c_->largest.load();
    while (length > prev && !c_->largest.compare_exchange_weak(prev, length)) {
    }
    return inner_.read(offset, length);
  }
  void read_into(std::span<const io::byte_range> ranges, std::uint8_t* out) const {
    auto prev = c_->most_ranges.load();
    while (ranges.size() > prev && !c_->most_ranges.compare_exchange_weak(prev, ranges.size())) {
    }
    for (const auto& r : ranges) {
      const auto b = read(r.offset, r.length);
      if (r.length) std::memcpy(out, b.data(), std::size_t(r.length));
      out += r.length;
    }
  }
  bool is_zero_copy() const noexcept { return inner_.is_zero_copy(); }
  bool prefers_whole_reads() const noexcept { return whole_; }
  const std::string& name() const noexcept { return inner_.name(); }

 private:
  io::any_source inner_;
  counters* c_;
  bool whole_;
};

// A factory of counting sources over local files.
ds::source_factory counting_factory(counters& c, bool whole = true) {
  return [&c, whole](const std::string& path) {
    {
      std::lock_guard lock(c.mu);
      c.opened.insert(fs::path(path).lexically_normal().string());
    }
    return counting_source(io::file_source(path), c, whole);
  };
}

// The example table: id = i, name = "name-i", null when i % 7 == 3.
arrow::record_batch table(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  for (auto i = from; i < to; ++i) {
    ids.push_back(i);
    names.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>("name-" + std::to_string(i)));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)}, {"name", arrow::string_array(names)}});
}

void check_same_batch(const arrow::record_batch& want, const arrow::record_batch& got) {
  REQUIRE(want.columns.size() == got.columns.size());
  for (std::size_t c = 0; c < want.columns.size(); ++c) {
    auto d = arrow::first_difference(want.columns[c], got.columns[c]);
    INFO("column " << c << ": " << d.value_or(""));
    CHECK_FALSE(d.has_value());
  }
}

// A dataset of two fragments (ids 0..299, 300..499) with rows 5 and 310 deleted.
std::string sample_dataset(const scratch_dir& t) {
  const auto root = t.sub("ds");
  ds::write(root, table(0, 300), {.mode = ds::write_mode::create});
  ds::write(root, table(300, 500), {.mode = ds::write_mode::append});
  const std::vector<std::uint64_t> del{5, ds::row_address(1, 10)};
  ds::delete_rows(root, del);
  return root;
}

}  // namespace

TEST_CASE("any_source forwards size, reads, name and the optional capabilities") {
  scratch_dir t;
  const auto path = t.sub("f.bin");
  std::ofstream(path, std::ios::binary) << "0123456789abcdef";

  {  // a memory source: zero-copy, named
    io::any_source s = io::memory_source(shared_bytes_of("hello world"), "mem");
    CHECK(s.size() == 11);
    CHECK(text_of(s.read(6, 5)) == "world");
    CHECK(s.is_zero_copy());
    CHECK_FALSE(s.prefers_whole_reads());
    CHECK(s.name() == "mem");
    REQUIRE(s.target<io::memory_source>() != nullptr);
    CHECK(s.target<io::file_source>() == nullptr);
    // The same view, not a copy.
    CHECK(s.read(0, 5).data() == s.target<io::memory_source>()->bytes().data());
    CHECK_THROWS_WITH_AS(s.read(8, 4), doctest::Contains("'mem'"), corrupt_error);
  }
  {  // a local file read with pread: whole reads, not zero-copy, named by its path
    io::any_source s = io::file_source(path);
    CHECK(s.size() == 16);
    CHECK(text_of(s.read(10, 6)) == "abcdef");
    CHECK_FALSE(s.is_zero_copy());
    CHECK(s.prefers_whole_reads());
    CHECK(s.name() == path);
    CHECK_THROWS_WITH_AS(s.read(10, 7), has(path), corrupt_error);
  }
  {  // a mapped file: zero-copy
    io::any_source s = io::file_source(path, {.use_mmap = true});
    CHECK(s.is_zero_copy());
    CHECK(s.prefers_whole_reads());
  }
  {  // a source with only size() and read(): the defaults
    io::any_source s = bare_source{shared_bytes_of("xyz")};
    CHECK(text_of(s.read(1, 2)) == "yz");
    CHECK_FALSE(s.is_zero_copy());
    CHECK_FALSE(s.prefers_whole_reads());
    CHECK(s.name() == "source");
    // Copies share the held source; an any_source is not wrapped again.
    io::any_source copy = s;
    io::any_source again(copy);
    CHECK(again.target<bare_source>() == s.target<bare_source>());
  }
  {  // a source's own prefers_whole_reads() answer is what counts
    counters c;
    io::any_source yes = counting_source(bare_source{shared_bytes_of("ab")}, c, true);
    io::any_source no = counting_source(io::file_source(path), c, false);
    CHECK(yes.prefers_whole_reads());
    CHECK_FALSE(no.prefers_whole_reads());
  }
}

TEST_CASE("read_ranges through an any_source merges ranges exactly as through the source") {
  scratch_dir t;
  const auto path = t.sub("f.bin");
  std::ofstream(path, std::ios::binary) << std::string(10000, 'x');
  const std::vector<io::byte_range> ranges{{0, 10}, {100, 10}, {9000, 10}};
  {
    counters c;  // pread: nearby ranges are one read, the far one another
    io::any_source s = counting_source(io::file_source(path), c, true);
    auto out = io::read_ranges(s, ranges);
    CHECK(out.size() == 3);
    CHECK(c.reads == 2);
  }
  {
    counters c;  // mapped, zero-copy: one read per range
    io::any_source s = counting_source(io::file_source(path, {.use_mmap = true}), c, true);
    auto out = io::read_ranges(s, ranges);
    CHECK(out.size() == 3);
    CHECK(c.reads == 3);
  }
}

TEST_CASE("file_reader<any_source> reads a data file as file_reader<file_source> does") {
  scratch_dir t;
  const auto root = sample_dataset(t);
  for (const auto& frag : ds::dataset::open(root).fragments())
    for (const auto& path : frag.data_files) {
      file::file_reader<io::file_source> local{io::file_source(path)};
      file::file_reader<io::any_source> erased{io::any_source(io::file_source(path))};
      CHECK(erased.num_rows() == local.num_rows());
      CHECK(erased.source().name() == path);
      check_same_batch(local.read(), erased.read());
      check_same_batch(local.read({.indices = std::vector<std::uint64_t>{1, 2, 50}}),
                 erased.read({.indices = std::vector<std::uint64_t>{1, 2, 50}}));
    }
}

TEST_CASE("a dataset opened with a source factory reads every file through it") {
  scratch_dir t;
  const auto root = sample_dataset(t);
  const auto local = ds::dataset::open(root);
  CHECK(local.sources().is_local());

  counters c;
  const auto d = ds::dataset::open(root, std::nullopt, counting_factory(c));
  CHECK_FALSE(d.sources().is_local());
  CHECK(d.version() == local.version());
  CHECK(c.opened_any("/_versions/"));  // the manifest
  CHECK(d.count_rows() == 498);
  check_same_batch(local.to_batch(), d.to_batch());
  for (const auto& f : d.fragments()) {
    for (const auto& p : f.data_files) CHECK(c.opened_path(p));
    REQUIRE(f.deletion_file.has_value());
    CHECK(c.opened_path(*f.deletion_file));
  }
  const std::vector<std::uint64_t> rows{ds::row_address(1, 199), 0, 6, ds::row_address(1, 0)};
  check_same_batch(local.take(rows), d.take(rows));
  CHECK(c.reads > 0);
  CHECK(c.bytes > 0);

  // checkout(), latest() and versions() keep the factory.
  const auto before = c.reads.load();
  const auto v1 = d.checkout(1);
  CHECK_FALSE(v1.sources().is_local());
  CHECK(v1.count_rows() == 300);
  CHECK(v1.to_batch().num_rows() == 300);
  CHECK(c.reads > before);
  CHECK_FALSE(d.latest().sources().is_local());
  CHECK(d.versions().size() == 3);

  // load_latest / load_version with a factory, and a dataset made from a snapshot.
  counters c2;
  auto snap = ds::load_version(root, 2, counting_factory(c2));
  CHECK(c2.opened_any("/_versions/"));
  ds::dataset from_snap(std::move(snap), counting_factory(c2));
  CHECK(from_snap.count_rows() == 500);
  CHECK(ds::load_latest(root, counting_factory(c2))->version() == local.version());
  CHECK_FALSE(ds::load_latest(t.sub("nothing"), counting_factory(c2)).has_value());
  CHECK_THROWS_AS(ds::load_version(root, 9, counting_factory(c2)), invalid_input_error);
}

TEST_CASE("datasets LanceDB wrote read through a factory: deletion files, stable row ids, blob files") {
  {  // Arrow and bitmap deletion files
    const auto root = source_fixture("datasets", "deletions_2.0").string();
    counters c;
    const auto d = ds::dataset::open(root, std::nullopt, counting_factory(c));
    const auto local = ds::dataset::open(root);
    CHECK(d.count_rows() == local.count_rows());
    check_same_batch(local.to_batch(), d.to_batch());
    CHECK(c.opened_any(".arrow"));
    CHECK(c.opened_any(".bin"));
  }
  {  // stable row ids
    const auto root = source_fixture("datasets", "stable_ids_2.0").string();
    counters c;
    const auto d = ds::dataset::open(root, std::nullopt, counting_factory(c));
    const auto local = ds::dataset::open(root);
    check_same_batch(local.to_batch({.with_row_id = true}), d.to_batch({.with_row_id = true}));
    const std::vector<std::uint64_t> ids{0, 9, 12};
    check_same_batch(local.take(ids), d.take(ids));
  }
  {  // blob v2 values in a blob file
    const auto root = source_fixture("structural", "blob_2.2").string();
    counters c;
    const auto d = ds::dataset::open(root, std::nullopt, counting_factory(c));
    const auto local = ds::dataset::open(root);
    check_same_batch(local.to_batch(), d.to_batch());
    CHECK(c.opened_any(".blob"));
    const std::vector<std::uint64_t> rows{4, 5};
    check_same_batch(local.take(rows, {"blob"}), d.take(rows, {"blob"}));
  }
}

TEST_CASE("sources that prefer whole reads get large page buffers in one read, others in read_chunk_size pieces") {
  scratch_dir t;
  const auto root = t.sub("big");
  // Incompressible-ish values: one page buffer well over 64 KiB.
  std::vector<std::int64_t> v(60000);
  std::uint64_t x = 88172645463325252ull;
  for (auto& e : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    e = std::int64_t(x);
  }
  ds::write(root, arrow::make_batch({{"v", arrow::make_array<std::int64_t>(v)}}));
  const std::uint64_t chunk = 16 << 10;
  ds::scan_options o;
  o.reader_options.read_chunk_size = chunk;
  const auto want = ds::dataset::open(root).to_batch();
  {
    counters c;  // like a local file: no splitting
    const auto got = ds::dataset::open(root, std::nullopt, counting_factory(c, true)).to_batch(o);
    check_same_batch(want, got);
    CHECK(c.largest > chunk);
  }
  {
    counters c;  // a remote-like source: reads of at most read_chunk_size (as Lance)
    const auto got = ds::dataset::open(root, std::nullopt, counting_factory(c, false)).to_batch(o);
    check_same_batch(want, got);
    CHECK(c.largest <= chunk);
    CHECK(c.reads > 4);
  }
  // Bad reader options are still refused by the file readers.
  counters c;
  ds::scan_options bad;
  bad.reader_options.read_chunk_size = 0;
  CHECK_THROWS_AS(ds::dataset::open(root, std::nullopt, counting_factory(c, true)).to_batch(bad), invalid_input_error);
}

TEST_CASE("a scan where every read is a request reads the next chunk ahead and plain rows in place: a local scan's rows and batches") {
  scratch_dir t;
  const auto root = t.sub("ahead");
  for (std::int64_t f = 0; f < 3; ++f) {  // three fragments of 1,000 rows
    auto b = table(f * 1000, (f + 1) * 1000);
    std::vector<float> v(8000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(f * 8000 + std::int64_t(i)) * 0.5f;
    auto schema = std::make_shared<arrow::schema>(*b.schema);
    schema->fields.push_back({"vec", arrow::fixed_size_list(arrow::float32(), 8)});
    b.schema = schema;
    b.columns.push_back(arrow::make_fixed_size_list(arrow::make_array<float>(v), 8));
    ds::write_options w;
    w.mode = f ? ds::write_mode::append : ds::write_mode::create;
    if (f != 1) {
      ds::write(root, b, w);
      continue;
    }
    // Written 50 rows at a time with small pages: a page per column every 50 rows, as
    // LanceDB writes a page per column every few thousand.
    w.file_options.data_cache_bytes = 600;
    std::vector<arrow::record_batch> parts;
    for (std::int64_t r = 0; r < 1000; r += 50) {
      arrow::record_batch part{b.schema, {}};
      for (const auto& col : b.columns) part.columns.push_back(arrow::slice(col, r, 50));
      parts.push_back(std::move(part));
    }
    ds::write(root, parts, w);
  }
  ds::delete_where(root, "id % 5 = 1 OR (id >= 1200 AND id < 1900) OR id >= 2990");
  const auto local = ds::dataset::open(root);
  const auto batch_rows = [](ds::scanner sc) {
    std::vector<std::int64_t> n;
    while (auto b = sc.next()) n.push_back(b->num_rows());
    return n;
  };
  struct window {
    std::uint64_t offset;
    std::optional<std::uint64_t> limit;
  };
  for (const std::uint64_t batch : {1, 7, 100, 4096})
    for (const std::uint64_t ahead : {1, 300, 5000, 1 << 20})
      for (const window w : {window{0, std::nullopt}, window{13, 500}, window{1150, 77}, window{1500, std::nullopt}})
        for (const bool ids : {false, true}) {
          CAPTURE(batch);
          CAPTURE(ahead);
          CAPTURE(w.offset);
          CAPTURE(ids);
          ds::scan_options o;
          o.batch_size = batch;
          o.read_ahead_bytes = ahead;
          o.offset = w.offset;
          o.limit = w.limit;
          o.with_row_id = ids;
          o.columns = ids ? std::vector<std::string>{"vec", "id"} : std::vector<std::string>{};
          o.reader_options.read_chunk_size = 4096;
          // Each column is one page here: without a page cache every chunk reads it.
          if (ahead == 300) o.reader_options.page_cache_bytes = 0;
          counters c;
          const auto remote = ds::dataset::open(root, std::nullopt, counting_factory(c, false));
          check_same_batch(local.to_batch(o), remote.to_batch(o));
          CHECK(batch_rows(local.scan(o)) == batch_rows(remote.scan(o)));
          CHECK(c.largest <= 4096);
          // Chunks of 300 bytes or more take several reads, each but the first ahead.
          if (batch == 100 && ahead == 300 && !w.limit) CHECK(c.threads.size() > 1);
        }
  {  // The small pages of strings (not plain rows) a chunk wants are fetched together.
    counters c;
    ds::scan_options o;
    o.columns = {"name"};
    check_same_batch(local.to_batch(o), ds::dataset::open(root, std::nullopt, counting_factory(c, false)).to_batch(o));
    CHECK(c.most_ranges > 4);
  }
  counters c;  // sources like local files are read on the scan's thread only
  ds::scan_options o;
  o.read_ahead_bytes = 300;
  o.reader_options.page_cache_bytes = 0;
  check_same_batch(local.to_batch(o), ds::dataset::open(root, std::nullopt, counting_factory(c, true)).to_batch(o));
  CHECK(c.threads.size() == 1);
}

TEST_CASE("a dataset served from memory reads nothing from the files on disk") {
  scratch_dir t;
  const auto root = sample_dataset(t);
  const auto want = ds::dataset::open(root).to_batch();
  // Load every file, then damage the data files on disk (same sizes).
  auto cache = std::make_shared<std::map<std::string, shared_bytes>>();
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) (*cache)[e.path().lexically_normal().string()] = io::file_source(e.path().string()).read_all();
  for (const auto& e : fs::directory_iterator(fs::path(root) / "data")) {
    const auto n = fs::file_size(e.path());
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << std::string(std::size_t(n), '\0');
  }
  CHECK_THROWS(ds::dataset::open(root).to_batch());
  ds::source_factory from_memory = [cache](const std::string& path) {
    auto it = cache->find(fs::path(path).lexically_normal().string());
    if (it == cache->end()) throw io_error("not cached");
    return io::memory_source(it->second, path);
  };
  const auto d = ds::dataset::open(root, std::nullopt, from_memory);
  check_same_batch(want, d.to_batch());
}

TEST_CASE("errors of a user's source keep their kind and name the file") {
  scratch_dir t;
  const auto root = sample_dataset(t);
  const auto fr = ds::dataset::open(root).fragments();
  const auto data0 = fr.at(0).data_files.at(0);
  const auto deletion0 = *fr.at(0).deletion_file;
  // Fails for paths containing `part`, in one of three ways.
  enum class how { open, read, truncated };
  auto failing = [](std::string part, how h) -> ds::source_factory {
    return [part, h](const std::string& path) -> io::any_source {
      io::any_source real = io::file_source(path);
      if (path.find(part) == std::string::npos) return real;
      if (h == how::open) throw io_error("no such object");
      struct bad {
        io::any_source real;
        how h;
        std::uint64_t size() const { return h == how::truncated ? real.size() / 2 : real.size(); }
        shared_bytes read(std::uint64_t o, std::uint64_t n) const {
          if (h == how::read) throw io_error("connection reset");
          io::check_range(o, n, size(), "object");
          return real.read(o, n);
        }
      };
      return bad{real, h};
    };
  };
  auto scan_all = [&](const ds::source_factory& f) { return ds::dataset::open(root, std::nullopt, f).to_batch(); };

  CHECK_THROWS_WITH_AS(scan_all(failing("/data/", how::open)),
                       has("'" + data0 + "': no such object"), io_error);
  CHECK_THROWS_WITH_AS(scan_all(failing("/data/", how::read)), doctest::Contains("connection reset"), io_error);
  CHECK_THROWS_WITH_AS(scan_all(failing("/data/", how::read)), has(data0), io_error);
  CHECK_THROWS_WITH_AS(scan_all(failing("/data/", how::truncated)), has(data0), corrupt_error);
  CHECK_THROWS_WITH_AS(scan_all(failing("/_deletions/", how::read)), has(deletion0), io_error);
  CHECK_THROWS_WITH_AS(ds::dataset::open(root, std::nullopt, failing("/_deletions/", how::open)).to_batch(),
                       has(deletion0), io_error);
  CHECK_THROWS_WITH_AS(ds::dataset::open(root, std::nullopt, failing("/_versions/", how::open)),
                       doctest::Contains("/_versions/"), io_error);
  CHECK_THROWS_WITH_AS(ds::dataset::open(root, std::nullopt, failing("/_versions/", how::truncated)),
                       doctest::Contains("/_versions/"), corrupt_error);
  const std::vector<std::uint64_t> rows{1};
  CHECK_THROWS_WITH_AS(ds::dataset::open(root, std::nullopt, failing("/data/", how::read)).take(rows),
                       has(data0), io_error);
}
