// The file writer and reader, format 2.0: round trips of every type, page splitting,
// exact bytes of encodings (from files Lance 12 wrote, docs/lance12-encodings.md),
// writer options and every error path.
#include <doctest/doctest.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstdlib>
#include <filesystem>
#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/file/writer.hpp>
#include "lancet/file/with_version.hpp"
#include "support/failing_sink.hpp"
#include <lancet/io/file_sink.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/io/source.hpp>

#include "support/array_checks.hpp"
#include "support/random_data.hpp"
#include "support/text.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;

namespace {

using lancet::testing::check_same;
using lancet::testing::hex;

using writer20 = file::file_writer<file::v2_0, io::memory_sink>;

shared_bytes finish_to_bytes(writer20& w) {
  w.finish();
  return w.sink().take_shared();
}

file::file_reader<io::memory_source> open_bytes(const shared_bytes& b) {
  return file::file_reader<io::memory_source>(io::memory_source(b));
}

// Writes `batches` as 2.0 and reads everything back, comparing column by column.
void round_trip_20(const std::vector<record_batch>& batches, file::writer_options o = {}) {
  writer20 w(io::memory_sink{}, o);
  for (const auto& b : batches) w.write_batch(b);
  auto bytes = finish_to_bytes(w);
  auto r = open_bytes(bytes);
  std::int64_t rows = 0;
  for (const auto& b : batches) rows += b.num_rows();
  REQUIRE(r.num_rows() == std::uint64_t(rows));
  auto all = r.read();
  REQUIRE(all.columns.size() == batches.at(0).columns.size());
  for (std::size_t c = 0; c < all.columns.size(); ++c) {
    std::vector<array_ptr> parts;
    for (const auto& b : batches) parts.push_back(b.columns[c]);
    auto expected = arrow::concat(parts, batches[0].schema->fields[c].type);
    check_same(expected, all.columns[c], "column " + batches[0].schema->fields[c].name);
  }
}

// The ArrayEncoding bytes (Any value) of a column's first page.
std::string page_encoding_hex(const file::file_reader<io::memory_source>& r, std::size_t col, std::size_t page = 0) {
  auto any = r.column(col).metadata.pages.at(page).encoding->direct_any();
  CHECK(any.type_url == "/lance.encodings.ArrayEncoding");
  return hex(any.value, " ");
}

}  // namespace

TEST_CASE("2.0: every leaf type round trips with nulls, in several batches") {
  testing::random_data gen(42, {.allow_struct_nulls = false});
  for (const auto& t : testing::leaf_types()) {
    CAPTURE(to_string(*t));
    auto s = std::make_shared<arrow::schema>();
    s->fields.push_back(field{"x", t, true, {}});
    std::vector<record_batch> batches;
    for (int b = 0; b < 3; ++b) batches.push_back(make_batch(s, {gen.random_sliced_array(t, 50 + 17 * b)}));
    round_trip_20(batches);
  }
}

TEST_CASE("2.0: random nested schemas round trip (structs without struct nulls)") {
  testing::random_data gen(7, {.allow_struct_nulls = false});
  for (int i = 0; i < 60; ++i) {
    auto s = std::make_shared<arrow::schema>();
    for (int c = 0; c < 3; ++c) s->fields.push_back(field{"c" + std::to_string(c), gen.random_type(), true, {}});
    std::vector<record_batch> batches;
    for (int b = 0; b < 2; ++b) {
      std::vector<array_ptr> cols;
      for (const auto& f : s->fields) cols.push_back(gen.random_sliced_array(f.type, std::int64_t(gen.pick(40))));
      // All columns of a batch need one length.
      const auto n = cols[0]->length;
      for (auto& c : cols) c = gen.random_sliced_array(c->type, n);
      batches.push_back(make_batch(s, cols));
    }
    CAPTURE(i);
    round_trip_20(batches);
  }
}

TEST_CASE("2.0: empty lists, null lists and empty strings are kept apart") {
  auto items = make_array<std::int32_t>({1, std::nullopt, 3});
  auto lists = make_list(items, {0, 2, 2, 2, 3}, {true, false, true, true});  // [1,null], null, [], [3]
  auto strs = string_array({"", std::nullopt, "abc", ""});
  round_trip_20({make_batch({{"l", lists}, {"s", strs}})});
}

