// Deletion files: which rows (by offset within their fragment) a version has deleted.
//
//   {root}/_deletions/{fragment_id}-{read_version}-{id}.arrow   Arrow IPC file, one
//        non-null `row_id: uint32` column (Lance 12 writes it, ZSTD-compressed, for
//        fewer than 5,000 deleted rows)
//   {root}/_deletions/{fragment_id}-{read_version}-{id}.bin     32-bit roaring bitmap,
//        portable format (5,000 rows or more)
//
// Both kinds are read; lancet writes the bitmap kind, which Lance reads whatever the
// count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/core/random.hpp"
#include "lancet/dataset/arrow_ipc.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

inline constexpr std::string_view deletions_dir_name = "_deletions";

// The deleted row offsets of one fragment, sorted and unique.
class deletion_vector {
 public:
  deletion_vector() = default;
  explicit deletion_vector(std::vector<std::uint32_t> offsets) : rows_(std::move(offsets)) {
    std::sort(rows_.begin(), rows_.end());
    rows_.erase(std::unique(rows_.begin(), rows_.end()), rows_.end());
  }

  bool empty() const noexcept { return rows_.empty(); }
  std::size_t size() const noexcept { return rows_.size(); }
  bool contains(std::uint64_t offset) const noexcept {
    return offset <= 0xFFFFFFFFull && std::binary_search(rows_.begin(), rows_.end(), std::uint32_t(offset));
  }
  // Deleted offsets in [begin, end).
  std::size_t count_in(std::uint64_t begin, std::uint64_t end) const noexcept {
    auto lo = std::lower_bound(rows_.begin(), rows_.end(), clamp(begin));
    auto hi = end > 0xFFFFFFFFull ? rows_.end() : std::lower_bound(rows_.begin(), rows_.end(), std::uint32_t(end));
    return hi > lo ? std::size_t(hi - lo) : 0;
  }
  const std::vector<std::uint32_t>& offsets() const noexcept { return rows_; }
  roaring_bitmap to_bitmap() const { return roaring_bitmap::from_values(rows_.begin(), rows_.end()); }

  // This vector plus `more`.
  deletion_vector merged(std::span<const std::uint32_t> more) const {
    std::vector<std::uint32_t> all = rows_;
    all.insert(all.end(), more.begin(), more.end());
    return deletion_vector(std::move(all));
  }

  friend bool operator==(const deletion_vector&, const deletion_vector&) = default;

 private:
  static std::uint32_t clamp(std::uint64_t v) noexcept { return v > 0xFFFFFFFFull ? 0xFFFFFFFFu : std::uint32_t(v); }
  std::vector<std::uint32_t> rows_;
};

// Parses a deletion file's bytes. `what` names the file in errors.
inline deletion_vector decode_deletion_file(pb::deletion_file::type kind, bytes_view bytes, const std::string& what) {
  if (kind == pb::deletion_file::type::bitmap) {
    std::size_t used = 0;
    roaring_bitmap bm;
    try {
      bm = roaring_bitmap::deserialize(bytes, &used);
    } catch (const corrupt_error& e) {
      throw corrupt_error("deletion file '" + what + "': " + e.message());
    }
    if (used != bytes.size())
      throw corrupt_error("deletion file '" + what + "': " + std::to_string(bytes.size() - used) +
                          " bytes follow the roaring bitmap");
    return deletion_vector(bm.to_vector());
  }
  auto data = ipc::read_ipc(bytes, "deletion file '" + what + "'");
  // Lance requires exactly this schema and one batch.
  if (data.schema.fields.size() != 1 || data.schema.fields[0].name != "row_id" ||
      data.schema.fields[0].type->id != arrow::type_id::uint32)
    throw corrupt_error("deletion file '" + what + "': expected one uint32 column 'row_id'");
  if (data.batches.size() != 1)
    throw corrupt_error("deletion file '" + what + "': expected exactly one batch, found " +
                        std::to_string(data.batches.size()));
  const auto& col = *data.batches[0].columns[0];
  if (col.count_nulls() > 0) throw corrupt_error("deletion file '" + what + "': null row ids");
  std::vector<std::uint32_t> rows(std::size_t(col.length));
  for (std::int64_t i = 0; i < col.length; ++i) rows[std::size_t(i)] = col.value<std::uint32_t>(i);
  return deletion_vector(std::move(rows));
}

