// Map columns (2.2+) and dictionary fields (2.0 - 2.2): Arrow types and arrays, the
// Lance schema, file round trips, schema JSON and JSON rows.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/dataset/fragment_reader.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/file/legacy.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/structural.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/json/rows_writer.hpp"
#include "lancet/json/schema_json.hpp"
#include "lancet/schema/lance_schema.hpp"

#include "support/file_bytes.hpp"

using namespace lancet;

namespace {

using lancet::testing::write_file;

template <class V>
arrow::record_batch file_round_trip(const arrow::record_batch& b) {
  file::file_reader<io::memory_source> r{io::memory_source(write_file<V>({b}))};
  return r.read();
}

void check_equal(const arrow::record_batch& a, const arrow::record_batch& b) {
  auto d = arrow::first_difference(a, b);
  INFO(d.value_or(""));
  CHECK(!d);
  for (std::size_t i = 0; i < a.columns.size(); ++i) {
    INFO("column " << i << ": " << arrow::to_string(*a.columns[i]->type) << " vs "
                   << arrow::to_string(*b.columns[i]->type));
    CHECK(arrow::equals(*a.columns[i]->type, *b.columns[i]->type));
  }
}

// map<utf8, int32>: {a:1, x:2}, null, {}, {q:null, r:5}, {z:7}
arrow::array_ptr sample_map() {
  auto keys = arrow::string_array({"a", "x", "q", "r", "z"});
  auto values = arrow::make_array<std::int32_t>({1, 2, std::nullopt, 5, 7});
  return arrow::make_map(keys, values, {0, 2, 2, 2, 4, 5}, {true, false, true, true, true});
}

arrow::record_batch batch_of(std::vector<std::pair<std::string, arrow::array_ptr>> cols) {
  return arrow::make_batch(cols);
}

}  // namespace

TEST_CASE("map: type, validation, to_string") {
  auto m = sample_map();
  CHECK(m->type->id == arrow::type_id::map);
  CHECK(arrow::to_string(*m->type) == "map<utf8, int32>");
  CHECK_NOTHROW(arrow::validate(m));
  CHECK(m->is_null(1));
  CHECK(m->value_offset(4) == 4);
  // Nullable keys are refused.
  auto bad = std::make_shared<arrow::data_type>(*m->type);
  auto entries = std::make_shared<arrow::data_type>(*bad->children[0].type);
  entries->children[0].nullable = true;
  bad->children[0].type = entries;
  CHECK_THROWS_AS(arrow::validate_type(*bad, "m"), invalid_input_error);
}

TEST_CASE("map: Lance schema as Lance 12 stores it") {
  auto b = batch_of({{"m", sample_map()}});
  auto s = schema::from_arrow(*b.schema);
  REQUIRE(s.fields.size() == 1);
  const auto& f = s.fields[0];
  CHECK(f.logical_type == "map");
  CHECK(f.encoding == pb::file::field_encoding::plain);
  REQUIRE(f.children.size() == 1);
  CHECK(f.children[0].name == "entries");
  CHECK(f.children[0].logical_type == "struct");
  CHECK(!f.children[0].nullable);
  REQUIRE(f.children[0].children.size() == 2);
  CHECK(f.children[0].children[0].name == "key");
  CHECK(f.children[0].children[0].logical_type == "string");
  CHECK(!f.children[0].children[0].nullable);
  CHECK(f.children[0].children[1].name == "value");
  CHECK(f.children[0].children[1].nullable);
  CHECK(schema::preorder_ids(s) == std::vector<std::int32_t>{0, 1, 2, 3});
  // Through the protobuf and back to Arrow.
  auto back = schema::to_arrow(schema::from_pb(schema::to_pb(s)));
  CHECK(arrow::equals(*back.fields[0].type, *b.schema->fields[0].type));
  // Lance 12 refuses sorted keys.
  auto sorted = arrow::map(arrow::utf8(), arrow::int32(), true, true);
  CHECK_THROWS_AS(schema::from_arrow(arrow::field{"m", sorted, true, {}}), unsupported_error);
}

