#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/arrow/half.hpp>
#include <lancet/arrow/validate.hpp>

#include "support/message_of.hpp"
#include "support/text.hpp"

using namespace lancet;
using namespace lancet::arrow;

namespace {

using lancet::testing::byte_vector;
using lancet::testing::contains;
using lancet::testing::message_of;

}  // namespace

// ---- half floats -------------------------------------------------------------

TEST_CASE("float16 conversion: exact values, rounding, specials") {
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);               // largest finite half
  CHECK(float_to_half(65520.0f) == 0x7C00);               // rounds up to inf
  CHECK(float_to_half(1e6f) == 0x7C00);
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK((float_to_half(std::nanf("")) & 0x7C00) == 0x7C00);
  CHECK((float_to_half(std::nanf("")) & 0x03FF) != 0);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // exact tie rounds to even (0)
  CHECK(float_to_half(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even (1.0).
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);

  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0x3555) == doctest::Approx(0.333251953125));
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x03FF) == std::ldexp(1023.0f, -24));
  CHECK(std::isinf(half_to_float(0x7C00)));
  CHECK(std::isnan(half_to_float(0x7E00)));
  CHECK(std::signbit(half_to_float(0x8000)));
  // Every finite half survives half -> float -> half.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaNs
    REQUIRE(float_to_half(half_to_float(std::uint16_t(h))) == h);
  }
}

// ---- builders ----------------------------------------------------------------

TEST_CASE("make_array builds values, validity and null counts") {
  auto a = make_array<std::int32_t>({1, std::nullopt, 3});
  REQUIRE(a->length == 3);
  CHECK(a->type->id == type_id::int32);
  CHECK(a->null_count == 1);
  CHECK(a->value<std::int32_t>(0) == 1);
  CHECK(a->is_null(1));
  CHECK(a->value<std::int32_t>(1) == 0);  // zero under the null
  CHECK(a->value<std::int32_t>(2) == 3);
  REQUIRE(a->buffers.size() == 2);
  CHECK(byte_vector(a->buffers[0]) == std::vector<std::uint8_t>{0b101});
  validate(a);

  auto b = make_array<std::uint64_t>({1, 2});
  CHECK(b->type->id == type_id::uint64);
  CHECK(!b->buffers[0]);  // no nulls, no bitmap
  CHECK(b->null_count == 0);

  auto c = make_array<double>(std::vector<double>{0.5, -1.0});
  CHECK(c->type->id == type_id::float64);
  CHECK(c->value<double>(1) == -1.0);

  auto d = make_array<std::int8_t>(std::vector<std::optional<std::int8_t>>{std::nullopt});
  CHECK(d->count_nulls() == 1);
}

TEST_CASE("make_array with an explicit type: temporal and float16") {
  auto ts = make_array<std::int64_t>({1, std::nullopt}, timestamp(time_unit::micro, "UTC"));
  CHECK(ts->type->id == type_id::timestamp);
  CHECK(ts->type->timezone == "UTC");
  CHECK(ts->type->unit == time_unit::micro);
  auto d32 = make_array<std::int32_t>({19000}, date32());
  CHECK(d32->type->id == type_id::date32);
  auto t32 = make_array<std::int32_t>({1}, time32(time_unit::milli));
  auto t64 = make_array<std::int64_t>({1}, time64(time_unit::nano));
  auto du = make_array<std::int64_t>({-5}, duration(time_unit::second));
  for (const auto& x : {d32, t32, t64, du}) validate(x);

  auto h = float16_array({1.0f, std::nullopt, -2.0f});
  CHECK(h->type->id == type_id::float16);
  CHECK(h->value<std::uint16_t>(0) == 0x3C00);
  CHECK(h->value<std::uint16_t>(2) == 0xC000);
  CHECK(h->is_null(1));

  // Width or kind mismatches are refused.
  CHECK(contains(message_of<invalid_input_error>([] { make_array<std::int32_t>({1}, int64()); }), "int64"));
  message_of<invalid_input_error>([] { make_array<std::int32_t>({1}, float32()); });
  message_of<invalid_input_error>([] { make_array<float>({1}, int32()); });
  message_of<invalid_input_error>([] { primitive_builder<std::int64_t> b(utf8()); });
}

TEST_CASE("generic builder: append, append_null, append_nulls, finish resets") {
  builder<std::int16_t> b;
  b.append(7).append_null().append(std::optional<std::int16_t>{}).append_nulls(2).append(9);
  auto a = b.finish();
  REQUIRE(a->length == 6);
  CHECK(a->null_count == 4);
  CHECK(a->value<std::int16_t>(0) == 7);
  CHECK(a->value<std::int16_t>(5) == 9);
  CHECK(b.length() == 0);
  b.append(1);
  auto a2 = b.finish();
  CHECK(a2->length == 1);
  CHECK(a2->null_count == 0);
  CHECK(!a2->buffers[0]);

  builder<bool> bb;
  bb.append(true).append_null().append(false).append(true);
  auto ba = bb.finish();
  CHECK(ba->type->id == type_id::boolean);
  CHECK(byte_vector(ba->buffers[1]) == std::vector<std::uint8_t>{0b1001});
  CHECK(byte_vector(ba->buffers[0]) == std::vector<std::uint8_t>{0b1101});
  CHECK(ba->null_count == 1);

  builder<std::string> sb;
  sb.append("ab").append_null().append(std::string("c"));
  auto sa = sb.finish();
  CHECK(sa->type->id == type_id::utf8);
  CHECK(sa->string_value(0) == "ab");
  CHECK(sa->string_value(2) == "c");
  CHECK(sa->value_offset(3) == 3);

  null_builder nb;
  auto na = nb.append_null().append_nulls(3).finish();
  CHECK(na->length == 4);
  CHECK(na->null_count == 4);
  CHECK(na->buffers.empty());
  validate(na);

  // Many values crossing byte and word boundaries, nulls appearing late.
  builder<std::uint32_t> big;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    if (i > 500 && i % 7 == 0) big.append_null();
    else big.append(i);
  }
  auto ba2 = big.finish();
  validate(ba2);
  std::int64_t nulls = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const bool expect_null = i > 500 && i % 7 == 0;
    nulls += expect_null;
    REQUIRE(ba2->is_null(i) == expect_null);
    if (!expect_null) REQUIRE(ba2->value<std::uint32_t>(i) == std::uint32_t(i));
  }
  CHECK(ba2->null_count == nulls);
}

