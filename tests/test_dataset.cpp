// Datasets: create / append / overwrite, manifests and transactions as Lance 12
// writes them, crash-safe commits (failing sinks, writers killed mid-append, racing
// writers), open / versions / scan / take, deletion files (both kinds, from files
// LanceDB 0.39 wrote) and stable row ids.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/arrow_ipc.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/deletion.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/encoding/structural/policy.hpp>
#include <lancet/dataset/write_json_lines.hpp>
#include <lancet/pb/file2.hpp>
#include <lancet/pb/encodings_v2_1.hpp>
#include <lancet/io/file_source.hpp>
#include <sstream>
#include <lancet/file/reader.hpp>
#include <lancet/io/file_sink.hpp>

#include "support/array_checks.hpp"
#include "support/dataset_writes.hpp"
#include "support/files.hpp"
#include "support/ids.hpp"
#include "support/kill_child.hpp"
#include "support/random_data.hpp"
#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::check_same;
using lancet::testing::files_under;
using lancet::testing::iota_ids;
using lancet::testing::opts;
using lancet::testing::racing_factory;
using lancet::testing::scratch_dir;

// id: int64 (start..start+n), name: utf8 with nulls, vec: fixed_size_list<float32, 4>.
record_batch sample_batch(std::int64_t start, std::int64_t n) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::vector<std::optional<std::string>> names(static_cast<std::size_t>(n));
  std::vector<float> vec(std::size_t(n) * 4);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto v = start + i;
    ids[std::size_t(i)] = v;
    if (v % 7 != 3) names[std::size_t(i)] = "name-" + std::to_string(v);
    for (int k = 0; k < 4; ++k) vec[std::size_t(i * 4 + k)] = float(v) + 0.25f * float(k);
  }
  return make_batch({{"id", make_array<std::int64_t>(ids)},
                     {"name", string_array(names)},
                     {"vec", make_fixed_size_list(make_array<float>(vec), 4)}});
}

std::vector<std::int64_t> column_ids(const record_batch& b, std::size_t col = 0) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i) out.push_back(b.columns[col]->value<std::int64_t>(i));
  return out;
}

}  // namespace

TEST_CASE("create: one fragment, manifest and transaction as Lance 12 writes them") {
  scratch_dir t("create");
  const auto root = t.sub("ds");
  auto r = ds::write(root, sample_batch(0, 100));
  CHECK(r.version == 1);
  CHECK(r.rows_written == 100);
  REQUIRE(r.fragments.size() == 1);
  CHECK(r.fragments[0].id() == 0);

  // Layout: v2 manifest name, hint, transaction file, one data file with a Lance-style name.
  CHECK(files_under(root + "/_versions") ==
        std::vector<std::string>{"18446744073709551614.manifest", "latest_version_hint.json"});
  std::ifstream hint(root + "/_versions/latest_version_hint.json");
  std::string hint_text((std::istreambuf_iterator<char>(hint)), std::istreambuf_iterator<char>());
  CHECK(hint_text == "{\"version\":1}");
  auto data = files_under(root + "/data");
  REQUIRE(data.size() == 1);
  CHECK(data[0].size() == 50 + 6);
  CHECK(data[0].substr(0, 24).find_first_not_of("01") == std::string::npos);
  CHECK(data[0].substr(24, 26).find_first_not_of("0123456789abcdef") == std::string::npos);
  auto txns = files_under(root + "/_transactions");
  REQUIRE(txns.size() == 1);
  CHECK(txns[0].rfind("0-", 0) == 0);
  CHECK(txns[0].size() == 2 + 36 + 4);

  auto mf = ds::read_manifest_file_at(root + "/_versions/18446744073709551614.manifest");
  const auto& m = mf.manifest;
  CHECK(m.version == 1);
  CHECK(m.writer_version->library == "lancet");
  CHECK(m.data_format->file_format == "lance");
  CHECK(m.data_format->version == std::string(file::to_string(r.storage_version)));
  CHECK(m.max_fragment_id == std::optional<std::uint32_t>(0));
  CHECK(m.transaction_file == txns[0]);
  CHECK(m.transaction_section == std::optional<std::uint64_t>(0));
  CHECK(m.timestamp.has_value());
  CHECK(m.reader_feature_flags == 0);
  CHECK(m.writer_feature_flags == 0);
  REQUIRE(m.fragments.size() == 1);
  const auto& f = m.fragments[0];
  CHECK(f.physical_rows == 100);
  REQUIRE(f.files.size() == 1);
  CHECK(f.files[0].path == data[0]);
  CHECK(f.files[0].file_major_version == 2);
  CHECK(f.files[0].file_size_bytes == fs::file_size(root + "/data/" + data[0]));
  // 2.0: every field (id, name, vec) has a column.
  CHECK(f.files[0].fields == std::vector<std::int32_t>{0, 1, 2});
  CHECK(f.files[0].column_indices == std::vector<std::int32_t>{0, 1, 2});

  // The inline transaction and the .txn file: an Overwrite of read version 0.
  REQUIRE(mf.transaction.has_value());
  const auto& txn = *mf.transaction;
  CHECK(txn.read_version == 0);
  CHECK(txn.file_name() == txns[0]);
  auto* op = std::get_if<pb::transaction::overwrite>(&txn.operation);
  REQUIRE(op != nullptr);
  CHECK(op->fragments.size() == 1);
  CHECK(op->fragments[0].id == 0);
  CHECK(op->schema_raw == m.fields_raw);
  auto file_txn = ds::decode_transaction_file(ds::read_small_file(root + "/_transactions/" + txns[0]));
  CHECK(file_txn == txn);

  auto d = ds::dataset::open(root);
  CHECK(d.version() == 1);
  CHECK(d.count_rows() == 100);
  CHECK(d.schema().fields.size() == 3);
  auto all = d.to_batch();
  auto expected = sample_batch(0, 100);
  for (std::size_t c = 0; c < 3; ++c) check_same(expected.columns[c], all.columns[c], expected.schema->fields[c].name);
}

namespace {

ds::scan_options scan_cols(std::vector<std::string> cols) {
  ds::scan_options o;
  o.columns = std::move(cols);
  return o;
}

std::vector<std::int64_t> live_ids(const ds::dataset& d) { return column_ids(d.to_batch(scan_cols({"id"}))); }

fs::path dataset_fixture(const std::string& name) { return fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "datasets" / name; }

// A copy of a fixture dataset that a test may change.
std::string copy_fixture(const scratch_dir& t, const std::string& name) {
  const auto dst = t.sub(name);
  fs::copy(dataset_fixture(name), dst, fs::copy_options::recursive);
  return dst;
}

}  // namespace

