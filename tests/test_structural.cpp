// Structural encodings (Lance 2.1 / 2.2): bit-packing, codecs, rep/def levels, page
// layouts, the default strategy's choices, and files written by LanceDB.
#include <doctest/doctest.h>

#include <boost/asio/thread_pool.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/core/release_memory.hpp"
#include "lancet/encoding/structural/compression/bitpack.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/compression/general.hpp"
#include "lancet/encoding/structural/compression/rle.hpp"
#include "lancet/encoding/structural/decoder.hpp"
#include "lancet/encoding/structural/field_encoders.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "support/mem_columns.hpp"
#include "support/file_bytes.hpp"
#include "support/interop.hpp"
#include "support/random_data.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/write.hpp"

using namespace lancet;
namespace v21 = lancet::encoding::structural;
namespace fs = std::filesystem;

namespace {

using lancet::testing::encode_field;
using lancet::testing::mem_columns;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A minimal container reader for tests: columns, pages, schema.
struct test_file {
  shared_bytes bytes;
  file::footer foot;
  std::vector<pb::file2::column_metadata> columns;
  std::vector<std::vector<std::uint64_t>> starts;
  arrow::schema schema;
  std::uint64_t rows = 0;

  explicit test_file(const fs::path& path) {
    const auto s = read_all(path);
    init(shared_bytes::copy_of(bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())));
  }
  explicit test_file(shared_bytes b) { init(std::move(b)); }
  void init(shared_bytes b) {
    bytes = std::move(b);
    foot = file::footer::decode(bytes.view().subspan(bytes.size() - 40), bytes.size());
    auto gbo = file::decode_offset_table(bytes.view().subspan(foot.global_buff_offsets), foot.num_global_buffers, bytes.size(), "gb");
    auto cmo = file::decode_offset_table(bytes.view().subspan(foot.column_meta_offsets), foot.num_columns, bytes.size(), "cm");
    auto fd = schema::decode_file_descriptor(bytes.view().subspan(gbo[0].position, gbo[0].size));
    schema = schema::to_arrow(fd.first);
    rows = fd.second;
    for (const auto& r : cmo) {
      columns.push_back(pb::decode<pb::file2::column_metadata>(bytes.view().subspan(r.position, r.size)));
      std::vector<std::uint64_t> st{0};
      for (const auto& p : columns.back().pages) st.push_back(st.back() + p.length);
      starts.push_back(std::move(st));
    }
  }
  v21::fetch_page_buffers fetch() const {
    return [this](std::uint32_t c, std::size_t p) {
      std::vector<shared_bytes> out;
      const auto& pg = columns.at(c).pages.at(p);
      for (std::size_t i = 0; i < pg.buffer_offsets.size(); ++i)
        out.push_back(bytes.slice(pg.buffer_offsets[i], pg.buffer_sizes[i]));
      return out;
    };
  }
  // Decodes field f's rows [b, e).
  arrow::array_ptr read(std::size_t f, std::uint64_t b, std::uint64_t e) const {
    std::uint32_t first = 0;
    for (std::size_t i = 0; i < f; ++i) first += v21::column_count(schema.fields[i]);
    const auto n = v21::column_count(schema.fields[f]);
    std::vector<v21::column_pages> cols;
    for (std::uint32_t c = first; c < first + n; ++c) cols.push_back({&columns[c], starts[c]});
    return v21::decode_field(schema.fields[f], cols, first, b, e, fetch(),
                             [this](std::uint64_t off, std::uint64_t n) { return bytes.slice(off, n); });
  }
};

}  // namespace

TEST_CASE("bitpack: FastLanes layout round trips and matches a hand-computed word") {
  std::mt19937_64 rng(7);
  for (unsigned w = 0; w <= 32; ++w) {
    std::vector<std::uint32_t> in(1024), out(1024), packed(1024);
    for (auto& v : in) v = w == 32 ? std::uint32_t(rng()) : std::uint32_t(rng() & ((1ull << w) - 1));
    v21::bitpack::pack<std::uint32_t>(w, in.data(), packed.data());
    v21::bitpack::unpack<std::uint32_t>(w, packed.data(), out.data());
    CHECK(in == out);
  }
  // Width 1 over u16: lane 0 holds rows 0..15 = indices 0,128,...,896 then 64,192,...
  std::vector<std::uint16_t> in(1024, 0), packed(64);
  in[0] = 1;    // row 0 -> bit 0 of word 0
  in[64] = 1;   // row 8 -> bit 8 of word 0 (ORDER[1] = 4 -> 4 * 16 = 64)
  in[129] = 1;  // lane 1, row 1 -> bit 1 of word 1
  v21::bitpack::pack<std::uint16_t>(1, in.data(), packed.data());
  CHECK(packed[0] == 0x0101);
  CHECK(packed[1] == 0x0002);
}

TEST_CASE("codecs: rle, lz4, zstd and fsst round trip") {
  std::vector<std::uint32_t> v(3000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint32_t(i / 300);
  auto block = v21::rle::encode_block(reinterpret_cast<const std::uint8_t*>(v.data()), v.size(), 4);
  std::vector<std::uint32_t> back(v.size());
  v21::rle::decode_block(block.view(), v.size(), 4, reinterpret_cast<std::uint8_t*>(back.data()));
  CHECK(back == v);
  for (auto s : {pb::enc21::compression_scheme::lz4, pb::enc21::compression_scheme::zstd}) {
    aligned_buffer c, d;
    v21::general::compress(s, std::nullopt, block.view(), c);
    v21::general::decompress(s, c.view(), d);
    CHECK(d.size() == block.size());
    CHECK(std::memcmp(d.data(), block.data(), d.size()) == 0);
  }
  {
    // 4 MiB of zeros: zstd's best case (RLE blocks) still decompresses; the same frame
    // claiming 1 GiB is refused by the expansion bound before anything is allocated.
    aligned_buffer zeros, c, d;
    zeros.resize(std::size_t(4) << 20);
    std::memset(zeros.data(), 0, zeros.size());
    v21::general::compress(pb::enc21::compression_scheme::zstd, std::nullopt, zeros.view(), c);
    REQUIRE(c.size() < 4096);
    v21::general::decompress(pb::enc21::compression_scheme::zstd, c.view(), d);
    CHECK(d.size() == zeros.size());
    const std::uint64_t claim = std::uint64_t(1) << 30;
    std::memcpy(c.data(), &claim, 8);
    aligned_buffer e;
    CHECK_THROWS_WITH_AS(v21::general::decompress(pb::enc21::compression_scheme::zstd, c.view(), e),
                         doctest::Contains("claims 1073741824 bytes, more than zstd can expand to"), corrupt_error);
    CHECK(e.size() == 0);
  }
  std::string text;
  std::vector<std::uint32_t> offs{0};
  for (int i = 0; i < 2000; ++i) {
    text += "row-" + std::to_string(i * 7919 % 1000) + "-suffix ";
    offs.push_back(std::uint32_t(text.size()));
  }
  auto st = v21::fsst::symbol_table::train(offs.data(), offs.size() - 1, reinterpret_cast<const std::uint8_t*>(text.data()));
  CHECK(st.size() > 0);
  auto table = v21::fsst::symbol_table::parse(st.serialize());
  CHECK(st.serialize().size() == v21::fsst::table_bytes);
  aligned_buffer comp, dec;
  st.compress(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), comp);
  CHECK(comp.size() < text.size() / 2);
  table.decompress(comp.data(), comp.size(), dec);
  CHECK(std::string(reinterpret_cast<const char*>(dec.data()), dec.size()) == text);
}

// ---- files written by LanceDB -------------------------------------------------------

