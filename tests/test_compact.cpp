// dataset::compact_files and index::remap_index_files (unit, small data):
//  - plan: Lance's candidacy (small fragments with neighbours, >10% deleted alone,
//    large ones left), bins split by index coverage and cut by target size;
//  - compaction: deleted rows dropped, values and order preserved, the old -> new
//    address map (deleted rows -> none), metrics, ReserveFragments + Rewrite commits,
//    nothing to do -> no version; stable row ids keep their ids and versions;
//  - remap: an IVF_FLAT / IVF_PQ index built before deletions is remapped under a new
//    uuid in the Rewrite commit: rows right, deleted rows gone, centroids unchanged,
//    search finds the same rows by value; bad input and unremappable indexes refused
//    with the dataset unchanged.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/search/vector_index.hpp>
#include "support/dataset_writes.hpp"
#include "support/failing_sink.hpp"
#include "support/files.hpp"
#include "support/stored_index.hpp"
#include "support/temp_dir.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;

namespace {

using lancet::testing::delete_where;
using lancet::testing::files_under;
using lancet::testing::stored_index;
using lancet::testing::three_cluster_dim;
using lancet::testing::three_cluster_rows;

// A scratch directory (removed at the end of the scope) whose path is a member.
struct tmp_dir : lancet::testing::scratch_dir {
  fs::path path;
  explicit tmp_dir(const std::string& tag) : scratch_dir("compact-" + tag), path(scratch_dir::path()) {}
  std::string str() const { return path.string(); }
};

// `frags` fragments of `per` rows each.
void make_dataset(const std::string& root, std::size_t frags, std::size_t per, bool stable = false) {
  for (std::size_t f = 0; f < frags; ++f) {
    dataset::write_options o;
    o.mode = f == 0 ? dataset::write_mode::create : dataset::write_mode::append;
    o.enable_stable_row_ids = stable && f == 0;
    dataset::write(root, three_cluster_rows(std::int64_t(f * per), per), o);
  }
}

std::vector<std::int64_t> dataset_ids(const dataset::dataset& d) {
  auto b = d.to_batch({.columns = {"id"}});
  const auto* v = b.columns[0]->values<std::int64_t>();
  return std::vector<std::int64_t>(v, v + b.columns[0]->length);
}

std::vector<float> vectors_of(const dataset::dataset& d) {
  auto b = d.to_batch({.columns = {"vector"}});
  const auto& a = *b.columns[0];
  const auto& item = *a.children[0];
  const float* p = item.values<float>() + (item.offset + a.offset * std::int64_t(three_cluster_dim));
  return std::vector<float>(p, p + a.length * std::int64_t(three_cluster_dim));
}

std::vector<std::string> listing(const fs::path& p) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(p)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("plan_compaction: Lance's candidates, bins and task sizes") {
  tmp_dir t("plan");
  const auto root = t.str();
  // Fragments 0..4 of 100 rows; fragment 5 of 400 rows.
  make_dataset(root, 5, 100);
  {
    dataset::write_options o;
    o.mode = dataset::write_mode::append;
    dataset::write(root, three_cluster_rows(500, 400), o);
  }
  auto d = dataset::dataset::open(root);
  dataset::compaction_options o;
  o.remap_indexes = lancet::index::compaction_remapper();
  o.target_rows_per_fragment = 250;
  auto plan = dataset::plan_compaction(d, o);
  CHECK(plan.read_version == d.version());
  // Candidates 0..4 (fragment 5 has 400 >= 250 rows); cut into >= 250-row tasks,
  // the remainder joining the last: [0,1,2] then [3,4] would hold only 200 < 250, so
  // one task [0..4].
  REQUIRE(plan.tasks.size() == 1);
  CHECK(plan.tasks[0].fragment_ids == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
  CHECK(plan.tasks[0].live_rows == 500);

  o.target_rows_per_fragment = 200;
  plan = dataset::plan_compaction(d, o);
  REQUIRE(plan.tasks.size() == 2);
  CHECK(plan.tasks[0].fragment_ids == std::vector<std::uint64_t>{0, 1});
  CHECK(plan.tasks[1].fragment_ids == std::vector<std::uint64_t>{2, 3, 4});

  // A lone small fragment is left alone; a large one with > 10% deleted is rewritten.
  o.target_rows_per_fragment = 100;  // nothing is small now
  CHECK(dataset::plan_compaction(d, o).tasks.empty());
  delete_where(root, [](std::int64_t id) { return id >= 500 && id < 560; });  // 15% of fragment 5
  d = dataset::dataset::open(root);
  plan = dataset::plan_compaction(d, o);
  REQUIRE(plan.tasks.size() == 1);
  CHECK(plan.tasks[0].fragment_ids == std::vector<std::uint64_t>{5});
  CHECK(plan.tasks[0].live_rows == 340);
  o.materialize_deletions = false;
  CHECK(dataset::plan_compaction(d, o).tasks.empty());
  o.materialize_deletions = true;
  o.materialize_deletions_threshold = 0.2;
  CHECK(dataset::plan_compaction(d, o).tasks.empty());

  o.target_rows_per_fragment = 0;
  CHECK_THROWS_AS(dataset::plan_compaction(d, o), invalid_input_error);
  o.target_rows_per_fragment = 10;
  o.max_rows_per_group = 0;
  CHECK_THROWS_AS(dataset::plan_compaction(d, o), invalid_input_error);
}

TEST_CASE("compact_files: small fragments merged, deleted rows dropped, the address map") {
  tmp_dir t("merge");
  const auto root = t.str();
  make_dataset(root, 5, 60);
  delete_where(root, [](std::int64_t id) { return id % 7 == 2; });
  const auto before = dataset::dataset::open(root);
  const auto ids_before = dataset_ids(before);
  const auto vec_before = vectors_of(before);
  const auto old_frags = before.fragments();
  std::uint64_t old_files = 0;
  for (const auto& f : old_frags) old_files += f.data_files.size() + (f.deletion_file ? 1 : 0);
  auto addr_batch = before.to_batch({.columns = {"id"}, .with_row_address = true});

  dataset::compaction_options o;
  o.remap_indexes = lancet::index::compaction_remapper();
  o.target_rows_per_fragment = 120;
  std::size_t progress_calls = 0;
  o.progress = [&](std::size_t done, std::size_t total) {
    ++progress_calls;
    CHECK(done <= total);
  };
  const auto r = dataset::compact_files(root, o);
  CHECK(r.read_version == before.version());
  // Two tasks ([0,1,2] and [3,4]... sizes decide), each reserving ids first: one
  // ReserveFragments commit per task, then the Rewrite.
  const auto after = dataset::dataset::open(root);
  CHECK(after.version() == r.version);
  CHECK(r.version == before.version() + r.new_fragment_ids.size() + 1);
  CHECK(progress_calls == r.new_fragment_ids.size());
  CHECK(dataset_ids(after) == ids_before);
  CHECK(vectors_of(after) == vec_before);
  CHECK(after.count_rows() == before.count_rows());
  for (const auto& f : after.fragments()) {
    CHECK(f.deleted_rows == 0);
    CHECK(f.physical_rows <= 120);
    CHECK(f.id > 4);  // all fragments rewritten (every one had > 10% deleted or was small)
  }
  CHECK(r.metrics.fragments_removed == 5);
  CHECK(r.metrics.fragments_added == after.fragments().size());
  CHECK(r.metrics.files_removed == old_files);
  CHECK(r.metrics.files_added == after.fragments().size());
  REQUIRE(after.transaction());
  const auto* rw = std::get_if<pb::transaction::rewrite>(&after.transaction()->operation);
  REQUIRE(rw);
  CHECK(after.transaction()->read_version == before.version());
  CHECK(rw->groups.size() == r.new_fragment_ids.size());
  CHECK(rw->rewritten_indices.empty());
  // Versions between: ReserveFragments.
  for (auto v = before.version() + 1; v < after.version(); ++v) {
    auto mid = dataset::dataset::open(root, v);
    REQUIRE(mid.transaction());
    CHECK(std::holds_alternative<pb::transaction::reserve_fragments>(mid.transaction()->operation));
    CHECK(mid.count_rows() == before.count_rows());
  }
  CHECK(after.manifest().max_fragment_id.value_or(0) == after.fragments().back().id);

  // Mapping: every physical row of the old fragments; live rows land on the row with
  // the same id, deleted ones map to nothing.
  std::uint64_t physical = 0;
  for (const auto& f : old_frags) physical += f.physical_rows;
  CHECK(r.mapping.size() == physical);
  std::map<std::uint64_t, std::int64_t> id_at;
  for (std::int64_t i = 0; i < addr_batch.columns[0]->length; ++i)
    id_at[addr_batch.columns[1]->values<std::uint64_t>()[i]] = addr_batch.columns[0]->values<std::int64_t>()[i];
  std::vector<std::uint64_t> news;
  std::vector<std::int64_t> expect;
  std::size_t dropped = 0;
  for (const auto& [old, nw] : r.mapping) {
    if (!nw) {
      ++dropped;
      CHECK(id_at.count(old) == 0);
      continue;
    }
    REQUIRE(id_at.count(old) == 1);
    news.push_back(*nw);
    expect.push_back(id_at[old]);
  }
  CHECK(dropped == physical - before.count_rows());
  auto taken = after.take_addresses(news, {"id"});
  for (std::size_t i = 0; i < news.size(); ++i) CHECK(taken.columns[0]->values<std::int64_t>()[i] == expect[i]);

  // Compacting again: nothing to do, no new version.
  const auto again = dataset::compact_files(root, o);
  CHECK(again.version == after.version());
  CHECK(again.metrics == dataset::compaction_metrics{});
  CHECK(again.mapping.empty());
  CHECK(dataset::dataset::open(root).version() == after.version());
}

TEST_CASE("compact_files: stable row ids survive with their versions") {
  tmp_dir t("stable");
  const auto root = t.str();
  make_dataset(root, 4, 50, true);
  delete_where(root, [](std::int64_t id) { return id % 5 == 0; });
  const auto before = dataset::dataset::open(root);
  REQUIRE(before.stable_row_ids());
  auto b0 = before.to_batch({.columns = {"id"}, .with_row_id = true});
  const auto r = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
  const auto after = dataset::dataset::open(root);
  CHECK(r.version == before.version() + 2);  // one ReserveFragments, one Rewrite
  REQUIRE(after.fragments().size() == 1);
  CHECK(after.fragments()[0].physical_rows == before.count_rows());
  CHECK(dataset_ids(after) == dataset_ids(before));
  // Every row keeps its id.
  auto b1 = after.to_batch({.columns = {"id"}, .with_row_id = true});
  REQUIRE(b1.columns[1]->length == b0.columns[1]->length);
  for (std::int64_t i = 0; i < b0.columns[1]->length; ++i) {
    CHECK(b1.columns[1]->values<std::uint64_t>()[i] == b0.columns[1]->values<std::uint64_t>()[i]);
    CHECK(b1.columns[0]->values<std::int64_t>()[i] == b0.columns[0]->values<std::int64_t>()[i]);
  }
  std::vector<std::uint64_t> some{b0.columns[1]->values<std::uint64_t>()[3], b0.columns[1]->values<std::uint64_t>()[150]};
  auto tk = after.take(some, {"id"});
  CHECK(tk.columns[0]->values<std::int64_t>()[0] == b0.columns[0]->values<std::int64_t>()[3]);
  CHECK(tk.columns[0]->values<std::int64_t>()[1] == b0.columns[0]->values<std::int64_t>()[150]);
  CHECK(after.manifest().next_row_id == before.manifest().next_row_id);
  // Rows created at versions 1..4 keep those versions.
  const auto& f = after.manifest().fragments[0];
  const auto seq = pb::decode<pb::row_dataset_version_sequence>(std::get<std::string>(f.created_at_version_sequence));
  std::set<std::uint64_t> versions;
  for (const auto& run : seq.runs) versions.insert(run.version);
  CHECK(versions == std::set<std::uint64_t>{1, 2, 3, 4});
}

TEST_CASE("compact_files: an IVF index is remapped in the Rewrite commit") {
  for (auto type : {index::ivf_index_type::ivf_flat, index::ivf_index_type::ivf_pq}) {
    CAPTURE(index::ivf_index_type_name(type));
    tmp_dir t("remap");
    const auto root = t.str();
    make_dataset(root, 4, 90);
    index::build_options bo;
    bo.column = "vector";
    bo.type = type;
    bo.num_partitions = 3;
    if (type == index::ivf_index_type::ivf_pq) bo.num_sub_vectors = 2;
    const auto built = index::build_ivf_index(root, bo);
    const auto built_im = stored_index(root, built.index.uuid);
    // Deleted after the index was built: the index still holds those rows.
    delete_where(root, [](std::int64_t id) { return id % 4 == 1; });
    const auto before = dataset::dataset::open(root);
    const auto snap0 = dataset::load_version(root, before.version());
    auto ix0 = index::open_vector_index(snap0, "vector");
    const auto parts0 = ix0.storage->ivf().lengths;
    std::uint64_t entries0 = 0;
    for (auto n : parts0) entries0 += n;
    CHECK(entries0 == 360);

    const auto r = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
    const auto after = dataset::dataset::open(root);
    REQUIRE(r.indices.size() == 1);
    CHECK(r.indices[0].name == "vector_idx");
    CHECK(r.indices[0].old_uuid == built.index.uuid);
    CHECK(!(r.indices[0].new_uuid == built.index.uuid));
    CHECK(r.indices[0].stats.rows_before == 360);
    CHECK(r.indices[0].stats.rows_after == 270);
    CHECK(r.indices[0].stats.rows_dropped == 90);
    const auto* rw = std::get_if<pb::transaction::rewrite>(&after.transaction()->operation);
    REQUIRE(rw);
    REQUIRE(rw->rewritten_indices.size() == 1);
    CHECK(rw->rewritten_indices[0].old_id == built.index.uuid);
    CHECK(rw->rewritten_indices[0].new_id == r.indices[0].new_uuid);
    REQUIRE(after.indices().size() == 1);
    const auto& im = after.indices()[0];
    CHECK(rw->rewritten_indices[0].new_index_files == im.files);  // field 5, as LanceDB 0.39 writes it
    CHECK(!im.files.empty());
    CHECK(im.uuid == r.indices[0].new_uuid);
    CHECK(im.name == built.index.name);
    CHECK(im.dataset_version == built.index.dataset_version);
    CHECK(im.created_at == built.index.created_at);
    CHECK(im.index_details->value == built_im.index_details->value);
    CHECK(dataset::index_fragment_bitmap(im).to_vector() == std::vector<std::uint32_t>{std::uint32_t(after.fragments()[0].id)});
    CHECK(im.files == index::index_files_in(index::index_directory(root, im.uuid)));
    // The old index directory stays (older versions use it).
    CHECK(fs::exists(index::index_directory(root, built.index.uuid)));

    const auto snap1 = dataset::load_version(root, after.version());
    auto ix1 = index::open_vector_index(snap1, "vector");
    // Same partitions and centroids.
    REQUIRE(ix1.storage->num_partitions() == parts0.size());
    {
      const auto& c0 = *ix0.index_file.ivf.centroids;
      const auto& c1 = *ix1.index_file.ivf.centroids;
      CHECK(c1.rows == c0.rows);
      CHECK(c1.cols == c0.cols);
      REQUIRE(c1.data.size() == c0.data.size());
      CHECK(std::memcmp(c1.data.data(), c0.data.data(), c0.data.size()) == 0);
      CHECK(ix1.index_file.ivf.loss == ix0.index_file.ivf.loss);
    }
    // Each entry is a live row whose id is not deleted; the codes follow their rows.
    std::set<std::uint64_t> seen;
    for (std::size_t p = 0; p < parts0.size(); ++p) {
      const auto a = ix0.storage->read_partition(p);
      const auto b = ix1.storage->read_partition(p);
      std::vector<std::uint64_t> expect_ids;
      std::vector<std::uint8_t> expect_codes;
      const std::size_t w = b.size() ? b.codes.size() / b.size() : 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto& nw = r.mapping.at(a.row_ids[i]);
        if (!nw) continue;
        expect_ids.push_back(*nw);
        expect_codes.insert(expect_codes.end(), a.codes.data() + i * w, a.codes.data() + (i + 1) * w);
      }
      CHECK(b.row_ids == expect_ids);
      CHECK(std::vector<std::uint8_t>(b.codes.data(), b.codes.data() + b.codes.size()) == expect_codes);
      seen.insert(b.row_ids.begin(), b.row_ids.end());
    }
    CHECK(seen.size() == after.count_rows());
    auto tk = after.take_addresses(std::vector<std::uint64_t>(seen.begin(), seen.end()), {"id"});
    for (std::int64_t i = 0; i < tk.columns[0]->length; ++i) CHECK(tk.columns[0]->values<std::int64_t>()[i] % 4 != 1);

    // Search: the same rows (by id value) before and after, deleted rows excluded.
    const auto vecs = vectors_of(after);
    index::search_params sp;
    sp.k = 5;
    sp.nprobes = 3;
    for (std::size_t q = 0; q < 3; ++q) {
      const float* query = vecs.data() + q * 37 * three_cluster_dim;
      std::vector<std::uint64_t> a0, a1;
      for (const auto& h : ix0.searcher->search(query, three_cluster_dim, sp))
        if (!before.deleted_rows(h.row_id >> 32).contains(h.row_id & 0xFFFFFFFF)) a0.push_back(h.row_id);
      for (const auto& h : ix1.searcher->search(query, three_cluster_dim, sp)) a1.push_back(h.row_id);
      a0.resize(std::min(a0.size(), a1.size()));
      a1.resize(a0.size());
      auto i0 = before.take_addresses(a0, {"id"});
      auto i1 = after.take_addresses(a1, {"id"});
      for (std::size_t i = 0; i < a0.size(); ++i)
        CHECK(i0.columns[0]->values<std::int64_t>()[i] == i1.columns[0]->values<std::int64_t>()[i]);
    }
  }
}

TEST_CASE("remap_index_files: explicit maps, and what it refuses") {
  tmp_dir t("remapfiles");
  const auto root = t.str();
  make_dataset(root, 2, 40);
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_flat;
  bo.num_partitions = 2;
  const auto built = index::build_ivf_index(root, bo);
  const auto built_im = stored_index(root, built.index.uuid);
  index::row_address_map m;
  m[0] = std::nullopt;                        // dropped
  m[1] = dataset::row_address(7, 0);          // moved
  m[dataset::row_address(1, 5)] = dataset::row_address(1, 5);  // same
  const auto r = index::remap_index_files(root, built_im, m);
  CHECK(r.stats.rows_before == 80);
  CHECK(r.stats.rows_after == 79);
  CHECK(r.stats.rows_dropped == 1);
  CHECK(r.stats.rows_moved == 1);
  CHECK(r.num_partitions == 2);
  auto st = index::open_storage(index::index_directory(root, r.new_uuid) + "/auxiliary.idx");
  std::set<std::uint64_t> ids;
  for (std::size_t p = 0; p < st.num_partitions(); ++p)
    for (auto id : st.read_partition(p).row_ids) ids.insert(id);
  CHECK(ids.count(0) == 0);
  CHECK(ids.count(1) == 0);
  CHECK(ids.count(dataset::row_address(7, 0)) == 1);
  CHECK(ids.count(dataset::row_address(1, 5)) == 1);
  CHECK(ids.size() == 79);
  const auto meta = index::remapped_index_metadata(built_im, r, dataset::roaring_bitmap{0, 7});
  CHECK(meta.uuid == r.new_uuid);
  CHECK(meta.name == built_im.name);
  CHECK(dataset::index_fragment_bitmap(meta).to_vector() == std::vector<std::uint32_t>{0, 7});
  CHECK_THROWS_AS(index::remapped_index_metadata(meta, r, {}), invalid_input_error);

  // Onto an existing directory or its own uuid: refused.
  CHECK_THROWS_AS(index::remap_index_files(root, built_im, m, r.new_uuid), invalid_input_error);
  CHECK_THROWS_AS(index::remap_index_files(root, built_im, m, built_im.uuid), invalid_input_error);
  // Not a vector index.
  auto scalar = built_im;
  scalar.index_details = pb::any{"/lance.table.BTreeIndexDetails", {}};
  CHECK(index::remap_unsupported_reason(root, scalar).has_value());
  CHECK_THROWS_AS(index::remap_index_files(root, scalar, m), unsupported_error);
  // Missing files.
  auto gone = built_im;
  gone.uuid = lancet::uuid::generate_v4();
  CHECK(index::remap_unsupported_reason(root, gone).has_value());
  CHECK_THROWS_AS(index::remap_index_files(root, gone, m), unsupported_error);
}

TEST_CASE("compact_files: an index lancet cannot remap leaves the dataset unchanged") {
  tmp_dir t("refuse");
  const auto root = t.str();
  make_dataset(root, 3, 30);
  // A scalar index (as LanceDB would register a BTREE) over every fragment.
  auto snap = *dataset::load_latest(root);
  pb::index_metadata im;
  im.uuid = lancet::uuid::generate_v4();
  im.fields = {0};
  im.name = "id_idx";
  im.dataset_version = snap.version();
  dataset::set_index_fragment_bitmap(im, dataset::roaring_bitmap{0, 1, 2});
  im.index_details = pb::any{"/lance.table.BTreeIndexDetails", {}};
  index::commit_index(root, snap, im);
  const auto before = listing(t.path);
  const auto v = dataset::dataset::open(root).version();
  try {
    dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
    FAIL("expected unsupported_error");
  } catch (const unsupported_error& e) {
    CHECK(std::string(e.what()).find("id_idx") != std::string::npos);
  }
  CHECK(dataset::dataset::open(root).version() == v);
  CHECK(listing(t.path) == before);

  CHECK_THROWS_AS(dataset::compact_files((t.path / "nothing").string(), {}), not_found_error);
}

TEST_CASE("compact_files: without an index remapper, indexed fragments are refused up front") {
  tmp_dir t("no-remapper");
  const auto root = t.str();
  make_dataset(root, 4, 90);
  index::build_options bo;
  bo.column = "vector";
  bo.num_partitions = 3;
  index::build_ivf_index(root, bo);
  const auto before = listing(t.path);
  const auto v = dataset::dataset::open(root).version();
  try {
    dataset::compact_files(root, {});
    FAIL("expected unsupported_error");
  } catch (const unsupported_error& e) {
    const std::string what = e.what();
    CHECK(what.find("'vector_idx'") != std::string::npos);
    CHECK(what.find("remap_indexes") != std::string::npos);
  }
  CHECK(dataset::dataset::open(root).version() == v);
  CHECK(listing(t.path) == before);

  // A dataset without indexes needs none.
  tmp_dir u("no-index");
  make_dataset(u.str(), 4, 90);
  const auto r = dataset::compact_files(u.str(), {});
  CHECK(r.metrics.fragments_removed == 4);
  CHECK(r.metrics.fragments_added == 1);
}

namespace {

// Sinks that fail for the `fail_at`-th file whose path contains `pattern` (1-based).
struct failing_factory {
  std::string pattern;
  int fail_at = 1;
  std::shared_ptr<int> seen = std::make_shared<int>(0);
  testing::failing_sink<io::file_sink> operator()(const std::string& path, const io::file_sink_options& o) const {
    testing::failure_plan plan;
    if (path.find(pattern) != std::string::npos && ++*seen == fail_at) plan.fail_after_bytes = 10;
    return testing::failing_sink<io::file_sink>(io::file_sink(path, o), plan);
  }
};

}  // namespace

TEST_CASE("compact_files: a failing write leaves no data or index files behind") {
  tmp_dir t("fail");
  const auto root = t.str();
  make_dataset(root, 3, 40);
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_flat;
  bo.num_partitions = 2;
  const auto built = index::build_ivf_index(root, bo);
  delete_where(root, [](std::int64_t id) { return id % 3 == 0; });
  const auto v0 = dataset::dataset::open(root).version();
  const auto ids0 = dataset_ids(dataset::dataset::open(root));
  const auto data0 = files_under(t.path / "data");
  const auto indices0 = files_under(t.path / "_indices");

  // A data file fails: nothing committed.
  CHECK_THROWS_AS(dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()}, failing_factory{"/data/", 1}), io_error);
  CHECK(dataset::dataset::open(root).version() == v0);
  CHECK(files_under(t.path / "data") == data0);
  CHECK(files_under(t.path / "_indices") == indices0);

  // The Rewrite manifest fails (the ReserveFragments one went through, as in Lance a
  // reservation stays): rows, index and files as before.
  CHECK_THROWS_AS(dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()}, failing_factory{"/_versions/", 2}), io_error);
  const auto d = dataset::dataset::open(root);
  CHECK(d.version() == v0 + 1);
  CHECK(std::holds_alternative<pb::transaction::reserve_fragments>(d.transaction()->operation));
  CHECK(dataset_ids(d) == ids0);
  CHECK(files_under(t.path / "data") == data0);
  CHECK(files_under(t.path / "_indices") == indices0);
  REQUIRE(d.indices().size() == 1);
  CHECK(d.indices()[0].uuid == built.index.uuid);

  // And then it works.
  const auto r = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
  CHECK(r.version == v0 + 3);
  CHECK(dataset_ids(dataset::dataset::open(root)) == ids0);
  CHECK(files_under(t.path / "_indices").size() == indices0.size() + 1);
}
