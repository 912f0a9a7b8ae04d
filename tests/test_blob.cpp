// Blob columns (encoding/structural/blob.hpp): blob v2 descriptions Lance 12 writes at 2.2,
// read from a fixture LanceDB wrote (tests/fixtures/structural/blob_2.2, made by
//   node tests/interop/blob_write.mjs DIR 2.2 --fragments 1 --sizes '[0,null,10,1000,65537,5]'
// : row g holds sizes[g] bytes (k * 7 + g) & 255), resolved to bytes, and every way a
// damaged description, row or blob file is refused.
#include <doctest/doctest.h>

#include <boost/asio/thread_pool.hpp>

#include <filesystem>
#include <fstream>
#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/cleanup.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/encoding/structural/blob.hpp>
#include <lancet/encoding/structural/blob_files.hpp>
#include <map>
#include <set>
#include <tuple>
#include <lancet/file/reader.hpp>
#include <lancet/file/writer.hpp>
#include "lancet/file/with_version.hpp"
#include <lancet/io/file_source.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/io/source.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/blob_values.hpp"
#include "support/files.hpp"
#include "support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace v21 = lancet::encoding::structural;

namespace {

using lancet::testing::blob_value;
using lancet::testing::files_under;

const fs::path blob_fixture = fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "structural" / "blob_2.2";
const std::vector<std::optional<std::size_t>> fixture_sizes = {0, std::nullopt, 10, 1000, 65537, 5};

fs::path fixture_data_file() {
  for (const auto& e : fs::directory_iterator(blob_fixture / "data"))
    if (e.path().extension() == ".lance") return e.path();
  FAIL("no data file in the fixture");
  return {};
}

arrow::array_ptr expected_values(std::size_t begin, std::size_t end) {
  std::vector<std::optional<std::string>> vals;
  for (std::size_t g = begin; g < end; ++g)
    vals.push_back(fixture_sizes[g] ? std::optional(blob_value(*fixture_sizes[g], g)) : std::nullopt);
  return arrow::large_binary_array(vals);
}

shared_bytes file_bytes(const fs::path& p) { return io::file_source(p.string()).read_all(); }

// A description array built by hand.
arrow::array_ptr descriptions(const std::vector<std::optional<v21::blob_description>>& ds) {
  std::vector<std::optional<std::uint8_t>> kind;
  std::vector<std::optional<std::uint64_t>> pos, size;
  std::vector<std::optional<std::uint32_t>> id;
  std::vector<std::optional<std::string>> uri;
  std::vector<bool> valid;
  for (const auto& d : ds) {
    const auto b = d.value_or(v21::blob_description{});
    kind.push_back(std::uint8_t(b.kind));
    pos.push_back(b.position);
    size.push_back(b.size);
    id.push_back(b.blob_id);
    uri.push_back(b.uri);
    valid.push_back(d.has_value());
  }
  return arrow::make_struct({{"kind", arrow::uint8(), false, {}},
                             {"position", arrow::uint64(), false, {}},
                             {"size", arrow::uint64(), false, {}},
                             {"blob_id", arrow::uint32(), false, {}},
                             {"blob_uri", arrow::utf8(), false, {}}},
                            {arrow::make_array<std::uint8_t>(kind), arrow::make_array<std::uint64_t>(pos),
                             arrow::make_array<std::uint64_t>(size), arrow::make_array<std::uint32_t>(id),
                             arrow::string_array(uri)},
                            valid);
}

// A store over memory: inline bytes are `data`, blob file i is blobs[i].
v21::blob_store memory_store(std::string data, std::map<std::uint32_t, std::string> blobs) {
  auto read = [](const std::string& s, std::uint64_t pos, std::uint64_t size, const std::string& what) {
    if (pos > s.size() || size > s.size() - pos) throw corrupt_error(what + " range out of bounds");
    return shared_bytes::copy_of(bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()) + pos, std::size_t(size)));
  };
  v21::blob_store st;
  st.read_data_file = [=](std::uint64_t p, std::uint64_t n) { return read(data, p, n, "data"); };
  st.read_blob_file = [=](std::uint32_t i, std::uint64_t p, std::uint64_t n) {
    auto it = blobs.find(i);
    if (it == blobs.end()) throw corrupt_error("no blob file " + std::to_string(i));
    return read(it->second, p, n, "blob");
  };
  return st;
}

}  // namespace

