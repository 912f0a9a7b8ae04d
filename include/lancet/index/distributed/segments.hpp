// Lance 12's distributed index contract: segments built separately with one trained
// model (model_file.hpp), optionally merged, committed as one named index.
//
//   auto m = index::train_model(root, o);                          // coordinator, once
//   auto s = index::build_segment(root, o, m, {0, 1});             // each worker
//   std::string j = index::segment_to_json(s);                     // back to the coordinator
//   auto one = index::merge_segments(root, {s0, s1});              // optional
//   index::commit_segments(root, "vector_idx", "vector", {s0, s1}); // one CreateIndex
//
// build_segment is Lance's create_index_uncommitted: it writes _indices/<uuid>/
// (index.idx, auxiliary.idx) and returns the IndexMetadata, nothing committed.
// merge_segments is merge_existing_index_segments: one new physical segment whose
// partition p holds the sources' partition p rows, source after source (the sources'
// directories stay, unreferenced, for cleanup). commit_segments is
// commit_existing_index_segments: the segments must cover disjoint fragments of one
// column, all present in the latest version, share one model (checked on their files,
// not only in their JSON) and carry the index's name; existing segments of that name
// whose fragments the new ones cover entirely are replaced, disjoint ones kept, and
// one that would be left partly covered is refused. The commit is one CreateIndex
// through the conflict-resolving commit; any refusal commits nothing.
// Declarations here; definitions in segments_impl.hpp (included here in header-only
// programs; compiled into the library in compiled mode, core/config.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/dataset/commit_retries.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/distributed/model_file.hpp"
#include "lancet/index/index_info.hpp"
#include "lancet/pb/table/index.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

class segment_metadata;

namespace detail {
// A segment's IndexMetadata, for the index module's own code.
struct segment_access {
  static inline const pb::index_metadata& stored(const segment_metadata& s) noexcept;
  static inline pb::index_metadata& stored(segment_metadata& s) noexcept;
};
}  // namespace detail

// One uncommitted segment: what a coordinator checks and commits (its IndexMetadata,
// uuid, name, fields, fragments, details and files, is kept inside).
class segment_metadata {
 public:
  std::string column;
  std::string index_type;    // "IVF_PQ", ...
  simd::distance_type metric = simd::distance_type::l2;
  std::string model;         // model_fingerprint of the model it was built with
  std::uint64_t rows_indexed = 0;
  std::size_t num_partitions = 0;

  const lancet::uuid& uuid() const noexcept { return index_.uuid; }
  const std::string& name() const noexcept { return index_.name; }
  // The dataset version it was built from.
  std::uint64_t dataset_version() const noexcept { return index_.dataset_version; }
  LANCET_INLINE std::vector<std::uint64_t> fragment_ids() const;
  std::string label() const { return "segment " + index_.uuid.to_string(); }

 private:
  friend struct detail::segment_access;
  pb::index_metadata index_;
};

namespace detail {
inline const pb::index_metadata& segment_access::stored(const segment_metadata& s) noexcept { return s.index_; }
inline pb::index_metadata& segment_access::stored(segment_metadata& s) noexcept { return s.index_; }
}  // namespace detail

// ---------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------

LANCET_INLINE std::string segment_to_json(const segment_metadata& s);

// `what` names the text in errors (a file name).
LANCET_INLINE segment_metadata segment_from_json(std::string_view text, const std::string& what = "segment JSON");

// ---------------------------------------------------------------------------------
// Build, check, merge, commit
// ---------------------------------------------------------------------------------

// Builds a segment over `fragment_ids` of the latest version with model `m` (o gives
// the name, memory budget, pool, progress; its column / type / metric must agree with
// the model's or be left at the model's). Nothing is committed.
LANCET_INLINE segment_metadata build_segment(const std::string& root, build_options o, const trained_model& m,
                                             std::vector<std::uint64_t> fragment_ids);

// Merges uncommitted segments of one index and model into one new uncommitted
// segment over all their fragments (Lance's merge_existing_index_segments). Reads one
// partition of each source at a time.
LANCET_INLINE segment_metadata merge_segments(const std::string& root, const std::vector<segment_metadata>& segs);

struct commit_segments_result {
  std::uint64_t version = 0;                  // the version committed
  std::vector<vector_index_info> replaced;    // existing segments it removed
  unsigned retries = 0;                       // commits lost to other writers first
};

// Commits segments as index `name` on `column` of the latest version in one
// CreateIndex (Lance's commit_existing_index_segments). Errors (nothing committed):
// invalid_input_error for segments that do not fit together or with the dataset,
// commit_conflict_error when another writer's commit meanwhile cannot be rebased on.
LANCET_INLINE commit_segments_result commit_segments(const std::string& root, const std::string& name,
                                                     const std::string& column, const std::vector<segment_metadata>& segs,
                                                     unsigned max_retries = dataset::default_max_retries);

// Removes the directory of a segment that was built but will not be committed (a
// failed or merged-away distributed build). Returns whether there was one to remove.
// Refuses (invalid_input_error naming the segment, nothing removed) a segment the
// latest version of `root` references; io_error naming the directory when it cannot be
// removed.
LANCET_INLINE bool remove_uncommitted_segment(const std::string& root, const segment_metadata& s);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/distributed/segments_impl.hpp"
#endif
