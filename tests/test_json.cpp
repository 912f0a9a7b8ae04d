// The JSON layer of the `lancet` tool: schema files, JSON Lines -> Arrow, Arrow ->
// JSON Lines. Exact texts and exact error messages are checked, plus round trips
// of every type with nulls at every level.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/arrow/validate.hpp>
#include <lancet/json/access.hpp>
#include <lancet/json/base64.hpp>
#include <lancet/json/files_reader.hpp>
#include <lancet/json/parse.hpp>
#include <lancet/json/value.hpp>
#include <lancet/json/write.hpp>
#include <lancet/json/rows_reader.hpp>
#include <lancet/json/rows_writer.hpp>
#include <lancet/json/schema_json.hpp>

#include "support/interop.hpp"
#include "support/message_of.hpp"
#include "support/random_data.hpp"

using namespace lancet;
using namespace lancet::arrow;

namespace {

using lancet::testing::message_of;

std::shared_ptr<const arrow::schema> schema_of(std::string_view text) {
  return std::make_shared<const arrow::schema>(json::parse_schema(text));
}

std::string schema_error(std::string_view text) {
  return message_of([&] { json::parse_schema(text); });
}

// One-field schema around a type given in JSON ("int32", {"list": ...}, ...).
std::shared_ptr<const arrow::schema> one(std::string_view type_json, bool nullable = true) {
  return schema_of(std::string(R"({"fields": [{"name": "x", "type": )") + std::string(type_json) +
                   (nullable ? "" : R"(, "nullable": false)") + "}]}");
}

// Text of the rows read from `lines` and written back.
std::string through(const std::shared_ptr<const arrow::schema>& s, std::string_view lines,
                    const json::write_options& o = {}) {
  return json::rows_to_json(json::read_rows(s, lines), o);
}

std::string row_error(const std::shared_ptr<const arrow::schema>& s, std::string_view lines) {
  return message_of([&] { json::read_rows(s, lines); });
}

// The single value column x of a one-row batch written as JSON.
std::string x_text(const array_ptr& a) {
  auto out = json::rows_to_json(make_batch({{"x", a}}));
  REQUIRE(out.size() > 7);
  return out.substr(5, out.size() - 7);  // {"x": ... }\n
}

std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// prefix + number (written so that GCC 12's -Wrestrict false positive on
// `"literal" + std::string&&` stays quiet).
std::string numbered(std::string prefix, std::size_t i) {
  prefix += std::to_string(i);
  return prefix;
}

}  // namespace

TEST_SUITE("json") {

// ---- schema files ---------------------------------------------------------------

TEST_CASE("schema: every type parses to the Arrow type it names") {
  struct tc {
    const char* json;
    type_ptr type;
  };
  const tc cases[] = {
      {R"("null")", null_type()},
      {R"("bool")", boolean()},
      {R"("boolean")", boolean()},
      {R"("int8")", int8()},
      {R"("int16")", int16()},
      {R"("int32")", int32()},
      {R"("int64")", int64()},
      {R"("uint8")", uint8()},
      {R"("uint16")", uint16()},
      {R"("uint32")", uint32()},
      {R"("uint64")", uint64()},
      {R"("float16")", float16()},
      {R"("float32")", float32()},
      {R"("float64")", float64()},
      {R"("date32")", date32()},
      {R"("date64")", date64()},
      {R"({"time32": "s"})", time32(time_unit::second)},
      {R"({"time32": "ms"})", time32(time_unit::milli)},
      {R"({"time64": "us"})", time64(time_unit::micro)},
      {R"({"time64": "ns"})", time64(time_unit::nano)},
      {R"({"timestamp": "s"})", timestamp(time_unit::second)},
      {R"({"timestamp": "ms", "tz": "+01:00"})", timestamp(time_unit::milli, "+01:00")},
      {R"({"tz": "UTC", "timestamp": "us"})", timestamp(time_unit::micro, "UTC")},
      {R"({"timestamp": "ns", "tz": "America/New_York"})", timestamp(time_unit::nano, "America/New_York")},
      {R"({"duration": "s"})", duration(time_unit::second)},
      {R"({"duration": "ms"})", duration(time_unit::milli)},
      {R"({"duration": "us"})", duration(time_unit::micro)},
      {R"({"duration": "ns"})", duration(time_unit::nano)},
      {R"({"decimal128": 20, "scale": 4})", decimal128(20, 4)},
      {R"({"decimal128": 38})", decimal128(38, 0)},
      {R"({"decimal128": 5, "scale": -3})", decimal128(5, -3)},
      {R"({"decimal256": 76, "scale": 76})", decimal256(76, 76)},
      {R"("utf8")", utf8()},
      {R"("string")", utf8()},
      {R"("large_utf8")", large_utf8()},
      {R"("large_string")", large_utf8()},
      {R"("binary")", binary()},
      {R"("large_binary")", large_binary()},
      {R"({"fixed_size_binary": 16})", fixed_size_binary(16)},
      {R"({"fixed_size_binary": 0})", fixed_size_binary(0)},
      {R"({"list": "int32"})", list(int32())},
      {R"({"large_list": "utf8"})", large_list(utf8())},
      {R"({"fixed_size_list": "float32", "size": 128})", fixed_size_list(float32(), 128)},
      {R"({"list": {"name": "element", "type": "int32", "nullable": false}})",
       list(field{"element", int32(), false, {}})},
      {R"({"list": {"list": {"fixed_size_list": "float16", "size": 2}}})",
       list(list(fixed_size_list(float16(), 2)))},
      {R"({"struct": [{"name": "a", "type": "int32"}, {"name": "b", "type": {"list": "utf8"}, "nullable": false}]})",
       struct_({field{"a", int32(), true, {}}, field{"b", list(utf8()), false, {}}})},
      {R"({"struct": []})", struct_({})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.json);
    auto s = one(c.json);
    REQUIRE(s->fields.size() == 1);
    CHECK(s->fields[0].name == "x");
    CHECK(s->fields[0].nullable);
    CHECK_MESSAGE(equals(*s->fields[0].type, *c.type), to_string(*s->fields[0].type));
    if (c.type->id == type_id::list && c.type->children[0].name == "element")
      CHECK(s->fields[0].type->children[0].name == "element");
  }
}

TEST_CASE("schema: nullability and metadata at every level") {
  auto s = json::parse_schema(R"({
    "fields": [
      {"name": "id", "type": "int64", "nullable": false, "metadata": {"lance-encoding:compression": "zstd"}},
      {"name": "s", "type": {"struct": [
        {"name": "a", "type": "int32", "nullable": false, "metadata": {"x": "1", "raw": {"base64": "/wA="}}}
      ]}, "nullable": true},
      {"name": "l", "type": {"list": {"name": "item", "type": "utf8", "metadata": {"m": ""}}}}
    ],
    "metadata": {"k": "v", "empty": "", "unicode": "\u00e9\u4e2d"}
  })");
  REQUIRE(s.fields.size() == 3);
  CHECK_FALSE(s.fields[0].nullable);
  CHECK(s.fields[0].metadata == metadata{{"lance-encoding:compression", "zstd"}});
  CHECK(s.fields[1].nullable);
  const auto& a = s.fields[1].type->children.at(0);
  CHECK_FALSE(a.nullable);
  CHECK(a.metadata == metadata{{"x", "1"}, {"raw", std::string("\xff\x00", 2)}});
  CHECK(s.fields[2].type->children.at(0).metadata == metadata{{"m", ""}});
  CHECK(s.metadata == metadata{{"k", "v"}, {"empty", ""}, {"unicode", "\xc3\xa9\xe4\xb8\xad"}});
}

TEST_CASE("schema: schema_to_json writes the short forms, exactly") {
  arrow::schema s;
  s.fields = {
      field{"id", int64(), false, {}},
      field{"ts", timestamp(time_unit::micro, "UTC"), true, {}},
      field{"t", time32(time_unit::milli), true, {}},
      field{"price", decimal128(20, 4), true, {}},
      field{"big", decimal256(40, 0), true, {}},
      field{"h", fixed_size_binary(16), true, {}},
      field{"v", fixed_size_list(float32(), 128), true, {}},
      field{"tags", list(utf8()), true, {{"a", "b"}}},
      field{"e", large_list(field{"element", int8(), false, {}}), true, {}},
      field{"s", struct_({field{"a", int32(), true, {}}, field{"b", null_type(), true, {}}}), true, {}},
  };
  s.metadata = {{"k", "v"}, {"bin", std::string("\x80\x01", 2)}, {"q", "say \"hi\"\n"}};
  const std::string pretty = R"({
  "fields": [
    {"name": "id", "type": "int64", "nullable": false},
    {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}},
    {"name": "t", "type": {"time32": "ms"}},
    {"name": "price", "type": {"decimal128": 20, "scale": 4}},
    {"name": "big", "type": {"decimal256": 40}},
    {"name": "h", "type": {"fixed_size_binary": 16}},
    {"name": "v", "type": {"fixed_size_list": "float32", "size": 128}},
    {"name": "tags", "type": {"list": "utf8"}, "metadata": {"a": "b"}},
    {"name": "e", "type": {"large_list": {"name": "element", "type": "int8", "nullable": false}}},
    {"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}, {"name": "b", "type": "null"}]}}
  ],
  "metadata": {"k": "v", "bin": {"base64": "gAE="}, "q": "say \"hi\"\n"}
}
)";
  CHECK(json::schema_to_json(s) == pretty);
  CHECK(json::schema_to_json(arrow::schema{}) == "{\n  \"fields\": []\n}\n");
  CHECK(json::schema_to_json(arrow::schema{{field{"a", int32(), true, {}}}, {}}, false) ==
        R"({"fields": [{"name": "a", "type": "int32"}]})");
  auto back = json::parse_schema(pretty);
  CHECK(json::schema_to_json(back) == pretty);
  CHECK(json::schema_to_json(back, false) == json::schema_to_json(json::parse_schema(json::schema_to_json(back, false)), false));
  CHECK(back.metadata == s.metadata);
  REQUIRE(back.fields.size() == s.fields.size());
  for (std::size_t i = 0; i < s.fields.size(); ++i) {
    CHECK(equals(back.fields[i], s.fields[i]));
    CHECK(back.fields[i].metadata == s.fields[i].metadata);
  }
  CHECK(back.fields[8].type->children[0].name == "element");
}

