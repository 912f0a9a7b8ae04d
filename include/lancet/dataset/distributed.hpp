// Distributed writes, as Lance 12's contract has them (docs/src/guide/distributed_write.md):
// workers write data files and return their fragment metadata without committing
// (write_fragments); one coordinator commits every worker's fragments in one
// transaction (commit), an Append or an Overwrite with a read version.
//
//   // on each worker
//   auto w = dataset::write_fragments("/data/points", batches, {.mode = dataset::write_mode::append});
//   send(dataset::fragments_to_json_lines(w.fragments));      // fragment_json.hpp
//   // on the coordinator
//   auto r = dataset::commit("/data/points", dataset::operation::append{}, all_fragments);
//
// Fragment ids are assigned at commit (from the dataset's max_fragment_id + 1, or 0 on
// overwrite), whatever ids the metadata carries, so fragments written by independent
// workers never clash. The commit goes through commit_transaction (conflict.hpp): a
// concurrent commit after the read version is checked and rebased on as Lance does.
//
// commit refuses, naming the fragment, file, field or version, and commits nothing:
//   * a data file that does not exist under this dataset's data/ (e.g. metadata
//     written for another dataset), whose size or row count differs from the metadata,
//     or whose fields are not the dataset's (ids, names and types compared with the
//     schema the data file stores);
//   * the same data file twice in one commit, or one the dataset already references;
//   * fragments carrying what only a commit assigns or a later operation adds (deletion
//     files, row id sequences), data files outside the dataset (base_id), files of
//     another Lance file version than the dataset's, and an append to no dataset.
// On failure the data files are left in place (the caller may fix and retry; unused,
// `cleanup` removes them once old enough).
//
// Declarations here; definitions in distributed_impl.hpp (included here in header-only
// programs; in compiled mode the library defines the functions declared here, and a
// program writing from a batch generator, a sink factory or an encoding policy of its
// own includes distributed_impl.hpp for those templates).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/fragment_json.hpp"
#include "lancet/dataset/fragment_metadata.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/file/version.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

// What write_fragments wrote: fragments (id 0) ready for commit.
struct fragments_written {
  std::vector<fragment_metadata> fragments;
  std::uint64_t rows_written = 0;
  file::format_version storage_version = file::format_version::v2_0;
  // The version whose schema the files follow (nullopt: the dataset did not exist).
  std::optional<std::uint64_t> read_version;
  schema::schema schema;  // the Lance schema of the files, with its field ids
};

// Writes batches into data files under root/data/ and returns their fragment metadata,
// committing nothing (Lance's write_fragments). o.mode picks the schema: append (the
// default for a dataset that exists: create refuses one) follows the dataset's schema
// and storage version; overwrite, and any mode on a dataset that does not exist yet,
// takes o.schema (or the first batch's), with field ids assigned as Lance assigns them
// (depth first from 0). On failure the files written are removed. (From a batch
// generator, over a sink factory or with an encoding policy: distributed_impl.hpp.)
LANCET_INLINE fragments_written write_fragments(const std::string& root, std::span<const arrow::record_batch> batches,
                                                const write_options& o = {});
LANCET_INLINE fragments_written write_fragments(const std::string& root, const std::vector<arrow::record_batch>& batches,
                                                const write_options& o = {});
LANCET_INLINE fragments_written write_fragments(const std::string& root, const arrow::record_batch& batch,
                                                const write_options& o = {});

// Removes the data files of fragments that were written but will not be committed
// (a failed distributed write). Missing files are skipped; returns how many went.
LANCET_INLINE std::size_t remove_uncommitted(const std::string& root,
                                             const std::vector<fragment_metadata>& fragments) noexcept;

// The operations a coordinator commits fragments with (Lance's LanceOperation).
namespace operation {
struct append {};  // add the fragments to the dataset (which must exist)
struct overwrite {
  // The schema of the new version (field ids as schema::from_arrow assigns them, as
  // write_fragments does); nullopt keeps the dataset's schema.
  std::optional<arrow::schema> schema;
};
}  // namespace operation
using commit_operation = std::variant<operation::append, operation::overwrite>;

struct fragment_commit_options {
  // The version the fragments were written against (Lance's read_version); commits
  // made after it are checked and rebased on. Default: the latest version. 0: no
  // dataset (an overwrite that creates it).
  std::optional<std::uint64_t> read_version;
  unsigned max_retries = default_max_retries;
  bool write_version_hint = true;
  // For an overwrite that creates the dataset: manifest naming and stable row ids.
  std::optional<naming_scheme> naming;
  bool enable_stable_row_ids = false;
  // Storage version of an overwrite without fragments (else the files' version).
  std::optional<file::format_version> storage_version;
};

struct fragment_commit_result {
  std::uint64_t version = 0;       // the version committed
  std::uint64_t read_version = 0;  // 0: the dataset did not exist
  unsigned retries = 0;            // commits lost to other writers before this one won
  std::uint64_t rows = 0;          // physical rows of the committed fragments
  std::vector<fragment_metadata> fragments;  // as committed, with their ids
};

// Commits fragments written by write_fragments (on any number of workers) as one new
// version: Lance's commit of an Append or Overwrite with a read version.
LANCET_INLINE fragment_commit_result commit(const std::string& root, const commit_operation& op,
                                            std::vector<fragment_metadata> fragments,
                                            const fragment_commit_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/distributed_impl.hpp"
#endif
