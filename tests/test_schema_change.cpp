// Dropping, renaming and changing the nullability of columns (dataset/schema_change.hpp):
// the schema and rows read back, the data files and indexes a Project keeps, the
// errors (nothing committed), and concurrent commits resolved as Lance 12 resolves them.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/half.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/schema_change.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/expr/error.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/registry.hpp>

#include "support/dataset_writes.hpp"
#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::racing_factory;

// id int64 (no NULLs), name utf8 (NULL every 3rd row), s struct<a int32, b utf8>,
// vec fixed_size_list<float32, 4>; rows start..start+n.
record_batch schema_rows(std::int64_t start, std::int64_t n, bool null_names = true) {
  std::vector<std::int64_t> id;
  std::vector<std::optional<std::string>> name, b;
  std::vector<std::int32_t> a;
  std::vector<float> vec;
  for (std::int64_t i = start; i < start + n; ++i) {
    id.push_back(i);
    name.push_back(null_names && i % 3 == 0 ? std::nullopt : std::optional<std::string>("n" + std::to_string(i)));
    a.push_back(std::int32_t(i * 2));
    b.push_back("b" + std::to_string(i));
    for (int k = 0; k < 4; ++k) vec.push_back(float(i % 2 ? 10 : -10) + 0.01f * float((i * 7 + k) % 13));
  }
  return make_batch({{"id", make_array<std::int64_t>(id)},
                     {"name", string_array(name)},
                     {"s", struct_array({{"a", make_array<std::int32_t>(a)}, {"b", string_array(b)}})},
                     {"vec", make_fixed_size_list(make_array<float>(vec), 4)}});
}

std::string schema_dataset(const lancet::testing::scratch_dir& tmp, bool null_names = true) {
  const std::string root = tmp.sub("ds");
  ds::write_options o;
  o.max_rows_per_file = 40;
  ds::write(root, schema_rows(0, 100, null_names), o);
  return root;
}

std::vector<std::string> schema_column_names(const ds::dataset& d) {
  std::vector<std::string> out;
  for (const auto& f : d.schema().fields) out.push_back(f.name);
  return out;
}

index::build_options schema_flat_index() {
  index::build_options o;
  o.column = "vec";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  o.sample_rate = 4;
  o.max_iters = 5;
  return o;
}

}  // namespace

TEST_CASE("drop_columns: the schema loses the columns, rows read the rest, files stay until none of their columns is left") {
  lancet::testing::scratch_dir tmp("schema-drop");
  const auto root = schema_dataset(tmp);
  const auto before = ds::dataset::open(root);
  const auto r = ds::drop_columns(root, {"name", "s.a"});
  CHECK(r.version == before.version() + 1);
  const auto d = ds::dataset::open(root);
  CHECK(schema_column_names(d) == std::vector<std::string>{"id", "s", "vec"});
  REQUIRE(d.schema().fields[1].type->children.size() == 1);
  CHECK(d.schema().fields[1].type->children[0].name == "b");
  CHECK(std::get<pb::transaction::project>(d.transaction()->operation).preserves_nullability);
  // Metadata only: the fragments keep their data files (the dropped bytes with them).
  REQUIRE(d.manifest().fragments.size() == before.manifest().fragments.size());
  for (std::size_t i = 0; i < d.manifest().fragments.size(); ++i)
    CHECK(d.manifest().fragments[i].files == before.manifest().fragments[i].files);
  const auto b = d.to_batch();
  REQUIRE(b.num_rows() == 100);
  for (std::int64_t i = 0; i < 100; ++i) {
    CHECK(b.columns[0]->value<std::int64_t>(i) == i);
    CHECK(b.columns[1]->children[0]->string_value(i) == "b" + std::to_string(i));
  }
  // The last member of a struct takes the struct with it.
  ds::drop_columns(root, {"s.b"});
  CHECK(schema_column_names(ds::dataset::open(root)) == std::vector<std::string>{"id", "vec"});
  // The old version still reads every column.
  CHECK(schema_column_names(ds::dataset::open(root, before.version())) == std::vector<std::string>{"id", "name", "s", "vec"});
  // Appends take the new schema; LanceDB-style reads of both kinds of fragment agree.
  ds::write_options a;
  a.mode = ds::write_mode::append;
  const auto more = schema_rows(100, 10);
  ds::write(root, make_batch({{"id", more.columns[0]}, {"vec", more.columns[3]}}), a);
  CHECK(ds::dataset::open(root).count_rows() == 110);
}

