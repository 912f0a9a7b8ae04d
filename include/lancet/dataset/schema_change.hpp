// Changing a dataset's columns without rewriting its data, as Lance does. drop_columns
// and alter_columns (rename, nullability): one Project transaction with the new schema.
// Field ids stay, so indexes on renamed columns keep working; a dropped column's bytes
// stay in their files (compaction leaves them behind) and a data file leaves its
// fragment once it holds no column of the schema; indexes on dropped columns go.
// add_columns: one Merge transaction; new fields get ids after the largest id the
// dataset ever used; all-NULL columns write nothing (a fragment without a file holding
// a field reads it as NULL), columns from rows write one new data file per fragment
// beside the existing ones.
// Definitions in schema_change_impl.hpp (included here in header-only programs; in
// compiled mode the library holds them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <span>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"

namespace lancet::dataset {

struct schema_change_options {
  // As write_options::max_retries: rebase on what other writers committed and commit
  // the next version (another schema change first: a retryable conflict, as Lance).
  unsigned max_retries = default_max_retries;
  bool write_version_hint = true;
};

struct schema_change_result {
  std::uint64_t version = 0;  // the version committed
  unsigned retries = 0;       // commits lost to other writers before this one
};

// One column's change. `path` names a top-level column or a struct's member ("s.a").
struct column_alteration {
  std::string path;
  std::optional<std::string> rename;  // a new name (not another member's; no '.' at the top level)
  // true: NULLs allowed; false: none allowed (refused when a live row holds one).
  std::optional<bool> nullable;
  // A new type of the same kind (integers of any width and sign, floats, utf8 /
  // large_utf8, binary / large_binary; top-level columns): the column gets a new field
  // id and a new data file in every fragment (a Merge, as Lance's), its indexes go.
  arrow::type_ptr cast;
};

// Removes columns (top-level or struct members; a struct left without members goes
// too) and commits a new version. Errors (invalid_input_error, nothing committed): an
// unknown column, dropping every column.
LANCET_INLINE schema_change_result drop_columns(const std::string& root, const std::vector<std::string>& paths,
                                                const schema_change_options& o = {});

// Renames columns, changes their nullability and casts them, and commits a new version
// (a Project; a Merge when a column is cast). Errors (invalid_input_error, nothing
// committed): an unknown column, a name already taken, a top-level name with '.', a
// non-nullable column over rows holding NULL, a cast to another kind of type ("cannot
// cast") or a value the new type cannot hold (naming it), no change asked.
LANCET_INLINE schema_change_result alter_columns(const std::string& root, const std::vector<column_alteration>& changes,
                                                 const schema_change_options& o = {});

// Adds nullable columns whose every value is NULL (Lance's add_columns of all-null
// columns) and commits a new version. Errors (invalid_input_error, nothing committed):
// a name already taken, a non-nullable field.
LANCET_INLINE schema_change_result add_null_columns(const std::string& root, const std::vector<arrow::field>& fields,
                                                    const schema_change_options& o = {});

// Adds the columns of `batches` (one schema), whose rows are the dataset's live rows in
// row order (fragment by fragment, deleted rows left out), and commits a new version.
// Each fragment gets one new data file holding them, its deleted rows filled with
// placeholders. Errors (invalid_input_error, nothing committed): a name already taken,
// batches of differing schemas, more or fewer rows than the dataset has live rows.
LANCET_INLINE schema_change_result add_columns(const std::string& root, std::span<const arrow::record_batch> batches,
                                               const schema_change_options& o = {});

// Adds columns computed from the live rows by SQL expressions ({name, sql}: the filter
// grammar's arithmetic, constants and columns, expr/expression.hpp; `id * 2`,
// `price * 1.1`, `name`), as Lance's add_columns with SQL, and commits a new version.
// Errors: those of add_columns, and the expression's (expr::invalid_filter naming the
// position), nothing committed.
LANCET_INLINE schema_change_result add_columns(const std::string& root,
                                               const std::vector<std::pair<std::string, std::string>>& sql_columns,
                                               const schema_change_options& o = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/schema_change_impl.hpp"
#endif
