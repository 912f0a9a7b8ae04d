// Merge insert (dataset/merge_insert.hpp): each clause and their combinations, the row
// order and Update transaction LanceDB 0.39 gives, conditions on target./source.
// columns, sources with fewer columns, errors (nothing committed) and a concurrent
// delete making it run again.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/pb/table.hpp>
#include <lancet/query/table.hpp>

#include "support/dataset_writes.hpp"
#include "support/stable_rows.hpp"
#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::racing_factory;

record_batch merge_rows(const std::vector<std::int64_t>& ids, const std::vector<std::int32_t>& xs) {
  return make_batch({{"id", make_array<std::int64_t>(ids)}, {"x", make_array<std::int32_t>(xs)}});
}

// id 0..19 with x = id.
std::string merge_dataset(const lancet::testing::scratch_dir& tmp) {
  const auto root = tmp.sub("ds");
  std::vector<std::int64_t> ids;
  std::vector<std::int32_t> xs;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(i);
    xs.push_back(i);
  }
  ds::write(root, merge_rows(ids, xs));
  return root;
}

std::string merge_contents(const std::string& root) {
  const auto b = ds::dataset::open(root).to_batch();
  std::string out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i)
    out += std::to_string(b.columns[0]->value<std::int64_t>(i)) + ":" +
           (b.columns[1]->is_valid(i) ? std::to_string(b.columns[1]->value<std::int32_t>(i)) : "null") + " ";
  return out;
}

ds::merge_insert_options merge_upsert() {
  ds::merge_insert_options o;
  o.on = {"id"};
  o.when_matched_update_all = true;
  o.when_not_matched_insert_all = true;
  return o;
}

}  // namespace

TEST_CASE("merge_insert: upsert moves the updated merge_rows (source order) then the inserted ones to a new fragment") {
  lancet::testing::scratch_dir tmp("merge");
  const auto root = merge_dataset(tmp);
  const std::vector<record_batch> src{merge_rows({34, 6, 31}, {1, 2, 3}), merge_rows({2, 25, 17}, {4, 5, 6})};
  const auto r = ds::merge_insert(root, src, merge_upsert());
  CHECK(r.updated_rows == 3);
  CHECK(r.inserted_rows == 3);
  CHECK(r.deleted_rows == 0);
  // As LanceDB 0.39 leaves the same table (checked with its mergeInsert).
  CHECK(merge_contents(root) ==
        "0:0 1:1 3:3 4:4 5:5 7:7 8:8 9:9 10:10 11:11 12:12 13:13 14:14 15:15 16:16 18:18 19:19 6:2 2:4 17:6 34:1 31:3 25:5 ");
  const auto d = ds::dataset::open(root);
  const auto& op = std::get<pb::transaction::update>(d.transaction()->operation);
  CHECK(op.updated_fragments.size() == 1);
  CHECK(op.new_fragments.size() == 1);
  CHECK(op.fields_for_preserving_frag_bitmap == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("merge_insert: insert-only, delete by source with a condition, matched_if, fewer source columns") {
  lancet::testing::scratch_dir tmp("merge-clauses");
  const auto root = merge_dataset(tmp);
  SUBCASE("insert only: matched keys left alone, duplicate new keys both inserted") {
    ds::merge_insert_options o;
    o.on = {"id"};
    o.when_not_matched_insert_all = true;
    const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({3, 100, 100}, {9, 1, 2})}, o);
    CHECK(r.inserted_rows == 2);
    CHECK(merge_contents(root).ends_with("18:18 19:19 100:1 100:2 "));
    CHECK(merge_contents(root).find("3:3 ") != std::string::npos);
  }
  SUBCASE("update matched and delete the target rows below 5 no source row matches") {
    ds::merge_insert_options o;
    o.on = {"id"};
    o.when_matched_update_all = true;
    o.when_not_matched_by_source_delete = true;
    o.by_source_delete_if = "id < 5";
    const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({3, 4, 5}, {3003, 3004, 3005})}, o);
    CHECK(r.updated_rows == 3);
    CHECK(r.deleted_rows == 3);
    CHECK(merge_contents(root) == "6:6 7:7 8:8 9:9 10:10 11:11 12:12 13:13 14:14 15:15 16:16 17:17 18:18 19:19 3:3003 4:3004 5:3005 ");
  }
  SUBCASE("matched_if over target. and source. columns") {
    ds::merge_insert_options o;
    o.on = {"id"};
    o.when_matched_update_all = true;
    o.matched_if = "target.x < source.x";
    const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({1, 2, 3}, {0, 50, 3})}, o);
    CHECK(r.updated_rows == 1);
    CHECK(merge_contents(root).ends_with("19:19 2:50 "));
  }
  SUBCASE("a source of the key alone: updated rows keep their other columns; inserted ones get NULL") {
    const auto r = ds::merge_insert(root, std::vector<record_batch>{make_batch({{"id", make_array<std::int64_t>({4, 70})}})},
                                    merge_upsert());
    CHECK(r.updated_rows == 1);
    CHECK(merge_contents(root).ends_with("19:19 4:4 70:null "));
  }
  SUBCASE("every row of the fragment replaced: the fragment leaves") {
    std::vector<std::int64_t> ids;
    std::vector<std::int32_t> xs;
    for (int i = 0; i < 20; ++i) {
      ids.push_back(i);
      xs.push_back(-i);
    }
    ds::merge_insert(root, std::vector<record_batch>{merge_rows(ids, xs)}, merge_upsert());
    const auto d = ds::dataset::open(root);
    CHECK(std::get<pb::transaction::update>(d.transaction()->operation).removed_fragment_ids ==
          std::vector<std::uint64_t>{0});
    CHECK(d.manifest().fragments.size() == 1);
    CHECK(d.count_rows() == 20);
  }
}

