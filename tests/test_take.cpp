// Random takes from 2.1 / 2.2 files: rows picked by index must equal the same rows cut
// from a full read, and a take from a full-zip page must read only those rows' bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/io/source.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "support/file_bytes.hpp"
#include "support/interop.hpp"
#include "support/random_data.hpp"

using namespace lancet;

namespace {

using lancet::testing::write_file;

// Counts the bytes and reads asked of a memory source.
struct byte_counting_source {
  io::memory_source inner;
  std::shared_ptr<std::atomic<std::uint64_t>> bytes = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<std::atomic<std::uint64_t>> reads = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::uint64_t size() const { return inner.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    *bytes += length;
    ++*reads;
    return inner.read(offset, length);
  }
};
static_assert(io::source<byte_counting_source>);

std::vector<std::uint64_t> random_indices(std::mt19937_64& rng, std::uint64_t rows, std::size_t n) {
  std::vector<std::uint64_t> idx(n);
  for (auto& i : idx) i = rng() % rows;
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Takes `idx` through the reader and checks every column against slices of a full read.
template <class Source>
void check_take(const file::file_reader<Source>& r, const arrow::record_batch& full, const std::vector<std::uint64_t>& idx) {
  const auto got = r.read({{}, std::nullopt, idx});
  REQUIRE(got.columns.size() == full.columns.size());
  for (std::size_t c = 0; c < full.columns.size(); ++c) {
    std::vector<arrow::array_ptr> parts;
    for (auto i : idx) parts.push_back(arrow::slice(full.columns[c], std::int64_t(i), 1));
    const auto want = arrow::concat(parts, full.columns[c]->type);
    CHECK(got.columns[c]->length == std::int64_t(idx.size()));
    const auto diff = arrow::first_difference(*want, *got.columns[c]);
    INFO("column " << full.schema->fields[c].name << " (" << arrow::to_string(*full.columns[c]->type) << ")");
    CHECK_MESSAGE(!diff, diff.value_or(""));
  }
}

template <class Version>
void check_random_takes(const arrow::record_batch& batch, std::uint64_t seed, file::writer_options o = {}) {
  const auto bytes = write_file<Version>({batch}, o);
  file::file_reader<io::memory_source> r{io::memory_source(bytes)};
  const auto full = r.read();
  REQUIRE(full.num_rows() == batch.num_rows());
  std::mt19937_64 rng(seed);
  const auto rows = std::uint64_t(batch.num_rows());
  check_take(r, full, random_indices(rng, rows, 1));
  check_take(r, full, random_indices(rng, rows, 10));
  check_take(r, full, random_indices(rng, rows, 200));                  // runs, repeats, several per page
  check_take(r, full, {0, 1, 2, rows - 3, rows - 2, rows - 1});       // page edges
  std::vector<std::uint64_t> stride;
  for (std::uint64_t i = 0; i < rows; i += 97) stride.push_back(i);
  check_take(r, full, stride);
}

arrow::type_ptr vector_type(int dim = 128) { return arrow::fixed_size_list(arrow::float32(), dim, true); }

// The columns of a 2.1+ file as the tests need them (page positions and layouts).
std::vector<pb::file2::column_metadata> page_columns_of(const shared_bytes& bytes) {
  const auto foot = file::footer::decode(bytes.view().subspan(bytes.size() - 40), bytes.size());
  const auto cmo = file::decode_offset_table(bytes.view().subspan(foot.column_meta_offsets), foot.num_columns, bytes.size(), "cm");
  std::vector<pb::file2::column_metadata> out;
  for (const auto& r : cmo) out.push_back(pb::decode<pb::file2::column_metadata>(bytes.view().subspan(r.position, r.size)));
  return out;
}

file::writer_options one_page() {
  file::writer_options o;
  o.data_cache_bytes = std::uint64_t(256) << 20;
  o.max_page_bytes = std::uint64_t(256) << 20;
  return o;
}

}  // namespace

TEST_CASE_TEMPLATE("take: f32 vectors with null rows and null items", V, file::v2_1, file::v2_2) {
  testing::random_data rd(11);
  auto vec = rd.random_array(vector_type(), 3000, true);
  auto small = rd.random_array(vector_type(3), 3000, true);
  auto batch = arrow::make_batch({{"vec", vec}, {"small", small}});
  check_random_takes<V>(batch, 1);
  check_random_takes<V>(batch, 2, one_page());
  file::writer_options tiny;
  tiny.max_page_bytes = 64 << 10;  // many pages
  check_random_takes<V>(batch, 3, tiny);
}

TEST_CASE_TEMPLATE("take: fixed-width integers and booleans", V, file::v2_1, file::v2_2) {
  testing::random_data rd(12);
  auto batch = arrow::make_batch({{"i32", rd.random_array(arrow::int32(), 5000, true)},
                                  {"i64", rd.random_array(arrow::int64(), 5000, false)},
                                  {"b", rd.random_array(arrow::boolean(), 5000, true)},
                                  {"dec", rd.random_array(arrow::decimal256(50, 6), 5000, true)}});
  check_random_takes<V>(batch, 4);
}

TEST_CASE_TEMPLATE("take: strings and binary, small (mini-block) and large (full-zip)", V, file::v2_1, file::v2_2) {
  std::mt19937_64 rng(13);
  std::vector<std::optional<std::string>> small, large;
  for (int i = 0; i < 2000; ++i) {
    small.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>(std::string(rng() % 20, char('a' + i % 26))));
    std::string big(300 + rng() % 700, '\0');
    for (auto& ch : big) ch = char(rng());
    large.push_back(i % 11 == 5 ? std::nullopt : std::optional<std::string>(big));
  }
  auto batch = arrow::make_batch({{"small", arrow::string_array(small)}, {"large", arrow::large_binary_array(large)}});
  check_random_takes<V>(batch, 5);
  check_random_takes<V>(batch, 6, one_page());
}

