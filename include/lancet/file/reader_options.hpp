// What a file_reader is asked for and how it reads (file/reader.hpp): plain settings,
// apart so that headers naming them (dataset scans and takes) need not parse the reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lancet::file {

// What to read: a projection (top-level field names; all when empty) and either a
// row range, a sorted list of row indices, or everything.
struct read_request {
  std::vector<std::string> columns;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;  // [begin, end)
  std::optional<std::vector<std::uint64_t>> indices;             // ascending
};

// Reader settings.
struct reader_options {
  // Lance's FileReaderOptions::read_chunk_size (8 MiB by default there): a page buffer
  // larger than this is fetched in several reads of at most this many bytes (split as
  // Lance splits: into ceil(size / chunk) near-equal pieces) and put back together, so
  // no single I/O request is larger (a 2.1+ page is not split at write time and may
  // hold hundreds of MiB). Sources that hand out zero-copy views (memory, mapped
  // files) and local files (io::file_source) are read in one piece: splitting them
  // would only add a copy.
  std::uint64_t read_chunk_size = std::uint64_t(8) << 20;
  // Keep the buffers of the page last read of each column (every file version), so that
  // reading a large page range by range (a scan in read-ahead chunks) fetches it once
  // instead of once per range. At most this many bytes stay cached per reader (other
  // columns' pages are dropped to make room; a larger page is not cached); 0: off.
  std::uint64_t page_cache_bytes = std::uint64_t(1) << 30;

  bool operator==(const reader_options&) const = default;
};

}  // namespace lancet::file
