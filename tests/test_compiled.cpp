// Compiled mode (core/config.hpp): this translation unit is built with LANCET_COMPILED
// and linked to the library of src/lancet.cpp. The precompiled writers must write the
// same bytes as writers compiled here from the headers (a user policy that changes
// nothing instantiates the structural encoders in this TU), and read back. The index
// layer's entry points (build, open, optimise) come from the library: a definition it
// lacks is a link error here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/core/config.hpp>
#include <lancet/core/endian.hpp>
#include <lancet/dataset.hpp>
#include <lancet/encoding/structural/field_encoders.hpp>  // for the policy of this TU's own writers
#include <lancet/file/footer.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/file/structural.hpp>
#include <lancet/file/legacy.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/index.hpp>
#include <lancet/io/file_sink.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/io/source.hpp>

#include "support/temp_dir.hpp"

using namespace lancet;
namespace v21 = lancet::encoding::structural;

static_assert(!LANCET_HEADER_ONLY, "this suite must be compiled with LANCET_COMPILED");

namespace {

// Lance 12's choices, as a distinct policy type: its writers are compiled here.
struct same_as_default : v21::default_policy {};

arrow::record_batch sample_batch() {
  std::vector<std::optional<std::int64_t>> ids;
  std::vector<std::optional<std::string>> names;
  for (std::int64_t i = 0; i < 5000; ++i) {
    ids.emplace_back(i * 7);
    if (i % 7 == 3) names.emplace_back(std::nullopt);
    else names.emplace_back("name-" + std::to_string(i % 300));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)}, {"name", arrow::string_array(names)}});
}

template <class Version, class Encoding = typename Version::default_strategy>
shared_bytes write_memory(const arrow::record_batch& b) {
  file::file_writer<Version, io::memory_sink, Encoding> w{io::memory_sink{}};
  w.write_batch(b);
  w.finish();
  return w.sink().take_shared();
}

void check_reads_back(const shared_bytes& bytes, const arrow::record_batch& b) {
  file::file_reader<io::memory_source> r{io::memory_source(bytes)};
  auto back = r.read({});
  REQUIRE(back.columns.size() == b.columns.size());
  for (std::size_t c = 0; c < b.columns.size(); ++c) CHECK_FALSE(arrow::first_difference(b.columns[c], back.columns[c]));
}

// `id` (first_id, ...) and `vector`, 4-d: rows r < n / 2 near (0, 0, 0, 0), the others
// near (100, 100, 100, 100); row r's first element is offset by r / 1000.
arrow::record_batch two_clusters(std::int64_t n, std::int64_t first_id) {
  std::vector<std::optional<std::int64_t>> ids;
  std::vector<std::optional<float>> values;
  for (std::int64_t r = 0; r < n; ++r) {
    ids.emplace_back(first_id + r);
    const float at = r < n / 2 ? 0.0f : 100.0f;
    for (int d = 0; d < 4; ++d) values.emplace_back(at + (d == 0 ? float(r) / 1000 : 0.0f));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                            {"vector", arrow::make_fixed_size_list(arrow::make_array<float>(values), 4)}});
}

bool same_bytes(const shared_bytes& a, const shared_bytes& b) {
  return a.size() == b.size() && std::equal(a.data(), a.data() + a.size(), b.data());
}

}  // namespace

TEST_CASE("compiled mode: precompiled writers give the bytes of header-compiled ones, every version") {
  const auto b = sample_batch();
  auto v20 = write_memory<file::v2_0>(b);
  auto v21 = write_memory<file::v2_1>(b);
  auto v22 = write_memory<file::v2_2>(b);
  check_reads_back(v20, b);
  check_reads_back(v21, b);
  check_reads_back(v22, b);
  CHECK(same_bytes(v21, write_memory<file::v2_1, same_as_default>(b)));
  CHECK(same_bytes(v22, write_memory<file::v2_2, same_as_default>(b)));
  CHECK_FALSE(same_bytes(v21, v22));
}

