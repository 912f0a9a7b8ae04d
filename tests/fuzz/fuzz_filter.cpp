// libFuzzer target for SQL filters (expr/filter.hpp): the input is a filter's text,
// compiled against a fixed schema of every type family a filter reads (integers of
// each width, floats, strings, booleans, dates, timestamps, a struct, a dictionary, a
// list) and, when it compiles, evaluated on a fixed batch holding nulls, NaN, signed
// zeros and each type's extremes. The expected outcomes are a mask, or an
// expr::invalid_filter / expr::unsupported_filter naming a position inside the text
// (evaluation may refuse a row: a division by zero, an overflow). Anything else is a
// bug. The corpus is seeded from tests/fuzz/corpus/fuzz_filter.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "lancet/arrow/builder.hpp"
#include "lancet/core/error.hpp"
#include "lancet/expr/filter.hpp"
#include "fuzz_target.hpp"

namespace {

const lancet::arrow::record_batch& table() {
  using namespace lancet;
  using std::nullopt;
  static const auto t = [] {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    auto dict = arrow::make_dictionary(arrow::make_array<std::int32_t>({0, 1, nullopt, 1, 0, 2}),
                                       arrow::string_array({"x", "y", "z"}));
    return arrow::make_batch({
        {"i8", arrow::make_array<std::int8_t>({-128, 127, 0, nullopt, -1, 5})},
        {"u8", arrow::make_array<std::uint8_t>({0, 255, 1, 200, nullopt, 7})},
        {"i32", arrow::make_array<std::int32_t>({2, -2147483647 - 1, 2147483647, nullopt, 0, -5})},
        {"u32", arrow::make_array<std::uint32_t>({0, 4294967295u, nullopt, 1, 5, 6})},
        {"i64", arrow::make_array<std::int64_t>({std::numeric_limits<std::int64_t>::min(), -1, 0, 1,
                                                 std::numeric_limits<std::int64_t>::max(), nullopt})},
        {"u64", arrow::make_array<std::uint64_t>({0, std::numeric_limits<std::uint64_t>::max(), nullopt, 3, 4, 5})},
        {"f16", arrow::float16_array({0.5f, -0.0f, nullopt, 65504.0f, float(nan), -1.0f})},
        {"f32", arrow::make_array<float>({0.1f, float(nan), -0.0f, float(inf), nullopt, -float(inf)})},
        {"f64", arrow::make_array<double>({0.1, nan, -0.0, 0.0, -inf, nullopt})},
        {"s", arrow::string_array({"apple", "", "a_c", nullopt, "\xc3\xa9t\xc3\xa9", "a%c"})},
        {"bin", arrow::binary_array({"\x01", nullopt, "", "ab", "\xff", "z"})},
        {"b", arrow::bool_array({true, false, nullopt, true, false, true})},
        {"d", arrow::make_array<std::int32_t>({19723, -1, 0, nullopt, 2932896, -719162}, arrow::date32())},
        {"ts", arrow::make_array<std::int64_t>({0, std::numeric_limits<std::int64_t>::max(), nullopt, -1, 1704067200000000, 1},
                                               arrow::timestamp(arrow::time_unit::micro))},
        {"st", arrow::struct_array({{"x", arrow::make_array<std::int64_t>({1, nullopt, 3, 4, 5, 6})},
                                    {"y", arrow::string_array({"a", "b", nullopt, "d", "e", "f"})}},
                                   {true, true, false, true, true, true})},
        {"cat", dict},
        {"tags", arrow::list_array<std::int32_t>({{1, 2}, {}, {std::nullopt}, {3}, {4, 5}, {6}})},
    });
  }();
  return t;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_filter: %s\n", what);
    __builtin_trap();
  }
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_filter)(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& t = table();
  std::optional<expr::filter> f;
  try {
    f = expr::filter::compile(text, *t.schema);
  } catch (const expr::invalid_filter& e) {
    check(e.position() <= size, "an error position past the text");
    return 0;
  } catch (const expr::unsupported_filter& e) {
    check(e.position() <= size, "an error position past the text");
    return 0;
  }
  for (const auto& c : f->columns()) {
    bool found = false;
    for (const auto& field : t.schema->fields) found = found || field.name == c;
    check(found, "a filter column the schema does not have");
  }
  try {
    const auto out = f->apply(t);
    check(out.num_rows() <= t.num_rows(), "more rows out than in");
    check(out.columns.size() == t.columns.size(), "columns lost");
  } catch (const expr::invalid_filter& e) {
    check(e.position() <= size, "an error position past the text");
  }
  return 0;
}
