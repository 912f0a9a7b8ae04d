// Interop for map columns (2.2), dictionary fields, blob v2 writes, random tables of
// every type and large_list (2.0 - 2.2), LanceDB 0.39 (Lance 12) as the oracle
// (tests/interop/types_roundtrip.mjs, large_list.mjs): we read what LanceDB wrote,
// LanceDB reads what we wrote, values and types.
#include <doctest/doctest.h>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/arrow/dictionary.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/file/with_version.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/json/rows_writer.hpp>
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "support/blob_values.hpp"
#include "support/interop.hpp"

using namespace lancet;
namespace t = lancet::testing;

namespace {

using lance_reader = file::file_reader<io::file_source>;

// The one data file of our dataset at `ours` has the schema and page layouts of Lance's
// file `theirs` (same fields, same encodings, same buffer sizes page by page).
void check_same_layout(const lance_reader& theirs, const std::filesystem::path& ours) {
  const auto our_files = t::data_files(ours);
  REQUIRE(our_files.size() == 1);
  lance_reader mine{io::file_source(our_files[0].string())};
  CHECK(mine.schema() == theirs.schema());
  REQUIRE(mine.num_columns() == theirs.num_columns());
  for (std::size_t c = 0; c < theirs.num_columns(); ++c) {
    CAPTURE(c);
    const auto& a = theirs.column(c).metadata.pages;
    const auto& b = mine.column(c).metadata.pages;
    REQUIRE(a.size() == b.size());
    for (std::size_t p = 0; p < a.size(); ++p) {
      CHECK(a[p].encoding->direct_any().value == b[p].encoding->direct_any().value);
      CHECK(a[p].buffer_sizes == b[p].buffer_sizes);
    }
  }
}

struct lancedb_view {
  std::string schema;               // the {"schema": ...} line
  std::vector<std::string> rows;    // one line per row, `lancet cat` form
};

lancedb_view lancedb_read(const std::filesystem::path& dataset) {
  std::istringstream lines(t::node("types_roundtrip.mjs", {"read", dataset.string()}));
  lancedb_view v;
  std::getline(lines, v.schema);
  for (std::string l; std::getline(lines, l);) v.rows.push_back(l);
  return v;
}

// What a read-many script printed (`#dataset PATH`, the schema line, the rows, for each
// dataset in turn): LanceDB's view of each of `datasets`, in their order.
std::vector<lancedb_view> parse_views(const std::string& text, const std::vector<std::filesystem::path>& datasets) {
  std::istringstream lines(text);
  std::vector<lancedb_view> out;
  for (std::string l; std::getline(lines, l);) {
    if (l.starts_with("#dataset ")) {
      REQUIRE(out.size() < datasets.size());
      CHECK(l.substr(9) == datasets[out.size()].string());
      out.emplace_back();
      REQUIRE(std::getline(lines, out.back().schema));
    } else {
      REQUIRE(!out.empty());
      out.back().rows.push_back(l);
    }
  }
  REQUIRE(out.size() == datasets.size());
  return out;
}

// LanceDB's views of many datasets, read by one Node process (types_roundtrip.mjs
// read-many: LanceDB's startup dominates one read).
std::vector<lancedb_view> lancedb_read_many(const std::vector<std::filesystem::path>& datasets) {
  std::vector<std::string> args = {"read-many"};
  for (const auto& d : datasets) args.push_back(d.string());
  return parse_views(t::node("types_roundtrip.mjs", args), datasets);
}

std::vector<std::string> our_rows(const arrow::record_batch& b) {
  std::istringstream lines(json::rows_to_json(b, json::write_options::canonical()));
  std::vector<std::string> out;
  for (std::string l; std::getline(lines, l);) out.push_back(l);
  return out;
}

void check_lancedb_rows(const std::vector<std::string>& got, const std::vector<std::string>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == expected[i]);
  }
}

file::format_version file_version_of(const std::string& v) {
  return v == "2.0" ? file::format_version::v2_0 : v == "2.1" ? file::format_version::v2_1 : file::format_version::v2_2;
}

}  // namespace

