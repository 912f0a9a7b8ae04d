// Distributed writes: write_fragments on several "workers", the fragment
// metadata's Lance JSON form, and the coordinator's commit (append / overwrite with a
// read version), its rebase on concurrent writers, and each bad input refused with
// nothing committed.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/distributed.hpp>
#include <lancet/dataset/fragment_json.hpp>
#include <lancet/dataset/write.hpp>

#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::scratch_dir;

// id: int64 start..start+n, vec: fixed_size_list<float32, 2> = (id, -id).
record_batch id_pair_batch(std::int64_t start, std::int64_t n) {
  std::vector<std::int64_t> ids;
  std::vector<float> vec;
  for (std::int64_t i = 0; i < n; ++i) {
    ids.push_back(start + i);
    vec.push_back(float(start + i));
    vec.push_back(-float(start + i));
  }
  return make_batch({{"id", make_array<std::int64_t>(ids)}, {"vec", make_fixed_size_list(make_array<float>(vec), 2)}});
}

ds::write_options mode(ds::write_mode m, std::uint64_t rows_per_file = ds::default_max_rows_per_file) {
  ds::write_options o;
  o.mode = m;
  o.max_rows_per_file = rows_per_file;
  o.schema = *id_pair_batch(0, 1).schema;
  return o;
}

// (id, vec[0], vec[1]) of every row, sorted by id: values, not only counts.
struct id_pair_row {
  std::int64_t id;
  float a, b;
  friend bool operator==(const id_pair_row&, const id_pair_row&) = default;
};
std::vector<id_pair_row> rows_of(const std::string& root, std::optional<std::uint64_t> version = std::nullopt) {
  auto b = ds::dataset::open(root, version).to_batch();
  std::vector<id_pair_row> out;
  const auto& vec = *b.columns[1];
  const auto& items = *vec.children[0];
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    const auto at = (vec.offset + i) * 2;
    out.push_back({b.columns[0]->value<std::int64_t>(i), items.values<float>()[at], items.values<float>()[at + 1]});
  }
  std::sort(out.begin(), out.end(), [](const id_pair_row& x, const id_pair_row& y) { return x.id < y.id; });
  return out;
}
std::vector<id_pair_row> expected_rows(std::vector<std::pair<std::int64_t, std::int64_t>> ranges) {
  std::vector<id_pair_row> out;
  for (auto [from, to] : ranges)
    for (auto i = from; i < to; ++i) out.push_back({i, float(i), -float(i)});
  std::sort(out.begin(), out.end(), [](const id_pair_row& x, const id_pair_row& y) { return x.id < y.id; });
  return out;
}

std::uint64_t latest_version_of(const std::string& root) {
  auto e = ds::latest_version(root);
  return e ? e->version : 0;
}

std::vector<std::string> keys_of(const json::value& v) {
  std::vector<std::string> out;
  for (const auto& [k, _] : v.members) out.push_back(k);
  return out;
}

json::value parse(const std::string& text) {
  json::value v;
  json::syntax_error err;
  REQUIRE(json::try_parse(text, v, err));
  return v;
}

// Checks that f throws invalid_input_error whose message holds every piece.
template <class F>
void refused(F&& f, std::vector<std::string> pieces) {
  try {
    f();
    FAIL("accepted");
  } catch (const invalid_input_error& e) {
    const std::string what = e.what();
    for (const auto& p : pieces) CHECK_MESSAGE(what.find(p) != std::string::npos, what, " lacks '", p, "'");
  }
}

// The stored form of a fragment, which these tests build or edit to plant faults.
pb::data_fragment& st(ds::fragment_metadata& f) { return ds::detail::fragment_access::stored(f); }
const pb::data_fragment& st(const ds::fragment_metadata& f) { return ds::detail::fragment_access::stored(f); }
ds::fragment_metadata wrap(pb::data_fragment f) { return ds::detail::fragment_access::make(std::move(f)); }

}  // namespace

