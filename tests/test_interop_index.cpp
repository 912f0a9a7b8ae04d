// Interop of vector index files and their registration, LanceDB 0.39 (Lance 12) as
// the oracle (run `npm install` in tests/interop first):
//  - we build IVF_FLAT indexes (lancet k-means, exact assignment) on datasets LanceDB
//    created (2.0, 2.1 and 2.2; l2 / cosine / dot), register them in a new manifest
//    version, and LanceDB lists them (type, column, rows indexed), plans its search
//    through them (explainPlan names our uuid) and, probing every partition, returns
//    exactly its own brute-force neighbours;
//  - LanceDB's quantized indexes (IVF_PQ 8 and 4 bits, IVF_RQ 1 and 2 bits) decoded
//    and written again by us with every partition's rows in reverse order (so PQ
//    transposition and RaBitQ block packing are exercised on other bytes), committed
//    in place of LanceDB's: LanceDB's search returns the same rows and distances
//    (4-bit PQ: within Lance's own quantized-table noise);
//  - an index in two segments (shared centroids, disjoint fragments, as separate
//    processes would build them) over our 3-fragment dataset, committed together:
//    LanceDB sees one index of two parts and searches both; rows we delete later are
//    no longer returned;
//  - IVF_SQ (which LanceDB 0.39's Node API cannot create): the SQ storage of an
//    IVF_HNSW_SQ index with our flat sub-index, registered as IVF_SQ; LanceDB lists
//    it as IvfSq and finds the true neighbours.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/commit.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/ivf/storage_reader.hpp>
#include <lancet/index/ivf/storage_writer.hpp>
#include <lancet/index/kmeans/kmeans.hpp>
#include <lancet/index/registry.hpp>

#include "support/interop.hpp"
#include "support/neighbours.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

using lancet::testing::clustered;
using lancet::testing::lancedb_search;
using lancet::testing::neighbour_lists;
using lancet::testing::write_f32;

void check_same_results(const neighbour_lists& a, const neighbour_lists& b, double tol) {
  REQUIRE(a.ids.size() == b.ids.size());
  for (std::size_t q = 0; q < a.ids.size(); ++q) {
    INFO("query " << q);
    CHECK(a.ids[q] == b.ids[q]);
    REQUIRE(a.distances[q].size() == b.distances[q].size());
    for (std::size_t i = 0; i < a.distances[q].size(); ++i)
      CHECK(std::abs(a.distances[q][i] - b.distances[q][i]) <= tol * std::max(1.0, std::abs(b.distances[q][i])));
  }
}

// Lance scores 4-bit PQ codes with a u8-quantized table whose scale depends on the
// rows scanned first, so a new row order moves distances by a few percent (up to 2.5%
// seen): rows found by both agree within 5%, and at least 70% of the rows are found
// by both. (A wrong layout scores random codes and fails this by far.)
void check_close_results(const neighbour_lists& a, const neighbour_lists& b) {
  REQUIRE(a.ids.size() == b.ids.size());
  for (std::size_t q = 0; q < a.ids.size(); ++q) {
    INFO("query " << q);
    std::size_t common = 0;
    for (std::size_t i = 0; i < a.ids[q].size(); ++i)
      for (std::size_t j = 0; j < b.ids[q].size(); ++j)
        if (a.ids[q][i] == b.ids[q][j]) {
          ++common;
          CHECK(std::abs(a.distances[q][i] - b.distances[q][j]) <= 0.05 * std::max(1.0, std::abs(b.distances[q][j])));
        }
    CHECK(common * 10 >= b.ids[q].size() * 7);
  }
}

njson list_indices(const fs::path& ds) { return njson::parse(t::node("list_indices.mjs", {ds.string()})); }

std::string index_dir(const fs::path& ds, const pb::index_metadata& im) {
  return index::index_directory(ds.string(), im.uuid);
}

}  // namespace