TEST_CASE("map: 2.2 round trips (nulls, empty maps, null values, nesting)") {
  auto m = sample_map();
  check_equal(file_round_trip<file::v2_2>(batch_of({{"m", m}})), batch_of({{"m", m}}));
  // Non-null map, int64 keys, string values; many rows over several chunks.
  std::vector<std::optional<std::int64_t>> ks;
  std::vector<std::optional<std::string>> vs;
  std::vector<std::int32_t> offs{0};
  std::vector<bool> valid;
  for (int i = 0; i < 5000; ++i) {
    const int n = i % 4;
    for (int k = 0; k < n; ++k) {
      ks.push_back(std::int64_t(i) * 10 + k);
      vs.push_back(k == 1 ? std::nullopt : std::optional<std::string>("v" + std::to_string(i * k)));
    }
    offs.push_back(offs.back() + n);
    valid.push_back(i % 7 != 3);
  }
  auto m2 = arrow::make_map(arrow::make_array_from<std::int64_t>(ks), arrow::string_array(vs), offs, valid);
  auto b2 = batch_of({{"m2", m2}, {"id", arrow::make_array<std::int32_t>(std::vector<std::int32_t>(5000, 7))}});
  check_equal(file_round_trip<file::v2_2>(b2), b2);
  // A map in a struct and a list of maps.
  auto st = arrow::struct_array({{"m", m}, {"x", arrow::make_array<std::int32_t>({1, 2, 3, 4, 5})}});
  auto lm = arrow::make_list(m, {0, 2, 2, 5});
  auto b3 = batch_of({{"st", st}});
  check_equal(file_round_trip<file::v2_2>(b3), b3);
  auto b4 = batch_of({{"lm", lm}});
  check_equal(file_round_trip<file::v2_2>(b4), b4);
  // A sliced map.
  auto b5 = batch_of({{"m", arrow::slice(m, 1, 3)}});
  check_equal(file_round_trip<file::v2_2>(b5), b5);
}

TEST_CASE("map: 2.0 and 2.1 refuse maps, naming the column") {
  auto b = batch_of({{"mymap", sample_map()}});
  for (int v = 0; v < 2; ++v) {
    try {
      if (v == 0) (void)write_file<file::v2_0>({b});
      else (void)write_file<file::v2_1>({b});
      FAIL("a map was written at 2." << v);
    } catch (const unsupported_error& e) {
      const std::string what = e.what();
      CHECK(what.find("'mymap'") != std::string::npos);
      CHECK(what.find("2.2") != std::string::npos);
    }
  }
}

TEST_CASE("map: schema JSON and JSON rows") {
  auto t = arrow::map(arrow::utf8(), arrow::int32());
  arrow::schema s;
  s.fields.push_back({"m", t, true, {}});
  const auto text = json::schema_to_json(s);
  CHECK(text.find(R"({"map": ["utf8", "int32"], "keys_sorted": false})") != std::string::npos);
  auto back = json::parse_schema(text);
  CHECK(arrow::equals(*back.fields[0].type, *t));
  auto t2 = json::parse_schema(R"({"fields": [{"name": "m", "type": {"map": ["int64", {"name": "value", "type": "utf8", "nullable": false}]}}]})");
  CHECK(arrow::to_string(*t2.fields[0].type) == "map<int64, utf8 not null>");
  CHECK_THROWS_AS(json::parse_schema(R"({"fields": [{"name": "m", "type": {"map": ["int64"]}}]})"), invalid_input_error);
  // cat prints arrays of {"key", "value"} objects.
  auto b = batch_of({{"m", sample_map()}});
  const std::string out = json::rows_to_json(b);
  CHECK(out ==
        "{\"m\":[{\"key\":\"a\",\"value\":1},{\"key\":\"x\",\"value\":2}]}\n"
        "{\"m\":null}\n"
        "{\"m\":[]}\n"
        "{\"m\":[{\"key\":\"q\",\"value\":null},{\"key\":\"r\",\"value\":5}]}\n"
        "{\"m\":[{\"key\":\"z\",\"value\":7}]}\n");
  // And JSON rows read back into the same map.
  auto schema = std::make_shared<const arrow::schema>(*b.schema);
  json::row_builder rb(schema);
  std::istringstream in(out);
  std::string line;
  std::int64_t n = 0;
  while (std::getline(in, line)) CHECK(rb.append(line, ++n));
  auto read = rb.finish();
  check_equal(read, b);
}

// ---- dictionaries -------------------------------------------------------------------

