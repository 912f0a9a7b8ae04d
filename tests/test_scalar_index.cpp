// BTREE scalar indexes (index/scalar/): pages written as Lance 12 writes them (rows
// sorted NULLs first, floats with NaN last, 4096-row pages, the lookup's first / last
// values and NULL counts), row ids as addresses or stable ids, the CreateIndex entry,
// errors for columns a BTREE cannot order, and compaction's remap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <set>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/expr/filter.hpp>
#include <lancet/index/scalar/scalar_index.hpp>
#include <lancet/query/table.hpp>

#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace ds = lancet::dataset;

namespace {

// id int64, f float64 (NULL every 5th, NaN every 7th, -0 / +0), s utf8 (NULL every
// 3rd), tags list<int32>.
record_batch btree_rows(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> id;
  std::vector<std::optional<double>> f;
  std::vector<std::optional<std::string>> s;
  std::vector<std::vector<std::optional<std::int32_t>>> tags;
  for (auto i = a; i < b; ++i) {
    id.push_back(i);
    f.push_back(i % 5 == 0   ? std::nullopt
                : i % 7 == 0 ? std::optional<double>(std::nan(""))
                : i % 11 == 0 ? std::optional<double>(i % 2 ? -0.0 : 0.0)
                             : std::optional<double>(double((i * 37) % 101) - 50.0));
    s.push_back(i % 3 == 0 ? std::nullopt : std::optional<std::string>("k" + std::to_string((i * 13) % 17)));
    tags.push_back({std::int32_t(i % 4)});
  }
  return make_batch({{"id", make_array<std::int64_t>(id)},
                     {"f", make_array<double>(f)},
                     {"s", string_array(s)},
                     {"tags", list_array<std::int32_t>(tags)}});
}

}  // namespace

TEST_CASE("btree: pages in Lance's order, the lookup, row addresses and the CreateIndex entry") {
  lancet::testing::scratch_dir tmp("btree");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 6000;
  ds::write(root, btree_rows(0, 10000), w);  // fragments 0 (6000 rows) and 1 (4000)
  ds::delete_where(root, "id % 9 = 4");
  index::scalar_index_options o;
  o.column = "f";
  const auto r = index::build_btree_index(root, o);
  const auto d = ds::dataset::open(root);
  CHECK(r.version == d.version());
  CHECK(r.name == "f_idx");
  CHECK(r.rows == d.count_rows());
  REQUIRE(d.indices().size() == 1);
  const auto& im = d.indices()[0];
  CHECK(im.name == "f_idx");
  REQUIRE(im.index_details.has_value());
  CHECK(im.index_details->type_url == "/lance.table.BTreeIndexDetails");
  CHECK(im.index_details->value.empty());
  CHECK(im.index_version == 0);
  CHECK(ds::index_fragment_bitmap(im).to_vector() == std::vector<std::uint32_t>{0, 1});
  REQUIRE(im.files.size() == 2);
  CHECK(im.files[0].path == "page_data.lance");
  CHECK(im.files[1].path == "page_lookup.lance");
  CHECK(index::list_indices(ds::load_latest(root).value()).at(0).index_type == "BTREE");

  const auto dir = index::index_directory(root, im.uuid);
  const auto lookup = index::read_btree_lookup(dir);
  CHECK(lookup.batch_size == 4096);
  CHECK(lookup.rows == r.rows);
  CHECK(lookup.pages() == (r.rows + 4095) / 4096);
  const auto all = index::read_btree_pages(lookup, 0, lookup.pages() - 1);
  REQUIRE(all.num_rows() == std::int64_t(r.rows));
  const auto& v = *all.columns[0];
  const auto* ids = all.columns[1]->values<std::uint64_t>();
  // Each row's value is the dataset's value at its address; NULLs, then ascending
  // with -0 before +0, NaN last.
  std::int64_t nulls = 0;
  while (nulls < v.length && v.is_null(nulls)) ++nulls;
  CHECK(nulls == v.count_nulls());
  for (std::int64_t i = nulls + 1; i < v.length; ++i) {
    const double a = v.value<double>(i - 1), b = v.value<double>(i);
    if (std::isnan(a)) CHECK(std::isnan(b));
    else if (!std::isnan(b)) CHECK((a < b || (a == b && !(!std::signbit(a) && std::signbit(b)))));
  }
  CHECK(std::isnan(v.value<double>(v.length - 1)));
  for (std::int64_t i = 0; i < v.length; i += 97) {
    const auto addr = ids[i];
    CHECK(ds::row_address(addr >> 32, addr & 0xFFFFFFFFull) == addr);
    const auto row = d.take_addresses(std::vector<std::uint64_t>{addr}, {"id", "f"});
    const auto id = row.columns[0]->value<std::int64_t>(0);
    CHECK(id % 9 != 4);
    if (v.is_null(i)) CHECK(row.columns[1]->is_null(0));
    else if (std::isnan(v.value<double>(i))) CHECK(std::isnan(row.columns[1]->value<double>(0)));
    else CHECK(row.columns[1]->value<double>(0) == v.value<double>(i));
  }
  // The lookup: each page's first and last value (NULL when it starts with NULLs) and
  // its leading NULLs.
  for (std::size_t p = 0; p < lookup.pages(); ++p) {
    const auto first = std::int64_t(p * 4096), last = std::min<std::int64_t>(v.length, first + 4096) - 1;
    CHECK(lookup.min->is_null(std::int64_t(p)) == v.is_null(first));
    CHECK(lookup.max->is_null(std::int64_t(p)) == v.is_null(last));
    std::uint32_t n = 0;
    for (auto i = first; i <= last && v.is_null(i); ++i) ++n;
    CHECK(lookup.null_count[p] == n);
  }
}