TEST_CASE("LanceDB searches IVF_FLAT indexes we build and register") {
  const std::size_t n = 3000, dim = 32, k = 8, nq = 20;
  const auto vecs = clustered(n, dim, 16, 0.15f, 7);
  const auto queries = clustered(nq, dim, 16, 0.2f, 8);
  struct variant {
    std::string storage;
    simd::distance_type metric;
    std::string metric_name;
  };
  for (const auto& v : std::vector<variant>{{"2.0", simd::distance_type::l2, "l2"},
                                            {"2.0", simd::distance_type::cosine, "cosine"},
                                            {"2.0", simd::distance_type::dot, "dot"},
                                            {"2.1", simd::distance_type::dot, "dot"},
                                            {"2.2", simd::distance_type::l2, "l2"}}) {
    INFO("storage " << v.storage << ", " << v.metric_name);
    t::temp_dir tmp("ivf-flat");
    const auto ds = tmp.path() / "ds";
    write_f32(tmp.path() / "vectors.f32", vecs);
    write_f32(tmp.path() / "queries.f32", queries);
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--storage", v.storage, "--type", "none"});
    const auto base = *dataset::load_latest(ds.string());
    REQUIRE(base.manifest().fragments.size() == 1);
    const auto storage_version = dataset::manifest_storage_version(base.manifest());
    if (v.storage == "2.0") {
      // Our dataset reader sees the same vectors, at row addresses 0..n-1.
      auto d = dataset::dataset::open(ds.string());
      auto b = d.to_batch({.columns = {"vector"}, .with_row_address = true});
      REQUIRE(b.num_rows() == std::int64_t(n));
      const auto& col = *b.columns[0];
      CHECK(std::memcmp(col.children[0]->values<float>() + col.offset * dim, vecs.data(), n * dim * 4) == 0);
      CHECK(b.columns[1]->values<std::uint64_t>()[n - 1] == n - 1);
    }

    // Train, assign, group by partition; cosine stores normalised vectors (as Lance).
    index::kmeans_params kp;
    kp.distance = v.metric;
    kp.seed = 3;
    const auto km = index::train_kmeans(vecs.data(), n, dim, k, kp);
    std::vector<std::uint32_t> part(n);
    std::vector<float> stored = vecs;
    if (v.metric == simd::distance_type::cosine)
      for (std::size_t i = 0; i < n; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < dim; ++j) s += double(stored[i * dim + j]) * stored[i * dim + j];
        for (std::size_t j = 0; j < dim; ++j) stored[i * dim + j] = float(stored[i * dim + j] / std::sqrt(s));
      }
    std::vector<float> dist(n);
    index::assign_partitions(km, vecs.data(), n, part.data(), dist.data());
    auto ivf = index::ivf_model::from_kmeans(km);
    ivf.loss = 0;  // Lance records the assignment loss (l2: sum of squared distances)
    for (auto d : dist) *ivf.loss += d;
    const auto uuid = lancet::uuid::generate_v4();
    const index::flat_params flat{std::uint32_t(dim), index::element_type::f32};
    const auto files = index::write_index_directory(
        index::index_directory(ds.string(), uuid), storage_version, ivf, flat, v.metric,
        [&](auto& aux) {
          for (std::uint32_t p = 0; p < k; ++p) {
            std::vector<std::uint64_t> ids;
            std::vector<float> rows;
            for (std::size_t i = 0; i < n; ++i)
              if (part[i] == p) {
                ids.push_back(i);
                rows.insert(rows.end(), stored.begin() + std::ptrdiff_t(i * dim),
                            stored.begin() + std::ptrdiff_t((i + 1) * dim));
              }
            aux.write_partition({ids, bytes_view(reinterpret_cast<const std::uint8_t*>(rows.data()), rows.size() * 4)});
          }
        });
    index::index_spec spec;
    spec.column = "vector";
    spec.quantizer = flat;
    spec.distance = v.metric;
    auto meta = index::make_index_metadata(base.manifest(), spec, uuid, files);
    CHECK(meta.files == index::index_files_in(index::index_directory(ds.string(), uuid)));
    const auto after = index::commit_index(ds.string(), base, meta);
    CHECK(after.version() == base.version() + 1);
    REQUIRE(after.file.indices.size() == 1);
    CHECK(after.file.indices[0] == meta);
    const auto listed = index::list_indices(after);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].index_type == "IVF_FLAT");
    CHECK(listed[0].columns == std::vector<std::string>{"vector"});
    CHECK(listed[0].fragment_ids == std::vector<std::uint64_t>{0});
    CHECK(listed[0].distance == v.metric);

    // LanceDB's view.
    const auto li = list_indices(ds);
    REQUIRE(li["indices"].size() == 1);
    const auto& ix = li["indices"][0];
    CHECK(ix["name"] == "vector_idx");
    CHECK(ix["indexType"] == "IvfFlat");
    CHECK(ix["columns"] == njson::array({"vector"}));
    CHECK(ix["indexUuid"] == uuid.to_string());
    CHECK(ix["stats"]["numIndexedRows"] == n);
    CHECK(ix["stats"]["numUnindexedRows"] == 0);
    CHECK(ix["stats"]["indexType"] == "IVF_FLAT");
    CHECK(ix["stats"]["distanceType"] == v.metric_name);

    std::string plan;
    const auto ours = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10,
                                     {"--nprobes", std::to_string(k), "--metric", v.metric_name}, &plan);
    CHECK(plan.find("ANNIvfPartition: uuid=" + uuid.to_string()) != std::string::npos);
    const auto exact =
        lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass", "--metric", v.metric_name});
    REQUIRE(ours.ids.size() == nq);
    check_same_results(ours, exact, 1e-4);

    // A second index of the same name is refused unless replaced; the dataset keeps
    // its version.
    CHECK_THROWS_AS(index::commit_index(ds.string(), after, meta), invalid_input_error);
    // Another writer committed since `base`: conflict, nothing changes.
    CHECK_THROWS_AS(index::commit_index(ds.string(), base, meta), conflict_error);
    CHECK(dataset::load_latest(ds.string())->version() == after.version());
  }
}

