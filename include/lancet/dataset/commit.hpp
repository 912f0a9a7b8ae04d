// Committing a dataset version: the new manifest is built from the previous one and
// an operation the way Lance 12 builds it, then published crash-safely.
//
// Publication order (each step durable before the next):
//   1. data / deletion files (written by the caller, fsynced, published by rename)
//   2. _transactions/{read_version}-{uuid}.txn       the bare Transaction message
//   3. _versions/<manifest name>                     temp file, fsync, rename with
//      RENAME_NOREPLACE (exclusive), fsync _versions/: the commit point; on an
//      object store a conditional PUT (If-None-Match: *)
//   4. _versions/latest_version_hint.json            best effort, only a hint (local only)
// A crash before 3 leaves only unreferenced files; the previous version stays the
// latest. Two writers racing for the same version: exactly one rename succeeds, the
// other's publish() gets conflict_error and removes what it wrote; commit_transaction
// (the end of this header) then checks the winner's transaction with conflict.hpp's
// rebase, rebases and tries the next version, as Lance does.
//
// What the manifest carries over (as Lance's Manifest::new_from_previous): config,
// table metadata, base paths, branch, max_fragment_id, next_row_id, the storage
// format, and (except on overwrite) the schema and the indices. Lance assigns new
// fragment ids from max_fragment_id + 1 (from 0 on overwrite) to fragments whose id
// is 0, row ids from next_row_id when the dataset uses stable row ids, and recomputes
// the feature flags and max_fragment_id.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/core/random.hpp"
#include "lancet/dataset/conflict.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/row_sequences.hpp"
#include "lancet/dataset/sink_factory.hpp"
#include "lancet/dataset/snapshot.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/file/version.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/file.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {


// The Lance schema a manifest stores (fields and schema metadata).
inline schema::schema manifest_schema(const pb::manifest& m) {
  arrow::metadata md(m.schema_metadata.begin(), m.schema_metadata.end());
  return schema::from_pb_fields(manifest_fields<pb::file::field>(m), std::move(md));
}
inline void set_manifest_schema(pb::manifest& m, const schema::schema& s) {
  set_manifest_fields(m, schema::to_pb_fields(s));
  m.schema_metadata.clear();
  for (const auto& [k, v] : s.metadata) m.schema_metadata[k] = v;
}
inline std::vector<std::string> encoded_schema_fields(const schema::schema& s) {
  pb::manifest tmp;
  set_manifest_fields(tmp, schema::to_pb_fields(s));
  return std::move(tmp.fields_raw);
}

inline bool uses_stable_row_ids(const pb::manifest& m) noexcept {
  return (m.reader_feature_flags & feature_flags::stable_row_ids) != 0;
}

// The id the next new fragment gets (Lance: max_fragment_id + 1, or 0).
inline std::uint64_t next_fragment_id(const pb::manifest& m) {
  if (m.max_fragment_id) return std::uint64_t(*m.max_fragment_id) + 1;
  std::optional<std::uint64_t> hi;
  for (const auto& f : m.fragments) hi = std::max(hi.value_or(0), f.id);
  return hi ? *hi + 1 : 0;
}

// Gives fragments whose id is 0 the next ids, and, when next_row_id is set (stable
// row ids), completes their row ids and created/updated-at version sequences.
inline void assign_new_fragments(std::vector<pb::data_fragment>& frags, std::uint64_t first_id,
                                 std::optional<std::uint64_t>& next_row_id, std::uint64_t new_version) {
  std::uint64_t id = first_id;
  for (auto& f : frags) {
    if (f.id == 0) f.id = id++;
    if (next_row_id) detail::complete_row_sequences(f, *next_row_id, new_version);
  }
}

// What a commit produces: the manifest, the indices it keeps and its transaction.
struct pending_commit {
  pb::manifest manifest;
  std::vector<pb::index_metadata> indices;
  pb::transaction transaction;
};