TEST_CASE("2.0: encodings are byte for byte what Lance 12 writes") {
  // Rows and nulls as in docs/lance12-encodings.md, small_2.0.
  auto int32_col = make_array<std::int32_t>({1, 2, 3, 4, std::nullopt, 6, 7, 8, 9, 10});
  std::vector<std::optional<std::int32_t>> nn(10, 5);
  auto int32_nonnull = make_array<std::int32_t>(nn);
  auto b = make_batch({{"null", null_array(10)}, {"int32", int32_col}, {"int32_nonnull", int32_nonnull}});
  writer20 w(io::memory_sink{});
  w.write_batch(b);
  auto r = open_bytes(finish_to_bytes(w));
  CHECK(page_encoding_hex(r, 0) == "12 02 1a 00");
  CHECK(page_encoding_hex(r, 1) == "12 14 12 12 0a 06 0a 04 08 01 12 00 12 08 0a 06 08 20 12 02 08 01");
  CHECK(page_encoding_hex(r, 2) == "12 0a 0a 08 0a 06 0a 04 08 20 12 00");
  // Validity of rows 0-3, 5-9 is ef 03.
  const auto& p = r.column(1).metadata.pages[0];
  REQUIRE(p.buffer_sizes == std::vector<std::uint64_t>{2, 40});
  auto v = r.source().read(p.buffer_offsets[0], 2);
  CHECK(v.data()[0] == 0xef);
  CHECK(v.data()[1] == 0x03);
  // Every column carries ColumnEncoding{values{}}.
  auto ce = r.column(1).metadata.encoding->direct_any();
  CHECK(ce.type_url == "/lance.encodings.ColumnEncoding");
  CHECK(hex(ce.value, " ") == "0a 00");
  CHECK(r.major() == 0);
  CHECK(r.minor() == 3);
}

TEST_CASE("2.0: binary offsets fold nulls in with null_adjustment, dictionary for low-cardinality utf8") {
  auto s = string_array({"ab", std::nullopt, "c"});
  std::vector<std::optional<std::string>> cities;
  for (int i = 0; i < 120; ++i) cities.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>(i % 2 ? "Paris" : "Cairo"));
  auto b = make_batch({{"s", s}});
  writer20 w(io::memory_sink{});
  w.write_batch(b);
  auto r = open_bytes(finish_to_bytes(w));
  // binary{indices: no_nulls flat 64 buf 0, bytes: flat 8 buf 1, null_adjustment 4}
  CHECK(page_encoding_hex(r, 0) == "32 1a 0a 0c 12 0a 0a 08 0a 06 0a 04 08 40 12 00 12 08 0a 06 08 08 12 02 08 01 18 04");
  const auto& p = r.column(0).metadata.pages[0];
  auto offs = r.source().read(p.buffer_offsets[0], 24);
  CHECK(le::load<std::uint64_t>(offs.data()) == 2);
  CHECK(le::load<std::uint64_t>(offs.data() + 8) == 2 + 4);  // null: previous end + adjustment
  CHECK(le::load<std::uint64_t>(offs.data() + 16) == 3);

  writer20 w2(io::memory_sink{});
  w2.write_batch(make_batch({{"city", string_array(cities)}}));
  auto r2 = open_bytes(finish_to_bytes(w2));
  auto any = r2.column(0).metadata.pages[0].encoding->direct_any();
  auto enc = pb::unpack_any<pb::enc20::array_encoding>(any);
  const auto* d = std::get_if<pb::enc20::dictionary>(&enc.value);
  REQUIRE(d != nullptr);
  CHECK(d->num_dictionary_items == 2);
  check_same(string_array(cities), r2.read().columns[0], "dictionary round trip");
}

