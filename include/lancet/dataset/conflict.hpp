// Concurrent commits as Lance 12 resolves them (io/commit/conflict_resolver.rs and
// io/commit.rs): when the version a commit wants already exists, the writer reads the
// transactions committed since the version its own transaction was built on, checks
// each for compatibility, operation by operation, rebases its transaction on the newest
// version when all are compatible and tries the next version; otherwise it fails with
// commit_conflict_error naming the operation and version it conflicts with.
//
// The compatibility matrix (our operation / theirs), as Lance's TransactionRebase:
//   Append           conflicts with Overwrite, Restore, UpdateMemWalState; else compatible.
//   Delete           compatible with Append, CreateIndex, ReserveFragments, Project,
//                    UpdateConfig, Clone, UpdateBases; with a Delete / Update of other
//                    fragments; with a Delete / Update of the same fragment when only its
//                    deletion file changed and no row was deleted by both (the deletion
//                    vectors are merged into a new deletion file); a retryable conflict
//                    when both deleted a row, when that fragment was removed or its data
//                    files changed, or with a Rewrite / DataReplacement of its fragments
//                    or any Merge; an incompatible one with Overwrite, Restore,
//                    UpdateMemWalState.
//   CreateIndex      compatible with everything except: Rewrite of fragments the new
//                    indices cover (or new indices without a fragment bitmap), a
//                    DataReplacement of an indexed field, a concurrent frag-reuse index
//                    (retryable); Overwrite, Restore, UpdateMemWalState (incompatible).
//                    The rebased index keeps the fragments it read: rows appended
//                    meanwhile stay unindexed.
//   Rewrite          compatible with Append, ReserveFragments, Project, Clone,
//                    UpdateConfig, UpdateMemWalState, UpdateBases, and Delete / Update /
//                    Rewrite / DataReplacement / CreateIndex that do not touch its old
//                    fragments; a retryable conflict when they do, and with any Merge;
//                    incompatible with Overwrite and Restore.
//   Overwrite        compatible with everything but an Overwrite / UpdateConfig that
//                    upserts the same config key, and UpdateMemWalState: it wins its own
//                    version.
//   ReserveFragments conflicts with Overwrite and Restore only.
// Lance retries up to CommitConfig::num_retries (20) times, sleeping a random slot of
// a slot backoff (4, 8, 16, ... slots, each as long as the first attempt took + 10%).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit_retries.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/key_existence.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/sink_factory.hpp"
#include "lancet/dataset/snapshot.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

// The name of Lance's fragment-reuse index (FRAG_REUSE_INDEX_NAME).
inline constexpr std::string_view frag_reuse_index_name = "__lance_frag_reuse";

// A commit that cannot be rebased on what another writer committed. `version` and
// `operation` name the other commit; `retryable` says whether running the whole
// operation again (on the new version) may succeed, as Lance's RetryableCommitConflict
// does; it is false when the other commit replaced the dataset (Overwrite, Restore).
// The dataset is unchanged by the failed commit.
struct commit_conflict_error : conflict_error {
  std::uint64_t version = 0;
  std::string operation;
  bool retryable = false;
  commit_conflict_error(const std::string& what, std::uint64_t v, std::string op, bool retry)
      : conflict_error(what), version(v), operation(std::move(op)), retryable(retry) {}
};

// Lance's name of an operation ("Append", "Delete", "CreateIndex", ...).
inline std::string operation_name(const pb::transaction::operation_t& op) {
  static constexpr std::string_view names[] = {"None",        "Append",        "Delete",           "Overwrite",
                                               "CreateIndex", "Rewrite",       "Merge",            "Restore",
                                               "ReserveFragments", "Update",   "Project",          "UpdateConfig",
                                               "DataReplacement", "UpdateMemWalState", "Clone",    "UpdateBases"};
  static_assert(std::size(names) == std::variant_size_v<pb::transaction::operation_t>);
  return std::string(names[op.index()]);
}

