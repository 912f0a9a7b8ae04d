// A Lance dataset: open a version, read its schema, fragments and rows (deleting rows:
// dataset/delete.hpp, included at the end).
//
//   auto ds = lancet::dataset::dataset::open("/data/points");        // latest version
//   auto old = ds.checkout(3);                                        // or open(path, 3)
//   for (auto sc = ds.scan({.columns = {"id", "vec"}, .limit = 100}); auto b = sc.next();) ...
//   auto rows = ds.take({0, 5, 7});                                   // by row id
//
// Row ids and row addresses: a row's address is (fragment id << 32) | its offset in
// the fragment. Without stable row ids a row's id is its address; with them (Lance's
// enable_stable_row_ids) ids come from each fragment's row-id sequence and survive
// compaction. Deleted rows (deletion files, both Lance kinds) are skipped by scans and
// counts; taking a deleted row is an error.
//
// A dataset object is an immutable snapshot of one version, cheap to copy and safe
// to use from several threads. A scanner is not: use one per thread.
//
// Where the bytes come from: every file a dataset reads (manifests, data files,
// deletion files, row-id sequences, blob files) is opened through a source_factory
// (manifest.hpp): local files by default, and a URI's files through the storage mounted
// for it (io::mount, e.g. an S3 or Azure store from io/object_store/object_storage.hpp).
// Pass your own to read through a cache or anything satisfying io::source:
//
//   auto ds = lancet::dataset::dataset::open(root, std::nullopt,
//                                            [](const std::string& p) { return my_source(p); });
//
// Scans, takes, checkout() and latest() of that dataset use the same factory. The
// versions themselves are found by listing {root}/_versions/ through io::storage_for(root).
//
// This header declares; the definitions are in dataset_impl.hpp, which it includes in
// header-only programs (in compiled mode, core/config.hpp, the library holds them).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/row_set.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/file/reader_options.hpp"
#include "lancet/file/version.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

inline constexpr std::string_view row_id_column = "_rowid";
inline constexpr std::string_view row_address_column = "_rowaddr";

inline constexpr std::uint64_t row_address(std::uint64_t fragment_id, std::uint64_t offset) noexcept {
  return (fragment_id << 32) | offset;
}

struct scan_options {
  std::vector<std::string> columns{};  // top-level columns, in output order; empty: all
  std::uint64_t offset = 0;          // live rows to skip
  std::optional<std::uint64_t> limit{};
  std::uint64_t batch_size = 8192;   // rows per batch (at most)
  // About how many bytes of a fragment a scan decodes at once; batches are then cut
  // from that without decoding pages again (pages of 2.1+ files can hold a million
  // rows). Smaller: less memory; larger: fewer reads. On an object store the next
  // chunk is fetched and decoded meanwhile, on a thread of its own (twice the memory).
  std::uint64_t read_ahead_bytes = std::uint64_t(64) << 20;
  bool with_row_id = false;          // add a `_rowid: uint64` column
  bool with_row_address = false;     // add a `_rowaddr: uint64` column
  std::optional<std::vector<std::uint64_t>> fragment_ids{};  // only these fragments, in this order
  file::reader_options reader_options{};  // for the data files the scan opens
};

struct version_info {
  std::uint64_t version = 0;
  std::optional<std::int64_t> timestamp_nanos;  // commit time, ns since the epoch (UTC)
  std::string manifest_path;
  std::string writer;  // "library version" that committed it, e.g. "lance 12.0.0"
};

struct fragment_info {
  std::uint64_t id = 0;
  std::uint64_t physical_rows = 0;
  std::uint64_t deleted_rows = 0;
  std::vector<std::string> data_files;  // absolute paths
  std::optional<std::string> deletion_file;
  std::uint64_t live_rows() const noexcept { return physical_rows - deleted_rows; }
};

class fragment_reader;  // dataset/fragment_reader.hpp

namespace detail {
struct state;  // what copies of one dataset share (dataset_impl.hpp)
}  // namespace detail

// Reads a dataset version batch by batch.
class scanner {
 public:
  LANCET_INLINE scanner(std::shared_ptr<const detail::state> st, scan_options o);
  LANCET_INLINE scanner(scanner&&) noexcept;
  LANCET_INLINE scanner& operator=(scanner&&) noexcept;
  LANCET_INLINE ~scanner();

  const std::shared_ptr<const arrow::schema>& schema() const noexcept { return schema_; }

  // The next batch, or nullopt at the end.
  LANCET_INLINE std::optional<arrow::record_batch> next();

  // Every remaining batch.
  LANCET_INLINE std::vector<arrow::record_batch> to_batches();

 private:
  // The projected columns of physical rows [pos_, end), skipping deleted ones, cut
  // from the decoded chunk (decoding the next chunk when needed).
  LANCET_INLINE std::vector<arrow::array_ptr> cut(std::uint64_t end, bool holes, const std::vector<std::uint64_t>& offsets);

  std::shared_ptr<const detail::state> st_;
  scan_options o_;
  std::vector<std::size_t> fields_;
  std::shared_ptr<const arrow::schema> schema_;
  std::vector<const pb::data_fragment*> frags_;
  std::size_t next_frag_ = 0;
  std::uint64_t skip_ = 0, left_ = 0;
  // The fragment being read.
  const pb::data_fragment* frag_ = nullptr;
  std::unique_ptr<fragment_reader> reader_;  // fragment_reader.hpp
  std::shared_ptr<const deletion_vector> dv_;
  std::shared_ptr<const std::vector<std::uint64_t>> ids_;
  std::uint64_t phys_ = 0, pos_ = 0;
  // Decoded rows [chunk_begin_, chunk_end_) of the fragment being read.
  std::vector<arrow::array_ptr> chunk_;
  std::uint64_t chunk_begin_ = 0, chunk_end_ = 0, chunk_rows_ = 0;
};

