// libFuzzer target: arbitrary bytes as the files of an IVF vector index directory.
// Byte 0 picks the file (even: index.idx through index::read_index_file, odd:
// auxiliary.idx through index::storage_reader, whose partitions are then read and
// checked against the quantizer's code width); the rest is the file. lancet's typed
// errors are the expected outcome for bad bytes; anything else (a crash, a sanitizer
// report, another exception, a hang, an allocation past -malloc_limit_mb) is a bug.
// The corpus is seeded from LanceDB's index files in tests/fixtures (IVF_FLAT, IVF_PQ,
// IVF_SQ, IVF_RQ, HNSW_SQ; tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "lancet/core/error.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/io/source.hpp"
#include "fuzz_target.hpp"

namespace {

// Partitions read per input (each is a file read of its rows).
constexpr std::size_t max_partitions = 64;
// Rows a partition may hold to be read (a tiny file can describe a huge constant
// column; the file reader's own limits are fuzzed by fuzz_file).
constexpr std::uint64_t max_rows = 1u << 16;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_index: %s\n", what);
    __builtin_trap();
  }
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_index)(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  if (size < 1) return 0;
  aligned_buffer copy;
  copy.append(data + 1, size - 1);
  io::memory_source src(std::move(copy), "fuzz");
  try {
    if (!(data[0] & 1)) {
      auto info = index::read_index_file(std::move(src), "index.idx");
      (void)info.ivf.num_rows();
      return 0;
    }
    index::storage_reader<io::memory_source> r(std::move(src), "auxiliary.idx");
    const std::size_t w = index::code_bytes(r.quantizer());
    for (std::size_t p = 0; p < r.num_partitions() && p < max_partitions; ++p) {
      try {
        const auto [b, e] = r.ivf().row_range(p);
        if (e - b > max_rows) continue;
        auto part = r.read_partition(p);
        check(part.codes.size() == part.row_ids.size() * w, "partition codes and row ids disagree");
      } catch (const lancet::error&) {
      }
    }
  } catch (const lancet::error&) {
  }
  return 0;
}