TEST_CASE("blob file names: blob_id's 32 bits, least significant first") {
  CHECK(v21::blob_file_name(1) == "10000000000000000000000000000000.blob");
  CHECK(v21::blob_file_name(4) == "00100000000000000000000000000000.blob");
  CHECK(v21::blob_file_name(0x80000003u) == "11000000000000000000000000000001.blob");
  CHECK(v21::blob_file_path("/d/data/abc.lance", 2) == fs::path("/d/data/abc/01000000000000000000000000000000.blob"));
}

TEST_CASE("blob v2 data file (LanceDB, 2.2): descriptions as Lance's scan shows them, values through blob files") {
  const auto path = fixture_data_file();
  file::file_reader<io::file_source> r{io::file_source(path.string())};
  REQUIRE(r.num_rows() == 6);
  // The data file's schema: the description struct, its members stored with id -1.
  const auto& bf = r.arrow_schema().fields.at(1);
  CHECK(v21::is_blob_v2_descriptions(*bf.type));
  auto d = r.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0);
  // LanceDB 0.39's query returned exactly these (kind, position, size, blob_id, blob_uri).
  const std::vector<std::optional<v21::blob_description>> want = {
      v21::blob_description{v21::blob_kind::inline_data, 0, 0, 0, ""}, std::nullopt,
      v21::blob_description{v21::blob_kind::inline_data, 0, 10, 0, ""},
      v21::blob_description{v21::blob_kind::inline_data, 64, 1000, 0, ""},
      v21::blob_description{v21::blob_kind::packed, 0, 65537, 1, ""},
      v21::blob_description{v21::blob_kind::inline_data, 1088, 5, 0, ""}};
  CHECK(v21::blob_descriptions(*d, "blob") == want);
  CHECK_FALSE(arrow::first_difference(expected_values(0, 6), v21::read_blob_values(r, path, "blob", 0, 6)));
  CHECK_FALSE(arrow::first_difference(expected_values(2, 5), v21::read_blob_values(r, path, "blob", 2, 5)));
  // A slice of descriptions resolves the same rows.
  CHECK_FALSE(arrow::first_difference(expected_values(3, 5),
                                      v21::materialize_blobs(*arrow::slice(d, 3, 2), v21::local_blob_store(path), "blob")));
  // Other columns are refused by name.
  CHECK_THROWS_AS(v21::read_blob_values(r, path, "id", 0, 6), invalid_input_error);
}

TEST_CASE("blob v2 dataset (LanceDB, 2.2): a scan returns struct<data, uri> with the bytes") {
  auto ds = dataset::dataset::open(blob_fixture.string());
  auto b = ds.to_batch();
  const auto& col = b.columns.at(1);
  REQUIRE(col->type->id == arrow::type_id::struct_);
  CHECK(col->count_nulls() == 1);
  CHECK_FALSE(col->is_valid(1));
  CHECK_FALSE(arrow::first_difference(expected_values(0, 6), col->children.at(0)));
  CHECK(col->children.at(1)->count_nulls() == 6);  // no external URIs
  auto t = ds.take({4, 5}, {"blob"});
  CHECK_FALSE(arrow::first_difference(expected_values(4, 6), t.columns.at(0)->children.at(0)));
}