TEST_CASE("drop_columns: an index on a dropped column goes, one on a kept column stays") {
  lancet::testing::scratch_dir tmp("schema-drop-index");
  const auto root = schema_dataset(tmp);
  index::build_ivf_index(root, schema_flat_index());
  CHECK(ds::dataset::open(root).indices().size() == 1);
  ds::drop_columns(root, {"name"});
  CHECK(ds::dataset::open(root).indices().size() == 1);
  ds::drop_columns(root, {"vec"});
  CHECK(ds::dataset::open(root).indices().empty());
}

TEST_CASE("alter_columns: rename keeps the field ids (and the index), nullability changes as Lance 12 allows") {
  lancet::testing::scratch_dir tmp("schema-alter");
  const auto root = schema_dataset(tmp);
  index::build_ivf_index(root, schema_flat_index());
  const auto before = ds::dataset::open(root);
  ds::alter_columns(root, {{"vec", "embedding", std::nullopt}, {"s.a", "aa", std::nullopt}});
  auto d = ds::dataset::open(root);
  CHECK(schema_column_names(d) == std::vector<std::string>{"id", "name", "s", "embedding"});
  CHECK(d.schema().fields[2].type->children[0].name == "aa");
  CHECK(d.lance_schema().fields[3].id == before.lance_schema().fields[3].id);
  REQUIRE(d.indices().size() == 1);
  CHECK(std::get<pb::transaction::project>(d.transaction()->operation).preserves_nullability);
  // Non-nullable where no row holds NULL: allowed, recorded as not preserving nullability.
  ds::alter_columns(root, {{"id", std::nullopt, false}});
  d = ds::dataset::open(root);
  CHECK_FALSE(d.schema().fields[0].nullable);
  CHECK_FALSE(std::get<pb::transaction::project>(d.transaction()->operation).preserves_nullability);
  ds::alter_columns(root, {{"id", std::nullopt, true}});
  CHECK(ds::dataset::open(root).schema().fields[0].nullable);
  const auto b = ds::dataset::open(root).to_batch();
  CHECK(b.num_rows() == 100);
  CHECK(b.columns[1]->string_value(1) == "n1");
}

TEST_CASE("alter_columns: a NULL in a deleted row does not count") {
  lancet::testing::scratch_dir tmp("schema-alter-deleted");
  const auto root = schema_dataset(tmp);
  ds::delete_where(root, "name IS NULL");
  ds::alter_columns(root, {{"name", std::nullopt, false}});
  CHECK_FALSE(ds::dataset::open(root).schema().fields[1].nullable);
}

TEST_CASE("add_columns: rows aligned with the live rows become a new data file per fragment; deleted rows skipped") {
  lancet::testing::scratch_dir tmp("schema-add");
  const auto root = schema_dataset(tmp);  // 100 rows in 3 fragments (40, 40, 20)
  ds::delete_where(root, "id % 9 = 4 OR id >= 95");
  const auto before = ds::dataset::open(root);
  const auto live = before.count_rows();
  // The new columns for the live rows in row order, in two batches.
  const auto ids = before.to_batch();
  std::vector<std::int64_t> twice;
  std::vector<std::optional<std::string>> tag;
  for (std::int64_t i = 0; i < ids.num_rows(); ++i) {
    const auto id = ids.columns[0]->value<std::int64_t>(i);
    twice.push_back(id * 2);
    tag.push_back(id % 5 ? std::optional<std::string>("t" + std::to_string(id)) : std::nullopt);
  }
  const auto all = make_batch({{"twice", make_array<std::int64_t>(twice)}, {"tag", string_array(tag)}});
  const std::int64_t half = all.num_rows() / 2;
  const std::vector<record_batch> parts{ds::detail::zero_copy_slice(all, 0, half),
                                        ds::detail::zero_copy_slice(all, half, all.num_rows() - half)};
  const auto r = ds::add_columns(root, parts);
  const auto d = ds::dataset::open(root);
  CHECK(r.version == before.version() + 1);
  CHECK(schema_column_names(d) == std::vector<std::string>{"id", "name", "s", "vec", "twice", "tag"});
  CHECK(std::holds_alternative<pb::transaction::merge>(d.transaction()->operation));
  // New ids after every id the dataset used; one new file per fragment, physical rows long.
  CHECK(d.lance_schema().fields[4].id == before.lance_schema().max_field_id() + 1);
  for (std::size_t i = 0; i < d.manifest().fragments.size(); ++i) {
    const auto& f = d.manifest().fragments[i];
    REQUIRE(f.files.size() == 2);
    CHECK(f.files[0] == before.manifest().fragments[i].files[0]);
    CHECK(f.deletion_file == before.manifest().fragments[i].deletion_file);
  }
  const auto b = d.to_batch();
  REQUIRE(std::uint64_t(b.num_rows()) == live);
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    const auto id = b.columns[0]->value<std::int64_t>(i);
    CHECK(b.columns[4]->value<std::int64_t>(i) == id * 2);
    CHECK(b.columns[5]->is_valid(i) == (id % 5 != 0));
    if (id % 5) CHECK(b.columns[5]->string_value(i) == "t" + std::to_string(id));
  }
  // All-NULL columns: no file written, every row NULL.
  ds::add_null_columns(root, {arrow::field{"note", arrow::utf8(), true, {}}});
  const auto d2 = ds::dataset::open(root);
  for (std::size_t i = 0; i < d2.manifest().fragments.size(); ++i)
    CHECK(d2.manifest().fragments[i].files == d.manifest().fragments[i].files);
  const auto b2 = d2.to_batch();
  CHECK(b2.columns[6]->null_count == b2.num_rows());
  // Dropping a column the dataset added frees no id still in a file: the next one is new.
  ds::drop_columns(root, {"tag"});
  ds::add_null_columns(root, {arrow::field{"again", arrow::int32(), true, {}}});
  CHECK(ds::dataset::open(root).lance_schema().fields.back().id == d.lance_schema().fields[5].id + 2);
}