// The commit of `txn` as the version after `base`: base's manifest (fragments,
// config, counters) and indices, to be changed by the operation.
inline pending_commit commit_after(const snapshot& base, const pb::transaction& txn) {
  pending_commit c;
  c.transaction = txn;
  c.manifest = base.manifest();
  c.manifest.version = c.manifest.version + 1;
  c.indices = base.file.indices;
  return c;
}

inline pb::manifest::data_storage_format storage_format(file::format_version v) {
  return {"lance", std::string(file::to_string(v))};
}

// The storage version a manifest records (2.0 when absent, as Lance reads it).
inline file::format_version manifest_storage_version(const pb::manifest& m) {
  if (!m.data_format) return file::format_version::v2_0;
  if (m.data_format->file_format != "lance")
    throw unsupported_error("the dataset stores its data as '" + m.data_format->file_format + "', not 'lance'");
  const auto& v = m.data_format->version;
  if (v == "0.1" || v == "legacy")
    throw unsupported_error("the dataset uses the legacy (0.1) Lance file format, which lancet does not read or write");
  return file::parse_format_version(v);
}

// Stamps a manifest about to be committed: writer, time, transaction file, feature
// flags, fragment order and ids (every operation that commits, here and in index/).
inline void finish_manifest(pb::manifest& m, bool stable_row_ids, std::optional<std::uint64_t> next_row_id,
                            const pb::transaction& txn) {
  m.writer_version = lancet_writer_version();
  m.timestamp = pb::timestamp::now();
  m.tag.clear();
  m.version_aux_data = 0;
  m.transaction_file = txn.file_name();
  m.index_section.reset();
  m.transaction_section.reset();
  std::stable_sort(m.fragments.begin(), m.fragments.end(),
                   [](const pb::data_fragment& a, const pb::data_fragment& b) { return a.id < b.id; });
  apply_feature_flags(m, stable_row_ids);
  update_max_fragment_id(m);
  if (next_row_id) m.next_row_id = *next_row_id;
}

// Create (a new dataset) or overwrite (replace the data and schema of `previous`):
// Lance's Overwrite operation. `txn` holds the Overwrite (fragments with unassigned
// ids, the schema); applied on `previous` (or on nothing: a new dataset).
inline pending_commit build_overwrite(const std::optional<snapshot>& previous, const pb::transaction& txn,
                                      file::format_version storage, bool enable_stable_row_ids) {
  const auto& op = std::get<pb::transaction::overwrite>(txn.operation);
  pending_commit c;
  c.transaction = txn;
  std::optional<std::uint64_t> next_row_id;
  bool stable = enable_stable_row_ids;
  if (previous) {
    const auto& p = previous->manifest();
    stable = uses_stable_row_ids(p);
    if (enable_stable_row_ids && !stable)
      throw unsupported_error("cannot enable stable row ids on the existing dataset '" + previous->root + "'");
    c.manifest = p;  // config, table metadata, base paths, branch, max_fragment_id, next_row_id
    c.manifest.version = p.version + 1;
    if (stable) next_row_id = p.next_row_id;
  } else {
    c.manifest.version = 1;
    if (stable) next_row_id = 0;
  }
  c.manifest.fields_raw = op.schema_raw;
  c.manifest.schema_metadata = op.schema_metadata;
  c.manifest.data_format = storage_format(storage);
  std::vector<pb::data_fragment> new_fragments = op.fragments;
  assign_new_fragments(new_fragments, 0, next_row_id, c.manifest.version);
  c.manifest.fragments = std::move(new_fragments);
  finish_manifest(c.manifest, stable, next_row_id, c.transaction);
  return c;
}

// The Overwrite transaction of `s` and `new_fragments` on `previous`.
inline pb::transaction overwrite_transaction(const std::optional<snapshot>& previous, const schema::schema& s,
                                             std::vector<pb::data_fragment> new_fragments) {
  pb::transaction::overwrite op;
  op.fragments = std::move(new_fragments);  // ids unassigned (0), as Lance records them
  op.schema_raw = encoded_schema_fields(s);
  for (const auto& [k, v] : s.metadata) op.schema_metadata[k] = v;
  return make_transaction(previous ? previous->version() : 0, std::move(op));
}