namespace {

// dictionary<int32, utf8>: "aa", "bb", null, "aa", "cc", "bb", "zz" (indices into a
// dictionary that also holds an unused value and a null value).
arrow::array_ptr sample_dict() {
  auto dict = arrow::string_array({"bb", "aa", "unused", std::nullopt, "cc", "zz"});
  auto idx = arrow::make_array<std::int32_t>({1, 0, std::nullopt, 1, 4, 0, 5});
  return arrow::make_dictionary(idx, dict);
}

template <class V>
void dict_round_trips() {
  auto d = sample_dict();
  auto e = arrow::make_dictionary(arrow::make_array<std::uint8_t>({0, 1, std::nullopt, 0, 2, 1, 3}),
                                  arrow::make_array<std::int64_t>({5, 7, 9, 1}));
  auto bin = arrow::make_dictionary(arrow::make_array<std::int16_t>({0, 0, 1, 1, 0, 1, 0}),
                                    arrow::binary_array({std::string("\x01\x02", 2), std::string("zz")}));
  auto st = arrow::struct_array({{"x", arrow::make_array<std::int32_t>({1, 2, 3, 4, 5, 6, 7})}, {"d", sample_dict()}});
  auto l = arrow::make_list(sample_dict(), {0, 2, 2, 5, 5, 6, 6, 7}, {true, true, false, true, true, true, true});
  auto b = batch_of({{"d", d}, {"e", e}, {"bin", bin}, {"st", st}, {"l", l}});
  auto back = file_round_trip<V>(b);
  check_equal(back, b);
  // Values come back dictionary-encoded, in the field's index type.
  CHECK(arrow::to_string(*back.columns[0]->type) == "dictionary<int32, utf8>");
  CHECK(arrow::to_string(*back.columns[1]->type) == "dictionary<uint8, int64>");
  CHECK(back.columns[0]->is_null(2));
  CHECK(back.columns[0]->children[0]->string_value(back.columns[0]->dictionary_index(4)) == "cc");
  CHECK_NOTHROW(arrow::validate(back.columns[0]));
  // Many rows, several pages.
  std::vector<std::optional<std::int32_t>> many;
  for (int i = 0; i < 20000; ++i) many.push_back(i % 13 == 0 ? std::nullopt : std::optional<std::int32_t>(i % 5));
  auto big = arrow::make_dictionary(arrow::make_array_from<std::int32_t>(many),
                                    arrow::string_array({"zero", "one", "two", "three", "four"}));
  auto bb = batch_of({{"big", big}});
  check_equal(file_round_trip<V>(bb), bb);
}

}  // namespace

TEST_CASE("dictionary: types, arrays, encode/decode") {
  auto d = sample_dict();
  CHECK_NOTHROW(arrow::validate(d));
  CHECK(arrow::to_string(*d->type) == "dictionary<int32, utf8>");
  auto plain = arrow::dictionary_decode(*d);
  CHECK(arrow::array_equals(plain, arrow::string_array({"aa", "bb", std::nullopt, "aa", "cc", "bb", "zz"})));
  auto again = arrow::dictionary_encode(plain, d->type);
  CHECK(arrow::array_equals(again, d));  // compared by value
  CHECK(again->children[0]->length == 4);  // aa, bb, cc, zz
  // Out-of-range indices are refused.
  auto bad = arrow::make_dictionary(arrow::make_array<std::int32_t>({0, 6}), arrow::string_array({"a"}));
  CHECK_THROWS_AS(arrow::validate(bad), invalid_input_error);
  // Too many values for the index type.
  std::vector<std::optional<std::int32_t>> vals;
  for (int i = 0; i < 200; ++i) vals.push_back(i);
  CHECK_THROWS_AS(arrow::dictionary_encode(arrow::make_array_from<std::int32_t>(vals),
                                           arrow::dictionary(arrow::int8(), arrow::int32())),
                  invalid_input_error);
}

TEST_CASE("dictionary: Lance schema as Lance 12 stores it") {
  arrow::field f{"d", arrow::dictionary(arrow::int32(), arrow::utf8()), true, {}};
  auto lf = schema::from_arrow(f);
  CHECK(lf.logical_type == "dict:string:int32:false");
  CHECK(lf.encoding == pb::file::field_encoding::dictionary);
  REQUIRE(lf.dictionary.has_value());
  CHECK(lf.children.empty());
  CHECK(schema::logical_type_of(arrow::field{"e", arrow::dictionary(arrow::uint8(), arrow::int64()), true, {}}) ==
        "dict:int64:uint8:false");
  CHECK(schema::logical_type_of(arrow::field{"t", arrow::dictionary(arrow::int16(), arrow::timestamp(arrow::time_unit::micro, "UTC")), true, {}}) ==
        "dict:timestamp:us:UTC:int16:false");
  auto back = schema::to_arrow(lf);
  CHECK(arrow::equals(*back.type, *f.type));
  arrow::schema s;
  s.fields.push_back({"t", arrow::dictionary(arrow::int16(), arrow::timestamp(arrow::time_unit::micro, "UTC")), true, {}});
  auto ls = schema::from_arrow(s);
  CHECK(arrow::equals(*schema::to_arrow(schema::from_pb(schema::to_pb(ls))).fields[0].type, *s.fields[0].type));
  // Nested values are not dictionary values.
  CHECK_THROWS(schema::from_arrow(arrow::field{"x", arrow::dictionary(arrow::int32(), arrow::list(arrow::int32())), true, {}}));
}

TEST_CASE("dictionary: 2.0 round trips") { dict_round_trips<file::v2_0>(); }
TEST_CASE("dictionary: 2.1 round trips") { dict_round_trips<file::v2_1>(); }
TEST_CASE("dictionary: 2.2 round trips") { dict_round_trips<file::v2_2>(); }

