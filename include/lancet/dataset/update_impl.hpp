// The definitions of dataset/update.hpp: rows selected, rewritten fragment by fragment
// into new data files, deleted from their old fragments, committed as Lance's Update.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/cast.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/conflict.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/delete_impl.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/moved_rows.hpp"
#include "lancet/dataset/update.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/expr/expression.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

namespace detail {

// The fragments of an update's new ones that hold only moved rows (each carries a row
// id for every row): with stable row ids an index keeps finding those rows by id.
inline std::vector<std::size_t> pure_moved_fragments(const std::vector<pb::data_fragment>& frags) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < frags.size(); ++i)
    if (const auto* s = std::get_if<std::string>(&frags[i].row_id_sequence))
      if (pb::decode<pb::row_id_sequence>(*s).size() == frags[i].physical_rows) out.push_back(i);
  return out;
}

// With stable row ids, an index whose columns an update did not set still answers for
// the rows it moved (their ids did not change): the fragments holding only moved rows
// join its fragment bitmap, when it covered every fragment the rows came from.
inline void register_moved_fragments(std::vector<pb::index_metadata>& indices, const pb::transaction::update& op,
                                     const std::vector<std::uint64_t>& pure_ids) {
  if (pure_ids.empty()) return;
  std::vector<std::uint64_t> origins = op.removed_fragment_ids;
  for (const auto& f : op.updated_fragments) origins.push_back(f.id);
  const auto& set = op.fields_for_preserving_frag_bitmap;
  for (auto& idx : indices) {
    if (idx.fragment_bitmap.empty()) continue;
    if (std::any_of(idx.fields.begin(), idx.fields.end(), [&](std::int32_t field) {
          return field >= 0 && std::find(set.begin(), set.end(), std::uint32_t(field)) != set.end();
        }))
      continue;
    auto bitmap = index_fragment_bitmap(idx);
    if (!std::all_of(origins.begin(), origins.end(), [&](std::uint64_t id) { return bitmap.contains(std::uint32_t(id)); }))
      continue;
    for (auto id : pure_ids) bitmap.add(std::uint32_t(id));
    set_index_fragment_bitmap(idx, bitmap);
  }
}

// Update's manifest on `base`: removed fragments gone, updated ones replaced (their new
// deletion files), new ones appended with new ids (and, with stable row ids, their
// rows' ids completed); indexes as they were, but for moved rows they still answer for.
inline pending_commit build_update(const snapshot& base, const pb::transaction& txn) {
  const auto& op = std::get<pb::transaction::update>(txn.operation);
  pending_commit c = commit_after(base, txn);
  const auto& p = base.manifest();
  std::vector<pb::data_fragment> frags;
  for (const auto& f : p.fragments) {
    if (std::find(op.removed_fragment_ids.begin(), op.removed_fragment_ids.end(), f.id) != op.removed_fragment_ids.end())
      continue;
    auto u = std::find_if(op.updated_fragments.begin(), op.updated_fragments.end(),
                          [&](const pb::data_fragment& x) { return x.id == f.id; });
    frags.push_back(u != op.updated_fragments.end() ? *u : f);
  }
  const bool stable = uses_stable_row_ids(p);
  auto added = op.new_fragments;
  const auto pure = stable && op.update_mode == pb::transaction::update::mode::rewrite_rows
                        ? pure_moved_fragments(added)
                        : std::vector<std::size_t>{};
  std::optional<std::uint64_t> next_row_id;
  if (stable) next_row_id = p.next_row_id;
  assign_new_fragments(added, next_fragment_id(p), next_row_id, c.manifest.version);
  std::vector<std::uint64_t> pure_ids;
  for (auto i : pure) pure_ids.push_back(added[i].id);
  register_moved_fragments(c.indices, op, pure_ids);
  for (auto& f : added) frags.push_back(std::move(f));
  c.manifest.fragments = std::move(frags);
  finish_manifest(c.manifest, stable, next_row_id, c.transaction);
  return c;
}

// The deletions of rows that move or go (offsets by fragment) added to `op`: a new
// deletion file per fragment, or the fragment removed when no live row is left.
template <class SinkFactory>
void delete_moved_rows(const std::string& root, const dataset& d, const pb::manifest& m,
                       const std::map<std::uint64_t, std::vector<std::uint32_t>>& offsets, pb::transaction::update& op,
                       SinkFactory& make_sink, std::vector<std::string>& written) {
  for (const auto& [fid, offs] : offsets) {
    const auto& frag = *std::find_if(m.fragments.begin(), m.fragments.end(),
                                     [&](const pb::data_fragment& f) { return f.id == fid; });
    const auto all = d.deleted_rows(fid).merged(offs);
    if (all.size() >= d.physical_rows(fid)) op.removed_fragment_ids.push_back(fid);
    else op.updated_fragments.push_back(write_deletion_file(root, m, frag, all, make_sink, written));
  }
}

// Runs `write_and_commit`, which records the files it writes in `written`; when it
// fails they are removed (not once committed), and a retryable conflict gives nullopt.
template <class F>
auto rewrite_once(std::vector<std::string>& written, F&& write_and_commit)
    -> std::optional<std::invoke_result_t<F&>> {
  try {
    return write_and_commit();
  } catch (const committed_io_error&) {
    throw;
  } catch (const commit_conflict_error& e) {
    for (const auto& p : written) io::remove_quietly(p);
    if (e.retryable) return std::nullopt;
    throw;
  } catch (...) {
    for (const auto& p : written) io::remove_quietly(p);
    throw;
  }
}

