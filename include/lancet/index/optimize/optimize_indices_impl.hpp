// The definitions behind optimize/optimize_indices.hpp: optimising one index (optimize_one, running
// the stages of optimize/stages.hpp), the commit of the new segments, and the entry
// points. Included by optimize/optimize_indices.hpp in header-only mode; in compiled mode the library
// defines the entry points.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/build/ivf_builder.hpp"
#include "lancet/index/optimize/optimize_indices.hpp"
#include "lancet/index/optimize/options.hpp"
#include "lancet/index/optimize/stages.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/scalar/scalar_index.hpp"
#include "lancet/index/search/vector_index.hpp"

namespace lancet::index {

namespace detail {

// Lance's CreateIndex commit that adds `added` and removes the segments `removed`
// (by uuid) on top of base, rebased as Lance does on what was committed since
// (commit_conflict_error when that cannot be).
inline dataset::snapshot commit_optimized_segments(const std::string& root, const dataset::snapshot& base,
                                         std::vector<pb::index_metadata> added,
                                         const std::vector<pb::index_metadata>& removed,
                                         unsigned* retries = nullptr) {
  std::vector<pb::index_metadata> kept;
  for (const auto& im : base.file.indices) {
    const bool gone = std::any_of(removed.begin(), removed.end(), [&](const pb::index_metadata& r) { return r.uuid == im.uuid; });
    if (!gone) kept.push_back(im);
  }
  dataset::default_sink_factory sinks;
  return publish_index_change(root, base, std::move(kept), std::move(added), removed, {}, sinks,
                              dataset::default_max_retries, retries);
}

// What optimising one index produced, before the commit.
struct planned_change {
  index_optimize_result result;
  std::optional<pb::index_metadata> added;
  std::vector<pb::index_metadata> removed;
  std::string directory;  // of the new segment, removed if the commit fails
};

// Brings a scalar index up to date, as Lance 12's optimize does (no delta segments):
// when fragments it does not cover hold rows (or with retrain), its files are written
// anew over every live row under a new uuid; the entry keeps its name, fields and
// dataset_version, covers every fragment, and replaces the old one.
inline planned_change optimize_scalar(const std::string& root, const dataset::dataset& ds,
                                      const pb::index_metadata& im, scalar_index_kind kind,
                                      const std::string& column, const optimize_options& o) {
  planned_change out;
  auto& res = out.result;
  res.name = im.name;
  res.segments_before = res.segments_after = 1;
  const auto covered = dataset::index_fragment_bitmap(im);
  std::vector<std::uint64_t> all;
  for (const auto& f : ds.fragments()) {
    all.push_back(f.id);
    if (!covered.contains(std::uint32_t(f.id))) res.rows_added += f.live_rows();
  }
  if (res.rows_added == 0 && !o.retrain) return out;
  std::uint64_t batch_size = btree_default_batch_size;
  if (kind == scalar_index_kind::btree) batch_size = read_btree_lookup(index_directory(root, im.uuid)).batch_size;
  const auto uuid = lancet::uuid::generate_v4();
  out.directory = index_directory(root, uuid);
  const auto written = write_scalar_index_files(ds, column, kind, batch_size, out.directory);
  pb::index_metadata added = im;
  added.uuid = uuid;
  dataset::set_index_fragment_bitmap(added, dataset::roaring_bitmap::from_values(all));
  added.files = written.files;
  added.created_at = now_ms();
  out.added = std::move(added);
  out.removed = {im};
  res.changed = true;
  res.segments_merged = 1;
  res.rows_in_segment = written.rows;
  res.uuid = uuid;
  return out;
}

// Optimises one index: runs the stages above and returns the new segment (written,
// not committed) and the segments it replaces.
inline planned_change optimize_one(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                   const std::string& name, const optimize_options& o) {
  planned_change out;
  auto& res = out.result;
  res.name = name;
  const auto ix = open_segments(root, base, name, o);
  res.segments_before = res.segments_after = ix.segs.size();
  const auto cov = cover_fragments(base, ix);
  if (o.retrain) {
    res.changed = true;
    return out;  // done by the caller (a full build)
  }

  // The new segment's directory; the shuffles spill as spill_directory says
  // and are removed when done, the directory too unless the segment was written.
  const auto uuid = lancet::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const optimize_run run{ds, o, ix, detail::is_multivector(ds, ix.column),
                         spill_directory(dir, o.spill_directory, "lancet-optimize-" + uuid.to_string())};
  struct spill_guard {
    std::string spill, dir;
    bool written = false;
    ~spill_guard() {
      io::remove_all_quietly(spill);
      if (!written) io::remove_all_quietly(dir);
    }
  } guard{run.spill, dir};

  const encoder enc(ix.q, ix.metric, ix.cents, ix.dim, ix.column);  // also refuses what lancet cannot re-encode
  shuffler delta_sh(ix.k0, ix.q, run.spill + "/delta", o.memory_budget_bytes, o.pool);
  auto delta = scan_delta(run, enc, cov.unindexed, delta_sh);
  res.rows_added = delta.count;
  const auto [plan, merge_n] = plan_stage(run, delta);
  if (res.rows_added == 0 && merge_n == 0) return out;  // nothing to do
  if (res.rows_added == 0 && merge_n == 1 && plan.empty() && cov.unindexed.empty()) return out;  // one segment, as is

  const auto merged = merged_rows(run, cov, merge_n);
  auto cand = candidate_rows(run, plan, merged, delta);
  const auto moves = move_partitions(run, plan, cand, res);
  const std::size_t k1 = moves.k1(ix.dim);
  const auto want = rows_to_reindex(moves.from, cand);

  // The new segment's entries, streamed to a shuffler: those that stay, then the
  // reindexed rows.
  shuffler out_sh(k1, ix.q, run.spill + "/merge", o.memory_budget_bytes, o.pool);
  std::vector<std::uint64_t> fill(k1, 0);
  res.rows_dropped = keep_entries(ix, merged, delta_sh, want, moves, out_sh, fill);
  std::vector<std::vector<std::uint64_t>>().swap(delta.ids);
  // The fragments the new segment covers: the merged segments' and the delta's.
  std::vector<std::uint64_t> fragments(merged.fragments.begin(), merged.fragments.end());
  fragments.insert(fragments.end(), cov.unindexed.begin(), cov.unindexed.end());
  std::sort(fragments.begin(), fragments.end());
  if (!res.splits.empty()) {
    reencode_stage(run, want, moves.cents, fragments, out_sh, nullptr);
  } else if (!plan.joins.empty() && plan.splits.empty()) {
    join_chooser choose{ix, moves, run.multi, fill, split_threshold(ix.target), res.overflow_rows, {}};
    run.report(optimize_stage::join, 0, plan.joins.size());
    reencode_stage(run, want, moves.cents, fragments, out_sh, std::ref(choose));
    res.joins = plan.joins;
    run.report(optimize_stage::join, plan.joins.size(), plan.joins.size());
  }

  out.directory = dir;
  auto meta = write_segment(run, base, uuid, dir, new_centroids(ix, moves, res), out_sh, std::move(fragments));
  res.rows_in_segment = out_sh.rows();
  for (std::size_t i = merged.first; i < ix.segs.size(); ++i) out.removed.push_back(*ix.metas[i]);
  out.added = std::move(meta);
  res.changed = true;
  res.uuid = uuid;
  res.segments_merged = merge_n;
  res.segments_after = ix.segs.size() - merge_n + 1;
  res.num_partitions = k1;
  guard.written = true;  // from here the caller removes the directory if the commit fails
  return out;
}
}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE optimize_result optimize_indices(const std::string& root, const optimize_options& o) {
  if (o.fetch_chunk_bytes == 0) throw invalid_input_error("fetch_chunk_bytes must be positive");
  if (o.memory_budget_bytes < (std::uint64_t(1) << 20))
    throw invalid_input_error("memory_budget_bytes must be at least 1 MiB, got " + std::to_string(o.memory_budget_bytes));
  if (o.retrain && o.num_indices_to_merge)
    throw invalid_input_error("optimize: retrain rebuilds the whole index; num_indices_to_merge does not apply");
  const auto base = dataset::load_latest(root);
  if (!base) dataset::throw_no_dataset(root);
  const auto ds = dataset::dataset::open(root, base->version());
  std::vector<std::string> names;
  std::vector<detail::planned_change> scalar;
  for (const auto& i : list_indices(*base)) {
    if (!o.name.empty() && i.name != o.name) continue;
    const auto& im = *std::find_if(base->file.indices.begin(), base->file.indices.end(),
                                   [&](const pb::index_metadata& m) { return m.uuid == i.uuid; });
    if (const auto kind = detail::scalar_kind(im); kind && i.columns.size() == 1) {
      scalar.push_back(detail::optimize_scalar(root, ds, im, *kind, i.columns[0], o));
      continue;
    }
    if (o.name.empty() && i.index_type.rfind("IVF_", 0) != 0) continue;
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  }
  if (!o.name.empty() && names.empty() && scalar.empty()) {
    std::string all;
    for (const auto& i : base->file.indices) all += (all.empty() ? "" : ", ") + i.name;
    throw invalid_input_error("no index named '" + o.name + "' (indexes: " + (all.empty() ? "none" : all) + ")");
  }
  optimize_result r;
  r.version = base->version();
  std::vector<detail::planned_change> changes = std::move(scalar);
  const std::size_t scalar_changes = changes.size();  // first in `changes`
  const auto cleanup = [&] {
    for (const auto& c : changes)
      if (!c.directory.empty()) io::remove_all_quietly(c.directory);
  };
  try {
    for (const auto& n : names) changes.push_back(detail::optimize_one(root, *base, ds, n, o));
  } catch (...) {
    cleanup();
    throw;
  }
  if (o.retrain) {
    // The scalar indexes rewritten (one commit), then a full build per vector index,
    // each committed on its own.
    std::vector<pb::index_metadata> added, removed;
    for (std::size_t k = 0; k < scalar_changes; ++k) {
      const auto& c = changes[k];
      if (c.added) added.push_back(*c.added);
      removed.insert(removed.end(), c.removed.begin(), c.removed.end());
      r.indices.push_back(c.result);
    }
    if (!added.empty()) {
      try {
        r.version = detail::commit_optimized_segments(root, *base, std::move(added), removed, &r.retries).version();
      } catch (...) {
        cleanup();
        throw;
      }
    }
    for (auto& c : std::span(changes).subspan(scalar_changes)) {
      const auto seg = open_vector_index(*dataset::load_latest(root), "", c.result.name);
      build_options b;
      b.column = seg.info.columns.at(0);
      b.name = c.result.name;
      b.replace = true;
      b.metric = seg.index_file.distance;
      b.pool = o.pool;
      const auto& q = seg.storage->quantizer();
      b.type = ivf_index_type_of(q);
      if (seg.index_file.sub_index_key == detail::hnsw_metadata_key) {
        const auto gp = recorded_hnsw_params(seg.index_file, "index '" + c.result.name + "'");
        b.type = with_hnsw(b.type);
        b.m = gp.m;
        b.ef_construction = gp.ef_construction;
        b.max_level = gp.max_level;
      }
      b.num_partitions = seg.searcher->num_partitions();
      rebuild_options(q, b);
      const auto built = build_ivf_index(root, b);
      c.result.segments_merged = c.result.segments_before;
      c.result.segments_after = 1;
      c.result.num_partitions = built.num_partitions;
      c.result.rows_in_segment = built.rows_indexed;
      c.result.uuid = built.index.uuid;
      r.version = built.version;
      r.retries += built.retries;
      r.indices.push_back(c.result);
    }
    return r;
  }
  std::vector<pb::index_metadata> added, removed;
  for (auto& c : changes) {
    if (c.added) added.push_back(*c.added);
    removed.insert(removed.end(), c.removed.begin(), c.removed.end());
    r.indices.push_back(c.result);
  }
  if (added.empty()) return r;
  try {
    if (o.on_progress) o.on_progress({"", optimize_stage::commit, 0, 1});
    const auto after = detail::commit_optimized_segments(root, *base, std::move(added), removed, &r.retries);
    r.version = after.version();
    if (o.on_progress) o.on_progress({"", optimize_stage::commit, 1, 1});
  } catch (...) {
    cleanup();
    throw;
  }
  return r;
}

LANCET_INLINE build_result create_ivf_flat_with_centroids(const std::string& root, const std::string& column,
                                                          const std::vector<float>& centroids, std::size_t k,
                                                          simd::distance_type metric,
                                                          const std::string& name,
                                                          std::optional<std::size_t> target_partition_size,
                                                          std::uint64_t memory_budget_bytes) {
  if (target_partition_size && *target_partition_size == 0)
    throw invalid_input_error("target_partition_size must be positive");
  if (k == 0 || centroids.empty() || centroids.size() % k)
    throw invalid_input_error("centroids: " + std::to_string(centroids.size()) + " values do not form " +
                              std::to_string(k) + " centroids");
  build_options b;
  b.column = column;
  b.type = ivf_index_type::ivf_flat;
  b.metric = metric;
  b.name = name;
  b.target_partition_size = target_partition_size;
  b.memory_budget_bytes = memory_budget_bytes;
  b.ivf_centroids = matrix::of(centroids, k, centroids.size() / k);
  return build_ivf_index(root, b);
}

#endif

}  // namespace lancet::index
