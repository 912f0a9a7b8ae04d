// Blob columns LanceDB 0.39 (Lance 12) writes, read back by lancet
// (tests/interop/blob_write.mjs):
//  - 2.1, legacy blobs (large_binary + lance-encoding:blob): the column reads as its bytes;
//  - 2.2, blob v2 (struct<data, uri> + lance.blob.v2): each data file's column reads as
//    the descriptions LanceDB's own query returns, and the values (inline in the data
//    file, packed and dedicated in blob files next to it) are the bytes written, through
//    the file API and a dataset scan.
// Values cover empty, null, inline (up to 64 KiB), packed (64 KiB + 1 up to a few MiB)
// and dedicated (5 MB) blobs over several fragments.
#include <doctest/doctest.h>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/encoding/structural/blob.hpp>
#include <lancet/file/footer.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/dataset/write.hpp>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>

#include "support/blob_values.hpp"
#include "support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
namespace v21 = lancet::encoding::structural;
using njson = nlohmann::json;

namespace {

using lancet::testing::blob_value;
using lancet::testing::fnv1a;

// Values of rows with the given ids, as blob_write.mjs made them.
arrow::array_ptr expected_blobs(const njson& rows, const std::vector<std::int64_t>& ids) {
  std::vector<std::optional<std::string>> vals;
  for (auto g : ids) {
    const auto& s = rows.at(std::size_t(g));
    vals.push_back(s.is_null() ? std::nullopt : std::optional(blob_value(s.get<std::size_t>(), std::size_t(g))));
  }
  return arrow::large_binary_array(vals);
}

std::vector<std::int64_t> blob_ids(const arrow::array_ptr& a) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < a->length; ++i)
    out.push_back(le::load<std::int64_t>(a->buffers.at(1).data() + 8 * (a->offset + i)));
  return out;
}

struct written {
  std::unique_ptr<t::temp_dir> dir;
  fs::path path;
  njson out;
};

written lancedb_write_blobs(const std::string& version, int fragments, const std::string& sizes = "") {
  written w;
  w.dir = std::make_unique<t::temp_dir>("interop-blob");
  w.path = w.dir->path() / "ds";
  std::vector<std::string> args{w.path.string(), version, "--fragments", std::to_string(fragments)};
  if (!sizes.empty()) args.insert(args.end(), {"--sizes", sizes});
  const auto text = t::node("blob_write.mjs", args);
  w.out = njson::parse(text);
  return w;
}

}  // namespace

TEST_CASE("legacy blob columns (2.1) LanceDB writes read as their bytes, by file and by dataset") {
  auto w = lancedb_write_blobs("2.1", 3);
  const auto& rows = w.out.at("rows");
  // LanceDB's own scan shows (position, size) descriptions for the column.
  for (std::size_t g = 0; g < rows.size(); ++g) {
    CAPTURE(g);
    const auto& s = w.out.at("scan").at(g);
    if (rows[g].is_null()) CHECK(s.is_null());
    else CHECK(s.at("size").get<std::string>() == std::to_string(rows[g].get<std::size_t>()));
  }
  const auto files = t::data_files(w.path);
  CHECK(files.size() == 3);
  std::size_t seen = 0;
  for (const auto& f : files) {
    file::file_reader<io::file_source> r{io::file_source(f.string())};
    auto b = r.read();
    const auto ids = blob_ids(b.columns.at(0));
    CHECK_FALSE(arrow::first_difference(expected_blobs(rows, ids), b.columns.at(1)));
    // A range inside the file, and read_blob_values (legacy columns are values already).
    if (r.num_rows() >= 3) {
      std::vector<std::int64_t> mid(ids.begin() + 1, ids.begin() + 3);
      CHECK_FALSE(arrow::first_difference(expected_blobs(rows, mid), v21::read_blob_values(r, f, "blob", 1, 3)));
    }
    seen += ids.size();
  }
  CHECK(seen == rows.size());
  auto ds = dataset::dataset::open(w.path.string());
  auto b = ds.to_batch();
  CHECK_FALSE(arrow::first_difference(expected_blobs(rows, blob_ids(b.columns.at(0))), b.columns.at(1)));
}