TEST_CASE("merge_insert: bad input is an error naming the key or column, nothing committed") {
  lancet::testing::scratch_dir tmp("merge-errors");
  const auto root = merge_dataset(tmp);
  const auto v = ds::dataset::open(root).version();
  const auto fails = [&](const std::vector<record_batch>& src, const ds::merge_insert_options& o, const std::string& words) {
    try {
      ds::merge_insert(root, src, o);
      FAIL("no error");
    } catch (const lancet::error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
    CHECK(ds::dataset::open(root).version() == v);
    std::size_t files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(root) / "data"))
      files += e.is_regular_file();
    CHECK(files == 1);
  };
  fails({merge_rows({1, 1}, {7, 8})}, merge_upsert(), "multiple source rows match the same target row on (id = 1)");
  auto no_key = merge_upsert();
  no_key.on = {"nope"};
  fails({merge_rows({1}, {1})}, no_key, "no key column 'nope'");
  fails({make_batch({{"id", make_array<std::int64_t>({1})}, {"y", make_array<std::int32_t>({1})}})}, merge_upsert(),
        "the source has column 'y'");
  fails({make_batch({{"id", make_array<std::int64_t>({1})}, {"x", string_array({"a"})}})}, merge_upsert(), "'x'");
  ds::merge_insert_options none;
  none.on = {"id"};
  fails({merge_rows({1}, {1})}, none, "no clause");
  auto bad_if = merge_upsert();
  bad_if.matched_if = "target.nope > 1";
  fails({merge_rows({1}, {1})}, bad_if, "nope");
}

TEST_CASE("merge_insert racing a delete of other rows of its fragment: the deletions merged, no second run") {
  lancet::testing::scratch_dir tmp("merge-race-merged");
  const auto root = merge_dataset(tmp);
  racing_factory f{[&] { ds::delete_where(root, "id = 10"); }};
  const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({3, 4, 50}, {30, 40, 500})}, merge_upsert(), f);
  CHECK(r.retries == 1);
  CHECK(f.data_files == 1);  // one when rebased, two when run again
  CHECK(r.updated_rows == 2);
  CHECK(r.inserted_rows == 1);
  const auto d = ds::dataset::open(root);
  CHECK(d.deleted_rows(0).offsets() == std::vector<std::uint32_t>{3, 4, 10});
  CHECK(merge_contents(root) == "0:0 1:1 2:2 5:5 6:6 7:7 8:8 9:9 11:11 12:12 13:13 14:14 15:15 16:16 17:17 18:18 19:19 "
                                "3:30 4:40 50:500 ");
}