namespace {

void check_lance_file(const fs::path& dataset, const fs::path& expected_jsonl) {
  fs::path data;
  for (const auto& e : fs::directory_iterator(dataset / "data")) data = e.path();
  REQUIRE(!data.empty());
  test_file f(data);
  // Rows only (read_table.mjs ends with a {"countRows": N} line).
  std::string rows_text;
  {
    std::ifstream raw(expected_jsonl);
    std::string line;
    while (std::getline(raw, line))
      if (line.rfind("{\"countRows\"", 0) != 0 && line.rfind("{\"schema\"", 0) != 0) rows_text += line + "\n";
  }
  std::istringstream in(rows_text);
  json::rows_reader reader(f.schema, in, {.batch_size = 1 << 20, .ignore_unknown_fields = true});
  auto expected = reader.next();
  REQUIRE(expected);
  REQUIRE(std::uint64_t(expected->num_rows()) == f.rows);
  for (std::size_t i = 0; i < f.schema.fields.size(); ++i) {
    CAPTURE(f.schema.fields[i].name);
    arrow::array_ptr got;
    REQUIRE_NOTHROW(got = f.read(i, 0, f.rows));
    const auto diff = arrow::first_difference(expected->columns[i], got);
    CHECK_MESSAGE(!diff, f.schema.fields[i].name << ": " << diff.value_or(""));
    // A range in the middle decodes to the same rows.
    if (f.rows > 20) {
      const auto b = f.rows / 3, e = f.rows / 3 + f.rows / 4;
      auto part = f.read(i, b, e);
      const auto d2 = arrow::first_difference(arrow::slice(expected->columns[i], std::int64_t(b), std::int64_t(e - b)), part);
      CHECK_MESSAGE(!d2, f.schema.fields[i].name << " rows [" << b << ", " << e << "): " << d2.value_or(""));
    }
  }
}

}  // namespace

TEST_CASE("LanceDB files: every type decodes (committed fixtures)") {
  const auto dir = fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "structural";
  for (const char* name : {"small_2.1", "small_2.2", "special600_2.1", "special600_2.2", "edges1200_2.1", "edges1200_2.2", "packed_2.1", "packed_2.2"}) {
    CAPTURE(name);
    REQUIRE(fs::exists(dir / name));
    check_lance_file(dir / name, dir / (std::string(name) + ".jsonl"));
  }
}

TEST_CASE("LanceDB files: generated by the interop harness" * doctest::skip(std::getenv("LANCET_REF_DIR") == nullptr)) {
  const fs::path dir = std::getenv("LANCET_REF_DIR");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!fs::is_directory(e.path())) continue;
    const auto jsonl = fs::path(e.path().string() + ".jsonl");
    if (!fs::exists(jsonl)) continue;
    CAPTURE(e.path().string());
    check_lance_file(e.path(), jsonl);
  }
}

// ---- page-level round trips -----------------------------------------------------------

namespace {


// The page layout of column c, page p.
pb::enc21::page_layout layout_of(const mem_columns& m, std::size_t c = 0, std::size_t p = 0) {
  return m.meta.at(c).pages.at(p).encoding->unwrap<pb::enc21::page_layout>();
}

template <unsigned Minor = 2>
void check_round_trip(const arrow::field& f, const std::vector<arrow::array_ptr>& batches, encoding::encoding_options o = {}) {
  v21::default_strategy<Minor> strategy;
  auto m = encode_field(f, batches, strategy, o);
  const auto expected = arrow::concat(batches, f.type);
  const auto n = std::uint64_t(expected->length);
  auto got = m.read(f, 0, n);
  const auto diff = arrow::first_difference(expected, got);
  CHECK_MESSAGE(!diff, "2." << Minor << " " << arrow::to_string(*f.type) << ": " << diff.value_or(""));
  // Every sub-range, for short arrays; a few otherwise.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  if (n <= 12) {
    for (std::uint64_t b = 0; b <= n; ++b)
      for (std::uint64_t e = b; e <= n; ++e) ranges.emplace_back(b, e);
  } else {
    ranges = {{0, 1}, {n - 1, n}, {n / 3, n / 2}, {1, n - 1}, {n / 2, n / 2}};
  }
  for (auto [b, e] : ranges) {
    auto part = m.read(f, b, e);
    const auto d = arrow::first_difference(arrow::slice(expected, std::int64_t(b), std::int64_t(e - b)), part);
    CHECK_MESSAGE(!d, "2." << Minor << " " << arrow::to_string(*f.type) << " rows [" << b << ", " << e << "): " << d.value_or(""));
  }
}

void check_both(const arrow::field& f, const std::vector<arrow::array_ptr>& batches) {
  check_round_trip<1>(f, batches);
  check_round_trip<2>(f, batches);
}

arrow::field fld(std::string name, arrow::type_ptr t, bool nullable = true) { return arrow::field{std::move(name), std::move(t), nullable, {}}; }

}  // namespace

TEST_CASE("round trip: primitives with and without nulls") {
  auto i32 = arrow::make_array<std::int32_t>({1, std::nullopt, 3, -4, std::nullopt, 6, 7});
  check_both(fld("a", arrow::int32()), {i32});
  check_both(fld("b", arrow::boolean()), {arrow::bool_array({true, std::nullopt, false, true, true})});
  check_both(fld("s", arrow::utf8()), {arrow::string_array({"x", std::nullopt, "", "hello world", "z"})});
  check_both(fld("ls", arrow::large_utf8()), {arrow::large_string_array({"x", std::nullopt, "", "hello"})});
  check_both(fld("n", arrow::null_type()), {arrow::null_array(5)});
  check_both(fld("all_null", arrow::int64()), {arrow::make_array<std::int64_t>({std::nullopt, std::nullopt})});
}

namespace {

bool writable(const arrow::data_type& t) {
  if (t.id == arrow::type_id::fixed_size_list) {
    const arrow::data_type* c = &t;
    while (c->id == arrow::type_id::fixed_size_list) c = c->children.at(0).type.get();
    return c->id == arrow::type_id::boolean || arrow::is_fixed_width(*c);
  }
  for (const auto& c : t.children)
    if (!writable(*c.type)) return false;
  return true;
}

}  // namespace

TEST_CASE("round trip: random types and nestings, nulls at every level, several batches") {
  const std::uint64_t seeds = std::getenv("LANCET_SEEDS") ? std::stoull(std::getenv("LANCET_SEEDS")) : 300;
  for (std::uint64_t seed = 0; seed < seeds; ++seed) {
    lancet::testing::random_data rd(seed);
    auto t = rd.random_type();
    if (!writable(*t)) continue;
    CAPTURE(seed);
    CAPTURE(arrow::to_string(*t));
    std::vector<arrow::array_ptr> batches;
    const auto nb = 1 + rd.pick(3);
    for (std::size_t b = 0; b < nb; ++b) batches.push_back(rd.random_sliced_array(t, std::int64_t(rd.pick(seed % 7 == 0 ? 2000 : 40))));
    if (arrow::total_length(batches) == 0) continue;
    check_both(fld("f", t), batches);
  }
}

TEST_CASE("round trip: pages of many chunks (rows spanning chunks, repetition index)") {
  lancet::testing::random_data rd(42);
  const std::vector<arrow::type_ptr> types = {
      arrow::int32(), arrow::utf8(), arrow::list(arrow::int64()), arrow::list(arrow::list(arrow::int16())),
      arrow::large_list(arrow::utf8()), arrow::struct_({fld("x", arrow::int32()), fld("y", arrow::list(arrow::float64()))}),
      arrow::list(arrow::struct_({fld("a", arrow::utf8()), fld("b", arrow::boolean())})),
      arrow::fixed_size_list(arrow::float32(), 8), arrow::boolean(), arrow::float64(), arrow::decimal128(20, 4)};
  for (const auto& t : types) {
    CAPTURE(arrow::to_string(*t));
    check_both(fld("f", t), {rd.random_array(t, 6000), rd.random_sliced_array(t, 3000)});
  }
  // Long lists: a single row spans several chunks.
  std::vector<std::vector<std::optional<std::int32_t>>> rows;
  for (int r = 0; r < 7; ++r) {
    std::vector<std::optional<std::int32_t>> row;
    for (int i = 0; i < (r % 2 ? 5000 : 3); ++i) row.push_back(i % 11 == 0 ? std::nullopt : std::optional<std::int32_t>(i * r));
    rows.push_back(row);
  }
  check_both(fld("long", arrow::list(arrow::int32())), {arrow::list_array<std::int32_t>(rows)});
}

// ---- our pages vs Lance's, for the same data ------------------------------------------

