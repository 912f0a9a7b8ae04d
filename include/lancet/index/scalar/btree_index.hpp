// BTREE scalar indexes (Lance 12's, as LanceDB 0.39 builds them with Index.btree()):
// building one over a column and reading one back.
//
//   index::scalar_index_options o;
//   o.column = "price";
//   const auto r = index::build_btree_index(root, o);   // a new version with "price_idx"
//
// The index holds every live row of the version it is built from, sorted by value
// (btree_files.hpp). It is committed as Lance's CreateIndex with IndexMetadata
// index_details = Any(/lance.table.BTreeIndexDetails), index_version 0, and replaces an
// index of the same name, as LanceDB's createIndex does by default.
#pragma once

#include <cstdint>
#include <string>

#include "lancet/core/config.hpp"
#include "lancet/core/uuid.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/btree_search.hpp"

namespace lancet::index {

struct scalar_index_options {
  std::string column;  // a top-level column
  std::string name;    // default "{column}_idx"
  bool replace = true;  // replace an index of the same name (else: invalid_input_error)
  std::uint64_t batch_size = btree_default_batch_size;  // rows per BTREE page
};

struct scalar_index_result {
  std::uint64_t version = 0;  // the version the commit created
  lancet::uuid uuid{};
  std::string name;
  std::uint64_t rows = 0;  // rows indexed
  std::uint64_t pages = 0;
};

// Builds a BTREE over `o.column` of the newest version of the dataset at `root` and
// commits it. Errors: no such column, or one of a type a BTREE cannot order (lists,
// structs, vectors: unsupported_error naming it), an index of that name when
// !o.replace (invalid_input_error).
LANCET_INLINE scalar_index_result build_btree_index(const std::string& root, const scalar_index_options& o);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/scalar/btree_index_impl.hpp"
#endif