TEST_CASE("merge_insert racing a delete of a row it updates: it runs again on the new version") {
  lancet::testing::scratch_dir tmp("merge-race");
  const auto root = merge_dataset(tmp);
  racing_factory f{[&] { ds::delete_where(root, "id = 3"); }};
  const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({3, 4}, {30, 40})}, merge_upsert(), f);
  CHECK(r.retries == 1);
  // Run again after the delete: 3 is no longer there, so it is inserted.
  CHECK(r.updated_rows == 1);
  CHECK(r.inserted_rows == 1);
  CHECK(merge_contents(root).ends_with("19:19 4:40 3:30 "));
}

TEST_CASE("merge_insert of a streamed source larger than its memory budget: spilled, read back, run again") {
  lancet::testing::scratch_dir tmp("merge-stream");
  const auto streamed = merge_dataset(tmp);
  const auto held = tmp.sub("held");
  std::filesystem::copy(streamed, held, std::filesystem::copy_options::recursive);
  // 40 batches of 100 rows: ids 10..4009 (10..19 are in the dataset), x = 2 * id, NULL every 7th.
  std::vector<record_batch> source;
  for (int b = 0; b < 40; ++b) {
    std::vector<std::int64_t> ids;
    std::vector<std::optional<std::int32_t>> xs;
    for (int i = 0; i < 100; ++i) {
      ids.push_back(10 + b * 100 + i);
      xs.push_back(i % 7 ? std::optional<std::int32_t>(2 * (10 + b * 100 + i)) : std::nullopt);
    }
    source.push_back(make_batch({{"id", make_array<std::int64_t>(ids)}, {"x", make_array<std::int32_t>(xs)}}));
  }
  auto o = merge_upsert();
  o.when_not_matched_by_source_delete = true;
  o.by_source_delete_if = "id < 5";
  ds::delete_where(held, "id = 15");  // what the rival below does to the other copy
  const auto expected = ds::merge_insert(held, source, o);
  CHECK(expected.spilled_source_rows == 0);
  o.memory_budget_bytes = 4096;  // about 3 batches
  o.spill_directory = tmp.sub("spill");
  racing_factory f{[&] { ds::delete_where(streamed, "id = 15"); }};
  std::size_t at = 0;
  const auto r = ds::merge_insert(
      streamed, [&]() -> std::optional<record_batch> { return at < source.size() ? std::optional(source[at++]) : std::nullopt; },
      o, f);
  CHECK(r.retries == 1);
  CHECK(r.spilled_source_rows > 3000);
  CHECK(r.spilled_source_rows < 4000);
  CHECK(r.updated_rows == 9);
  CHECK(r.deleted_rows == 5);
  CHECK(r.inserted_rows == 3991);
  CHECK(expected.inserted_rows == 3991);
  CHECK(merge_contents(streamed) == merge_contents(held));
  CHECK(merge_contents(streamed).starts_with("5:5 6:6 7:7 8:8 9:9 10:null 11:22 "));
  CHECK(std::filesystem::is_empty(o.spill_directory));
}

