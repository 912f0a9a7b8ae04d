// Concurrent commits resolved as Lance 12 resolves them: each case lets a
// rival writer commit while our operation is under way (just before our manifest is
// published, or from a progress callback) and checks what both left: rows, fragments,
// deletions, indices, or the typed conflict and an unchanged dataset. Then real
// concurrency: processes appending at once, readers during writes, and processes
// running every kind of operation at once.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/conflict.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/io/file_sink.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/dataset_writes.hpp"
#include "support/files.hpp"
#include "support/ids.hpp"
#include "support/temp_dir.hpp"

using namespace lancet;
using namespace lancet::arrow;
namespace fs = std::filesystem;
namespace ds = lancet::dataset;

namespace {

using lancet::testing::files_under;
using lancet::testing::iota_ids;
using lancet::testing::opts;
using lancet::testing::racing_factory;
using lancet::testing::scratch_dir;

// id: int64 start..start+n, vec: fixed_size_list<float32, 4> (clustered, for the IVF tests).
record_batch clustered_batch(std::int64_t start, std::int64_t n) {
  std::vector<std::int64_t> ids;
  std::vector<float> vec;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto v = start + i;
    ids.push_back(v);
    for (int k = 0; k < 4; ++k) vec.push_back(float(v % 2 ? 10 : -10) + 0.01f * float((v * 7 + k) % 13));
  }
  return make_batch({{"id", make_array<std::int64_t>(ids)}, {"vec", make_fixed_size_list(make_array<float>(vec), 4)}});
}

std::vector<std::int64_t> sorted_live_ids(const ds::dataset& d) {
  std::vector<std::int64_t> out;
  auto b = d.to_batch();
  for (std::int64_t i = 0; i < b.num_rows(); ++i) out.push_back(b.columns[0]->value<std::int64_t>(i));
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::int64_t> sorted_live_ids(const std::string& root) { return sorted_live_ids(ds::dataset::open(root)); }

// a then b, sorted.
std::vector<std::int64_t> sorted_concat(std::vector<std::int64_t> a, const std::vector<std::int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  return a;
}

std::vector<std::uint64_t> fragment_ids(const std::string& root) {
  std::vector<std::uint64_t> out;
  const auto d = ds::dataset::open(root);
  for (const auto& f : d.manifest().fragments) out.push_back(f.id);
  return out;
}

// Everything a dataset version consists of, to compare "unchanged".
struct state {
  std::uint64_t version;
  std::vector<std::int64_t> ids;
  std::vector<std::uint64_t> fragments;
  std::vector<std::string> indices;
  friend bool operator==(const state&, const state&) = default;
};
state state_of(const std::string& root) {
  auto d = ds::dataset::open(root);
  state s{d.version(), sorted_live_ids(d), fragment_ids(root), {}};
  const auto latest = ds::load_latest(root);
  for (const auto& im : latest->file.indices) s.indices.push_back(im.uuid.to_string());
  return s;
}
void check_same_state(const state& a, const state& b) {
  CHECK(a.version == b.version);
  CHECK(a.ids == b.ids);
  CHECK(a.fragments == b.fragments);
  CHECK(a.indices == b.indices);
}

// Data and deletion files no version of the dataset refers to (what a failed commit
// must not leave behind).
std::set<std::string> unreferenced_files(const std::string& root) {
  std::set<std::string> on_disk, used;
  for (const auto& f : files_under(root + "/data", true, true)) on_disk.insert("data/" + f);
  for (const auto& f : files_under(root + "/_deletions", true, true)) on_disk.insert("_deletions/" + f);
  for (const auto& e : ds::list_versions(root)) {
    const auto s = ds::load_version(root, e.version);
    for (const auto& f : s.manifest().fragments) {
      for (const auto& df : f.files) used.insert("data/" + df.path);
      if (f.deletion_file)
        used.insert(fs::relative(ds::deletion_file_path(root, s.manifest(), f.id, *f.deletion_file), root).string());
    }
  }
  std::set<std::string> out;
  for (const auto& f : on_disk)
    if (!used.count(f)) out.insert(f);
  return out;
}

std::vector<std::uint32_t> deleted_of(const std::string& root, std::uint64_t fragment) {
  return ds::dataset::open(root).deleted_rows(fragment).offsets();
}

std::string operation_of(const std::string& root, std::uint64_t version) {
  return ds::operation_name(ds::dataset::open(root, version).transaction()->operation);
}

void append_rows(const std::string& root, std::int64_t start, std::int64_t n, std::uint64_t rows_per_file = 1 << 20) {
  ds::write(root, clustered_batch(start, n), opts(ds::write_mode::append, rows_per_file));
}

index::build_options flat_index() {
  index::build_options o;
  o.column = "vec";
  o.type = index::ivf_index_type::ivf_flat;
  o.num_partitions = 2;
  o.sample_rate = 4;
  o.max_iters = 5;
  return o;
}

std::vector<std::uint32_t> indexed_fragments(const ds::snapshot& s, const std::string& name = "vec_idx") {
  std::vector<std::uint32_t> out;
  for (const auto& im : s.file.indices)
    if (im.name == name)
      for (auto f : ds::index_fragment_bitmap(im).to_vector()) out.push_back(std::uint32_t(f));
  std::sort(out.begin(), out.end());
  return out;
}

// Runs f, expecting commit_conflict_error naming `op`; returns it.
template <class F>
ds::commit_conflict_error expect_conflict(F&& f, const std::string& op) {
  try {
    f();
  } catch (const ds::commit_conflict_error& e) {
    INFO(e.what());
    CHECK(e.operation == op);
    CHECK(std::string(e.what()).find(op) != std::string::npos);
    return e;
  }
  FAIL("expected a conflict with " << op);
  return ds::commit_conflict_error("", 0, "", false);
}

}  // namespace