// The transaction that made a version: the manifest's inline transaction section, or
// the file it names under _transactions/. Errors name the version and file.
inline pb::transaction read_version_transaction(const std::string& root, const version_entry& e,
                                                const source_factory& sources = {}) {
  auto mf = read_manifest_file_at(e.path, sources, e.size);
  if (mf.transaction) return std::move(*mf.transaction);
  if (mf.manifest.transaction_file.empty())
    throw corrupt_error("version " + std::to_string(e.version) + " of dataset '" + root + "' ('" + e.path +
                        "') names no transaction, so concurrent commits cannot be checked against it");
  const std::string path = transaction_path(root, mf.manifest.transaction_file);
  const std::string bytes = read_small_file(sources, path);
  return detail::naming_path(path, [&] { return decode_transaction_file(bytes); });
}

// Every (version, transaction) committed after `after`, up to and including `upto`,
// oldest first.
inline std::vector<std::pair<std::uint64_t, pb::transaction>> transactions_between(
    const std::string& root, const std::vector<version_entry>& versions, std::uint64_t after, std::uint64_t upto,
    const source_factory& sources = {}) {
  std::vector<std::pair<std::uint64_t, pb::transaction>> out;
  for (const auto& e : versions)
    if (e.version > after && e.version <= upto) out.emplace_back(e.version, read_version_transaction(root, e, sources));
  return out;
}

// Rows a Delete removes, by fragment id (offsets within the fragment): Lance's
// affected_rows, which lets two deletes of one fragment be merged.
using affected_rows = std::map<std::uint64_t, std::vector<std::uint32_t>>;

// Our transaction while it is checked against and rebased on newer commits.
class transaction_rebase {
 public:
  transaction_rebase(const snapshot& read, pb::transaction txn, std::optional<affected_rows> affected = std::nullopt)
      : txn_(std::move(txn)), affected_(std::move(affected)) {
    std::set<std::uint64_t> ids;
    if (auto* d = std::get_if<pb::transaction::delete_rows>(&txn_.operation)) {
      for (const auto& f : d->updated_fragments) ids.insert(f.id);
      for (auto id : d->deleted_fragment_ids) ids.insert(id);
      // Only whole fragments removed: nothing to merge row by row (Lance's short cut).
      if (d->updated_fragments.empty()) affected_.reset();
    } else if (auto* u = std::get_if<pb::transaction::update>(&txn_.operation)) {
      for (const auto& f : u->updated_fragments) ids.insert(f.id);
      for (auto id : u->removed_fragment_ids) ids.insert(id);
      if (u->updated_fragments.empty()) affected_.reset();
    } else if (auto* r = std::get_if<pb::transaction::rewrite>(&txn_.operation)) {
      for (const auto& g : r->groups)
        for (const auto& f : g.old_fragments) ids.insert(f.id);
      for (const auto& f : r->old_fragments) ids.insert(f.id);
    }
    modified_ = ids;
    for (const auto& f : read.manifest().fragments)
      if (ids.count(f.id)) initial_[f.id] = {f, false};
  }

  const pb::transaction& transaction() const noexcept { return txn_; }
  // Deletion files written while rebasing (removed by the caller if the commit fails).
  const std::vector<std::string>& written_files() const noexcept { return written_; }

