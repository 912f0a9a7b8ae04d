// Removing old versions and the files no kept version needs: Lance's
// `cleanup_old_versions` (rust/lance/src/dataset/cleanup.rs), on a local dataset or one
// on a mounted object store (io::storage_for: listed with modification times, removed
// file by file; an object store has no directories to remove).
//
//   dataset::cleanup_options o;
//   o.older_than = std::chrono::hours(24 * 7);   // versions committed over a week ago
//   o.keep_versions = 5;                          // ... and not among the newest 5
//   auto st = dataset::cleanup_old_versions("/data/items", o);
//   // st.old_versions manifests, st.files_removed files, st.bytes_removed bytes
//
// What is kept (the "working set"): the latest version, whatever its age; every version
// that does not meet all the given conditions (committed before now - older_than,
// older than the newest keep_versions versions); every version a tag names
// (_refs/tags/NAME.json, {"version": N, ...}, as Lance writes them; lancet keeps
// tagged versions and reports them in `tagged_versions_kept`, where Lance by default
// refuses to clean with an error). Every other version's manifest is removed.
//
// Which files go, as Lance decides it:
//   data/*.lance, _deletions/*.{arrow,bin}, _transactions/*.txn, _indices/{uuid}/...
//     that no kept version references. A file an old (removed) version references is
//     "verified" (no write can be in progress with it) and goes whatever its age. A
//     file no manifest references at all (the leftover of a killed write, or a file a
//     write in progress has not committed yet) goes only when it was last modified at
//     least `unverified_min_age` ago (Lance: 7 days), or with `delete_unverified`
//     (only safe when nothing writes to the dataset).
//   the temporary files of killed writes: lancet's ".NAME.PID-N-HEX.tmp" next to any of
//     the above and under _versions/, and Lance's "_versions/.tmp*": unverified files.
//   on S3, the multipart uploads of killed writes under the dataset (never listed as
//     files): aborted by the same rule as temporary files. Azure discards the blocks of
//     uploads never committed by itself, after a week.
//   Nothing modified after the commit time of the oldest kept version is removed (Lance
//     lists only files modified at or before it), so an in-progress write's files are
//     safe; the leftovers of a write killed after the latest commit therefore stay
//     until a later version is committed.
//   Anything else (other files, data files of other base paths, the version hint,
//     _refs/) is left alone.
// Manifests are removed first, then the files, so an interrupted cleanup leaves every
// kept version whole (a file left behind is removed by the next cleanup).
// A manifest that cannot be read stops the cleanup before anything is removed (as in
// Lance: an unreadable manifest could reference files that must stay).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

struct cleanup_options {
  // Remove versions committed more than this long before `now` (Lance's
  // `older_than`). nullopt: no age condition.
  std::optional<std::chrono::seconds> older_than;
  // Keep the newest N versions, N >= 1 (Lance's `retain_n_versions`). nullopt: no
  // count condition. With neither condition, every version but the latest (and tagged
  // ones) is removed, as Lance's default policy does.
  std::optional<std::uint64_t> keep_versions;
  // Files no manifest references go only when last modified at least this long ago.
  std::chrono::seconds unverified_min_age = std::chrono::hours(24 * 7);
  // Remove files no manifest references whatever their age (Lance's
  // `delete_unverified`): only when no write to the dataset is in progress.
  bool delete_unverified = false;
  // Decide and report, remove nothing.
  bool dry_run = false;
  // The present for the age conditions (default: the system clock at the call).
  std::optional<std::chrono::system_clock::time_point> now;
};

struct cleanup_stats {
  std::uint64_t old_versions = 0;   // manifests removed
  std::uint64_t files_removed = 0;  // other files removed (data, deletion, transaction, index, temporary)
  std::uint64_t bytes_removed = 0;  // of both
  std::vector<std::uint64_t> removed_versions;       // ascending
  std::vector<std::string> removed_files;            // relative to the root, manifests first
  std::vector<std::uint64_t> tagged_versions_kept;   // old enough to go but tagged
  std::vector<std::string> aborted_uploads;          // unfinished uploads aborted, relative to the root
  std::uint64_t latest_version = 0;
};

