// Updating rows in place of a SQL predicate, as Lance's UpdateBuilder does: the rows
// where the predicate holds are rewritten with the new values into new fragments and
// deleted from their old ones (a fragment whose every live row moves leaves the
// dataset), in one Update transaction. Indexes keep covering the old fragments only:
// the moved rows are found again through the unindexed rows until the index is
// optimised, as with Lance. Definitions in update_impl.hpp (included here in
// header-only programs; in compiled mode the library holds them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/delete.hpp"

namespace lancet::dataset {

struct update_options {
  // As write_options::max_retries; a concurrent commit that changed the rows this
  // update moves makes it run again on the new version (as Lance's retries).
  unsigned max_retries = default_max_retries;
  bool write_version_hint = true;
  // The rows `where` selects, when it can tell (else a scan): delete.hpp's row_finder.
  row_finder find_rows;
};

struct update_result {
  std::uint64_t version = 0;       // the version committed
  std::uint64_t rows_updated = 0;  // live rows the predicate matched
  unsigned retries = 0;            // runs lost to other writers before this one
};

// Sets, in the live rows where `where` is true (every row when empty), each column of
// `set` ({column, SQL expression}: expr/expression.hpp, evaluated on the row's old
// values: "x + 1", "'done'", "price * 2") and commits a new version, as LanceDB's
// update({where, valuesSql}); a version is committed even when no row matches, as
// Lance does. An expression's value is cast to its column's type when it fits (an
// integer constant into a smaller integer column, integers into floats). Errors
// (nothing committed): an unknown column or one set twice (invalid_input_error), a
// value that does not fit its column (invalid_input_error naming the column and the
// value), the predicate's or an expression's (expr::invalid_filter with the position).
// With stable row ids the moved rows keep their ids and creation versions, and an
// index on columns the update did not set keeps answering for them (as Lance 12).
LANCET_INLINE update_result update(const std::string& root, const std::string& where,
                                   const std::vector<std::pair<std::string, std::string>>& set,
                                   const update_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/update_impl.hpp"
#endif
