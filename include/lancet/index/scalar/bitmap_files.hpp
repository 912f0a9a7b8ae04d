// The file of a BITMAP or LABEL_LIST scalar index as Lance 12 writes it
// (docs/design/scalar_index_facts.md §3-4), `bitmap_page_lookup.lance` in
// _indices/{uuid}/ at the dataset's storage version:
//
//   keys: <value type> (nullable)   one row per distinct value (a LABEL_LIST's list
//                                   items), the NULL value a row with a NULL key
//   bitmaps: binary (nullable)      the rows holding it (row_id_tree_map.hpp)
//
// Schema metadata lance:index_stats = {"num_bitmaps":N}. A LABEL_LIST adds
// lance:label_list_nulls = "1": global buffer 1 holds the rows whose list is NULL.
// Writers sort keys NULL first; readers take them in any order (Lance's remap does not
// keep it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/index_remap.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/row_id_tree_map.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::index {

namespace detail {

// Whether a BITMAP can index a column of type `t` (a LABEL_LIST: its items): what
// LanceDB 0.39 accepts, integers, booleans and strings (it refuses floats, dates,
// timestamps).
inline bool bitmap_indexable(const arrow::data_type& t) {
  using arrow::type_id;
  constexpr type_id accepted[] = {type_id::boolean, type_id::int8,   type_id::int16,  type_id::int32, type_id::int64,
                                  type_id::uint8,   type_id::uint16, type_id::uint32, type_id::uint64, type_id::utf8};
  return std::find(std::begin(accepted), std::end(accepted), t.id) != std::end(accepted);
}

inline arrow::schema bitmap_schema(const arrow::type_ptr& key_type) {
  arrow::schema s;
  s.fields.push_back(arrow::field{"keys", key_type, true, {}});
  s.fields.push_back(arrow::field{"bitmaps", arrow::binary(), true, {}});
  return s;
}

}  // namespace detail

// Values grouped: the distinct ones (NULL first, then ascending) and, per value, the
// ascending distinct ids holding it.
struct value_groups {
  arrow::array_ptr keys;
  std::vector<std::vector<std::uint64_t>> ids;
};

// Groups `values` (one id per value; an id may hold several values, as a list's rows do).
inline value_groups group_by_value(const arrow::array_ptr& values, std::span<const std::uint64_t> ids) {
  if (std::uint64_t(values->length) != ids.size())
    throw invalid_input_error("bitmap groups: " + std::to_string(values->length) + " values but " +
                              std::to_string(ids.size()) + " row ids");
  const auto order = btree_sort_order(*values);
  value_groups out;
  std::vector<std::int64_t> firsts;
  detail::with_value_order(*values, [&](auto less) {
    const auto same = [&](std::int64_t a, std::int64_t b) {
      const bool na = values->is_null(a), nb = values->is_null(b);
      if (na || nb) return na && nb;
      return !less(a, b) && !less(b, a);
    };
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i + 1;
      while (j < order.size() && same(order[i], order[j])) ++j;
      firsts.push_back(order[i]);
      std::vector<std::uint64_t> g;
      g.reserve(j - i);
      for (std::size_t k = i; k < j; ++k) g.push_back(ids[std::size_t(order[k])]);
      std::sort(g.begin(), g.end());
      g.erase(std::unique(g.begin(), g.end()), g.end());
      out.ids.push_back(std::move(g));
      i = j;
    }
    return 0;
  });
  out.keys = arrow::take_rows(values, firsts, values->type);
  return out;
}

// Writes bitmap_page_lookup.lance into `dir`: `keys` and beside each its serialized
// rows; with `null_lists` (a LABEL_LIST), the rows whose list is NULL. Returns the file
// with its size, as IndexMetadata lists it.
inline std::vector<pb::index_file> write_bitmap_file(const std::string& dir, file::format_version version,
                                                     const arrow::array_ptr& keys, const std::vector<std::string>& bitmaps,
                                                     const std::optional<std::string>& null_lists) {
  if (std::uint64_t(keys->length) != bitmaps.size())
    throw invalid_input_error("bitmap index: " + std::to_string(keys->length) + " keys but " +
                              std::to_string(bitmaps.size()) + " bitmaps");
  const auto storage = io::storage_for(dir);
  const auto schema = detail::bitmap_schema(keys->type);
  std::vector<pb::index_file> out;
  file::with_version(version, [&]<class V>() {
    file::file_writer<V, io::any_sink> w(storage.create_sink(dir + "/" + std::string(detail::bitmap_file), {}),
                                         schema::from_arrow(schema));
    // Lance writes the NULL lists first, so the buffer sits at offset 0.
    if (null_lists)
      w.add_schema_metadata(std::string(detail::label_list_nulls_key),
                            std::to_string(w.add_global_buffer(bytes_view(
                                reinterpret_cast<const std::uint8_t*>(null_lists->data()), null_lists->size()))));
    w.add_schema_metadata(std::string(detail::bitmap_stats_key),
                          "{\"num_bitmaps\":" + std::to_string(bitmaps.size()) + "}");
    if (!bitmaps.empty())
      w.write_batch(arrow::make_batch(std::make_shared<arrow::schema>(schema),
                                      {keys, arrow::make_array<std::string>(bitmaps, arrow::binary())}));
    out.push_back({std::string(detail::bitmap_file), w.finish().file_size});
  });
  return out;
}