namespace detail {

namespace fs = std::filesystem;

struct referenced {
  std::set<std::string> data, deletions, transactions, index_uuids;  // relative paths; uuids
};

inline std::chrono::system_clock::time_point manifest_time(const pb::manifest& m) {
  using namespace std::chrono;
  if (!m.timestamp) return system_clock::time_point{};
  return system_clock::time_point{duration_cast<system_clock::duration>(seconds(m.timestamp->seconds) +
                                                                        nanoseconds(m.timestamp->nanos))};
}

inline void collect(const pb::manifest& m, const std::vector<pb::index_metadata>& indices, referenced& into) {
  for (const auto& f : m.fragments) {
    for (const auto& file : f.files)
      if (!file.base_id) into.data.insert((fs::path("data") / file.path).lexically_normal().generic_string());
    if (f.deletion_file && !f.deletion_file->base_id)
      into.deletions.insert(fs::path(f.deletion_file->relative_path(f.id)).lexically_normal().generic_string());
  }
  if (!m.transaction_file.empty())
    into.transactions.insert((fs::path(transactions_dir_name) / m.transaction_file).lexically_normal().generic_string());
  for (const auto& idx : indices) into.index_uuids.insert(idx.uuid.to_string());
}

// The versions tags name: _refs/tags/*.json holding {"version": N, ...}.
inline std::map<std::uint64_t, std::string> tagged_versions(const io::storage& st, const std::string& root) {
  std::map<std::uint64_t, std::string> out;
  const std::string dir = (fs::path(root) / "_refs" / "tags").string();
  for (const auto& f : st.list(dir)) {
    const fs::path name(f.path);
    if (name.extension() != ".json") continue;
    const std::string path = (fs::path(dir) / f.path).string();
    const std::string text = st.read_all(path, 1 << 20);
    // The number after the top-level "version" key (Lance's TagContents, camelCase).
    const auto k = text.find("\"version\"");
    std::size_t i = k == std::string::npos ? text.size() : k + 9;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    std::optional<std::uint64_t> v;
    if (i < text.size() && text[i] == ':') {
      ++i;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
      std::size_t j = i;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
      v = detail::parse_u64(std::string_view(text).substr(i, j - i));
    }
    if (!v) throw corrupt_error("tag file '" + path + "' has no \"version\" number");
    out.emplace(*v, name.stem().string());
  }
  return out;
}

// The unfinished uploads under the dataset that may go, by the rule of temporary files:
// begun before the oldest kept version's commit and, unless delete_unverified, at least
// unverified_min_age ago. Stores give the start in whole seconds, so an upload begun in
// the second of that commit may be a write in progress: it stays.
inline std::vector<io::unfinished_upload> stale_uploads(const io::storage& store, const std::string& root,
                                                        std::optional<std::chrono::system_clock::time_point> earliest_kept,
                                                        const cleanup_options& o,
                                                        std::chrono::system_clock::time_point now) {
  std::vector<io::unfinished_upload> out;
  if (!earliest_kept) return out;
  for (auto& u : store.list_unfinished_uploads(root)) {
    if (!u.started || *u.started + std::chrono::seconds(1) > *earliest_kept) continue;
    if (!o.delete_unverified && *u.started >= now - o.unverified_min_age) continue;
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

// lancet's temporary names (".NAME.PID-N-HEX.tmp", io/fs.hpp) and Lance's
// "_versions/.tmp*".
inline bool is_temporary(std::string_view name) {
  return name.size() > 5 && name[0] == '.' &&
         (name.substr(name.size() - 4) == ".tmp" || name.substr(0, 4) == ".tmp");
}

}  // namespace detail

// Removes the versions `o` selects and the files no kept version references (see the
// top of this file). Throws invalid_input_error when `root` has no versions or
// keep_versions is 0, corrupt_error / io_error when a manifest or tag cannot be read
// (nothing is removed then), io_error when a removal fails (what was removed before
// stays removed; every kept version is still whole).
inline cleanup_stats cleanup_old_versions(const std::string& root, const cleanup_options& o = {}) {
  namespace fs = std::filesystem;
  using detail::referenced;
  using clock = std::chrono::system_clock;
  if (o.keep_versions && *o.keep_versions == 0)
    throw invalid_input_error("cleanup: keep_versions must be at least 1 (the latest version is always kept)");
  const auto store = io::storage_for(root);
  const auto versions = list_versions(root);
  if (versions.empty()) throw_no_dataset(root);
  const auto now = o.now.value_or(clock::now());
  const auto tags = detail::tagged_versions(store, root);
  const std::uint64_t latest = versions.back().version;
  std::optional<std::uint64_t> before_version;  // Lance's retain_n_versions
  if (o.keep_versions)
    before_version = versions.size() <= *o.keep_versions ? versions.front().version
                                                         : versions[versions.size() - *o.keep_versions].version;

  cleanup_stats st;
  st.latest_version = latest;
  referenced working, verified;
  std::optional<clock::time_point> earliest_kept;
  std::vector<const version_entry*> old_manifests;
  for (const auto& v : versions) {
    const auto mf = read_manifest_file_at(v.path, source_factory{});
    const auto t = detail::manifest_time(mf.manifest);
    bool old = true;
    if (o.older_than) old = old && t < now - *o.older_than;
    if (before_version) old = old && v.version < *before_version;
    const bool tagged = tags.count(v.version) > 0;
    const bool keep = v.version >= latest || !old || tagged;
    if (tagged && old && v.version < latest) st.tagged_versions_kept.push_back(v.version);
    detail::collect(mf.manifest, mf.indices, keep ? working : verified);
    if (keep) earliest_kept = earliest_kept ? std::min(*earliest_kept, t) : t;
    else old_manifests.push_back(&v);
  }

  // The files to remove, decided before anything is removed.
  struct victim {
    std::string path;
    std::string rel;
    std::uint64_t size;
  };
  std::vector<victim> files;
  for (const auto& f : store.list(root, true)) {
    const std::string& rel = f.path;
    const fs::path p(rel);
    const std::string name = p.filename().string();
    const auto first = rel.substr(0, rel.find('/'));
    // Modified after the oldest kept version was committed (or at an unknown time):
    // possibly part of a write in progress (Lance lists only files last modified at or
    // before that time).
    if (!earliest_kept || !f.modified || *f.modified > *earliest_kept) continue;
    const auto mtime = *f.modified;
    const bool maybe_in_progress = !o.delete_unverified && mtime >= now - o.unverified_min_age;
    const auto ext = p.extension().string();
    bool remove = false;
    if (detail::is_temporary(name) &&
        (first == versions_dir_name || first == "data" || first == "_deletions" || first == transactions_dir_name ||
         first == "_indices")) {
      remove = !maybe_in_progress;
    } else if (first == "_indices") {
      const auto slash = rel.find('/');
      const auto next = rel.find('/', slash + 1);
      if (next == std::string::npos) continue;  // a file directly under _indices/
      const std::string uuid = rel.substr(slash + 1, next - slash - 1);
      remove = !working.index_uuids.count(uuid) && (!maybe_in_progress || verified.index_uuids.count(uuid));
    } else if (first == "data" && ext == ".lance") {
      remove = !working.data.count(rel) && (!maybe_in_progress || verified.data.count(rel));
    } else if (first == "data" && ext == ".blob") {
      // A blob v2 file (data/<stem>/<id>.blob) goes with its data file, data/<stem>.lance.
      const auto dir = p.parent_path();
      const std::string owner = (dir.parent_path() / (dir.filename().string() + ".lance")).generic_string();
      remove = !working.data.count(owner) && (!maybe_in_progress || verified.data.count(owner));
    } else if (first == "_deletions" && (ext == ".arrow" || ext == ".bin")) {
      remove = !working.deletions.count(rel) && (!maybe_in_progress || verified.deletions.count(rel));
    } else if (first == transactions_dir_name && ext == ".txn") {
      remove = !working.transactions.count(rel) && (!maybe_in_progress || verified.transactions.count(rel));
    }
    if (remove) files.push_back({(fs::path(root) / rel).string(), rel, f.size});
  }
  std::sort(files.begin(), files.end(), [](const victim& a, const victim& b) { return a.rel < b.rel; });
  const auto uploads = detail::stale_uploads(store, root, earliest_kept, o, now);

  const auto remove_file = [&](const std::string& p) {
    if (!o.dry_run) store.remove(p);
  };
  for (const auto* v : old_manifests) {
    remove_file(v->path);
    ++st.old_versions;
    st.bytes_removed += v->size;
    st.removed_versions.push_back(v->version);
    st.removed_files.push_back((fs::path(versions_dir_name) / fs::path(v->path).filename()).generic_string());
  }
  std::set<fs::path> index_dirs;
  for (const auto& f : files) {
    remove_file(f.path);
    ++st.files_removed;
    st.bytes_removed += f.size;
    st.removed_files.push_back(f.rel);
    if (f.rel.rfind("_indices/", 0) == 0 || fs::path(f.rel).extension() == ".blob") index_dirs.insert(fs::path(f.path).parent_path());
  }
  for (const auto& u : uploads) {
    if (!o.dry_run) store.abort_upload(root, u);
    st.aborted_uploads.push_back(u.path);
  }
  // Local index and blob file directories left empty go too (directories, not files:
  // not counted; an object store has none).
  if (!o.dry_run && store.is_local()) {
    const fs::path base(io::local_path(root));
    for (auto it = index_dirs.rbegin(); it != index_dirs.rend(); ++it) {
      std::error_code dec;
      for (fs::path d = io::local_path(it->string()); d != base / "_indices" && d != base / "data" && d != base &&
                                                      d.has_parent_path() && fs::is_empty(d, dec) && !dec;
           d = d.parent_path())
        if (!fs::remove(d, dec)) break;
    }
  }
  return st;
}

}  // namespace lancet::dataset