namespace {

struct comparison {
  std::size_t columns = 0, same_encoding = 0, same_bytes = 0;
  std::vector<std::string> differing;
};

// Encodes the rows LanceDB wrote (from its JSON) with our strategy and compares every
// column's page encoding and buffers with the file's.
template <unsigned Minor>
comparison compare_with_lance(const fs::path& dataset, const fs::path& jsonl) {
  fs::path data;
  for (const auto& e : fs::directory_iterator(dataset / "data")) data = e.path();
  test_file f(data);
  std::string rows_text;
  {
    std::ifstream raw(jsonl);
    std::string line;
    while (std::getline(raw, line))
      if (line.rfind("{\"countRows\"", 0) != 0) rows_text += line + "\n";
  }
  std::istringstream in(rows_text);
  json::rows_reader reader(f.schema, in, {.batch_size = 1 << 20, .ignore_unknown_fields = true});
  auto batch = reader.next();
  comparison out;
  std::uint32_t col = 0;
  v21::default_strategy<Minor> strategy;
  for (std::size_t i = 0; i < f.schema.fields.size(); ++i) {
    auto m = encode_field(f.schema.fields[i], {batch->columns[i]}, strategy);
    for (std::size_t c = 0; c < m.meta.size(); ++c, ++col) {
      ++out.columns;
      const auto& ours = m.meta[c].pages.at(0);
      const auto& theirs = f.columns[col].pages.at(0);
      const auto a = ours.encoding->direct_any().value, b = theirs.encoding->direct_any().value;
      bool same = a == b;
      out.same_encoding += same;
      bool bytes = same && m.buffers[c][0].size() == theirs.buffer_offsets.size();
      for (std::size_t k = 0; bytes && k < theirs.buffer_offsets.size(); ++k) {
        const auto& ob = m.buffers[c][0][k];
        bytes = ob.size() == theirs.buffer_sizes[k];
        for (std::size_t j = 0; bytes && j < ob.size(); ++j) {
          const auto x = ob.data()[j], y = f.bytes.data()[theirs.buffer_offsets[k] + j];
          bytes = x == y;  // padding included (Lance pads with 0xFE)
        }
      }
      out.same_bytes += bytes;
      if (!bytes && same && std::getenv("LANCET_DUMP")) {
        for (std::size_t k = 0; k < theirs.buffer_offsets.size() && k < m.buffers[c][0].size(); ++k) {
          const auto& ob = m.buffers[c][0][k];
          std::size_t j = 0;
          const auto* tb = f.bytes.data() + theirs.buffer_offsets[k];
          while (j < ob.size() && j < theirs.buffer_sizes[k] && ob.data()[j] == tb[j]) ++j;
          std::printf("BYTES %s#%zu buf %zu: ours %zu theirs %llu bytes, first diff at %zu:", f.schema.fields[i].name.c_str(), c, k,
                      ob.size(), (unsigned long long)theirs.buffer_sizes[k], j);
          for (std::size_t q = j; q < j + 16 && q < ob.size(); ++q) std::printf(" %02x", ob.data()[q]);
          std::printf(" |");
          for (std::size_t q = j; q < j + 16 && q < theirs.buffer_sizes[k]; ++q) std::printf(" %02x", tb[q]);
          std::printf("\n");
        }
      }
      if (!bytes) {
        std::string name = f.schema.fields[i].name + "#" + std::to_string(c);
        if (!same) {
          name += " (encoding)";
          if (std::getenv("LANCET_DUMP")) {
            auto hex = [](const std::string& x) {
              std::string h;
              char buf[4];
              for (unsigned char ch : x) { std::snprintf(buf, sizeof buf, "%02x", ch); h += buf; }
              return h;
            };
            std::printf("DIFF %s ours %s theirs %s\n", name.c_str(), hex(a).c_str(), hex(b).c_str());
          }
        }
        out.differing.push_back(name);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("our pages equal Lance's, byte for byte, for the same data") {
  // Every column but FSST-compressed ones (whose symbol tables are trained differently)
  // must be identical: layout, codecs, chunking, levels and padding bytes.
  const auto dir = fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "structural";
  auto check = [&](const std::string& name, const comparison& c, std::vector<std::string> allowed) {
    std::string diff;
    for (const auto& d : c.differing) diff += " " + d;
    INFO(name << ": " << c.same_bytes << "/" << c.columns << " columns identical; differing:" << diff);
    for (const auto& d : c.differing) {
      const bool same_layout = d.find("(encoding)") == std::string::npos || d.rfind("long_utf8", 0) == 0;
      CHECK_MESSAGE(same_layout, d << " has another encoding");
      const bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return d.rfind(a, 0) == 0; });
      CHECK_MESSAGE(ok, d);
    }
    CHECK(c.columns > 0);
  };
  check("small_2.1", compare_with_lance<1>(dir / "small_2.1", dir / "small_2.1.jsonl"), {});
  check("small_2.2", compare_with_lance<2>(dir / "small_2.2", dir / "small_2.2.jsonl"), {});
  check("special600_2.1", compare_with_lance<1>(dir / "special600_2.1", dir / "special600_2.1.jsonl"), {"long_utf8#0"});
  check("special600_2.2", compare_with_lance<2>(dir / "special600_2.2", dir / "special600_2.2.jsonl"), {"long_utf8#0"});
  // zstd_text: same layout and chunks, but zstd's one-shot output for the last (short)
  // chunk is one byte off the streaming encoder Lance uses.
  check("edges1200_2.1", compare_with_lance<1>(dir / "edges1200_2.1", dir / "edges1200_2.1.jsonl"), {"zstd_text#0"});
  check("edges1200_2.2", compare_with_lance<2>(dir / "edges1200_2.2", dir / "edges1200_2.2.jsonl"), {"zstd_text#0"});
  check("packed_2.1", compare_with_lance<1>(dir / "packed_2.1", dir / "packed_2.1.jsonl"), {});
  check("packed_2.2", compare_with_lance<2>(dir / "packed_2.2", dir / "packed_2.2.jsonl"), {});
}

TEST_CASE("our pages vs Lance's for generated files" * doctest::skip(std::getenv("LANCET_REF_DIR") == nullptr)) {
  const fs::path dir = std::getenv("LANCET_REF_DIR");
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    const auto jsonl = fs::path(e.path().string() + ".jsonl");
    if (!fs::is_directory(e.path()) || !fs::exists(jsonl)) continue;
    comparison c;
    if (name.ends_with("_2.1")) c = compare_with_lance<1>(e.path(), jsonl);
    else if (name.ends_with("_2.2")) c = compare_with_lance<2>(e.path(), jsonl);
    else continue;
    std::string diff;
    for (const auto& d : c.differing) diff += " " + d;
    MESSAGE(name << ": " << c.same_bytes << "/" << c.columns << " identical; differing:" << diff);
  }
}

// ---- through the file writer -----------------------------------------------------------

namespace {

using lancet::testing::write_file;

template <class Version>
void check_file_round_trip(const std::vector<arrow::record_batch>& batches, file::writer_options o = {}) {
  auto bytes = write_file<Version>(batches, o);
  test_file f(bytes);
  CHECK(f.foot.major == Version::footer_major);
  CHECK(f.foot.minor == Version::footer_minor);
  std::uint64_t rows = 0;
  for (const auto& b : batches) rows += std::uint64_t(b.num_rows());
  REQUIRE(f.rows == rows);
  for (std::size_t c = 0; c < f.schema.fields.size(); ++c) {
    std::vector<arrow::array_ptr> parts;
    for (const auto& b : batches) parts.push_back(b.columns[c]);
    auto expected = arrow::concat(parts, batches[0].schema->fields[c].type);
    auto got = f.read(c, 0, rows);
    arrow::compare_options opt;
    opt.check_nested_nullability = false;
    const auto d = arrow::first_difference(*expected, *got, opt);
    CHECK_MESSAGE(!d, f.schema.fields[c].name << ": " << d.value_or(""));
  }
}

}  // namespace

TEST_CASE("file writer: 2.1 and 2.2 files of every type round trip") {
  lancet::testing::random_data rd(9);
  std::vector<std::pair<std::string, arrow::array_ptr>> cols;
  std::vector<arrow::type_ptr> types = lancet::testing::leaf_types();
  types.push_back(arrow::list(arrow::int32()));
  types.push_back(arrow::large_list(arrow::struct_({fld("a", arrow::utf8()), fld("b", arrow::list(arrow::float64()))})));
  types.push_back(arrow::fixed_size_list(arrow::float32(), 4));
  types.push_back(arrow::struct_({fld("x", arrow::int64()), fld("y", arrow::struct_({fld("z", arrow::boolean())}))}));
  for (std::size_t i = 0; i < types.size(); ++i) cols.emplace_back("c" + std::to_string(i), rd.random_array(types[i], 2500));
  auto batch = arrow::make_batch(cols);
  std::vector<arrow::record_batch> batches{batch, batch};
  check_file_round_trip<file::v2_1>(batches);
  check_file_round_trip<file::v2_2>(batches);
  // Small caches: several pages per column.
  file::writer_options small;
  small.data_cache_bytes = 64 * 1024;
  check_file_round_trip<file::v2_2>(batches, small);
}

// ---- LanceDB reads what we write ------------------------------------------------------

namespace {

bool lancedb_available() {
  return fs::exists(lancet::testing::interop_dir() / "node_modules" / "@lancedb" / "lancedb") &&
         lancet::testing::run("node --version > /dev/null 2>&1").status == 0;
}

// LanceDB writes `table` at `version`; we decode its file, write the rows again as a
// dataset of the same version, and LanceDB must read back exactly the rows it wrote.
void lancedb_reads_ours(const std::string& table, const std::string& version, int rows,
                        std::optional<std::uint64_t> cache_bytes = std::nullopt) {
  namespace t = lancet::testing;
  t::temp_dir dir("structural-" + table);
  const auto theirs = dir.path() / "theirs", ours = dir.path() / "ours";
  t::node("write_types.mjs", {theirs.string(), "--version", version, "--rows", std::to_string(rows), "--table", table});
  const auto expected = t::node("read_table.mjs", {theirs.string()});
  test_file f(t::data_files(theirs).at(0));
  arrow::record_batch batch;
  batch.schema = std::make_shared<arrow::schema>(f.schema);
  for (std::size_t i = 0; i < f.schema.fields.size(); ++i) batch.columns.push_back(f.read(i, 0, f.rows));
  dataset::write_options o;
  o.storage_version = file::parse_format_version(version);
  o.file_options.data_cache_bytes = cache_bytes;
  // In slices, so that small caches cut several pages per column.
  if (cache_bytes) {
    std::vector<arrow::record_batch> parts;
    for (std::int64_t at = 0; at < batch.num_rows(); at += 500) {
      arrow::record_batch p;
      p.schema = batch.schema;
      for (const auto& c : batch.columns) p.columns.push_back(arrow::slice(c, at, std::min<std::int64_t>(500, batch.num_rows() - at)));
      parts.push_back(std::move(p));
    }
    dataset::write(ours.string(), parts, o);
  } else {
    dataset::write(ours.string(), batch, o);
  }
  const auto got = t::node("read_table.mjs", {ours.string()});
  std::istringstream a(expected), b(got);
  std::string la, lb;
  std::size_t line = 0;
  while (std::getline(a, la)) {
    ++line;
    REQUIRE_MESSAGE(std::getline(b, lb), table << " " << version << ": LanceDB read fewer rows from our file");
    CHECK_MESSAGE(la == lb, table << " " << version << " line " << line << "\n theirs " << la.substr(0, 600) << "\n ours   " << lb.substr(0, 600));
  }
}

}  // namespace

TEST_CASE("LanceDB 0.39 reads our 2.1 and 2.2 files (every type, special columns)" *
          doctest::skip(!lancedb_available())) {
  for (const char* v : {"2.1", "2.2"}) {
    lancedb_reads_ours("types", v, 3000);
    lancedb_reads_ours("special", v, 5000);
    lancedb_reads_ours("types", v, 3000, 64 * 1024);  // several pages per column
  }
}

TEST_CASE("LanceDB 0.39 reads our 2.2 file with a 40 MB binary value and a small one" *
          doctest::skip(!lancedb_available())) {
  namespace t = lancet::testing;
  std::string big(40u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char((i * 2654435761u) >> 24);
  const std::string small = "\x01\x02\x03";
  auto payload = arrow::large_binary_array(std::vector<std::string>{big, small});
  auto batch = arrow::make_batch({{"id", arrow::make_array<std::int32_t>({0, 1})}, {"payload", payload}});
  // Full-zip with each value zstd-compressed on its own, as Lance 12 writes it.
  auto bytes = write_file<file::v2_2>({batch});
  test_file f(bytes);
  const auto l = f.columns[1].pages[0].encoding->unwrap<pb::enc21::page_layout>();
  REQUIRE(std::holds_alternative<pb::enc21::full_zip_layout>(l.value));
  const auto& z = std::get<pb::enc21::full_zip_layout>(l.value);
  CHECK(z.bits_per_offset == 64u);
  CHECK(std::holds_alternative<pb::enc21::general>(z.value_compression->value));
  // Rows decode one at a time (the reader splits large pages into row ranges).
  CHECK_FALSE(arrow::first_difference(arrow::slice(payload, 1, 1), f.read(1, 1, 2)));
  CHECK_FALSE(arrow::first_difference(arrow::slice(payload, 0, 1), f.read(1, 0, 1)));
  t::temp_dir dir("structural-big");
  const auto ours = dir.path() / "ours";
  dataset::write_options o;
  o.storage_version = file::format_version::v2_2;
  dataset::write(ours.string(), batch, o);
  const auto got = t::node("read_table.mjs", {ours.string()});
  const std::string expected = "{\"id\":0,\"payload\":\"" + json::base64_encode(big) + "\"}\n{\"id\":1,\"payload\":\"" +
                               json::base64_encode(small) + "\"}\n{\"countRows\":2}\n";
  CHECK(got.size() == expected.size());
  CHECK(got == expected);
}

// ---- compression parameters --------------------------------------------------------------

namespace {

arrow::array_ptr ints(std::size_t n, std::function<std::int32_t(std::size_t)> f) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = f(i);
  return arrow::make_array(v);
}

// Value compression of a page (unwrapping nothing).
pb::enc21::compressive_encoding value_compression(const mem_columns& m) {
  auto l = layout_of(m);
  const auto* mb = std::get_if<pb::enc21::mini_block_layout>(&l.value);
  REQUIRE(mb);
  REQUIRE(mb->value_compression);
  return *mb->value_compression;
}

template <class T>
bool is(const pb::enc21::compressive_encoding& e) { return std::holds_alternative<T>(e.value); }

}  // namespace

TEST_CASE("compression parameters: glob rules, field metadata, Lance's behaviours") {
  using encoding::field_compression;
  CHECK(encoding::glob_match("user_id", "*_id"));
  CHECK_FALSE(encoding::glob_match("identity", "*_id"));
  CHECK(encoding::glob_match("log_level", "log_*"));
  CHECK(encoding::glob_match("test_field_name", "test_*_name"));
  CHECK_FALSE(encoding::glob_match("test_name", "test_*_name_x"));
  CHECK(encoding::glob_match("anything", "*"));
  CHECK(encoding::glob_match("a_b_c", "a*b*c"));

  encoding::compression_params params;
  params.column("*_id", field_compression{.rle_threshold = 0.5, .bss = encoding::bss_mode::off});
  v21::default_strategy<2> strategy(params);
  // An id column with runs uses RLE.
  auto m = encode_field(fld("customer_id", arrow::int32()), {ints(3000, [](std::size_t i) { return std::int32_t(i / 10 * 7919); })}, strategy);
  CHECK(is<pb::enc21::rle>(value_compression(m)));
  // Without runs below the threshold it does not (bit-packing or plain instead).
  m = encode_field(fld("order_id", arrow::int32()), {ints(3000, [](std::size_t i) { return std::int32_t(i / 2 * 7919); })}, strategy);
  CHECK_FALSE(is<pb::enc21::rle>(value_compression(m)));

  // A string column with zstd in its metadata uses zstd.
  arrow::field text{"notes", arrow::utf8(), true, {{"lance-encoding:compression", "zstd"}}};
  std::vector<std::string> words;
  for (int i = 0; i < 3000; ++i) words.push_back("note number " + std::to_string(i * 7919 % 100003) + " about things");
  m = encode_field(text, {arrow::string_array(words)}, strategy);
  {
    auto e = value_compression(m);
    REQUIRE(is<pb::enc21::general>(e));
    CHECK(std::get<pb::enc21::general>(e.value).compression->scheme == pb::enc21::compression_scheme::zstd);
  }
  // An int column with compression none stays flat and uncompressed.
  arrow::field plain{"plain_int", arrow::int32(), true, {{"lance-encoding:compression", "none"}}};
  m = encode_field(plain, {ints(3000, [](std::size_t i) { return std::int32_t(i % 50); })}, strategy);
  CHECK(is<pb::enc21::flat>(value_compression(m)));
  // A status column of three long runs with an RLE threshold of 0.9 uses RLE.
  arrow::field status{"status", arrow::int32(), true, {{"lance-encoding:rle-threshold", "0.9"}}};
  m = encode_field(status, {ints(3000, [](std::size_t i) { return std::int32_t(i / 1000); })}, strategy);
  CHECK(is<pb::enc21::rle>(value_compression(m)));
  // Field metadata overrides column rules: compression none from a rule, zstd from metadata.
  encoding::compression_params none_rule;
  none_rule.column("notes", field_compression{.compression = "none"});
  m = encode_field(text, {arrow::string_array(words)}, v21::default_strategy<2>(none_rule));
  CHECK(is<pb::enc21::general>(value_compression(m)));
  // BSS on with lz4 for floats: byte-stream split under LZ4.
  arrow::field floats{"f", arrow::float64(), true, {{"lance-encoding:compression", "lz4"}, {"lance-encoding:bss", "on"}}};
  std::vector<double> fv(3000);
  for (std::size_t i = 0; i < fv.size(); ++i) fv[i] = std::sin(double(i)) * 100;
  m = encode_field(floats, {arrow::make_array(fv)}, strategy);
  {
    auto e = value_compression(m);
    REQUIRE(is<pb::enc21::general>(e));
    CHECK(is<pb::enc21::byte_stream_split>(*std::get<pb::enc21::general>(e.value).values));
  }
  // Every one of them decodes.
  for (const auto& [f, a] : std::vector<std::pair<arrow::field, arrow::array_ptr>>{
           {text, arrow::string_array(words)}, {floats, arrow::make_array(fv)}, {status, ints(3000, [](std::size_t i) { return std::int32_t(i / 1000); })}}) {
    auto mm = encode_field(f, {a}, strategy);
    CHECK_FALSE(arrow::first_difference(a, mm.read(f, 0, std::uint64_t(a->length))));
  }
}

TEST_CASE("compression parameters: invalid values fail naming the column and key") {
  using encoding::field_compression;
  auto expect = [](auto&& fn, const std::string& what) {
    try {
      fn();
      FAIL("no error for " << what);
    } catch (const invalid_input_error& e) {
      const std::string msg = e.what();
      CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
    }
  };
  expect([] { encoding::compression_params().column("*_id", field_compression{.compression = "snappy"}); },
         "column '*_id': lance-encoding:compression 'snappy' is not a compression scheme");
  expect([] { encoding::compression_params().column("x", field_compression{.compression = "zstd", .level = 40}); },
         "column 'x': lance-encoding:compression-level 40 is out of range");
  expect([] { encoding::compression_params().column("x", field_compression{.rle_threshold = 1.5}); },
         "column 'x': lance-encoding:rle-threshold 1.500000 is outside 0..1");
  auto meta_error = [&](arrow::metadata md, const std::string& what) {
    expect([&] {
      v21::default_strategy<2> s;
      encode_field(arrow::field{"col", arrow::int32(), true, md}, {ints(10, [](std::size_t i) { return std::int32_t(i); })}, s);
    }, what);
  };
  meta_error({{"lance-encoding:compression", "brotli"}}, "column 'col': lance-encoding:compression 'brotli'");
  meta_error({{"lance-encoding:compression-level", "high"}}, "column 'col': lance-encoding:compression-level 'high' is not an integer");
  meta_error({{"lance-encoding:rle-threshold", "-0.1"}}, "column 'col': lance-encoding:rle-threshold");
  meta_error({{"lance-encoding:bss", "maybe"}}, "column 'col': lance-encoding:bss 'maybe' is not off, on or auto");
  meta_error({{"lance-encoding:minichunk-size", "1000"}}, "column 'col': lance-encoding:minichunk-size 1000 is not a power of two");
  meta_error({{"lance-encoding:structural-encoding", "zipped"}}, "column 'col': lance-encoding:structural-encoding 'zipped'");
}

// ---- a user strategy ----------------------------------------------------------------------

namespace {

// Forces full-zip pages for "wide" and RLE for "ids", whatever the data: a policy that
// redefines plan_page and inherits the rest from the default.
struct forcing_policy : v21::default_policy {
  v21::page_plan plan_page(const v21::leaf_info& l, const v21::data_block& v, const v21::page_facts& f) const {
    auto p = v21::default_policy::plan_page(l, v, f);
    if (l.column == "wide" && p.layout == v21::page_plan::layout_kind::miniblock) {
      p.layout = v21::page_plan::layout_kind::fullzip;
      p.dictionary = false;
    }
    if (l.column == "ids") p.codec = v21::value_codec::rle;
    return p;
  }
};

}  // namespace

using forcing_strategy = v21::structural_strategy<2, forcing_policy>;

TEST_CASE("a user strategy forces a layout and a codec, and the pages decode") {
  forcing_strategy s;
  auto wide = arrow::make_array<std::int64_t>({1, std::nullopt, 3, 4});
  auto m = encode_field(fld("wide", arrow::int64()), {wide}, s);
  CHECK(std::holds_alternative<pb::enc21::full_zip_layout>(layout_of(m).value));
  CHECK_FALSE(arrow::first_difference(wide, m.read(fld("wide", arrow::int64()), 0, 4)));
  auto ids = ints(5000, [](std::size_t i) { return std::int32_t(i * 2654435761u); });
  m = encode_field(fld("ids", arrow::int32()), {ids}, s);
  CHECK(is<pb::enc21::rle>(value_compression(m)));
  CHECK_FALSE(arrow::first_difference(ids, m.read(fld("ids", arrow::int32()), 0, 5000)));
  // Through the file writer too.
  auto bytes = write_file<file::v2_2, forcing_strategy>({arrow::make_batch({{"ids", ids}})});
  test_file f(bytes);
  CHECK(std::holds_alternative<pb::enc21::rle>(
      std::get<pb::enc21::mini_block_layout>(f.columns[0].pages[0].encoding->unwrap<pb::enc21::page_layout>().value)
          .value_compression->value));
  // The policy itself as the writer's third argument gives the same bytes.
  auto by_policy = write_file<file::v2_2, forcing_policy>({arrow::make_batch({{"ids", ids}})});
  CHECK(by_policy.size() == bytes.size());
  CHECK(std::equal(by_policy.data(), by_policy.data() + by_policy.size(), bytes.data()));
  // The default policy gives what the default strategy gives, byte for byte.
  auto by_default_policy = write_file<file::v2_2, v21::default_policy>({arrow::make_batch({{"ids", ids}})});
  auto by_default = write_file<file::v2_2>({arrow::make_batch({{"ids", ids}})});
  CHECK(by_default_policy.size() == by_default.size());
  CHECK(std::equal(by_default_policy.data(), by_default_policy.data() + by_default_policy.size(), by_default.data()));
  CHECK_FALSE(std::equal(by_default.data(), by_default.data() + std::min(by_default.size(), bytes.size()), bytes.data()));
}

namespace {
// Sizes pages at 64 KiB per column for "small" (a custom page-size rule).
struct small_pages_policy : v21::default_policy {
  v21::page_sizing size_pages(const arrow::field& f, const v21::page_sizing& configured) const {
    auto s = configured;
    if (f.name == "small") s.cache_bytes_per_column = 64 << 10;
    return s;
  }
};
struct throwing_policy : v21::default_policy {
  v21::page_plan plan_page(const v21::leaf_info& l, const v21::data_block&, const v21::page_facts&) const {
    throw std::runtime_error("no plan for " + l.column);
  }
};
struct lying_policy : v21::default_policy {
  v21::page_plan plan_page(const v21::leaf_info&, const v21::data_block&, const v21::page_facts&) const {
    v21::page_plan p;
    p.layout = v21::page_plan::layout_kind::constant;
    return p;
  }
};
}  // namespace

TEST_CASE("a user policy sizes pages; a failing or impossible plan names the column") {
  auto big = ints(100000, [](std::size_t i) { return std::int32_t(i * 2654435761u); });
  auto batch = arrow::make_batch({{"small", big}, {"other", big}});
  auto bytes = write_file<file::v2_2, small_pages_policy>({batch}, {.rows_per_group = 1024});
  test_file f(bytes);
  CHECK(f.columns[0].pages.size() >= 6);   // 400 KB of int32 in 64 KiB pages
  CHECK(f.columns[1].pages.size() == 1);   // the default 8 MiB
  CHECK_FALSE(arrow::first_difference(big, f.read(0, 0, 100000)));
  CHECK_FALSE(arrow::first_difference(big, f.read(1, 0, 100000)));

  auto fails = [&]<class P>(P, const std::string& what) {
    try {
      write_file<file::v2_2, P>({arrow::make_batch({{"col", big}})});
      FAIL("no error");
    } catch (const invalid_input_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  fails(throwing_policy{}, "column 'col': the encoding policy failed: no plan for col");
  fails(lying_policy{}, "column 'col': the page was planned as constant but its values differ");
}

// ---- corrupt input ------------------------------------------------------------------------

TEST_CASE("corrupt pages: mutated buffers and encodings fail with lancet errors, never crash") {
  lancet::testing::random_data rd(5);
  const std::vector<arrow::type_ptr> types = {
      arrow::int32(), arrow::utf8(), arrow::list(arrow::int64()), arrow::list(arrow::list(arrow::int16())),
      arrow::struct_({fld("x", arrow::int32()), fld("y", arrow::list(arrow::utf8()))}), arrow::fixed_size_list(arrow::float32(), 3),
      arrow::boolean(), arrow::large_binary()};
  std::mt19937_64 rng(11);
  std::size_t errors = 0, survived = 0;
  const auto saved_limit = v21::max_decoded_buffer_bytes;
  v21::max_decoded_buffer_bytes = 64u << 20;  // as a fuzzer would run
  for (const auto& t : types) {
    for (unsigned minor : {1u, 2u}) {
      auto batch = rd.random_array(t, 3000);
      auto f = fld("f", t);
      mem_columns m = minor == 1 ? encode_field(f, {batch}, v21::default_strategy<1>{}) : encode_field(f, {batch}, v21::default_strategy<2>{});
      for (int round = 0; round < 150; ++round) {
        mem_columns c = m;
        const std::size_t col = rng() % c.meta.size();
        auto& page = c.meta[col].pages[0];
        if (rng() % 2) {
          // Flip bytes of a buffer.
          auto& bufs = c.buffers[col][0];
          if (bufs.empty()) continue;
          auto& b = bufs[rng() % bufs.size()];
          if (b.empty()) continue;
          aligned_buffer copy;
          copy.append(b.view());
          for (int k = 0; k < 1 + int(rng() % 4); ++k) copy[rng() % copy.size()] = std::uint8_t(rng());
          b = shared_bytes(std::move(copy));
        } else {
          // Flip bytes of the page layout (the Any's value).
          auto any = page.encoding->direct_any();
          if (any.value.empty()) continue;
          for (int k = 0; k < 1 + int(rng() % 3); ++k) any.value[rng() % any.value.size()] = char(rng());
          page.encoding = pb::file2::encoding::direct_of(any);
        }
        try {
          auto a = c.read(f, 0, std::uint64_t(batch->length));
          ++survived;
        } catch (const lancet::error&) {
          ++errors;
        }
      }
    }
  }
  v21::max_decoded_buffer_bytes = saved_limit;
  MESSAGE(errors << " corrupt inputs refused, " << survived << " decoded to something");
  CHECK(errors > 0);
}

TEST_CASE("legacy blob columns (2.1) LanceDB wrote decode to their bytes") {
  // tests/interop/write_legacy_blobs.mjs: row i holds 100 + 50 i bytes (k * 7 + i) & 255,
  // null when i % 5 == 3. LanceDB's scan shows only (position, size) descriptions;
  // lancet reads the bytes (the field is large_binary).
  const auto dir = fs::path(LANCET_SOURCE_ROOT) / "tests" / "fixtures" / "structural" / "blob_2.1" / "data";
  fs::path data;
  for (const auto& e : fs::directory_iterator(dir)) data = e.path();
  test_file f(data);
  REQUIRE(f.rows == 20);
  const auto l = f.columns[1].pages[0].encoding->unwrap<pb::enc21::page_layout>();
  CHECK(std::holds_alternative<pb::enc21::blob_layout>(l.value));
  std::vector<std::optional<std::string>> expected;
  for (int i = 0; i < 20; ++i) {
    if (i % 5 == 3) { expected.push_back(std::nullopt); continue; }
    std::string v(std::size_t(100 + i * 50), '\0');
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = char((k * 7 + std::size_t(i)) & 255);
    expected.push_back(v);
  }
  auto want = arrow::large_binary_array(expected);
  auto got = f.read(1, 0, 20);
  CHECK_FALSE(arrow::first_difference(want, got));
  CHECK_FALSE(arrow::first_difference(arrow::slice(want, 7, 6), f.read(1, 7, 13)));
}

TEST_CASE("packed structs: one column of rows, nulls at the struct level, inside lists") {
  auto members = std::vector<arrow::field>{fld("a", arrow::int32(), false), fld("b", arrow::float64(), false)};
  auto st = arrow::make_struct(members, {arrow::make_array<std::int32_t>({1, 2, 3, 4}), arrow::make_array<double>({.5, 1.5, 2.5, 3.5})},
                               {true, false, true, true});
  arrow::field f{"p", st->type, true, {{"lance-encoding:packed", "true"}}};
  CHECK(v21::column_count(f) == 1);
  for (unsigned minor : {1u, 2u}) {
    auto m = minor == 1 ? encode_field(f, {st}, v21::default_strategy<1>{}) : encode_field(f, {st}, v21::default_strategy<2>{});
    REQUIRE(m.meta.size() == 1);
    auto e = value_compression(m);
    CHECK(is<pb::enc21::packed_struct>(e));
    CHECK(std::get<pb::enc21::packed_struct>(e.value).bits_per_value == std::vector<std::uint64_t>{32, 64});
    CHECK_FALSE(arrow::first_difference(st, m.read(f, 0, 4)));
    // In a list.
    arrow::field lf{"l", arrow::list(f), true, {}};
    auto lst = arrow::make_list(f, st, {0, 2, 2, 4}, {true, false, true});
    auto ml = minor == 1 ? encode_field(lf, {lst}, v21::default_strategy<1>{}) : encode_field(lf, {lst}, v21::default_strategy<2>{});
    CHECK_FALSE(arrow::first_difference(lst, ml.read(lf, 0, 3)));
  }
  // Members must be byte-aligned fixed width.
  arrow::field bad{"q", arrow::struct_({fld("s", arrow::utf8())}), true, {{"lance-encoding:packed", "true"}}};
  CHECK_THROWS_AS(encode_field(bad, {arrow::struct_array({{"s", arrow::string_array({"x"})}})}, v21::default_strategy<2>{}),
                  unsupported_error);
}

// ---- lists under null structs (Lance pushes struct nulls down) ----------------------------

namespace {

std::vector<pb::enc21::rep_def_layer> layers_of(const pb::enc21::page_layout& l) {
  if (const auto* m = std::get_if<pb::enc21::mini_block_layout>(&l.value)) return m->layers;
  if (const auto* z = std::get_if<pb::enc21::full_zip_layout>(&l.value)) return z->layers;
  if (const auto* c = std::get_if<pb::enc21::constant_layout>(&l.value)) return c->layers;
  FAIL("page layout without layers");
  return {};
}

// s: struct<l: list<int32>>, rows: {l: [1, null]}, null (its list holds the garbage items
// [null, 2]), {l: [3]}, {l: []}, null (garbage list [7]), {l: null}.
arrow::array_ptr struct_over_garbage_list() {
  auto l = arrow::list_array<std::int32_t>({{1, std::nullopt}, {std::nullopt, 2}, {3}, {}, {7}, {}},
                                           {true, true, true, true, true, false});
  return arrow::struct_array({{"l", l}}, {true, false, true, true, false, true});
}

}  // namespace

TEST_CASE("lists under null structs: struct nulls pushed down as Lance does, garbage items dropped") {
  using L = pb::enc21::rep_def_layer;
  auto s = struct_over_garbage_list();
  const auto f = fld("s", s->type);
  for (unsigned minor : {1u, 2u}) {
    auto m = minor == 1 ? encode_field(f, {s}, v21::default_strategy<1>{}) : encode_field(f, {s}, v21::default_strategy<2>{});
    // Items, list, struct (innermost first): the list is nullable because its struct is.
    CHECK(layers_of(layout_of(m)) == std::vector<L>{L::nullable_item, L::null_and_empty_list, L::nullable_item});
    auto got = m.read(f, 0, 6);
    CHECK(arrow::to_string(*got->type) == arrow::to_string(*s->type));
    // Row by row: the visible values only.
    REQUIRE(got->length == 6);
    CHECK(got->is_valid(0));
    CHECK(got->is_null(1));
    CHECK(got->is_null(4));
    const auto& lst = got->children.at(0);
    CHECK(lst->value_offset(1) - lst->value_offset(0) == 2);
    CHECK(lst->value_offset(3) - lst->value_offset(2) == 1);
    CHECK(lst->value_offset(4) == lst->value_offset(3));  // empty
    CHECK(lst->is_null(5));
    const auto& items = lst->children.at(0);
    CHECK(items->value<std::int32_t>(lst->value_offset(0)) == 1);
    CHECK(items->is_null(lst->value_offset(0) + 1));
    CHECK(items->value<std::int32_t>(lst->value_offset(2)) == 3);
  }
  // Nothing null among the visible items (the garbage has the only null): the items
  // layer is all-valid, the list still nullable.
  auto l2 = arrow::list_array<std::int32_t>({{1, 4}, {std::nullopt, 2}, {3}});
  auto s2 = arrow::struct_array({{"l", l2}}, {true, false, true});
  auto m2 = encode_field(fld("s", s2->type), {s2}, v21::default_strategy<2>{});
  CHECK(layers_of(layout_of(m2)) == std::vector<L>{L::all_valid_item, L::nullable_list, L::nullable_item});
  // Without lists, a leaf under a nullable struct is nullable too.
  auto s3 = arrow::struct_array({{"x", arrow::make_array<std::int32_t>({1, 2, 3})}}, {true, false, true});
  auto m3 = encode_field(fld("s", s3->type), {s3}, v21::default_strategy<2>{});
  CHECK(layers_of(layout_of(m3)) == std::vector<L>{L::nullable_item, L::nullable_item});
  CHECK_FALSE(arrow::first_difference(s3, m3.read(fld("s", s3->type), 0, 3)));
  // Deeper: list<struct<t: struct<l: list<utf8>>>> with nulls at both structs.
  auto inner = arrow::make_list(arrow::string_array({"a", "b", "garbage", "c", "d"}), {0, 2, 3, 4, 5});
  auto t2 = arrow::struct_array({{"l", inner}}, {true, false, true, true});
  auto st = arrow::struct_array({{"t", t2}}, {true, true, false, true});
  auto outer = arrow::make_list(st, {0, 3, 3, 4}, {true, false, true});
  const auto fo = fld("o", outer->type);
  check_both(fo, {outer});
}

TEST_CASE("LanceDB 0.39 reads lists under null structs (garbage items) from our 2.1 and 2.2 files" *
          doctest::skip(!lancedb_available())) {
  namespace t = lancet::testing;
  auto s = struct_over_garbage_list();
  auto batch = arrow::make_batch({{"id", arrow::make_array<std::int32_t>({0, 1, 2, 3, 4, 5})}, {"s", s}});
  for (const char* v : {"2.1", "2.2"}) {
    t::temp_dir dir("structural-garbage");
    dataset::write_options o;
    o.storage_version = file::parse_format_version(v);
    dataset::write((dir.path() / "ours").string(), batch, o);
    const auto got = t::node("read_table.mjs", {(dir.path() / "ours").string()});
    CHECK_MESSAGE(got ==
                      "{\"id\":0,\"s\":{\"l\":[1,null]}}\n{\"id\":1,\"s\":null}\n{\"id\":2,\"s\":{\"l\":[3]}}\n"
                      "{\"id\":3,\"s\":{\"l\":[]}}\n{\"id\":4,\"s\":null}\n{\"id\":5,\"s\":{\"l\":null}}\n{\"countRows\":6}\n",
                  v << ": " << got);
  }
}

// ---- read_chunk_size -----------------------------------------------------------------------

namespace {

// A source that copies (not zero-copy) and logs the size of every read.
struct logging_source {
  io::memory_source inner;
  std::shared_ptr<std::vector<std::uint64_t>> log = std::make_shared<std::vector<std::uint64_t>>();
  std::uint64_t size() const noexcept { return inner.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    log->push_back(length);
    auto v = inner.read(offset, length);
    return shared_bytes::copy_of(v.view());
  }
};
static_assert(io::source<logging_source>);

}  // namespace

TEST_CASE("reader: read_chunk_size splits large page buffers into reads like Lance's") {
  std::string big(3u << 20, '\0');  // incompressible, so the page buffer stays over 3 MiB
  std::mt19937_64 rng(7);
  for (auto& c : big) c = char(rng() >> 56);
  auto payload = arrow::large_binary_array(std::vector<std::string>{big, "small"});
  auto batch = arrow::make_batch({{"payload", payload}});
  auto bytes = write_file<file::v2_2>({batch});
  const auto largest = [](const std::vector<std::uint64_t>& v) { return *std::max_element(v.begin(), v.end()); };
  {
    logging_source src{io::memory_source(bytes)};
    file::file_reader<logging_source> r(src);  // default: 8 MiB, the page is read whole
    CHECK(r.options().read_chunk_size == (8u << 20));
    auto got = r.read();
    CHECK_FALSE(arrow::first_difference(payload, got.columns[0]));
    CHECK(largest(*src.log) >= big.size());
  }
  {
    logging_source src{io::memory_source(bytes)};
    file::reader_options o;
    o.read_chunk_size = 1u << 20;
    file::file_reader<logging_source> r(src, o);
    src.log->clear();
    auto got = r.read();
    CHECK_FALSE(arrow::first_difference(payload, got.columns[0]));
    CHECK(largest(*src.log) <= (1u << 20));
    // The value buffer (over 3 MiB) came in ceil(size / 1 MiB) = 4 near-equal pieces.
    std::size_t near_quarter = 0;
    for (auto n : *src.log) near_quarter += n > (700u << 10) && n <= (1u << 20);
    CHECK(near_quarter == 4);
    // Row by row too.
    CHECK_FALSE(arrow::first_difference(arrow::slice(payload, 1, 1), r.read({{}, std::pair{1, 2}, std::nullopt}).columns[0]));
  }
  {
    // A zero-copy source is read in one piece whatever the chunk size.
    file::reader_options o;
    o.read_chunk_size = 1024;
    file::file_reader<io::memory_source> r(io::memory_source(bytes), o);
    CHECK_FALSE(arrow::first_difference(payload, r.read().columns[0]));
  }
  for (std::uint64_t budget : {std::uint64_t(1) << 30, std::uint64_t(0), std::uint64_t(1) << 20}) {
    // Range by range over one page: fetched once with the page cache, once per range
    // without (off, or the page is larger than the cache).
    const bool cache = budget > big.size();
    logging_source src{io::memory_source(bytes)};
    file::reader_options o;
    o.page_cache_bytes = budget;
    file::file_reader<logging_source> r(src, o);
    src.log->clear();
    CHECK_FALSE(arrow::first_difference(arrow::slice(payload, 0, 1), r.read({{}, std::pair{0, 1}, std::nullopt}).columns[0]));
    CHECK_FALSE(arrow::first_difference(arrow::slice(payload, 1, 1), r.read({{}, std::pair{1, 2}, std::nullopt}).columns[0]));
    std::size_t big_reads = 0;
    for (auto n : *src.log) big_reads += n >= big.size();
    CHECK_MESSAGE(big_reads == (cache ? 1u : 2u), "page_cache_bytes " << budget);
  }
  file::reader_options zero;
  zero.read_chunk_size = 0;
  CHECK_THROWS_AS(file::file_reader<io::memory_source>(io::memory_source(bytes), zero), invalid_input_error);
}

TEST_CASE("mini-block chunk headers are padded with 0xFE, as Lance 12 pads them (2.1 and 2.2)") {
  // Non-null int32 values: the header is num_levels (u16) and one buffer size (u16 in
  // 2.1, u32 in 2.2's large-chunk grammar), padded to 8 bytes.
  auto a = ints(3000, [](std::size_t i) { return std::int32_t(i * 7919 % 100000); });
  const auto f = fld("x", arrow::int32(), false);
  for (unsigned minor : {1u, 2u}) {
    auto m = minor == 1 ? encode_field(f, {a}, v21::default_strategy<1>{}) : encode_field(f, {a}, v21::default_strategy<2>{});
    const auto l = layout_of(m);
    const auto* mb = std::get_if<pb::enc21::mini_block_layout>(&l.value);
    REQUIRE(mb);
    CHECK(mb->has_large_chunk == (minor == 2));
    const auto& data = m.buffers[0][0][1];  // [chunk metadata, chunk data]
    const std::size_t header = minor == 2 ? 6 : 4;
    REQUIRE(data.size() > 8);
    CHECK(le::load<std::uint16_t>(data.data()) == 0);  // no levels
    for (std::size_t q = header; q < 8; ++q) CHECK_MESSAGE(data.data()[q] == 0xFE, "2." << minor << " byte " << q);
    CHECK_FALSE(arrow::first_difference(a, m.read(f, 0, 3000)));
  }
}

// ---- page sizing group by group (writer_options::rows_per_group) ----------------------------

TEST_CASE("compact_size: the bytes a slice takes once compacted, without copying it") {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    lancet::testing::random_data rd(seed);
    auto t = rd.random_type();
    CAPTURE(seed);
    CAPTURE(arrow::to_string(*t));
    auto a = rd.random_sliced_array(t, std::int64_t(rd.pick(300)));
    CHECK(arrow::compact_size(*a) ==
          arrow::buffer_memory_size(*arrow::deep_copy(*a)));
  }
}

namespace {

// Per column: each page's row count and buffers' bytes.
std::vector<std::vector<std::pair<std::uint64_t, std::vector<std::string>>>> pages_of(const shared_bytes& bytes) {
  test_file f(bytes);
  std::vector<std::vector<std::pair<std::uint64_t, std::vector<std::string>>>> out;
  for (const auto& c : f.columns) {
    out.emplace_back();
    for (const auto& p : c.pages) {
      std::vector<std::string> bufs;
      for (std::size_t i = 0; i < p.buffer_offsets.size(); ++i)
        bufs.emplace_back(reinterpret_cast<const char*>(bytes.data() + p.buffer_offsets[i]), p.buffer_sizes[i]);
      out.back().emplace_back(p.length, std::move(bufs));
    }
  }
  return out;
}

template <class Version>
void check_rows_per_group() {
  // Columns of different widths, so their pages close at different rows.
  lancet::testing::random_data rd(11);
  const std::int64_t n = 3000;
  std::vector<std::int64_t> ids(n);
  std::vector<float> vec(std::size_t(n) * 16);
  std::vector<std::string> strs(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    ids[std::size_t(i)] = i * 3;
    strs[std::size_t(i)] = "value-" + std::to_string(i * 7919 % 10007);
  }
  for (std::size_t i = 0; i < vec.size(); ++i) vec[i] = float(i % 97) * 0.5f;
  auto nested_t = arrow::list(arrow::struct_({arrow::field{"a", arrow::int32(), true, {}},
                                              arrow::field{"b", arrow::utf8(), true, {}}}));
  auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                                  {"s", arrow::string_array(strs)},
                                  {"v", arrow::make_fixed_size_list(arrow::make_array<float>(vec), 16)},
                                  {"n", rd.random_array(nested_t, n)}});
  // Sliced, so the batch's buffers are larger than its rows.
  auto sliced = dataset::detail::zero_copy_slice(batch, 7, n - 19);
  file::writer_options base;
  base.data_cache_bytes = 4 * (16u << 10);  // 16 KiB per column: many pages
  // Reference: the batch handed over as compacted 100-row groups.
  std::vector<arrow::record_batch> groups;
  for (std::int64_t at = 0; at < sliced.num_rows(); at += 100)
    groups.push_back(dataset::detail::compact_slice(sliced, at, std::min<std::int64_t>(100, sliced.num_rows() - at)));
  const auto expected = pages_of(write_file<Version>(groups, base));
  std::size_t pages = 0;
  for (const auto& c : expected) pages += c.size();
  CHECK(pages > 4 * 3);  // several pages per column
  file::writer_options grouped = base;
  grouped.rows_per_group = 100;
  // The whole batch at once, and in two parts at a group boundary (rows buffered across
  // calls: copied at the end of the first).
  const auto a = std::int64_t(1200);
  for (int threads : {0, 2}) {
    for (std::size_t in_flight : {std::size_t(1), std::size_t(4)}) {
      CAPTURE(threads);
      CAPTURE(in_flight);
      std::optional<boost::asio::thread_pool> pool;
      auto o = grouped;
      if (threads) {
        pool.emplace(threads);
        o.pool = &*pool;
      }
      o.max_pages_in_flight = in_flight;
      CHECK(pages_of(write_file<Version>({sliced}, o)) == expected);
      CHECK(pages_of(write_file<Version>({dataset::detail::zero_copy_slice(sliced, 0, a),
                                          dataset::detail::zero_copy_slice(sliced, a, sliced.num_rows() - a)}, o)) == expected);
    }
  }
  // Without it, a batch counts whole: one page per column.
  for (const auto& c : pages_of(write_file<Version>({sliced}, base))) CHECK(c.size() == 1);
  check_file_round_trip<Version>({sliced}, grouped);
  check_file_round_trip<Version>({dataset::detail::zero_copy_slice(sliced, 0, 1234),
                                  dataset::detail::zero_copy_slice(sliced, 1234, sliced.num_rows() - 1234)},
                                 grouped);
}

}  // namespace

TEST_CASE("rows_per_group: pages of a large batch as if written in compacted groups (2.1, 2.2, pool)") {
  check_rows_per_group<file::v2_1>();
  check_rows_per_group<file::v2_2>();
}

TEST_CASE("dataset::write without fsync of data files (as Lance 12 writes) reads back the same") {
  lancet::testing::temp_dir tmp("h2-nosync");
  const auto root = (tmp.path() / "ds").string();
  std::vector<std::int64_t> ids(5000);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i * i % 7919);
  auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)}});
  dataset::write_options o;
  o.sync_data_files = false;
  o.max_rows_per_group = 300;
  const auto r = dataset::write(root, batch, o);
  CHECK(r.rows_written == ids.size());
  const auto back = dataset::dataset::open(root).to_batch();
  CHECK_FALSE(arrow::first_difference(batch.columns[0], back.columns[0]));
}