TEST_CASE("schema: random schemas round trip through JSON") {
  testing::random_data rd(42);
  const char* names[] = {"a", "b c", "ключ", "x.y", "", "\"q\"", "tab\t"};
  for (int round = 0; round < 300; ++round) {
    arrow::schema s;
    const auto n = 1 + rd.pick(6);
    for (std::size_t i = 0; i < n; ++i) {
      field f{numbered(names[rd.pick(7)], i), rd.random_type(), rd.coin(0.7), {}};
      if (rd.coin(0.3)) f.metadata.emplace_back(numbered("k", i), rd.coin(0.5) ? "v" : std::string("\xfe\x00", 2));
      s.fields.push_back(std::move(f));
    }
    if (rd.coin(0.5)) s.metadata.emplace_back("m", "n");
    const auto text = json::schema_to_json(s, rd.coin(0.5));
    auto back = json::parse_schema(text);
    REQUIRE(back.fields.size() == s.fields.size());
    for (std::size_t i = 0; i < s.fields.size(); ++i) {
      CAPTURE(text);
      CHECK(equals(back.fields[i], s.fields[i]));
      CHECK(back.fields[i].metadata == s.fields[i].metadata);
      CHECK(to_string(*back.fields[i].type) == to_string(*s.fields[i].type));  // item names too
    }
    CHECK(back.metadata == s.metadata);
  }
}

TEST_CASE("schema: read_schema_file names the file") {
  const std::string path = "test_json_schema.json";
  {
    std::ofstream out(path);
    out << R"({"fields": [{"name": "a", "type": "int33"}]})";
  }
  CHECK(message_of([&] { json::read_schema_file(path); }) ==
        "invalid input: test_json_schema.json: schema: field 'a': unknown type name \"int33\"");
  {
    std::ofstream out(path);
    out << R"({"fields": [{"name": "a", "type": "int32"}]})";
  }
  CHECK(json::read_schema_file(path).fields.at(0).type->id == type_id::int32);
  std::remove(path.c_str());
  CHECK(message_of<io_error>([&] { json::read_schema_file("no/such/schema.json"); }) ==
        "I/O error: cannot open schema file 'no/such/schema.json'");
}

TEST_CASE("schema: every error names the field and the problem") {
  struct tc {
    const char* json;
    const char* message;
  };
  const tc cases[] = {
      {R"([])", R"(schema: expected a JSON object with "fields", got an array)"},
      {R"({})", R"(schema: missing "fields")"},
      {R"({"fields": {}})", R"(schema: "fields" must be an array of fields, got an object)"},
      {R"({"fields": [], "field": 1})", R"(schema: unknown key "field" (expected "fields" or "metadata"))"},
      {R"({"fields": [], "fields": []})", R"(schema: key "fields" given twice)"},
      {R"({"fields": ["id"]})", R"(schema: fields[0]: expected a field object, got "id")"},
      {R"({"fields": [{"type": "int32"}]})", R"(schema: fields[0]: missing "name")"},
      {R"({"fields": [{"name": 3, "type": "int32"}]})", R"(schema: fields[0]: "name" must be a string, got 3)"},
      {R"({"fields": [{"name": "a", "name": "b", "type": "int32"}]})", R"(schema: fields[0]: key "name" given twice)"},
      {R"({"fields": [{"name": "a"}]})", R"(schema: field 'a': missing "type")"},
      {R"({"fields": [{"name": "a", "type": "int32"}, {"name": "a", "type": "utf8"}]})",
       R"(schema: field 'a': duplicate field name)"},
      {R"({"fields": [{"name": "a", "type": "int32", "nulable": false}]})",
       R"(schema: field 'a': unknown key "nulable" (expected "name", "type", "nullable" or "metadata"))"},
      {R"({"fields": [{"name": "a", "type": "int32", "nullable": "no"}]})",
       R"(schema: field 'a': "nullable" must be true or false, got "no")"},
      {R"({"fields": [{"name": "a", "type": "int33"}]})", R"(schema: field 'a': unknown type name "int33")"},
      {R"({"fields": [{"name": "a", "type": 5}]})", R"(schema: field 'a': expected a type name or a type object, got 5)"},
      {R"({"fields": [{"name": "a", "type": "timestamp"}]})",
       R"(schema: field 'a': type "timestamp" needs parameters, e.g. {"timestamp": "us", "tz": "UTC"})"},
      {R"({"fields": [{"name": "a", "type": "list"}]})",
       R"(schema: field 'a': type "list" needs parameters, e.g. {"list": "int32"})"},
      {R"({"fields": [{"name": "a", "type": {}}]})", R"(schema: field 'a': empty type object)"},
      {R"({"fields": [{"name": "a", "type": {"int32": true}}]})",
       R"(schema: field 'a': type "int32" takes no parameters: write "int32")"},
      {R"({"fields": [{"name": "a", "type": {"lst": "int32"}}]})", R"(schema: field 'a': unknown type name "lst")"},
      {R"({"fields": [{"name": "a", "type": {"size": 3}}]})",
       R"(schema: field 'a': type object has no type key (such as "list" or "timestamp"))"},
      {R"({"fields": [{"name": "a", "type": {"list": "int32", "struct": []}}]})",
       R"(schema: field 'a': type object has two type keys, "list" and "struct")"},
      {R"({"fields": [{"name": "a", "type": {"timestamp": "us", "timezone": "UTC"}}]})",
       R"(schema: field 'a': unknown key "timezone" in a timestamp type (allowed: "tz"))"},
      {R"({"fields": [{"name": "a", "type": {"list": "int32", "size": 3}}]})",
       R"(schema: field 'a': unknown key "size" in a list type (it takes none))"},
      {R"({"fields": [{"name": "a", "type": {"timestamp": "sec"}}]})",
       R"(schema: field 'a': bad time unit "sec" (expected "s", "ms", "us" or "ns"))"},
      {R"({"fields": [{"name": "a", "type": {"timestamp": 1}}]})", R"(schema: field 'a': timestamp unit must be a string, got 1)"},
      {R"({"fields": [{"name": "a", "type": {"timestamp": "us", "tz": 0}}]})", R"(schema: field 'a': "tz" must be a string, got 0)"},
      {R"({"fields": [{"name": "a", "type": {"time32": "us"}}]})", R"(schema: field 'a': time32 takes "s" or "ms", got "us")"},
      {R"({"fields": [{"name": "a", "type": {"time64": "s"}}]})", R"(schema: field 'a': time64 takes "us" or "ns", got "s")"},
      {R"({"fields": [{"name": "a", "type": {"decimal128": 39}}]})",
       R"(schema: field 'a': decimal128 precision must be an integer in [1, 38], got 39)"},
      {R"({"fields": [{"name": "a", "type": {"decimal256": 0}}]})",
       R"(schema: field 'a': decimal256 precision must be an integer in [1, 76], got 0)"},
      {R"({"fields": [{"name": "a", "type": {"decimal128": "10"}}]})",
       R"(schema: field 'a': decimal128 precision must be an integer in [1, 38], got "10")"},
      {R"({"fields": [{"name": "a", "type": {"decimal128": 10, "scale": 11}}]})",
       R"(schema: field 'a': "scale" must be an integer in [-128, 10], got 11)"},
      {R"({"fields": [{"name": "a", "type": {"decimal128": 10, "scale": 1.5}}]})",
       R"(schema: field 'a': "scale" must be an integer in [-128, 10], got 1.5)"},
      {R"({"fields": [{"name": "a", "type": {"fixed_size_binary": -1}}]})",
       R"(schema: field 'a': fixed_size_binary width must be an integer in [0, 2147483647], got -1)"},
      {R"({"fields": [{"name": "v", "type": {"fixed_size_list": "float32"}}]})",
       R"(schema: field 'v': fixed_size_list needs "size", e.g. {"fixed_size_list": "float32", "size": 128})"},
      {R"({"fields": [{"name": "v", "type": {"fixed_size_list": "float32", "size": 2147483648}}]})",
       R"(schema: field 'v': "size" must be an integer in [0, 2147483647], got 2147483648)"},
      {R"({"fields": [{"name": "v", "type": {"fixed_size_list": "float31", "size": 2}}]})",
       R"(schema: field 'v.item': unknown type name "float31")"},
      {R"({"fields": [{"name": "l", "type": {"list": {"name": "e", "type": "x"}}}]})",
       R"(schema: field 'l.e': unknown type name "x")"},
      {R"({"fields": [{"name": "l", "type": {"list": {"name": "e"}}}]})",
       R"(schema: field 'l.item': unknown type name "name")"},
      {R"({"fields": [{"name": "l", "type": {"list": {"list": {"timestamp": "m"}}}}]})",
       R"(schema: field 'l.item.item': bad time unit "m" (expected "s", "ms", "us" or "ns"))"},
      {R"({"fields": [{"name": "s", "type": {"struct": {"a": "int32"}}}]})",
       R"(schema: field 's': "struct" must be an array of fields, got an object)"},
      {R"({"fields": [{"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}, {"type": "int32"}]}}]})",
       R"(schema: field 's', member 1: missing "name")"},
      {R"({"fields": [{"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}, {"name": "a", "type": "int8"}]}}]})",
       R"(schema: field 's.a': duplicate field name)"},
      {R"({"fields": [{"name": "s", "type": {"struct": [{"name": "t", "type": {"struct": [{"name": "u", "type": "in"}]}}]}}]})",
       R"(schema: field 's.t.u': unknown type name "in")"},
      {R"({"fields": [], "metadata": []})", R"(schema: "metadata" must be an object of strings, got an array)"},
      {R"({"fields": [], "metadata": {"k": 1}})", R"(schema: metadata key "k": expected a string or {"base64": "..."}, got 1)"},
      {R"({"fields": [], "metadata": {"k": {"base64": "a!=="}}})",
       R"(schema: metadata key "k": invalid base64: character '!' at position 1 is not base64)"},
      {R"({"fields": [{"name": "a", "type": "int32", "metadata": {"k": null}}]})",
       R"(schema: field 'a', metadata key "k": expected a string or {"base64": "..."}, got null)"},
      {R"({"fields": [{"name": "a", "type": "int32", "metadata": {"k": "v", "k": "w"}}]})",
       R"(schema: field 'a': key "k" given twice)"},
      {R"({"fields": [)", R"(schema: malformed JSON at line 1, column 13: unexpected end of input; expected a value)"},
      {"{\"fields\": [\n  {\"name\": \"a\", \"type\": int32}\n]}",
       R"(schema: malformed JSON at line 2, column 25: unexpected 'i'; expected a value)"},
      {R"({"fields": []} x)",
       R"(schema: malformed JSON at line 1, column 16: unexpected 'x'; expected end of input after the value)"},
      {"", R"(schema: malformed JSON at line 1, column 1: unexpected end of input; expected a value)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.json);
    CHECK(schema_error(c.json) == std::string("invalid input: ") + c.message);
  }
}

TEST_CASE("schema: nesting is bounded") {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += R"({"list": )";
  deep += "\"int32\"";
  for (int i = 0; i < 300; ++i) deep += "}";
  CHECK(schema_error(R"({"fields": [{"name": "a", "type": )" + deep + "}]}") ==
        "invalid input: schema: malformed JSON: nested deeper than 256 levels");
  std::string ok;
  for (int i = 0; i < 70; ++i) ok += R"({"list": )";
  ok += "\"int32\"";
  for (int i = 0; i < 70; ++i) ok += "}";
  CHECK(schema_error(R"({"fields": [{"name": "a", "type": )" + ok + "}]}").find("nested more than 64 levels") !=
        std::string::npos);
}

