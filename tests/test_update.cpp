// Updating update_rows (dataset/update.hpp): the values and row order read back, the Update
// transaction as LanceDB 0.39 writes it (removed / updated / new fragments, the set
// columns' ids), casts and errors (nothing committed), indexes finding the moved rows
// through the unindexed path, and concurrent commits.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/expr/error.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/query/table.hpp>

#include "support/dataset_writes.hpp"
#include "support/stable_rows.hpp"
#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::racing_factory;
using update_set = std::vector<std::pair<std::string, std::string>>;

// id int64, x int32, s utf8 (NULL every 7th), vec fixed_size_list<float32, 2>: rows a..b.
record_batch update_rows(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> id;
  std::vector<std::int32_t> x;
  std::vector<std::optional<std::string>> s;
  std::vector<float> vec;
  for (std::int64_t i = a; i < b; ++i) {
    id.push_back(i);
    x.push_back(std::int32_t(i));
    s.push_back(i % 7 ? std::optional<std::string>("s" + std::to_string(i)) : std::nullopt);
    vec.push_back(float(i));
    vec.push_back(float(i % 5));
  }
  return make_batch({{"id", make_array<std::int64_t>(id)},
                     {"x", make_array<std::int32_t>(x)},
                     {"s", string_array(s)},
                     {"vec", make_fixed_size_list(make_array<float>(vec), 2)}});
}

// Two fragments: 0..20 and 20..30.
std::string update_dataset(const lancet::testing::scratch_dir& tmp) {
  const auto root = tmp.sub("ds");
  ds::write(root, update_rows(0, 20));
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, update_rows(20, 30), a);
  return root;
}

std::vector<std::string> update_row_strings(const ds::dataset& d) {
  const auto b = d.to_batch();
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i)
    out.push_back(std::to_string(b.columns[0]->value<std::int64_t>(i)) + ":" +
                  std::to_string(b.columns[1]->value<std::int32_t>(i)) + ":" +
                  (b.columns[2]->is_valid(i) ? std::string(b.columns[2]->string_value(i)) : "null"));
  return out;
}

}  // namespace

TEST_CASE("update: the matching rows move to a new fragment with their new values, as LanceDB's update") {
  lancet::testing::scratch_dir tmp("update");
  const auto root = update_dataset(tmp);
  const auto before = ds::dataset::open(root);
  const auto r = ds::update(root, "id % 3 = 0", update_set{{"x", "x + 100"}});
  CHECK(r.rows_updated == 10);
  CHECK(r.version == before.version() + 1);
  auto d = ds::dataset::open(root);
  // As LanceDB orders them: the rows left in place, then the moved ones in their order.
  const auto got = update_row_strings(d);
  REQUIRE(got.size() == 30);
  std::vector<std::string> want;
  for (std::int64_t i = 0; i < 30; ++i)
    if (i % 3 && i < 20) want.push_back(std::to_string(i) + ":" + std::to_string(i) + ":" + (i % 7 ? "s" + std::to_string(i) : "null"));
  for (std::int64_t i = 20; i < 30; ++i)
    if (i % 3) want.push_back(std::to_string(i) + ":" + std::to_string(i) + ":" + (i % 7 ? "s" + std::to_string(i) : "null"));
  for (std::int64_t i = 0; i < 30; i += 3)
    want.push_back(std::to_string(i) + ":" + std::to_string(i + 100) + ":" + (i % 7 ? "s" + std::to_string(i) : "null"));
  CHECK(got == want);
  // The transaction: both old fragments updated (deletion files), one new fragment, the
  // set column's field id.
  const auto& op = std::get<pb::transaction::update>(d.transaction()->operation);
  CHECK(op.removed_fragment_ids.empty());
  REQUIRE(op.updated_fragments.size() == 2);
  CHECK(op.updated_fragments[0].deletion_file.has_value());
  REQUIRE(op.new_fragments.size() == 1);
  CHECK(op.new_fragments[0].physical_rows == 10);
  CHECK(op.fields_for_preserving_frag_bitmap == std::vector<std::uint32_t>{1});
  CHECK(d.manifest().fragments.back().id == 2);

  // Every live row of a fragment moved: the fragment leaves (LanceDB's removed ids).
  ds::update(root, "id >= 20", update_set{{"s", "'z'"}, {"x", "x * 2"}});
  d = ds::dataset::open(root);
  const auto& op2 = std::get<pb::transaction::update>(d.transaction()->operation);
  CHECK(op2.removed_fragment_ids == std::vector<std::uint64_t>{1});
  CHECK(op2.fields_for_preserving_frag_bitmap == std::vector<std::uint32_t>{2, 1});
  const auto b = d.to_batch();
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    const auto id = b.columns[0]->value<std::int64_t>(i);
    if (id < 20) continue;
    // Both expressions saw the old row: x * 2 of the value before this update.
    CHECK(b.columns[1]->value<std::int32_t>(i) == (id % 3 == 0 ? id + 100 : id) * 2);
    CHECK(b.columns[2]->string_value(i) == "z");
  }
  CHECK(d.count_rows() == 30);

  // No matching row: a version all the same (as Lance), no fragment changed.
  const auto v = d.version();
  const auto none = ds::update(root, "id > 1000", update_set{{"x", "0"}});
  CHECK(none.rows_updated == 0);
  CHECK(none.version == v + 1);
  CHECK(ds::dataset::open(root).manifest().fragments == d.manifest().fragments);
}