TEST_CASE("concat: large outputs come from reused blocks, with the right bytes") {
  const std::size_t n = (std::size_t(20) << 20) / 4;  // 20 MiB of int32
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::int32_t(i * 2654435761u);
  auto whole = arrow::make_array<std::int32_t>(v);
  const std::vector<arrow::array_ptr> parts{arrow::slice(whole, 0, 1000), arrow::slice(whole, 1000, std::int64_t(n) - 1000)};
  std::set<const std::uint8_t*> blocks;
  for (int round = 0; round < 4; ++round) {
    auto c = arrow::concat(parts, arrow::int32());
    REQUIRE(c->length == std::int64_t(n));
    CHECK(std::memcmp(c->buffers[1].data(), v.data(), n * 4) == 0);
    CHECK_FALSE(arrow::first_difference(whole, c));
    blocks.insert(c->buffers[1].data());
  }
  CHECK(blocks.size() <= 2);  // freed blocks came back (core/buffer.hpp's large-block cache)
  auto& cache = lancet::detail::large_block_cache::instance();
  CHECK(cache.kept_blocks() >= 1);
  release_free_memory();
  CHECK(cache.kept_blocks() == 0);
  // Smaller outputs are ordinary buffers.
  auto small = arrow::concat({arrow::slice(whole, 0, 10), arrow::slice(whole, 10, 10)}, arrow::int32());
  CHECK_FALSE(arrow::first_difference(arrow::slice(whole, 0, 20), small));
}
