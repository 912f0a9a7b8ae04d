// The definitions of dataset/merge_insert.hpp: the source held in memory and hashed by
// key, the target's keys scanned, the new rows written and the old ones deleted, all
// committed as one Update (update_impl.hpp's manifest).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/merge_insert.hpp"
#include "lancet/dataset/update_impl.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/expr/expression.hpp"
#include "lancet/expr/filter.hpp"

namespace lancet::dataset {

namespace detail {

// Appends row i of `a` to `key` (its bytes, length-prefixed where they vary); false
// when the value is NULL.
inline bool append_key(const arrow::array_data& a, std::int64_t i, std::string& key) {
  if (!a.is_valid(i)) return false;
  using arrow::type_id;
  const auto id = a.type->id;
  if (id == type_id::dictionary) return append_key(*a.children.at(0), a.dictionary_index(i), key);
  if (id == type_id::boolean) {
    key.push_back(a.bool_value(i) ? '\1' : '\0');
    return true;
  }
  std::string_view v;
  if (id == type_id::utf8 || id == type_id::large_utf8 || id == type_id::binary || id == type_id::large_binary) {
    v = a.string_value(i);
    const auto n = std::uint64_t(v.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
  } else if (id == type_id::fixed_size_binary) {
    v = a.fixed_binary_value(i);
  } else if (arrow::is_fixed_width(*a.type) && arrow::bit_width(*a.type) % 8 == 0) {
    const auto w = std::size_t(arrow::bit_width(*a.type) / 8);
    v = {reinterpret_cast<const char*>(a.buffers[1].data()) + std::size_t(a.offset + i) * w, w};
  } else {
    throw unsupported_error("merge insert: a key column of type " + arrow::to_string(*a.type) +
                            " (keys are numbers, strings, binary, booleans, dates and times)");
  }
  key.append(v.data(), v.size());
  return true;
}

// The key of row i over `cols`; nullopt when a key value is NULL (it matches nothing).
inline std::optional<std::string> key_of(const std::vector<const arrow::array_data*>& cols, std::int64_t i) {
  std::string key;
  for (const auto* c : cols)
    if (!append_key(*c, i, key)) return std::nullopt;
  return key;
}

// The key as SQL shows it, for errors ("id = 1").
inline std::string key_text(const std::vector<std::string>& on, const std::vector<const arrow::array_data*>& cols,
                            std::int64_t i) {
  std::string out;
  for (std::size_t k = 0; k < on.size(); ++k) {
    const auto& a = *cols[k];
    std::string v;
    using arrow::type_id;
    switch (a.type->id) {
      case type_id::utf8:
      case type_id::large_utf8: v = "'" + std::string(a.string_value(i)) + "'"; break;
      case type_id::int8: v = std::to_string(a.value<std::int8_t>(i)); break;
      case type_id::int16: v = std::to_string(a.value<std::int16_t>(i)); break;
      case type_id::int32: v = std::to_string(a.value<std::int32_t>(i)); break;
      case type_id::int64: v = std::to_string(a.value<std::int64_t>(i)); break;
      case type_id::uint8: v = std::to_string(a.value<std::uint8_t>(i)); break;
      case type_id::uint16: v = std::to_string(a.value<std::uint16_t>(i)); break;
      case type_id::uint32: v = std::to_string(a.value<std::uint32_t>(i)); break;
      case type_id::uint64: v = std::to_string(a.value<std::uint64_t>(i)); break;
      default: v = "(row " + std::to_string(i) + " of the source)"; break;
    }
    out += (out.empty() ? "" : " AND ") + on[k] + " = " + v;
  }
  return out;
}

// The ids of `fields` and their children, parents first.
inline void all_field_ids(const std::vector<schema::field>& fields, std::vector<std::uint32_t>& out) {
  for (const auto& f : fields) {
    out.push_back(std::uint32_t(f.id));
    all_field_ids(f.children, out);
  }
}

// The source batches as one batch of the dataset's types, checked against its schema.
inline arrow::record_batch merge_source(const std::string& root, const arrow::schema& schema,
                                        std::span<const arrow::record_batch> source, const merge_insert_options& o) {
  if (source.empty() || !source[0].schema) throw invalid_input_error("merge insert into '" + root + "': no source batch");
  const auto& fields = source[0].schema->fields;
  arrow::record_batch out;
  auto s = std::make_shared<arrow::schema>();
  for (std::size_t c = 0; c < fields.size(); ++c) {
    const auto& name = fields[c].name;
    std::size_t t = 0;
    while (t < schema.fields.size() && schema.fields[t].name != name) ++t;
    if (t == schema.fields.size())
      throw invalid_input_error("merge insert into '" + root + "': the source has column '" + name +
                                "', the dataset does not");
    std::vector<arrow::array_ptr> parts;
    for (std::size_t b = 0; b < source.size(); ++b) {
      if (!source[b].schema || source[b].schema->fields.size() != fields.size() || source[b].schema->fields[c].name != name)
        throw invalid_input_error("merge insert into '" + root + "': source batch " + std::to_string(b) +
                                  " has another schema than batch 0");
      parts.push_back(retype(source[b].columns.at(c), schema.fields[t].type, name));
    }
    out.columns.push_back(parts.size() == 1 ? parts[0] : arrow::concat(parts, schema.fields[t].type));
    s->fields.push_back(schema.fields[t]);
  }
  out.schema = s;
  for (const auto& k : o.on)
    if (std::none_of(fields.begin(), fields.end(), [&](const arrow::field& f) { return f.name == k; }))
      throw invalid_input_error("merge insert into '" + root + "': the source has no key column '" + k + "'");
  return out;
}

// Rows `rows` of a batch (one gather per column).
inline arrow::record_batch take_batch_rows(const arrow::record_batch& b, const std::vector<std::int64_t>& rows) {
  arrow::record_batch out;
  out.schema = b.schema;
  for (std::size_t c = 0; c < b.columns.size(); ++c)
    out.columns.push_back(arrow::take_rows(b.columns[c], rows, b.schema->fields[c].type));
  return out;
}

// The rows the merge writes, as the dataset's full rows: updated ones (target rows with
// the source's columns laid over them) then inserted ones (NULL where the source has no
// column).
inline arrow::record_batch merged_rows(const dataset& d, const arrow::record_batch& src,
                                       const std::vector<std::pair<std::int64_t, std::uint64_t>>& updated,
                                       const std::vector<std::int64_t>& inserted) {
  const auto& schema = d.schema();
  std::vector<std::uint64_t> addrs;
  std::vector<std::int64_t> from_src;
  for (const auto& [s, a] : updated) {
    addrs.push_back(a);
    from_src.push_back(s);
  }
  from_src.insert(from_src.end(), inserted.begin(), inserted.end());
  const auto src_rows = take_batch_rows(src, from_src);
  const bool full = src.schema->fields.size() == schema.fields.size();
  const auto targets = (!full && !addrs.empty()) ? d.take_addresses(addrs) : arrow::record_batch{};
  arrow::record_batch out;
  out.schema = std::make_shared<const arrow::schema>(schema);
  const auto n_upd = std::int64_t(updated.size()), n_ins = std::int64_t(inserted.size());
  for (const auto& f : schema.fields) {
    std::size_t c = 0;
    while (c < src.schema->fields.size() && src.schema->fields[c].name != f.name) ++c;
    if (c < src.schema->fields.size()) {
      out.columns.push_back(src_rows.columns[c]);
      continue;
    }
    if (n_ins > 0 && !f.nullable)
      throw invalid_input_error("merge insert: the source has no column '" + f.name +
                                "', which inserted rows need (it is not nullable)");
    std::vector<arrow::array_ptr> parts;
    if (n_upd > 0) {
      std::size_t t = 0;
      while (targets.schema->fields[t].name != f.name) ++t;
      parts.push_back(targets.columns[t]);
    }
    if (n_ins > 0) parts.push_back(arrow::null_array_of(f.type, n_ins));
    out.columns.push_back(parts.size() == 1 ? parts[0] : arrow::concat(parts, f.type));
  }
  return out;
}

template <class SinkFactory>
std::optional<merge_insert_result> merge_once(const std::string& root, std::span<const arrow::record_batch> source,
                                              const merge_insert_options& o, SinkFactory& make_sink) {
  const auto d = dataset::open(root);
  if (d.stable_row_ids())
    throw unsupported_error("merge insert into '" + root + "': it uses stable row ids, which updated rows must keep; "
                            "lancet merges into datasets with row addresses only");
  const auto snap = load_version(root, d.version());
  const auto& m = snap.manifest();
  const auto& schema = d.schema();
  for (const auto& k : o.on)
    if (std::none_of(schema.fields.begin(), schema.fields.end(), [&](const arrow::field& f) { return f.name == k; }))
      throw invalid_input_error("merge insert into '" + root + "': no key column '" + k + "' in the dataset");
  const auto src = merge_source(root, schema, source, o);
  const auto src_n = src.num_rows();
  const auto key_columns = [&](const arrow::record_batch& b) {
    std::vector<const arrow::array_data*> out;
    for (const auto& k : o.on)
      for (std::size_t c = 0; c < b.schema->fields.size(); ++c)
        if (b.schema->fields[c].name == k) out.push_back(b.columns[c].get());
    return out;
  };
  const auto src_keys = key_columns(src);
  std::unordered_map<std::string, std::int64_t> by_key;  // the first source row of each key
  std::unordered_map<std::string, bool> repeated;
  for (std::int64_t r = 0; r < src_n; ++r)
    if (auto k = key_of(src_keys, r)) {
      if (!by_key.emplace(*k, r).second) repeated[*k] = true;
    }
  // The target's keys (and the columns of the delete condition), live rows in order.
  std::optional<expr::filter> delete_if;
  if (o.when_not_matched_by_source_delete && !o.by_source_delete_if.empty())
    delete_if = expr::filter::compile(o.by_source_delete_if, schema);
  scan_options so;
  so.columns = o.on;
  if (delete_if)
    for (const auto& c : delete_if->columns())
      if (std::find(so.columns.begin(), so.columns.end(), c) == so.columns.end()) so.columns.push_back(c);
  so.with_row_id = true;
  std::vector<std::pair<std::int64_t, std::uint64_t>> matched;  // (source row, target address)
  std::vector<std::uint64_t> deleted;
  std::vector<std::uint8_t> source_matched(std::size_t(src_n), 0);
  for (auto sc = d.scan(so); auto b = sc.next();) {
    const auto keys = key_columns(*b);
    const auto* addr = b->columns.back()->values<std::uint64_t>();
    std::vector<std::uint8_t> del;
    if (delete_if) {
      std::vector<arrow::array_ptr> in;
      for (const auto& c : delete_if->columns())
        in.push_back(b->columns[std::size_t(std::find(so.columns.begin(), so.columns.end(), c) - so.columns.begin())]);
      del = delete_if->evaluate(in);
    }
    for (std::int64_t r = 0; r < b->num_rows(); ++r) {
      const auto k = key_of(keys, r);
      const auto it = k ? by_key.find(*k) : by_key.end();
      if (it != by_key.end()) {
        if (o.when_matched_update_all && repeated.count(*k))
          throw invalid_input_error("Ambiguous merge inserts are prohibited: multiple source rows match the same target "
                                    "row on (" + key_text(o.on, keys, r) + ") of dataset '" + root +
                                    "'. Please ensure each target row is matched by at most one source row.");
        matched.emplace_back(it->second, addr[r]);
        source_matched[std::size_t(it->second)] = 1;
      } else if (o.when_not_matched_by_source_delete && (del.empty() || del[std::size_t(r)])) {
        deleted.push_back(addr[r]);
      }
    }
  }
  // Rows matched (for their source rows in source order), kept where matched_if holds.
  std::vector<std::pair<std::int64_t, std::uint64_t>> updated;
  if (o.when_matched_update_all) {
    std::sort(matched.begin(), matched.end());
    updated = matched;
    if (!o.matched_if.empty() && !updated.empty()) {
      std::vector<std::uint64_t> addrs;
      std::vector<std::int64_t> srows;
      for (const auto& [s, a] : updated) {
        addrs.push_back(a);
        srows.push_back(s);
      }
      const auto t = d.take_addresses(addrs);
      const auto sr = take_batch_rows(src, srows);
      std::vector<std::pair<std::string, arrow::array_ptr>> tm, sm;
      for (std::size_t c = 0; c < t.columns.size(); ++c) tm.emplace_back(t.schema->fields[c].name, t.columns[c]);
      for (std::size_t c = 0; c < sr.columns.size(); ++c) sm.emplace_back(sr.schema->fields[c].name, sr.columns[c]);
      const auto target = arrow::struct_array(tm), from = arrow::struct_array(sm);
      arrow::schema both;
      both.fields = {arrow::field{"target", target->type, true, {}}, arrow::field{"source", from->type, true, {}}};
      const auto cond = expr::filter::compile(o.matched_if, both);
      std::vector<arrow::array_ptr> in;
      for (const auto& c : cond.columns()) in.push_back(c == "target" ? target : from);
      const auto keep = cond.evaluate(in);
      std::vector<std::pair<std::int64_t, std::uint64_t>> kept;
      for (std::size_t i = 0; i < updated.size(); ++i)
        if (keep[i]) kept.push_back(updated[i]);
      updated = std::move(kept);
    }
  }
  std::vector<std::int64_t> inserted;
  if (o.when_not_matched_insert_all)
    for (std::int64_t r = 0; r < src_n; ++r)
      if (!source_matched[std::size_t(r)]) inserted.push_back(r);
  // The new rows, then the deletions of the rows they replace and of the ones deleted.
  pb::transaction::update op;
  all_field_ids(manifest_schema(m).fields, op.fields_for_preserving_frag_bitmap);  // every field: whole rows rewritten
  std::vector<std::string> written;
  return rewrite_once(written, [&] {
    if (!updated.empty() || !inserted.empty()) {
      auto rows = merged_rows(d, src, updated, inserted);
      auto none = [] { return std::optional<arrow::record_batch>(); };
      auto files = write_data_files(root, std::optional<arrow::record_batch>(std::move(rows)), none, manifest_schema(m),
                                    manifest_storage_version(m), write_options{}, make_sink,
                                    encoding::structural::default_policy{}, "merge insert into '" + root + "'");
      written = files.paths;
      op.new_fragments = std::move(files.fragments);
    }
    std::map<std::uint64_t, std::vector<std::uint32_t>> offsets;
    for (const auto& [s, a] : updated) offsets[a >> 32].push_back(std::uint32_t(a & 0xFFFFFFFFull));
    for (auto a : deleted) offsets[a >> 32].push_back(std::uint32_t(a & 0xFFFFFFFFull));
    delete_moved_rows(root, d, m, offsets, op, make_sink, written);
    auto out = commit_transaction(root, snap, make_transaction(snap.version(), std::move(op)), build_update,
                                  commit_options_for(snap, o.max_retries, o.write_version_hint), make_sink);
    return merge_insert_result{out.commit.manifest.version, inserted.size(), updated.size(), deleted.size(),
                               out.retries};
  });
}

}  // namespace detail

// merge_insert (merge_insert.hpp), over any sink factory.
template <class SinkFactory>
merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                 const merge_insert_options& o, SinkFactory&& make_sink) {
  if (o.on.empty()) throw invalid_input_error("merge insert into '" + root + "': no key column (on)");
  if (!o.when_matched_update_all && !o.when_not_matched_insert_all && !o.when_not_matched_by_source_delete)
    throw invalid_input_error("merge insert into '" + root + "': no clause (update matched, insert unmatched, "
                              "or delete unmatched by source)");
  return detail::run_until_committed("merge insert into '" + root + "'", o.max_retries,
                                     [&] { return detail::merge_once(root, source, o, make_sink); });
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines this
LANCET_INLINE merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                               const merge_insert_options& o) {
  default_sink_factory f;
  return merge_insert(root, source, o, f);
}
#endif

}  // namespace lancet::dataset
