#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <lancet/arrow/type.hpp>
#include <lancet/pb/file.hpp>
#include <lancet/schema/lance_schema.hpp>

#include "support/message_of.hpp"
#include "support/text.hpp"

using namespace lancet;
namespace ar = lancet::arrow;
namespace ls = lancet::schema;
namespace pf = lancet::pb::file;

namespace {

using lancet::testing::contains;
using lancet::testing::hex;
using lancet::testing::message_of;

std::string unhex(std::string_view h) {
  std::string out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(char(nib(h[i]) * 16 + nib(h[i + 1])));
  return out;
}
ar::field F(std::string name, ar::type_ptr t, bool nullable = true, ar::metadata md = {}) {
  return ar::field{std::move(name), std::move(t), nullable, std::move(md)};
}

// The schema of a table LanceDB 0.39 created (tests/interop style, apache-arrow 18),
// and the lance.file.Field messages it wrote into the manifest, in order.
ar::schema lancedb_table_schema() {
  using namespace lancet::arrow;
  ar::schema s;
  s.fields = {
      F("n", null_type()), F("b", boolean()), F("i8", int8()), F("i16", int16()), F("i32", int32(), false),
      F("i64", int64()), F("u8", uint8()), F("u16", uint16()), F("u32", uint32()), F("u64", uint64()),
      F("f16", float16()), F("f32", float32()), F("f64", float64()), F("d32", date32()), F("d64", date64()),
      F("t32s", time32(time_unit::second)), F("t32ms", time32(time_unit::milli)),
      F("t64us", time64(time_unit::micro)), F("t64ns", time64(time_unit::nano)),
      F("tss", timestamp(time_unit::second)), F("tsus_utc", timestamp(time_unit::micro, "UTC")),
      F("tsns_off", timestamp(time_unit::nano, "Asia/Kolkata")), F("dur_s", duration(time_unit::second)),
      F("dur_ns", duration(time_unit::nano)), F("dec128", decimal128(38, 10)), F("dec256", decimal256(50, 2)),
      F("s", utf8()), F("bin", binary()), F("fsb", fixed_size_binary(16)),
      F("vec", fixed_size_list(F("item", float32(), false), 8)),
      F("vec2", fixed_size_list(fixed_size_list(int16(), 3), 2)), F("lst", list(int32())),
      F("lst_st", list(struct_({F("x", int32()), F("y", utf8())}))),
      F("st", struct_({F("a", int32(), false, {{"k", "v"}}), F("inner", struct_({F("z", float64())})),
                       F("l", list(utf8()))}),
        false),
      F("last", int32()),
  };
  return s;
}

const char* const lancedb_table_fields[] = {
    "12016e20ffffffffffffffffff012a046e756c6c3001",
    "120162180120ffffffffffffffffff012a04626f6f6c30013801",
    "12026938180220ffffffffffffffffff012a04696e743830013801",
    "1203693136180320ffffffffffffffffff012a05696e74313630013801",
    "1203693332180420ffffffffffffffffff012a05696e7433323801",
    "1203693634180520ffffffffffffffffff012a05696e74363430013801",
    "12027538180620ffffffffffffffffff012a0575696e743830013801",
    "1203753136180720ffffffffffffffffff012a0675696e74313630013801",
    "1203753332180820ffffffffffffffffff012a0675696e74333230013801",
    "1203753634180920ffffffffffffffffff012a0675696e74363430013801",
    "1203663136180a20ffffffffffffffffff012a0968616c66666c6f617430013801",
    "1203663332180b20ffffffffffffffffff012a05666c6f617430013801",
    "1203663634180c20ffffffffffffffffff012a06646f75626c6530013801",
    "1203643332180d20ffffffffffffffffff012a0a6461746533323a64617930013801",
    "1203643634180e20ffffffffffffffffff012a096461746536343a6d7330013801",
    "120474333273180f20ffffffffffffffffff012a0874696d6533323a7330013801",
    "12057433326d73181020ffffffffffffffffff012a0974696d6533323a6d7330013801",
    "12057436347573181120ffffffffffffffffff012a0974696d6536343a757330013801",
    "12057436346e73181220ffffffffffffffffff012a0974696d6536343a6e7330013801",
    "1203747373181320ffffffffffffffffff012a0d74696d657374616d703a733a2d30013801",
    "1208747375735f757463181420ffffffffffffffffff012a1074696d657374616d703a75733a55544330013801",
    "120874736e735f6f6666181520ffffffffffffffffff012a1974696d657374616d703a6e733a417369612f4b6f6c6b61746130013801",
    "12056475725f73181620ffffffffffffffffff012a0a6475726174696f6e3a7330013801",
    "12066475725f6e73181720ffffffffffffffffff012a0b6475726174696f6e3a6e7330013801",
    "1206646563313238181820ffffffffffffffffff012a11646563696d616c3a3132383a33383a313030013801",
    "1206646563323536181920ffffffffffffffffff012a10646563696d616c3a3235363a35303a3230013801",
    "120173181a20ffffffffffffffffff012a06737472696e6730013802",
    "120362696e181b20ffffffffffffffffff012a0662696e61727930013802",
    "1203667362181c20ffffffffffffffffff012a1466697865645f73697a655f62696e6172793a313630013801",
    "1203766563181d20ffffffffffffffffff012a1766697865645f73697a655f6c6973743a666c6f61743a3830013801",
    "120476656332181e20ffffffffffffffffff012a2966697865645f73697a655f6c6973743a66697865645f73697a655f6c6973743a"
    "696e7431363a333a3230013801",
    "12036c7374181f20ffffffffffffffffff012a046c69737430013801",
    "12046974656d1820201f2a05696e74333230013801",
    "12066c73745f7374182120ffffffffffffffffff012a0b6c6973742e73747275637430013801",
    "12046974656d182220212a067374727563743001",
    "120178182320222a05696e74333230013801",
    "120179182420222a06737472696e6730013802",
    "12027374182520ffffffffffffffffff012a06737472756374",
    "120161182620252a05696e743332380152060a016b120176",
    "1205696e6e6572182720252a067374727563743001",
    "12017a182820272a06646f75626c6530013801",
    "12016c182920252a046c69737430013801",
    "12046974656d182a20292a06737472696e6730013802",
    "12046c617374182b20ffffffffffffffffff012a05696e74333230013801",
};

}  // namespace

