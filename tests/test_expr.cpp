// SQL filters: parsing (errors with positions), typing as Lance 12 types them, and
// evaluation with SQL's three-valued logic. The expected rows of the `lance_table`
// cases are what LanceDB 0.39 returned for the same filters on the same values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/expr/parse.hpp"

using namespace lancet;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

// The table the expectations were taken from (ids 0..7).
arrow::record_batch lance_table() {
  using std::nullopt;
  const std::int64_t i64max = std::numeric_limits<std::int64_t>::max(), i64min = std::numeric_limits<std::int64_t>::min();
  return arrow::make_batch({
      {"id", arrow::make_array<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7})},
      {"i8", arrow::make_array<std::int8_t>({-128, -1, 0, 1, 100, 127, nullopt, 5})},
      {"u8", arrow::make_array<std::uint8_t>({0, 1, 2, 200, 255, nullopt, 7, 8})},
      {"i32", arrow::make_array<std::int32_t>({2, 3, -5, 7, nullopt, 2147483647, -2147483647 - 1, 10})},
      {"u32", arrow::make_array<std::uint32_t>({0, 1, 4294967295u, 5, nullopt, 6, 7, 8})},
      {"i64", arrow::make_array<std::int64_t>({0, 1, -1, i64max, nullopt, i64min, 10, 3})},
      {"f32", arrow::make_array<float>({0.1f, float(nan_v), -0.0f, 0.0f, float(inf_v), -float(inf_v), nullopt, 1.5f})},
      {"f64", arrow::make_array<double>({0.1, nan_v, -0.0, 0.0, inf_v, -inf_v, nullopt, 2.5})},
      {"s", arrow::string_array({"apple", "Apple", "banana", "", nullopt, "a_c", "a%c", "zebra"})},
      {"Price", arrow::make_array<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8})},
      {"b", arrow::bool_array({true, false, nullopt, true, false, true, nullopt, false})},
  });
}

std::vector<int> matching_rows(const std::string& sql, const arrow::record_batch& t = lance_table()) {
  const auto f = expr::filter::compile(sql, *t.schema);
  std::vector<arrow::array_ptr> in;
  for (const auto& c : f.columns()) {
    std::size_t k = 0;
    while (t.schema->fields[k].name != c) ++k;
    in.push_back(t.columns[k]);
  }
  std::vector<std::uint8_t> mask(std::size_t(t.num_rows()));
  f.evaluate(in, 0, mask.size(), mask.data());
  std::vector<int> out;
  for (std::size_t r = 0; r < mask.size(); ++r)
    if (mask[r]) out.push_back(int(r));
  return out;
}

using ids = std::vector<int>;

}  // namespace

