// Stable row ids in tests: each live row's `_rowid` by its `id` (an int64 column), and a
// fragment's per-row created-at / last-updated-at versions decoded from its manifest
// entry (inline sequences).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <lancet/dataset/dataset.hpp>
#include <lancet/pb/table.hpp>

namespace lancet::testing {

inline std::map<std::int64_t, std::uint64_t> row_id_by_id(const dataset::dataset& d) {
  const auto b = d.to_batch({.columns = {"id"}, .with_row_id = true});
  std::map<std::int64_t, std::uint64_t> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i)
    out[b.columns[0]->value<std::int64_t>(i)] = b.columns[1]->value<std::uint64_t>(i);
  return out;
}

// Row by row (empty when the sequence is absent).
inline std::vector<std::uint64_t> row_versions(const pb::data_fragment& f, bool created) {
  const auto& seq = created ? f.created_at_version_sequence : f.last_updated_at_version_sequence;
  const auto* bytes = std::get_if<std::string>(&seq);
  if (!bytes) return {};
  return pb::decode<pb::row_dataset_version_sequence>(*bytes).versions();
}

}  // namespace lancet::testing
