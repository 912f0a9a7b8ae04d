// Structural encodings (Lance 2.1 / 2.2): bit-packing, codecs, rep/def levels, page
// layouts, the default strategy's choices, and files written by LanceDB.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/encoding/v2_1/compression/bitpack.hpp"
#include "lancet/encoding/v2_1/compression/fsst.hpp"
#include "lancet/encoding/v2_1/compression/general.hpp"
#include "lancet/encoding/v2_1/compression/rle.hpp"
#include "lancet/encoding/v2_1/decoder.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/schema/lance_schema.hpp"

using namespace lancet;
namespace v21 = lancet::encoding::v2_1;
namespace fs = std::filesystem;

namespace {

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
    bytes = shared_bytes::copy_of(bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
    foot = file::footer::decode(bytes.view().subspan(bytes.size() - 40), bytes.size());
    auto gbo = file::decode_offset_table(bytes.view().subspan(foot.global_buff_offsets), foot.num_global_buffers, bytes.size(), "gb");
    auto cmo = file::decode_offset_table(bytes.view().subspan(foot.column_meta_offsets), foot.num_columns, bytes.size(), "cm");
    auto fd = schema::decode_file_descriptor(bytes.view().subspan(gbo[0].position, gbo[0].size));
    schema = schema::to_arrow(fd.first);
    rows = fd.second;
    for (const auto& r : cmo) {
      columns.push_back(pb::from_bytes<pb::file2::column_metadata>(bytes.view().subspan(r.position, r.size)));
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
    return v21::decode_field(schema.fields[f], cols, first, b, e, fetch());
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
  for (const char* name : {"small_2.1", "small_2.2", "special600_2.1", "special600_2.2"}) {
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