TEST_CASE("Append vs Append: both committed, ours rebased on the next version and fragment id") {
  scratch_dir t("c-aa");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10));
  racing_factory f{[&] { append_rows(root, 100, 5); }};
  auto r = ds::write(root, clustered_batch(10, 7), opts(ds::write_mode::append), f);
  CHECK(r.version == 3);
  CHECK(r.retries == 1);
  REQUIRE(r.fragments.size() == 1);
  CHECK(r.fragments[0].id() == 2);  // after the rival's fragment 1
  CHECK(sorted_live_ids(root) == sorted_concat(iota_ids(0, 17), iota_ids(100, 105)));
  CHECK(fragment_ids(root) == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(ds::dataset::open(root, 2).count_rows() == 15);
  auto d = ds::dataset::open(root);
  CHECK(d.transaction()->read_version == 1);  // an Append keeps its read version, as Lance's
  CHECK(operation_of(root, 3) == "Append");
  // One transaction file per version: the loser's first attempt left none behind.
  CHECK(files_under(root + "/_transactions", true, true).size() == 3);
}

TEST_CASE("Append vs Delete: both committed, the deletions stay") {
  scratch_dir t("c-ad");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10), opts(ds::write_mode::create, 5));
  racing_factory f{[&] {
    const std::vector<std::uint64_t> del{ds::row_address(0, 1), ds::row_address(1, 2)};
    ds::delete_rows(root, del);
  }};
  auto r = ds::write(root, clustered_batch(10, 3), opts(ds::write_mode::append), f);
  CHECK(r.version == 3);
  CHECK(r.retries == 1);
  auto want = iota_ids(0, 13);
  want.erase(std::find(want.begin(), want.end(), 7));
  want.erase(std::find(want.begin(), want.end(), 1));
  CHECK(sorted_live_ids(root) == want);
  CHECK(deleted_of(root, 0) == std::vector<std::uint32_t>{1});
  CHECK(deleted_of(root, 1) == std::vector<std::uint32_t>{2});
  CHECK(fragment_ids(root) == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(operation_of(root, 2) == "Delete");
}

