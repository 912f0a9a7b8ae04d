// The definitions of index/scalar/scalar_index.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/scalar/bitmap_files.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/row_id_tree_map.hpp"
#include "lancet/index/scalar/scalar_index.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::index {

namespace detail {

// The IndexMetadata of a scalar index over every fragment of `m`.
inline pb::index_metadata scalar_index_metadata(const pb::manifest& m, const std::string& column,
                                                const std::string& name, const lancet::uuid& uuid,
                                                scalar_index_kind kind, std::vector<pb::index_file> files) {
  auto out = new_index_metadata(m, column, name, uuid, std::nullopt, std::move(files));
  out.index_details = pb::any{std::string(scalar_details_type_url(kind)), {}};
  out.index_version = scalar_index_version(kind);
  return out;
}

inline std::vector<std::string> serialized_groups(const value_groups& g) {
  std::vector<std::string> out;
  out.reserve(g.ids.size());
  for (const auto& ids : g.ids) out.push_back(serialize_row_ids(ids));
  return out;
}

inline bool label_list_indexable(const arrow::data_type& t) {
  return (t.id == arrow::type_id::list || t.id == arrow::type_id::large_list) && t.children.size() == 1 &&
         bitmap_indexable(*t.children[0].type);
}

inline const char* scalar_kind_name(scalar_index_kind k) {
  switch (k) {
    case scalar_index_kind::btree: return "BTREE";
    case scalar_index_kind::bitmap: return "BITMAP";
    case scalar_index_kind::label_list: return "LABEL_LIST";
  }
  return "?";
}

// The BTREE files of a column's values and row ids (`b`: the column, then the ids).
inline scalar_index_files write_btree_of(const arrow::record_batch& b, const arrow::field& field, const std::string& dir,
                                         file::format_version v, std::uint64_t batch_size) {
  const auto order = btree_sort_order(*b.columns.at(0));
  const auto values = arrow::take_rows(b.columns[0], order, field.type);
  std::vector<std::uint64_t> ids(order.size());
  const auto* row_ids = b.columns.at(1)->values<std::uint64_t>();
  for (std::size_t i = 0; i < order.size(); ++i) ids[i] = row_ids[order[i]];
  scalar_index_files out;
  out.files = write_btree_files(dir, v, values, ids, batch_size);
  out.rows = ids.size();
  out.pages = (ids.size() + batch_size - 1) / batch_size;
  return out;
}

inline scalar_index_files write_bitmap_of(const arrow::record_batch& b, const std::string& dir, file::format_version v) {
  const auto* ids = b.columns.at(1)->values<std::uint64_t>();
  const auto groups = group_by_value(b.columns.at(0), std::span<const std::uint64_t>(ids, std::size_t(b.num_rows())));
  scalar_index_files out;
  out.files = write_bitmap_file(dir, v, groups.keys, serialized_groups(groups), std::nullopt);
  out.rows = std::uint64_t(b.num_rows());
  out.pages = groups.ids.size();
  return out;
}

// A LABEL_LIST: one (item, row id) per list item; NULL lists apart, empty lists nowhere.
inline scalar_index_files write_label_list_of(const arrow::record_batch& b, const arrow::field& field,
                                              const std::string& dir, file::format_version v) {
  const auto& lists = *b.columns.at(0);
  const auto* row_ids = b.columns.at(1)->values<std::uint64_t>();
  std::vector<std::int64_t> items;
  std::vector<std::uint64_t> item_ids, null_lists;
  for (std::int64_t r = 0; r < lists.length; ++r) {
    if (lists.is_null(r)) {
      null_lists.push_back(row_ids[r]);
      continue;
    }
    for (auto i = lists.value_offset(r), e = lists.value_offset(r + 1); i < e; ++i) {
      items.push_back(i);
      item_ids.push_back(row_ids[r]);
    }
  }
  const auto values = arrow::take_rows(lists.children.at(0), items, field.type->children.at(0).type);
  const auto groups = group_by_value(values, item_ids);
  std::sort(null_lists.begin(), null_lists.end());
  scalar_index_files out;
  out.files = write_bitmap_file(dir, v, groups.keys, serialized_groups(groups), serialize_row_ids(null_lists));
  out.rows = std::uint64_t(b.num_rows());
  out.pages = groups.ids.size();
  return out;
}

// The field of `column` when a `kind` index can be built on it (else the error).
inline const arrow::field& indexable_field(const dataset::dataset& d, const std::string& column, scalar_index_kind kind,
                                           std::uint64_t batch_size) {
  const arrow::field* field = nullptr;
  for (const auto& f : d.schema().fields)
    if (f.name == column) field = &f;
  const std::string kind_name = scalar_kind_name(kind);
  if (!field)
    throw invalid_input_error("dataset '" + d.path() + "' has no column '" + column + "' to build a " + kind_name +
                              " index on");
  const auto& t = *field->type;
  const bool ok = kind == scalar_index_kind::btree    ? btree_indexable(t)
                  : kind == scalar_index_kind::bitmap ? bitmap_indexable(t)
                                                      : label_list_indexable(t);
  if (!ok)
    throw unsupported_error("a " + kind_name + " index cannot be built on column '" + column + "' of type " +
                            arrow::to_string(t));
  if (kind == scalar_index_kind::btree && batch_size == 0)
    throw invalid_input_error("BTREE index on '" + column + "': batch_size must be positive");
  return *field;
}

LANCET_INLINE scalar_index_files write_scalar_index_files(const dataset::dataset& d, const std::string& column,
                                                          scalar_index_kind kind, std::uint64_t batch_size,
                                                          const std::string& dir) {
  const auto* field = &indexable_field(d, column, kind, batch_size);
  dataset::scan_options so;
  so.columns = {column};
  so.with_row_id = true;
  const auto b = d.to_batch(so);
  try {
    switch (kind) {
      case scalar_index_kind::btree: return write_btree_of(b, *field, dir, d.storage_version(), batch_size);
      case scalar_index_kind::bitmap: return write_bitmap_of(b, dir, d.storage_version());
      case scalar_index_kind::label_list: return write_label_list_of(b, *field, dir, d.storage_version());
    }
  } catch (...) {
    io::remove_all_quietly(dir);
    throw;
  }
  throw internal_error("unknown scalar index kind");
}

// Builds and commits a scalar index of `kind` over `o.column` of the newest version.
inline scalar_index_result build_scalar_index(const std::string& root, const scalar_index_options& o,
                                              scalar_index_kind kind) {
  const auto snap = dataset::load_latest(root);
  if (!snap) throw not_found_error("no dataset at '" + root + "'");
  const dataset::dataset d(*snap);
  (void)indexable_field(d, o.column, kind, o.batch_size);
  const std::string name = o.name.empty() ? o.column + "_idx" : o.name;
  if (!o.replace)
    for (const auto& im : d.indices())
      if (im.name == name)
        throw invalid_input_error("dataset '" + root + "' already has an index named '" + name + "'");
  const auto uuid = lancet::uuid::generate_v4();
  const auto written = write_scalar_index_files(d, o.column, kind, o.batch_size, index_directory(root, uuid));
  auto meta = scalar_index_metadata(snap->manifest(), o.column, name, uuid, kind, written.files);
  commit_index_options co;
  co.replace = o.replace;
  const auto committed = commit_index(root, *snap, std::move(meta), co);
  scalar_index_result r;
  r.version = committed.version();
  r.uuid = uuid;
  r.name = name;
  r.rows = written.rows;
  r.pages = written.pages;
  return r;
}

}  // namespace detail

LANCET_INLINE scalar_index_result build_btree_index(const std::string& root, const scalar_index_options& o) {
  return detail::build_scalar_index(root, o, detail::scalar_index_kind::btree);
}

LANCET_INLINE scalar_index_result build_bitmap_index(const std::string& root, const scalar_index_options& o) {
  return detail::build_scalar_index(root, o, detail::scalar_index_kind::bitmap);
}

LANCET_INLINE scalar_index_result build_label_list_index(const std::string& root, const scalar_index_options& o) {
  return detail::build_scalar_index(root, o, detail::scalar_index_kind::label_list);
}

}  // namespace lancet::index