TEST_CASE("append: new fragment ids, kept storage version, Append transaction, old versions stay") {
  scratch_dir t("append");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 50));
  auto r = ds::write(root, std::vector<record_batch>{sample_batch(50, 20), sample_batch(70, 5)}, opts(ds::write_mode::append));
  CHECK(r.version == 2);
  CHECK(r.rows_written == 25);
  REQUIRE(r.fragments.size() == 1);
  CHECK(r.fragments[0].id() == 1);
  auto r3 = ds::write(root, sample_batch(75, 5), opts(ds::write_mode::append));
  CHECK(r3.version == 3);
  CHECK(r3.fragments.at(0).id() == 2);

  auto d = ds::dataset::open(root);
  CHECK(d.version() == 3);
  CHECK(d.count_rows() == 80);
  CHECK(live_ids(d) == iota_ids(0, 80));
  CHECK(d.manifest().max_fragment_id == std::optional<std::uint32_t>(2));
  CHECK(d.manifest().data_format->version == d.checkout(1).manifest().data_format->version);
  REQUIRE(d.transaction().has_value());
  CHECK(d.transaction()->read_version == 2);
  auto* op = std::get_if<pb::transaction::append>(&d.transaction()->operation);
  REQUIRE(op != nullptr);
  REQUIRE(op->fragments.size() == 1);
  CHECK(op->fragments[0].id == 0);  // unassigned in the transaction, as Lance records it
  CHECK(op->fragments[0].physical_rows == 5);
  CHECK(files_under(root + "/_transactions").size() == 3);

  // Every version opens and keeps its rows.
  auto vs = d.versions();
  REQUIRE(vs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(vs[i].version == i + 1);
    CHECK(vs[i].writer == "lancet 0.1.0");
    CHECK(vs[i].timestamp_nanos.has_value());
  }
  CHECK(live_ids(d.checkout(1)) == iota_ids(0, 50));
  CHECK(live_ids(ds::dataset::open(root, 2)) == iota_ids(0, 75));
  CHECK_THROWS_AS(ds::dataset::open(root, 9), invalid_input_error);
  CHECK_THROWS_AS(ds::dataset::open(t.sub("nothing")), not_found_error);
}

TEST_CASE("fragments split at max_rows_per_file across batches, and by bytes") {
  scratch_dir t("split");
  const auto root = t.sub("ds");
  std::vector<record_batch> batches{sample_batch(0, 17), sample_batch(17, 45), sample_batch(62, 0), sample_batch(62, 38)};
  auto r = ds::write(root, batches, opts(ds::write_mode::create, 30));
  REQUIRE(r.fragments.size() == 4);
  std::vector<std::uint64_t> rows;
  for (const auto& f : r.fragments) rows.push_back(f.physical_rows());
  CHECK(rows == std::vector<std::uint64_t>{30, 30, 30, 10});
  auto d = ds::dataset::open(root);
  CHECK(d.fragments().size() == 4);
  CHECK(d.fragments()[3].id == 3);
  CHECK(live_ids(d) == iota_ids(0, 100));
  CHECK(files_under(root + "/data").size() == 4);

  // ~8 + 4 + 16 bytes a row: a 1,000-byte limit closes files every ~35 rows.
  const auto root2 = t.sub("bytes");
  auto o = opts(ds::write_mode::create);
  o.max_bytes_per_file = 1000;
  auto r2 = ds::write(root2, sample_batch(0, 200), o);
  CHECK(r2.fragments.size() >= 5);
  for (const auto& f : r2.fragments) CHECK(f.physical_rows() <= 50);
  CHECK(live_ids(ds::dataset::open(root2)) == iota_ids(0, 200));

  CHECK_THROWS_AS(ds::write(t.sub("bad"), sample_batch(0, 1), opts(ds::write_mode::create, 0)), invalid_input_error);
}

TEST_CASE("a large batch reaches the file writer max_rows_per_group rows at a time: 2.2 pages close near 8 MiB") {
  scratch_dir t("groups");
  const auto root = t.sub("ds");
  constexpr std::int64_t n = 40000, dim = 128;  // 512 bytes a row, 20 MB in one batch
  std::vector<std::int64_t> ids(n);
  std::vector<float> vec(std::size_t(n * dim));
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = i;
  for (std::size_t i = 0; i < vec.size(); ++i) vec[i] = float(i % 977) * 0.5f;
  auto batch = make_batch({{"id", make_array<std::int64_t>(ids)}, {"vec", make_fixed_size_list(make_array<float>(vec), dim)}});
  auto o = opts(ds::write_mode::create);
  o.storage_version = file::format_version::v2_2;
  ds::write(root, batch, o);
  auto d = ds::dataset::open(root);
  REQUIRE(d.fragments().size() == 1);
  const auto snap = ds::load_latest(root);
  file::file_reader<io::file_source> r{io::file_source(
      ds::data_file_path(root, snap->manifest(), snap->manifest().fragments.at(0).files.at(0)))};
  // Pages of the vector column hold groups of 1,024 rows until more than 8 MiB (16,384
  // rows) have accumulated, instead of the whole 20 MB batch in one page.
  const auto& pages = r.column(1).metadata.pages;
  REQUIRE(pages.size() == 3);
  CHECK(pages[0].length == 17408);
  CHECK(pages[1].length == 17408);
  CHECK(pages[2].length == std::uint64_t(n) - 2 * 17408);
  CHECK(array_equals(*d.to_batch({}).columns[1], *batch.columns[1]));

  o.max_rows_per_group = 0;
  CHECK_THROWS_AS(ds::write(t.sub("bad"), batch, o), invalid_input_error);
}

TEST_CASE("overwrite: new schema and fragments from id 0, history kept, indices dropped") {
  scratch_dir t("overwrite");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 10), opts(ds::write_mode::create, 4));
  CHECK(ds::dataset::open(root).manifest().max_fragment_id == std::optional<std::uint32_t>(2));
  auto b = make_batch({{"x", make_array<std::int32_t>({1, 2, 3})}});
  auto r = ds::write(root, b, opts(ds::write_mode::overwrite));
  CHECK(r.version == 2);
  REQUIRE(r.fragments.size() == 1);
  CHECK(r.fragments[0].id() == 0);
  auto d = ds::dataset::open(root);
  REQUIRE(d.schema().fields.size() == 1);
  CHECK(d.schema().fields[0].name == "x");
  CHECK(d.count_rows() == 3);
  CHECK(d.manifest().max_fragment_id == std::optional<std::uint32_t>(2));  // never lowered, as Lance
  auto* op = std::get_if<pb::transaction::overwrite>(&d.transaction()->operation);
  REQUIRE(op != nullptr);
  CHECK(d.transaction()->read_version == 1);
  CHECK(d.checkout(1).count_rows() == 10);
  CHECK(d.checkout(1).schema().fields.size() == 3);
  // Overwrite of nothing creates; append of nothing creates.
  CHECK(ds::write(t.sub("fresh"), b, opts(ds::write_mode::overwrite)).version == 1);
  CHECK(ds::write(t.sub("fresh2"), b, opts(ds::write_mode::append)).version == 1);
}

