// The definitions of dataset/compact.hpp: planning, rewriting each task's rows and the
// Rewrite commit with its remapped indexes, over any sink factory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/compact.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/index_remap.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/moved_rows.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

namespace detail {

inline void check(const compaction_options& o) {
  if (o.target_rows_per_fragment == 0 || o.target_rows_per_fragment > (std::uint64_t(1) << 32))
    throw invalid_input_error("compaction: target_rows_per_fragment must be between 1 and 2^32, not " +
                              std::to_string(o.target_rows_per_fragment));
  if (o.max_rows_per_group == 0) throw invalid_input_error("compaction: max_rows_per_group must be at least 1");
  if (o.max_bytes_per_file && *o.max_bytes_per_file == 0)
    throw invalid_input_error("compaction: max_bytes_per_file must be at least 1");
  if (!(o.materialize_deletions_threshold == o.materialize_deletions_threshold))
    throw invalid_input_error("compaction: materialize_deletions_threshold is NaN");
}

// The fragments an index covers: those of its bitmap, or every fragment when it has
// none (Lance assumes all fragments up to max_fragment_id of its version).
struct index_coverage {
  bool everything = false;
  roaring_bitmap fragments;
  bool covers(std::uint64_t id) const { return everything || (id <= UINT32_MAX && fragments.contains(std::uint32_t(id))); }
};

inline std::vector<index_coverage> index_fragmaps(const std::vector<pb::index_metadata>& indices) {
  std::vector<index_coverage> out(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i].fragment_bitmap.empty()) out[i].everything = true;
    else out[i].fragments = index_fragment_bitmap(indices[i]);
  }
  return out;
}

inline std::uint64_t files_of(const pb::data_fragment& f) { return f.files.size() + (f.deletion_file ? 1 : 0); }

struct written_task {
  std::vector<pb::data_fragment> old_fragments;  // as in the read version
  std::vector<pb::data_fragment> new_fragments;  // ids assigned once reserved
  std::vector<std::uint64_t> old_addresses;      // live rows, in the order written
};

// Commits Lance's ReserveFragments(n) on the newest version; returns the first id
// reserved. Retries on a concurrent commit (a reservation conflicts with nothing).
template <class SinkFactory>
std::uint64_t reserve_fragment_ids(const std::string& root, std::uint32_t n, const publish_options& po,
                                   SinkFactory& make_sink) {
  const auto latest = load_latest(root);
  if (!latest) throw_no_dataset(root);
  std::uint64_t first = 0;
  auto build = [&](const snapshot& base, const pb::transaction& t) {
    const auto& p = base.manifest();
    pending_commit c = commit_after(base, t);
    first = next_fragment_id(p);
    if (first + n - 1 > UINT32_MAX) throw invalid_input_error("dataset '" + root + "' has run out of 32-bit fragment ids");
    const bool stable = uses_stable_row_ids(p);
    finish_manifest(c.manifest, stable, stable ? std::optional<std::uint64_t>(p.next_row_id) : std::nullopt,
                                   c.transaction);
    c.manifest.max_fragment_id = std::uint32_t(first + n - 1);
    return c;
  };
  commit_options co;
  co.publish = po;
  commit_transaction(root, *latest, make_transaction(latest->version(), pb::transaction::reserve_fragments{n}), build, co,
                     make_sink);
  return first;
}

inline bool same_fragment(const pb::data_fragment& a, const pb::data_fragment& b) {
  return a.id == b.id && a.files == b.files && a.deletion_file == b.deletion_file && a.physical_rows == b.physical_rows;
}

// How the rewritten rows are written: appended, in files of the target's rows (and
// bytes, when set).
inline write_options rewrite_write_options(const compaction_options& o) {
  write_options wo;
  wo.mode = write_mode::append;
  wo.max_rows_per_file = o.target_rows_per_fragment;
  if (o.max_bytes_per_file) wo.max_bytes_per_file = *o.max_bytes_per_file;
  return wo;
}