TEST_CASE("binary-like arrays: utf8, large_utf8, binary, large_binary, fixed_size_binary") {
  auto s = string_array({"a", std::nullopt, "", "xyz"});
  CHECK(s->type->id == type_id::utf8);
  REQUIRE(s->buffers.size() == 3);
  CHECK(s->buffers[1].size() == 5 * 4);
  CHECK(s->value_offset(4) == 4);
  CHECK(s->string_value(3) == "xyz");
  CHECK(s->string_value(2).empty());
  validate(s);

  auto ls = large_string_array({"hello", std::nullopt});
  CHECK(ls->type->id == type_id::large_utf8);
  CHECK(ls->buffers[1].size() == 3 * 8);
  CHECK(ls->string_value(0) == "hello");

  auto b = binary_array({std::string_view("\0\1", 2)});
  CHECK(b->type->id == type_id::binary);
  CHECK(b->string_value(0).size() == 2);
  auto lb = large_binary_array(std::vector<std::string>{"q", "rs"});
  CHECK(lb->type->id == type_id::large_binary);
  CHECK(lb->string_value(1) == "rs");

  auto f = fixed_size_binary_array(3, {"abc", std::nullopt, "xyz"});
  CHECK(f->type->byte_width == 3);
  CHECK(f->fixed_binary_value(2) == "xyz");
  CHECK(f->buffers[1].size() == 9);
  CHECK(contains(message_of<invalid_input_error>([] { fixed_size_binary_array(3, {"ab"}); }), "has 2 bytes"));
  validate(f);

  auto strs = string_array(std::vector<std::optional<std::string>>{"x", std::nullopt});
  CHECK(strs->null_count == 1);
}

TEST_CASE("decimals: little-endian two's complement, sign-extended to 256 bits") {
  auto d = decimal128_array(38, 2, {12345, -1, std::nullopt});
  CHECK(d->type->id == type_id::decimal128);
  CHECK(d->type->precision == 38);
  CHECK(d->type->scale == 2);
  REQUIRE(d->buffers[1].size() == 48);
  const auto* p = d->buffers[1].data();
  CHECK(p[0] == 0x39);
  CHECK(p[1] == 0x30);
  for (int i = 2; i < 16; ++i) CHECK(p[i] == 0);
  for (int i = 16; i < 32; ++i) CHECK(p[i] == 0xFF);
  CHECK(arrow::detail::format_value(*d, 0) == "123.45");
  CHECK(arrow::detail::format_value(*d, 1) == "-0.01");

  int128_t big = int128_t(1) << 100;
  auto d256 = decimal256_array(76, 0, {big, -big});
  REQUIRE(d256->buffers[1].size() == 64);
  const auto* q = d256->buffers[1].data();
  CHECK(q[12] == 0x10);  // bit 100 = byte 12, bit 4
  for (int i = 16; i < 32; ++i) CHECK(q[i] == 0);
  for (int i = 48; i < 64; ++i) CHECK(q[32 + 16 + (i - 48)] == 0xFF);
  CHECK(arrow::detail::format_value(*d256, 0) == "1267650600228229401496703205376");

  decimal_builder raw(decimal256(40, 5));
  std::vector<std::uint8_t> bytes(32, 0xAB);
  raw.append_bytes(bytes_view(bytes.data(), bytes.size()));
  auto r = raw.finish();
  CHECK(byte_vector(r->buffers[1]) == bytes);
  CHECK(contains(message_of<invalid_input_error>([&] { raw.append_bytes(bytes_view(bytes.data(), 16)); }),
                 "expected 32"));
  validate(d);
  validate(d256);
}

TEST_CASE("lists, large lists, fixed-size lists and structs") {
  auto items = make_array<std::int32_t>({1, 2, 3, std::nullopt, 5});
  auto l = make_list(items, {0, 2, 2, 5}, {true, false, true});
  CHECK(l->type->id == type_id::list);
  CHECK(l->length == 3);
  CHECK(l->null_count == 1);
  CHECK(l->type->children[0].name == "item");
  CHECK(l->value_offset(3) == 5);
  validate(l);

  auto ll = make_large_list(field{"element", int32(), true, {}}, items, {0, 5});
  CHECK(ll->type->id == type_id::large_list);
  CHECK(ll->type->children[0].name == "element");
  CHECK(ll->value_offset(1) == 5);
  validate(ll);

  CHECK(contains(message_of<invalid_input_error>([&] { make_list(items, {0, 3, 2}); }), "decrease"));
  CHECK(contains(message_of<invalid_input_error>([&] { make_list(items, {0, 6}); }), "past the child"));
  CHECK(contains(message_of<invalid_input_error>([&] { make_list(items, {}); }), "at least one"));
  CHECK(contains(message_of<invalid_input_error>([&] { make_list(items, {0, 1}, {true, true}); }), "validity"));
  CHECK(contains(message_of<invalid_input_error>([&] { make_list(field{"item", int64(), true, {}}, items, {0, 1}); }),
                 "int64"));

  auto vec = make_fixed_size_list(make_array<float>({1, 2, 3, 4, 5, 6}), 3, {true, false});
  CHECK(vec->type->id == type_id::fixed_size_list);
  CHECK(vec->type->list_size == 3);
  CHECK(vec->length == 2);
  CHECK(vec->null_count == 1);
  validate(vec);
  CHECK(contains(message_of<invalid_input_error>([] { make_fixed_size_list(make_array<float>({1, 2, 3}), 2); }),
                 "multiple"));

  auto st = struct_array({{"a", make_array<std::int32_t>({1, 2})}, {"s", string_array({"x", std::nullopt})}},
                         {true, false});
  CHECK(st->type->id == type_id::struct_);
  CHECK(st->type->children.size() == 2);
  CHECK(st->type->children[1].name == "s");
  CHECK(st->length == 2);
  CHECK(st->null_count == 1);
  validate(st);
  CHECK(contains(message_of<invalid_input_error>([] {
                   struct_array({{"a", make_array<std::int32_t>({1, 2})}, {"b", make_array<std::int32_t>({1})}});
                 }),
                 "'b' has length 1"));

  // Structs of lists of structs, nulls at every level.
  auto inner = struct_array({{"x", make_array<std::int64_t>({1, std::nullopt, 3})}}, {true, true, false});
  auto list_of_struct = make_list(inner, {0, 1, 3}, {true, false});
  auto outer = make_struct({field{"l", list_of_struct->type, true, {}}, field{"k", utf8(), false, {}}},
                           {list_of_struct, string_array({"p", "q"})}, {false, true});
  CHECK(outer->type->children[1].nullable == false);
  validate(outer);

  auto la = list_array<std::int32_t>({{1, 2}, {}, {3, std::nullopt}}, {true, false, true});
  CHECK(la->length == 3);
  CHECK(la->children[0]->length == 4);
  CHECK(la->value_offset(2) == 2);
  CHECK(la->is_null(1));
  auto sl = list_array<std::string>({{"a"}, {"b", std::nullopt}});
  CHECK(sl->children[0]->type->id == type_id::utf8);
}

