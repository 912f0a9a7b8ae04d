// dataset::cleanup_old_versions (Lance's cleanup_old_versions) and `lancet cleanup`:
//  - a history of create, append, delete, index, compaction and append: keeping the
//    newest 2 versions removes the older manifests and exactly the data, deletion,
//    transaction and index files only they referenced; the kept versions open and read
//    the same rows as before, and LanceDB reads them (tests/interop/read_table.mjs);
//  - leftovers of killed writes (no manifest references them): removed when older
//    than the unverified age, kept when younger (or, whatever their age, when modified
//    after the oldest kept version), removed with delete_unverified;
//  - the age condition (older_than against the manifests' commit times), the latest
//    version always kept, tagged versions kept and reported, dry runs removing nothing;
//  - bad input: not a dataset, keep 0, an unreadable manifest or tag file (nothing
//    removed).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <lancet/dataset.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/dataset_writes.hpp"
#include "support/files.hpp"
#include "support/interop.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace fs = std::filesystem;
namespace t = lancet::testing;
using namespace std::chrono_literals;

namespace {

void write(const std::string& root, std::int64_t first, std::size_t n, bool create) {
  dataset::write_options o;
  o.mode = create ? dataset::write_mode::create : dataset::write_mode::append;
  dataset::write(root, t::three_cluster_rows(first, n), o);
}

std::vector<std::int64_t> ids_at(const std::string& root, std::optional<std::uint64_t> version = std::nullopt) {
  auto d = dataset::dataset::open(root, version);
  auto b = d.to_batch({.columns = {"id"}});
  const auto* v = b.columns[0]->values<std::int64_t>();
  std::vector<std::int64_t> out(v, v + b.columns[0]->length);
  std::sort(out.begin(), out.end());
  return out;
}

// The files a version's manifest references (relative), manifest and index files included.
std::set<std::string> files_referenced_by(const std::string& root, std::uint64_t version) {
  std::set<std::string> out;
  const auto v = dataset::find_version(root, version);
  REQUIRE(v);
  out.insert(fs::path(v->path).lexically_relative(root).generic_string());
  const auto mf = dataset::read_manifest_file_at(v->path);
  for (const auto& f : mf.manifest.fragments) {
    for (const auto& file : f.files) out.insert("data/" + file.path);
    if (f.deletion_file) out.insert(f.deletion_file->relative_path(f.id));
  }
  if (!mf.manifest.transaction_file.empty()) out.insert("_transactions/" + mf.manifest.transaction_file);
  for (const auto& idx : mf.indices) {
    const auto dir = "_indices/" + idx.uuid.to_string();
    for (const auto& e : fs::recursive_directory_iterator(fs::path(root) / dir))
      if (e.is_regular_file()) out.insert(fs::path(e.path()).lexically_relative(root).generic_string());
  }
  return out;
}

void touch(const fs::path& p, std::string_view bytes, std::chrono::system_clock::duration age) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
  fs::last_write_time(p, std::chrono::file_clock::from_sys(std::chrono::system_clock::now() - age));
}

std::uint64_t version_count(const std::string& root) { return dataset::list_versions(root).size(); }

// LanceDB's rows of the latest version (or `version`): the ids, sorted, and its countRows().
std::pair<std::vector<std::int64_t>, std::int64_t> lancedb_ids(const std::string& root,
                                                               std::optional<std::uint64_t> version = std::nullopt) {
  std::vector<std::string> args{root, "--columns", "id"};
  if (version) args.insert(args.end(), {"--version", std::to_string(*version)});
  const auto out = t::node("read_table.mjs", args);
  std::vector<std::int64_t> ids;
  std::int64_t count = -1;
  std::size_t at = 0;
  while (at < out.size()) {
    const auto nl = out.find('\n', at);
    const auto line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? out.size() : nl + 1;
    // int64 values are strings in the canonical form ({"id":"12"}).
    if (line.rfind("{\"id\":", 0) == 0) ids.push_back(std::stoll(line.substr(line[6] == '"' ? 7 : 6)));
    else if (line.rfind("{\"countRows\":", 0) == 0) count = std::stoll(line.substr(13));
  }
  std::sort(ids.begin(), ids.end());
  return {ids, count};
}

}  // namespace

