// BITMAP and LABEL_LIST scalar indexes (index/scalar/bitmap_*.hpp): Lance's row-id
// set serialization, the keys and their rows as Lance 12 writes them (NULL first,
// ascending; a LABEL_LIST's NULL lists in global buffer 1), the CreateIndex entry,
// filters answered from the keys equal to scans, types refused, and compaction's remap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/expr/filter.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/index/scalar/scalar_index.hpp>
#include <lancet/query/table.hpp>

#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace ds = lancet::dataset;

namespace {

// id int64, k int32 (NULL every 7th, 13 values), c utf8 (NULL every 5th, 4 values),
// f float32, tags list<utf8> (NULL list every 10th, empty every 4th, a NULL item every
// 9th row, a label of its own every 1400th).
record_batch bitmap_rows(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> id;
  std::vector<std::optional<std::int32_t>> k;
  std::vector<std::optional<std::string>> c;
  std::vector<float> f;
  std::vector<std::optional<std::vector<std::optional<std::string>>>> tags;
  const char* colours[] = {"red", "blue", "green", "amber"};
  for (auto i = a; i < b; ++i) {
    id.push_back(i);
    k.push_back(i % 7 == 0 ? std::nullopt : std::optional<std::int32_t>(std::int32_t((i * 37) % 13) - 6));
    c.push_back(i % 5 == 0 ? std::nullopt : std::optional<std::string>(colours[(i / 3) % 4]));
    f.push_back(float(i) / 4);
    if (i % 10 == 3) {
      tags.push_back(std::nullopt);
    } else if (i % 4 == 0) {
      tags.push_back(std::vector<std::optional<std::string>>{});
    } else {
      std::vector<std::optional<std::string>> t{"t" + std::to_string(i % 3), "u" + std::to_string(i % 5)};
      if (i % 9 == 0) t.push_back(std::nullopt);
      if (i % 1400 == 5) t.push_back("r" + std::to_string(i));  // rare labels: selective filters
      tags.push_back(t);
    }
  }
  std::vector<std::int32_t> offsets{0};
  std::vector<std::optional<std::string>> items;
  std::vector<bool> valid;
  for (const auto& t : tags) {
    valid.push_back(t.has_value());
    if (t) items.insert(items.end(), t->begin(), t->end());
    offsets.push_back(std::int32_t(items.size()));
  }
  return make_batch({{"id", make_array<std::int64_t>(id)},
                     {"k", make_array<std::int32_t>(k)},
                     {"c", string_array(c)},
                     {"f", make_array<float>(f)},
                     {"tags", make_list(string_array(items), offsets, valid)}});
}

// Row address of every live row, with the batch of `columns` beside them.
record_batch live_rows_of(const std::string& root, std::vector<std::string> columns) {
  ds::scan_options so;
  so.columns = std::move(columns);
  so.with_row_address = true;
  return ds::dataset::open(root).to_batch(so);
}

std::set<std::uint64_t> scan_answer(const std::string& root, const std::string& filter) {
  const auto all = ds::dataset::open(root).to_batch({.columns = {"id", "k", "c"}, .with_row_address = true});
  const auto kept = expr::filter::compile(filter, *all.schema).apply(all);
  std::set<std::uint64_t> out;
  for (std::int64_t r = 0; r < kept.num_rows(); ++r) out.insert(kept.columns.at(3)->value<std::uint64_t>(r));
  return out;
}

// Entries of every row set of a bitmap index.
std::uint64_t entries_of(const index::bitmap_lookup& lookup) {
  std::uint64_t n = 0;
  for (const auto& s : index::read_bitmaps(lookup)) n += s.ids().size();
  return n;
}

// Live rows of the appended fragment (the newest) and rows whose `tags` is NULL.
std::uint64_t d_appended_live(const std::string& root) {
  return ds::dataset::open(root).fragments().back().live_rows();
}
std::uint64_t scan_nulls(const std::string& root) {
  const auto b = ds::dataset::open(root).to_batch({.columns = {"tags"}});
  return std::uint64_t(b.columns[0]->count_nulls());
}

const pb::index_metadata& bitmap_index_named(const ds::dataset& d, const std::string& name) {
  for (const auto& im : d.indices())
    if (im.name == name) return im;
  FAIL("no index " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("row id sets: Lance's serialization, whole fragments, damage named") {
  const std::vector<std::uint64_t> ids{3, 4, 70000, (std::uint64_t(2) << 32) | 5, (std::uint64_t(9) << 32)};
  const auto bytes = index::serialize_row_ids(ids);
  // u32 count 3; then key 0 (size, bitmap), key 2, key 9.
  REQUIRE(bytes.size() > 4);
  CHECK(std::uint8_t(bytes[0]) == 3);
  CHECK(std::uint8_t(bytes[4]) == 0);
  const auto view = [](const std::string& s) { return bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); };
  const auto back = index::deserialize_row_ids(view(bytes), "t");
  CHECK(back.ids() == ids);
  CHECK(index::serialize_row_ids({}) == std::string(4, '\0'));
  // A size-0 entry is a whole fragment: 1 entry, key 7, size 0.
  std::string whole(12, '\0');
  whole[0] = 1;
  whole[4] = 7;
  const auto w = index::deserialize_row_ids(view(whole), "t");
  CHECK(w.ids([](std::uint32_t hi) { return hi == 7 ? 3 : 0; }) ==
        std::vector<std::uint64_t>{std::uint64_t(7) << 32, (std::uint64_t(7) << 32) | 1, (std::uint64_t(7) << 32) | 2});
  CHECK_THROWS_AS((void)w.ids(), unsupported_error);
  CHECK_THROWS_WITH_AS(index::deserialize_row_ids(view(bytes.substr(0, bytes.size() - 1)), "set X"),
                       doctest::Contains("set X"), corrupt_error);
  CHECK_THROWS_AS(index::deserialize_row_ids(view(bytes + "z"), "t"), corrupt_error);
}

TEST_CASE("bitmap: keys NULL first and ascending, each with its rows; the CreateIndex entry; types refused") {
  lancet::testing::scratch_dir tmp("bitmap");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 3000;
  ds::write(root, bitmap_rows(0, 7000), w);  // fragments 0, 1, 2
  ds::delete_where(root, "id % 11 = 4");
  for (const std::string column : {"k", "c"}) {
    INFO(column);
    index::scalar_index_options o;
    o.column = column;
    const auto r = index::build_bitmap_index(root, o);
    const auto d = ds::dataset::open(root);
    CHECK(r.version == d.version());
    CHECK(r.rows == d.count_rows());
    const auto& im = bitmap_index_named(d, column + "_idx");
    REQUIRE(im.index_details.has_value());
    CHECK(im.index_details->type_url == "/lance.table.BitmapIndexDetails");
    CHECK(im.index_version == 0);
    REQUIRE(im.files.size() == 1);
    CHECK(im.files[0].path == "bitmap_page_lookup.lance");
    CHECK(index::describe_index(d.manifest(), im).index_type == "BITMAP");
    // The expected groups, from the live rows.
    const auto live = live_rows_of(root, {column});
    std::map<std::optional<std::string>, std::vector<std::uint64_t>> want;
    for (std::int64_t i = 0; i < live.num_rows(); ++i) {
      const auto& v = *live.columns[0];
      std::optional<std::string> key;
      if (!v.is_null(i)) key = column == "k" ? std::to_string(v.value<std::int32_t>(i)) : std::string(v.string_value(i));
      want[key].push_back(live.columns[1]->value<std::uint64_t>(i));
    }
    const auto lookup = index::read_bitmap_lookup(index::index_directory(root, im.uuid));
    REQUIRE(lookup.size() == want.size());
    CHECK(r.pages == want.size());
    CHECK(lookup.keys->is_null(0));
    CHECK(!lookup.null_lists);
    const auto sets = index::read_bitmaps(lookup);
    for (std::size_t i = 0; i < sets.size(); ++i) {
      std::optional<std::string> key;
      if (!lookup.keys->is_null(std::int64_t(i)))
        key = column == "k" ? std::to_string(lookup.keys->value<std::int32_t>(std::int64_t(i)))
                            : std::string(lookup.keys->string_value(std::int64_t(i)));
      if (i > 1 && column == "k")
        CHECK(lookup.keys->value<std::int32_t>(std::int64_t(i - 1)) < lookup.keys->value<std::int32_t>(std::int64_t(i)));
      if (i > 1 && column == "c")
        CHECK(lookup.keys->string_value(std::int64_t(i - 1)) < lookup.keys->string_value(std::int64_t(i)));
      REQUIRE(want.count(key));
      CHECK(sets[i].ids() == want[key]);
    }
    const auto stats = lookup.file->schema().metadata;
    CHECK(std::find(stats.begin(), stats.end(),
                    std::pair<std::string, std::string>("lance:index_stats", "{\"num_bitmaps\":" + std::to_string(want.size()) + "}")) !=
          stats.end());
  }
  index::scalar_index_options o;
  o.column = "f";
  CHECK_THROWS_WITH_AS(index::build_bitmap_index(root, o), doctest::Contains("'f'"), unsupported_error);
  o.column = "tags";
  CHECK_THROWS_WITH_AS(index::build_bitmap_index(root, o), doctest::Contains("'tags'"), unsupported_error);
  CHECK_THROWS_WITH_AS(index::build_label_list_index(root, index::scalar_index_options{"k", "", true, 4096}),
                       doctest::Contains("'k'"), unsupported_error);
  o.column = "nope";
  CHECK_THROWS_WITH_AS(index::build_bitmap_index(root, o), doctest::Contains("'nope'"), invalid_input_error);
  o.column = "k";
  o.replace = false;
  CHECK_THROWS_WITH_AS(index::build_bitmap_index(root, o), doctest::Contains("k_idx"), invalid_input_error);
}

TEST_CASE("bitmap: filters answered from the keys equal scans; compaction remaps the rows") {
  lancet::testing::scratch_dir tmp("bitmap-filter");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 2500;
  ds::write(root, bitmap_rows(0, 6000), w);
  ds::delete_where(root, "id % 13 = 1");
  index::scalar_index_options o;
  o.column = "c";
  index::build_bitmap_index(root, o);
  o.column = "k";
  index::build_bitmap_index(root, o);
  const std::vector<std::string> filters = {"k = 3",          "k IN (1, -4, 99)", "k > 2",           "k BETWEEN -2 AND 1",
                                            "k IS NULL",      "k IS NOT NULL",    "k <> 0",          "NOT (k < 0)",
                                            "c = 'amber'",    "c IN ('red', 'x')", "c >= 'c'",       "c IS NULL",
                                            "c LIKE 'gr%'",   "k = 100"};
  const auto check_all = [&](const std::string& when) {
    const auto d = ds::dataset::open(root);
    for (const auto& f : filters) {
      INFO(when << ": " << f);
      const auto column = f.find('c') == 0 ? "c" : "k";
      const auto lookup = index::read_bitmap_lookup(index::index_directory(root, bitmap_index_named(d, std::string(column) + "_idx").uuid));
      const auto compiled = expr::filter::compile(f, d.schema());
      const auto got = index::bitmap_rows_where(lookup, compiled).row_ids;
      CHECK(std::is_sorted(got.begin(), got.end()));
      // The index keeps deleted rows (as Lance's); the scan does not.
      std::set<std::uint64_t> live_got;
      const auto live = d.live_rows();
      for (auto id : got)
        if (live->contains(id)) live_got.insert(id);
      CHECK(live_got == scan_answer(root, f));
      // Bounded: over max_rows gives nullopt.
      if (got.size() > 1) CHECK(!index::bitmap_rows_where(lookup, compiled, got.size() - 1, {}));
    }
  };
  check_all("built");
  ds::delete_where(root, "id % 5 = 2");
  ds::compaction_options co;
  co.target_rows_per_fragment = 10000;
  co.remap_indexes = index::compaction_remapper();
  ds::compact_files(root, co);
  const auto d = ds::dataset::open(root);
  REQUIRE(d.manifest().fragments.size() == 1);
  const auto& im = bitmap_index_named(d, "c_idx");
  CHECK(index::describe_index(d.manifest(), im).fragment_ids == std::vector<std::uint64_t>{d.manifest().fragments[0].id});
  const auto& txn = std::get<pb::transaction::rewrite>(d.transaction()->operation);
  REQUIRE(txn.rewritten_indices.size() == 2);
  CHECK(txn.rewritten_indices[0].new_index_version == 0);
  // Deleted rows are dropped by the remap: every entry is a live row.
  const auto lookup = index::read_bitmap_lookup(index::index_directory(root, im.uuid));
  CHECK(entries_of(lookup) == d.count_rows());
  check_all("compacted");
}

TEST_CASE("label_list: one key per item, a NULL item's rows under the NULL key, NULL lists in buffer 1") {
  lancet::testing::scratch_dir tmp("label-list");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 1500;
  ds::write(root, bitmap_rows(0, 4000), w);
  ds::delete_where(root, "id % 17 = 6");
  index::scalar_index_options o;
  o.column = "tags";
  const auto r = index::build_label_list_index(root, o);
  const auto d = ds::dataset::open(root);
  const auto& im = bitmap_index_named(d, "tags_idx");
  CHECK(im.index_details->type_url == "/lance.table.LabelListIndexDetails");
  CHECK(im.index_version == 1);
  CHECK(index::describe_index(d.manifest(), im).index_type == "LABEL_LIST");
  const auto live = live_rows_of(root, {"tags"});
  std::map<std::optional<std::string>, std::set<std::uint64_t>> want;
  std::vector<std::uint64_t> null_lists;
  const auto& lists = *live.columns[0];
  const auto& items = *lists.children[0];
  for (std::int64_t i = 0; i < live.num_rows(); ++i) {
    const auto addr = live.columns[1]->value<std::uint64_t>(i);
    if (lists.is_null(i)) {
      null_lists.push_back(addr);
      continue;
    }
    for (auto j = lists.value_offset(i); j < lists.value_offset(i + 1); ++j)
      want[items.is_null(j) ? std::nullopt : std::optional<std::string>(items.string_value(j))].insert(addr);
  }
  const auto lookup = index::read_bitmap_lookup(index::index_directory(root, im.uuid));
  REQUIRE(lookup.size() == want.size());
  CHECK(r.pages == want.size());
  REQUIRE(lookup.null_lists);
  CHECK(lookup.null_lists->ids() == null_lists);
  CHECK(lookup.file->global_buffer(1).size() == index::serialize_row_ids(null_lists).size());
  const auto sets = index::read_bitmaps(lookup);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const auto key = lookup.keys->is_null(std::int64_t(i)) ? std::nullopt
                                                           : std::optional<std::string>(lookup.keys->string_value(std::int64_t(i)));
    REQUIRE(want.count(key));
    const auto ids = sets[i].ids();
    CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()) == want[key]);
  }
}

