// libFuzzer target: arbitrary bytes as a dataset manifest (_versions/*.manifest) or a
// transaction file (_transactions/*.txn). Byte 0 picks the reader (even: manifest,
// odd: transaction); the rest is the file. A manifest is read as dataset::open reads
// one (footer, message, index and transaction sections), then what the readers derive
// from it: row counts, index fragment bitmaps, deletion file paths, and an encode /
// decode round trip of what was decoded (which must give the same message back).
// lancet's typed errors are the expected outcome for bad bytes; anything else (a
// crash, a sanitizer report, another exception, a hang, an allocation past
// -malloc_limit_mb) is a bug. The corpus is seeded from LanceDB's manifests and
// transaction files in tests/fixtures (tests/fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/pb/table.hpp"
#include "fuzz_target.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_manifest: %s\n", what);
    __builtin_trap();
  }
}

void exercise_manifest(std::string_view bytes) {
  using namespace lancet;
  auto mf = dataset::read_manifest_file(bytes);
  const auto& m = mf.manifest;
  try {
    (void)dataset::manifest_row_count(m);
  } catch (const lancet::error&) {
  }
  for (const auto& idx : mf.indices) {
    try {
      (void)dataset::index_fragment_bitmap(idx).to_vector();
    } catch (const lancet::error&) {
    }
  }
  for (const auto& f : m.fragments) {
    if (!f.deletion_file) continue;
    try {
      (void)dataset::deletion_file_path("/ds", m, f.id, *f.deletion_file);
    } catch (const lancet::error&) {
    }
  }
  // What decoded re-encodes, and decodes to the same bytes again.
  const std::string once = pb::encode(m);
  const std::string twice = pb::encode(pb::decode<pb::manifest>(once));
  check(once == twice, "manifest encode/decode is not stable");
}

void exercise_transaction(std::string_view bytes) {
  using namespace lancet;
  auto t = dataset::decode_transaction_file(bytes);
  const std::string once = dataset::encode_transaction_file(t);
  const std::string twice = dataset::encode_transaction_file(dataset::decode_transaction_file(once));
  check(once == twice, "transaction encode/decode is not stable");
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_manifest)(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] & 1) exercise_transaction(bytes);
    else exercise_manifest(bytes);
  } catch (const lancet::error&) {
  }
  return 0;
}