TEST_CASE("add_columns: SQL expressions over the live rows, typed as Lance types them") {
  lancet::testing::scratch_dir tmp("schema-add-sql");
  const auto root = schema_dataset(tmp);
  ds::delete_where(root, "id % 4 = 1");
  ds::add_columns(root, std::vector<std::pair<std::string, std::string>>{
                            {"twice", "id * 2"}, {"half", "id / 2"}, {"big", "id > 50"}, {"label", "name"},
                            {"a3", "s.a + 3"}, {"k", "7"}});
  const auto d = ds::dataset::open(root);
  const auto& f = d.schema().fields;
  REQUIRE(f.size() == 10);
  CHECK(f[4].type->id == arrow::type_id::int64);
  CHECK(f[5].type->id == arrow::type_id::int64);
  // Nullable where an input is (name), not where none is (as DataFusion says).
  CHECK(f[7].nullable);
  CHECK(f[9].nullable == false);
  CHECK(f[6].type->id == arrow::type_id::boolean);
  CHECK(f[7].type->id == arrow::type_id::utf8);
  CHECK(f[8].type->id == arrow::type_id::int32);
  CHECK(f[9].type->id == arrow::type_id::int64);
  const auto b = d.to_batch();
  REQUIRE(b.num_rows() == 75);
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    const auto id = b.columns[0]->value<std::int64_t>(i);
    CHECK(id % 4 != 1);
    CHECK(b.columns[4]->value<std::int64_t>(i) == id * 2);
    CHECK(b.columns[5]->value<std::int64_t>(i) == id / 2);
    CHECK(b.columns[6]->bool_value(i) == (id > 50));
    CHECK(b.columns[7]->is_valid(i) == b.columns[1]->is_valid(i));
    if (b.columns[1]->is_valid(i)) CHECK(b.columns[7]->string_value(i) == b.columns[1]->string_value(i));
    CHECK(b.columns[8]->value<std::int32_t>(i) == std::int32_t(id * 2 + 3));
    CHECK(b.columns[9]->value<std::int64_t>(i) == 7);
  }
}

