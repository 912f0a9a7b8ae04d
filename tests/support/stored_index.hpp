// The IndexMetadata an index has in the latest version of a dataset, for tests that
// call the format-level functions taking it (remap_index_files, ...).
#pragma once

#include <string>

#include <lancet/core/error.hpp>
#include <lancet/core/uuid.hpp>
#include <lancet/dataset/snapshot.hpp>

namespace lancet::testing {

inline pb::index_metadata stored_index(const std::string& root, const lancet::uuid& id) {
  const auto s = dataset::require_latest(root);
  for (const auto& im : s.file.indices)
    if (im.uuid == id) return im;
  throw invalid_input_error("no index " + id.to_string() + " in the latest version of '" + root + "'");
}

}  // namespace lancet::testing