TEST_CASE("btree: stable row ids, strings, replacing, and columns it cannot order") {
  lancet::testing::scratch_dir tmp("btree-errors");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.enable_stable_row_ids = true;
  ds::write(root, btree_rows(0, 300), w);
  index::scalar_index_options o;
  o.column = "s";
  o.batch_size = 64;
  const auto first = index::build_btree_index(root, o);
  CHECK(first.pages == (first.rows + 63) / 64);
  const auto d = ds::dataset::open(root);
  const auto dir = index::index_directory(root, d.indices().at(0).uuid);
  const auto lookup = index::read_btree_lookup(dir);
  CHECK(lookup.batch_size == 64);
  const auto all = index::read_btree_pages(lookup, 0, lookup.pages() - 1);
  // Stable row ids here: the ids are the rows' positions (written once, nothing moved).
  const auto* ids = all.columns[1]->values<std::uint64_t>();
  for (std::int64_t i = 0; i < all.num_rows(); ++i) {
    const auto id = ids[i];
    CHECK(id < 300);
    if (id % 3 == 0) CHECK(all.columns[0]->is_null(i));
    else CHECK(all.columns[0]->string_value(i) == "k" + std::to_string((id * 13) % 17));
  }
  for (std::int64_t i = 1; i < all.num_rows(); ++i)
    if (all.columns[0]->is_valid(i - 1)) CHECK(all.columns[0]->string_value(i - 1) <= all.columns[0]->string_value(i));

  // Again: the index is replaced (one entry, a new uuid); without replace, refused.
  const auto second = index::build_btree_index(root, o);
  CHECK(second.uuid != first.uuid);
  CHECK(ds::dataset::open(root).indices().size() == 1);
  o.replace = false;
  CHECK_THROWS_AS(index::build_btree_index(root, o), invalid_input_error);
  o.replace = true;
  o.column = "tags";
  CHECK_THROWS_WITH_AS(index::build_btree_index(root, o),
                       doctest::Contains("cannot be built on column 'tags'"), unsupported_error);
  o.column = "nope";
  CHECK_THROWS_WITH_AS(index::build_btree_index(root, o), doctest::Contains("no column 'nope'"), invalid_input_error);
  CHECK(ds::dataset::open(root).version() == second.version);
}

TEST_CASE("btree: compaction remaps it into a new uuid, deleted rows dropped, the rest at their new addresses") {
  lancet::testing::scratch_dir tmp("btree-compact");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 700;
  ds::write(root, btree_rows(0, 2000), w);  // 3 fragments
  index::scalar_index_options o;
  o.column = "s";
  o.batch_size = 256;
  index::build_btree_index(root, o);
  ds::delete_where(root, "id % 4 = 1");
  const auto before = ds::dataset::open(root);
  const auto old_uuid = before.indices().at(0).uuid;
  ds::compaction_options co;
  co.remap_indexes = index::compaction_remapper();
  const auto r = ds::compact_files(root, co);
  CHECK(r.metrics.fragments_removed == 3);
  const auto d = ds::dataset::open(root);
  REQUIRE(d.indices().size() == 1);
  const auto& im = d.indices()[0];
  CHECK(im.uuid != old_uuid);
  CHECK(im.index_details->type_url == "/lance.table.BTreeIndexDetails");
  const auto& txn = std::get<pb::transaction::rewrite>(d.transaction()->operation);
  REQUIRE(txn.rewritten_indices.size() == 1);
  CHECK(txn.rewritten_indices[0].new_index_version == 0);
  const auto dir = index::index_directory(root, im.uuid);
  const auto lookup = index::read_btree_lookup(dir);
  CHECK(lookup.batch_size == 256);
  CHECK(lookup.rows == d.count_rows());
  const auto all = index::read_btree_pages(lookup, 0, lookup.pages() - 1);
  // Every live row once, beside its value, at its new address.
  std::set<std::uint64_t> seen;
  for (std::int64_t i = 0; i < all.num_rows(); ++i) {
    const auto addr = all.columns[1]->value<std::uint64_t>(i);
    CHECK(seen.insert(addr).second);
    const auto row = d.take_addresses(std::vector<std::uint64_t>{addr}, {"id", "s"});
    CHECK(row.columns[0]->value<std::int64_t>(0) % 4 != 1);
    if (all.columns[0]->is_null(i)) CHECK(row.columns[1]->is_null(0));
    else CHECK(row.columns[1]->string_value(0) == all.columns[0]->string_value(i));
  }
  CHECK(seen.size() == d.count_rows());
}

