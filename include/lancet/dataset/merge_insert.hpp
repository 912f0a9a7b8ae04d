// Merge insert (upsert) on key columns, as LanceDB's mergeInsert(on)
// .whenMatchedUpdateAll([where]).whenNotMatchedInsertAll().whenNotMatchedBySourceDelete([where]):
// one Update transaction, as Lance 12 commits every merge insert. Target rows that are
// updated or deleted get deletion files (a fragment left without live rows leaves the
// dataset); the updated rows (in source order) and then the inserted ones (in source
// order) go to new fragments. A version is committed even when nothing changes, as
// Lance does. Definitions in merge_insert_impl.hpp (included here in header-only
// programs; in compiled mode the library holds them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"

namespace lancet::dataset {

struct merge_insert_options {
  std::vector<std::string> on;  // the key columns (top-level); a NULL key matches nothing
  // Matched target rows take the source row's values (columns the source lacks keep the
  // target's); `matched_if` (SQL over target.COL and source.COL) limits which.
  bool when_matched_update_all = false;
  std::string matched_if;
  // Source rows matching no target row are inserted (columns the source lacks: NULL).
  bool when_not_matched_insert_all = false;
  // Target rows no source row matches are deleted; `by_source_delete_if` (SQL over the
  // target's columns) limits which.
  bool when_not_matched_by_source_delete = false;
  std::string by_source_delete_if;
  unsigned max_retries = default_max_retries;  // runs again when a concurrent commit preempts it
  bool write_version_hint = true;
  // What the merge may hold beyond the source's keys: half for source rows (the source
  // is read more than once: keys, updated rows, inserted rows, reruns; rows beyond that
  // go to a scratch file in spill_directory, default the system's temporary directory,
  // and are read back), a quarter for the new data file's page buffers, the rest for
  // the scratch file's buffers and the rows being written.
  std::uint64_t memory_budget_bytes = std::uint64_t(512) << 20;
  std::string spill_directory;
  // fsync the new data files before the commit (write_options::sync_data_files: Lance
  // 12 does not).
  bool sync_data_files = true;
};

struct merge_insert_result {
  std::uint64_t version = 0;
  std::uint64_t inserted_rows = 0, updated_rows = 0, deleted_rows = 0;
  std::uint64_t spilled_source_rows = 0;  // source rows beyond memory_budget_bytes, read back from disk
  unsigned retries = 0;
};

// Merges `source` (batches of one schema: the key columns and any of the dataset's
// columns, of their types) into the dataset at `root` and commits a new version. The
// source is streamed: memory holds its keys (about 40 bytes a row for a 64-bit key), what
// memory_budget_bytes allows of its rows, and the data file writer's page buffers.
// Errors (nothing committed): no key or no clause, a key or column the dataset lacks, a
// type mismatch (invalid_input_error naming the column); several source rows matching
// one target row with an update clause (invalid_input_error naming the key, as Lance's
// "Ambiguous merge inserts are prohibited"); a condition's (expr::invalid_filter).
// With stable row ids updated rows keep their ids and creation versions; inserted rows
// get new ids.
LANCET_INLINE merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                               const merge_insert_options& o);
// The same for the batches `next()` yields until nullopt (a source larger than memory).
LANCET_INLINE merge_insert_result merge_insert(const std::string& root,
                                               const std::function<std::optional<arrow::record_batch>()>& next,
                                               const merge_insert_options& o);

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/merge_insert_impl.hpp"
#endif
