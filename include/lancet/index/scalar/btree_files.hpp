// A BTREE scalar index's two files as Lance 12 writes them (docs/design/
// scalar_index_facts.md §2), in _indices/{uuid}/ at the dataset's storage version:
//
//   page_data.lance    `values: <column type>` (nullable), `ids: uint64` (not null): every
//                      indexed row sorted by value, NULLs first, NaN after +inf; page p
//                      is rows [p * batch_size, (p + 1) * batch_size)
//   page_lookup.lance  one row per page: `min`, `max` (the page's first and last value,
//                      so NULL when the page starts with NULLs), `null_count: uint32`,
//                      `page_idx: uint32`; schema metadata batch_size = "4096",
//                      range_partitioned = "false"
//
// The row ids are row addresses, or stable row ids where the dataset has them.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
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
#include "lancet/io/any_sink.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::index {

inline constexpr std::uint64_t btree_default_batch_size = 4096;

namespace detail {

// Whether a BTREE can index a column of type `t` (the scalar types Lance sorts).
inline bool btree_indexable(const arrow::data_type& t) {
  switch (t.id) {
    case arrow::type_id::boolean:
    case arrow::type_id::int8:
    case arrow::type_id::int16:
    case arrow::type_id::int32:
    case arrow::type_id::int64:
    case arrow::type_id::uint8:
    case arrow::type_id::uint16:
    case arrow::type_id::uint32:
    case arrow::type_id::uint64:
    case arrow::type_id::float32:
    case arrow::type_id::float64:
    case arrow::type_id::date32:
    case arrow::type_id::date64:
    case arrow::type_id::timestamp:
    case arrow::type_id::time32:
    case arrow::type_id::time64:
    case arrow::type_id::duration:
    case arrow::type_id::utf8:
    case arrow::type_id::large_utf8:
    case arrow::type_id::binary:
    case arrow::type_id::large_binary: return true;
    default: return false;
  }
}

// Floats in Lance's sort order: ascending, -0 before +0, NaN after +inf.
template <class F>
bool float_less(F a, F b) noexcept {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  if (a == b) return std::signbit(a) && !std::signbit(b);
  return a < b;
}

// Calls f(less) with `less(i, j)`: row i's non-NULL value sorts before row j's.
template <class F>
decltype(auto) with_value_order(const arrow::array_data& a, F&& f) {
  using arrow::type_id;
  const auto fixed = [&]<class T>() {
    const T* v = a.values<T>();
    return f([v](std::int64_t i, std::int64_t j) { return v[i] < v[j]; });
  };
  switch (a.type->id) {
    case type_id::boolean: return f([&a](std::int64_t i, std::int64_t j) { return !a.bool_value(i) && a.bool_value(j); });
    case type_id::int8: return fixed.template operator()<std::int8_t>();
    case type_id::int16: return fixed.template operator()<std::int16_t>();
    case type_id::int32:
    case type_id::date32:
    case type_id::time32: return fixed.template operator()<std::int32_t>();
    case type_id::int64:
    case type_id::date64:
    case type_id::timestamp:
    case type_id::time64:
    case type_id::duration: return fixed.template operator()<std::int64_t>();
    case type_id::uint8: return fixed.template operator()<std::uint8_t>();
    case type_id::uint16: return fixed.template operator()<std::uint16_t>();
    case type_id::uint32: return fixed.template operator()<std::uint32_t>();
    case type_id::uint64: return fixed.template operator()<std::uint64_t>();
    case type_id::float32: {
      const float* v = a.values<float>();
      return f([v](std::int64_t i, std::int64_t j) { return float_less(v[i], v[j]); });
    }
    case type_id::float64: {
      const double* v = a.values<double>();
      return f([v](std::int64_t i, std::int64_t j) { return float_less(v[i], v[j]); });
    }
    case type_id::utf8:
    case type_id::large_utf8:
    case type_id::binary:
    case type_id::large_binary:
      return f([&a](std::int64_t i, std::int64_t j) { return a.string_value(i) < a.string_value(j); });
    default:
      throw unsupported_error("a BTREE index cannot be built on a column of type " + arrow::to_string(*a.type));
  }
}

// The type of column `name` of a file's schema; corrupt_error (naming `path` and what it
// should be) when it is missing or `ok` refuses its type.
template <class Ok>
const arrow::data_type& expect_column(const arrow::schema& s, std::string_view name, const std::string& path,
                                      const char* should_be, Ok&& ok) {
  for (const auto& f : s.fields)
    if (f.name == name) {
      if (!ok(*f.type))
        throw corrupt_error("'" + path + "': column '" + std::string(name) + "' is " + arrow::to_string(*f.type) +
                            ", not " + should_be);
      return *f.type;
    }
  throw corrupt_error("'" + path + "' has no column '" + std::string(name) + "'");
}

inline bool is_uint32(const arrow::data_type& t) { return t.id == arrow::type_id::uint32; }
inline bool is_uint64(const arrow::data_type& t) { return t.id == arrow::type_id::uint64; }

inline arrow::schema btree_data_schema(const arrow::type_ptr& t) {
  arrow::schema s;
  s.fields.push_back(arrow::field{"values", t, true, {}});
  s.fields.push_back(arrow::field{"ids", arrow::uint64(), false, {}});
  return s;
}

inline arrow::schema btree_lookup_schema(const arrow::type_ptr& t) {
  arrow::schema s;
  s.fields.push_back(arrow::field{"min", t, true, {}});
  s.fields.push_back(arrow::field{"max", t, true, {}});
  s.fields.push_back(arrow::field{"null_count", arrow::uint32(), false, {}});
  s.fields.push_back(arrow::field{"page_idx", arrow::uint32(), false, {}});
  return s;
}

}  // namespace detail

