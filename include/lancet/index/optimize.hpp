// Optimising an IVF vector index after the dataset changed, as Lance 12's
// optimize_indices does:
//
//   index::optimize_options o;                 // o.name = "vector_idx" (default: all)
//   auto r = index::optimize_indices("/data/ds", o);
//
// - Rows of fragments no segment covers (appended since) are assigned with the
//   existing centroids, encoded with the existing quantizer and written as a delta
//   segment: a new IndexMetadata with the same name and its own fragment bitmap.
// - num_indices_to_merge = N: the newest N segments are merged with the delta into one
//   (no partition adjustment). retrain: the index is rebuilt from scratch.
// - Otherwise the plan (plan_partitions) over the partition sizes summed over the delta
//   and every segment decides: a steady state writes the delta only; splits (or else
//   joins) merge every segment with the delta into one rebalanced segment.
// - Rows a merged segment holds that were deleted or rewritten since are dropped; a
//   row held by several merged segments keeps the newest segment's entries (all of
//   them: a multivector row has one entry per vector).
// Vectors are re-read from the dataset (in chunks of at most fetch_chunk_bytes of
// decoded data) only for the rows that move: every row with an entry in a split
// partition or its neighbours, or in a joined partition; all its entries leave and
// all its vectors are placed again (a multivector row's vectors one by one).
// Memory: the delta, the entries kept from merged segments (read a partition at a
// time) and the re-encoded rows stream through shufflers (shuffler.hpp) bounded by
// memory_budget_bytes, spilling beyond it; row ids are held as sorted vectors.
// IVF_FLAT stores the column's own element type (float16 / float32 / float64).
// IVF_HNSW_* indexes go through the same plan over their flat / SQ / PQ storage; the
// new segment (delta or merged) then gets a graph per partition built over its stored
// rows, with the m / ef_construction / max_level the index's lance:hnsw records (Lance
// 12 likewise builds each partition's graph afresh when it writes a segment).
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
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/storage_reader.hpp"
#include "lancet/index/storage_writer.hpp"
#include "lancet/index/ivf_builder.hpp"
#include "lancet/index/ivf_model.hpp"
#include "lancet/index/kmeans.hpp"
#include "lancet/index/quantizer/pq.hpp"
#include "lancet/index/quantizer/rabitq.hpp"
#include "lancet/index/quantizer/sq.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/remap.hpp"
#include "lancet/index/vector_index.hpp"

namespace lancet::index {

// Lance 12's constants.
inline constexpr std::size_t split_size_factor = 4;      // split above 4 x target
inline constexpr std::size_t join_size_percent = 25;     // join below 25% of target
inline constexpr std::size_t max_split_ways = 1024;
inline constexpr std::size_t reassign_range = 64;        // neighbour partitions considered
inline constexpr std::size_t split_sample_per_piece = 256;
inline constexpr std::uint64_t default_fetch_chunk_bytes = std::uint64_t(32) << 20;
inline constexpr std::size_t route_batch_rows = 1024;

// ---------------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------------

struct partition_split {
  std::uint32_t partition = 0;
  std::uint32_t ways = 0;
  friend bool operator==(const partition_split&, const partition_split&) = default;
};

struct partition_plan {
  std::vector<partition_split> splits;  // by partition id
  std::vector<std::uint32_t> joins;     // partitions joined away, ascending
  bool empty() const noexcept { return splits.empty() && joins.empty(); }
};

// Pieces a partition of `rows` is split into: ceil(rows / target), clamped to 2..1024.
inline std::uint32_t split_ways(std::uint64_t rows, std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  const std::uint64_t w = (rows + target - 1) / target;
  return std::uint32_t(std::clamp<std::uint64_t>(w, 2, max_split_ways));
}

// What one optimize pass does with partitions of these sizes: split every partition
// above 4 x target; when none is, join away partitions below 25% of target, smallest
// first (lowest id on a tie), while at least one partition survives and the survivors
// keep room below the split threshold for every joined row.
inline partition_plan plan_partitions(std::span<const std::uint64_t> sizes, std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  partition_plan plan;
  const std::uint64_t threshold = std::uint64_t(split_size_factor) * target;
  for (std::size_t p = 0; p < sizes.size(); ++p)
    if (sizes[p] > threshold) plan.splits.push_back({std::uint32_t(p), split_ways(sizes[p], target)});
  if (!plan.splits.empty() || sizes.size() <= 1) return plan;
  const std::uint64_t join_below = std::uint64_t(target) * join_size_percent / 100;
  std::vector<std::uint32_t> cand;
  for (std::size_t p = 0; p < sizes.size(); ++p)
    if (sizes[p] < join_below) cand.push_back(std::uint32_t(p));
  std::stable_sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) { return sizes[a] < sizes[b]; });
  std::vector<bool> joined(sizes.size(), false);
  std::size_t survivors = sizes.size();
  std::uint64_t joined_rows = 0;
  for (auto c : cand) {
    if (survivors <= 1) break;
    std::uint64_t room = 0;
    for (std::size_t s = 0; s < sizes.size(); ++s)
      if (!joined[s] && s != c) room += threshold - std::min(threshold, sizes[s]);
    if (joined_rows + sizes[c] > room) break;
    joined[c] = true;
    joined_rows += sizes[c];
    --survivors;
    plan.joins.push_back(c);
  }
  std::sort(plan.joins.begin(), plan.joins.end());
  return plan;
}

// ---------------------------------------------------------------------------------
// Options and results
// ---------------------------------------------------------------------------------

enum class optimize_stage : std::uint8_t { scan_unindexed, plan, split, join, reassign, merge_partitions, commit };

inline std::string_view optimize_stage_name(optimize_stage s) noexcept {
  switch (s) {
    case optimize_stage::scan_unindexed: return "scan_unindexed";
    case optimize_stage::plan: return "plan";
    case optimize_stage::split: return "split";
    case optimize_stage::join: return "join";
    case optimize_stage::reassign: return "reassign";
    case optimize_stage::merge_partitions: return "merge_partitions";
    case optimize_stage::commit: return "commit";
  }
  return "?";
}