TEST_CASE("compiled mode: a precompiled file_sink writer publishes a file that reads back") {
  const auto b = sample_batch();
  const auto path = (std::filesystem::temp_directory_path() / "lancet_test_compiled.lance").string();
  {
    file::file_writer<file::v2_2, io::file_sink> w{io::file_sink(path)};
    w.write_batch(b);
    w.finish();
  }
  file::file_reader<io::file_source> r{io::file_source(path)};
  auto back = r.read({});
  CHECK_FALSE(arrow::first_difference(b.columns[0], back.columns[0]));
  CHECK_FALSE(arrow::first_difference(b.columns[1], back.columns[1]));
  std::filesystem::remove(path);
}

TEST_CASE("compiled mode: errors from the library keep their types and messages") {
  file::file_writer<file::v2_2, io::memory_sink> w{io::memory_sink{}};
  w.write_batch(sample_batch());
  auto wrong = arrow::make_batch({{"id", arrow::string_array({"x"})}, {"name", arrow::string_array({"y"})}});
  CHECK_THROWS_WITH_AS(w.write_batch(wrong), doctest::Contains("column 'id' does not match the schema"),
                       invalid_input_error);
}

// The structural versions share one writer class (file_writer_impl over
// structural_encodings, the version a run-time value): each file must still carry its own
// version in the footer, and 2.3 its own bytes only there.
TEST_CASE("compiled mode: 2.1, 2.2 and 2.3 writers share one precompiled writer and write their own version") {
  using shared = file::detail::file_writer_impl<io::memory_sink, v21::structural_encodings<>>;
  static_assert(std::is_base_of_v<shared, file::file_writer<file::v2_1, io::memory_sink>>);
  static_assert(std::is_base_of_v<shared, file::file_writer<file::v2_2, io::memory_sink>>);
  static_assert(std::is_base_of_v<shared, file::file_writer<file::v2_3, io::memory_sink>>);
  const auto b = sample_batch();
  auto footer_version = [](const shared_bytes& f) {
    REQUIRE(f.size() >= file::footer_size);
    const auto* p = f.data() + f.size() - file::footer_size;
    return std::pair<int, int>(le::load<std::uint16_t>(p + 32), le::load<std::uint16_t>(p + 34));
  };
  const auto v21 = write_memory<file::v2_1>(b), v22 = write_memory<file::v2_2>(b), v23 = write_memory<file::v2_3>(b);
  CHECK(footer_version(v21) == std::pair<int, int>(2, 1));
  CHECK(footer_version(v22) == std::pair<int, int>(2, 2));
  CHECK(footer_version(v23) == std::pair<int, int>(2, 3));
  check_reads_back(v23, b);
  // 2.3 encodes as 2.2 does: the files differ in the footer's minor version alone.
  REQUIRE(v22.size() == v23.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < v22.size(); ++i) differing += v22.data()[i] != v23.data()[i];
  CHECK(differing == 1);
  CHECK(same_bytes(v23, write_memory<file::v2_3, same_as_default>(b)));
}