TEST_CASE("bitmap: query::table answers filtered scans from it, with deletes and unindexed rows; a BTREE goes first") {
  lancet::testing::scratch_dir tmp("bitmap-query");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 2000;
  ds::write(root, bitmap_rows(0, 6000), w);
  index::scalar_index_options o;
  o.column = "id";
  index::build_bitmap_index(root, o);
  o.column = "c";
  index::build_bitmap_index(root, o);
  ds::delete_where(root, "id % 10 = 3");  // after the index: it still holds these rows
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, bitmap_rows(6000, 7000), a);  // not indexed
  const auto d = ds::dataset::open(root);
  const auto t = query::table::open(root);
  const auto all = d.to_batch({.columns = {"id", "k", "c"}, .with_row_id = true});
  for (const std::string sql : {"id = 57", "id = 53", "id IN (3, 4, 5, 6000, 6500)", "id BETWEEN 100 AND 102 AND c = 'red'",
                                "id < 4 AND k IS NULL", "c = 'amber'", "c IS NULL AND id > 5990", "k = 3 AND id <= 2"}) {
    CAPTURE(sql);
    const auto keep = expr::filter::compile(sql, *all.schema).apply(all);
    query::request q;
    q.columns = {"id"};
    q.filter = sql;
    q.with_row_id = true;
    const auto got = t.to_batch(q);
    REQUIRE(got.num_rows() == keep.num_rows());
    for (std::int64_t i = 0; i < got.num_rows(); ++i) {
      CHECK(got.columns[0]->value<std::int64_t>(i) == keep.columns[0]->value<std::int64_t>(i));
      CHECK(got.columns[1]->value<std::uint64_t>(i) == keep.columns[3]->value<std::uint64_t>(i));
    }
  }
  CHECK(t.explain(query::request{{}, "id = 3 AND c = 'red'"}).find("BITMAP 'id_idx' on 'id'") != std::string::npos);
  // The selective answers come from the index: without its file the query fails.
  const auto id_dir = index::index_directory(root, bitmap_index_named(d, "id_idx").uuid);
  std::filesystem::rename(id_dir + "/bitmap_page_lookup.lance", id_dir + "/moved");
  query::request q;
  q.filter = "id = 57";
  CHECK_THROWS(query::table::open(root).to_batch(q));
  std::filesystem::rename(id_dir + "/moved", id_dir + "/bitmap_page_lookup.lance");
  // With a BTREE on the same column, the BTREE answers (as in LanceDB's plans).
  o.column = "id";
  o.name = "id_btree";
  index::build_btree_index(root, o);
  CHECK(query::table::open(root).explain(query::request{{}, "id = 3"}).find("BTREE 'id_btree' on 'id'") != std::string::npos);
  // An index whose values are not of the column's type is named, not read as such.
  const auto c_dir = index::index_directory(root, bitmap_index_named(d, "c_idx").uuid);
  index::write_bitmap_file(c_dir, file::format_version::v2_2, make_array<std::int32_t>(std::vector<std::int32_t>{1}),
                           {index::serialize_row_ids({})}, std::nullopt);
  q.filter = "c = 'red'";
  CHECK_THROWS_WITH_AS(query::table::open(root).to_batch(q), doctest::Contains("'c_idx' on 'c' holds values of type int32"),
                       corrupt_error);
}