struct optimize_progress {
  std::string index;
  optimize_stage stage;
  std::uint64_t done = 0;  // rows (scan, reassign), partitions (split, join, merge)
  std::uint64_t total = 0;
};

struct optimize_options {
  std::string name;  // the index to optimise; empty: every IVF index of the dataset
  // Merge the newest N segments with the delta (no partition adjustment); 0: delta only.
  std::optional<std::size_t> num_indices_to_merge;
  bool retrain = false;  // rebuild the index (new centroids and quantizer) over all rows
  // The partition size the plan aims at (and then records in the index); default: the
  // one recorded in the index's details, else the type's (4096 flat, 8192 others).
  std::optional<std::size_t> target_partition_size;
  std::uint64_t fetch_chunk_bytes = default_fetch_chunk_bytes;
  // What the shuffles of the delta and of the new segment's entries may hold in
  // memory (as the builder's budget: beyond it, runs spill to temporary files).
  std::uint64_t memory_budget_bytes = std::uint64_t(512) << 20;
  std::string spill_directory;  // where runs spill; default: the new segment's directory
  boost::asio::thread_pool* pool = nullptr;
  std::function<void(const optimize_progress&)> on_progress;
};

struct index_optimize_result {
  std::string name;
  bool changed = false;
  std::size_t segments_before = 0;
  std::size_t segments_after = 0;
  std::size_t segments_merged = 0;       // existing segments folded into the new one
  std::uint64_t rows_added = 0;          // rows of unindexed fragments indexed now
  std::uint64_t rows_dropped = 0;        // deleted / rewritten rows dropped by the merge
  std::uint64_t rows_in_segment = 0;     // rows of the new segment
  std::size_t num_partitions = 0;        // of the new segment
  std::vector<partition_split> splits;   // executed (ways = pieces kept)
  std::vector<std::uint32_t> joins;      // executed
  std::uint64_t overflow_rows = 0;       // joined rows placed without room
  std::optional<pb::uuid> uuid;          // the new segment
};

struct optimize_result {
  std::uint64_t version = 0;  // the dataset version after the optimize
  unsigned retries = 0;       // commits lost to other writers before its own won
  std::vector<index_optimize_result> indices;
};

namespace optimize_detail {

inline void report(const optimize_options& o, const std::string& index, optimize_stage s, std::uint64_t done,
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

inline bool normalise(float* v, std::size_t d) {
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) s += double(v[i]) * double(v[i]);
  if (!(s > 0) || !std::isfinite(s)) return false;
  const double n = std::sqrt(s);
  for (std::size_t i = 0; i < d; ++i) v[i] = float(double(v[i]) / n);
  return true;
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

inline bool usable_row(const float* v, std::size_t d, simd::distance_type metric) {
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    if (!std::isfinite(v[i])) return false;
    s += double(v[i]) * double(v[i]);
  }
  return metric != simd::distance_type::cosine || s > 0;
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
    if (!usable_row(f.data(), dim, metric)) return;
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
  builder_detail::release_free_memory();
}

// Encodes float rows assigned to `part` (under the model's centroids) into buffers.
struct encoder {
  quantizer_params q;
  simd::distance_type metric;
  std::vector<float> cents;
  std::size_t dim = 0;
  std::size_t width = 0;
  std::optional<pq::model<float>> pqm;
  std::optional<sq::model> sqm;
  std::optional<rabitq::model> rqm;

  encoder(quantizer_params qp, simd::distance_type m, std::vector<float> c, std::size_t d)
      : q(std::move(qp)), metric(m), cents(std::move(c)), dim(d), width(code_bytes(q)) {
    if (const auto* f = std::get_if<flat_params>(&q)) {
      if (f->element == element_type::u8)
        throw unsupported_error("optimize: lancet re-encodes IVF_FLAT indexes over float vectors only (this one "
                                "stores uint8)");
    } else if (const auto* p = std::get_if<pq_params>(&q)) {
      pqm = pq::from_params<float>(*p, metric);
    } else if (const auto* s = std::get_if<sq_params>(&q)) {
      sqm = sq::from_params(*s);
    } else {
      const auto& r = std::get<rq_params>(q);
      if (r.num_bits != 1)
        throw unsupported_error("optimize: lancet re-encodes 1-bit IVF_RQ indexes only (this one has " +
                                std::to_string(r.num_bits) + " bits)");
      rqm = rabitq::from_params(r);
    }
  }

  // The flat quantizer's codes: the raw vectors in the stored element type
  // (normalised under cosine, in that type's precision as the builder does).
  void flat_codes(const float* rows, const double* wide, std::size_t n, std::uint8_t* codes) const {
    const auto el = std::get<flat_params>(q).element;
    const bool cos = metric == simd::distance_type::cosine;
    if (el == element_type::f64) {
      std::vector<double> v(n * dim);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = wide ? wide[i] : double(rows[i]);
      if (cos)
        for (std::size_t r = 0; r < n; ++r) {
          double s = 0;
          for (std::size_t j = 0; j < dim; ++j) s += v[r * dim + j] * v[r * dim + j];
          const double nn = std::sqrt(s);
          for (std::size_t j = 0; j < dim; ++j) v[r * dim + j] /= nn;
        }
      std::memcpy(codes, v.data(), n * width);
      return;
    }
    std::vector<float> v(rows, rows + n * dim);
    if (cos)
      for (std::size_t i = 0; i < n; ++i) normalise(v.data() + i * dim, dim);
    if (el == element_type::f32) {
      std::memcpy(codes, v.data(), n * width);
      return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      const simd::f16 h(v[i]);
      std::memcpy(codes + i * 2, &h, 2);
    }
  }