TEST_CASE("record batches from named columns or a schema") {
  auto rb = make_batch({{"a", make_array<std::int32_t>({1, 2})}, {"b", string_array({"x", "y"})}});
  CHECK(rb.num_rows() == 2);
  REQUIRE(rb.schema->fields.size() == 2);
  CHECK(rb.schema->fields[1].name == "b");
  validate(rb);
  CHECK(contains(message_of<invalid_input_error>([] {
                   make_batch({{"a", make_array<std::int32_t>({1, 2})}, {"b", string_array({"x"})}});
                 }),
                 "'b' has 1 rows"));
  auto s = std::make_shared<arrow::schema>(arrow::schema{{field{"a", int64(), false, {}}}, {}});
  CHECK(contains(message_of<invalid_input_error>([&] { make_batch(s, {make_array<std::int32_t>({1})}); }), "int64"));
  auto ok = make_batch(s, {make_array<std::int64_t>({1})});
  CHECK(ok.num_rows() == 1);
}

// ---- equality ------------------------------------------------------------------

TEST_CASE("array_equals respects slices and ignores values under nulls") {
  auto a = make_array<std::int32_t>({1, 2, 3, 4, 5});
  auto b = make_array<std::int32_t>({3, 4});
  CHECK(array_equals(slice(a, 2, 2), b));
  CHECK(!array_equals(slice(a, 1, 2), b));
  CHECK(*first_difference(slice(a, 1, 2), b) == "at [0]: 2 vs 3");
  CHECK(*first_difference(a, b) == "lengths differ: 5 vs 2");

  // Same logical content, different garbage under the null.
  auto x = std::make_shared<array_data>(*make_array<std::int32_t>({1, std::nullopt}));
  aligned_buffer vals;
  std::int32_t raw[2] = {1, 999};
  vals.append(raw, sizeof raw);
  x->buffers[1] = shared_bytes(std::move(vals));
  CHECK(array_equals(x, make_array<std::int32_t>({1, std::nullopt})));
  CHECK(*first_difference(x, make_array<std::int32_t>({1, 2})) == "at [1]: null vs 2");

  CHECK(*first_difference(make_array<std::int32_t>({1}), make_array<std::int64_t>({1})) ==
        "types differ: int32 vs int64");
  CHECK(*first_difference(string_array({"a", "b"}), string_array({"a", "c"})) ==
        "at [1]: \"b\" (1 bytes) vs \"c\" (1 bytes)");
  CHECK(array_equals(bool_array({true, std::nullopt, false}), bool_array({true, std::nullopt, false})));
  CHECK(!array_equals(bool_array({true, false}), bool_array({true, true})));

  // Floats compare bitwise: NaN equals itself.
  auto n1 = make_array<double>({std::nan("")});
  CHECK(array_equals(n1, make_array<double>({std::nan("")})));
  CHECK(!array_equals(make_array<double>({0.0}), make_array<double>({-0.0})));
}

TEST_CASE("array_equals on nested arrays names the differing element") {
  auto l1 = list_array<std::int32_t>({{1, 2}, {}, {3, 4}});
  auto l2 = list_array<std::int32_t>({{1, 2}, {}, {3, 5}});
  CHECK(*first_difference(l1, l2) == "at [2][1]: 4 vs 5");
  auto l3 = list_array<std::int32_t>({{1, 2}, {7}, {3, 4}});
  CHECK(*first_difference(l1, l3) == "at [1]: list lengths differ: 0 vs 1");

  // A null list hides whatever range it covers.
  auto items = make_array<std::int32_t>({1, 2, 9, 9, 3});
  auto with_garbage = make_list(items, {0, 2, 4, 5}, {true, false, true});
  auto clean = make_list(make_array<std::int32_t>({1, 2, 3}), {0, 2, 2, 3}, {true, false, true});
  CHECK(array_equals(with_garbage, clean));

  // Struct children under a null struct slot are ignored; sliced structs compare.
  auto s1 = struct_array({{"a", make_array<std::int32_t>({1, 2, 3})}, {"b", string_array({"x", "y", "z"})}},
                         {true, false, true});
  auto s2 = struct_array({{"a", make_array<std::int32_t>({1, 0, 3})}, {"b", string_array({"x", "", "z"})}},
                         {true, false, true});
  CHECK(array_equals(s1, s2));
  auto s3 = struct_array({{"a", make_array<std::int32_t>({3})}, {"b", string_array({"w"})}});
  CHECK(*first_difference(slice(s1, 2, 1), s3) == "at [0].b: \"z\" (1 bytes) vs \"w\" (1 bytes)");
  auto s4 = struct_array({{"a", make_array<std::int32_t>({3})}, {"c", string_array({"z"})}});
  CHECK(contains(*first_difference(slice(s1, 2, 1), s4), "named 'b' vs 'c'"));

  auto f1 = make_fixed_size_list(make_array<float>({1, 2, 3, 4}), 2);
  auto f2 = make_fixed_size_list(make_array<float>({3, 4}), 2);
  CHECK(array_equals(slice(f1, 1, 1), f2));
  auto f3 = make_fixed_size_list(make_array<float>({3, 5}), 2);
  CHECK(*first_difference(slice(f1, 1, 1), f3) == "at [0][1]: 4 vs 5");

  // Item nullability counts unless told otherwise.
  auto nn = make_fixed_size_list(field{"item", float32(), false, {}}, make_array<float>({3, 4}), 2);
  CHECK(contains(*first_difference(f2, nn), "nullable vs not nullable"));
  compare_options loose;
  loose.check_nested_nullability = false;
  CHECK(array_equals(f2, nn, loose));

  auto rb1 = make_batch({{"a", l1}});
  auto rb2 = make_batch({{"a", l2}});
  CHECK(*first_difference(rb1, rb2) == "column 'a': at [2][1]: 4 vs 5");
  CHECK(batch_equals(rb1, make_batch({{"a", l1}})));
}

// ---- validation ------------------------------------------------------------------

namespace {

std::shared_ptr<array_data> mutable_copy(const array_ptr& a) { return std::make_shared<array_data>(*a); }

template <class T>
shared_bytes buffer_of(std::initializer_list<T> vs) {
  aligned_buffer b;
  for (T v : vs) b.append(&v, sizeof v);
  return shared_bytes(std::move(b));
}

}  // namespace