TEST_CASE("btree: filters over the indexed column answered from the pages the lookup picks, equal to a scan") {
  lancet::testing::scratch_dir tmp("btree-search");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 3000;
  ds::write(root, btree_rows(0, 9000), w);
  ds::delete_where(root, "id % 10 = 7");  // built after: the index holds the live rows
  const auto d0 = ds::dataset::open(root);
  for (const std::string column : {"f", "s"}) {
    CAPTURE(column);
    index::scalar_index_options o;
    o.column = column;
    o.batch_size = 128;
    index::build_btree_index(root, o);
    const auto d = ds::dataset::open(root);
    const pb::index_metadata* im = nullptr;
    for (const auto& x : d.indices())
      if (x.name == column + "_idx") im = &x;
    REQUIRE(im != nullptr);
    const auto dir = index::index_directory(root, im->uuid);
    const auto lookup = index::read_btree_lookup(dir);
    const std::vector<std::string> filters =
        column == "f" ? std::vector<std::string>{"f = 3", "f > 40", "f >= 40", "f < -45", "f <= -45", "f <> 3",
                                                 "f BETWEEN -2 AND 2", "f NOT BETWEEN -40 AND 40", "f IN (1, 7, -9)",
                                                 "f IS NULL", "f IS NOT NULL", "f = 0", "f > 1e9", "3 < f",
                                                 "f = 3 OR f IS NULL", "f > 10 AND f < 12", "NOT (f > 0)",
                                                 "f IN (NULL)", "f * 2 > 10"}
                    : std::vector<std::string>{"s = 'k3'", "s > 'k5'", "s < 'k12'", "s IN ('k1', 'k16')",
                                               "s IS NULL", "s IS NOT NULL", "s LIKE 'k1%'", "s <> 'k0'",
                                               "s BETWEEN 'k10' AND 'k13'"};
    const arrow::schema one{{arrow::field{column, column == "f" ? arrow::float64() : arrow::utf8(), true, {}}}};
    for (const auto& sql : filters) {
      CAPTURE(sql);
      const auto f = expr::filter::compile(sql, one);
      const auto got = index::btree_rows_where(lookup, f);
      // The scan's answer over every row the index holds (deleted ones too).
      ds::scan_options so;
      so.columns = {column};
      so.with_row_id = true;
      const auto b = d0.to_batch(so);
      const auto keep = f.evaluate(std::vector<arrow::array_ptr>{b.columns[0]});
      std::set<std::uint64_t> want;
      for (std::size_t r = 0; r < keep.size(); ++r)
        if (keep[r]) want.insert(b.columns[1]->value<std::uint64_t>(std::int64_t(r)));
      CHECK(std::set<std::uint64_t>(got.row_ids.begin(), got.row_ids.end()) == want);
      CHECK(got.row_ids.size() == want.size());
      if (sql == "f = 3" || sql == "s = 'k3'" || sql == "f IS NULL" || sql == "f > 1e9") CHECK(got.pages_read < lookup.pages() / 4);
    }
  }
}