// ---- pb/file.hpp ---------------------------------------------------------------

TEST_CASE("pb Field: bytes checked by hand") {
  pf::field f;
  f.name = "int32";
  f.id = 4;
  f.parent_id = -1;
  f.logical_type = "int32";
  f.nullable = true;
  f.encoding = pf::field_encoding::plain;
  // Field-number order, zero values omitted, parent_id -1 as a 10-byte varint.
  CHECK(hex(lancet::pb::encode(f)) ==
        "12" "05" "696e743332"             // name "int32"
        "18" "04"                          // id 4
        "20" "ffffffffffffffffff01"        // parent_id -1
        "2a" "05" "696e743332"             // logical_type
        "30" "01"                          // nullable
        "38" "01");                        // encoding PLAIN

  pf::field z;  // all defaults: nothing at all
  CHECK(lancet::pb::encode(z).empty());

  pf::field g;
  g.type = pf::field::field_type::leaf;
  g.name = "x";
  g.id = 1;  // parent_id 0 (child of field 0): omitted
  g.logical_type = "binary";
  g.encoding = pf::field_encoding::var_binary;
  g.dictionary = pf::dictionary{100, 7};
  g.extension_name = "my.ext";
  g.metadata = {{"e", ""}, {"", "v"}, {"k", std::string("\0\1", 2)}};
  g.unenforced_primary_key = true;
  CHECK(hex(lancet::pb::encode(g)) ==
        "08" "02"                    // type LEAF
        "12" "01" "78"               // name
        "18" "01"                    // id
        "2a" "06" "62696e617279"     // logical_type
        "38" "02"                    // VAR_BINARY
        "42" "04" "0864" "1007"      // dictionary {offset 100, length 7}
        "4a" "06" "6d792e657874"     // extension_name
        "52" "03" "0a0165"           // {"e": ""}: value omitted, as prost does
        "52" "03" "120176"           // {"": "v"}: key omitted
        "52" "07" "0a016b" "12020001"  // {"k": 00 01}
        "60" "01");                  // unenforced_primary_key
  auto back = lancet::pb::decode<pf::field>(lancet::pb::encode(g));
  CHECK(back == g);
  auto back_f = lancet::pb::decode<pf::field>(lancet::pb::encode(f));
  CHECK(back_f == f);
  CHECK(back_f.parent_id == -1);
}