TEST_CASE("merge_insert: a source row matching several target rows updates each; a bad later batch commits nothing") {
  lancet::testing::scratch_dir tmp("merge-dup-target");
  const auto root = tmp.sub("ds");
  ds::write(root, merge_rows({1, 2, 1}, {1, 2, 3}));
  const auto r = ds::merge_insert(root, std::vector<record_batch>{merge_rows({1}, {10})}, merge_upsert());
  CHECK(r.updated_rows == 2);
  CHECK(merge_contents(root) == "2:2 1:10 1:10 ");
  const auto before = ds::dataset::open(root).version();
  std::vector<record_batch> bad{merge_rows({5}, {5}), make_batch({{"id", make_array<std::int64_t>({6})}})};
  CHECK_THROWS_WITH_AS(ds::merge_insert(root, bad, merge_upsert()), doctest::Contains("another schema than batch 0"),
                       invalid_input_error);
  CHECK(ds::dataset::open(root).version() == before);
  // Keys of two columns are shown as Lance shows them.
  const auto two = tmp.sub("two");
  ds::write(two, make_batch({{"id", make_array<std::int64_t>({1, 2})}, {"s", string_array({"a", "b"})}}));
  auto o = merge_upsert();
  o.on = {"s", "id"};
  const std::vector<record_batch> dup{
      make_batch({{"id", make_array<std::int64_t>({1, 1})}, {"s", string_array({"a", "a"})}})};
  CHECK_THROWS_WITH_AS(ds::merge_insert(two, dup, o), doctest::Contains("row on (s = \"a\", id = 1)"),
                       invalid_input_error);
}

TEST_CASE("merge_insert and a vector index: moved and inserted rows found through the unindexed path, then indexed") {
  bool stable = false;
  SUBCASE("row addresses") {}
  SUBCASE("stable row ids") { stable = true; }
  lancet::testing::scratch_dir tmp("merge-index");
  const auto root = tmp.sub("ds");
  // id 0..39, vec = (id, id % 3) in 2 fragments.
  const auto rows = [](std::int64_t a, std::int64_t b, float shift) {
    std::vector<std::int64_t> ids;
    std::vector<float> vec;
    for (auto i = a; i < b; ++i) {
      ids.push_back(i);
      vec.push_back(float(i) + shift);
      vec.push_back(float(i % 3));
    }
    return make_batch({{"id", make_array<std::int64_t>(ids)}, {"vec", make_fixed_size_list(make_array<float>(vec), 2)}});
  };
  auto w = lancet::testing::opts(ds::write_mode::create, 20);
  w.enable_stable_row_ids = stable;
  ds::write(root, rows(0, 40, 0), w);
  index::build_options o;
  o.column = "vec";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  index::build_ivf_index(root, o);
  // ids 10..14 move to (id + 100, id % 3); ids 40..44 are new at (id + 100, id % 3).
  const auto r = ds::merge_insert(root, std::vector<record_batch>{rows(10, 15, 100), rows(40, 45, 100)}, merge_upsert());
  CHECK(r.updated_rows == 5);
  CHECK(r.inserted_rows == 5);
  if (stable) {  // the updated rows keep their ids; the inserted ones take the next ones
    const auto ids = lancet::testing::row_id_by_id(ds::dataset::open(root));
    for (std::int64_t i = 0; i < 45; ++i) CHECK(ids.at(i) == std::uint64_t(i));
    CHECK(ds::dataset::open(root).manifest().next_row_id == 45);
  }
  const auto nearest = [&](float x, float y) {
    const auto hits = query::table::open(root).search("vec", std::vector<float>{x, y}).nprobes(2).select({"id"}).limit(1).to_batch();
    REQUIRE(hits.num_rows() == 1);
    CHECK(hits.columns[1]->value<float>(0) == 0.0f);  // _distance
    return hits.columns[0]->value<std::int64_t>(0);
  };
  const auto check_answers = [&] {
    CHECK(nearest(112, 0) == 12);  // the moved row, at its new vector
    CHECK(nearest(142, 0) == 42);  // an inserted row
    CHECK(nearest(9, 0) == 9);     // an indexed row that stayed
    // The old vector of a moved row is gone: its nearest is another row.
    const auto hits = query::table::open(root).search("vec", std::vector<float>{12, 0}).nprobes(2).select({"id"}).limit(3).to_batch();
    for (std::int64_t i = 0; i < hits.num_rows(); ++i) CHECK(hits.columns[0]->value<std::int64_t>(i) != 12);
  };
  check_answers();
  index::optimize_indices(root);  // the merge's new fragment joins the index
  const auto d = ds::dataset::open(root);
  const auto s = ds::load_latest(root);
  REQUIRE(s->file.indices.size() >= 1);
  std::uint64_t covered = 0;
  for (const auto& im : s->file.indices) covered += ds::index_fragment_bitmap(im).to_vector().size();
  CHECK(covered == d.manifest().fragments.size());
  check_answers();
}