TEST_CASE("cleanup keeping 2 versions: old manifests and only-their files go; kept versions read the same, in LanceDB too") {
  t::scratch_dir tmp("cleanup");
  const auto root = tmp.sub("ds");
  write(root, 0, 120, true);                      // v1
  write(root, 120, 120, false);                   // v2
  t::delete_where(root, [](std::int64_t id) { return id % 5 == 0; });  // v3: deletion files
  index::build_options bo;
  bo.column = "vector";
  bo.type = index::ivf_index_type::ivf_flat;
  bo.num_partitions = 2;
  index::build_ivf_index(root, bo);               // v4: an index
  // ReserveFragments + Rewrite: two versions, the fragments rewritten, the index remapped.
  const std::uint64_t c = dataset::compact_files(root, {.remap_indexes = lancet::index::compaction_remapper()}).version;
  REQUIRE(c >= 5);
  write(root, 240, 30, false);                    // the latest
  const std::uint64_t latest = c + 1;
  REQUIRE(version_count(root) == latest);

  const auto before = t::files_under(root, true, true);
  const auto keep5 = files_referenced_by(root, c), keep6 = files_referenced_by(root, latest);
  const auto ids5 = ids_at(root, c), ids6 = ids_at(root, latest);
  REQUIRE(ids6.size() == 240 - 48 + 30);
  // Files only the old versions referenced: their manifests, the first fragments' data
  // and deletion files, the old versions' transactions, the index before its remap.
  std::set<std::string> only_old;
  for (std::uint64_t v = 1; v < c; ++v)
    for (const auto& f : files_referenced_by(root, v))
      if (!keep5.count(f) && !keep6.count(f)) only_old.insert(f);
  REQUIRE(std::count_if(only_old.begin(), only_old.end(), [](const std::string& f) { return f.rfind("data/", 0) == 0; }) >= 2);
  REQUIRE(std::count_if(only_old.begin(), only_old.end(), [](const std::string& f) { return f.rfind("_deletions/", 0) == 0; }) >= 1);
  REQUIRE(std::count_if(only_old.begin(), only_old.end(), [](const std::string& f) { return f.rfind("_indices/", 0) == 0; }) >= 2);
  REQUIRE(std::count_if(only_old.begin(), only_old.end(), [](const std::string& f) { return f.rfind("_transactions/", 0) == 0; }) >= 4);

  std::uint64_t want_bytes = 0;
  for (const auto& f : only_old) want_bytes += fs::file_size(fs::path(root) / f);

  dataset::cleanup_options o;
  o.keep_versions = 2;
  o.dry_run = true;
  const auto dry = dataset::cleanup_old_versions(root, o);
  CHECK(t::files_under(root, true, true) == before);  // a dry run removes nothing
  o.dry_run = false;
  const auto st = dataset::cleanup_old_versions(root, o);
  CHECK(st.removed_files == dry.removed_files);
  CHECK(st.bytes_removed == dry.bytes_removed);

  std::vector<std::uint64_t> old_versions;
  for (std::uint64_t v = 1; v < c; ++v) old_versions.push_back(v);
  CHECK(st.old_versions == c - 1);
  CHECK(st.removed_versions == old_versions);
  CHECK(st.latest_version == latest);
  const auto after = t::files_under(root, true, true);
  std::set<std::string> gone;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::inserter(gone, gone.end()));
  std::set<std::string> want_gone = only_old;
  for (std::uint64_t v = 1; v < c; ++v) want_gone.insert("_versions/" + dataset::manifest_file_name(dataset::naming_scheme::v2, v));
  CHECK(gone == want_gone);
  CHECK(st.files_removed == only_old.size() - (c - 1));  // only_old holds the old manifests too
  CHECK(std::set<std::string>(st.removed_files.begin(), st.removed_files.end()) == want_gone);
  CHECK(st.bytes_removed == want_bytes);
  for (const auto& f : keep5) CHECK_MESSAGE(std::binary_search(after.begin(), after.end(), f), f);
  for (const auto& f : keep6) CHECK_MESSAGE(std::binary_search(after.begin(), after.end(), f), f);
  // No empty directory left for a removed index.
  for (const auto& e : fs::directory_iterator(fs::path(root) / "_indices")) CHECK_FALSE(fs::is_empty(e.path()));

  CHECK(version_count(root) == 2);
  CHECK(ids_at(root, c) == ids5);
  CHECK(ids_at(root, latest) == ids6);
  CHECK_THROWS(dataset::dataset::open(root, c - 1));
  auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
  std::vector<float> q(t::three_cluster_dim, 10.0f);
  index::search_params sp;
  sp.k = 5;
  CHECK(ix.searcher->search(q.data(), q.size(), sp).size() == 5);

  // A second run has nothing left to do.
  const auto again = dataset::cleanup_old_versions(root, o);
  CHECK(again.old_versions == 0);
  CHECK(again.files_removed == 0);
  CHECK(t::files_under(root, true, true) == after);

  // LanceDB reads both kept versions.
  const auto [lids, lcount] = lancedb_ids(root);
  CHECK(lids == ids6);
  CHECK(lcount == std::int64_t(ids6.size()));
  CHECK(lancedb_ids(root, c).first == ids5);
}