  // Throws commit_conflict_error when `other` (committed as `version`) is incompatible.
  void check(const pb::transaction& other, std::uint64_t version, const std::string& root) {
    using T = pb::transaction;
    const auto& theirs = other.operation;
    const bool their_replace = std::holds_alternative<T::overwrite>(theirs) || std::holds_alternative<T::restore>(theirs);
    const bool their_memwal = std::holds_alternative<T::update_mem_wal_state>(theirs);
    // A schema change that makes a column non-nullable against a concurrent write of
    // rows (which may hold NULLs there), in either order: retryable, as Lance 12.
    if ((drops_nullability(txn_.operation) && writes_rows(theirs)) ||
        (writes_rows(txn_.operation) && drops_nullability(theirs)))
      retryable(other, version, root, "one of them makes a column non-nullable while the other writes rows");
    std::visit(
        [&](const auto& ours) {
          using O = std::decay_t<decltype(ours)>;
          if constexpr (std::is_same_v<O, T::append>) {
            if (their_replace || their_memwal) incompatible(other, version, root);
          } else if constexpr (std::is_same_v<O, T::reserve_fragments>) {
            if (their_replace) incompatible(other, version, root);
          } else if constexpr (std::is_same_v<O, T::overwrite>) {
            if (their_memwal) incompatible(other, version, root);
            const std::map<std::string, std::string>* keys = nullptr;
            if (auto* o = std::get_if<T::overwrite>(&theirs)) keys = &o->config_upsert_values;
            if (auto* u = std::get_if<T::update_config>(&theirs)) {
              for (const auto& [k, v] : ours.config_upsert_values) {
                if (u->upsert_values.count(k)) incompatible(other, version, root);
                if (u->config_updates)
                  for (const auto& e : u->config_updates->entries)
                    if (e.first == k) incompatible(other, version, root);
              }
            }
            if (keys)
              for (const auto& [k, v] : ours.config_upsert_values)
                if (keys->count(k)) incompatible(other, version, root);
          } else if constexpr (std::is_same_v<O, T::delete_rows> || std::is_same_v<O, T::update>) {
            // An Update moves rows as a Delete removes them: with its affected rows,
            // a concurrent Delete or Update of other rows of its fragments is merged.
            check_delete(other, version, root);
          } else if constexpr (std::is_same_v<O, T::create_index>) {
            check_create_index(ours, other, version, root);
          } else if constexpr (std::is_same_v<O, T::rewrite>) {
            check_rewrite(other, version, root);
          } else if constexpr (std::is_same_v<O, T::merge>) {
            // A Merge carries every fragment: any commit that adds, changes or removes
            // fragments (or rows) first makes it retryable; a Project, a replaced
            // dataset: incompatible; indexes and configuration: compatible.
            if (std::holds_alternative<T::append>(theirs) || std::holds_alternative<T::update>(theirs) ||
                std::holds_alternative<T::delete_rows>(theirs) || std::holds_alternative<T::rewrite>(theirs) ||
                std::holds_alternative<T::merge>(theirs) || std::holds_alternative<T::data_replacement>(theirs))
              retryable(other, version, root, "it changed the fragments this Merge lists");
            if (their_replace || their_memwal || std::holds_alternative<T::project>(theirs))
              incompatible(other, version, root);
          } else if constexpr (std::is_same_v<O, T::project>) {
            // Another schema change first: retryable; replaced datasets: incompatible;
            // every other operation leaves the columns as they were (compatible).
            if (std::holds_alternative<T::merge>(theirs) || std::holds_alternative<T::project>(theirs))
              retryable(other, version, root, "it changed the schema too");
            if (their_replace || their_memwal) incompatible(other, version, root);
          } else {
            throw unsupported_error("lancet does not rebase " + operation_name(txn_.operation) +
                                    " transactions on concurrent commits (dataset '" + root + "', version " +
                                    std::to_string(version) + " was committed by " + operation_name(theirs) + ")");
          }
        },
        txn_.operation);
  }