TEST_CASE("alter_columns: a cast gives the column a new id and a new file per fragment; other indexes stay") {
  lancet::testing::scratch_dir tmp("schema-cast");
  const auto root = schema_dataset(tmp);
  ds::delete_where(root, "id % 6 = 1");
  index::build_ivf_index(root, schema_flat_index());
  const auto before = ds::dataset::open(root);
  ds::column_alteration to64{"id", std::nullopt, std::nullopt, arrow::int64()};
  ds::column_alteration narrow{"s.a", std::nullopt, std::nullopt, arrow::int16()};
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {narrow}), doctest::Contains("only top-level columns"), invalid_input_error);
  // id is int64 already: a cast to its own type changes nothing; name to large_utf8 does.
  ds::column_alteration wide{"name", "label", std::nullopt, arrow::large_utf8()};
  ds::alter_columns(root, {to64, wide});
  auto d = ds::dataset::open(root);
  CHECK(std::holds_alternative<pb::transaction::merge>(d.transaction()->operation));
  CHECK(schema_column_names(d) == std::vector<std::string>{"id", "label", "s", "vec"});
  CHECK(d.schema().fields[1].type->id == arrow::type_id::large_utf8);
  CHECK(d.lance_schema().fields[1].id > before.lance_schema().max_field_id());
  CHECK(d.lance_schema().fields[0].id == before.lance_schema().fields[0].id);
  for (const auto& f : d.manifest().fragments) CHECK(f.files.size() == 2);
  CHECK(d.indices().size() == 1);  // on vec, not cast
  const auto b = d.to_batch();
  const auto old = before.to_batch();
  REQUIRE(b.num_rows() == old.num_rows());
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    CHECK(b.columns[1]->is_valid(i) == old.columns[1]->is_valid(i));
    if (old.columns[1]->is_valid(i)) CHECK(b.columns[1]->string_value(i) == old.columns[1]->string_value(i));
  }
}

TEST_CASE("alter_columns: lists cast by their items, as Lance 12 casts them") {
  lancet::testing::scratch_dir tmp("schema-cast-lists");
  const auto root = tmp.sub("ds");
  // id, vec fixed_size_list<float32, 2> (values float16 holds exactly), tags list<int64>
  // (NULL lists, NULL items, empty lists); 3 fragments, some rows deleted.
  std::vector<std::int64_t> ids;
  std::vector<float> vec;
  std::vector<std::vector<std::optional<std::int64_t>>> tags;
  std::vector<bool> tags_valid;
  for (std::int64_t i = 0; i < 30; ++i) {
    ids.push_back(i);
    vec.push_back(float(i) * 0.5f);
    vec.push_back(-float(i % 4) * 0.25f);
    std::vector<std::optional<std::int64_t>> l;
    for (std::int64_t k = 0; k < i % 3; ++k) l.push_back(k == 1 && i % 2 ? std::nullopt : std::optional<std::int64_t>(i * 10 + k));
    tags.push_back(l);
    tags_valid.push_back(i % 5 != 0);
  }
  ds::write(root,
            make_batch({{"id", make_array<std::int64_t>(ids)},
                        {"vec", make_fixed_size_list(make_array<float>(vec), 2)},
                        {"tags", list_array<std::int64_t>(tags, tags_valid)}}),
            lancet::testing::opts(ds::write_mode::create, 10));
  ds::delete_where(root, "id % 7 = 2");
  const auto before = ds::dataset::open(root).to_batch();
  const auto v0 = ds::dataset::open(root).version();
  // Items that do not fit, other kinds of items, other list kinds or sizes: errors.
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"tags", std::nullopt, std::nullopt, arrow::list(arrow::float64())}}),
                       doctest::Contains("cannot cast column 'tags'"), invalid_input_error);
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"tags", std::nullopt, std::nullopt, arrow::large_list(arrow::int32())}}),
                       doctest::Contains("cannot cast column 'tags'"), invalid_input_error);
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"vec", std::nullopt, std::nullopt, arrow::fixed_size_list(arrow::float16(), 3)}}),
                       doctest::Contains("cannot cast column 'vec'"), invalid_input_error);
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"tags", std::nullopt, std::nullopt, arrow::list(arrow::int8())}}),
                       doctest::Contains("cannot hold the value 130"), invalid_input_error);
  CHECK(ds::dataset::open(root).version() == v0);
  ds::alter_columns(root, {{"vec", std::nullopt, std::nullopt, arrow::fixed_size_list(arrow::float16(), 2)},
                           {"tags", std::nullopt, std::nullopt, arrow::list(arrow::int32())}});
  const auto d = ds::dataset::open(root);
  CHECK(d.schema().fields[1].type->children.at(0).type->id == arrow::type_id::float16);
  CHECK(d.schema().fields[2].type->children.at(0).type->id == arrow::type_id::int32);
  const auto b = d.to_batch();
  REQUIRE(b.num_rows() == before.num_rows());
  for (std::int64_t i = 0; i < b.num_rows(); ++i) {
    CAPTURE(i);
    const auto& nv = *b.columns[1]->children[0];
    const auto& ov = *before.columns[1]->children[0];
    for (std::int64_t k = 0; k < 2; ++k)
      CHECK(half_to_float(nv.value<std::uint16_t>((b.columns[1]->offset + i) * 2 + k)) ==
            ov.value<float>((before.columns[1]->offset + i) * 2 + k));
    const auto& nt = *b.columns[2];
    const auto& ot = *before.columns[2];
    REQUIRE(nt.is_valid(i) == ot.is_valid(i));
    if (!ot.is_valid(i)) continue;
    REQUIRE(nt.value_offset(i + 1) - nt.value_offset(i) == ot.value_offset(i + 1) - ot.value_offset(i));
    for (auto k = 0; k < ot.value_offset(i + 1) - ot.value_offset(i); ++k) {
      const auto& ni = *nt.children[0];
      const auto& oi = *ot.children[0];
      const auto at_n = nt.value_offset(i) + k, at_o = ot.value_offset(i) + k;
      REQUIRE(ni.is_valid(at_n) == oi.is_valid(at_o));
      if (oi.is_valid(at_o)) CHECK(std::int64_t(ni.value<std::int32_t>(at_n)) == oi.value<std::int64_t>(at_o));
    }
  }
}

