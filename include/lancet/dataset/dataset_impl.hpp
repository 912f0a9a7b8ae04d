// The definitions of dataset/dataset.hpp: the state copies of a dataset share (its
// manifest, caches of deletion vectors, row ids and open data-file readers), scans and
// takes. Header-only programs get them through dataset.hpp; in compiled mode
// (core/config.hpp) the library defines the dataset's and scanner's members, and a
// program that needs detail::state includes this header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/fragment_reader.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

namespace detail {

struct state {
  std::string root;
  version_entry entry;
  std::shared_ptr<const pb::manifest> manifest;
  std::vector<pb::index_metadata> indices;
  std::optional<pb::transaction> transaction;
  std::shared_ptr<const schema::schema> schema;
  std::shared_ptr<const arrow::schema> arrow_schema;
  source_factory sources;  // opens every file this dataset reads
  // Loaded on first use.
  mutable std::unordered_map<std::uint64_t, std::shared_ptr<const deletion_vector>> deletions;
  mutable std::unordered_map<std::uint64_t, std::shared_ptr<const std::vector<std::uint64_t>>> row_ids;
  mutable std::shared_ptr<const std::unordered_map<std::uint64_t, std::uint64_t>> id_to_address;
  mutable std::shared_ptr<const row_set> live;
  mutable std::mutex cache_mutex;  // guards the caches above (copies of a dataset share them)
  // Data-file readers takes keep open (opening one reads and parses the file's footer
  // and metadata), by path and reader options, least recently used first; at most
  // max_open_readers. A take drops their page caches when done, so that they hold only
  // metadata between takes.
  static constexpr std::size_t max_open_readers = 64;
  struct open_reader {
    std::string path;
    file::reader_options options;
    std::shared_ptr<const fragment_reader::reader_type> reader;
  };
  mutable std::vector<open_reader> open_readers;
  mutable std::mutex readers_mutex;  // guards open_readers

  std::shared_ptr<const fragment_reader::reader_type> kept_reader(const std::string& path,
                                                                  const file::reader_options& o) const {
    auto find = [&]() -> std::shared_ptr<const fragment_reader::reader_type> {
      for (std::size_t i = open_readers.size(); i-- > 0;)
        if (open_readers[i].path == path && open_readers[i].options == o) {
          std::rotate(open_readers.begin() + std::ptrdiff_t(i), open_readers.begin() + std::ptrdiff_t(i) + 1,
                      open_readers.end());
          return open_readers.back().reader;
        }
      return nullptr;
    };
    {
      std::lock_guard lock(readers_mutex);
      if (auto r = find()) return r;
    }
    // Opened without the lock: other takes go on meanwhile.
    auto r = std::make_shared<const fragment_reader::reader_type>(sources(path), o);
    std::lock_guard lock(readers_mutex);
    if (auto other = find()) return other;
    if (open_readers.size() >= max_open_readers) open_readers.erase(open_readers.begin());
    open_readers.push_back({path, o, r});
    return r;
  }

  const pb::data_fragment& fragment(std::uint64_t id) const {
    for (const auto& f : manifest->fragments)
      if (f.id == id) return f;
    throw invalid_input_error("dataset '" + root + "' version " + std::to_string(manifest->version) +
                              " has no fragment " + std::to_string(id));
  }
  bool stable_row_ids() const noexcept { return uses_stable_row_ids(*manifest); }

  std::shared_ptr<const deletion_vector> deletions_of(const pb::data_fragment& f) const {
    {
      std::lock_guard lock(cache_mutex);
      auto it = deletions.find(f.id);
      if (it != deletions.end()) return it->second;
    }
    auto dv = std::make_shared<const deletion_vector>(read_deletion_vector(root, *manifest, f, sources));
    std::lock_guard lock(cache_mutex);
    return deletions.emplace(f.id, dv).first->second;
  }

  std::uint64_t physical_rows(const pb::data_fragment& f) const {
    if (f.physical_rows || f.files.empty()) return f.physical_rows;
    return fragment_reader(root, manifest, schema, arrow_schema, f, {}, sources).physical_rows();
  }

  std::uint64_t deleted_rows(const pb::data_fragment& f) const {
    if (!f.deletion_file) return 0;
    if (f.deletion_file->num_deleted_rows) return f.deletion_file->num_deleted_rows;
    return deletions_of(f)->size();
  }