TEST_CASE("blob v2: damaged descriptions, rows and blob files are refused") {
  const auto path = fixture_data_file();
  const auto bytes = file_bytes(path);
  file::file_reader<io::file_source> r{io::file_source(path.string())};
  const auto& page = r.column(1).metadata.pages.at(0);
  const auto zipped_at = page.buffer_offsets.at(0);
  // Full-zip rows: [control byte][u32 row length 25][kind][position][size][blob_id][u32 uri length].
  auto patched = [&](std::uint64_t at, std::vector<std::uint8_t> b) {
    aligned_buffer buf;
    buf.append(bytes.view());
    std::memcpy(buf.data() + at, b.data(), b.size());
    return file::file_reader<io::memory_source>{io::memory_source(shared_bytes(std::move(buf)))};
  };
  {  // row 0's length runs past the page
    auto bad = patched(zipped_at + 1, {0xff, 0xff, 0, 0});
    CHECK_THROWS_AS(bad.read(), corrupt_error);
  }
  {  // row 0 is 24 bytes: the uri length prefix is cut
    auto bad = patched(zipped_at + 1, {24, 0, 0, 0});
    CHECK_THROWS_AS(bad.read(), corrupt_error);
  }
  {  // row 0's uri length says 1 byte past its row
    auto bad = patched(zipped_at + 1 + 4 + 21, {1, 0, 0, 0});
    CHECK_THROWS_AS(bad.read(), corrupt_error);
  }
  {  // unknown kind 9
    auto bad = patched(zipped_at + 1 + 4, {9});
    auto d = bad.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0);
    CHECK_THROWS_AS(v21::blob_descriptions(*d, "blob"), corrupt_error);
  }
  {  // row 3 (1000 bytes at 64) now points past the end of the data file
    const auto row3 = zipped_at + 30 + 30 + 1;  // rows 0 and 2 take 30 bytes, row 1 (null) 1
    auto bad = patched(row3 + 1 + 4 + 1, {0, 0, 0, 0, 0, 0, 1, 0});
    auto d = bad.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0);
    auto ds = v21::blob_descriptions(*d, "blob");
    REQUIRE(ds[3]);
    CHECK(ds[3]->position == (std::uint64_t(1) << 48));
    CHECK_THROWS_WITH_AS(v21::materialize_blobs(*d, v21::local_blob_store(path), "blob"), doctest::Contains("past the end"),
                         corrupt_error);
  }
  {  // a data file copied without its blob files: the packed value's file is missing
    testing::temp_dir tmp("blob");
    const auto copy = tmp.path() / path.filename();
    fs::copy_file(path, copy);
    file::file_reader<io::file_source> c{io::file_source(copy.string())};
    CHECK_FALSE(arrow::first_difference(expected_values(0, 4), v21::read_blob_values(c, copy, "blob", 0, 4)));
    CHECK_THROWS_WITH_AS(v21::read_blob_values(c, copy, "blob", 0, 6), doctest::Contains("is missing"), corrupt_error);
    // ... or truncated.
    fs::create_directories(copy.parent_path() / copy.stem());
    std::ofstream(v21::blob_file_path(copy, 1), std::ios::binary) << std::string(100, 'x');
    CHECK_THROWS_AS(v21::read_blob_values(c, copy, "blob", 4, 5), corrupt_error);
  }
}

TEST_CASE("blob v2 descriptions: kinds, empty and null values, external URIs") {
  using K = v21::blob_kind;
  const std::string data = "0123456789abcdef";
  auto store = memory_store(data, {{1, "packed-one"}, {7, "dedicated"}});
  auto d = descriptions({v21::blob_description{K::inline_data, 2, 3, 0, ""}, std::nullopt,
                         v21::blob_description{K::inline_data, 0, 0, 0, ""},
                         v21::blob_description{K::packed, 7, 3, 1, ""},
                         v21::blob_description{K::dedicated, 0, 9, 7, ""}});
  CHECK_FALSE(arrow::first_difference(arrow::large_binary_array({"234", std::nullopt, "", "one", "dedicated"}),
                                      v21::materialize_blobs(*d, store, "b")));
  // As the dataset's struct<data, uri>.
  auto s = v21::blob_v2_values(*d, store, "b");
  CHECK(s->null_count == 1);
  CHECK_FALSE(arrow::first_difference(arrow::string_array({std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt}),
                                      s->children.at(1)));
  // External: the URI comes back; the bytes only with a reader for them.
  auto e = descriptions({v21::blob_description{K::external, 0, 4, 0, "s3://bucket/x.bin"}});
  CHECK_THROWS_WITH_AS(v21::materialize_blobs(*e, store, "b"), doctest::Contains("s3://bucket/x.bin"), unsupported_error);
  auto se = v21::blob_v2_values(*e, store, "b");
  CHECK_FALSE(arrow::first_difference(arrow::string_array({"s3://bucket/x.bin"}), se->children.at(1)));
  CHECK(se->children.at(0)->null_count == 1);
  store.read_external = [](const std::string& uri, std::uint64_t, std::uint64_t n) {
    CHECK(uri == "s3://bucket/x.bin");
    return shared_bytes::copy_of(bytes_view(reinterpret_cast<const std::uint8_t*>("ext!"), std::size_t(n)));
  };
  CHECK_FALSE(arrow::first_difference(arrow::large_binary_array({"ext!"}), v21::materialize_blobs(*e, store, "b")));
  // Damaged descriptions.
  CHECK_THROWS_AS(v21::materialize_blobs(*descriptions({v21::blob_description{K::packed, 0, 3, 0, ""}}), store, "b"),
                  corrupt_error);  // blob id 0 is reserved
  CHECK_THROWS_AS(v21::materialize_blobs(*descriptions({v21::blob_description{K::packed, 0, 3, 2, ""}}), store, "b"),
                  corrupt_error);  // no such blob file
  CHECK_THROWS_AS(v21::materialize_blobs(*descriptions({v21::blob_description{K::inline_data, 15, 2, 0, ""}}), store, "b"),
                  corrupt_error);  // past the data
  CHECK_THROWS_AS(v21::materialize_blobs(*descriptions({v21::blob_description{K::external, 0, 2, 0, ""}}), store, "b"),
                  corrupt_error);  // external without a URI
  CHECK_THROWS_AS(v21::materialize_blobs(*arrow::large_binary_array({"x"}), store, "b"), invalid_input_error);
}