TEST_CASE("schema: schema_to_json refuses what it cannot write") {
  CHECK(message_of([] { json::schema_to_json(arrow::schema{{field{"a", nullptr, true, {}}}, {}}); }) ==
        "invalid input: schema_to_json: field 'a' has no type");
  CHECK(message_of([] { json::schema_to_json(arrow::schema{{field{"a", time32(time_unit::nano), true, {}}}, {}}); }) ==
        "invalid input: type 'a': time32 takes seconds or milliseconds, not ns");
  CHECK(message_of([] { json::schema_to_json(arrow::schema{{field{"\xff", int32(), true, {}}}, {}}); }) ==
        "invalid input: schema_to_json: the name of field '\xff' is not valid UTF-8");
}

// ---- JSON Lines -> Arrow -> JSON Lines ----------------------------------------------

const char* every_type_schema = R"({"fields": [
  {"name": "n", "type": "null"},
  {"name": "b", "type": "bool"},
  {"name": "i8", "type": "int8"}, {"name": "i16", "type": "int16"},
  {"name": "i32", "type": "int32"}, {"name": "i64", "type": "int64"},
  {"name": "u8", "type": "uint8"}, {"name": "u16", "type": "uint16"},
  {"name": "u32", "type": "uint32"}, {"name": "u64", "type": "uint64"},
  {"name": "f16", "type": "float16"}, {"name": "f32", "type": "float32"}, {"name": "f64", "type": "float64"},
  {"name": "d32", "type": "date32"}, {"name": "d64", "type": "date64"},
  {"name": "t32", "type": {"time32": "ms"}}, {"name": "t64", "type": {"time64": "ns"}},
  {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}}, {"name": "dur", "type": {"duration": "s"}},
  {"name": "dec", "type": {"decimal128": 10, "scale": 4}}, {"name": "dec256", "type": {"decimal256": 76, "scale": 2}},
  {"name": "s", "type": "utf8"}, {"name": "ls", "type": "large_utf8"},
  {"name": "bin", "type": "binary"}, {"name": "lbin", "type": "large_binary"},
  {"name": "fsb", "type": {"fixed_size_binary": 3}},
  {"name": "fsl", "type": {"fixed_size_list": "int16", "size": 2}},
  {"name": "l", "type": {"list": "utf8"}},
  {"name": "ll", "type": {"large_list": {"list": "int32"}}},
  {"name": "st", "type": {"struct": [{"name": "a", "type": "int32"},
                                     {"name": "c", "type": {"struct": [{"name": "d", "type": "float64"}]}}]}},
  {"name": "ls2", "type": {"list": {"struct": [{"name": "x", "type": "int32"}, {"name": "y", "type": "utf8"}]}}}
]})";

TEST_CASE("rows: every type with nulls at every level, exact output") {
  auto s = schema_of(every_type_schema);
  const std::string in =
      R"({"n": null, "b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "i64": 9223372036854775807, )"
      R"("u8": 255, "u16": 65535, "u32": 4294967295, "u64": 18446744073709551615, "f16": 0.1, "f32": 0.1, )"
      R"("f64": 0.1, "d32": 19000, "d64": 1641600000000, "t32": 86399999, "t64": 86399999999999, )"
      R"("ts": 1700000000123456, "dur": -5, "dec": "-123.4500", )"
      R"("dec256": "12345678901234567890123456789012345678901234567890123456789012345678901234.56", )"
      R"("s": "h\u00e9llo \"q\"\n", "ls": "", "bin": "AAEC/w==", "lbin": "", "fsb": "YWJj", "fsl": [1, -2], )"
      R"("l": ["a", null, ""], "ll": [[1, 2], [], null, [null]], "st": {"a": 1, "c": {"d": 2.5}}, )"
      R"("ls2": [{"x": 1, "y": "p"}, null, {"x": null}, {}]})"
      "\n"
      "{}\n"
      R"({"st": {"a": null, "c": null}, "ls2": [], "l": [], "fsl": [null, 7], "ll": []})"
      "\n"
      R"({"st": {"c": {"d": null}}, "ls2": null, "l": null, "fsl": null, "ll": null})"
      "\n";
  const std::string expected =
      R"({"n":null,"b":true,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,)"
      R"("u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f16":0.1,"f32":0.1,)"
      R"("f64":0.1,"d32":19000,"d64":1641600000000,"t32":86399999,"t64":86399999999999,)"
      R"("ts":1700000000123456,"dur":-5,"dec":"-123.4500",)"
      R"("dec256":"12345678901234567890123456789012345678901234567890123456789012345678901234.56",)"
      R"("s":"h)"
      "\xc3\xa9"
      R"(llo \"q\"\n","ls":"","bin":"AAEC/w==","lbin":"","fsb":"YWJj","fsl":[1,-2],)"
      R"("l":["a",null,""],"ll":[[1,2],[],null,[null]],"st":{"a":1,"c":{"d":2.5}},)"
      R"("ls2":[{"x":1,"y":"p"},null,{"x":null,"y":null},{"x":null,"y":null}]})"
      "\n"
      R"({"n":null,"b":null,"i8":null,"i16":null,"i32":null,"i64":null,"u8":null,"u16":null,"u32":null,)"
      R"("u64":null,"f16":null,"f32":null,"f64":null,"d32":null,"d64":null,"t32":null,"t64":null,"ts":null,)"
      R"("dur":null,"dec":null,"dec256":null,"s":null,"ls":null,"bin":null,"lbin":null,"fsb":null,"fsl":null,)"
      R"("l":null,"ll":null,"st":null,"ls2":null})"
      "\n"
      R"({"n":null,"b":null,"i8":null,"i16":null,"i32":null,"i64":null,"u8":null,"u16":null,"u32":null,)"
      R"("u64":null,"f16":null,"f32":null,"f64":null,"d32":null,"d64":null,"t32":null,"t64":null,"ts":null,)"
      R"("dur":null,"dec":null,"dec256":null,"s":null,"ls":null,"bin":null,"lbin":null,"fsb":null,"fsl":[null,7],)"
      R"("l":[],"ll":[],"st":{"a":null,"c":null},"ls2":[]})"
      "\n"
      R"({"n":null,"b":null,"i8":null,"i16":null,"i32":null,"i64":null,"u8":null,"u16":null,"u32":null,)"
      R"("u64":null,"f16":null,"f32":null,"f64":null,"d32":null,"d64":null,"t32":null,"t64":null,"ts":null,)"
      R"("dur":null,"dec":null,"dec256":null,"s":null,"ls":null,"bin":null,"lbin":null,"fsb":null,"fsl":null,)"
      R"("l":null,"ll":null,"st":{"a":null,"c":{"d":null}},"ls2":null})"
      "\n";
  auto rb = json::read_rows(s, in);
  CHECK(rb.num_rows() == 4);
  validate(rb);
  const auto out = json::rows_to_json(rb);
  CHECK(out == expected);
  // The output reads back to the same arrays and the same text.
  auto again = json::read_rows(s, out);
  CHECK_MESSAGE(batch_equals(rb, again), first_difference(rb, again).value_or(""));
  CHECK(json::rows_to_json(again) == expected);
  // Spot checks on the arrays themselves.
  const auto& st = *rb.columns[29];
  CHECK(st.is_valid(0));
  CHECK(st.is_null(1));
  CHECK(st.children[1]->is_null(2));  // st.c null in row 2
  CHECK(rb.columns[12]->value<double>(0) == 0.1);
  CHECK(rb.columns[11]->value<float>(0) == 0.1f);
}

TEST_CASE("rows: tricky values print exactly") {
  // floats
  CHECK(x_text(make_array<float>({0.1f})) == "0.1");
  CHECK(x_text(make_array<float>({1.0f / 3})) == "0.33333334");
  CHECK(x_text(make_array<float>({16777216.0f})) == "16777216");
  CHECK(x_text(make_array<float>({std::numeric_limits<float>::max()})) == "3.4028235e+38");
  CHECK(x_text(make_array<float>({std::numeric_limits<float>::denorm_min()})) == "1e-45");
  CHECK(x_text(make_array<double>({1e300})) == "1e+300");
  CHECK(x_text(make_array<double>({-0.0})) == "-0");
  CHECK(x_text(make_array<double>({0.0})) == "0");
  CHECK(x_text(make_array<float>({-0.0f})) == "-0");
  CHECK(x_text(make_array<double>({std::nan("")})) == "\"NaN\"");
  CHECK(x_text(make_array<double>({-std::numeric_limits<double>::quiet_NaN()})) == "\"NaN\"");
  CHECK(x_text(make_array<float>({std::numeric_limits<float>::infinity()})) == "\"Infinity\"");
  CHECK(x_text(make_array<double>({-std::numeric_limits<double>::infinity()})) == "\"-Infinity\"");
  CHECK(x_text(make_array<double>({0.1 + 0.2})) == "0.30000000000000004");
  CHECK(x_text(make_array<double>({1e21})) == "1e+21");
  CHECK(x_text(make_array<double>({1e20})) == "100000000000000000000");
  CHECK(x_text(make_array<double>({123456789012.5})) == "123456789012.5");
  CHECK(x_text(make_array<double>({1e-6})) == "0.000001");
  CHECK(x_text(make_array<double>({1e-7})) == "1e-7");
  CHECK(x_text(make_array<double>({-1.5e-10})) == "-1.5e-10");
  CHECK(x_text(make_array<double>({std::numeric_limits<double>::max()})) == "1.7976931348623157e+308");
  CHECK(x_text(make_array<double>({std::numeric_limits<double>::denorm_min()})) == "5e-324");
  // float16: shortest at half width
  CHECK(x_text(float16_array({0.1f})) == "0.1");
  CHECK(x_text(float16_array({65504.0f})) == "65500");  // the shortest text that reads back as 65504
  CHECK(x_text(float16_array({2049.0f})) == "2048");
  CHECK(x_text(float16_array({1.0f / 3})) == "0.3333");
  CHECK(x_text(float16_array({std::ldexp(1.0f, -24)})) == "6e-8");
  CHECK(x_text(float16_array({-2.5f})) == "-2.5");
  CHECK(x_text(float16_array({-0.0f})) == "-0");
  CHECK(x_text(float16_array({std::numeric_limits<float>::infinity()})) == "\"Infinity\"");
  CHECK(x_text(float16_array({std::nanf("")})) == "\"NaN\"");
  // integers
  CHECK(x_text(make_array<std::int64_t>({std::numeric_limits<std::int64_t>::min()})) == "-9223372036854775808");
  CHECK(x_text(make_array<std::int64_t>({std::numeric_limits<std::int64_t>::max()})) == "9223372036854775807");
  CHECK(x_text(make_array<std::uint64_t>({std::numeric_limits<std::uint64_t>::max()})) == "18446744073709551615");
  CHECK(x_text(make_array<std::int8_t>({-128})) == "-128");
  // decimals: scale applied, negative values, negative scales, decimal256 beyond 128 bits
  CHECK(x_text(decimal128_array(20, 4, {-12345})) == "\"-1.2345\"");
  CHECK(x_text(decimal128_array(20, 4, {-1})) == "\"-0.0001\"");
  CHECK(x_text(decimal128_array(20, 4, {0})) == "\"0.0000\"");
  CHECK(x_text(decimal128_array(20, 4, {1234500})) == "\"123.4500\"");
  CHECK(x_text(decimal128_array(38, 0, {-7})) == "\"-7\"");
  CHECK(x_text(decimal128_array(5, -2, {123})) == "\"12300\"");
  CHECK(x_text(decimal128_array(5, -2, {0})) == "\"000\"");
  {
    auto a = json::read_rows(one(R"({"decimal256": 76, "scale": 4})"),
                             R"({"x": "-999999999999999999999999999999999999999999999999999999999999999999999999.9999"})");
    CHECK(json::rows_to_json(a) ==
          R"({"x":"-999999999999999999999999999999999999999999999999999999999999999999999999.9999"})" "\n");
  }
  // binary as base64: every byte value, and the three padding cases
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(char(i));
  CHECK(x_text(binary_array({std::string_view(all)})) ==
        "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9Q"
        "UVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6Ch"
        "oqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy"
        "8/T19vf4+fr7/P3+/w==\"");
  CHECK(x_text(binary_array({std::string_view("\xfb\xff", 2)})) == "\"+/8=\"");
  CHECK(x_text(large_binary_array({std::string_view("a")})) == "\"YQ==\"");
  CHECK(x_text(fixed_size_binary_array(3, {std::string_view("\0\0\0", 3)})) == "\"AAAA\"");
  // strings: JSON.stringify's escapes, UTF-8 kept
  CHECK(x_text(string_array({std::string_view("a\"b\\c\b\f\n\r\t\x01\x1f/\x7f\xe2\x82\xac")})) ==
        "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f/\x7f\xe2\x82\xac\"");
  // timestamps and friends as integers in their unit
  CHECK(x_text(make_array<std::int64_t>({-1}, timestamp(time_unit::nano, "UTC"))) == "-1");
  CHECK(x_text(make_array<std::int64_t>({std::numeric_limits<std::int64_t>::min()}, duration(time_unit::nano))) ==
        "-9223372036854775808");
  CHECK(x_text(make_array<std::int32_t>({-719162}, date32())) == "-719162");
}