TEST_CASE("Append vs CreateIndex: both committed, the new rows unindexed") {
  scratch_dir t("c-ai");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 64));
  racing_factory f{[&] { index::build_ivf_index(root, flat_index()); }};
  auto r = ds::write(root, clustered_batch(64, 16), opts(ds::write_mode::append), f);
  CHECK(r.version == 3);
  auto s = *ds::load_latest(root);
  REQUIRE(s.file.indices.size() == 1);
  CHECK(indexed_fragments(s) == std::vector<std::uint32_t>{0});
  CHECK(s.file.indices[0].dataset_version == 1);
  CHECK(sorted_live_ids(root) == iota_ids(0, 80));
  CHECK(fragment_ids(root) == std::vector<std::uint64_t>{0, 1});
}

TEST_CASE("Append vs Rewrite (compaction): both committed, every row once") {
  scratch_dir t("c-ar");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 12), opts(ds::write_mode::create, 3));
  REQUIRE(fragment_ids(root).size() == 4);
  racing_factory f{[&] { ds::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()}); }};
  auto r = ds::write(root, clustered_batch(12, 4), opts(ds::write_mode::append), f);
  CHECK(r.retries >= 1);
  CHECK(sorted_live_ids(root) == iota_ids(0, 16));
  // The compaction's fragment (after its reserved id) and ours after it.
  auto frags = fragment_ids(root);
  CHECK(frags.size() == 2);
  CHECK(frags.back() == r.fragments.at(0).id());
  CHECK(r.fragments.at(0).id() > frags.front());
  CHECK(operation_of(root, r.version - 1) == "Rewrite");
}

TEST_CASE("Append vs Overwrite: conflict naming the Overwrite; the dataset is as the overwrite left it") {
  scratch_dir t("c-ao");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10));
  state after_rival;
  racing_factory f{[&] {
    ds::write(root, clustered_batch(500, 3), opts(ds::write_mode::overwrite));
    after_rival = state_of(root);
  }};
  auto e = expect_conflict([&] { ds::write(root, clustered_batch(10, 7), opts(ds::write_mode::append), f); }, "Overwrite");
  CHECK(e.version == 2);
  CHECK_FALSE(e.retryable);
  check_same_state(state_of(root), after_rival);
  CHECK(unreferenced_files(root).empty());
  CHECK(sorted_live_ids(root) == iota_ids(500, 503));
  CHECK(files_under(root + "/_transactions", true, true).size() == 2);
}

TEST_CASE("Delete vs Delete on other fragments: both committed") {
  scratch_dir t("c-dd");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10), opts(ds::write_mode::create, 5));
  racing_factory f{[&] {
    const std::vector<std::uint64_t> del{ds::row_address(1, 0)};
    ds::delete_rows(root, del);
  }};
  const std::vector<std::uint64_t> mine{ds::row_address(0, 4)};
  auto r = ds::delete_rows(root, mine, {}, f);
  CHECK(r.version == 3);
  CHECK(r.retries == 1);
  CHECK(r.deleted_rows == 1);
  CHECK(deleted_of(root, 0) == std::vector<std::uint32_t>{4});
  CHECK(deleted_of(root, 1) == std::vector<std::uint32_t>{0});
  auto want = iota_ids(0, 10);
  want.erase(std::find(want.begin(), want.end(), 5));
  want.erase(std::find(want.begin(), want.end(), 4));
  CHECK(sorted_live_ids(root) == want);
}