TEST_CASE("fragment JSON: Lance's keys and order, nulls for defaults, and a round trip") {
  pb::data_fragment f;
  f.id = 7;
  pb::data_file d;
  d.path = "0101-abc.lance";
  d.fields = {0, 1, -2};
  d.column_indices = {0, 1, -1};
  d.file_major_version = 2;
  d.file_minor_version = 1;
  d.file_size_bytes = 0;  // unknown -> null
  f.files.push_back(d);
  d.path = "second \"quoted\".lance";
  d.file_size_bytes = 4096;
  d.base_id = 3;
  f.files.push_back(d);
  f.physical_rows = 1234;
  const std::string plain = ds::to_json(wrap(f));
  // Keys as pylance's FragmentMetadata.to_json and serde's Fragment / DataFile
  // (rust/lance-table/src/format/fragment.rs; python/python/lance/fragment.py).
  const auto v = parse(plain);
  CHECK(keys_of(v) == std::vector<std::string>{"id", "files", "physical_rows", "deletion_file", "row_id_meta",
                                              "created_at_version_meta", "last_updated_at_version_meta"});
  for (const auto& file : v.find("files")->items)
    CHECK(keys_of(file) == std::vector<std::string>{"path", "fields", "column_indices", "file_major_version",
                                                    "file_minor_version", "file_size_bytes", "base_id"});
  CHECK(plain.find("\"file_size_bytes\":null,\"base_id\":null}") != std::string::npos);
  CHECK(plain.find("\"file_size_bytes\":4096,\"base_id\":3}") != std::string::npos);
  CHECK(plain.find("\"deletion_file\":null,\"row_id_meta\":null,\"created_at_version_meta\":null,"
                   "\"last_updated_at_version_meta\":null}") != std::string::npos);
  CHECK(v.find("physical_rows")->u == 1234);
  CHECK(st(ds::fragment_from_json(plain)) == f);

  // Everything set: a deletion file and the serde forms of the sequences.
  pb::deletion_file del;
  del.file_type = pb::deletion_file::type::bitmap;
  del.read_version = 4;
  del.id = 99;
  del.num_deleted_rows = 5;
  f.deletion_file = del;
  f.row_id_sequence = std::string("\x01\x02\xff", 3);
  f.created_at_version_sequence = pb::external_file{"_rowids/x.bin", 10, 20};
  f.last_updated_at_version_sequence = std::string("\x00\x07", 2);
  const std::string full = ds::to_json(wrap(f));
  CHECK(full.find("\"deletion_file\":{\"read_version\":4,\"id\":99,\"file_type\":\"bitmap\",\"num_deleted_rows\":5,"
                  "\"base_id\":null}") != std::string::npos);
  CHECK(full.find("\"row_id_meta\":{\"Inline\":[1,2,255]}") != std::string::npos);
  CHECK(full.find("\"created_at_version_meta\":{\"External\":{\"path\":\"_rowids/x.bin\",\"offset\":10,\"size\":20}}") !=
        std::string::npos);
  CHECK(st(ds::fragment_from_json(full)) == f);

  // pylance's minimal form (optional keys absent) reads too.
  const auto minimal = ds::fragment_from_json(R"({"id": 0, "files": [{"path": "a.lance", "fields": [0]}], "physical_rows": 3})");
  CHECK(minimal.data_files() == std::vector<std::string>{"a.lance"});
  CHECK(st(minimal).files[0].column_indices.empty());
  CHECK(minimal.physical_rows() == 3);

  // Several: an array, or JSON Lines (what `lancet write --uncommitted` prints).
  f.id = 1;
  const std::vector<ds::fragment_metadata> two{wrap(f), minimal};
  CHECK(ds::fragments_from_json(ds::fragments_to_json_lines(two)) == two);
  CHECK(ds::fragments_from_json("[" + ds::to_json(two[0]) + ",\n" + ds::to_json(minimal) + "]") == two);
  CHECK(ds::fragments_from_json("\n" + ds::to_json(two[0]) + "\n\n") == std::vector<ds::fragment_metadata>{two[0]});
}

