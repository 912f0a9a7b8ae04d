// Deleting rows by row id or by a SQL predicate: Lance's delete, committed as a new
// version with a new deletion file per touched fragment (rebased on concurrent
// deletes, as Lance does).
// dataset/dataset.hpp includes this header, so that a dataset's readers find it. The
// definitions are in delete_impl.hpp (included here in header-only programs; in compiled
// mode the library defines delete_rows, and a program that passes its own sink factory
// includes delete_impl.hpp for the template).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"

namespace lancet::expr {
class filter;  // expr/filter.hpp
}  // namespace lancet::expr

namespace lancet::dataset {

class dataset;  // dataset/dataset.hpp

// Finds the live rows of a version where a filter is true (their row ids) another way
// than a scan, e.g. from scalar indexes (query::indexed_row_finder); nullopt: it cannot,
// and the filter's columns are scanned.
using row_finder = std::function<std::optional<std::vector<std::uint64_t>>(const dataset&, const expr::filter&)>;

struct delete_options {
  // As write_options::max_retries: rebase on what other writers committed (merging
  // deletions of the same fragment, as Lance does) and commit the next version.
  unsigned max_retries = default_max_retries;
  bool write_version_hint = true;
  // Recorded as the Delete operation's predicate (Lance keeps the SQL filter there).
  std::string predicate;
  // delete_where: the rows the predicate selects, when it can tell (else a scan).
  row_finder find_rows;
};

struct delete_result {
  std::uint64_t version = 0;       // the version committed (the old one when nothing was deleted)
  std::uint64_t deleted_rows = 0;  // rows newly deleted
  unsigned retries = 0;            // commits lost to other writers before this one
};

// Deletes rows by row id (addresses unless the dataset uses stable row ids) and
// commits a new version, as Lance's delete does: each touched fragment gets a new
// deletion file (bitmap kind) holding its old and new deletions; a fragment whose
// rows are all deleted leaves the dataset. Ids already deleted are ignored; ids that
// never existed are an invalid_input_error. Nothing to delete: no new version.
// (With a sink factory of your own: delete_impl.hpp.)
LANCET_INLINE delete_result delete_rows(const std::string& root, std::span<const std::uint64_t> row_ids,
                                        const delete_options& o = {});

// Deletes the rows where `predicate` (a SQL filter, expr/filter.hpp) is true, as
// Lance's delete(predicate): the predicate is evaluated on the latest version and
// recorded in the Delete transaction (o.predicate is ignored); a concurrent commit that
// preempts it makes it run again on the new version. Lance commits a version even
// when no row matches, and so does this. Errors: expr::invalid_filter /
// expr::unsupported_filter (nothing committed).
LANCET_INLINE delete_result delete_where(const std::string& root, const std::string& predicate,
                                         const delete_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/delete_impl.hpp"
#endif