TEST_CASE("blob v2 columns (2.2) LanceDB writes: descriptions as LanceDB shows them, values from data and blob files") {
  auto w = lancedb_write_blobs("2.2", 3);
  const auto& rows = w.out.at("rows");
  const auto& scan = w.out.at("scan");
  const auto files = t::data_files(w.path);
  CHECK(files.size() == 3);
  std::size_t seen = 0, inline_n = 0, packed_n = 0, dedicated_n = 0;
  for (const auto& f : files) {
    CAPTURE(f);
    file::file_reader<io::file_source> r{io::file_source(f.string())};
    auto b = r.read();
    const auto ids = blob_ids(b.columns.at(0));
    REQUIRE(v21::is_blob_v2_descriptions(*b.columns.at(1)->type));
    const auto ds = v21::blob_descriptions(*b.columns.at(1), "blob");
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto& s = scan.at(std::size_t(ids[i]));
      CAPTURE(ids[i]);
      if (s.is_null()) {
        CHECK_FALSE(ds[i]);
        continue;
      }
      REQUIRE(ds[i]);
      CHECK(int(ds[i]->kind) == s.at("kind").get<int>());
      CHECK(std::to_string(ds[i]->position) == s.at("position").get<std::string>());
      CHECK(std::to_string(ds[i]->size) == s.at("size").get<std::string>());
      CHECK(ds[i]->blob_id == s.at("blob_id").get<std::uint32_t>());
      CHECK(ds[i]->uri == s.at("blob_uri").get<std::string>());
      inline_n += ds[i]->kind == v21::blob_kind::inline_data;
      packed_n += ds[i]->kind == v21::blob_kind::packed;
      dedicated_n += ds[i]->kind == v21::blob_kind::dedicated;
    }
    CHECK_FALSE(arrow::first_difference(expected_blobs(rows, ids), v21::read_blob_values(r, f, "blob", 0, r.num_rows())));
    if (r.num_rows() >= 3) {
      std::vector<std::int64_t> mid(ids.begin() + 1, ids.begin() + 3);
      CHECK_FALSE(arrow::first_difference(expected_blobs(rows, mid), v21::read_blob_values(r, f, "blob", 1, 3)));
    }
    seen += ids.size();
  }
  CHECK(seen == rows.size());
  // The default sizes exercise every kind LanceDB writes for local data.
  CHECK(inline_n > 0);
  CHECK(packed_n > 0);
  CHECK(dedicated_n > 0);
  // A dataset scan and a take return the declared struct<data, uri>: bytes, no URIs.
  auto ds = dataset::dataset::open(w.path.string());
  auto b = ds.to_batch();
  const auto& col = b.columns.at(1);
  REQUIRE(col->type->id == arrow::type_id::struct_);
  const auto ids = blob_ids(b.columns.at(0));
  CHECK_FALSE(arrow::first_difference(expected_blobs(rows, ids), col->children.at(0)));
  for (std::size_t i = 0; i < ids.size(); ++i) CHECK(col->is_valid(std::int64_t(i)) == !rows.at(std::size_t(ids[i])).is_null());
  CHECK(col->children.at(1)->count_nulls() == col->length);
  // Row addresses (fragment << 32 | offset): ids 7 (packed) and 8 (dedicated).
  auto tk = ds.take({(std::uint64_t(1) << 32) | 3, std::uint64_t(2) << 32}, {"id", "blob"});
  CHECK(blob_ids(tk.columns.at(0)) == std::vector<std::int64_t>{7, 8});
  CHECK_FALSE(arrow::first_difference(expected_blobs(rows, blob_ids(tk.columns.at(0))), tk.columns.at(1)->children.at(0)));
}

TEST_CASE("variable packed structs (2.2, the encoding of blob v2 descriptions): plain, FSST and zstd members") {
  struct shape {
    int rows, long_len;
    const char* member_codec;  // what Lance chose for the string member (Any type name inside)
  };
  for (const auto& sh : {shape{200, 0, "plain"}, shape{5000, 0, "FSST"}, shape{300, 40000, "zstd"}}) {
    CAPTURE(sh.member_codec);
    t::temp_dir dir("interop-packed");
    const auto path = dir.path() / "ds";
    t::node("blob_packed_struct.mjs", {path.string(), std::to_string(sh.rows), std::to_string(sh.long_len)});
    const auto files = t::data_files(path);
    REQUIRE(files.size() == 1);
    file::file_reader<io::file_source> r{io::file_source(files[0].string())};
    const auto layout = r.column(1).metadata.pages.at(0).encoding->unwrap<pb::enc21::page_layout>();
    const auto* z = std::get_if<pb::enc21::full_zip_layout>(&layout.value);
    REQUIRE(z);
    const auto& vp = std::get<pb::enc21::variable_packed_struct>(z->value_compression->value);
    REQUIRE(vp.fields.size() == 2);
    const auto& member = vp.fields[1].value->value;
    if (sh.long_len) CHECK(std::holds_alternative<pb::enc21::general>(member));
    else if (sh.rows > 1000) CHECK(std::holds_alternative<pb::enc21::fsst>(member));
    else CHECK(std::holds_alternative<pb::enc21::variable>(member));
    std::vector<std::int32_t> a;
    std::vector<std::string> s;
    for (int i = 0; i < sh.rows; ++i) {
      a.push_back(i);
      s.push_back(std::string(std::size_t(sh.long_len ? sh.long_len + i : i % 13), 'x') + std::to_string(i));
    }
    auto want = arrow::make_struct({{"a", arrow::int32(), false, {}}, {"s", arrow::utf8(), false, {}}},
                                   {arrow::make_array<std::int32_t>(a), arrow::string_array(s)});
    auto got = r.read({{"packed"}, std::nullopt, std::nullopt}).columns.at(0);
    CHECK_FALSE(arrow::first_difference(want, got));
    auto mid = r.read({{"packed"}, std::pair<std::uint64_t, std::uint64_t>{7, 19}, std::nullopt}).columns.at(0);
    CHECK_FALSE(arrow::first_difference(arrow::slice(want, 7, 12), mid));
  }
}