namespace detail {

// A string's first 8 bytes, big-endian, zero-padded: keys in the strings' order (equal
// keys: the strings may still differ).
inline std::uint64_t string_prefix_key(std::string_view s) noexcept {
  std::uint64_t k = 0;
  for (std::size_t b = 0; b < 8; ++b) k = (k << 8) | (b < s.size() ? std::uint8_t(s[b]) : 0u);
  return k;
}

// Row i's value as an unsigned key that sorts as Lance sorts the values (integers and
// times by value, floats with -0 before +0 and NaN last, strings by their first 8 bytes);
// nullopt for types without one.
template <class F>
bool with_sort_key(const arrow::array_data& a, F&& f) {
  using arrow::type_id;
  constexpr std::uint64_t sign = std::uint64_t(1) << 63;
  const auto signed_key = [&]<class T>() {
    const T* v = a.values<T>();
    f([v](std::int64_t i) { return std::uint64_t(std::int64_t(v[i])) ^ sign; });
  };
  const auto unsigned_key = [&]<class T>() {
    const T* v = a.values<T>();
    f([v](std::int64_t i) { return std::uint64_t(v[i]); });
  };
  const auto float_key = [&]<class T>() {
    const T* v = a.values<T>();
    f([v](std::int64_t i) {
      const double x = double(v[i]);  // exact: float -> double keeps the order and -0
      if (std::isnan(x)) return ~std::uint64_t(0);
      const auto bits = std::bit_cast<std::uint64_t>(x);
      return (bits & sign) ? ~bits : bits | sign;
    });
  };
  switch (a.type->id) {
    case type_id::boolean: f([&a](std::int64_t i) { return std::uint64_t(a.bool_value(i)); }); return true;
    case type_id::int8: signed_key.template operator()<std::int8_t>(); return true;
    case type_id::int16: signed_key.template operator()<std::int16_t>(); return true;
    case type_id::int32:
    case type_id::date32:
    case type_id::time32: signed_key.template operator()<std::int32_t>(); return true;
    case type_id::int64:
    case type_id::date64:
    case type_id::timestamp:
    case type_id::time64:
    case type_id::duration: signed_key.template operator()<std::int64_t>(); return true;
    case type_id::uint8: unsigned_key.template operator()<std::uint8_t>(); return true;
    case type_id::uint16: unsigned_key.template operator()<std::uint16_t>(); return true;
    case type_id::uint32: unsigned_key.template operator()<std::uint32_t>(); return true;
    case type_id::uint64: unsigned_key.template operator()<std::uint64_t>(); return true;
    case type_id::float32: float_key.template operator()<float>(); return true;
    case type_id::float64: float_key.template operator()<double>(); return true;
    case type_id::utf8:
    case type_id::large_utf8:
    case type_id::binary:
    case type_id::large_binary:
      f([&a](std::int64_t i) { return string_prefix_key(a.string_value(i)); });
      return true;
    default: return false;
  }
}

// Sorts `rows` by key(row), stably (an LSD radix sort of 8-bit digits, skipping the
// digits every key shares).
template <class Key>
void radix_sort_rows(std::vector<std::int64_t>::iterator first, std::vector<std::int64_t>::iterator last, Key&& key) {
  const auto n = std::size_t(last - first);
  if (n < 2) return;
  std::vector<std::pair<std::uint64_t, std::int64_t>> a(n), b(n);
  std::uint64_t all_or = 0, all_and = ~std::uint64_t(0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = key(first[std::ptrdiff_t(i)]);
    a[i] = {k, first[std::ptrdiff_t(i)]};
    all_or |= k;
    all_and &= k;
  }
  const std::uint64_t varying = all_or ^ all_and;
  for (unsigned shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xFF) == 0) continue;
    std::size_t count[257] = {};
    for (const auto& e : a) ++count[((e.first >> shift) & 0xFF) + 1];
    for (std::size_t d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (const auto& e : a) b[count[(e.first >> shift) & 0xFF]++] = e;
    a.swap(b);
  }
  for (std::size_t i = 0; i < n; ++i) first[std::ptrdiff_t(i)] = a[i].second;
}

}  // namespace detail