TEST_CASE_TEMPLATE("take: nested struct and list columns (random types)", V, file::v2_1, file::v2_2) {
  testing::random_data rd(14);
  for (int k = 0; k < 12; ++k) {
    auto t = rd.random_type(1);
    auto batch = arrow::make_batch({{"x", rd.random_array(t, 1500, true)},
                                    {"lv", rd.random_array(arrow::list(vector_type(16), true), 1500, true)},
                                    {"s", rd.random_array(arrow::struct_({{"a", arrow::int32(), true, {}},
                                                                          {"v", vector_type(32), true, {}}}),
                                                          1500, true)}});
    INFO("type " << arrow::to_string(*t));
    check_random_takes<V>(batch, std::uint64_t(20 + k));
  }
}

TEST_CASE_TEMPLATE("take: a few rows of a large full-zip page read only their bytes", V, file::v2_1, file::v2_2) {
  testing::random_data rd(15);
  const std::int64_t rows = 20000;
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(), rows, false)},
                                  {"blob", [&] {
                                     std::mt19937_64 g(17);
                                     std::vector<std::optional<std::string>> v;
                                     for (std::int64_t i = 0; i < rows; ++i) {
                                       if (i % 10 == 7) { v.emplace_back(); continue; }
                                       std::string s(300 + g() % 100, '\0');
                                       for (auto& ch : s) ch = char(g());
                                       v.push_back(std::move(s));
                                     }
                                     return arrow::large_binary_array(v);
                                   }()}});
  const auto bytes = write_file<V>({batch}, one_page());
  const auto cols = page_columns_of(bytes);
  REQUIRE(cols.size() == 2);
  REQUIRE(cols[0].pages.size() == 1);
  const auto page_bytes = cols[0].pages[0].buffer_sizes.at(0);
  REQUIRE(page_bytes >= std::uint64_t(rows) * 512);

  byte_counting_source src{io::memory_source(bytes)};
  file::file_reader<byte_counting_source> r(src);
  const auto opened = src.bytes->load();
  std::mt19937_64 rng(16);
  const auto idx = random_indices(rng, std::uint64_t(rows), 10);
  auto got = r.read({{"vec"}, std::nullopt, idx});
  const auto took = src.bytes->load() - opened;
  MESSAGE("10 of " << rows << " vectors: " << took << " bytes read, the page holds " << page_bytes);
  CHECK(took <= 10 * 512 + 4096);
  CHECK(got.num_rows() == 10);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto want = arrow::slice(batch.columns[0], std::int64_t(idx[k]), 1);
    CHECK_FALSE(arrow::first_difference(*want, *arrow::slice(got.columns[0], std::int64_t(k), 1)));
  }

  // Variable-width rows through the repetition index: a few entries and the rows.
  const auto before = src.bytes->load();
  got = r.read({{"blob"}, std::nullopt, std::vector<std::uint64_t>{3, 1500, 1999, 2000, 19999}});
  const auto blob_took = src.bytes->load() - before;
  MESSAGE("5 of " << rows << " binary rows: " << blob_took << " bytes read, the page holds "
                  << cols[1].pages[0].buffer_sizes.at(0));
  REQUIRE(cols[1].pages.size() == 1);
  CHECK(cols[1].pages[0].buffer_sizes.at(0) > std::uint64_t(rows) * 250);
  CHECK(blob_took < 5 * (400 + 64));
  std::vector<arrow::array_ptr> parts;
  for (auto i : {3, 1500, 1999, 2000, 19999}) parts.push_back(arrow::slice(batch.columns[1], i, 1));
  CHECK_FALSE(arrow::first_difference(*arrow::concat(parts, batch.columns[1]->type), *got.columns[0]));

  // Mini-block rows: the chunk metadata and the one chunk that holds the row.
  {
    // Over 1 MiB (smaller mini-block pages are read whole: see partial_mini_block_min_bytes).
    std::vector<std::optional<std::string>> words;
    for (int k = 0; k < 160000; ++k)
      words.push_back(k % 9 == 4 ? std::nullopt : std::optional<std::string>(std::to_string(k * 7919)));
    auto ints = arrow::make_batch({{"i", rd.random_array(arrow::int64(), 160000, true)},
                                   {"w", arrow::string_array(words)}});
    const auto ib = write_file<V>({ints}, one_page());
    const auto icols = page_columns_of(ib);
    REQUIRE(icols.at(0).pages.size() == 1);
    std::uint64_t page_total = 0;
    for (auto b : icols[0].pages[0].buffer_sizes) page_total += b;
    byte_counting_source isrc{io::memory_source(ib)};
    file::file_reader<byte_counting_source> ir(isrc);
    const auto full = ir.read();
    const auto opened_i = isrc.bytes->load();
    (void)ir.read({{"i"}, std::nullopt, std::vector<std::uint64_t>{12345}});
    const auto took_i = isrc.bytes->load() - opened_i;
    std::mt19937_64 g(19);
    check_take(ir, full, {12345});
    check_take(ir, full, random_indices(g, 160000, 40));
    check_take(ir, full, {0, 4096, 159999});
    CHECK(page_total > (std::uint64_t(1) << 20));
    MESSAGE("1 of 160000 int64 rows: " << took_i << " bytes read, the page holds " << page_total);
    CHECK(took_i * 4 < page_total);
  }

  // Under 1 MiB: a take of a few rows still reads only their chunks (a one-row take of
  // a 0.3 MB page read it whole); many runs read the page whole, once.
  {
    auto small = arrow::make_batch({{"i", rd.random_array(arrow::int64(), 40000, false)}});
    const auto sb = write_file<V>({small}, one_page());
    const auto scols = page_columns_of(sb);
    REQUIRE(scols.at(0).pages.size() == 1);
    std::uint64_t page_total = 0;
    for (auto b : scols[0].pages[0].buffer_sizes) page_total += b;
    REQUIRE(page_total < encoding::detail::partial_mini_block_min_bytes);
    byte_counting_source ssrc{io::memory_source(sb)};
    file::file_reader<byte_counting_source> sr(ssrc);
    const auto full = sr.read();
    auto before = ssrc.bytes->load();
    (void)sr.read({{"i"}, std::nullopt, std::vector<std::uint64_t>{777, 30000}});
    const auto few = ssrc.bytes->load() - before;
    MESSAGE("2 of 40000 int64 rows: " << few << " bytes read, the page holds " << page_total);
    CHECK(few * 8 < page_total);
    std::mt19937_64 g(23);
    check_take(sr, full, {777, 30000});
    check_take(sr, full, {0, 39999});
    const auto many_rows = random_indices(g, 40000, 100);
    byte_counting_source fresh_src{io::memory_source(sb)};
    file::file_reader<byte_counting_source> fresh(fresh_src);  // no page cached by a full read
    before = fresh_src.bytes->load();
    const auto reads = fresh_src.reads->load();
    (void)fresh.read({{"i"}, std::nullopt, many_rows});
    CHECK(fresh_src.bytes->load() - before >= page_total - 64);  // the page, whole ...
    CHECK(fresh_src.reads->load() - reads < 20);                // ... not two reads per run
    check_take(fresh, full, many_rows);
  }

  // A large range still fetches the page whole (one read), not row by row.
  const auto reads_before = src.reads->load();
  auto range = r.read({{"vec"}, std::pair<std::uint64_t, std::uint64_t>{100, 15000}, std::nullopt});
  CHECK(range.num_rows() == 14900);
  CHECK(src.reads->load() - reads_before <= 2);
}

