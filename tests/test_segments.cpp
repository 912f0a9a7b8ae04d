// Distributed index building (index/distributed/model_file.hpp, index/distributed/segments.hpp): the model's
// serialised form, segments built separately and committed (or merged) equal to a
// one-shot build with the same model, and bad input refused with nothing committed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/distributed/segments.hpp>

#include "support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;

namespace {

// `chunks` appends (one fragment each) of `rows` clustered f32 vectors, column "vector".
void write_dataset(const std::string& root, std::size_t chunks, std::size_t rows, std::size_t dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, 0.2f);
  std::vector<float> centres(16 * dim);
  for (auto& c : centres) c = u(rng);
  for (std::size_t c = 0; c < chunks; ++c) {
    std::vector<float> v(rows * dim);
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t k = rng() % 16;
      for (std::size_t j = 0; j < dim; ++j) v[i * dim + j] = centres[k * dim + j] + g(rng);
    }
    arrow::field vf("vector", arrow::fixed_size_list(arrow::float32(), std::int32_t(dim)), true);
    std::vector<std::int64_t> ids(rows);
    for (std::size_t i = 0; i < rows; ++i) ids[i] = std::int64_t(c * rows + i);
    arrow::record_batch b;
    b.schema = std::make_shared<arrow::schema>(
        arrow::schema{{arrow::field("id", arrow::int64(), false), vf}, {}});
    b.columns.push_back(index::detail::primitive_array(arrow::int64(),
                                                       index::detail::copy_span(std::span<const std::int64_t>(ids)), rows));
    b.columns.push_back(index::detail::fsl_array(vf, index::detail::copy_span(std::span<const float>(v)), rows));
    dataset::write_options wo;
    wo.mode = c == 0 ? dataset::write_mode::create : dataset::write_mode::append;
    dataset::write(root, b, wo);
  }
}

// Row id -> (partition, code bytes and factors) over every partition of a segment.
std::map<std::uint64_t, std::pair<std::size_t, std::string>> entries(const std::string& dir) {
  index::storage_reader<io::file_source> r(io::file_source(dir + "/auxiliary.idx"));
  std::map<std::uint64_t, std::pair<std::size_t, std::string>> out;
  const std::size_t w = index::code_bytes(r.quantizer());
  for (std::size_t p = 0; p < r.num_partitions(); ++p) {
    const auto c = r.read_partition(p);
    for (std::size_t i = 0; i < c.size(); ++i) {
      std::string code(reinterpret_cast<const char*>(c.codes.data()) + i * w, w);
      if (!c.add_factors.empty()) {
        const float f[3] = {c.add_factors[i], c.scale_factors[i], c.error_factors[i]};
        code.append(reinterpret_cast<const char*>(f), sizeof f);
      }
      CHECK(out.emplace(c.row_ids[i], std::pair{p, code}).second);  // each row once
    }
  }
  return out;
}

index::build_options options(index::ivf_index_type type) {
  index::build_options o;
  o.column = "vector";
  o.type = type;
  o.num_partitions = 6;
  if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 4;
  return o;
}

std::uint64_t latest_version(const std::string& root) { return dataset::load_latest(root)->version(); }

}  // namespace

