// Crash safety of the maintenance and row operations (kill -9): a process running
// index::build_ivf_index, index::optimize_indices, dataset::compact_files,
// dataset::update, dataset::merge_insert or dataset::delete_where is killed (SIGKILL) at
// 20 random moments each, on one dataset of 20,000+ rows x 32-d float
// vectors with an IVF_PQ index (16 partitions, 8 sub-vectors). As the append test of
// test_dataset.cpp: the operation is timed once on a copy, then each round forks a
// child that runs it, sleeps a random fraction of 1.3x that time and kills it.
// After every kill: the dataset opens; its latest version is the previous one or the
// next (compaction: after its ReserveFragments versions, which keep the rows); every
// committed version reads whole (ids 0..rows-1, as recorded); no manifest
// references a missing file; the files the killed round left are referenced by none.
// At the end (after three clean commits): cleanup_old_versions (delete_unverified)
// removes every leftover and nothing a kept version references; kept versions read
// the same rows, our index searches, and LanceDB reads the dataset (count, ids) and
// searches its index (only live rows, exact distances with refine).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/dataset/cleanup.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/index/optimize/remap.hpp>

#include "support/ids.hpp"
#include "support/interop.hpp"
#include "support/kill_child.hpp"
#include "support/neighbours.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
namespace t = lancet::testing;
namespace fs = std::filesystem;
using njson = nlohmann::json;

namespace {

using lancet::testing::iota_ids;

constexpr std::size_t crash_dim = 32;

// n vectors around 16 fixed centres (seeded by the first id).
std::vector<float> vectors(std::size_t n, std::int64_t first_id) {
  std::mt19937 centres_rng(7);
  std::uniform_real_distribution<float> cu(0, 10);
  std::vector<float> centres(16 * crash_dim);
  for (auto& c : centres) c = cu(centres_rng);
  std::mt19937 rng(std::uint32_t(first_id) * 2654435761u + 1);
  std::normal_distribution<float> noise(0, 0.5f);
  std::vector<float> v(n * crash_dim);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % 16;
    for (std::size_t j = 0; j < crash_dim; ++j) v[i * crash_dim + j] = centres[c * crash_dim + j] + noise(rng);
  }
  return v;
}

void append_vectors(const std::string& root, std::size_t n, std::int64_t first_id) {
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, t::id_vector_batch(vectors(n, first_id), crash_dim, first_id), wo);
}

index::build_options build_opts(bool replace) {
  index::build_options b;
  b.column = "vector";
  b.type = index::ivf_index_type::ivf_pq;
  b.num_partitions = 16;
  b.num_sub_vectors = 8;
  b.replace = replace;
  return b;
}

bool has_index(const std::string& root) { return !index::list_indices(*dataset::load_latest(root)).empty(); }

// Every file under the directories operations write (relative paths): data/,
// _deletions/, _indices/, _transactions/, and temporary files under _versions/.
std::set<std::string> disk_files(const std::string& root) {
  std::set<std::string> out;
  for (const char* d : {"data", "_deletions", "_indices", "_transactions", "_versions"}) {
    const fs::path dir = fs::path(root) / d;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      const auto rel = e.path().lexically_relative(root).generic_string();
      if (std::string(d) == "_versions" && !dataset::detail::is_temporary(e.path().filename().string()))
        continue;
      out.insert(rel);
    }
  }
  return out;
}

// What the manifests of `versions` (all when empty) reference.
dataset::detail::referenced referenced_by_versions(const std::string& root, const std::set<std::uint64_t>& versions = {}) {
  dataset::detail::referenced r;
  for (const auto& v : dataset::list_versions(root)) {
    if (!versions.empty() && !versions.count(v.version)) continue;
    const auto mf = dataset::read_manifest_file_at(v.path);
    dataset::detail::collect(mf.manifest, mf.indices, r);
  }
  return r;
}

