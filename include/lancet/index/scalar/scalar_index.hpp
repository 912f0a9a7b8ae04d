// Scalar indexes (Lance 12's, as LanceDB 0.39 builds them with Index.btree(),
// Index.bitmap() and Index.labelList()): building one over a column.
//
//   index::scalar_index_options o;
//   o.column = "price";
//   const auto r = index::build_btree_index(root, o);   // a new version with "price_idx"
//
// The index holds every live row of the version it is built from: a BTREE sorted by
// value (btree_files.hpp), a BITMAP the rows of each distinct value, a LABEL_LIST the
// rows of each distinct list item and the rows whose list is NULL (bitmap_files.hpp).
// It is committed as Lance's CreateIndex with IndexMetadata index_details =
// Any(/lance.table.{BTree,Bitmap,LabelList}IndexDetails), index_version 0, 0 and 1, and
// replaces an index of the same name, as LanceDB's createIndex does by default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/uuid.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/scalar/bitmap_files.hpp"
#include "lancet/index/scalar/bitmap_search.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/btree_search.hpp"
#include "lancet/pb/table.hpp"

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
  std::uint64_t pages = 0;  // a BTREE's pages; a BITMAP's or LABEL_LIST's distinct keys
};

namespace detail {

enum class scalar_index_kind { btree, bitmap, label_list };

// The kind of a scalar index entry (nullopt: another index).
inline std::optional<scalar_index_kind> scalar_kind(const pb::index_metadata& im) {
  if (!im.index_details) return std::nullopt;
  const auto& url = im.index_details->type_url;
  if (url == btree_details_type_url) return scalar_index_kind::btree;
  if (url == bitmap_details_type_url) return scalar_index_kind::bitmap;
  if (url == label_list_details_type_url) return scalar_index_kind::label_list;
  return std::nullopt;
}

inline std::string_view scalar_details_type_url(scalar_index_kind k) {
  return k == scalar_index_kind::btree    ? btree_details_type_url
         : k == scalar_index_kind::bitmap ? bitmap_details_type_url
                                          : label_list_details_type_url;
}

// IndexMetadata.index_version as Lance 12 writes it.
inline std::uint32_t scalar_index_version(scalar_index_kind k) { return k == scalar_index_kind::label_list ? 1 : 0; }

// What writing a scalar index's files produced.
struct scalar_index_files {
  std::vector<pb::index_file> files;
  std::uint64_t rows = 0, pages = 0;  // rows indexed; BTREE pages or distinct keys
};

// Writes the files of a `kind` index over the live rows of `d`'s `column` into `dir`
// (batch_size: a BTREE's rows per page). Errors as build_btree_index's; `dir` is
// removed when writing fails.
LANCET_INLINE scalar_index_files write_scalar_index_files(const dataset::dataset& d, const std::string& column,
                                                          scalar_index_kind kind, std::uint64_t batch_size,
                                                          const std::string& dir);

}  // namespace detail

// Builds a BTREE over `o.column` of the newest version of the dataset at `root` and
// commits it. Errors: no such column, or one of a type a BTREE cannot order (lists,
// structs, vectors: unsupported_error naming it), an index of that name when
// !o.replace (invalid_input_error).
LANCET_INLINE scalar_index_result build_btree_index(const std::string& root, const scalar_index_options& o);

// A BITMAP over `o.column` (o.batch_size unused). Errors as build_btree_index's; floats
// are refused as Lance refuses them.
LANCET_INLINE scalar_index_result build_bitmap_index(const std::string& root, const scalar_index_options& o);

// A LABEL_LIST over the list column `o.column` (list or large_list of a type a BITMAP
// indexes; o.batch_size unused). Errors as build_btree_index's.
LANCET_INLINE scalar_index_result build_label_list_index(const std::string& root, const scalar_index_options& o);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/scalar/scalar_index_impl.hpp"
#endif