TEST_CASE("legacy blob columns (2.1) are written out of line and read back; other blob columns are refused") {
  arrow::schema legacy;
  legacy.fields = {arrow::field{"id", arrow::int64(), false, {}},
                   arrow::field{"video", arrow::large_binary(), true, {{"lance-encoding:blob", "true"}}}};
  auto vals = arrow::large_binary_array({"hello", std::nullopt, "", blob_value(5000, 3), "z"});
  arrow::record_batch batch = arrow::make_batch(std::make_shared<arrow::schema>(legacy),
                                                {arrow::make_array<std::int64_t>({0, 1, 2, 3, 4}), vals});
  file::file_writer<file::v2_1, io::memory_sink> w(io::memory_sink{}, schema::from_arrow(legacy));
  w.write_batch(batch);
  w.write_batch(arrow::make_batch(std::make_shared<arrow::schema>(legacy),
                                  {arrow::make_array<std::int64_t>({5, 6}), arrow::slice(vals, 3, 2)}));
  w.finish();
  const auto bytes = w.sink().take_shared();
  // The values lie at the start of the file, each 64-byte aligned, before any page.
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data()), 5) == "hello");
  CHECK(bytes.data()[64] == std::uint8_t(3));
  file::file_reader<io::memory_source> r{io::memory_source(bytes)};
  const auto layout = r.column(1).metadata.pages.at(0).encoding->unwrap<pb::enc21::page_layout>();
  const auto* bl = std::get_if<pb::enc21::blob_layout>(&layout.value);
  REQUIRE(bl);
  CHECK(bl->layers == std::vector<pb::enc21::rep_def_layer>{pb::enc21::rep_def_layer::nullable_item});
  CHECK_FALSE(arrow::first_difference(arrow::large_binary_array({"hello", std::nullopt, "", blob_value(5000, 3), "z", blob_value(5000, 3), "z"}),
                                      r.read().columns.at(1)));
  // Encoding on a pool (pages written in order, values written as rows arrive), with a
  // small page cache so that the blob column spans several pages among other columns'.
  {
    boost::asio::thread_pool pool(3);
    file::writer_options wo;
    wo.pool = &pool;
    wo.data_cache_bytes = 4096;
    file::file_writer<file::v2_1, io::memory_sink> wp(io::memory_sink{}, schema::from_arrow(legacy), wo);
    std::vector<std::optional<std::string>> many;
    std::vector<std::int64_t> ids;
    for (std::size_t g = 0; g < 300; ++g) {
      ids.push_back(std::int64_t(g));
      many.push_back(g % 11 == 5 ? std::nullopt : std::optional(blob_value(g * 37 % 3000, g)));
    }
    auto all = arrow::large_binary_array(many);
    auto id_col = arrow::make_array<std::int64_t>(ids);
    for (std::int64_t at = 0; at < 300; at += 50)
      wp.write_batch(arrow::make_batch(std::make_shared<arrow::schema>(legacy), {arrow::slice(id_col, at, 50), arrow::slice(all, at, 50)}));
    wp.finish();
    file::file_reader<io::memory_source> rp{io::memory_source(wp.sink().take_shared())};
    CHECK(rp.column(1).metadata.pages.size() > 1);
    CHECK_FALSE(arrow::first_difference(all, rp.read().columns.at(1)));
    CHECK_FALSE(arrow::first_difference(arrow::slice(all, 120, 70), rp.read({{"video"}, std::pair<std::uint64_t, std::uint64_t>{120, 190}, std::nullopt}).columns.at(0)));
  }
  // Binary values too; a non-nullable blob field refuses nulls.
  arrow::schema nn;
  nn.fields = {arrow::field{"b", arrow::binary(), false, {{"lance-encoding:blob", "true"}}}};
  file::file_writer<file::v2_1, io::memory_sink> w2(io::memory_sink{}, schema::from_arrow(nn));
  CHECK_THROWS_AS(w2.write_batch(arrow::make_batch(std::make_shared<arrow::schema>(nn), {arrow::binary_array({"a", std::nullopt})})),
                  invalid_input_error);
  // Refused: legacy blobs at 2.2 (as Lance 12 does), blob v2 columns at 2.1, non-binary blobs.
  arrow::schema v2;
  v2.fields = {arrow::field{"doc", v21::blob_v2_type(), true, {{"ARROW:extension:name", "lance.blob.v2"}}}};
  arrow::schema text;
  text.fields = {arrow::field{"t", arrow::utf8(), true, {{"lance-encoding:blob", "true"}}}};
  auto make21 = [](const arrow::schema& s) { file::file_writer<file::v2_1, io::memory_sink> w(io::memory_sink{}, schema::from_arrow(s)); (void)w; };
  auto make22 = [](const arrow::schema& s) { file::file_writer<file::v2_2, io::memory_sink> w(io::memory_sink{}, schema::from_arrow(s)); (void)w; };
  CHECK_THROWS_WITH_AS(make22(legacy), doctest::Contains("'video' is a legacy blob column"), unsupported_error);
  // Blob v2 columns are written from 2.2 on (tests/test_interop_types.cpp), refused before.
  CHECK_THROWS_WITH_AS(make21(v2), doctest::Contains("'doc' is a blob v2 column"), unsupported_error);
  CHECK_NOTHROW(make22(v2));
  CHECK_THROWS_WITH_AS(make21(text), doctest::Contains("binary or large_binary"), unsupported_error);
}

