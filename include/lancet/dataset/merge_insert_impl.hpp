// The definitions of dataset/merge_insert.hpp: the target's keys indexed, the source
// streamed past them (and read again, from memory or a scratch file, for the inserted
// rows and for reruns), the new rows written and the old ones deleted, all committed as
// one Update (update_impl.hpp's manifest).
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
#include "lancet/dataset/replayable_batches.hpp"
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

// The key of row i over `cols`, into `key`; false when a key value is NULL (it matches
// nothing).
inline bool key_into(const std::vector<const arrow::array_data*>& cols, std::int64_t i, std::string& key) {
  key.clear();
  for (const auto* c : cols)
    if (!append_key(*c, i, key)) return false;
  return true;
}

// The target's live rows by key, in scan order: their addresses, whether a source row
// matched them and whether the by-source delete may take them. Keys live in one arena,
// found through an open-addressing table (rows with equal keys chained); about 40 bytes
// a row for a 64-bit key.
class target_keys {
 public:
  static constexpr std::uint32_t none = 0xFFFFFFFFu;

  // Adds a row; `key` nullopt: a NULL key (matches nothing).
  void add(const std::string* key, std::uint64_t address, bool deletable) {
    if (entries_.size() >= none - 1)
      throw unsupported_error("merge insert: a target of more than 2^32 - 2 live rows");
    const auto e = std::uint32_t(entries_.size());
    entries_.push_back({arena_.size(), key ? std::uint32_t(key->size()) : 0, none, address,
                        std::uint8_t(deletable ? 2 : 0)});
    if (!key) return;
    arena_.insert(arena_.end(), key->begin(), key->end());
    if ((keyed_ + 1) * 2 > slots_.size()) grow();
    ++keyed_;
    place(e, hash(*key), true);
  }

  // The first row with this key (none: no row), then next_of(row) for the others.
  std::uint32_t find(std::string_view key) const {
    if (slots_.empty()) return none;
    const auto h = hash(key);
    for (std::size_t s = h & (slots_.size() - 1);; s = (s + 1) & (slots_.size() - 1)) {
      const auto& sl = slots_[s];
      if (sl.entry == none) return none;
      if (sl.tag == std::uint32_t(h) && key_of_entry(sl.entry) == key) return sl.entry;
    }
  }
  std::uint32_t next_of(std::uint32_t e) const { return entries_[e].next; }

  std::size_t size() const noexcept { return entries_.size(); }
  std::uint64_t address(std::uint32_t e) const { return entries_[e].address; }
  bool matched(std::uint32_t e) const { return entries_[e].flags & 1; }
  void set_matched(std::uint32_t e) { entries_[e].flags |= 1; }
  bool deletable(std::uint32_t e) const { return entries_[e].flags & 2; }

 private:
  struct entry {
    std::size_t key_at;
    std::uint32_t key_size, next;  // next: the previous row added with the same key
    std::uint64_t address;
    std::uint8_t flags;  // 1: matched, 2: deletable
  };
  struct slot {
    std::uint32_t entry = none, tag = 0;
  };

  static std::uint64_t hash(std::string_view k) { return std::hash<std::string_view>{}(k); }
  std::string_view key_of_entry(std::uint32_t e) const {
    return {arena_.data() + entries_[e].key_at, entries_[e].key_size};
  }

  // Puts entry e in the table; a row whose key is there already heads its chain.
  void place(std::uint32_t e, std::uint64_t h, bool chain) {
    for (std::size_t s = h & (slots_.size() - 1);; s = (s + 1) & (slots_.size() - 1)) {
      auto& sl = slots_[s];
      if (sl.entry == none) {
        sl = {e, std::uint32_t(h)};
        return;
      }
      if (chain && sl.tag == std::uint32_t(h) && key_of_entry(sl.entry) == key_of_entry(e)) {
        entries_[e].next = sl.entry;
        sl.entry = e;
        --keyed_;  // one slot holds the chain
        return;
      }
    }
  }