TEST_CASE("alter_columns: casts Lance refuses, and values that do not fit, are errors") {
  lancet::testing::scratch_dir tmp("schema-cast-errors");
  const auto root = schema_dataset(tmp);
  ds::add_columns(root, std::vector<std::pair<std::string, std::string>>{{"big", "id * 100000000000"}});
  const auto v = ds::dataset::open(root).version();
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"big", std::nullopt, std::nullopt, arrow::int32()}}),
                       doctest::Contains("cannot hold the value 100000000000"), invalid_input_error);
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"id", std::nullopt, std::nullopt, arrow::float64()}}),
                       doctest::Contains("cannot cast column 'id'"), invalid_input_error);
  CHECK_THROWS_WITH_AS(ds::alter_columns(root, {{"name", std::nullopt, std::nullopt, arrow::int32()}}),
                       doctest::Contains("cannot cast column 'name'"), invalid_input_error);
  CHECK(ds::dataset::open(root).version() == v);
  // A cast that fits.
  ds::alter_columns(root, {{"big", std::nullopt, std::nullopt, arrow::uint64()}});
  const auto b = ds::dataset::open(root).to_batch();
  CHECK(b.columns[4]->value<std::uint64_t>(3) == 300000000000ull);
}

TEST_CASE("schema changes: bad input is a typed error naming the column, nothing committed") {
  lancet::testing::scratch_dir tmp("schema-errors");
  const auto root = schema_dataset(tmp);
  const auto v = ds::dataset::open(root).version();
  const auto fails = [&](auto&& f, const std::string& words) {
    try {
      f();
      FAIL("no error");
    } catch (const invalid_input_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
    CHECK(ds::dataset::open(root).version() == v);
  };
  fails([&] { ds::drop_columns(root, {"nope"}); }, "'nope' does not exist");
  fails([&] { ds::drop_columns(root, {"s.zz"}); }, "'s.zz' does not exist");
  fails([&] { ds::drop_columns(root, {"id.x"}); }, "'id.x' does not exist");
  fails([&] { ds::drop_columns(root, {"id", "name", "s", "vec"}); }, "cannot drop every column");
  fails([&] { ds::drop_columns(root, {}); }, "no column named");
  fails([&] { ds::alter_columns(root, {{"nope", "x", std::nullopt}}); }, "'nope' does not exist");
  fails([&] { ds::alter_columns(root, {{"name", "id", std::nullopt}}); }, "has a column of that name");
  fails([&] { ds::alter_columns(root, {{"s.a", "b", std::nullopt}}); }, "has a column of that name");
  fails([&] { ds::alter_columns(root, {{"name", "a.b", std::nullopt}}); }, "cannot contain '.'");
  fails([&] { ds::alter_columns(root, {{"name", std::nullopt, false}}); }, "'name' of dataset");
  fails([&] { ds::alter_columns(root, {{"name", std::nullopt, std::nullopt}}); }, "no change asked");
  fails([&] { ds::add_null_columns(root, {arrow::field{"id", arrow::int32(), true, {}}}); }, "'id' already exists");
  try {
    ds::add_columns(root, std::vector<std::pair<std::string, std::string>>{{"x", "nope + 1"}});
    FAIL("no error");
  } catch (const expr::invalid_filter& e) {
    CHECK(std::string(e.what()).find("nope") != std::string::npos);
  }
  CHECK(ds::dataset::open(root).version() == v);
  fails([&] { ds::add_null_columns(root, {arrow::field{"x", arrow::int32(), false, {}}}); }, "must be nullable");
  const auto short_batch = make_batch({{"x", make_array<std::int32_t>({1, 2, 3})}});
  fails([&] { ds::add_columns(root, std::vector<record_batch>{short_batch}); }, "the batches hold 3 rows");
  const auto other = make_batch({{"y", make_array<std::int32_t>({1})}});
  fails([&] { ds::add_columns(root, std::vector<record_batch>{short_batch, other}); }, "another schema");
  // Nothing of a failed add is left behind.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "data")) files += e.is_regular_file();
  CHECK(files == ds::dataset::open(root).manifest().fragments.size());
}

TEST_CASE("schema changes and concurrent commits: appends and indexes rebase; schema changes and non-null changes retry") {
  lancet::testing::scratch_dir tmp("schema-conflicts");
  SUBCASE("a drop rebased on an append keeps the appended rows") {
    const auto root = schema_dataset(tmp);
    racing_factory f{[&] {
      ds::write_options a;
      a.mode = ds::write_mode::append;
      ds::write(root, schema_rows(100, 20), a);
    }};
    const auto r = ds::drop_columns(root, {"name"}, {}, f);
    const auto d = ds::dataset::open(root);
    CHECK(r.version == d.version());
    CHECK(schema_column_names(d) == std::vector<std::string>{"id", "s", "vec"});
    CHECK(d.count_rows() == 120);
  }
  SUBCASE("a drop rebased on a new index on the dropped column drops it") {
    const auto root = schema_dataset(tmp);
    racing_factory f{[&] { index::build_ivf_index(root, schema_flat_index()); }};
    ds::drop_columns(root, {"vec"}, {}, f);
    CHECK(ds::dataset::open(root).indices().empty());
  }
  SUBCASE("a rename racing another schema change: retryable conflict, nothing committed") {
    const auto root = schema_dataset(tmp);
    racing_factory f{[&] { ds::drop_columns(root, {"s"}); }};
    const auto v = ds::dataset::open(root).version();
    try {
      ds::alter_columns(root, {{"name", "label", std::nullopt}}, {}, f);
      FAIL("no conflict");
    } catch (const ds::commit_conflict_error& e) {
      CHECK(e.retryable);
    }
    CHECK(ds::dataset::open(root).version() == v + 1);
    CHECK(schema_column_names(ds::dataset::open(root)) == std::vector<std::string>{"id", "name", "vec"});
  }
  SUBCASE("an added column racing an append: retryable, its data files removed") {
    const auto root = schema_dataset(tmp);
    racing_factory f{[&] {
      ds::write_options a;
      a.mode = ds::write_mode::append;
      ds::write(root, schema_rows(100, 20), a);
    }};
    std::vector<std::int32_t> x(100, 7);
    try {
      ds::add_columns(root, std::vector<record_batch>{make_batch({{"x", make_array<std::int32_t>(x)}})}, {}, f);
      FAIL("no conflict");
    } catch (const ds::commit_conflict_error& e) {
      CHECK(e.retryable);
    }
    const auto d = ds::dataset::open(root);
    CHECK(schema_column_names(d) == std::vector<std::string>{"id", "name", "s", "vec"});
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "data")) files += e.is_regular_file();
    CHECK(files == d.manifest().fragments.size());
  }
  SUBCASE("a non-null change racing an append: retryable (the appended rows may hold NULLs)") {
    const auto root = schema_dataset(tmp, false);
    racing_factory f{[&] {
      ds::write_options a;
      a.mode = ds::write_mode::append;
      ds::write(root, schema_rows(100, 20, true), a);
    }};
    try {
      ds::alter_columns(root, {{"name", std::nullopt, false}}, {}, f);
      FAIL("no conflict");
    } catch (const ds::commit_conflict_error& e) {
      CHECK(e.retryable);
    }
    CHECK(ds::dataset::open(root).schema().fields[1].nullable);
    // Run again on the new version, it sees the NULLs.
    CHECK_THROWS_AS(ds::alter_columns(root, {{"name", std::nullopt, false}}), invalid_input_error);
  }
}
