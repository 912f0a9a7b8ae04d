// libFuzzer target: arbitrary bytes as the files of a scalar index. Byte 0 picks the
// form: 0 mod 3, a BTREE (bytes 1-4: the length L of page_lookup.lance, little-endian;
// then L bytes of it, the rest page_data.lance), read with index::read_btree_lookup,
// every page read (each must hold its batch of rows) and one filter answered; 1 mod 3,
// a BITMAP / LABEL_LIST's bitmap_page_lookup.lance, read with index::read_bitmap_lookup,
// every key's row set read and a filter answered over the keys; 2 mod 3, one row-id set
// (index::deserialize_row_ids), which must serialize back to the same ids. lancet's
// typed errors are the expected outcome for bad bytes; anything else is a bug. The
// corpus is seeded from LanceDB's scalar index files (tests/fuzz/corpus/fuzz_scalar_index).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/index/scalar/bitmap_search.hpp"
#include "lancet/index/scalar/btree_search.hpp"
#include "lancet/io/source.hpp"
#include "fuzz_target.hpp"

namespace {

constexpr std::size_t max_pages = 64;        // pages (BTREE) read per input
constexpr std::size_t max_keys = 256;        // row sets (BITMAP) read per input
constexpr std::uint64_t max_whole_rows = 64;  // rows of a fragment stored whole

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_scalar_index: %s\n", what);
    __builtin_trap();
  }
}

lancet::io::memory_source memory(const std::uint8_t* p, std::size_t n, const char* name) {
  lancet::aligned_buffer b;
  b.append(p, n);
  return lancet::io::memory_source(std::move(b), name);
}

// A filter over one column of `t` the index can run (IS NOT NULL reads every value).
lancet::expr::filter any_filter(const lancet::arrow::type_ptr& t) {
  lancet::arrow::schema s;
  s.fields.push_back(lancet::arrow::field{"v", t, true, {}});
  return lancet::expr::filter::compile("v IS NOT NULL", s);
}

void btree(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  if (size < 4) return;
  const std::size_t l = std::min<std::size_t>(size - 4, std::size_t(data[0]) | std::size_t(data[1]) << 8 |
                                                            std::size_t(data[2]) << 16 | std::size_t(data[3]) << 24);
  const auto lookup = index::read_btree_lookup(memory(data + 4, l, "page_lookup"), memory(data + 4 + l, size - 4 - l, "page_data"), "fuzz");
  for (std::size_t p = 0; p < lookup.pages() && p < max_pages; ++p) {
    try {
      const auto b = index::read_btree_pages(lookup, p, p);
      const auto want = std::min(lookup.batch_size, lookup.rows - std::uint64_t(p) * lookup.batch_size);
      check(std::uint64_t(b.num_rows()) == want, "a page holds other than its batch of rows");
    } catch (const lancet::error&) {
    }
  }
  if (lookup.pages() <= max_pages) (void)index::btree_rows_where(lookup, any_filter(lookup.min->type));
}

void bitmap(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  const auto lookup = index::read_bitmap_lookup(memory(data, size, "bitmap_page_lookup"), "fuzz");
  const auto rows_of = [](std::uint32_t) { return max_whole_rows; };
  if (lookup.null_lists) (void)lookup.null_lists->ids(rows_of);
  std::vector<std::uint64_t> keys;
  for (std::size_t k = 0; k < lookup.size() && k < max_keys; ++k) keys.push_back(k);
  for (const auto& s : index::read_bitmaps(lookup, keys)) (void)s.ids(rows_of);
  if (lookup.size() <= max_keys) (void)index::bitmap_rows_where(lookup, any_filter(lookup.keys->type), rows_of);
}

void row_ids(const std::uint8_t* data, std::size_t size) {
  using namespace lancet;
  const auto set = index::deserialize_row_ids(bytes_view(data, size), "fuzz");
  bool whole = false;
  for (const auto& e : set.entries) whole = whole || !e.second;
  if (whole) return;
  const auto ids = set.ids();
  check(std::is_sorted(ids.begin(), ids.end()), "row ids out of order");
  const auto again = index::serialize_row_ids(ids);
  const auto back = index::deserialize_row_ids(bytes_view(reinterpret_cast<const std::uint8_t*>(again.data()), again.size()), "again");
  check(back.ids() == ids, "row ids changed through serialize");
}

}  // namespace

LANCET_FUZZ_TARGET(fuzz_scalar_index)(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  try {
    switch (data[0] % 3) {
      case 0: btree(data + 1, size - 1); break;
      case 1: bitmap(data + 1, size - 1); break;
      default: row_ids(data + 1, size - 1); break;
    }
  } catch (const lancet::error&) {
  }
  return 0;
}
