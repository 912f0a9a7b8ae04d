// Manifests, fragments, transactions, version naming and roaring bitmaps.
//
// The fixtures in tests/fixtures/manifests/ were written by LanceDB 0.39 (Lance 12.0.0)
// from small generated tables:
//   create_v1.manifest          create (Overwrite), storage 2.1, v2 names
//   indexed_v5.manifest         + append, delete, IVF_PQ index on `vec`, BTREE on `id`
//   stable_row_ids_v4.manifest  stable row ids, storage 2.0, after append/delete/update
//   v1_naming_v2.manifest       a v1-named dataset (2.manifest), default storage (2.2)
//   bitmap_deletion_v2.manifest 10,000 rows, every even id deleted (BITMAP deletion file)
//   deletion_evens.bin          that deletion file (roaring bitset container)
//   delete.txn, create_index.txn  _transactions/ files of the indexed dataset
// Facts confirmed against them are noted where a test relies on them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <lancet/dataset/manifest.hpp>
#include <lancet/dataset/roaring.hpp>
#include <lancet/dataset/versions.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/pb/table.hpp>
#if __has_include(<lancet/pb/file.hpp>)
#include <lancet/pb/file.hpp>
#define LANCET_TEST_HAVE_PB_FILE 1
#endif

#include "support/temp_dir.hpp"
#include "support/text.hpp"

using namespace lancet;
namespace fs = std::filesystem;

namespace {

using lancet::testing::view;

// tests/fixtures/manifests, found from the source file's location or by walking up
// from the working directory (meson runs tests inside the build tree).
fs::path fixture_dir() {
  std::vector<fs::path> bases;
  fs::path src = fs::path(__FILE__).parent_path();
  bases.push_back(src);
  for (fs::path p = fs::current_path(); !p.empty(); p = p.parent_path()) {
    bases.push_back(p / "tests");
    bases.push_back(p / src);
    if (p == p.root_path()) break;
  }
  for (const auto& b : bases) {
    fs::path d = b / "fixtures" / "manifests";
    if (fs::exists(d / "indexed_v5.manifest")) return d;
  }
  FAIL("fixtures/manifests not found");
  return {};
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() / name, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The `name` (field 2) of an encoded lance.file.Field.
std::string field_name(const std::string& raw) {
  pb::reader r(raw);
  while (!r.done()) {
    auto f = r.next();
    if (f.number == 2) return f.as_string();
  }
  return {};
}

// A scratch directory (removed at the end of the scope) to write files into.
struct manifest_dir : lancet::testing::scratch_dir {
  fs::path path;
  manifest_dir() : scratch_dir("manifest"), path(scratch_dir::path()) {}
  void touch(const std::string& rel, const std::string& content = "x") const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel, std::ios::binary) << content;
  }
};

std::string u16le(std::uint16_t v) { return std::string{char(v & 0xFF), char(v >> 8)}; }
std::string u32le(std::uint32_t v) { return u16le(std::uint16_t(v)) + u16le(std::uint16_t(v >> 16)); }

}  // namespace