class dataset {
 public:
  // Opens the latest version (or `version`) of the dataset at `root`; every file it
  // reads is opened through `sources` (local files by default; io::file_source_options
  // convert to a local factory with those options).
  LANCET_INLINE static dataset open(const std::string& root, std::optional<std::uint64_t> version = std::nullopt,
                      source_factory sources = {});

  // A version already loaded (load_latest / load_version); its files are read
  // through `sources`.
  LANCET_INLINE explicit dataset(snapshot s, source_factory sources = {});

  // Another version of the same dataset (same sources).
  LANCET_INLINE dataset checkout(std::uint64_t version) const;
  // The dataset's newest version now (this object keeps its own).
  LANCET_INLINE dataset latest() const;
  // What this dataset's files are opened with.
  LANCET_INLINE const source_factory& sources() const noexcept;

  LANCET_INLINE const std::string& path() const noexcept;
  LANCET_INLINE std::uint64_t version() const noexcept;
  // The version as Lance stored it: its Manifest, IndexMetadata and Transaction
  // messages (format level, following Lance's protos; the index and query layers read
  // them). index::list_indices(ds) describes the indexes with library types.
  LANCET_INLINE const pb::manifest& manifest() const noexcept;
  LANCET_INLINE const std::vector<pb::index_metadata>& indices() const noexcept;
  LANCET_INLINE const std::optional<pb::transaction>& transaction() const noexcept;
  LANCET_INLINE const schema::schema& lance_schema() const noexcept;
  LANCET_INLINE const arrow::schema& schema() const noexcept;
  LANCET_INLINE file::format_version storage_version() const;
  LANCET_INLINE naming_scheme manifest_naming() const noexcept;
  LANCET_INLINE bool stable_row_ids() const noexcept;
  LANCET_INLINE std::optional<std::int64_t> timestamp_nanos() const;

  // Every version of the dataset, oldest first.
  LANCET_INLINE std::vector<version_info> versions() const;
  LANCET_INLINE static std::vector<version_info> list_dataset_versions(const std::string& root, const source_factory& sources = {});

  // Live rows (deleted rows excluded).
  LANCET_INLINE std::uint64_t count_rows() const;

  LANCET_INLINE std::vector<fragment_info> fragments() const;

  // Rows of a fragment, deleted ones included.
  LANCET_INLINE std::uint64_t physical_rows(std::uint64_t fragment_id) const;
  // The row id of each physical row of a fragment (its addresses without stable row ids).
  LANCET_INLINE std::vector<std::uint64_t> fragment_row_ids(std::uint64_t fragment_id) const;

  // The deleted row offsets of a fragment.
  LANCET_INLINE deletion_vector deleted_rows(std::uint64_t fragment_id) const;

  // The id of every live row of this version (row addresses, or stable row ids):
  // deleted rows and rows of fragments the version no longer has are not in it. Built
  // on first use and shared by every copy of this dataset (and its queries).
  LANCET_INLINE std::shared_ptr<const row_set> live_rows() const;
  // Whether some fragment has deleted rows.
  LANCET_INLINE bool has_deletions() const;

  LANCET_INLINE scanner scan(scan_options o = {}) const;

  // Every selected row as one batch.
  LANCET_INLINE arrow::record_batch to_batch(scan_options o = {}) const;

  // Rows by row address (fragment << 32 | offset), in the order given (repeats allowed).
  // `reader_options` apply to the data files the take opens.
  LANCET_INLINE arrow::record_batch take_addresses(std::span<const std::uint64_t> addresses,
                                     const std::vector<std::string>& columns = {},
                                     const file::reader_options& reader_options = {}) const;

  // The address of each live row id, in the order given (the ids themselves without
  // stable row ids); invalid_input_error names an id that is deleted or never written.
  LANCET_INLINE std::vector<std::uint64_t> row_addresses(std::span<const std::uint64_t> row_ids) const;

  // Rows by row id (the address, unless the dataset uses stable row ids).
  LANCET_INLINE arrow::record_batch take(std::span<const std::uint64_t> row_ids, const std::vector<std::string>& columns = {},
                           const file::reader_options& reader_options = {}) const;
  LANCET_INLINE arrow::record_batch take(std::initializer_list<std::uint64_t> row_ids, const std::vector<std::string>& columns = {}) const;

 private:
  LANCET_INLINE static arrow::record_batch concat_batches(const std::shared_ptr<const arrow::schema>& s,
                                            const std::vector<arrow::record_batch>& batches);

  LANCET_INLINE arrow::record_batch take_impl(std::span<const std::uint64_t> addrs, std::span<const std::uint64_t> shown,
                                const std::vector<std::string>& columns, const char* what,
                                const file::reader_options& reader_options) const;

  std::shared_ptr<const detail::state> st_;
};

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/dataset_impl.hpp"
#endif

// Deleting rows (dataset/delete.hpp) is part of the dataset's API: it comes with it.
#include "lancet/dataset/delete.hpp"