  // Row id of each physical row of a fragment (stable row ids only).
  std::shared_ptr<const std::vector<std::uint64_t>> row_ids_of(const pb::data_fragment& f) const {
    {
      std::lock_guard lock(cache_mutex);
      auto it = row_ids.find(f.id);
      if (it != row_ids.end()) return it->second;
    }
    std::string bytes;
    if (auto* s = std::get_if<std::string>(&f.row_id_sequence)) {
      bytes = *s;
    } else if (auto* e = std::get_if<pb::external_file>(&f.row_id_sequence)) {
      const std::string path = (std::filesystem::path(root) / e->path).string();
      const auto b = detail::naming_path(path, [&] { return sources(path).read(e->offset, e->size); });
      bytes.assign(reinterpret_cast<const char*>(b.data()), b.size());
    } else {
      throw corrupt_error("dataset '" + root + "' uses stable row ids but fragment " + std::to_string(f.id) +
                          " has no row-id sequence");
    }
    auto ids = std::make_shared<const std::vector<std::uint64_t>>(pb::decode<pb::row_id_sequence>(bytes).values());
    if (ids->size() != physical_rows(f))
      throw corrupt_error("fragment " + std::to_string(f.id) + " has " + std::to_string(physical_rows(f)) +
                          " rows but a row-id sequence of " + std::to_string(ids->size()));
    std::lock_guard lock(cache_mutex);
    return row_ids.emplace(f.id, ids).first->second;
  }

  // Live row id -> row address (stable row ids only).
  std::shared_ptr<const std::unordered_map<std::uint64_t, std::uint64_t>> id_map() const {
    {
      std::lock_guard lock(cache_mutex);
      if (id_to_address) return id_to_address;
    }
    auto m = std::make_shared<std::unordered_map<std::uint64_t, std::uint64_t>>();
    for (const auto& f : manifest->fragments) {
      auto ids = row_ids_of(f);
      auto dv = deletions_of(f);
      for (std::size_t i = 0; i < ids->size(); ++i)
        if (!dv->contains(i)) (*m)[(*ids)[i]] = row_address(f.id, i);
    }
    std::lock_guard lock(cache_mutex);
    if (!id_to_address) id_to_address = std::move(m);
    return id_to_address;
  }

  // Every live row id (built once).
  std::shared_ptr<const row_set> live_rows() const {
    {
      std::lock_guard lock(cache_mutex);
      if (live) return live;
    }
    auto set = std::make_shared<row_set>();
    const bool stable = stable_row_ids();
    for (const auto& f : manifest->fragments) {
      const auto phys = physical_rows(f);
      const auto dv = deletions_of(f);
      if (stable) {
        const auto ids = row_ids_of(f);
        for (std::size_t i = 0; i < ids->size(); ++i)
          if (!dv->contains(i)) set->insert((*ids)[i]);
        continue;
      }
      if (phys > 0xFFFFFFFFull)
        throw corrupt_error("fragment " + std::to_string(f.id) + " has " + std::to_string(phys) +
                            " rows, more than row addresses can name");
      set->insert_run(row_address(f.id, 0), std::uint32_t(phys));
      for (auto off : dv->offsets())
        if (off < phys) set->erase(row_address(f.id, off));
    }
    std::lock_guard lock(cache_mutex);
    if (!live) live = std::move(set);
    return live;
  }

  std::vector<std::size_t> projection(const std::vector<std::string>& names) const {
    std::vector<std::size_t> out;
    if (names.empty()) {
      for (std::size_t i = 0; i < schema->fields.size(); ++i) out.push_back(i);
      return out;
    }
    for (const auto& n : names) {
      std::size_t i = 0;
      while (i < schema->fields.size() && schema->fields[i].name != n) ++i;
      if (i == schema->fields.size()) {
        std::string have;
        for (const auto& f : schema->fields) have += (have.empty() ? "" : ", ") + f.name;
        throw invalid_input_error("dataset '" + root + "' has no column '" + n + "' (columns: " + have + ")");
      }
      out.push_back(i);
    }
    return out;
  }

