// The rows index optimisation (optimize/optimize_indices.hpp) moves, one technique each: progress
// reports, routing rows to their nearest centroids (route, nearest_centroids),
// reading a column's vectors (for_each_vector, fetch_vectors_chunked in chunks of
// bounded bytes), sorted row-id sets (id_set), and re-encoding rows with an index's
// own quantizer (encoder) into shuffle batches.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/ivf/storage_writer.hpp"
#include "lancet/index/build/ivf_builder_impl.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/index/optimize/options.hpp"
#include "lancet/index/optimize/partition_planner.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/optimize/remap_impl.hpp"
#include "lancet/index/search/vector_index_impl.hpp"

namespace lancet::index::detail {

inline void report_optimize_progress(const optimize_options& o, const std::string& index, optimize_stage s, std::uint64_t done,
                   std::uint64_t total) {
  if (o.on_progress) o.on_progress({index, s, done, total});
}

inline std::vector<float> matrix_floats(const matrix& m) {
  std::vector<float> out(m.rows * m.cols);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(m.at(i / m.cols, i % m.cols));
  return out;
}

// Distance used for routing: l2 (of the normalised row under cosine, whose row the
// caller normalises) or 1 - x.y.
inline float route_distance(simd::distance_type t, const float* a, const float* b, std::size_t d) {
  double s = 0;
  if (t == simd::distance_type::dot) {
    for (std::size_t i = 0; i < d; ++i) s += double(a[i]) * double(b[i]);
    return float(1.0 - s);
  }
  for (std::size_t i = 0; i < d; ++i) {
    const double x = double(a[i]) - double(b[i]);
    s += x * x;
  }
  return float(s);
}

// The `count` centroids nearest centroid p (p itself excluded), nearest first.
inline std::vector<std::uint32_t> nearest_centroids(simd::distance_type t, const std::vector<float>& cents,
                                                    std::size_t d, std::size_t p, std::size_t count,
                                                    const std::vector<bool>* allowed = nullptr) {
  const std::size_t k = cents.size() / d;
  std::vector<std::pair<float, std::uint32_t>> ds;
  for (std::size_t c = 0; c < k; ++c) {
    if (c == p || (allowed && !(*allowed)[c])) continue;
    ds.push_back({route_distance(t == simd::distance_type::dot ? t : simd::distance_type::l2, cents.data() + p * d,
                                 cents.data() + c * d, d),
                  std::uint32_t(c)});
  }
  const std::size_t m = std::min(count, ds.size());
  std::partial_sort(ds.begin(), ds.begin() + std::ptrdiff_t(m), ds.end());
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < m; ++i) out.push_back(ds[i].second);
  return out;
}

// Bytes of one element of a vector column holding `t` values (float16/32/64).
inline std::size_t vector_element_bytes(const arrow::data_type& t, const std::string& column) {
  switch (t.id) {
    case arrow::type_id::float16: return 2;
    case arrow::type_id::float32: return 4;
    case arrow::type_id::float64: return 8;
    default:
      throw unsupported_error("optimize: column '" + column + "' holds " + arrow::to_string(t) +
                              " vectors; lancet optimises float16/32/64 vector indexes");
  }
}

