// One version of a dataset as read from its manifest, and how a version is found:
// the newest, a given one, or not-found naming the path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "lancet/core/error.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/sink_factory.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

// One version of a dataset as read from disk.
struct snapshot {
  std::string root;
  version_entry entry;
  manifest_file file;

  std::uint64_t version() const noexcept { return file.manifest.version; }
  const pb::manifest& manifest() const noexcept { return file.manifest; }
};

namespace detail {

inline snapshot load(const std::string& root, const version_entry& e, const source_factory& sources) {
  snapshot s{root, e, read_manifest_file_at(e.path, sources, e.size)};
  if (s.file.manifest.version != e.version)
    throw corrupt_error("'" + e.path + "' is named for version " + std::to_string(e.version) + " but holds version " +
                        std::to_string(s.file.manifest.version));
  return s;
}

}  // namespace detail

// The newest version of the dataset at `root`, or nullopt when it has none. The manifest
// is read through `sources`; versions are found by listing _versions/ through
// io::storage_for(root).
inline std::optional<snapshot> load_latest(const std::string& root, const source_factory& sources = {}) {
  auto e = latest_version(root);
  if (!e) return std::nullopt;
  return detail::load(root, *e, sources);
}

// The newest version of the dataset at `root`; not_found_error when there is none.
inline snapshot require_latest(const std::string& root, const source_factory& sources = {}) {
  auto s = load_latest(root, sources);
  if (!s) throw_no_dataset(root);
  return std::move(*s);
}

// A given version; invalid_input_error naming the versions that exist when it does not
// (not_found_error when the path holds no dataset).
inline snapshot load_version(const std::string& root, std::uint64_t version, const source_factory& sources = {}) {
  // Asked for by name (a request per naming scheme), not found in a listing of every
  // version; the listing only words the error.
  const auto st = io::storage_for(root);
  for (const auto scheme : {naming_scheme::v2, naming_scheme::v1}) {
    const auto path = manifest_path(root, scheme, version);
    if (const auto size = st.size(path)) return detail::load(root, version_entry{version, scheme, path, *size}, sources);
  }
  auto all = list_versions(root);
  for (const auto& e : all)
    if (e.version == version) return detail::load(root, e, sources);
  std::string have;
  for (const auto& e : all) have += (have.empty() ? "" : ", ") + std::to_string(e.version);
  if (all.empty()) throw_no_dataset(root);
  throw invalid_input_error("dataset '" + root + "' has no version " + std::to_string(version) + " (it has " + have + ")");
}

}  // namespace lancet::dataset