TEST_CASE("legacy blob columns (2.1) lancet writes: byte-identical to LanceDB's file, and LanceDB reads them") {
  // The rows blob_write.mjs makes (its default sizes), written by lancet in one file.
  const auto theirs = lancedb_write_blobs("2.1", 1);
  const auto& rows = theirs.out.at("rows");
  std::vector<std::optional<std::string>> vals;
  std::vector<std::int64_t> ids;
  for (std::size_t g = 0; g < rows.size(); ++g) {
    ids.push_back(std::int64_t(g));
    vals.push_back(rows[g].is_null() ? std::nullopt : std::optional(blob_value(rows[g].get<std::size_t>(), g)));
  }
  auto schema = std::make_shared<arrow::schema>();
  schema->fields = {arrow::field{"id", arrow::int64(), false, {}},
                    arrow::field{"blob", arrow::large_binary(), true, {{"lance-encoding:blob", "true"}}}};
  t::temp_dir dir("interop-blob-write");
  const auto ours = dir.path() / "ds";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_1;
  dataset::write(ours.string(), arrow::make_batch(schema, {arrow::make_array<std::int64_t>(ids), arrow::large_binary_array(vals)}), o);
  const auto a = t::data_files(ours), b = t::data_files(theirs.path);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  const auto ours_bytes = io::file_source(a[0].string()).read_all(), their_bytes = io::file_source(b[0].string()).read_all();
  CHECK(ours_bytes.size() == their_bytes.size());
  CHECK(ours_bytes.view().size() == their_bytes.view().size());
  CHECK(std::equal(ours_bytes.view().begin(), ours_bytes.view().end(), their_bytes.view().begin(), their_bytes.view().end()));
  // LanceDB reads our dataset: the descriptions it shows are the ones it wrote itself.
  const auto text = t::node("read_table.mjs", {ours.string()});
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    const auto j = njson::parse(line);
    if (!j.contains("id")) continue;
    const auto g = std::stoull(j.at("id").get<std::string>());
    CAPTURE(g);
    CHECK(j.at("blob") == theirs.out.at("scan").at(g));
    ++n;
  }
  CHECK(n == rows.size());
}

namespace {

// A 2.x file's bytes split into its schema (global buffer 0) and everything else.
struct schema_split {
  std::string schema, rest;
};
schema_split split_schema_buffer(const shared_bytes& b) {
  const auto v = b.view();
  REQUIRE(v.size() >= file::footer_size);
  const auto f = file::footer::decode(v.subspan(v.size() - file::footer_size), v.size());
  REQUIRE(f.num_global_buffers >= 1);
  const auto pos = le::load<std::uint64_t>(v.data() + f.global_buff_offsets);
  const auto len = le::load<std::uint64_t>(v.data() + f.global_buff_offsets + 8);
  REQUIRE(pos + len <= v.size());
  const auto* c = reinterpret_cast<const char*>(v.data());
  return {std::string(c + pos, len), std::string(c, pos) + std::string(c + pos + len, v.size() - pos - len)};
}

// Blob files of a data file: name -> bytes.
std::map<std::string, std::string> blob_files_of(const fs::path& data_file) {
  std::map<std::string, std::string> out;
  auto dir = data_file;
  dir.replace_extension();
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto b = io::file_source(e.path().string()).read_all();
    out[e.path().filename().string()] = std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  return out;
}

}  // namespace