// The vectors of a batch's vector column: a fixed-size list (one vector per row) or,
// for a multivector column, a list of them (every vector of a row, under the row).
// fn(r, v, wide): r the row within the batch, v the vector widened to float, wide its
// float64 values when the column holds float64 (else nullptr). Null rows, null vectors
// and unusable vectors (non-finite, or zero under cosine) are skipped, as the builder
// skips them.
template <class Fn>
inline void for_each_vector(const arrow::array_data& col, std::size_t dim, simd::distance_type metric,
                            const std::string& column, Fn&& fn) {
  const bool multi = col.type->id == arrow::type_id::list || col.type->id == arrow::type_id::large_list;
  const auto& fsl = multi ? *col.children.at(0) : col;
  if (fsl.type->id != arrow::type_id::fixed_size_list || std::size_t(fsl.type->list_size) != dim)
    throw corrupt_error("optimize: column '" + column + "' is " + arrow::to_string(*col.type) +
                        ", not the vectors of dimension " + std::to_string(dim) + " its index was built on");
  const auto& item = *fsl.children.at(0);
  const std::size_t es = vector_element_bytes(*item.type, column);
  const std::uint8_t* base = item.buffers.at(1).data() + std::size_t(item.offset) * es;
  std::vector<float> f(dim);
  std::vector<double> w(item.type->id == arrow::type_id::float64 ? dim : 0);
  const auto one = [&](std::int64_t r, std::int64_t v) {
    if (!fsl.is_valid(v)) return;
    const std::uint8_t* raw = base + (std::size_t(fsl.offset) + std::size_t(v)) * dim * es;
    switch (item.type->id) {
      case arrow::type_id::float16:
        for (std::size_t j = 0; j < dim; ++j) {
          simd::f16 h;
          std::memcpy(&h, raw + j * 2, 2);
          f[j] = h.to_float();
        }
        break;
      case arrow::type_id::float32: std::memcpy(f.data(), raw, dim * 4); break;
      default:
        std::memcpy(w.data(), raw, dim * 8);
        for (std::size_t j = 0; j < dim; ++j) {
          if (!std::isfinite(w[j])) return;
          f[j] = float(w[j]);
        }
    }
    if (!quantizer::indexable_row(f.data(), dim, metric)) return;
    fn(r, static_cast<const float*>(f.data()), w.empty() ? static_cast<const double*>(nullptr) : w.data());
  };
  for (std::int64_t r = 0; r < col.length; ++r) {
    if (!col.is_valid(r)) continue;
    if (!multi) {
      one(r, r);
      continue;
    }
    for (std::int64_t v = col.value_offset(r), e = col.value_offset(r + 1); v < e; ++v) one(r, v);
  }
}

// Vectors collected for routing and encoding, each under its row id (float64 values
// kept alongside when the column holds them: the flat quantizer stores them exactly).
struct entry_batch {
  std::size_t dim = 0;
  std::vector<float> rows;
  std::vector<double> wide;
  std::vector<std::uint64_t> ids;
  std::vector<std::uint32_t> part;

  std::size_t size() const noexcept { return ids.size(); }
  void add(std::uint64_t id, const float* v, const double* w) {
    rows.insert(rows.end(), v, v + dim);
    if (w) wide.insert(wide.end(), w, w + dim);
    ids.push_back(id);
  }
  const double* wide_data() const noexcept { return wide.empty() ? nullptr : wide.data(); }
  void clear() noexcept { rows.clear(), wide.clear(), ids.clear(), part.clear(); }
};

// A set of row ids as a sorted vector (8 bytes a row, not a hash node's ~40: the
// sets optimize keeps grow with the index).
struct id_set {
  std::vector<std::uint64_t> ids;
  void seal() {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  bool contains(std::uint64_t id) const noexcept { return std::binary_search(ids.begin(), ids.end(), id); }
  // Adds sealed `more` (keeps this sealed).
  void merge(const id_set& more) {
    std::vector<std::uint64_t> m;
    m.reserve(ids.size() + more.ids.size());
    std::set_union(ids.begin(), ids.end(), more.ids.begin(), more.ids.end(), std::back_inserter(m));
    ids = std::move(m);
  }
};

// The vectors of rows `ids` (any order), taken in chunks of at most chunk_bytes of
// decoded data (a multivector row counts its vectors; one larger than a chunk is
// taken alone): fn(row_id, v, wide) per usable vector.
template <class Fn>
inline void fetch_vectors_chunked(const dataset::dataset& ds, const std::string& column, std::size_t dim,
                                  simd::distance_type metric, std::span<const std::uint64_t> ids,
                                  std::uint64_t chunk_bytes, bool multivector, Fn&& fn) {
  const std::uint64_t row_bytes = std::max<std::uint64_t>(1, std::uint64_t(dim) * sizeof(float));
  // A multivector row holds several vectors: chunks of a few rows, so that the
  // decoded data stays near the bound whatever the rows' lengths.
  const std::size_t per = multivector ? std::size_t(std::max<std::uint64_t>(1, chunk_bytes / row_bytes / 64))
                                      : std::size_t(std::max<std::uint64_t>(1, chunk_bytes / row_bytes));
  for (std::size_t at = 0; at < ids.size(); at += per) {
    const std::size_t n = std::min(per, ids.size() - at);
    const auto sub = ids.subspan(at, n);
    const auto b = ds.take(sub, {column});
    for_each_vector(*b.columns.at(0), dim, metric, column,
                    [&](std::int64_t r, const float* v, const double* w) { fn(sub[std::size_t(r)], v, w); });
  }
  detail::release_free_memory();
}

// Encodes float rows assigned to `part` (under the model's centroids) into buffers.
struct encoder {
  std::vector<float> cents;
  std::size_t dim = 0;
  std::size_t width = 0;
  quantizer_codec<float> codec;