TEST_CASE("label_list: array_has_any / array_has_all / array_has filter scans, and the query layer answers them from it") {
  lancet::testing::scratch_dir tmp("label-query");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 1500;
  ds::write(root, bitmap_rows(0, 4000), w);
  // The answer by hand: rows whose list holds any (every) of the labels; NULL lists never.
  const auto expected = [&](const std::vector<std::optional<std::string>>& labels, bool every) {
    const auto all = ds::dataset::open(root).to_batch({.columns = {"id", "tags"}});
    const auto& lists = *all.columns[1];
    const auto& items = *lists.children[0];
    std::vector<std::int64_t> out;
    for (std::int64_t r = 0; r < all.num_rows(); ++r) {
      if (lists.is_null(r)) continue;
      std::size_t held = 0;
      for (const auto& l : labels) {
        bool has = false;
        for (auto j = lists.value_offset(r); j < lists.value_offset(r + 1); ++j)
          has = has || (items.is_null(j) ? !l : (l && items.string_value(j) == *l));
        held += has;
      }
      if (every ? held == labels.size() : held > 0) out.push_back(all.columns[0]->value<std::int64_t>(r));
    }
    return out;
  };
  const auto ids_of = [](const record_batch& b) {
    std::vector<std::int64_t> out;
    for (std::int64_t r = 0; r < b.num_rows(); ++r) out.push_back(b.columns[0]->value<std::int64_t>(r));
    return out;
  };
  struct probe {
    std::string sql;
    std::vector<std::optional<std::string>> labels;
    bool every;
  };
  const std::vector<probe> probes = {
      {"array_has_any(tags, ['t1', 'u3'])", {"t1", "u3"}, false},
      {"array_has_all(tags, ['t1', 'u3'])", {"t1", "u3"}, true},
      {"array_contains(tags, 'u4')", {"u4"}, false},
      {"ARRAY_HAS(tags, 't0')", {"t0"}, false},
      {"list_has_any(tags, [NULL])", {std::nullopt}, false},
      {"array_has_all(tags, ['u2', NULL])", {"u2", std::nullopt}, true},
      {"array_has_any(tags, [arrow_cast('t2', 'Utf8'), 'nope'])", {"t2", "nope"}, false},
      {"array_has_any(tags, [])", {}, false},
      {"array_has_any(tags, ['r1405', 'r2805', 'r9'])", {"r1405", "r2805", "r9"}, false},
      {"array_has_all(tags, ['r1405', 'u0'])", {"r1405", "u0"}, true},
      {"array_has(tags, 'r4205') AND id > 0", {"r4205"}, false},
  };
  const auto check_all = [&](const std::string& when) {
    const auto t = query::table::open(root);
    for (const auto& p : probes) {
      INFO(when << ": " << p.sql);
      query::request q;
      q.columns = {"id"};
      q.filter = p.sql;
      CHECK(ids_of(t.to_batch(q)) == expected(p.labels, p.every));
    }
    // Three-valued: NOT keeps the non-NULL lists without the label.
    query::request q;
    q.columns = {"id"};
    q.filter = "NOT array_has_any(tags, ['t1'])";
    const auto with = expected({"t1"}, false);
    const auto all = ds::dataset::open(root).to_batch({.columns = {"id", "tags"}});
    std::vector<std::int64_t> want;
    for (std::int64_t r = 0; r < all.num_rows(); ++r)
      if (!all.columns[1]->is_null(r) && !std::binary_search(with.begin(), with.end(), all.columns[0]->value<std::int64_t>(r)))
        want.push_back(all.columns[0]->value<std::int64_t>(r));
    CHECK(ids_of(t.to_batch(q)) == want);
  };
  check_all("no index");
  index::scalar_index_options o;
  o.column = "tags";
  index::build_label_list_index(root, o);
  ds::delete_where(root, "id % 7 = 1");
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, bitmap_rows(4000, 4500), a);  // not indexed
  check_all("indexed");
  const auto t = query::table::open(root);
  CHECK(t.explain(query::request{{}, "array_has_any(tags, ['t1'])"}).find("LABEL_LIST 'tags_idx' on 'tags'") !=
        std::string::npos);
  {  // The selective ones come from the index: without its file they fail.
    const auto dir = index::index_directory(root, bitmap_index_named(ds::dataset::open(root), "tags_idx").uuid);
    std::filesystem::rename(dir + "/bitmap_page_lookup.lance", dir + "/moved");
    query::request q;
    q.filter = "array_has_any(tags, ['r1405'])";
    CHECK_THROWS(query::table::open(root).to_batch(q));
    std::filesystem::rename(dir + "/moved", dir + "/bitmap_page_lookup.lance");
  }
  // Bad uses are named.
  const auto schema = ds::dataset::open(root).schema();
  CHECK_THROWS_WITH_AS(expr::filter::compile("array_has_any(k, [1])", schema), doctest::Contains("not a list"),
                       expr::invalid_filter);
  CHECK_THROWS_WITH_AS(expr::filter::compile("array_has_any(tags, 't1')", schema), doctest::Contains("brackets"),
                       expr::invalid_filter);
  CHECK_THROWS_WITH_AS(expr::filter::compile("array_has_any(tags, [id])", schema), doctest::Contains("constant"),
                       expr::unsupported_filter);
  CHECK_THROWS_AS(expr::filter::compile("array_has_any(tags, [1])", schema), expr::invalid_filter);
}