inline pending_commit build_overwrite(const std::optional<snapshot>& previous, const schema::schema& s,
                                      std::vector<pb::data_fragment> new_fragments, file::format_version storage,
                                      bool enable_stable_row_ids) {
  return build_overwrite(previous, overwrite_transaction(previous, s, std::move(new_fragments)), storage,
                         enable_stable_row_ids);
}

// Append new fragments to `previous`: Lance's Append operation. `txn` holds the
// Append (fragments with unassigned ids); they get ids after previous's max_fragment_id.
inline pending_commit build_append(const snapshot& previous, const pb::transaction& txn) {
  pending_commit c = commit_after(previous, txn);
  const auto& p = previous.manifest();
  const bool stable = uses_stable_row_ids(p);
  std::optional<std::uint64_t> next_row_id;
  if (stable) next_row_id = p.next_row_id;
  std::vector<pb::data_fragment> new_fragments = std::get<pb::transaction::append>(txn.operation).fragments;
  assign_new_fragments(new_fragments, next_fragment_id(p), next_row_id, c.manifest.version);
  for (auto& f : new_fragments) c.manifest.fragments.push_back(std::move(f));
  finish_manifest(c.manifest, stable, next_row_id, c.transaction);
  return c;
}
inline pending_commit build_append(const snapshot& previous, std::vector<pb::data_fragment> new_fragments) {
  return build_append(previous, make_transaction(previous.version(), pb::transaction::append{std::move(new_fragments)}));
}

// Mark rows deleted: `updated` replaces fragments (same ids) with new deletion files;
// fragments in `removed` (every row deleted) leave the dataset. Lance's Delete, applied
// on `previous` (the version it commits after, its read version or a newer one).
inline pending_commit build_delete(const snapshot& previous, const pb::transaction& txn) {
  const auto& op = std::get<pb::transaction::delete_rows>(txn.operation);
  pending_commit c = commit_after(previous, txn);
  const auto& p = previous.manifest();
  const auto& removed = op.deleted_fragment_ids;
  const auto& updated = op.updated_fragments;
  std::vector<pb::data_fragment> frags;
  for (const auto& f : p.fragments) {
    if (std::find(removed.begin(), removed.end(), f.id) != removed.end()) continue;
    auto u = std::find_if(updated.begin(), updated.end(), [&](const pb::data_fragment& x) { return x.id == f.id; });
    frags.push_back(u != updated.end() ? *u : f);
  }
  c.manifest.fragments = std::move(frags);
  const bool stable = uses_stable_row_ids(p);
  finish_manifest(c.manifest, stable, stable ? std::optional<std::uint64_t>(p.next_row_id) : std::nullopt,
                                 c.transaction);
  return c;
}
inline pending_commit build_delete(const snapshot& previous, std::vector<pb::data_fragment> updated,
                                   std::vector<std::uint64_t> removed, std::string predicate) {
  return build_delete(previous, make_transaction(previous.version(), pb::transaction::delete_rows{
                                                                         std::move(updated), std::move(removed),
                                                                         std::move(predicate)}));
}

// The commit happened (the manifest is in place and names this write's transaction)
// but a later step failed, such as making the directory entry durable. The data this
// write added is part of the dataset: nothing may be removed.
struct committed_io_error : io_error {
  std::uint64_t version;
  committed_io_error(std::uint64_t v, const std::string& what) : io_error(what), version(v) {}
};