// ---------------------------------------------------------------------------------
TEST_SUITE("manifest") {

TEST_CASE("uuid: v4 bits, text form and parse") {
  auto a = lancet::uuid::generate_v4();
  auto b = lancet::uuid::generate_v4();
  CHECK(a != b);
  CHECK((a.bytes[6] >> 4) == 4);
  CHECK((a.bytes[8] & 0xC0) == 0x80);
  std::string s = a.to_string();
  REQUIRE(s.size() == 36);
  CHECK(s[8] == '-');
  CHECK(s[14] == '4');
  CHECK(lancet::uuid::parse(s) == a);
  auto u = lancet::uuid::parse("EC06D4B1-1FEE-482A-9AA8-5D56F6A80EDA");
  CHECK(u.to_string() == "ec06d4b1-1fee-482a-9aa8-5d56f6a80eda");
  CHECK(lancet::uuid::parse("ec06d4b11fee482a9aa85d56f6a80eda") == u);
  CHECK_THROWS_AS(lancet::uuid::parse("ec06d4b1-1fee-482a-9aa8-5d56f6a80ed"), invalid_input_error);
  CHECK_THROWS_AS(lancet::uuid::parse("ec06d4b1x1fee-482a-9aa8-5d56f6a80eda"), invalid_input_error);
  CHECK_THROWS_AS(lancet::uuid::parse("gc06d4b1-1fee-482a-9aa8-5d56f6a80eda"), invalid_input_error);
  // UUID message: 16 bytes or corrupt.
  pb::writer w;
  w.bytes(1, std::string_view("short"));
  CHECK_THROWS_AS(pb::decode<lancet::uuid>(pb::reader(w.bytes())), corrupt_error);
  CHECK_THROWS_AS(pb::decode<lancet::uuid>(pb::reader(std::string_view())), corrupt_error);
}

TEST_CASE("data file and deletion file: hand-checked bytes") {
  pb::data_file d;
  d.path = "a.lance";
  d.fields = {0, 1};
  d.column_indices = {0, -1};
  d.file_major_version = 2;
  d.file_minor_version = 1;
  d.file_size_bytes = 300;
  pb::writer w;
  pb::encode(w, d);
  // 0a 07 "a.lance" | 12 02 00 01 | 1a 0b 00 ff*9 01 | 20 02 | 28 01 | 30 ac 02
  std::string expected = std::string("\x0a\x07" "a.lance", 9) + std::string("\x12\x02\x00\x01", 4) +
                         std::string("\x1a\x0b\x00", 3) + std::string(9, '\xff') +
                         std::string("\x01\x20\x02\x28\x01\x30\xac\x02", 8);
  CHECK(w.bytes() == expected);
  auto back = pb::decode<pb::data_file>(pb::reader(w.bytes()));
  CHECK(back == d);
  CHECK(back.column_indices[1] == -1);

  pb::deletion_file del;
  del.file_type = pb::deletion_file::type::bitmap;
  del.read_version = 3;
  del.id = 42;
  del.num_deleted_rows = 7;
  CHECK(del.relative_path(5) == "_deletions/5-3-42.bin");
  pb::writer w2;
  pb::encode(w2, del);
  CHECK(w2.bytes() == std::string("\x08\x01\x10\x03\x18\x2a\x20\x07", 8));
  del.file_type = pb::deletion_file::type::arrow_array;
  CHECK(del.relative_path(0) == "_deletions/0-3-42.arrow");
  // Unknown deletion file type: Lance refuses it as unsupported.
  pb::writer w3;
  w3.uint64(1, 9);
  CHECK_THROWS_AS(pb::decode<pb::deletion_file>(pb::reader(w3.bytes())), unsupported_error);
}

TEST_CASE("data fragment: every field and oneof round trips") {
  pb::data_fragment f;
  f.id = 7;
  f.files.push_back({"x.lance", {0, 1, 2}, {0, 1, 2}, 2, 1, 1234, std::uint32_t(0)});
  f.deletion_file = pb::deletion_file{pb::deletion_file::type::arrow_array, 5, 99, 3, std::nullopt};
  f.physical_rows = 100;
  f.row_id_sequence = pb::encode(pb::row_id_sequence::make_range(1000, 100));
  f.last_updated_at_version_sequence = pb::external_file{"rows.bin", 16, 32};
  f.created_at_version_sequence = pb::encode(pb::row_dataset_version_sequence::uniform(100, 2));
  pb::writer w;
  pb::encode(w, f);
  auto back = pb::decode<pb::data_fragment>(pb::reader(w.bytes()));
  CHECK(back == f);
  CHECK(back.num_rows() == 97);
  CHECK(back.files[0].base_id == 0u);  // explicit presence survives
  auto ids = pb::decode<pb::row_id_sequence>(std::get<std::string>(back.row_id_sequence));
  CHECK(ids.size() == 100);
  CHECK(ids.values().front() == 1000);
  CHECK(ids.values().back() == 1099);

  pb::data_fragment legacy;
  CHECK_FALSE(legacy.num_rows().has_value());  // physical_rows unknown
}

TEST_CASE("row-id segments: all shapes") {
  pb::row_id_sequence s;
  s.segments.push_back(pb::u64_segment::make_range(0, 3));
  s.segments.push_back({pb::u64_range_with_holes{10, 15, pb::encoded_u64_array::from_values({11, 13})}});
  s.segments.push_back({pb::u64_range_with_bitmap{20, 30, std::string("\x05\x02", 2)}});  // 20, 22, 29
  s.segments.push_back({pb::u64_sorted_array{pb::encoded_u64_array::from_values({100, 200, 70000})}});
  s.segments.push_back({pb::u64_array{pb::encoded_u64_array::from_values({5, 1ull << 40, 3})}});
  auto back = pb::decode<pb::row_id_sequence>(pb::encode(s));
  CHECK(back == s);
  std::vector<std::uint64_t> expected = {0, 1, 2, 10, 12, 14, 20, 22, 29, 100, 200, 70000, 5, 1ull << 40, 3};
  CHECK(back.values() == expected);
  CHECK(back.size() == expected.size());
  CHECK(s.segments[3].values() == std::vector<std::uint64_t>{100, 200, 70000});
  // 70000 - 100 needs 32 bits; 2^40 needs 64.
  CHECK(std::get<pb::u64_sorted_array>(s.segments[3].segment).values.type == pb::encoded_u64_array::kind::u32);
  CHECK(std::get<pb::u64_array>(s.segments[4].segment).values.type == pb::encoded_u64_array::kind::u64);

  // Hand-checked: RowIdSequence{ [Range{10, 20}] } = 0a 06 0a 04 08 0a 10 14
  CHECK(pb::encode(pb::row_id_sequence::make_range(10, 10)) == std::string("\x0a\x06\x0a\x04\x08\x0a\x10\x14", 8));

  // Corrupt shapes are refused.
  pb::writer bad;
  bad.message_fn(1, [](pb::writer& seg) { seg.message_fn(9, [](pb::writer&) {}); });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(bad.bytes()), corrupt_error);
  pb::writer reversed;
  reversed.message_fn(1, [](pb::writer& seg) { seg.message_fn(1, [](pb::writer& r) { r.uint64(1, 9); r.uint64(2, 3); }); });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(reversed.bytes()), corrupt_error);
  pb::writer short_bitmap;
  short_bitmap.message_fn(1, [](pb::writer& seg) {
    seg.message_fn(3, [](pb::writer& r) { r.uint64(1, 0); r.uint64(2, 64); r.bytes(3, std::string_view("\x01")); });
  });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(short_bitmap.bytes()), corrupt_error);
  pb::writer odd;
  odd.message_fn(1, [](pb::writer& seg) { seg.message_fn(4, [](pb::writer& a) { a.message_fn(1, [](pb::writer& x) { x.bytes(2, std::string_view("\x01\x02\x03")); }); }); });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(odd.bytes()), corrupt_error);
  CHECK_THROWS_AS(pb::u64_segment::make_range(5, 4), invalid_input_error);
  pb::writer huge;
  huge.message_fn(1, [](pb::writer& seg) { seg.message_fn(1, [](pb::writer& r) { r.uint64(2, 1ull << 40); }); });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(huge.bytes()), corrupt_error);
  pb::writer many_holes;
  many_holes.message_fn(1, [](pb::writer& seg) {
    seg.message_fn(2, [](pb::writer& r) {
      r.uint64(1, 0);
      r.uint64(2, 1);
      r.bytes(3, pb::encode(pb::encoded_u64_array::from_values({0, 1, 2})));
    });
  });
  CHECK_THROWS_AS(pb::decode<pb::row_id_sequence>(many_holes.bytes()), corrupt_error);
}

TEST_CASE("index metadata and section round trip, optional presence kept") {
  pb::index_metadata m;
  m.uuid = lancet::uuid::generate_v4();
  m.fields = {2};
  m.name = "vec_idx";
  m.dataset_version = 3;
  dataset::set_index_fragment_bitmap(m, dataset::roaring_bitmap{0, 1, 5});
  m.index_details = pb::any{"/lance.index.pb.VectorIndexDetails", "\x22\x04\x08\x08\x10\x02"};
  m.index_version = 0;  // written although zero: proto3 `optional`
  m.created_at = 1795998870380ull;
  m.files = {{"index.idx", 394}, {"auxiliary.idx", 14582}};
  pb::index_section sec{{m}};
  std::string bytes = pb::encode(sec);
  auto back = pb::decode<pb::index_section>(bytes);
  REQUIRE(back.indices.size() == 1);
  CHECK(back.indices[0] == m);
  CHECK(back.indices[0].index_version == 0);
  CHECK(dataset::index_fragment_bitmap(back.indices[0]).to_vector() == std::vector<std::uint32_t>{0, 1, 5});
  m.index_version.reset();
  CHECK(pb::encode(pb::index_section{{m}}).size() == bytes.size() - 2);
  // An index without a UUID is refused, as Lance does.
  pb::writer w;
  w.string(3, "x");
  CHECK_THROWS_AS(pb::decode<pb::index_metadata>(pb::reader(w.bytes())), corrupt_error);
}