TEST_CASE("LanceDB's quantized indexes written again by us (rows reversed) search the same") {
  const std::size_t n = 2000, dim = 32, nq = 15;
  const auto vecs = clustered(n, dim, 12, 0.2f, 21);
  const auto queries = clustered(nq, dim, 12, 0.25f, 22);
  struct variant {
    std::string type;
    std::vector<std::string> args;
    std::string lancedb_type;
  };
  for (const auto& v : std::vector<variant>{
           {"ivf_pq", {"--sub-vectors", "8"}, "IvfPq"},
           {"ivf_pq", {"--sub-vectors", "16", "--bits", "4", "--metric", "cosine"}, "IvfPq"},
           {"ivf_rq", {"--metric", "dot"}, "IvfRq"},
           {"ivf_rq", {"--bits", "2"}, "IvfRq"},
       }) {
    const bool four_bit = std::find(v.args.begin(), v.args.end(), "4") != v.args.end();
    const bool has_bits_2 = std::find(v.args.begin(), v.args.end(), "2") != v.args.end();
    std::string label = v.type;
    for (const auto& a : v.args) label += " " + a;
    INFO(label);
    t::temp_dir tmp("ivf-q");
    const auto ds = tmp.path() / "ds";
    write_f32(tmp.path() / "vectors.f32", vecs);
    write_f32(tmp.path() / "queries.f32", queries);
    std::vector<std::string> args = {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(),
                                     "--dim", std::to_string(dim), "--type", v.type, "--partitions", "6"};
    args.insert(args.end(), v.args.begin(), v.args.end());
    t::node("create_index.mjs", args);
    const auto base = *dataset::load_latest(ds.string());
    REQUIRE(base.file.indices.size() == 1);
    const auto& theirs = base.file.indices[0];
    const auto before = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", "3"});

    const std::string dir = index_dir(ds, theirs);
    auto reader = index::open_storage(dir + "/auxiliary.idx");
    const auto info = index::read_index_file(dir + "/index.idx");
    const auto uuid = lancet::uuid::generate_v4();
    const auto files = index::write_index_directory(
        index::index_directory(ds.string(), uuid), dataset::manifest_storage_version(base.manifest()), info.ivf,
        reader.quantizer(), reader.distance(), [&](auto& aux) {
          for (std::size_t p = 0; p < reader.num_partitions(); ++p) {
            const auto part = reader.read_partition(p);
            const std::size_t m = part.size(), w = index::code_bytes(reader.quantizer());
            // Row i of the new order is row from[i] of Lance's: reversed within each
            // block of 32 rows and within the rest (RaBitQ scores a full block with
            // a quantized table and the rest exactly, so rows keep their kind).
            // Multi-bit RQ keeps Lance's order: which rows LanceDB refines with their
            // extra bits can depend on the order they are scanned in (about 1 run in
            // 30 gave another neighbour for one query when reversed).
            const bool reorder = v.type != "ivf_rq" || !has_bits_2;
            std::vector<std::size_t> from(m);
            const std::size_t full = m / index::rabit_block_rows * index::rabit_block_rows;
            for (std::size_t i = 0; i < m; ++i) {
              const std::size_t b = i < full ? i / 32 * 32 : full, e = i < full ? b + 32 : m;
              from[i] = reorder ? b + (e - 1 - i) : i;
            }
            index::partition_contents rev;
            for (std::size_t i = 0; i < m; ++i) rev.row_ids.push_back(part.row_ids[from[i]]);
            rev.codes.resize(part.codes.size());
            for (std::size_t i = 0; i < m; ++i)
              std::memcpy(rev.codes.data() + i * w, part.codes.data() + from[i] * w, w);
            auto rev_f = [&](const std::vector<float>& f) {
              std::vector<float> out;
              for (std::size_t i = 0; i < f.size(); ++i) out.push_back(f[from[i]]);
              return out;
            };
            rev.add_factors = rev_f(part.add_factors);
            rev.scale_factors = rev_f(part.scale_factors);
            rev.error_factors = rev_f(part.error_factors);
            rev.add_factors_ex = rev_f(part.add_factors_ex);
            rev.scale_factors_ex = rev_f(part.scale_factors_ex);
            if (!part.ex_codes.empty()) {
              const std::size_t we = part.ex_codes.size() / m;
              rev.ex_codes.resize(part.ex_codes.size());
              for (std::size_t i = 0; i < m; ++i)
                std::memcpy(rev.ex_codes.data() + i * we, part.ex_codes.data() + from[i] * we, we);
            }
            aux.write_partition(rev.view());
          }
        });
    index::index_spec spec;
    spec.column = "vector";
    spec.name = theirs.name;
    spec.quantizer = reader.quantizer();
    spec.distance = reader.distance();
    auto meta = index::make_index_metadata(base.manifest(), spec, uuid, files);
    // Our details equal Lance's but for the order of the runtime hints.
    const auto ours_d = pb::unpack_any<pb::index::vector_index_details>(*meta.index_details);
    auto lance_d = pb::unpack_any<pb::index::vector_index_details>(*theirs.index_details);
    auto sorted = [](auto h) {
      std::sort(h.begin(), h.end());
      return h;
    };
    CHECK(ours_d.metric == lance_d.metric);
    CHECK(ours_d.compression == lance_d.compression);
    CHECK(sorted(ours_d.runtime_hints) == sorted(lance_d.runtime_hints));
    CHECK(meta.index_version == theirs.index_version);
    CHECK(meta.fragment_bitmap == theirs.fragment_bitmap);
    CHECK(meta.fields == theirs.fields);

    index::commit_index_options co;
    co.replace = true;
    const auto after = index::commit_index(ds.string(), base, meta, co);
    REQUIRE(after.file.indices.size() == 1);
    CHECK(after.file.indices[0].uuid == uuid);
    const auto txn = after.file.transaction;
    REQUIRE(txn);
    const auto* ci = std::get_if<pb::transaction::create_index>(&txn->operation);
    REQUIRE(ci);
    REQUIRE(ci->removed_indices.size() == 1);
    CHECK(ci->removed_indices[0].uuid == theirs.uuid);

    const auto li = list_indices(ds);
    REQUIRE(li["indices"].size() == 1);
    CHECK(li["indices"][0]["indexType"] == v.lancedb_type);
    CHECK(li["indices"][0]["indexUuid"] == uuid.to_string());
    CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
    std::string plan;
    const auto again = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", "3"}, &plan);
    CHECK(plan.find(uuid.to_string()) != std::string::npos);
    if (four_bit) check_close_results(again, before);
    else check_same_results(again, before, 1e-5);
  }
}