  std::shared_ptr<const arrow::schema> output_schema(const std::vector<std::size_t>& fields, bool with_id,
                                                     bool with_addr) const {
    auto s = std::make_shared<arrow::schema>();
    for (auto f : fields) s->fields.push_back(arrow_schema->fields[f]);
    if (with_id) s->fields.push_back(arrow::field{std::string(row_id_column), arrow::uint64(), false, {}});
    if (with_addr) s->fields.push_back(arrow::field{std::string(row_address_column), arrow::uint64(), false, {}});
    s->metadata = arrow_schema->metadata;
    return s;
  }
};

inline arrow::array_ptr u64_array(const std::vector<std::uint64_t>& v) {
  return arrow::make_array<std::uint64_t>(v);
}

// Physical offset of the live row `k` rows (0-based) after physical offset `from`,
// skipping deleted rows.
inline std::uint64_t advance_live(const deletion_vector& dv, std::uint64_t from, std::uint64_t k) {
  std::uint64_t x = from + k;
  for (;;) {
    const std::uint64_t nx = from + k + dv.count_in(from, x + 1);
    if (nx == x) break;
    x = nx;
  }
  return x;
}

// The physical end of the scan's batches (of `batch` live rows, the last of what is
// left of `live`) from physical offset `from`, as many as end by `max_end` (at least
// one): a chunk read so ends where a batch does, and the next chunk read ahead starts
// where the next batch does.
inline std::uint64_t batches_end(const deletion_vector& dv, std::uint64_t from, std::uint64_t live, std::uint64_t batch,
                                 std::uint64_t max_end) {
  if (dv.count_in(from, from + live) == 0) {  // no deleted row: batches are runs of rows
    const std::uint64_t k = std::max<std::uint64_t>(1, (max_end - std::min(max_end, from)) / batch);
    return from + std::min(live, k * batch);
  }
  std::uint64_t e = from;
  while (live > 0) {
    const std::uint64_t n = std::min(batch, live);
    const std::uint64_t next = advance_live(dv, e, n - 1) + 1;
    if (e != from && next > max_end) break;
    e = next;
    live -= n;
  }
  return e;
}

}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

// Out of line: fragment_reader is complete only here.
LANCET_INLINE scanner::scanner(scanner&&) noexcept = default;
LANCET_INLINE scanner& scanner::operator=(scanner&&) noexcept = default;
LANCET_INLINE scanner::~scanner() = default;

LANCET_INLINE scanner::scanner(std::shared_ptr<const detail::state> st, scan_options o) : st_(std::move(st)), o_(std::move(o)) {
  if (o_.batch_size == 0) throw invalid_input_error("scan batch size must be at least 1");
  fields_ = st_->projection(o_.columns);
  schema_ = st_->output_schema(fields_, o_.with_row_id, o_.with_row_address);
  if (o_.fragment_ids) {
    for (auto id : *o_.fragment_ids) frags_.push_back(&st_->fragment(id));
  } else {
    for (const auto& f : st_->manifest->fragments) frags_.push_back(&f);
  }
  skip_ = o_.offset;
  left_ = o_.limit.value_or(std::numeric_limits<std::uint64_t>::max());
}