  // After every commit up to `latest` was checked: rewrites what must be (a Delete's
  // deletion files merged with the deletions committed meanwhile) so that the
  // transaction applies on `latest`. Deletion files are written through `make_sink`.
  template <class SinkFactory>
  void finish(const snapshot& latest, SinkFactory& make_sink) {
    std::vector<pb::data_fragment>* updated = nullptr;
    std::vector<std::uint64_t>* removed = nullptr;
    if (auto* d = std::get_if<pb::transaction::delete_rows>(&txn_.operation)) {
      updated = &d->updated_fragments;
      removed = &d->deleted_fragment_ids;
    } else if (auto* u = std::get_if<pb::transaction::update>(&txn_.operation)) {
      updated = &u->updated_fragments;
      removed = &u->removed_fragment_ids;
    } else {
      return;
    }
    const std::string ours = operation_name(txn_.operation);
    const auto& m = latest.manifest();
    for (auto& [fid, entry] : initial_) {
      if (!entry.second) continue;
      if (!affected_)
        throw internal_error("a " + ours + " needs its deleted rows to be rebased (fragment " + std::to_string(fid) + ")");
      auto frag = std::find_if(m.fragments.begin(), m.fragments.end(),
                               [&](const pb::data_fragment& f) { return f.id == fid; });
      if (frag == m.fragments.end())
        throw commit_conflict_error("cannot commit this " + ours + " on dataset '" + latest.root + "': fragment " +
                                        std::to_string(fid) + " was removed by version " + std::to_string(m.version),
                                    m.version, ours, true);
      const auto existing = read_deletion_vector(latest.root, m, *frag);
      const auto mine_it = affected_->find(fid);
      const std::vector<std::uint32_t> mine = mine_it == affected_->end() ? std::vector<std::uint32_t>{} : mine_it->second;
      for (auto off : mine)
        if (existing.contains(off))
          throw commit_conflict_error("this " + ours + " was preempted by a concurrent Delete or Update committed by version " +
                                          std::to_string(m.version) + " of dataset '" + latest.root +
                                          "': both deleted row " + std::to_string(off) + " of fragment " +
                                          std::to_string(fid) + " (run it again)",
                                      m.version, ours, true);
      const auto merged = existing.merged(mine);
      entry.first = *frag;
      entry.second = false;
      const auto phys = frag->physical_rows;
      auto upd = std::find_if(updated->begin(), updated->end(), [&](const pb::data_fragment& f) { return f.id == fid; });
      if (phys && merged.size() >= phys) {
        if (upd != updated->end()) updated->erase(upd);
        if (std::find(removed->begin(), removed->end(), fid) == removed->end()) removed->push_back(fid);
        continue;
      }
      pb::data_fragment nf = write_deletion_file(latest.root, m, *frag, merged, make_sink, written_);
      if (upd != updated->end()) *upd = std::move(nf);
      else updated->push_back(std::move(nf));
    }
    txn_.read_version = m.version;  // as Lance's finish for Delete / Update
  }

 private:
  [[noreturn]] void fail(const pb::transaction& other, std::uint64_t version, const std::string& root, bool retryable,
                         const std::string& why = {}) const {
    const std::string ours = operation_name(txn_.operation), theirs = operation_name(other.operation);
    std::string msg = retryable ? "this " + ours + " was preempted by the concurrent " + theirs +
                                      " committed as version " + std::to_string(version) + " of dataset '" + root + "'"
                                : "this " + ours + " is incompatible with the concurrent " + theirs +
                                      " committed as version " + std::to_string(version) + " of dataset '" + root + "'";
    if (!why.empty()) msg += " (" + why + ")";
    msg += retryable ? "; nothing of it was committed (run it again on the new version)" : "; nothing of it was committed";
    throw commit_conflict_error(msg, version, theirs, retryable);
  }
  [[noreturn]] void incompatible(const pb::transaction& other, std::uint64_t version, const std::string& root) const {
    fail(other, version, root, false);
  }
  [[noreturn]] void retryable(const pb::transaction& other, std::uint64_t version, const std::string& root,
                              const std::string& why = {}) const {
    fail(other, version, root, true, why);
  }

  static bool drops_nullability(const pb::transaction::operation_t& op) {
    if (auto* p = std::get_if<pb::transaction::project>(&op)) return !p->preserves_nullability;
    if (auto* m = std::get_if<pb::transaction::merge>(&op)) return !m->preserves_nullability;
    return false;
  }
  static bool writes_rows(const pb::transaction::operation_t& op) {
    return std::holds_alternative<pb::transaction::append>(op) || std::holds_alternative<pb::transaction::update>(op) ||
           std::holds_alternative<pb::transaction::data_replacement>(op);
  }