TEST_CASE("rows: canonical form writes 64-bit integers as strings, reads them back") {
  auto s = schema_of(R"({"fields": [{"name": "i", "type": "int64"}, {"name": "u", "type": "uint64"},
                                    {"name": "t", "type": {"timestamp": "ns"}}, {"name": "l", "type": {"list": "int64"}}]})");
  const std::string in = R"({"i": -9223372036854775808, "u": 18446744073709551615, "t": 5, "l": [1, null]})";
  CHECK(through(s, in, json::write_options::canonical()) ==
        R"({"i":"-9223372036854775808","u":"18446744073709551615","t":5,"l":["1",null]})" "\n");
  CHECK(through(s, in) == R"({"i":-9223372036854775808,"u":18446744073709551615,"t":5,"l":[1,null]})" "\n");
  const std::string canonical = R"({"i":"-9223372036854775808","u":"18446744073709551615","t":"5","l":["1",null]})";
  CHECK(through(s, canonical) == R"({"i":-9223372036854775808,"u":18446744073709551615,"t":5,"l":[1,null]})" "\n");
}

TEST_CASE("rows: accepted input forms") {
  // integers written with a fraction or an exponent, when integral
  CHECK(through(one("\"int32\""), R"({"x": 1e3})" "\n" R"({"x": 2.0})" "\n" R"({"x": -0})" "\n" R"({"x": 120e-1})") ==
        "{\"x\":1000}\n{\"x\":2}\n{\"x\":0}\n{\"x\":12}\n");
  CHECK(through(one("\"uint64\""), R"({"x": 1.8446744073709551615e19})") == "{\"x\":18446744073709551615}\n");
  CHECK(through(one("\"int64\""), R"({"x": "-42"})") == "{\"x\":-42}\n");
  CHECK(through(one(R"({"duration": "ms"})"), R"({"x": "-42"})") == "{\"x\":-42}\n");
  // floats from integers, exponents, and the special strings
  CHECK(through(one("\"float64\""), R"({"x": 3})" "\n" R"({"x": "NaN"})" "\n" R"({"x": "-Infinity"})" "\n" R"({"x": 1E2})") ==
        "{\"x\":3}\n{\"x\":\"NaN\"}\n{\"x\":\"-Infinity\"}\n{\"x\":100}\n");
  CHECK(through(one("\"float32\""), R"({"x": 1e-50})" "\n" R"({"x": -1e-50})") == "{\"x\":0}\n{\"x\":-0}\n");
  CHECK(through(one("\"float16\""), R"({"x": 65519})" "\n" R"({"x": 1e-10})") == "{\"x\":65500}\n{\"x\":0}\n");
  // -0 keeps its sign in float columns (the parser keeps it as text, not the integer 0)
  CHECK(through(schema_of(R"({"fields": [{"name": "s", "type": "utf8"}, {"name": "f", "type": {"list": "float64"}},
                                         {"name": "h", "type": "float16"}, {"name": "i", "type": "int32"}]})"),
                R"({"s": "-0 \"-0", "f": [0, -0, -0.0, 1, -0], "h": -0, "i": -0})") ==
        "{\"s\":\"-0 \\\"-0\",\"f\":[0,-0,-0,1,-0],\"h\":-0,\"i\":0}\n");
  // decimals from strings, integers and numbers, exact; trailing zeros beyond the scale are fine
  CHECK(through(one(R"({"decimal128": 6, "scale": 2})"),
                R"({"x": 12})" "\n" R"({"x": -1.5})" "\n" R"({"x": "0.100"})" "\n" R"({"x": "-9999.99"})" "\n"
                R"({"x": 1.5e2})" "\n" R"({"x": "+3"})") ==
        "{\"x\":\"12.00\"}\n{\"x\":\"-1.50\"}\n{\"x\":\"0.10\"}\n{\"x\":\"-9999.99\"}\n{\"x\":\"150.00\"}\n{\"x\":\"3.00\"}\n");
  CHECK(through(one(R"({"decimal128": 38})"), R"({"x": 99999999999999999999999999999999999999})") ==
        "{\"x\":\"99999999999999999999999999999999999999\"}\n");
  CHECK(through(one(R"({"decimal128": 3, "scale": -2})"), R"({"x": 12300})" "\n" R"({"x": "-99900"})") ==
        "{\"x\":\"12300\"}\n{\"x\":\"-99900\"}\n");
  // base64 without padding
  CHECK(through(one("\"binary\""), R"({"x": "YQ"})" "\n" R"({"x": "YWI"})") == "{\"x\":\"YQ==\"}\n{\"x\":\"YWI=\"}\n");
  // whitespace, CRLF line ends, blank lines, member order
  CHECK(through(schema_of(R"({"fields": [{"name": "a", "type": "int8"}, {"name": "b", "type": "utf8"}]})"),
                "  {\"b\": \"x\" ,\"a\":1}  \r\n\r\n\n\t\n{\"a\":2}") == "{\"a\":1,\"b\":\"x\"}\n{\"a\":2,\"b\":null}\n");
  // a UTF-8 byte order mark on the first line
  CHECK(through(one("\"int8\""), "\xEF\xBB\xBF{\"x\": 1}") == "{\"x\":1}\n");
  // the null type takes null whatever its nullability says
  CHECK(through(one("\"null\"", false), R"({"x": null})" "\n" "{}") == "{\"x\":null}\n{\"x\":null}\n");
}

TEST_CASE("rows: floats are read with one correct rounding") {
  // Half way between 1 and the next float32, nudged up: a double in between would round to 1.
  auto a = json::read_rows(one("\"float32\""), R"({"x": 1.0000000596046448})");
  CHECK(float_bits(a.columns[0]->value<float>(0)) == 0x3F800001u);
  auto b = json::read_rows(one("\"float32\""), R"({"x": 0.1})" "\n" R"({"x": 3.4028235e38})" "\n" R"({"x": 16777217})");
  CHECK(b.columns[0]->value<float>(0) == 0.1f);
  CHECK(b.columns[0]->value<float>(1) == std::numeric_limits<float>::max());
  CHECK(b.columns[0]->value<float>(2) == 16777216.0f);
  // float16: just above the midpoint between 1 and 1 + 2^-10 rounds up, the midpoint itself to even.
  auto h = json::read_rows(one("\"float16\""), R"({"x": 1.000488281250001})" "\n" R"({"x": 1.00048828125})" "\n"
                                               R"({"x": 0.1})" "\n" R"({"x": "Infinity"})");
  CHECK(h.columns[0]->value<std::uint16_t>(0) == 0x3C01);
  CHECK(h.columns[0]->value<std::uint16_t>(1) == 0x3C00);
  CHECK(h.columns[0]->value<std::uint16_t>(2) == 0x2E66);
  CHECK(h.columns[0]->value<std::uint16_t>(3) == 0x7C00);
  auto d = json::read_rows(one("\"float64\""), R"({"x": 9007199254740993})" "\n" R"({"x": 2.2250738585072011e-308})");
  CHECK(d.columns[0]->value<double>(0) == 9007199254740992.0);
  CHECK(d.columns[0]->value<double>(1) == 2.2250738585072011e-308);
}

TEST_CASE("rows: every float16 and many float32/float64 values read back bit for bit") {
  // Every half (NaN payloads aside) in one column, written and read back.
  primitive_builder<std::uint16_t> hb(float16());
  for (std::uint32_t h = 0; h < 65536; ++h)
    if ((h & 0x7C00u) != 0x7C00u || (h & 0x3FFu) == 0) hb.append(std::uint16_t(h));
  auto halves = hb.finish();
  std::mt19937_64 rng(7);
  std::vector<float> fs;
  std::vector<double> ds;
  while (fs.size() < 200000) {
    const float f = std::bit_cast<float>(std::uint32_t(rng()));
    if (std::isfinite(f)) fs.push_back(f);
  }
  while (ds.size() < 200000) {
    const double d = std::bit_cast<double>(rng());
    if (std::isfinite(d)) ds.push_back(d);
  }
  auto s = schema_of(R"({"fields": [{"name": "x", "type": "float16"}]})");
  auto back = json::read_rows(s, json::rows_to_json(make_batch({{"x", halves}})));
  CHECK_MESSAGE(array_equals(back.columns[0], halves), first_difference(back.columns[0], halves).value_or(""));
  auto f32 = make_array<float>(fs);
  auto f64 = make_array<double>(ds);
  auto s2 = schema_of(R"({"fields": [{"name": "f", "type": "float32"}, {"name": "d", "type": "float64"}]})");
  auto back2 = json::read_rows(s2, json::rows_to_json(make_batch({{"f", f32}, {"d", f64}})));
  CHECK_MESSAGE(array_equals(back2.columns[0], f32), first_difference(back2.columns[0], f32).value_or(""));
  CHECK_MESSAGE(array_equals(back2.columns[1], f64), first_difference(back2.columns[1], f64).value_or(""));
}