TEST_CASE("schema checks: create on an existing dataset, differing schemas name the field") {
  scratch_dir t("schema");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 10));
  const auto before = files_under(root, true, true);
  auto expect_error = [&](const record_batch& b, const std::string& needle) {
    try {
      ds::write(root, b, opts(ds::write_mode::append));
      FAIL("append should have failed");
    } catch (const invalid_input_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
    CHECK(files_under(root, true, true) == before);  // nothing written, nothing left behind
  };
  CHECK_THROWS_AS(ds::write(root, sample_batch(0, 1)), invalid_input_error);
  auto full = sample_batch(0, 3);
  expect_error(make_batch({{"id", full.columns[0]}, {"vec", full.columns[2]}}), "field 'name': the dataset has it");
  expect_error(make_batch({{"id", full.columns[0]}, {"name", full.columns[1]}, {"vec", full.columns[2]},
                           {"extra", make_array<std::int32_t>({1, 2, 3})}}),
               "field 'extra': the data has it");
  expect_error(make_batch({{"id", make_array<std::int32_t>({1, 2, 3})}, {"name", full.columns[1]}, {"vec", full.columns[2]}}),
               "field 'id': the data is int32, the dataset has int64");
  expect_error(make_batch({{"id", full.columns[0]}, {"name", full.columns[1]},
                           {"vec", make_fixed_size_list(make_array<float>(std::vector<float>(9, 1.f)), 3)}}),
               "field 'vec'");
  // Columns in another order are fine.
  auto r = ds::write(root, make_batch({{"vec", full.columns[2]}, {"id", full.columns[0]}, {"name", full.columns[1]}}),
                     opts(ds::write_mode::append));
  CHECK(r.version == 2);
  CHECK(live_ids(ds::dataset::open(root)) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2});
  // Appending a different storage version is refused.
  auto o = opts(ds::write_mode::append);
  o.storage_version = ds::dataset::open(root).storage_version() == file::format_version::v2_0 ? file::format_version::v2_1
                                                                                              : file::format_version::v2_0;
  CHECK_THROWS_AS(ds::write(root, full, o), invalid_input_error);
}

TEST_CASE("non-nullable fields: nulls refused with the field named, the dataset unchanged") {
  scratch_dir t("nonnull");
  const auto root = t.sub("ds");
  auto s = std::make_shared<arrow::schema>();
  s->fields.push_back(field{"id", int32(), false, {}});
  s->fields.push_back(field{"st", struct_({field{"a", int32(), false, {}}}), true, {}});
  auto good = make_batch(s, {make_array<std::int32_t>({1, 2}), make_struct({field{"a", int32(), false, {}}},
                                                                          {make_array<std::int32_t>({5, 6})})});
  ds::write(root, std::vector<record_batch>{good, good}, opts(ds::write_mode::create, 3));
  const auto before = files_under(root, true, true);
  auto bad_top = make_batch({{"id", make_array<std::int32_t>({1, std::nullopt})}, {"st", good.columns[1]}});
  try {
    ds::write(root, std::vector<record_batch>{good, bad_top}, opts(ds::write_mode::append, 3));
    FAIL("expected an error");
  } catch (const invalid_input_error& e) {
    CHECK(std::string(e.what()).find("'id'") != std::string::npos);
  }
  CHECK(files_under(root, true, true) == before);
  auto bad_nested = make_batch({{"id", make_array<std::int32_t>({1, 2})},
                                {"st", struct_array({{"a", make_array<std::int32_t>({std::nullopt, 1})}})}});
  try {
    ds::write(root, bad_nested, opts(ds::write_mode::append));
    FAIL("expected an error");
  } catch (const invalid_input_error& e) {
    CHECK(std::string(e.what()).find("st.a") != std::string::npos);
  }
  CHECK(files_under(root, true, true) == before);
  CHECK(ds::dataset::open(root).count_rows() == 4);
}

TEST_CASE("empty writes: a schema without rows, and no schema at all") {
  scratch_dir t("empty");
  const auto root = t.sub("ds");
  auto o = opts(ds::write_mode::create);
  o.schema = *sample_batch(0, 0).schema;
  auto r = ds::write(root, std::vector<record_batch>{}, o);
  CHECK(r.version == 1);
  CHECK(r.fragments.empty());
  auto d = ds::dataset::open(root);
  CHECK(d.count_rows() == 0);
  CHECK(d.schema().fields.size() == 3);
  CHECK(!d.manifest().max_fragment_id.has_value());
  CHECK(d.to_batch().num_rows() == 0);
  CHECK(ds::write(root, sample_batch(0, 3), opts(ds::write_mode::append)).fragments.at(0).id() == 0);
  CHECK_THROWS_AS(ds::write(t.sub("none"), std::vector<record_batch>{}), invalid_input_error);
  CHECK(!fs::exists(t.sub("none") + "/_versions"));
}

TEST_CASE("v1 manifest names on request; a dataset keeps its naming") {
  scratch_dir t("naming");
  const auto root = t.sub("ds");
  auto o = opts(ds::write_mode::create);
  o.naming = ds::naming_scheme::v1;
  ds::write(root, sample_batch(0, 3), o);
  ds::write(root, sample_batch(3, 3), opts(ds::write_mode::append));
  CHECK(files_under(root + "/_versions") ==
        std::vector<std::string>{"1.manifest", "2.manifest", "latest_version_hint.json"});
  CHECK(ds::dataset::open(root).manifest_naming() == ds::naming_scheme::v1);
  CHECK(live_ids(ds::dataset::open(root)) == iota_ids(0, 6));
}

TEST_CASE("scan: projection, offset/limit across fragments, batch size, row ids and addresses") {
  scratch_dir t("scan");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 100), opts(ds::write_mode::create, 30));
  auto d = ds::dataset::open(root);

  ds::scan_options o;
  o.columns = {"name", "id"};
  o.offset = 25;
  o.limit = 40;
  o.batch_size = 7;
  o.with_row_id = true;
  o.with_row_address = true;
  auto sc = d.scan(o);
  REQUIRE(sc.schema()->fields.size() == 4);
  CHECK(sc.schema()->fields[0].name == "name");
  CHECK(sc.schema()->fields[2].name == "_rowid");
  CHECK(sc.schema()->fields[3].name == "_rowaddr");
  std::vector<std::int64_t> ids;
  std::vector<std::uint64_t> rowids;
  while (auto b = sc.next()) {
    CHECK(b->num_rows() <= 7);
    CHECK(b->num_rows() > 0);
    for (std::int64_t i = 0; i < b->num_rows(); ++i) {
      const auto id = b->columns[1]->value<std::int64_t>(i);
      ids.push_back(id);
      const auto addr = b->columns[3]->value<std::uint64_t>(i);
      CHECK(addr == ds::row_address(std::uint64_t(id) / 30, std::uint64_t(id) % 30));
      CHECK(b->columns[2]->value<std::uint64_t>(i) == addr);
      rowids.push_back(addr);
      CHECK(b->columns[0]->is_valid(i) == (id % 7 != 3));
    }
  }
  CHECK(ids == iota_ids(25, 65));

  // Limits at the edges, offsets past the end, one fragment only.
  ds::scan_options o2;
  o2.offset = 99;
  CHECK(column_ids(d.to_batch(o2)) == std::vector<std::int64_t>{99});
  o2.offset = 100;
  CHECK(d.to_batch(o2).num_rows() == 0);
  o2.offset = 0;
  o2.limit = 0;
  CHECK(d.to_batch(o2).num_rows() == 0);
  ds::scan_options o3;
  o3.fragment_ids = std::vector<std::uint64_t>{2, 0};
  CHECK(column_ids(d.to_batch(o3)) == [] {
    auto v = iota_ids(60, 90);
    auto w = iota_ids(0, 30);
    v.insert(v.end(), w.begin(), w.end());
    return v;
  }());
  o3.fragment_ids = std::vector<std::uint64_t>{7};
  CHECK_THROWS_AS(d.scan(o3), invalid_input_error);
  CHECK_THROWS_AS(d.scan(scan_cols({"nope"})), invalid_input_error);
  ds::scan_options zero;
  zero.batch_size = 0;
  CHECK_THROWS_AS(d.scan(zero), invalid_input_error);

  // take: by row id (= address here), in the given order, repeats allowed.
  std::vector<std::uint64_t> want{rowids[5], rowids[0], rowids[5], ds::row_address(3, 9)};
  auto tk = d.take(want, {"id", "vec"});
  CHECK(column_ids(tk) == std::vector<std::int64_t>{30, 25, 30, 99});
  auto all = sample_batch(0, 100);
  check_same(slice(all.columns[2], 99, 1), slice(tk.columns[1], 3, 1), "vec of row 99");
  CHECK(d.take_addresses(std::vector<std::uint64_t>{ds::row_address(1, 0)}).num_rows() == 1);
  CHECK(d.take(std::vector<std::uint64_t>{}).num_rows() == 0);
  CHECK_THROWS_AS(d.take({ds::row_address(3, 10)}), invalid_input_error);
  CHECK_THROWS_AS(d.take({ds::row_address(9, 0)}), invalid_input_error);
}