  void grow() {
    std::vector<slot> old(std::max<std::size_t>(slots_.size() * 2, 1024));
    old.swap(slots_);
    for (const auto& sl : old)
      if (sl.entry != none) place(sl.entry, hash(key_of_entry(sl.entry)), false);
  }

  std::vector<char> arena_;
  std::vector<entry> entries_;
  std::vector<slot> slots_;
  std::size_t keyed_ = 0;  // slots in use
};

// A source batch with the dataset's types (its columns checked against the dataset's
// and against the first batch's).
class source_conformer {
 public:
  source_conformer(std::string root, const arrow::schema& dataset, const std::vector<std::string>& on)
      : root_(std::move(root)), dataset_(dataset), on_(on) {}

  arrow::record_batch operator()(const arrow::record_batch& b) {
    if (!b.schema) throw invalid_input_error("merge insert into '" + root_ + "': source batch " + std::to_string(n_) +
                                             " has no schema");
    if (!schema_) schema_ = make_schema(*b.schema);
    const auto& fields = schema_->fields;
    if (b.schema->fields.size() != fields.size())
      throw invalid_input_error("merge insert into '" + root_ + "': source batch " + std::to_string(n_) +
                                " has another schema than batch 0");
    arrow::record_batch out;
    out.schema = schema_;
    for (std::size_t c = 0; c < fields.size(); ++c) {
      if (b.schema->fields[c].name != fields[c].name)
        throw invalid_input_error("merge insert into '" + root_ + "': source batch " + std::to_string(n_) +
                                  " has another schema than batch 0 (column " + std::to_string(c) + " is '" +
                                  b.schema->fields[c].name + "', not '" + fields[c].name + "')");
      out.columns.push_back(retype(b.columns.at(c), fields[c].type, fields[c].name));
    }
    ++n_;
    return out;
  }

 private:
  std::shared_ptr<const arrow::schema> make_schema(const arrow::schema& s) const {
    auto out = std::make_shared<arrow::schema>();
    for (const auto& f : s.fields) {
      const auto t = std::find_if(dataset_.fields.begin(), dataset_.fields.end(),
                                  [&](const arrow::field& x) { return x.name == f.name; });
      if (t == dataset_.fields.end())
        throw invalid_input_error("merge insert into '" + root_ + "': the source has column '" + f.name +
                                  "', the dataset does not");
      out->fields.push_back(*t);
    }
    for (const auto& k : on_)
      if (std::none_of(s.fields.begin(), s.fields.end(), [&](const arrow::field& f) { return f.name == k; }))
        throw invalid_input_error("merge insert into '" + root_ + "': the source has no key column '" + k + "'");
    return out;
  }

  std::string root_;
  const arrow::schema& dataset_;
  const std::vector<std::string>& on_;
  std::shared_ptr<const arrow::schema> schema_;
  std::size_t n_ = 0;
};

// Rows `rows` of a batch (one gather per column).
inline arrow::record_batch take_batch_rows(const arrow::record_batch& b, const std::vector<std::int64_t>& rows) {
  arrow::record_batch out;
  out.schema = b.schema;
  for (std::size_t c = 0; c < b.columns.size(); ++c)
    out.columns.push_back(arrow::take_rows(b.columns[c], rows, b.schema->fields[c].type));
  return out;
}

inline std::vector<const arrow::array_data*> merge_key_columns(const arrow::record_batch& b,
                                                               const std::vector<std::string>& on) {
  std::vector<const arrow::array_data*> out;
  for (const auto& k : on)
    for (std::size_t c = 0; c < b.schema->fields.size(); ++c)
      if (b.schema->fields[c].name == k) out.push_back(b.columns[c].get());
  return out;
}

