// Dataset compaction: small fragments are merged and deleted rows dropped, committed
// as Lance 12's Rewrite operation, with the IVF vector indexes remapped in the same
// commit.
//
//   auto r = dataset::compact_files("/data/points");           // Lance's defaults
//   r.metrics.fragments_removed, r.metrics.fragments_added, r.mapping (old -> new address)
//
// Plan (as Lance's plan_compaction): fragments are visited in id order; a fragment
// whose deleted share exceeds materialize_deletions_threshold is rewritten on its
// own if need be, one with fewer physical rows than target_rows_per_fragment only
// together with neighbours; consecutive candidates covered by the same set of
// indexes form a bin, a lone neighbour-only candidate is left alone, and bins are cut
// into tasks of at least target_rows_per_fragment live rows. Each task's live rows are
// rewritten in order into new fragments of at most target_rows_per_fragment rows.
//
// Commit (checked against LanceDB 0.39's optimize): without stable row ids each task
// first commits a ReserveFragments transaction (one new version each, raising
// max_fragment_id) and its new fragments take the reserved ids; then one Rewrite
// transaction (read version = the version planned from) replaces each task's old
// fragments by its new ones in place, and names the rewritten indexes: every index
// covering a rewritten fragment gets a remapped copy under a new uuid (row addresses
// moved, deleted rows dropped; by compaction_options::remap_indexes, which the index
// layer supplies: index::compaction_remapper()), its fragment bitmap has the old ids
// replaced by the new ones, and it keeps name, dataset_version, details, created_at.
// With stable row ids, row ids survive: the new fragments carry the old rows' ids and
// version sequences, the ids are reserved in one ReserveFragments commit, and indexes
// keep their uuid with recomputed bitmaps. Lance's deferred remap (fragment reuse
// index, defer_index_remap) is not LanceDB 0.39's default and is not offered.
// Nothing to compact: no new version.
//
// Declarations here; definitions in compact_impl.hpp (included here in header-only
// programs; in compiled mode the library defines plan_compaction and compact_files, and
// a program passing its own sink factory includes compact_impl.hpp for the template).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/index_remap.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

struct compaction_options {
  // Fragments with fewer physical rows are candidates; new fragments hold at most this
  // many rows (Lance's default, 1 Mi).
  std::uint64_t target_rows_per_fragment = 1024 * 1024;
  // Lance's max_rows_per_group: only Lance's legacy file format uses row groups; here
  // it is the number of rows read and written at a time.
  std::uint64_t max_rows_per_group = 1024;
  // About how large a new data file may grow (Lance's 90 GiB default when unset).
  std::optional<std::uint64_t> max_bytes_per_file;
  // Rewrite a fragment whose deleted share exceeds the threshold even without
  // neighbours to merge with (Lance: on, 10%). A threshold >= 1 turns it off.
  bool materialize_deletions = true;
  double materialize_deletions_threshold = 0.1;
  // Rebase the final commit on what other writers committed meanwhile when Lance
  // finds it compatible (an append, a commit touching other fragments) and commit the
  // next version, up to this many times (Lance's default, 20).
  unsigned max_retries = default_max_retries;
  bool write_version_hint = true;
  // Called after each task's files are written: (tasks done, tasks in all).
  std::function<void(std::size_t, std::size_t)> progress;
  // Carries the indexes covering rewritten fragments over to the new rows: set it to
  // index::compaction_remapper() (index/optimize/remap.hpp) for vector indexes. Unset, a
  // compaction that would rewrite indexed fragments is unsupported_error naming the
  // index, before anything is written (with stable row ids indexes keep their rows'
  // ids and need no remap).
  index_remapper remap_indexes;
};

// Lance's CompactionMetrics.
struct compaction_metrics {
  std::uint64_t fragments_removed = 0;
  std::uint64_t fragments_added = 0;
  std::uint64_t files_removed = 0;  // data files and deletion files
  std::uint64_t files_added = 0;
  friend bool operator==(const compaction_metrics&, const compaction_metrics&) = default;
};

// One task: fragments (consecutive in the dataset) rewritten together.
struct compaction_task {
  std::vector<std::uint64_t> fragment_ids;
  std::uint64_t live_rows = 0;
};

struct compaction_plan {
  std::uint64_t read_version = 0;
  std::vector<compaction_task> tasks;
};

struct rewritten_index_info {
  std::string name;
  lancet::uuid old_uuid, new_uuid;  // equal with stable row ids (the index is kept)
  remap_stats stats;
};

struct compaction_result {
  std::uint64_t read_version = 0;  // the version planned from
  std::uint64_t version = 0;       // the version committed (read_version when nothing was compacted)
  compaction_metrics metrics;
  // Old row address -> new row address (nullopt: deleted row dropped), for every
  // physical row of the rewritten fragments. Row ids equal addresses unless the
  // dataset uses stable row ids (which keep their ids).
  row_address_map mapping;
  std::vector<rewritten_index_info> indices;
  std::vector<std::vector<std::uint64_t>> new_fragment_ids;  // per task
  unsigned retries = 0;  // commits lost to other writers before this one
};

// Lance's compaction plan for a dataset version (see the top of this file).
LANCET_INLINE compaction_plan plan_compaction(const dataset& d, const compaction_options& o = {});

// Compacts the newest version of the dataset at `root` (see the top of this file) and
// writes its data files to the local file system. (Over a sink factory of your own:
// compact_impl.hpp.)
LANCET_INLINE compaction_result compact_files(const std::string& root, const compaction_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/compact_impl.hpp"
#endif