TEST_CASE("model file: round trip, and a truncated, damaged or foreign file is refused") {
  t::temp_dir tmp("seg-model");
  const std::string root = (tmp.path() / "ds").string();
  write_dataset(root, 2, 600, 16, 3);
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq,
                    index::ivf_index_type::ivf_rq}) {
    INFO(index::ivf_index_type_name(type));
    auto o = options(type);
    o.metric = simd::distance_type::cosine;
    const auto m = index::train_model(root, o);
    const std::string path = (tmp.path() / "model.bin").string();
    index::write_model_file(path, m);
    const auto back = index::read_model_file(path);
    CHECK(back.column == "vector");
    CHECK(back.type == type);
    CHECK(back.metric == simd::distance_type::cosine);
    CHECK(back.ivf.centroids == m.ivf.centroids);
    CHECK(back.ivf.quantizer == m.ivf.quantizer);
    CHECK(index::model_fingerprint(back) == index::model_fingerprint(m));
    CHECK(index::serialize_model(back) == index::serialize_model(m));

    const auto bytes = index::serialize_model(m);
    CHECK_THROWS_WITH_AS(index::parse_model(bytes.substr(0, bytes.size() - 1), "m"), doctest::Contains("truncated or extended"),
                         corrupt_error);
    CHECK_THROWS_WITH_AS(index::parse_model(bytes.substr(0, 10), "m"), doctest::Contains("truncated"), corrupt_error);
    CHECK_THROWS_WITH_AS(index::parse_model(bytes + "x", "m"), doctest::Contains("truncated or extended"), corrupt_error);
    auto flipped = bytes;
    flipped[bytes.size() / 2] ^= 0x10;
    CHECK_THROWS_WITH_AS(index::parse_model(flipped, "m"), doctest::Contains("checksum"), corrupt_error);
    CHECK_THROWS_WITH_AS(index::parse_model("PK\x03\x04 a zip file", "m"), doctest::Contains("not a lancet IVF model"),
                         corrupt_error);
    auto future = bytes;
    future[8] = 9;
    CHECK_THROWS_WITH_AS(index::parse_model(future, "m"), doctest::Contains("format version 9"), corrupt_error);
    // The file's name is in the error.
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, 40);
    CHECK_THROWS_WITH_AS(index::read_model_file(path), doctest::Contains(path.c_str()), corrupt_error);
  }
  CHECK_THROWS_AS(index::read_model_file((tmp.path() / "missing").string()), io_error);
}

TEST_CASE("segments built separately and committed equal a one-shot build with the same model") {
  t::temp_dir tmp("seg-equal");
  const std::string root = (tmp.path() / "ds").string();
  write_dataset(root, 4, 500, 16, 7);
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq,
                    index::ivf_index_type::ivf_rq}) {
    INFO(index::ivf_index_type_name(type));
    auto o = options(type);
    o.name = "idx_" + std::string(index::ivf_index_type_name(type));
    const auto m = index::parse_model(index::serialize_model(index::train_model(root, o)));  // as a worker gets it
    // Two workers, the JSON round trip a coordinator sees.
    const auto a = index::segment_from_json(index::segment_to_json(index::build_segment(root, o, m, {0, 2})));
    const auto b = index::segment_from_json(index::segment_to_json(index::build_segment(root, o, m, {3, 1})));
    CHECK(a.fragment_ids() == std::vector<std::uint64_t>{0, 2});
    CHECK(b.fragment_ids() == std::vector<std::uint64_t>{1, 3});
    CHECK(a.model == index::model_fingerprint(m));
    CHECK(a.model == b.model);
    CHECK(a.rows_indexed == 1000);
    CHECK(a.index_type == index::ivf_index_type_name(type));
    const auto v0 = latest_version(root);
    // One-shot build over every fragment with the same model (not committed).
    auto full = o;
    full.ivf_centroids = m.ivf.centroids;
    full.quantizer = m.ivf.quantizer;
    full.commit = false;
    const auto one = index::build_ivf_index(root, full);
    CHECK(latest_version(root) == v0);

    auto both = entries(index::index_directory(root, a.uuid()));
    for (auto& e : entries(index::index_directory(root, b.uuid()))) CHECK(both.insert(e).second);
    CHECK(both == entries(one.directory));

    // merge: one physical segment, the same entries.
    const auto merged = index::merge_segments(root, {a, b});
    CHECK(merged.fragment_ids() == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(merged.rows_indexed == 2000);
    CHECK(merged.model == a.model);
    CHECK(!(merged.uuid() == a.uuid()));
    CHECK(entries(index::index_directory(root, merged.uuid())) == both);
    CHECK(latest_version(root) == v0);

    // Committed as two segments of one index, in one version.
    const auto r = index::commit_segments(root, o.name, "vector", {a, b});
    CHECK(r.version == v0 + 1);
    CHECK(r.replaced.empty());
    std::vector<std::string> uuids;
    for (const auto& im : dataset::load_version(root, r.version).file.indices)
      if (im.name == o.name) uuids.push_back(im.uuid.to_string());
    CHECK(uuids == std::vector<std::string>{a.uuid().to_string(), b.uuid().to_string()});
    // The merged segment covers both: committing it replaces them.
    const auto r2 = index::commit_segments(root, o.name, "vector", {merged});
    CHECK(r2.version == v0 + 2);
    CHECK(r2.replaced.size() == 2);
    std::size_t n = 0;
    for (const auto& im : dataset::load_version(root, r2.version).file.indices)
      if (im.name == o.name) {
        ++n;
        CHECK(im.uuid == merged.uuid());
      }
    CHECK(n == 1);
    // Searchable through lancet's reader.
    const auto ix = index::open_vector_index(dataset::load_version(root, r2.version), "", o.name);
    CHECK(ix.segments.size() == 1);
  }
}