LANCET_INLINE std::optional<arrow::record_batch> scanner::next() {
  while (left_ > 0) {
    if (!reader_) {
      if (next_frag_ >= frags_.size()) return std::nullopt;
      const auto& f = *frags_[next_frag_++];
      const auto phys = st_->physical_rows(f);
      const auto deleted = st_->deleted_rows(f);
      if (deleted > phys)
        throw corrupt_error("fragment " + std::to_string(f.id) + " deletes " + std::to_string(deleted) + " of its " +
                            std::to_string(phys) + " rows");
      const auto live = phys - deleted;
      if (skip_ >= live) {  // skipped without opening a file
        skip_ -= live;
        continue;
      }
      frag_ = &f;
      phys_ = phys;
      dv_ = st_->deletions_of(f);
      if (o_.with_row_id && st_->stable_row_ids()) ids_ = st_->row_ids_of(f);
      reader_ = std::make_unique<fragment_reader>(st_->root, st_->manifest, st_->schema, st_->arrow_schema, f, fields_, st_->sources,
                      o_.reader_options);
      chunk_.clear();
      chunk_begin_ = chunk_end_ = 0;
      std::uint64_t file_bytes = 0;
      for (const auto& df : f.files) file_bytes += df.file_size_bytes;
      const std::uint64_t row_bytes = phys && file_bytes ? std::max<std::uint64_t>(1, file_bytes / phys) : 64;
      chunk_rows_ = std::max<std::uint64_t>(o_.batch_size, std::max<std::uint64_t>(1, o_.read_ahead_bytes / row_bytes));
      pos_ = detail::advance_live(*dv_, 0, skip_);
      skip_ = 0;
    }
    if (pos_ >= phys_) {
      reader_.reset();
      chunk_.clear();
      continue;
    }
    const std::uint64_t live_left = (phys_ - pos_) - dv_->count_in(pos_, phys_);
    const std::uint64_t n = std::min({o_.batch_size, left_, live_left});
    if (n == 0) {
      reader_.reset();
      chunk_.clear();
      continue;
    }
    const std::uint64_t end = detail::advance_live(*dv_, pos_, n - 1) + 1;
    std::vector<std::uint64_t> offsets;
    const bool holes = dv_->count_in(pos_, end) > 0;
    if (holes || o_.with_row_id || o_.with_row_address) {
      offsets.reserve(std::size_t(n));
      for (auto i = pos_; i < end; ++i)
        if (!dv_->contains(i)) offsets.push_back(i);
    }
    arrow::record_batch b;
    b.schema = schema_;
    b.columns = cut(end, holes, offsets);
    if (o_.with_row_id) {
      std::vector<std::uint64_t> ids(offsets.size());
      for (std::size_t i = 0; i < offsets.size(); ++i)
        ids[i] = ids_ ? (*ids_)[std::size_t(offsets[i])] : row_address(frag_->id, offsets[i]);
      b.columns.push_back(detail::u64_array(ids));
    }
    if (o_.with_row_address) {
      std::vector<std::uint64_t> addrs(offsets.size());
      for (std::size_t i = 0; i < offsets.size(); ++i) addrs[i] = row_address(frag_->id, offsets[i]);
      b.columns.push_back(detail::u64_array(addrs));
    }
    pos_ = end;
    left_ -= n;
    return b;
  }
  return std::nullopt;
}

LANCET_INLINE std::vector<arrow::record_batch> scanner::to_batches() {
  std::vector<arrow::record_batch> out;
  while (auto b = next()) out.push_back(std::move(*b));
  return out;
}

LANCET_INLINE std::vector<arrow::array_ptr> scanner::cut(std::uint64_t end, bool holes, const std::vector<std::uint64_t>& offsets) {
  if (pos_ < chunk_begin_ || end > chunk_end_) {
    // Read ahead, but no further than the rows the scan still wants.
    const std::uint64_t live_wanted = std::min(left_, (phys_ - pos_) - dv_->count_in(pos_, phys_));
    auto ahead = reader_->take_ahead();
    if (ahead && ahead->begin <= pos_ && end <= ahead->end) {
      chunk_begin_ = ahead->begin;
      chunk_end_ = ahead->end;
      chunk_ = std::move(ahead->columns);
    } else {
      chunk_begin_ = pos_;
      chunk_end_ = std::max(end, detail::batches_end(*dv_, pos_, live_wanted, o_.batch_size, pos_ + chunk_rows_));
      chunk_ = reader_->read_range(chunk_begin_, chunk_end_);
    }
    // On an object store the next chunk's requests run while this one is cut and used.
    const std::uint64_t live_in_chunk = (chunk_end_ - pos_) - dv_->count_in(pos_, chunk_end_);
    if (live_in_chunk < live_wanted && reader_->worth_reading_ahead())
      reader_->read_ahead(chunk_end_, detail::batches_end(*dv_, chunk_end_, live_wanted - live_in_chunk, o_.batch_size,
                                                          chunk_end_ + chunk_rows_));
  }
  std::vector<arrow::array_ptr> out;
  out.reserve(chunk_.size());
  const auto at = std::int64_t(pos_ - chunk_begin_);
  for (std::size_t c = 0; c < chunk_.size(); ++c) {
    if (!holes) {
      out.push_back(arrow::slice(chunk_[c], at, std::int64_t(end - pos_)));
      continue;
    }
    // Runs of live rows, concatenated.
    std::vector<arrow::array_ptr> parts;
    std::size_t i = 0;
    while (i < offsets.size()) {
      std::size_t j = i + 1;
      while (j < offsets.size() && offsets[j] == offsets[j - 1] + 1) ++j;
      parts.push_back(arrow::slice(chunk_[c], std::int64_t(offsets[i] - chunk_begin_), std::int64_t(j - i)));
      i = j;
    }
    out.push_back(parts.size() == 1 ? parts[0] : arrow::concat(parts, schema_->fields[c].type));
  }
  return out;
}