  // The old fragment ids of a Rewrite.
  static std::set<std::uint64_t> rewritten_ids(const pb::transaction::rewrite& r) {
    std::set<std::uint64_t> out;
    for (const auto& g : r.groups)
      for (const auto& f : g.old_fragments) out.insert(f.id);
    for (const auto& f : r.old_fragments) out.insert(f.id);
    return out;
  }
  std::optional<std::uint64_t> touches(const std::set<std::uint64_t>& ids) const {
    for (auto id : ids)
      if (modified_.count(id)) return id;
    return std::nullopt;
  }

  void check_delete(const pb::transaction& other, std::uint64_t version, const std::string& root) {
    using T = pb::transaction;
    std::visit(
        [&](const auto& theirs) {
          using O = std::decay_t<decltype(theirs)>;
          if constexpr (std::is_same_v<O, T::rewrite>) {
            if (auto id = touches(rewritten_ids(theirs)))
              retryable(other, version, root, "it rewrote fragment " + std::to_string(*id));
          } else if constexpr (std::is_same_v<O, T::data_replacement>) {
            for (const auto& g : theirs.replacements)
              if (modified_.count(g.fragment_id))
                retryable(other, version, root, "it replaced data of fragment " + std::to_string(g.fragment_id));
          } else if constexpr (std::is_same_v<O, T::delete_rows> || std::is_same_v<O, T::update>) {
            if constexpr (std::is_same_v<O, T::update>) {
              // Two merge inserts into a table with a primary key: rows with one key
              // inserted by both would be duplicates.
              const auto* ours = std::get_if<T::update>(&txn_.operation);
              if (ours && ours->inserted_rows_filter && theirs.inserted_rows_filter &&
                  detail::may_share_key(*ours->inserted_rows_filter, *theirs.inserted_rows_filter))
                retryable(other, version, root, "both inserted rows whose primary keys may be the same");
            }
            const auto& updated = theirs.updated_fragments;
            const auto& removed = [&]() -> const std::vector<std::uint64_t>& {
              if constexpr (std::is_same_v<O, T::delete_rows>) return theirs.deleted_fragment_ids;
              else return theirs.removed_fragment_ids;
            }();
            bool any = false;
            for (const auto& f : updated) any = any || modified_.count(f.id);
            for (auto id : removed) any = any || modified_.count(id);
            if (!any) return;
            if (!affected_)
              retryable(other, version, root, "it changed a fragment this " + operation_name(txn_.operation) + " changes");
            for (const auto& u : updated) {
              auto it = initial_.find(u.id);
              if (it == initial_.end()) continue;
              if (it->second.first.files != u.files)
                retryable(other, version, root, "it changed the data files of fragment " + std::to_string(u.id));
              if (u.deletion_file != it->second.first.deletion_file) it->second.second = true;
            }
            for (auto id : removed)
              if (initial_.count(id)) retryable(other, version, root, "it removed fragment " + std::to_string(id));
          } else if constexpr (std::is_same_v<O, T::merge>) {
            retryable(other, version, root);
          } else if constexpr (std::is_same_v<O, T::overwrite> || std::is_same_v<O, T::restore> ||
                               std::is_same_v<O, T::update_mem_wal_state>) {
            incompatible(other, version, root);
          }
          // Append, CreateIndex, ReserveFragments, Clone, Project, UpdateConfig, UpdateBases: compatible.
        },
        other.operation);
  }