TEST_CASE("bad segments are refused and nothing is committed") {
  t::temp_dir tmp("seg-bad");
  const std::string root = (tmp.path() / "ds").string();
  write_dataset(root, 4, 400, 16, 11);
  auto o = options(index::ivf_index_type::ivf_pq);
  const auto m = index::train_model(root, o);
  const auto a = index::build_segment(root, o, m, {0, 1});
  const auto b = index::build_segment(root, o, m, {2});
  const auto over = index::build_segment(root, o, m, {1, 3});
  auto o2 = o;
  o2.seed = 99;
  const auto m2 = index::train_model(root, o2);
  REQUIRE(index::model_fingerprint(m2) != index::model_fingerprint(m));
  const auto other_model = index::build_segment(root, o, m2, {3});
  const auto v0 = latest_version(root);
  const auto refused = [&](const std::vector<index::segment_metadata>& segs, const std::string& name,
                           const std::string& column, const std::string& why) {
    INFO(why);
    CHECK_THROWS_WITH_AS(index::commit_segments(root, name, column, segs), doctest::Contains(why.c_str()), invalid_input_error);
    CHECK(latest_version(root) == v0);
  };

  refused({a, over}, "vector_idx", "vector", "fragment 1 is covered by");
  CHECK_THROWS_WITH_AS(index::merge_segments(root, {a, over}), doctest::Contains("fragment 1"), invalid_input_error);
  refused({a, other_model}, "vector_idx", "vector", "share one trained model");
  CHECK_THROWS_WITH_AS(index::merge_segments(root, {a, other_model}), doctest::Contains("share one trained model"),
                       invalid_input_error);
  refused({a, b}, "other_idx", "vector", "was built as index 'vector_idx'");
  refused({a, b}, "vector_idx", "id", "indexes column 'vector'");
  refused({a, b}, "vector_idx", "nope", "no column 'nope'");
  refused({a, a}, "vector_idx", "vector", "is given twice");
  refused({}, "vector_idx", "vector", "no segments given");
  // A segment whose JSON lies about its model: the files decide.
  auto liar = other_model;
  liar.model = a.model;
  refused({a, liar}, "vector_idx", "vector", "files hold model");
  // A segment whose files are gone.
  auto ghost = b;
  index::detail::segment_access::stored(ghost).uuid = lancet::uuid::generate_v4();
  refused({a, ghost}, "vector_idx", "vector", "does not exist");
  // Different names among the segments.
  auto renamed = b;
  index::detail::segment_access::stored(renamed).name = "x";
  CHECK_THROWS_WITH_AS(index::merge_segments(root, {a, renamed}), doctest::Contains("belongs to index 'x'"),
                       invalid_input_error);
  // IVF_HNSW_* indexes are built in one process: no model, no segment.
  auto hnsw = options(index::ivf_index_type::ivf_hnsw_pq);
  CHECK_THROWS_WITH_AS(index::train_model(root, hnsw), doctest::Contains("IVF_HNSW_PQ: distributed builds"),
                       unsupported_error);
  CHECK_THROWS_WITH_AS(index::build_segment(root, hnsw, m, {2}), doctest::Contains("IVF_HNSW_PQ"), unsupported_error);
  // Not JSON of a segment.
  CHECK_THROWS_AS(index::segment_from_json("{\"uuid\":1}", "s.json"), invalid_input_error);
  CHECK_THROWS_AS(index::segment_from_json("[1,", "s.json"), corrupt_error);

  // A fragment deleted since the segment was built.
  {
    const auto ids = dataset::dataset::open(root).fragment_row_ids(0);
    dataset::delete_rows(root, ids);  // fragment 0 entirely: it leaves the manifest
  }
  const auto v1 = latest_version(root);
  REQUIRE(v1 == v0 + 1);
  CHECK_THROWS_WITH_AS(index::commit_segments(root, "vector_idx", "vector", {a, b}),
                       doctest::Contains("covers fragment 0"), invalid_input_error);
  CHECK(latest_version(root) == v1);
  // A segment over fragments that are still there commits; then a segment leaving
  // part of it unindexed is refused.
  const auto c = index::build_segment(root, o, m, {1, 2});
  index::commit_segments(root, "vector_idx", "vector", {c});
  const auto v2 = latest_version(root);
  const auto d = index::build_segment(root, o, m, {2});
  CHECK_THROWS_WITH_AS(index::commit_segments(root, "vector_idx", "vector", {d}),
                       doctest::Contains("would leave fragments 1"), invalid_input_error);
  CHECK(latest_version(root) == v2);
  // A disjoint segment is added next to it (kept, not replaced).
  const auto e = index::build_segment(root, o, m, {3});
  const auto r = index::commit_segments(root, "vector_idx", "vector", {e});
  CHECK(r.replaced.empty());
  CHECK(dataset::load_version(root, r.version).file.indices.size() == 2);
}