bool is_referenced(const dataset::detail::referenced& r, const std::string& rel) {
  if (r.data.count(rel) || r.deletions.count(rel) || r.transactions.count(rel)) return true;
  if (rel.rfind("_indices/", 0) == 0) {
    const auto uuid = rel.substr(9, rel.find('/', 9) - 9);
    return r.index_uuids.count(uuid) > 0;
  }
  return false;
}

// Every file the manifests of `versions` reference exists (an index: its directory
// with index.idx).
void check_references_exist(const std::string& root, const std::set<std::uint64_t>& versions = {}) {
  const auto r = referenced_by_versions(root, versions);
  for (const auto* s : {&r.data, &r.deletions, &r.transactions})
    for (const auto& rel : *s) {
      INFO("referenced: " << rel);
      CHECK(fs::is_regular_file(fs::path(root) / rel));
    }
  for (const auto& uuid : r.index_uuids) {
    INFO("referenced index: " << uuid);
    CHECK(fs::is_regular_file(fs::path(root) / "_indices" / uuid / "index.idx"));
  }
}

std::vector<std::int64_t> sorted_ids(const dataset::dataset& d) {
  dataset::scan_options o;
  o.columns = {"id"};
  const auto b = d.to_batch(o);
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < b.num_rows(); ++i) ids.push_back(b.columns[0]->value<std::int64_t>(i));
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Every recorded version reads whole: ids 0..rows-1 (appends only ever add the next
// ids; index builds, optimisations and compactions keep the rows).
void check_versions(const std::string& root, const std::map<std::uint64_t, std::uint64_t>& committed) {
  auto d = dataset::dataset::open(root);
  for (const auto& [v, rows] : committed) {
    INFO("version " << v);
    auto dv = d.checkout(v);
    CHECK(dv.count_rows() == rows);
    CHECK(sorted_ids(dv) == iota_ids(0, std::int64_t(rows)));
  }
}

struct crash_stats {
  int killed = 0;              // SIGKILL landed before the child returned
  int killed_uncommitted = 0;  // ... and before it committed
  int finished = 0;
  double op_seconds = 0;
};

// 20 rounds of: prepare (uninterrupted commits: appends), then the operation in a
// child killed after a random delay, then the checks. `committed` maps version -> rows;
// a committed operation leaves rows + `added` rows (ids 0.. still: it deletes or inserts
// at the end of the id range).
crash_stats kill_rounds(const std::string& what, const std::string& root, std::map<std::uint64_t, std::uint64_t>& committed,
                        std::uint64_t& rows, std::mt19937_64& rng, const std::function<void()>& prepare,
                        const std::function<void(const std::string&)>& op, bool reserves = false,
                        std::int64_t added = 0) {
  crash_stats st;
  const auto record_latest = [&] {
    const auto d = dataset::dataset::open(root);
    committed[d.version()] = rows;
  };
  for (int round = 0; round < 20; ++round) {
    prepare();
    record_latest();
    if (round == 0) {  // how long the operation takes here, on a copy, in a child as the killed ones run
      t::temp_dir probe("crash-probe");
      fs::copy(root, probe.sub("ds"), fs::copy_options::recursive);
      st.op_seconds = lancet::testing::child_seconds([&] { op(probe.sub("ds")); });
      // The operation commits one version (compaction: after its ReserveFragments ones).
      const auto pv = dataset::dataset::open(probe.sub("ds")).version();
      if (reserves) CHECK(pv > committed.rbegin()->first);
      else CHECK(pv == committed.rbegin()->first + 1);
    }
    const auto latest = committed.rbegin()->first;
    const auto before = disk_files(root);
    const auto delay = std::chrono::duration<double>(st.op_seconds * 1.3 * double(rng() % 1000) / 1000.0);
    double took = 0;
    const int status = lancet::testing::run_killed_after(delay, [&] { op(root); }, &took);
    const bool finished = WIFEXITED(status);
    // Later rounds may run faster than the probe (warm caches): the kill delays follow
    // the latest finished run, so that kills keep landing inside the operation.
    if (finished && took > 0) st.op_seconds = took;
    INFO(what << " round " << round << ", killed after " << delay.count() << " s of ~" << st.op_seconds << " s");
    if (finished) {
      CHECK(WEXITSTATUS(status) == 0);
      ++st.finished;
    } else {
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
      ++st.killed;
    }

    // The dataset opens; its latest version is the previous one or the next.
    auto d = dataset::dataset::open(root);
    std::string listing;
    for (const auto& v : dataset::list_versions(root)) listing += " " + std::to_string(v.version);
    INFO("latest " << d.version() << ", previous " << latest << ", versions:" << listing);
    // Compaction first commits one ReserveFragments version per task (as Lance does),
    // then the Rewrite: the latest is the previous one, or after reservations only,
    // or after them and the Rewrite. The rows stay those of the previous version.
    bool rewritten = false;
    if (reserves) {
      REQUIRE(d.version() >= latest);
      for (auto v = latest + 1; v <= d.version(); ++v) {
        INFO("version " << v);
        const auto txn = d.checkout(v).transaction();
        REQUIRE(txn.has_value());
        const bool reserve = std::holds_alternative<pb::transaction::reserve_fragments>(txn->operation);
        const bool rewrite = std::holds_alternative<pb::transaction::rewrite>(txn->operation);
        CHECK((reserve || (rewrite && v == d.version())));
        rewritten = rewritten || rewrite;
        committed[v] = rows;
      }
      if (finished) CHECK(rewritten);
    } else {
      REQUIRE((d.version() == latest || d.version() == latest + 1));
      if (finished) CHECK(d.version() == latest + 1);
      rewritten = d.version() == latest + 1;
      if (rewritten) {
        rows = std::uint64_t(std::int64_t(rows) + added);
        committed[d.version()] = rows;
      }
    }
    if (!finished && !rewritten) ++st.killed_uncommitted;
    check_versions(root, committed);
    check_references_exist(root);
    // What the round left without committing is referenced by no manifest.
    // (Committed reservations reference their transaction files, nothing else.)
    if (!rewritten) {
      const auto r = referenced_by_versions(root);
      std::set<std::uint64_t> reserved;
      for (auto v = latest + 1; v <= d.version(); ++v) reserved.insert(v);
      const auto reservations = reserved.empty() ? dataset::detail::referenced{} : referenced_by_versions(root, reserved);
      for (const auto& f : disk_files(root))
        if (!before.count(f) && !reservations.transactions.count(f)) {
          INFO("left by the killed round: " << f);
          CHECK_FALSE(is_referenced(r, f));
        }
    }
  }
  MESSAGE(what << ": took " << st.op_seconds << " s (the latest finished run); " << st.killed << " of 20 killed mid-operation ("
               << st.killed_uncommitted << " before committing), " << st.finished << " finished");
  CHECK(st.killed > 0);
  CHECK(st.killed_uncommitted > 0);
  return st;
}

}  // namespace