TEST_CASE("pb Field decodes what Lance writes, skips unknown fields, refuses garbage") {
  // The LanceDB field "a" (child of 37, not nullable, metadata k=v).
  auto a = lancet::pb::decode<pf::field>(unhex("120161182620252a05696e743332380152060a016b120176"));
  CHECK(a.name == "a");
  CHECK(a.id == 38);
  CHECK(a.parent_id == 37);
  CHECK(a.logical_type == "int32");
  CHECK(!a.nullable);
  CHECK(a.encoding == pf::field_encoding::plain);
  REQUIRE(a.metadata.size() == 1);
  CHECK(a.metadata[0] == std::pair<std::string, std::string>("k", "v"));

  // Unknown field 11 (the retired storage_class) and a 5-byte negative parent id.
  auto b = lancet::pb::decode<pf::field>(unhex("1201625a03666f6f20ffffffff0f"));
  CHECK(b.name == "b");
  CHECK(b.parent_id == -1);

  CHECK_THROWS_AS(lancet::pb::decode<pf::field>(unhex("1205696e74")), corrupt_error);          // truncated
  CHECK_THROWS_AS(lancet::pb::decode<pf::field>(unhex("1501020304")), corrupt_error);          // name as fixed32
  CHECK_THROWS_AS(lancet::pb::decode<pf::field>(unhex("18ffffffffffffffffffff01")), corrupt_error);  // varint too long
  CHECK_THROWS_AS(lancet::pb::decode<pf::schema>(unhex("0a0512")), corrupt_error);            // nested truncation
}

TEST_CASE("pb Schema, FileDescriptor and v1 Metadata round trip") {
  pf::schema s;
  pf::field f1;
  f1.name = "a";
  f1.parent_id = -1;
  f1.logical_type = "struct";
  pf::field f2;
  f2.name = "b";
  f2.id = 1;
  f2.logical_type = "int64";
  f2.nullable = true;
  f2.encoding = pf::field_encoding::plain;
  s.fields = {f1, f2};
  s.metadata = {{"key", "value"}};
  pf::file_descriptor d;
  d.schema = s;
  d.length = 1000;
  const auto bytes = lancet::pb::encode(d);
  // schema (1) first, then length (2) = 1000 = e8 07.
  CHECK(bytes.substr(bytes.size() - 3) == unhex("10e807"));
  CHECK(std::uint8_t(bytes[0]) == 0x0a);
  auto back = lancet::pb::decode<pf::file_descriptor>(bytes);
  CHECK(back == d);

  pf::file_descriptor empty;
  empty.schema = pf::schema{};
  CHECK(hex(lancet::pb::encode(empty)) == "0a00");  // a present, empty schema is still written
  CHECK(lancet::pb::decode<pf::file_descriptor>(std::string_view()).schema == std::nullopt);

  pf::file_metadata m;
  m.manifest_position = 5;
  m.batch_offsets = {0, 10, -1};
  m.page_table_position = 77;
  m.statistics = pf::file_metadata::statistics_metadata{{f2}, {1, 2}, 9};
  auto mb = lancet::pb::encode(m);
  CHECK(lancet::pb::decode<pf::file_metadata>(mb) == m);
  // Packed int32: a negative value takes 10 bytes.
  CHECK(contains(hex(mb), "120c" "00" "0a" "ffffffffffffffffff01"));
}

// ---- logical types ---------------------------------------------------------------