TEST_CASE("a model trained on samples gathered from workers' fragments builds segments") {
  t::temp_dir tmp("seg-sample");
  const std::string root = (tmp.path() / "ds").string();
  write_dataset(root, 3, 800, 16, 5);
  auto o = options(index::ivf_index_type::ivf_pq);
  const std::uint64_t total = 2400;
  const std::size_t want = index::training_sample_rows(o, 16, total);
  CHECK(want == 256 * 256);  // PQ's sample: more than the dataset, so every row
  const auto v = latest_version(root);
  std::vector<float> rows;
  for (std::vector<std::uint64_t> share : {std::vector<std::uint64_t>{0, 2}, std::vector<std::uint64_t>{1}}) {
    const auto s = index::sample_vectors(root, v, o, share, want * share.size() / 3, 1);
    rows.insert(rows.end(), s.begin(), s.end());
  }
  CHECK(rows.size() == total * 16);
  const auto m = index::train_model_from_rows(o, 16, rows, total);
  CHECK(m.ivf.centroids.rows == 6);
  const auto a = index::build_segment(root, o, m, {0, 2});
  const auto b = index::build_segment(root, o, m, {1});
  CHECK(a.model == b.model);
  const auto r = index::commit_segments(root, "vector_idx", "vector", {a, b});
  CHECK(r.version == v + 1);
  // A sample smaller than the fragments: about the count asked for.
  CHECK(index::sample_vectors(root, v, o, {0}, 100, 2).size() == 100 * 16);
  CHECK_THROWS_WITH_AS(index::train_model_from_rows(o, 16, std::span<const float>(rows.data(), 16 * 3), total),
                       doctest::Contains("cannot build 6 partitions"), invalid_input_error);
}

TEST_CASE("remove_uncommitted_segment: removes a segment's directory, refuses a committed one") {
  t::temp_dir tmp("seg-remove");
  const std::string root = (tmp.path() / "ds").string();
  write_dataset(root, 2, 300, 16, 5);
  auto o = options(index::ivf_index_type::ivf_flat);
  o.name = "vidx";
  const auto m = index::train_model(root, o);
  const auto a = index::build_segment(root, o, m, {0});
  const auto b = index::build_segment(root, o, m, {1});
  const auto dir_a = index::index_directory(root, a.uuid());
  REQUIRE(std::filesystem::is_directory(dir_a));
  CHECK(index::remove_uncommitted_segment(root, a));
  CHECK_FALSE(std::filesystem::exists(dir_a));
  CHECK_FALSE(index::remove_uncommitted_segment(root, a));  // already gone: nothing to do
  // A committed segment is the dataset's: refused, its files kept.
  index::commit_segments(root, "vidx", "vector", {b});
  const std::string committed = "segment " + b.uuid().to_string() + " of index 'vidx'";
  CHECK_THROWS_WITH_AS(index::remove_uncommitted_segment(root, b), doctest::Contains(committed.c_str()),
                       invalid_input_error);
  CHECK(std::filesystem::is_directory(index::index_directory(root, b.uuid())));
  CHECK_THROWS_AS(index::remove_uncommitted_segment("", a), invalid_input_error);
}