TEST_CASE("rows: float32 and float16 texts follow LanceDB's canonical choice on ties") {
  // 2^-7 as a half: 4 digits "0.0078125" -> "0.007813" (halves round up, as
  // JavaScript's toPrecision does), not "0.007812".
  CHECK(x_text(float16_array({0.0078125f})) == "0.007813");
  CHECK(x_text(float16_array({0.015625f})) == "0.01563");
  CHECK(x_text(float16_array({-2.0625f})) == "-2.063");
  CHECK(x_text(float16_array({1.0f})) == "1");
  CHECK(x_text(make_array<float>({0.15625f})) == "0.15625");
  CHECK(x_text(make_array<float>({1e10f})) == "10000000000");
  CHECK(x_text(make_array<float>({3e-7f})) == "3e-7");
}

TEST_CASE("rows: non-nullable members under a null parent hold defaults, never nulls") {
  auto s = schema_of(R"({"fields": [
    {"name": "s", "type": {"struct": [{"name": "a", "type": "int32", "nullable": false},
                                      {"name": "t", "type": {"struct": [{"name": "u", "type": "utf8", "nullable": false}]}, "nullable": false},
                                      {"name": "v", "type": {"fixed_size_list": {"name": "item", "type": "float32", "nullable": false}, "size": 2}, "nullable": false},
                                      {"name": "l", "type": {"list": "int8"}, "nullable": false},
                                      {"name": "n", "type": "int8"}]}},
    {"name": "f", "type": {"fixed_size_list": {"name": "item", "type": "int16", "nullable": false}, "size": 3}}]})");
  auto rb = json::read_rows(s, R"({"s": null, "f": null})" "\n"
                               R"({"s": {"a": 1, "t": {"u": "x"}, "v": [1, 2], "l": [3]}, "f": [1, 2, 3]})");
  validate(rb);
  const auto& st = *rb.columns[0];
  CHECK(st.is_null(0));
  for (int c = 0; c < 4; ++c) CHECK(st.children[std::size_t(c)]->count_nulls() == 0);
  CHECK(st.children[4]->is_null(0));
  CHECK(st.children[0]->value<std::int32_t>(0) == 0);
  CHECK(st.children[1]->children[0]->string_value(0) == "");
  CHECK(st.children[2]->children[0]->length == 4);
  CHECK(st.children[2]->children[0]->count_nulls() == 0);
  CHECK(st.children[3]->value_offset(1) == 0);
  CHECK(rb.columns[1]->children[0]->length == 6);
  CHECK(rb.columns[1]->children[0]->count_nulls() == 0);
  CHECK(json::rows_to_json(rb) ==
        R"({"s":null,"f":null})" "\n"
        R"({"s":{"a":1,"t":{"u":"x"},"v":[1,2],"l":[3],"n":null},"f":[1,2,3]})" "\n");
}

TEST_CASE("rows: random batches of every type round trip (JSON -> Arrow -> JSON)") {
  // JSON cannot carry invalid UTF-8 in utf8 columns or decimals beyond their
  // precision: the generator's values are brought into range first.
  std::function<array_ptr(const array_ptr&)> tame = [&](const array_ptr& a) -> array_ptr {
    auto c = std::make_shared<array_data>(*a);
    for (auto& ch : c->children) ch = tame(ch);
    const auto id = a->type->id;
    if ((id == type_id::utf8 || id == type_id::large_utf8) && a->buffers.size() == 3 && a->buffers[2]) {
      aligned_buffer b;
      for (auto byte : a->buffers[2].view()) b.push_back(std::uint8_t('a' + byte % 26));
      c->buffers[2] = shared_bytes(std::move(b));
    }
    if (id == type_id::decimal128 && a->buffers[1]) {
      int128_t limit = 1;
      for (int i = 0; i < a->type->precision; ++i) limit *= 10;
      aligned_buffer b;
      b.append(a->buffers[1].view());
      for (std::size_t off = 0; off + 16 <= b.size(); off += 16) {
        auto v = decimal128_from_bytes(b.data() + off) % limit;
        auto bytes = decimal128_bytes(v);
        std::memcpy(b.data() + off, bytes.data(), 16);
      }
      c->buffers[1] = shared_bytes(std::move(b));
    }
    return c;
  };
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    testing::random_data rd(seed);
    auto s = std::make_shared<arrow::schema>();
    std::vector<array_ptr> cols;
    const auto rows = std::int64_t(rd.pick(40));
    const auto n = 1 + rd.pick(5);
    for (std::size_t i = 0; i < n; ++i) {
      auto t = rd.random_type();
      const bool nullable = rd.coin(0.8);
      s->fields.push_back(field{numbered("c", i), t, nullable, {}});
      cols.push_back(tame(rd.random_sliced_array(t, rows, nullable)));
    }
    auto rb = make_batch(s, cols);
    validate(rb);
    CAPTURE(json::schema_to_json(*s));
    const auto text = json::rows_to_json(rb);
    auto parsed_schema = std::make_shared<const arrow::schema>(json::parse_schema(json::schema_to_json(*s)));
    auto back = json::read_rows(parsed_schema, text);
    validate(back);
    CHECK(back.num_rows() == rows);
    CHECK_MESSAGE(batch_equals(rb, back), first_difference(rb, back).value_or(""));
    CHECK(json::rows_to_json(back) == text);
    CHECK(json::rows_to_json(back, json::write_options::canonical()) ==
          json::rows_to_json(rb, json::write_options::canonical()));
  }
}

// ---- errors ---------------------------------------------------------------------------

TEST_CASE("rows: every error names the line, the field and the problem") {
  auto s = schema_of(R"({"fields": [
    {"name": "id", "type": "int64", "nullable": false},
    {"name": "i8", "type": "int8"}, {"name": "u64", "type": "uint64"}, {"name": "u8", "type": "uint8"},
    {"name": "f", "type": "float32"}, {"name": "h", "type": "float16"}, {"name": "d", "type": "float64"},
    {"name": "b", "type": "bool"}, {"name": "str", "type": "utf8"}, {"name": "bin", "type": "binary"},
    {"name": "fsb", "type": {"fixed_size_binary": 4}},
    {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}}, {"name": "t32", "type": {"time32": "s"}},
    {"name": "dec", "type": {"decimal128": 6, "scale": 4}}, {"name": "decn", "type": {"decimal128": 3, "scale": -2}},
    {"name": "v", "type": {"fixed_size_list": "float32", "size": 3}},
    {"name": "tags", "type": {"list": {"name": "item", "type": "utf8", "nullable": false}}},
    {"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}, {"name": "r", "type": "int8", "nullable": false}]}},
    {"name": "ls", "type": {"list": {"struct": [{"name": "x", "type": "int32"}]}}},
    {"name": "n", "type": "null"}
  ]})");
  struct tc {
    const char* row;
    const char* message;
  };
  const tc cases[] = {
      // malformed JSON
      {R"({"id": 1,})", "column 10: malformed JSON: unexpected '}'; expected a member name (a string)"},
      {R"({"id": 1)", "column 9: malformed JSON: unexpected end of input; expected ',' or '}'"},
      {R"({"id": 1} {"id": 2})", "column 11: malformed JSON: unexpected '{'; expected end of input after the value"},
      {R"({"id": NaN})", "column 8: malformed JSON: unexpected 'N'; expected a value"},
      {"{\"id\": 1, \"str\": \"\xff\"}", "column 19: malformed JSON: invalid string: ill-formed UTF-8 byte 0xff"},
      {R"([1, 2])", "expected a JSON object, got an array"},
      {R"("row")", "expected a JSON object, got \"row\""},
      {"42", "expected a JSON object, got 42"},
      // missing / null non-nullable values
      {R"({})", "field 'id': missing value for a non-nullable field"},
      {R"({"id": null})", "field 'id': null for a non-nullable field"},
      {R"({"id": 1, "s": {"a": 1}})", "field 's.r': missing value for a non-nullable field"},
      {R"({"id": 1, "s": {"r": null}})", "field 's.r': null for a non-nullable field"},
      {R"({"id": 1, "tags": ["a", null]})", "field 'tags[1]': null for a non-nullable field"},
      // unknown and repeated members
      {R"({"id": 1, "zz": 1})", "field 'zz': no such field in the schema"},
      {R"({"id": 1, "s": {"r": 1, "q": 2}})", "field 's.q': no such field in the schema"},
      {R"({"id": 1, "id": 2})", "field 'id': given twice"},
      {R"({"id": 1, "ls": [{"x": 1, "x": 2}]})", "field 'ls[0].x': given twice"},
      // integers
      {R"({"id": "x"})", "field 'id': expected an integer, got \"x\""},
      {R"({"id": 1.5})", "field 'id': expected an integer, got 1.5"},
      {R"({"id": true})", "field 'id': expected an integer, got true"},
      {R"({"id": [1]})", "field 'id': expected an integer, got an array"},
      {R"({"id": "1.0"})", "field 'id': expected an integer, got \"1.0\""},
      {R"({"id": " 1"})", "field 'id': expected an integer, got \" 1\""},
      {R"({"id": "9223372036854775808"})", "field 'id': \"9223372036854775808\" is out of range for int64"},
      {R"({"id": -9223372036854775809})", "field 'id': -9223372036854775809 is out of range for int64"},
      {R"({"id": 1e30})", "field 'id': 1e30 is out of range for int64"},
      {R"({"id": 1, "i8": 128})", "field 'i8': 128 is out of range for int8"},
      {R"({"id": 1, "i8": "1"})", "field 'i8': expected an integer, got \"1\""},
      {R"({"id": 1, "u8": -1})", "field 'u8': -1 is out of range for uint8"},
      {R"({"id": 1, "u64": 18446744073709551616})", "field 'u64': 18446744073709551616 is out of range for uint64"},
      {R"({"id": 1, "u64": "-1"})", "field 'u64': \"-1\" is out of range for uint64"},
      {R"({"id": 1, "t32": 2147483648})", "field 't32': 2147483648 is out of range for time32[s]"},
      {R"({"id": 1, "ts": "soon"})", "field 'ts': expected an integer, got \"soon\""},
      {R"({"id": 1, "ts": 1.5})", "field 'ts': expected an integer, got 1.5"},
      // floats
      {R"({"id": 1, "f": "1.5"})", "field 'f': expected a number, got \"1.5\" (the only strings taken are \"NaN\", \"Infinity\" and \"-Infinity\")"},
      {R"({"id": 1, "f": "nan"})", "field 'f': expected a number, got \"nan\" (the only strings taken are \"NaN\", \"Infinity\" and \"-Infinity\")"},
      {R"({"id": 1, "f": false})", "field 'f': expected a number, got false"},
      {R"({"id": 1, "f": 1e39})", "field 'f': 1e39 is out of range for float32"},
      {R"({"id": 1, "d": -1e309})", "field 'd': the number -1e309 is out of range"},
      {R"({"id": 1, "ls": [{"x": 1}, {"x": 1e400}]})", "field 'ls[1].x': the number 1e400 is out of range"},
      {R"({"id": 1, "h": 65520})", "field 'h': 65520 is out of range for float16"},
      {R"({"id": 1, "h": {}})", "field 'h': expected a number, got an object"},
      // bool, strings, binary
      {R"({"id": 1, "b": 1})", "field 'b': expected true or false, got 1"},
      {R"({"id": 1, "b": "true"})", "field 'b': expected true or false, got \"true\""},
      {R"({"id": 1, "str": 5})", "field 'str': expected a string, got 5"},
      {R"({"id": 1, "bin": [1, 2]})", "field 'bin': expected a base64 string, got an array"},
      {R"({"id": 1, "bin": "ab$d"})", "field 'bin': invalid base64: character '$' at position 2 is not base64"},
      {R"({"id": 1, "bin": "abcde"})", "field 'bin': invalid base64: length 5 is not a valid base64 length"},
      {R"({"id": 1, "bin": "ab="})", "field 'bin': invalid base64: padding '=' must make the length a multiple of 4"},
      {R"({"id": 1, "bin": "YR=="})", "field 'bin': invalid base64: the last character has bits set past the end of the data"},
      {R"({"id": 1, "bin": "a-_b"})", "field 'bin': invalid base64: character '-' at position 1 is not base64"},
      {R"({"id": 1, "fsb": "YWJj"})", "field 'fsb': expected 4 bytes, got 3"},
      {R"({"id": 1, "fsb": 7})", "field 'fsb': expected a base64 string, got 7"},
      // decimals
      {R"({"id": 1, "dec": "1.23456"})", "field 'dec': \"1.23456\" has more than 4 fractional digits (decimal128(6, 4))"},
      {R"({"id": 1, "dec": 100})", "field 'dec': 100 does not fit decimal128(6, 4) (more than 6 digits)"},
      {R"({"id": 1, "dec": "-12.5e1"})", "field 'dec': \"-12.5e1\" does not fit decimal128(6, 4) (more than 6 digits)"},
      {R"({"id": 1, "dec": "12,5"})", "field 'dec': expected a decimal string or number, got \"12,5\""},
      {R"({"id": 1, "dec": ""})", "field 'dec': expected a decimal string or number, got \"\""},
      {R"({"id": 1, "dec": true})", "field 'dec': expected a decimal string or number, got true"},
      {R"({"id": 1, "decn": 12345})", "field 'decn': 12345 is not a multiple of 100 (decimal128(3, -2))"},
      {R"({"id": 1, "decn": 100000})", "field 'decn': 100000 does not fit decimal128(3, -2) (more than 3 digits)"},
      // lists, fixed-size lists, structs
      {R"({"id": 1, "v": [1, 2]})", "field 'v': expected an array of 3 items, got 2"},
      {R"({"id": 1, "v": [1, 2, "x"]})", "field 'v[2]': expected a number, got \"x\" (the only strings taken are \"NaN\", \"Infinity\" and \"-Infinity\")"},
      {R"({"id": 1, "v": {"0": 1}})", "field 'v': expected an array, got an object"},
      {R"({"id": 1, "tags": "a"})", "field 'tags': expected an array, got \"a\""},
      {R"({"id": 1, "tags": ["a", 2]})", "field 'tags[1]': expected a string, got 2"},
      {R"({"id": 1, "s": [1]})", "field 's': expected an object, got an array"},
      {R"({"id": 1, "s": {"a": "x", "r": 1}})", "field 's.a': expected an integer, got \"x\""},
      {R"({"id": 1, "ls": [{"x": 1}, {"x": "y"}]})", "field 'ls[1].x': expected an integer, got \"y\""},
      {R"({"id": 1, "ls": [{"x": 1}, 5]})", "field 'ls[1]': expected an object, got 5"},
      {R"({"id": 1, "n": 0})", "field 'n': expected null, got 0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.row);
    const std::string want = std::string("invalid input: line 2") + (c.message[0] == 'c' || c.message[0] == 'f' ? ", " : ": ") +
                             c.message;
    CHECK(row_error(s, std::string("{\"id\": 0}\n") + c.row + "\n{\"id\": 3}") == want);
  }
  // A long string is cut in the message.
  CHECK(row_error(s, R"({"id": "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"})") ==
        "invalid input: line 1, field 'id': expected an integer, got \"abcdefghijklmnopqrstuvwxyzabcdefghijklmn\"...");
  // Deep input is refused, not recursed into.
  std::string deep = "{\"id\": 1, \"tags\": ";
  for (int i = 0; i < 1000; ++i) deep += "[";
  CHECK(row_error(s, deep) == "invalid input: line 1: malformed JSON: nested deeper than 256 levels");
}