TEST_CASE_TEMPLATE("take: a repetition index pointing outside the page is corrupt_error", V, file::v2_1, file::v2_2) {
  std::vector<std::optional<std::string>> v;
  for (int i = 0; i < 400; ++i) v.push_back(std::string(300 + i, char(i)));
  auto batch = arrow::make_batch({{"blob", arrow::large_binary_array(v)}});
  const auto bytes = write_file<V>({batch});
  const auto cols = page_columns_of(bytes);
  REQUIRE(cols.size() == 1);
  const auto& page = cols[0].pages.at(0);
  REQUIRE(page.buffer_sizes.size() >= 2);
  const auto entries = page.length + 1;
  REQUIRE(page.buffer_sizes[1] % entries == 0);
  const auto w = page.buffer_sizes[1] / entries;
  REQUIRE((w == 4 || w == 8));
  aligned_buffer copy;
  copy.append(bytes.view());
  // Row 11's end (entry 12) far past the values.
  auto* entry = copy.data() + page.buffer_offsets[1] + 12 * w;
  if (w == 4) le::store<std::uint32_t>(entry, 0x7FFFFFF0u);
  else le::store<std::uint64_t>(entry, std::uint64_t(1) << 40);
  file::file_reader<io::memory_source> r{io::memory_source(shared_bytes(std::move(copy)))};
  try {
    (void)r.read({{}, std::nullopt, std::vector<std::uint64_t>{11}});
    FAIL("no error");
  } catch (const corrupt_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("column 0 page 0") != std::string::npos);
    CHECK(msg.find("repetition index") != std::string::npos);
  }
  // Rows the bad entry does not touch still read.
  auto ok = r.read({{}, std::nullopt, std::vector<std::uint64_t>{3}});
  CHECK_FALSE(arrow::first_difference(*arrow::slice(batch.columns[0], 3, 1), *ok.columns[0]));
}

