// Interop at the dataset level, LanceDB 0.39 (Lance 12.0.0) as the oracle, driven
// through the Node scripts in tests/interop/ (run `npm install` there first):
//  - LanceDB reads ours: a dataset of every type lancet writes, with nulls at every
//    level, several fragments and several pages per column: its schema, every value
//    (read_table.mjs), countRows, `where` filters, versions;
//  - LanceDB appends to and deletes from our dataset (Arrow and bitmap deletion
//    files), we read every row back, we append and delete again, LanceDB reads that;
//  - we read LanceDB's datasets of every storage version it writes, after an `add`
//    and a `delete`;
//  - randomised: 200 random schemas (depth <= 3) and rows each way.
// Values are compared by parsing LanceDB's canonical JSON (tests/interop/README.md)
// with lancet::json::read_rows against the dataset's schema, then comparing arrays exactly.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/schema_change.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/json/rows_writer.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/arrow/concat.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/json/rows_reader.hpp>

#include "support/batch_columns.hpp"
#include "support/interop.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

// ---- LanceDB's JSON ------------------------------------------------------------------

// Splits read_table.mjs / filter.mjs output into its rows and trailing countRows.
struct lancedb_rows {
  std::optional<njson> schema;
  std::string rows;  // JSON Lines
  std::int64_t count_rows = -1;
};