namespace {

std::vector<std::int64_t> i32_ids(const record_batch& b, std::size_t col = 0) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i) out.push_back(b.columns[col]->value<std::int32_t>(i));
  return out;
}

// The ids LanceDB left in deletions_2.0 (see tests/interop/dataset_fixtures.mjs).
std::vector<std::int64_t> fixture_deletions_ids() {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < 100; ++i)
    if (i % 10 != 3) v.push_back(i);
  for (std::int64_t i = 6100; i < 8100; ++i) v.push_back(i);
  for (std::int64_t i = 8100; i < 11100; ++i)
    if (i >= 11000 || i % 2 != 0) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("Arrow IPC deletion files LanceDB wrote: uncompressed and ZSTD bodies") {
  const auto dir = dataset_fixture("deletions_2.0") / "_deletions";
  int arrow_files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".arrow") continue;
    ++arrow_files;
    const auto bytes = ds::read_small_file(e.path().string());
    const bytes_view view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    auto data = ds::ipc::read_ipc(view, e.path().string());
    REQUIRE(data.schema.fields.size() == 1);
    CHECK(data.schema.fields[0].name == "row_id");
    CHECK(data.schema.fields[0].type->id == type_id::uint32);
    CHECK_FALSE(data.schema.fields[0].nullable);
    REQUIRE(data.batches.size() == 1);
    const auto& col = *data.batches[0].columns[0];
    const auto name = e.path().filename().string();
    // Lance writes the offsets in hash-set order, not sorted.
    if (name.rfind("0-", 0) == 0) {  // fragment 0: ids 3, 13, ..., 93 are offsets 3, 13, ...
      REQUIRE(col.length == 10);
      std::set<std::uint32_t> got;
      for (std::int64_t i = 0; i < 10; ++i) got.insert(col.value<std::uint32_t>(i));
      CHECK(got == std::set<std::uint32_t>{3, 13, 23, 33, 43, 53, 63, 73, 83, 93});
    } else {  // fragment 2 (first id 8100): even ids below 11000 -> even offsets below 2900
      REQUIRE(col.length == 1450);
      std::set<std::uint32_t> got;
      for (std::int64_t i = 0; i < col.length; ++i) got.insert(col.value<std::uint32_t>(i));
      CHECK(got.size() == 1450);
      CHECK(*got.begin() == 0);
      CHECK(*got.rbegin() == 2898);
      CHECK(std::all_of(got.begin(), got.end(), [](std::uint32_t v) { return v % 2 == 0; }));
    }
    // Every truncation is refused cleanly.
    for (std::size_t cut = 0; cut < bytes.size(); cut += 7)
      CHECK_THROWS_AS(ds::ipc::read_ipc(view.first(cut)), error);
    // Flipped bytes never crash.
    std::mt19937 rng(7);
    for (int k = 0; k < 300; ++k) {
      std::string bad = bytes;
      bad[rng() % bad.size()] = char(rng());
      try {
        (void)ds::ipc::read_ipc(bytes_view(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size()));
      } catch (const error&) {
      }
    }
  }
  CHECK(arrow_files == 2);
}

// Found by tests/fuzz/fuzz_deletion: a compressed buffer's length prefix claiming 4 GiB
// made the reader allocate (and zero) 4 GiB before finding the data was 5,800 bytes.
TEST_CASE("Arrow IPC: a compressed buffer's claimed length is checked against its data, not allocated") {
  const auto path = dataset_fixture("deletions_2.0") / "_deletions" / "2-5-16639781602694490982.arrow";
  const auto bytes = ds::read_small_file(path.string());
  const std::string prefix("\xa8\x16\0\0\0\0\0\0", 8);  // 5,800 bytes: 1,450 uint32 offsets, ZSTD
  const auto at = bytes.find(prefix);
  REQUIRE(at != std::string::npos);
  const auto with_claim = [&](std::int64_t n) {
    std::string bad = bytes;
    le::store(bad.data() + at, n);
    return bad;
  };
  const auto read = [](const std::string& b) {
    return ds::ipc::read_ipc(bytes_view(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()), "del.arrow");
  };
  CHECK(read(with_claim(5800)).batches.at(0).columns.at(0)->length == 1450);
  struct rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  CHECK_THROWS_WITH_AS(read(with_claim(std::int64_t(1) << 32)),
                       doctest::Contains("zstd buffer does not decompress to its 4294967296 bytes"), corrupt_error);
  getrusage(RUSAGE_SELF, &after);
  CHECK(after.ru_maxrss - before.ru_maxrss < 256 * 1024);  // KiB: far less than the 4 GiB claimed
  CHECK_THROWS_WITH_AS(read(with_claim(5799)), doctest::Contains("does not decompress to its 5799 bytes"), corrupt_error);
  CHECK_THROWS_WITH_AS(read(with_claim(5801)), doctest::Contains("does not decompress to its 5801 bytes"), corrupt_error);
}

TEST_CASE("deletions LanceDB wrote (Arrow and bitmap kinds) are skipped by scans, counts and takes") {
  auto d = ds::dataset::open(dataset_fixture("deletions_2.0").string());
  CHECK(d.version() == 6);
  CHECK(d.count_rows() == 3640);
  const auto want = fixture_deletions_ids();
  CHECK(i32_ids(d.to_batch()) == want);
  auto frags = d.fragments();
  REQUIRE(frags.size() == 3);
  CHECK(frags[0].deleted_rows == 10);
  CHECK(frags[1].deleted_rows == 6000);
  CHECK(frags[1].deletion_file->ends_with(".bin"));
  CHECK(frags[2].deleted_rows == 1450);
  CHECK(d.deleted_rows(1).size() == 6000);

  // Offsets and limits count live rows only; small batches cross deletions.
  for (std::uint64_t off : {0, 1, 89, 90, 91, 2089, 2090, 3639, 3640}) {
    for (std::uint64_t lim : {1, 5, 1000}) {
      ds::scan_options o;
      o.offset = off;
      o.limit = lim;
      o.batch_size = 3;
      o.with_row_address = true;
      o.read_ahead_bytes = lim == 5 ? 1 : 64 << 20;  // batch by batch, or from a decoded chunk
      std::vector<std::int64_t> got;
      auto sc = d.scan(o);
      while (auto b = sc.next()) {
        CHECK(b->num_rows() <= 3);
        auto part = i32_ids(*b);
        got.insert(got.end(), part.begin(), part.end());
      }
      const auto end = std::min<std::uint64_t>(want.size(), off + lim);
      std::vector<std::int64_t> expect(want.begin() + std::ptrdiff_t(std::min<std::uint64_t>(off, want.size())),
                                       want.begin() + std::ptrdiff_t(end));
      INFO("offset " << off << " limit " << lim);
      CHECK(got == expect);
    }
  }
  // Deleted rows cannot be taken; live ones can.
  CHECK_THROWS_AS(d.take({ds::row_address(0, 3)}), invalid_input_error);
  CHECK_THROWS_AS(d.take({ds::row_address(1, 0)}), invalid_input_error);
  CHECK(i32_ids(d.take({ds::row_address(2, 2999), ds::row_address(0, 4), ds::row_address(1, 6000)})) ==
        std::vector<std::int64_t>{11099, 4, 6100});
  // Older versions know fewer deletions.
  CHECK(d.checkout(3).count_rows() == 11100);
  CHECK(d.checkout(4).count_rows() == 11090);
}

