// libFuzzer target: arbitrary bytes as a deletion file. Byte 0 picks the form (even:
// the Arrow IPC file of `row_id: uint32` Lance writes for few deletions, odd: the
// 32-bit portable roaring bitmap `.bin`); the rest is the file. Also read as a
// 64-bit roaring treemap (the form of row id sets). A bitmap that decodes must
// serialize back to bytes that decode to the same values. lancet's typed errors are
// the expected outcome for bad bytes; anything else is a bug. The corpus is seeded
// from LanceDB's deletion files in tests/fixtures (tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "lancet/core/error.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/roaring.hpp"
#include "fuzz_target.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_deletion: %s\n", what);
    __builtin_trap();
  }
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_deletion)(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  if (size < 1) return 0;
  const bytes_view bytes(data + 1, size - 1);
  const auto kind = data[0] & 1 ? pb::deletion_file::type::bitmap : pb::deletion_file::type::arrow_array;
  try {
    auto dv = dataset::decode_deletion_file(kind, bytes, "fuzz");
    const auto& rows = dv.offsets();
    for (std::size_t i = 1; i < rows.size(); ++i) check(rows[i - 1] < rows[i], "offsets not sorted and unique");
    const std::string ser = dv.to_bitmap().serialize();
    check(dataset::roaring_bitmap::deserialize(ser).to_vector() == rows, "bitmap round trip differs");
    if (!rows.empty()) {
      check(dv.contains(rows.back()), "contains() misses a deleted row");
      check(dv.count_in(0, std::uint64_t(rows.back()) + 1) == rows.size(), "count_in() disagrees");
    }
  } catch (const lancet::error&) {
  }
  try {
    std::size_t used = 0;
    auto tm = dataset::roaring_treemap::deserialize(bytes, &used);
    check(used <= bytes.size(), "treemap consumed more than it was given");
    (void)tm.serialize();
  } catch (const lancet::error&) {
  }
  return 0;
}