TEST_CASE("rows: unknown members can be ignored") {
  auto s = schema_of(R"({"fields": [{"name": "a", "type": "int8"}, {"name": "s", "type": {"struct": [{"name": "b", "type": "int8"}]}}]})");
  json::read_options o;
  o.ignore_unknown_fields = true;
  auto rb = json::read_rows(s, R"({"a": 1, "zz": [1, {"q": 2}], "s": {"b": 2, "c": "x"}})", o);
  CHECK(json::rows_to_json(rb) == "{\"a\":1,\"s\":{\"b\":2}}\n");
}

// ---- streaming -------------------------------------------------------------------------

TEST_CASE("rows_reader: batches of batch_size rows, line numbers count blank lines") {
  auto s = schema_of(R"({"fields": [{"name": "a", "type": "int32", "nullable": false}]})");
  std::istringstream in("{\"a\": 1}\n\n{\"a\": 2}\n{\"a\": 3}\n   \n{\"a\": 4}\n{\"a\": 5}");
  json::read_options o;
  o.batch_size = 2;
  json::rows_reader r(s, in, o);
  std::vector<std::int64_t> sizes;
  std::string text;
  while (auto b = r.next()) {
    sizes.push_back(b->num_rows());
    CHECK(b->schema == s);
    text += json::rows_to_json(*b);
  }
  CHECK(sizes == std::vector<std::int64_t>{2, 2, 1});
  CHECK(text == "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n{\"a\":5}\n");
  CHECK(r.lines_read() == 7);
  CHECK_FALSE(r.next().has_value());

  std::istringstream empty("\n\n");
  json::rows_reader r2(s, empty);
  CHECK_FALSE(r2.next().has_value());
}

TEST_CASE("rows_reader: an error returns no partial batch; reading can go on after it") {
  auto s = schema_of(R"({"fields": [{"name": "a", "type": "int32", "nullable": false}]})");
  std::istringstream in("{\"a\": 1}\n{\"a\": 2}\n{\"a\": \"x\"}\n{\"a\": 4}\n");
  json::read_options o;
  o.batch_size = 10;
  json::rows_reader r(s, in, o);
  CHECK(message_of([&] { r.next(); }) == "invalid input: line 3, field 'a': expected an integer, got \"x\"");
  CHECK(r.lines_read() == 3);
  auto b = r.next();  // the rows before and after the bad line
  REQUIRE(b.has_value());
  CHECK(json::rows_to_json(*b) == "{\"a\":1}\n{\"a\":2}\n{\"a\":4}\n");
  CHECK_FALSE(r.next().has_value());
}

TEST_CASE("rows_reader: max_batch_bytes ends batches early, one row alone may not exceed it") {
  auto s = schema_of(R"({"fields": [{"name": "s", "type": "utf8"}, {"name": "l", "type": {"list": "binary"}},
                                    {"name": "big", "type": "large_utf8"}]})");
  json::read_options o;
  o.batch_size = 100;
  o.max_batch_bytes = 10;
  std::istringstream in(R"({"s": "abcd"})" "\n" R"({"s": "efgh"})" "\n" R"({"s": "ijkl", "l": ["AAAA", "AAAA"]})" "\n"
                        R"({"l": ["AAAAAAAA", "AAAA"]})" "\n" R"({"s": "z"})" "\n"
                        R"({"s": "0123456789A"})" "\n" R"({"big": "0123456789AB"})" "\n");
  json::rows_reader r(s, in, o);
  std::vector<std::int64_t> sizes;
  std::string text;
  std::vector<std::string> errors;
  for (;;) {
    try {
      auto b = r.next();
      if (!b) break;
      sizes.push_back(b->num_rows());
      text += json::rows_to_json(*b);
    } catch (const invalid_input_error& e) {
      errors.push_back(e.what());
    }
  }
  // 4 + 4 bytes of s fit; row 3's 4 more do not. Row 4's 9 bytes of l do not fit
  // with row 3's 6. Rows 6 and 7 alone exceed the bound (large_utf8 included).
  CHECK(sizes == std::vector<std::int64_t>{2, 1, 2});
  CHECK(errors == std::vector<std::string>{
                      "invalid input: line 6, field 's': the row alone holds more than max_batch_bytes (10) bytes of utf8 values",
                      "invalid input: line 7, field 'big': the row alone holds more than max_batch_bytes (10) bytes of large_utf8 values"});
  CHECK(text ==
        "{\"s\":\"abcd\",\"l\":null,\"big\":null}\n{\"s\":\"efgh\",\"l\":null,\"big\":null}\n"
        "{\"s\":\"ijkl\",\"l\":[\"AAAA\",\"AAAA\"],\"big\":null}\n"
        "{\"s\":null,\"l\":[\"AAAAAAAA\",\"AAAA\"],\"big\":null}\n{\"s\":\"z\",\"l\":null,\"big\":null}\n");
  CHECK(message_of([&] { json::read_rows(s, R"({"s": "abcdef"})" "\n" R"({"s": "abcdef"})", o); }) ==
        "invalid input: line 2: the rows do not fit one batch (32-bit offsets or max_batch_bytes); use rows_reader");
}

TEST_CASE("row_builder: a rejected row changes nothing, even deep inside nested values") {
  auto s = schema_of(R"({"fields": [{"name": "l", "type": {"list": {"struct": [{"name": "x", "type": "utf8"}, {"name": "y", "type": "int8"}]}}},
                                    {"name": "v", "type": {"fixed_size_list": "int8", "size": 2}}]})");
  json::row_builder b(s);
  CHECK(b.append(R"({"l": [{"x": "a", "y": 1}], "v": [1, 2]})", 1));
  CHECK(message_of([&] { b.append(R"({"l": [{"x": "b", "y": 2}, {"x": "c", "y": 300}], "v": [3, 4]})", 2); }) ==
        "invalid input: line 2, field 'l[1].y': 300 is out of range for int8");
  CHECK(message_of([&] { b.append(R"({"v": [5, 6], "l": [{"x": "d"}, 1]})", 3); }) ==
        "invalid input: line 3, field 'l[1]': expected an object, got 1");
  CHECK(b.append(R"({"l": null, "v": [7, 8]})", 4));
  CHECK(b.num_rows() == 2);
  auto rb = b.finish();
  validate(rb);
  CHECK(json::rows_to_json(rb) == "{\"l\":[{\"x\":\"a\",\"y\":1}],\"v\":[1,2]}\n{\"l\":null,\"v\":[7,8]}\n");
  CHECK(b.num_rows() == 0);
  CHECK(b.finish().num_rows() == 0);
}