TEST_CASE("stable row ids LanceDB wrote: ids survive updates; take by id") {
  auto d = ds::dataset::open(dataset_fixture("stable_ids_2.0").string());
  CHECK(d.stable_row_ids());
  CHECK(d.count_rows() == 18);
  ds::scan_options o;
  o.with_row_id = true;
  o.with_row_address = true;
  auto b = d.to_batch(o);
  std::vector<std::int64_t> ids = i32_ids(b);
  std::vector<std::int64_t> expect{0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19, 107};
  CHECK(ids == expect);
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    const auto row_id = b.columns[1]->value<std::uint64_t>(i);
    CHECK(row_id == std::uint64_t(ids[std::size_t(i)] == 107 ? 7 : ids[std::size_t(i)]));
  }
  // The updated row lives in a new fragment but keeps row id 7.
  CHECK((b.columns[2]->value<std::uint64_t>(17) >> 32) == 2u);
  CHECK(i32_ids(d.take({7, 0, 19})) == std::vector<std::int64_t>{107, 0, 19});
  CHECK_THROWS_AS(d.take({3}), invalid_input_error);    // deleted
  CHECK_THROWS_AS(d.take({400}), invalid_input_error);  // never existed
  CHECK(d.fragment_row_ids(1).size() == 10);
}

TEST_CASE("appending to and deleting from datasets LanceDB wrote, with and without stable row ids") {
  scratch_dir t("lancedb");
  {
    const auto root = copy_fixture(t, "stable_ids_2.0");
    auto b = make_batch({{"id", make_array<std::int32_t>({500, 501})}});
    auto r = ds::write(root, b, opts(ds::write_mode::append));
    CHECK(r.version == 5);
    auto d = ds::dataset::open(root);
    CHECK(d.count_rows() == 20);
    CHECK(d.manifest().next_row_id == 22);
    // New rows get the next stable ids, as Lance assigns them.
    CHECK(d.fragment_row_ids(r.fragments.at(0).id()) == std::vector<std::uint64_t>{20, 21});
    CHECK(i32_ids(d.take({21, 7})) == std::vector<std::int64_t>{501, 107});
    auto del = ds::delete_rows(root, std::vector<std::uint64_t>{20, 7});
    CHECK(del.version == 6);
    CHECK(del.deleted_rows == 2);
    auto d2 = ds::dataset::open(root);
    CHECK(d2.count_rows() == 18);
    // Fragment 2 held only row id 7: gone with it.
    for (const auto& f : d2.fragments()) CHECK(f.id != 2);
    CHECK(i32_ids(d2.to_batch()).back() == 501);
  }
  {
    const auto root = copy_fixture(t, "deletions_2.0");
    // Delete a few more rows of the bitmap fragment and of the Arrow one.
    auto del = ds::delete_rows(root, std::vector<std::uint64_t>{ds::row_address(1, 6000), ds::row_address(0, 4),
                                                                ds::row_address(0, 3)});
    CHECK(del.deleted_rows == 2);  // 0:3 was deleted already
    auto d = ds::dataset::open(root);
    CHECK(d.count_rows() == 3638);
    CHECK(d.deleted_rows(0).size() == 11);
    CHECK(d.fragments()[0].deletion_file->ends_with(".bin"));
    REQUIRE(d.transaction().has_value());
    CHECK(std::holds_alternative<pb::transaction::delete_rows>(d.transaction()->operation));
    CHECK((d.manifest().reader_feature_flags & ds::feature_flags::deletion_files) != 0);
    auto again = ds::delete_rows(root, std::vector<std::uint64_t>{ds::row_address(0, 4)});
    CHECK(again.version == d.version());  // nothing new: no version
    CHECK(again.deleted_rows == 0);
    CHECK_THROWS_AS(ds::delete_rows(root, std::vector<std::uint64_t>{ds::row_address(0, 100)}), invalid_input_error);
    CHECK_THROWS_AS(ds::delete_rows(root, std::vector<std::uint64_t>{ds::row_address(8, 0)}), invalid_input_error);
    auto r = ds::write(root, make_batch({{"id", make_array<std::int32_t>({-1})}}), opts(ds::write_mode::append));
    CHECK(r.fragments.at(0).id() == 3);
    CHECK(ds::dataset::open(root).count_rows() == 3639);
  }
}

namespace {

// A byte budget shared by every sink of one write: the write that would exceed it
// fails like a full disk; or the finish() of the n-th sink fails.
struct budget {
  std::uint64_t bytes_left = std::numeric_limits<std::uint64_t>::max();
  int fail_finish_of = -1;  // index of the sink whose finish() fails
  int fail_after_finish_of = -1;  // ... fails after publishing (a failed directory fsync)
  int sinks = 0;
  std::uint64_t used = 0;
};

class budget_sink {
 public:
  budget_sink(io::file_sink inner, budget* b) : inner_(std::move(inner)), b_(b), index_(b->sinks++) {}
  void write(bytes_view v) {
    if (v.size() > b_->bytes_left) {
      const auto room = static_cast<std::size_t>(b_->bytes_left);
      inner_.write(v.first(room));
      b_->bytes_left = 0;
      throw io_error("budget_sink: disk full (injected)");
    }
    b_->bytes_left -= v.size();
    b_->used += v.size();
    inner_.write(v);
  }
  std::uint64_t position() const { return inner_.position(); }
  void finish() {
    if (index_ == b_->fail_finish_of) throw io_error("budget_sink: finish failed (injected)");
    inner_.finish();
    if (index_ == b_->fail_after_finish_of) throw io_error("budget_sink: directory fsync failed (injected)");
  }
  void abort() noexcept { inner_.abort(); }

 private:
  io::file_sink inner_;
  budget* b_;
  int index_;
};

struct budget_factory {
  budget* b;
  budget_sink operator()(const std::string& path, const io::file_sink_options& o) const {
    return budget_sink(io::file_sink(path, o), b);
  }
};

std::vector<record_batch> append_batches(std::int64_t start, int n, std::int64_t rows) {
  std::vector<record_batch> v;
  for (int i = 0; i < n; ++i) v.push_back(sample_batch(start + i * rows, rows));
  return v;
}

}  // namespace