TEST_CASE("logical type strings of every Arrow type (as LanceDB 0.39 writes them)") {
  using namespace lancet::arrow;
  struct {
    type_ptr t;
    const char* lt;
  } cases[] = {
      {null_type(), "null"},
      {boolean(), "bool"},
      {int8(), "int8"},
      {int16(), "int16"},
      {int32(), "int32"},
      {int64(), "int64"},
      {uint8(), "uint8"},
      {uint16(), "uint16"},
      {uint32(), "uint32"},
      {uint64(), "uint64"},
      {float16(), "halffloat"},
      {float32(), "float"},
      {float64(), "double"},
      {date32(), "date32:day"},
      {date64(), "date64:ms"},
      {time32(time_unit::second), "time32:s"},
      {time32(time_unit::milli), "time32:ms"},
      {time64(time_unit::micro), "time64:us"},
      {time64(time_unit::nano), "time64:ns"},
      {timestamp(time_unit::second), "timestamp:s:-"},
      {timestamp(time_unit::milli), "timestamp:ms:-"},
      {timestamp(time_unit::micro, "UTC"), "timestamp:us:UTC"},
      {timestamp(time_unit::nano), "timestamp:ns:-"},
      {timestamp(time_unit::nano, "America/New_York"), "timestamp:ns:America/New_York"},
      {duration(time_unit::second), "duration:s"},
      {duration(time_unit::milli), "duration:ms"},
      {duration(time_unit::micro), "duration:us"},
      {duration(time_unit::nano), "duration:ns"},
      {decimal128(38, 10), "decimal:128:38:10"},
      {decimal256(76, 10), "decimal:256:76:10"},
      {utf8(), "string"},
      {large_utf8(), "large_string"},
      {binary(), "binary"},
      {large_binary(), "large_binary"},
      {fixed_size_binary(16), "fixed_size_binary:16"},
      {fixed_size_list(float32(), 8), "fixed_size_list:float:8"},
      {fixed_size_list(fixed_size_list(int16(), 3), 2), "fixed_size_list:fixed_size_list:int16:3:2"},
      {fixed_size_list(timestamp(time_unit::micro, "UTC"), 2), "fixed_size_list:timestamp:us:UTC:2"},
      {fixed_size_list(decimal128(9, 3), 2), "fixed_size_list:decimal:128:9:3:2"},
      {fixed_size_list(struct_({F("x", int32())}), 2), "fixed_size_list:struct:2"},
      {list(int32()), "list"},
      {large_list(int32()), "large_list"},
      {list(struct_({})), "list.struct"},
      {large_list(struct_({F("a", int8())})), "large_list.struct"},
      {list(list(struct_({}))), "list"},
      {struct_({F("a", int32())}), "struct"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.lt);
    CHECK(ls::logical_type_of(*c.t) == c.lt);
    CHECK(ls::logical_type_of(F("f", c.t)) == c.lt);
  }
  // Extension types that change the logical type.
  CHECK(ls::logical_type_of(F("j", large_binary(), true, {{"ARROW:extension:name", "lance.json"}})) == "json");
  auto bf16 = F("item", fixed_size_binary(2), true, {{"ARROW:extension:name", "lance.bfloat16"}});
  CHECK(ls::logical_type_of(F("v", fixed_size_list(bf16, 4))) == "fixed_size_list:lance.bfloat16:4");
}