TEST_CASE("dictionary: schema JSON and JSON rows") {
  arrow::schema s;
  s.fields.push_back({"d", arrow::dictionary(arrow::int32(), arrow::utf8()), true, {}});
  s.fields.push_back({"e", arrow::dictionary(arrow::uint8(), arrow::int64()), true, {}});
  const auto text = json::schema_to_json(s);
  CHECK(text.find(R"({"dictionary": "utf8", "index": "int32"})") != std::string::npos);
  CHECK(text.find(R"({"dictionary": "int64", "index": "uint8"})") != std::string::npos);
  auto back = json::parse_schema(text);
  CHECK(arrow::equals(*back.fields[0].type, *s.fields[0].type));
  CHECK(arrow::equals(*back.fields[1].type, *s.fields[1].type));
  // "index" defaults to int32; a nested value type is refused.
  CHECK(arrow::equals(*json::parse_schema(R"({"fields": [{"name": "d", "type": {"dictionary": "utf8"}}]})").fields[0].type,
                      *s.fields[0].type));
  CHECK_THROWS_AS(json::parse_schema(R"({"fields": [{"name": "d", "type": {"dictionary": {"list": "utf8"}}}]})"),
                  invalid_input_error);
  // cat prints values; JSON rows read back into a dictionary.
  auto b = batch_of({{"d", sample_dict()}});
  const auto out = json::rows_to_json(b);
  CHECK(out == "{\"d\":\"aa\"}\n{\"d\":\"bb\"}\n{\"d\":null}\n{\"d\":\"aa\"}\n{\"d\":\"cc\"}\n{\"d\":\"bb\"}\n{\"d\":\"zz\"}\n");
  json::row_builder rb(std::make_shared<const arrow::schema>(*b.schema));
  std::istringstream in(out);
  std::string line;
  std::int64_t n = 0;
  while (std::getline(in, line)) CHECK(rb.append(line, ++n));
  auto read = rb.finish();
  check_equal(read, b);
  CHECK(read.columns[0]->type->id == arrow::type_id::dictionary);
}

TEST_CASE("dictionary: arrays with different dictionaries concatenate by value; several batches per file") {
  auto a = sample_dict();
  auto b = arrow::make_dictionary(arrow::make_array<std::int32_t>({1, std::nullopt, 0}), arrow::string_array({"new", "aa"}));
  auto c = arrow::concat({arrow::slice(a, 1, 4), b}, a->type);
  CHECK(c->type->id == arrow::type_id::dictionary);
  CHECK(arrow::array_equals(arrow::dictionary_decode(*c),
                            arrow::string_array({"bb", std::nullopt, "aa", "cc", "aa", std::nullopt, "new"})));
  // Two batches with their own dictionaries in one file, every version.
  auto b1 = batch_of({{"d", a}});
  auto b2 = batch_of({{"d", b}});
  auto check = [&](auto version) {
    using V = decltype(version);
    file::file_writer<V, io::memory_sink> w(io::memory_sink{});
    w.write_batch(b1);
    w.write_batch(b2);
    w.finish();
    file::file_reader<io::memory_source> r{io::memory_source(w.sink().take_shared())};
    auto back = r.read();
    CHECK(arrow::array_equals(back.columns[0], arrow::concat({a, b}, a->type)));
    CHECK(back.columns[0]->type->id == arrow::type_id::dictionary);
    auto some = r.read({.columns = {}, .range = std::nullopt, .indices = std::vector<std::uint64_t>{0, 6, 9}});
    CHECK(arrow::array_equals(arrow::dictionary_decode(*some.columns[0]), arrow::string_array({"aa", "zz", "new"})));
  };
  check(file::v2_0{});
  check(file::v2_1{});
  check(file::v2_2{});
}

TEST_CASE("dictionary: a column a fragment lacks reads as nulls of its dictionary type (top level and nested)") {
  for (const auto& t : {arrow::dictionary(arrow::int8(), arrow::utf8()), arrow::dictionary(arrow::uint32(), arrow::int64()),
                        arrow::struct_({arrow::field{"d", arrow::dictionary(arrow::int16(), arrow::large_utf8()), true, {}}}),
                        arrow::list(arrow::dictionary(arrow::int32(), arrow::binary()))}) {
    CAPTURE(arrow::to_string(*t));
    for (std::int64_t n : {0, 1, 9}) {
      const auto a = dataset::detail::null_array_of(t, n);
      CHECK_NOTHROW(arrow::validate(a, "missing"));
      CHECK(a->count_nulls() == n);
      CHECK(arrow::equals(*a->type, *t));
    }
  }
}