LANCET_INLINE dataset dataset::open(const std::string& root, std::optional<std::uint64_t> version,
                    source_factory sources) {
  std::optional<snapshot> s;
  if (version) s = load_version(root, *version, sources);
  else s = load_latest(root, sources);
  if (!s) throw_no_dataset(root);
  return dataset(std::move(*s), std::move(sources));
}

LANCET_INLINE dataset::dataset(snapshot s, source_factory sources) {
  auto st = std::make_shared<detail::state>();
  const auto& m = s.file.manifest;
  if (!can_read_dataset(m.reader_feature_flags))
    throw unsupported_error("dataset '" + s.root + "' version " + std::to_string(m.version) +
                            " needs Lance features lancet does not know (reader feature flags " +
                            std::to_string(m.reader_feature_flags) + ")");
  st->root = s.root;
  st->entry = s.entry;
  st->manifest = std::make_shared<const pb::manifest>(m);
  st->indices = s.file.indices;
  st->transaction = s.file.transaction;
  st->schema = std::make_shared<const schema::schema>(manifest_schema(m));
  st->arrow_schema = std::make_shared<const arrow::schema>(schema::to_arrow(*st->schema));
  st->sources = std::move(sources);
  st_ = std::move(st);
}

LANCET_INLINE dataset dataset::checkout(std::uint64_t version) const { return open(st_->root, version, st_->sources); }

LANCET_INLINE dataset dataset::latest() const { return open(st_->root, std::nullopt, st_->sources); }

LANCET_INLINE const source_factory& dataset::sources() const noexcept { return st_->sources; }

LANCET_INLINE const std::string& dataset::path() const noexcept { return st_->root; }

LANCET_INLINE std::uint64_t dataset::version() const noexcept { return st_->manifest->version; }

LANCET_INLINE const pb::manifest& dataset::manifest() const noexcept { return *st_->manifest; }

LANCET_INLINE const std::vector<pb::index_metadata>& dataset::indices() const noexcept { return st_->indices; }

LANCET_INLINE const std::optional<pb::transaction>& dataset::transaction() const noexcept { return st_->transaction; }

LANCET_INLINE const schema::schema& dataset::lance_schema() const noexcept { return *st_->schema; }

LANCET_INLINE const arrow::schema& dataset::schema() const noexcept { return *st_->arrow_schema; }

LANCET_INLINE file::format_version dataset::storage_version() const { return manifest_storage_version(*st_->manifest); }

LANCET_INLINE naming_scheme dataset::manifest_naming() const noexcept { return st_->entry.scheme; }

LANCET_INLINE bool dataset::stable_row_ids() const noexcept { return st_->stable_row_ids(); }

LANCET_INLINE std::optional<std::int64_t> dataset::timestamp_nanos() const {
  if (!st_->manifest->timestamp) return std::nullopt;
  return st_->manifest->timestamp->unix_nanos();
}

LANCET_INLINE std::vector<version_info> dataset::versions() const { return list_dataset_versions(st_->root, st_->sources); }

LANCET_INLINE std::vector<version_info> dataset::list_dataset_versions(const std::string& root, const source_factory& sources) {
  std::vector<version_info> out;
  for (const auto& e : list_versions(root)) {
    version_info v;
    v.version = e.version;
    v.manifest_path = e.path;
    auto m = read_manifest_file_at(e.path, sources, e.size).manifest;
    if (m.timestamp) v.timestamp_nanos = m.timestamp->unix_nanos();
    if (m.writer_version) v.writer = m.writer_version->library + " " + m.writer_version->version;
    out.push_back(std::move(v));
  }
  return out;
}

LANCET_INLINE std::uint64_t dataset::count_rows() const {
  std::uint64_t n = 0;
  for (const auto& f : st_->manifest->fragments) n += st_->physical_rows(f) - st_->deleted_rows(f);
  return n;
}

LANCET_INLINE std::vector<fragment_info> dataset::fragments() const {
  std::vector<fragment_info> out;
  for (const auto& f : st_->manifest->fragments) {
    fragment_info fi;
    fi.id = f.id;
    fi.physical_rows = st_->physical_rows(f);
    fi.deleted_rows = st_->deleted_rows(f);
    for (const auto& df : f.files) fi.data_files.push_back(data_file_path(st_->root, *st_->manifest, df));
    if (f.deletion_file) fi.deletion_file = deletion_file_path(st_->root, *st_->manifest, f.id, *f.deletion_file);
    out.push_back(std::move(fi));
  }
  return out;
}