TEST_CASE("transactions: every operation round trips; unknown or missing operations are corrupt") {
  pb::data_fragment frag;
  frag.files.push_back({"f.lance", {0}, {0}, 2, 1, 10, std::nullopt});
  frag.physical_rows = 3;
  pb::index_metadata idx;
  idx.uuid = lancet::uuid::generate_v4();
  idx.name = "i";

  std::vector<pb::transaction::operation_t> ops;
  ops.emplace_back(pb::transaction::append{{frag}});
  ops.emplace_back(pb::transaction::delete_rows{{frag}, {4, 5}, "id > 3"});
  ops.emplace_back(pb::transaction::overwrite{{frag}, {"\x12\x01x"}, {{"k", "v"}}, {{"lance.x", "1"}}, {{1, "b", true, "/p"}}});
  ops.emplace_back(pb::transaction::create_index{{idx}, {idx}});
  pb::transaction::rewrite rw;
  rw.groups.push_back({{frag}, {frag}});
  rw.rewritten_indices.push_back({idx.uuid, lancet::uuid::generate_v4(), pb::any{"t", "v"}, 2, {{"index.idx", 123}}});
  ops.emplace_back(rw);
  ops.emplace_back(pb::transaction::merge{{frag}, {"\x12\x01y"}, {{"a", "b"}}});
  ops.emplace_back(pb::transaction::restore{3});
  ops.emplace_back(pb::transaction::reserve_fragments{8});
  pb::transaction::update up;
  up.removed_fragment_ids = {1};
  up.updated_fragments = {frag};
  up.new_fragments = {frag};
  up.fields_modified = {1, 2};
  up.mem_wal_to_merge_raw = std::string("\x12\x01m");
  up.fields_for_preserving_frag_bitmap = {0};
  up.update_mode = pb::transaction::update::mode::rewrite_columns;
  ops.emplace_back(up);
  ops.emplace_back(pb::transaction::project{{"\x12\x01z"}});
  pb::transaction::update_config uc;
  uc.config_updates = pb::transaction::update_map{{{"a", std::string("1")}, {"b", std::nullopt}}, true};
  uc.field_metadata_updates[-1] = pb::transaction::update_map{{{"k", std::string("v")}}, false};
  uc.upsert_values = {{"x", "y"}};
  uc.delete_keys = {"gone"};
  uc.field_metadata[3].metadata = {{"m", "n"}};
  ops.emplace_back(uc);
  ops.emplace_back(pb::transaction::data_replacement{{{2, frag.files[0]}}});
  ops.emplace_back(pb::transaction::update_mem_wal_state{{"\x0a\x00"}, {}, {"\x0a\x00"}});
  ops.emplace_back(pb::transaction::clone{true, std::string("v1"), 4, "/src", std::nullopt});
  ops.emplace_back(pb::transaction::update_bases{{{2, std::nullopt, false, "/b"}}});
  REQUIRE(ops.size() == std::variant_size_v<pb::transaction::operation_t> - 1);

  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto t = dataset::make_transaction(7, ops[i]);
    t.tag = "t";
    t.transaction_properties = {{"__lance_commit_message", "hi"}};
    std::string bytes = pb::encode(t);
    auto back = pb::decode<pb::transaction>(bytes);
    CHECK(back == t);
    CHECK(back.operation.index() == i + 1);
    // The operation sits at field 100 + i: after the header fields, its tag is two
    // bytes (varint of (100 + i) << 3 | 2).
    const std::uint32_t tag = std::uint32_t((100 + i) << 3 | 2);
    CHECK(bytes.find(std::string{char(0x80 | (tag & 0x7F)), char(tag >> 7)}) != std::string::npos);
    CHECK(t.file_name() == "7-" + t.uuid + ".txn");
  }

  pb::writer unknown;
  unknown.uint64(1, 1);
  unknown.message_fn(150, [](pb::writer&) {});
  CHECK_THROWS_AS(pb::decode<pb::transaction>(unknown.bytes()), corrupt_error);
  pb::writer none;
  none.uint64(1, 1);
  none.string(2, "u");
  CHECK_THROWS_AS(pb::decode<pb::transaction>(none.bytes()), corrupt_error);
  pb::transaction empty;
  CHECK_THROWS_AS(pb::encode(empty), invalid_input_error);
}

// ---------------------------------------------------------------------------------
// Roaring bitmaps
// ---------------------------------------------------------------------------------

TEST_CASE("roaring: hand-built array, bitset and run containers (RoaringFormatSpec)") {
  using dataset::roaring_bitmap;
  // No-run cookie, 2 containers: key 0 {1, 5}, key 2 {7}; offsets 24 and 28.
  std::string bytes = u32le(12346) + u32le(2) + u16le(0) + u16le(1) + u16le(2) + u16le(0) + u32le(24) + u32le(28) +
                      u16le(1) + u16le(5) + u16le(7);
  auto b = roaring_bitmap::deserialize(bytes);
  CHECK(b.to_vector() == std::vector<std::uint32_t>{1, 5, (2u << 16) | 7});
  CHECK(b.serialize() == bytes);  // written exactly as read
  CHECK(b.contains(5));
  CHECK_FALSE(b.contains(6));
  CHECK(b.min() == 1u);
  CHECK(b.max() == ((2u << 16) | 7));

  // Run cookie with 1 container (< 4: no offset header): runs [10..12] and [100..100].
  std::string runs = u32le(12347 | (0u << 16)) + std::string(1, '\x01') + u16le(3) + u16le(3) + u16le(2) + u16le(10) +
                     u16le(2) + u16le(100) + u16le(0);
  auto r = roaring_bitmap::deserialize(runs);
  CHECK(r.to_vector() == std::vector<std::uint32_t>{(3u << 16) | 10, (3u << 16) | 11, (3u << 16) | 12, (3u << 16) | 100});
  // Written back without runs (as Rust roaring does): array container.
  CHECK(r.serialize() == u32le(12346) + u32le(1) + u16le(3) + u16le(3) + u32le(16) + u16le(10) + u16le(11) + u16le(12) + u16le(100));

  // Run cookie with 4 containers (offset header present); container 1 is a run of 5000
  // values (becomes a bitset), others arrays.
  std::string four = u32le(12347 | (3u << 16)) + std::string(1, '\x02');
  four += u16le(0) + u16le(0) + u16le(1) + u16le(4999) + u16le(2) + u16le(0) + u16le(3) + u16le(1);
  const std::uint32_t base = 4 + 1 + 16 + 16;
  four += u32le(base) + u32le(base + 2) + u32le(base + 2 + 6) + u32le(base + 2 + 6 + 2);
  four += u16le(9) + (u16le(1) + u16le(0) + u16le(4999)) + u16le(8) + (u16le(1) + u16le(2));
  auto f = roaring_bitmap::deserialize(four);
  CHECK(f.cardinality() == 1 + 5000 + 1 + 2);
  CHECK(f.contains((1u << 16) | 4999));
  CHECK_FALSE(f.contains((1u << 16) | 5000));
  CHECK(f.contains((3u << 16) | 2));
  // Re-serialised: the 5000-value container is an 8 KiB bitset.
  std::string out = f.serialize();
  CHECK(out.size() == 8 + 4 * 8 + 2 + 8192 + 2 + 4);
  CHECK(roaring_bitmap::deserialize(out) == f);

  // Empty bitmap: the no-run cookie and zero containers.
  CHECK(roaring_bitmap{}.serialize() == u32le(12346) + u32le(0));
  CHECK(roaring_bitmap::deserialize(u32le(12346) + u32le(0)).empty());
}

