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
#include "lancet/expr/filter.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

namespace detail {

// A delete of the rows select(version) names (row ids as the version names them), on
// the latest version, committed as Lance's Delete; on a retryable conflict, selected
// again on the new version when `reselect` (a predicate), else only when the
// fragments holding the rows are still there. Nothing selected: no new version,
// unless `commit_empty` (Lance commits a delete by predicate that matched nothing).
template <class SinkFactory, class Select>
delete_result delete_selected(const std::string& root, const delete_options& o, SinkFactory&& make_sink,
                              Select&& select, bool reselect, bool commit_empty) {
  unsigned retries = 0;
  for (unsigned attempt = 0;; ++attempt) {
    auto d = dataset::open(root);
    const auto snap = load_version(root, d.version());
    const std::vector<std::uint64_t> selected = select(d);
    const std::span<const std::uint64_t> row_ids(selected);
    // Row ids -> (fragment, offset); with stable row ids a moved row's id names its
    // live copy, not the deleted one it left behind.
    std::map<std::uint64_t, std::vector<std::uint32_t>> by_fragment;
    std::vector<std::uint64_t> stable;
    if (d.stable_row_ids()) {
      try {
        stable = d.row_addresses(row_ids);
      } catch (const invalid_input_error& e) {
        throw invalid_input_error("cannot delete from dataset '" + root + "': " + e.message());
      }
    }
    for (std::size_t i = 0; i < row_ids.size(); ++i) {
      const std::uint64_t addr = stable.empty() ? row_ids[i] : stable[i];
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
      if (updated.empty() && removed.empty() && !commit_empty) return {m.version, 0};
      const auto co = commit_options_for(snap, o.max_retries, o.write_version_hint);
      auto txn = make_transaction(snap.version(), pb::transaction::delete_rows{updated, removed, o.predicate});
      auto out = commit_transaction(
          root, snap, std::move(txn), [](const snapshot& base, const pb::transaction& t) { return build_delete(base, t); },
          co, make_sink, std::move(affected));
      // A rebase merged our deletions into new files: the first ones are not needed.
      remove_superseded_deletion_files(root, out.commit.manifest, written);
      return {out.commit.manifest.version, newly, retries + out.retries};
    } catch (const committed_io_error&) {
      throw;
    } catch (const commit_conflict_error& e) {
      for (const auto& p : written) {
        io::remove_quietly(p);
      }
      // Both deleted a row of one fragment (or it changed otherwise): Lance runs the
      // delete again on the new version. Row addresses keep their meaning across
      // Delete / Update, not across a Rewrite (compaction moved the rows).
      bool again = e.retryable && (reselect || e.operation == "Delete" || e.operation == "Update");
      if (again && !reselect) {  // not when a fragment holding our rows left the dataset meanwhile
        const auto latest = load_latest(root);
        for (const auto& [fid, offs] : by_fragment)
          again = again && latest && std::any_of(latest->manifest().fragments.begin(), latest->manifest().fragments.end(),
                                                 [&](const pb::data_fragment& f) { return f.id == fid; });
      }
      if (!again || attempt >= o.max_retries) throw;
      ++retries;
    } catch (...) {
      for (const auto& p : written) {
        io::remove_quietly(p);
      }
      throw;
    }
  }
}

}  // namespace detail

// delete_rows (delete.hpp), writing the deletion files through make_sink.
template <class SinkFactory>
delete_result delete_rows(const std::string& root, std::span<const std::uint64_t> row_ids, const delete_options& o,
                          SinkFactory&& make_sink) {
  const std::vector<std::uint64_t> ids(row_ids.begin(), row_ids.end());
  return detail::delete_selected(
      root, o, make_sink, [&](const dataset&) { return ids; }, false, false);
}

// The live rows of d where `predicate` is true, by row id.
inline std::vector<std::uint64_t> rows_where(const dataset& d, const std::string& predicate,
                                             const row_finder& find_rows = {}) {
  const auto f = expr::filter::compile(predicate, d.schema());
  if (find_rows)
    if (auto found = find_rows(d, f)) return std::move(*found);
  std::vector<std::uint64_t> out;
  if (f.columns().empty()) {  // a constant: every live row or none
    std::uint8_t all = 0;
    f.evaluate({}, 0, 1, &all);
    if (all) out = d.live_rows()->to_vector();
    return out;
  }
  scan_options so;
  so.columns = f.columns();
  so.with_row_id = true;
  std::vector<std::uint8_t> mask;
  for (auto sc = d.scan(so); auto b = sc.next();) {
    const auto n = std::size_t(b->num_rows());
    mask.resize(n);
    f.evaluate(std::span<const arrow::array_ptr>(b->columns.data(), f.columns().size()), 0, n, mask.data());
    const auto& ids = *b->columns.back();
    for (std::size_t r = 0; r < n; ++r)
      if (mask[r]) out.push_back(ids.value<std::uint64_t>(std::int64_t(r)));
  }
  return out;
}

// delete_where (delete.hpp), writing the deletion files through make_sink.
template <class SinkFactory>
delete_result delete_where(const std::string& root, const std::string& predicate, const delete_options& o,
                           SinkFactory&& make_sink) {
  delete_options with = o;
  with.predicate = predicate;
  return detail::delete_selected(
      root, with, make_sink, [&](const dataset& d) { return rows_where(d, predicate, o.find_rows); }, true, true);
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines this
LANCET_INLINE delete_result delete_rows(const std::string& root, std::span<const std::uint64_t> row_ids,
                                        const delete_options& o) {
  default_sink_factory f;
  return delete_rows(root, row_ids, o, f);
}
LANCET_INLINE delete_result delete_where(const std::string& root, const std::string& predicate, const delete_options& o) {
  default_sink_factory f;
  return delete_where(root, predicate, o, f);
}
#endif

}  // namespace lancet::dataset