// The order in which a BTREE stores `values`' rows: NULLs first, then ascending values
// (ties in row order).
inline std::vector<std::int64_t> btree_sort_order(const arrow::array_data& values) {
  if (!detail::btree_indexable(*values.type))
    throw unsupported_error("a BTREE index cannot be built on a column of type " + arrow::to_string(*values.type));
  std::vector<std::int64_t> order(std::size_t(values.length));
  std::iota(order.begin(), order.end(), std::int64_t(0));
  const auto nulls_end = std::stable_partition(order.begin(), order.end(), [&](std::int64_t i) { return values.is_null(i); });
  const bool by_key = detail::with_sort_key(values, [&](auto key) { detail::radix_sort_rows(nulls_end, order.end(), key); });
  const auto t = values.type->id;
  const bool strings = t == arrow::type_id::utf8 || t == arrow::type_id::large_utf8 || t == arrow::type_id::binary ||
                       t == arrow::type_id::large_binary;
  if (by_key && !strings) return order;
  // Strings: runs sharing their first 8 bytes ordered by the whole value (stably).
  detail::with_value_order(values, [&](auto less) {
    if (!by_key) {
      std::stable_sort(nulls_end, order.end(), less);
      return 0;
    }
    const auto prefix = [&](std::int64_t i) { return detail::string_prefix_key(values.string_value(i)); };
    for (auto it = nulls_end; it != order.end();) {
      auto run = it + 1;
      while (run != order.end() && prefix(*run) == prefix(*it)) ++run;
      if (run - it > 1) std::stable_sort(it, run, less);
      it = run;
    }
    return 0;
  });
  return order;
}