TEST_CASE("2.0: schema ids, columns and field-to-column map follow Lance") {
  auto st = struct_array({{"a", make_array<std::int32_t>({1, 2})}, {"b", string_array({"x", "y"})}});
  auto lst = list_array<std::int64_t>({{1, 2}, {}});
  auto vec = make_fixed_size_list(make_array<float>({1, 2, 3, 4}), 2);
  writer20 w(io::memory_sink{});
  w.write_batch(make_batch({{"st", st}, {"l", lst}, {"v", vec}}));
  // st(0) a(1) b(2) l(3) item(4) v(5): one column per field in 2.0.
  CHECK(w.field_id_to_column_indices() ==
        std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}});
  auto r = open_bytes(finish_to_bytes(w));
  CHECK(r.num_columns() == 6);
  CHECK(page_encoding_hex(r, 0) == "2a 00");
}

TEST_CASE("2.0: max_page_bytes splits pages; data_cache_bytes and keep_original_array") {
  std::vector<std::int64_t> v(10000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::int64_t(i * 3);
  auto col = make_array<std::int64_t>(v);
  SUBCASE("option") {
    writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 1000, .max_page_bytes = 8000});
    w.write_batch(make_batch({{"x", col}}));
    auto r = open_bytes(finish_to_bytes(w));
    CHECK(r.column(0).metadata.pages.size() == 10);  // 80000 bytes / 8000
    for (const auto& p : r.column(0).metadata.pages) CHECK(p.length == 1000);
    check_same(col, r.read().columns[0], "split");
    check_same(slice(col, 1990, 20), r.read({{}, std::pair<std::uint64_t, std::uint64_t>{1990, 2010}, {}}).columns[0],
               "range across pages");
  }
  SUBCASE("environment variable, and a bad value falls back") {
    setenv(file::max_page_bytes_env, "40000", 1);
    {
      writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 1000});
      w.write_batch(make_batch({{"x", col}}));
      auto r = open_bytes(finish_to_bytes(w));
      CHECK(r.column(0).metadata.pages.size() == 2);
    }
    setenv(file::max_page_bytes_env, "lots", 1);
    {
      // The warning goes to the program's handler, not to stderr.
      std::vector<std::string> warnings;
      auto previous = set_warning_handler(
          [](std::string_view m, void* ctx) { static_cast<std::vector<std::string>*>(ctx)->emplace_back(m); },
          &warnings);
      writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 1000});
      w.write_batch(make_batch({{"x", col}}));
      auto r = open_bytes(finish_to_bytes(w));
      set_warning_handler(previous.first, previous.second);
      CHECK(r.column(0).metadata.pages.size() == 1);
      REQUIRE(warnings.size() == 1);
      CHECK(warnings[0] == "cannot parse LANCE_FILE_WRITER_MAX_PAGE_BYTES='lots', using the default of 33554432 bytes");
    }
    unsetenv(file::max_page_bytes_env);
  }
  SUBCASE("small batches accumulate until the cache fills") {
    writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 4000});
    // Independent arrays: a slice would count its parent's whole buffer, as in Lance.
    for (int i = 0; i < 10; ++i)
      w.write_batch(make_batch({{"x", arrow::deep_copy(*slice(col, i * 100, 100))}}));
    auto r = open_bytes(finish_to_bytes(w));
    CHECK(r.column(0).metadata.pages.size() == 2);  // 800 bytes each: flush after the 6th batch
    check_same(slice(col, 0, 1000), r.read().columns[0], "accumulated");
  }
}