TEST_CASE("Delete vs Delete on the same fragment: deletion vectors merged as Lance merges them") {
  scratch_dir t("c-dds");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10));
  SUBCASE("other rows: merged into a new deletion file") {
    racing_factory f{[&] {
      const std::vector<std::uint64_t> del{ds::row_address(0, 1), ds::row_address(0, 2)};
      ds::delete_rows(root, del);
    }};
    const std::vector<std::uint64_t> mine{ds::row_address(0, 5)};
    auto r = ds::delete_rows(root, mine, {}, f);
    CHECK(r.version == 3);
    CHECK(r.retries == 1);
    CHECK(deleted_of(root, 0) == std::vector<std::uint32_t>{1, 2, 5});
    auto d = ds::dataset::open(root);
    CHECK(d.manifest().fragments.at(0).deletion_file->num_deleted_rows == 3);
    CHECK(d.transaction()->read_version == 2);  // a rebased Delete reads the version it merged, as Lance's
    CHECK(sorted_live_ids(root) == std::vector<std::int64_t>{0, 3, 4, 6, 7, 8, 9});
    CHECK(unreferenced_files(root).empty());  // the deletion file of the first attempt removed
  }
  SUBCASE("a row both deleted: Lance's retryable conflict, the delete runs again on the new version") {
    racing_factory f{[&] {
      const std::vector<std::uint64_t> del{ds::row_address(0, 1), ds::row_address(0, 2)};
      ds::delete_rows(root, del);
    }};
    const std::vector<std::uint64_t> mine{ds::row_address(0, 2), ds::row_address(0, 4)};
    auto r = ds::delete_rows(root, mine, {}, f);
    CHECK(r.version == 3);
    CHECK(r.deleted_rows == 1);  // row 2 was deleted already
    CHECK(deleted_of(root, 0) == std::vector<std::uint32_t>{1, 2, 4});
    // The first attempt's deletion file was removed.
    CHECK(unreferenced_files(root).empty());
  }
  SUBCASE("without retries: conflict, nothing of ours kept") {
    state after_rival;
    racing_factory f{[&] {
      const std::vector<std::uint64_t> del{ds::row_address(0, 1)};
      ds::delete_rows(root, del);
      after_rival = state_of(root);
    }};
    const std::vector<std::uint64_t> mine{ds::row_address(0, 7)};
    ds::delete_options o;
    o.max_retries = 0;
    CHECK_THROWS_AS(ds::delete_rows(root, mine, o, f), conflict_error);
    check_same_state(state_of(root), after_rival);
    CHECK(unreferenced_files(root).empty());
  }
  SUBCASE("the fragment removed meanwhile: conflict") {
    racing_factory f{[&] {
      std::vector<std::uint64_t> all;
      for (std::uint64_t i = 0; i < 10; ++i) all.push_back(ds::row_address(0, i));
      ds::delete_rows(root, all);
    }};
    const std::vector<std::uint64_t> mine{ds::row_address(0, 7)};
    CHECK_THROWS_AS(ds::delete_rows(root, mine, {}, f), conflict_error);
    CHECK(ds::dataset::open(root).count_rows() == 0);
    CHECK(ds::dataset::open(root).version() == 2);
  }
}