TEST_CASE("crash safety: a sink failing at any byte of an append leaves the dataset as it was") {
  scratch_dir t("failing");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 40), opts(ds::write_mode::create, 16));
  const auto batches = append_batches(40, 3, 25);  // 75 rows -> 3 data files of <= 30 rows
  const auto before = files_under(root, true, true);

  // A successful append through the same sinks: how many bytes and sinks it takes.
  std::uint64_t total = 0;
  int sinks = 0;
  {
    scratch_dir t2("failing-probe");
    fs::copy(root, t2.sub("ds"), fs::copy_options::recursive);
    budget b;
    auto r = ds::write(t2.sub("ds"), batches, opts(ds::write_mode::append, 30), budget_factory{&b});
    CHECK(r.fragments.size() == 3);
    total = b.used;
    sinks = b.sinks;
  }
  REQUIRE(sinks == 5);  // 3 data files, the transaction, the manifest
  REQUIRE(total > 1000);

  // The manifest's timestamp is a varint of 1-5 bytes: totals differ by a few bytes
  // between runs, so the last cut stays inside the 16-byte manifest footer.
  std::vector<std::uint64_t> cuts{0, 1, 7, 63, 64, 65, total - 8};
  for (std::uint64_t c = 97; c < total - 8; c += total / 60) cuts.push_back(c);
  for (auto cut : cuts) {
    INFO("failing after " << cut << " of " << total << " bytes");
    budget b;
    b.bytes_left = cut;
    CHECK_THROWS_AS(ds::write(root, batches, opts(ds::write_mode::append, 30), budget_factory{&b}), io_error);
    CHECK(files_under(root, true, true) == before);
    auto d = ds::dataset::open(root);
    CHECK(d.version() == 1);
    CHECK(live_ids(d) == iota_ids(0, 40));
  }
  for (int k = 0; k < sinks; ++k) {
    INFO("failing the finish of sink " << k);
    budget b;
    b.fail_finish_of = k;
    CHECK_THROWS_AS(ds::write(root, batches, opts(ds::write_mode::append, 30), budget_factory{&b}), io_error);
    CHECK(files_under(root, true, true) == before);
    CHECK(ds::dataset::open(root).version() == 1);
  }
  // A data or transaction file that fails after its rename: nothing committed, all removed.
  for (int k = 0; k < sinks - 1; ++k) {
    budget b;
    b.fail_after_finish_of = k;
    CHECK_THROWS_AS(ds::write(root, batches, opts(ds::write_mode::append, 30), budget_factory{&b}), io_error);
    CHECK(files_under(root, true, true) == before);
  }
  // The manifest failing after its rename: the version is committed and keeps its files.
  {
    scratch_dir t3("failing-committed");
    const auto copy = t3.sub("ds");
    fs::copy(root, copy, fs::copy_options::recursive);
    budget b;
    b.fail_after_finish_of = sinks - 1;
    try {
      ds::write(copy, batches, opts(ds::write_mode::append, 30), budget_factory{&b});
      FAIL("expected committed_io_error");
    } catch (const ds::committed_io_error& e) {
      CHECK(e.version == 2);
      CHECK(std::string(e.what()).find("was committed") != std::string::npos);
    }
    auto d = ds::dataset::open(copy);
    CHECK(d.version() == 2);
    CHECK(live_ids(d) == iota_ids(0, 115));
  }
  // And with no failure the append goes through.
  budget b;
  CHECK(ds::write(root, batches, opts(ds::write_mode::append, 30), budget_factory{&b}).version == 2);
  CHECK(live_ids(ds::dataset::open(root)) == iota_ids(0, 115));
}

TEST_CASE("racing writers: the loser gets conflict_error naming the version, nothing is corrupted") {
  scratch_dir t("race");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 10));
  racing_factory f{[&] { ds::write(root, sample_batch(100, 5), opts(ds::write_mode::append)); }};
  std::set<std::string> after_rival;
  auto no_retry = opts(ds::write_mode::append);
  no_retry.max_retries = 0;  // losing the race without a rebase is a conflict
  try {
    ds::write(root, sample_batch(10, 7), no_retry, f);
    FAIL("expected a conflict");
  } catch (const conflict_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("version 2") != std::string::npos);
    CHECK(msg.find(root) != std::string::npos);
  }
  // The rival's version stands; the loser left no data, transaction or manifest file.
  auto d = ds::dataset::open(root);
  CHECK(d.version() == 2);
  CHECK(live_ids(d) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104});
  CHECK(files_under(root + "/data").size() == 2);
  CHECK(files_under(root + "/_transactions").size() == 2);
  for (const auto& n : files_under(root, true, true)) CHECK(n.find(".tmp") == std::string::npos);

  // With a retry the loser rebases on the winner and commits the next version.
  racing_factory f2{[&] { ds::write(root, sample_batch(200, 2), opts(ds::write_mode::append)); }};
  auto o = opts(ds::write_mode::append);
  o.max_retries = 2;
  auto r = ds::write(root, sample_batch(10, 7), o, f2);
  CHECK(r.version == 4);
  CHECK(r.fragments.at(0).id() == 3);
  auto d4 = ds::dataset::open(root);
  CHECK(d4.count_rows() == 24);
  CHECK(d4.transaction()->read_version == 2);  // an Append keeps its read version, as Lance's
  CHECK(live_ids(d4.checkout(3)).size() == 17);

  // Two creators: one wins, the other gets conflict_error.
  const auto root2 = t.sub("create");
  racing_factory f3{[&] { ds::write(root2, sample_batch(0, 1)); }};
  CHECK_THROWS_AS(ds::write(root2, sample_batch(5, 3), opts(ds::write_mode::create), f3), conflict_error);
  CHECK(ds::dataset::open(root2).count_rows() == 1);
  CHECK(files_under(root2 + "/data").size() == 1);

  // A rival that overwrote with another schema cannot be rebased on.
  racing_factory f4{[&] {
                      ds::write(root, make_batch({{"z", make_array<std::int8_t>({1})}}), opts(ds::write_mode::overwrite));
                    }};
  CHECK_THROWS_AS(ds::write(root, sample_batch(0, 1), o, f4), conflict_error);
  CHECK(ds::dataset::open(root).schema().fields.at(0).name == "z");
}

TEST_CASE("racing writers in threads: every commit is whole, losers get conflict_error") {
  scratch_dir t("threads");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 5));
  std::uint64_t versions = 1, rows = 5;
  for (int round = 0; round < 8; ++round) {
    std::atomic<int> ok{0}, conflicts{0}, other{0};
    std::atomic<std::uint64_t> added{0};
    std::vector<std::thread> ts;
    for (int k = 0; k < 3; ++k)
      ts.emplace_back([&, k] {
        try {
          ds::write(root, sample_batch(1000 * (k + 1), 3 + k), opts(ds::write_mode::append));
          ++ok;
          added += std::uint64_t(3 + k);
        } catch (const conflict_error&) {
          ++conflicts;
        } catch (...) {
          ++other;
        }
      });
    for (auto& th : ts) th.join();
    CHECK(other == 0);
    CHECK(ok >= 1);
    CHECK(ok + conflicts == 3);
    versions += std::uint64_t(ok.load());
    rows += added.load();
    auto d = ds::dataset::open(root);
    CHECK(d.version() == versions);
    CHECK(d.versions().size() == versions);
    CHECK(d.count_rows() == rows);
    CHECK(live_ids(d).size() == rows);
  }
  // Losers removed their data files: one file per committed version.
  CHECK(files_under(root + "/data").size() == versions);
}