TEST_CASE("blob v2 columns (2.2) lancet writes: inline, packed and dedicated as LanceDB places them; LanceDB reads the bytes") {
  // 10 B, 100 KiB and 20 MiB, and each side of Lance 12's thresholds (64 KiB inline,
  // 4 MiB packed), null and empty values.
  const std::string sizes = "[10, 102400, 20971520, 65536, 65537, 4194304, 4194305, null, 0, 5, 70000, 102400]";
  const auto theirs = lancedb_write_blobs("2.2", 1, sizes);
  const auto& rows = theirs.out.at("rows");
  std::vector<std::optional<std::string>> data, uris;
  std::vector<std::int64_t> ids;
  std::vector<bool> valid;
  for (std::size_t g = 0; g < rows.size(); ++g) {
    ids.push_back(std::int64_t(g));
    data.push_back(rows[g].is_null() ? std::nullopt : std::optional(blob_value(rows[g].get<std::size_t>(), g)));
    uris.push_back(std::nullopt);
    valid.push_back(!rows[g].is_null());
  }
  const std::vector<arrow::field> members{arrow::field{"data", arrow::large_binary(), true, {}}, arrow::field{"uri", arrow::utf8(), true, {}}};
  auto schema = std::make_shared<arrow::schema>();
  schema->fields = {arrow::field{"id", arrow::int64(), false, {}},
                    arrow::field{"blob", arrow::struct_(members), true, {{"ARROW:extension:name", "lance.blob.v2"}}}};
  t::temp_dir dir("interop-blob-v2-write");
  const auto ours = dir.path() / "ds";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(ours.string(),
                 arrow::make_batch(schema, {arrow::make_array<std::int64_t>(ids),
                                            arrow::make_struct(members, {arrow::large_binary_array(data), arrow::string_array(uris)}, valid)}),
                 o);
  const auto a = t::data_files(ours), b = t::data_files(theirs.path);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  // The same descriptions, the same blob files (names and bytes), the same data file.
  file::file_reader<io::file_source> ra{io::file_source(a[0].string())}, rb{io::file_source(b[0].string())};
  const auto da = v21::blob_descriptions(*ra.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0), "blob");
  const auto db = v21::blob_descriptions(*rb.read({{"blob"}, std::nullopt, std::nullopt}).columns.at(0), "blob");
  REQUIRE(da.size() == db.size());
  for (std::size_t g = 0; g < da.size(); ++g) {
    CAPTURE(g);
    CHECK(da[g] == db[g]);
  }
  const auto fa = blob_files_of(a[0]), fb = blob_files_of(b[0]);
  CHECK(fa.size() == 3);  // one pack file, two dedicated
  CHECK(fa == fb);
  // The same data file, but for the order of a field's metadata entries, which LanceDB
  // writes in Rust's hash order (it changes from run to run): the bytes outside the
  // schema buffer are equal, and so are the schemas with metadata taken as maps.
  const auto ours_bytes = io::file_source(a[0].string()).read_all(), their_bytes = io::file_source(b[0].string()).read_all();
  const auto ours_split = split_schema_buffer(ours_bytes), their_split = split_schema_buffer(their_bytes);
  CHECK(ours_split.rest == their_split.rest);
  CHECK(ours_split.schema.size() == their_split.schema.size());
  REQUIRE(ra.arrow_schema().fields.size() == rb.arrow_schema().fields.size());
  for (std::size_t i = 0; i < ra.arrow_schema().fields.size(); ++i) {
    const auto &fa_ = ra.arrow_schema().fields[i], &fb_ = rb.arrow_schema().fields[i];
    CAPTURE(fa_.name);
    CHECK(arrow::equals(fa_, fb_));
    CHECK(std::map<std::string, std::string>(fa_.metadata.begin(), fa_.metadata.end()) ==
          std::map<std::string, std::string>(fb_.metadata.begin(), fb_.metadata.end()));
  }
  // LanceDB's fetchBlobs returns every value's bytes.
  std::istringstream lines(t::node("blob_fetch.mjs", {ours.string(), "blob"}));
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  REQUIRE(got.size() == rows.size());
  for (std::size_t g = 0; g < rows.size(); ++g) {
    CAPTURE(g);
    const auto id = R"({"id":")" + std::to_string(g) + "\",";
    CHECK(got[g] == (data[g] ? id + R"("size":)" + std::to_string(data[g]->size()) + R"(,"fnv":)" + std::to_string(fnv1a(*data[g])) + "}"
                             : id + R"("blob":null})"));
  }
  // And a lancet scan of our dataset returns them.
  auto back = dataset::dataset::open(ours.string()).to_batch();
  CHECK_FALSE(arrow::first_difference(expected_blobs(rows, blob_ids(back.columns.at(0))), back.columns.at(1)->children.at(0)));
}