lancedb_rows split_output(const std::string& out) {
  lancedb_rows r;
  std::size_t at = 0;
  while (at < out.size()) {
    auto nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    const std::string_view line(out.data() + at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    if (line.starts_with("{\"schema\":")) {
      r.schema = njson::parse(line)["schema"];
    } else if (line.starts_with("{\"countRows\":")) {
      r.count_rows = njson::parse(line)["countRows"].get<std::int64_t>();
    } else {
      r.rows.append(line);
      r.rows.push_back('\n');
    }
  }
  return r;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Canonical JSON rows parsed against a schema.
record_batch parse_rows(const arrow::schema& s, const std::string& text) {
  auto sp = std::make_shared<const arrow::schema>(s);
  if (text.empty()) {
    record_batch b;
    b.schema = sp;
    for (const auto& f : s.fields) b.columns.push_back(ds::detail::null_array_of(f.type, 0));
    return b;
  }
  return lancet::json::read_rows(sp, text);
}

// lib.mjs schemaJson of an Arrow schema (field metadata left out).
njson type_json(const data_type& t);
njson field_json(const field& f) {
  njson j = type_json(*f.type);
  j["name"] = f.name;
  j["nullable"] = f.nullable;
  return j;
}
njson type_json(const data_type& t) {
  auto unit = [](time_unit u) { return std::string(unit_name(u)); };
  auto kids = [&] {
    njson a = njson::array();
    for (const auto& c : t.children) a.push_back(field_json(c));
    return a;
  };
  switch (t.id) {
    case type_id::time32: return {{"type", "time32"}, {"unit", unit(t.unit)}};
    case type_id::time64: return {{"type", "time64"}, {"unit", unit(t.unit)}};
    case type_id::timestamp:
      return {{"type", "timestamp"}, {"unit", unit(t.unit)}, {"timezone", t.timezone.empty() ? njson(nullptr) : njson(t.timezone)}};
    case type_id::duration: return {{"type", "duration"}, {"unit", unit(t.unit)}};
    case type_id::decimal128: return {{"type", "decimal128"}, {"precision", t.precision}, {"scale", t.scale}};
    case type_id::decimal256: return {{"type", "decimal256"}, {"precision", t.precision}, {"scale", t.scale}};
    case type_id::fixed_size_binary: return {{"type", "fixed_size_binary"}, {"byte_width", t.byte_width}};
    case type_id::fixed_size_list: return {{"type", "fixed_size_list"}, {"list_size", t.list_size}, {"children", kids()}};
    case type_id::list: return {{"type", "list"}, {"children", kids()}};
    case type_id::large_list: return {{"type", "large_list"}, {"children", kids()}};
    case type_id::struct_: return {{"type", "struct"}, {"children", kids()}};
    case type_id::utf8: return {{"type", "utf8"}};
    case type_id::boolean: return {{"type", "bool"}};
    default: return {{"type", to_string(t)}};
  }
}
njson strip_metadata(njson j) {
  if (j.is_object()) {
    j.erase("metadata");
    for (auto& [k, v] : j.items()) v = strip_metadata(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = strip_metadata(v);
  }
  return j;
}
njson fields_json(const arrow::schema& s) {
  njson a = njson::array();
  for (const auto& f : s.fields) a.push_back(field_json(f));
  return a;
}

void check_batches(const record_batch& expected, const record_batch& actual, const std::string& what) {
  REQUIRE(expected.columns.size() == actual.columns.size());
  CHECK(expected.num_rows() == actual.num_rows());
  for (std::size_t c = 0; c < expected.columns.size(); ++c) {
    compare_options o;
    o.check_nested_nullability = false;
    auto d = first_difference(expected.columns[c], actual.columns[c], o);
    INFO(what << ", column '" << expected.schema->fields[c].name << "': " << d.value_or(""));
    CHECK_FALSE(d.has_value());
  }
}

record_batch concat_all(const std::vector<record_batch>& bs) {
  record_batch out;
  out.schema = bs.at(0).schema;
  for (std::size_t c = 0; c < out.schema->fields.size(); ++c) {
    std::vector<array_ptr> parts;
    for (const auto& b : bs) parts.push_back(b.columns[c]);
    out.columns.push_back(arrow::concat(parts, out.schema->fields[c].type));
  }
  return out;
}

record_batch take_rows(const record_batch& b, const std::vector<std::int64_t>& rows) {
  record_batch out;
  out.schema = b.schema;
  for (std::size_t c = 0; c < b.columns.size(); ++c) {
    std::vector<array_ptr> parts;
    for (auto r : rows) parts.push_back(slice(b.columns[c], r, 1));
    out.columns.push_back(parts.empty() ? ds::detail::null_array_of(b.schema->fields[c].type, 0)
                                        : arrow::concat(parts, b.schema->fields[c].type));
  }
  return out;
}

// ---- random data that LanceDB's JS client round-trips ----------------------------------

class generator {
 public:
  explicit generator(std::uint64_t seed, bool struct_nulls = false) : rng_(seed), struct_nulls_(struct_nulls) {}

  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::int64_t between(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_); }

  static std::vector<type_ptr> leaves() {
    return {null_type(), boolean(), int8(), int16(), int32(), int64(), uint8(), uint16(), uint32(), uint64(),
            float16(), float32(), float64(), date32(), date64(), time32(time_unit::second), time32(time_unit::milli),
            time64(time_unit::micro), time64(time_unit::nano), timestamp(time_unit::second),
            timestamp(time_unit::milli, "UTC"), timestamp(time_unit::micro), timestamp(time_unit::nano, "Asia/Tokyo"),
            duration(time_unit::second), duration(time_unit::milli), duration(time_unit::nano), decimal128(20, 4),
            decimal256(50, 6), utf8(), large_utf8(), binary(), large_binary(), fixed_size_binary(5)};
  }

  // Depth <= max_depth; no large_list (LanceDB's JS client cannot read it).
  type_ptr random_type(int depth, int max_depth) {
    const auto ls = leaves();
    const auto kind = depth >= max_depth ? 0 : between(0, 9);
    switch (kind) {
      case 6:
      case 7: {
        auto item = random_type(depth + 1, max_depth);
        const bool nullable = item->id == type_id::null || coin(0.8);  // null items are always null
        return list(field{"item", item, nullable, {}});
      }
      case 8: {
        // lancet writes fixed-size lists of fixed-width items.
        type_ptr item;
        do item = ls[std::size_t(between(1, std::int64_t(ls.size()) - 1))];
        while (!is_fixed_width(*item));
        return fixed_size_list(item, std::int32_t(between(1, 4)), true);
      }
      case 9: {
        std::vector<field> members;
        const auto n = between(1, 3);
        for (std::int64_t i = 0; i < n; ++i) members.push_back(field{"f" + std::to_string(i), random_type(depth + 1, max_depth), true, {}});
        return struct_(std::move(members));
      }
      default: return ls[std::size_t(between(0, std::int64_t(ls.size()) - 1))];
    }
  }

  std::string text() {
    static const char* samples[] = {"", "a", "lance", "h\xC3\xA9llo", "\xE6\x97\xA5\xE6\x9C\xAC", "tab\tnew\nline",
                                    "\"quoted\"", "back\\slash", "emoji \xF0\x9F\xA6\x80"};
    if (coin(0.3)) return samples[between(0, 8)];
    std::string s(std::size_t(between(0, 20)), ' ');
    for (auto& c : s) c = char(between(0x20, 0x7e));
    return s;
  }
  std::string bytes(std::size_t n) {
    std::string s(n, ' ');
    for (auto& c : s) c = char(between(0, 255));
    return s;
  }

  array_ptr array(const type_ptr& type, std::int64_t n, bool nullable, double null_p = 0.15) {
    std::vector<bool> valid(static_cast<std::size_t>(n), true);
    const bool may = nullable && type->id != type_id::null && (type->id != type_id::struct_ || struct_nulls_);
    validity_list vl;
    if (may) {
      for (auto&& v : valid) v = !coin(null_p);
      for (bool v : valid) vl.push_back(v);
    }
    switch (type->id) {
      case type_id::null: return null_array(n);
      case type_id::boolean: {
        boolean_builder b;
        for (auto v : valid) v ? b.append(coin(0.5)) : b.append_null();
        return b.finish();
      }
      case type_id::int8: return ints<std::int8_t>(type, valid, -128, 127);
      case type_id::int16: return ints<std::int16_t>(type, valid, -32768, 32767);
      case type_id::int32: return ints<std::int32_t>(type, valid, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
      case type_id::uint8: return ints<std::uint8_t>(type, valid, 0, 255);
      case type_id::uint16: return ints<std::uint16_t>(type, valid, 0, 65535);
      case type_id::uint32: return ints<std::uint32_t>(type, valid, 0, 4294967295ll);
      case type_id::int64: case type_id::timestamp: case type_id::duration: {
        primitive_builder<std::int64_t> b(type);
        for (auto v : valid) v ? b.append(std::int64_t(rng_())) : b.append_null();
        return b.finish();
      }
      case type_id::uint64: {
        primitive_builder<std::uint64_t> b(type);
        for (auto v : valid) v ? b.append(std::uint64_t(rng_())) : b.append_null();
        return b.finish();
      }
      case type_id::date32: return ints<std::int32_t>(type, valid, -20000, 30000);
      case type_id::date64: {
        primitive_builder<std::int64_t> b(type);
        for (auto v : valid) v ? b.append(between(-20000, 30000) * 86400000) : b.append_null();
        return b.finish();
      }
      case type_id::time32:
        return ints<std::int32_t>(type, valid, 0, type->unit == time_unit::second ? 86399 : 86399999);
      case type_id::time64: {
        primitive_builder<std::int64_t> b(type);
        const std::int64_t day = type->unit == time_unit::micro ? 86400000000ll : 86400000000000ll;
        for (auto v : valid) v ? b.append(between(0, day - 1)) : b.append_null();
        return b.finish();
      }
      case type_id::float16: {
        float16_builder b;
        for (auto v : valid) v ? b.append(float(between(-4000, 4000)) / 8.0f) : b.append_null();
        return b.finish();
      }
      case type_id::float32: {
        primitive_builder<float> b(type);
        for (auto v : valid) v ? b.append(float(between(-1000000, 1000000)) / 7.0f) : b.append_null();
        return b.finish();
      }
      case type_id::float64: {
        primitive_builder<double> b(type);
        for (auto v : valid) v ? b.append(std::uniform_real_distribution<double>(-1e12, 1e12)(rng_)) : b.append_null();
        return b.finish();
      }
      case type_id::decimal128: case type_id::decimal256: {
        decimal_builder b(type);
        for (auto v : valid) {
          if (!v) { b.append_null(); continue; }
          int128_t x = int128_t(rng_() % 1000000000000000000ull) * 100 + int128_t(between(0, 99));
          b.append(coin(0.5) ? -x : x);
        }
        return b.finish();
      }
      case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary: {
        binary_builder b(type);
        const bool text_type = type->id == type_id::utf8 || type->id == type_id::large_utf8;
        for (auto v : valid) {
          if (!v) b.append_null();
          else b.append(text_type ? text() : bytes(std::size_t(between(0, 16))));
        }
        return b.finish();
      }
      case type_id::fixed_size_binary: {
        fixed_size_binary_builder b(type->byte_width);
        for (auto v : valid) v ? b.append(bytes(std::size_t(type->byte_width))) : b.append_null();
        return b.finish();
      }
      case type_id::fixed_size_list: {
        auto child = array(type->children[0].type, n * type->list_size, type->children[0].nullable);
        return make_fixed_size_list(type->children[0], child, type->list_size, vl);
      }
      case type_id::list: {
        std::vector<std::int32_t> offs{0};
        for (std::int64_t i = 0; i < n; ++i) offs.push_back(offs.back() + (valid[std::size_t(i)] ? std::int32_t(between(0, 4)) : 0));
        auto child = array(type->children[0].type, offs.back(), type->children[0].nullable);
        return make_list(type->children[0], child, offs, vl);
      }
      case type_id::struct_: {
        std::vector<array_ptr> kids;
        for (const auto& c : type->children) kids.push_back(array(c.type, n, c.nullable));
        return make_struct(type->children, kids, vl);
      }
      default: throw std::runtime_error("generator: unexpected type " + to_string(*type));
    }
  }

 private:
  template <class T>
  array_ptr ints(const type_ptr& type, const std::vector<bool>& valid, std::int64_t lo, std::int64_t hi) {
    primitive_builder<T> b(type);
    for (auto v : valid) v ? b.append(T(between(lo, hi))) : b.append_null();
    return b.finish();
  }

  std::mt19937_64 rng_;
  bool struct_nulls_;
};

// ---- the every-type table -------------------------------------------------------------

// id (int64, row number) first, then every type lancet writes, nulls at every level
// (null structs only from 2.1 on: Lance 2.0 cannot store them).
std::shared_ptr<const arrow::schema> every_type_schema() {
  auto s = std::make_shared<arrow::schema>();
  s->fields.push_back(field{"id", int64(), false, {}});
  int k = 0;
  for (const auto& t : generator::leaves()) {
    std::string tag = to_string(*t);
    for (auto& ch : tag)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    s->fields.push_back(field{"c" + std::to_string(k++) + "_" + tag, t, true, {}});
  }
  s->fields.push_back(field{"int32_nonnull", int32(), false, {}});
  s->fields.push_back(field{"vec", fixed_size_list(float32(), 8, true), true, {}});
  s->fields.push_back(field{"fsl_i16", fixed_size_list(int16(), 3, true), true, {}});
  s->fields.push_back(field{"list_i32", list(int32()), true, {}});
  s->fields.push_back(field{"list_utf8_nonnull_items", list(utf8(), false), true, {}});
  s->fields.push_back(field{"list_list", list(list(int32())), true, {}});
  s->fields.push_back(field{"list_struct", list(struct_({field{"x", int32(), true, {}}, field{"y", utf8(), true, {}}})), true, {}});
  s->fields.push_back(field{"st", struct_({field{"a", int32(), true, {}}, field{"b", utf8(), true, {}},
                                           field{"c", struct_({field{"d", float64(), true, {}}}), true, {}}}),
                            true, {}});
  return s;
}

// A column name quoted for LanceDB's SQL filters.
std::string sql_name(const std::string& n) { return "`" + n + "`"; }

std::vector<record_batch> every_type_batches(std::uint64_t seed, std::int64_t first_id, std::vector<std::int64_t> sizes,
                                            bool struct_nulls = false) {
  generator g(seed, struct_nulls);
  auto s = every_type_schema();
  std::vector<record_batch> out;
  for (auto n : sizes) {
    std::vector<array_ptr> cols;
    std::vector<std::int64_t> ids;
    for (std::int64_t i = 0; i < n; ++i) ids.push_back(first_id++);
    cols.push_back(make_array<std::int64_t>(ids));
    for (std::size_t f = 1; f < s->fields.size(); ++f) cols.push_back(g.array(s->fields[f].type, n, s->fields[f].nullable));
    out.push_back(make_batch(s, cols));
  }
  return out;
}

// Runs a test case once per storage version lancet writes.
#define GENERATE_VERSION()                                                              \
  [] {                                                                                  \
    std::string picked;                                                                 \
    for (const char* v : {"2.0", "2.1", "2.2"})                                         \
      SUBCASE((std::string("storage ") + v).c_str()) picked = v;                         \
    return picked;                                                                      \
  }()

std::string dataset_dir(const t::temp_dir& d, const std::string& name) { return (d.path() / name).string(); }

// Takes by row address of random rows, every 997th row and the first and last live row
// of each fragment (unsorted, one repeated) equal the same rows of a scan.
void check_takes_against_scan(const ds::dataset& d, std::uint64_t seed, const std::string& what) {
  ds::scan_options so;
  so.with_row_address = true;
  const auto full = d.to_batch(so);
  const auto n = full.num_rows();
  REQUIRE(n > 0);
  const auto& addr = *full.columns.back();
  std::vector<std::int64_t> pick;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100; ++i) pick.push_back(std::int64_t(rng() % std::uint64_t(n)));
  for (std::int64_t i = 0; i < n; i += 997) pick.push_back(i);
  pick.push_back(0);
  pick.push_back(n - 1);
  for (std::int64_t i = 1; i < n; ++i)
    if (addr.value<std::uint64_t>(i) >> 32 != addr.value<std::uint64_t>(i - 1) >> 32) {
      pick.push_back(i - 1);
      pick.push_back(i);
    }
  pick.push_back(pick.front());
  std::vector<std::uint64_t> ids;
  for (auto p : pick) ids.push_back(addr.value<std::uint64_t>(p));
  const auto got = d.take_addresses(ids);
  REQUIRE(got.columns.size() + 1 == full.columns.size());
  for (std::size_t c = 0; c + 1 < full.columns.size(); ++c) {
    std::vector<array_ptr> parts;
    for (auto p : pick) parts.push_back(slice(full.columns[c], p, 1));
    const auto want = arrow::concat(parts, full.columns[c]->type);
    const auto diff = first_difference(*want, *got.columns[c]);
    CHECK_MESSAGE(!diff, what << ", take of column '" << full.schema->fields[c].name << "': " << diff.value_or(""));
  }
}

// Our view of a dataset, every row as one batch.
record_batch ours(const std::string& root) { return ds::dataset::open(root).to_batch(); }

// LanceDB's view, parsed against our schema of the dataset.
record_batch theirs(const std::string& root, std::int64_t* count = nullptr, std::optional<njson>* schema = nullptr) {
  auto out = split_output(t::node("read_table.mjs", {root, "--schema"}));
  if (count) *count = out.count_rows;
  if (schema) *schema = out.schema;
  return parse_rows(ds::dataset::open(root).schema(), out.rows);
}

}  // namespace

TEST_CASE("interop: LanceDB reads our dataset of every type (several fragments and pages); filters and counts") {
  const auto version = GENERATE_VERSION();
  CAPTURE(version);
  const auto v = file::parse_format_version(version);
  t::temp_dir dir("ds-every-type");
  const auto root = dataset_dir(dir, "ours");
  const auto batches = every_type_batches(11, 0, {700, 900, 10, 890}, v != file::format_version::v2_0);
  const auto all = concat_all(batches);
  ds::write_options o;
  o.max_rows_per_file = 1000;
  o.storage_version = v;
  o.file_options.max_page_bytes = 1024;  // several pages per column (2.0 splits pages by size)
  o.file_options.data_cache_bytes = 64 * 1024;
  auto r = ds::write(root, batches, o);
  REQUIRE(r.fragments.size() == 3);
  CHECK(r.storage_version == v);
  if (v == file::format_version::v2_0) {
    auto d = ds::dataset::open(root);
    file::file_reader<io::file_source> fr{io::file_source(d.fragments().at(0).data_files.at(0))};
    CHECK(fr.column(0).metadata.pages.size() > 3);
    CHECK(fr.column(fr.field_column(5)).metadata.pages.size() > 3);   // int32
    CHECK(fr.column(fr.field_column(29)).metadata.pages.size() > 3);  // utf8
  }

  std::int64_t count = -1;
  std::optional<njson> schema;
  auto back = theirs(root, &count, &schema);
  CHECK(count == 2500);
  REQUIRE(schema.has_value());
  CHECK(strip_metadata((*schema)["fields"]) == fields_json(*every_type_schema()));
  check_batches(all, back, "LanceDB's read of our every-type dataset");

  auto info = njson::parse(t::node("dataset_info.mjs", {root}));
  CHECK(info["version"] == 1);
  CHECK(info["countRows"] == 2500);
  CHECK(info["versions"] == njson::array({1}));

  // Filters: LanceDB's rows are the ones we expect, with the right values.
  const auto& s = *all.schema;
  auto col = [&](const std::string& n) {
    std::size_t c = 0;
    while (s.fields[c].name != n) ++c;
    return all.columns[c];
  };
  const std::string i32 = "c4_int32", f64 = "c12_float64", txt = "c28_utf8", flag = "c1_bool";
  struct filter_case {
    std::string where;
    std::function<bool(std::int64_t)> keep;
  };
  std::vector<filter_case> filters{
      {"id >= 100 AND id < 250", [](std::int64_t i) { return i >= 100 && i < 250; }},
      {sql_name(i32) + " > 0", [&](std::int64_t i) { return col(i32)->is_valid(i) && col(i32)->value<std::int32_t>(i) > 0; }},
      {sql_name(txt) + " IS NULL", [&](std::int64_t i) { return col(txt)->is_null(i); }},
      {sql_name(f64) + " < 0", [&](std::int64_t i) { return col(f64)->is_valid(i) && col(f64)->value<double>(i) < 0; }},
      {sql_name(flag) + " = true AND id % 2 = 0",
       [&](std::int64_t i) { return i % 2 == 0 && col(flag)->is_valid(i) && col(flag)->bool_value(i); }},
      {"st.a > 0",
       [&](std::int64_t i) {
         // A null struct's members are null in SQL, whatever lies under them.
         const auto& st = *col("st");
         const auto& a = *st.children[0];
         return st.is_valid(i) && a.is_valid(st.offset + i) && a.value<std::int32_t>(st.offset + i) > 0;
       }},
  };
  for (const auto& f : filters) {
    INFO("where " << f.where);
    auto out = split_output(t::node("filter.mjs", {root, "--where", f.where}));
    std::vector<std::int64_t> want;
    for (std::int64_t i = 0; i < all.num_rows(); ++i)
      if (f.keep(i)) want.push_back(i);
    CHECK(out.count_rows == std::int64_t(want.size()));
    auto got = parse_rows(s, out.rows);
    CHECK(lancet::testing::int64_values(got) == want);
    check_batches(take_rows(all, want), got, "filter " + f.where);
  }
}

TEST_CASE("interop: LanceDB appends to and deletes from our dataset; we read it all back, and the other way round") {
  const auto version = GENERATE_VERSION();
  CAPTURE(version);
  const auto v = file::parse_format_version(version);
  const bool struct_nulls = v != file::format_version::v2_0;
  t::temp_dir dir("ds-append");
  const auto root = dataset_dir(dir, "ours");
  const auto batches = every_type_batches(12, 0, {400, 400}, struct_nulls);
  ds::write_options o;
  o.max_rows_per_file = 300;
  o.storage_version = v;
  ds::write(root, batches, o);
  const auto mine = concat_all(batches);

  // LanceDB appends 250 rows (ids 800..1049) that it generates for our schema.
  const auto appended_file = (dir.path() / "appended.jsonl").string();
  std::vector<std::string> add{root, "--rows", "250", "--seed", "5", "--first-id", "800", "--rows-out", appended_file};
  if (!struct_nulls) add.push_back("--no-struct-nulls");
  auto res = njson::parse(t::node("append_rows.mjs", add));
  CHECK(res["version"] == 2);
  CHECK(res["countRows"] == 1050);
  auto d = ds::dataset::open(root);
  CHECK(d.version() == 2);
  CHECK(d.count_rows() == 1050);
  CHECK(d.versions().back().writer == "lance 12.0.0");
  const auto theirs_rows = parse_rows(d.schema(), read_text(appended_file));
  auto expected = concat_all({mine, theirs_rows});
  check_batches(expected, ours(root), "our read after LanceDB's append");

  // LanceDB deletes a third of the rows (Arrow deletion files, < 5,000 per fragment).
  res = njson::parse(t::node("delete_rows.mjs", {root, "--where", "id % 3 = 0"}));
  CHECK(res["version"] == 3);
  std::vector<std::int64_t> keep;
  for (std::int64_t i = 0; i < expected.num_rows(); ++i)
    if (lancet::testing::int64_values(expected)[std::size_t(i)] % 3 != 0) keep.push_back(i);
  CHECK(res["countRows"] == keep.size());
  d = ds::dataset::open(root);
  CHECK(d.count_rows() == keep.size());
  for (const auto& f : d.fragments()) {
    REQUIRE(f.deletion_file.has_value());
    CHECK(f.deletion_file->ends_with(".arrow"));
  }
  auto after_delete = take_rows(expected, keep);
  check_batches(after_delete, ours(root), "our read after LanceDB's delete");

  // We append on top of LanceDB's versions; LanceDB reads everything.
  const auto more = every_type_batches(13, 5000, {120}, struct_nulls);
  auto r = ds::write(root, more, [] {
    ds::write_options a;
    a.mode = ds::write_mode::append;
    return a;
  }());
  CHECK(r.version == 4);
  auto expected4 = concat_all({after_delete, more[0]});
  std::int64_t count = -1;
  check_batches(expected4, theirs(root, &count), "LanceDB's read after our append");
  CHECK(count == expected4.num_rows());

  // We delete (bitmap deletion files merged with LanceDB's Arrow ones); LanceDB agrees.
  auto dd = ds::dataset::open(root);
  std::vector<std::uint64_t> gone;
  std::vector<std::int64_t> keep4;
  {
    ds::scan_options so;
    so.columns = {"id"};
    so.with_row_id = true;
    auto b = dd.to_batch(so);
    for (std::int64_t i = 0; i < b.num_rows(); ++i) {
      if (b.columns[0]->value<std::int64_t>(i) % 5 == 1) gone.push_back(b.columns[1]->value<std::uint64_t>(i));
      else keep4.push_back(i);
    }
  }
  auto del = ds::delete_rows(root, gone);
  CHECK(del.version == 5);
  CHECK(del.deleted_rows == gone.size());
  auto expected5 = take_rows(expected4, keep4);
  check_batches(expected5, theirs(root, &count), "LanceDB's read after our delete");
  CHECK(count == expected5.num_rows());
  auto info = njson::parse(t::node("dataset_info.mjs", {root}));
  CHECK(info["versions"] == njson::array({1, 2, 3, 4, 5}));
  // And LanceDB can keep writing: another append commits version 6.
  add = {root, "--rows", "3", "--first-id", "9000"};
  if (!struct_nulls) add.push_back("--no-struct-nulls");
  res = njson::parse(t::node("append_rows.mjs", add));
  CHECK(res["version"] == 6);
  CHECK(ds::dataset::open(root).count_rows() == std::uint64_t(expected5.num_rows()) + 3);
}

TEST_CASE("interop: bitmap deletions LanceDB writes into our dataset") {
  t::temp_dir dir("ds-bitmap");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::int64_t> ids(12000);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i);
  ds::write_options o;
  o.max_rows_per_file = 6000;
  ds::write(root, make_batch({{"id", make_array<std::int64_t>(ids)}}), o);
  auto res = njson::parse(t::node("delete_rows.mjs", {root, "--where", "id < 5500 OR id = 11999"}));
  CHECK(res["countRows"] == 12000 - 5501);
  auto d = ds::dataset::open(root);
  auto frags = d.fragments();
  REQUIRE(frags.size() == 2);
  CHECK(frags[0].deletion_file->ends_with(".bin"));
  CHECK(frags[1].deletion_file->ends_with(".arrow"));
  std::vector<std::int64_t> want;
  for (std::int64_t i = 5500; i < 11999; ++i) want.push_back(i);
  CHECK(lancet::testing::int64_values(d.to_batch()) == want);
  CHECK(d.count_rows() == want.size());
}

