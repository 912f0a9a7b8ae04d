// Answering a filter from a BITMAP: the filter runs over the distinct values (the
// keys), so any filter over the indexed column alone is exact; the answer is the union
// of the kept keys' row sets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/index/scalar/bitmap_files.hpp"

namespace lancet::index {

struct bitmap_answer {
  std::vector<std::uint64_t> row_ids;  // ascending
  std::size_t bitmaps_read = 0;
};

// The row count of a fragment a bitmap stores whole (Lance 12 never does so).
using fragment_rows_fn = std::function<std::uint64_t(std::uint32_t fragment)>;

// The row ids whose value `f` keeps (f reads one column: the indexed one, whatever its
// name). nullopt when they are more than `max_rows` (the caller would rather scan).
inline std::optional<bitmap_answer> bitmap_rows_where(const bitmap_lookup& lookup, const expr::filter& f,
                                                      std::uint64_t max_rows, const fragment_rows_fn& fragment_rows) {
  if (f.columns().size() != 1)
    throw invalid_input_error("a BITMAP answers filters over one column; '" + f.text() + "' reads " +
                              std::to_string(f.columns().size()));
  bitmap_answer out;
  if (lookup.size() == 0) return out;
  const auto keep = f.evaluate(std::vector<arrow::array_ptr>{lookup.keys});
  std::vector<std::uint64_t> rows;
  for (std::size_t k = 0; k < keep.size(); ++k)
    if (keep[k]) rows.push_back(k);
  if (rows.size() > max_rows) return std::nullopt;  // a key holds a row at least: no bitmap read
  const auto sets = read_bitmaps(lookup, rows);
  out.bitmaps_read = sets.size();
  const auto rows_of = [&](std::uint32_t hi) -> std::uint64_t {
    if (!fragment_rows)
      throw unsupported_error("'" + lookup.path + "' stores fragment " + std::to_string(hi) + " whole");
    return fragment_rows(hi);
  };
  std::uint64_t total = 0;
  for (const auto& s : sets) total += s.cardinality(rows_of);
  if (total > max_rows) return std::nullopt;
  out.row_ids.reserve(std::size_t(total));
  for (const auto& s : sets) {
    const auto ids = s.ids(rows_of);
    out.row_ids.insert(out.row_ids.end(), ids.begin(), ids.end());
  }
  if (sets.size() > 1) std::sort(out.row_ids.begin(), out.row_ids.end());
  return out;
}

inline bitmap_answer bitmap_rows_where(const bitmap_lookup& lookup, const expr::filter& f,
                                       const fragment_rows_fn& fragment_rows = {}) {
  return *bitmap_rows_where(lookup, f, std::numeric_limits<std::uint64_t>::max(), fragment_rows);
}

}  // namespace lancet::index
