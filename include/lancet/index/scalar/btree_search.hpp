// Answering a filter from a BTREE: the pages the lookup says may hold a matching value
// (expr::filter::page_filter over each page's first and last value), read and filtered
// exactly. Any filter over the indexed column alone works; how much it saves depends
// on how much of it the page test understands (comparisons, BETWEEN, IN, IS NULL).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/index/scalar/btree_files.hpp"

namespace lancet::index {

struct btree_answer {
  std::vector<std::uint64_t> row_ids;  // in BTREE order (by value)
  std::size_t pages_read = 0;
};

// The row ids of the BTREE whose value `f` keeps (f reads one column: the
// indexed one, whatever its name). nullopt, with no page read, when the pages the
// lookup picks hold more than `max_rows` rows (the caller would rather scan).
inline std::optional<btree_answer> btree_rows_where(const btree_lookup& lookup, const expr::filter& f,
                                                    std::uint64_t max_rows) {
  if (f.columns().size() != 1)
    throw invalid_input_error("a BTREE answers filters over one column; '" + f.text() + "' reads " +
                              std::to_string(f.columns().size()));
  btree_answer out;
  if (lookup.pages() == 0) return out;
  const auto pages = f.page_filter();
  const std::vector<arrow::array_ptr> ends{lookup.min, lookup.max};
  const auto wanted = pages.evaluate(ends);
  std::uint64_t rows = 0;
  for (std::size_t p = 0; p < wanted.size(); ++p)
    if (wanted[p]) rows += std::min(lookup.batch_size, lookup.rows - std::uint64_t(p) * lookup.batch_size);
  if (rows > max_rows) return std::nullopt;
  for (std::size_t p = 0; p < wanted.size();) {
    if (!wanted[p]) {
      ++p;
      continue;
    }
    std::size_t q = p;
    while (q + 1 < wanted.size() && wanted[q + 1]) ++q;
    const auto b = read_btree_pages(lookup, p, q);
    out.pages_read += q - p + 1;
    const auto keep = f.evaluate(std::vector<arrow::array_ptr>{b.columns.at(0)});
    const auto* ids = b.columns.at(1)->values<std::uint64_t>();
    for (std::size_t r = 0; r < keep.size(); ++r)
      if (keep[r]) out.row_ids.push_back(ids[r]);
    p = q + 1;
  }
  return out;
}

inline btree_answer btree_rows_where(const btree_lookup& lookup, const expr::filter& f) {
  return *btree_rows_where(lookup, f, std::numeric_limits<std::uint64_t>::max());
}

}  // namespace lancet::index