TEST_CASE("interop: we read LanceDB's datasets of every storage version, after add and delete") {
  for (const std::string version : {"2.0", "2.1", "2.2"}) {
    std::string label = "storage ";
    label += version;
    SUBCASE(label.c_str()) {
      t::temp_dir dir("ds-theirs");
      const auto root = dataset_dir(dir, "theirs");
      t::node("write_types.mjs", {root, "--version", version, "--rows", "600", "--seed", "3"});
      std::vector<std::string> add_args{root, "--rows", "150", "--seed", "9"};
      if (version == "2.0") add_args.push_back("--no-struct-nulls");
      t::node("append_rows.mjs", add_args);
      t::node("delete_rows.mjs", {root, "--where", "int32_nonnull % 4 = 1"});
      std::int64_t count = -1;
      ds::dataset d = ds::dataset::open(root);
      CHECK(d.version() == 3);
      CHECK(d.storage_version() == file::parse_format_version(version));
      record_batch mine;
      try {
        mine = d.to_batch();
      } catch (const error& e) {
        FAIL_CHECK("lancet cannot read LanceDB's " << version << " dataset: " << e.what());
        continue;
      }
      auto lance = theirs(root, &count);
      CHECK(count == std::int64_t(d.count_rows()));
      CHECK(mine.num_rows() == count);
      check_batches(lance, mine, label);
      check_takes_against_scan(d, 5, label);

      // Written again by us with the same schema and storage version, the data file
      // records the same field ids, column indices and file version as LanceDB's.
      const auto again = dataset_dir(dir, "again");
      ds::write_options o;
      o.storage_version = d.storage_version();
      ds::write(again, mine, o);
      auto a = ds::dataset::open(again);
      CHECK(a.lance_schema() == d.lance_schema());
      const auto& theirs_file = d.manifest().fragments.at(0).files.at(0);
      const auto& ours_file = a.manifest().fragments.at(0).files.at(0);
      CHECK(ours_file.fields == theirs_file.fields);
      CHECK(ours_file.column_indices == theirs_file.column_indices);
      CHECK(ours_file.file_major_version == theirs_file.file_major_version);
      CHECK(ours_file.file_minor_version == theirs_file.file_minor_version);
      CHECK(a.manifest().data_format == d.manifest().data_format);
    }
  }
}