TEST_CASE("scalar indexes: optimize rewrites them over appended fragments, as Lance's optimize does") {
  lancet::testing::scratch_dir tmp("scalar-optimize");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 1500;
  ds::write(root, bitmap_rows(0, 3000), w);
  index::scalar_index_options o;
  o.column = "k";
  o.batch_size = 512;
  index::build_btree_index(root, o);
  o.column = "c";
  index::build_bitmap_index(root, o);
  o.column = "tags";
  index::build_label_list_index(root, o);
  const auto before = ds::dataset::open(root);
  // Nothing appended: nothing to do, nothing committed.
  CHECK(index::optimize_indices(root).version == before.version());
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, bitmap_rows(3000, 4300), a);
  ds::delete_where(root, "id % 9 = 4");
  const auto r = index::optimize_indices(root);
  const auto d = ds::dataset::open(root);
  CHECK(r.version == d.version());
  REQUIRE(r.indices.size() == 3);
  for (const auto& x : r.indices) {
    INFO(x.name);
    CHECK(x.changed);
    CHECK(x.rows_added == d_appended_live(root));
  }
  REQUIRE(d.indices().size() == 3);
  std::vector<std::uint64_t> all_frags;
  for (const auto& f : d.manifest().fragments) all_frags.push_back(f.id);
  for (const auto& im : d.indices()) {
    INFO(im.name);
    const auto& old = bitmap_index_named(before, im.name);
    CHECK(im.uuid != old.uuid);
    CHECK(im.dataset_version == old.dataset_version);
    CHECK(im.index_version == old.index_version);
    CHECK(im.index_details->type_url == old.index_details->type_url);
    CHECK(index::describe_index(d.manifest(), im).fragment_ids == all_frags);
  }
  // The new files hold every live row, the appended ones included.
  const auto btree = index::read_btree_lookup(index::index_directory(root, bitmap_index_named(d, "k_idx").uuid));
  CHECK(btree.batch_size == 512);
  CHECK(btree.rows == d.count_rows());
  const auto bitmap = index::read_bitmap_lookup(index::index_directory(root, bitmap_index_named(d, "c_idx").uuid));
  CHECK(entries_of(bitmap) == d.count_rows());
  const auto labels = index::read_bitmap_lookup(index::index_directory(root, bitmap_index_named(d, "tags_idx").uuid));
  REQUIRE(labels.null_lists);
  CHECK(labels.null_lists->ids().size() == scan_nulls(root));
  // The query layer answers from them, appended rows included.
  query::request q;
  q.columns = {"id"};
  q.filter = "array_has(tags, 'r4205')";
  const auto got = query::table::open(root).to_batch(q);
  REQUIRE(got.num_rows() == 1);
  CHECK(got.columns[0]->value<std::int64_t>(0) == 4205);
  CHECK(query::table::open(root).explain(q).find("LABEL_LIST 'tags_idx' on 'tags' over 3 fragments") != std::string::npos);
  // By name; a name that is no index is refused.
  index::optimize_options on;
  on.name = "nope";
  CHECK_THROWS_WITH_AS(index::optimize_indices(root, on), doctest::Contains("'nope'"), invalid_input_error);
  on.name = "c_idx";
  on.retrain = true;
  const auto again = index::optimize_indices(root, on);
  REQUIRE(again.indices.size() == 1);
  CHECK(ds::dataset::open(root).version() == d.version() + 1);
}