TEST_CASE("fragment JSON: malformed and mistyped input names the key, line and column") {
  refused([] { ds::fragment_from_json("{\"id\": 0, \"files\": [", "'frag.json'"); }, {"'frag.json'", "not valid JSON", "line 1"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": []})"); }, {"key 'physical_rows'", "missing"});
  refused([] { ds::fragment_from_json(R"({"id": -1, "files": [], "physical_rows": 1})"); }, {"key 'id'", "-1"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": [{"path": "a", "fields": [0, "x"]}], "physical_rows": 1})"); },
          {"key 'files[0].fields[1]'", "\"x\""});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": [{"path": "a", "fields": [], "colour": 1}], "physical_rows": 1})"); },
          {"key 'files[0].colour'", "unknown key"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "id": 1, "files": [], "physical_rows": 1})"); }, {"key 'id'", "twice"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": [{"fields": []}], "physical_rows": 1})"); },
          {"key 'files[0].path'", "missing"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": [], "physical_rows": 1, "row_id_meta": {"Inline": [256]}})"); },
          {"key 'row_id_meta.Inline[0]'", "256"});
  refused([] { ds::fragment_from_json(R"({"id": 0, "files": [], "physical_rows": 1, "deletion_file": {"read_version": 1, "id": 1, "file_type": "tree"}})"); },
          {"key 'deletion_file.file_type'", "\"tree\""});
  // JSON Lines: the bad line is named.
  const std::string good = R"({"id": 0, "files": [{"path": "a.lance", "fields": [0]}], "physical_rows": 1})";
  refused([&] { ds::fragments_from_json(good + "\n" + good + "\n{\"id\": 0,,}\n", "'all.json'"); }, {"'all.json'", "line 3"});
  refused([&] { ds::fragments_from_json(good + "\n{\"id\": 0, \"files\": 5, \"physical_rows\": 1}\n"); },
          {"line 2", "key 'files'"});
  refused([] { ds::fragments_from_json("  \n"); }, {"empty"});
}

TEST_CASE("write_fragments writes data files only; commit overwrite creates, append adds, ids assigned at commit") {
  scratch_dir t("dist");
  const auto root = t.sub("ds");
  // Three workers write against a dataset that does not exist yet.
  std::vector<ds::fragment_metadata> all;
  for (int w = 0; w < 3; ++w) {
    auto r = ds::write_fragments(root, id_pair_batch(w * 100, 100), mode(ds::write_mode::append, 60));
    CHECK_FALSE(r.read_version);
    CHECK(r.rows_written == 100);
    REQUIRE(r.fragments.size() == 2);  // 60 + 40 rows
    CHECK(r.fragments[0].physical_rows() == 60);
    CHECK(r.fragments[1].physical_rows() == 40);
    for (const auto& m : r.fragments) {
      CHECK(m.id() == 0);
      const auto& f = st(m);
      REQUIRE(f.files.size() == 1);
      CHECK(fs::exists(fs::path(root) / "data" / f.files[0].path));
      CHECK(f.files[0].file_size_bytes == fs::file_size(fs::path(root) / "data" / f.files[0].path));
      CHECK(f.files[0].fields == std::vector<std::int32_t>{0, 1});  // ids as Lance assigns them
      // Through the JSON a coordinator receives.
      all.push_back(ds::fragment_from_json(ds::to_json(m)));
    }
  }
  CHECK(latest_version_of(root) == 0);  // nothing committed
  CHECK_FALSE(fs::exists(fs::path(root) / "_versions"));

  ds::fragment_commit_options co;
  co.read_version = 0;
  auto c = ds::commit(root, ds::operation::overwrite{*id_pair_batch(0, 1).schema}, all, co);
  CHECK(c.version == 1);
  CHECK(c.read_version == 0);
  CHECK(c.rows == 300);
  std::vector<std::uint64_t> ids;
  for (const auto& f : c.fragments) ids.push_back(f.id());
  CHECK(ids == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5});
  CHECK(rows_of(root) == expected_rows({{0, 300}}));

  // Append: two more workers, against version 1's schema.
  std::vector<ds::fragment_metadata> more;
  for (int w = 0; w < 2; ++w) {
    auto r = ds::write_fragments(root, id_pair_batch(1000 + w * 10, 10), mode(ds::write_mode::append));
    CHECK(r.read_version == std::optional<std::uint64_t>(1));
    more.insert(more.end(), r.fragments.begin(), r.fragments.end());
  }
  st(more[1]).id = 3;  // ids the metadata carries are replaced at commit
  c = ds::commit(root, ds::operation::append{}, more);
  CHECK(c.version == 2);
  CHECK(c.read_version == 1);
  CHECK(c.retries == 0);
  REQUIRE(c.fragments.size() == 2);
  CHECK(c.fragments[0].id() == 6);
  CHECK(c.fragments[1].id() == 7);
  CHECK(rows_of(root) == expected_rows({{0, 300}, {1000, 1020}}));
  const auto d = ds::dataset::open(root);
  CHECK(d.manifest().fragments.size() == 8);

  // Overwrite with a new schema: fragment ids restart at 0, the old rows are gone.
  auto other = make_batch({{"name", string_array({"a", "b", "c"})}});
  ds::write_options oo;
  oo.mode = ds::write_mode::overwrite;
  auto w = ds::write_fragments(root, other, oo);
  c = ds::commit(root, ds::operation::overwrite{*other.schema}, w.fragments);
  CHECK(c.version == 3);
  REQUIRE(c.fragments.size() == 1);
  CHECK(c.fragments[0].id() == 0);
  const auto b = ds::dataset::open(root).to_batch();
  REQUIRE(b.num_rows() == 3);
  CHECK(b.schema->fields.at(0).name == "name");
  CHECK(b.columns[0]->string_value(2) == "c");
  CHECK(rows_of(root, 2) == expected_rows({{0, 300}, {1000, 1020}}));  // the old version still reads
}