TEST_CASE("2.0: write_column lets columns differ in length; the reader enforces Lance's rules") {
  auto s = schema::from_arrow(arrow::schema{{field{"a", int32(), true, {}}, field{"b", utf8(), true, {}},
                                             field{"c", float64(), true, {}}}, {}});
  writer20 w(io::memory_sink{}, s);
  w.write_column(0, make_array<std::int32_t>({1, 2, 3}));
  w.write_column(1, string_array({"x"}));
  w.write_column(0, make_array<std::int32_t>(std::vector<std::int32_t>{}));  // no-op
  CHECK_THROWS_AS(w.write_column(3, string_array({"y"})), invalid_input_error);
  CHECK_THROWS_WITH_AS(w.write_column(7, string_array({"y"})), doctest::Contains("column index 7 is out of range: the schema has 3 fields"),
                       invalid_input_error);
  auto res = w.finish();
  CHECK(res.rows == 3);
  auto r = open_bytes(w.sink().take_shared());
  CHECK(r.num_rows() == 3);
  CHECK(r.field_length(0) == 3);
  CHECK(r.field_length(1) == 1);
  CHECK(r.field_length(2) == 0);
  CHECK_THROWS_WITH_AS(r.read(), doctest::Contains("'a' has 3 rows; 'b' has 1 rows; 'c' has 0 rows"),
                       invalid_input_error);
  CHECK(r.read({{"a"}, {}, {}}).columns[0]->length == 3);
  CHECK(r.read({{"a", "b"}, std::pair<std::uint64_t, std::uint64_t>{0, 1}, {}}).columns[1]->length == 1);
  CHECK_THROWS_AS(r.read({{"a", "b"}, std::pair<std::uint64_t, std::uint64_t>{0, 2}, {}}), invalid_input_error);
}

TEST_CASE("2.0: writer errors") {
  SUBCASE("finish without schema or data") {
    writer20 w(io::memory_sink{});
    CHECK_THROWS_WITH_AS(w.finish(), doctest::Contains("schema is unknown"), invalid_input_error);
  }
  SUBCASE("nulls in a non-nullable field, at depth") {
    auto inner = field{"a", int32(), false, {}};
    auto st_type = struct_({inner});
    auto s = schema::from_arrow(arrow::schema{{field{"st", st_type, true, {}}}, {}});
    writer20 w(io::memory_sink{}, s);
    auto bad = make_struct({inner}, {make_array<std::int32_t>({1, std::nullopt})});
    CHECK_THROWS_WITH_AS(w.write_batch(make_batch({{"st", bad}})), doctest::Contains("'st.a'"), invalid_input_error);
    // The writer is still usable after refused input.
    w.write_batch(make_batch({{"st", make_struct({inner}, {make_array<std::int32_t>({1, 2})})}}));
    CHECK(w.finish().rows == 2);
  }
  SUBCASE("a batch missing a column") {
    auto s = schema::from_arrow(arrow::schema{{field{"a", int32(), true, {}}, field{"b", int32(), true, {}}}, {}});
    writer20 w(io::memory_sink{}, s);
    CHECK_THROWS_WITH_AS(w.write_batch(make_batch({{"a", make_array<std::int32_t>({1})}})),
                         doctest::Contains("missing the column 'b'"), invalid_input_error);
  }
  SUBCASE("null structs cannot be stored in 2.0") {
    auto st = make_struct({field{"a", int32(), true, {}}}, {make_array<std::int32_t>({1, 2})}, {true, false});
    writer20 w(io::memory_sink{});
    CHECK_THROWS_WITH_AS(w.write_batch(make_batch({{"s", st}})),
                         doctest::Contains("does not encode struct validity"), invalid_input_error);
  }
  SUBCASE("more than 2^32 rows in one batch") {
    writer20 w(io::memory_sink{});
    // A null-type array holds no buffers, so 2^32 + 1 rows cost nothing.
    CHECK_THROWS_WITH_AS(w.write_batch(make_batch({{"n", null_array((std::int64_t(1) << 32) + 1)}})),
                         doctest::Contains("at most 2^32 rows per batch"), invalid_input_error);
  }
  SUBCASE("compression parameters need 2.1+") {
    field f{"s", utf8(), true, {{"lance-encoding:compression", "zstd"}}};
    auto sch = schema::from_arrow(arrow::schema{{f}, {}});
    CHECK_THROWS_WITH_AS(writer20(io::memory_sink{}, sch), doctest::Contains("'lance-encoding:compression' needs Lance file version 2.1"),
                         invalid_input_error);
  }
  SUBCASE("an empty batch is a no-op") {
    writer20 w(io::memory_sink{});
    w.write_batch(make_batch({{"a", make_array<std::int32_t>(std::vector<std::int32_t>{})}}));
    CHECK(w.finish().rows == 0);
  }
  SUBCASE("use after finish") {
    writer20 w(io::memory_sink{});
    w.write_batch(make_batch({{"a", make_array<std::int32_t>({1})}}));
    w.finish();
    CHECK_THROWS_AS(w.write_batch(make_batch({{"a", make_array<std::int32_t>({1})}})), invalid_input_error);
  }
}

