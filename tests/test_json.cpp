#include <doctest/doctest.h>

#include <lancet/json/rows_reader.hpp>
#include <lancet/json/rows_writer.hpp>
#include <lancet/json/schema_json.hpp>

using namespace lancet;

TEST_CASE("smoke") {
  auto s = json::parse_schema(R"({"fields": [{"name": "id", "type": "int64", "nullable": false}, {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}}, {"name": "v", "type": {"fixed_size_list": "float32", "size": 2}}, {"name": "tags", "type": {"list": "utf8"}}, {"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}]}}], "metadata": {"k": "v"}})");
  MESSAGE(json::schema_to_json(s));
  auto rb = json::read_rows(s, "{\"id\": 1, \"v\": [0.1, 2], \"tags\": [\"a\", null], \"s\": {\"a\": 5}}\n{\"id\": \"-9223372036854775808\", \"s\": null}\n");
  MESSAGE(json::rows_to_json(rb));
}
