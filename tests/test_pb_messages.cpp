// Lance's protobuf messages, all declared with pb/message.hpp's descriptors: file2.proto,
// encodings_v2_0.proto, encodings_v2_1.proto, file.proto, index.proto and the table
// protos (table, rowids, transaction). Round trips, hand-checked bytes, unknown fields,
// bad input.
#include <doctest/doctest.h>

#include <lancet/pb/encodings_v2_0.hpp>
#include <lancet/pb/encodings_v2_1.hpp>
#include <lancet/pb/file.hpp>
#include <lancet/pb/file2.hpp>
#include <lancet/pb/index.hpp>
#include <lancet/pb/table.hpp>
#include <lancet/encoding/field_encoder.hpp>

#include "support/text.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

using namespace lancet;
namespace enc20 = lancet::pb::enc20;
namespace file2 = lancet::pb::file2;
namespace enc21 = lancet::pb::enc21;

namespace {

using lancet::testing::hex;

std::string byte_string(std::initializer_list<int> bs) {
  std::string s;
  for (int b : bs) s.push_back(char(b));
  return s;
}

// Offsets at which a top-level field of `bytes` ends (0 included).
std::vector<std::size_t> field_boundaries(const std::string& bytes) {
  std::vector<std::size_t> out{0};
  pb::reader r(bytes);
  while (!r.done()) {
    r.next();
    out.push_back(r.position());
  }
  return out;
}

// Every strict prefix either decodes (it ends on a field boundary) or throws
// corrupt_error; prefixes that cut a field must throw corrupt_error. Nothing else.
template <class Msg>
void check_truncations(const std::string& bytes) {
  auto bounds = field_boundaries(bytes);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const bool boundary = std::find(bounds.begin(), bounds.end(), n) != bounds.end();
    bool corrupt = false;
    try {
      (void)pb::decode<Msg>(std::string_view(bytes).substr(0, n));
    } catch (const corrupt_error&) {
      corrupt = true;
    } catch (const std::exception& e) {
      FAIL("prefix of " << n << " bytes threw a non-corrupt error: " << e.what());
    }
    if (!boundary) CHECK_MESSAGE(corrupt, "prefix of " << n << " bytes cut a field but decoded");
  }
}

// Encode, decode, compare; re-encoding gives the same bytes; copies are deep and equal.
template <class Msg>
std::string encoded(const Msg& m) {
  const std::string bytes = pb::encode(m);
  const Msg back = pb::decode<Msg>(bytes);
  CHECK(back == m);
  CHECK(pb::encode(back) == bytes);
  Msg copy = m;
  CHECK(copy == m);
  Msg assigned;
  assigned = copy;
  CHECK(assigned == m);
  check_truncations<Msg>(bytes);
  return bytes;
}

// Unknown fields of every wire type, appended to a message.
std::string unknown_fields() {
  pb::writer w;
  w.uint64(100, 7);
  w.fixed64(101, 0x0102030405060708ull);
  w.string(102, "ignored");
  w.fixed32(103, 9);
  return w.take();
}

enc20::array_encoding flat32(std::uint32_t index = 0, enc20::buffer::buffer_type t = enc20::buffer::page) {
  return enc20::array_encoding{enc20::flat{.bits_per_value = 32, .buffer = enc20::buffer{index, t}}};
}

}  // namespace

TEST_CASE("pb::box owns, copies deeply and compares by value") {
  pb::box<std::string> a;
  CHECK(!a);
  CHECK_THROWS_AS((void)a.value("x"), corrupt_error);
  a = std::string("hello");
  pb::box<std::string> b = a;
  CHECK(b == a);
  *b += "!";
  CHECK(*a == "hello");
  CHECK(*b == "hello!");
  CHECK(!(a == b));
  pb::box<std::string> c = std::move(b);
  CHECK(*c == "hello!");
  c.reset();
  CHECK(c == pb::box<std::string>());
}

