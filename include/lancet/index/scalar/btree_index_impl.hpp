// The definitions of index/scalar/btree_index.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/btree_index.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::index {

namespace detail {

// The IndexMetadata of a scalar index over every fragment of `m`.
inline pb::index_metadata scalar_index_metadata(const pb::manifest& m, const std::string& column,
                                                const std::string& name, const lancet::uuid& uuid,
                                                std::string_view details_type_url, std::uint32_t index_version,
                                                std::vector<pb::index_file> files) {
  pb::index_metadata out;
  out.uuid = uuid;
  out.fields = {column_field_id(m, column)};
  out.name = name;
  out.dataset_version = m.version;
  std::vector<std::uint64_t> frags;
  for (const auto& f : m.fragments) {
    if (f.id > UINT32_MAX) throw invalid_input_error("fragment id " + std::to_string(f.id) + " exceeds 32 bits");
    frags.push_back(f.id);
  }
  dataset::set_index_fragment_bitmap(out, dataset::roaring_bitmap::from_values(frags));
  out.index_details = pb::any{std::string(details_type_url), {}};
  out.index_version = index_version;
  out.created_at = std::uint64_t(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  out.files = std::move(files);
  return out;
}

}  // namespace detail

LANCET_INLINE scalar_index_result build_btree_index(const std::string& root, const scalar_index_options& o) {
  const auto snap = dataset::load_latest(root);
  if (!snap) throw not_found_error("no dataset at '" + root + "'");
  const dataset::dataset d(*snap);
  const auto& schema = d.schema();
  const arrow::field* field = nullptr;
  for (const auto& f : schema.fields)
    if (f.name == o.column) field = &f;
  if (!field)
    throw invalid_input_error("dataset '" + root + "' has no column '" + o.column + "' to build a BTREE index on");
  if (!detail::btree_indexable(*field->type))
    throw unsupported_error("a BTREE index cannot be built on column '" + o.column + "' of type " +
                            arrow::to_string(*field->type));
  const std::string name = o.name.empty() ? o.column + "_idx" : o.name;
  if (!o.replace)
    for (const auto& im : d.indices())
      if (im.name == name)
        throw invalid_input_error("dataset '" + root + "' already has an index named '" + name + "'");
  // Every live row's value and row id, then in BTREE order.
  dataset::scan_options so;
  so.columns = {o.column};
  so.with_row_id = true;
  const auto b = d.to_batch(so);
  const auto order = btree_sort_order(*b.columns.at(0));
  const auto values = arrow::take_rows(b.columns[0], order, field->type);
  std::vector<std::uint64_t> ids(order.size());
  const auto* row_ids = b.columns.at(1)->values<std::uint64_t>();
  for (std::size_t i = 0; i < order.size(); ++i) ids[i] = row_ids[order[i]];
  const auto uuid = lancet::uuid::generate_v4();
  const auto files = write_btree_files(index_directory(root, uuid), d.storage_version(), values, ids, o.batch_size);
  auto meta = detail::scalar_index_metadata(snap->manifest(), o.column, name, uuid, detail::btree_details_type_url, 0, files);
  commit_index_options co;
  co.replace = o.replace;
  const auto committed = commit_index(root, *snap, std::move(meta), co);
  scalar_index_result r;
  r.version = committed.version();
  r.uuid = uuid;
  r.name = name;
  r.rows = ids.size();
  r.pages = (ids.size() + o.batch_size - 1) / o.batch_size;
  return r;
}

}  // namespace lancet::index