TEST_CASE("IVF_SQ: SQ storage with our flat sub-index, registered as IVF_SQ") {
  const std::size_t n = 2000, dim = 32, nq = 15;
  const auto vecs = clustered(n, dim, 12, 0.2f, 31);
  const auto queries = clustered(nq, dim, 12, 0.25f, 32);
  t::temp_dir tmp("ivf-sq");
  const auto ds = tmp.path() / "ds";
  write_f32(tmp.path() / "vectors.f32", vecs);
  write_f32(tmp.path() / "queries.f32", queries);
  t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                               std::to_string(dim), "--type", "hnsw_sq", "--partitions", "6"});
  const auto base = *dataset::load_latest(ds.string());
  const auto& theirs = base.file.indices.at(0);
  const std::string dir = index_dir(ds, theirs);
  auto reader = index::open_storage(dir + "/auxiliary.idx");
  const auto info = index::read_index_file(dir + "/index.idx");
  CHECK(info.index_type == "IVF_HNSW_SQ");
  CHECK(info.sub_index_key == "lance:hnsw");
  REQUIRE(info.ivf.centroids);
  const auto uuid = lancet::uuid::generate_v4();
  const auto files = index::write_index_directory(
      index::index_directory(ds.string(), uuid), file::format_version::v2_0, info.ivf, reader.quantizer(),
      reader.distance(), [&](auto& aux) {
        for (std::size_t p = 0; p < reader.num_partitions(); ++p) aux.write_partition(reader.read_partition(p).view());
      });
  index::index_spec spec;
  spec.column = "vector";
  spec.quantizer = reader.quantizer();
  auto meta = index::make_index_metadata(base.manifest(), spec, uuid, files);
  index::commit_index_options co;
  co.replace = true;
  index::commit_index(ds.string(), base, meta, co);

  const auto li = list_indices(ds);
  REQUIRE(li["indices"].size() == 1);
  CHECK(li["indices"][0]["indexType"] == "IvfSq");
  CHECK(li["indices"][0]["stats"]["indexType"] == "IVF_SQ");
  CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
  std::string plan;
  const auto ours = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", "6"}, &plan);
  CHECK(plan.find(uuid.to_string()) != std::string::npos);
  const auto exact = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass"});
  std::size_t hits = 0;
  for (std::size_t q = 0; q < nq; ++q) {
    std::set<std::uint64_t> truth(exact.ids[q].begin(), exact.ids[q].end());
    for (auto id : ours.ids[q]) hits += truth.count(id);
  }
  CHECK(double(hits) / double(nq * 10) >= 0.9);
}

