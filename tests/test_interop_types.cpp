// Interop for map columns (2.2) and dictionary fields (2.0 - 2.2), LanceDB 0.39 (Lance
// 12) as the oracle (tests/interop/types_roundtrip.mjs): we read what LanceDB wrote,
// LanceDB reads what we wrote, values and types.
#include <doctest/doctest.h>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/arrow/dictionary.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/file/versions.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/json/rows_writer.hpp>
#include <cstdlib>
#include <sstream>

#include "support/interop.hpp"

using namespace lancet;
namespace t = lancet::testing;

namespace {

using lance_reader = file::file_reader<io::file_source>;

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

std::vector<std::string> our_rows(const arrow::record_batch& b) {
  std::istringstream lines(json::rows_to_json(b, json::write_options::canonical()));
  std::vector<std::string> out;
  for (std::string l; std::getline(lines, l);) out.push_back(l);
  return out;
}

void check_rows(const std::vector<std::string>& got, const std::vector<std::string>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == expected[i]);
  }
}

file::format_version version_of(const std::string& v) {
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
  check_rows(our_rows(batch), view.rows);

  // Our 2.2 dataset of the same batch: LanceDB reads the same rows and map types.
  const auto ours_path = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(ours_path.string(), batch, o);
  const auto back = lancedb_read(ours_path);
  CHECK(back.schema == view.schema);
  check_rows(back.rows, view.rows);
  // Our file's schema and column layout are Lance's (same fields, same page layouts).
  const auto our_files = t::data_files(ours_path);
  REQUIRE(our_files.size() == 1);
  lance_reader mine{io::file_source(our_files[0].string())};
  CHECK(mine.schema() == r.schema());
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
  CHECK(r.version() == version_of(version));
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
  check_rows(our_rows(batch), view.rows);

  // Our dataset of the same batch: LanceDB reads dictionaries with the same values.
  const auto ours_path = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = version_of(version);
  dataset::write(ours_path.string(), batch, o);
  const auto back = lancedb_read(ours_path);
  CHECK(back.schema == view.schema);
  check_rows(back.rows, view.rows);
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