LANCET_INLINE std::uint64_t dataset::physical_rows(std::uint64_t fragment_id) const { return st_->physical_rows(st_->fragment(fragment_id)); }

LANCET_INLINE std::vector<std::uint64_t> dataset::fragment_row_ids(std::uint64_t fragment_id) const {
  const auto& f = st_->fragment(fragment_id);
  if (st_->stable_row_ids()) return *st_->row_ids_of(f);
  std::vector<std::uint64_t> out(std::size_t(st_->physical_rows(f)));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = row_address(f.id, i);
  return out;
}

LANCET_INLINE deletion_vector dataset::deleted_rows(std::uint64_t fragment_id) const { return *st_->deletions_of(st_->fragment(fragment_id)); }

LANCET_INLINE std::shared_ptr<const row_set> dataset::live_rows() const { return st_->live_rows(); }

LANCET_INLINE bool dataset::has_deletions() const {
  for (const auto& f : st_->manifest->fragments)
    if (f.deletion_file && st_->deleted_rows(f) > 0) return true;
  return false;
}

LANCET_INLINE scanner dataset::scan(scan_options o) const { return scanner(st_, std::move(o)); }

LANCET_INLINE arrow::record_batch dataset::to_batch(scan_options o) const {
  o.batch_size = std::numeric_limits<std::uint64_t>::max();
  auto sc = scan(std::move(o));
  auto batches = sc.to_batches();
  return concat_batches(sc.schema(), batches);
}

LANCET_INLINE arrow::record_batch dataset::take_addresses(std::span<const std::uint64_t> addresses,
                                   const std::vector<std::string>& columns,
                                   const file::reader_options& reader_options) const {
  return take_impl(addresses, addresses, columns, "row address", reader_options);
}

LANCET_INLINE std::vector<std::uint64_t> dataset::row_addresses(std::span<const std::uint64_t> row_ids) const {
  if (!stable_row_ids()) {
    const auto live = live_rows();
    for (auto id : row_ids)
      if (!live->contains(id))
        throw invalid_input_error("dataset '" + st_->root + "' version " + std::to_string(version()) +
                                  " has no row with id " + std::to_string(id) + " (deleted or never written)");
    return {row_ids.begin(), row_ids.end()};
  }
  const auto m = st_->id_map();
  std::vector<std::uint64_t> addrs(row_ids.size());
  for (std::size_t i = 0; i < row_ids.size(); ++i) {
    auto it = m->find(row_ids[i]);
    if (it == m->end())
      throw invalid_input_error("dataset '" + st_->root + "' version " + std::to_string(version()) +
                                " has no row with id " + std::to_string(row_ids[i]) + " (deleted or never written)");
    addrs[i] = it->second;
  }
  return addrs;
}

LANCET_INLINE arrow::record_batch dataset::take(std::span<const std::uint64_t> row_ids, const std::vector<std::string>& columns,
                         const file::reader_options& reader_options) const {
  if (!stable_row_ids()) return take_impl(row_ids, row_ids, columns, "row id", reader_options);
  const auto addrs = row_addresses(row_ids);
  return take_impl(addrs, row_ids, columns, "row id", reader_options);
}

LANCET_INLINE arrow::record_batch dataset::take(std::initializer_list<std::uint64_t> row_ids, const std::vector<std::string>& columns) const {
  return take(std::span<const std::uint64_t>(row_ids.begin(), row_ids.size()), columns);
}

LANCET_INLINE arrow::record_batch dataset::concat_batches(const std::shared_ptr<const arrow::schema>& s,
                                          const std::vector<arrow::record_batch>& batches) {
  arrow::record_batch out;
  out.schema = s;
  if (batches.size() == 1) {
    out.columns = batches[0].columns;
    return out;
  }
  for (std::size_t c = 0; c < s->fields.size(); ++c) {
    std::vector<arrow::array_ptr> parts;
    for (const auto& b : batches) parts.push_back(b.columns[c]);
    out.columns.push_back(arrow::concat(parts, s->fields[c].type));
  }
  return out;
}