// The dataset layer's public headers only declare in compiled mode: opening, scanning,
// taking, deleting, compacting and the distributed write below all link to the library.
TEST_CASE("compiled mode: the dataset layer's functions come from the library") {
  lancet::testing::scratch_dir tmp("compiled-dataset");
  const std::string root = tmp.sub("ds");
  const auto b = sample_batch();  // ids 0, 7, 14, ...
  dataset::write_options wo;
  wo.max_rows_per_file = 2000;  // three fragments
  const auto w = dataset::write(root, b, wo);
  CHECK(w.fragments.size() == 3);

  auto ds = dataset::dataset::open(root);
  CHECK(ds.count_rows() == 5000);
  CHECK(ds.fragments().size() == 3);
  std::uint64_t scanned = 0;
  for (auto sc = ds.scan({.columns = {"id"}, .batch_size = 700}); auto batch = sc.next();) {
    REQUIRE(batch->columns.size() == 1);
    scanned += std::uint64_t(batch->columns[0]->length);
  }
  CHECK(scanned == 5000);
  const auto taken = ds.take({dataset::row_address(1, 5), 3}, {"id"});
  CHECK_FALSE(arrow::first_difference(taken.columns[0], arrow::make_array<std::int64_t>({(2000 + 5) * 7, 3 * 7})));

  const std::vector<std::uint64_t> gone{0, dataset::row_address(2, 999)};
  CHECK(dataset::delete_rows(root, gone).deleted_rows == 2);
  ds = ds.latest();
  CHECK(ds.count_rows() == 4998);
  CHECK_THROWS_AS(ds.take({0}), invalid_input_error);

  const auto c = dataset::compact_files(root, {.target_rows_per_fragment = 10000, .remap_indexes = lancet::index::compaction_remapper()});
  CHECK(c.metrics.fragments_removed == 3);
  CHECK(c.metrics.fragments_added == 1);
  ds = ds.latest();
  CHECK(ds.fragments().size() == 1);
  CHECK(ds.count_rows() == 4998);

  // A distributed append: a worker's fragments, committed by a coordinator.
  auto more = dataset::write_fragments(root, arrow::make_batch({{"id", arrow::make_array<std::int64_t>({-1, -2})},
                                                                {"name", arrow::string_array({"a", "b"})}}),
                                       {.mode = dataset::write_mode::append});
  const auto r = dataset::commit(root, dataset::operation::append{}, more.fragments);
  CHECK(r.rows == 2);
  CHECK(dataset::dataset::open(root).count_rows() == 5000);
}

// The index layer's entry points, from the library: build an IVF_FLAT and an IVF_PQ
// index, search them (nearest rows by value), optimise after an append.
TEST_CASE("compiled mode: build, open, search and optimise IVF indexes through the library") {
  lancet::testing::scratch_dir tmp("compiled-index");
  const std::string root = tmp.sub("ds");
  dataset::write(root, two_clusters(2000, 0));

  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  const auto built = index::build_ivf_index(root, o);
  CHECK(built.num_partitions == 2);
  CHECK(built.rows_indexed == 2000);

  index::search_params sp;
  sp.k = 3;
  sp.nprobes = 1;
  const float q[4] = {100.0f + 1.5f, 100, 100, 100};  // nearest: rows 1499, 1500, 1498 by the first element
  {
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.info.index_type == "IVF_FLAT");
    CHECK(ix.searcher->num_partitions() == 2);
    const auto hits = ix.searcher->search(q, 4, sp);
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].row_id == 1500);  // fragment 0: row addresses are the row positions
    CHECK(std::set<std::uint64_t>{hits[1].row_id, hits[2].row_id} == std::set<std::uint64_t>{1499, 1501});
    CHECK(hits[0].distance == doctest::Approx(0.0f).epsilon(1e-4));
  }

  // Appended rows are indexed by optimize_indices as a delta segment, then searchable.
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, two_clusters(200, 2000), wo);
  const auto r = index::optimize_indices(root);
  REQUIRE(r.indices.size() == 1);
  CHECK(r.indices[0].changed);
  CHECK(r.indices[0].rows_added == 200);
  {
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.segments.size() == 2);
    const float q2[4] = {0.05f, 0, 0, 0};  // row 2050 of the appended fragment (1) is (0.05, 0, 0, 0), as is row 50
    const auto hits = ix.searcher->search(q2, 4, sp);
    REQUIRE(hits.size() == 3);
    std::set<std::uint64_t> ids;
    for (const auto& h : hits) ids.insert(h.row_id);
    CHECK(ids.count(50) == 1);
    CHECK(ids.count((std::uint64_t(1) << 32) | 50) == 1);
  }

  // IVF_PQ (replacing the index): the nearest row still comes first.
  o.type = index::ivf_index_type::ivf_pq;
  o.num_sub_vectors = 2;
  o.num_bits = 8;
  o.replace = true;
  index::build_ivf_index(root, o);
  auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  CHECK(ix.info.index_type == "IVF_PQ");
  const auto hits = ix.searcher->search(q, 4, sp);
  REQUIRE(hits.size() == 3);
  CHECK((hits[0].row_id >> 32) == 0);
  CHECK(hits[0].row_id >= 1400);
  CHECK(hits[0].row_id < 1600);
}