TEST_CASE("interop: stable row ids in our dataset agree with LanceDB's, across appends and deletes by both") {
  t::temp_dir dir("ds-stable");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < 40; ++i) ids.push_back(i);
  ds::write_options o;
  o.max_rows_per_file = 15;
  o.enable_stable_row_ids = true;
  ds::write(root, make_batch({{"id", make_array<std::int64_t>(ids)}, {"v", make_array<std::int32_t>(std::vector<std::int32_t>(40, 7))}}), o);
  CHECK(ds::dataset::open(root).stable_row_ids());
  t::node("append_rows.mjs", {root, "--rows", "10", "--first-id", "100"});
  t::node("delete_rows.mjs", {root, "--where", "id % 4 = 1"});
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, make_batch({{"id", make_array<std::int64_t>({200, 201})}, {"v", make_array<std::int32_t>({1, 2})}}), a);
  std::vector<std::uint64_t> gone;
  auto d = ds::dataset::open(root);
  CHECK(d.manifest().next_row_id == 52);
  {
    ds::scan_options so;
    so.with_row_id = true;
    auto b = d.to_batch(so);
    for (std::int64_t i = 0; i < b.num_rows(); ++i)
      if (b.columns[0]->value<std::int64_t>(i) % 4 == 2) gone.push_back(b.columns[2]->value<std::uint64_t>(i));
  }
  ds::delete_rows(root, gone);
  d = ds::dataset::open(root);

  // LanceDB's _rowid column equals ours, row for row.
  auto out = split_output(t::node("filter.mjs", {root, "--where", "true", "--with-row-id"}));
  auto s = std::make_shared<arrow::schema>(d.schema());
  s->fields.push_back(field{"_rowid", uint64(), true, {}});
  auto lance = parse_rows(*s, out.rows);
  ds::scan_options so;
  so.with_row_id = true;
  auto mine = d.to_batch(so);
  CHECK(out.count_rows == std::int64_t(d.count_rows()));
  REQUIRE(lance.num_rows() == mine.num_rows());
  CHECK(lancet::testing::int64_values(lance) == lancet::testing::int64_values(mine));
  for (std::int64_t i = 0; i < mine.num_rows(); ++i)
    CHECK(lance.columns[2]->value<std::uint64_t>(i) == mine.columns[2]->value<std::uint64_t>(i));
  // Row ids of rows we wrote first are their positions; LanceDB's appended ones follow.
  CHECK(mine.columns[2]->value<std::uint64_t>(0) == 0);
  auto take = d.take({43, 0, 51});
  CHECK(lancet::testing::int64_values(take) == std::vector<std::int64_t>{103, 0, 201});
  CHECK_THROWS_AS(d.take({41}), invalid_input_error);  // id 101, deleted by LanceDB
}