TEST_CASE("legacy blobs (2.1): a description pointing outside the file is corrupt, naming the row") {
  // tests/fixtures/structural/blob_2.1 (write_legacy_blobs.mjs): row i holds 100 + 50 i bytes.
  fs::path path;
  for (const auto& e : fs::directory_iterator(fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "structural" / "blob_2.1" / "data"))
    path = e.path();
  const auto bytes = file_bytes(path);
  file::file_reader<io::memory_source> ok{io::memory_source(bytes)};
  REQUIRE(ok.num_rows() == 20);
  const auto good = ok.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0);
  CHECK(good->type->id == arrow::type_id::large_binary);
  // Row 1's description (position, size = 150) sits in the page's chunk data.
  const auto& page = ok.column(1).metadata.pages.at(0);
  const auto chunk_at = page.buffer_offsets.at(1), chunk_size = page.buffer_sizes.at(1);
  std::optional<std::uint64_t> desc;
  for (std::uint64_t at = chunk_at + 8; at + 8 <= chunk_at + chunk_size; at += 8)
    if (le::load<std::uint64_t>(bytes.data() + at) == 150) { desc = at - 8; break; }
  REQUIRE(desc);
  aligned_buffer buf;
  buf.append(bytes.view());
  le::store<std::uint64_t>(buf.data() + *desc, std::uint64_t(1) << 40);
  file::file_reader<io::memory_source> bad{io::memory_source(shared_bytes(std::move(buf)))};
  CHECK_THROWS_WITH_AS(bad.read({{"blob"}, std::nullopt, std::nullopt}), doctest::Contains("blob value of row 1"), corrupt_error);
  // Rows before it still read.
  CHECK_FALSE(arrow::first_difference(arrow::slice(good, 0, 1), bad.read({{"blob"}, std::pair<std::uint64_t, std::uint64_t>{0, 1}, std::nullopt}).columns.at(0)));
}