// What a failed compaction removes: the data files written (each fragment writer's
// cleanup) and the directories of the remapped indexes.
struct compaction_leftovers {
  std::vector<std::function<void()>> cleanups;
  std::vector<std::string> index_dirs;

  void remove() noexcept {
    for (auto& c : cleanups) {
      try {
        c();
      } catch (...) {
      }
    }
    for (const auto& dir : index_dirs) {
      try {
        io::storage_for(dir).remove_all(dir);
      } catch (...) {
      }
    }
  }
};

// The indexes covering fragments the plan rewrites, which the Rewrite commit remaps.
// Without stable row ids each must be one that can be remapped: checked here, before
// anything is written.
inline std::vector<const pb::index_metadata*> indexes_to_remap(const std::string& root, const snapshot& snap,
                                                               const compaction_plan& plan, bool stable,
                                                               const compaction_options& o) {
  std::set<std::uint64_t> affected;
  for (const auto& t : plan.tasks) affected.insert(t.fragment_ids.begin(), t.fragment_ids.end());
  std::vector<const pb::index_metadata*> to_remap;
  for (const auto& im : snap.file.indices) {
    const auto bm = index_fragment_bitmap(im);
    bool touches = im.fragment_bitmap.empty();
    for (auto id : affected) touches |= id <= UINT32_MAX && bm.contains(std::uint32_t(id));
    if (!touches) continue;
    if (!stable) {
      if (im.fragment_bitmap.empty())
        throw unsupported_error("cannot compact dataset '" + root + "': index '" + im.name +
                                "' records no fragment bitmap, so it cannot be remapped");
      if (!o.remap_indexes)
        throw unsupported_error("cannot compact dataset '" + root + "': index '" + im.name +
                                "' covers fragments this compaction rewrites, and compaction_options::remap_indexes "
                                "is unset (index::compaction_remapper() in lancet/index/optimize/remap.hpp remaps vector indexes)");
      if (auto why = o.remap_indexes.unsupported_reason(root, im))
        throw unsupported_error("cannot compact dataset '" + root + "': " + *why +
                                " (drop the index, or compact with LanceDB)");
    }
    to_remap.push_back(&im);
  }
  return to_remap;
}

// Step 1 for one task: its live rows, scanned with their addresses, written into new
// data files (their writer's file removal joins cleanups before anything is written).
template <class V, class SinkFactory>
written_task rewrite_task(const dataset& d, const std::string& root, const pb::manifest& m0, const compaction_task& task,
                          const schema::schema& target, const std::shared_ptr<const arrow::schema>& arrow_target,
                          const write_options& wo, const compaction_options& o, const std::string& context,
                          SinkFactory& make_sink, std::vector<std::function<void()>>& cleanups) {
  written_task w;
  for (auto id : task.fragment_ids)
    for (const auto& f : m0.fragments)
      if (f.id == id) w.old_fragments.push_back(f);
  auto fw = std::make_shared<fragment_writer<V, SinkFactory>>(root, target, wo, make_sink);
  cleanups.push_back([fw]() { fw->remove_files(); });
  scan_options so;
  so.fragment_ids = task.fragment_ids;
  so.batch_size = o.max_rows_per_group;
  so.with_row_address = true;
  auto sc = d.scan(so);
  while (auto b = sc.next()) {
    const auto& addr = *b->columns.back();
    const auto* a = addr.values<std::uint64_t>();
    w.old_addresses.insert(w.old_addresses.end(), a, a + addr.length);
    b->columns.pop_back();
    b->schema = arrow_target;
    fw->write(conform(*b, arrow_target, context));
  }
  w.new_fragments = fw->finish();
  std::uint64_t written = 0;
  for (const auto& f : w.new_fragments) written += f.physical_rows;
  if (written != w.old_addresses.size())
    throw corrupt_error(context + ": wrote " + std::to_string(written) + " rows but read " +
                        std::to_string(w.old_addresses.size()));
  return w;
}