TEST_CASE("2.0: a failing sink gives a typed I/O error and publishes nothing") {
  const auto dir = fs::temp_directory_path() / ("lancet_file_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto path = (dir / "out.lance").string();
  std::vector<std::int64_t> v(5000, 7);
  for (std::uint64_t after : {0ull, 10ull, 40000ull}) {
    CAPTURE(after);
    using sink_t = testing::failing_sink<io::file_sink>;
    bool threw = false;
    try {
      file::file_writer<file::v2_0, sink_t> w(sink_t(io::file_sink(path), testing::failure_plan{.fail_after_bytes = after}));
      w.write_batch(make_batch({{"x", make_array<std::int64_t>(v)}}));
      w.finish();
    } catch (const io_error&) {
      threw = true;
    }
    CHECK(threw);
    CHECK_FALSE(fs::exists(path));
  }
  {
    using sink_t = testing::failing_sink<io::file_sink>;
    file::file_writer<file::v2_0, sink_t> w(sink_t(io::file_sink(path), testing::failure_plan{.fail_on_finish = true}));
    w.write_batch(make_batch({{"x", make_array<std::int64_t>(v)}}));
    CHECK_THROWS_AS(w.finish(), io_error);
    CHECK_THROWS_AS(w.write_batch(make_batch({{"x", make_array<std::int64_t>(v)}})), invalid_input_error);
  }
  CHECK_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

TEST_CASE("2.0: global buffers, schema metadata, tell and the file descriptor") {
  writer20 w(io::memory_sink{});
  const std::string blob = "global-buffer-bytes";
  CHECK(w.add_global_buffer({reinterpret_cast<const std::uint8_t*>(blob.data()), blob.size()}) == 1);
  CHECK(w.tell() == 64);
  w.write_batch(make_batch({{"a", make_array<std::int32_t>({1, 2, 3})}}));
  CHECK(w.add_global_buffer({reinterpret_cast<const std::uint8_t*>(blob.data()), 3}) == 2);
  w.add_schema_metadata("k", "v1");
  w.add_schema_metadata("k", "v2");
  auto res = w.finish();
  auto bytes = w.sink().take_shared();
  CHECK(res.file_size == bytes.size());
  auto r = open_bytes(bytes);
  REQUIRE(r.num_global_buffers() == 3);
  CHECK(std::string(reinterpret_cast<const char*>(r.global_buffer(1).data()), r.global_buffer(1).size()) == blob);
  CHECK(r.global_buffer(2).size() == 3);
  bool found = false;
  for (const auto& [k, v] : r.schema().metadata) found |= (k == "k" && v == "v2");
  CHECK(found);
  // Padding between buffers is Lance's 0x48.
  CHECK(bytes.data()[blob.size()] == 0x48);
}

TEST_CASE("2.0: page metadata spilled to a sidecar gives byte-identical files") {
  const auto spill = (fs::temp_directory_path() / ("lancet_spill_" + std::to_string(::getpid()))).string();
  auto s = std::make_shared<arrow::schema>();
  for (int c = 0; c < 500; ++c) s->fields.push_back(field{"c" + std::to_string(c), int32(), true, {}});
  auto make = [&](std::optional<std::string> path) {
    writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 1, .page_metadata_spill_path = path});
    for (int b = 0; b < 10; ++b) {
      std::vector<array_ptr> cols;
      for (int c = 0; c < 500; ++c) cols.push_back(make_array<std::int32_t>({b, c, std::nullopt}));
      w.write_batch(make_batch(s, cols));
    }
    return finish_to_bytes(w);
  };
  auto plain = make(std::nullopt);
  auto spilled = make(spill);
  REQUIRE(plain.size() == spilled.size());
  CHECK(std::memcmp(plain.data(), spilled.data(), plain.size()) == 0);
  CHECK_FALSE(fs::exists(spill));
  auto r = open_bytes(spilled);
  CHECK(r.column(499).metadata.pages.size() == 10);
}