TEST_CASE("cleanup: leftovers of killed writes go when old enough or unverified deletion is asked; young ones stay") {
  t::scratch_dir tmp("cleanup-left");
  const auto root = tmp.sub("ds");
  write(root, 0, 10, true);
  write(root, 10, 10, false);
  const auto committed = t::files_under(root, true, true);
  const auto uuid = lancet::uuid::generate_v4().to_string();
  const fs::path r(root);
  // Old leftovers (30 days): a data file, lancet's temporary files, a transaction, an index directory.
  const std::vector<std::string> old_left = {
      "data/0000-orphan.lance", "data/.1111-x.lance.4242-1-00000000000000ab.tmp", "_transactions/7-orphan.txn",
      "_indices/" + uuid + "/index.idx", "_indices/" + uuid + "/auxiliary.idx", "_deletions/0-9-77.bin",
      "_versions/.18446744073709551612.manifest.4242-2-00000000000000cd.tmp"};
  for (const auto& f : old_left) touch(r / f, "leftover", 24h * 30);
  // Younger than the 7-day unverified age but older than every version.
  const std::vector<std::string> recent_left = {"data/2222-recent.lance", "_transactions/8-recent.txn"};
  for (const auto& f : recent_left) touch(r / f, "leftover", 1h);
  // Written after the versions were committed: possibly a write in progress.
  write(root, 20, 5, false);  // the oldest kept version stays v1; this one is just newer
  const std::vector<std::string> fresh_left = {"data/3333-fresh.lance", "data/.4444.lance.1-1-ff.tmp"};
  for (const auto& f : fresh_left) touch(r / f, "in progress", 0s);
  // Files that are not Lance's stay whatever their age.
  touch(r / "notes.txt", "mine", 24h * 30);
  touch(r / "data" / "README", "mine", 24h * 30);

  const auto ids = ids_at(root);
  dataset::cleanup_options o;  // no condition on versions: all but the latest could go...
  o.keep_versions = 10;        // ... but all 3 are kept
  auto st = dataset::cleanup_old_versions(root, o);
  CHECK(st.old_versions == 0);
  CHECK(st.files_removed == old_left.size());
  CHECK(std::set<std::string>(st.removed_files.begin(), st.removed_files.end()) ==
        std::set<std::string>(old_left.begin(), old_left.end()));
  CHECK(st.bytes_removed == old_left.size() * 8);
  for (const auto& f : old_left) CHECK_MESSAGE(!fs::exists(r / f), f);
  CHECK_FALSE(fs::exists(r / "_indices" / uuid));
  for (const auto& f : recent_left) CHECK_MESSAGE(fs::exists(r / f), f);
  for (const auto& f : fresh_left) CHECK_MESSAGE(fs::exists(r / f), f);
  for (const auto& f : committed) CHECK_MESSAGE(fs::exists(r / f), f);
  CHECK(fs::exists(r / "notes.txt"));
  CHECK(fs::exists(r / "data" / "README"));

  // With delete_unverified the 1-hour-old ones go; the fresh ones are newer than the
  // oldest kept version and stay.
  o.delete_unverified = true;
  st = dataset::cleanup_old_versions(root, o);
  CHECK(std::set<std::string>(st.removed_files.begin(), st.removed_files.end()) ==
        std::set<std::string>(recent_left.begin(), recent_left.end()));
  for (const auto& f : fresh_left) CHECK_MESSAGE(fs::exists(r / f), f);
  // A shorter unverified age has the same effect.
  touch(r / "data/5555-recent.lance", "x", 1h);
  o.delete_unverified = false;
  o.unverified_min_age = 30min;
  st = dataset::cleanup_old_versions(root, o);
  CHECK(st.removed_files == std::vector<std::string>{"data/5555-recent.lance"});
  CHECK(ids_at(root) == ids);
  for (std::uint64_t v = 1; v <= 3; ++v) CHECK_NOTHROW(ids_at(root, v));
}