TEST_CASE("rows: bad options and schemas are refused") {
  auto s = schema_of(R"({"fields": [{"name": "a", "type": "int32"}]})");
  std::istringstream in("");
  json::read_options o;
  o.batch_size = 0;
  CHECK(message_of([&] { json::rows_reader(s, in, o); }) == "invalid input: JSON rows: batch_size must be at least 1, got 0");
  CHECK(message_of([&] { json::row_builder(nullptr); }) == "invalid input: JSON rows: the schema is null");
  o.batch_size = 1;
  o.max_batch_bytes = -1;
  CHECK(message_of([&] { json::row_builder(s, o); }) == "invalid input: JSON rows: max_batch_bytes must not be negative, got -1");
  CHECK(message_of([&] { json::row_builder(std::make_shared<const arrow::schema>(arrow::schema{{field{"a", nullptr, true, {}}}, {}})); }) ==
        "invalid input: JSON rows: field 'a' has no type");
  CHECK(message_of([&] { json::row_builder(std::make_shared<const arrow::schema>(arrow::schema{{field{"a", int8(), true, {}}, field{"a", utf8(), true, {}}}, {}})); }) ==
        "invalid input: JSON rows: two fields named 'a'");
  CHECK(message_of([&] {
          json::row_builder(std::make_shared<const arrow::schema>(
              arrow::schema{{field{"s", struct_({field{"b", int8(), true, {}}, field{"b", int8(), true, {}}}), true, {}}}, {}}));
        }) == "invalid input: JSON rows: two fields named 'b' in struct 's'");
}

// ---- writing -----------------------------------------------------------------------------

TEST_CASE("write_rows: slices, streams and refused values") {
  auto ints = make_array<std::int32_t>({1, std::nullopt, 3, 4});
  auto strs = string_array({"a", "b", std::nullopt, "d"});
  auto lst = list_array<std::int32_t>({{1}, {2, std::nullopt}, {}, {4}}, {true, true, false, true});
  auto st = struct_array({{"i", ints}, {"s", strs}}, {true, false, true, true});
  auto fsl = make_fixed_size_list(make_array<std::int8_t>({1, 2, 3, 4, 5, 6, 7, 8}), 2, {true, true, true, false});
  auto rb = make_batch({{"i", slice(ints, 1, 3)}, {"l", slice(lst, 1, 3)}, {"st", slice(st, 1, 3)}, {"f", slice(fsl, 1, 3)}});
  std::ostringstream os;
  json::write_rows(os, rb);
  CHECK(os.str() ==
        "{\"i\":null,\"l\":[2,null],\"st\":null,\"f\":[3,4]}\n"
        "{\"i\":3,\"l\":null,\"st\":{\"i\":3,\"s\":null},\"f\":[5,6]}\n"
        "{\"i\":4,\"l\":[4],\"st\":{\"i\":4,\"s\":\"d\"},\"f\":null}\n");
  std::string one_row;
  json::append_row(one_row, rb, 1);
  CHECK(one_row == "{\"i\":3,\"l\":null,\"st\":{\"i\":3,\"s\":null},\"f\":[5,6]}");
  CHECK(message_of([&] { json::append_row(one_row, rb, 3); }) == "invalid input: JSON rows: row 3 is outside a batch of 3 rows");

  // Invalid UTF-8 in a utf8 column: the rows before it are written whole, then the error.
  auto bad = make_batch({{"s", struct_array({{"t", string_array({"ok", "\xc3\x28"})}})}});
  std::ostringstream os2;
  CHECK(message_of([&] { json::write_rows(os2, bad); }) ==
        "invalid input: JSON rows: row 1, field 's.t': the utf8 value is not valid UTF-8");
  CHECK(os2.str() == "{\"s\":{\"t\":\"ok\"}}\n");

  // A failing stream.
  std::ostringstream os3;
  os3.setstate(std::ios::badbit);
  CHECK(message_of<io_error>([&] { json::write_rows(os3, rb); }) == "I/O error: JSON rows: writing to the output stream failed");

  // Batches that do not match their schema.
  record_batch broken = rb;
  broken.columns.pop_back();
  CHECK(message_of([&] { json::rows_to_json(broken); }) ==
        "invalid input: JSON rows: the schema has 4 fields but the batch has 3 columns");
  CHECK(json::rows_to_json(make_batch({{"i", make_array<std::int32_t>(std::vector<std::int32_t>{})}})) == "");
}

TEST_CASE("base64: encode and strict decode") {
  CHECK(json::base64_encode("") == "");
  CHECK(json::base64_encode("f") == "Zg==");
  CHECK(json::base64_encode("fo") == "Zm8=");
  CHECK(json::base64_encode("foo") == "Zm9v");
  CHECK(json::base64_encode("foobar") == "Zm9vYmFy");
  std::string out = "x";
  CHECK_FALSE(json::base64_decode("Zm9vYg==", out).has_value());
  CHECK(out == "xfoob");
  CHECK_FALSE(json::base64_decode("Zm9vYg", out).has_value());
  CHECK(out == "xfoobfoob");
  CHECK(json::base64_decode("Zm9v YQ==", out) == std::optional<std::string>("character ' ' at position 4 is not base64"));
  CHECK(json::base64_decode("Zg=", out) == std::optional<std::string>("padding '=' must make the length a multiple of 4"));
  CHECK(json::base64_decode("Z===", out) == std::optional<std::string>("character '=' at position 1 is not base64"));
  CHECK(json::base64_decode("Zm=v", out) == std::optional<std::string>("character '=' at position 2 is not base64"));
  CHECK(json::base64_decode("\x01", out) == std::optional<std::string>("character '\\x01' at position 0 is not base64"));
  CHECK(out == "xfoobfoob");
  // every byte string of length 0..5 over a few values round trips
  for (int n = 0; n <= 5; ++n) {
    std::string bytes(std::size_t(n), '\0');
    for (int v = 0; v < 64; ++v) {
      for (int i = 0; i < n; ++i) bytes[std::size_t(i)] = char((v * 37 + i * 101) & 0xFF);
      std::string back;
      CHECK_FALSE(json::base64_decode(json::base64_encode(bytes), back).has_value());
      CHECK(back == bytes);
    }
  }
}

// ---- the JSON module itself (json/value.hpp, parse.hpp, write.hpp, access.hpp) ------

namespace {
json::syntax_error parse_error(std::string_view text, std::size_t max_depth = json::max_json_depth) {
  json::value v;
  json::syntax_error e;
  CHECK_FALSE(json::try_parse(text, v, e, max_depth));
  return e;
}
}  // namespace

TEST_CASE("json module: values keep integers, number text, member order and duplicates") {
  json::value v;
  json::syntax_error e;
  REQUIRE(json::try_parse("\xEF\xBB\xBF {\"b\": [0, -1, 18446744073709551615, 18446744073709551616, -9223372036854775808,"
                          " -9223372036854775809, -0, 1.50, 2E+3, 1e-400], \"a\": null, \"b\": \"x\\u00e9\\ud83d\\ude00\\/\"}\r\n",
                          v, e));
  REQUIRE(v.k == json::value::kind::object);
  REQUIRE(v.members.size() == 3);
  CHECK(v.members[0].first == "b");
  CHECK(v.members[1].first == "a");
  CHECK(v.members[2].first == "b");  // duplicates stay, for callers to refuse
  CHECK(v.find("b") == &v.members[0].second);
  CHECK(v.find("z") == nullptr);
  const auto& n = v.members[0].second.items;
  REQUIRE(n.size() == 10);
  CHECK((n[0].k == json::value::kind::unsigned_ && n[0].u == 0));
  CHECK((n[1].k == json::value::kind::integer && n[1].i == -1));
  CHECK((n[2].k == json::value::kind::unsigned_ && n[2].u == UINT64_MAX));
  CHECK((n[3].k == json::value::kind::number && n[3].text == "18446744073709551616"));
  CHECK((n[4].k == json::value::kind::integer && n[4].i == INT64_MIN));
  CHECK((n[5].k == json::value::kind::number && n[5].text == "-9223372036854775809"));
  CHECK((n[6].k == json::value::kind::number && n[6].text == "-0"));
  CHECK((n[7].k == json::value::kind::number && n[7].text == "1.50"));
  CHECK((n[8].k == json::value::kind::number && n[8].text == "2E+3"));
  CHECK((n[9].k == json::value::kind::number && n[9].text == "1e-400"));  // below a double: reads as 0
  CHECK(v.members[1].second.is_null());
  CHECK(v.members[2].second.text == "x\xc3\xa9\xf0\x9f\x98\x80/");
}

TEST_CASE("json module: write gives back what parse read") {
  for (const std::string text : {
           R"({"a":[1,-2,3.25,-0,1e400000000000000000000000000000000000000000000000000000000000000000000000000000]})",
           R"([])", R"({})", R"("")", R"(null)", R"([true,false,null,[[]],{"":{}}])",
           "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f \xc3\xa9\xf0\x9f\x98\x80\"",
           R"({"k":"v","k":1,"n":18446744073709551616,"m":-9223372036854775808})",
       }) {
    CAPTURE(text);
    json::value v;
    json::syntax_error e;
    if (text.find("1e4000") != std::string::npos) {  // beyond a double: refused, see below
      CHECK_FALSE(json::try_parse(text, v, e));
      continue;
    }
    REQUIRE(json::try_parse(text, v, e));
    CHECK(json::write(v) == text);
  }
  // Whitespace and escapes that need none are normalised.
  json::value v;
  json::syntax_error e;
  REQUIRE(json::try_parse(" [ 1 ,\n\t{ \"a\" : \"\\u0041\\/\" } ] ", v, e));
  CHECK(json::write(v) == R"([1,{"a":"A/"}])");
}

