// How an operation that moves rows (compaction) carries the dataset's indexes along.
// The dataset layer knows the manifest's IndexMetadata but no index format, so the
// index layer supplies the remapper (index::compaction_remapper(), index/optimize/remap.hpp),
// and this header holds what both sides share: the old -> new row address map, the
// remapped copy an index gets, and the manifest's side of the change (the new
// IndexMetadata and fragment bitmap, as Lance 12 records them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

// Old row address -> the new one, or nullopt when the row is gone. Addresses missing
// from the map are unchanged.
using row_address_map = std::unordered_map<std::uint64_t, std::optional<std::uint64_t>>;

struct remap_stats {
  std::uint64_t rows_before = 0;  // entries in the old index
  std::uint64_t rows_after = 0;   // entries in the new one
  std::uint64_t rows_moved = 0;   // entries whose row id changed
  std::uint64_t rows_dropped = 0; // entries mapped to nothing
};

// Where `moved` sends an index entry's row id: its new id (itself when `moved` does not
// name it), or nullopt when the row left; counted into stats.rows_moved / rows_dropped.
inline std::optional<std::uint64_t> remapped_row(std::uint64_t id, const row_address_map& moved, remap_stats& stats) {
  const auto it = moved.find(id);
  if (it == moved.end()) return id;
  if (!it->second) {
    ++stats.rows_dropped;
    return std::nullopt;
  }
  if (*it->second != id) ++stats.rows_moved;
  return *it->second;
}

// An index's remapped copy, written beside the old one under a new uuid.
struct remapped_index {
  lancet::uuid old_uuid, new_uuid;
  std::vector<pb::index_file> files;  // of the new directory, as IndexMetadata lists them
  std::string directory;              // where they are: {root}/_indices/{new_uuid}
  std::size_t num_partitions = 0;
  remap_stats stats;
  // What the Rewrite transaction records for it (RewrittenIndex's new details and
  // version; for a vector index Lance records empty VectorIndexDetails, version 1).
  pb::any transaction_details;
  std::uint32_t transaction_index_version = 0;
};

// What the index layer gives compaction. Both functions are set or neither.
struct index_remapper {
  // Why the index cannot be remapped (nullopt when it can); asked before any file is
  // written, so an index that cannot follow stops the compaction up front.
  std::function<std::optional<std::string>(const std::string& root, const pb::index_metadata&)> unsupported_reason;
  // Writes the remapped copy of the index of the dataset at root (new uuid); on
  // failure removes what it wrote and leaves the old index as it was.
  std::function<remapped_index(const std::string& root, const pb::index_metadata&, const row_address_map&)> remap;

  explicit operator bool() const noexcept { return unsupported_reason && remap; }
};

// Lance's recomputed fragment bitmap of an index after a rewrite: for each group
// (old fragment ids -> new fragment ids) whose old fragments the index covers, the old
// ids leave and the new ones join. A group only partly covered is invalid_input_error
// (Lance refuses such a plan: it never mixes indexed and unindexed fragments).
inline roaring_bitmap rewritten_fragment_bitmap(
    const pb::index_metadata& im,
    const std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>>& groups) {
  auto bitmap = index_fragment_bitmap(im);
  auto out = bitmap;
  for (const auto& [olds, news] : groups) {
    std::size_t covered = 0;
    for (auto id : olds) covered += id <= UINT32_MAX && bitmap.contains(std::uint32_t(id));
    if (covered == 0) continue;
    if (covered != olds.size())
      throw invalid_input_error("index '" + im.name + "' covers only some of the fragments rewritten together");
    for (auto id : olds) out.remove(std::uint32_t(id));
    for (auto id : news) {
      if (id > UINT32_MAX) throw invalid_input_error("fragment id " + std::to_string(id) + " exceeds 32 bits");
      out.add(std::uint32_t(id));
    }
  }
  return out;
}

// The IndexMetadata of a remapped index: the old one with the new uuid, files and
// fragment bitmap (Lance keeps dataset_version, details, index_version, created_at).
inline pb::index_metadata remapped_index_metadata(const pb::index_metadata& old, const remapped_index& r,
                                                  const roaring_bitmap& fragments) {
  if (!(r.old_uuid == old.uuid))
    throw invalid_input_error("remapped index " + r.new_uuid.to_string() + " was made from " + r.old_uuid.to_string() +
                              ", not from index '" + old.name + "' (" + old.uuid.to_string() + ")");
  pb::index_metadata out = old;
  out.uuid = r.new_uuid;
  out.files = r.files;
  set_index_fragment_bitmap(out, fragments);
  return out;
}

}  // namespace lancet::dataset