TEST_CASE("CreateIndex vs Append: the index commits covering the rows it read") {
  scratch_dir t("c-ia");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 64));
  auto o = flat_index();
  bool once = false;
  o.on_progress = [&](const index::build_progress&) {
    if (!once) {
      once = true;
      append_rows(root, 64, 8);
    }
  };
  auto r = index::build_ivf_index(root, o);
  CHECK(once);
  CHECK(r.version == 3);
  CHECK(r.retries == 0);  // the append came before the commit's first attempt: rebased, no retry
  // A rival taking the version at the moment of the commit's rename: one retry, counted.
  const auto raced = t.sub("raced");
  ds::write(raced, clustered_batch(0, 64));
  auto seg = flat_index();
  seg.commit = false;
  pb::index_metadata im;  // the uncommitted index's IndexMetadata
  const auto built = index::detail::run_build(raced, seg, nullptr, &im);
  unsigned retries = 0;
  racing_factory f{[&] { append_rows(raced, 64, 8); }};
  const auto after = index::commit_index(raced, ds::load_version(raced, built.version), im, {}, f, &retries);
  CHECK(retries == 1);
  CHECK(after.version() == 3);
  CHECK(indexed_fragments(after) == std::vector<std::uint32_t>{0});
  CHECK(sorted_live_ids(raced) == iota_ids(0, 72));
  auto s = *ds::load_latest(root);
  CHECK(s.version() == 3);
  CHECK(indexed_fragments(s) == std::vector<std::uint32_t>{0});
  CHECK(s.file.indices.at(0).dataset_version == 1);
  CHECK(sorted_live_ids(root) == iota_ids(0, 72));
  CHECK(operation_of(root, 3) == "CreateIndex");
  // The index is usable: a search over it finds indexed rows only.
  auto ix = index::open_vector_index(s, "vec");
  std::vector<float> q{10, 10, 10, 10};
  index::search_params sp;
  sp.k = 5;
  sp.nprobes = 2;
  auto hits = ix.searcher->search(q.data(), q.size(), sp);
  CHECK(hits.size() == 5);
}

TEST_CASE("index optimize vs Append: committed over the fragments it read") {
  scratch_dir t("c-oa");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 64));
  index::build_ivf_index(root, flat_index());
  append_rows(root, 64, 16);  // fragment 1, unindexed
  index::optimize_options oo;
  bool once = false;
  oo.on_progress = [&](const index::optimize_progress&) {
    if (!once) {
      once = true;
      append_rows(root, 80, 8);  // fragment 2, committed while the optimize runs
    }
  };
  auto r = index::optimize_indices(root, oo);
  CHECK(once);
  CHECK(r.retries == 0);  // rebased over the append before its first attempt
  auto s = *ds::load_latest(root);
  CHECK(r.version == s.version());
  CHECK(s.version() == 5);
  CHECK(operation_of(root, 5) == "CreateIndex");
  const auto covered = indexed_fragments(s);
  CHECK(std::find(covered.begin(), covered.end(), 1u) != covered.end());
  CHECK(std::find(covered.begin(), covered.end(), 2u) == covered.end());
  CHECK(sorted_live_ids(root) == iota_ids(0, 88));
}

TEST_CASE("CreateIndex vs Rewrite of the fragments it indexed: conflict, the dataset as the rewrite left it") {
  scratch_dir t("c-ir");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 64), opts(ds::write_mode::create, 16));
  state after_rival;
  auto o = flat_index();
  bool once = false;
  o.on_progress = [&](const index::build_progress&) {
    if (!once) {
      once = true;
      ds::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()});
      after_rival = state_of(root);
    }
  };
  auto e = expect_conflict([&] { index::build_ivf_index(root, o); }, "Rewrite");
  CHECK(e.retryable);
  check_same_state(state_of(root), after_rival);
  CHECK(unreferenced_files(root).empty());
  CHECK(ds::load_latest(root)->file.indices.empty());
  CHECK(sorted_live_ids(root) == iota_ids(0, 64));
}

