// libFuzzer target: arbitrary bytes as a Lance file (any version), read through
// file_reader: footer, offset tables, schema, column metadata, then every field
// decoded whole, over a row range and by row indices. lancet's typed errors are the
// expected outcome for bad bytes; anything else (a crash, a sanitizer report, another
// exception, an allocation past -malloc_limit_mb, a hang) is a bug.
//   scripts/test builds it with clang++ -fsanitize=fuzzer,address,undefined and runs it
//   for a bounded time over a corpus seeded from tests/fixtures (see tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/io/source.hpp"
#include "fuzz_target.hpp"

namespace {

// Keeps decoded sizes proportionate to the input: the decoders size outputs from row
// counts read from the file, so a tiny file can legitimately describe a large (sparse,
// constant or all-null) column. Rows beyond this are not decoded.
constexpr std::uint64_t max_rows = 1u << 16;

void exercise(const lancet::file::file_reader<lancet::io::memory_source>& r) {
  using namespace lancet;
  const auto& s = r.arrow_schema();
  for (std::size_t f = 0; f < s.fields.size(); ++f) {
    const auto len = r.field_length(f);
    const auto n = std::min<std::uint64_t>(len, max_rows);
    file::read_request whole{{s.fields[f].name}, std::pair<std::uint64_t, std::uint64_t>{0, n}, std::nullopt};
    try {
      (void)r.read(whole);
    } catch (const lancet::error&) {
    }
    if (n > 2) {
      try {
        (void)r.read({{s.fields[f].name}, std::pair<std::uint64_t, std::uint64_t>{n / 3, n - 1}, std::nullopt});
      } catch (const lancet::error&) {
      }
      try {
        (void)r.read({{s.fields[f].name}, std::nullopt, std::vector<std::uint64_t>{0, n / 2, n / 2 + 1, n - 1}});
      } catch (const lancet::error&) {
      }
    }
  }
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_file)(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  aligned_buffer copy;
  copy.append(data, size);
  try {
    file::file_reader<io::memory_source> r{io::memory_source(std::move(copy), "fuzz")};
    exercise(r);
  } catch (const lancet::error&) {
  }
  return 0;
}