TEST_CASE("blob v2 placement (2.2): inline, packed and dedicated by size as Lance 12 places them") {
  // What LanceDB 0.39 wrote for these sizes (blob_write.mjs --sizes '[65536, 65537,
  // 4194304, 4194305, 10, 0, 65537]'): kind, position, blob_id per value.
  std::map<std::uint32_t, std::uint64_t> files;  // blob id -> bytes written
  std::set<std::uint32_t> finished;
  std::uint64_t data_file = 0;
  v21::blob_placer p(
      [&](std::uint32_t id) {
        CHECK_FALSE(files.count(id));
        files[id] = 0;
        return v21::blob_file_sink{[&files, id](bytes_view b) { files[id] += b.size(); },
                                   [&finished, id] { CHECK(finished.insert(id).second); }};
      },
      [&](bytes_view b) {
        const auto at = data_file;
        data_file += (b.size() + 63) / 64 * 64;
        return at;
      });
  std::string buf(4194305, 'x');
  auto place = [&](std::size_t n) {
    const auto l = p.place(bytes_view(reinterpret_cast<const std::uint8_t*>(buf.data()), n));
    return std::tuple(int(l.kind), l.position, l.blob_id);
  };
  CHECK(place(65536) == std::tuple(0, 0u, 0u));
  CHECK(place(65537) == std::tuple(1, 0u, 1u));
  CHECK(place(4194304) == std::tuple(1, 65537u, 1u));
  CHECK(place(4194305) == std::tuple(2, 0u, 2u));
  CHECK(finished == std::set<std::uint32_t>{2});  // a dedicated file is done at once
  CHECK(place(10) == std::tuple(0, 65536u, 0u));
  CHECK(place(0) == std::tuple(0, 65600u, 0u));
  CHECK(place(65537) == std::tuple(1, 4259841u, 1u));
  p.finish();
  CHECK(finished == std::set<std::uint32_t>{1, 2});
  CHECK(files == std::map<std::uint32_t, std::uint64_t>{{1, 4325378}, {2, 4194305}});
  // A pack file takes values until the next would pass 1 GiB; then a new one opens.
  v21::blob_placer q([&](std::uint32_t id) { files[100 + id] = 0; return v21::blob_file_sink{[&files, id](bytes_view b) { files[100 + id] += b.size(); }, [] {}}; },
                     [](bytes_view) { return std::uint64_t(0); });
  std::uint32_t last = 0;
  for (int i = 0; i < 256; ++i) last = q.place(bytes_view(reinterpret_cast<const std::uint8_t*>(buf.data()), 4194304)).blob_id;
  CHECK(last == 1);  // 256 x 4 MiB is exactly 1 GiB
  const auto next = q.place(bytes_view(reinterpret_cast<const std::uint8_t*>(buf.data()), 65537));
  CHECK(next.blob_id == 2);
  CHECK(next.position == 0);
  // Without blob files every value stays inline.
  v21::blob_placer r({}, [](bytes_view b) { return std::uint64_t(b.size()); });
  CHECK(r.place(bytes_view(reinterpret_cast<const std::uint8_t*>(buf.data()), 4194305)).kind == 0);
}

namespace {

// A 2.2 batch of (id, blob v2) rows, value i being sizes[i] bytes of 'a' + i.
arrow::record_batch blob_v2_rows(const std::vector<std::optional<std::size_t>>& sizes, bool nullable = true) {
  std::vector<std::optional<std::string>> data, uris;
  std::vector<std::int64_t> ids;
  std::vector<bool> valid;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ids.push_back(std::int64_t(i));
    data.push_back(sizes[i] ? std::optional(std::string(*sizes[i], char('a' + i))) : std::nullopt);
    uris.push_back(std::nullopt);
    valid.push_back(sizes[i].has_value());
  }
  const std::vector<arrow::field> members{arrow::field{"data", arrow::large_binary(), true, {}}, arrow::field{"uri", arrow::utf8(), true, {}}};
  auto schema = std::make_shared<arrow::schema>();
  schema->fields = {arrow::field{"id", arrow::int64(), false, {}},
                    arrow::field{"blob", arrow::struct_(members), nullable, {{"ARROW:extension:name", "lance.blob.v2"}}}};
  return arrow::make_batch(schema, {arrow::make_array<std::int64_t>(ids),
                                    arrow::make_struct(members, {arrow::large_binary_array(data), arrow::string_array(uris)}, valid)});
}

}  // namespace