LANCET_INLINE arrow::record_batch dataset::take_impl(std::span<const std::uint64_t> addrs, std::span<const std::uint64_t> shown,
                              const std::vector<std::string>& columns, const char* what,
                              const file::reader_options& reader_options) const {
  const auto fields = st_->projection(columns);
  auto schema = st_->output_schema(fields, false, false);
  // Group by fragment: read each fragment's offsets once, ascending.
  struct want {
    std::uint64_t fragment, offset;
    std::size_t pos;
  };
  std::vector<want> ws(addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i) ws[i] = {addrs[i] >> 32, addrs[i] & 0xFFFFFFFFull, i};
  std::sort(ws.begin(), ws.end(), [](const want& a, const want& b) {
    return a.fragment != b.fragment ? a.fragment < b.fragment : a.offset < b.offset;
  });
  // Each fragment's rows are read once, in file order; output row k is row row_of[k]
  // of those reads put end to end.
  std::vector<std::vector<arrow::array_ptr>> reads;  // by fragment, then column
  std::vector<std::int64_t> row_of(addrs.size());
  std::int64_t base = 0;
  std::size_t i = 0;
  while (i < ws.size()) {
    std::size_t j = i;
    while (j < ws.size() && ws[j].fragment == ws[i].fragment) ++j;
    const pb::data_fragment* frag = nullptr;
    for (const auto& f : st_->manifest->fragments)
      if (f.id == ws[i].fragment) frag = &f;
    if (!frag)
      throw invalid_input_error(std::string(what) + " " + std::to_string(shown[ws[i].pos]) + ": dataset '" +
                                st_->root + "' version " + std::to_string(version()) + " has no fragment " +
                                std::to_string(ws[i].fragment));
    const auto phys = st_->physical_rows(*frag);
    auto dv = st_->deletions_of(*frag);
    std::vector<std::uint64_t> offsets;
    for (std::size_t k = i; k < j; ++k) {
      const auto& w = ws[k];
      if (w.offset >= phys || dv->contains(w.offset))
        throw invalid_input_error(std::string(what) + " " + std::to_string(shown[w.pos]) + ": fragment " +
                                  std::to_string(w.fragment) + (w.offset >= phys ? " has only " + std::to_string(phys) + " rows"
                                                                                  : " has deleted row " + std::to_string(w.offset)));
      if (offsets.empty() || offsets.back() != w.offset) offsets.push_back(w.offset);
    }
    const auto* st = st_.get();
    fragment_reader r(st_->root, st_->manifest, st_->schema, st_->arrow_schema, *frag, fields, st_->sources,
                      reader_options, [st, &reader_options](const std::string& path) {
                        return st->kept_reader(path, reader_options);
                      });
    struct drop_pages {  // the kept readers hold no page buffers after the take (even on error)
      const fragment_reader& r;
      ~drop_pages() { r.drop_page_caches(); }
    } drop{r};
    reads.push_back(r.read_offsets(offsets));
    std::size_t at = 0;
    for (std::size_t k = i; k < j; ++k) {
      while (offsets[at] != ws[k].offset) ++at;
      row_of[ws[k].pos] = base + std::int64_t(at);
    }
    base += std::int64_t(offsets.size());
    i = j;
  }
  arrow::record_batch out;
  out.schema = schema;
  for (std::size_t c = 0; c < fields.size(); ++c) {
    const auto& type = schema->fields[c].type;
    if (addrs.empty()) {
      out.columns.push_back(detail::null_array_of(type, 0));
    } else if (reads.size() == 1 || !arrow::has_dictionary(*type)) {
      // One gather (rows already in file order: one copy), not a slice per row.
      std::vector<arrow::array_ptr> parts;
      for (const auto& cols : reads) parts.push_back(cols[c]);
      const auto all = parts.size() == 1 ? parts[0] : arrow::concat(parts, type);
      out.columns.push_back(arrow::take_rows(all, row_of, type));
    } else {
      // Dictionary columns of several fragments: one-row slices, as concat encodes them.
      std::vector<arrow::array_ptr> picked(addrs.size());
      std::vector<std::int64_t> starts;
      for (const auto& cols : reads) starts.push_back((starts.empty() ? 0 : starts.back()) + cols[c]->length);
      for (std::size_t k = 0; k < addrs.size(); ++k) {
        const auto f = std::size_t(std::upper_bound(starts.begin(), starts.end(), row_of[k]) - starts.begin());
        picked[k] = arrow::slice(reads[f][c], row_of[k] - (f ? starts[f - 1] : 0), 1);
      }
      out.columns.push_back(arrow::concat(picked, type));
    }
  }
  return out;
}

#endif  // LANCET_HEADER_ONLY

}  // namespace lancet::dataset
