// index::build_ivf_index: IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ built from a dataset
// column, written as Lance 12 writes them and committed as a new version.
//  - unit: our datasets (f32 / f16 / f64 / uint8+hamming, nulls and NaN rows skipped),
//    index files read back (partitions cover every usable row once, row ids right,
//    flat storage equals the vectors), our search recall, bad input refused with the
//    dataset unchanged (version and files), conflicts, replace, progress stages;
//  - interop (LanceDB 0.39 as the oracle, `npm install` in tests/interop first): on a
//    20000 x 32 clustered dataset LanceDB created, for each type we build an index,
//    LanceDB lists it (type, column, rows), plans its vectorSearch through it, and its
//    recall@10 (nprobes 8 of 16 partitions) is within 0.05 of the recall of the index
//    LanceDB builds itself with the same parameters; for IVF_FLAT our own search over
//    our index returns LanceDB's neighbours exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/ivf_builder.hpp>

#include "support/interop.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using njson = nlohmann::json;

namespace {

std::vector<float> clustered(std::size_t n, std::size_t dim, std::size_t clusters, float spread, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, spread);
  std::vector<float> centres(clusters * dim);
  for (auto& c : centres) c = u(rng);
  std::vector<float> out(n * dim);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % clusters;
    for (std::size_t j = 0; j < dim; ++j) out[i * dim + j] = centres[c * dim + j] + g(rng);
  }
  return out;
}

template <class T>
arrow::record_batch vector_batch(const std::vector<T>& values, std::size_t dim, arrow::type_ptr item,
                                 const std::vector<bool>& nulls = {}) {
  const std::size_t n = values.size() / dim;
  arrow::field vf("vector", arrow::fixed_size_list(item, std::int32_t(dim)), true);
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = std::int64_t(i);
  auto idcol = index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(ids)), n);
  auto vcol = std::const_pointer_cast<arrow::array_data>(
      index::detail::fsl_array(vf, index::detail::copy_span(std::span<const T>(values)), n));
  if (!nulls.empty()) {
    aligned_buffer bits;
    bits.resize((n + 7) / 8);
    std::memset(bits.data(), 0, bits.size());
    std::int64_t nn = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!nulls[i]) bits.data()[i / 8] |= std::uint8_t(1u << (i % 8));
      else ++nn;
    }
    vcol->buffers[0] = shared_bytes(std::move(bits));
    vcol->null_count = nn;
  }
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(
      arrow::schema{{arrow::field("id", arrow::int64(), false), vf}, {}});
  b.columns = {idcol, vcol};
  return b;
}

std::vector<std::string> dir_listing(const fs::path& p) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(p)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Recall@k of `got` against `truth` (row ids), averaged over queries.
double recall(const std::vector<std::vector<std::uint64_t>>& got, const std::vector<std::vector<std::uint64_t>>& truth) {
  double s = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    std::set<std::uint64_t> tr(truth[q].begin(), truth[q].end());
    std::size_t hit = 0;
    for (auto id : got[q]) hit += tr.count(id);
    s += double(hit) / double(truth[q].size());
  }
  return s / double(truth.size());
}

std::vector<std::vector<std::uint64_t>> our_search(const std::string& root, const std::vector<float>& queries,
                                                   std::size_t dim, std::size_t k, std::size_t nprobes) {
  const auto s = *dataset::load_latest(root);
  auto ix = index::open_vector_index(s, "vector");
  std::vector<std::vector<std::uint64_t>> out;
  index::search_params sp;
  sp.k = k;
  sp.nprobes = nprobes;
  for (std::size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<std::uint64_t> ids;
    for (const auto& h : ix.searcher->search(queries.data() + q * dim, dim, sp)) ids.push_back(h.row_id);
    out.push_back(ids);
  }
  return out;
}

}  // namespace