TEST_CASE("blob v2 files of a dataset (2.2): written next to their data file, gone with it on cleanup and on a failed write") {
  testing::temp_dir dir("blob-v2-files");
  const auto root = (dir.path() / "ds").string();
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(root, blob_v2_rows({100 * 1024, 5u << 20, 10, std::nullopt}), o);
  auto first = files_under(fs::path(root) / "data", true);
  REQUIRE(first.size() == 4);  // the data file, its directory, a pack file and a dedicated file
  CHECK(first[2].ends_with("/01000000000000000000000000000000.blob"));  // blob 2: the 5 MiB value alone
  CHECK(first[3].ends_with("/10000000000000000000000000000000.blob"));  // blob 1: the pack
  {
    auto b = dataset::dataset::open(root).to_batch();
    CHECK(b.columns.at(1)->children.at(0)->string_value(1).size() == (5u << 20));
  }
  // Overwritten, then cleaned up: the old data file's blob files and directory go too.
  o.mode = dataset::write_mode::overwrite;
  dataset::write(root, blob_v2_rows({7, 200 * 1024}), o);
  dataset::cleanup_options co;
  co.keep_versions = 1;
  const auto st = dataset::cleanup_old_versions(root, co);
  CHECK(std::count_if(st.removed_files.begin(), st.removed_files.end(), [](const std::string& f) { return f.ends_with(".blob"); }) == 2);
  const auto after = files_under(fs::path(root) / "data", true);
  REQUIRE(after.size() == 3);
  for (const auto& f : first) CHECK(std::find(after.begin(), after.end(), f) == after.end());
  // A write that fails after blob files were written leaves none behind.
  const auto failed = (dir.path() / "failed").string();
  o.mode = dataset::write_mode::create;
  const std::vector<arrow::record_batch> batches{blob_v2_rows({5u << 20, 100 * 1024}, false), blob_v2_rows({5u << 20, std::nullopt}, false)};
  CHECK_THROWS_WITH_AS(dataset::write(failed, batches, o), doctest::Contains("'blob'"), invalid_input_error);
  CHECK((!fs::exists(fs::path(failed) / "data") || files_under(fs::path(failed) / "data", true).empty()));
}

TEST_CASE("blob v2 (2.2): compaction rewrites the values into the new data file's own blob files") {
  testing::temp_dir dir("blob-v2-compact");
  const auto root = (dir.path() / "ds").string();
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  const std::vector<std::optional<std::size_t>> sizes{10, 100 * 1024, 5u << 20, std::nullopt, 0};
  for (int f = 0; f < 3; ++f) {
    o.mode = f ? dataset::write_mode::append : dataset::write_mode::create;
    dataset::write(root, blob_v2_rows(sizes), o);
  }
  const auto before = files_under(fs::path(root) / "data", true);
  const auto r = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
  CHECK(r.metrics.fragments_removed == 3);
  CHECK(r.metrics.fragments_added == 1);
  dataset::cleanup_options co;
  co.keep_versions = 1;
  dataset::cleanup_old_versions(root, co);
  // Only the new data file, its directory, its pack file and its 3 dedicated files.
  const auto after = files_under(fs::path(root) / "data", true);
  REQUIRE(after.size() == 6);
  for (const auto& f : before) CHECK(std::find(after.begin(), after.end(), f) == after.end());
  const auto b = dataset::dataset::open(root).to_batch();
  REQUIRE(b.num_rows() == 15);
  const auto& data = *b.columns.at(1)->children.at(0);
  for (std::int64_t row = 0; row < 15; ++row) {
    CAPTURE(row);
    const auto& s = sizes[std::size_t(row % 5)];
    CHECK(b.columns.at(1)->is_valid(row) == s.has_value());
    if (s) CHECK(data.string_value(row) == std::string(*s, char('a' + row % 5)));
  }
}