TEST_CASE("interop map 2.2: we read LanceDB's map columns, LanceDB reads ours") {
  t::temp_dir dir("interop-map");
  const auto theirs_path = dir.path() / "theirs";
  t::node("types_roundtrip.mjs", {"write", theirs_path.string(), "--table", "map", "--version", "2.2"});
  const auto files = t::data_files(theirs_path);
  REQUIRE(files.size() == 1);
  lance_reader r{io::file_source(files[0].string())};
  auto batch = r.read();
  REQUIRE(batch.columns.size() == 3);
  CHECK(arrow::to_string(*batch.columns[1]->type) == "map<utf8, int32>");
  CHECK(arrow::to_string(*batch.columns[2]->type) == "map<int64, utf8>");
  CHECK(r.schema().fields[1].logical_type == "map");
  const auto view = lancedb_read(theirs_path);
  CHECK(view.schema.find("\"type\":\"map\"") != std::string::npos);
  // Nulls, empty maps and null values, as LanceDB reads them.
  CHECK(view.rows.at(1) == R"({"id":1,"m":null,"m2":[]})");
  CHECK(view.rows.at(3) ==
        R"({"id":3,"m":[{"key":"q","value":null},{"key":"r","value":5}],"m2":[{"key":"30","value":"vq"},{"key":"31","value":null}]})");
  check_lancedb_rows(our_rows(batch), view.rows);

  // Our 2.2 dataset of the same batch: LanceDB reads the same rows and map types.
  const auto ours_path = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(ours_path.string(), batch, o);
  const auto back = lancedb_read(ours_path);
  CHECK(back.schema == view.schema);
  check_lancedb_rows(back.rows, view.rows);
  // Our file's schema and column layout are Lance's (same fields, same page layouts).
  check_same_layout(r, ours_path);
}

TEST_CASE("interop map: LanceDB refuses maps at 2.1, so do we") {
  t::temp_dir dir("interop-map21");
  auto m = arrow::make_map(arrow::string_array({"a"}), arrow::make_array<std::int32_t>({1}), {0, 1});
  auto batch = arrow::make_batch({{"m", m}});
  dataset::write_options o;
  o.storage_version = file::format_version::v2_1;
  CHECK_THROWS_AS(dataset::write((dir.path() / "x").string(), batch, o), unsupported_error);
}