  // rows: n x dim floats (raw); wide: the same as float64 when the column holds them
  // (else nullptr); part[i] < k. Appended to out (codes row-major).
  void encode(const float* rows, const double* wide, std::size_t n, const std::uint32_t* part,
              const std::uint64_t* ids, shuffle_batch& out, boost::asio::thread_pool* pool) const {
    if (n == 0) return;
    const std::size_t k = cents.size() / dim;
    const std::size_t at = out.size();
    out.partitions.insert(out.partitions.end(), part, part + n);
    out.row_ids.insert(out.row_ids.end(), ids, ids + n);
    out.codes.resize((at + n) * width);
    std::uint8_t* codes = out.codes.data() + at * width;
    if (std::holds_alternative<flat_params>(q)) {
      flat_codes(rows, wide, n, codes);
    } else if (pqm) {
      pq::encode_for_ivf(*pqm, rows, n, metric, cents.data(), k, part, codes, pool);
    } else if (sqm) {
      sq::encode_for_ivf(*sqm, rows, n, metric, codes, pool);
    } else {
      rabitq::encoded_rows er;
      rabitq::encode_for_ivf(*rqm, rows, n, metric, cents.data(), k, part, er, pool);
      std::memcpy(codes, er.codes.data(), n * width);
      out.add_factors.insert(out.add_factors.end(), er.add_factors.begin(), er.add_factors.end());
      out.scale_factors.insert(out.scale_factors.end(), er.scale_factors.begin(), er.scale_factors.end());
      out.error_factors.insert(out.error_factors.end(), er.error_factors.begin(), er.error_factors.end());
    }
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

// Lance's CreateIndex commit that adds `added` and removes the segments `removed`
// (by uuid) on top of base, rebased as Lance does on what was committed since
// (commit_conflict_error when that cannot be).
inline dataset::snapshot commit_segments(const std::string& root, const dataset::snapshot& base,
                                         std::vector<pb::index_metadata> added,
                                         const std::vector<pb::index_metadata>& removed,
                                         unsigned* retries = nullptr) {
  std::vector<pb::index_metadata> kept;
  for (const auto& im : base.file.indices) {
    const bool gone = std::any_of(removed.begin(), removed.end(), [&](const pb::index_metadata& r) { return r.uuid == im.uuid; });
    if (!gone) kept.push_back(im);
  }
  dataset::default_sink_factory sinks;
  return publish_index_change(root, base, std::move(kept), std::move(added), removed, {}, sinks,
                              dataset::default_max_retries, retries);
}

inline ivf_index_type type_of(const quantizer_params& q) {
  if (std::holds_alternative<pq_params>(q)) return ivf_index_type::ivf_pq;
  if (std::holds_alternative<sq_params>(q)) return ivf_index_type::ivf_sq;
  if (std::holds_alternative<rq_params>(q)) return ivf_index_type::ivf_rq;
  return ivf_index_type::ivf_flat;
}

// What optimising one index produced, before the commit.
struct planned_change {
  index_optimize_result result;
  std::optional<pb::index_metadata> added;
  std::vector<pb::index_metadata> removed;
  std::string directory;  // of the new segment, removed if the commit fails
};

inline planned_change optimize_one(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                   const std::string& name, const optimize_options& o) {
  planned_change out;
  auto& res = out.result;
  res.name = name;
  // The segments, oldest first (manifest order).
  std::vector<index_segment> segs;
  std::vector<const pb::index_metadata*> metas;
  for (const auto& im : base.file.indices) {
    if (im.name != name) continue;
    segs.push_back(open_index_segment(root, describe_index(base.manifest(), im)));
    metas.push_back(&im);
  }
  if (segs.empty()) throw invalid_input_error("no index named '" + name + "'");
  res.segments_before = res.segments_after = segs.size();
  const auto& newest = segs.back();
  const auto column = newest.info.columns.empty() ? std::string() : newest.info.columns[0];
  if (column.empty()) throw corrupt_error("index '" + name + "' names no column of the dataset");
  const simd::distance_type metric = newest.index_file.distance;
  if (metric == simd::distance_type::hamming)
    throw unsupported_error("index '" + name + "': lancet does not optimise hamming indexes");
  const matrix& cm = *newest.index_file.ivf.centroids;
  const std::size_t dim = cm.cols;
  const quantizer_params q = newest.storage->quantizer();
  for (const auto& s : segs)
    if (!(*s.index_file.ivf.centroids == cm) || !(s.storage->quantizer() == q))
      throw unsupported_error("index '" + name + "': its segments have different IVF models or quantizers; "
                              "optimise with retrain to rebuild it");
  // IVF_HNSW_*: the graph parameters every new segment is built with.
  std::optional<hnsw::build_params> graph;
  if (newest.index_file.sub_index_key == hnsw::metadata_key) graph = recorded_hnsw_params(newest.index_file, "index '" + name + "'");
  for (const auto& s : segs)
    if (s.index_file.sub_index_key != newest.index_file.sub_index_key)
      throw unsupported_error("index '" + name + "': its segments have different sub-indexes (" +
                              s.index_file.sub_index_key + ", " + newest.index_file.sub_index_key +
                              "); optimise with retrain to rebuild it");
  std::vector<float> cents = matrix_floats(cm);
  const std::size_t k0 = cm.rows;
  const std::size_t width = code_bytes(q);
  const auto persisted = persisted_target_partition_size(*metas.back());
  const std::size_t target = o.target_partition_size.value_or(
      persisted ? std::size_t(*persisted) : default_target_partition_size(type_of(q)));
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");

  // Fragments: covered by some segment, or not yet indexed.
  std::set<std::uint64_t> current, covered;
  for (const auto& f : base.manifest().fragments) current.insert(f.id);
  for (const auto& s : segs)
    for (auto f : s.info.fragment_ids) covered.insert(f);
  std::vector<std::uint64_t> unindexed;
  for (auto f : current)
    if (!covered.count(f)) unindexed.push_back(f);

  if (o.retrain) {
    res.changed = true;
    return out;  // done by the caller (a full build)
  }

  // The new segment's directory; the shuffles spill under it (or o.spill_directory)
  // and are removed when done, the directory too unless the segment was written.
  const auto uuid = pb::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const std::string spill = o.spill_directory.empty() ? dir + "/_shuffle"
                                                      : o.spill_directory + "/lancet-optimize-" + uuid.to_string();
  struct spill_guard {
    std::string spill, dir;
    bool written = false;
    ~spill_guard() {
      std::error_code ec;
      std::filesystem::remove_all(spill, ec);
      if (!written) std::filesystem::remove_all(dir, ec);
    }
  } guard{spill, dir};

  // The delta: unindexed rows assigned with the existing centroids, encoded and
  // handed to a shuffler (a multivector row: each of its vectors, under the row's id).
  const bool multi = builder_detail::is_multivector(ds, column);
  encoder enc(q, metric, cents, dim);
  shuffler delta_sh(k0, q, spill + "/delta", o.memory_budget_bytes, o.pool);
  std::vector<std::vector<std::uint64_t>> delta_ids(k0);  // ids only: the plan and the reindexing need them
  const std::uint64_t scan_batch =
      std::max<std::uint64_t>(1, o.fetch_chunk_bytes / std::max<std::uint64_t>(1, dim * sizeof(float)) / (multi ? 64 : 1));
  // The vector column and row ids of some fragments, decoded at most fetch_chunk_bytes at a time.
  const auto scan_vectors = [&](std::vector<std::uint64_t> fragment_ids) {
    dataset::scan_options so;
    so.columns = {column};
    so.with_row_id = true;
    so.fragment_ids = std::move(fragment_ids);
    so.read_ahead_bytes = o.fetch_chunk_bytes;
    so.batch_size = scan_batch;
    return ds.scan(so);
  };
  {
    report(o, name, optimize_stage::scan_unindexed, 0, unindexed.size());
    if (!unindexed.empty()) {
      auto sc = scan_vectors(unindexed);
      entry_batch eb;
      eb.dim = dim;
      shuffle_batch sb;
      const auto flush = [&] {
        eb.part.resize(eb.size());
        route(metric, cents, dim, eb.rows.data(), eb.size(), eb.part.data(), o.pool);
        sb = shuffle_batch{};
        enc.encode(eb, sb, o.pool);
        delta_sh.add(sb);
        for (std::size_t i = 0; i < eb.size(); ++i) delta_ids[eb.part[i]].push_back(eb.ids[i]);
        res.rows_added += eb.size();
        eb.clear();
      };
      while (auto b = sc.next()) {
        const auto* rid = b->columns[1]->values<std::uint64_t>();
        for_each_vector(*b->columns[0], dim, metric, column, [&](std::int64_t r, const float* v, const double* w) {
          eb.add(rid[r], v, w);
          if (eb.size() == route_batch_rows) flush();
        });
        b.reset();
        builder_detail::release_free_memory();
      }
      if (eb.size()) flush();
    }
    report(o, name, optimize_stage::scan_unindexed, unindexed.size(), unindexed.size());
  }

  // The plan over sizes summed over the delta and every segment.
  std::vector<std::uint64_t> sizes(k0, 0);
  for (std::size_t p = 0; p < k0; ++p) {
    sizes[p] = delta_ids[p].size();
    for (const auto& s : segs) sizes[p] += s.storage->ivf().lengths.at(p);
  }
  partition_plan plan;
  std::size_t merge_n = 0;
  if (o.num_indices_to_merge) {
    merge_n = std::min(*o.num_indices_to_merge, segs.size());
  } else {
    report(o, name, optimize_stage::plan, 0, 1);
    plan = plan_partitions(sizes, target);
    report(o, name, optimize_stage::plan, 1, 1);
    if (!plan.empty()) merge_n = segs.size();
  }
  if (res.rows_added == 0 && merge_n == 0) return out;                      // nothing to do
  if (res.rows_added == 0 && merge_n == 1 && plan.empty() && unindexed.empty()) return out;  // one segment, as is

  // Live rows of the merged segments' fragments (deleted / rewritten rows drop out).
  const std::size_t first_merged = segs.size() - merge_n;
  std::set<std::uint64_t> merged_frags;
  id_set live;
  for (std::size_t i = first_merged; i < segs.size(); ++i)
    for (auto f : segs[i].info.fragment_ids) {
      if (!current.count(f) || !merged_frags.insert(f).second) continue;
      const auto ids = ds.fragment_row_ids(f);
      const auto dv = ds.deleted_rows(f);
      for (std::size_t r = 0; r < ids.size(); ++r)
        if (!dv.contains(r)) live.ids.push_back(ids[r]);
    }
  live.seal();

  // The merged segments' entries, newest segment first, one partition read at a
  // time: a row held by a newer segment is dropped from older ones, all its entries
  // at once (a multivector row has several, in one segment). fn(p, contents, i) per
  // entry kept; returns the entries dropped.
  const auto for_each_kept = [&](auto&& fn) {
    std::uint64_t dropped = 0;
    id_set claimed, mine;
    for (std::size_t i = segs.size(); i-- > first_merged;) {
      mine.ids.clear();
      for (std::size_t p = 0; p < k0; ++p) {
        const auto c = segs[i].storage->read_partition(p);
        const auto d = c.view();
        for (std::size_t r = 0; r < c.size(); ++r) {
          const auto id = c.row_ids[r];
          if (!live.contains(id) || claimed.contains(id)) {
            ++dropped;
            continue;
          }
          if (i > first_merged) mine.ids.push_back(id);  // the oldest claims for no one
          fn(std::uint32_t(p), d, r);
        }
        builder_detail::release_free_memory();  // glibc would keep the freed reads resident
      }
      mine.seal();
      claimed.merge(mine);
    }
    return dropped;
  };

  std::optional<double> loss = newest.index_file.ivf.loss;
  const std::uint64_t threshold = std::uint64_t(split_size_factor) * target;
  const auto route_metric = metric == simd::distance_type::dot ? metric : simd::distance_type::l2;

  // Row ids (entries) of the partitions a split or join may move, merged segments'
  // and the delta's: ids only.
  std::map<std::uint32_t, std::vector<std::uint64_t>> cand;
  for (const auto& sp : plan.splits) {
    cand[sp.partition];
    for (auto c : nearest_centroids(metric, cents, dim, sp.partition, reassign_range)) cand[c];
  }
  if (plan.splits.empty())
    for (auto j : plan.joins) cand[j];
  if (!cand.empty()) {
    report(o, name, optimize_stage::split, 0, plan.splits.size());
    for_each_kept([&](std::uint32_t p, const partition_data& d, std::size_t r) {
      const auto it = cand.find(p);
      if (it != cand.end()) it->second.push_back(d.row_ids[r]);
    });
    for (auto& [p, ids] : cand) ids.insert(ids.end(), delta_ids[p].begin(), delta_ids[p].end());
  }

  // Split: new centroids per split partition, trained on an even sample.
  std::vector<float> final_cents = cents;
  std::vector<std::uint32_t> from;  // partitions whose rows are reindexed
  if (!plan.splits.empty()) {
    std::vector<std::uint32_t> done_splits;
    std::size_t step = 0;
    for (const auto& sp : plan.splits) {
      report(o, name, optimize_stage::split, step++, plan.splits.size());
      auto ids = cand.at(sp.partition);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      const std::size_t want = std::size_t(sp.ways) * split_sample_per_piece;
      const std::size_t m = std::min(want, ids.size());
      std::vector<std::uint64_t> sample(m);
      for (std::size_t j = 0; j < m; ++j) sample[j] = ids[std::size_t(std::uint64_t(j) * ids.size() / m)];
      std::vector<std::uint64_t>().swap(ids);
      std::vector<float> rows;
      fetch_vectors_chunked(ds, column, dim, metric, sample, o.fetch_chunk_bytes, multi,
                            [&](std::uint64_t, const float* v, const double*) { rows.insert(rows.end(), v, v + dim); });
      if (multi && !rows.empty()) {
        // A multivector row's vectors in this partition: those nearest its centroid.
        std::vector<std::uint32_t> at(rows.size() / dim);
        route(metric, cents, dim, rows.data(), at.size(), at.data(), o.pool);
        std::size_t kept = 0;
        for (std::size_t i = 0; i < at.size(); ++i)
          if (at[i] == sp.partition) {
            if (kept != i) std::copy(rows.begin() + std::ptrdiff_t(i * dim), rows.begin() + std::ptrdiff_t((i + 1) * dim),
                                     rows.begin() + std::ptrdiff_t(kept * dim));
            ++kept;
          }
        rows.resize(kept * dim);
      }
      const std::size_t ns = rows.size() / dim;
      if (metric == simd::distance_type::cosine)
        for (std::size_t i = 0; i < ns; ++i) normalise(rows.data() + i * dim, dim);
      std::size_t ways = std::min<std::size_t>(sp.ways, ns);
      if (ways < 2) continue;
      std::set<std::vector<float>> distinct;
      for (std::size_t i = 0; i < ns && distinct.size() < ways; ++i)
        distinct.insert(std::vector<float>(rows.begin() + std::ptrdiff_t(i * dim), rows.begin() + std::ptrdiff_t((i + 1) * dim)));
      kmeans_params kp;
      kp.seed = sp.partition;
      kp.distance = route_metric;
      kp.sample_rate = 0;
      kp.hierarchical_k = (ways > 256 && distinct.size() >= ways) ? 16 : 1;
      const auto km = train_kmeans(rows.data(), ns, dim, ways, kp, o.pool);
      // Survivors: new centroids winning some sampled row against the old centroid
      // and its neighbours (an exact tie goes to the old ones).
      auto window = nearest_centroids(metric, cents, dim, sp.partition, reassign_range);
      window.insert(window.begin(), sp.partition);
      std::vector<bool> wins(ways, false);
      for (std::size_t i = 0; i < ns; ++i) {
        const float* r = rows.data() + i * dim;
        float best_old = std::numeric_limits<float>::infinity();
        for (auto c : window) best_old = std::min(best_old, route_distance(route_metric, r, cents.data() + c * dim, dim));
        float best_new = std::numeric_limits<float>::infinity();
        std::size_t arg = 0;
        for (std::size_t c = 0; c < ways; ++c) {
          const float d = route_distance(route_metric, r, km.centroids.data() + c * dim, dim);
          if (d < best_new) best_new = d, arg = c;
        }
        if (best_new < best_old) wins[arg] = true;
      }
      std::vector<std::size_t> surv;
      for (std::size_t c = 0; c < ways; ++c)
        if (wins[c]) surv.push_back(c);
      if (surv.size() < 2) continue;  // left as is
      std::copy(km.centroids.begin() + std::ptrdiff_t(surv[0] * dim),
                km.centroids.begin() + std::ptrdiff_t((surv[0] + 1) * dim),
                final_cents.begin() + std::ptrdiff_t(sp.partition * dim));
      for (std::size_t j = 1; j < surv.size(); ++j)
        final_cents.insert(final_cents.end(), km.centroids.begin() + std::ptrdiff_t(surv[j] * dim),
                           km.centroids.begin() + std::ptrdiff_t((surv[j] + 1) * dim));
      res.splits.push_back({sp.partition, std::uint32_t(surv.size())});
      done_splits.push_back(sp.partition);
      builder_detail::release_free_memory();
    }
    report(o, name, optimize_stage::split, plan.splits.size(), plan.splits.size());
    // Rows of the split partitions and of their neighbours, routed with the new centroids.
    std::vector<bool> affected(k0, false);
    for (auto p : done_splits) {
      affected[p] = true;
      for (auto c : nearest_centroids(metric, cents, dim, p, reassign_range)) affected[c] = true;
    }
    for (std::size_t p = 0; p < k0; ++p)
      if (affected[p]) from.push_back(std::uint32_t(p));
  } else if (!plan.joins.empty()) {
    from = plan.joins;
  }

  // Where the kept entries of old partition p go: p itself, or (join) its survivor's
  // new number.
  std::vector<bool> joined(k0, false), alive(k0, true);
  std::vector<std::uint32_t> renum(k0);
  for (std::size_t p = 0; p < k0; ++p) renum[p] = std::uint32_t(p);
  if (plan.splits.empty() && !plan.joins.empty()) {
    for (auto j : plan.joins) joined[j] = true, alive[j] = false;
    std::size_t k1 = 0;
    final_cents.clear();
    for (std::size_t p = 0; p < k0; ++p)
      if (!joined[p]) {
        renum[p] = std::uint32_t(k1++);
        final_cents.insert(final_cents.end(), cents.begin() + std::ptrdiff_t(p * dim),
                           cents.begin() + std::ptrdiff_t((p + 1) * dim));
      }
  }
  const std::size_t k1 = final_cents.size() / dim;

  // The rows to reindex: every row with an entry in a `from` partition, once, with
  // a partition it had an entry in. All their entries leave (a multivector row's
  // entries elsewhere too): all their vectors are routed again.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> want;  // sorted by row id
  for (auto p : from)
    for (auto id : cand.at(p)) want.push_back({id, p});
  cand.clear();
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  want.erase(std::unique(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
             want.end());
  const auto wanted = [&](std::uint64_t id) -> const std::pair<std::uint64_t, std::uint32_t>* {
    const auto it = std::lower_bound(want.begin(), want.end(), id,
                                     [](const auto& a, std::uint64_t v) { return a.first < v; });
    return it != want.end() && it->first == id ? &*it : nullptr;
  };

  // The new segment's entries, streamed to a shuffler: the merged segments' and the
  // delta's that stay (newest segment first, then the delta), then the reindexed rows.
  shuffler out_sh(k1, q, spill + "/merge", o.memory_budget_bytes, o.pool);
  std::vector<std::uint64_t> fill(k1, 0);  // entries per new partition so far
  {
    shuffle_batch sb;
    const auto keep = [&](std::uint32_t p, const partition_data& d, std::size_t r) {
      if (wanted(d.row_ids[r])) return;
      const std::uint32_t to = renum[p];
      append_entry(sb, to, d, r, width);
      ++fill[to];
      if (sb.size() >= route_batch_rows) out_sh.add(sb), sb = shuffle_batch{};
    };
    res.rows_dropped = for_each_kept(keep);
    partition_visitor visit{[&](std::uint32_t p, const partition_data& d) {
      for (std::size_t r = 0; r < d.size(); ++r) keep(p, d, r);
    }};
    delta_sh.write_partitions(visit);
    if (sb.size()) out_sh.add(sb);
  }
  std::vector<std::vector<std::uint64_t>>().swap(delta_ids);

  // Re-reads, re-routes and re-encodes the rows of `want`: each vector to
  // choose(source partition, normalised vector), or (no choose) to its nearest new
  // centroid.
  const auto reencode = [&](const std::function<std::uint32_t(std::uint32_t, const float*)>& choose) {
    const std::uint64_t rows_wanted = want.size();
    report(o, name, optimize_stage::reassign, 0, rows_wanted);
    encoder e2(q, metric, final_cents, dim);
    std::uint64_t done = 0;
    // The rows are read by scanning the fragments that hold them (decoded at most
    // fetch_chunk_bytes at a time) and routed route_batch_rows vectors at a time.
    std::vector<std::uint64_t> frag_ids(merged_frags.begin(), merged_frags.end());
    frag_ids.insert(frag_ids.end(), unindexed.begin(), unindexed.end());
    std::sort(frag_ids.begin(), frag_ids.end());
    auto sc = scan_vectors(std::move(frag_ids));
    entry_batch eb;
    eb.dim = dim;
    shuffle_batch sb;
    std::vector<float> r(dim);
    const auto flush = [&] {
      if (!choose) {  // nearest of all the new centroids, a batch at a time (SIMD)
        eb.part.resize(eb.size());
        route(metric, final_cents, dim, eb.rows.data(), eb.size(), eb.part.data(), o.pool);
      }
      sb = shuffle_batch{};
      e2.encode(eb, sb, o.pool);
      out_sh.add(sb);
      done += eb.size();
      report(o, name, optimize_stage::reassign, std::min(done, rows_wanted), rows_wanted);
      eb.clear();
    };
    std::uint64_t found = 0;  // rows met so far (a row is met once)
    while (found < rows_wanted) {
      auto b = sc.next();
      if (!b) break;
      const auto* bid = b->columns[1]->values<std::uint64_t>();
      const auto& col = *b->columns[0];
      for (std::int64_t i = 0; i < col.length; ++i) found += wanted(bid[i]) != nullptr;
      for_each_vector(col, dim, metric, column, [&](std::int64_t i, const float* v, const double* w) {
        const auto* it = wanted(bid[i]);
        if (!it) return;  // a row null / unusable now is no longer indexed
        if (choose) {
          std::copy(v, v + dim, r.begin());
          if (metric == simd::distance_type::cosine) normalise(r.data(), dim);
          eb.part.push_back(choose(it->second, r.data()));
        }
        eb.add(bid[i], v, w);
        if (eb.size() == route_batch_rows) flush();
      });
      b.reset();
      builder_detail::release_free_memory();
    }
    if (eb.size()) flush();
  };

  if (!res.splits.empty()) {
    reencode(nullptr);
  } else if (!plan.joins.empty() && plan.splits.empty()) {
    // Join: each vector of a reindexed row to the nearest survivor with room (room:
    // the survivors' sizes after the reindexed rows' entries left).
    std::map<std::uint32_t, std::vector<std::uint32_t>> windows;
    // The window of an old centroid: its 64 nearest survivors (itself first when it
    // survives).
    const auto window_of = [&](std::uint32_t c) -> const std::vector<std::uint32_t>& {
      auto it = windows.find(c);
      if (it != windows.end()) return it->second;
      std::vector<std::uint32_t> w;
      if (alive[c]) w.push_back(c);
      const auto near = nearest_centroids(metric, cents, dim, c, reassign_range - w.size(), &alive);
      w.insert(w.end(), near.begin(), near.end());
      return windows.emplace(c, std::move(w)).first->second;
    };
    report(o, name, optimize_stage::join, 0, plan.joins.size());
    reencode([&](std::uint32_t src, const float* r) {
      // A multivector row's vectors each use the window of their own nearest old
      // centroid; a row's single vector that of its joined partition.
      std::uint32_t at = src;
      if (multi) {
        float best = std::numeric_limits<float>::infinity();
        for (std::size_t c = 0; c < k0; ++c) {
          const float d = route_distance(route_metric, r, cents.data() + c * dim, dim);
          if (d < best) best = d, at = std::uint32_t(c);
        }
      }
      const auto& w = window_of(at);
      std::vector<std::pair<float, std::uint32_t>> ds_;
      for (auto c : w) ds_.push_back({route_distance(route_metric, r, cents.data() + c * dim, dim), renum[c]});
      std::sort(ds_.begin(), ds_.end());
      for (const auto& [d, c] : ds_)
        if (fill[c] + 1 <= threshold) return ++fill[c], c;
      std::vector<std::pair<float, std::uint32_t>> all;
      for (std::size_t c = 0; c < k0; ++c)
        if (alive[c]) all.push_back({route_distance(route_metric, r, cents.data() + c * dim, dim), renum[c]});
      std::sort(all.begin(), all.end());
      for (const auto& [d, c] : all)
        if (fill[c] + 1 <= threshold) return ++fill[c], c;
      ++res.overflow_rows;
      const auto c = ds_.empty() ? all.front().second : ds_.front().second;
      ++fill[c];
      return c;
    });
    res.joins = plan.joins;
    report(o, name, optimize_stage::join, plan.joins.size(), plan.joins.size());
  }

  // Write the new segment.
  out.directory = dir;
  matrix new_cm;
  switch (cm.type) {
    case element_type::f16: {
      std::vector<simd::f16> v(final_cents.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = simd::f16(final_cents[i]);
      new_cm = matrix::of(v, k1, dim);
      break;
    }
    case element_type::f64: {
      std::vector<double> v(final_cents.begin(), final_cents.end());
      new_cm = matrix::of(v, k1, dim);
      break;
    }
    default:
      new_cm = (k1 == k0) ? cm : matrix::of(final_cents, k1, dim);
  }
  if (k1 == k0 && res.splits.empty() && res.joins.empty()) new_cm = cm;  // exactly the old centroids
  auto model = ivf_model::with_centroids(std::move(new_cm), loss);
  auto files = write_index_directory(dir, newest.index_file.version, model, q, metric, [&](auto& aux) {
    out_sh.write_partitions(aux, [&](std::size_t p, std::size_t k) { report(o, name, optimize_stage::merge_partitions, p, k); });
  });
  if (graph) {
    // The graphs link the stored rows, so they are built from auxiliary.idx as written.
    const auto size = write_hnsw_index_file(dir, newest.index_file.version, model, metric, *graph, {}, o.pool);
    for (auto& f : files)
      if (f.path == detail::index_file_name) f.size_bytes = size;
  }
  res.rows_in_segment = out_sh.rows();
  // Its metadata: the merged segments' (still present) fragments and the delta's.
  std::vector<std::uint64_t> frags(merged_frags.begin(), merged_frags.end());
  frags.insert(frags.end(), unindexed.begin(), unindexed.end());
  std::sort(frags.begin(), frags.end());
  index_spec spec;
  spec.column = column;
  spec.name = name;
  spec.quantizer = q;
  spec.distance = metric;
  spec.fragment_ids = frags;
  auto meta = make_index_metadata(base.manifest(), spec, uuid, files);
  // Keep the original build's details (hints) and index version.
  meta.index_details = metas.back()->index_details;
  meta.index_version = metas.back()->index_version;
  meta.fields = metas.back()->fields;
  if (o.target_partition_size) persist_target_partition_size(meta, *o.target_partition_size);
  for (std::size_t i = first_merged; i < segs.size(); ++i) out.removed.push_back(*metas[i]);
  out.added = std::move(meta);
  res.changed = true;
  res.uuid = uuid;
  res.segments_merged = merge_n;
  res.segments_after = segs.size() - merge_n + 1;
  res.num_partitions = k1;
  guard.written = true;  // from here the caller removes the directory if the commit fails
  return out;
}

}  // namespace optimize_detail

// Optimises the IVF indexes of the latest version of the dataset at `root` (the one
// named o.name, or all of them) and commits the result as one new version (Lance's
// CreateIndex with the new segments and the merged ones removed); when nothing needs
// doing nothing is committed. Errors leave the dataset as it was.
inline optimize_result optimize_indices(const std::string& root, const optimize_options& o = {}) {
  if (o.fetch_chunk_bytes == 0) throw invalid_input_error("fetch_chunk_bytes must be positive");
  if (o.memory_budget_bytes < (std::uint64_t(1) << 20))
    throw invalid_input_error("memory_budget_bytes must be at least 1 MiB, got " + std::to_string(o.memory_budget_bytes));
  if (o.retrain && o.num_indices_to_merge)
    throw invalid_input_error("optimize: retrain rebuilds the whole index; num_indices_to_merge does not apply");
  const auto base = dataset::load_latest(root);
  if (!base) throw invalid_input_error("'" + root + "' is not a Lance dataset (no versions)");
  const auto ds = dataset::dataset::open(root, base->version());
  std::vector<std::string> names;
  for (const auto& i : list_indices(*base)) {
    if (!o.name.empty() && i.name != o.name) continue;
    if (o.name.empty() && i.index_type.rfind("IVF_", 0) != 0) continue;
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  }
  if (!o.name.empty() && names.empty()) {
    std::string all;
    for (const auto& i : base->file.indices) all += (all.empty() ? "" : ", ") + i.name;
    throw invalid_input_error("no index named '" + o.name + "' (indexes: " + (all.empty() ? "none" : all) + ")");
  }
  optimize_result r;
  r.version = base->version();
  std::vector<optimize_detail::planned_change> changes;
  const auto cleanup = [&] {
    for (const auto& c : changes)
      if (!c.directory.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(c.directory, ec);
      }
  };
  try {
    for (const auto& n : names) changes.push_back(optimize_detail::optimize_one(root, *base, ds, n, o));
  } catch (...) {
    cleanup();
    throw;
  }
  if (o.retrain) {
    // A full build per index, each committed on its own.
    for (auto& c : changes) {
      const auto seg = open_vector_index(*dataset::load_latest(root), "", c.result.name);
      build_options b;
      b.column = seg.info.columns.at(0);
      b.name = c.result.name;
      b.replace = true;
      b.metric = seg.index_file.distance;
      b.pool = o.pool;
      const auto& q = seg.storage->quantizer();
      b.type = optimize_detail::type_of(q);
      if (seg.index_file.sub_index_key == hnsw::metadata_key) {
        const auto gp = recorded_hnsw_params(seg.index_file, "index '" + c.result.name + "'");
        b.type = b.type == ivf_index_type::ivf_pq   ? ivf_index_type::ivf_hnsw_pq
                 : b.type == ivf_index_type::ivf_sq ? ivf_index_type::ivf_hnsw_sq
                                                    : ivf_index_type::ivf_hnsw_flat;
        b.m = gp.m;
        b.ef_construction = gp.ef_construction;
        b.max_level = gp.max_level;
      }
      b.num_partitions = seg.searcher->num_partitions();
      if (const auto* p = std::get_if<pq_params>(&q)) b.num_sub_vectors = p->num_sub_vectors, b.num_bits = p->num_bits;
      const auto built = build_ivf_index(root, b);
      c.result.segments_merged = c.result.segments_before;
      c.result.segments_after = 1;
      c.result.num_partitions = built.num_partitions;
      c.result.rows_in_segment = built.rows_indexed;
      c.result.uuid = built.index.uuid;
      r.version = built.version;
      r.retries += built.retries;
      r.indices.push_back(c.result);
    }
    return r;
  }
  std::vector<pb::index_metadata> added, removed;
  for (auto& c : changes) {
    if (c.added) added.push_back(*c.added);
    removed.insert(removed.end(), c.removed.begin(), c.removed.end());
    r.indices.push_back(c.result);
  }
  if (added.empty()) return r;
  try {
    if (o.on_progress) o.on_progress({"", optimize_stage::commit, 0, 1});
    const auto after = optimize_detail::commit_segments(root, *base, std::move(added), removed, &r.retries);
    r.version = after.version();
    if (o.on_progress) o.on_progress({"", optimize_stage::commit, 1, 1});
  } catch (...) {
    cleanup();
    throw;
  }
  return r;
}

// An IVF_FLAT index over `column` with the centroids given (k x dim, row-major f32)
// instead of trained ones: every row assigned to its nearest centroid. Committed as
// the next version, like build_ivf_index; a target partition size given is recorded
// in the index's details for later optimisation (Lance's and ours).
inline build_result create_ivf_flat_with_centroids(const std::string& root, const std::string& column,
                                                   const std::vector<float>& centroids, std::size_t k,
                                                   simd::distance_type metric = simd::distance_type::l2,
                                                   const std::string& name = {},
                                                   std::optional<std::size_t> target_partition_size = {}) {
  if (target_partition_size && *target_partition_size == 0)
    throw invalid_input_error("target_partition_size must be positive");
  const auto base = dataset::load_latest(root);
  if (!base) throw invalid_input_error("'" + root + "' is not a Lance dataset (no versions)");
  if (k == 0 || centroids.empty() || centroids.size() % k)
    throw invalid_input_error("centroids: " + std::to_string(centroids.size()) + " values do not form " +
                              std::to_string(k) + " centroids");
  if (metric == simd::distance_type::hamming) throw invalid_input_error("hamming indexes are not built this way");
  const std::size_t dim = centroids.size() / k;
  const auto ds = dataset::dataset::open(root, base->version());
  const auto schema = ds.to_batch({.columns = {column}, .limit = 0}).schema;
  const auto& t = *schema->fields.at(0).type;
  if (t.id != arrow::type_id::fixed_size_list || std::size_t(t.list_size) != dim ||
      t.children.at(0).type->id != arrow::type_id::float32)
    throw invalid_input_error("column '" + column + "' is " + arrow::to_string(t) + ", not a fixed-size list of " +
                              std::to_string(dim) + " float32");
  const std::string index_name = name.empty() ? column + "_idx" : name;
  for (const auto& im : base->file.indices)
    if (im.name == index_name) throw invalid_input_error("the dataset already has an index named '" + index_name + "'");
  quantizer_params q = flat_params{std::uint32_t(dim), element_type::f32};
  optimize_detail::encoder enc(q, metric, centroids, dim);
  const auto uuid = pb::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  std::uint64_t skipped = 0, n = 0;
  try {
    shuffler sh(k, q, dir + "/_shuffle", std::uint64_t(512) << 20);
    auto sc = ds.scan({.columns = {column}, .with_row_id = true});
    optimize_detail::entry_batch eb;
    eb.dim = dim;
    shuffle_batch sb;
    while (auto b = sc.next()) {
      const auto& col = *b->columns[0];
      const float* vals = col.children[0]->values<float>() + std::size_t(col.offset) * dim;
      const auto* rid = b->columns[1]->values<std::uint64_t>();
      eb.clear();
      for (std::int64_t r = 0; r < col.length; ++r) {
        const float* v = vals + std::size_t(r) * dim;
        if (!col.is_valid(r) || !optimize_detail::usable_row(v, dim, metric)) {
          ++skipped;
          continue;
        }
        eb.add(rid[r], v, nullptr);
      }
      eb.part.resize(eb.size());
      optimize_detail::route(metric, centroids, dim, eb.rows.data(), eb.size(), eb.part.data(), nullptr);
      sb = shuffle_batch{};
      enc.encode(eb, sb, nullptr);
      sh.add(sb);
      n += eb.size();
    }
    auto model = ivf_model::with_centroids(matrix::of(centroids, k, dim));
    const auto files = write_index_directory(dir, ds.storage_version(), model, q, metric,
                                             [&](auto& aux) { sh.write_partitions(aux); });
    std::error_code ec;
    std::filesystem::remove_all(dir + "/_shuffle", ec);
    index_spec spec;
    spec.column = column;
    spec.name = index_name;
    spec.quantizer = q;
    spec.distance = metric;
    auto meta = make_index_metadata(base->manifest(), spec, uuid, files);
    if (target_partition_size) persist_target_partition_size(meta, *target_partition_size);
    const auto after = commit_index(root, *base, std::move(meta));
    build_result r;
    for (const auto& im : after.file.indices)
      if (im.uuid == uuid) r.index = im;
    r.version = after.version();
    r.num_partitions = k;
    r.rows_indexed = n;
    r.rows_skipped = skipped;
    r.directory = dir;
    return r;
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    throw;
  }
}

}  // namespace lancet::index