TEST_CASE("crash safety: a writer killed (SIGKILL) at 20 random moments of a large append") {
  scratch_dir t("kill");
  const auto root = t.sub("ds");
  ds::write(root, sample_batch(0, 1000));
  // 100,000 rows (~3 MB) in 7 data files: long enough to be killed in every phase.
  const auto batches = append_batches(1'000'000, 10, 10'000);
  const auto o = opts(ds::write_mode::append, 15'000);
  // How long an append takes here (sanitizers and loaded machines vary a lot).
  double append_seconds = 0;
  {
    scratch_dir probe("kill-probe");
    fs::copy(root, probe.sub("ds"), fs::copy_options::recursive);
    const auto t0 = std::chrono::steady_clock::now();
    ds::write(probe.sub("ds"), batches, o);
    append_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::map<std::uint64_t, std::uint64_t> committed{{1, 1000}};  // version -> rows
  std::mt19937_64 rng(20240601);
  int killed_mid_write = 0;
  for (int round = 0; round < 20; ++round) {
    const auto latest = committed.rbegin()->first;
    const auto delay = std::chrono::duration<double>(append_seconds * 1.3 * double(rng() % 1000) / 1000.0);
    const int status = lancet::testing::run_killed_after(delay, [&] { ds::write(root, batches, o); });
    const bool finished = WIFEXITED(status);
    if (finished) CHECK(WEXITSTATUS(status) == 0);
    else ++killed_mid_write;

    // The dataset opens; its latest version is the previous one or the new one.
    auto d = ds::dataset::open(root);
    INFO("round " << round << ", killed after " << delay.count() << " s, latest " << d.version());
    REQUIRE((d.version() == latest || d.version() == latest + 1));
    if (finished) CHECK(d.version() == latest + 1);
    if (d.version() == latest + 1) committed[d.version()] = committed[latest] + 100'000;
    // No committed version is lost, and each reads whole.
    for (const auto& [v, rows] : committed) {
      auto dv = d.checkout(v);
      CHECK(dv.count_rows() == rows);
    }
    auto ids = live_ids(d);
    CHECK(ids.size() == committed.rbegin()->second);
    CHECK(std::vector<std::int64_t>(ids.begin(), ids.begin() + 1000) == iota_ids(0, 1000));
  }
  MESSAGE("append took " << append_seconds << " s; " << killed_mid_write << " of 20 writers were killed mid-write, "
                         << committed.size() - 1 << " appends committed");
  CHECK(killed_mid_write > 0);
}

TEST_CASE("storage versions: chosen at create, kept on append and overwrite; data file fields per version") {
  // id, st: struct<a: int32, l: list<utf8>>, v: fixed_size_list<float32, 2>
  auto make = [](std::int64_t start, std::int64_t n, bool struct_nulls) {
    std::vector<std::int64_t> ids;
    std::vector<std::optional<std::int32_t>> as;
    std::vector<std::vector<std::optional<std::string>>> ls;
    std::vector<float> vs;
    validity_list st_valid;
    for (std::int64_t k = start; k < start + n; ++k) {
      ids.push_back(k);
      as.push_back(k % 3 ? std::optional<std::int32_t>(std::int32_t(k)) : std::nullopt);
      ls.push_back(std::vector<std::optional<std::string>>(std::size_t(k % 3), std::string("x")));
      vs.push_back(float(k));
      vs.push_back(-float(k));
      st_valid.push_back(!struct_nulls || k % 5 != 4);
    }
    auto l = list_array<std::string>(ls, {}, utf8());
    auto st = make_struct({field{"a", int32(), true, {}}, field{"l", l->type, true, {}}}, {make_array<std::int32_t>(as), l},
                          st_valid);
    return make_batch({{"id", make_array<std::int64_t>(ids)}, {"st", st}, {"v", make_fixed_size_list(make_array<float>(vs), 2)}});
  };
  for (auto v : {file::format_version::v2_0, file::format_version::v2_1, file::format_version::v2_2}) {
    CAPTURE(file::to_string(v));
    scratch_dir t("versions");
    const auto root = t.sub("ds");
    const bool struct_nulls = v != file::format_version::v2_0;
    auto o = opts(ds::write_mode::create, 20);
    o.storage_version = v;
    auto r = ds::write(root, make(0, 50, struct_nulls), o);
    CHECK(r.storage_version == v);
    auto d = ds::dataset::open(root);
    CHECK(d.storage_version() == v);
    const auto f = d.manifest().fragments.at(0).files.at(0);  // a copy: d is reassigned below
    CHECK(f.file_major_version == 2);
    CHECK(f.file_minor_version == (v == file::format_version::v2_0 ? 0u : v == file::format_version::v2_1 ? 1u : 2u));
    // Ids: id 0, st 1, st.a 2, st.l 3, st.l.item 4, v 5. 2.0 gives every field a column;
    // 2.1+ only leaves (as LanceDB writes them, docs/lance12-encodings.md §4).
    if (v == file::format_version::v2_0) {
      CHECK(f.fields == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5});
      CHECK(f.column_indices == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5});
    } else {
      CHECK(f.fields == std::vector<std::int32_t>{0, 2, 4, 5});
      CHECK(f.column_indices == std::vector<std::int32_t>{0, 1, 2, 3});
    }
    // Append without naming a version keeps the dataset's; naming another is refused.
    ds::write(root, make(50, 15, struct_nulls), opts(ds::write_mode::append, 20));
    d = ds::dataset::open(root);
    CHECK(d.storage_version() == v);
    for (const auto& fr : d.manifest().fragments) CHECK(fr.files.at(0).file_minor_version == f.file_minor_version);
    auto expected = make(0, 65, struct_nulls);
    auto back = d.to_batch();
    for (std::size_t c = 0; c < 3; ++c) check_same(expected.columns[c], back.columns[c], expected.schema->fields[c].name);
    // Overwrite keeps the version unless asked.
    ds::write(root, make(0, 3, false), opts(ds::write_mode::overwrite));
    CHECK(ds::dataset::open(root).storage_version() == v);
  }
  // 2.0 refuses null structs, naming the field; nothing is left behind.
  scratch_dir t("versions-2.0");
  auto o = opts(ds::write_mode::create);
  o.storage_version = file::format_version::v2_0;
  CHECK_THROWS_AS(ds::write(t.sub("ds"), make(0, 10, true), o), invalid_input_error);
  CHECK(files_under(t.sub("ds") + "/data").empty());
  CHECK(!fs::exists(t.sub("ds") + "/_versions"));
}

TEST_CASE("fields found by id: renamed columns, and columns no data file holds read as nulls") {
  scratch_dir t("byid");
  const auto root = t.sub("ds");
  ds::write(root, make_batch({{"id", make_array<std::int64_t>({1, 2, 3})}, {"a", string_array({"x", std::nullopt, "z"})}}),
            opts(ds::write_mode::create, 2));
  // A version whose schema renames `a` to `b` and adds `c` (id 2) that no file holds,
  // as Lance's alter / add-column operations leave it.
  auto prev = *ds::load_latest(root);
  auto s = ds::manifest_schema(prev.manifest());
  s.fields[1].name = "b";
  auto c = schema::from_arrow(field{"c", list(int32()), true, {}});  // ids unassigned
  s.fields.push_back(c);
  schema::assign_field_ids(s, s.max_field_id());
  CHECK(s.fields[2].id == 2);
  ds::pending_commit pc;
  pc.manifest = prev.manifest();
  pc.manifest.version = 2;
  ds::set_manifest_schema(pc.manifest, s);
  pb::transaction::merge op;
  op.fragments = pc.manifest.fragments;
  op.schema_raw = ds::encoded_schema_fields(s);
  pc.transaction = ds::make_transaction(1, op);
  pc.manifest.transaction_file = pc.transaction.file_name();
  ds::default_sink_factory f;
  ds::publish(root, pc, {}, f);

  auto d = ds::dataset::open(root);
  REQUIRE(d.schema().fields.size() == 3);
  auto b = d.to_batch();
  CHECK(b.schema->fields[1].name == "b");
  check_same(string_array({"x", std::nullopt, "z"}), b.columns[1], "renamed column");
  CHECK(b.columns[2]->length == 3);
  CHECK(b.columns[2]->count_nulls() == 3);
  CHECK(b.columns[2]->type->id == type_id::list);
  auto tk = d.take({ds::row_address(1, 0)}, {"c", "b"});
  CHECK(tk.columns[0]->is_null(0));
  CHECK(tk.columns[1]->string_value(0) == "z");
  // Appending to it writes all three columns under their ids.
  auto r = ds::write(root, make_batch({{"id", make_array<std::int64_t>({4})}, {"b", string_array({"w"})},
                                       {"c", list_array<std::int32_t>({{1, 2}})}}),
                     opts(ds::write_mode::append));
  CHECK(ds::detail::fragment_access::stored(r.fragments.at(0)).files.at(0).fields ==
        (ds::dataset::open(root).storage_version() == file::format_version::v2_0 ? std::vector<std::int32_t>{0, 1, 2, 3}
                                                                                 : std::vector<std::int32_t>{0, 1, 3}));
  auto all = ds::dataset::open(root).to_batch();
  CHECK(all.num_rows() == 4);
  CHECK(all.columns[2]->is_valid(3));
}

TEST_CASE("one dataset object read from several threads") {
  const auto d = ds::dataset::open(dataset_fixture("deletions_2.0").string());
  const auto s = ds::dataset::open(dataset_fixture("stable_ids_2.0").string());
  const auto want = fixture_deletions_ids();
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < 4; ++k)
    ts.emplace_back([&, k] {
      try {
        ds::scan_options o;
        o.batch_size = std::uint64_t(100 + k);
        if (i32_ids(d.to_batch(o)) != want) ++bad;
        if (d.count_rows() != want.size()) ++bad;
        if (i32_ids(s.take({7, 19})) != std::vector<std::int64_t>{107, 19}) ++bad;
      } catch (...) {
        ++bad;
      }
    });
  for (auto& th : ts) th.join();
  CHECK(bad == 0);
}