TEST_CASE("crash safety: index build, optimize, compaction, update, merge insert and delete killed (SIGKILL) at 20 random moments each") {
  t::temp_dir tmp("crash");
  const std::string root = (tmp.path() / "ds").string();
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t rows = 20'000;
  dataset::write(root, t::id_vector_batch(vectors(rows, 0), crash_dim, 0));
  std::map<std::uint64_t, std::uint64_t> committed{{1, rows}};
  std::mt19937_64 rng(20261201);

  // 1. Index creation (replace once an index is committed).
  kill_rounds("build_ivf_index", root, committed, rows, rng, [] {},
              [](const std::string& r) { index::build_ivf_index(r, build_opts(has_index(r))); });
  if (!has_index(root)) {  // no round committed: the later stages need an index
    index::build_ivf_index(root, build_opts(false));
    committed[dataset::dataset::open(root).version()] = rows;
  }

  // 2. Index optimisation, 500 new rows before each round.
  kill_rounds(
      "optimize_indices", root, committed, rows, rng,
      [&] {
        append_vectors(root, 500, std::int64_t(rows));
        rows += 500;
      },
      [](const std::string& r) { index::optimize_indices(r); });

  // 3. Compaction, four fragments of 300 rows before each round.
  kill_rounds(
      "compact_files", root, committed, rows, rng,
      [&] {
        for (int k = 0; k < 4; ++k) {
          append_vectors(root, 300, std::int64_t(rows));
          rows += 300;
          committed[dataset::dataset::open(root).version()] = rows;
        }
      },
      [](const std::string& r) { dataset::compact_files(r, {.remap_indexes = lancet::index::compaction_remapper()}); }, true);

  // 4. Update (rows move to a new fragment, ids kept), 300 new rows before each round.
  kill_rounds(
      "update", root, committed, rows, rng,
      [&] {
        append_vectors(root, 300, std::int64_t(rows));
        rows += 300;
      },
      [&](const std::string& r) {
        dataset::update(r, "id >= " + std::to_string(rows - 400) + " AND id % 3 = 0", {{"id", "id"}});
      });

  // 5. Merge insert: 100 rows of the end of the id range updated, 100 new ones inserted.
  kill_rounds(
      "merge_insert", root, committed, rows, rng, [] {},
      [&](const std::string& r) {
        dataset::merge_insert_options m;
        m.on = {"id"};
        m.when_matched_update_all = true;
        m.when_not_matched_insert_all = true;
        const auto first = std::int64_t(rows) - 100;
        dataset::merge_insert(r, std::vector<arrow::record_batch>{t::id_vector_batch(vectors(200, first), crash_dim, first)},
                              m);
      },
      false, 100);

  // 6. Delete of the last 50 ids, 100 new rows before each round.
  kill_rounds(
      "delete_where", root, committed, rows, rng,
      [&] {
        append_vectors(root, 100, std::int64_t(rows));
        rows += 100;
      },
      [&](const std::string& r) { dataset::delete_where(r, "id >= " + std::to_string(rows - 50)); }, false, -50);

  // Leftovers of the killed operations: on disk, referenced by no manifest.
  std::set<std::string> leftovers;
  {
    const auto r = referenced_by_versions(root);
    for (const auto& f : disk_files(root))
      if (!is_referenced(r, f)) leftovers.insert(f);
  }
  MESSAGE(leftovers.size() << " files left by killed operations, referenced by no manifest");
  CHECK(!leftovers.empty());  // dozens of kills before committing leave some

  // Three clean commits after every kill: the versions cleanup keeps.
  append_vectors(root, 100, std::int64_t(rows));
  rows += 100;
  committed[dataset::dataset::open(root).version()] = rows;
  index::optimize_indices(root);
  committed[dataset::dataset::open(root).version()] = rows;
  append_vectors(root, 50, std::int64_t(rows));
  rows += 50;
  const auto latest = dataset::dataset::open(root).version();
  committed[latest] = rows;
  const std::set<std::uint64_t> kept = {latest - 2, latest - 1, latest};
  for (auto v : kept) REQUIRE(committed.count(v));
  const auto kept_refs = referenced_by_versions(root, kept);

  dataset::cleanup_options co;
  co.keep_versions = 3;
  co.delete_unverified = true;
  const auto cs = dataset::cleanup_old_versions(root, co);
  MESSAGE("cleanup removed " << cs.old_versions << " versions and " << cs.files_removed << " files");
  CHECK(cs.old_versions == committed.size() - 3);
  for (const auto& f : cs.removed_files) {
    INFO("removed: " << f);
    CHECK_FALSE(is_referenced(kept_refs, f));
  }
  // Every leftover is gone; what stays on disk is exactly what the kept versions reference.
  const auto after = disk_files(root);
  for (const auto& f : leftovers) {
    INFO("leftover: " << f);
    CHECK_FALSE(after.count(f));
  }
  for (const auto& f : after) {
    INFO("on disk after cleanup: " << f);
    CHECK(is_referenced(kept_refs, f));
  }
  std::map<std::uint64_t, std::uint64_t> kept_rows;
  for (auto v : kept) kept_rows[v] = committed[v];
  check_versions(root, kept_rows);
  check_references_exist(root);
  {
    std::vector<std::uint64_t> listed;
    for (const auto& v : dataset::list_versions(root)) listed.push_back(v.version);
    CHECK(listed == std::vector<std::uint64_t>(kept.begin(), kept.end()));
  }

  // Our index still searches: k live rows per query.
  auto d = dataset::dataset::open(root);
  std::set<std::uint64_t> live;
  {
    dataset::scan_options o;
    o.columns = {"id"};
    o.with_row_id = true;
    const auto b = d.to_batch(o);
    REQUIRE(b.schema->fields.back().name == "_rowid");
    for (std::int64_t i = 0; i < b.num_rows(); ++i) live.insert(b.columns.back()->value<std::uint64_t>(i));
    CHECK(live.size() == rows);
  }
  const auto queries = vectors(5, 999'999);
  {
    auto ix = index::open_vector_index(*dataset::load_latest(root), "vector");
    index::search_params sp;
    sp.k = 10;
    sp.nprobes = 16;
    for (std::size_t q = 0; q < 5; ++q) {
      const auto res = ix.searcher->search(queries.data() + q * crash_dim, crash_dim, sp);
      CHECK(res.size() == 10);
      for (const auto& n : res) CHECK(live.count(n.row_id));
    }
  }

  // LanceDB: the rows, the index, its search (only live rows; exact distances).
  {
    std::istringstream out(t::node("read_table.mjs", {root, "--columns", "id"}));
    std::vector<std::int64_t> ids;
    std::uint64_t count = 0;
    std::string line;
    while (std::getline(out, line)) {
      const auto j = njson::parse(line);
      if (j.contains("countRows")) count = j["countRows"].get<std::uint64_t>();
      else if (j["id"].is_string()) ids.push_back(std::stoll(j["id"].get<std::string>()));
      else ids.push_back(j["id"].get<std::int64_t>());
    }
    std::sort(ids.begin(), ids.end());
    CHECK(count == rows);
    CHECK(ids == iota_ids(0, std::int64_t(rows)));
  }
  {
    const auto listing = njson::parse(t::node("list_indices.mjs", {root}));
    REQUIRE(listing["indices"].size() == 1);
    const auto& st = listing["indices"][0]["stats"];
    INFO(st.dump());
    CHECK(listing["indices"][0]["indexType"] == "IvfPq");
    CHECK(st["numIndexedRows"].get<std::uint64_t>() + st["numUnindexedRows"].get<std::uint64_t>() == rows);
    CHECK(st["numUnindexedRows"].get<std::uint64_t>() == 50);
  }
  {
    const auto qfile = tmp.path() / "q.f32";
    t::write_f32(qfile, queries);
    const auto hits = t::lancedb_search(root, qfile, crash_dim, 10, {"--nprobes", "16", "--refine", "2"});
    for (std::size_t qi = 0; qi < hits.ids.size(); ++qi) {
      REQUIRE(hits.ids[qi].size() == 10);
      for (std::size_t i = 0; i < 10; ++i) {
        const auto rid = hits.ids[qi][i];
        INFO("query " << qi << " row " << rid);
        REQUIRE(live.count(rid));
        const auto b = d.take({rid}, {"vector"});
        const auto* v = b.columns[0]->children[0]->values<float>() + b.columns[0]->offset * crash_dim;
        double dist = 0;
        for (std::size_t k = 0; k < crash_dim; ++k) {
          const double x = double(v[k]) - double(queries[qi * crash_dim + k]);
          dist += x * x;
        }
        CHECK(hits.distances[qi][i] == doctest::Approx(dist).epsilon(1e-3));
      }
    }
    CHECK(hits.ids.size() == 5);
  }
  MESSAGE("total " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
}