TEST_CASE("2.0: reads by row indices and in batches") {
  std::vector<std::optional<std::int32_t>> v;
  for (int i = 0; i < 100; ++i) v.push_back(i % 9 ? std::optional<std::int32_t>(i) : std::nullopt);
  auto col = make_array<std::int32_t>(v);
  std::vector<std::vector<std::optional<std::int32_t>>> lv;
  for (int i = 0; i < 25; ++i) lv.push_back(i % 4 == 0 ? std::vector<std::optional<std::int32_t>>{1}
                                           : i % 4 == 1 ? std::vector<std::optional<std::int32_t>>{2, 3}
                                           : i % 4 == 2 ? std::vector<std::optional<std::int32_t>>{}
                                                        : std::vector<std::optional<std::int32_t>>{4});
  auto lst = list_array<std::int32_t>(lv);
  writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 100});
  for (int i = 0; i < 4; ++i) w.write_batch(make_batch({{"x", slice(col, i * 25, 25)}, {"l", lst}}));
  auto r = open_bytes(finish_to_bytes(w));
  auto got = r.read({{"x"}, {}, std::vector<std::uint64_t>{0, 1, 30, 31, 99}});
  check_same(make_array<std::int32_t>({std::nullopt, 1, 30, 31, std::nullopt}), got.columns[0], "take");
  auto batches = r.read_batches({{"l"}, {}, {}}, 3);
  CHECK(batches.size() == 34);
  check_same(list_array<std::int32_t>({{1}, {2, 3}, {}}), batches[0].columns[0], "list batch");
  check_same(list_array<std::int32_t>({{4}, {1}, {2, 3}}), batches[1].columns[0], "list batch 2");
  CHECK_THROWS_AS(r.read({{"x"}, {}, std::vector<std::uint64_t>{5, 2}}), invalid_input_error);
  CHECK_THROWS_AS(r.read({{"nope"}, {}, {}}), invalid_input_error);
}

TEST_CASE("2.0: corrupt and truncated files give typed errors, never crashes") {
  auto b = make_batch({{"a", make_array<std::int32_t>({1, std::nullopt, 3})},
                       {"s", string_array({"x", "yy", std::nullopt})},
                       {"l", list_array<std::int32_t>({{1}, {}, {2, 3}})}});
  writer20 w(io::memory_sink{});
  w.write_batch(b);
  auto good = finish_to_bytes(w);
  std::string bytes(reinterpret_cast<const char*>(good.data()), good.size());
  // Truncations at every length.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto cut = shared_bytes::copy_of({reinterpret_cast<const std::uint8_t*>(bytes.data()), n});
    try {
      auto r = open_bytes(cut);
      r.read();
    } catch (const lancet::error&) {
    }
  }
  // Single-byte corruptions everywhere.
  std::mt19937 rng(1);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = char(bad[i] ^ (1 + rng() % 255));
    auto sb = shared_bytes::copy_of({reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size()});
    try {
      auto r = open_bytes(sb);
      r.read();
    } catch (const lancet::error&) {
    }
  }
  CHECK(true);
}

#include <lancet/file/encoded_batch.hpp>

TEST_CASE("2.0: in-memory encoded batch, self-described and mini serialisations") {
  auto b = make_batch({{"a", make_array<std::int32_t>({1, std::nullopt, 3})},
                       {"st", struct_array({{"x", string_array({"p", "q", std::nullopt})}})},
                       {"l", list_array<std::int64_t>({{1, 2}, {}, {3}})}});
  auto eb = file::encode_batch<file::v2_0>(b);
  CHECK(eb.num_rows == 3);
  CHECK(eb.columns.size() == 5);
  auto self = eb.to_self_described();
  auto sb = shared_bytes::copy_of({reinterpret_cast<const std::uint8_t*>(self.data()), self.size()});
  auto r = open_bytes(sb);
  CHECK(r.major() == 2);  // in-memory serialisations carry 2.0, files 0.3
  CHECK(r.minor() == 0);
  CHECK(r.num_global_buffers() == 1);
  CHECK_FALSE(first_difference(b, r.read()).has_value());
  auto mini = eb.to_mini();
  CHECK(mini.size() < self.size());
  auto mb = shared_bytes::copy_of({reinterpret_cast<const std::uint8_t*>(mini.data()), mini.size()});
  CHECK_THROWS_AS(open_bytes(mb), corrupt_error);  // no schema inside
  file::file_reader<io::memory_source> mr(io::memory_source(mb), schema::from_arrow(*b.schema));
  CHECK(mr.num_global_buffers() == 0);
  CHECK(mr.num_rows() == 3);
  CHECK_FALSE(first_difference(b, mr.read()).has_value());
}