TEST_CASE("validate refuses malformed arrays with a message naming the problem") {
  SUBCASE("short value buffer") {
    auto a = mutable_copy(make_array<std::int32_t>({1, 2, 3}));
    a->length = 4;
    a->null_count = -1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a, "col"); }),
                   "array 'col': values buffer holds 12 bytes, needs 16"));
  }
  SUBCASE("offset past the buffers") {
    auto a = mutable_copy(make_array<std::int32_t>({1, 2, 3}));
    a->offset = 2;
    a->null_count = -1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "needs 20"));
  }
  SUBCASE("negative length and offset") {
    auto a = mutable_copy(make_array<std::int32_t>({1}));
    a->length = -1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "negative length"));
    a->length = 1;
    a->offset = -1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "negative offset"));
  }
  SUBCASE("wrong null count") {
    auto a = mutable_copy(make_array<std::int32_t>({1, std::nullopt}));
    a->null_count = 0;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "bitmap has 1 nulls"));
    a->buffers[0] = shared_bytes();
    a->null_count = 1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "no validity bitmap"));
  }
  SUBCASE("string offsets decreasing, negative or past the data") {
    auto s = mutable_copy(string_array({"ab", "c"}));
    s->buffers[1] = buffer_of<std::int32_t>({0, 2, 1});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "offsets decrease at slot 1"));
    s->buffers[1] = buffer_of<std::int32_t>({-1, 2, 3});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "negative"));
    s->buffers[1] = buffer_of<std::int32_t>({0, 2, 4});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "last offset 4 is past the end"));
    s->buffers[1] = buffer_of<std::int32_t>({0, 2});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "offsets buffer holds 8 bytes, needs 12"));
    s->buffers.pop_back();
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "needs 3 buffers"));
  }
  SUBCASE("invalid UTF-8 in utf8, but not in binary or under a null") {
    auto s = string_array({"ok", "\xC3\x28"});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(s); }), "value 1 is not valid UTF-8"));
    validate_options o;
    o.check_utf8 = false;
    validate(s, "s", o);
    validate(binary_array({"\xC3\x28"}));
    validate(string_array({std::nullopt}));
    auto hidden = mutable_copy(string_array({"ok", "\xFF"}));
    hidden->buffers[0] = buffer_of<std::uint8_t>({0b01});
    hidden->null_count = 1;
    validate(*hidden);
  }
  SUBCASE("list offsets past the items, wrong child type") {
    auto l = mutable_copy(make_list(make_array<std::int32_t>({1, 2, 3}), {0, 1, 3}));
    l->buffers[1] = buffer_of<std::int32_t>({0, 1, 4});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*l, "l"); }), "past the end of the item array (3)"));
    auto l2 = mutable_copy(make_list(make_array<std::int32_t>({1, 2, 3}), {0, 1, 3}));
    l2->children[0] = make_array<std::int64_t>({1, 2, 3});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*l2, "l"); }), "array 'l.item': the array is int64"));
  }
  SUBCASE("fixed-size list and struct children too short") {
    auto f = mutable_copy(make_fixed_size_list(make_array<float>({1, 2, 3, 4}), 2));
    f->length = 3;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*f); }), "has 4 values, needs 6"));
    auto s = mutable_copy(struct_array({{"a", make_array<std::int32_t>({1, 2})}}));
    s->offset = 1;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s); }), "member 'a' has 2 values, needs 3"));
  }
  SUBCASE("nested errors name the path") {
    auto bad_child = mutable_copy(string_array({"x"}));
    bad_child->buffers[1] = buffer_of<std::int32_t>({0, 5});
    auto s = std::make_shared<array_data>(*struct_array({{"inner", string_array({"y"})}}));
    s->children[0] = bad_child;
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*s, "top"); }), "array 'top.inner': last offset 5"));
  }
  SUBCASE("misaligned typed buffers are refused") {
    auto a = mutable_copy(make_array<std::int64_t>({1, 2}));
    aligned_buffer b(17);
    a->buffers[1] = shared_bytes(std::move(b)).slice(1, 16);
    CHECK(contains(message_of<invalid_input_error>([&] { validate(*a); }), "not aligned to 8"));
  }
  SUBCASE("bad types") {
    auto t = make_array<std::int32_t>({1}, time32(time_unit::micro));
    CHECK(contains(message_of<invalid_input_error>([&] { validate(t); }), "time32 takes seconds"));
    auto d = decimal128_array(39, 0, {1});
    CHECK(contains(message_of<invalid_input_error>([&] { validate(d); }), "precision"));
    CHECK(contains(message_of<invalid_input_error>([] { validate(array_ptr{}, "z"); }), "'z' is null"));
  }
  SUBCASE("record batches") {
    auto rb = make_batch({{"a", make_array<std::int32_t>({1, 2})}});
    rb.columns.push_back(make_array<std::int32_t>({1}));
    CHECK(contains(message_of<invalid_input_error>([&] { validate(rb); }), "1 fields but 2 columns"));
  }
  SUBCASE("valid slices and empty arrays pass") {
    validate(slice(string_array({"a", "bb", "ccc"}), 1, 2));
    validate(slice(make_list(make_array<std::int32_t>({1, 2, 3}), {0, 1, 3}), 1, 1));
    validate(make_array<std::int32_t>(std::vector<std::int32_t>{}));
    validate(string_array(std::vector<std::string>{}));
    validate(null_array(0));
  }
}