TEST_CASE("build_ivf_index: every type over f32, files and search") {
  const std::size_t n = 3000, dim = 16, nq = 30;
  const auto vecs = clustered(n, dim, 12, 0.1f, 1);
  const auto queries = clustered(nq, dim, 12, 0.12f, 2);
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq,
                    index::ivf_index_type::ivf_rq}) {
    for (auto metric : {simd::distance_type::l2, simd::distance_type::cosine, simd::distance_type::dot}) {
      const std::string label =
          std::string(index::ivf_index_type_name(type)) + " " + std::string(simd::distance_name(metric));
      INFO(label);
      t::temp_dir tmp("ivfb");
      const std::string root = (tmp.path() / "ds").string();
      dataset::write(root, vector_batch(vecs, dim, arrow::float32()));
      index::build_options o;
      o.column = "vector";
      o.type = type;
      o.num_partitions = 8;
      o.metric = metric;
      if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 8;
      std::vector<index::build_stage> stages;
      o.on_progress = [&](const index::build_progress& p) {
        if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
      };
      const auto r = index::build_ivf_index(root, o);
      CHECK(r.version == 2);
      CHECK(r.num_partitions == 8);
      CHECK(r.rows_indexed == n);
      CHECK(stages == std::vector<index::build_stage>{index::build_stage::train_ivf, index::build_stage::train_quantizer,
                                                      index::build_stage::shuffle,
                                                      index::build_stage::merge_partitions});
      const auto s = *dataset::load_latest(root);
      REQUIRE(s.version() == 2);
      const auto li = index::list_indices(s);
      REQUIRE(li.size() == 1);
      CHECK(li[0].name == "vector_idx");
      CHECK(li[0].columns == std::vector<std::string>{"vector"});
      CHECK(li[0].index_type == std::string(index::ivf_index_type_name(type)));
      CHECK(li[0].distance == metric);
      CHECK(li[0].files == index::index_files_in(r.directory));

      auto ix = index::open_vector_index(s, "vector");
      CHECK(ix.index_file.index_type == std::string(index::ivf_index_type_name(type)));
      CHECK(ix.index_file.distance == metric);
      REQUIRE(ix.storage->num_partitions() == 8);
      std::set<std::uint64_t> seen;
      for (std::size_t p = 0; p < 8; ++p) {
        const auto c = ix.storage->read_partition(p);
        for (std::size_t j = 0; j < c.size(); ++j) {
          CHECK(seen.insert(c.row_ids[j]).second);
          if (type == index::ivf_index_type::ivf_flat && metric != simd::distance_type::cosine)
            CHECK(std::memcmp(c.codes.data() + j * dim * 4, vecs.data() + c.row_ids[j] * dim, dim * 4) == 0);
        }
      }
      CHECK(seen.size() == n);
      CHECK(*seen.rbegin() == n - 1);

      // Our search over the index against brute force (floors well above chance,
      // which is ~0 here; 16-dimensional 1-bit RaBitQ is coarse).
      std::vector<std::vector<std::uint64_t>> truth;
      for (std::size_t q = 0; q < nq; ++q) {
        std::vector<std::uint64_t> ids;
        for (const auto& h : index::brute_force(metric, queries.data() + q * dim, vecs.data(), n, dim, 10))
          ids.push_back(h.row_id);
        truth.push_back(ids);
      }
      const double rc = recall(our_search(root, queries, dim, 10, 8), truth);
      MESSAGE(label << " recall@10 " << rc);
      const double floor = type == index::ivf_index_type::ivf_flat  ? 0.999
                           : type == index::ivf_index_type::ivf_rq ? 0.1
                                                                   : 0.5;
      CHECK(rc >= floor);
    }
  }
}

TEST_CASE("build_ivf_index: f16, f64, uint8 with hamming; null and non-finite rows skipped") {
  const std::size_t n = 1000, dim = 16;
  auto vecs = clustered(n, dim, 6, 0.1f, 3);
  std::vector<bool> nulls(n, false);
  nulls[5] = nulls[17] = true;
  vecs[40 * dim + 3] = std::nanf("");
  vecs[41 * dim] = INFINITY;
  SUBCASE("f16 PQ") {
    std::vector<simd::f16> h(vecs.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = simd::f16(vecs[i]);
    t::temp_dir tmp("ivfb16");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(h, dim, arrow::float16(), nulls));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_pq;
    o.num_partitions = 4;
    o.num_sub_vectors = 4;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n - 4);
    CHECK(r.rows_skipped == 4);
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.index_file.ivf.centroids->type == index::element_type::f16);
    CHECK(std::get<index::pq_params>(ix.storage->quantizer()).codebook.type == index::element_type::f16);
    std::set<std::uint64_t> seen;
    for (std::size_t p = 0; p < 4; ++p)
      for (auto id : ix.storage->read_partition(p).row_ids) seen.insert(id);
    CHECK(seen.size() == n - 4);
    for (auto bad : {5, 17, 40, 41}) CHECK(seen.count(std::uint64_t(bad)) == 0);
  }
  SUBCASE("f64 SQ") {
    std::vector<double> d(vecs.begin(), vecs.end());
    t::temp_dir tmp("ivfb64");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(d, dim, arrow::float64(), nulls));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_sq;
    o.num_partitions = 4;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n - 4);
  }
  SUBCASE("uint8 hamming flat") {
    std::vector<std::uint8_t> b(n * 8);
    std::mt19937 rng(4);
    for (auto& x : b) x = std::uint8_t(rng());
    t::temp_dir tmp("ivfbu8");
    const std::string root = (tmp.path() / "ds").string();
    dataset::write(root, vector_batch(b, 8, arrow::uint8()));
    index::build_options o;
    o.column = "vector";
    o.type = index::ivf_index_type::ivf_flat;
    o.num_partitions = 4;
    o.metric = simd::distance_type::hamming;
    const auto r = index::build_ivf_index(root, o);
    CHECK(r.rows_indexed == n);
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    CHECK(ix.index_file.distance == simd::distance_type::hamming);
    index::search_params sp;
    sp.k = 1;
    sp.nprobes = 4;
    const auto hits = ix.searcher->search(b.data() + 123 * 8, 8, sp);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].row_id == 123);
    CHECK(hits[0].distance == 0);
    o.type = index::ivf_index_type::ivf_pq;
    o.name = "pq";
    CHECK_THROWS_AS(index::build_ivf_index(root, o), invalid_input_error);
  }
}

