// One entry of an object store's listing.
#pragma once

#include <cstdint>
#include <string>

namespace lancet::io::object_store {

struct listed_object {
  std::string key;  // the whole key (bucket- / container-relative)
  std::uint64_t size = 0;
};

}  // namespace lancet::io::object_store