TEST_CASE("UTF-8 validation") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii text that is longer than eight bytes"));
  CHECK(is_valid_utf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  CHECK(!is_valid_utf8("\xC0\xAF"));          // overlong
  CHECK(!is_valid_utf8("\xE0\x80\xAF"));      // overlong
  CHECK(!is_valid_utf8("\xED\xA0\x80"));      // surrogate
  CHECK(!is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  CHECK(!is_valid_utf8("abc\xE2\x82"));       // truncated
  CHECK(!is_valid_utf8("\x80"));
}

// ---- Arrow C Data Interface ------------------------------------------------------

#include <lancet/arrow/c_data.hpp>

namespace {

// Every array type with nulls at every level, and a slice of each.
std::vector<std::pair<std::string, array_ptr>> all_types() {
  std::vector<std::pair<std::string, array_ptr>> v;
  v.emplace_back("null", null_array(3));
  v.emplace_back("bool", bool_array({true, std::nullopt, false, true, false, false, true, true, false}));
  v.emplace_back("i8", make_array<std::int8_t>({-1, std::nullopt, 127}));
  v.emplace_back("i16", make_array<std::int16_t>({-300, std::nullopt, 1}));
  v.emplace_back("i32", make_array<std::int32_t>({1, std::nullopt, 3}));
  v.emplace_back("i64", make_array<std::int64_t>({std::numeric_limits<std::int64_t>::min(), std::nullopt, 3}));
  v.emplace_back("u8", make_array<std::uint8_t>({255, std::nullopt, 0}));
  v.emplace_back("u16", make_array<std::uint16_t>({65535, 1, std::nullopt}));
  v.emplace_back("u32", make_array<std::uint32_t>({1, 2, 3}));
  v.emplace_back("u64", make_array<std::uint64_t>({~0ull, std::nullopt, 0}));
  v.emplace_back("f16", float16_array({1.5f, std::nullopt, -0.25f}));
  v.emplace_back("f32", make_array<float>({1.5f, std::nullopt, -0.25f}));
  v.emplace_back("f64", make_array<double>({1e300, std::nullopt, -0.0}));
  v.emplace_back("date32", make_array<std::int32_t>({19000, std::nullopt, -1}, date32()));
  v.emplace_back("date64", make_array<std::int64_t>({86400000, std::nullopt, 0}, date64()));
  v.emplace_back("time32s", make_array<std::int32_t>({1, 2, std::nullopt}, time32(time_unit::second)));
  v.emplace_back("time32ms", make_array<std::int32_t>({1, 2, 3}, time32(time_unit::milli)));
  v.emplace_back("time64us", make_array<std::int64_t>({1, std::nullopt, 3}, time64(time_unit::micro)));
  v.emplace_back("time64ns", make_array<std::int64_t>({1, 2, 3}, time64(time_unit::nano)));
  v.emplace_back("ts_s", make_array<std::int64_t>({1, std::nullopt, 3}, timestamp(time_unit::second)));
  v.emplace_back("ts_ms", make_array<std::int64_t>({1, 2, 3}, timestamp(time_unit::milli, "Europe/Paris")));
  v.emplace_back("ts_us", make_array<std::int64_t>({1, std::nullopt, 3}, timestamp(time_unit::micro, "UTC")));
  v.emplace_back("ts_ns", make_array<std::int64_t>({1, 2, 3}, timestamp(time_unit::nano, "+05:30")));
  v.emplace_back("dur_s", make_array<std::int64_t>({-1, std::nullopt, 3}, duration(time_unit::second)));
  v.emplace_back("dur_ms", make_array<std::int64_t>({1, 2, 3}, duration(time_unit::milli)));
  v.emplace_back("dur_us", make_array<std::int64_t>({1, 2, 3}, duration(time_unit::micro)));
  v.emplace_back("dur_ns", make_array<std::int64_t>({1, 2, 3}, duration(time_unit::nano)));
  v.emplace_back("dec128", decimal128_array(38, 10, {12345, std::nullopt, -7}));
  v.emplace_back("dec256", decimal256_array(76, 10, {int128_t(1) << 120, std::nullopt, -7}));
  v.emplace_back("utf8", string_array({"a", std::nullopt, "", "héllo"}));
  v.emplace_back("large_utf8", large_string_array({"a", std::nullopt, "xyz"}));
  v.emplace_back("binary", binary_array({std::string_view("\0\1\2", 3), std::nullopt, "z"}));
  v.emplace_back("large_binary", large_binary_array({"q", std::nullopt, ""}));
  v.emplace_back("fsb", fixed_size_binary_array(2, {"ab", std::nullopt, "cd"}));
  v.emplace_back("fsl", make_fixed_size_list(make_array<float>({1, 2, std::nullopt, 4, 5, 6}), 2, {true, true, false}));
  v.emplace_back("list", list_array<std::int32_t>({{1, std::nullopt}, {}, {3}}, {true, false, true}));
  v.emplace_back("large_list", make_large_list(string_array({"a", "b", std::nullopt}), {0, 1, 1, 3}, {true, false, true}));
  auto inner = struct_array({{"x", make_array<std::int64_t>({1, std::nullopt, 3, 4})},
                             {"y", string_array({"p", "q", std::nullopt, "s"})}},
                            {true, true, false, true});
  auto lst = make_list(inner, {0, 2, 2, 4}, {true, false, true});
  v.emplace_back("struct", make_struct({field{"l", lst->type, true, {{"k", std::string("v\0w", 3)}}},
                                        field{"n", int32(), false, {}}},
                                       {lst, make_array<std::int32_t>({7, 8, 9})}, {true, false, true}));
  v.emplace_back("fsl_of_struct", make_fixed_size_list(inner, 2, {false, true}));
  auto dict = make_dictionary(make_array<std::int32_t>({2, std::nullopt, 0, 2, 1}), string_array({"a", std::nullopt, "ccc"}));
  v.emplace_back("dict", dict);
  v.emplace_back("dict_u8_i64", make_dictionary(make_array<std::uint8_t>({1, 1, std::nullopt, 0}), make_array<std::int64_t>({-5, 7})));
  v.emplace_back("struct_of_dict", make_struct({field{"d", dict->type, true, {}}}, {dict}, {true, true, false, true, true}));
  v.emplace_back("list_of_dict", make_list(dict, {0, 2, 2, 5}, {true, false, true}));
  return v;
}

int g_foreign_releases = 0;

// A hand-made producer: owns its buffers and children; counts releases.
struct foreign_array {
  std::vector<std::vector<std::uint8_t>> storage;
  std::vector<const void*> buffers;
  std::vector<std::unique_ptr<foreign_array>> kids;
  std::vector<ArrowArray*> kid_ptrs;
  ArrowArray arr{};
};

void foreign_release(ArrowArray* a) {
  auto* f = static_cast<foreign_array*>(a->private_data);
  for (auto* k : f->kid_ptrs)
    if (k->release) k->release(k);
  ++g_foreign_releases;
  a->release = nullptr;
  if (f->arr.private_data == f && &f->arr != a) f->arr.release = nullptr;
  delete f;
}

// The root is moved into `out`; children stay inside their parent.
foreign_array* make_foreign(std::int64_t length, std::int64_t offset, std::int64_t null_count,
                            std::vector<std::vector<std::uint8_t>> bufs, std::vector<bool> null_buffer = {}) {
  auto* f = new foreign_array;
  f->storage = std::move(bufs);
  for (std::size_t i = 0; i < f->storage.size(); ++i)
    f->buffers.push_back(i < null_buffer.size() && null_buffer[i] ? nullptr : f->storage[i].data());
  f->arr.length = length;
  f->arr.offset = offset;
  f->arr.null_count = null_count;
  f->arr.n_buffers = std::int64_t(f->buffers.size());
  f->arr.buffers = f->buffers.data();
  f->arr.n_children = 0;
  f->arr.children = nullptr;
  f->arr.dictionary = nullptr;
  f->arr.release = &foreign_release;
  f->arr.private_data = f;
  return f;
}

template <class T>
std::vector<std::uint8_t> le_bytes(std::initializer_list<T> vs) {
  std::vector<std::uint8_t> out(vs.size() * sizeof(T));
  std::size_t i = 0;
  for (T v : vs) std::memcpy(out.data() + sizeof(T) * i++, &v, sizeof(T));
  return out;
}

int g_schema_releases = 0;
void counting_schema_release(ArrowSchema* s) {
  ++g_schema_releases;
  s->release = nullptr;
}
ArrowSchema leaf_schema(const char* format, const char* name = "c", std::int64_t flags = ARROW_FLAG_NULLABLE) {
  ArrowSchema s{};
  s.format = format;
  s.name = name;
  s.flags = flags;
  s.release = &counting_schema_release;
  return s;
}

}  // namespace

TEST_CASE("C data: format strings of every type") {
  CHECK(format_string(*null_type()) == "n");
  CHECK(format_string(*boolean()) == "b");
  CHECK(format_string(*int8()) == "c");
  CHECK(format_string(*uint8()) == "C");
  CHECK(format_string(*int16()) == "s");
  CHECK(format_string(*uint16()) == "S");
  CHECK(format_string(*int32()) == "i");
  CHECK(format_string(*uint32()) == "I");
  CHECK(format_string(*int64()) == "l");
  CHECK(format_string(*uint64()) == "L");
  CHECK(format_string(*float16()) == "e");
  CHECK(format_string(*float32()) == "f");
  CHECK(format_string(*float64()) == "g");
  CHECK(format_string(*date32()) == "tdD");
  CHECK(format_string(*date64()) == "tdm");
  CHECK(format_string(*time32(time_unit::second)) == "tts");
  CHECK(format_string(*time32(time_unit::milli)) == "ttm");
  CHECK(format_string(*time64(time_unit::micro)) == "ttu");
  CHECK(format_string(*time64(time_unit::nano)) == "ttn");
  CHECK(format_string(*timestamp(time_unit::micro, "UTC")) == "tsu:UTC");
  CHECK(format_string(*timestamp(time_unit::nano)) == "tsn:");
  CHECK(format_string(*timestamp(time_unit::second, "America/New_York")) == "tss:America/New_York");
  CHECK(format_string(*timestamp(time_unit::milli)) == "tsm:");
  CHECK(format_string(*duration(time_unit::second)) == "tDs");
  CHECK(format_string(*duration(time_unit::nano)) == "tDn");
  CHECK(format_string(*decimal128(38, 10)) == "d:38,10");
  CHECK(format_string(*decimal256(76, 10)) == "d:76,10,256");
  CHECK(format_string(*utf8()) == "u");
  CHECK(format_string(*large_utf8()) == "U");
  CHECK(format_string(*binary()) == "z");
  CHECK(format_string(*large_binary()) == "Z");
  CHECK(format_string(*fixed_size_binary(16)) == "w:16");
  CHECK(format_string(*fixed_size_list(float32(), 8)) == "+w:8");
  CHECK(format_string(*list(int32())) == "+l");
  CHECK(format_string(*large_list(int32())) == "+L");
  CHECK(format_string(*struct_({})) == "+s");
  CHECK(format_string(*dictionary(uint16(), utf8())) == "S");  // the indices; the values go in `dictionary`
}

TEST_CASE("C data: dictionary arrays export their values as `dictionary`, and need one to import") {
  auto a = make_dictionary(make_array<std::int16_t>({1, 0, std::nullopt}), large_string_array({"x", "yy"}));
  ArrowArray ca;
  ArrowSchema cs;
  export_array(a, &ca, &cs);
  CHECK(std::string(cs.format) == "s");
  CHECK(cs.n_children == 0);
  REQUIRE((cs.dictionary != nullptr));
  CHECK(std::string(cs.dictionary->format) == "U");
  CHECK(ca.n_children == 0);
  CHECK(ca.n_buffers == 2);
  REQUIRE((ca.dictionary != nullptr));
  CHECK(ca.dictionary->length == 2);
  const auto t = import_type(&cs);
  // Without its dictionary the array is refused (and still released).
  ArrowArray moved_out = *ca.dictionary;
  ca.dictionary->release = nullptr;
  ca.dictionary = nullptr;
  CHECK(contains(message_of<invalid_input_error>([&] { import_array(&ca, t); }), "needs its dictionary array"));
  release(&moved_out);
  // A plain type given an array with a dictionary is refused too.
  export_array(a, &ca);
  CHECK(contains(message_of<invalid_input_error>([&] { import_array(&ca, int16()); }), "has a dictionary"));
}

TEST_CASE("C data: every type round-trips through export and import, whole and sliced") {
  for (const auto& [name, a] : all_types()) {
    CAPTURE(name);
    ArrowArray ca;
    ArrowSchema cs;
    export_array(a, &ca, &cs);
    CHECK((ca.release != nullptr));
    CHECK(std::string(cs.format) == format_string(*a->type));
    auto back = import_array(&ca, &cs);
    CHECK((ca.release == nullptr));  // moved
    CHECK((cs.release == nullptr));  // released
    auto d = first_difference(a, back);
    CHECK_MESSAGE(!d, (d ? *d : std::string()));
    for (std::int64_t off = 0; off <= a->length; ++off) {
      for (std::int64_t len = 0; off + len <= a->length; ++len) {
        auto s = slice(a, off, len);
        ArrowArray sa;
        export_array(s, &sa);
        CHECK(sa.offset == s->offset);
        auto sb = import_array(&sa, a->type);
        auto sd = first_difference(s, sb);
        REQUIRE_MESSAGE(!sd, name << " [" << off << ", +" << len << "): " << (sd ? *sd : std::string()));
      }
    }
  }
}

TEST_CASE("C data: import is zero copy and survives the exporter's objects") {
  auto a = make_array<std::int64_t>({10, 20, std::nullopt, 40});
  const auto* values = a->buffers[1].data();
  ArrowArray ca;
  export_array(a, &ca);
  std::weak_ptr<const array_data> watch = a;
  a.reset();
  CHECK(!watch.expired());  // the export holds it
  auto b = import_array(&ca, int64());
  CHECK(b->buffers[1].data() == values);  // same memory, no copy
  CHECK(b->value<std::int64_t>(3) == 40);
  CHECK(b->is_null(2));
  auto part = b->buffers[1];  // one buffer alone keeps the whole import alive
  b.reset();
  CHECK(!watch.expired());
  part = shared_bytes();
  CHECK(watch.expired());  // the last buffer gone: released, our array freed
}

TEST_CASE("C data: a foreign array is released exactly once, when its last buffer goes") {
  g_foreign_releases = 0;
  auto* f = make_foreign(3, 0, 1, {{0b101}, le_bytes<std::int32_t>({1, 2, 3})});
  ArrowArray moved = f->arr;
  f->arr.release = nullptr;
  auto a = import_array(&moved, int32());
  CHECK((moved.release == nullptr));
  CHECK(g_foreign_releases == 0);
  CHECK(a->value<std::int32_t>(2) == 3);
  CHECK(a->is_null(1));
  auto validity = a->buffers[0];
  a.reset();
  CHECK(g_foreign_releases == 0);
  validity = shared_bytes();
  CHECK(g_foreign_releases == 1);
}

TEST_CASE("C data: a foreign nested array (children share the root's release)") {
  g_foreign_releases = 0;
  // list<utf8> with 2 lists over 3 strings, the root sliced by offset 1.
  auto* root = make_foreign(1, 1, 0, {{}, le_bytes<std::int32_t>({0, 1, 3})}, {true});
  auto strings = std::unique_ptr<foreign_array>(
      make_foreign(3, 0, 0, {{}, le_bytes<std::int32_t>({0, 1, 3, 6}), {'a', 'b', 'c', 'd', 'e', 'f'}}, {true}));
  strings->arr.private_data = strings.get();
  root->kid_ptrs.push_back(&strings->arr);
  root->kids.push_back(std::move(strings));
  root->arr.n_children = 1;
  root->arr.children = root->kid_ptrs.data();
  // Children's release only marks them (their parent owns them).
  root->kids[0]->arr.release = [](ArrowArray* a) {
    ++g_foreign_releases;
    a->release = nullptr;
  };
  ArrowArray moved = root->arr;
  root->arr.release = nullptr;
  auto l = import_array(&moved, list(utf8()));
  REQUIRE(l->length == 1);
  CHECK(l->offset == 1);
  auto expected = slice(list_array<std::string>({{"a"}, {"bc", "def"}}), 1, 1);
  auto d = first_difference(l, expected);
  CHECK_MESSAGE(!d, (d ? *d : std::string()));
  l.reset();
  CHECK(g_foreign_releases == 2);  // root + its child, once each
}

TEST_CASE("C data: malformed foreign arrays are refused and still released once") {
  SUBCASE("decreasing offsets") {
    g_foreign_releases = 0;
    auto* f = make_foreign(2, 0, 0, {{}, le_bytes<std::int32_t>({0, 3, 1}), {'a', 'b', 'c'}}, {true});
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    CHECK(contains(message_of<invalid_input_error>([&] { import_array(&m, utf8()); }), "offsets decrease"));
    CHECK(g_foreign_releases == 1);
  }
  SUBCASE("wrong buffer count") {
    g_foreign_releases = 0;
    auto* f = make_foreign(1, 0, 0, {{}, le_bytes<std::int32_t>({0, 1})}, {true});
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    CHECK(contains(message_of<invalid_input_error>([&] { import_array(&m, utf8()); }), "needs 3 buffers"));
    CHECK(g_foreign_releases == 1);
  }
  SUBCASE("nulls claimed without a bitmap") {
    g_foreign_releases = 0;
    auto* f = make_foreign(2, 0, 1, {{}, le_bytes<std::int32_t>({1, 2})}, {true});
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    CHECK(contains(message_of<invalid_input_error>([&] { import_array(&m, int32()); }), "no validity bitmap"));
    CHECK(g_foreign_releases == 1);
  }
  SUBCASE("null value buffer in a non-empty array") {
    g_foreign_releases = 0;
    auto* f = make_foreign(2, 0, 0, {{}, {}}, {true, true});
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    CHECK(contains(message_of<invalid_input_error>([&] { import_array(&m, int32()); }), "values buffer is null"));
    CHECK(g_foreign_releases == 1);
  }
  SUBCASE("already released") {
    ArrowArray m{};
    CHECK(contains(message_of<invalid_input_error>([&] { import_array(&m, int32()); }), "already released"));
  }
  SUBCASE("empty arrays may leave every buffer null") {
    g_foreign_releases = 0;
    auto* f = make_foreign(0, 0, 0, {{}, {}, {}}, {true, true, true});
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    auto a = import_array(&m, utf8());
    CHECK(a->length == 0);
    CHECK(a->value_offset(0) == 0);
    a.reset();
    CHECK(g_foreign_releases == 1);
  }
  SUBCASE("misaligned buffers are copied, not misread") {
    g_foreign_releases = 0;
    auto bytes = le_bytes<std::int64_t>({0, 5, 6});
    bytes.insert(bytes.begin(), 0xEE);  // shift by one byte
    auto* f = make_foreign(3, 0, 0, {{}, bytes}, {true});
    f->buffers[1] = f->storage[1].data() + 1;
    ArrowArray m = f->arr;
    f->arr.release = nullptr;
    auto a = slice(import_array(&m, int64()), 1, 2);
    CHECK(a->value<std::int64_t>(0) == 5);
    CHECK(a->value<std::int64_t>(1) == 6);
  }
}

TEST_CASE("C data: exported children can be moved out and released on their own") {
  auto st = struct_array({{"a", make_array<std::int32_t>({1, 2})}, {"b", string_array({"x", "y"})}});
  ArrowArray ca;
  export_array(st, &ca);
  REQUIRE(ca.n_children == 2);
  ArrowArray child = *ca.children[1];  // move child "b" out
  ca.children[1]->release = nullptr;
  release(&ca);
  CHECK((ca.release == nullptr));
  st.reset();
  auto b = import_array(&child, utf8());
  CHECK(b->string_value(1) == "y");
}

TEST_CASE("C data: schemas with names, nullability, metadata and nesting") {
  arrow::schema s;
  s.fields.push_back(field{"id", int64(), false, {{"primary", "yes"}}});
  s.fields.push_back(field{"vec", fixed_size_list(field{"item", float32(), false, {}}, 4), true, {}});
  s.fields.push_back(
      field{"tags", list(field{"element", utf8(), true, {{"k", std::string("bin\0ary", 7)}}}), true, {}});
  s.fields.push_back(field{"st", struct_({field{"x", timestamp(time_unit::micro, "UTC"), true, {}},
                                         field{"d", decimal256(50, 2), false, {}}}),
                           true,
                           {}});
  s.metadata = {{"a", "1"}, {"empty", ""}};
  ArrowSchema cs;
  export_schema(s, &cs);
  CHECK(std::string(cs.format) == "+s");
  REQUIRE(cs.n_children == 4);
  CHECK(std::string(cs.children[0]->name) == "id");
  CHECK(cs.children[0]->flags == 0);
  CHECK(cs.children[1]->flags == ARROW_FLAG_NULLABLE);
  CHECK(std::string(cs.children[1]->format) == "+w:4");
  CHECK(std::string(cs.children[3]->children[1]->format) == "d:50,2,256");
  // Metadata bytes exactly as the specification lays them out.
  const char* md = cs.children[0]->metadata;
  std::int32_t n, kl, vl;
  std::memcpy(&n, md, 4);
  std::memcpy(&kl, md + 4, 4);
  std::memcpy(&vl, md + 8 + kl, 4);
  CHECK(n == 1);
  CHECK(std::string(md + 8, std::size_t(kl)) == "primary");
  CHECK(std::string(md + 12 + kl, std::size_t(vl)) == "yes");

  auto back = import_schema(&cs);
  CHECK((cs.release == nullptr));
  REQUIRE(back.fields.size() == 4);
  CHECK(back.metadata == s.metadata);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(back.fields[i].name == s.fields[i].name);
    CHECK(back.fields[i].nullable == s.fields[i].nullable);
    CHECK(back.fields[i].metadata == s.fields[i].metadata);
    CHECK(equals(*back.fields[i].type, *s.fields[i].type));
  }
  CHECK(back.fields[2].type->children[0].name == "element");
  CHECK(back.fields[2].type->children[0].metadata[0].second == std::string("bin\0ary", 7));
}