TEST_CASE("Rewrite (compaction) vs Delete on its fragments: conflict; vs Append: both committed") {
  scratch_dir t("c-rd");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 12), opts(ds::write_mode::create, 3));
  SUBCASE("Delete of a fragment it rewrites") {
    ds::compaction_options co;
    co.remap_indexes = lancet::index::compaction_remapper();
    std::vector<std::int64_t> rows_after;
    std::vector<std::uint64_t> frags_after;
    co.progress = [&](std::size_t done, std::size_t) {
      if (done == 1) {
        const std::vector<std::uint64_t> del{ds::row_address(1, 0)};
        ds::delete_rows(root, del);
        rows_after = sorted_live_ids(root);
        frags_after = fragment_ids(root);
      }
    };
    auto e = expect_conflict([&] { ds::compact_files(root, co); }, "Delete");
    CHECK(e.retryable);
    CHECK(e.version == 2);
    CHECK(sorted_live_ids(root) == rows_after);
    CHECK(fragment_ids(root) == frags_after);
    CHECK(unreferenced_files(root).empty());  // the compaction's files removed
    CHECK(deleted_of(root, 1) == std::vector<std::uint32_t>{0});
  }
  SUBCASE("Append meanwhile") {
    ds::compaction_options co;
    co.remap_indexes = lancet::index::compaction_remapper();
    co.progress = [&](std::size_t done, std::size_t) {
      if (done == 1) append_rows(root, 12, 5);
    };
    auto r = ds::compact_files(root, co);
    CHECK(r.version == ds::dataset::open(root).version());
    CHECK(operation_of(root, r.version) == "Rewrite");
    CHECK(sorted_live_ids(root) == iota_ids(0, 17));
    CHECK(fragment_ids(root).size() == 2);
  }
}

TEST_CASE("Overwrite vs Append: the overwrite wins its own version") {
  scratch_dir t("c-oa2");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 10));
  racing_factory f{[&] { append_rows(root, 100, 5); }};
  auto r = ds::write(root, clustered_batch(1000, 4), opts(ds::write_mode::overwrite), f);
  CHECK(r.version == 3);
  CHECK(r.retries == 1);
  CHECK(sorted_live_ids(root) == iota_ids(1000, 1004));
  CHECK(ds::dataset::open(root, 2).count_rows() == 15);
  CHECK(operation_of(root, 3) == "Overwrite");
  // An Overwrite numbers its fragments from 0 again, as Lance's.
  CHECK(ds::dataset::open(root).manifest().fragments.at(0).id == 0);
}

TEST_CASE("transactions lancet writes carry read_version, uuid and operation as Lance reads them") {
  scratch_dir t("c-tx");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 4));
  append_rows(root, 4, 4);
  for (const auto& e : ds::list_versions(root)) {
    auto txn = ds::read_version_transaction(root, e);
    CHECK(txn.read_version == e.version - 1);
    CHECK(txn.uuid.size() == 36);
    CHECK(fs::exists(root + "/_transactions/" + txn.file_name()));
    CHECK_FALSE(std::holds_alternative<std::monostate>(txn.operation));
  }
}

TEST_CASE("concurrent appends from 4 processes x 25: none fails, every row once, every version opens") {
  scratch_dir t("c-proc");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 1));
  constexpr int procs = 4, appends = 25, rows = 3;
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int failed = 0;
      for (int i = 0; i < appends; ++i) {
        try {
          append_rows(root, 1000 + (p * appends + i) * rows, rows);
        } catch (...) {
          ++failed;
        }
      }
      ::_exit(failed);
    }
    kids.push_back(pid);
  }
  int failures = 0;
  for (auto pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    failures += WEXITSTATUS(status);
  }
  CHECK(failures == 0);
  auto ids = sorted_live_ids(root);
  std::vector<std::int64_t> want{0};
  for (int k = 0; k < procs * appends * rows; ++k) want.push_back(1000 + k);
  CHECK(ids.size() == want.size());
  CHECK(ids == want);
  const auto versions = ds::list_versions(root);
  CHECK(versions.size() == std::size_t(1 + procs * appends));
  std::uint64_t prev = 0;
  for (const auto& e : versions) {
    auto d = ds::dataset::open(root, e.version);
    CHECK(d.count_rows() == prev + (e.version == 1 ? 1 : rows));
    prev = d.count_rows();
  }
}

