// A fragment's stable row ids and per-row versions (datasets with stable row ids):
// the row-id sequence, and the created-at / last-updated-at version sequences, encoded
// as Lance stores them and completed at commit as Lance 12 completes them.
//
// A fragment that rewritten rows moved into (update, merge insert) arrives at the
// commit with the ids and creation versions of those rows, which come first in it; its
// other rows (a merge insert's inserted ones) are new: they take ids from the
// manifest's next_row_id and the new version as their creation version. Every row of
// such a fragment was last updated at the new version.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset::detail {

// A u64 sequence as one segment: a range when contiguous, else a sorted or plain array.
inline pb::u64_segment segment_of(std::span<const std::uint64_t> v) {
  if (v.empty()) return pb::u64_segment::make_range(0, 0);
  bool contiguous = true, sorted = true;
  for (std::size_t i = 1; i < v.size(); ++i) {
    contiguous &= v[i] == v[i - 1] + 1;
    sorted &= v[i] > v[i - 1];
  }
  if (contiguous) return pb::u64_segment::make_range(v.front(), v.back() + 1);
  const std::vector<std::uint64_t> values(v.begin(), v.end());
  if (sorted) return pb::u64_segment{pb::u64_sorted_array{pb::encoded_u64_array::from_values(values)}};
  return pb::u64_segment{pb::u64_array{pb::encoded_u64_array::from_values(values)}};
}

inline pb::row_id_sequence row_id_sequence_of(std::span<const std::uint64_t> ids) {
  pb::row_id_sequence s;
  if (!ids.empty()) s.segments.push_back(segment_of(ids));
  return s;
}

// Per-row versions as runs of equal versions.
inline pb::row_dataset_version_sequence version_sequence(std::span<const std::uint64_t> versions) {
  pb::row_dataset_version_sequence s;
  std::size_t i = 0;
  while (i < versions.size()) {
    std::size_t j = i + 1;
    while (j < versions.size() && versions[j] == versions[i]) ++j;
    s.runs.push_back({pb::u64_segment::make_range(i, j), versions[i]});
    i = j;
  }
  return s;
}

// The version of each of `rows` rows from an encoded version sequence (`dflt` for rows
// past its runs).
inline std::vector<std::uint64_t> decode_row_versions(const std::string& bytes, std::uint64_t rows, std::uint64_t dflt,
                                                      const std::string& what) {
  auto out = pb::decode<pb::row_dataset_version_sequence>(bytes).versions();
  if (out.size() > rows)
    throw corrupt_error(what + ": a version sequence of " + std::to_string(out.size()) + " rows for " +
                        std::to_string(rows) + " rows");
  out.resize(std::size_t(rows), dflt);
  return out;
}

// The row ids and created-at versions that rows moved into a new fragment carry (the
// first ones of it), as the writer hands the fragment to the commit.
inline void set_moved_rows(pb::data_fragment& f, std::span<const std::uint64_t> ids,
                           std::span<const std::uint64_t> created) {
  f.row_id_sequence = pb::encode(row_id_sequence_of(ids));
  f.created_at_version_sequence = pb::encode(version_sequence(created));
}

// Completes a new fragment's sequences at commit: rows past the ids it carries get ids
// from next_row_id and `version` as their creation version; every row was last updated
// at `version`.
inline void complete_row_sequences(pb::data_fragment& f, std::uint64_t& next_row_id, std::uint64_t version) {
  const std::string what = "new fragment " + std::to_string(f.id);
  if (std::holds_alternative<pb::external_file>(f.row_id_sequence) ||
      std::holds_alternative<pb::external_file>(f.created_at_version_sequence))
    throw unsupported_error(what + ": row-id or version sequences in an external file cannot be completed");
  std::vector<std::uint64_t> ids;
  if (const auto* s = std::get_if<std::string>(&f.row_id_sequence)) ids = pb::decode<pb::row_id_sequence>(*s).values();
  const std::uint64_t rows = f.physical_rows;
  if (ids.size() > rows)
    throw corrupt_error(what + " carries " + std::to_string(ids.size()) + " row ids for " + std::to_string(rows) +
                        " rows");
  const auto carried = ids.size();
  std::vector<std::uint64_t> created;
  if (const auto* s = std::get_if<std::string>(&f.created_at_version_sequence))
    created = decode_row_versions(*s, carried, version, what);
  created.resize(std::size_t(rows), version);
  if (carried == 0) {
    f.row_id_sequence = pb::encode(pb::row_id_sequence::make_range(next_row_id, rows));
  } else {
    for (std::uint64_t i = carried; i < rows; ++i) ids.push_back(next_row_id + (i - carried));
    f.row_id_sequence = pb::encode(row_id_sequence_of(ids));
  }
  next_row_id += rows - carried;
  f.created_at_version_sequence = pb::encode(version_sequence(created));
  f.last_updated_at_version_sequence = pb::encode(pb::row_dataset_version_sequence::uniform(rows, version));
}

}  // namespace lancet::dataset::detail