TEST_CASE("roaring: corrupt inputs are refused") {
  using dataset::roaring_bitmap;
  auto good = roaring_bitmap{1, 5, 70000}.serialize();
  CHECK_THROWS_AS(roaring_bitmap::deserialize(std::string_view()), corrupt_error);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(u32le(12345) + u32le(0)), corrupt_error);   // cookie
  CHECK_THROWS_AS(roaring_bitmap::deserialize(u32le(12346) + u32le(70000)), corrupt_error);  // count
  for (std::size_t n = 0; n < good.size(); ++n)  // every truncation
    CHECK_THROWS_AS(roaring_bitmap::deserialize(std::string_view(good).substr(0, n)), corrupt_error);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(good + "x"), corrupt_error);  // trailing
  std::size_t used = 0;
  CHECK(roaring_bitmap::deserialize(good + "xyz", &used).cardinality() == 3);
  CHECK(used == good.size());
  // Unsorted array values.
  std::string unsorted = u32le(12346) + u32le(1) + u16le(0) + u16le(1) + u32le(16) + u16le(5) + u16le(1);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(unsorted), corrupt_error);
  // Keys out of order.
  std::string keys = u32le(12346) + u32le(2) + u16le(3) + u16le(0) + u16le(1) + u16le(0) + u32le(24) + u32le(26) + u16le(1) + u16le(1);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(keys), corrupt_error);
  // Offset not where the container is.
  std::string off = u32le(12346) + u32le(1) + u16le(0) + u16le(0) + u32le(20) + u16le(1);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(off), corrupt_error);
  // Bitset whose popcount disagrees with the header.
  std::string bits = u32le(12346) + u32le(1) + u16le(0) + u16le(4999) + u32le(16) + std::string(8192, '\0');
  CHECK_THROWS_AS(roaring_bitmap::deserialize(bits), corrupt_error);
  // Overlapping runs, and runs past 65535.
  std::string overlap = u32le(12347) + std::string(1, '\x01') + u16le(0) + u16le(5) + u16le(2) + u16le(0) + u16le(3) + u16le(2) + u16le(1);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(overlap), corrupt_error);
  std::string past = u32le(12347) + std::string(1, '\x01') + u16le(0) + u16le(9) + u16le(1) + u16le(65530) + u16le(9);
  CHECK_THROWS_AS(roaring_bitmap::deserialize(past), corrupt_error);
  // Random garbage never crashes: it parses or throws lancet::error.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string g = good;
    g[rng() % g.size()] = char(rng());
    try {
      (void)roaring_bitmap::deserialize(g);
    } catch (const lancet::error&) {
    }
  }
}

TEST_CASE("roaring: set operations and container switching") {
  using dataset::roaring_bitmap;
  roaring_bitmap b;
  for (std::uint32_t v = 0; v < 10000; v += 2) b.add(v);
  CHECK(b.cardinality() == 5000);
  CHECK(b.serialized_size() == 8 + 8 + 8192);  // > 4096 values: bitset container
  for (std::uint32_t v = 0; v < 10000; v += 4) CHECK(b.remove(v));
  CHECK(b.cardinality() == 2500);
  CHECK(b.serialized_size() == 8 + 8 + 2 * 2500);  // back to an array
  CHECK_FALSE(b.remove(1));
  CHECK_FALSE(b.add(2));

  roaring_bitmap r;
  r.add_range(65530, 65536 + 5000);
  CHECK(r.cardinality() == 6 + 5000);
  CHECK(r.container_count() == 2);
  CHECK(r.min() == 65530u);
  CHECK(r.max() == 65536u + 4999);
  roaring_bitmap small;
  small.add_range(10, 20);
  small.add_range(15, 4000);
  CHECK(small.cardinality() == 3990);
  CHECK(small.serialized_size() == 16 + 2 * 3990);  // still an array
  CHECK(roaring_bitmap::deserialize(r.serialize()) == r);

  roaring_bitmap x{1, 2, 3, 100000}, y{2, 3, 4};
  CHECK((x & y).to_vector() == std::vector<std::uint32_t>{2, 3});
  CHECK((x | y).to_vector() == std::vector<std::uint32_t>{1, 2, 3, 4, 100000});
  CHECK_THROWS_AS(r.add_range(0, (1ull << 32) + 1), invalid_input_error);

  // Random sets round trip and match std::set.
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::set<std::uint32_t> ref;
    roaring_bitmap m;
    const std::uint32_t span = round % 2 ? 200000 : 9000;
    for (int i = 0; i < 6000; ++i) {
      std::uint32_t v = rng() % span;
      if (rng() % 5 == 0) {
        CHECK(m.remove(v) == (ref.erase(v) == 1));
      } else {
        CHECK(m.add(v) == ref.insert(v).second);
      }
    }
    auto back = roaring_bitmap::deserialize(m.serialize());
    CHECK(back == m);
    CHECK(back.to_vector() == std::vector<std::uint32_t>(ref.begin(), ref.end()));
  }
}