TEST_CASE("filter: comparisons, logic and NULLs as LanceDB answers them") {
  CHECK(matching_rows("i32 = NULL") == ids{});
  CHECK(matching_rows("i32 != NULL") == ids{});
  CHECK(matching_rows("NOT (i32 = NULL)") == ids{});
  CHECK(matching_rows("NULL = NULL") == ids{});
  CHECK(matching_rows("b AND NULL") == ids{});
  CHECK(matching_rows("NOT NULL") == ids{});
  CHECK(matching_rows("b OR NULL") == ids{0, 3, 5});
  CHECK(matching_rows("i32 > NULL OR true") == ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(matching_rows("i32 IN (2, NULL)") == ids{0});
  CHECK(matching_rows("i32 NOT IN (2, NULL)") == ids{});
  CHECK(matching_rows("i32 IN (NULL)") == ids{});
  CHECK(matching_rows("i32 NOT IN (2)") == ids{1, 2, 3, 5, 6, 7});
  CHECK(matching_rows("i32 BETWEEN 0 AND NULL") == ids{});
  CHECK(matching_rows("i32 NOT BETWEEN 5 AND NULL") == ids{0, 1, 2, 6});
  CHECK(matching_rows("NOT (i32 > 5)") == ids{0, 1, 2, 6});
  CHECK(matching_rows("i32 + NULL IS NULL") == ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(matching_rows("NULL IS NULL") == ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(matching_rows("true") == ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(matching_rows("false") == ids{});
  CHECK(matching_rows("id >= 2 AND (id < 4 OR id = 7)") == ids{2, 3, 7});
  CHECK(matching_rows("id == 3") == ids{3});
  CHECK(matching_rows("id <> 3 AND id BETWEEN 2 AND 4") == ids{2, 4});
}

TEST_CASE("filter: booleans") {
  CHECK(matching_rows("b") == ids{0, 3, 5});
  CHECK(matching_rows("NOT b") == ids{1, 4, 7});
  CHECK(matching_rows("b = true") == ids{0, 3, 5});
  CHECK(matching_rows("b = false") == ids{1, 4, 7});
  CHECK(matching_rows("b != true") == ids{1, 4, 7});
  CHECK(matching_rows("b IS TRUE") == ids{0, 3, 5});
  CHECK(matching_rows("b IS FALSE") == ids{1, 4, 7});
  CHECK(matching_rows("b IS NOT TRUE") == ids{1, 2, 4, 6, 7});
  CHECK(matching_rows("b IS NOT FALSE") == ids{0, 2, 3, 5, 6});
  CHECK(matching_rows("(id = 1) = true") == ids{1});
}

TEST_CASE("filter: Lance's literal coercion and DataFusion's elsewhere") {
  // A constant beside a column at the top level takes the column's type, or fails.
  CHECK_THROWS_AS(matching_rows("i8 > 1000"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("1000 < i8"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i8 IN (1, 1000)"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i8 BETWEEN -1 AND 1000"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i8 > 1000 OR id = 0"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i32 = 2.5"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i32 = 2.0"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("u32 > -1"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("u32 > 4294967296"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("s = 5"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("5 = s"), expr::invalid_filter);
  // Under NOT (or inside another expression) DataFusion widens instead.
  CHECK(matching_rows("NOT (i8 > 1000)") == ids{0, 1, 2, 3, 4, 5, 7});
  CHECK(matching_rows("i8 + 0 > 1000") == ids{});
  CHECK(matching_rows("NOT (i32 = 2.5)") == ids{0, 1, 2, 3, 5, 6, 7});
  CHECK(matching_rows("u32 >= 0") == ids{0, 1, 2, 3, 5, 6, 7});
  // float32: the constant is rounded to float32 beside the column, not under NOT.
  CHECK(matching_rows("f32 = 0.1") == ids{0});
  CHECK(matching_rows("f32 IN (0.1)") == ids{0});
  CHECK(matching_rows("f32 BETWEEN 0.1 AND 0.1") == ids{0});
  CHECK(matching_rows("NOT (f32 = 0.1)") == ids{0, 1, 2, 3, 4, 5, 7});
  CHECK(matching_rows("(f32 = 0.1) = true") == ids{});
  CHECK(matching_rows("f32 + 0 = 0.1") == ids{});
  // Column names: exact, else the first ignoring case; quoted names exactly.
  CHECK(matching_rows("price = 3") == ids{2});
  CHECK(matching_rows("PRICE = 3") == ids{2});
  CHECK(matching_rows("\"Price\" > 5") == ids{5, 6, 7});
  CHECK_THROWS_AS(matching_rows("`price` > 5"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("s = \"apple\""), expr::invalid_filter);
}

TEST_CASE("filter: floats in total order, zero constants equal both zeros") {
  CHECK(matching_rows("f64 = 0") == ids{2, 3});
  CHECK(matching_rows("f64 = 0.0") == ids{2, 3});
  CHECK(matching_rows("f64 = -0.0") == ids{2, 3});
  CHECK(matching_rows("f64 IN (0)") == ids{2, 3});
  CHECK(matching_rows("f64 BETWEEN 0 AND 0") == ids{2, 3});
  CHECK(matching_rows("0 = f64") == ids{2, 3});
  CHECK(matching_rows("f64 != 0") == ids{0, 1, 4, 5, 7});
  CHECK(matching_rows("f64 > 0") == ids{0, 1, 4, 7});
  CHECK(matching_rows("f64 >= 0") == ids{0, 1, 2, 3, 4, 7});
  CHECK(matching_rows("f64 < 0") == ids{5});
  CHECK(matching_rows("f64 <= 0") == ids{2, 3, 5});
  CHECK(matching_rows("f64 > 1") == ids{1, 4, 7});
  CHECK(matching_rows("f64 > -1000000") == ids{0, 1, 2, 3, 4, 7});
  CHECK(matching_rows("f64 != f64") == ids{});
  CHECK(matching_rows("f64 = f64") == ids{0, 1, 2, 3, 4, 5, 7});
  CHECK(matching_rows("f64 = -f64") == ids{});
  CHECK(matching_rows("f64 = 1e309") == ids{4});
  CHECK(matching_rows("f64 / 0 > 0") == ids{0, 1, 4, 7});
  CHECK(matching_rows("f64 % 0 = 0") == ids{});
  CHECK(matching_rows("f32 = 0") == ids{2, 3});
}

TEST_CASE("filter: integer arithmetic wraps at its type's width") {
  CHECK(matching_rows("i32 / 2 = 1") == ids{0, 1});
  CHECK(matching_rows("-7 / 2 = -3") == ids{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(matching_rows("i32 % 3 = -2") == ids{2, 6});
  CHECK(matching_rows("i8 + i8 < 0") == ids{1, 4, 5});
  CHECK(matching_rows("u8 + u8 = 144") == ids{3});
  CHECK(matching_rows("u8 * u8 = 1") == ids{1, 4});
  CHECK(matching_rows("i64 + 1 < 0") == ids{3, 5});
  CHECK(matching_rows("i64 - 1 > 0") == ids{3, 5, 6, 7});
  CHECK(matching_rows("i64 * 2 = -2") == ids{2, 3});
  CHECK(matching_rows("i64 % -1 = 0") == ids{0, 1, 2, 3, 5, 6, 7});
  CHECK(matching_rows("-i32 < 0") == ids{0, 1, 3, 5, 6, 7});
  CHECK(matching_rows("u8 - 1 > 250") == ids{4});
  CHECK(matching_rows("i32 / 0.0 > 0") == ids{0, 1, 3, 5, 7});
  CHECK(matching_rows("i32 / 2.0 = 1.5") == ids{1});
  CHECK(matching_rows("i32 / 2 = 1.5") == ids{});
  CHECK(matching_rows("price * 2 > 10") == ids{5, 6, 7});
  CHECK_THROWS_AS(matching_rows("i32 / 0 > 1"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i32 % 0 > 1"), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("i64 / -1 > 0"), expr::invalid_filter);
  // uint64 beside a signed integer is decimal(20, 0), whose arithmetic past 128 bits is
  // an error (as DataFusion's), not a wrap.
  CHECK_THROWS_WITH_AS(matching_rows("9999999999998999516 * 91 * 12999999999998999516 > i32"),
                       doctest::Contains("arithmetic overflow"), expr::invalid_filter);
  // The division by zero is found only on rows whose operands are valid.
  CHECK(matching_rows("i32 / (i32 - i32 + 1) = i32") == ids{0, 1, 2, 3, 5, 6, 7});
}

TEST_CASE("filter: strings, LIKE") {
  CHECK(matching_rows("s < 'b'") == ids{0, 1, 3, 5, 6});
  CHECK(matching_rows("s LIKE 'a%'") == ids{0, 5, 6});
  CHECK(matching_rows("s LIKE 'A%'") == ids{1});
  CHECK(matching_rows("s LIKE '%'") == ids{0, 1, 2, 3, 5, 6, 7});
  CHECK(matching_rows("s LIKE 'a\\_c'") == ids{5});
  CHECK(matching_rows("s LIKE 'a\\%c'") == ids{6});
  CHECK(matching_rows("s LIKE 'a\\pple'") == ids{0});
  CHECK(matching_rows("s LIKE '_pple'") == ids{0, 1});
  CHECK(matching_rows("s LIKE '%an%'") == ids{2});
  CHECK(matching_rows("s NOT LIKE '%a%'") == ids{1, 3});
  CHECK(matching_rows("s IN ('zebra', 'apple')") == ids{0, 7});
  CHECK(matching_rows("s = 'it''s'") == ids{});
  CHECK_THROWS_AS(matching_rows("s LIKE 'a%' ESCAPE '!'"), expr::unsupported_filter);
}

TEST_CASE("filter: dates, timestamps and nested fields") {
  using std::nullopt;
  const std::int64_t day = 19723;  // 2024-01-01
  const std::int64_t us = day * 86400LL * 1000000LL;
  auto t = arrow::make_batch({
      {"d", arrow::make_array<std::int32_t>({int(day - 1), int(day), int(day + 1), nullopt}, arrow::date32())},
      {"ts", arrow::make_array<std::int64_t>({us - 1, us, us + 1, us + 45000000000LL},
                                             arrow::timestamp(arrow::time_unit::micro))},
      {"tsn", arrow::make_array<std::int64_t>({us * 1000, us * 1000 + 1, 0, nullopt},
                                              arrow::timestamp(arrow::time_unit::nano, "UTC"))},
      {"st", arrow::struct_array({{"x", arrow::make_array<std::int64_t>({1, nullopt, 3, 4})}}, {true, true, false, true})},
  });
  CHECK(matching_rows("d > date '2024-01-01'", t) == ids{2});
  CHECK(matching_rows("d >= date '2024-1-1'", t) == ids{1, 2});
  CHECK(matching_rows("d > timestamp '2024-01-01 00:00:00'", t) == ids{2});
  CHECK(matching_rows("ts > date '2024-01-01'", t) == ids{2, 3});
  CHECK(matching_rows("ts < timestamp '2024-01-01 00:00:00'", t) == ids{0});
  CHECK(matching_rows("tsn > timestamp '2024-01-01 00:00:00'", t) == ids{1});
  CHECK(matching_rows("ts = timestamp '2024-01-01 05:00:00+05:00'", t) == ids{1});
  CHECK(matching_rows("ts IN (timestamp '2024-01-01 00:00:00', timestamp '2024-01-01 00:00:00.000001')", t) == ids{1, 2});
  CHECK_THROWS_AS(matching_rows("d > '2024-01-01'", t), expr::invalid_filter);
  CHECK(matching_rows("NOT (d <= '2024-01-01')", t) == ids{2});
  CHECK_THROWS_AS(matching_rows("d > date '2024-02-30'", t), expr::invalid_filter);
  // Years as Arrow's parser takes them (chrono's range), and no further.
  CHECK(matching_rows("d < date '262143-12-31'", t) == ids{0, 1, 2});
  CHECK(matching_rows("d > date '-262144-01-01'", t) == ids{0, 1, 2});
  CHECK_THROWS_AS(matching_rows("d < date '262144-01-01'", t), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("ts < timestamp '202888888888888884-01-01 00:00:00.5+0:00'", t), expr::invalid_filter);
  // A NULL struct makes its members NULL.
  CHECK(matching_rows("st.x IS NULL", t) == ids{1, 2});
  CHECK(matching_rows("st IS NULL", t) == ids{2});
  CHECK(matching_rows("st.x > 1", t) == ids{3});
  CHECK(matching_rows("`st`.`x` >= 1", t) == ids{0, 3});
  CHECK_THROWS_AS(matching_rows("st.y = 1", t), expr::invalid_filter);
  CHECK_THROWS_AS(matching_rows("st.X = 1", t), expr::invalid_filter);
}

TEST_CASE("filter: every grammar error is typed and names its position") {
  struct bad {
    const char* sql;
    std::size_t position;
    bool unsupported;
  };
  const bad cases[] = {
      {"", 0, false},
      {"id = ", 5, false},
      {"(id = 1", 7, false},
      {"id = 'x", 5, false},
      {"id = 1)", 6, false},
      {"id IN ()", 7, false},
      {"id BETWEEN 1 OR 2", 13, false},
      {"12abc > 1", 0, false},
      {"id = 1 2", 7, false},
      {"lower(s) = 'a'", 0, true},
      {"s || 'x' = 'a'", 2, true},
      {"id IN (SELECT id FROM t)", 7, true},
      {"CASE WHEN b THEN 1 END = 1", 0, true},
      {"+id > 1", 0, true},
      {"s ILIKE 'a%'", 2, true},
      {"id IS DISTINCT FROM 1", 6, true},
      {"id = ANY(1)", 5, true},
      {"id::int > 1", 2, true},
      {"nosuch > 1", 0, false},
      {"id > 1 AND s", 11, false},
      {"1", 0, false},
      {"NULL", 0, false},
      {"i32", 0, false},
      {"id @ 1", 3, false},
      {"date '2024-13-01' < id", 5, false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.sql);
    try {
      matching_rows(c.sql);
      FAIL("no error");
    } catch (const expr::invalid_filter& e) {
      CHECK_FALSE(c.unsupported);
      CHECK(e.position() == c.position);
      CHECK(std::string(e.what()).find("position " + std::to_string(c.position)) != std::string::npos);
    } catch (const expr::unsupported_filter& e) {
      CHECK(c.unsupported);
      CHECK(e.position() == c.position);
    }
  }
  // An unknown column names the columns there are.
  try {
    matching_rows("nosuch > 1");
  } catch (const expr::invalid_filter& e) {
    CHECK(std::string(e.what()).find("no column 'nosuch' (columns: id, i8, u8") != std::string::npos);
    CHECK(e.token() == "nosuch");
  }
  // Deep nesting is refused, not a stack overflow.
  std::string deep(5000, '(');
  deep += "id = 1" + std::string(5000, ')');
  CHECK_THROWS_AS(matching_rows(deep), expr::invalid_filter);
  // Long flat chains are fine.
  std::string chain = "id = 0";
  for (int i = 1; i < 3000; ++i) chain += " OR id = " + std::to_string(i % 8);
  CHECK(matching_rows(chain) == ids{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("filter: apply keeps whole rows, in blocks past 4096 rows") {
  std::vector<std::optional<std::int64_t>> v;
  std::vector<std::optional<std::string>> s;
  for (int i = 0; i < 10000; ++i) {
    v.push_back(i % 7 == 0 ? std::nullopt : std::optional<std::int64_t>(i));
    s.push_back("k" + std::to_string(i % 5));
  }
  auto b = arrow::make_batch({{"v", arrow::make_array<std::int64_t>(v)}, {"s", arrow::string_array(s)}});
  const auto f = expr::filter::compile("v % 3 = 0 AND s != 'k0'", *b.schema);
  const auto out = f.apply(b);
  std::int64_t expect = 0;
  for (int i = 0; i < 10000; ++i) expect += (i % 7 != 0 && i % 3 == 0 && i % 5 != 0);
  REQUIRE(out.num_rows() == expect);
  for (std::int64_t r = 0; r < out.num_rows(); ++r) {
    const auto x = out.columns[0]->value<std::int64_t>(r);
    CHECK(x % 3 == 0);
    CHECK(out.columns[1]->string_value(r) == "k" + std::to_string(x % 5));
  }
}

// Equality with a string constant (compared a word at a time where the constant is short)
// against a direct comparison: constants of 1 to 12 bytes, values that share a prefix or
// differ in one byte, empty values, NULLs, and values at the very end of the values
// buffer; on a slice too.
TEST_CASE("filter: string equality and inequality with constants of any length") {
  std::mt19937 rng(5);
  const std::string alphabet = "ab'\xc3\xa9";
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::optional<std::string>> s;
    const std::size_t n = 1 + rng() % 300;
    const std::size_t klen = 1 + std::size_t(trial) % 12;
    std::string key;
    for (std::size_t i = 0; i < klen; ++i) key += "abc"[rng() % 3];
    for (std::size_t i = 0; i < n; ++i) {
      const int pick = int(rng() % 6);
      if (pick == 0) s.push_back(std::nullopt);
      else if (pick == 1) s.push_back(key);
      else if (pick == 2) {  // one byte off
        std::string v = key;
        v[rng() % v.size()] = 'x';
        s.push_back(v);
      } else if (pick == 3) s.push_back(key.substr(0, rng() % key.size()) + (rng() % 2 ? "" : "a"));
      else if (pick == 4) s.push_back(std::string());
      else {
        std::string v;
        for (std::size_t j = rng() % 10; j > 0; --j) v += alphabet[rng() % alphabet.size()];
        s.push_back(v);
      }
    }
    s.push_back(key);  // the values buffer ends with the constant's bytes
    auto b = arrow::make_batch({{"s", arrow::string_array(s)}});
    std::string literal;
    for (char c : key) literal += c == '\'' ? std::string("''") : std::string(1, c);
    for (const bool eq : {true, false}) {
      const auto got = matching_rows(std::string("s ") + (eq ? "=" : "!=") + " '" + literal + "'", b);
      ids want;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] && ((*s[i] == key) == eq)) want.push_back(int(i));
      CAPTURE(trial);
      CAPTURE(key);
      CHECK(got == want);
    }
    // A slice starting inside the values (offsets not from zero).
    if (s.size() > 3) {
      const std::int64_t from = std::int64_t(s.size() / 2);
      auto sliced = arrow::make_batch({{"s", arrow::slice(b.columns[0], from, std::int64_t(s.size()) - from)}});
      const auto got = matching_rows("s = '" + literal + "'", sliced);
      ids want;
      for (std::size_t i = std::size_t(from); i < s.size(); ++i)
        if (s[i] && *s[i] == key) want.push_back(int(i - std::size_t(from)));
      CHECK(got == want);
    }
  }
}
