// Compaction and index remapping with LanceDB 0.39 as the oracle (tests/interop/
// compact_check.mjs; `npm install` in tests/interop first):
//  - ours compacts a dataset we wrote (6 small fragments, rows deleted after our
//    IVF_FLAT / IVF_PQ index was built): LanceDB reads the same rows, lists the
//    remapped index (new uuid) with every live row indexed, plans through it, and its
//    vectorSearch returns the same rows (by id value) as before; our search agrees;
//  - ours compacts a dataset LanceDB wrote with LanceDB's own IVF_PQ index: LanceDB
//    searches the remapped index and finds the same rows as before;
//  - LanceDB's optimize() (compaction + index optimisation) on a dataset carrying our
//    index: we read the same rows back and our search finds LanceDB's neighbours.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/interop.hpp"
#include "support/neighbours.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

using lancet::testing::write_f32;

constexpr std::size_t compact_dim = 16;

// 8 clusters, spread 0.15: the data both compaction cases index.
std::vector<float> compact_vectors(std::size_t n, unsigned seed) { return t::clustered(n, compact_dim, 8, 0.15f, seed); }

// Queries near some rows of the data.
std::vector<float> queries_from(const std::vector<float>& data, std::size_t nq) {
  std::vector<float> q;
  const std::size_t rows = data.size() / compact_dim;
  for (std::size_t i = 0; i < nq; ++i) {
    const std::size_t r = (i * 397 + 11) % rows;
    for (std::size_t j = 0; j < compact_dim; ++j) q.push_back(data[r * compact_dim + j] + 0.01f * float(j % 3));
  }
  return q;
}

njson info(const fs::path& ds) { return njson::parse(t::node("compact_check.mjs", {"info", ds.string()})); }

// LanceDB's results (id values), one list per query, sorted (row order may differ
// between equal distances once addresses change). `plan` gets the explain output.
std::vector<std::vector<std::int64_t>> lancedb_id_values(const fs::path& ds, const fs::path& queries, std::size_t k,
                                                         std::size_t nprobes, std::string* plan = nullptr) {
  std::vector<std::string> args{"search", ds.string(), "--queries", queries.string(), "--dim",
                                std::to_string(compact_dim), "--k", std::to_string(k), "--nprobes", std::to_string(nprobes)};
  if (plan) args.push_back("--explain");
  std::istringstream in(t::node("compact_check.mjs", args));
  std::vector<std::vector<std::int64_t>> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = njson::parse(line);
    if (j.contains("plan")) {
      if (plan) *plan = j["plan"].get<std::string>();
      continue;
    }
    auto ids = j["ids"].get<std::vector<std::int64_t>>();
    std::sort(ids.begin(), ids.end());
    out.push_back(ids);
  }
  return out;
}

// Our search over the dataset's newest version, as sorted id values.
std::vector<std::vector<std::int64_t>> our_id_values(const fs::path& ds, const std::vector<float>& queries, std::size_t k,
                                                     std::size_t nprobes) {
  const auto d = dataset::dataset::open(ds.string());
  // deleted rows the index still holds are skipped below
  const auto hits = t::our_search(ds, queries, compact_dim, 2 * k, nprobes);
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& found : hits.ids) {
    std::vector<std::uint64_t> addrs;
    for (const auto a : found)
      if (addrs.size() < k && !d.deleted_rows(a >> 32).contains(a & 0xFFFFFFFFull)) addrs.push_back(a);
    auto b = d.take_addresses(addrs, {"id"});
    const auto* v = b.columns[0]->values<std::int64_t>();
    std::vector<std::int64_t> ids(v, v + b.columns[0]->length);
    std::sort(ids.begin(), ids.end());
    out.push_back(ids);
  }
  return out;
}

// Our dataset: 6 fragments of 400 rows, an index of `type`, then ids % 5 == 0 deleted.
std::vector<float> make_ours(const fs::path& ds, index::ivf_index_type type, index::build_result* built = nullptr) {
  const auto data = compact_vectors(2400, 7);
  dataset::write_options wo;
  wo.max_rows_per_file = 400;
  dataset::write(ds.string(), t::id_vector_batch(data, compact_dim, 0), wo);
  index::build_options bo;
  bo.column = "vector";
  bo.type = type;
  bo.num_partitions = 4;
  if (type == index::ivf_index_type::ivf_pq) bo.num_sub_vectors = 4;
  auto r = index::build_ivf_index(ds.string(), bo);
  if (built) *built = r;
  std::vector<std::uint64_t> del;
  for (std::uint64_t i = 0; i < 2400; i += 5) del.push_back(dataset::row_address(i / 400, i % 400));
  dataset::delete_rows(ds.string(), del);
  return data;
}

}  // namespace