// Writes page_data.lance and page_lookup.lance into `dir` for rows already in BTREE
// order (`values` sorted, NULLs first; `ids` beside them); returns the files with their
// sizes, as IndexMetadata lists them.
inline std::vector<pb::index_file> write_btree_files(const std::string& dir, file::format_version version,
                                                     const arrow::array_ptr& values, std::span<const std::uint64_t> ids,
                                                     std::uint64_t batch_size = btree_default_batch_size) {
  if (std::uint64_t(values->length) != ids.size())
    throw invalid_input_error("BTREE pages: " + std::to_string(values->length) + " values but " +
                              std::to_string(ids.size()) + " row ids");
  if (batch_size == 0) throw invalid_input_error("BTREE pages: batch_size must be positive");
  const auto storage = io::storage_for(dir);
  const auto n = std::uint64_t(values->length);
  const std::uint64_t pages = (n + batch_size - 1) / batch_size;
  // The lookup: each page's first and last value and NULL count.
  std::vector<std::int64_t> firsts, lasts;
  std::vector<std::uint32_t> null_counts, page_idx;
  for (std::uint64_t p = 0; p < pages; ++p) {
    const auto b = p * batch_size, e = std::min(n, b + batch_size);
    firsts.push_back(std::int64_t(b));
    lasts.push_back(std::int64_t(e - 1));
    std::uint32_t nulls = 0;
    for (auto r = b; r < e && values->is_null(std::int64_t(r)); ++r) ++nulls;
    null_counts.push_back(nulls);
    page_idx.push_back(std::uint32_t(p));
  }
  std::vector<pb::index_file> out;
  file::with_version(version, [&]<class V>() {
    const std::string data_path = dir + "/" + std::string(detail::btree_page_data_file);
    file::file_writer<V, io::any_sink> data(storage.create_sink(data_path, {}),
                                            schema::from_arrow(detail::btree_data_schema(values->type)));
    if (n > 0)
      data.write_batch(arrow::make_batch(
          std::make_shared<arrow::schema>(detail::btree_data_schema(values->type)),
          {values, arrow::make_array<std::uint64_t>(std::vector<std::uint64_t>(ids.begin(), ids.end()))}));
    out.push_back({std::string(detail::btree_page_data_file), data.finish().file_size});
    const std::string lookup_path = dir + "/" + std::string(detail::btree_page_lookup_file);
    const auto lookup_schema = detail::btree_lookup_schema(values->type);
    file::file_writer<V, io::any_sink> lookup(storage.create_sink(lookup_path, {}), schema::from_arrow(lookup_schema));
    lookup.add_schema_metadata(std::string(detail::btree_batch_size_key), std::to_string(batch_size));
    lookup.add_schema_metadata(std::string(detail::btree_range_partitioned_key), "false");
    if (pages > 0)
      lookup.write_batch(arrow::make_batch(std::make_shared<arrow::schema>(lookup_schema),
                                           {arrow::take_rows(values, firsts, values->type),
                                            arrow::take_rows(values, lasts, values->type),
                                            arrow::make_array<std::uint32_t>(null_counts),
                                            arrow::make_array<std::uint32_t>(page_idx)}));
    out.push_back({std::string(detail::btree_page_lookup_file), lookup.finish().file_size});
  });
  return out;
}

// A BTREE's page lookup, read whole, and its page data, open (read_btree_pages reads it;
// safe from several threads at once).
struct btree_lookup {
  arrow::array_ptr min, max;              // per page, the column's type
  std::vector<std::uint32_t> null_count;  // per page
  std::uint64_t batch_size = btree_default_batch_size;
  std::uint64_t rows = 0;  // rows of page_data.lance
  std::shared_ptr<const file::file_reader<io::any_source>> data;  // page_data.lance
  std::size_t pages() const noexcept { return null_count.size(); }
};

// Reads a page lookup and opens the page data, from sources (`dir` names them in
// errors). Lance's range-partitioned BTREEs (distributed builds) are refused
// (unsupported_error).
inline btree_lookup read_btree_lookup(io::any_source lookup_file, io::any_source data_file, const std::string& dir) {
  const std::string path = dir + "/" + std::string(detail::btree_page_lookup_file);
  file::file_reader<io::any_source> r(std::move(lookup_file));
  btree_lookup out;
  const auto metadata = [&](std::string_view key) -> std::optional<std::string> {
    for (const auto& [k, v] : r.schema().metadata)
      if (k == key) return v;
    return std::nullopt;
  };
  if (metadata(detail::btree_range_partitioned_key) == std::optional<std::string>("true"))
    throw unsupported_error("BTREE index '" + dir + "' is range-partitioned (a distributed build), which lancet does not read");
  if (const auto bs = metadata(detail::btree_batch_size_key)) {
    try {
      out.batch_size = std::stoull(*bs);
    } catch (const std::exception&) {
      throw corrupt_error("'" + path + "': batch_size '" + *bs + "' is not a number");
    }
    if (out.batch_size == 0) throw corrupt_error("'" + path + "': batch_size 0");
  }
  const auto& lookup_schema = r.arrow_schema();
  const auto& min_type = detail::expect_column(lookup_schema, "min", path, "a BTREE value type",
                                               [](const arrow::data_type& t) { return detail::btree_indexable(t); });
  detail::expect_column(lookup_schema, "max", path, "the type of min",
                        [&](const arrow::data_type& t) { return arrow::to_string(t) == arrow::to_string(min_type); });
  detail::expect_column(lookup_schema, "null_count", path, "uint32", detail::is_uint32);
  file::read_request req;
  req.columns = {"min", "max", "null_count"};
  const auto b = r.read(req);
  out.min = b.columns.at(0);
  out.max = b.columns.at(1);
  const auto* nc = b.columns.at(2)->values<std::uint32_t>();
  out.null_count.assign(nc, nc + b.num_rows());
  out.data = std::make_shared<const file::file_reader<io::any_source>>(std::move(data_file));
  const std::string data_path = dir + "/" + std::string(detail::btree_page_data_file);
  detail::expect_column(out.data->arrow_schema(), "values", data_path, "the type of the lookup's min",
                        [&](const arrow::data_type& t) { return arrow::to_string(t) == arrow::to_string(min_type); });
  detail::expect_column(out.data->arrow_schema(), "ids", data_path, "uint64", detail::is_uint64);
  out.rows = out.data->num_rows();
  const auto want = (out.rows + out.batch_size - 1) / out.batch_size;
  if (want != out.pages())
    throw corrupt_error("BTREE index '" + dir + "': " + std::to_string(out.rows) + " rows in pages of " +
                        std::to_string(out.batch_size) + " make " + std::to_string(want) + " pages, the lookup lists " +
                        std::to_string(out.pages()));
  return out;
}