namespace detail {
// After a commit whose rebase merged its deletions into new deletion files: removes the
// deletion files among `written` that the committed manifest does not reference.
inline void remove_superseded_deletion_files(const std::string& root, const pb::manifest& committed,
                                             const std::vector<std::string>& written) {
  std::set<std::string> kept;
  for (const auto& f : committed.fragments)
    if (f.deletion_file) kept.insert(deletion_file_path(root, committed, f.id, *f.deletion_file));
  for (const auto& p : written)
    if (p.find("/_deletions/") != std::string::npos && !kept.count(p)) io::remove_quietly(p);
}

// Whether the manifest at `path` exists and was written for transaction `txn`.
inline bool committed_by(const io::storage& st, const std::string& path, const pb::transaction& txn) noexcept {
  try {
    if (!st.exists(path)) return false;
    return read_manifest_file_at(path, source_factory{}).manifest.transaction_file == txn.file_name();
  } catch (...) {
    return false;
  }
}
}  // namespace detail

struct publish_options {
  naming_scheme scheme = naming_scheme::v2;
  // Write _versions/latest_version_hint.json after the commit (as Lance 12 does).
  bool write_version_hint = true;
};

// Writes the transaction file and publishes the manifest of c.manifest.version. On
// conflict_error (that version exists already) the transaction file is removed
// again. Other failures leave no manifest behind.
template <class SinkFactory>
void publish(const std::string& root, pending_commit& c, const publish_options& o, SinkFactory& make_sink) {
  namespace fs = std::filesystem;
  const std::uint64_t version = c.manifest.version;
  const auto st = io::storage_for(root);
  io::make_directories_if_local((fs::path(root) / transactions_dir_name).string());
  io::make_directories_if_local(versions_dir(root));
  const std::string txn_path = transaction_path(root, c.transaction.file_name());
  const std::string manifest_file = manifest_path(root, o.scheme, version);
  try {
    io::file_sink_options so;
    so.exclusive = true;
    auto sink = make_sink(txn_path, so);
    const std::string bytes = encode_transaction_file(c.transaction);
    sink.write(bytes_view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    sink.finish();
  } catch (...) {
    io::remove_quietly(txn_path);  // in case it failed after publishing
    throw;
  }
  try {
    io::file_sink_options so;
    so.exclusive = true;
    auto sink = make_sink(manifest_file, so);
    write_manifest_file(sink, c.manifest, c.indices, &c.transaction);
    sink.finish();
  } catch (const conflict_error&) {
    io::remove_quietly(txn_path);
    throw conflict_error("cannot commit version " + std::to_string(version) + " of dataset '" + root +
                         "': another writer committed version " + std::to_string(version) +
                         " first; nothing of this write was kept (open the dataset again and retry)");
  } catch (const error& e) {
    // A sink may fail after its rename published the manifest (a failed directory
    // fsync): then the version is committed and its files must stay.
    if (detail::committed_by(st, manifest_file, c.transaction))
      throw committed_io_error(version, "version " + std::to_string(version) + " of dataset '" + root +
                                            "' was committed, but not made durable: " +
                                            e.message());
    io::remove_quietly(txn_path);
    throw;
  } catch (...) {
    io::remove_quietly(txn_path);
    throw;
  }
  // Lance 12 keeps the hint only where listings are not ordered (local files); on S3
  // and Azure it neither writes nor reads one.
  if (o.write_version_hint && st.is_local()) {
    // Only a hint: LanceDB and lancet find the newest manifest without it, so a
    // failure here must not report the committed write as failed.
    try {
      const std::string text = encode_version_hint(version);
      io::write_file((fs::path(versions_dir(io::local_path(root))) / version_hint_file_name).string(),
                     bytes_view(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    } catch (const error&) {
    }
  }
}

// Lance's SlotBackoff: the n-th retry sleeps a random one of 4 * 2^n slots, each as long
// as the first attempt took plus 10%. (Capped at 5 s, Lance's longest plain backoff.)
class slot_backoff {
 public:
  explicit slot_backoff(std::chrono::milliseconds unit) : unit_(std::max<std::int64_t>(1, unit.count())) {}
  std::chrono::milliseconds next() {
    const std::uint64_t slots = std::uint64_t(1) << std::min<unsigned>(attempt_ + 2, 30);
    ++attempt_;
    const std::uint64_t slot = random_between(0, slots - 1);
    return std::chrono::milliseconds(std::min<std::uint64_t>(slot * std::uint64_t(unit_), 5000));
  }

 private:
  std::int64_t unit_;
  unsigned attempt_ = 0;
};

struct commit_options {
  // Rebase and try again this many times after losing a race (Lance's num_retries).
  // 0: no rebase at all; losing the race is commit_conflict_error.
  unsigned max_retries = default_max_retries;
  publish_options publish;
};

// Options for a commit on `snap`'s dataset: its manifest naming scheme, the version
// hint and the retries asked for.
inline commit_options commit_options_for(const snapshot& snap, unsigned max_retries, bool write_version_hint) {
  commit_options co;
  co.publish.scheme = snap.entry.scheme;
  co.publish.write_version_hint = write_version_hint;
  co.max_retries = max_retries;
  return co;
}

struct commit_outcome {
  pending_commit commit;   // what was published
  snapshot base;           // the version it was built on (committed as base + 1)
  unsigned retries = 0;    // commits lost to other writers before this one won
};

// Builds the manifest of `txn` on `base` (the version it commits after).
using build_commit_fn = std::function<pending_commit(const snapshot& base, const pb::transaction& txn)>;

// Commits `txn`, built against `read` (its read version), as Lance's commit_transaction
// does: before each attempt the transactions committed after the version it is built on
// are checked and the transaction rebased on the newest version; then `build` makes the
// manifest and it is published as the next version. Losing the race sleeps a slot of
// the backoff and tries again, up to o.max_retries times. With `affected`, a Delete
// merges its deletions with those of concurrent deletes of the same fragments.
// Files written while rebasing are removed when the commit fails.
template <class SinkFactory>
commit_outcome commit_transaction(const std::string& root, const snapshot& read, pb::transaction txn,
                                  const build_commit_fn& build, const commit_options& o, SinkFactory& make_sink,
                                  std::optional<affected_rows> affected = std::nullopt) {
  transaction_rebase rb(read, std::move(txn), std::move(affected));
  const bool strict_overwrite =
      std::holds_alternative<pb::transaction::overwrite>(rb.transaction().operation) && o.max_retries == 0;
  snapshot base = read;
  unsigned retries = 0;
  std::optional<slot_backoff> backoff;
  const auto start = std::chrono::steady_clock::now();
  auto drop_written = [&] {
    for (const auto& p : rb.written_files()) io::remove_quietly(p);
  };
  try {
    for (;;) {
      if (!strict_overwrite) {
        const auto versions = list_versions(root);
        if (!versions.empty() && versions.back().version > base.version()) {
          for (auto& [v, other] : transactions_between(root, versions, base.version(), versions.back().version))
            rb.check(other, v, root);
          base = detail::load(root, versions.back(), {});
          rb.finish(base, make_sink);
        }
      }
      pending_commit c = build(base, rb.transaction());
      try {
        publish(root, c, o.publish, make_sink);
        return {std::move(c), std::move(base), retries};
      } catch (const commit_conflict_error&) {
        throw;
      } catch (const committed_io_error&) {
        throw;
      } catch (const conflict_error& e) {
        if (retries >= o.max_retries || strict_overwrite) {
          throw commit_conflict_error(std::string(e.what()) +
                                          (o.max_retries ? " (gave up after " + std::to_string(retries) + " retries)" : ""),
                                      c.manifest.version, "", o.max_retries > 0);
        }
        if (!backoff)
          backoff.emplace(std::chrono::duration_cast<std::chrono::milliseconds>(
                              (std::chrono::steady_clock::now() - start) * 11 / 10));
        ++retries;
        std::this_thread::sleep_for(backoff->next());
      }
    }
  } catch (const committed_io_error&) {
    throw;
  } catch (...) {
    drop_written();
    throw;
  }
}

}  // namespace lancet::dataset