TEST_CASE("update: values cast to the column's type where they fit; errors name the column, nothing committed") {
  lancet::testing::scratch_dir tmp("update-errors");
  const auto root = update_dataset(tmp);
  ds::update(root, "id = 1", update_set{{"x", "5"}});  // an int64 constant into int32
  CHECK(update_row_strings(ds::dataset::open(root)).back() == "1:5:s1");
  const auto v = ds::dataset::open(root).version();
  const auto fails = [&](auto&& f, const std::string& words) {
    try {
      f();
      FAIL("no error");
    } catch (const lancet::error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
    CHECK(ds::dataset::open(root).version() == v);
    std::size_t files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) files += e.is_regular_file();
    CHECK(files > 0);
  };
  const auto count_files = [&] {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(root) / "data"))
      n += e.is_regular_file();
    return n;
  };
  const auto data_files = count_files();
  fails([&] { ds::update(root, "id = 2", update_set{{"x", "3000000000"}}); }, "column 'x' (int32) cannot hold the value 3000000000");
  fails([&] { ds::update(root, "id = 2", update_set{{"nope", "1"}}); }, "no column 'nope'");
  fails([&] { ds::update(root, "id = 2", update_set{{"x", "1"}, {"x", "2"}}); }, "'x' is set twice");
  fails([&] { ds::update(root, "id = 2", update_set{{"s", "x + 1"}}); }, "column 's' is utf8");
  fails([&] { ds::update(root, "nope = 2", update_set{{"x", "1"}}); }, "nope");
  fails([&] { ds::update(root, "id = 2", update_set{}); }, "no column to set");
  CHECK(count_files() == data_files);
}

TEST_CASE("update: an index keeps its old fragments; searches find the moved rows exactly") {
  lancet::testing::scratch_dir tmp("update-index");
  const auto root = update_dataset(tmp);
  index::build_options o;
  o.column = "vec";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  index::build_ivf_index(root, o);
  ds::update(root, "id = 4", update_set{{"vec", "vec"}, {"x", "-1"}});
  ds::delete_where(root, "id = 5");
  const auto d = ds::dataset::open(root);
  REQUIRE(d.indices().size() == 1);
  const auto t = query::table::open(root);
  const std::vector<float> q{4.0f, 4.0f};
  const auto hits = t.search("vec", q).nprobes(2).select({"id", "x"}).limit(3).to_batch();
  REQUIRE(hits.num_rows() == 3);
  CHECK(hits.columns[0]->value<std::int64_t>(0) == 4);
  CHECK(hits.columns[1]->value<std::int32_t>(0) == -1);
  CHECK(hits.columns[2]->value<float>(0) == 0.0f);
  for (std::int64_t i = 0; i < hits.num_rows(); ++i) CHECK(hits.columns[0]->value<std::int64_t>(i) != 5);
}