// Where a path that Lance records relative to a base lives: the dataset root, or
// a registered base path (shallow clones, external data).
inline std::string resolve_base(const std::string& root, const pb::manifest& m, const std::optional<std::uint32_t>& base_id,
                                std::string_view dataset_subdir) {
  if (!base_id) return (std::filesystem::path(root) / dataset_subdir).string();
  for (const auto& b : m.base_paths) {
    if (b.id != *base_id) continue;
    // A URI other than file:// is read through the storage mounted for it (io::storage_for).
    std::string p = b.path;
    if (p.rfind("file://", 0) == 0) p = p.substr(7);
    return b.is_dataset_root ? (std::filesystem::path(p) / dataset_subdir).string() : p;
  }
  throw corrupt_error("the manifest refers to base path id " + std::to_string(*base_id) + ", which it does not define");
}

inline std::string deletion_file_path(const std::string& root, const pb::manifest& m, std::uint64_t fragment_id,
                                      const pb::deletion_file& d) {
  const std::string dir = resolve_base(root, m, d.base_id, deletions_dir_name);
  return (std::filesystem::path(dir) / (std::to_string(fragment_id) + "-" + std::to_string(d.read_version) + "-" +
                                        std::to_string(d.id) + "." + std::string(d.extension())))
      .string();
}

// Reads the deletion vector of a fragment (empty without a deletion file). Offsets at
// or past the fragment's physical rows, or a count that disagrees with the manifest,
// are corrupt. The file is read through `sources` (local files by default).
inline deletion_vector read_deletion_vector(const std::string& root, const pb::manifest& m,
                                            const pb::data_fragment& frag, const source_factory& sources = {}) {
  if (!frag.deletion_file) return {};
  const auto& d = *frag.deletion_file;
  const std::string path = deletion_file_path(root, m, frag.id, d);
  const std::string bytes = read_small_file(sources, path);
  auto dv = decode_deletion_file(d.file_type,
                                 bytes_view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), path);
  if (frag.physical_rows && !dv.empty() && dv.offsets().back() >= frag.physical_rows)
    throw corrupt_error("deletion file '" + path + "' deletes row " + std::to_string(dv.offsets().back()) +
                        " of fragment " + std::to_string(frag.id) + ", which has " + std::to_string(frag.physical_rows) +
                        " rows");
  if (d.num_deleted_rows && d.num_deleted_rows != dv.size())
    throw corrupt_error("deletion file '" + path + "' holds " + std::to_string(dv.size()) +
                        " rows but the manifest says " + std::to_string(d.num_deleted_rows));
  return dv;
}

// A new bitmap-kind deletion file record for a fragment (random id, as Lance does).
inline pb::deletion_file new_bitmap_deletion_file(std::uint64_t read_version, std::uint64_t num_deleted) {
  pb::deletion_file d;
  d.file_type = pb::deletion_file::type::bitmap;
  d.read_version = read_version;
  d.id = random_u64();
  d.num_deleted_rows = num_deleted;
  return d;
}

// Writes `rows` as a new bitmap deletion file of fragment `f` through `make_sink`
// (exclusive: the name is fresh) and returns `f` with the file recorded; the path
// goes into `written`, so that a failed commit can remove it.
template <class SinkFactory>
pb::data_fragment write_deletion_file(const std::string& root, const pb::manifest& m, pb::data_fragment f,
                                      const deletion_vector& rows, SinkFactory& make_sink,
                                      std::vector<std::string>& written) {
  f.deletion_file = new_bitmap_deletion_file(m.version, rows.size());
  const std::string path = deletion_file_path(root, m, f.id, *f.deletion_file);
  io::make_directories_if_local(io::parent_directory(path));
  written.push_back(path);
  const std::string bytes = rows.to_bitmap().serialize();
  io::file_sink_options so;
  so.exclusive = true;
  auto sink = make_sink(path, so);
  sink.write(bytes_view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  sink.finish();
  return f;
}

}  // namespace lancet::dataset