  void check_create_index(const pb::transaction::create_index& ours, const pb::transaction& other, std::uint64_t version,
                          const std::string& root) {
    using T = pb::transaction;
    std::visit(
        [&](const auto& theirs) {
          using O = std::decay_t<decltype(theirs)>;
          if constexpr (std::is_same_v<O, T::create_index>) {
            const auto reuse = [](const std::vector<pb::index_metadata>& v) {
              return std::any_of(v.begin(), v.end(),
                                 [](const pb::index_metadata& i) { return i.name == frag_reuse_index_name; });
            };
            if (reuse(ours.new_indices) && reuse(theirs.new_indices)) retryable(other, version, root);
          } else if constexpr (std::is_same_v<O, T::rewrite>) {
            std::set<std::uint64_t> covered;
            for (const auto& im : ours.new_indices) {
              if (im.fragment_bitmap.empty())
                retryable(other, version, root, "index '" + im.name + "' records no fragments");
              for (auto id : index_fragment_bitmap(im).to_vector()) covered.insert(id);
            }
            for (auto id : rewritten_ids(theirs))
              if (covered.count(id))
                retryable(other, version, root,
                          "it rewrote fragment " + std::to_string(id) + ", which the new index covers");
          } else if constexpr (std::is_same_v<O, T::data_replacement>) {
            std::set<std::int32_t> fields;
            for (const auto& im : ours.new_indices) fields.insert(im.fields.begin(), im.fields.end());
            for (const auto& g : theirs.replacements)
              if (g.new_file)
                for (auto f : g.new_file->fields)
                  if (fields.count(f)) retryable(other, version, root, "it replaced an indexed column");
          } else if constexpr (std::is_same_v<O, T::overwrite> || std::is_same_v<O, T::restore> ||
                               std::is_same_v<O, T::update_mem_wal_state>) {
            incompatible(other, version, root);
          }
          // Append, Delete, Update, Merge, ReserveFragments, Project, UpdateConfig, Clone,
          // UpdateBases: compatible (row addresses of the indexed rows stay valid).
        },
        other.operation);
  }

  void check_rewrite(const pb::transaction& other, std::uint64_t version, const std::string& root) {
    using T = pb::transaction;
    std::visit(
        [&](const auto& theirs) {
          using O = std::decay_t<decltype(theirs)>;
          if constexpr (std::is_same_v<O, T::delete_rows> || std::is_same_v<O, T::update>) {
            for (const auto& f : theirs.updated_fragments)
              if (modified_.count(f.id))
                retryable(other, version, root, "it changed fragment " + std::to_string(f.id) + ", which this compaction rewrites");
            const auto& removed = [&]() -> const std::vector<std::uint64_t>& {
              if constexpr (std::is_same_v<O, T::delete_rows>) return theirs.deleted_fragment_ids;
              else return theirs.removed_fragment_ids;
            }();
            for (auto id : removed)
              if (modified_.count(id))
                retryable(other, version, root, "it removed fragment " + std::to_string(id) + ", which this compaction rewrites");
          } else if constexpr (std::is_same_v<O, T::rewrite>) {
            if (auto id = touches(rewritten_ids(theirs)))
              retryable(other, version, root, "it rewrote fragment " + std::to_string(*id) + " too");
          } else if constexpr (std::is_same_v<O, T::data_replacement>) {
            for (const auto& g : theirs.replacements)
              if (modified_.count(g.fragment_id))
                retryable(other, version, root, "it replaced data of fragment " + std::to_string(g.fragment_id));
          } else if constexpr (std::is_same_v<O, T::merge>) {
            retryable(other, version, root);
          } else if constexpr (std::is_same_v<O, T::create_index>) {
            std::set<std::uint64_t> covered;
            for (const auto& im : theirs.new_indices) {
              if (im.fragment_bitmap.empty()) retryable(other, version, root, "index '" + im.name + "' records no fragments");
              for (auto id : index_fragment_bitmap(im).to_vector()) covered.insert(id);
            }
            for (auto id : modified_)
              if (covered.count(id))
                retryable(other, version, root,
                          "its index covers fragment " + std::to_string(id) + ", which this compaction rewrites");
          } else if constexpr (std::is_same_v<O, T::overwrite> || std::is_same_v<O, T::restore>) {
            incompatible(other, version, root);
          }
        },
        other.operation);
  }

  pb::transaction txn_;
  std::optional<affected_rows> affected_;
  std::set<std::uint64_t> modified_;
  std::map<std::uint64_t, std::pair<pb::data_fragment, bool>> initial_;  // at the read version; needs a rewrite
  std::vector<std::string> written_;
};

}  // namespace lancet::dataset