TEST_CASE("json module: parse errors name the offset, line and column") {
  struct tc {
    const char* text;
    std::size_t offset, line, column;
    const char* message;
  };
  const tc cases[] = {
      {"", 0, 1, 1, "unexpected end of input; expected a value"},
      {"   ", 3, 1, 4, "unexpected end of input; expected a value"},
      {"[1,]", 3, 1, 4, "unexpected ']'; expected a value"},
      {"{\"a\":1,}", 7, 1, 8, "unexpected '}'; expected a member name (a string)"},
      {"{\"a\" 1}", 5, 1, 6, "unexpected '1'; expected ':'"},
      {"{\"a\":1", 6, 1, 7, "unexpected end of input; expected ',' or '}'"},
      {"[1 2]", 3, 1, 4, "unexpected '2'; expected ',' or ']'"},
      {"[1]\n x", 5, 2, 2, "unexpected 'x'; expected end of input after the value"},
      {"[tru]", 4, 1, 5, "invalid literal (expected true)"},
      {"nul", 3, 1, 4, "invalid literal (expected null)"},
      {"[01]", 2, 1, 3, "invalid number: a leading zero is followed by a digit"},
      {"[-]", 2, 1, 3, "invalid number: expected a digit after '-'"},
      {"[+1]", 1, 1, 2, "unexpected '+'; expected a value"},
      {"[1.]", 3, 1, 4, "invalid number: expected a digit after '.'"},
      {"[1e+]", 4, 1, 5, "invalid number: expected a digit in the exponent"},
      {"[.5]", 1, 1, 2, "unexpected '.'; expected a value"},
      {"\"a\nb\"", 2, 1, 3, "invalid string: control character byte 0x0a must be escaped"},
      {"\"abc", 4, 1, 5, "invalid string: unexpected end of input (no closing '\"')"},
      {"\"\\x\"", 2, 1, 3, "invalid string: unknown escape \\x"},
      {"\"\\u12g4\"", 5, 1, 6, "invalid string: 'g' is not a hex digit of a \\u escape"},
      {"\"\\ud800\"", 1, 1, 2, "invalid string: a high surrogate \\u escape without a low one after it"},
      {"\"\\ud800\\u0041\"", 7, 1, 8, "invalid string: a high surrogate \\u escape is followed by no low surrogate"},
      {"\"\\udc00\"", 1, 1, 2, "invalid string: a low surrogate \\u escape without a high one before it"},
      {"[\"\xc3\"]", 3, 1, 4, "invalid string: ill-formed UTF-8 '\"'"},
      {"\"\xc0\xaf\"", 1, 1, 2, "invalid string: ill-formed UTF-8 byte 0xc0"},         // overlong
      {"\"\xed\xa0\x80\"", 2, 1, 3, "invalid string: ill-formed UTF-8 byte 0xa0"},     // a surrogate
      {"\"\xf4\x90\x80\x80\"", 2, 1, 3, "invalid string: ill-formed UTF-8 byte 0x90"}, // past U+10FFFF
      {"{\"a\":\n\n  [1, @]}", 13, 3, 7, "unexpected '@'; expected a value"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const auto e = parse_error(c.text);
    CHECK(e.malformed);
    CHECK(e.offset == c.offset);
    CHECK(e.line == c.line);
    CHECK(e.column == c.column);
    CHECK(e.message == c.message);
  }
  // A number beyond a double is well-formed JSON that has no value here: the error
  // says where in the document it is.
  const auto big = parse_error(R"({"a": [1, {"b": -1e309}]})");
  CHECK_FALSE(big.malformed);
  CHECK(big.path == "a[1].b");
  CHECK(big.offset == 16);
  CHECK(big.message == "the number -1e309 is out of range");
  // Depth is bounded (containers, not values).
  CHECK(parse_error("[[[1]]]", 2).message == "nested deeper than 2 levels");
  json::value v;
  json::syntax_error e;
  CHECK(json::try_parse("[[1]]", v, e, 2));
  std::string deep(100000, '[');
  CHECK(parse_error(deep).message == "nested deeper than 256 levels");
  // Stored metadata: corrupt_error naming the text and the offset.
  CHECK(message_of<corrupt_error>([] { json::parse("[1,,]", "'x.idx' lance:ivf"); }) ==
        "corrupt: 'x.idx' lance:ivf: invalid JSON at character 3: unexpected ','; expected a value");
}

TEST_CASE("json module: typed access to stored JSON") {
  const auto v = json::parse(R"({"n": 7, "big": 4294967296, "neg": -1, "f": 2.5, "i": 3, "s": "x", "b": true,
                                 "bytes": [0, 255], "nb": null, "bad": [256]})",
                             "meta");
  CHECK(json::as_u64(json::member(v, "big", "meta"), "big", "meta") == 4294967296u);
  CHECK(json::as_u32(json::member(v, "n", "meta"), "n", "meta") == 7u);
  CHECK(json::as_f64(json::member(v, "f", "meta"), "f", "meta") == 2.5);
  CHECK(json::as_f64(json::member(v, "i", "meta"), "i", "meta") == 3.0);
  CHECK(json::as_f64(json::member(v, "neg", "meta"), "neg", "meta") == -1.0);
  CHECK(json::as_string(json::member(v, "s", "meta"), "s", "meta") == "x");
  CHECK(json::as_bool(json::member(v, "b", "meta"), "b", "meta"));
  CHECK(json::as_bytes(json::member(v, "bytes", "meta"), "bytes", "meta") == std::vector<std::uint8_t>{0, 255});
  CHECK(json::as_bytes(json::member(v, "nb", "meta"), "nb", "meta").empty());
  CHECK(message_of<corrupt_error>([&] { json::member(v, "zz", "meta"); }) == "corrupt: meta: missing \"zz\"");
  CHECK(message_of<corrupt_error>([&] { json::as_u32(json::member(v, "big", "meta"), "big", "meta"); }) ==
        "corrupt: meta: \"big\" = 4294967296 is too large");
  CHECK(message_of<corrupt_error>([&] { json::as_u64(json::member(v, "neg", "meta"), "neg", "meta"); }) ==
        "corrupt: meta: \"neg\" is not a non-negative integer");
  CHECK(message_of<corrupt_error>([&] { json::as_u64(json::member(v, "f", "meta"), "f", "meta"); }) ==
        "corrupt: meta: \"f\" is not a non-negative integer");
  CHECK(message_of<corrupt_error>([&] { json::as_bytes(json::member(v, "bad", "meta"), "bad", "meta"); }) ==
        "corrupt: meta: \"bad\" holds 256, not a byte");
  CHECK(message_of<corrupt_error>([&] { json::as_string(json::member(v, "n", "meta"), "n", "meta"); }) ==
        "corrupt: meta: \"n\" is not a string");
  CHECK(json::parse_string_list(json::string_list({"", "a\"b", "{\"x\":1}"}), "l") ==
        std::vector<std::string>{"", "a\"b", "{\"x\":1}"});
  CHECK(json::string_list({"", "{\"x\":1}"}) == R"(["","{\"x\":1}"])");
  CHECK(message_of<corrupt_error>([] { json::parse_string_list("[1]", "l"); }) == "corrupt: l: expected a JSON array of strings");
}

TEST_CASE("json module: numbers as serde_json writes them") {
  // Byte-for-byte what Lance's index metadata holds (ryu's shortest digits).
  CHECK(json::serde_number(-1.2360255718231201) == "-1.2360255718231201");
  CHECK(json::serde_number(1.0) == "1.0");
  CHECK(json::serde_number(-0.0) == "-0.0");
  CHECK(json::serde_number(1e-5) == "0.00001");
  CHECK(json::serde_number(1e-6) == "1e-6");
  CHECK(json::serde_number(1e16) == "1e16");
  CHECK(json::serde_number(-1.5e300) == "-1.5e300");
  CHECK(json::serde_number(5e-324) == "5e-324");
  CHECK(json::serde_number(123456789012345.6) == "123456789012345.6");
  CHECK(json::serde_number(std::numeric_limits<double>::infinity()) == "null");
  // Shortest round trip: the text reads back as the same double.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    double d;
    const std::uint64_t bits = rng();
    std::memcpy(&d, &bits, 8);
    if (!std::isfinite(d)) continue;
    const auto t = json::serde_number(d);
    CAPTURE(t);
    json::value v;
    json::syntax_error e;
    REQUIRE(json::try_parse(t, v, e));
    CHECK(json::as_f64(v, "x", "t") == d);
  }
  CHECK(json::quote("a\"b\\c\n\x01\x7f") == "\"a\\\"b\\\\c\\n\\u0001\x7f\"");
}

}  // TEST_SUITE

TEST_CASE("json: object_writer writes members in order, escaped, with no spaces") {
  CHECK(json::object_writer{}.str() == "{}");
  json::object_writer o;
  o.field("version", std::uint64_t(3))
      .field("name", std::string("a\"b\\c\n"))
      .field("ok", true)
      .field("neg", std::int64_t(-7))
      .field("ids", std::vector<std::uint64_t>{1, 2})
      .field("none", std::vector<std::uint32_t>{})
      .field("cols", std::vector<std::string>{"x", "y\"z"})
      .field("key \"q\"", "v")
      .raw("nested", json::object_writer{}.field("p", 1).str())
      .raw("list", json::raw_list({"1", "{}"}));
  const auto text = o.str();
  CHECK(text ==
        "{\"version\":3,\"name\":\"a\\\"b\\\\c\\n\",\"ok\":true,\"neg\":-7,\"ids\":[1,2],\"none\":[],"
        "\"cols\":[\"x\",\"y\\\"z\"],\"key \\\"q\\\"\":\"v\",\"nested\":{\"p\":1},\"list\":[1,{}]}");
  // What it writes parses back, names and values intact.
  const auto v = json::parse(text, "object_writer output");
  REQUIRE(v.find("name") != nullptr);
  CHECK(v.find("name")->text == "a\"b\\c\n");
  CHECK(v.find("key \"q\"")->text == "v");
  CHECK(v.find("ids")->items.size() == 2);
  CHECK(v.find("ok")->b);
}

TEST_CASE("json: files_reader reads several JSON Lines files as one stream; errors name the file") {
  lancet::testing::temp_dir tmp("json-files");
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto p = (tmp.path() / name).string();
    std::ofstream(p) << text;
    return p;
  };
  const auto schema = std::make_shared<const arrow::schema>(
      arrow::schema{{arrow::field("id", arrow::int64(), false), arrow::field("s", arrow::utf8(), true)}, {}});
  const auto a = write("a.jsonl", "{\"id\": 1, \"s\": \"x\"}\n{\"id\": 2}\n{\"id\": 3, \"s\": \"z\"}\n");
  const auto empty = write("empty.jsonl", "");
  const auto b = write("b.jsonl", "\n{\"id\": 4, \"s\": \"w\"}\n");
  json::files_reader rows(schema, {a, empty, b}, {.batch_size = 2});
  std::vector<std::int64_t> ids, sizes;
  while (auto batch = rows.next()) {  // a batch never spans two files
    sizes.push_back(batch->num_rows());
    for (std::int64_t i = 0; i < batch->num_rows(); ++i) ids.push_back(batch->columns[0]->value<std::int64_t>(i));
  }
  CHECK(ids == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(sizes == std::vector<std::int64_t>{2, 1, 1});
  CHECK_FALSE(rows().has_value());

  const auto bad = write("bad.jsonl", "{\"id\": 5}\n{\"id\": \"six\"}\n");
  json::files_reader with_bad(schema, {a, bad});
  CHECK(with_bad.next()->num_rows() == 3);
  CHECK_THROWS_WITH_AS(with_bad.next(), doctest::Contains(("input '" + bad + "': line 2, field 'id'").c_str()),
                       invalid_input_error);
  json::files_reader missing(schema, {a, (tmp.path() / "nope.jsonl").string()});
  CHECK(missing.next()->num_rows() == 3);
  CHECK_THROWS_WITH_AS(missing.next(), doctest::Contains("cannot open input"), io_error);
}
