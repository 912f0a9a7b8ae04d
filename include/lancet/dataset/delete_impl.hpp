// The definitions of dataset/delete.hpp: the delete itself, over any sink factory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/conflict.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/delete.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

// delete_rows (delete.hpp), writing the deletion files through make_sink.
template <class SinkFactory>
delete_result delete_rows(const std::string& root, std::span<const std::uint64_t> row_ids, const delete_options& o,
                          SinkFactory&& make_sink) {
  unsigned retries = 0;
  for (unsigned attempt = 0;; ++attempt) {
    auto d = dataset::open(root);
    const auto snap = load_version(root, d.version());
    // Row ids -> (fragment, offset).
    std::map<std::uint64_t, std::vector<std::uint32_t>> by_fragment;
    std::unordered_map<std::uint64_t, std::uint64_t> stable;
    if (d.stable_row_ids()) {
      for (const auto& f : d.manifest().fragments) {
        const auto ids = d.fragment_row_ids(f.id);
        for (std::size_t i = 0; i < ids.size(); ++i) stable[ids[i]] = row_address(f.id, i);
      }
    }
    for (auto id : row_ids) {
      std::uint64_t addr = id;
      if (d.stable_row_ids()) {
        auto it = stable.find(id);
        if (it == stable.end())
          throw invalid_input_error("cannot delete row id " + std::to_string(id) + " from dataset '" + root +
                                    "': no such row");
        addr = it->second;
      }
      by_fragment[addr >> 32].push_back(std::uint32_t(addr & 0xFFFFFFFFull));
    }
    std::vector<pb::data_fragment> updated;
    std::vector<std::uint64_t> removed;
    std::vector<std::string> written;
    std::uint64_t newly = 0;
    affected_rows affected;  // offsets newly deleted, by fragment (Lance's affected rows)
    const auto& m = d.manifest();
    try {
      for (auto& [fid, offsets] : by_fragment) {
        const pb::data_fragment* frag = nullptr;
        for (const auto& f : m.fragments)
          if (f.id == fid) frag = &f;
        if (!frag)
          throw invalid_input_error("cannot delete row address " + std::to_string(row_address(fid, offsets.front())) +
                                    " from dataset '" + root + "': it has no fragment " + std::to_string(fid));
        const auto phys = d.physical_rows(fid);
        for (auto off : offsets)
          if (off >= phys)
            throw invalid_input_error("cannot delete row address " + std::to_string(row_address(fid, off)) +
                                      " from dataset '" + root + "': fragment " + std::to_string(fid) + " has " +
                                      std::to_string(phys) + " rows");
        const auto old = d.deleted_rows(fid);
        const auto all = old.merged(offsets);
        if (all.size() == old.size()) continue;
        newly += all.size() - old.size();
        const deletion_vector asked(offsets);
        for (auto off : asked.offsets())
          if (!old.contains(off)) affected[fid].push_back(off);
        if (all.size() == phys) {
          removed.push_back(fid);
          continue;
        }
        updated.push_back(write_deletion_file(root, m, *frag, all, make_sink, written));
      }
      if (updated.empty() && removed.empty()) return {m.version, 0};
      commit_options co;
      co.publish.scheme = snap.entry.scheme;
      co.publish.write_version_hint = o.write_version_hint;
      co.max_retries = o.max_retries;
      auto txn = make_transaction(snap.version(), pb::transaction::delete_rows{updated, removed, o.predicate});
      auto out = commit_transaction(
          root, snap, std::move(txn), [](const snapshot& base, const pb::transaction& t) { return build_delete(base, t); },
          co, make_sink, std::move(affected));
      // A rebase merged our deletions into new files: the first ones are not needed.
      std::set<std::string> kept;
      for (const auto& f : out.commit.manifest.fragments)
        if (f.deletion_file) kept.insert(deletion_file_path(root, out.commit.manifest, f.id, *f.deletion_file));
      for (const auto& p : written)
        if (!kept.count(p)) {
          try {
            io::remove_file(p);
          } catch (...) {
          }
        }
      return {out.commit.manifest.version, newly, retries + out.retries};
    } catch (const committed_io_error&) {
      throw;
    } catch (const commit_conflict_error& e) {
      for (const auto& p : written) {
        try {
          io::remove_file(p);
        } catch (...) {
        }
      }
      // Both deleted a row of one fragment (or it changed otherwise): Lance runs the
      // delete again on the new version. Row addresses keep their meaning across
      // Delete / Update, not across a Rewrite (compaction moved the rows).
      bool again = e.retryable && (e.operation == "Delete" || e.operation == "Update");
      if (again) {  // not when a fragment holding our rows left the dataset meanwhile
        const auto latest = load_latest(root);
        for (const auto& [fid, offs] : by_fragment)
          again = again && latest && std::any_of(latest->manifest().fragments.begin(), latest->manifest().fragments.end(),
                                                 [&](const pb::data_fragment& f) { return f.id == fid; });
      }
      if (!again || attempt >= o.max_retries) throw;
      ++retries;
    } catch (...) {
      for (const auto& p : written) {
        try {
          io::remove_file(p);
        } catch (...) {
        }
      }
      throw;
    }
  }
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines this
LANCET_INLINE delete_result delete_rows(const std::string& root, std::span<const std::uint64_t> row_ids,
                                        const delete_options& o) {
  default_sink_factory f;
  return delete_rows(root, row_ids, o, f);
}
#endif

}  // namespace lancet::dataset