namespace {

void check_dictionary_interop(const std::string& version) {
  CAPTURE(version);
  t::temp_dir dir("interop-dict");
  const auto theirs_path = dir.path() / "theirs";
  t::node("types_roundtrip.mjs", {"write", theirs_path.string(), "--table", "dict", "--version", version});
  const auto files = t::data_files(theirs_path);
  REQUIRE(files.size() == 1);
  lance_reader r{io::file_source(files[0].string())};
  CHECK(r.version() == file_version_of(version));
  auto batch = r.read();
  REQUIRE(batch.columns.size() == 5);
  // Reading gives dictionary-typed arrays, at every nesting level.
  CHECK(arrow::to_string(*batch.columns[0]->type) == "dictionary<int32, utf8>");
  CHECK(arrow::to_string(*batch.columns[1]->type) == "dictionary<uint8, int64>");
  CHECK(arrow::to_string(*batch.columns[2]->type) == "dictionary<int16, binary>");
  CHECK(batch.columns[3]->children.at(1)->type->id == arrow::type_id::dictionary);
  CHECK(batch.columns[4]->children.at(0)->type->id == arrow::type_id::dictionary);
  CHECK(r.schema().fields[0].logical_type == "dict:string:int32:false");
  for (const auto& c : batch.columns) CHECK_NOTHROW(arrow::validate(c));
  const auto view = lancedb_read(theirs_path);
  CHECK(view.schema.find("\"type\":\"dictionary\"") != std::string::npos);
  check_lancedb_rows(our_rows(batch), view.rows);

  // Our dataset of the same batch: LanceDB reads dictionaries with the same values.
  const auto ours_path = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = file_version_of(version);
  dataset::write(ours_path.string(), batch, o);
  const auto back = lancedb_read(ours_path);
  CHECK(back.schema == view.schema);
  check_lancedb_rows(back.rows, view.rows);
  const auto our_files = t::data_files(ours_path);
  REQUIRE(our_files.size() == 1);
  lance_reader mine{io::file_source(our_files[0].string())};
  CHECK(mine.schema() == r.schema());
  if (const char* keep = std::getenv("LANCET_TYPES_KEEP")) {  // for lance-inspect
    std::filesystem::copy_file(files[0], std::string(keep) + "/theirs-" + version + ".lance",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(our_files[0], std::string(keep) + "/ours-" + version + ".lance",
                               std::filesystem::copy_options::overwrite_existing);
  }
  // Column metadata: the same page encodings and buffer sizes as Lance's.
  REQUIRE(mine.num_columns() == r.num_columns());
  for (std::size_t c = 0; c < r.num_columns(); ++c) {
    CAPTURE(c);
    const auto& a = r.column(c).metadata.pages;
    const auto& b = mine.column(c).metadata.pages;
    REQUIRE(a.size() == b.size());
    for (std::size_t p = 0; p < a.size(); ++p) {
      CHECK(a[p].encoding->direct_any().value == b[p].encoding->direct_any().value);
      CHECK(a[p].buffer_sizes == b[p].buffer_sizes);
    }
  }
}

}  // namespace

TEST_CASE("interop dictionary 2.0") { check_dictionary_interop("2.0"); }
TEST_CASE("interop dictionary 2.1") { check_dictionary_interop("2.1"); }
TEST_CASE("interop dictionary 2.2") { check_dictionary_interop("2.2"); }

// ---- blob v2 writes -------------------------------------------------------------------

namespace {

using lancet::testing::blob_value;
using lancet::testing::fnv1a;

}  // namespace

TEST_CASE("interop blob v2 2.2: LanceDB reads the bytes of blobs we wrote (10 B, 100 KiB, 20 MiB)") {
  t::temp_dir dir("interop-blobv2");
  const std::vector<std::optional<std::size_t>> sizes{10, 100 * 1024, std::nullopt, 0, 20u << 20, 5};
  std::vector<std::optional<std::string>> data;
  std::vector<std::optional<std::string>> uris;
  std::vector<std::optional<std::int64_t>> ids;
  std::vector<bool> valid;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    ids.push_back(std::int64_t(g));
    data.push_back(sizes[g] ? std::optional<std::string>(blob_value(*sizes[g], g)) : std::nullopt);
    uris.push_back(std::nullopt);
    valid.push_back(sizes[g].has_value());
  }
  auto blob_type = arrow::struct_({arrow::field{"data", arrow::large_binary(), true, {}},
                                   arrow::field{"uri", arrow::utf8(), true, {}}});
  auto blob = arrow::make_struct({arrow::field{"data", arrow::large_binary(), true, {}}, arrow::field{"uri", arrow::utf8(), true, {}}},
                                 {arrow::large_binary_array(data), arrow::string_array(uris)}, valid);
  auto schema = std::make_shared<arrow::schema>();
  schema->fields.push_back({"id", arrow::int64(), false, {}});
  schema->fields.push_back({"blob", blob_type, true, {{"ARROW:extension:name", "lance.blob.v2"}}});
  arrow::record_batch batch{schema, {arrow::make_array_from<std::int64_t>(ids), blob}};
  const auto path = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(path.string(), batch, o);

  // LanceDB's fetchBlobs returns every value's bytes.
  std::istringstream lines(t::node("blob_fetch.mjs", {path.string(), "blob"}));
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  REQUIRE(got.size() == sizes.size());
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    CAPTURE(g);
    const std::string want = sizes[g] ? R"({"id":")" + std::to_string(g) + R"(","size":)" + std::to_string(*sizes[g]) +
                                            R"(,"fnv":)" + std::to_string(fnv1a(*data[g])) + "}"
                                      : R"({"id":")" + std::to_string(g) + R"(","blob":null})";
    CHECK(got[g] == want);
  }
  // The data file holds descriptions as Lance 12 stores them (schema and layout).
  const auto files = t::data_files(path);
  REQUIRE(files.size() == 1);
  lance_reader r{io::file_source(files[0].string())};
  const auto& f = r.schema().fields.at(1);
  CHECK(f.logical_type == "struct");
  CHECK(f.metadata_value("lance-encoding:blob") == std::optional<std::string_view>("true"));
  REQUIRE(f.children.size() == 5);
  CHECK(f.children[0].id == -1);
  CHECK(f.children[4].name == "blob_uri");
  auto descs = r.read({.columns = {"blob"}});
  const auto& d = *descs.columns[0];
  CHECK(d.is_null(2));
  CHECK(d.children.at(2)->value<std::uint64_t>(4) == (20u << 20));
}

