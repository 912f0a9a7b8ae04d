// Row id lists that checks compare with: the ids of a range of rows.
#pragma once

#include <cstdint>
#include <vector>

namespace lancet::testing {

// from, from + 1, ..., to - 1.
inline std::vector<std::int64_t> iota_ids(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (auto i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace lancet::testing