TEST_CASE("what Lance cannot store is refused, naming the field") {
  using namespace lancet::arrow;
  auto conv = [](ar::field f) {
    ar::schema s;
    s.fields.push_back(std::move(f));
    return ls::from_arrow(s);
  };
  // Verified: Lance 12 writes "timestamp:ns:+05:30" and then fails to read it.
  CHECK(contains(message_of<unsupported_error>([&] { conv(F("t", timestamp(time_unit::nano, "+05:30"))); }),
                 "field 't': timezone '+05:30'"));
  // Verified: Lance 12 rejects these ("Unsupported data type").
  CHECK(contains(message_of<unsupported_error>([&] { conv(F("v", fixed_size_list(list(int32()), 2))); }),
                 "field 'v'"));
  CHECK(contains(message_of<unsupported_error>([&] {
                   conv(F("v", fixed_size_list(fixed_size_list(struct_({F("x", int32())}), 3), 2)));
                 }),
                 "fixed_size_list of"));
  CHECK(contains(message_of<unsupported_error>([&] {
                   conv(F("s", struct_({F("deep", fixed_size_list(large_list(int8()), 2))})));
                 }),
                 "field 's.deep'"));
  CHECK(contains(
      message_of<unsupported_error>([&] { conv(F("j", utf8(), true, {{"ARROW:extension:name", "arrow.json"}})); }),
      "field 'j': arrow.json"));
  // Invalid schemas.
  ar::schema dots;
  dots.fields = {F("a.b", int32())};
  CHECK(contains(message_of<invalid_input_error>([&] { ls::from_arrow(dots); }), "'a.b' cannot contain '.'"));
  ar::schema dup;
  dup.fields = {F("a", int32()), F("a", int64())};
  CHECK(contains(message_of<invalid_input_error>([&] { ls::from_arrow(dup); }), "duplicate field name 'a'"));
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("t", time32(time_unit::nano))); }), "time32"));
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("t", nullptr)); }), "'t' has no type"));
  // Primary keys: leaf, not nullable (nor any ancestor), not in a list.
  const ar::metadata pk{{"lance-schema:unenforced-primary-key", "TRUE"}};
  auto ok = conv(F("id", int64(), false, pk));
  CHECK(ok.fields[0].unenforced_primary_key);
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("id", int64(), true, pk)); }), "must not be nullable"));
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("s", struct_({F("id", int64(), false, pk)}), true)); }),
                 "'s.id' and all its ancestors"));
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("l", list(F("id", int64(), false, pk)), false)); }),
                 "inside a list"));
  CHECK(contains(message_of<invalid_input_error>([&] { conv(F("s", struct_({F("x", int8(), false)}), false, pk)); }), "must be a leaf"));
  // Nested names may contain dots, repeat, or be empty (Lance 12 accepts them).
  conv(F("s", struct_({F("x.y", int32()), F("x", int32()), F("x", int8()), F("", int8())})));
}

// ---- ids and conversion ---------------------------------------------------------------

TEST_CASE("field ids: depth first, parents before children, from 0; parent ids") {
  auto s = ls::from_arrow(lancedb_table_schema());
  std::vector<std::int32_t> expect;
  for (int i = 0; i <= 43; ++i) expect.push_back(i);
  CHECK(ls::preorder_ids(s) == expect);
  const auto* lst_st = s.field_by_name("lst_st");
  REQUIRE(lst_st);
  CHECK(lst_st->id == 33);
  CHECK(lst_st->parent_id == -1);
  CHECK(lst_st->children[0].id == 34);
  CHECK(lst_st->children[0].parent_id == 33);
  CHECK(lst_st->children[0].children[1].name == "y");
  CHECK(lst_st->children[0].children[1].id == 36);
  CHECK(lst_st->children[0].children[1].parent_id == 34);
  CHECK(s.field_by_path({"st", "inner", "z"})->id == 40);
  CHECK(s.field_by_id(42)->name == "item");
  CHECK(s.field_by_id(42)->parent_id == 41);
  CHECK(s.field_by_id(99) == nullptr);
  CHECK(s.max_field_id() == 43);
  CHECK(ls::field_path(s, 40) == "st.inner.z");
  CHECK(ls::field_path(s, 0) == "n");
  CHECK(ls::field_path(s, 99).empty());
  // fixed_size_list items are not fields (no ids), except a struct item.
  CHECK(s.field_by_name("vec")->children.empty());
  CHECK(s.field_by_name("vec")->fsl_item.has_value());

  // New fields continue after the largest existing id (as Lance's set_field_id does).
  ls::schema t;
  t.fields.push_back(ls::from_arrow(F("a", ar::struct_({F("x", ar::int32())}))));
  t.fields.push_back(ls::from_arrow(F("b", ar::int8())));
  t.fields[1].id = 7;
  ls::assign_field_ids(t, 10);
  CHECK(t.fields[0].id == 11);
  CHECK(t.fields[0].children[0].id == 12);
  CHECK(t.fields[0].children[0].parent_id == 11);
  CHECK(t.fields[1].id == 7);
  CHECK(t.fields[1].parent_id == -1);
  ls::validate(t);
  t.fields[1].id = 12;
  CHECK(contains(message_of<invalid_input_error>([&] { ls::validate(t); }), "'b' reuses field id 12"));
  t.fields[1].id = 13;
  t.fields[1].parent_id = 3;
  CHECK(contains(message_of<invalid_input_error>([&] { ls::validate(t); }), "'b' has parent_id 3"));
}