TEST_CASE("data file names: 24 binary digits then 26 hex digits, unique") {
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    const auto n = ds::random_data_file_stem();
    REQUIRE(n.size() == 50);
    CHECK(n.substr(0, 24).find_first_not_of("01") == std::string::npos);
    CHECK(n.substr(24).find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(n);
  }
  CHECK(seen.size() == 500);
}

namespace {
// Stores "name" uncompressed (no FSST, no dictionary), whatever Lance 12 would choose.
struct plain_names : lancet::encoding::structural::default_policy {
  lancet::encoding::structural::page_plan plan_page(const lancet::encoding::structural::leaf_info& l,
                                              const lancet::encoding::structural::data_block& v,
                                              const lancet::encoding::structural::page_facts& f) const {
    auto p = default_policy::plan_page(l, v, f);
    if (l.column == "name" && p.layout == lancet::encoding::structural::page_plan::layout_kind::miniblock) {
      p.dictionary = false;
      p.codec = lancet::encoding::structural::value_codec::variable;
      p.general.reset();
    }
    return p;
  }
};

// The value compression of the first page of column `c` of a dataset's first data file.
std::string first_page_compression(const std::string& root, std::uint32_t c) {
  auto d = ds::dataset::open(root);
  const auto& file = d.manifest().fragments.at(0).files.at(0);
  lancet::file::file_reader<lancet::io::file_source> r{lancet::io::file_source(root + "/data/" + file.path)};
  const auto layout = r.column(c).metadata.pages.at(0).encoding->unwrap<lancet::pb::enc21::page_layout>();
  const auto& mb = std::get<lancet::pb::enc21::mini_block_layout>(layout.value);
  if (mb.dictionary) return "dictionary";
  return std::string(mb.value_compression->value.index() == 0 ? "none" : "") + std::to_string(mb.value_compression->value.index());
}

}  // namespace

TEST_CASE("dataset::write and dataset::write_json_lines take an encoding policy; 2.0 datasets refuse one") {
  scratch_dir t("policy");
  // Low-cardinality names: Lance 12 (the default policy) dictionary-encodes them.
  std::string rows;
  for (int i = 0; i < 2000; ++i) rows += "{\"id\": " + std::to_string(i) + ", \"name\": \"a-rather-long-category-" + std::to_string(i % 5) + "\"}\n";
  const arrow::schema schema{{arrow::field{"id", arrow::int64(), false, {}}, arrow::field{"name", arrow::utf8(), true, {}}}, {}};
  {
    std::istringstream in(rows);
    auto r = lancet::dataset::write_json_lines(t.sub("default"), schema, in);
    CHECK(r.rows_written == 2000);
    CHECK(first_page_compression(t.sub("default"), 1) == "dictionary");
  }
  {
    std::istringstream in(rows);
    auto r = lancet::dataset::write_json_lines(t.sub("plain"), schema, in, {}, plain_names{});
    CHECK(r.rows_written == 2000);
    CHECK(first_page_compression(t.sub("plain"), 1) != "dictionary");
    auto back = ds::dataset::open(t.sub("plain")).to_batch({});
    auto expect = ds::dataset::open(t.sub("default")).to_batch({});
    CHECK_FALSE(arrow::first_difference(expect.columns[1], back.columns[1]));
  }
  {
    // The same through dataset::write with a sink factory.
    auto batch = ds::dataset::open(t.sub("default")).to_batch({});
    ds::write(t.sub("plain2"), batch, {}, ds::default_sink_factory{}, plain_names{});
    CHECK(first_page_compression(t.sub("plain2"), 1) != "dictionary");
    // A 2.0 dataset: the legacy encodings take no policy (and nothing is written).
    ds::write_options o;
    o.storage_version = lancet::file::format_version::v2_0;
    CHECK_THROWS_WITH_AS(ds::write(t.sub("legacy"), batch, o, ds::default_sink_factory{}, plain_names{}),
                         doctest::Contains("whose legacy encodings take no encoding policy"), unsupported_error);
    CHECK_FALSE(ds::load_latest(t.sub("legacy")));
    // The default policy is fine at 2.0.
    ds::write(t.sub("legacy"), batch, o, ds::default_sink_factory{}, lancet::encoding::structural::default_policy{});
    CHECK(ds::dataset::open(t.sub("legacy")).count_rows() == 2000);
  }
}
