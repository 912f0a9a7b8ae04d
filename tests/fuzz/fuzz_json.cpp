// libFuzzer target for the JSON readers of the CLI: a schema document
// (json::parse_schema) and JSON Lines rows read against it (json::read_rows). The
// input is the schema text, a NUL byte, then the rows; without a NUL, or when the
// schema is refused, the rows are read against a fixed schema of every type family.
// A schema that parses must print (schema_to_json) to text that parses to the same
// schema. Typed errors (invalid_input_error naming the line and field) are the
// expected outcome for bad input; anything else is a bug. The corpus is seeded from
// tests/fuzz/corpus/fuzz_json (schemas and rows of the CLI tests, rows as LanceDB
// reads them back in tests/fixtures/structural).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string_view>

#include "lancet/core/error.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/json/schema_json.hpp"
#include "fuzz_target.hpp"

namespace {

constexpr std::string_view fallback_schema = R"({"fields": [
  {"name": "b", "type": "bool"}, {"name": "i8", "type": "int8"}, {"name": "u64", "type": "uint64"},
  {"name": "i64", "type": "int64", "nullable": false}, {"name": "h", "type": "float16"},
  {"name": "f", "type": "float32"}, {"name": "d", "type": "float64"}, {"name": "s", "type": "utf8"},
  {"name": "bin", "type": "binary"}, {"name": "fb", "type": {"fixed_size_binary": 4}},
  {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}}, {"name": "t32", "type": {"time32": "ms"}},
  {"name": "dec", "type": {"decimal128": 20, "scale": 4}}, {"name": "dec256", "type": {"decimal256": 50, "scale": 6}},
  {"name": "l", "type": {"list": "int32"}}, {"name": "ll", "type": {"large_list": {"list": "utf8"}}},
  {"name": "v", "type": {"fixed_size_list": "float32", "size": 3}},
  {"name": "st", "type": {"struct": [{"name": "a", "type": "int32"}, {"name": "c", "type": {"struct": [{"name": "d", "type": "float64"}]}}]}},
  {"name": "n", "type": "null"}]})";

const std::shared_ptr<const lancet::arrow::schema>& fallback() {
  static const auto s = std::make_shared<const lancet::arrow::schema>(lancet::json::parse_schema(fallback_schema));
  return s;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_json: %s\n", what);
    __builtin_trap();
  }
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_json)(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto nul = in.find('\0');
  std::string_view rows = nul == std::string_view::npos ? in : in.substr(nul + 1);
  std::shared_ptr<const arrow::schema> schema = fallback();
  if (nul != std::string_view::npos) {
    try {
      auto s = json::parse_schema(in.substr(0, nul));
      const auto text = json::schema_to_json(s);
      const auto back = json::parse_schema(text);
      bool same = back.fields.size() == s.fields.size() && back.metadata == s.metadata;
      for (std::size_t i = 0; same && i < s.fields.size(); ++i)
        same = arrow::equals(back.fields[i], s.fields[i]) && back.fields[i].metadata == s.fields[i].metadata;
      check(same, "schema_to_json does not parse back to the same schema");
      schema = std::make_shared<const arrow::schema>(std::move(s));
    } catch (const lancet::error&) {
    }
  }
  try {
    json::read_options o;
    o.batch_size = 64;
    auto batch = json::read_rows(schema, rows, o);
    check(batch.columns.size() == schema->fields.size(), "batch columns differ from the schema");
  } catch (const lancet::error&) {
  }
  return 0;
}