TEST_CASE("take: dataset takes and scans carry file reader options to their files") {
  testing::temp_dir dir("take");
  const auto root = (dir.path() / "ds").string();
  testing::random_data rd(18);
  const std::int64_t rows = 3000;
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(), rows, true)},
                                  {"id", rd.random_array(arrow::int64(), rows, false)}});
  dataset::write_options wo;
  wo.max_rows_per_file = 1000;
  wo.storage_version = file::format_version::v2_1;
  dataset::write(root, batch, wo);
  const auto ds = dataset::dataset::open(root);
  const auto full = ds.to_batch();
  REQUIRE(full.num_rows() == rows);

  // Row ids across the three fragments (address = fragment << 32 | offset), unsorted, repeated.
  std::vector<std::uint64_t> ids{dataset::row_address(2, 999), dataset::row_address(0, 5), dataset::row_address(1, 0),
                                 dataset::row_address(0, 5), dataset::row_address(1, 517)};
  const std::vector<std::int64_t> at{2999, 5, 1000, 5, 1517};
  file::reader_options ro;
  ro.page_cache_bytes = 0;
  ro.read_chunk_size = 4096;
  const auto got = ds.take(ids, {}, ro);
  REQUIRE(got.num_rows() == std::int64_t(ids.size()));
  for (std::size_t c = 0; c < 2; ++c) {
    std::vector<arrow::array_ptr> parts;
    for (auto i : at) parts.push_back(arrow::slice(full.columns[c], i, 1));
    CHECK_FALSE(arrow::first_difference(*arrow::concat(parts, full.columns[c]->type), *got.columns[c]));
  }
  dataset::scan_options so;
  so.reader_options = ro;
  const auto scanned = ds.to_batch(so);
  for (std::size_t c = 0; c < 2; ++c) CHECK_FALSE(arrow::first_difference(*full.columns[c], *scanned.columns[c]));

  // Invalid options reach the file readers (a zero read chunk is refused there).
  file::reader_options bad;
  bad.read_chunk_size = 0;
  CHECK_THROWS_AS(ds.take(ids, {}, bad), invalid_input_error);
  so.reader_options = bad;
  CHECK_THROWS_AS(ds.to_batch(so), invalid_input_error);
}

// ---- Lance 2.0 files: pages of flat values (Nullable, FixedSizeList, Binary over them)
// are read row by row; other pages (dictionary strings, lists) are decoded whole.

TEST_CASE("take: 2.0 files, every column type, one page and many pages") {
  testing::random_data rd(31);
  const std::int64_t rows = 3000;
  std::mt19937_64 g(32);
  std::vector<std::optional<std::string>> words, blobs;
  for (std::int64_t i = 0; i < rows; ++i) {
    words.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>(std::string(g() % 20, char('a' + i % 26))));
    std::string big(50 + g() % 400, '\0');
    for (auto& ch : big) ch = char(g());
    blobs.push_back(i % 11 == 5 ? std::nullopt : std::optional<std::string>(big));
  }
  auto batch = arrow::make_batch(
      {{"vec", rd.random_array(vector_type(), rows, true)},
       {"vec_nonnull", rd.random_array(vector_type(8), rows, false)},
       {"i64", rd.random_array(arrow::int64(), rows, false)},
       {"i32", rd.random_array(arrow::int32(), rows, true)},
       {"b", rd.random_array(arrow::boolean(), rows, true)},
       {"words", arrow::string_array(words)},
       {"blob", arrow::large_binary_array(blobs)},
       // 2.0 files hold no struct validity: null members only.
       {"s", rd.random_array(arrow::struct_({{"a", arrow::int32(), true, {}}, {"v", vector_type(4), true, {}}}), rows, false)},
       {"l", rd.random_array(arrow::list(arrow::int64(), true), rows, true)}});
  check_random_takes<file::v2_0>(batch, 1);
  check_random_takes<file::v2_0>(batch, 2, one_page());
  file::writer_options tiny;
  tiny.data_cache_bytes = 32 << 10;
  tiny.max_page_bytes = 32 << 10;  // many pages per column
  const auto bytes = write_file<file::v2_0>({batch}, tiny);
  REQUIRE(page_columns_of(bytes).at(0).pages.size() > 10);
  check_random_takes<file::v2_0>(batch, 3, tiny);
}