TEST_CASE("an index in two segments over several fragments, then deletions") {
  const std::size_t n = 3000, dim = 32, k = 6, nq = 15;
  const auto vecs = clustered(n, dim, 12, 0.2f, 41);
  const auto queries = clustered(nq, dim, 12, 0.25f, 42);
  t::temp_dir tmp("ivf-seg");
  const auto ds = tmp.path() / "ds";
  write_f32(tmp.path() / "queries.f32", queries);
  {
    std::vector<std::int64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = std::int64_t(i);
    auto batch = arrow::make_batch({{"id", arrow::make_array(ids)},
                                    {"vector", arrow::make_fixed_size_list(arrow::make_array(vecs), std::int32_t(dim))}});
    dataset::write_options wo;
    wo.max_rows_per_file = 1000;
    dataset::write(ds.string(), std::span<const arrow::record_batch>(&batch, 1), wo);
  }
  const auto base = *dataset::load_latest(ds.string());
  REQUIRE(base.manifest().fragments.size() == 3);
  auto d = dataset::dataset::open(ds.string());
  auto b = d.to_batch({.columns = {"vector"}, .with_row_address = true});
  const auto* addr = b.columns[1]->values<std::uint64_t>();
  CHECK(addr[1500] == ((std::uint64_t(1) << 32) | 500));

  // Shared centroids; segment A holds fragments 0 and 1, segment B fragment 2.
  index::kmeans_params kp;
  kp.seed = 5;
  const auto km = index::train_kmeans(vecs.data(), n, dim, k, kp);
  std::vector<std::uint32_t> part(n);
  index::assign_partitions(km, vecs.data(), n, part.data());
  const index::flat_params flat{std::uint32_t(dim), index::element_type::f32};
  std::vector<pb::index_metadata> segments;
  for (const auto& frags : std::vector<std::vector<std::uint64_t>>{{0, 1}, {2}}) {
    const auto uuid = lancet::uuid::generate_v4();
    const auto files = index::write_index_directory(
        index::index_directory(ds.string(), uuid), dataset::manifest_storage_version(base.manifest()),
        index::ivf_model::from_kmeans(km), flat, simd::distance_type::l2, [&](auto& aux) {
          for (std::uint32_t p = 0; p < k; ++p) {
            std::vector<std::uint64_t> ids;
            std::vector<float> rows;
            for (std::size_t i = 0; i < n; ++i)
              if (part[i] == p && std::count(frags.begin(), frags.end(), addr[i] >> 32)) {
                ids.push_back(addr[i]);
                rows.insert(rows.end(), vecs.begin() + std::ptrdiff_t(i * dim), vecs.begin() + std::ptrdiff_t((i + 1) * dim));
              }
            aux.write_partition({ids, bytes_view(reinterpret_cast<const std::uint8_t*>(rows.data()), rows.size() * 4)});
          }
        });
    index::index_spec spec;
    spec.column = "vector";
    spec.quantizer = flat;
    spec.fragment_ids = frags;
    segments.push_back(index::make_index_metadata(base.manifest(), spec, uuid, files));
  }
  const auto after = index::commit_index(ds.string(), base, segments);
  const auto listed = index::list_indices(after);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].fragment_ids == std::vector<std::uint64_t>{0, 1});
  CHECK(listed[1].fragment_ids == std::vector<std::uint64_t>{2});

  const auto li = list_indices(ds);
  REQUIRE(li["indices"].size() == 1);
  CHECK(li["indices"][0]["name"] == "vector_idx");
  CHECK(li["indices"][0]["stats"]["numIndices"] == 2);
  CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
  CHECK(li["indices"][0]["stats"]["numUnindexedRows"] == 0);
  std::string plan;
  const auto ours = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", std::to_string(k)}, &plan);
  CHECK(plan.find("deltas=2") != std::string::npos);
  const auto exact = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass"});
  check_same_results(ours, exact, 1e-4);

  // Delete every row LanceDB found for the first three queries (both segments are hit).
  std::vector<std::uint64_t> doomed;
  for (std::size_t q = 0; q < 3; ++q) doomed.insert(doomed.end(), ours.ids[q].begin(), ours.ids[q].end());
  std::sort(doomed.begin(), doomed.end());
  doomed.erase(std::unique(doomed.begin(), doomed.end()), doomed.end());
  dataset::delete_rows(ds.string(), doomed);
  const auto again = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", std::to_string(k)});
  const auto exact_again = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass"});
  check_same_results(again, exact_again, 1e-4);
  for (std::size_t q = 0; q < 3; ++q)
    for (auto id : again.ids[q]) CHECK(!std::binary_search(doomed.begin(), doomed.end(), id));
  CHECK(list_indices(ds)["indices"][0]["stats"]["numIndexedRows"] == n - doomed.size());
}