TEST_CASE("roaring treemap: 64-bit portable format") {
  dataset::roaring_treemap t;
  t.add(5);
  t.add((1ull << 32) | 7);
  t.add((9ull << 32) | 1);
  std::string bytes = t.serialize();
  // u64 count, then (u32 key, bitmap) per bucket.
  CHECK(bytes.substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  CHECK(bytes.substr(8, 4) == u32le(0));
  auto back = dataset::roaring_treemap::deserialize(std::string_view(bytes));
  CHECK(back == t);
  CHECK(back.to_vector() == std::vector<std::uint64_t>{5, (1ull << 32) | 7, (9ull << 32) | 1});
  CHECK(back.contains((1ull << 32) | 7));
  CHECK_FALSE(back.contains(7));
  CHECK(back.remove(5));
  CHECK(back.cardinality() == 2);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    CHECK_THROWS_AS(dataset::roaring_treemap::deserialize(std::string_view(bytes).substr(0, n)), corrupt_error);
}

TEST_CASE("roaring: bitmaps LanceDB wrote") {
  // An index's fragment bitmap {0, 1}: no-run cookie, one array container, offset 16.
  auto file = dataset::read_manifest_file(read_fixture("indexed_v5.manifest"));
  REQUIRE(file.indices.size() == 2);
  const std::string& fb = file.indices[0].fragment_bitmap;
  CHECK(fb == u32le(12346) + u32le(1) + u16le(0) + u16le(1) + u32le(16) + u16le(0) + u16le(1));
  auto frags = dataset::index_fragment_bitmap(file.indices[0]);
  CHECK(frags.to_vector() == std::vector<std::uint32_t>{0, 1});
  CHECK(frags.serialize() == fb);

  // A BITMAP deletion file: every even row of 10,000 (one 8 KiB bitset container),
  // re-serialised byte for byte.
  std::string del = read_fixture("deletion_evens.bin");
  CHECK(del.size() == 8208);
  auto d = dataset::roaring_bitmap::deserialize(del);
  CHECK(d.cardinality() == 5000);
  CHECK(d.contains(0));
  CHECK(d.contains(9998));
  CHECK_FALSE(d.contains(1));
  CHECK(d.serialize() == del);
}

// ---------------------------------------------------------------------------------
// Manifest files
// ---------------------------------------------------------------------------------

TEST_CASE("manifest file: layout of a Lance 12 manifest with index and transaction sections") {
  // Verified: index section at 0, transaction section right after it, then the
  // u32-prefixed manifest, then i64 position, i16 0, i16 2, "LANC" (16 bytes).
  std::string bytes = read_fixture("indexed_v5.manifest");
  auto ft = dataset::read_manifest_footer(view(bytes));
  CHECK(ft.manifest_position == 761);
  CHECK(ft.major == 0);
  CHECK(ft.minor == 2);
  CHECK(bytes.substr(bytes.size() - 4) == "LANC");

  auto file = dataset::read_manifest_file(bytes);
  const pb::manifest& m = file.manifest;
  CHECK(m.index_section == 0u);
  CHECK(m.transaction_section == 566u);
  CHECK(m.version == 5);
  REQUIRE(m.writer_version.has_value());
  CHECK(m.writer_version->library == "lance");
  CHECK(m.writer_version->version == "12.0.0");
  REQUIRE(m.data_format.has_value());
  CHECK(m.data_format->file_format == "lance");
  CHECK(m.data_format->version == "2.1");
  CHECK(m.reader_feature_flags == dataset::feature_flags::deletion_files);
  CHECK(m.writer_feature_flags == dataset::feature_flags::deletion_files);
  CHECK(m.max_fragment_id == 1u);
  CHECK(m.transaction_file == "4-5e396dcc-b16d-47c8-bfcd-41db56205c8a.txn");
  REQUIRE(m.timestamp.has_value());
  CHECK(m.timestamp->seconds > 1'700'000'000);
  CHECK(m.next_row_id == 0);

  REQUIRE(m.fields_raw.size() == 3);
  CHECK(field_name(m.fields_raw[0]) == "id");
  CHECK(field_name(m.fields_raw[1]) == "name");
  CHECK(field_name(m.fields_raw[2]) == "vec");

  REQUIRE(m.fragments.size() == 2);
  const auto& f0 = m.fragments[0];
  CHECK(f0.id == 0);
  CHECK(f0.physical_rows == 300);
  REQUIRE(f0.deletion_file.has_value());
  CHECK(f0.deletion_file->file_type == pb::deletion_file::type::arrow_array);
  CHECK(f0.deletion_file->read_version == 2);
  CHECK(f0.deletion_file->id == 8809737840036864098ull);
  CHECK(f0.deletion_file->num_deleted_rows == 5);
  CHECK(f0.deletion_file->relative_path(0) == "_deletions/0-2-8809737840036864098.arrow");
  CHECK(f0.num_rows() == 295);
  REQUIRE(f0.files.size() == 1);
  CHECK(f0.files[0].path == "1110011111101101000001011c9c4c433ca33f6536927f227c.lance");
  CHECK(f0.files[0].fields == std::vector<std::int32_t>{0, 1, 2});
  CHECK(f0.files[0].column_indices == std::vector<std::int32_t>{0, 1, 2});
  CHECK(f0.files[0].file_major_version == 2);
  CHECK(f0.files[0].file_minor_version == 1);
  CHECK(f0.files[0].file_size_bytes == 14583);
  CHECK(m.fragments[1].id == 1);
  CHECK(m.fragments[1].num_rows() == 300);
  CHECK(dataset::manifest_row_count(m) == 595);

  // Index section: Lance 12 adds IndexMetadata.files (field 10: path + size).
  const auto& vec = file.indices[0];
  CHECK(vec.name == "vec_idx");
  CHECK(vec.uuid.to_string() == "ec06d4b1-1fee-482a-9aa8-5d56f6a80eda");
  CHECK(vec.fields == std::vector<std::int32_t>{2});
  CHECK(vec.dataset_version == 3);
  REQUIRE(vec.index_details.has_value());
  CHECK(vec.index_details->type_url == "/lance.index.pb.VectorIndexDetails");
  CHECK(vec.index_version == 1);
  CHECK(vec.created_at == 1795998870380ull);
  CHECK(vec.files == std::vector<pb::index_file>{{"auxiliary.idx", 14582}, {"index.idx", 394}});
  const auto& btree = file.indices[1];
  CHECK(btree.name == "id_idx");
  CHECK(btree.fields == std::vector<std::int32_t>{0});
  CHECK(btree.index_details->type_url == "/lance.table.BTreeIndexDetails");
  CHECK(btree.index_version == 0);  // present although zero
  CHECK(btree.files == std::vector<pb::index_file>{{"page_data.lance", 6141}, {"page_lookup.lance", 1259}});

  // Inline transaction: the CreateIndex that made version 5.
  REQUIRE(file.transaction.has_value());
  CHECK(file.transaction->read_version == 4);
  CHECK(file.transaction->uuid == "5e396dcc-b16d-47c8-bfcd-41db56205c8a");
  CHECK(file.transaction->file_name() == m.transaction_file);
  auto* ci = std::get_if<pb::transaction::create_index>(&file.transaction->operation);
  REQUIRE(ci != nullptr);
  REQUIRE(ci->new_indices.size() == 1);
  CHECK(ci->new_indices[0] == btree);
}

TEST_CASE("manifest file: LanceDB manifests re-encode byte for byte") {
  for (const char* name : {"indexed_v5.manifest", "create_v1.manifest", "stable_row_ids_v4.manifest",
                           "v1_naming_v2.manifest", "bitmap_deletion_v2.manifest"}) {
    CAPTURE(name);
    std::string bytes = read_fixture(name);
    auto file = dataset::read_manifest_file(bytes);
    pb::manifest m = file.manifest;
    std::string again = dataset::encode_manifest_file(m, file.indices, file.transaction ? &*file.transaction : nullptr);
    CHECK(again == bytes);
    CHECK(m == file.manifest);  // section positions recomputed to the same values
  }
}

TEST_CASE("manifest file: create, stable row ids, v1-named and bitmap-deletion fixtures") {
  {
    auto f = dataset::read_manifest_file(read_fixture("create_v1.manifest"));
    CHECK(f.manifest.version == 1);
    CHECK(f.manifest.max_fragment_id == 0u);  // present for a single fragment 0
    CHECK_FALSE(f.manifest.index_section.has_value());
    CHECK(f.manifest.transaction_section == 0u);
    CHECK(f.indices.empty());
    REQUIRE(f.transaction.has_value());
    CHECK(f.transaction->read_version == 0);
    auto* ow = std::get_if<pb::transaction::overwrite>(&f.transaction->operation);
    REQUIRE(ow != nullptr);
    CHECK(ow->schema_raw == f.manifest.fields_raw);  // Overwrite carries the schema
    REQUIRE(ow->fragments.size() == 1);
    CHECK(ow->fragments[0].physical_rows == 300);
  }
  {
    auto f = dataset::read_manifest_file(read_fixture("stable_row_ids_v4.manifest"));
    const auto& m = f.manifest;
    CHECK(m.version == 4);
    CHECK(m.reader_feature_flags == (dataset::feature_flags::deletion_files | dataset::feature_flags::stable_row_ids));
    CHECK(m.next_row_id == 20);
    CHECK(m.data_format->version == "2.0");
    CHECK(m.fragments[0].files[0].file_major_version == 2);
    CHECK(m.fragments[0].files[0].file_minor_version == 0);
    REQUIRE(m.fragments.size() == 3);
    auto ids0 = pb::decode<pb::row_id_sequence>(std::get<std::string>(m.fragments[0].row_id_sequence));
    CHECK(ids0.values() == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    auto ids1 = pb::decode<pb::row_id_sequence>(std::get<std::string>(m.fragments[1].row_id_sequence));
    CHECK(ids1 == pb::row_id_sequence::make_range(10, 10));
    // The updated row keeps its id (12) in the new fragment.
    auto ids2 = pb::decode<pb::row_id_sequence>(std::get<std::string>(m.fragments[2].row_id_sequence));
    CHECK(ids2.values() == std::vector<std::uint64_t>{12});
    auto created = pb::decode<pb::row_dataset_version_sequence>(std::get<std::string>(m.fragments[1].created_at_version_sequence));
    CHECK(created == pb::row_dataset_version_sequence::uniform(10, 2));
    auto updated = pb::decode<pb::row_dataset_version_sequence>(std::get<std::string>(m.fragments[2].last_updated_at_version_sequence));
    CHECK(updated == pb::row_dataset_version_sequence::uniform(1, 4));
    REQUIRE(f.transaction.has_value());
    auto* up = std::get_if<pb::transaction::update>(&f.transaction->operation);
    REQUIRE(up != nullptr);
    CHECK(up->fields_modified.empty());
    CHECK(up->fields_for_preserving_frag_bitmap == std::vector<std::uint32_t>{1});
    CHECK(up->new_fragments.size() == 1);
    // apply_feature_flags reproduces what Lance computed.
    pb::manifest copy = m;
    copy.reader_feature_flags = copy.writer_feature_flags = 0;
    dataset::apply_feature_flags(copy);
    CHECK(copy.reader_feature_flags == m.reader_feature_flags);
    CHECK(copy.writer_feature_flags == m.writer_feature_flags);
    copy.fragments[1].row_id_sequence = std::monostate{};
    CHECK_THROWS_AS(dataset::apply_feature_flags(copy), invalid_input_error);
  }
  {
    auto f = dataset::read_manifest_file(read_fixture("v1_naming_v2.manifest"));
    CHECK(f.manifest.version == 2);
    CHECK(f.manifest.data_format->version == "2.2");  // LanceDB 0.39's default storage
    CHECK(f.manifest.fragments[1].files[0].file_minor_version == 2);
    CHECK(dataset::manifest_row_count(f.manifest) == 70);
    CHECK(std::holds_alternative<pb::transaction::append>(f.transaction->operation));
  }
  {
    auto f = dataset::read_manifest_file(read_fixture("bitmap_deletion_v2.manifest"));
    const auto& del = f.manifest.fragments[0].deletion_file;
    REQUIRE(del.has_value());
    CHECK(del->file_type == pb::deletion_file::type::bitmap);
    CHECK(del->relative_path(0) == "_deletions/0-1-212794167630909569.bin");
    CHECK(dataset::manifest_row_count(f.manifest) == 5000);
    auto* d = std::get_if<pb::transaction::delete_rows>(&f.transaction->operation);
    REQUIRE(d != nullptr);
    CHECK(d->predicate == "id % 2 = 0");
  }
}

TEST_CASE("transaction files LanceDB wrote decode and re-encode") {
  std::string del_bytes = read_fixture("delete.txn");
  auto del = dataset::decode_transaction_file(del_bytes);
  CHECK(del.read_version == 2);
  CHECK(del.uuid == "cab6e68e-a34a-4a78-b26d-912f382361b7");
  CHECK(del.file_name() == "2-cab6e68e-a34a-4a78-b26d-912f382361b7.txn");
  auto& d = std::get<pb::transaction::delete_rows>(del.operation);
  CHECK(d.predicate == "id >= 10 AND id < 15");
  REQUIRE(d.updated_fragments.size() == 1);
  CHECK(d.updated_fragments[0].deletion_file->num_deleted_rows == 5);
  CHECK(dataset::encode_transaction_file(del) == del_bytes);

  std::string ci_bytes = read_fixture("create_index.txn");
  auto ci = dataset::decode_transaction_file(ci_bytes);
  auto& c = std::get<pb::transaction::create_index>(ci.operation);
  REQUIRE(c.new_indices.size() == 1);
  CHECK(c.new_indices[0].name == "vec_idx");
  CHECK(dataset::encode_transaction_file(ci) == ci_bytes);
  // The same transaction is inlined in the manifest it produced (version 4 was
  // produced by it; version 5's manifest carries the index it created).
  auto m5 = dataset::read_manifest_file(read_fixture("indexed_v5.manifest"));
  CHECK(m5.indices[0] == c.new_indices[0]);
}

TEST_CASE("manifest file: writing sets section positions and reads back") {
  pb::manifest m;
  m.fields_raw = {std::string("\x12\x02id", 4)};
  m.version = 3;
  m.writer_version = dataset::lancet_writer_version();
  m.data_format = pb::manifest::data_storage_format{"lance", "2.1"};
  pb::data_fragment f;
  f.id = 4;
  f.files.push_back({"d.lance", {0}, {0}, 2, 1, 100, std::nullopt});
  f.physical_rows = 10;
  m.fragments = {f};
  m.timestamp = pb::timestamp::from_unix_nanos(1'700'000'000'123'456'789);
  m.config = {{"lance.auto_cleanup.interval", "20"}};
  m.index_section = 999;        // stale values are replaced
  m.transaction_section = 999;  // by the writer
  dataset::update_max_fragment_id(m);
  CHECK(m.max_fragment_id == 4u);
  dataset::apply_feature_flags(m);
  CHECK(m.writer_feature_flags == dataset::feature_flags::table_config);
  CHECK(m.reader_feature_flags == 0);

  pb::index_metadata idx;
  idx.uuid = lancet::uuid::generate_v4();
  idx.name = "i";
  idx.fields = {0};
  idx.dataset_version = 3;
  dataset::set_index_fragment_bitmap(idx, {4});
  auto txn = dataset::make_transaction(2, pb::transaction::append{{f}});

  std::vector<pb::index_metadata> indices{idx};
  std::string bytes = dataset::encode_manifest_file(m, indices, &txn);
  CHECK(m.index_section == 0u);
  REQUIRE(m.transaction_section.has_value());
  CHECK(*m.transaction_section == 4 + pb::encode(pb::index_section{indices}).size());
  auto back = dataset::read_manifest_file(bytes);
  CHECK(back.manifest == m);
  CHECK(back.indices == indices);
  CHECK(back.transaction == txn);
  CHECK(back.manifest.timestamp->nanos == 123'456'789);
  CHECK(back.manifest.writer_version->library == "lancet");
  // Footer: i64 position, i16 0, i16 2, LANC.
  const std::uint64_t pos = back.footer.manifest_position;
  CHECK(bytes.substr(bytes.size() - 8) == std::string("\x00\x00\x02\x00LANC", 8));
  CHECK(le::load<std::uint32_t>(bytes.data() + pos) == bytes.size() - pos - 4 - 16);

  // Without indices and transaction: neither section, both positions cleared.
  std::string plain = dataset::encode_manifest_file(m);
  CHECK_FALSE(m.index_section.has_value());
  CHECK_FALSE(m.transaction_section.has_value());
  CHECK(dataset::read_manifest_footer(view(plain)).manifest_position == 0);
  CHECK(dataset::read_manifest_file(plain).indices.empty());
  CHECK_FALSE(dataset::read_manifest_file(plain).transaction.has_value());
}

namespace {
// A stand-in for lance.file.Field (name = 2, id = 3, parent_id = 4) to exercise the
// manifest_fields hook.
struct mini_field {
  std::string name;
  std::int32_t id = 0, parent_id = 0;
  void encode(pb::writer& w) const {
    w.string_opt(2, name);
    w.int32_opt(3, id);
    w.int32_opt(4, parent_id);
  }
  static mini_field decode(pb::reader r) {
    mini_field f;
    while (!r.done()) {
      auto x = r.next();
      if (x.number == 2) f.name = r.string(x, "name");
      else if (x.number == 3) f.id = std::int32_t(std::int64_t(r.varint(x, "id")));
      else if (x.number == 4) f.parent_id = std::int32_t(std::int64_t(r.varint(x, "parent_id")));
    }
    return f;
  }
};
}  // namespace

TEST_CASE("manifest file: schema fields hook and writing through a sink") {
  auto f = dataset::read_manifest_file(read_fixture("indexed_v5.manifest"));
  auto fields = dataset::manifest_fields<mini_field>(f.manifest);
  REQUIRE(fields.size() == 3);
  CHECK(fields[0].name == "id");
  CHECK(fields[0].id == 0);
  CHECK(fields[0].parent_id == -1);  // top-level fields carry parent_id = -1 explicitly
  CHECK(fields[2].name == "vec");
  CHECK(fields[2].id == 2);
  pb::manifest m = f.manifest;
  dataset::set_manifest_fields(m, std::vector<mini_field>{{"only", 0, -1}});
  REQUIRE(m.fields_raw.size() == 1);
  CHECK(dataset::manifest_fields<mini_field>(m)[0].name == "only");

  io::memory_sink sink;
  pb::manifest again = f.manifest;
  const auto n = dataset::write_manifest_file(sink, again, f.indices, f.transaction ? &*f.transaction : nullptr);
  sink.finish();
  CHECK(n == sink.position());
  std::string bytes = read_fixture("indexed_v5.manifest");
  CHECK(std::string(reinterpret_cast<const char*>(sink.view().data()), sink.view().size()) == bytes);
}

#ifdef LANCET_TEST_HAVE_PB_FILE
TEST_CASE("manifest file: schema fields decoded with pb::file::field") {
  auto f = dataset::read_manifest_file(read_fixture("indexed_v5.manifest"));
  auto fields = dataset::manifest_fields<pb::file::field>(f.manifest);
  REQUIRE(fields.size() == 3);
  CHECK(fields[0].name == "id");
  CHECK(fields[0].logical_type == "int32");
  CHECK_FALSE(fields[0].nullable);
  CHECK(fields[0].parent_id == -1);
  CHECK(fields[1].name == "name");
  CHECK(fields[1].logical_type == "string");
  CHECK(fields[2].name == "vec");
  CHECK(fields[2].id == 2);
  CHECK(fields[2].logical_type == "fixed_size_list:float:8");
  CHECK(fields[2].nullable);
  pb::manifest m = f.manifest;
  dataset::set_manifest_fields(m, fields);
  CHECK(m.fields_raw == f.manifest.fields_raw);  // Lance's field bytes reproduced
}
#endif

TEST_CASE("manifest file: corrupt files are refused, never crash") {
  std::string good = read_fixture("indexed_v5.manifest");
  // Too small, bad magic, position out of range, length mismatch.
  CHECK_THROWS_AS(dataset::read_manifest_file(std::string_view(good).substr(good.size() - 16)), corrupt_error);
  std::string bad_magic = good;
  bad_magic.back() = 'X';
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_magic), corrupt_error);
  std::string bad_pos = good;
  le::store(bad_pos.data() + bad_pos.size() - 16, std::int64_t(good.size()));
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_pos), corrupt_error);
  le::store(bad_pos.data() + bad_pos.size() - 16, std::int64_t(-1));
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_pos), corrupt_error);
  std::string bad_len = good;
  le::store(bad_len.data() + 761, std::uint32_t(12));
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_len), corrupt_error);
  std::string bad_major = good;
  le::store(bad_major.data() + bad_major.size() - 8, std::int16_t(1));
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_major), unsupported_error);
  // A section that runs into the manifest message.
  std::string bad_section = good;
  le::store(bad_section.data() + 566, std::uint32_t(1000));
  CHECK_THROWS_AS(dataset::read_manifest_file(bad_section), corrupt_error);
  // Prefixed garbage: positions no longer line up.
  CHECK_THROWS_AS(dataset::read_manifest_file("xx" + good), corrupt_error);

  // Every truncation and many random byte flips: parse or throw lancet::error.
  for (std::size_t n = 0; n < good.size(); ++n) {
    CHECK_THROWS_AS(dataset::read_manifest_file(std::string_view(good).substr(0, n)), lancet::error);
  }
  std::mt19937 rng(11);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string g = good;
    for (int k = 0; k < 3; ++k) g[rng() % g.size()] = char(rng());
    try {
      auto f = dataset::read_manifest_file(g);
      for (const auto& idx : f.indices) (void)dataset::index_fragment_bitmap(idx);
      ++parsed;
    } catch (const lancet::error&) {
    }
  }
  CHECK(parsed > 0);  // flips in strings and values still parse
}