TEST_CASE("interop: our overwrite of a dataset LanceDB changed; old versions stay readable by LanceDB") {
  t::temp_dir dir("ds-overwrite");
  const auto root = dataset_dir(dir, "theirs");
  t::node("write_types.mjs", {root, "--version", "2.2", "--rows", "50", "--seed", "4"});
  t::node("delete_rows.mjs", {root, "--where", "int32_nonnull > 0"});
  ds::write_options o;
  o.mode = ds::write_mode::overwrite;
  auto b = make_batch({{"k", string_array({"a", std::nullopt, "c"})}});
  auto r = ds::write(root, b, o);
  CHECK(r.version == 3);
  CHECK(r.storage_version == file::format_version::v2_2);  // kept from the dataset
  std::int64_t count = -1;
  std::optional<njson> schema;
  check_batches(b, theirs(root, &count, &schema), "LanceDB's read after our overwrite");
  CHECK(count == 3);
  CHECK((*schema)["fields"].size() == 1);
  auto v1 = split_output(t::node("read_table.mjs", {root, "--version", "1", "--columns", "int32_nonnull"}));
  CHECK(v1.count_rows == 50);
  auto info = njson::parse(t::node("dataset_info.mjs", {root}));
  CHECK(info["versions"] == njson::array({1, 2, 3}));
  // LanceDB appends to the overwritten dataset.
  auto res = njson::parse(t::node("append_rows.mjs", {root, "--rows", "4"}));
  CHECK(res["version"] == 4);
  CHECK(ds::dataset::open(root).count_rows() == 7);
}

TEST_CASE("interop: columns LanceDB adds, renames, casts and drops in our dataset (several data files per fragment)") {
  const auto version = GENERATE_VERSION();
  CAPTURE(version);
  t::temp_dir dir("ds-alter");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  for (std::int64_t i = 0; i < 30; ++i) {
    ids.push_back(i);
    names.push_back(i % 4 ? std::optional<std::string>("n" + std::to_string(i)) : std::nullopt);
  }
  ds::write_options o;
  o.max_rows_per_file = 12;
  o.storage_version = file::parse_format_version(version);
  ds::write(root, make_batch({{"id", make_array<std::int64_t>(ids)}, {"name", string_array(names)},
                              {"x", make_array<std::int32_t>(std::vector<std::int32_t>(30, 5))}}),
            o);
  auto res = njson::parse(t::node("alter_table.mjs", {root, "--add", "twice=id * 2", "--rename", "name=label",
                                                       "--cast", "x=int64", "--drop", "label"}));
  CHECK(res["countRows"] == 30);
  auto d = ds::dataset::open(root);
  REQUIRE(d.schema().fields.size() == 3);
  CHECK(d.schema().fields[0].name == "id");
  CHECK(d.schema().fields[1].name == "x");
  CHECK(d.schema().fields[1].type->id == type_id::int64);
  CHECK(d.schema().fields[2].name == "twice");
  CHECK(d.manifest().fragments.at(0).files.size() >= 2);
  auto b = d.to_batch();
  for (std::int64_t i = 0; i < 30; ++i) {
    CHECK(b.columns[0]->value<std::int64_t>(i) == i);
    CHECK(b.columns[1]->value<std::int64_t>(i) == 5);
    CHECK(b.columns[2]->value<std::int64_t>(i) == 2 * i);
  }
  std::int64_t count = -1;
  check_batches(b, theirs(root, &count), "LanceDB's read of the altered dataset");
  // The renamed column reads under its new name in an older version.
  auto v3 = ds::dataset::open(root, 3);
  CHECK(v3.schema().fields.at(1).name == "label");
  ds::scan_options one;
  one.columns = {"label"};
  one.offset = 1;
  one.limit = 1;
  CHECK(v3.to_batch(one).columns[0]->string_value(0) == "n1");

  // We append with the altered schema (its field ids); LanceDB reads every row.
  auto more = make_batch({{"id", make_array<std::int64_t>({100, 101})}, {"x", make_array<std::int64_t>({-1, -2})},
                          {"twice", make_array<std::int64_t>({200, 202})}});
  ds::write_options a;
  a.mode = ds::write_mode::append;
  ds::write(root, more, a);
  auto d2 = ds::dataset::open(root);
  auto new_file = d2.manifest().fragments.back().files.at(0);
  std::vector<std::int32_t> want_fields;
  for (const auto& f : d2.lance_schema().fields) want_fields.push_back(f.id);
  CHECK(new_file.fields == want_fields);
  auto all = d2.to_batch();
  CHECK(all.num_rows() == 32);
  check_batches(all, theirs(root, &count), "LanceDB's read after our append to the altered dataset");
  CHECK(count == 32);
}

TEST_CASE("interop: columns we drop, rename and make non-nullable, read by LanceDB, which changes them further") {
  const auto version = GENERATE_VERSION();
  CAPTURE(version);
  t::temp_dir dir("ds-schema-change");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  std::vector<std::int32_t> a;
  std::vector<std::optional<std::string>> b;
  for (std::int64_t i = 0; i < 40; ++i) {
    ids.push_back(i);
    names.push_back(i % 4 ? std::optional<std::string>("n" + std::to_string(i)) : std::nullopt);
    a.push_back(std::int32_t(i * 3));
    b.push_back("b" + std::to_string(i));
  }
  ds::write_options o;
  o.max_rows_per_file = 15;
  o.storage_version = file::parse_format_version(version);
  ds::write(root, make_batch({{"id", make_array<std::int64_t>(ids)}, {"name", string_array(names)},
                              {"s", struct_array({{"a", make_array<std::int32_t>(a)}, {"b", string_array(b)}})}}),
            o);
  ds::delete_where(root, "id % 7 = 2");
  // LanceDB adds a column: a second data file in every fragment, holding only it.
  (void)t::node("alter_table.mjs", {root, "--add", "twice=id * 2"});
  const auto with_twice = ds::dataset::open(root);
  REQUIRE(with_twice.manifest().fragments.at(0).files.size() == 2);
  // We drop it again (its files leave the fragments), a struct member, and rename.
  ds::drop_columns(root, {"twice", "s.a"});
  const auto dropped = ds::dataset::open(root);
  for (const auto& f : dropped.manifest().fragments) CHECK(f.files.size() == 1);
  ds::alter_columns(root, {{"name", "label", std::nullopt}, {"s.b", "bb", std::nullopt}, {"id", std::nullopt, false}});
  auto d = ds::dataset::open(root);
  REQUIRE(d.schema().fields.size() == 3);
  CHECK(d.schema().fields[1].name == "label");
  CHECK_FALSE(d.schema().fields[0].nullable);
  std::int64_t count = -1;
  std::optional<njson> schema;
  const auto mine = d.to_batch();
  check_batches(mine, theirs(root, &count, &schema), "LanceDB's read after our schema changes");
  CHECK(count == mine.num_rows());
  REQUIRE(schema);
  CHECK(schema->dump().find("\"label\"") != std::string::npos);
  CHECK(schema->dump().find("\"bb\"") != std::string::npos);
  CHECK(schema->dump().find("twice") == std::string::npos);
  // We add columns: from rows aligned with the live rows (a new file per fragment,
  // deleted rows filled in) and all-NULL ones (no file).
  std::vector<double> half;
  for (std::int64_t i = 0; i < mine.num_rows(); ++i) half.push_back(double(mine.columns[0]->value<std::int64_t>(i)) / 2);
  ds::add_columns(root, std::vector<record_batch>{make_batch({{"half", make_array<double>(half)}})});
  ds::add_null_columns(root, {arrow::field{"note", arrow::utf8(), true, {}}});
  d = ds::dataset::open(root);
  for (const auto& f : d.manifest().fragments) CHECK(f.files.size() == 2);
  const auto added = d.to_batch();
  REQUIRE(added.columns.size() == 5);
  check_batches(added, theirs(root, &count), "LanceDB's read after our added columns");
  CHECK(count == mine.num_rows());
  // A column from a SQL expression: ours equals LanceDB's addColumns on a copy.
  const auto copy = dataset_dir(dir, "copy");
  std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
  (void)t::node("alter_table.mjs", {copy, "--add", "four=id * 4"});
  ds::add_columns(root, std::vector<std::pair<std::string, std::string>>{{"four", "id * 4"}});
  std::optional<njson> their_schema;
  check_batches(ds::dataset::open(root).to_batch(), theirs(copy, &count, &their_schema),
                "our SQL column against LanceDB's on a copy");
  REQUIRE(their_schema);
  CHECK(their_schema->dump().find("\"four\"") != std::string::npos);
  // A cast: ours equals LanceDB's alterColumns on the copy (new field ids, new files).
  (void)t::node("alter_table.mjs", {copy, "--cast", "half=float"});
  ds::alter_columns(root, {{"half", std::nullopt, std::nullopt, arrow::float32()}});
  check_batches(ds::dataset::open(root).to_batch(), theirs(copy, &count), "our cast against LanceDB's on a copy");
  CHECK(ds::dataset::open(root).schema().fields.at(3).type->id == arrow::type_id::float32);
  CHECK(ds::dataset::open(copy).schema().fields.at(3).type->id == arrow::type_id::float32);
  // LanceDB appends with the new schema and changes it again; we read every row as it does.
  (void)t::node("append_rows.mjs", {root, "--rows", "10", "--first-id", "100", "--seed", "5", "--no-struct-nulls"});
  (void)t::node("alter_table.mjs", {root, "--rename", "label=name2", "--add", "three=id * 3"});
  d = ds::dataset::open(root);
  CHECK(d.schema().fields[1].name == "name2");
  check_batches(d.to_batch(), theirs(root, &count), "LanceDB's read after its own changes on top of ours");
  CHECK(count == mine.num_rows() + 10);
  // And we drop LanceDB's column again: its read agrees; its compaction then reads ours.
  ds::drop_columns(root, {"three"});
  check_batches(ds::dataset::open(root).to_batch(), theirs(root, &count), "LanceDB's read after our second drop");
  const auto before_optimize = ds::dataset::open(root).to_batch();
  (void)t::node("optimize.mjs", {root});
  check_batches(ds::dataset::open(root).to_batch(), before_optimize, "our read after LanceDB's compaction");
}