// Step 2: reserves the new fragments' ids (per task without stable row ids, at once
// with them, as Lance does) and assigns them in order.
template <class SinkFactory>
void assign_fragment_ids(std::vector<written_task>& done, bool stable, const std::string& root, const publish_options& po,
                         SinkFactory& make_sink) {
  auto assign = [&](written_task& w, std::uint64_t first) {
    for (auto& f : w.new_fragments) f.id = first++;
  };
  if (!stable) {
    for (auto& w : done)
      if (!w.new_fragments.empty())
        assign(w, reserve_fragment_ids(root, std::uint32_t(w.new_fragments.size()), po, make_sink));
  } else {
    std::uint64_t n = 0;
    for (auto& w : done) n += w.new_fragments.size();
    if (n) {
      std::uint64_t first = reserve_fragment_ids(root, std::uint32_t(n), po, make_sink);
      for (auto& w : done) {
        assign(w, first);
        first += w.new_fragments.size();
      }
    }
  }
}

// Step 3: the old -> new address of each row of a task's old fragments (deleted rows
// map to nothing).
inline void map_task_addresses(const dataset& d, const written_task& w, row_address_map& mapping,
                               const std::string& context) {
  std::size_t k = 0;
  std::vector<std::uint64_t> new_addrs;
  new_addrs.reserve(w.old_addresses.size());
  for (const auto& f : w.new_fragments)
    for (std::uint64_t i = 0; i < f.physical_rows; ++i) new_addrs.push_back(row_address(f.id, i));
  for (const auto& f : w.old_fragments) {
    const auto phys = d.physical_rows(f.id);
    for (std::uint64_t i = 0; i < phys; ++i) {
      const auto a = row_address(f.id, i);
      if (k < w.old_addresses.size() && w.old_addresses[k] == a) mapping[a] = new_addrs[k++];
      else mapping[a] = std::nullopt;
    }
  }
  if (k != w.old_addresses.size()) throw corrupt_error(context + ": scanned rows out of fragment order");
}

// Step 3 with stable row ids: the new fragments carry the ids and versions of the old
// fragments' live rows, in the order written.
inline void carry_row_sequences(const dataset& d, written_task& w) {
  moved_rows rows(d);
  rows.add(w.old_addresses);
  rows.assign(w.new_fragments, true);
}

// Old fragment ids -> new fragment ids, per task (what an index's fragment bitmap is
// rewritten by).
using fragment_groups = std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>>;

inline fragment_groups groups_of(const std::vector<written_task>& done) {
  fragment_groups groups;
  for (const auto& w : done) {
    std::vector<std::uint64_t> olds, news;
    for (const auto& f : w.old_fragments) olds.push_back(f.id);
    for (const auto& f : w.new_fragments) news.push_back(f.id);
    groups.emplace_back(std::move(olds), std::move(news));
  }
  return groups;
}

// The indexes remapped for the Rewrite commit: its rewritten_indices entries and the
// new metadata of each remapped index.
struct remapped_indexes {
  std::vector<pb::transaction::rewrite::rewritten_index> rewritten;
  std::vector<pb::index_metadata> replacements;
};

// Step 4: remapped copies of the indexes (new uuids), without stable row ids; with
// them an index keeps its uuid. Each copy's directory joins index_dirs as soon as it
// exists (removed if the compaction fails); each index is reported in result.indices.
inline remapped_indexes remap_touched_indexes(const std::string& root, const compaction_options& o,
                                              const std::vector<const pb::index_metadata*>& to_remap, bool stable,
                                              const fragment_groups& groups, compaction_result& result,
                                              std::vector<std::string>& index_dirs) {
  remapped_indexes out;
  for (const auto* im : to_remap) {
    rewritten_index_info info;
    info.name = im->name;
    info.old_uuid = im->uuid;
    if (stable) {
      info.new_uuid = im->uuid;
    } else {
      const auto r = o.remap_indexes.remap(root, *im, result.mapping);
      index_dirs.push_back(r.directory);
      info.new_uuid = r.new_uuid;
      info.stats = r.stats;
      out.replacements.push_back(remapped_index_metadata(*im, r, rewritten_fragment_bitmap(*im, groups)));
      pb::transaction::rewrite::rewritten_index ri;
      ri.old_id = im->uuid;
      ri.new_id = r.new_uuid;
      ri.new_index_details = r.transaction_details;
      ri.new_index_version = r.transaction_index_version;
      ri.new_index_files = out.replacements.back().files;
      out.rewritten.push_back(std::move(ri));
    }
    result.indices.push_back(std::move(info));
  }
  return out;
}

