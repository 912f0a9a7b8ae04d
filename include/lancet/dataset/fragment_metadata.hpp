// One fragment as a distributed write hands it around (Lance's FragmentMetadata):
// what write_fragments returns, commit takes and fragment_json.hpp writes as JSON.
// Its stored form (the manifest's DataFragment message) stays inside the dataset module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lancet/pb/table/fragment.hpp"

namespace lancet::dataset {

class fragment_metadata;

namespace detail {
// The stored form of a fragment_metadata, for the dataset module's own code.
struct fragment_access {
  static inline const pb::data_fragment& stored(const fragment_metadata& f) noexcept;
  static inline pb::data_fragment& stored(fragment_metadata& f) noexcept;
  static inline fragment_metadata make(pb::data_fragment f);
};
}  // namespace detail

class fragment_metadata {
 public:
  fragment_metadata() = default;

  // 0 until the fragment is committed (commit assigns the ids).
  std::uint64_t id() const noexcept { return f_.id; }
  // Rows written, deleted ones included.
  std::uint64_t physical_rows() const noexcept { return f_.physical_rows; }
  // Rows its deletion file marks (0 without one).
  std::uint64_t deleted_rows() const noexcept { return f_.deletion_file ? f_.deletion_file->num_deleted_rows : 0; }
  // Its data files, relative to the dataset's data/ directory (one per column group).
  std::vector<std::string> data_files() const {
    std::vector<std::string> out;
    out.reserve(f_.files.size());
    for (const auto& d : f_.files) out.push_back(d.path);
    return out;
  }

  friend bool operator==(const fragment_metadata&, const fragment_metadata&) = default;

 private:
  friend struct detail::fragment_access;
  pb::data_fragment f_;
};

namespace detail {
inline const pb::data_fragment& fragment_access::stored(const fragment_metadata& f) noexcept { return f.f_; }
inline pb::data_fragment& fragment_access::stored(fragment_metadata& f) noexcept { return f.f_; }
inline fragment_metadata fragment_access::make(pb::data_fragment f) {
  fragment_metadata m;
  m.f_ = std::move(f);
  return m;
}

// The fragments a commit added, as the new manifest lists them: its last `added` after
// an append, all of them after an overwrite.
inline std::vector<fragment_metadata> committed_fragments(const std::vector<pb::data_fragment>& all, bool append,
                                                          std::size_t added) {
  std::vector<fragment_metadata> out;
  for (auto it = append ? all.end() - std::ptrdiff_t(added) : all.begin(); it != all.end(); ++it)
    out.push_back(fragment_access::make(*it));
  return out;
}
}  // namespace detail

}  // namespace lancet::dataset