TEST_CASE("C data: parsing format strings from a foreign schema") {
  struct {
    const char* format;
    type_ptr type;
  } cases[] = {
      {"tsu:UTC", timestamp(time_unit::micro, "UTC")}, {"tsn:", timestamp(time_unit::nano)},
      {"tss:+05:30", timestamp(time_unit::second, "+05:30")}, {"w:16", fixed_size_binary(16)},
      {"d:38,10", decimal128(38, 10)}, {"d:38,10,128", decimal128(38, 10)},
      {"d:76,10,256", decimal256(76, 10)}, {"d:5,-2", decimal128(5, -2)}, {"tdD", date32()},
      {"tdm", date64()}, {"tts", time32(time_unit::second)}, {"ttm", time32(time_unit::milli)},
      {"ttu", time64(time_unit::micro)}, {"ttn", time64(time_unit::nano)}, {"tDs", duration(time_unit::second)},
      {"tDm", duration(time_unit::milli)}, {"tDu", duration(time_unit::micro)}, {"tDn", duration(time_unit::nano)},
      {"e", float16()}, {"U", large_utf8()}, {"Z", large_binary()},
  };
  for (const auto& c : cases) {
    CAPTURE(c.format);
    g_schema_releases = 0;
    auto s = leaf_schema(c.format);
    auto f = import_field(&s);
    CHECK(g_schema_releases == 1);
    CHECK(f.name == "c");
    CHECK(f.nullable);
    CHECK(equals(*f.type, *c.type));
  }
  // Nested: +w:8 with one float child; +L; struct with no name, not nullable.
  auto item = leaf_schema("f", "item", 0);
  ArrowSchema* kids[] = {&item};
  auto fsl = leaf_schema("+w:8", "v");
  fsl.n_children = 1;
  fsl.children = kids;
  auto f = import_field(&fsl);
  CHECK(equals(*f.type, *fixed_size_list(field{"item", float32(), false, {}}, 8)));

  for (const char* bad : {"vu", "vz", "+vl", "tiM", "+ud:0,1", "+r", "d:9,2,32", "?", "tsx:", "w:x", "+w:"}) {
    CAPTURE(bad);
    g_schema_releases = 0;
    auto s = leaf_schema(bad);
    try {
      import_field(&s);
      FAIL("accepted " << bad);
    } catch (const unsupported_error& e) {
      CHECK(contains(e.what(), bad));
    } catch (const invalid_input_error& e) {
      CHECK(contains(e.what(), "malformed"));
    }
    CHECK(g_schema_releases == 1);
  }
  auto dict_values = leaf_schema("u");
  auto dict = leaf_schema("i");
  dict.dictionary = &dict_values;
  CHECK(equals(*import_field(&dict).type, *dictionary(int32(), utf8())));
  auto float_values = leaf_schema("u");
  auto float_dict = leaf_schema("f");  // indices must be integers
  float_dict.dictionary = &float_values;
  CHECK(contains(message_of<invalid_input_error>([&] { import_field(&float_dict); }), "must be an integer type"));
  auto map_no_child = leaf_schema("+m");  // maps are imported (an entries struct child)
  CHECK(contains(message_of<invalid_input_error>([&] { import_field(&map_no_child); }), "needs 1 children"));
  auto list_no_child = leaf_schema("+l");
  CHECK(contains(message_of<invalid_input_error>([&] { import_field(&list_no_child); }), "needs 1 children"));
  auto not_struct = leaf_schema("i");
  CHECK(contains(message_of<invalid_input_error>([&] { import_schema(&not_struct); }), "must be a struct"));
}