TEST_CASE("scalar indexes: delete_where and update find their rows through query::indexed_row_finder") {
  lancet::testing::scratch_dir tmp("scalar-dml");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 2000;
  ds::write(root, bitmap_rows(0, 6000), w);
  index::scalar_index_options o;
  o.column = "id";
  index::build_btree_index(root, o);
  o.column = "c";
  index::build_bitmap_index(root, o);
  const auto finder = query::indexed_row_finder();
  {
    const auto d = ds::dataset::open(root);
    const auto found = finder(d, expr::filter::compile("id IN (57, 2500)", d.schema()));
    REQUIRE(found);
    CHECK(*found == std::vector<std::uint64_t>{57, (std::uint64_t(1) << 32) | 500});
    CHECK(!finder(d, expr::filter::compile("k = 3", d.schema())));          // no index on k
    // Up to a quarter of the rows come from the indexes (no row is read), more are scanned.
    const auto red = finder(d, expr::filter::compile("c = 'red'", d.schema()));
    REQUIRE(red);
    CHECK(std::set<std::uint64_t>(red->begin(), red->end()) == scan_answer(root, "c = 'red'"));
    CHECK(!finder(d, expr::filter::compile("c IS NOT NULL", d.schema())));
    CHECK(!finder(d, expr::filter::compile("id < 3000", d.schema())));
  }
  ds::delete_options del;
  del.find_rows = finder;
  CHECK(ds::delete_where(root, "id IN (57, 2500, 5999) OR id = 3", del).deleted_rows == 4);
  CHECK(ds::delete_where(root, "id = 57", del).deleted_rows == 0);  // the index still holds it: deleted rows leave
  ds::update_options up;
  up.find_rows = finder;
  CHECK(ds::update(root, "id = 101 AND c IS NOT NULL", {{"k", "k + 1000"}}, up).rows_updated == 1);
  const auto d = ds::dataset::open(root);
  CHECK(d.count_rows() == 5996);
  const auto all = d.to_batch({.columns = {"id", "k"}});
  for (std::int64_t r = 0; r < all.num_rows(); ++r) {
    const auto id = all.columns[0]->value<std::int64_t>(r);
    CHECK((id != 57 && id != 2500 && id != 5999 && id != 3));
    if (id == 101) CHECK(all.columns[1]->value<std::int32_t>(r) == std::int32_t((101 * 37) % 13) - 6 + 1000);
  }
  // The selective predicates come from the index: without its pages they fail, with the
  // scan they do not.
  for (const auto& im : d.indices())
    if (im.name == "id_idx") std::filesystem::remove(index::index_directory(root, im.uuid) + "/page_data.lance");
  CHECK_THROWS(ds::delete_where(root, "id = 10", del));
  CHECK(ds::delete_where(root, "id = 10").deleted_rows == 1);
}