// The tasks' old fragments must be untouched in manifest p since the read version.
inline void check_old_fragments_unchanged(const pb::manifest& p, const std::vector<written_task>& done,
                                          const std::string& context, std::uint64_t read_version) {
  for (const auto& w : done)
    for (const auto& f : w.old_fragments) {
      auto it = std::find_if(p.fragments.begin(), p.fragments.end(), [&](const pb::data_fragment& x) { return x.id == f.id; });
      if (it == p.fragments.end() || !same_fragment(*it, f))
        throw conflict_error(context + ": fragment " + std::to_string(f.id) + " was changed by version " +
                             std::to_string(p.version) + " since version " + std::to_string(read_version) +
                             " was planned; nothing was compacted (run it again)");
    }
}

// Each task's new fragments in place of its old ones: where the old ones were when
// they are still side by side, else at the end.
inline void replace_rewritten_fragments(std::vector<pb::data_fragment>& frags, const std::vector<written_task>& done) {
  for (const auto& w : done) {
    const auto first = std::find_if(frags.begin(), frags.end(),
                                    [&](const pb::data_fragment& x) { return x.id == w.old_fragments.front().id; });
    bool contiguous = first != frags.end() && std::size_t(frags.end() - first) >= w.old_fragments.size();
    for (std::size_t i = 0; contiguous && i < w.old_fragments.size(); ++i)
      contiguous = (first + std::ptrdiff_t(i))->id == w.old_fragments[i].id;
    if (contiguous) {
      const auto at = first - frags.begin();
      frags.erase(first, first + std::ptrdiff_t(w.old_fragments.size()));
      frags.insert(frags.begin() + at, w.new_fragments.begin(), w.new_fragments.end());
    } else {
      for (const auto& f : w.old_fragments)
        frags.erase(std::remove_if(frags.begin(), frags.end(), [&](const pb::data_fragment& x) { return x.id == f.id; }),
                    frags.end());
      frags.insert(frags.end(), w.new_fragments.begin(), w.new_fragments.end());
    }
  }
}

// The indexes of the commit after the rewrite: with stable row ids their fragment
// bitmaps rewritten; without, each remapped index replaced by its copy (a conflict
// when a copy's uuid exists already, or a remapped index is gone from base).
inline void rewrite_commit_indexes(std::vector<pb::index_metadata>& indices, const snapshot& base, bool stable,
                                   const std::vector<const pb::index_metadata*>& to_remap, const remapped_indexes& ri,
                                   const fragment_groups& groups, const std::string& context,
                                   std::uint64_t read_version) {
  for (auto& im : indices) {
    if (stable) {
      if (!im.fragment_bitmap.empty())
        set_index_fragment_bitmap(im, rewritten_fragment_bitmap(im, groups));
      continue;
    }
    for (const auto& r : ri.replacements)
      if (im.uuid == r.uuid) throw conflict_error(context + ": index " + r.uuid.to_string() + " exists already");
    auto it = std::find_if(to_remap.begin(), to_remap.end(), [&](const pb::index_metadata* x) { return x->uuid == im.uuid; });
    if (it == to_remap.end()) continue;
    const auto k = std::size_t(it - to_remap.begin());
    im = ri.replacements[k];
  }
  if (!stable)
    for (const auto* old : to_remap)
      if (std::none_of(base.file.indices.begin(), base.file.indices.end(),
                       [&](const pb::index_metadata& x) { return x.uuid == old->uuid; }))
        throw conflict_error(context + ": index '" + old->name + "' was replaced or dropped since version " +
                             std::to_string(read_version) + "; nothing was compacted (run it again)");
}