TEST_CASE("manifest file: read from disk") {
  manifest_dir d;
  std::string bytes = read_fixture("create_v1.manifest");
  d.touch("m.manifest", bytes);
  auto f = dataset::read_manifest_file_at((d.path / "m.manifest").string());
  CHECK(f.manifest.version == 1);
  d.touch("bad.manifest", "not a manifest at all, no magic here");
  try {
    (void)dataset::read_manifest_file_at((d.path / "bad.manifest").string());
    FAIL("expected corrupt_error");
  } catch (const corrupt_error& e) {
    CHECK(std::string(e.what()).find("bad.manifest") != std::string::npos);
  }
  CHECK_THROWS_AS(dataset::read_manifest_file_at((d.path / "missing.manifest").string()), io_error);
}

// ---------------------------------------------------------------------------------
// Version naming
// ---------------------------------------------------------------------------------

TEST_CASE("versions: both naming schemes, parse and produce") {
  using dataset::naming_scheme;
  CHECK(dataset::manifest_file_name(naming_scheme::v1, 3) == "3.manifest");
  // Verified on LanceDB's v2-named datasets: version 1 is 18446744073709551614.manifest.
  CHECK(dataset::manifest_file_name(naming_scheme::v2, 1) == "18446744073709551614.manifest");
  CHECK(dataset::manifest_file_name(naming_scheme::v2, 5) == "18446744073709551610.manifest");
  CHECK(dataset::manifest_file_name(naming_scheme::v2, (1ull << 63) - 1) == "09223372036854775808.manifest");
  CHECK(dataset::manifest_file_name(naming_scheme::v2, (1ull << 63) | 5) == "d9223372036854775813.manifest");

  CHECK(dataset::detect_naming_scheme("3.manifest") == naming_scheme::v1);
  CHECK(dataset::detect_naming_scheme("18446744073709551614.manifest") == naming_scheme::v2);
  CHECK(dataset::detect_naming_scheme("00000000000000000007.manifest") == naming_scheme::v2);
  CHECK_FALSE(dataset::detect_naming_scheme("latest_version_hint.json").has_value());
  CHECK_FALSE(dataset::detect_naming_scheme(".tmp_7.manifest_9c100374-3298-4537-afc6-f5ee7913666d").has_value());
  CHECK_FALSE(dataset::detect_naming_scheme("d9223372036854775813.manifest").has_value());
  CHECK_FALSE(dataset::detect_naming_scheme("+3.manifest").has_value());
  CHECK_FALSE(dataset::detect_naming_scheme(".manifest").has_value());
  CHECK_FALSE(dataset::detect_naming_scheme("99999999999999999999.manifest").has_value());  // > u64

  CHECK(dataset::parse_manifest_version(naming_scheme::v1, "42.manifest") == 42u);
  CHECK(dataset::parse_manifest_version(naming_scheme::v2, "18446744073709551610.manifest") == 5u);
  CHECK_FALSE(dataset::parse_manifest_version(naming_scheme::v2, "42.manifest").has_value());
  for (std::uint64_t v : {1ull, 2ull, 10ull, 12345ull}) {
    for (auto s : {naming_scheme::v1, naming_scheme::v2}) {
      auto p = dataset::parse_manifest_file_name(dataset::manifest_file_name(s, v));
      REQUIRE(p.has_value());
      CHECK(p->scheme == s);
      CHECK(p->version == v);
    }
  }
  // v2 names sort newest first.
  CHECK(dataset::manifest_file_name(naming_scheme::v2, 10) < dataset::manifest_file_name(naming_scheme::v2, 9));
}