TEST_CASE("cleanup: the age condition uses the commit times; the latest version always stays") {
  t::scratch_dir tmp("cleanup-age");
  const auto root = tmp.sub("ds");
  for (int v = 0; v < 4; ++v) write(root, v * 10, 10, v == 0);
  const auto ids = ids_at(root);
  dataset::cleanup_options o;
  o.older_than = 1h;  // every version was committed just now
  auto st = dataset::cleanup_old_versions(root, o);
  CHECK(st.old_versions == 0);
  CHECK(st.files_removed == 0);
  CHECK(version_count(root) == 4);

  // An hour from now, with a 30-minute age: all are old, the latest stays. With
  // keep_versions too, a version must meet both conditions.
  o.now = std::chrono::system_clock::now() + 1h;
  o.older_than = 30min;
  o.keep_versions = 3;
  o.dry_run = true;
  st = dataset::cleanup_old_versions(root, o);
  CHECK(st.removed_versions == std::vector<std::uint64_t>{1});
  o.keep_versions.reset();
  o.dry_run = false;
  st = dataset::cleanup_old_versions(root, o);
  CHECK(st.removed_versions == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(version_count(root) == 1);
  CHECK(ids_at(root) == ids);  // the latest version holds every fragment: no data file went
  CHECK(st.files_removed == 3);  // the three transaction files
  for (const auto& f : st.removed_files) CHECK((f.rfind("_versions/", 0) == 0 || f.rfind("_transactions/", 0) == 0));
  // Nothing older than the latest remains to remove; it stays whatever the age.
  st = dataset::cleanup_old_versions(root, o);
  CHECK(st.old_versions == 0);
  CHECK(version_count(root) == 1);
  CHECK(lancedb_ids(root).first == ids);
}

TEST_CASE("cleanup: tagged versions are kept and reported") {
  t::scratch_dir tmp("cleanup-tags");
  const auto root = tmp.sub("ds");
  write(root, 0, 10, true);
  write(root, 10, 10, false);
  write(root, 20, 10, false);
  const auto ids1 = ids_at(root, 1);
  fs::create_directories(fs::path(root) / "_refs" / "tags");
  std::ofstream(fs::path(root) / "_refs" / "tags" / "first.json") << "{\"branch\":null,\"version\":1,\"manifestSize\":812}";
  dataset::cleanup_options o;
  o.keep_versions = 1;
  const auto st = dataset::cleanup_old_versions(root, o);
  CHECK(st.removed_versions == std::vector<std::uint64_t>{2});
  CHECK(st.tagged_versions_kept == std::vector<std::uint64_t>{1});
  CHECK(ids_at(root, 1) == ids1);
  CHECK(ids_at(root, 3).size() == 30);

  // A tag file without a version stops the cleanup before anything goes.
  std::ofstream(fs::path(root) / "_refs" / "tags" / "bad.json") << "{\"branch\":null}";
  write(root, 30, 10, false);
  const auto files = t::files_under(root, true, true);
  CHECK_THROWS_WITH_AS(dataset::cleanup_old_versions(root, o), doctest::Contains("bad.json"), corrupt_error);
  CHECK(t::files_under(root, true, true) == files);
}

TEST_CASE("cleanup: bad input is refused with nothing removed") {
  t::scratch_dir tmp("cleanup-bad");
  const auto root = tmp.sub("ds");
  CHECK_THROWS_WITH_AS(dataset::cleanup_old_versions(root), doctest::Contains("is not a Lance dataset"), not_found_error);
  write(root, 0, 10, true);
  write(root, 10, 10, false);
  write(root, 20, 10, false);
  dataset::cleanup_options o;
  o.keep_versions = 0;
  CHECK_THROWS_WITH_AS(dataset::cleanup_old_versions(root, o), doctest::Contains("keep_versions must be at least 1"),
                       invalid_input_error);
  // An old manifest that cannot be read could reference anything: stop.
  const auto v1 = dataset::find_version(root, 1);
  REQUIRE(v1);
  std::string bytes = dataset::read_small_file(v1->path);
  bytes[bytes.size() - 2] = 'X';  // the LANC magic
  std::ofstream(v1->path, std::ios::binary | std::ios::trunc) << bytes;
  const auto files = t::files_under(root, true, true);
  o.keep_versions = 1;
  CHECK_THROWS_AS(dataset::cleanup_old_versions(root, o), corrupt_error);
  CHECK(t::files_under(root, true, true) == files);
}