TEST_CASE("interop: lists cast by their items equal LanceDB's alterColumns on a copy") {
  t::temp_dir dir("ds-cast-lists");
  const auto root = dataset_dir(dir, "ours"), copy = dataset_dir(dir, "theirs");
  std::vector<std::int64_t> ids;
  std::vector<float> vec;
  std::vector<std::vector<std::optional<std::int64_t>>> tags;
  std::vector<bool> tags_valid;
  for (std::int64_t i = 0; i < 50; ++i) {
    ids.push_back(i);
    vec.push_back(float(i) / 3);  // float16 rounds these: both sides must round alike
    vec.push_back(float(i % 5) * 1000.7f);
    std::vector<std::optional<std::int64_t>> l;
    for (std::int64_t k = 0; k < i % 4; ++k) l.push_back(k == 2 ? std::nullopt : std::optional<std::int64_t>(i * 100 + k));
    tags.push_back(l);
    tags_valid.push_back(i % 6 != 0);
  }
  ds::write_options o;
  o.max_rows_per_file = 20;
  ds::write(root,
            make_batch({{"id", make_array<std::int64_t>(ids)},
                        {"vec", make_fixed_size_list(make_array<float>(vec), 2)},
                        {"tags", list_array<std::int64_t>(tags, tags_valid)}}),
            o);
  ds::delete_where(root, "id % 9 = 4");
  std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
  (void)t::node("alter_table.mjs", {copy, "--cast", "vec=fixed_size_list<2>:float16"});
  (void)t::node("alter_table.mjs", {copy, "--cast", "tags=list:int32"});
  ds::alter_columns(root, {{"vec", std::nullopt, std::nullopt, arrow::fixed_size_list(arrow::float16(), 2)}});
  ds::alter_columns(root, {{"tags", std::nullopt, std::nullopt, arrow::list(arrow::int32())}});
  const auto ours = ds::dataset::open(root), theirs_ds = ds::dataset::open(copy);
  CHECK(ours.version() == theirs_ds.version());
  CHECK(arrow::equals(*ours.schema().fields[1].type, *theirs_ds.schema().fields[1].type));
  CHECK(arrow::equals(*ours.schema().fields[2].type, *theirs_ds.schema().fields[2].type));
  check_batches(ours.to_batch(), theirs_ds.to_batch(), "our list casts against LanceDB's (both read by us)");
  std::int64_t count = -1;
  check_batches(ours.to_batch(), theirs(root, &count), "LanceDB's read of our list casts");
  CHECK(count == ours.count_rows());
}

// Nested columns derived from each row's id and a salt: info struct<a: int32, tags:
// list<utf8>> (NULL structs unless told otherwise: 2.0 files have no struct validity;
// NULL members, empty and NULL lists) and vec
// fixed_size_list<float32, 2>.
std::vector<std::pair<std::string, array_ptr>> merge_nested_columns(const std::vector<std::int64_t>& ids, std::int64_t salt,
                                                                   bool null_structs = true) {
  std::vector<std::optional<std::int32_t>> a;
  std::vector<std::vector<std::optional<std::string>>> tags;
  std::vector<bool> tags_valid, info_valid;
  std::vector<float> vec;
  for (auto id : ids) {
    const auto h = (id * 31 + salt * 17) % 97;
    a.push_back(h % 5 ? std::optional<std::int32_t>(std::int32_t(h)) : std::nullopt);
    std::vector<std::optional<std::string>> l;
    for (std::int64_t k = 0; k < h % 4; ++k) l.push_back(k == 2 ? std::nullopt : std::optional<std::string>("g" + std::to_string(h + k)));
    tags.push_back(l);
    tags_valid.push_back(h % 11 != 0);
    info_valid.push_back(!null_structs || h % 13 != 0);
    vec.push_back(float(h));
    vec.push_back(float(salt));
  }
  auto info = struct_array({{"a", make_array<std::int32_t>(a)}, {"tags", list_array<std::string>(tags, tags_valid)}},
                           info_valid);
  return {{"info", info}, {"vec", make_fixed_size_list(make_array<float>(vec), 2)}};
}

TEST_CASE("interop: our updates equal LanceDB's on a copy; each reads the other's and updates on top") {
  const auto version = GENERATE_VERSION();
  CAPTURE(version);
  t::temp_dir dir("ds-update");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::int64_t> ids;
  std::vector<std::int32_t> x;
  std::vector<std::optional<std::string>> names;
  std::vector<double> price;
  for (std::int64_t i = 0; i < 60; ++i) {
    ids.push_back(i);
    x.push_back(std::int32_t(i * 3));
    names.push_back(i % 5 ? std::optional<std::string>("n" + std::to_string(i)) : std::nullopt);
    price.push_back(double(i) * 0.25);
  }
  ds::write_options o;
  o.max_rows_per_file = 25;
  o.storage_version = file::parse_format_version(version);
  // Nested columns ride along with the rows an update moves.
  auto cols = std::vector<std::pair<std::string, array_ptr>>{{"id", make_array<std::int64_t>(ids)},
                                                             {"x", make_array<std::int32_t>(x)},
                                                             {"name", string_array(names)},
                                                             {"price", make_array<double>(price)}};
  for (auto& c : merge_nested_columns(ids, 1, version != "2.0")) cols.push_back(c);
  ds::write(root, make_batch(cols), o);
  ds::delete_where(root, "id % 11 = 3");
  const auto copy = dataset_dir(dir, "theirs");
  std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
  // The same three updates by each: a few rows of each fragment, a whole fragment, none.
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> steps = {
      {"id % 4 = 1", {{"x", "x + 1000"}, {"price", "price * 2"}}},
      {"id >= 50", {{"name", "'late'"}}},
      {"id > 1000", {{"x", "0"}}}};
  njson ops = njson::array();
  for (const auto& [where, set] : steps) {
    njson values = njson::object();
    for (const auto& [c, sql] : set) values[c] = sql;
    ops.push_back({{"op", "update"}, {"where", where}, {"set", values}});
    ds::update(root, where, set);
  }
  std::istringstream lines(t::node("mutate.mjs", {copy, "--ops", ops.dump()}));
  std::vector<njson> theirs_out;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) theirs_out.push_back(njson::parse(line));
  REQUIRE(theirs_out.size() == 3);
  CHECK(theirs_out[0]["rowsUpdated"] == 14);
  CHECK(theirs_out[2]["rowsUpdated"] == 0);
  const auto ours = ds::dataset::open(root), their = ds::dataset::open(copy);
  CHECK(ours.version() == their.version());
  CHECK(ours.manifest().fragments.size() == their.manifest().fragments.size());
  // The same rows in the same order, read by us and by LanceDB from both.
  check_batches(ours.to_batch(), their.to_batch(), "our updates against LanceDB's (both read by us)");
  std::int64_t count = -1;
  check_batches(ours.to_batch(), theirs(root, &count), "LanceDB's read of our updates");
  // LanceDB updates on top of ours, we on top of LanceDB's: still equal.
  (void)t::node("mutate.mjs", {root, "--ops", R"([{"op": "update", "where": "name IS NULL", "set": {"name": "'was null'"}}])"});
  ds::update(copy, "name IS NULL", {{"name", "'was null'"}});
  check_batches(ds::dataset::open(root).to_batch(), ds::dataset::open(copy).to_batch(), "updates on top of each other's");
}