TEST_CASE("take: 2.0 random column types") {
  testing::random_data rd(33);
  int checked = 0;
  for (int k = 0; k < 16; ++k) {
    auto t = rd.random_type(1);
    auto batch = arrow::make_batch({{"x", rd.random_array(t, 1500, true)}});
    INFO("type " << arrow::to_string(*t));
    file::writer_options tiny;
    tiny.data_cache_bytes = 8 << 10;
    tiny.max_page_bytes = 8 << 10;
    try {
      (void)write_file<file::v2_0>({batch}, tiny);
    } catch (const invalid_input_error& e) {
      // Null structs: 2.0 cannot hold them (the writer says so); not a take question.
      REQUIRE(std::string(e.what()).find("struct validity") != std::string::npos);
      continue;
    }
    check_random_takes<file::v2_0>(batch, std::uint64_t(40 + k), tiny);
    ++checked;
  }
  CHECK(checked >= 8);
}

namespace {
// A source that reads many ranges at once (as io::file_source does with io_uring):
// counts its read() calls and its read_into() calls.
struct batching_source {
  io::memory_source inner;
  std::shared_ptr<std::atomic<std::uint64_t>> reads = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<std::atomic<std::uint64_t>> batches = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<std::atomic<std::uint64_t>> batched_ranges = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::uint64_t size() const { return inner.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    ++*reads;
    return inner.read(offset, length);
  }
  void read_into(std::span<const io::byte_range> ranges, std::uint8_t* out) const {
    ++*batches;
    *batched_ranges += ranges.size();
    for (const auto& r : ranges) {
      const auto b = inner.read(r.offset, r.length);
      if (b.size()) std::memcpy(out, b.data(), b.size());
      out += r.length;
    }
  }
};
static_assert(io::source<batching_source>);
}  // namespace

TEST_CASE("take: the scattered rows of a take come in one batched read where the source offers it") {
  testing::random_data rd(51);
  const std::int64_t rows = 20000;
  std::mt19937_64 g(52);
  std::vector<std::optional<std::string>> blobs;
  for (std::int64_t i = 0; i < rows; ++i) {  // incompressible: a full-zip page in 2.2
    std::string b(300 + g() % 100, '\0');
    for (auto& ch : b) ch = char(g());
    blobs.push_back(std::move(b));
  }
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(), rows, false)},
                                  {"blob", arrow::large_binary_array(blobs)}});
  const std::vector<std::uint64_t> idx = random_indices(g, std::uint64_t(rows), 40);
  for (const auto v : {file::format_version::v2_0, file::format_version::v2_2}) {
    CAPTURE(int(v));
    const auto bytes = v == file::format_version::v2_0 ? write_file<file::v2_0>({batch}, one_page())
                                                      : write_file<file::v2_2>({batch}, one_page());
    const auto full = file::file_reader<io::memory_source>{io::memory_source(bytes)}.read();
    for (const char* name : {"vec", "blob"}) {
      CAPTURE(name);
      batching_source src{io::memory_source(bytes)};
      file::file_reader<batching_source> r(src);
      const auto reads = src.reads->load();
      const auto got = r.read({{name}, std::nullopt, idx});
      MESSAGE(idx.size() << " rows of '" << std::string(name) << "': " << src.reads->load() - reads << " reads, " << src.batches->load()
                         << " batched reads of " << src.batched_ranges->load() << " ranges");
      CHECK(src.batches->load() >= 1);
      CHECK(src.batches->load() <= 2);            // the rows (and, for blobs in 2.2, their index entries)
      CHECK(src.batched_ranges->load() >= 30);    // most of the 40 rows lie apart
      CHECK(src.reads->load() - reads <= 4);      // not one read per row
      const std::size_t c = std::string(name) == "vec" ? 0 : 1;
      for (std::size_t k = 0; k < idx.size(); ++k)
        CHECK_FALSE(arrow::first_difference(*arrow::slice(full.columns[c], std::int64_t(idx[k]), 1),
                                            *arrow::slice(got.columns[0], std::int64_t(k), 1)));
    }
  }
}