TEST_CASE("readers during writes: a version's row count never changes once seen") {
  scratch_dir t("c-read");
  const auto root = t.sub("ds");
  ds::write(root, clustered_batch(0, 5));
  constexpr int writers = 3, appends = 12;
  std::vector<pid_t> kids;
  for (int p = 0; p < writers; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int failed = 0;
      for (int i = 0; i < appends; ++i) {
        try {
          append_rows(root, 1000 * (p + 1) + i * 2, 2);
        } catch (...) {
          ++failed;
        }
      }
      ::_exit(failed);
    }
    kids.push_back(pid);
  }
  std::map<std::uint64_t, std::uint64_t> seen;
  std::size_t reads = 0, mismatches = 0, errors = 0;
  int failures = 0;
  std::vector<int> statuses(kids.size(), -1);
  for (;;) {
    bool running = false;
    for (std::size_t k = 0; k < kids.size(); ++k) {
      if (statuses[k] >= 0) continue;
      int st = 0;
      const pid_t r = ::waitpid(kids[k], &st, WNOHANG);
      if (r == 0) running = true;
      else statuses[k] = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
    }
    try {
      auto d = ds::dataset::open(root);
      const auto n = std::uint64_t(d.to_batch().num_rows());  // a full scan of the version
      auto [it, fresh] = seen.emplace(d.version(), n);
      if (!fresh && it->second != n) ++mismatches;
      // An older version seen before still has its count.
      if (seen.size() > 1) {
        auto old = seen.begin();
        std::advance(old, std::ptrdiff_t(reads % seen.size()));
        if (ds::dataset::open(root, old->first).count_rows() != old->second) ++mismatches;
      }
      ++reads;
    } catch (const std::exception& e) {
      INFO(e.what());
      ++errors;
    }
    if (!running) break;
  }
  for (auto s : statuses) failures += s;
  CHECK(failures == 0);
  CHECK(errors == 0);
  CHECK(mismatches == 0);
  CHECK(reads > 1);
  CHECK(ds::dataset::open(root).count_rows() == 5 + writers * appends * 2);
  for (const auto& [v, n] : seen) CHECK(ds::dataset::open(root, v).count_rows() == n);
}

namespace {

// The rows of the process matrix: id, v int64 (what updates and merges change), vec.
record_batch matrix_rows(const std::vector<std::int64_t>& ids, std::int64_t v) {
  auto b = clustered_batch(0, std::int64_t(ids.size()));
  std::vector<std::int64_t> vs(ids.size(), v);
  return make_batch({{"id", make_array<std::int64_t>(ids)}, {"v", make_array<std::int64_t>(vs)}, {"vec", b.columns[1]}});
}

// Iterations a forked process committed (its log: one line per success).
std::set<int> matrix_successes(const std::string& log) {
  std::set<int> out;
  std::ifstream in(log);
  for (int i; in >> i;) out.insert(i);
  return out;
}

}  // namespace