TEST_CASE("2.0: pre-encoded pages are copied as bytes; only footer and schema are new") {
  testing::random_data gen(3, {.allow_struct_nulls = false});
  auto s = std::make_shared<arrow::schema>();
  s->fields = {field{"a", int64(), true, {}}, field{"l", list(utf8()), true, {}},
               field{"st", struct_({field{"x", float32(), true, {}}}), true, {}}};
  writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 3000});
  std::vector<record_batch> batches;
  for (int i = 0; i < 4; ++i) {
    std::vector<array_ptr> cols;
    for (const auto& f : s->fields) cols.push_back(gen.random_array(f.type, 100));
    batches.push_back(make_batch(s, cols));
    w.write_batch(batches.back());
  }
  auto src = open_bytes(finish_to_bytes(w));
  writer20 copy(io::memory_sink{}, src.schema());
  for (std::uint32_t c = 0; c < src.num_columns(); ++c) {
    std::vector<encoding::encoded_page> pages;
    for (const auto& p : src.column(c).metadata.pages) {
      encoding::encoded_page ep;
      for (std::size_t i = 0; i < p.buffer_offsets.size(); ++i)
        ep.buffers.push_back(src.source().read(p.buffer_offsets[i], p.buffer_sizes[i]));
      ep.encoding = std::get<pb::file2::direct_encoding>(p.encoding->location).encoding;
      ep.num_rows = p.length;
      pages.push_back(std::move(ep));
    }
    copy.write_encoded_pages(c, pages);
  }
  CHECK_THROWS_AS(copy.write_encoded_pages(99, {}), invalid_input_error);
  CHECK(copy.finish().rows == 400);
  auto r = open_bytes(copy.sink().take_shared());
  CHECK(r.num_rows() == 400);
  for (std::uint32_t c = 0; c < src.num_columns(); ++c) CHECK(r.column(c).metadata.pages.size() == src.column(c).metadata.pages.size());
  auto all = r.read();
  for (std::size_t c = 0; c < s->fields.size(); ++c) {
    std::vector<array_ptr> parts;
    for (const auto& b : batches) parts.push_back(b.columns[c]);
    check_same(arrow::concat(parts, s->fields[c].type), all.columns[c], "copied " + s->fields[c].name);
  }
}

TEST_CASE("2.0: encoding on a thread pool writes the same bytes as inline") {
  testing::random_data gen(11, {.allow_struct_nulls = false});
  auto s = std::make_shared<arrow::schema>();
  for (int c = 0; c < 6; ++c) s->fields.push_back(field{"c" + std::to_string(c), gen.random_type(), true, {}});
  std::vector<record_batch> batches;
  for (int b = 0; b < 5; ++b) {
    std::vector<array_ptr> cols;
    for (const auto& f : s->fields) cols.push_back(gen.random_array(f.type, 300));
    batches.push_back(make_batch(s, cols));
  }
  auto write = [&](boost::asio::thread_pool* pool) {
    writer20 w(io::memory_sink{}, file::writer_options{.data_cache_bytes = 2000, .max_page_bytes = 1500, .pool = pool});
    for (const auto& b : batches) w.write_batch(b);
    return finish_to_bytes(w);
  };
  boost::asio::thread_pool pool(2);
  auto a = write(nullptr), b = write(&pool);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
  CHECK(open_bytes(b).column(0).metadata.pages.size() > 2);
}