TEST_CASE("our Field bytes equal LanceDB's for a table of every type") {
  auto s = ls::from_arrow(lancedb_table_schema());
  auto pbs = ls::to_pb_fields(s);
  REQUIRE(pbs.size() == std::size(lancedb_table_fields));
  for (std::size_t i = 0; i < pbs.size(); ++i) {
    CAPTURE(pbs[i].name);
    CHECK(hex(lancet::pb::encode(pbs[i])) == lancedb_table_fields[i]);
  }
  // And LanceDB's bytes decode to the same schema.
  std::vector<pf::field> theirs;
  for (const char* h : lancedb_table_fields) theirs.push_back(lancet::pb::decode<pf::field>(unhex(h)));
  auto back = ls::from_pb_fields(theirs);
  CHECK(back == s);
  auto arrow_back = ls::to_arrow(back);
  auto expect = lancedb_table_schema();
  REQUIRE(arrow_back.fields.size() == expect.fields.size());
  for (std::size_t i = 0; i < expect.fields.size(); ++i) {
    CAPTURE(expect.fields[i].name);
    const auto& e = expect.fields[i];
    const auto& g = arrow_back.fields[i];
    CHECK(g.name == e.name);
    CHECK(g.nullable == e.nullable);
    if (e.name == "vec") {
      // Lance keeps no fixed_size_list item: it comes back as "item", nullable.
      CHECK(ar::equals(*g.type, *ar::fixed_size_list(ar::float32(), 8)));
    } else {
      CHECK(ar::equals(*g.type, *e.type));
    }
  }
  CHECK(arrow_back.fields[33].type->children[0].metadata == ar::metadata{{"k", "v"}});
}

TEST_CASE("extension names, primary keys, large types and fixed_size_list<struct> as LanceDB writes them") {
  ar::schema s;
  s.fields = {F("ls", ar::large_utf8()), F("lbin", ar::large_binary()),
              F("ext", ar::binary(), true, {{"ARROW:extension:name", "my.ext"}}),
              F("pk", ar::int64(), false, {{"lance-schema:unenforced-primary-key", "true"}})};
  auto pbs = ls::to_pb_fields(ls::from_arrow(s));
  REQUIRE(pbs.size() == 4);
  CHECK(hex(lancet::pb::encode(pbs[0])) == "12026c7320ffffffffffffffffff012a0c6c617267655f737472696e6730013802");
  CHECK(hex(lancet::pb::encode(pbs[1])) == "12046c62696e180120ffffffffffffffffff012a0c6c617267655f62696e61727930013802");
  CHECK(hex(lancet::pb::encode(pbs[2])) ==
        "1203657874180220ffffffffffffffffff012a0662696e617279300138024a066d792e657874521e0a144152524f573a65787465"
        "6e73696f6e3a6e616d6512066d792e657874");
  CHECK(hex(lancet::pb::encode(pbs[3])) ==
        "1202706b180320ffffffffffffffffff012a05696e7436343801522b0a236c616e63652d736368656d613a756e656e666f726365"
        "642d7072696d6172792d6b65791204747275656001");

  // fixed_size_list<struct> keeps its item as a child field (name, nullability, metadata).
  ar::schema f;
  f.fields = {F("c", ar::fixed_size_list(F("elem", ar::struct_({F("x", ar::int32(), false)}), false, {{"k", "v"}}), 2))};
  auto fs = ls::from_arrow(f);
  auto fp = ls::to_pb_fields(fs);
  REQUIRE(fp.size() == 3);
  CHECK(hex(lancet::pb::encode(fp[0])) == "12016320ffffffffffffffffff012a1866697865645f73697a655f6c6973743a7374727563743a3230013801");
  CHECK(hex(lancet::pb::encode(fp[1])) == "1204656c656d18012a0673747275637452060a016b120176");
  CHECK(hex(lancet::pb::encode(fp[2])) == "120178180220012a05696e7433323801");
  auto fa = ls::to_arrow(ls::from_pb_fields(fp));
  CHECK(ar::equals(*fa.fields[0].type, *f.fields[0].type));
  CHECK(fa.fields[0].type->children[0].metadata == ar::metadata{{"k", "v"}});

  ar::schema l;
  l.fields = {F("c", ar::list(ar::fixed_size_list(ar::struct_({F("x", ar::int32())}), 3)))};
  auto lp = ls::to_pb_fields(ls::from_arrow(l));
  REQUIRE(lp.size() == 4);
  CHECK(hex(lancet::pb::encode(lp[1])) == "12046974656d18012a1866697865645f73697a655f6c6973743a7374727563743a3330013801");
  CHECK(hex(lancet::pb::encode(lp[3])) == "120178180320022a05696e74333230013801");
}