TEST_CASE("commit rebases on a concurrent writer after its read version; an overwrite meanwhile is a conflict") {
  scratch_dir t("dist");
  const auto root = t.sub("ds");
  ds::write(root, id_pair_batch(0, 10), mode(ds::write_mode::create));
  auto w = ds::write_fragments(root, id_pair_batch(100, 20), mode(ds::write_mode::append));
  REQUIRE(w.read_version == std::optional<std::uint64_t>(1));
  // Another writer appends before the coordinator commits.
  ds::write(root, id_pair_batch(500, 5), mode(ds::write_mode::append));
  ds::fragment_commit_options co;
  co.read_version = 1;
  auto c = ds::commit(root, ds::operation::append{}, w.fragments, co);
  CHECK(c.version == 3);
  CHECK(c.read_version == 1);
  CHECK(c.retries == 0);  // a commit made before the first attempt is rebased on without a retry
  REQUIRE(c.fragments.size() == 1);
  CHECK(c.fragments[0].id() == 2);
  CHECK(rows_of(root) == expected_rows({{0, 10}, {100, 120}, {500, 505}}));

  // An overwrite after the read version: the append cannot be rebased on it.
  auto w2 = ds::write_fragments(root, id_pair_batch(700, 3), mode(ds::write_mode::append));
  ds::write(root, id_pair_batch(900, 2), mode(ds::write_mode::overwrite));
  co.read_version = 3;
  CHECK_THROWS_AS(ds::commit(root, ds::operation::append{}, w2.fragments, co), ds::commit_conflict_error);
  CHECK(latest_version_of(root) == 4);
  CHECK(rows_of(root) == expected_rows({{900, 902}}));
}

