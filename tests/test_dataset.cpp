// Datasets: create / append / overwrite, manifests and transactions as Lance 12
// writes them, crash-safe commits (failing sinks, writers killed mid-append, racing
// writers), open / versions / scan / take, deletion files (both kinds, from files
// LanceDB 0.39 wrote) and stable row ids.
#include <doctest/doctest.h>

#include <signal.h>
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
#include <lancet/io/failing_sink.hpp>
#include <lancet/io/file_sink.hpp>

#include "support/random_data.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;

namespace {

class temp_dir {
 public:
  explicit temp_dir(const std::string& tag) {
    std::string t = (fs::temp_directory_path() / ("lancet-ds-" + tag + "-XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string path() const { return path_.string(); }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

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

std::vector<std::int64_t> ids_of(const record_batch& b, std::size_t col = 0) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i) out.push_back(b.columns[col]->value<std::int64_t>(i));
  return out;
}

std::vector<std::int64_t> iota_ids(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (auto i = from; i < to; ++i) v.push_back(i);
  return v;
}

std::vector<std::int64_t> all_ids(const ds::dataset& d) { return ids_of(d.to_batch({.columns = {"id"}})); }

std::vector<std::string> dir_names(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void check_same(const array_ptr& expected, const array_ptr& actual, const std::string& what) {
  auto diff = first_difference(expected, actual);
  INFO(what << ": " << diff.value_or(""));
  CHECK_FALSE(diff.has_value());
}

}  // namespace

TEST_CASE("create: one fragment, manifest and transaction as Lance 12 writes them") {
  temp_dir t("create");
  const auto root = t.sub("ds");
  auto r = ds::write(root, sample_batch(0, 100));
  CHECK(r.version == 1);
  CHECK(r.rows_written == 100);
  REQUIRE(r.fragments.size() == 1);
  CHECK(r.fragments[0].id == 0);

  // Layout: v2 manifest name, hint, transaction file, one data file with a Lance-style name.
  CHECK(dir_names(root + "/_versions") ==
        std::vector<std::string>{"18446744073709551614.manifest", "latest_version_hint.json"});
  std::ifstream hint(root + "/_versions/latest_version_hint.json");
  std::string hint_text((std::istreambuf_iterator<char>(hint)), std::istreambuf_iterator<char>());
  CHECK(hint_text == "{\"version\":1}");
  auto data = dir_names(root + "/data");
  REQUIRE(data.size() == 1);
  CHECK(data[0].size() == 50 + 6);
  CHECK(data[0].find_first_not_of("01") == 24);
  CHECK(data[0].substr(24, 26).find_first_not_of("0123456789abcdef") == std::string::npos);
  auto txns = dir_names(root + "/_transactions");
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