// The compaction's metrics and new fragment ids, per task.
inline void report_rewrites(const std::vector<written_task>& done, compaction_result& result) {
  for (const auto& w : done) {
    result.metrics.fragments_removed += w.old_fragments.size();
    result.metrics.fragments_added += w.new_fragments.size();
    for (const auto& f : w.old_fragments) result.metrics.files_removed += files_of(f);
    for (const auto& f : w.new_fragments) result.metrics.files_added += files_of(f);
    std::vector<std::uint64_t> ids;
    for (const auto& f : w.new_fragments) ids.push_back(f.id);
    result.new_fragment_ids.push_back(std::move(ids));
  }
}

}  // namespace detail

// Compacts the newest version of the dataset at `root` (see the top of this file).
// Fails before committing anything when an index to be remapped is one lancet cannot
// remap (unsupported_error naming it). On failure, the files written are removed.
template <class SinkFactory>
compaction_result compact_files(const std::string& root, const compaction_options& o, SinkFactory&& make_sink) {
  detail::check(o);
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  const auto& m0 = snap.manifest();
  if (!can_write_dataset(m0.writer_feature_flags))
    throw unsupported_error("cannot compact dataset '" + root + "': it uses Lance features lancet does not know (writer flags " +
                            std::to_string(m0.writer_feature_flags) + ")");
  compaction_result result;
  result.read_version = result.version = d.version();
  const auto plan = plan_compaction(d, o);
  if (plan.tasks.empty()) return result;
  const bool stable = d.stable_row_ids();

  // The indexes to remap, checked before anything is written.
  const auto to_remap = detail::indexes_to_remap(root, snap, plan, stable, o);

  const auto storage = manifest_storage_version(m0);
  const schema::schema target = d.lance_schema();
  const auto arrow_target = std::make_shared<const arrow::schema>(d.schema());
  const std::string context = "cannot compact dataset '" + root + "'";
  const write_options wo = detail::rewrite_write_options(o);
  publish_options po;
  po.scheme = snap.entry.scheme;
  po.write_version_hint = o.write_version_hint;

  std::vector<detail::written_task> done;
  detail::compaction_leftovers left;

  try {
    io::make_directories_if_local((std::filesystem::path(root) / data_dir_name).string());
    // 1. Rewrite each task's live rows into new data files.
    file::with_version(storage, [&]<class V>() {
      for (std::size_t ti = 0; ti < plan.tasks.size(); ++ti) {
        done.push_back(detail::rewrite_task<V>(d, root, m0, plan.tasks[ti], target, arrow_target, wo, o, context,
                                               make_sink, left.cleanups));
        if (o.progress) o.progress(ti + 1, plan.tasks.size());
      }
    });

    // 2. Reserve the new fragments' ids and assign them in order.
    detail::assign_fragment_ids(done, stable, root, po, make_sink);

    // 3. The old -> new address map (deleted rows map to nothing); with stable row
    //    ids, the new fragments' row-id and version sequences.
    for (auto& w : done) {
      detail::map_task_addresses(d, w, result.mapping, context);
      if (stable) detail::carry_row_sequences(d, w);
    }

    // 4. Remapped copies of the indexes (new uuids), without stable row ids.
    const auto groups = detail::groups_of(done);
    const auto remapped = detail::remap_touched_indexes(root, o, to_remap, stable, groups, result, left.index_dirs);

    // 5. The Rewrite commit, on the newest version (after the reservations).
    pb::transaction::rewrite op;
    for (const auto& w : done) op.groups.push_back({w.old_fragments, w.new_fragments});
    op.rewritten_indices = remapped.rewritten;
    // Lance's commit: the Rewrite is checked against every commit since the read
    // version (the reservations included) and applied on the newest.
    auto build = [&](const snapshot& base, const pb::transaction& t) {
      const auto& p = base.manifest();
      detail::check_old_fragments_unchanged(p, done, context, plan.read_version);
      pending_commit c = commit_after(base, t);
      std::vector<pb::data_fragment> frags = p.fragments;
      detail::replace_rewritten_fragments(frags, done);
      c.manifest.fragments = std::move(frags);
      detail::rewrite_commit_indexes(c.indices, base, stable, to_remap, remapped, groups, context, plan.read_version);
      finish_manifest(c.manifest, stable, stable ? std::optional<std::uint64_t>(p.next_row_id) : std::nullopt,
                                     c.transaction);
      return c;
    };
    commit_options co;
    co.publish = po;
    co.max_retries = o.max_retries;
    auto out = commit_transaction(root, load_version(root, plan.read_version), make_transaction(plan.read_version, op),
                                  build, co, make_sink);
    result.version = out.commit.manifest.version;
    result.retries = out.retries;
  } catch (const committed_io_error&) {
    throw;
  } catch (...) {
    left.remove();
    throw;
  }

  detail::report_rewrites(done, result);
  return result;
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE compaction_plan plan_compaction(const dataset& d, const compaction_options& o) {
  detail::check(o);
  const bool materialize = o.materialize_deletions && o.materialize_deletions_threshold < 1.0;
  const auto fragmaps = detail::index_fragmaps(d.indices());
  enum class candidacy { with_neighbours, itself };
  struct bin {
    std::vector<std::uint64_t> ids;
    std::vector<candidacy> why;
    std::vector<std::uint64_t> rows;
    std::vector<std::size_t> indices;
  };
  std::vector<bin> bins;
  std::optional<bin> current;
  auto frags = d.fragments();
  std::sort(frags.begin(), frags.end(), [](const fragment_info& a, const fragment_info& b) { return a.id < b.id; });
  for (const auto& f : frags) {
    if (f.deleted_rows > f.physical_rows)
      throw corrupt_error("fragment " + std::to_string(f.id) + " deletes " + std::to_string(f.deleted_rows) + " of its " +
                          std::to_string(f.physical_rows) + " rows");
    const double deleted_share = f.physical_rows ? double(f.deleted_rows) / double(f.physical_rows) : 0.0;
    std::optional<candidacy> c;
    if (materialize && deleted_share > o.materialize_deletions_threshold) c = candidacy::itself;
    else if (f.physical_rows < o.target_rows_per_fragment) c = candidacy::with_neighbours;
    std::vector<std::size_t> covering;
    for (std::size_t i = 0; i < fragmaps.size(); ++i)
      if (fragmaps[i].covers(f.id)) covering.push_back(i);
    if (!c) {
      if (current) bins.push_back(std::move(*current)), current.reset();
      continue;
    }
    if (current && current->indices != covering) bins.push_back(std::move(*current)), current.reset();
    if (!current) current = bin{{}, {}, {}, covering};
    current->ids.push_back(f.id);
    current->why.push_back(*c);
    current->rows.push_back(f.live_rows());
  }
  if (current) bins.push_back(std::move(*current));

  compaction_plan plan;
  plan.read_version = d.version();
  for (auto& b : bins) {
    if (b.ids.empty() || (b.ids.size() == 1 && b.why[0] == candidacy::with_neighbours)) continue;
    // Split into tasks of at least the target's live rows; the rest joins the last.
    std::size_t at = 0;
    for (;;) {
      std::size_t len = 0;
      std::uint64_t rows = 0;
      while (rows < o.target_rows_per_fragment && at + len < b.ids.size()) rows += b.rows[at + len++];
      std::uint64_t rest = 0;
      for (std::size_t i = at + len; i < b.ids.size(); ++i) rest += b.rows[i];
      compaction_task t;
      if (rest >= o.target_rows_per_fragment) {
        t.fragment_ids.assign(b.ids.begin() + std::ptrdiff_t(at), b.ids.begin() + std::ptrdiff_t(at + len));
        t.live_rows = rows;
        plan.tasks.push_back(std::move(t));
        at += len;
      } else {
        t.fragment_ids.assign(b.ids.begin() + std::ptrdiff_t(at), b.ids.end());
        t.live_rows = rows + rest;
        plan.tasks.push_back(std::move(t));
        break;
      }
    }
  }
  return plan;
}

LANCET_INLINE compaction_result compact_files(const std::string& root, const compaction_options& o) {
  default_sink_factory f;
  return compact_files(root, o, f);
}
#endif

}  // namespace lancet::dataset