TEST_CASE("process matrix: append, update, merge insert, delete, compaction and index builds at once lose and duplicate nothing") {
  scratch_dir t("c-matrix");
  const auto root = t.sub("ds");
  // 400 rows in 4 fragments; each kind of row operation owns a class of ids (id % 4) or
  // ids of its own, so that the final state follows from which operations committed.
  std::vector<std::int64_t> base(400);
  for (std::int64_t i = 0; i < 400; ++i) base[std::size_t(i)] = i;
  ds::write(root, matrix_rows(base, 0), opts(ds::write_mode::create, 100));
  constexpr int rounds = 16;
  const std::vector<std::function<void(int)>> ops{
      // 0 append: 5 new rows, ids 100000 + 5i..
      [&](int i) {
        std::vector<std::int64_t> ids;
        for (int j = 0; j < 5; ++j) ids.push_back(100000 + i * 5 + j);
        ds::write(root, matrix_rows(ids, 0), opts(ds::write_mode::append, 100));
      },
      // 1 update: v + 1 on class 0
      [&](int) { ds::update(root, "id < 400 AND id % 4 = 0", {{"v", "v + 1"}}); },
      // 2 merge insert: ten class-3 rows (v = 1000 + i) and five new ones
      [&](int i) {
        std::vector<std::int64_t> ids;
        for (int k = 0; k < 10; ++k) ids.push_back(4 * (i * 10 + k) + 3);
        for (int j = 0; j < 5; ++j) ids.push_back(200000 + i * 5 + j);
        ds::merge_insert_options m;
        m.on = {"id"};
        m.when_matched_update_all = true;
        m.when_not_matched_insert_all = true;
        ds::merge_insert(root, std::vector<record_batch>{matrix_rows(ids, 1000 + i)}, m);
      },
      // 3 delete: the class-2 rows of a range of 40 ids
      [&](int i) {
        ds::delete_where(root, "id % 4 = 2 AND id >= " + std::to_string(i * 40) + " AND id < " + std::to_string(i * 40 + 40));
      },
      // 4 compaction (indexes remapped)
      [&](int) {
        ds::compaction_options co;
        co.target_rows_per_fragment = 200;
        co.remap_indexes = lancet::index::compaction_remapper();
        ds::compact_files(root, co);
      },
      // 5 index build (replacing) and optimisation, in turn
      [&](int i) {
        if (i % 2 == 0) {
          auto o = flat_index();
          o.replace = true;
          index::build_ivf_index(root, o);
        } else if (!index::list_indices(*ds::load_latest(root)).empty()) {
          index::optimize_indices(root);
        }
      }};
  std::vector<pid_t> kids;
  for (std::size_t p = 0; p < ops.size(); ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      std::ofstream log(t.sub("log." + std::to_string(p))), err(t.sub("err." + std::to_string(p)));
      for (int i = 0; i < rounds; ++i) {
        try {
          ops[p](i);
          log << i << "\n" << std::flush;
        } catch (const std::exception& e) {
          err << i << ": " << e.what() << "\n" << std::flush;
        }
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (auto pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::vector<std::set<int>> ok;
  for (std::size_t p = 0; p < ops.size(); ++p) {
    ok.push_back(matrix_successes(t.sub("log." + std::to_string(p))));
    std::ifstream err(t.sub("err." + std::to_string(p)));
    const std::string errors((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    const std::string summary = std::to_string(ok[p].size()) + " of " + std::to_string(rounds) + " committed" +
                                (errors.empty() ? std::string() : "; failed: " + errors);
    MESSAGE("operation " << p << ": " << summary);
  }
  // Row operations retry what a rival preempted: each commits at least once.
  for (int p : {0, 1, 2, 3}) CHECK(!ok[std::size_t(p)].empty());

  // The rows the committed operations leave, with their v.
  std::map<std::int64_t, std::int64_t> want;
  for (std::int64_t id = 0; id < 400; ++id) want[id] = id % 4 == 0 ? std::int64_t(ok[1].size()) : 0;
  for (int i : ok[0])
    for (int j = 0; j < 5; ++j) want[100000 + i * 5 + j] = 0;
  for (int i : ok[2]) {
    for (int k = 0; k < 10; ++k) want[4 * (i * 10 + k) + 3] = 1000 + i;
    for (int j = 0; j < 5; ++j) want[200000 + i * 5 + j] = 1000 + i;
  }
  for (int i : ok[3])
    for (std::int64_t id = i * 40; id < i * 40 + 40; ++id)
      if (id % 4 == 2) want.erase(id);
  std::map<std::int64_t, std::int64_t> have;
  std::size_t rows = 0;
  for (auto sc = ds::dataset::open(root).scan({.columns = {"id", "v"}}); auto b = sc.next();)
    for (std::int64_t r = 0; r < b->num_rows(); ++r, ++rows) have[b->columns[0]->value<std::int64_t>(r)] = b->columns[1]->value<std::int64_t>(r);
  CHECK(rows == have.size());  // no id twice
  CHECK(have == want);
  // Every version opens and reads its rows.
  for (const auto& e : ds::list_versions(root)) {
    INFO("version " << e.version);
    CHECK_NOTHROW(ds::dataset::open(root, e.version).to_batch());
  }
}