// ---- random tables --------------------------------------------------------------------

// LanceDB writes random tables with dictionaries at every nesting level (and maps at
// 2.2); we read each as LanceDB does, and LanceDB reads our dataset of what we read the
// same way (types included). Cases per version: LANCET_TYPES_RANDOM_CASES (default 34,
// 102 tables over the three versions).
TEST_CASE("interop random tables with maps and dictionaries, both directions") {
  int cases = 34;
  if (const char* e = std::getenv("LANCET_TYPES_RANDOM_CASES")) cases = std::max(1, std::atoi(e));
  for (const std::string version : {"2.0", "2.1", "2.2"}) {
    CAPTURE(version);
    t::temp_dir dir("interop-types-random");
    const auto text = t::node("types_roundtrip.mjs", {"random", dir.path().string(), "--cases", std::to_string(cases),
                                                      "--version", version, "--seed", std::to_string(7 + version.back())});
    REQUIRE(text.find("\"cases\"") != std::string::npos);
    // LanceDB reads all its tables in one process, then all of ours.
    std::vector<std::filesystem::path> theirs_paths, ours_paths;
    for (int c = 0; c < cases; ++c) {
      theirs_paths.push_back(dir.path() / ("case-" + std::to_string(c)));
      ours_paths.push_back(dir.path() / ("ours-" + std::to_string(c)));
    }
    const auto views = lancedb_read_many(theirs_paths);
    for (int c = 0; c < cases; ++c) {
      CAPTURE(c);
      std::vector<arrow::record_batch> batches;
      for (const auto& f : t::data_files(theirs_paths[c])) {
        lance_reader r{io::file_source(f.string())};
        batches.push_back(r.read());
      }
      REQUIRE(batches.size() == 1);
      check_lancedb_rows(our_rows(batches[0]), views[c].rows);
      dataset::write_options o;
      o.storage_version = file_version_of(version);
      dataset::write(ours_paths[c].string(), batches[0], o);
    }
    const auto backs = lancedb_read_many(ours_paths);
    for (int c = 0; c < cases; ++c) {
      CAPTURE(c);
      CHECK(backs[c].schema == views[c].schema);
      check_lancedb_rows(backs[c].rows, views[c].rows);
    }
  }
}

// ---- large_list -----------------------------------------------------------------------

// Arrow JS can neither build nor decode large_list, so LanceDB's Rust side does the work
// (tests/interop/large_list.mjs): LanceDB writes datasets from Arrow IPC files holding
// large_list columns (a fixed table of nulls, empty lists, large_list<struct<...,
// large_list<utf8>>>, large_list<large_list>, large_list<fixed_size_list>, a struct of a
// large_list, a list of large_lists; then random tables); we read each and compare types
// and values with what was sent. We write the same batch; LanceDB reads both datasets with
// arrow_typeof (which must say LargeList, the same for both) and arrow_cast to List, and
// its values must be the ones sent. Random tables per version: LANCET_LARGE_LIST_CASES
// (default 4).
namespace {

struct sent_dataset {
  std::string dir;
  std::vector<std::pair<std::string, std::string>> types;  // column, arrow::to_string
  std::vector<std::string> rows;
};

std::vector<sent_dataset> parse_sent(const std::string& text) {
  std::istringstream lines(text);
  std::vector<sent_dataset> out;
  for (std::string l; std::getline(lines, l);) {
    if (l.starts_with("dataset ")) {
      out.push_back({l.substr(8), {}, {}});
    } else if (l.starts_with("type ") && !out.empty()) {
      const auto sp = l.find(' ', 5);
      REQUIRE(sp != std::string::npos);
      out.back().types.emplace_back(l.substr(5, sp - 5), l.substr(sp + 1));
    } else if (l.starts_with("row ") && !out.empty()) {
      out.back().rows.push_back(l.substr(4));
    } else {
      FAIL("unexpected line from large_list.mjs: " << l);
    }
  }
  return out;
}

// LanceDB's views of many datasets (each with the columns to read), one Node process
// (large_list.mjs read-many), in the order given.
std::vector<lancedb_view> lancedb_read_large(const std::vector<std::pair<std::filesystem::path, std::string>>& datasets) {
  std::vector<std::string> args = {"read-many"};
  for (const auto& [d, columns] : datasets) {
    args.push_back(d.string());
    args.push_back(columns);
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& d : datasets) paths.push_back(d.first);
  return parse_views(t::node("large_list.mjs", args), paths);
}

}  // namespace