TEST_CASE("build_ivf_index: bad input leaves the dataset unchanged") {
  const std::size_t n = 500, dim = 12;
  const auto vecs = clustered(n, dim, 4, 0.1f, 5);
  t::temp_dir tmp("ivfbbad");
  const std::string root = (tmp.path() / "ds").string();
  dataset::write(root, vector_batch(vecs, dim, arrow::float32()));
  const auto before = dir_listing(root);
  index::build_options o;
  o.column = "vector";
  o.type = index::ivf_index_type::ivf_pq;
  o.num_partitions = 4;
  auto refused = [&](index::build_options x, const std::string& text) {
    INFO(text);
    try {
      index::build_ivf_index(root, x);
      FAIL("no error");
    } catch (const invalid_input_error& e) {
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
    CHECK(dir_listing(root) == before);
  };
  auto x = o;
  x.column = "id";
  refused(x, "not a fixed-size list");
  x.column = "nope";
  refused(x, "no column 'nope'");
  x = o;
  x.num_sub_vectors = 5;
  refused(x, "does not divide dimension 12");
  x = o;
  x.num_partitions = 501;
  refused(x, "cannot build 501 partitions from 500");
  x = o;
  x.type = index::ivf_index_type::ivf_rq;
  refused(x, "not a multiple of 8");
  x = o;
  x.metric = simd::distance_type::hamming;
  refused(x, "hamming distance needs a column of uint8");

  // A name that exists: refused unless replace.
  o.num_sub_vectors = 4;
  const auto r1 = index::build_ivf_index(root, o);
  CHECK(r1.version == 2);
  const auto after1 = dir_listing(root);
  try {
    index::build_ivf_index(root, o);
    FAIL("no error");
  } catch (const invalid_input_error& e) {
    CHECK(std::string(e.what()).find("already has an index named 'vector_idx'") != std::string::npos);
  }
  CHECK(dir_listing(root) == after1);
  o.replace = true;
  o.type = index::ivf_index_type::ivf_flat;
  o.num_sub_vectors.reset();
  const auto r2 = index::build_ivf_index(root, o);
  CHECK(r2.version == 3);
  const auto li = index::list_indices(*dataset::load_latest(root));
  REQUIRE(li.size() == 1);
  CHECK(li[0].index_type == "IVF_FLAT");

  // The dataset changes while the index is built: conflict, nothing committed, no
  // index directory left behind.
  const auto before_conflict = dir_listing(root);
  o.name = "other";
  o.replace = false;
  bool appended = false;
  o.on_progress = [&](const index::build_progress& p) {
    if (p.stage == index::build_stage::shuffle && !appended) {
      appended = true;
      dataset::write_options wo;
      wo.mode = dataset::write_mode::append;
      dataset::write(root, vector_batch(vecs, dim, arrow::float32()), wo);
    }
  };
  CHECK_THROWS_AS(index::build_ivf_index(root, o), conflict_error);
  const auto s = *dataset::load_latest(root);
  CHECK(s.version() == 4);  // the append only
  CHECK(index::list_indices(s).size() == 1);
  std::size_t dirs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "_indices")) dirs += e.is_directory();
  CHECK(dirs == 2);  // the replaced index's directory and the replacement's
}