TEST_CASE_TEMPLATE("take: scattered rows of mini-block pages: their chunks in one batched read, each decoded once",
                   V, file::v2_1, file::v2_2) {
  // One page per column, each over the size from which a few rows read only their
  // chunks: nullable int64, short strings with nulls, a dictionary-encoded string, bools.
  const std::int64_t rows = 200000;
  testing::random_data rd(61);
  std::mt19937_64 g(62);
  std::vector<std::optional<std::string>> words, labels;
  for (std::int64_t k = 0; k < rows; ++k) {
    words.push_back(k % 11 == 5 ? std::nullopt : std::optional<std::string>(std::to_string(k * 7919)));
    labels.push_back(k % 13 == 2 ? std::nullopt : std::optional<std::string>("label-" + std::to_string(g() % 5)));
  }
  auto batch = arrow::make_batch({{"i", rd.random_array(arrow::int64(), rows, true)},
                                  {"w", arrow::string_array(words)},
                                  {"label", arrow::string_array(labels)},
                                  {"b", rd.random_array(arrow::boolean(), rows, true)}});
  const auto bytes = write_file<V>({batch}, one_page());
  const auto cols = page_columns_of(bytes);
  const auto full = file::file_reader<io::memory_source>{io::memory_source(bytes)}.read();
  // Scattered rows, with neighbours sharing a chunk (4 and 5, 100000-100002) and a run
  // (150000-150009), and the page's first and last rows.
  std::vector<std::uint64_t> idx = random_indices(g, std::uint64_t(rows), 20);
  for (std::uint64_t i : {0, 4, 5, 100000, 100001, 100002, 199999}) idx.push_back(i);
  for (std::uint64_t i = 150000; i < 150010; ++i) idx.push_back(i);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  for (std::size_t c = 0; c < batch.columns.size(); ++c) {
    const std::string name = batch.schema->fields[c].name;
    CAPTURE(name);
    REQUIRE(cols.at(c).pages.size() == 1);
    batching_source src{io::memory_source(bytes)};
    file::file_reader<batching_source> r(src);
    const auto reads = src.reads->load();
    const auto got = r.read({{name}, std::nullopt, idx});
    MESSAGE(idx.size() << " rows of '" << name << "': " << src.reads->load() - reads << " reads, " << src.batches->load()
                       << " batched reads of " << src.batched_ranges->load() << " ranges");
    std::uint64_t page_bytes = 0;
    for (auto n : cols[c].pages[0].buffer_sizes) page_bytes += n;
    if (page_bytes >= encoding::detail::partial_mini_block_few_runs_min_bytes) {
      CHECK(src.batches->load() == 1);                 // every chunk in one request ...
      CHECK(src.batched_ranges->load() >= 10);         // ... of ranges apart
      CHECK(src.batched_ranges->load() < idx.size());  // neighbours share their chunk
      CHECK(src.reads->load() - reads <= 3);           // and the chunk metadata (and dictionary)
    } else {
      CHECK(src.batches->load() == 0);  // a small page (the bools): read whole
    }
    std::vector<arrow::array_ptr> parts;
    for (auto i : idx) parts.push_back(arrow::slice(full.columns[c], std::int64_t(i), 1));
    const auto want = arrow::concat(parts, full.columns[c]->type);
    const auto diff = arrow::first_difference(*want, *got.columns[0]);
    CHECK_MESSAGE(!diff, diff.value_or(""));
  }
}

TEST_CASE_TEMPLATE("take: plain fixed-width rows of many pages come in one batched read of exactly their bytes", V,
                   file::v2_1, file::v2_2) {
  testing::random_data rd(61);
  const std::int64_t rows = 6000;
  // Items not nullable: random vectors of nullable items hold null items, and so
  // per-value validity bytes.
  auto batch = arrow::make_batch({{"vec", rd.random_array(arrow::fixed_size_list(arrow::float32(), 128, false), rows, false)},
                                  {"with_nulls", rd.random_array(vector_type(), rows, true)}});
  file::writer_options o;
  o.data_cache_bytes = 512 << 10;  // a page at every 512 rows of 512 bytes
  o.rows_per_group = 256;
  const auto bytes = write_file<V>({batch}, o);
  const auto cols = page_columns_of(bytes);
  REQUIRE(cols.size() == 2);
  REQUIRE(cols[0].pages.size() >= 8);
  const auto full = file::file_reader<io::memory_source>{io::memory_source(bytes)}.read();
  // Single rows in many pages, a run crossing page boundaries, a repeated row, the ends.
  std::uint64_t first_page_rows = cols[0].pages[0].length;
  std::vector<std::uint64_t> idx = {0, 7, first_page_rows - 2, first_page_rows - 1, first_page_rows, first_page_rows + 1,
                                    2500, 2500, 4100, std::uint64_t(rows) - 1};
  std::sort(idx.begin(), idx.end());
  batching_source src{io::memory_source(bytes)};
  file::file_reader<batching_source> r(src);
  const auto reads = src.reads->load();
  const auto got = r.read({{"vec"}, std::nullopt, idx});
  CHECK(src.reads->load() == reads);  // no page or page part read on its own
  CHECK(src.batches->load() == 1);
  CHECK(src.batched_ranges->load() == 7);  // 0, 7, the run of four (two pages), 2500 (read once), 4100, the last
  REQUIRE(got.num_rows() == std::int64_t(idx.size()));
  CHECK(got.columns[0]->count_nulls() == 0);
  for (std::size_t k = 0; k < idx.size(); ++k)
    CHECK_FALSE(arrow::first_difference(*arrow::slice(full.columns[0], std::int64_t(idx[k]), 1),
                                        *arrow::slice(got.columns[0], std::int64_t(k), 1)));
  // A column with null vectors has levels: it is decoded from its pages as before.
  check_take(r, full, idx);
}