// One run of a merge insert on the latest version: the target's keys indexed, the
// source read once for the updated rows (written as they come) and the source rows
// that match nothing, and again for the inserted rows; then the deletions and the
// commit.
template <class SinkFactory>
class merge_run {
 public:
  merge_run(const std::string& root, replayable_batches& source, const merge_insert_options& o, SinkFactory& make_sink)
      : root_(root), source_(source), o_(o), make_sink_(make_sink), d_(dataset::open(root)),
        snap_(load_version(root, d_.version())) {
    if (d_.stable_row_ids())
      throw unsupported_error("merge insert into '" + root + "': it uses stable row ids, which updated rows must keep; "
                              "lancet merges into datasets with row addresses only");
    const auto& schema = d_.schema();
    for (const auto& k : o.on)
      if (std::none_of(schema.fields.begin(), schema.fields.end(), [&](const arrow::field& f) { return f.name == k; }))
        throw invalid_input_error("merge insert into '" + root + "': no key column '" + k + "' in the dataset");
  }

  std::optional<merge_insert_result> run() {
    index_target();
    const auto& m = snap_.manifest();
    pb::transaction::update op;
    all_field_ids(manifest_schema(m).fields, op.fields_for_preserving_frag_bitmap);  // every field: whole rows rewritten
    std::vector<std::string> written;
    return rewrite_once(written, [&] {
      source_.rewind();
      auto next = [&] { return next_rows(); };
      if (auto first = next()) {
        auto files = write_data_files(root_, std::move(first), next, manifest_schema(m), manifest_storage_version(m),
                                      write_options{}, make_sink_, encoding::structural::default_policy{},
                                      "merge insert into '" + root_ + "'");
        written = files.paths;
        op.new_fragments = std::move(files.fragments);
      }
      std::map<std::uint64_t, std::vector<std::uint32_t>> offsets;
      for (auto a : updated_) offsets[a >> 32].push_back(std::uint32_t(a & 0xFFFFFFFFull));
      std::uint64_t deleted = 0;
      if (o_.when_not_matched_by_source_delete)
        for (std::uint32_t e = 0; e < keys_.size(); ++e)
          if (!keys_.matched(e) && keys_.deletable(e)) {
            offsets[keys_.address(e) >> 32].push_back(std::uint32_t(keys_.address(e) & 0xFFFFFFFFull));
            ++deleted;
          }
      delete_moved_rows(root_, d_, m, offsets, op, make_sink_, written);
      auto out = commit_transaction(root_, snap_, make_transaction(snap_.version(), std::move(op)), build_update,
                                    commit_options_for(snap_, o_.max_retries, o_.write_version_hint), make_sink_);
      return merge_insert_result{out.commit.manifest.version, inserted_, updated_.size(), deleted,
                                 source_.spilled_rows(), out.retries};
    });
  }

 private:
  // The target's keys (and whether its delete condition holds), live rows in order.
  void index_target() {
    const auto& schema = d_.schema();
    std::optional<expr::filter> delete_if;
    if (o_.when_not_matched_by_source_delete && !o_.by_source_delete_if.empty())
      delete_if = expr::filter::compile(o_.by_source_delete_if, schema);
    scan_options so;
    so.columns = o_.on;
    if (delete_if)
      for (const auto& c : delete_if->columns())
        if (std::find(so.columns.begin(), so.columns.end(), c) == so.columns.end()) so.columns.push_back(c);
    so.with_row_address = true;
    so.batch_size = 65536;
    std::string key;
    for (auto sc = d_.scan(so); auto b = sc.next();) {
      const auto cols = merge_key_columns(*b, o_.on);
      const auto* addr = b->columns.back()->values<std::uint64_t>();
      std::vector<std::uint8_t> del;
      if (delete_if) {
        std::vector<arrow::array_ptr> in;
        for (const auto& c : delete_if->columns())
          in.push_back(
              b->columns[std::size_t(std::find(so.columns.begin(), so.columns.end(), c) - so.columns.begin())]);
        del = delete_if->evaluate(in);
      }
      for (std::int64_t r = 0; r < b->num_rows(); ++r)
        keys_.add(key_into(cols, r, key) ? &key : nullptr, addr[r], del.empty() || del[std::size_t(r)]);
    }
  }

