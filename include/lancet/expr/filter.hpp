// A SQL filter compiled against a schema, evaluated on column batches: what scans,
// vector-search prefilters and postfilters, and deletes by predicate use.
//
//   auto f = expr::filter::compile("price * 2 > 10 AND category IN ('a', 'b')", schema);
//   f.columns();                          // {"price", "category"}: the columns it reads
//   auto keep = f.evaluate(arrays);       // arrays of f.columns(), in that order: 1 per passing row
//   auto rows = f.apply(batch);           // the batch's rows where the filter is true
//
// The grammar (expr/parse.hpp) is the WHERE clause LanceDB users write; typing follows
// Lance 12 (expr/bind.hpp); evaluation is vectorised in blocks (expr/evaluate.hpp) with
// SQL's three-valued logic: a row passes when the filter is true, not false or NULL.
// Errors: expr::invalid_filter / expr::unsupported_filter with the position and token.
//
// Declared here; defined in filter_impl.hpp (included here in header-only programs; in
// compiled mode the library holds the definitions).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/expr/error.hpp"

namespace lancet::expr {

struct bound_filter;  // bind.hpp

class filter {
 public:
  // Parses `sql` and types it against `schema` (invalid_filter / unsupported_filter).
  LANCET_INLINE static filter compile(std::string_view sql, const arrow::schema& schema);

  // The text it was compiled from.
  const std::string& text() const noexcept { return text_; }
  // The top-level columns it reads, in the order evaluate() takes their arrays.
  LANCET_INLINE const std::vector<std::string>& columns() const noexcept;

  // mask[r] = 1 for the rows [begin, begin + n) of `inputs` (arrays of columns(), in
  // that order) where the filter is true, 0 elsewhere. invalid_filter for a row the
  // filter cannot evaluate (an integer division by zero, an overflow).
  LANCET_INLINE void evaluate(std::span<const arrow::array_ptr> inputs, std::int64_t begin, std::size_t n,
                              std::uint8_t* mask) const;
  // Every row of `inputs`.
  LANCET_INLINE std::vector<std::uint8_t> evaluate(std::span<const arrow::array_ptr> inputs) const;

  // The rows of `batch` where the filter is true (its columns are found by name).
  LANCET_INLINE arrow::record_batch apply(const arrow::record_batch& batch) const;

  // For indexes. The conjuncts of its top-level AND (itself when it is no AND) that
  // read exactly one top-level column (no struct member), those of one column ANDed
  // into one filter over that column alone: a row the filter keeps is kept by each.
  LANCET_INLINE std::vector<std::pair<std::string, filter>> column_conjuncts() const;
  // Whether every conjunct of its top-level AND reads one top-level column (so the
  // filter is the AND of column_conjuncts()).
  LANCET_INLINE bool covers_only_conjuncts() const;
  // For a filter over one column: a filter over a page of that column's values sorted
  // NULLs first, given as its first and last value (columns "min" and "max" of the
  // column's type; a NULL first value: the page holds NULLs; a NULL last value: only
  // NULLs). True for every page that may hold a row this filter keeps (comparisons
  // with constants, BETWEEN, IN of constants, IS [NOT] NULL, AND / OR of those; any
  // other part may hold anywhere).
  LANCET_INLINE filter page_filter() const;
  // For a filter that is one list membership test over one list column
  // (array_has_any / array_has_all / array_has): filters over the list's item values
  // (one column of the item type). A row's list is kept when an item of it is kept by
  // items[0] (any) or, `every`, when for each filter of `items` an item is kept.
  struct list_membership {
    bool every = false;
    std::vector<filter> items;
  };
  LANCET_INLINE std::optional<list_membership> list_test() const;

 private:
  std::string text_;
  std::shared_ptr<const bound_filter> bound_;
};

// The rows of a batch whose mask byte is 1, every column gathered once.
LANCET_INLINE arrow::record_batch select_rows(const arrow::record_batch& batch, std::span<const std::uint8_t> mask);

}  // namespace lancet::expr

#if LANCET_HEADER_ONLY
#include "lancet/expr/filter_impl.hpp"
#endif