TEST_CASE("versions: listing, latest, and refusing to mix schemes") {
  using dataset::naming_scheme;
  manifest_dir d;
  const std::string root = d.path.string();
  CHECK(dataset::list_versions(root).empty());
  CHECK_FALSE(dataset::latest_version(root).has_value());
  CHECK(dataset::naming_scheme_for_write(root) == naming_scheme::v2);
  CHECK(dataset::naming_scheme_for_write(root, naming_scheme::v1) == naming_scheme::v1);

  for (std::uint64_t v : {1, 2, 10, 3}) d.touch("_versions/" + dataset::manifest_file_name(naming_scheme::v2, v), std::string(v, 'm'));
  d.touch("_versions/latest_version_hint.json", dataset::encode_version_hint(10));
  d.touch("_versions/.tmp_11.manifest_abc");
  d.touch("_versions/d9223372036854775813.manifest");
  auto all = dataset::list_versions(root);
  REQUIRE(all.size() == 4);
  CHECK(all[0].version == 1);
  CHECK(all[3].version == 10);
  CHECK(all[3].size == 10);
  CHECK(all[3].scheme == naming_scheme::v2);
  CHECK(all[3].path == dataset::manifest_path(root, naming_scheme::v2, 10));
  CHECK(dataset::latest_version(root)->version == 10);
  CHECK(dataset::find_version(root, 3)->size == 3);
  CHECK_FALSE(dataset::find_version(root, 4).has_value());
  CHECK(dataset::dataset_naming_scheme(root) == naming_scheme::v2);
  CHECK(dataset::naming_scheme_for_write(root) == naming_scheme::v2);
  CHECK_THROWS_AS(dataset::naming_scheme_for_write(root, naming_scheme::v1), invalid_input_error);

  // A v1 manifest among v2 ones: the directory is refused.
  d.touch("_versions/11.manifest");
  CHECK_THROWS_AS(dataset::list_versions(root), corrupt_error);

  manifest_dir v1;
  for (std::uint64_t v : {1, 2, 9, 10}) v1.touch("_versions/" + dataset::manifest_file_name(naming_scheme::v1, v));
  CHECK(dataset::latest_version(v1.path.string())->version == 10);  // numeric, not lexical
  CHECK(dataset::naming_scheme_for_write(v1.path.string()) == naming_scheme::v1);
  CHECK_THROWS_AS(dataset::naming_scheme_for_write(v1.path.string(), naming_scheme::v2), invalid_input_error);
  CHECK(dataset::transaction_path("/r", "1-u.txn") == "/r/_transactions/1-u.txn");
}

TEST_CASE("versions: latest_version_hint.json") {
  CHECK(dataset::encode_version_hint(5) == "{\"version\":5}");  // as Lance 12 writes it
  CHECK(dataset::parse_version_hint("{\"version\":5}") == 5u);
  CHECK(dataset::parse_version_hint(" { \"version\" : 12 }\n") == 12u);
  CHECK_FALSE(dataset::parse_version_hint("{\"version\":-1}").has_value());
  CHECK_FALSE(dataset::parse_version_hint("{\"version\":5,\"x\":1}").has_value());
  CHECK_FALSE(dataset::parse_version_hint("{\"ver\":5}").has_value());
  CHECK_FALSE(dataset::parse_version_hint("").has_value());
  CHECK_FALSE(dataset::parse_version_hint("{\"version\":5} x").has_value());
}

}  // TEST_SUITE