// Calls `once` (an operation's run on the latest version; nullopt when preempted)
// until it commits, at most max_retries times again; its result's retries count them.
template <class F>
auto run_until_committed(const std::string& what, unsigned max_retries, F&& once) {
  for (unsigned attempt = 0;; ++attempt) {
    if (auto r = once()) {
      r->retries += attempt;
      return *r;
    }
    if (attempt >= max_retries)
      throw commit_conflict_error(what + ": other writers changed its rows " + std::to_string(attempt + 1) +
                                      " times while it ran; nothing was committed",
                                  0, "", true);
  }
}

// One run of update on the latest version; nullopt when a concurrent commit preempted
// it (retryable: run again).
template <class SinkFactory>
std::optional<update_result> update_once(const std::string& root, const std::string& where,
                                         const std::vector<std::pair<std::string, std::string>>& set,
                                         const update_options& o, SinkFactory& make_sink) {
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  const auto& m = snap.manifest();
  const auto& schema = d.schema();
  // The columns set, their expressions and field ids.
  std::vector<std::size_t> targets;
  std::vector<expr::expression> exprs;
  std::vector<std::uint32_t> set_ids;
  const auto lance = manifest_schema(m);
  for (const auto& [column, sql] : set) {
    std::size_t c = 0;
    while (c < schema.fields.size() && schema.fields[c].name != column) ++c;
    if (c == schema.fields.size())
      throw invalid_input_error("update of dataset '" + root + "': no column '" + column + "'");
    if (std::find(targets.begin(), targets.end(), c) != targets.end())
      throw invalid_input_error("update of dataset '" + root + "': column '" + column + "' is set twice");
    targets.push_back(c);
    exprs.push_back(expr::expression::compile(sql, schema));
    set_ids.push_back(std::uint32_t(lance.fields.at(c).id));
  }
  if (set.empty()) throw invalid_input_error("update of dataset '" + root + "': no column to set");
  // The rows to move, by fragment.
  const auto selected = where.empty() ? d.live_rows()->to_vector() : rows_where(d, where, o.find_rows);
  std::map<std::uint64_t, std::vector<std::uint64_t>> by_fragment;
  for (auto a : d.row_addresses(selected)) by_fragment[a >> 32].push_back(a);
  for (auto& [fid, addrs] : by_fragment) std::sort(addrs.begin(), addrs.end());
  // Their new values, one fragment at a time, into new data files.
  auto it = by_fragment.begin();
  auto next = [&]() -> std::optional<arrow::record_batch> {
    if (it == by_fragment.end()) return std::nullopt;
    const auto& addrs = (it++)->second;
    auto rows = d.take_addresses(addrs);
    // Every expression sees the row as it was before the update.
    std::vector<arrow::array_ptr> values;
    for (std::size_t k = 0; k < targets.size(); ++k) {
      std::vector<arrow::array_ptr> inputs;
      for (const auto& name : exprs[k].columns()) {
        std::size_t c = 0;
        while (schema.fields[c].name != name) ++c;
        inputs.push_back(rows.columns.at(c));
      }
      const auto v = exprs[k].evaluate(inputs, rows.num_rows());
      values.push_back(arrow::cast(v, schema.fields[targets[k]].type, schema.fields[targets[k]].name));
    }
    for (std::size_t k = 0; k < targets.size(); ++k) rows.columns[targets[k]] = values[k];
    return rows;
  };
  std::vector<std::string> written;
  pb::transaction::update op;
  op.fields_for_preserving_frag_bitmap = set_ids;
  return rewrite_once(written, [&] {
    if (!by_fragment.empty()) {
      auto first = next();
      auto files = write_data_files(root, std::move(first), next, lance, manifest_storage_version(m), write_options{},
                                    make_sink, encoding::structural::default_policy{}, "update of dataset '" + root + "'");
      written = files.paths;
      op.new_fragments = std::move(files.fragments);
      if (d.stable_row_ids()) {  // the moved rows keep their ids and creation versions
        moved_rows moved(d);
        for (const auto& [fid, addrs] : by_fragment) moved.add(addrs);
        moved.assign(op.new_fragments, false);
      }
    }
    std::map<std::uint64_t, std::vector<std::uint32_t>> offsets;
    for (const auto& [fid, addrs] : by_fragment)
      for (auto a : addrs) offsets[fid].push_back(std::uint32_t(a & 0xFFFFFFFFull));
    delete_moved_rows(root, d, m, offsets, op, make_sink, written);
    // The moved rows are its affected rows: a concurrent delete of other rows of their
    // fragments is merged into its deletion files rather than running it again.
    auto out = commit_transaction(root, snap, make_transaction(snap.version(), std::move(op)), build_update,
                                  commit_options_for(snap, o.max_retries, o.write_version_hint), make_sink,
                                  affected_rows(offsets));
    remove_superseded_deletion_files(root, out.commit.manifest, written);
    return update_result{out.commit.manifest.version, selected.size(), out.retries};
  });
}

}  // namespace detail

// update (update.hpp), over any sink factory.
template <class SinkFactory>
update_result update(const std::string& root, const std::string& where,
                     const std::vector<std::pair<std::string, std::string>>& set, const update_options& o,
                     SinkFactory&& make_sink) {
  return detail::run_until_committed("update of dataset '" + root + "'", o.max_retries,
                                     [&] { return detail::update_once(root, where, set, o, make_sink); });
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines this
LANCET_INLINE update_result update(const std::string& root, const std::string& where,
                                   const std::vector<std::pair<std::string, std::string>>& set,
                                   const update_options& o) {
  default_sink_factory f;
  return update(root, where, set, o, f);
}
#endif

}  // namespace lancet::dataset
