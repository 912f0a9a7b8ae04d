// The definitions of dataset/merge_insert.hpp: the source's keys indexed, the target's
// keys scanned against them, the source read again (from memory or a scratch file) for
// the updated and then the inserted rows, the old rows deleted, all committed as one
// Update (update_impl.hpp's manifest).
#pragma once

#include <algorithm>
#include <cstring>
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
#include "lancet/dataset/key_existence.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/merge_insert.hpp"
#include "lancet/dataset/moved_rows.hpp"
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

// The key as Lance's errors show it: `k = "a", id = 1`.
inline std::string key_text(const std::vector<std::string>& on, const std::vector<const arrow::array_data*>& cols,
                            std::int64_t i) {
  std::string out;
  for (std::size_t k = 0; k < on.size(); ++k) {
    const auto& a = *cols[k];
    std::string v;
    using arrow::type_id;
    switch (a.type->id) {
      case type_id::utf8:
      case type_id::large_utf8: v = "\"" + std::string(a.string_value(i)) + "\""; break;
      case type_id::int8: v = std::to_string(a.value<std::int8_t>(i)); break;
      case type_id::int16: v = std::to_string(a.value<std::int16_t>(i)); break;
      case type_id::int32: v = std::to_string(a.value<std::int32_t>(i)); break;
      case type_id::int64: v = std::to_string(a.value<std::int64_t>(i)); break;
      case type_id::uint8: v = std::to_string(a.value<std::uint8_t>(i)); break;
      case type_id::uint16: v = std::to_string(a.value<std::uint16_t>(i)); break;
      case type_id::uint32: v = std::to_string(a.value<std::uint32_t>(i)); break;
      case type_id::uint64: v = std::to_string(a.value<std::uint64_t>(i)); break;
      default: v = "<" + arrow::to_string(*a.type) + " value>"; break;
    }
    if (!a.is_valid(i)) v = "NULL";
    out += (out.empty() ? "" : ", ") + on[k] + " = " + v;
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

inline std::vector<const arrow::array_data*> merge_key_columns(const arrow::record_batch& b,
                                                               const std::vector<std::string>& on) {
  std::vector<const arrow::array_data*> out;
  for (const auto& k : on)
    for (std::size_t c = 0; c < b.schema->fields.size(); ++c)
      if (b.schema->fields[c].name == k) out.push_back(b.columns[c].get());
  return out;
}

// The keys of a batch's rows as bytes (key_into's): a single fixed-width key column is
// read in place, other keys are built row by row.
// The field ids of the key columns `on` when they are exactly the schema's unenforced
// primary key (Lance then records the inserted rows' keys), in `on`'s order.
inline std::optional<std::vector<std::int32_t>> primary_key_ids(const schema::schema& s,
                                                                 const std::vector<std::string>& on) {
  std::vector<std::int32_t> pk, ids;
  for (const auto& f : s.fields)
    if (f.unenforced_primary_key) pk.push_back(f.id);
  for (const auto& k : on)
    for (const auto& f : s.fields)
      if (f.name == k) ids.push_back(f.id);
  if (pk.empty() || ids.size() != pk.size() || !std::is_permutation(ids.begin(), ids.end(), pk.begin()))
    return std::nullopt;
  return ids;
}

class key_reader {
 public:
  key_reader(const arrow::record_batch& b, const std::vector<std::string>& on) : cols_(merge_key_columns(b, on)) {
    if (cols_.size() != 1) return;
    const auto& a = *cols_[0];
    const auto bits = arrow::bit_width(*a.type);
    if (a.type->id == arrow::type_id::boolean || bits == 0 || bits % 8 != 0) return;
    width_ = std::size_t(bits / 8);
    values_ = reinterpret_cast<const char*>(a.buffers[1].data()) + std::size_t(a.offset) * width_;
  }

  // Row i's key; nullopt when a key value is NULL (it matches nothing).
  std::optional<std::string_view> operator()(std::int64_t i) {
    if (width_ > 0) {
      if (!cols_[0]->is_valid(i)) return std::nullopt;
      return std::string_view(values_ + std::size_t(i) * width_, width_);
    }
    if (!key_into(cols_, i, scratch_)) return std::nullopt;
    return std::string_view(scratch_);
  }

  const std::vector<const arrow::array_data*>& columns() const noexcept { return cols_; }

 private:
  std::vector<const arrow::array_data*> cols_;
  std::size_t width_ = 0;
  const char* values_ = nullptr;
  std::string scratch_;
};

// A key's hash: 64-bit words mixed by multiplication (keys are a few bytes).
inline std::uint64_t merge_key_hash(std::string_view k) noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ k.size();
  std::size_t i = 0;
  for (; i + 8 <= k.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, k.data() + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  if (i < k.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, k.data() + i, k.size() - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
  }
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

// The source rows by key: row i is entry i (a NULL key is an entry no lookup finds).
// Keys live in one arena, found through an open-addressing table; rows with equal keys
// are chained. About 40 bytes a row for a 64-bit key.
class source_keys {
 public:
  static constexpr std::uint64_t none = ~std::uint64_t(0);

  // Room for `rows` rows of `key_bytes` each, without growing.
  void reserve(std::uint64_t rows, std::size_t key_bytes) {
    entries_.reserve(rows);
    arena_.reserve(rows * key_bytes);
    std::size_t n = 1024;
    while (n < rows * 2) n *= 2;
    if (n > slots_.size()) grow_to(n);
  }

  // Adds the next row; `key` null: a NULL key; `h`: merge_key_hash(*key).
  void add(std::optional<std::string_view> key, std::uint64_t h) {
    const std::uint64_t e = entries_.size();
    if (e >= empty) throw unsupported_error("merge insert: a source of more than 2^32 - 1 rows");
    entries_.push_back({arena_.size(), key ? std::uint32_t(key->size()) : 0, empty});
    if (!key) return;
    const auto at = arena_.size();
    arena_.resize(at + key->size());
    std::memcpy(arena_.data() + at, key->data(), key->size());
    if ((used_ + 1) * 2 > slots_.size()) grow_to(std::max<std::size_t>(slots_.size() * 2, 1024));
    place(e, h, true);
  }

  // The last row with this key (none: no row), then next_of(row) for the earlier ones;
  // `h` is merge_key_hash(key).
  std::uint64_t find(std::string_view key, std::uint64_t h) const {
    if (slots_.empty()) return none;
    const auto mask = slots_.size() - 1;
    for (std::size_t s = h & mask;; s = (s + 1) & mask) {
      const auto& sl = slots_[s];
      if (sl.entry == empty) return none;
      if (sl.tag == std::uint32_t(h >> 32) && same_key(key_at(sl.entry), key)) return sl.entry;
    }
  }
  // Whether a key with hash h may be there (false: it is not): a filter of 16 bits a key
  // that stays in a core's cache, so that the many target keys a source lacks are turned
  // away without a probe of the table. Valid after seal().
  bool may_contain(std::uint64_t h) const noexcept {
    const auto m = filter_mask(h);
    return (filter_[(h >> 32) & (filter_.size() - 1)] & m) == m;
  }

  // Builds the filter: call once every row is added.
  void seal() {
    std::size_t words = 1;
    while (words * 4 < used_) words *= 2;  // 64 bits for each 4 keys
    filter_.assign(words, 0);
    for (const auto& sl : slots_)
      if (sl.entry != empty) {
        const auto h = merge_key_hash(key_at(sl.entry));
        filter_[(h >> 32) & (words - 1)] |= filter_mask(h);
      }
  }

  std::uint64_t next_of(std::uint64_t e) const { return entries_[e].next == empty ? none : entries_[e].next; }
  std::uint64_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::uint64_t key_offset;
    std::uint32_t key_size;
    std::uint32_t next;  // the previous row with the same key (empty: none)
  };
  static constexpr std::uint32_t empty = 0xFFFFFFFFu;
  struct slot {  // 8 bytes: the table of 100,000 keys fits a core's L2 cache
    std::uint32_t entry = empty, tag = 0;
  };

  std::string_view key_at(std::uint64_t e) const {
    return {arena_.data() + entries_[e].key_offset, entries_[e].key_size};
  }
  // Equal keys; a 64-bit key (the usual id) compared as one word rather than by memcmp.
  static bool same_key(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    if (a.size() == 8) {
      std::uint64_t x, y;
      std::memcpy(&x, a.data(), 8);
      std::memcpy(&y, b.data(), 8);
      return x == y;
    }
    return a == b;
  }
  static std::uint64_t filter_mask(std::uint64_t h) noexcept {
    return (1ull << (h & 63)) | (1ull << ((h >> 6) & 63)) | (1ull << ((h >> 12) & 63)) | (1ull << ((h >> 18) & 63));
  }

  // Puts entry e in the table; with `chain`, a row whose key is there already heads its chain.
  void place(std::uint64_t e, std::uint64_t h, bool chain) {
    const auto mask = slots_.size() - 1;
    for (std::size_t s = h & mask;; s = (s + 1) & mask) {
      auto& sl = slots_[s];
      if (sl.entry == empty) {
        sl = {std::uint32_t(e), std::uint32_t(h >> 32)};
        ++used_;
        return;
      }
      if (chain && sl.tag == std::uint32_t(h >> 32) && same_key(key_at(sl.entry), key_at(e))) {
        entries_[e].next = sl.entry;
        sl.entry = std::uint32_t(e);
        return;
      }
    }
  }

  void grow_to(std::size_t n) {
    std::vector<slot> old(n);
    old.swap(slots_);
    used_ = 0;
    for (const auto& sl : old)
      if (sl.entry != empty) place(sl.entry, merge_key_hash(key_at(sl.entry)), false);
  }

  std::vector<char> arena_;
  std::vector<entry> entries_;
  std::vector<slot> slots_;
  std::size_t used_ = 0;
  std::vector<std::uint64_t> filter_{0};
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

// One run of a merge insert on the latest version: the source's keys indexed (first
// reading of the source), the target's keys scanned against them, the updated rows
// written in source order (second reading), then the inserted ones (third), the
// deletions, and the commit.
template <class SinkFactory>
class merge_run {
 public:
  merge_run(const std::string& root, replayable_batches& source, const merge_insert_options& o, SinkFactory& make_sink)
      : root_(root), source_(source), o_(o), make_sink_(make_sink), d_(dataset::open(root)),
        snap_(load_version(root, d_.version())) {
    const auto& schema = d_.schema();
    for (const auto& k : o.on)
      if (std::none_of(schema.fields.begin(), schema.fields.end(), [&](const arrow::field& f) { return f.name == k; }))
        throw invalid_input_error("merge insert into '" + root + "': no key column '" + k + "' in the dataset");
    if (auto ids = primary_key_ids(manifest_schema(snap_.manifest()), o.on)) inserted_keys_.emplace(std::move(*ids));
  }

  std::optional<merge_insert_result> run() {
    index_source();
    match_target();
    const auto& m = snap_.manifest();
    pb::transaction::update op;
    all_field_ids(manifest_schema(m).fields, op.fields_for_preserving_frag_bitmap);  // every field: whole rows rewritten
    std::vector<std::string> written;
    return rewrite_once(written, [&] {
      source_.rewind();
      auto next = [&] { return next_rows(); };
      if (auto first = next()) {
        write_options wo;
        wo.sync_data_files = o_.sync_data_files;
        wo.file_options.keep_original_array = true;  // the rows are gathered for the writer alone: no copy
        // A quarter of the budget for the page buffers (at most Lance's 8 MiB a column).
        const auto fields = std::max<std::uint64_t>(1, d_.schema().fields.size());
        wo.file_options.data_cache_bytes =
            std::clamp<std::uint64_t>(o_.memory_budget_bytes / 4, std::uint64_t(1) << 20, fields * (std::uint64_t(8) << 20));
        auto files = write_data_files(root_, std::move(first), next, manifest_schema(m), manifest_storage_version(m),
                                      wo, make_sink_, encoding::structural::default_policy{},
                                      "merge insert into '" + root_ + "'");
        written = files.paths;
        op.new_fragments = std::move(files.fragments);
      }
      if (inserted_keys_) op.inserted_rows_filter = inserted_keys_->message();
      if (d_.stable_row_ids()) {  // updated rows (written first) keep their ids and creation versions
        moved_rows moved(d_);
        for (const auto& [s, a] : updated_)
          if (a != not_updated) moved.add(a);
        moved.assign(op.new_fragments, false);
      }
      std::map<std::uint64_t, std::vector<std::uint32_t>> offsets;
      std::uint64_t updated = 0;
      for (const auto& [s, a] : updated_)
        if (a != not_updated) {
          offsets[a >> 32].push_back(std::uint32_t(a & 0xFFFFFFFFull));
          ++updated;
        }
      for (auto a : deleted_) offsets[a >> 32].push_back(std::uint32_t(a & 0xFFFFFFFFull));
      delete_moved_rows(root_, d_, m, offsets, op, make_sink_, written);
      // Updated and deleted target rows are its affected rows (merged with a concurrent
      // delete of other rows of their fragments, as Lance merges them).
      auto out = commit_transaction(root_, snap_, make_transaction(snap_.version(), std::move(op)), build_update,
                                    commit_options_for(snap_, o_.max_retries, o_.write_version_hint), make_sink_,
                                    affected_rows(offsets));
      remove_superseded_deletion_files(root_, out.commit.manifest, written);
      return merge_insert_result{out.commit.manifest.version, inserted_, updated, deleted_.size(),
                                 source_.spilled_rows(), out.retries};
    });
  }

 private:
  void index_source() {
    source_.rewind();
    if (const auto n = source_.rows()) keys_.reserve(*n, 8);
    while (auto b = source_.next()) {
      key_reader key(*b, o_.on);
      for (std::int64_t r = 0; r < b->num_rows(); ++r) {
        const auto k = key(r);
        keys_.add(k, k ? merge_key_hash(*k) : 0);
      }
    }
    keys_.seal();
    matched_.assign(keys_.size(), false);
  }

  // The target's live rows against the source's keys: matched pairs (source row,
  // address), matched source rows, and the rows the by-source delete takes.
  void match_target() {
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
    so.read_ahead_bytes = std::clamp<std::uint64_t>(o_.memory_budget_bytes / 8, std::uint64_t(1) << 20, so.read_ahead_bytes);
    for (auto sc = d_.scan(so); auto b = sc.next();) {
      key_reader key(*b, o_.on);
      const auto* addr = b->columns.back()->values<std::uint64_t>();
      std::vector<std::uint8_t> del;
      if (delete_if) {
        std::vector<arrow::array_ptr> in;
        for (const auto& c : delete_if->columns())
          in.push_back(
              b->columns[std::size_t(std::find(so.columns.begin(), so.columns.end(), c) - so.columns.begin())]);
        del = delete_if->evaluate(in);
      }
      for (std::int64_t r = 0; r < b->num_rows(); ++r) {
        const auto k = key(r);
        const auto h = k ? merge_key_hash(*k) : 0;
        auto e = k && keys_.may_contain(h) ? keys_.find(*k, h) : source_keys::none;
        if (e == source_keys::none) {
          if (o_.when_not_matched_by_source_delete && (del.empty() || del[std::size_t(r)])) deleted_.push_back(addr[r]);
          continue;
        }
        if (o_.when_matched_update_all && keys_.next_of(e) != source_keys::none)
          throw invalid_input_error("Ambiguous merge inserts are prohibited: multiple source rows match the same target "
                                    "row on (" + key_text(o_.on, key.columns(), r) + ") of dataset '" + root_ +
                                    "'. Please ensure each target row is matched by at most one source row.");
        if (o_.when_matched_update_all) updated_.emplace_back(e, addr[r]);
        for (; e != source_keys::none; e = keys_.next_of(e)) matched_[e] = true;
      }
    }
    std::sort(updated_.begin(), updated_.end());
    if (o_.when_not_matched_insert_all)
      for (std::uint64_t r = 0; r < matched_.size(); ++r) inserted_ += matched_[r] ? 0 : 1;
  }

  // The next batch of rows to write: updated ones while the second reading of the source
  // lasts, then inserted ones from the third; nullopt at the end.
  std::optional<arrow::record_batch> next_rows() {
    while (pass_ < 2) {
      auto b = source_.next();
      if (!b) {
        if (pass_ == 0 && inserted_ > 0) {
          source_.rewind();
          row_base_ = 0;
          pass_ = 1;
        } else {
          pass_ = 2;
        }
        continue;
      }
      auto out = pass_ == 0 ? matched_rows(*b) : inserted_rows(*b);
      row_base_ += std::uint64_t(b->num_rows());
      if (out.num_rows() > 0) return out;
    }
    return std::nullopt;
  }

  // The batch's updated rows (source order; a source row matching several target rows,
  // each in scan order).
  arrow::record_batch matched_rows(const arrow::record_batch& src) {
    const auto end = row_base_ + std::uint64_t(src.num_rows());
    const auto first = next_pair_;
    std::vector<std::int64_t> srows;
    std::vector<std::uint64_t> addrs;
    for (; next_pair_ < updated_.size() && updated_[next_pair_].first < end; ++next_pair_) {
      srows.push_back(std::int64_t(updated_[next_pair_].first - row_base_));
      addrs.push_back(updated_[next_pair_].second);
    }
    if (!o_.matched_if.empty() && !srows.empty()) keep_where_matched_if(src, first, srows, addrs);
    return updated_rows(src, srows, addrs);
  }

  // Keeps the pairs (updated_ from `first` on, and srows / addrs) for which matched_if
  // (over target.COL and source.COL) holds; the others are marked not updated.
  void keep_where_matched_if(const arrow::record_batch& src, std::size_t first, std::vector<std::int64_t>& srows,
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
    for (std::size_t i = 0; i < srows.size(); ++i) {
      if (!keep[i]) {
        updated_[first + i].second = not_updated;
        continue;
      }
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

  // The batch's source rows no target row matched, NULL where the source has no column.
  arrow::record_batch inserted_rows(const arrow::record_batch& src) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r = 0; r < src.num_rows(); ++r)
      if (!matched_[row_base_ + std::uint64_t(r)]) rows.push_back(r);
    if (inserted_keys_) {
      const auto cols = merge_key_columns(src, o_.on);
      for (auto r : rows)
        if (const auto key = filter_key(cols, r)) inserted_keys_->insert(*key);
    }
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
  source_keys keys_;
  // The inserted rows' keys, when the key is the table's unenforced primary key.
  std::optional<key_existence_builder> inserted_keys_;
  std::vector<bool> matched_;  // by source row: a target row has its key
  // (source row, target address), sorted; the address not_updated where matched_if failed
  std::vector<std::pair<std::uint64_t, std::uint64_t>> updated_;
  static constexpr std::uint64_t not_updated = ~std::uint64_t(0);
  std::vector<std::uint64_t> deleted_;
  std::uint64_t inserted_ = 0, row_base_ = 0;
  std::size_t next_pair_ = 0;
  int pass_ = 0;
};

inline constexpr std::int64_t merge_slice_rows = 8192;

// merge_insert of the batches `next()` yields (until nullopt); `rows`: how many, when known.
template <class Next, class SinkFactory>
merge_insert_result merge_stream(const std::string& root, Next& next, const merge_insert_options& o,
                                 SinkFactory& make_sink, std::optional<std::uint64_t> rows) {
  const std::string what = "merge insert into '" + root + "'";
  if (o.on.empty()) throw invalid_input_error(what + ": no key column (on)");
  if (!o.when_matched_update_all && !o.when_not_matched_insert_all && !o.when_not_matched_by_source_delete)
    throw invalid_input_error(what + ": no clause (update matched, insert unmatched, or delete unmatched by source)");
  const auto schema = dataset::open(root).schema();
  source_conformer conform(root, schema, o.on);
  // Batches are taken in slices of at most merge_slice_rows rows (zero-copy), so that
  // the rows gathered for one write stay small whatever the caller's batches are.
  std::optional<arrow::record_batch> pending;
  std::int64_t at = 0;
  replayable_batches source(
      [&]() -> std::optional<arrow::record_batch> {
        while (!pending || at >= pending->num_rows()) {
          std::optional<arrow::record_batch> b = next();
          if (!b) return std::nullopt;
          pending = conform(*b);
          at = 0;
        }
        const auto n = std::min(merge_slice_rows, pending->num_rows() - at);
        if (at == 0 && n == pending->num_rows()) {
          at = n;
          return pending;
        }
        arrow::record_batch out;
        out.schema = pending->schema;
        for (const auto& c : pending->columns) out.columns.push_back(arrow::slice(c, at, n));
        at += n;
        return out;
      },
      o.memory_budget_bytes / 2, o.spill_directory);
  if (rows) source.expect_rows(*rows);
  return run_until_committed(what, o.max_retries, [&] {
    merge_run<SinkFactory> run(root, source, o, make_sink);
    return run.run();
  });
}

}  // namespace detail

// merge_insert (merge_insert.hpp) of the batches `next()` yields (until nullopt), over
// any sink factory.
template <batch_generator Next, class SinkFactory>
merge_insert_result merge_insert(const std::string& root, Next&& next, const merge_insert_options& o,
                                 SinkFactory&& make_sink) {
  return detail::merge_stream(root, next, o, make_sink, std::nullopt);
}

// merge_insert of batches held in memory, over any sink factory.
template <class SinkFactory>
merge_insert_result merge_insert(const std::string& root, std::span<const arrow::record_batch> source,
                                 const merge_insert_options& o, SinkFactory&& make_sink) {
  std::uint64_t rows = 0;
  for (const auto& b : source) rows += std::uint64_t(b.num_rows());
  auto next = detail::span_source(source);
  return detail::merge_stream(root, next, o, make_sink, rows);
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