  // The next batch of rows to write: updated ones while the first reading of the source
  // lasts, then inserted ones from the second; nullopt at the end.
  std::optional<arrow::record_batch> next_rows() {
    while (pass_ < 2) {
      auto b = source_.next();
      if (!b) {
        ++pass_;
        if (pass_ == 1 && inserted_ > 0) {
          source_.rewind();
          row_base_ = 0;
        } else {
          pass_ = 2;
        }
        continue;
      }
      auto out = pass_ == 0 ? match_batch(*b) : inserted_rows(*b);
      row_base_ += std::uint64_t(b->num_rows());
      if (out.num_rows() > 0) return out;
    }
    return std::nullopt;
  }

  // Matches a source batch against the target: notes its unmatched rows (to insert) and
  // returns its updated rows.
  arrow::record_batch match_batch(const arrow::record_batch& src) {
    const auto cols = merge_key_columns(src, o_.on);
    std::vector<std::int64_t> srows;
    std::vector<std::uint64_t> addrs;
    std::string key;
    for (std::int64_t r = 0; r < src.num_rows(); ++r) {
      auto e = key_into(cols, r, key) ? keys_.find(key) : target_keys::none;
      if (e == target_keys::none) {
        if (o_.when_not_matched_insert_all) {
          insert_.resize(row_base_ + std::uint64_t(r) + 1, false);
          insert_[row_base_ + std::uint64_t(r)] = true;
          ++inserted_;
        }
        continue;
      }
      // Rows with equal keys are chained newest first; they are updated in scan order.
      const auto first = srows.size();
      for (; e != target_keys::none; e = keys_.next_of(e)) {
        if (keys_.matched(e) && o_.when_matched_update_all)
          throw invalid_input_error("Ambiguous merge inserts are prohibited: multiple source rows match the same target "
                                    "row on (" + key_text(o_.on, cols, r) + ") of dataset '" + root_ +
                                    "'. Please ensure each target row is matched by at most one source row.");
        keys_.set_matched(e);
        if (o_.when_matched_update_all) {
          srows.push_back(r);
          addrs.push_back(keys_.address(e));
        }
      }
      std::reverse(addrs.begin() + std::ptrdiff_t(first), addrs.end());
    }
    if (!o_.matched_if.empty() && !srows.empty()) keep_where_matched_if(src, srows, addrs);
    updated_.insert(updated_.end(), addrs.begin(), addrs.end());
    return updated_rows(src, srows, addrs);
  }

  // Keeps the matched pairs for which matched_if (over target.COL and source.COL) holds.
  void keep_where_matched_if(const arrow::record_batch& src, std::vector<std::int64_t>& srows,
                             std::vector<std::uint64_t>& addrs) {
    const auto t = d_.take_addresses(addrs);
    const auto sr = take_batch_rows(src, srows);
    std::vector<std::pair<std::string, arrow::array_ptr>> tm, sm;
    for (std::size_t c = 0; c < t.columns.size(); ++c) tm.emplace_back(t.schema->fields[c].name, t.columns[c]);
    for (std::size_t c = 0; c < sr.columns.size(); ++c) sm.emplace_back(sr.schema->fields[c].name, sr.columns[c]);
    const auto target = arrow::struct_array(tm), from = arrow::struct_array(sm);
    arrow::schema both;
    both.fields = {arrow::field{"target", target->type, true, {}}, arrow::field{"source", from->type, true, {}}};
    const auto cond = expr::filter::compile(o_.matched_if, both);
    std::vector<arrow::array_ptr> in;
    for (const auto& c : cond.columns()) in.push_back(c == "target" ? target : from);
    const auto keep = cond.evaluate(in);
    std::size_t n = 0;
    for (std::size_t i = 0; i < srows.size(); ++i)
      if (keep[i]) {
        srows[n] = srows[i];
        addrs[n++] = addrs[i];
      }
    srows.resize(n);
    addrs.resize(n);
  }

  // The dataset's full rows for matched pairs: the source's columns laid over the target's.
  arrow::record_batch updated_rows(const arrow::record_batch& src, const std::vector<std::int64_t>& srows,
                                   const std::vector<std::uint64_t>& addrs) {
    const auto& schema = d_.schema();
    const auto from = take_batch_rows(src, srows);
    const bool full = src.schema->fields.size() == schema.fields.size();
    const auto targets = (!full && !addrs.empty()) ? d_.take_addresses(addrs) : arrow::record_batch{};
    return dataset_rows(from, [&](const arrow::field& f) {
      std::size_t t = 0;
      while (targets.schema->fields[t].name != f.name) ++t;
      return targets.columns[t];
    });
  }