// A BITMAP's or LABEL_LIST's keys, read whole, and its file, open (read_bitmaps reads
// it; safe from several threads at once).
struct bitmap_lookup {
  arrow::array_ptr keys;
  std::optional<row_id_tree_map> null_lists;  // a LABEL_LIST's rows whose list is NULL
  std::shared_ptr<const file::file_reader<io::any_source>> file;
  std::string path;
  std::size_t size() const noexcept { return std::size_t(keys->length); }
};

// The file's keys and NULL lists, from a source (`path` names it in errors).
inline bitmap_lookup read_bitmap_lookup(io::any_source file, std::string path) {
  bitmap_lookup out;
  out.path = std::move(path);
  out.file = std::make_shared<const file::file_reader<io::any_source>>(std::move(file));
  const auto& r = *out.file;
  detail::expect_column(r.arrow_schema(), "keys", out.path, "a BITMAP key type",
                        [](const arrow::data_type& t) { return detail::btree_indexable(t); });
  detail::expect_column(r.arrow_schema(), "bitmaps", out.path, "binary",
                        [](const arrow::data_type& t) { return t.id == arrow::type_id::binary; });
  for (const auto& [k, v] : r.schema().metadata) {
    if (k != detail::label_list_nulls_key) continue;
    std::size_t buffer = 0;
    try {
      buffer = std::stoull(v);
    } catch (const std::exception&) {
      throw corrupt_error("'" + out.path + "': " + k + " '" + v + "' is not a buffer index");
    }
    if (buffer == 0 || buffer >= r.num_global_buffers())
      throw corrupt_error("'" + out.path + "': " + k + " names global buffer " + v + " of " +
                          std::to_string(r.num_global_buffers()));
    const auto bytes = r.global_buffer(buffer);
    out.null_lists = deserialize_row_ids(bytes.view(), "'" + out.path + "' NULL lists");
  }
  file::read_request req;
  req.columns = {"keys"};
  out.keys = r.read(req).columns.at(0);
  return out;
}

// `dir`'s bitmap_page_lookup.lance.
inline bitmap_lookup read_bitmap_lookup(const std::string& dir) {
  const std::string path = dir + "/" + std::string(detail::bitmap_file);
  return read_bitmap_lookup(io::storage_for(dir).open_source(path, std::nullopt), path);
}

// The row sets of keys `rows` (ascending key row numbers).
inline std::vector<row_id_tree_map> read_bitmaps(const bitmap_lookup& lookup, std::span<const std::uint64_t> rows) {
  std::vector<row_id_tree_map> out;
  if (rows.empty()) return out;
  file::read_request req;
  req.columns = {"bitmaps"};
  if (rows.size() == lookup.size()) {
    req.range = std::pair<std::uint64_t, std::uint64_t>(0, lookup.size());
  } else {
    req.indices = std::vector<std::uint64_t>(rows.begin(), rows.end());
  }
  const auto b = lookup.file->read(req);
  const auto& col = *b.columns.at(0);
  for (std::int64_t i = 0; i < col.length; ++i) {
    if (col.is_null(i)) {
      out.emplace_back();
      continue;
    }
    const auto s = col.string_value(i);
    out.push_back(deserialize_row_ids(bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()),
                                      "'" + lookup.path + "' bitmap of key row " + std::to_string(rows[std::size_t(i)])));
  }
  return out;
}

// Every key's row set, in key order.
inline std::vector<row_id_tree_map> read_bitmaps(const bitmap_lookup& lookup) {
  std::vector<std::uint64_t> all(lookup.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return read_bitmaps(lookup, all);
}

namespace detail {

// `ids` through a compaction's `moved` (rows it maps to nothing leave; ids it does not
// name stay), ascending.
inline std::vector<std::uint64_t> remap_ids(const row_id_tree_map& set, const dataset::row_address_map& moved,
                                            dataset::remap_stats& stats) {
  // A fragment stored whole: its rows are the ones the compaction names.
  const auto rows_of = [&](std::uint32_t hi) -> std::uint64_t {
    std::uint64_t n = 0;
    for (const auto& [id, to] : moved)
      if (std::uint32_t(id >> 32) == hi) n = std::max<std::uint64_t>(n, (id & 0xFFFFFFFFull) + 1);
    if (n == 0)
      throw unsupported_error("a bitmap stores fragment " + std::to_string(hi) +
                              " whole and the compaction does not move it; lancet cannot count its rows here");
    return n;
  };
  std::vector<std::uint64_t> out;
  for (auto id : set.ids(rows_of)) {
    ++stats.rows_before;
    if (const auto to = dataset::remapped_row(id, moved, stats)) out.push_back(*to);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  stats.rows_after += out.size();
  return out;
}

}  // namespace detail

// Rewrites the bitmap index of `old_dir` into `new_dir` after a compaction moved its
// rows (each row id through `moved`), keys kept (a key whose rows all left stays, empty,
// as in Lance), at the old file's version. Returns the new file; counts into `stats`.
inline std::vector<pb::index_file> remap_bitmap_files(const std::string& old_dir, const std::string& new_dir,
                                                      const dataset::row_address_map& moved, dataset::remap_stats& stats) {
  const auto lookup = read_bitmap_lookup(old_dir);
  const auto sets = read_bitmaps(lookup);
  std::vector<std::string> bitmaps;
  for (const auto& s : sets) bitmaps.push_back(serialize_row_ids(detail::remap_ids(s, moved, stats)));
  std::optional<std::string> nulls;
  if (lookup.null_lists) {
    dataset::remap_stats ignored;
    nulls = serialize_row_ids(detail::remap_ids(*lookup.null_lists, moved, ignored));
  }
  return write_bitmap_file(new_dir, lookup.file->version(), lookup.keys, bitmaps, nulls);
}

}  // namespace lancet::index