TEST_CASE("C data: record batches as struct arrays") {
  auto rb = make_batch({{"a", make_array<std::int32_t>({1, 2, 3})}, {"b", string_array({"x", std::nullopt, "z"})}},
                       {{"origin", "test"}});
  ArrowArray ca;
  ArrowSchema cs;
  export_record_batch(rb, &ca, &cs);
  CHECK(std::string(cs.format) == "+s");
  CHECK(ca.length == 3);
  CHECK(ca.n_children == 2);
  CHECK(ca.null_count == 0);
  auto back = import_record_batch(&ca, &cs);
  CHECK(back.schema->metadata == rb.schema->metadata);
  auto d = first_difference(rb, back);
  CHECK_MESSAGE(!d, (d ? *d : std::string()));

  // A sliced struct becomes sliced columns.
  auto st = slice(struct_array({{"a", make_array<std::int32_t>({1, 2, 3})}}), 1, 2);
  ArrowArray sa;
  export_array(st, &sa);
  auto sch = std::make_shared<const arrow::schema>(arrow::schema{{field{"a", int32(), true, {}}}, {}});
  auto sliced = import_record_batch(&sa, sch);
  CHECK(sliced.num_rows() == 2);
  CHECK(sliced.columns[0]->value<std::int32_t>(0) == 2);

  // Null rows cannot be a batch.
  ArrowArray na;
  export_array(struct_array({{"a", make_array<std::int32_t>({1})}}, {false}), &na);
  CHECK(contains(message_of<invalid_input_error>([&] { import_record_batch(&na, sch); }), "null rows"));
}