TEST_CASE("update with stable row ids: moved rows keep their ids and creation versions; an index on other columns covers them") {
  lancet::testing::scratch_dir tmp("update-stable");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.enable_stable_row_ids = true;
  ds::write(root, update_rows(0, 20), w);  // v1: row ids 0..19
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, update_rows(20, 40), a);  // v2: row ids 20..39
  index::build_options o;
  o.column = "vec";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  index::build_ivf_index(root, o);  // v3
  const auto ids_before = lancet::testing::row_id_by_id(ds::dataset::open(root));

  // SET x (not indexed): 8 rows move; their ids, creation versions stay; the index
  // covers the new fragment.
  const auto r = ds::update(root, "id % 5 = 0", update_set{{"x", "x + 100"}});
  CHECK(r.rows_updated == 8);
  auto d = ds::dataset::open(root);
  CHECK(d.version() == 4);
  CHECK(lancet::testing::row_id_by_id(d) == ids_before);
  CHECK(d.manifest().next_row_id == 40);
  const auto& moved = d.manifest().fragments.back();
  CHECK(moved.id == 2);
  CHECK(d.fragment_row_ids(2) == std::vector<std::uint64_t>{0, 5, 10, 15, 20, 25, 30, 35});
  CHECK(lancet::testing::row_versions(moved, true) == std::vector<std::uint64_t>{1, 1, 1, 1, 2, 2, 2, 2});
  CHECK(lancet::testing::row_versions(moved, false) == std::vector<std::uint64_t>(8, 4));
  CHECK(ds::index_fragment_bitmap(d.indices().at(0)).cardinality() == 3);
  CHECK(ds::index_fragment_bitmap(d.indices().at(0)).contains(2));
  CHECK(d.take({15}, {"x"}).columns[0]->value<std::int32_t>(0) == 115);
  {
    const auto t = query::table::open(root);
    const std::vector<float> q{15.0f, 0.0f};
    const auto hits = t.search("vec", q).nprobes(2).select({"id", "x"}).with_row_id().limit(40).to_batch();
    REQUIRE(hits.num_rows() == 40);  // every row once, the moved ones with their new values
    std::set<std::int64_t> seen;
    for (std::int64_t i = 0; i < hits.num_rows(); ++i) {
      const auto id = hits.columns[0]->value<std::int64_t>(i);
      CHECK(seen.insert(id).second);
      CHECK(hits.columns[1]->value<std::int32_t>(i) == std::int32_t(id % 5 ? id : id + 100));
      CHECK(hits.columns[3]->value<std::uint64_t>(i) == ids_before.at(id));
    }
    CHECK(hits.columns[0]->value<std::int64_t>(0) == 15);
  }

  // A moved row moved again keeps its id and version; a row updated twice now shows
  // the last update's version.
  ds::update(root, "id % 10 = 0", update_set{{"x", "x + 1000"}});
  d = ds::dataset::open(root);
  CHECK(lancet::testing::row_id_by_id(d) == ids_before);
  CHECK(d.fragment_row_ids(3) == std::vector<std::uint64_t>{0, 10, 20, 30});
  CHECK(lancet::testing::row_versions(d.manifest().fragments.back(), true) == std::vector<std::uint64_t>{1, 1, 2, 2});
  CHECK(ds::index_fragment_bitmap(d.indices().at(0)).contains(3));

  // SET vec: the index's entries hold the old vectors, so the new fragment stays
  // unindexed and the moved rows are found by their new vectors only.
  ds::update(root, "id = 7", update_set{{"vec", "vec"}, {"x", "-7"}});
  d = ds::dataset::open(root);
  CHECK_FALSE(ds::index_fragment_bitmap(d.indices().at(0)).contains(4));
  CHECK(d.fragment_row_ids(4) == std::vector<std::uint64_t>{7});
  // Deleting a moved row by its id deletes its live copy.
  ds::delete_rows(root, std::vector<std::uint64_t>{10});
  d = ds::dataset::open(root);
  CHECK(d.count_rows() == 39);
  CHECK(lancet::testing::row_id_by_id(d).count(10) == 0);
  const auto t = query::table::open(root);
  const std::vector<float> q{7.0f, 2.0f};
  const auto hits = t.search("vec", q).nprobes(2).select({"id", "x"}).limit(39).to_batch();
  REQUIRE(hits.num_rows() == 39);
  CHECK(hits.columns[0]->value<std::int64_t>(0) == 7);
  CHECK(hits.columns[1]->value<std::int32_t>(0) == -7);
  std::set<std::int64_t> seen;
  for (std::int64_t i = 0; i < hits.num_rows(); ++i) CHECK(seen.insert(hits.columns[0]->value<std::int64_t>(i)).second);
}

