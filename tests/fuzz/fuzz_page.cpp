// libFuzzer target for the 2.1/2.2 page encoders and decoders, structure-aware:
//   bytes 0-7   seed of a random field type and array (tests/support/random_data.hpp),
//   byte 8      file version 2.1 or 2.2 (low bit), byte 9: rows (1..256),
//   the rest    edits, 4 bytes each: [target][offset lo][offset hi][value], target 0
//               the page's encoding (serialized Any), k > 0 buffer k - 1; value is
//               xor-ed in at offset modulo the target's size.
// The field is encoded with lancet's default strategy, edited, and decoded whole and in
// sub-ranges. Without edits the decoded array must equal the input (a failed round trip
// traps); with edits, lancet's typed errors are the only acceptable failure.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "lancet/arrow/compare.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "../support/mem_columns.hpp"
#include "../support/random_data.hpp"
#include "fuzz_target.hpp"

namespace {

using namespace lancet;
namespace v21 = lancet::encoding::structural;

using testing::mem_columns;

}  // namespace

LANCET_FUZZ_TARGET(fuzz_page)(const std::uint8_t* data, std::size_t size) {
  if (size < 10) return 0;
  std::uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed = seed << 8 | data[i];
  const bool v22 = data[8] & 1;
  const std::int64_t rows = 1 + data[9];
  testing::random_data rd(seed);
  const auto type = rd.random_type();
  const auto array = rd.random_array(type, rows);
  const arrow::field f{"f", type, true, {}};
  mem_columns m;
  try {
    m = v22 ? testing::encode_field(f, {array}, v21::default_strategy<2>{}) : testing::encode_field(f, {array}, v21::default_strategy<1>{});
  } catch (const lancet::unsupported_error&) {
    return 0;  // a type the 2.1+ writer refuses, with a typed error
  }
  const bool edited = size >= 14;
  for (std::size_t at = 10; at + 4 <= size; at += 4) {
    const unsigned target = data[at];
    const std::size_t off = std::size_t(data[at + 1]) | std::size_t(data[at + 2]) << 8;
    const std::uint8_t x = data[at + 3];
    // Column 0, page 0 (most fields have one column and one page).
    if (m.meta.empty() || m.meta[0].pages.empty()) break;
    auto& pg = m.meta[0].pages[0];
    auto& bufs = m.buffers[0][0];
    if (target % (bufs.size() + 1) == 0) {
      auto any = pg.encoding->direct_any();
      if (!any.value.empty()) any.value[off % any.value.size()] ^= char(x);
      pg.encoding = pb::file2::encoding::direct_of(any);
    } else {
      auto& b = bufs[target % (bufs.size() + 1) - 1];
      if (b.size() == 0) continue;
      aligned_buffer copy;
      copy.append(b.view());
      copy.data()[off % copy.size()] ^= x;
      b = shared_bytes(std::move(copy));
    }
  }
  const auto n = std::uint64_t(rows);
  const std::pair<std::uint64_t, std::uint64_t> ranges[] = {{0, n}, {n / 3, n / 2 + 1}, {n - 1, n}};
  for (auto [b, e] : ranges) {
    if (b > e) continue;
    try {
      auto got = m.read(f, b, e);
      if (!edited) {
        const auto want = arrow::slice(array, std::int64_t(b), std::int64_t(e - b));
        if (auto d = arrow::first_difference(want, got)) {
          std::fprintf(stderr, "round trip differs for %s rows [%llu, %llu): %s\n", arrow::to_string(*type).c_str(),
                       (unsigned long long)b, (unsigned long long)e, d->c_str());
          __builtin_trap();
        }
      }
    } catch (const lancet::error& err) {
      if (!edited) {
        std::fprintf(stderr, "unedited %s page failed to decode: %s\n", arrow::to_string(*type).c_str(), err.what());
        __builtin_trap();
      }
    }
  }
  return 0;
}