TEST_CASE("interop: LanceDB reads and searches a dataset compacted by lancet (our index remapped)") {
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq}) {
    CAPTURE(index::ivf_index_type_name(type));
    t::temp_dir tmp("compact-ours");
    const auto ds = tmp.path() / "ds";
    index::build_result built;
    const auto data = make_ours(ds, type, &built);
    const auto qfile = tmp.path() / "q.f32";
    const auto queries = queries_from(data, 6);
    write_f32(qfile, queries);

    const auto info0 = info(ds);
    REQUIRE(info0["countRows"] == 1920);
    const auto before = lancedb_id_values(ds, qfile, 10, 4);
    const auto ours_before = our_id_values(ds, queries, 10, 4);
    REQUIRE(before.size() == 6);
    for (const auto& b : before) {
      CHECK(b.size() == 10);
      for (auto id : b) CHECK(id % 5 != 0);  // deleted rows are not found
    }

    const auto r = dataset::compact_files(ds.string(), {.remap_indexes = lancet::index::compaction_remapper()});
    CHECK(r.metrics.fragments_removed == 6);
    CHECK(r.metrics.fragments_added == 1);
    CHECK(r.metrics.files_removed == 12);  // 6 data files + 6 deletion files
    CHECK(r.metrics.files_added == 1);
    REQUIRE(r.indices.size() == 1);
    CHECK(r.indices[0].stats.rows_after == 1920);

    const auto info1 = info(ds);
    CHECK(info1["version"] == r.version);
    CHECK(info1["countRows"] == 1920);
    CHECK(info1["ids"] == info0["ids"]);
    REQUIRE(info1["indices"].size() == 1);
    const auto& ix = info1["indices"][0];
    CHECK(ix["name"] == "vector_idx");
    CHECK(ix["indexUuid"] == r.indices[0].new_uuid.to_string());
    CHECK(ix["indexUuid"] != built.index.uuid.to_string());
    CHECK(ix["stats"]["numIndexedRows"] == 1920);
    CHECK(ix["stats"]["numUnindexedRows"] == 0);

    std::string plan;
    const auto after = lancedb_id_values(ds, qfile, 10, 4, &plan);
    CHECK(plan.find("ANNIvfPartition") != std::string::npos);
    CHECK(plan.find(r.indices[0].new_uuid.to_string()) != std::string::npos);
    CHECK(after == before);
    CHECK(our_id_values(ds, queries, 10, 4) == ours_before);
    if (type == index::ivf_index_type::ivf_flat) CHECK(ours_before == before);  // exact within the probed partitions
  }
}

TEST_CASE("interop: lancet compacts a LanceDB dataset and remaps LanceDB's IVF_PQ index") {
  t::temp_dir tmp("compact-lancedb");
  const auto ds = tmp.path() / "ds";
  const auto data = compact_vectors(2000, 11);
  const auto vfile = tmp.path() / "v.f32";
  write_f32(vfile, data);
  const auto qfile = tmp.path() / "q.f32";
  write_f32(qfile, queries_from(data, 5));
  t::node("compact_check.mjs", {"create", ds.string(), "--vectors", vfile.string(), "--dim", std::to_string(compact_dim),
                                "--fragments", "5", "--partitions", "4", "--sub-vectors", "4", "--delete-mod", "5"});
  const auto info0 = info(ds);
  REQUIRE(info0["countRows"] == 1600);
  const auto before = lancedb_id_values(ds, qfile, 10, 4);
  REQUIRE(before.size() == 5);
  for (const auto& b : before) CHECK(b.size() == 10);

  const auto r = dataset::compact_files(ds.string(), {.remap_indexes = lancet::index::compaction_remapper()});
  CHECK(r.metrics.fragments_removed == 5);
  CHECK(r.metrics.fragments_added == 1);
  REQUIRE(r.indices.size() == 1);
  CHECK(r.indices[0].stats.rows_before == 2000);
  CHECK(r.indices[0].stats.rows_dropped == 400);
  CHECK(r.indices[0].stats.rows_after == 1600);

  const auto info1 = info(ds);
  CHECK(info1["countRows"] == 1600);
  CHECK(info1["ids"] == info0["ids"]);
  REQUIRE(info1["indices"].size() == 1);
  CHECK(info1["indices"][0]["indexUuid"] == r.indices[0].new_uuid.to_string());
  CHECK(info1["indices"][0]["stats"]["numIndexedRows"] == 1600);
  CHECK(info1["indices"][0]["stats"]["numUnindexedRows"] == 0);
  CHECK(lancedb_id_values(ds, qfile, 10, 4) == before);
}

TEST_CASE("interop: LanceDB's optimize() on a dataset carrying our index; we read and search the result") {
  t::temp_dir tmp("compact-lancedb-optimize");
  const auto ds = tmp.path() / "ds";
  const auto data = make_ours(ds, index::ivf_index_type::ivf_flat);
  const auto qfile = tmp.path() / "q.f32";
  const auto queries = queries_from(data, 6);
  write_f32(qfile, queries);
  const auto info0 = info(ds);
  const auto before = lancedb_id_values(ds, qfile, 10, 4);

  const auto opt = njson::parse(t::node("compact_check.mjs", {"optimize", ds.string()}));
  CHECK(opt["compaction"]["fragmentsRemoved"] == 6);
  CHECK(opt["compaction"]["fragmentsAdded"] == 1);
  CHECK(opt["countRows"] == 1920);

  const auto d = dataset::dataset::open(ds.string());
  CHECK(d.version() == opt["version"].get<std::uint64_t>());
  CHECK(d.count_rows() == 1920);
  REQUIRE(d.fragments().size() == 1);
  CHECK(d.fragments()[0].deleted_rows == 0);
  auto ids = d.to_batch({.columns = {"id"}});
  std::vector<std::int64_t> got(ids.columns[0]->values<std::int64_t>(),
                                ids.columns[0]->values<std::int64_t>() + ids.columns[0]->length);
  std::sort(got.begin(), got.end());
  CHECK(njson(got) == info0["ids"]);
  const auto snap = *dataset::load_latest(ds.string());
  auto ix = index::open_vector_index(snap, "vector");
  std::uint64_t entries = 0;
  for (auto n : ix.storage->ivf().lengths) entries += n;
  CHECK(entries == 1920);
  // Every partition probed: exact neighbours, the same as LanceDB's before.
  CHECK(our_id_values(ds, queries, 10, ix.storage->num_partitions()) == before);

  // Already compact: ours does nothing.
  const auto r = dataset::compact_files(ds.string(), {.remap_indexes = lancet::index::compaction_remapper()});
  CHECK(r.version == d.version());
  CHECK(r.metrics.fragments_removed == 0);
}