TEST_CASE("interop: our merge inserts equal LanceDB's on a copy, random keys, every clause") {
  t::temp_dir dir("ds-merge");
  std::mt19937_64 rng(77);
  std::int64_t salt = 0;
  const auto make_rows = [&](std::int64_t n, std::int64_t key_range) {
    std::vector<std::int64_t> ids;
    std::vector<std::optional<std::string>> tags;
    std::vector<std::optional<double>> vals;
    std::set<std::int64_t> used;
    while (std::int64_t(ids.size()) < n) {
      const auto k = std::int64_t(rng() % std::uint64_t(key_range));
      if (!used.insert(k).second) continue;
      ids.push_back(k);
      tags.push_back(rng() % 4 ? std::optional<std::string>("t" + std::to_string(rng() % 100)) : std::nullopt);
      vals.push_back(rng() % 5 ? std::optional<double>(double(rng() % 1000) / 8) : std::nullopt);
    }
    auto cols = std::vector<std::pair<std::string, array_ptr>>{
        {"id", make_array<std::int64_t>(ids)}, {"tag", string_array(tags)}, {"val", make_array<double>(vals)}};
    for (auto& c : merge_nested_columns(ids, ++salt)) cols.push_back(c);
    return make_batch(cols);
  };
  // Rows carry nested columns (a struct of an int and a list of strings, a vector).
  // Cases 6 and 7 join on (id, tag): a key of two columns, one a string with NULLs
  // (which match nothing).
  for (int c = 0; c < 8; ++c) {
    CAPTURE(c);
    const auto root = dataset_dir(dir, "ours-" + std::to_string(c)), copy = dataset_dir(dir, "theirs-" + std::to_string(c));
    ds::write_options o;
    o.max_rows_per_file = 70;
    ds::write(root, make_rows(200, 400), o);
    ds::delete_where(root, "id % 13 = 5");
    std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
    ds::merge_insert_options m;
    m.on = c >= 6 ? std::vector<std::string>{"id", "tag"} : std::vector<std::string>{"id"};
    m.when_matched_update_all = c != 1;
    m.when_not_matched_insert_all = c != 2;
    m.when_not_matched_by_source_delete = c >= 3 && c != 6;
    if (c == 4) m.by_source_delete_if = "val > 50 OR tag IS NULL";
    if (c == 5) m.matched_if = "target.val < source.val";
    auto src = make_rows(60, 400);
    if (c >= 6) {  // half the source takes keys (id and tag) of the dataset's rows
      const auto live = ds::dataset::open(root).to_batch();
      std::vector<std::int64_t> ids;
      std::vector<std::optional<std::string>> tags;
      std::vector<std::optional<double>> vals;
      for (std::int64_t i = 0; i < 60; ++i) {
        const auto r = i;  // even source rows: the live rows 0, 2, 4...; odd ones: new ids
        ids.push_back(i % 2 ? 1000 + i : live.columns[0]->value<std::int64_t>(r));
        tags.push_back(i % 2 || !live.columns[1]->is_valid(r) ? std::nullopt
                                                               : std::optional<std::string>(live.columns[1]->string_value(r)));
        vals.push_back(double(i) / 4);
      }
      auto cols = std::vector<std::pair<std::string, array_ptr>>{
          {"id", make_array<std::int64_t>(ids)}, {"tag", string_array(tags)}, {"val", make_array<double>(vals)}};
      for (auto& col : merge_nested_columns(ids, ++salt)) cols.push_back(col);
      src = make_batch(cols);
    }
    const auto file = dir.path() / ("src-" + std::to_string(c) + ".jsonl");
    std::ofstream(file) << json::rows_to_json(src);
    njson op = {{"op", "merge"}, {"on", m.on}, {"rows", file.string()}, {"matched", m.when_matched_update_all},
                {"insert", m.when_not_matched_insert_all}, {"deleteBySource", m.when_not_matched_by_source_delete}};
    if (!m.by_source_delete_if.empty()) op["deleteIf"] = m.by_source_delete_if;
    if (!m.matched_if.empty()) op["matchedIf"] = m.matched_if;
    const auto mine = ds::merge_insert(root, std::vector<record_batch>{src}, m);
    const auto their = njson::parse(t::node("mutate.mjs", {copy, "--ops", njson::array({op}).dump()}));
    if (c >= 6) CHECK(mine.updated_rows > 10);  // the two-column keys matched
    CHECK(their["inserted"] == mine.inserted_rows);
    CHECK(their["updated"] == mine.updated_rows);
    CHECK(their["deleted"] == mine.deleted_rows);
    const auto a = ds::dataset::open(root), b = ds::dataset::open(copy);
    CHECK(a.version() == b.version());
    CHECK(a.manifest().fragments.size() == b.manifest().fragments.size());
    check_batches(a.to_batch(), b.to_batch(), "our merge insert against LanceDB's (both read by us)");
    std::int64_t count = -1;
    check_batches(a.to_batch(), theirs(root, &count), "LanceDB's read of our merge insert");
    // LanceDB carries on from our merge as from its own: an update, then optimize
    // (compaction and index work).
    const std::string more = R"([{"op": "update", "where": "val IS NULL", "set": {"val": "-1"}}, {"op": "optimize"}])";
    (void)t::node("mutate.mjs", {root, "--ops", more});
    (void)t::node("mutate.mjs", {copy, "--ops", more});
    check_batches(ds::dataset::open(root).to_batch(), ds::dataset::open(copy).to_batch(),
                  "LanceDB's update and optimize after our merge insert and after its own");
  }
}

TEST_CASE("interop: a page of one repeated large_utf8 / large_binary value (2.2) reads in LanceDB") {
  t::temp_dir dir("ds-large-constant");
  const auto root = dataset_dir(dir, "ours");
  std::vector<std::string> same(5, "two"), empty(5, "");
  ds::write_options o;
  o.storage_version = file::format_version::v2_2;
  ds::write(root, make_batch({{"id", make_array<std::int64_t>({1, 2, 3, 4, 5})}, {"s", large_string_array(same)},
                              {"b", large_binary_array(same)}, {"e", large_string_array(empty)}, {"t", string_array(same)}}),
            o);
  std::int64_t count = -1;
  check_batches(ds::dataset::open(root).to_batch(), theirs(root, &count), "LanceDB's read of repeated large values");
  CHECK(count == 5);
}