// `dir`'s page lookup, read, and page data, opened.
inline btree_lookup read_btree_lookup(const std::string& dir) {
  const auto storage = io::storage_for(dir);
  return read_btree_lookup(storage.open_source(dir + "/" + std::string(detail::btree_page_lookup_file), std::nullopt),
                           storage.open_source(dir + "/" + std::string(detail::btree_page_data_file), std::nullopt), dir);
}

// Pages [first, last] of page_data.lance: `values` and `ids`.
inline arrow::record_batch read_btree_pages(const btree_lookup& lookup, std::size_t first, std::size_t last) {
  if (first > last || last >= lookup.pages())
    throw invalid_input_error("BTREE pages [" + std::to_string(first) + ", " + std::to_string(last) + "] of " +
                              std::to_string(lookup.pages()));
  const auto b = std::uint64_t(first) * lookup.batch_size;
  const auto e = std::min(lookup.rows, (std::uint64_t(last) + 1) * lookup.batch_size);
  file::read_request req;
  req.columns = {"values", "ids"};
  req.range = std::pair<std::uint64_t, std::uint64_t>(b, e);
  return lookup.data->read(req);
}

// Rewrites the BTREE of `old_dir` into `new_dir` after a compaction moved its rows: each
// row id through `moved` (rows it maps to nothing leave; ids it does not name stay),
// the order kept (values do not change), pages and lookup rebuilt, at the old files'
// version, with the old batch size. Returns the new files; counts into `stats`.
inline std::vector<pb::index_file> remap_btree_files(const std::string& old_dir, const std::string& new_dir,
                                                     const dataset::row_address_map& moved, dataset::remap_stats& stats) {
  const auto lookup = read_btree_lookup(old_dir);
  if (lookup.rows == 0)  // no page: the lookup's empty min column has the values' type
    return write_btree_files(new_dir, lookup.data->version(), lookup.min, {}, lookup.batch_size);
  const auto all = read_btree_pages(lookup, 0, lookup.pages() - 1);
  std::vector<std::int64_t> kept;
  std::vector<std::uint64_t> ids;
  const auto* old_ids = all.columns.at(1)->values<std::uint64_t>();
  stats.rows_before += std::uint64_t(all.num_rows());
  for (std::int64_t r = 0; r < all.num_rows(); ++r) {
    const auto id = dataset::remapped_row(old_ids[r], moved, stats);
    if (!id) continue;
    kept.push_back(r);
    ids.push_back(*id);
  }
  stats.rows_after += ids.size();
  const auto values = arrow::take_rows(all.columns[0], kept, all.columns[0]->type);
  return write_btree_files(new_dir, lookup.data->version(), values, ids, lookup.batch_size);
}

}  // namespace lancet::index