TEST_CASE("take: a few rows of a large 2.0 page read only their bytes") {
  testing::random_data rd(34);
  const std::int64_t rows = 20000;
  std::mt19937_64 g(35);
  std::vector<std::optional<std::string>> blobs;
  for (std::int64_t i = 0; i < rows; ++i) {
    if (i % 10 == 7) { blobs.emplace_back(); continue; }
    std::string s(300 + g() % 100, '\0');
    for (auto& ch : s) ch = char(g());
    blobs.push_back(std::move(s));
  }
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(), rows, false)},
                                  {"nvec", rd.random_array(vector_type(), rows, true)},
                                  {"blob", arrow::large_binary_array(blobs)}});
  const auto bytes = write_file<file::v2_0>({batch}, one_page());
  const auto cols = page_columns_of(bytes);
  REQUIRE(cols.size() == 3);
  for (const auto& c : cols) REQUIRE(c.pages.size() == 1);
  // The items' validity bitmap and the values.
  REQUIRE(cols[0].pages[0].buffer_sizes.size() == 2);
  REQUIRE(cols[0].pages[0].buffer_sizes.at(1) >= std::uint64_t(rows) * 512);

  byte_counting_source src{io::memory_source(bytes)};
  file::file_reader<byte_counting_source> r(src);
  const auto full = file::file_reader<io::memory_source>{io::memory_source(bytes)}.read();
  const std::vector<std::uint64_t> idx{0, 1, 7, 4242, 9999, 10000, 17777, 19999};
  for (std::size_t c = 0; c < 3; ++c) {
    const auto name = batch.schema->fields[c].name;
    const auto before = src.bytes->load();
    const auto reads = src.reads->load();
    const auto got = r.read({{name}, std::nullopt, idx});
    const auto took = src.bytes->load() - before;
    std::uint64_t page_total = 0;
    for (auto b : cols[c].pages[0].buffer_sizes) page_total += b;
    MESSAGE(idx.size() << " of " << rows << " rows of '" << name << "': " << took << " bytes in "
                       << src.reads->load() - reads << " reads, the page holds " << page_total);
    // Rows 0, 1 and 7 share a read, 9999 and 10000 too; validity bitmaps of 2.5 KB are
    // near enough to be read whole; binary rows read their offsets, then their bytes.
    CHECK(took <= 16 * 1024);
    CHECK(page_total >= 6u << 20);
    std::vector<arrow::array_ptr> parts;
    for (auto i : idx) parts.push_back(arrow::slice(full.columns[c], std::int64_t(i), 1));
    const auto diff = arrow::first_difference(*arrow::concat(parts, full.columns[c]->type), *got.columns[0]);
    CHECK_MESSAGE(!diff, name << ": " << diff.value_or(""));
  }
}

TEST_CASE("take: a 2.0 page whose buffer is shorter than its rows is corrupt_error") {
  testing::random_data rd(36);
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(16), 500, false)}});
  const auto bytes = write_file<file::v2_0>({batch});
  file::file_reader<io::memory_source> good{io::memory_source(bytes)};
  // The same file with the page's buffer size halved in the column metadata.
  auto cols = page_columns_of(bytes);
  REQUIRE(cols.size() == 1);
  auto& page = cols[0].pages.at(0);
  REQUIRE(page.buffer_sizes.size() == 2);  // the items' validity and values
  const auto foot = file::footer::decode(bytes.view().subspan(bytes.size() - 40), bytes.size());
  const auto cmo = file::decode_offset_table(bytes.view().subspan(foot.column_meta_offsets), 1, bytes.size(), "cm");
  const auto original = pb::encode(cols[0]);
  page.buffer_sizes[1] -= 64;  // one row short
  const auto shrunk = pb::encode(cols[0]);
  REQUIRE(shrunk.size() == original.size());  // a varint of the same width: the file's layout holds
  aligned_buffer copy;
  copy.append(bytes.view());
  std::memcpy(copy.data() + cmo[0].position, shrunk.data(), shrunk.size());
  file::file_reader<io::memory_source> bad{io::memory_source(shared_bytes(std::move(copy)))};
  CHECK(good.read({{}, std::nullopt, std::vector<std::uint64_t>{499}}).num_rows() == 1);
  try {
    (void)bad.read({{}, std::nullopt, std::vector<std::uint64_t>{499}});
    FAIL("no error");
  } catch (const corrupt_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("column 0 page 0") != std::string::npos);
    CHECK(msg.find("needed") != std::string::npos);
  }
}