TEST_CASE("commit refuses bad fragments and commits nothing") {
  scratch_dir t("dist");
  const auto root = t.sub("ds"), elsewhere = t.sub("other");
  ds::write(root, id_pair_batch(0, 10), mode(ds::write_mode::create));
  const auto good = ds::write_fragments(root, id_pair_batch(100, 10), mode(ds::write_mode::append)).fragments;
  REQUIRE(good.size() == 1);
  auto unchanged = [&] {
    CHECK(latest_version_of(root) == 1);
    CHECK(rows_of(root) == expected_rows({{0, 10}}));
  };

  SUBCASE("data files written for another dataset") {
    ds::write(elsewhere, id_pair_batch(0, 1), mode(ds::write_mode::create));
    const auto foreign = ds::write_fragments(elsewhere, id_pair_batch(50, 5), mode(ds::write_mode::append)).fragments;
    refused([&] { ds::commit(root, ds::operation::append{}, foreign); },
            {"data file '" + st(foreign[0]).files[0].path + "'", "does not exist", "another dataset"});
  }
  SUBCASE("fields that are not the dataset's") {
    // Same field ids, other columns: written as an overwrite with another schema.
    auto other = make_batch({{"id", make_array<std::int64_t>({1, 2})}, {"name", string_array({"a", "b"})}});
    ds::write_options o;
    o.mode = ds::write_mode::overwrite;
    const auto frags = ds::write_fragments(root, other, o).fragments;
    refused([&] { ds::commit(root, ds::operation::append{}, frags); },
            {"field id 1 as 'name' (string)", "the dataset's schema has 'vec'"});
    auto missing = good;
    st(missing[0]).files[0].fields = {0, 7};
    refused([&] { ds::commit(root, ds::operation::append{}, missing); }, {"field id 7", "does not have"});
    auto partial = good;
    st(partial[0]).files[0].fields = {0};
    st(partial[0]).files[0].column_indices = {0};
    refused([&] { ds::commit(root, ds::operation::append{}, partial); }, {"no data for field 'vec'"});
  }
  SUBCASE("the same fragment twice in one commit") {
    refused([&] { ds::commit(root, ds::operation::append{}, {good[0], good[0]}); },
            {"data file '" + st(good[0]).files[0].path + "' of fragment 1 is also in fragment 0"});
  }
  SUBCASE("metadata that does not match its file") {
    auto rows = good;
    st(rows[0]).physical_rows = 11;
    refused([&] { ds::commit(root, ds::operation::append{}, rows); }, {"holds 10 rows", "physical_rows 11"});
    auto size = good;
    st(size[0]).files[0].file_size_bytes += 1;
    refused([&] { ds::commit(root, ds::operation::append{}, size); }, {"bytes, the metadata says"});
    auto version = good;
    st(version[0]).files[0].file_minor_version = 0;
    refused([&] { ds::commit(root, ds::operation::append{}, version); }, {"is a Lance 2.0 file", "the dataset stores 2."});
    auto path = good;
    st(path[0]).files[0].path = "../" + st(path[0]).files[0].path;
    refused([&] { ds::commit(root, ds::operation::append{}, path); }, {"plain file name under data/"});
    auto del = good;
    st(del[0]).deletion_file = pb::deletion_file{};
    refused([&] { ds::commit(root, ds::operation::append{}, del); }, {"has a deletion file"});
  }
  SUBCASE("append to no dataset, or to a read version that does not exist") {
    refused([&] { ds::commit(t.sub("none"), ds::operation::append{}, good); }, {"does not exist", "overwrite"});
    ds::fragment_commit_options co;
    co.read_version = 5;
    refused([&] { ds::commit(root, ds::operation::append{}, good, co); }, {"has no version 5"});
    co.read_version = 0;
    refused([&] { ds::commit(root, ds::operation::overwrite{}, good, co); }, {"read version 0", "it does (version 1)"});
  }
  SUBCASE("fragments committed before") {
    ds::commit(root, ds::operation::append{}, good);
    CHECK(latest_version_of(root) == 2);
    refused([&] { ds::commit(root, ds::operation::append{}, good); },
            {"already part of version 2", "committed before"});
    CHECK(latest_version_of(root) == 2);
    return;
  }
  unchanged();
  // The good fragments still commit afterwards.
  CHECK(ds::commit(root, ds::operation::append{}, good).version == 2);
  CHECK(rows_of(root) == expected_rows({{0, 10}, {100, 110}}));
}

TEST_CASE("nested columns: a struct's data lives in its members' columns, and commits") {
  scratch_dir t("dist");
  const auto root = t.sub("ds");
  auto nested = [](std::int64_t start) {
    std::vector<std::int64_t> ids{start, start + 1, start + 2};
    std::vector<std::int32_t> xs{int(start), int(start) + 1, int(start) + 2};
    return make_batch({{"id", make_array<std::int64_t>(ids)},
                       {"pt", struct_array({{"x", make_array<std::int32_t>(xs)}, {"tag", string_array({"a", "b", "c"})}})}});
  };
  std::vector<ds::fragment_metadata> all;
  for (int w = 0; w < 2; ++w) {
    ds::write_options o;
    o.mode = ds::write_mode::overwrite;
    auto r = ds::write_fragments(root, nested(w * 10), o);
    all.insert(all.end(), r.fragments.begin(), r.fragments.end());
  }
  const auto c = ds::commit(root, ds::operation::overwrite{*nested(0).schema}, all);
  CHECK(c.version == 1);
  CHECK(c.rows == 6);
  const auto b = ds::dataset::open(root).to_batch();
  REQUIRE(b.num_rows() == 6);
  std::vector<std::int32_t> xs;
  for (std::int64_t i = 0; i < 6; ++i) xs.push_back(b.columns[1]->children[0]->value<std::int32_t>(i));
  std::sort(xs.begin(), xs.end());
  CHECK(xs == std::vector<std::int32_t>{0, 1, 2, 10, 11, 12});
}