TEST_CASE("build_ivf_index: default partitions follow Lance's target partition sizes") {
  CHECK(index::recommended_num_partitions(100000, index::default_target_partition_size(index::ivf_index_type::ivf_flat)) == 24);
  CHECK(index::recommended_num_partitions(100000, index::default_target_partition_size(index::ivf_index_type::ivf_pq)) == 12);
  CHECK(index::recommended_num_partitions(100, 8192) == 1);
  CHECK(index::recommended_num_partitions(1ull << 40, 8192) == 4096);
  CHECK(index::parse_ivf_index_type("IVF_PQ") == index::ivf_index_type::ivf_pq);
  CHECK_THROWS_AS(index::parse_ivf_index_type("hnsw"), invalid_input_error);
}

namespace {

void write_f32(const fs::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

struct lance_hits {
  std::vector<std::vector<std::uint64_t>> ids;
  std::vector<std::vector<double>> distances;
};

lance_hits lancedb_search(const fs::path& ds, const fs::path& queries, std::size_t dim, std::size_t k,
                          std::vector<std::string> extra, std::string* plan = nullptr) {
  std::vector<std::string> args = {ds.string(), "--queries", queries.string(), "--dim", std::to_string(dim), "--k",
                                   std::to_string(k)};
  args.insert(args.end(), extra.begin(), extra.end());
  if (plan) args.push_back("--explain");
  std::istringstream lines(t::node("search.mjs", args));
  lance_hits out;
  for (std::string line; std::getline(lines, line);) {
    const auto j = njson::parse(line);
    if (j.contains("plan")) {
      if (plan) *plan = j["plan"].get<std::string>();
      continue;
    }
    std::vector<std::uint64_t> ids;
    std::vector<double> ds_;
    for (const auto& id : j["rowids"]) ids.push_back(std::stoull(id.get<std::string>()));
    for (const auto& d : j["distances"]) ds_.push_back(d.get<double>());
    out.ids.push_back(ids);
    out.distances.push_back(ds_);
  }
  return out;
}

}  // namespace

TEST_CASE("interop: LanceDB lists and searches the indexes we build, recall like its own") {
  const std::size_t n = 20000, dim = 32, nq = 100, parts = 16, nprobes = 4;
  const auto vecs = clustered(n, dim, 24, 0.25f, 11);
  const auto queries = clustered(nq, dim, 24, 0.3f, 12);
  t::temp_dir tmp("ivfb-interop");
  write_f32(tmp.path() / "vectors.f32", vecs);
  write_f32(tmp.path() / "queries.f32", queries);
  const auto qf = tmp.path() / "queries.f32";

  struct variant {
    index::ivf_index_type type;
    std::string lancedb_type;  // "" : LanceDB 0.39's Node API cannot build it
    std::vector<std::string> lancedb_args;
    std::string list_type, stats_type;
  };
  const std::vector<variant> variants = {
      {index::ivf_index_type::ivf_flat, "ivf_flat", {}, "IvfFlat", "IVF_FLAT"},
      {index::ivf_index_type::ivf_pq, "ivf_pq", {"--sub-vectors", "8"}, "IvfPq", "IVF_PQ"},
      {index::ivf_index_type::ivf_sq, "", {}, "IvfSq", "IVF_SQ"},
      {index::ivf_index_type::ivf_rq, "ivf_rq", {"--bits", "1"}, "IvfRq", "IVF_RQ"},
  };
  std::optional<lance_hits> exact;
  for (const auto& v : variants) {
    const std::string name(index::ivf_index_type_name(v.type));
    INFO(name);
    const auto ds = tmp.path() / ("ours-" + name);
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--type", "none"});
    if (!exact) exact = lancedb_search(ds, qf, dim, 10, {"--bypass"});
    index::build_options o;
    o.column = "vector";
    o.type = v.type;
    o.num_partitions = parts;
    if (v.type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 8;
    const auto r = index::build_ivf_index(ds.string(), o);

    const auto li = njson::parse(t::node("list_indices.mjs", {ds.string()}));
    REQUIRE(li["indices"].size() == 1);
    const auto& ix = li["indices"][0];
    CHECK(ix["name"] == "vector_idx");
    CHECK(ix["indexType"] == v.list_type);
    CHECK(ix["columns"] == njson::array({"vector"}));
    CHECK(ix["indexUuid"] == r.index.uuid.to_string());
    CHECK(ix["stats"]["numIndexedRows"] == n);
    CHECK(ix["stats"]["numUnindexedRows"] == 0);
    CHECK(ix["stats"]["indexType"] == v.stats_type);
    CHECK(ix["stats"]["distanceType"] == "l2");

    std::string plan;
    const auto lance_on_ours =
        lancedb_search(ds, qf, dim, 10, {"--nprobes", std::to_string(nprobes)}, &plan);
    CHECK(plan.find("ANNIvfPartition: uuid=" + r.index.uuid.to_string()) != std::string::npos);
    REQUIRE(lance_on_ours.ids.size() == nq);
    const double rc_ours = recall(lance_on_ours.ids, exact->ids);
    const auto our_hits = our_search(ds.string(), queries, dim, 10, nprobes);
    const double rc_self = recall(our_hits, exact->ids);

    if (v.type == index::ivf_index_type::ivf_flat) {
      // Our search over our index: LanceDB's neighbours exactly.
      for (std::size_t q = 0; q < nq; ++q) {
        INFO("query " << q);
        CHECK(our_hits[q] == lance_on_ours.ids[q]);
      }
    }

    if (v.lancedb_type.empty()) {
      // No LanceDB-built IVF_SQ to compare with: LanceDB's search over ours must agree
      // with our own search's recall, and be high (8-bit SQ is nearly exact here).
      MESSAGE(name << ": LanceDB on ours " << rc_ours << ", ours on ours " << rc_self);
      CHECK(std::abs(rc_ours - rc_self) <= 0.05);
      CHECK(rc_ours >= 0.8);
      continue;
    }
    const auto theirs = tmp.path() / ("lancedb-" + name);
    std::vector<std::string> args = {theirs.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(),
                                     "--dim", std::to_string(dim), "--type", v.lancedb_type, "--partitions",
                                     std::to_string(parts)};
    args.insert(args.end(), v.lancedb_args.begin(), v.lancedb_args.end());
    t::node("create_index.mjs", args);
    const auto lance_on_theirs = lancedb_search(theirs, qf, dim, 10, {"--nprobes", std::to_string(nprobes)});
    const double rc_theirs = recall(lance_on_theirs.ids, exact->ids);
    MESSAGE(name << " recall@10 (nprobes " << nprobes << " of " << parts << "): LanceDB on ours " << rc_ours
                 << ", LanceDB on its own " << rc_theirs << ", ours on ours " << rc_self);
    // Tolerance of this quick test: 0.05 (100 queries; both k-means are randomised).
    CHECK(rc_ours >= rc_theirs - 0.05);
    CHECK(std::abs(rc_self - rc_ours) <= 0.05);
  }
}

TEST_CASE("interop: f16 vectors, every type listed by LanceDB; IVF_FLAT searched exactly") {
  const std::size_t n = 2000, dim = 16, nq = 10, parts = 4;
  const auto vecs = clustered(n, dim, 8, 0.2f, 31);
  const auto queries = clustered(nq, dim, 8, 0.25f, 32);
  t::temp_dir tmp("ivfb-f16");
  write_f32(tmp.path() / "vectors.f32", vecs);
  write_f32(tmp.path() / "queries.f32", queries);
  for (auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_sq, index::ivf_index_type::ivf_rq,
                    index::ivf_index_type::ivf_flat}) {
    const std::string name(index::ivf_index_type_name(type));
    INFO(name);
    const auto ds = tmp.path() / ("ds-" + name);
    t::node("create_index.mjs", {ds.string(), "--create", "--vectors", (tmp.path() / "vectors.f32").string(), "--dim",
                                 std::to_string(dim), "--element", "float16", "--type", "none"});
    index::build_options o;
    o.column = "vector";
    o.type = type;
    o.num_partitions = parts;
    if (type == index::ivf_index_type::ivf_pq) o.num_sub_vectors = 4;
    const auto r = index::build_ivf_index(ds.string(), o);
    const auto li = njson::parse(t::node("list_indices.mjs", {ds.string()}));
    REQUIRE(li["indices"].size() == 1);
    CHECK(li["indices"][0]["indexUuid"] == r.index.uuid.to_string());
    CHECK(li["indices"][0]["stats"]["numIndexedRows"] == n);
    CHECK(li["indices"][0]["stats"]["indexType"] == name);
    std::string plan;
    const auto lance = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--nprobes", std::to_string(parts)},
                                      &plan);
    CHECK(plan.find("ANNIvfPartition: uuid=" + r.index.uuid.to_string()) != std::string::npos);
    REQUIRE(lance.ids.size() == nq);
    if (type == index::ivf_index_type::ivf_flat) {
      // Every partition probed: LanceDB's exact neighbours, and ours.
      const auto exact = lancedb_search(ds, tmp.path() / "queries.f32", dim, 10, {"--bypass"});
      const auto ours = our_search(ds.string(), queries, dim, 10, parts);
      for (std::size_t q = 0; q < nq; ++q) {
        INFO("query " << q);
        CHECK(lance.ids[q] == exact.ids[q]);
        CHECK(ours[q] == lance.ids[q]);
      }
    }
  }
}