TEST_CASE("update and concurrent commits: an append rebases, a delete of its fragment makes it run again") {
  lancet::testing::scratch_dir tmp("update-conflicts");
  SUBCASE("append") {
    const auto root = update_dataset(tmp);
    racing_factory f{[&] {
      ds::write_options a;
      a.mode = ds::write_mode::append;
      ds::write(root, update_rows(30, 35), a);
    }};
    const auto r = ds::update(root, "id < 5", update_set{{"x", "0"}}, {}, f);
    CHECK(r.retries == 1);  // the race lost, then rebased on the append
    CHECK(r.rows_updated == 5);
    const auto d = ds::dataset::open(root);
    CHECK(d.count_rows() == 35);
    CHECK(d.manifest().fragments.size() == 4);
  }
  SUBCASE("delete of other rows of a fragment it moves rows from: the deletions merged, no second run") {
    const auto root = update_dataset(tmp);
    racing_factory f{[&] { ds::delete_where(root, "id = 7 OR id = 8"); }};
    const auto r = ds::update(root, "id < 5", update_set{{"x", "0"}}, {}, f);
    CHECK(r.retries == 1);  // the commit lost the race once and was rebased, not run again
    CHECK(f.data_files == 1);  // one when rebased, two when run again
    CHECK(r.rows_updated == 5);
    const auto d = ds::dataset::open(root);
    CHECK(d.transaction()->read_version == d.version() - 1);
    CHECK(d.deleted_rows(0).offsets() == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 7, 8});
    const auto got = update_row_strings(d);
    CHECK(got.size() == 28);
    for (const auto& row : got) CHECK((row.rfind("7:", 0) != 0 && row.rfind("8:", 0) != 0));
    // Only files the dataset references are left: 3 data files, the merged deletion file.
    std::size_t deletions = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "_deletions"))
      deletions += e.is_regular_file();
    CHECK(deletions == 2);  // the racing delete's, and the merged one (ours before the merge removed)
  }
  SUBCASE("delete of a row in a fragment it moves rows from: run again on the new version") {
    const auto root = update_dataset(tmp);
    racing_factory f{[&] { ds::delete_where(root, "id = 3"); }};
    const auto r = ds::update(root, "id < 5", update_set{{"x", "0"}}, {}, f);
    CHECK(r.retries == 1);
    CHECK(r.rows_updated == 4);
    const auto got = update_row_strings(ds::dataset::open(root));
    CHECK(got.size() == 29);
    for (const auto& row : got) CHECK(row.rfind("3:", 0) != 0);
    // No data file of the lost run is left behind.
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "data")) files += e.is_regular_file();
    CHECK(files == 3);
  }
}