TEST_CASE("merge_insert on a table's unenforced primary key: the inserted keys' filter, and two merges inserting one key") {
  lancet::testing::scratch_dir tmp("merge-pk");
  const auto root = tmp.sub("ds");
  auto pk_rows = [](const std::vector<std::int64_t>& ids, const std::vector<std::int32_t>& xs) {
    auto b = merge_rows(ids, xs);
    auto s = std::make_shared<arrow::schema>(*b.schema);
    s->fields[0].metadata = {{"lance-schema:unenforced-primary-key", "true"}};
    s->fields[0].nullable = false;
    b.schema = s;
    return b;
  };
  std::vector<std::int64_t> ids;
  std::vector<std::int32_t> xs;
  for (int i = 0; i < 20; ++i) ids.push_back(i), xs.push_back(i);
  ds::write(root, pk_rows(ids, xs));
  // Keys inserted (100, 101) are in the filter; the updated one (3) is not.
  ds::merge_insert(root, std::vector<record_batch>{pk_rows({3, 100, 101}, {30, 1000, 1010})}, merge_upsert());
  const auto d = ds::dataset::open(root);
  const auto& op = std::get<pb::transaction::update>(d.transaction()->operation);
  REQUIRE(op.inserted_rows_filter.has_value());
  CHECK(op.inserted_rows_filter->field_ids == std::vector<std::int32_t>{0});
  const auto* bloom = std::get_if<pb::transaction::bloom_filter>(&op.inserted_rows_filter->data);
  REQUIRE(bloom != nullptr);
  CHECK(bloom->bitmap.size() == 32768);
  CHECK(bloom->num_bits == 262144);
  std::size_t bits = 0;
  for (unsigned char c : bloom->bitmap) bits += std::size_t(__builtin_popcount(c));
  CHECK(bits <= 16);  // eight bits a key
  CHECK(bits >= 9);
  // A key column that is not the primary key: no filter.
  auto other = merge_upsert();
  other.on = {"x"};
  ds::merge_insert(root, std::vector<record_batch>{pk_rows({200}, {2000})}, other);
  CHECK_FALSE(std::get<pb::transaction::update>(ds::dataset::open(root).transaction()->operation).inserted_rows_filter);

  // Another merge inserts key 500 just before ours, which inserts 500 too: ours runs
  // again and updates that row instead of adding a second one.
  racing_factory same{[&] { ds::merge_insert(root, std::vector<record_batch>{pk_rows({500}, {1})}, merge_upsert()); }};
  const auto r = ds::merge_insert(root, std::vector<record_batch>{pk_rows({500, 600}, {2, 3})}, merge_upsert(), same);
  CHECK(r.retries == 1);
  CHECK(same.data_files == 2);  // written again by the second run
  CHECK(r.updated_rows == 1);
  CHECK(r.inserted_rows == 1);
  CHECK(merge_contents(root).ends_with("500:2 600:3 "));
  // Different new keys: rebased on the other merge, not run again.
  racing_factory other_key{[&] { ds::merge_insert(root, std::vector<record_batch>{pk_rows({700}, {7})}, merge_upsert()); }};
  const auto r2 = ds::merge_insert(root, std::vector<record_batch>{pk_rows({800}, {8})}, merge_upsert(), other_key);
  CHECK(r2.retries == 1);
  CHECK(other_key.data_files == 1);
  CHECK(ds::dataset::open(root).count_rows() == 27);
}