TEST_CASE("interop: randomised schemas and rows, 200 cases each way") {
  constexpr int cases = 201;  // 67 per storage version
  const std::vector<file::format_version> versions{file::format_version::v2_0, file::format_version::v2_1,
                                                   file::format_version::v2_2};
  // LanceDB reads ours.
  {
    t::temp_dir dir("ds-random-ours");
    std::mt19937_64 seeds(20240611);
    std::vector<std::string> roots;
    std::vector<record_batch> written;
    std::vector<file::format_version> used;
    for (int c = 0; c < cases; ++c) {
      const auto v = versions[std::size_t(c) % versions.size()];
      generator g(seeds(), v != file::format_version::v2_0);
      auto s = std::make_shared<arrow::schema>();
      s->fields.push_back(field{"id", int64(), false, {}});
      const auto n = g.between(1, 4);
      for (std::int64_t k = 0; k < n; ++k) {
        auto type = g.random_type(0, 3);
        const bool nullable = type->id == type_id::null || g.coin(0.85);
        s->fields.push_back(field{"c" + std::to_string(k), type, nullable, {}});
      }
      std::vector<record_batch> bs;
      std::int64_t id = 0;
      for (std::int64_t part = g.between(1, 3); part > 0; --part) {
        const auto rows = g.between(0, 40);
        std::vector<array_ptr> cols;
        std::vector<std::int64_t> ids;
        for (std::int64_t i = 0; i < rows; ++i) ids.push_back(id++);
        cols.push_back(make_array<std::int64_t>(ids));
        for (std::size_t f = 1; f < s->fields.size(); ++f) cols.push_back(g.array(s->fields[f].type, rows, s->fields[f].nullable));
        bs.push_back(make_batch(s, cols));
      }
      const auto root = dataset_dir(dir, "case-" + std::to_string(c));
      ds::write_options o;
      o.max_rows_per_file = std::uint64_t(g.between(5, 50));
      o.schema = *s;
      o.storage_version = v;
      ds::write(root, bs, o);
      roots.push_back(root);
      written.push_back(concat_all(bs));
      used.push_back(v);
    }
    const auto out = (dir.path() / "read").string();
    std::vector<std::string> args{out};
    args.insert(args.end(), roots.begin(), roots.end());
    auto res = njson::parse(t::node("read_many.mjs", args));
    CHECK(res["errors"] == 0);
    // Every case LanceDB could not read left a .error file, named case by case below.
    for (int c = 0; c < cases; ++c) {
      const auto name = "case-" + std::to_string(c);
      INFO(name << " (storage " << file::to_string(used[std::size_t(c)]) << "): "
                << fields_json(*written[std::size_t(c)].schema).dump());
      if (fs::exists(fs::path(out) / (name + ".error"))) {
        const auto err = read_text(fs::path(out) / (name + ".error"));
        FAIL_CHECK("LanceDB cannot read " << name << ": " << err);
        continue;
      }
      auto o = split_output(read_text(fs::path(out) / (name + ".jsonl")));
      CHECK(o.count_rows == written[std::size_t(c)].num_rows());
      check_batches(written[std::size_t(c)], parse_rows(*written[std::size_t(c)].schema, o.rows), name);
    }
  }
  // We read LanceDB's.
  for (const auto v : versions) {
    t::temp_dir dir("ds-random-theirs");
    const auto out = (dir.path() / "cases").string();
    const int n = cases / int(versions.size());
    const auto text = t::node("random_datasets.mjs", {out, "--cases", std::to_string(n), "--version",
                                                      std::string(file::to_string(v)), "--seed", "77"});
    REQUIRE_MESSAGE(!text.empty(), "random_datasets.mjs printed nothing");
    auto res = njson::parse(text);
    CHECK(res["cases"] == n);
    for (int c = 0; c < n; ++c) {
      const auto name = "case-" + std::to_string(c);
      const auto root = (fs::path(out) / name).string();
      const auto schema = njson::parse(read_text(fs::path(out) / (name + ".schema.json")));
      INFO(name << " (storage " << file::to_string(v) << "): " << schema.dump());
      try {
        auto d = ds::dataset::open(root);
        CHECK(d.storage_version() == v);
        CHECK(strip_metadata(schema["fields"]) == fields_json(d.schema()));
        auto expected = parse_rows(d.schema(), read_text(fs::path(out) / (name + ".jsonl")));
        check_batches(expected, d.to_batch(), name);
        CHECK(d.count_rows() == std::uint64_t(expected.num_rows()));
      } catch (const error& e) {
        FAIL_CHECK("lancet cannot read " << name << ": " << e.what());
      } catch (const std::exception& e) {
        FAIL_CHECK(name << ": " << e.what());
      }
    }
  }
}

TEST_CASE("interop: takes from LanceDB's vector datasets equal a scan (every storage version, one or many fragments)") {
  // bench_ivf's layout: id int64 + vector fixed_size_list<float32, 128>, 70,000 rows
  // (LanceDB's 2.0 writer cuts two 35,000-row vector pages of 17.9 MB).
  const std::int64_t rows = 70000, dim = 128;
  t::temp_dir dir("ds-take");
  const auto vf = dir.path() / "vectors.f32";
  {
    std::mt19937_64 g(7);
    std::uniform_real_distribution<float> u(-1, 1);
    std::ofstream out(vf, std::ios::binary);
    for (std::int64_t i = 0; i < rows * dim; ++i) {
      const float v = u(g);
      out.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
  for (const std::string version : {"2.0", "2.1", "2.2"}) {
    for (const bool fragments : {false, true}) {
      const std::string label = "storage " + version + (fragments ? ", fragments of 15000 rows, deletions" : ", one createTable");
      SUBCASE(label.c_str()) {
        const auto root = dataset_dir(dir, "v" + version + (fragments ? "-f" : "-1"));
        std::vector<std::string> args{"create", root, "--vectors", vf.string(), "--dim", std::to_string(dim), "--storage", version};
        if (fragments) {
          for (std::string a : {"--fragment-rows", "15000", "--delete", "id % 7 = 3 OR id = 0 OR id = 69999"}) args.push_back(a);
        }
        t::node("ivf_acceptance.mjs", args);
        const auto d = ds::dataset::open(root);
        CHECK(d.fragments().size() == (fragments ? 5u : 1u));
        check_takes_against_scan(d, 11, label);
        // Deleted rows cannot be taken.
        if (fragments) CHECK_THROWS_AS(d.take_addresses(std::vector<std::uint64_t>{3}), invalid_input_error);
      }
    }
  }
}

TEST_CASE("interop: a merge insert on the unenforced primary key records LanceDB's inserted-key filter, byte for byte") {
  t::temp_dir dir("ds-merge-pk");
  // Keys of each kind LanceDB hashes: int64, utf8, and int32 + utf8 together.
  struct key_case {
    std::string name;
    std::vector<std::string> on;
  };
  for (const auto& kc : {key_case{"int64", {"id"}}, key_case{"utf8", {"name"}}, key_case{"composite", {"k", "name"}}}) {
    CAPTURE(kc.name);
    const auto rows = [&](std::int64_t first, std::int64_t n) {
      std::vector<std::int64_t> id;
      std::vector<std::int32_t> k;
      std::vector<std::optional<std::string>> name;
      std::vector<double> v;
      for (auto i = first; i < first + n; ++i) {
        id.push_back(i);
        k.push_back(std::int32_t(i % 7));
        name.push_back("n" + std::to_string(i));
        v.push_back(double(i) / 2);
      }
      auto b = make_batch({{"id", make_array<std::int64_t>(id)},
                           {"k", make_array<std::int32_t>(k)},
                           {"name", string_array(name)},
                           {"v", make_array<double>(v)}});
      auto s = std::make_shared<arrow::schema>(*b.schema);
      for (auto& f : s->fields)
        if (std::find(kc.on.begin(), kc.on.end(), f.name) != kc.on.end()) {
          f.metadata = {{"lance-schema:unenforced-primary-key", "true"}};
          f.nullable = false;
        }
      b.schema = s;
      return b;
    };
    const auto root = dataset_dir(dir, "ours-" + kc.name), copy = dataset_dir(dir, "theirs-" + kc.name);
    ds::write(root, rows(0, 50));
    std::filesystem::copy(root, copy, std::filesystem::copy_options::recursive);
    const auto src = rows(40, 30);  // 10 matched, 20 inserted
    const auto file = dir.path() / ("src-" + kc.name + ".jsonl");
    std::ofstream(file) << json::rows_to_json(src);
    ds::merge_insert_options m;
    m.on = kc.on;
    m.when_matched_update_all = true;
    m.when_not_matched_insert_all = true;
    ds::merge_insert(root, std::vector<record_batch>{src}, m);
    njson op = {{"op", "merge"}, {"on", kc.on}, {"rows", file.string()}, {"matched", true}, {"insert", true}};
    (void)t::node("mutate.mjs", {copy, "--ops", njson::array({op}).dump()});
    const auto a = ds::dataset::open(root), b = ds::dataset::open(copy);
    const auto& ours = std::get<pb::transaction::update>(a.transaction()->operation);
    const auto& their = std::get<pb::transaction::update>(b.transaction()->operation);
    REQUIRE(their.inserted_rows_filter.has_value());
    REQUIRE(ours.inserted_rows_filter.has_value());
    CHECK(ours.inserted_rows_filter->field_ids == their.inserted_rows_filter->field_ids);
    CHECK(ours.inserted_rows_filter == their.inserted_rows_filter);
    check_batches(a.to_batch(), b.to_batch(), "our merge insert on the primary key against LanceDB's");
  }
}