TEST_CASE("Arrow -> Lance -> Arrow keeps types, names, nullability and metadata") {
  using namespace lancet::arrow;
  ar::schema s = lancedb_table_schema();
  s.fields.push_back(F("ls", large_utf8()));
  s.fields.push_back(F("ll", large_list(F("element", list(struct_({F("q", boolean())})), false))));
  s.fields.push_back(F("bf16", fixed_size_list(F("item", fixed_size_binary(2), true,
                                                 {{"ARROW:extension:name", "lance.bfloat16"},
                                                  {"ARROW:extension:metadata", ""}}),
                                               4)));
  s.fields.push_back(F("json", large_binary(), true, {{"ARROW:extension:name", "lance.json"}}));
  s.fields.push_back(F("md", int8(), true, {{"bytes", std::string("\0\xff", 2)}}));
  s.metadata = {{"schema-key", std::string("v\0", 2)}};
  auto lance = ls::from_arrow(s);
  CHECK(lance.field_by_name("json")->logical_type == "json");
  CHECK(lance.field_by_name("json")->encoding == pf::field_encoding::var_binary);
  CHECK(lance.field_by_name("n")->encoding == pf::field_encoding::none);
  CHECK(lance.field_by_name("st")->encoding == pf::field_encoding::none);
  CHECK(lance.field_by_name("lst")->encoding == pf::field_encoding::plain);
  CHECK(lance.field_by_name("ll")->logical_type == "large_list");
  CHECK(lance.field_by_name("ll")->children[0].logical_type == "list.struct");

  // In process: exact (the fixed_size_list item is remembered).
  auto back = ls::to_arrow(lance);
  REQUIRE(back.fields.size() == s.fields.size());
  CHECK(back.metadata == s.metadata);
  for (std::size_t i = 0; i < s.fields.size(); ++i) {
    CAPTURE(s.fields[i].name);
    CHECK(back.fields[i].name == s.fields[i].name);
    CHECK(back.fields[i].nullable == s.fields[i].nullable);
    CHECK(back.fields[i].metadata == s.fields[i].metadata);
    CHECK(ar::equals(*back.fields[i].type, *s.fields[i].type));
  }

  // Through the file descriptor bytes: what a reader of the file sees.
  const std::string fd = ls::encode_file_descriptor(lance, 12345);
  auto [read, rows] = ls::decode_file_descriptor(bytes_view(reinterpret_cast<const std::uint8_t*>(fd.data()), fd.size()));
  CHECK(rows == 12345);
  CHECK(read == lance);
  CHECK(read.metadata == s.metadata);
  auto read_arrow = ls::to_arrow(read);
  const auto* bf = &read_arrow.fields[read_arrow.fields.size() - 3];
  CHECK(bf->name == "bf16");
  CHECK(ar::equals(*bf->type, *s.fields[s.fields.size() - 3].type));
  CHECK(bf->type->children[0].metadata ==
        ar::metadata{{"ARROW:extension:name", "lance.bfloat16"}, {"ARROW:extension:metadata", ""}});
  CHECK(read_arrow.fields[read_arrow.fields.size() - 2].metadata ==
        ar::metadata{{"ARROW:extension:name", "lance.json"}});
  CHECK(ar::equals(*read_arrow.fields[1].type, *boolean()));
  // The fixed_size_list item is Lance's: "item", nullable.
  const auto& vec = read_arrow.fields[29];
  CHECK(vec.name == "vec");
  CHECK(vec.type->children[0].name == "item");
  CHECK(vec.type->children[0].nullable);
  // The field's extension name is written to Field.extension_name too.
  auto pbs = ls::to_pb_fields(lance);
  CHECK(pbs.back().name == "md");
  CHECK(pbs[pbs.size() - 2].extension_name == "lance.json");
}