  // The batch's rows noted for insertion, NULL where the source has no column.
  arrow::record_batch inserted_rows(const arrow::record_batch& src) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r = 0; r < src.num_rows(); ++r)
      if (row_base_ + std::uint64_t(r) < insert_.size() && insert_[row_base_ + std::uint64_t(r)]) rows.push_back(r);
    const auto from = take_batch_rows(src, rows);
    return dataset_rows(from, [&](const arrow::field& f) {
      if (!f.nullable)
        throw invalid_input_error("merge insert into '" + root_ + "': the source has no column '" + f.name +
                                  "', which inserted rows need (it is not nullable)");
      return arrow::null_array_of(f.type, from.num_rows());
    });
  }

  // Rows in the dataset's column order: the source's columns, `missing(field)` for the others.
  template <class Missing>
  arrow::record_batch dataset_rows(const arrow::record_batch& from, Missing&& missing) {
    const auto& schema = d_.schema();
    arrow::record_batch out;
    out.schema = std::make_shared<const arrow::schema>(schema);
    for (const auto& f : schema.fields) {
      std::size_t c = 0;
      while (c < from.schema->fields.size() && from.schema->fields[c].name != f.name) ++c;
      if (c < from.schema->fields.size()) out.columns.push_back(from.columns[c]);
      else if (from.num_rows() == 0) out.columns.push_back(arrow::null_array_of(f.type, 0));
      else out.columns.push_back(missing(f));
    }
    return out;
  }

  const std::string& root_;
  replayable_batches& source_;
  const merge_insert_options& o_;
  SinkFactory& make_sink_;
  const dataset d_;
  const snapshot snap_;
  target_keys keys_;
  std::vector<bool> insert_;  // by source row: insert it
  std::vector<std::uint64_t> updated_;  // addresses of the updated target rows
  std::uint64_t inserted_ = 0, row_base_ = 0;
  int pass_ = 0;
};

}  // namespace detail

// merge_insert (merge_insert.hpp) of the batches `next()` yields (until nullopt), over
// any sink factory.
template <batch_generator Next, class SinkFactory>
merge_insert_result merge_insert(const std::string& root, Next&& next, const merge_insert_options& o,
                                 SinkFactory&& make_sink) {
  const std::string what = "merge insert into '" + root + "'";
  if (o.on.empty()) throw invalid_input_error(what + ": no key column (on)");
  if (!o.when_matched_update_all && !o.when_not_matched_insert_all && !o.when_not_matched_by_source_delete)
    throw invalid_input_error(what + ": no clause (update matched, insert unmatched, or delete unmatched by source)");
  const auto schema = dataset::open(root).schema();
  detail::source_conformer conform(root, schema, o.on);
  detail::replayable_batches source(
      [&]() -> std::optional<arrow::record_batch> {
        std::optional<arrow::record_batch> b = next();
        if (!b) return std::nullopt;
        return conform(*b);
      },
      o.memory_budget_bytes, o.spill_directory);
  return detail::run_until_committed(what, o.max_retries, [&] {
    detail::merge_run<std::remove_reference_t<SinkFactory>> run(root, source, o, make_sink);
    return run.run();
  });
}

// merge_insert of batches held in memory, over any sink factory.
template <class SinkFactory>
merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                 const merge_insert_options& o, SinkFactory&& make_sink) {
  return merge_insert(root, detail::span_source(source), o, std::forward<SinkFactory>(make_sink));
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                               const merge_insert_options& o) {
  default_sink_factory f;
  return merge_insert(root, source, o, f);
}

LANCET_INLINE merge_insert_result merge_insert(const std::string& root,
                                               const std::function<std::optional<arrow::record_batch>()>& next,
                                               const merge_insert_options& o) {
  default_sink_factory f;
  return merge_insert(root, next, o, f);
}
#endif

}  // namespace lancet::dataset