namespace {
// a and b are the same array, buffer for buffer (not only equal values).
void check_identical(const arrow::array_data& a, const arrow::array_data& b, const std::string& where) {
  INFO(where);
  REQUIRE(a.length == b.length);
  CHECK(a.offset == b.offset);
  CHECK(a.null_count == b.null_count);
  REQUIRE(a.buffers.size() == b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    INFO("buffer " << i);
    REQUIRE(a.buffers[i].size() == b.buffers[i].size());
    if (a.buffers[i].size() != 0)  // memcmp's pointers must not be null, even for 0 bytes
      CHECK(std::memcmp(a.buffers[i].data(), b.buffers[i].data(), a.buffers[i].size()) == 0);
    CHECK(bool(a.buffers[i]) == bool(b.buffers[i]));
  }
  REQUIRE(a.children.size() == b.children.size());
  for (std::size_t i = 0; i < a.children.size(); ++i)
    check_identical(*a.children[i], *b.children[i], where + "/child " + std::to_string(i));
}
}  // namespace

TEST_CASE("take: take_rows builds exactly what concat of one-row slices builds") {
  testing::random_data rd(41);
  std::mt19937_64 g(42);
  std::vector<arrow::type_ptr> types{arrow::int32(), arrow::boolean(), arrow::utf8(), arrow::large_binary(),
                                     vector_type(8), arrow::list(arrow::int64(), true), arrow::null_type()};
  for (int k = 0; k < 30; ++k) types.push_back(rd.random_type(1));
  for (const auto& t : types) {
    for (bool nullable : {false, true}) {
      const auto a = rd.random_sliced_array(t, 300, nullable);
      for (int round = 0; round < 3; ++round) {
        std::vector<std::int64_t> idx;
        const std::size_t n = round == 0 ? 1 : round == 1 ? 50 : 400;
        for (std::size_t i = 0; i < n; ++i) idx.push_back(std::int64_t(g() % 300));
        if (round == 1) std::sort(idx.begin(), idx.end());  // runs, repeats
        std::vector<arrow::array_ptr> parts;
        for (auto i : idx) parts.push_back(arrow::slice(a, i, 1));
        const auto want = arrow::concat(parts, t);
        const auto got = arrow::take_rows(a, idx, t);
        check_identical(*want, *got, arrow::to_string(*t) + (nullable ? " nullable" : ""));
      }
    }
  }
}

TEST_CASE("take: a dataset's takes from several threads, repeated, match a scan (data-file readers kept open)") {
  testing::temp_dir dir("take");
  testing::random_data rd(43);
  const std::int64_t rows = 4000;
  auto batch = arrow::make_batch({{"vec", rd.random_array(vector_type(16), rows, true)},
                                  {"s", rd.random_array(arrow::utf8(), rows, true)},
                                  {"id", rd.random_array(arrow::int64(), rows, false)}});
  for (auto v : {file::format_version::v2_0, file::format_version::v2_2}) {
    const auto root = (dir.path() / (v == file::format_version::v2_0 ? "ds20" : "ds22")).string();
    dataset::write_options wo;
    wo.max_rows_per_file = 1000;
    wo.storage_version = v;
    dataset::write(root, batch, wo);
    const auto ds = dataset::dataset::open(root);
    const auto full = ds.to_batch();
    REQUIRE(full.num_rows() == rows);
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&, t] {
        try {
          std::mt19937_64 g(std::uint64_t(50 + t));
          for (int round = 0; round < 40; ++round) {
            std::vector<std::uint64_t> ids;
            std::vector<std::int64_t> at;
            const std::size_t n = 1 + g() % 60;
            for (std::size_t i = 0; i < n; ++i) {
              const auto r = std::int64_t(g() % std::uint64_t(rows));
              at.push_back(r);
              ids.push_back(dataset::row_address(std::uint64_t(r / 1000), std::uint64_t(r % 1000)));
            }
            if (round % 2) std::sort(at.begin(), at.end()), std::sort(ids.begin(), ids.end());
            const auto got = ds.take(ids);
            for (std::size_t c = 0; c < full.columns.size(); ++c) {
              std::vector<arrow::array_ptr> parts;
              for (auto i : at) parts.push_back(arrow::slice(full.columns[c], i, 1));
              if (arrow::first_difference(*arrow::concat(parts, full.columns[c]->type), *got.columns[c])) ++bad;
            }
          }
        } catch (...) {
          ++bad;
        }
      });
    for (auto& th : ts) th.join();
    CHECK(bad == 0);
  }
}