TEST_CASE("reading a schema: Lance's extension_name becomes metadata; unsupported and corrupt schemas") {
  pf::field e;
  e.name = "e";
  e.parent_id = -1;
  e.logical_type = "binary";
  e.nullable = true;
  e.extension_name = "old.ext";
  auto s = ls::from_pb_fields({e});
  CHECK(s.fields[0].metadata == ar::metadata{{"ARROW:extension:name", "old.ext"}});
  CHECK(s.fields[0].extension_name() == "old.ext");

  auto leaf = [](std::string name, std::int32_t id, std::int32_t parent, std::string lt) {
    pf::field f;
    f.name = std::move(name);
    f.id = id;
    f.parent_id = parent;
    f.logical_type = std::move(lt);
    f.nullable = true;
    return f;
  };
  // Types lancet does not know; maps and dictionaries it does (tests/test_types.cpp).
  CHECK(contains(message_of<unsupported_error>([&] { ls::from_pb_fields({leaf("u", 0, -1, "union")}); }),
                 "field 'u': Lance logical type 'union'"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("m", 0, -1, "map")}); }),
                 "field 'm' of logical type 'map' has 0 child fields, expected 1"));
  CHECK(ar::to_string(*ls::to_arrow(ls::from_pb_fields({leaf("d", 0, -1, "dict:string:int32:false")})).fields.at(0).type) ==
        "dictionary<int32, utf8>");
  // Structure that cannot be a schema.
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("a", 0, -1, "int8"), leaf("b", 0, -1, "int8")}); }),
                 "reuses field id 0"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("a", 1, 5, "int8")}); }),
                 "names parent 5, which does not precede it"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("a", 1, 1, "int8")}); }), "does not precede"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("l", 0, -1, "list")}); }),
                 "'l' of logical type 'list' has 0 child fields"));
  CHECK(contains(message_of<corrupt_error>([&] {
                   ls::from_pb_fields({leaf("l", 0, -1, "list.struct"), leaf("item", 1, 0, "int8")});
                 }),
                 "has an item of type int8"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("x", 0, -1, "int8"), leaf("y", 1, 0, "int8")}); }),
                 "'x' of logical type 'int8' has 1 child"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("d", 0, -1, "decimal:128:x:1")}); }),
                 "malformed logical type"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("t", 0, -1, "timestamp:xs:-")}); }),
                 "malformed"));
  CHECK(contains(message_of<corrupt_error>([&] { ls::from_pb_fields({leaf("f", 0, -1, "fixed_size_list:float")}); }),
                 "malformed"));
  // A deep chain of structs is bounded.
  std::vector<pf::field> chain;
  for (int i = 0; i < 100; ++i) {
    auto f = leaf("s", i, i - 1, "struct");
    chain.push_back(f);
  }
  CHECK_THROWS_AS(ls::from_pb_fields(chain), corrupt_error);
  // A file descriptor without a schema.
  CHECK_THROWS_AS(ls::decode_file_descriptor(bytes_view()), corrupt_error);

  // Lenient where Lance is strict but the meaning is plain: a zone after the unit may hold ':'.
  auto t = ls::to_arrow(ls::from_pb_fields({leaf("t", 0, -1, "timestamp:ns:+05:30")}));
  CHECK(t.fields[0].type->timezone == "+05:30");
  auto bf = ls::to_arrow(ls::from_pb_fields({leaf("v", 0, -1, "fixed_size_list:fixed_size_list:timestamp:us:UTC:2:3")}));
  CHECK(ar::equals(*bf.fields[0].type,
                   *ar::fixed_size_list(ar::fixed_size_list(ar::timestamp(ar::time_unit::micro, "UTC"), 2), 3)));
}
