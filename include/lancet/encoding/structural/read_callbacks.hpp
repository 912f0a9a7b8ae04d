// How the 2.1+ decoders read a file and which rows they are asked for: the callbacks a
// reader hands them (the file's bytes, one range or many at once) and row runs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "lancet/core/buffer.hpp"

namespace lancet::encoding::structural {

// Reads bytes [offset, offset + size) of the file (for blob values stored out of line).
using read_file_range = std::function<shared_bytes(std::uint64_t offset, std::uint64_t size)>;

// Row runs of one page: ascending, disjoint [begin, end) pairs, page-relative.
using row_runs = std::span<const std::pair<std::uint64_t, std::uint64_t>>;

// Reads many byte ranges of the file ({offset, size}, absolute), end to end, into out
// (which holds the sum of the sizes): the scattered rows of a take in one request
// where the source can (io::read_into).
using read_file_ranges = std::function<void(std::span<const std::pair<std::uint64_t, std::uint64_t>>, std::uint8_t* out)>;

}  // namespace lancet::encoding::structural