TEST_SUITE("file2") {
  TEST_CASE("DeferredEncoding and DirectEncoding round trip with known bytes") {
    file2::deferred_encoding d{.buffer_location = 300, .buffer_length = 5};
    CHECK(encoded(d) == byte_string({0x08, 0xac, 0x02, 0x10, 0x05}));
    CHECK(encoded(file2::deferred_encoding{}).empty());
    file2::direct_encoding x{.encoding = "ab"};
    CHECK(encoded(x) == byte_string({0x0a, 0x02, 'a', 'b'}));
  }

  TEST_CASE("Encoding oneof: each variant round trips, unknown variants are refused") {
    file2::encoding e1{file2::deferred_encoding{1, 2}};
    CHECK(encoded(e1) == byte_string({0x0a, 0x04, 0x08, 0x01, 0x10, 0x02}));
    CHECK(e1.is_deferred());
    file2::encoding e2{file2::direct_encoding{"z"}};
    CHECK(encoded(e2) == byte_string({0x12, 0x03, 0x0a, 0x01, 'z'}));
    CHECK(e2.is_direct());
    file2::encoding e3{pb::empty{}};
    CHECK(encoded(e3) == byte_string({0x1a, 0x00}));
    CHECK(e3.is_none());
    CHECK(encoded(file2::encoding{}).empty());

    // Field 4 is well-formed protobuf but no Encoding variant we know.
    CHECK_THROWS_AS(pb::decode<file2::encoding>(byte_string({0x22, 0x00})), unsupported_error);
    // Known variant with the wrong wire type is corrupt.
    CHECK_THROWS_AS(pb::decode<file2::encoding>(byte_string({0x10, 0x01})), corrupt_error);
    // Last variant wins, as in protobuf.
    auto last = pb::decode<file2::encoding>(byte_string({0x12, 0x03, 0x0a, 0x01, 'z', 0x1a, 0x00}));
    CHECK(last.is_none());
  }

  TEST_CASE("Encoding wraps and unwraps an Any with Lance's type URL, byte for byte") {
    auto e = file2::encoding::wrap(flat32());
    const std::string url = "/lance.encodings.ArrayEncoding";
    const std::string flat_bytes = byte_string({0x0a, 0x04, 0x08, 0x20, 0x12, 0x00});
    std::string any_bytes = byte_string({0x0a, int(url.size())}) + url + byte_string({0x12, 0x06}) + flat_bytes;
    std::string expected = byte_string({0x12, 42, 0x0a, 40}) + any_bytes;
    CHECK(hex(pb::encode(e), " ") == hex(expected, " "));
    CHECK(e.direct_any().type_url == url);
    CHECK(e.unwrap<enc20::array_encoding>() == flat32());
    // Asking for the wrong message type is refused.
    CHECK_THROWS_AS(e.unwrap<enc20::column_encoding>(), corrupt_error);
    CHECK_THROWS_AS((void)file2::encoding{file2::deferred_encoding{}}.direct_any(), unsupported_error);
    CHECK_THROWS_AS((void)file2::encoding{pb::empty{}}.direct_any(), corrupt_error);
    CHECK_THROWS_AS((void)file2::encoding{}.direct_any(), corrupt_error);
    // Garbage inside the direct bytes is corrupt.
    CHECK_THROWS_AS((void)file2::encoding{file2::direct_encoding{"\x0a\x05"}}.direct_any(), corrupt_error);

    auto ce = file2::encoding::wrap(enc20::column_encoding::values());
    CHECK(ce.direct_any().type_url == "/lance.encodings.ColumnEncoding");
    // ColumnEncoding{values: Empty} is 0a 00.
    CHECK(hex(ce.direct_any().value, " ") == "0a 00");
  }

  TEST_CASE("ColumnMetadata and Page: hand-checked bytes, round trip, unknown fields") {
    file2::column_metadata::page p;
    p.buffer_offsets = {0, 300};
    p.buffer_sizes = {128, 1};
    p.length = 10;
    p.encoding = file2::encoding{file2::direct_encoding{"E"}};
    p.priority = 5;
    const std::string page_bytes = byte_string({0x0a, 0x03, 0x00, 0xac, 0x02,  // offsets packed
                                             0x12, 0x03, 0x80, 0x01, 0x01,  // sizes packed
                                             0x18, 0x0a,                    // length
                                             0x22, 0x05, 0x12, 0x03, 0x0a, 0x01, 'E',  // encoding
                                             0x28, 0x05});                  // priority
    CHECK(hex(encoded(p), " ") == hex(page_bytes, " "));

    file2::column_metadata cm;
    cm.encoding = file2::encoding::wrap(enc20::column_encoding::values());
    cm.pages = {p, p};
    cm.pages[1].priority = 10;
    cm.buffer_offsets = {4096};
    cm.buffer_sizes = {64};
    const std::string cm_bytes = encoded(cm);
    // Page is field 2, repeated.
    auto back = pb::decode<file2::column_metadata>(cm_bytes);
    REQUIRE(back.pages.size() == 2);
    CHECK(back.pages[1].priority == 10);
    CHECK(back.encoding->unwrap<enc20::column_encoding>() == enc20::column_encoding::values());

    // Unknown fields anywhere are skipped.
    auto with_unknown = pb::decode<file2::column_metadata::page>(unknown_fields() + page_bytes + unknown_fields());
    CHECK(with_unknown == p);
    // Unpacked repeated scalars are accepted too (protobuf parsers must).
    auto unpacked = pb::decode<file2::column_metadata::page>(byte_string({0x08, 0x07, 0x08, 0x08, 0x10, 0x01, 0x10, 0x02}));
    CHECK(unpacked.buffer_offsets == std::vector<std::uint64_t>{7, 8});
    CHECK(unpacked.buffer_sizes == std::vector<std::uint64_t>{1, 2});
    // Offsets and sizes must pair up.
    CHECK_THROWS_AS(pb::decode<file2::column_metadata::page>(byte_string({0x08, 0x07})), corrupt_error);
    file2::column_metadata::page bad;
    bad.buffer_offsets = {1};
    pb::writer w;
    CHECK_THROWS_AS(pb::encode(w, bad), invalid_input_error);
    // Wire-type mismatches are corrupt.
    CHECK_THROWS_AS(pb::decode<file2::column_metadata::page>(byte_string({0x1a, 0x00})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<file2::column_metadata>(byte_string({0x10, 0x01})), corrupt_error);
  }
}

TEST_SUITE("encodings_v2_0") {
  TEST_CASE("Flat{32 bits, buffer 0 in the page}: hand-checked bytes") {
    // ArrayEncoding.flat (field 1) { bits_per_value (1) = 32, buffer (2) = {} }: the
    // empty Buffer is still written because message fields have presence.
    CHECK(hex(encoded(flat32()), " ") == "0a 04 08 20 12 00");
    CHECK(hex(encoded(flat32(1, enc20::buffer::column)), " ") == "0a 08 08 20 12 04 08 01 10 01");
    CHECK(hex(encoded(flat32(2, enc20::buffer::file)), " ") == "0a 08 08 20 12 04 08 02 10 02");
    enc20::flat compressed{.bits_per_value = 8, .buffer = enc20::buffer{}, .compression = enc20::compression{"zstd", 3}};
    CHECK(hex(encoded(enc20::array_encoding{compressed}), " ") ==
          "0a 0e 08 08 12 00 1a 08 0a 04 7a 73 74 64 10 03");
    // A level of zero is present (proto3 optional) and written.
    enc20::compression level0{"lz4", 0};
    CHECK(hex(encoded(level0), " ") == "0a 03 6c 7a 34 10 00");
    enc20::compression negative{"zstd", -1};
    CHECK(encoded(negative).size() == 6 + 11);
  }

  TEST_CASE("every ArrayEncoding variant round trips") {
    using namespace enc20;
    std::vector<array_encoding> all = {
        flat32(),
        array_encoding{nullable{nullable::no_null{flat32()}}},
        array_encoding{nullable{nullable::some_null{array_encoding{flat{.bits_per_value = 1, .buffer = buffer{0}}},
                                                    flat32(1)}}},
        array_encoding{nullable{nullable::all_null{}}},
        array_encoding{fixed_size_list{.dimension = 128, .items = flat32(), .has_validity = true}},
        array_encoding{list{.offsets = flat32(), .null_offset_adjustment = 11, .num_items = 10}},
        array_encoding{simple_struct{}},
        array_encoding{binary{.indices = flat32(), .bytes = flat32(1), .null_adjustment = 99}},
        array_encoding{dictionary{.indices = flat32(), .items = flat32(1), .num_dictionary_items = 3}},
        array_encoding{fsst{.binary = flat32(), .symbol_table = std::string("\x00\x01sym", 5)}},
        array_encoding{packed_struct{.inner = {flat32(), flat32(1)}, .buffer = buffer{2}}},
        array_encoding{bitpacked{.compressed_bits_per_value = 3,
                                 .uncompressed_bits_per_value = 32,
                                 .buffer = buffer{0},
                                 .is_signed = true}},
        array_encoding{fixed_size_binary{.bytes = flat32(), .byte_width = 16}},
        array_encoding{bitpacked_for_non_neg{.compressed_bits_per_value = 5,
                                             .uncompressed_bits_per_value = 64,
                                             .buffer = buffer{1}}},
        array_encoding{constant{.value = std::string("\x00\x00\x80\x3f", 4)}},
        array_encoding{inline_bitpacking{.uncompressed_bits_per_value = 16}},
        array_encoding{out_of_line_bitpacking{.uncompressed_bits_per_value = 64, .compressed_bits_per_value = 7}},
        array_encoding{variable{.bits_per_offset = 32}},
        array_encoding{packed_struct_fixed_width_mini_block{.flat = flat32(), .bits_per_values = {32, 64, 8}}},
        array_encoding{block{.scheme = "zstd"}},
        array_encoding{rle{.bits_per_value = 64}},
        array_encoding{general_mini_block{.inner = array_encoding{rle{8}}, .compression = compression{"lz4", {}}}},
        array_encoding{byte_stream_split{.bits_per_value = 32}},
    };
    // Every proto field number 1..21 is covered, and index == field number.
    std::vector<bool> seen(22, false);
    for (const auto& e : all) {
      CAPTURE(e.value.index());
      const std::string b = encoded(e);
      REQUIRE(!b.empty());
      CHECK(std::size_t(std::uint8_t(b[0]) >> 3) == e.value.index());
      seen[e.value.index()] = true;
      // Unknown fields inside the variant's message are skipped (Nullable is nothing but
      // a oneof, so there an unknown field is an unknown variant).
      pb::reader r(b);
      auto f = r.next();
      std::string inner(reinterpret_cast<const char*>(f.data.data()), f.data.size());
      pb::writer w;
      w.bytes(f.number, unknown_fields() + inner + unknown_fields());
      if (e.value.index() == array_encoding::f_nullable)
        CHECK_THROWS_AS(pb::decode<array_encoding>(w.bytes()), unsupported_error);
      else
        CHECK(pb::decode<array_encoding>(w.bytes()) == e);
    }
    for (std::size_t i = 1; i <= 21; ++i) CHECK_MESSAGE(seen[i], "variant " << i << " not covered");
    // All distinct.
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = i + 1; j < all.size(); ++j) CHECK(!(all[i] == all[j]));
    CHECK(encoded(array_encoding{}).empty());
  }

  TEST_CASE("hand-checked bytes of nested encodings") {
    using namespace enc20;
    // Nullable.NoNull(Flat{32, page 0}) = 12 (nullable) 0a (no_nulls) 0a (values) ...
    CHECK(hex(pb::encode(array_encoding{nullable{nullable::no_null{flat32()}}}), " ") ==
          "12 0a 0a 08 0a 06 0a 04 08 20 12 00");
    CHECK(hex(pb::encode(array_encoding{nullable{nullable::all_null{}}}), " ") == "12 02 1a 00");
    // FixedSizeList: prost writes fields in field-number order, so items (2) precedes
    // has_validity (3) even though the proto declares has_validity first.
    CHECK(hex(pb::encode(array_encoding{fixed_size_list{.dimension = 4, .items = flat32(), .has_validity = true}}), " ") ==
          "1a 0c 08 04 12 06 0a 04 08 20 12 00 18 01");
  }

  TEST_CASE("unknown ArrayEncoding variants are unsupported, bad wire types corrupt") {
    // Field 22: well-formed, but not a variant we know (a newer Lance's encoding).
    CHECK_THROWS_AS(pb::decode<enc20::array_encoding>(byte_string({0xb2, 0x01, 0x00})), unsupported_error);
    CHECK_THROWS_AS(pb::decode<enc20::array_encoding>(byte_string({0x08, 0x01})), corrupt_error);  // flat as varint
    CHECK_THROWS_AS(pb::decode<enc20::nullable>(byte_string({0x22, 0x00})), unsupported_error);
    CHECK_THROWS_AS(pb::decode<enc20::column_encoding>(byte_string({0x22, 0x00})), unsupported_error);
    // Unknown variant deep inside a tree.
    CHECK_THROWS_AS(pb::decode<enc20::array_encoding>(
                        byte_string({0x12, 0x07, 0x0a, 0x05, 0x0a, 0x03, 0xb2, 0x01, 0x00})),
                    unsupported_error);  // nullable.no_nulls.values is variant 22
    // Scalar with a len wire type.
    CHECK_THROWS_AS(pb::decode<enc20::flat>(byte_string({0x0a, 0x00})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<enc20::buffer>(byte_string({0x15, 0, 0, 0, 0})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<enc20::flat>(byte_string({0x12, 0x01})), corrupt_error);  // buffer runs past the end
  }

  TEST_CASE("deep nesting: copies are deep, decoding is bounded") {
    using namespace enc20;
    auto nest = [](int levels) {
      array_encoding e = flat32();
      for (int i = 0; i < levels; ++i) e = array_encoding{nullable{nullable::no_null{std::move(e)}}};
      return e;
    };
    // Each level is three protobuf messages (ArrayEncoding, Nullable, NoNull).
    array_encoding deep = nest(20);
    encoded(deep);
    array_encoding copy = deep;
    // Walk to the leaf of the copy and change it; the original is untouched.
    array_encoding* leaf = &copy;
    while (auto* n = std::get_if<nullable>(&leaf->value)) leaf = std::get<nullable::no_null>(n->nullability).values.get();
    std::get<flat>(leaf->value).bits_per_value = 64;
    CHECK(!(copy == deep));
    const array_encoding* orig_leaf = &deep;
    while (auto* n = std::get_if<nullable>(&orig_leaf->value))
      orig_leaf = std::get<nullable::no_null>(n->nullability).values.get();
    CHECK(std::get<flat>(orig_leaf->value).bits_per_value == 32);

    // Too deep to decode: refused as corrupt, not a stack overflow.
    const std::string too_deep = pb::encode(nest(40));
    CHECK_THROWS_AS(pb::decode<array_encoding>(too_deep), corrupt_error);
    // Hostile input: thousands of nested headers.
    std::string nested = byte_string({0x12, 0x02, 0x1a, 0x00});  // ArrayEncoding{nullable{all_nulls}}
    for (int i = 0; i < 200; ++i) {
      pb::writer w0, w1, w2;
      w0.bytes(1, nested);       // NoNull.values
      w1.bytes(1, w0.bytes());   // Nullable.no_nulls
      w2.bytes(2, w1.bytes());   // ArrayEncoding.nullable
      nested = w2.take();
    }
    CHECK_THROWS_AS(pb::decode<array_encoding>(nested), corrupt_error);
  }

  TEST_CASE("ColumnEncoding: values, zone index, blob") {
    using namespace enc20;
    CHECK(hex(encoded(column_encoding::values()), " ") == "0a 00");
    column_encoding zi{zone_index{.rows_per_zone = 8192, .zone_map_buffer = buffer{0, buffer::column},
                                  .inner = column_encoding::values()}};
    CHECK(hex(encoded(zi), " ") == "12 0b 08 80 40 12 02 10 01 1a 02 0a 00");
    column_encoding b{blob{.inner = zi}};
    encoded(b);
    CHECK(pb::unpack_any<column_encoding>(pb::pack_any(b)) == b);
    CHECK(pb::pack_any(b).type_url == "/lance.encodings.ColumnEncoding");
    CHECK(encoded(blob{}).empty());
  }

  TEST_CASE("Buffer keeps unknown enum values (proto3 open enums)") {
    auto b = pb::decode<enc20::buffer>(byte_string({0x08, 0x03, 0x10, 0x07}));
    CHECK(b.buffer_index == 3);
    CHECK(int(b.type) == 7);
    CHECK(hex(pb::encode(b), " ") == "08 03 10 07");
  }
}

namespace {

enc21::compressive_encoding ce_flat(std::uint64_t bits) { return enc21::compressive_encoding{enc21::flat{bits, {}}}; }

std::string hex_to_bytes(std::string_view h) {
  std::string out;
  for (std::size_t i = 0; i < h.size();) {
    if (h[i] == ' ') { ++i; continue; }
    out.push_back(char(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

// Checks that `m` encodes to exactly `h` and that `h` decodes to `m`.
template <class Msg>
void same_bytes(const Msg& m, std::string_view h) {
  CHECK(hex(pb::encode(m), " ") == h);
  CHECK(pb::decode<Msg>(hex_to_bytes(h)) == m);
}

}  // namespace

TEST_SUITE("encodings_v2_1") {
  TEST_CASE("PageLayouts as LanceDB 0.39 (Lance 12) wrote them, byte for byte") {
    using namespace enc21;
    using L = rep_def_layer;
    // 2.1, nullable int32, 10 rows: mini-block, def levels flat u16, values flat 32.
    page_layout a{mini_block_layout{.def_compression = ce_flat(16),
                                    .value_compression = ce_flat(32),
                                    .layers = {L::nullable_item},
                                    .num_buffers = 1,
                                    .num_items = 10}};
    same_bytes(a, "0a 13 12 04 0a 02 08 10 1a 04 0a 02 08 20 32 01 03 38 01 48 0a");
    // 2.2, non-null int32: has_large_chunk (field 10) on every mini-block page.
    page_layout b{mini_block_layout{.value_compression = ce_flat(32),
                                    .layers = {L::all_valid_item},
                                    .num_buffers = 1,
                                    .num_items = 10,
                                    .has_large_chunk = true}};
    same_bytes(b, "0a 0f 1a 04 0a 02 08 20 32 01 01 38 01 48 0a 50 01");
    // 2.2, list<int32>: RLE'd repetition levels, a repetition index of depth 1.
    page_layout c{mini_block_layout{
        .rep_compression = compressive_encoding{rle{.values = ce_flat(16), .run_lengths = ce_flat(8)}},
        .def_compression = ce_flat(16),
        .value_compression = ce_flat(32),
        .layers = {L::nullable_item, L::null_and_empty_list},
        .num_buffers = 1,
        .repetition_index_depth = 1,
        .num_items = 20,
        .has_large_chunk = true}};
    same_bytes(c,
               "0a 28 0a 0e 42 0c 0a 04 0a 02 08 10 12 04 0a 02 08 08 12 04 0a 02 08 10 1a 04 0a 02 08 20 32 02 "
               "03 06 38 01 40 01 48 14 50 01");
    // 2.2, a constant int32 column (42): ConstantLayout with an inline value.
    page_layout d{constant_layout{.layers = {L::all_valid_item}, .inline_value = std::string("\x2a\0\0\0", 4)}};
    same_bytes(d, "12 09 2a 01 01 32 04 2a 00 00 00");
    // An all-null page: the same field 2, no inline value (AllNullLayout in older protos).
    page_layout e{all_null_layout{.layers = {L::nullable_item}}};
    same_bytes(e, "12 03 2a 01 03");
    // 2.2, low-cardinality utf8: dictionary (lz4 General over Variable) + inline bit-packed indices.
    page_layout f{mini_block_layout{
        .value_compression = compressive_encoding{inline_bitpacking{.uncompressed_bits_per_value = 32}},
        .dictionary = compressive_encoding{general{
            .compression = buffer_compression{compression_scheme::lz4, {}},
            .values = compressive_encoding{variable{.offsets = ce_flat(32)}}}},
        .num_dictionary_items = 5,
        .layers = {L::all_valid_item},
        .num_buffers = 1,
        .num_items = 5000,
        .has_large_chunk = true}};
    same_bytes(f,
               "0a 24 1a 04 2a 02 08 20 22 10 52 0e 0a 02 08 01 1a 08 12 06 0a 04 0a 02 08 20 28 05 32 01 01 38 "
               "01 48 88 27 50 01");
    // 2.2, nullable: def levels bit-packed out of line to 1 bit.
    page_layout g{mini_block_layout{
        .def_compression = compressive_encoding{out_of_line_bitpacking{16, ce_flat(1)}},
        .value_compression = compressive_encoding{inline_bitpacking{32, {}}},
        .layers = {L::nullable_item},
        .num_buffers = 1,
        .num_items = 5000,
        .has_large_chunk = true}};
    same_bytes(g, "0a 1c 12 0a 22 08 08 10 1a 04 0a 02 08 01 1a 04 2a 02 08 20 32 01 03 38 01 48 88 27 50 01");
    // And the Any wrapping with Lance's URL.
    auto any = pb::pack_any(b);
    CHECK(any.type_url == "/lance.encodings21.PageLayout");
    CHECK(pb::unpack_any<page_layout>(any) == b);
    CHECK(file2::encoding::wrap(b).unwrap<page_layout>() == b);
    CHECK_THROWS_AS(file2::encoding::wrap(b).unwrap<enc20::array_encoding>(), corrupt_error);
  }

  TEST_CASE("every CompressiveEncoding variant round trips") {
    using namespace enc21;
    std::vector<compressive_encoding> all = {
        ce_flat(32),
        compressive_encoding{flat{.bits_per_value = 8, .data = buffer_compression{compression_scheme::zstd, 3}}},
        compressive_encoding{variable{.offsets = ce_flat(64), .values = buffer_compression{compression_scheme::lz4, {}}}},
        compressive_encoding{constant{}},
        compressive_encoding{constant{.value = std::string()}},  // present but empty: still written
        compressive_encoding{constant{.value = std::string("\x01\x02", 2)}},
        compressive_encoding{out_of_line_bitpacking{.uncompressed_bits_per_value = 64, .values = ce_flat(7)}},
        compressive_encoding{inline_bitpacking{.uncompressed_bits_per_value = 16}},
        compressive_encoding{fsst{.symbol_table = std::string(2312, 'x'),
                                  .values = compressive_encoding{variable{.offsets = ce_flat(32)}}}},
        compressive_encoding{dictionary{.indices = ce_flat(8), .items = ce_flat(64), .num_dictionary_items = 17}},
        compressive_encoding{rle{.values = ce_flat(64), .run_lengths = ce_flat(8)}},
        compressive_encoding{byte_stream_split{.values = ce_flat(32)}},
        compressive_encoding{general{.compression = buffer_compression{compression_scheme::zstd, -5},
                                     .values = ce_flat(32)}},
        compressive_encoding{fixed_size_list{.items_per_value = 128, .values = ce_flat(32), .has_validity = true}},
        compressive_encoding{packed_struct{.bits_per_value = {32, 64, 8}, .values = ce_flat(104)}},
        compressive_encoding{variable_packed_struct{
            .fields = {variable_packed_struct::field_encoding{.value = ce_flat(32), .bits_per_value = 32},
                       variable_packed_struct::field_encoding{
                           .value = compressive_encoding{variable{.offsets = ce_flat(32)}}, .bits_per_length = 32},
                       variable_packed_struct::field_encoding{.value = ce_flat(8), .bits_per_value = 0}}}},
        compressive_encoding{range{.uncompressed_bits_per_value = 64, .start = 100, .step = 3}},
        compressive_encoding{delta{.uncompressed_bits_per_value = 32, .base = 7, .deltas = ce_flat(4)}},
    };
    std::vector<bool> seen(16, false);
    for (const auto& e : all) {
      CAPTURE(e.value.index());
      const std::string b = encoded(e);
      REQUIRE(!b.empty());
      CHECK(std::size_t(std::uint8_t(b[0]) >> 3) == e.value.index());
      seen[e.value.index()] = true;
      pb::reader r(b);
      auto f = r.next();
      std::string inner(reinterpret_cast<const char*>(f.data.data()), f.data.size());
      pb::writer w;
      w.bytes(f.number, unknown_fields() + inner + unknown_fields());
      CHECK(pb::decode<compressive_encoding>(w.bytes()) == e);
    }
    for (std::size_t i = 1; i <= 15; ++i) CHECK_MESSAGE(seen[i], "variant " << i << " not covered");
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = i + 1; j < all.size(); ++j) CHECK(!(all[i] == all[j]));
    // Hand-checked: optional fields present with default values are written.
    CHECK(hex(pb::encode(compressive_encoding{constant{.value = std::string()}}), " ") == "1a 02 0a 00");
    CHECK(hex(pb::encode(compressive_encoding{constant{}}), " ") == "1a 00");
    CHECK(hex(pb::encode(buffer_compression{compression_scheme::zstd, 0}), " ") == "08 02 10 00");
    CHECK(hex(pb::encode(buffer_compression{}), " ") == "");
  }

  TEST_CASE("every PageLayout variant round trips, including blob and sparse") {
    using namespace enc21;
    using L = rep_def_layer;
    page_layout mini{mini_block_layout{.rep_compression = ce_flat(16),
                                       .def_compression = ce_flat(16),
                                       .value_compression = ce_flat(32),
                                       .dictionary = ce_flat(64),
                                       .num_dictionary_items = 9,
                                       .layers = {L::nullable_item, L::emptyable_list, L::all_valid_list},
                                       .num_buffers = 2,
                                       .repetition_index_depth = 2,
                                       .num_items = 1u << 20,
                                       .has_large_chunk = true}};
    page_layout cst{constant_layout{.layers = {L::nullable_item, L::nullable_list},
                                    .inline_value = std::string(32, '\x7f'),
                                    .rep_compression = ce_flat(16),
                                    .def_compression = compressive_encoding{rle{ce_flat(16), ce_flat(8)}},
                                    .num_rep_values = 100,
                                    .num_def_values = 101}};
    page_layout fz{full_zip_layout{.bits_rep = 16,
                                   .bits_def = 16,
                                   .bits_per_offset = 32,
                                   .num_items = 50,
                                   .num_visible_items = 40,
                                   .value_compression = compressive_encoding{variable{.offsets = ce_flat(32)}},
                                   .layers = {L::nullable_item, L::null_and_empty_list}}};
    page_layout fz_fixed{full_zip_layout{.bits_per_value = 0, .num_items = 3}};  // 0 is present: written
    CHECK(hex(pb::encode(fz_fixed), " ") == "1a 04 18 00 28 03");
    page_layout blob{blob_layout{.inner_layout = mini, .layers = {L::nullable_item}}};
    page_layout blob2{blob_layout{.inner_layout = blob, .layers = {}}};

    sparse_position_set explicit_set{.positions = ce_flat(64), .num_positions = 12};
    sparse_position_set range_set{.positions = sparse_position_range{.start = 3, .length = 9}, .num_positions = 9};
    sparse_position_set all_set{.positions = sparse_position_all{}, .num_positions = 100};
    sparse_position_set empty_set{.positions = sparse_position_empty{}, .num_positions = 0};
    sparse_validity_set nulls{.meaning = sparse_validity_set::meaning_type::null_positions, .positions = range_set};
    sparse_validity_set valid{.meaning = sparse_validity_set::meaning_type::valid_positions, .positions = explicit_set};
    page_layout sparse{sparse_layout{
        .value_compression = ce_flat(32),
        .num_buffers = 1,
        .num_items = 120,
        .num_visible_items = 100,
        .has_large_chunk = true,
        .structural_layers = {
            sparse_structural_layer{sparse_validity_layer{.num_slots = 10, .validity = nulls}},
            sparse_structural_layer{sparse_list_layer{.num_slots = 10,
                                                      .num_child_slots = 30,
                                                      .non_empty_positions = all_set,
                                                      .counts = sparse_count_set{sparse_count_constant{3}},
                                                      .validity = valid}},
            sparse_structural_layer{sparse_list_layer{.num_slots = 30,
                                                      .num_child_slots = 0,
                                                      .non_empty_positions = empty_set,
                                                      .counts = sparse_count_set{sparse_count_empty{}}}},
            sparse_structural_layer{sparse_list_layer{.counts = sparse_count_set{ce_flat(16)}}},
            sparse_structural_layer{sparse_fixed_size_list_layer{.num_slots = 30, .dimension = 4, .validity = valid}},
            sparse_structural_layer{},
        }}};
    std::vector<page_layout> all = {mini, cst, fz, fz_fixed, blob, blob2, sparse, page_layout{}};
    for (const auto& p : all) {
      CAPTURE(p.value.index());
      encoded(p);
      CHECK(pb::unpack_any<page_layout>(pb::pack_any(p)) == p);
    }
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = i + 1; j < all.size(); ++j) CHECK(!(all[i] == all[j]));
    // Copies of recursive layouts are deep.
    page_layout copy = blob2;
    std::get<mini_block_layout>(std::get<blob_layout>(std::get<blob_layout>(copy.value).inner_layout->value)
                                    .inner_layout->value)
        .num_items = 1;
    CHECK(!(copy == blob2));
    CHECK(std::get<mini_block_layout>(std::get<blob_layout>(std::get<blob_layout>(blob2.value).inner_layout->value)
                                          .inner_layout->value)
              .num_items == (1u << 20));
    // Unknown fields are skipped inside messages that are not just a oneof.
    auto with_unknown = unknown_fields() + pb::encode(std::get<mini_block_layout>(mini.value)) + unknown_fields();
    CHECK(pb::decode<mini_block_layout>(with_unknown) == std::get<mini_block_layout>(mini.value));
    auto pos_unknown = pb::encode(explicit_set) + unknown_fields();
    CHECK(pb::decode<sparse_position_set>(pos_unknown) == explicit_set);
  }

  TEST_CASE("scalar oneofs: at most one alternative, last one wins") {
    using namespace enc21;
    full_zip_layout both{.bits_per_value = 8, .bits_per_offset = 32};
    pb::writer w;
    CHECK_THROWS_AS(pb::encode(w, both), invalid_input_error);
    variable_packed_struct::field_encoding fe{.bits_per_value = 1, .bits_per_length = 2};
    CHECK_THROWS_AS(pb::encode(w, fe), invalid_input_error);
    // bits_per_value (3) = 8, then bits_per_offset (4) = 32: the offset wins.
    auto z = pb::decode<full_zip_layout>(byte_string({0x18, 0x08, 0x20, 0x20}));
    CHECK(!z.bits_per_value);
    CHECK(z.bits_per_offset == 32u);
    auto z2 = pb::decode<full_zip_layout>(byte_string({0x20, 0x20, 0x18, 0x08}));
    CHECK(z2.bits_per_value == 8u);
    CHECK(!z2.bits_per_offset);
    auto f2 = pb::decode<variable_packed_struct::field_encoding>(byte_string({0x10, 0x05, 0x18, 0x06}));
    CHECK(!f2.bits_per_value);
    CHECK(f2.bits_per_length == 6u);
  }

  TEST_CASE("unknown variants are unsupported, wrong wire types corrupt") {
    using namespace enc21;
    // CompressiveEncoding field 16, PageLayout field 6, SparseCountSet field 4 and
    // SparseStructuralLayer field 4: well-formed, from a newer Lance.
    CHECK_THROWS_AS(pb::decode<compressive_encoding>(byte_string({0x82, 0x01, 0x00})), unsupported_error);
    CHECK_THROWS_AS(pb::decode<page_layout>(byte_string({0x32, 0x00})), unsupported_error);
    CHECK_THROWS_AS(pb::decode<sparse_count_set>(byte_string({0x22, 0x00})), unsupported_error);
    CHECK_THROWS_AS(pb::decode<sparse_structural_layer>(byte_string({0x22, 0x00})), unsupported_error);
    // Inside a tree: MiniBlockLayout.value_compression holds variant 16.
    CHECK_THROWS_AS(pb::decode<page_layout>(byte_string({0x0a, 0x05, 0x1a, 0x03, 0x82, 0x01, 0x00})),
                    unsupported_error);
    // Known field, wrong wire type.
    CHECK_THROWS_AS(pb::decode<page_layout>(byte_string({0x08, 0x01})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<compressive_encoding>(byte_string({0x0d, 0, 0, 0, 0})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<mini_block_layout>(byte_string({0x50, 0x01, 0x3a, 0x00})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<mini_block_layout>(byte_string({0x0a, 0x01, 0x00})), corrupt_error);
    CHECK_THROWS_AS(pb::decode<constant_layout>(byte_string({0x30, 0x01})), corrupt_error);  // inline_value as varint
    CHECK_THROWS_AS(pb::decode<full_zip_layout>(byte_string({0x1a, 0x00})), corrupt_error);
    // Repeated enums: packed (Lance) or one by one; both accepted.
    auto m = pb::decode<mini_block_layout>(byte_string({0x30, 0x03, 0x30, 0x06}));
    CHECK(m.layers == std::vector<rep_def_layer>{rep_def_layer::nullable_item, rep_def_layer::null_and_empty_list});
  }

  TEST_CASE("enums are open: unknown values survive a round trip") {
    using namespace enc21;
    mini_block_layout m{.layers = {rep_def_layer(9), rep_def_layer(-1)}};
    const std::string b = encoded(m);
    // 9 is one byte; -1 is sign-extended to ten bytes, as protobuf writes int32 enums.
    CHECK(hex(b, " ") == "32 0b 09 ff ff ff ff ff ff ff ff ff 01");
    CHECK(pb::decode<mini_block_layout>(b).layers[1] == rep_def_layer(-1));
    buffer_compression bc{compression_scheme(7), {}};
    CHECK(pb::decode<buffer_compression>(pb::encode(bc)).scheme == compression_scheme(7));
  }

  TEST_CASE("deep CompressiveEncoding trees: bounded decoding") {
    using namespace enc21;
    auto nest = [](int levels) {
      compressive_encoding e = ce_flat(8);
      for (int i = 0; i < levels; ++i)
        e = compressive_encoding{general{.compression = buffer_compression{compression_scheme::zstd, {}},
                                         .values = std::move(e)}};
      return e;
    };
    encoded(nest(30));  // 2 messages per level
    const auto too_deep = pb::encode(nest(100));
    CHECK_THROWS_AS(pb::decode<compressive_encoding>(too_deep), corrupt_error);
    // A BlobLayout chain is recursive too.
    page_layout p{mini_block_layout{}};
    for (int i = 0; i < 40; ++i) p = page_layout{blob_layout{.inner_layout = std::move(p)}};
    CHECK_THROWS_AS(pb::decode<page_layout>(pb::encode(p)), corrupt_error);
  }
}

TEST_CASE("mutated and random bytes give typed errors, never a crash") {
  // Deterministic xorshift so failures reproduce.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  auto try_all = [](const std::string& b) {
    auto one = [&](auto tag) {
      using Msg = typename decltype(tag)::type;
      try {
        auto m = pb::decode<Msg>(b);
        // Whatever decoded must re-encode and decode to the same value.
        CHECK(pb::decode<Msg>(pb::encode(m)) == m);
      } catch (const corrupt_error&) {
      } catch (const unsupported_error&) {
      }
    };
    one(std::type_identity<file2::column_metadata>{});
    one(std::type_identity<enc20::array_encoding>{});
    one(std::type_identity<enc20::column_encoding>{});
    one(std::type_identity<enc21::page_layout>{});
    one(std::type_identity<enc21::compressive_encoding>{});
  };
  // Seeds: real-looking messages, then random byte flips of them.
  std::vector<std::string> seeds = {
      pb::encode(enc20::array_encoding{enc20::nullable{enc20::nullable::some_null{flat32(), flat32(1)}}}),
      pb::encode(enc21::page_layout{enc21::mini_block_layout{
          .rep_compression = enc21::compressive_encoding{enc21::rle{ce_flat(16), ce_flat(8)}},
          .value_compression = enc21::compressive_encoding{enc21::fsst{"sym", ce_flat(32)}},
          .layers = {enc21::rep_def_layer::nullable_item},
          .has_large_chunk = true}}),
      pb::encode(file2::encoding::wrap(flat32())),
  };
  for (const auto& seed : seeds) {
    for (int round = 0; round < 300; ++round) {
      std::string b = seed;
      const int flips = 1 + int(next() % 3);
      for (int k = 0; k < flips; ++k) b[next() % b.size()] = char(next());
      try_all(b);
    }
  }
  for (int round = 0; round < 300; ++round) {
    std::string b(next() % 40, '\0');
    for (auto& c : b) c = char(next());
    try_all(b);
  }
}

TEST_CASE("a 2.0 ColumnMetadata exactly as LanceDB 0.39 (Lance 12) wrote it") {
  // Column `int32` of a 10-row table with row 4 null (two buffers: validity, values).
  const std::string bytes = hex_to_bytes(
      "0a 29 12 27 0a 25 0a 1f 2f 6c 61 6e 63 65 2e 65 6e 63 6f 64 69 6e 67 73 2e 43 6f 6c 75 6d 6e 45 6e 63 6f 64 "
      "69 6e 67 12 02 0a 00 12 4a 0a 04 80 03 c0 03 12 02 02 28 18 0a 22 3c 12 3a 0a 38 0a 1e 2f 6c 61 6e 63 65 2e "
      "65 6e 63 6f 64 69 6e 67 73 2e 41 72 72 61 79 45 6e 63 6f 64 69 6e 67 12 16 12 14 12 12 0a 06 0a 04 08 01 12 "
      "00 12 08 0a 06 08 20 12 02 08 01");
  auto cm = pb::decode<file2::column_metadata>(bytes);
  CHECK(cm.encoding->unwrap<enc20::column_encoding>() == enc20::column_encoding::values());
  REQUIRE(cm.pages.size() == 1);
  const auto& p = cm.pages[0];
  CHECK(p.buffer_offsets == std::vector<std::uint64_t>{384, 448});
  CHECK(p.buffer_sizes == std::vector<std::uint64_t>{2, 40});
  CHECK(p.length == 10);
  CHECK(p.priority == 0);
  CHECK(cm.buffer_offsets.empty());
  using namespace enc20;
  const array_encoding expected{nullable{nullable::some_null{
      array_encoding{flat{.bits_per_value = 1, .buffer = buffer{}}}, flat32(1)}}};
  CHECK(p.encoding->unwrap<array_encoding>() == expected);
  // Building the same metadata ourselves gives Lance's bytes exactly.
  file2::column_metadata ours{.encoding = file2::encoding::wrap(column_encoding::values()),
                              .pages = {file2::column_metadata::page{.buffer_offsets = {384, 448},
                                                                     .buffer_sizes = {2, 40},
                                                                     .length = 10,
                                                                     .encoding = file2::encoding::wrap(expected)}}};
  CHECK(hex(pb::encode(ours), " ") == hex(bytes, " "));
}

TEST_CASE("the hand-spelt plain column encoding is the descriptor-encoded ColumnEncoding { values }") {
  pb::writer w;
  pb::encode(w, pb::pack_any(pb::enc20::column_encoding::values()));
  CHECK(lancet::encoding::plain_column_encoding() == w.take());
}

// ---------------------------------------------------------------------------------
// Table, file and index messages (one technique for every message)
// ---------------------------------------------------------------------------------

namespace {

pb::data_fragment sample_fragment() {
  pb::data_fragment f;
  f.id = 3;
  f.files.push_back({"a.lance", {0, 1, -2}, {0, -1, 1}, 2, 1, 1234, std::nullopt});
  f.files.push_back({"b.lance", {2}, {0}, 2, 2, 0, 7u});
  f.deletion_file = pb::deletion_file{pb::deletion_file::type::bitmap, 4, 9, 2, std::nullopt};
  f.physical_rows = 10;
  f.row_id_sequence = std::string("\x0a\x06\x0a\x04\x08\x0a\x10\x14", 8);
  f.last_updated_at_version_sequence = pb::external_file{"_rowids/x.bin", 16, 32};
  return f;
}

pb::index_metadata sample_index() {
  pb::index_metadata m;
  m.uuid = lancet::uuid::parse("01234567-89ab-cdef-0123-456789abcdef");
  m.fields = {1, -1};
  m.name = "v_idx";
  m.dataset_version = 5;
  m.fragment_bitmap = std::string("\x3a\x30\x00\x00", 4);
  m.index_details = pb::any{"/lance.index.pb.VectorIndexDetails", std::string("\x42\x00", 2)};
  m.index_version = 0;
  m.created_at = 1700000000000ull;
  m.files = {{"index.idx", 10}, {"auxiliary.idx", 20}};
  return m;
}

}  // namespace

TEST_CASE("table messages: every message round trips; truncated bytes are corrupt") {
  encoded(lancet::uuid::generate_v4());
  encoded(pb::timestamp::from_unix_nanos(-1));
  encoded(pb::external_file{"p", 1, 2});
  encoded(pb::base_path{3, std::string("n"), true, "/root"});
  encoded(pb::base_path{0, std::string(), false, ""});  // an empty optional name is still written

  for (auto values : {std::vector<std::uint64_t>{5, 6, 70}, std::vector<std::uint64_t>{1, 1ull << 20},
                      std::vector<std::uint64_t>{3, 1ull << 40}, std::vector<std::uint64_t>{}})
    encoded(pb::encoded_u64_array::from_values(values));
  encoded(pb::u64_segment::make_range(4, 9));
  encoded(pb::u64_segment{pb::u64_range_with_holes{10, 15, pb::encoded_u64_array::from_values({11, 13})}});
  encoded(pb::u64_segment{pb::u64_range_with_bitmap{20, 30, std::string("\x05\x02", 2)}});
  encoded(pb::u64_segment{pb::u64_sorted_array{pb::encoded_u64_array::from_values({100, 200, 70000})}});
  encoded(pb::u64_segment{pb::u64_array{pb::encoded_u64_array::from_values({5, 1ull << 40, 3})}});
  encoded(pb::row_id_sequence::make_range(7, 3));
  encoded(pb::row_dataset_version_run{pb::u64_segment::make_range(0, 4), 2});
  encoded(pb::row_dataset_version_sequence::uniform(5, 3));

  encoded(pb::data_file{"a.lance", {0, -2}, {0, -1}, 2, 1, 99, 4u});
  encoded(pb::deletion_file{pb::deletion_file::type::arrow_array, 1, 2, 3, 0u});
  encoded(sample_fragment());
  pb::data_fragment created;
  created.created_at_version_sequence = std::string();  // set but empty: still written
  CHECK(hex(encoded(created), " ") == "4a 00");

  encoded(pb::index_file{"index.idx", 394});
  encoded(sample_index());
  encoded(pb::index_section{{sample_index(), sample_index()}});

  pb::manifest m;
  m.fields_raw = {std::string("\x12\x01x", 3)};
  m.schema_metadata = {{"k", "v"}, {"empty", ""}};
  m.fragments = {sample_fragment()};
  m.version = 4;
  m.index_section = 0;
  m.timestamp = pb::timestamp{1, 2};
  m.tag = "t";
  m.reader_feature_flags = 2;
  m.writer_feature_flags = 2;
  m.max_fragment_id = 0;
  m.transaction_file = "3-u.txn";
  m.writer_version = pb::manifest::writer_version_info{"lance", "12.0.0", std::string("beta"), std::nullopt};
  m.next_row_id = 10;
  m.data_format = pb::manifest::data_storage_format{"lance", "2.1"};
  m.config = {{"lance.auto_cleanup.interval", "20"}};
  m.base_paths = {{1, std::nullopt, false, "/b"}};
  m.table_metadata = {{"owner", "me"}};
  m.branch = "dev";
  m.transaction_section = 77;
  encoded(m);
}

TEST_CASE("transaction messages: every operation and its parts round trip") {
  using T = pb::transaction;
  const auto frag = sample_fragment();
  encoded(T::append{{frag}});
  encoded(T::delete_rows{{frag}, {4, 5}, "id > 3"});
  encoded(T::overwrite{{frag}, {"\x12\x01x"}, {{"k", "v"}}, {{"lance.x", "1"}}, {{1, "b", true, "/p"}}});
  encoded(T::create_index{{sample_index()}, {sample_index()}});
  T::rewrite::rewritten_index ri{lancet::uuid::generate_v4(), lancet::uuid::generate_v4(), pb::any{"t", "v"}, 2, {{"i", 1}}};
  encoded(ri);
  encoded(T::rewrite::rewrite_group{{frag}, {frag}});
  encoded(T::rewrite{{frag}, {}, {{{frag}, {frag}}}, {ri}});
  encoded(T::merge{{frag}, {"\x12\x01y"}, {{"a", "b"}}});
  encoded(T::restore{3});
  encoded(T::reserve_fragments{8});
  encoded(T::update{{1}, {frag}, {frag}, {1, 2}, std::string("\x12\x01m"), {0}, T::update::mode::rewrite_columns});
  encoded(T::project{{"\x12\x01z"}});
  T::update_map um{{{"a", std::string("1")}, {"b", std::nullopt}, {"c", std::string()}}, true};
  encoded(um);
  encoded(T::field_metadata_update{{{"m", "n"}}});
  T::update_config uc;
  uc.config_updates = um;
  uc.table_metadata_updates = T::update_map{};
  uc.field_metadata_updates[-1] = um;
  uc.upsert_values = {{"x", "y"}};
  uc.delete_keys = {"gone"};
  uc.schema_metadata = {{"s", "t"}};
  uc.field_metadata[3].metadata = {{"m", "n"}};
  encoded(uc);
  encoded(T::data_replacement::group{2, frag.files[0]});
  encoded(T::data_replacement{{{2, frag.files[0]}, {3, std::nullopt}}});
  encoded(T::update_mem_wal_state{{"\x0a\x00"}, {}, {"\x0a\x00"}});
  encoded(T::clone{true, std::string("v1"), 4, "/src", std::string("b")});
  encoded(T::update_bases{{{2, std::nullopt, false, "/b"}}});

  T t;
  t.read_version = 7;
  t.uuid = "u";
  t.tag = "t";
  t.transaction_properties = {{"__lance_commit_message", "hi"}};
  t.operation = T::update_config{uc};
  encoded(t);
}

TEST_CASE("file.proto and index.proto messages round trip") {
  namespace pf = lancet::pb::file;
  namespace pi = lancet::pb::index;
  pf::field f;
  f.type = pf::field::field_type::leaf;
  f.name = "v";
  f.id = 2;
  f.parent_id = -1;
  f.logical_type = "fixed_size_list:float:4";
  f.nullable = true;
  f.encoding = pf::field_encoding::plain;
  f.dictionary = pf::dictionary{8, 16};
  f.extension_name = "ext";
  f.metadata = {{"b", "2"}, {"a", ""}};  // order of appearance kept
  f.unenforced_primary_key = true;
  encoded(pf::dictionary{-1, 3});
  encoded(f);
  pf::schema sc{{f, pf::field{}}, {{"k", "v"}}};
  encoded(sc);
  encoded(pf::file_descriptor{sc, 42});
  encoded(pf::file_metadata::statistics_metadata{{f}, {-1, 2}, 9});
  encoded(pf::file_metadata{1, {0, -3}, 2, pf::file_metadata::statistics_metadata{{f}, {1}, 3}});

  pi::tensor t{pi::tensor::data_type::float32, {2, 2}, std::string(16, '\x01')};
  encoded(t);
  encoded(pi::ivf{{1.5f, -2.0f}, {0, 3}, {3, 4}, t, 0.25});
  encoded(pi::pq{8, 4, 16, {0.5f}, t});
  pi::vector_index_details d;
  d.metric = pi::metric_type::cosine;
  d.hnsw = pi::vector_index_details::hnsw_params{20, 150, 7};
  d.runtime_hints = {{"lance.ivf.max_iters", "50"}, {"empty", ""}};
  for (auto c : {pi::vector_index_details::compression_t{pi::vector_index_details::flat_compression{}},
                 pi::vector_index_details::compression_t{pi::vector_index_details::pq_compression{8, 16}},
                 pi::vector_index_details::compression_t{pi::vector_index_details::sq_compression{8}},
                 pi::vector_index_details::compression_t{pi::vector_index_details::rq_compression{1}},
                 pi::vector_index_details::compression_t{}}) {
    d.compression = c;
    encoded(d);
  }
  encoded(pb::any{"/x.Y", "z"});
}

TEST_CASE("descriptor features: maps, numbered oneofs, required fields, fixed bytes, enum ranges") {
  SUBCASE("map entries: key = 1, value = 2, each skipped when empty (as prost writes them)") {
    pb::manifest m;
    m.config = {{"k", ""}, {"", "v"}};
    // field 16 (82 01): {"" -> "v"} = 12 01 76; {"k" -> ""} = 0a 01 6b (std::map order).
    same_bytes(m, "82 01 03 12 01 76 82 01 03 0a 01 6b");
    pb::transaction::update_map um{{{"a", std::nullopt}, {"b", std::string()}}, false};
    // An absent optional value is not written; a present empty one is.
    same_bytes(um, "0a 03 0a 01 61 0a 05 0a 01 62 12 00");
    // The last entry for a key wins in a std::map; a vector of pairs keeps both.
    CHECK(pb::decode<pb::manifest>(hex_to_bytes("82 01 06 0a 01 6b 12 01 31 82 01 06 0a 01 6b 12 01 32")).config ==
          std::map<std::string, std::string>{{"k", "2"}});
    CHECK(pb::decode<pb::index::vector_index_details>(hex_to_bytes("4a 03 0a 01 6b 4a 03 0a 01 6b")).runtime_hints.size() == 2);
  }
  SUBCASE("oneof cases at given field numbers") {
    pb::data_fragment f;
    f.row_id_sequence = std::string("\xab", 1);
    f.created_at_version_sequence = pb::external_file{"x", 0, 0};
    same_bytes(f, "2a 01 ab 52 03 0a 01 78");  // inline row ids = 5, external created-at = 10
    pb::index::vector_index_details d;
    d.compression = pb::index::vector_index_details::sq_compression{4};
    same_bytes(d, "2a 02 08 04");  // sq = 5
    pb::transaction t;
    t.operation = pb::transaction::reserve_fragments{1};
    same_bytes(t, "da 06 02 08 01");  // the 8th case: field 107
    // Field numbers in the operation's range that no case has are refused; others skipped.
    CHECK_THROWS_AS(pb::decode<pb::transaction>(hex_to_bytes("ba 0c 00")), corrupt_error);  // 199
    CHECK(pb::decode<pb::transaction>(hex_to_bytes("c2 0c 00 da 06 00")).operation.index() == 8);  // 200 skipped
  }
  SUBCASE("required fields and oneofs") {
    CHECK_THROWS_AS(pb::decode<lancet::uuid>(std::string()), corrupt_error);
    CHECK_THROWS_AS(pb::decode<lancet::uuid>(hex_to_bytes("0a 02 01 02")), corrupt_error);  // not 16 bytes
    CHECK_THROWS_AS(pb::decode<pb::row_dataset_version_run>(hex_to_bytes("10 01")), corrupt_error);  // no span
    CHECK_THROWS_AS(pb::decode<pb::u64_segment>(std::string()), corrupt_error);
    CHECK_THROWS_AS(pb::decode<pb::encoded_u64_array>(std::string()), corrupt_error);
    CHECK_THROWS_AS(pb::decode<pb::encoded_u64_array>(hex_to_bytes("22 00")), corrupt_error);  // no case 4
    CHECK_THROWS_AS(pb::decode<pb::u64_segment>(hex_to_bytes("12 04 08 01 10 02")), corrupt_error);  // no holes
    CHECK_THROWS_AS(pb::decode<pb::index_metadata>(hex_to_bytes("1a 01 78")), corrupt_error);  // no uuid
    // A zero UUID is still written: the field is a message.
    CHECK(hex(pb::encode(lancet::uuid{}), " ") == "0a 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
  }
  SUBCASE("enum values out of range") {
    CHECK_THROWS_AS(pb::decode<pb::index::tensor>(hex_to_bytes("08 08")), corrupt_error);      // no data type 8
    CHECK_THROWS_AS(pb::decode<pb::index::tensor>(hex_to_bytes("08 80 02")), corrupt_error);   // 256: not a uint8
    CHECK_THROWS_AS(pb::decode<pb::deletion_file>(hex_to_bytes("08 02")), unsupported_error);  // a newer file type
    CHECK_THROWS_AS(pb::decode<pb::index::vector_index_details>(hex_to_bytes("08 04")), corrupt_error);
    CHECK_THROWS_AS(pb::decode<pb::transaction::update>(hex_to_bytes("38 02")), unsupported_error);
  }
}

// The table-driven codec reports what the per-message code did: each error names the
// message, the field or oneof, and (for bad wire bytes) the offset.
TEST_CASE("errors name the message, the field or oneof, and the offset") {
  auto what_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const error& e) {
      return e.what();
    }
    return "no error";
  };
  using namespace enc21;
  CHECK(what_of([] {
          full_zip_layout z{.bits_per_value = 8, .bits_per_offset = 32};
          pb::writer w;
          pb::encode(w, z);
        }) == "invalid input: FullZipLayout.details: both alternatives of a oneof are set");
  CHECK(what_of([] { (void)pb::decode<pb::index_metadata>(hex_to_bytes("1a 01 78")); }) ==
        "corrupt: IndexMetadata.uuid is missing");
  CHECK(what_of([] { (void)pb::decode<lancet::uuid>(hex_to_bytes("0a 02 01 02")); }) ==
        "corrupt: UUID.uuid: 2 bytes, expected 16");
  CHECK(what_of([] { (void)pb::decode<pb::encoded_u64_array>(std::string()); }) ==
        "corrupt: EncodedU64Array is missing");
  CHECK(what_of([] { (void)pb::decode<pb::u64_segment>(hex_to_bytes("12 04 08 01 10 02")); }) ==
        "corrupt: RangeWithHoles.holes is missing");
  CHECK(what_of([] { (void)pb::decode<pb::transaction>(hex_to_bytes("ba 0c 00")); }) ==
        "corrupt: Transaction.operation: unknown variant (field 199)");
  CHECK(what_of([] { (void)pb::decode<page_layout>(hex_to_bytes("0a 05 1a 03 82 01 00")); }) ==
        "unsupported: CompressiveEncoding: unknown variant (field 16), written by a newer Lance?");
  CHECK(what_of([] { (void)pb::decode<full_zip_layout>(hex_to_bytes("1a 00")); }) ==
        "corrupt: FullZipLayout: field 3 (FullZipLayout.bits_per_value) has wire type 2, expected 0");
  CHECK(what_of([] { (void)pb::decode<pb::manifest>(hex_to_bytes("18 80")); }) ==
        "corrupt: Manifest at byte 1: truncated varint");
  CHECK(what_of([] { (void)pb::decode<pb::index::tensor>(hex_to_bytes("08 80 02")); }) ==
        "corrupt: Tensor.data_type: enum value 256 out of range");
}