  encoder(const quantizer_params& q, simd::distance_type metric, std::vector<float> c, std::size_t d,
          std::string_view column)
      : cents(std::move(c)), dim(d), width(code_bytes(q)), codec(make_codec<float>(q, d, metric, column)) {}

  // rows: n x dim floats (raw); wide: the same as float64 when the column holds them
  // (else nullptr); part[i] < k. Appended to out (codes row-major).
  void encode(const float* rows, const double* wide, std::size_t n, const std::uint32_t* part,
              const std::uint64_t* ids, shuffle_batch& out, boost::asio::thread_pool* pool) const {
    if (n == 0) return;
    append_encoded(out, codec, width, rows, wide, n, cents.data(), cents.size() / dim, part, ids, pool);
  }
  void encode(const entry_batch& b, shuffle_batch& out, boost::asio::thread_pool* pool) const {
    encode(b.rows.data(), b.wide_data(), b.size(), b.part.data(), b.ids.data(), out, pool);
  }
};

// Appends entry i of a partition read back (or handed over by a shuffler) to out,
// in partition `p`.
inline void append_entry(shuffle_batch& out, std::uint32_t p, const partition_data& c, std::size_t i, std::size_t width) {
  out.partitions.push_back(p);
  out.row_ids.push_back(c.row_ids[i]);
  out.codes.insert(out.codes.end(), c.codes.data() + i * width, c.codes.data() + (i + 1) * width);
  if (!c.add_factors.empty()) {
    out.add_factors.push_back(c.add_factors[i]);
    out.scale_factors.push_back(c.scale_factors[i]);
    out.error_factors.push_back(c.error_factors.empty() ? 0.0f : c.error_factors[i]);
  }
}

// A storage-writer stand-in for shuffler::write_partitions: hands each partition (in
// order) to fn(p, data).
template <class Fn>
struct partition_visitor {
  Fn fn;
  std::uint32_t next = 0;
  void write_partition(const partition_data& d) { fn(next++, d); }
};
template <class Fn>
partition_visitor(Fn) -> partition_visitor<Fn>;

// Nearest centroid of each row (assign_partitions: cosine normalises rows).
inline void route(simd::distance_type metric, const std::vector<float>& cents, std::size_t dim, const float* rows,
                  std::size_t n, std::uint32_t* part, boost::asio::thread_pool* pool) {
  kmeans_result<float> km;
  km.centroids = cents;
  km.k = cents.size() / dim;
  km.dimension = dim;
  km.distance = metric;
  for (std::size_t at = 0; at < n; at += route_batch_rows) {
    const std::size_t m = std::min(route_batch_rows, n - at);
    assign_partitions(km, rows + at * dim, m, part + at, static_cast<float*>(nullptr), pool);
  }
}

}  // namespace lancet::index::detail