TEST_CASE("interop large_list: LanceDB writes it from Arrow IPC and reads ours, values and types") {
  int cases = 4;
  if (const char* e = std::getenv("LANCET_LARGE_LIST_CASES")) cases = std::max(0, std::atoi(e));
  for (const std::string version : {"2.0", "2.1", "2.2"}) {
    CAPTURE(version);
    t::temp_dir dir("interop-large-list");
    const auto sent = parse_sent(t::node("large_list.mjs", {"write", (dir.path() / "theirs").string(), "--version", version,
                                                            "--cases", std::to_string(cases), "--seed",
                                                            std::to_string(11 + version.back())}));
    REQUIRE(sent.size() == std::size_t(cases) + 1);
    int n = 0;
    std::vector<std::pair<std::filesystem::path, std::string>> to_read;  // theirs, ours per dataset sent
    for (const auto& s : sent) {
      CAPTURE(s.dir);
      const auto files = t::data_files(s.dir);
      REQUIRE(files.size() == 1);
      lance_reader r{io::file_source(files[0].string())};
      CHECK(r.version() == file_version_of(version));
      const auto batch = r.read();
      // Our reader gives the types and values sent.
      REQUIRE(batch.schema->fields.size() == s.types.size());
      std::string columns;
      for (std::size_t c = 0; c < s.types.size(); ++c) {
        CAPTURE(c);
        CHECK(batch.schema->fields[c].name == s.types[c].first);
        CHECK(arrow::to_string(*batch.columns[c]->type) == s.types[c].second);
        CHECK_NOTHROW(arrow::validate(batch.columns[c]));
        columns += (c ? "," : "") + s.types[c].first;
      }
      check_lancedb_rows(our_rows(batch), s.rows);
      // Our dataset of the batch (LanceDB reads both, below).
      const auto ours = dir.path() / ("ours-" + std::to_string(n++));
      dataset::write_options o;
      o.storage_version = file_version_of(version);
      dataset::write(ours.string(), batch, o);
      to_read.emplace_back(s.dir, columns);
      to_read.emplace_back(ours, columns);
      // The Lance schema (large_list logical types, in the manifest and the data file)
      // and page layouts are Lance's.
      const auto their_manifest = dataset::dataset::open(s.dir).lance_schema();
      CHECK(dataset::dataset::open(ours.string()).lance_schema() == their_manifest);
      REQUIRE(their_manifest.fields.size() == s.types.size());
      for (std::size_t c = 0; c < s.types.size(); ++c)
        if (s.types[c].second.starts_with("large_list<")) CHECK(their_manifest.fields[c].logical_type.starts_with("large_list"));
      check_same_layout(r, ours);
    }
    // LanceDB reads its own datasets (LargeList types, the values sent) and ours (the
    // same types and values), all in one process.
    const auto views = lancedb_read_large(to_read);
    for (std::size_t i = 0; i < sent.size(); ++i) {
      CAPTURE(sent[i].dir);
      const auto& view = views[2 * i];
      const auto& back = views[2 * i + 1];
      CHECK(view.schema.find("LargeList(") != std::string::npos);
      check_lancedb_rows(view.rows, sent[i].rows);
      CHECK(back.schema == view.schema);
      check_lancedb_rows(back.rows, sent[i].rows);
    }
  }
}
