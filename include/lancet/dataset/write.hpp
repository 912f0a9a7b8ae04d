// Writing datasets: create, append, overwrite.
//
//   dataset::write("/data/points", batches, {.mode = dataset::write_mode::append});
//
// Rows are split into fragments of at most max_rows_per_file rows (Lance's default
// 1,048,576) and about max_bytes_per_file bytes (a soft limit, as in Lance: a file is
// closed once it reaches it). Each fragment is one data file `data/<name>.lance`,
// named as Lance names them (24 random bits in binary, then 26 random hex digits).
// Data files are published before the manifest (see commit.hpp); if anything fails,
// the files this write created are removed and the dataset is unchanged.
//
// The storage version (the Lance file format of the data files) is chosen when the
// dataset is created and kept on append and overwrite (unless an overwrite asks for
// another). Lance 12 creates 2.2 datasets by default and so does lancet; a build whose
// file::with_version cannot write 2.2 falls back to the newest version it writes.
// write_result::storage_version says which was used.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/fragment_metadata.hpp"
#include "lancet/dataset/sink_factory.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/file/version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

enum class write_mode {
  create,     // a new dataset; fails if one exists at the path
  append,     // add rows to the dataset (creates it when there is none)
  overwrite,  // replace the data and schema with a new version (creates it when there is none)
};

inline constexpr std::uint64_t default_max_rows_per_file = 1024 * 1024;
inline constexpr std::uint64_t default_max_bytes_per_file = 90ull << 30;  // Lance's 90 GiB
// The dataset writer hands its file writers batches of at most this many rows (Lance's
// row-group size), so a column's page closes once about 8 MiB of them have accumulated
// (e.g. 17,408 rows of 128-d float vectors) rather than at the size of whatever batch
// the caller had: pages stay small enough for cheap random reads and bounded scans.
inline constexpr std::uint64_t default_max_rows_per_group = 1024;

struct write_options {
  write_mode mode = write_mode::create;
  std::uint64_t max_rows_per_file = default_max_rows_per_file;
  std::uint64_t max_bytes_per_file = default_max_bytes_per_file;
  std::uint64_t max_rows_per_group = default_max_rows_per_group;
  // Data file format for a new (or overwritten) dataset; appends use the dataset's
  // own and refuse a different one. Default: see default_storage_version().
  std::optional<file::format_version> storage_version;
  // Manifest naming of a new dataset (v2 as Lance 12); an existing dataset keeps its own.
  std::optional<naming_scheme> naming;
  // New datasets only: give rows stable row ids (Lance's enable_stable_row_ids).
  bool enable_stable_row_ids = false;
  // The schema of a new or overwritten dataset when there may be no batch to take it
  // from; batches must then match it.
  std::optional<arrow::schema> schema;
  // Options for each data file (page size, buffering).
  file::writer_options file_options;
  // Another writer committed first: check its transaction, rebase on it and commit the
  // next version, as Lance 12 does, up to this many times (Lance's default, 20). 0:
  // losing the race is commit_conflict_error. A create never rebases.
  unsigned max_retries = 20;
  // Write _versions/latest_version_hint.json after committing (as Lance 12 does).
  bool write_version_hint = true;
  // fsync each data file before the commit that references it. Lance 12 does not (its
  // local writes are never synced): false matches it, and is faster (a 528 MB file's
  // fsync took 0.15 s here), but after a crash a committed version may lack its data.
  bool sync_data_files = true;
};

struct write_result {
  std::uint64_t version = 0;          // the version this write committed
  std::uint64_t rows_written = 0;
  file::format_version storage_version = file::format_version::v2_0;
  std::vector<fragment_metadata> fragments;  // the new fragments, with their ids
  unsigned retries = 0;               // commits lost to other writers before this one
};

// Writes batches held in memory, with data files on the local file system and Lance
// 12's encodings. (Templates over batch generators, sink factories and encoding
// policies: write_impl.hpp, included here in header-only programs.)
LANCET_INLINE write_result write(const std::string& root, std::span<const arrow::record_batch> batches,
                                 const write_options& o = {});
LANCET_INLINE write_result write(const std::string& root, const std::vector<arrow::record_batch>& batches,
                                 const write_options& o = {});
LANCET_INLINE write_result write(const std::string& root, const arrow::record_batch& batch,
                                 const write_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/write_impl.hpp"
#endif