TEST_CASE("btree: query::table answers filtered scans and prefilters from it, with deletes and unindexed rows") {
  lancet::testing::scratch_dir tmp("btree-query");
  const auto root = tmp.sub("ds");
  ds::write_options w;
  w.max_rows_per_file = 2000;
  ds::write(root, btree_rows(0, 6000), w);
  index::scalar_index_options o;
  o.column = "f";
  o.batch_size = 256;
  index::build_btree_index(root, o);
  o.column = "s";
  index::build_btree_index(root, o);
  o.column = "id";
  index::build_btree_index(root, o);
  ds::delete_where(root, "id % 10 = 3");  // after the index: it still holds these rows
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, btree_rows(6000, 7000), a);  // not indexed
  const auto d = ds::dataset::open(root);
  const auto t = query::table::open(root);
  const auto all = d.to_batch({.columns = {"id", "f", "s"}, .with_row_id = true});
  // Selective ones (a row in 1,024 or fewer) from the index, the others by the scan.
  for (const std::string sql : {"id = 57", "id IN (3, 4, 5, 6000, 6500)", "id BETWEEN 100 AND 102 AND s = 'k3'",
                                "id < 4 AND f IS NULL", "f = 3", "f > 40 AND s = 'k3'", "s IN ('k1', 'k2') OR f IS NULL",
                                "f BETWEEN -1 AND 1", "s < 'k11' AND id % 2 = 0", "f IS NULL AND s IS NULL"}) {
    CAPTURE(sql);
    // The answer a scan gives: every live row the filter keeps, in row order.
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
    q.offset = 3;
    q.limit = 5;
    const auto page = t.to_batch(q);
    CHECK(page.num_rows() == std::min<std::int64_t>(5, std::max<std::int64_t>(0, keep.num_rows() - 3)));
    if (page.num_rows() > 0) CHECK(page.columns[0]->value<std::int64_t>(0) == keep.columns[0]->value<std::int64_t>(3));
  }
  CHECK(t.explain(query::request{{}, "f = 3 AND s = 'k1'"}).find("BTREE 'f_idx' on 'f'") != std::string::npos);
  // The selective answers come from the index: without its pages the query fails.
  for (const auto& im : d.indices())
    if (im.name == "id_idx") std::filesystem::remove(index::index_directory(root, im.uuid) + "/page_data.lance");
  query::request q;
  q.filter = "id = 57";
  CHECK_THROWS(query::table::open(root).to_batch(q));
}

namespace {

// The order a comparator sort gives (NULLs first, stable), for btree_sort_order to match.
template <class T>
std::vector<std::int64_t> comparator_order(const std::vector<std::optional<T>>& v) {
  std::vector<std::int64_t> ref(v.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = std::int64_t(i);
  const auto nulls_end = std::stable_partition(ref.begin(), ref.end(), [&](std::int64_t i) { return !v[std::size_t(i)]; });
  std::stable_sort(nulls_end, ref.end(), [&](std::int64_t i, std::int64_t j) {
    if constexpr (std::is_floating_point_v<T>) return index::detail::float_less(*v[std::size_t(i)], *v[std::size_t(j)]);
    else return *v[std::size_t(i)] < *v[std::size_t(j)];
  });
  return ref;
}

}  // namespace

TEST_CASE("btree: the sort order (radix on keys, strings by prefix then whole) equals a comparator sort") {
  std::mt19937_64 r(3);
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e300, -1e-300};
  for (int round = 0; round < 40; ++round) {
    const std::size_t n = 1 + r() % 3000;
    std::vector<std::optional<double>> d;
    std::vector<std::optional<float>> f;
    std::vector<std::optional<std::int64_t>> i64;
    std::vector<std::optional<std::int8_t>> i8;
    std::vector<std::optional<std::uint64_t>> u64;
    std::vector<std::optional<std::string>> s;
    for (std::size_t k = 0; k < n; ++k) {
      const bool null = r() % 10 == 0;
      const double x = r() % 4 == 0 ? specials[r() % 8] : double(std::int64_t(r() % 2001) - 1000) / 7;
      d.push_back(null ? std::nullopt : std::optional<double>(x));
      f.push_back(null ? std::nullopt : std::optional<float>(float(x)));
      i64.push_back(null ? std::nullopt : std::optional<std::int64_t>(std::int64_t(r()) >> (r() % 64)));
      i8.push_back(null ? std::nullopt : std::optional<std::int8_t>(std::int8_t(r())));
      u64.push_back(null ? std::nullopt : std::optional<std::uint64_t>(r() >> (r() % 64)));
      std::string str;  // short strings over {NUL, a, b, c}: prefixes of 8 bytes tie often
      for (std::size_t c = r() % 12; c > 0; --c) str.push_back(r() % 4 == 0 ? '\0' : char('a' + r() % 3));
      s.push_back(null ? std::nullopt : std::optional<std::string>(str));
    }
    CAPTURE(round);
    CHECK(index::btree_sort_order(*make_array<double>(d)) == comparator_order(d));
    CHECK(index::btree_sort_order(*make_array<float>(f)) == comparator_order(f));
    CHECK(index::btree_sort_order(*make_array<std::int64_t>(i64)) == comparator_order(i64));
    CHECK(index::btree_sort_order(*make_array<std::int8_t>(i8)) == comparator_order(i8));
    CHECK(index::btree_sort_order(*make_array<std::uint64_t>(u64)) == comparator_order(u64));
    CHECK(index::btree_sort_order(*string_array(s)) == comparator_order(s));
  }
}
