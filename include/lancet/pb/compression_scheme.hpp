// The general-purpose compression algorithms of Lance's encodings_v2_1.proto
// (CompressionScheme), apart from the messages, so that encoding policies can name
// them without the protobuf descriptors.
#pragma once

#include <cstdint>

namespace lancet::pb::enc21 {

enum class compression_scheme : std::int32_t {
  unspecified = 0,  // COMPRESSION_ALGORITHM_UNSPECIFIED
  lz4 = 1,          // COMPRESSION_ALGORITHM_LZ4
  zstd = 2,         // COMPRESSION_ALGORITHM_ZSTD
};

}  // namespace lancet::pb::enc21
