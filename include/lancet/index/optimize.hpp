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
// - Otherwise the plan (plan_partitions, partition_planner.hpp) over the partition
//   sizes summed over the delta and every segment decides: a steady state writes the
//   delta only; splits (or else joins) merge every segment with the delta into one
//   rebalanced segment.
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
// Stages (detail, run by optimize_one; reported through on_progress):
//   scan_unindexed   scan_delta: the delta assigned, encoded, shuffled;
//   plan             plan_stage: the plan, and the segments to merge;
//   split            candidate_rows (the rows of partitions that may move) and
//                    move_partitions: new centroids per split partition (or, joins,
//                    the survivors renumbered);
//   reassign / join  keep_entries (what stays) then reencode_stage (the rows that
//                    move, to the nearest new centroid or, joins, join_chooser);
//   merge_partitions write_segment: the new segment's files and metadata;
//   commit           optimize_indices: one commit for every index optimised.
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
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <variant>
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
#include "lancet/index/partition_planner.hpp"
#include "lancet/index/quantizer/pq.hpp"
#include "lancet/index/quantizer/rabitq.hpp"
#include "lancet/index/quantizer/sq.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/remap.hpp"
#include "lancet/index/vector_index.hpp"

namespace lancet::index {

namespace detail {
// Lance 12's constants (the planner's are in partition_planner.hpp).
inline constexpr std::size_t reassign_range = 64;        // neighbour partitions considered
inline constexpr std::size_t split_sample_per_piece = 256;
inline constexpr std::uint64_t default_fetch_chunk_bytes = std::uint64_t(32) << 20;
inline constexpr std::size_t route_batch_rows = 1024;
}  // namespace detail

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
  std::uint64_t fetch_chunk_bytes = detail::default_fetch_chunk_bytes;
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

namespace detail {

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
    std::visit(
        [this](const auto& qp) {
          using P = std::remove_cvref_t<decltype(qp)>;
          if constexpr (std::is_same_v<P, flat_params>) {
            if (qp.element == element_type::u8)
              throw unsupported_error("optimize: lancet re-encodes IVF_FLAT indexes over float vectors only (this one "
                                      "stores uint8)");
          } else if constexpr (std::is_same_v<P, pq_params>) {
            pqm = pq::from_params<float>(qp, metric);
          } else if constexpr (std::is_same_v<P, sq_params>) {
            sqm = sq::from_params(qp);
          } else {
            if (qp.num_bits != 1)
              throw unsupported_error("optimize: lancet re-encodes 1-bit IVF_RQ indexes only (this one has " +
                                      std::to_string(qp.num_bits) + " bits)");
            rqm = rabitq::from_params(qp);
          }
        },
        q);
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
        for (std::size_t r = 0; r < n; ++r) quantizer::normalise_row_double(v.data() + r * dim, dim);
      std::memcpy(codes, v.data(), n * width);
      return;
    }
    std::vector<float> v(rows, rows + n * dim);
    if (cos)
      for (std::size_t i = 0; i < n; ++i) quantizer::normalise_row_double(v.data() + i * dim, dim);
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
    if (pqm) {
      pq::encode_for_ivf(*pqm, rows, n, metric, cents.data(), k, part, codes, pool);
    } else if (sqm) {
      sq::encode_for_ivf(*sqm, rows, n, metric, codes, pool);
    } else if (rqm) {
      rabitq::encoded_rows er;
      rabitq::encode_for_ivf(*rqm, rows, n, metric, cents.data(), k, part, er, pool);
      std::memcpy(codes, er.codes.data(), n * width);
      out.add_factors.insert(out.add_factors.end(), er.add_factors.begin(), er.add_factors.end());
      out.scale_factors.insert(out.scale_factors.end(), er.scale_factors.begin(), er.scale_factors.end());
      out.error_factors.insert(out.error_factors.end(), er.error_factors.begin(), er.error_factors.end());
    } else {
      flat_codes(rows, wide, n, codes);  // the flat quantizer: no model
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
inline dataset::snapshot commit_optimized_segments(const std::string& root, const dataset::snapshot& base,
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


// What optimising one index produced, before the commit.
struct planned_change {
  index_optimize_result result;
  std::optional<pb::index_metadata> added;
  std::vector<pb::index_metadata> removed;
  std::string directory;  // of the new segment, removed if the commit fails
};

// ---------------------------------------------------------------------------------
// The stages of optimising one index (optimize_one runs them in this order)
// ---------------------------------------------------------------------------------

// An index's segments, oldest first (manifest order), and what every stage reads of
// them: one column, one IVF model, one quantizer and one sub-index for all.
struct index_segments {
  std::string name;
  std::vector<index_segment> segs;
  std::vector<const pb::index_metadata*> metas;
  std::string column;
  simd::distance_type metric = simd::distance_type::l2;
  quantizer_params q;
  std::optional<hnsw::build_params> graph;  // IVF_HNSW_*: every new segment's graphs
  std::vector<float> cents;                 // the centroids, widened to float
  std::size_t dim = 0;
  std::size_t k0 = 0;                       // partitions
  std::size_t width = 0;                    // code bytes per entry
  std::size_t target = 0;                   // the plan's target partition size

  const index_segment& newest() const { return segs.back(); }
  const matrix& centroids() const { return *segs.back().index_file.ivf.centroids; }
  // Routing compares by l2 (of normalised rows under cosine) or by dot.
  simd::distance_type route_metric() const noexcept {
    return metric == simd::distance_type::dot ? metric : simd::distance_type::l2;
  }
};

// Opens the segments of index `name` and checks one plan can cover them all.
inline index_segments open_segments(const std::string& root, const dataset::snapshot& base, const std::string& name,
                                    const optimize_options& o) {
  index_segments ix;
  ix.name = name;
  for (const auto& im : base.file.indices) {
    if (im.name != name) continue;
    ix.segs.push_back(open_index_segment(root, describe_index(base.manifest(), im)));
    ix.metas.push_back(&im);
  }
  if (ix.segs.empty()) throw invalid_input_error("no index named '" + name + "'");
  const auto& newest = ix.newest();
  ix.column = newest.info.columns.empty() ? std::string() : newest.info.columns[0];
  if (ix.column.empty()) throw corrupt_error("index '" + name + "' names no column of the dataset");
  ix.metric = newest.index_file.distance;
  if (ix.metric == simd::distance_type::hamming)
    throw unsupported_error("index '" + name + "': lancet does not optimise hamming indexes");
  const matrix& cm = ix.centroids();
  ix.dim = cm.cols;
  ix.q = newest.storage->quantizer();
  for (const auto& s : ix.segs)
    if (!(*s.index_file.ivf.centroids == cm) || !(s.storage->quantizer() == ix.q))
      throw unsupported_error("index '" + name + "': its segments have different IVF models or quantizers; "
                              "optimise with retrain to rebuild it");
  if (newest.index_file.sub_index_key == detail::hnsw_metadata_key)
    ix.graph = recorded_hnsw_params(newest.index_file, "index '" + name + "'");
  for (const auto& s : ix.segs)
    if (s.index_file.sub_index_key != newest.index_file.sub_index_key)
      throw unsupported_error("index '" + name + "': its segments have different sub-indexes (" +
                              s.index_file.sub_index_key + ", " + newest.index_file.sub_index_key +
                              "); optimise with retrain to rebuild it");
  ix.cents = matrix_floats(cm);
  ix.k0 = cm.rows;
  ix.width = code_bytes(ix.q);
  const auto persisted = persisted_target_partition_size(*ix.metas.back());
  ix.target = o.target_partition_size.value_or(persisted ? std::size_t(*persisted)
                                                         : default_target_partition_size(ivf_index_type_of(ix.q)));
  if (ix.target == 0) throw invalid_input_error("target_partition_size must be positive");
  return ix;
}

// The version's fragments, and those no segment covers (the delta's).
struct fragment_coverage {
  std::set<std::uint64_t> current;
  std::vector<std::uint64_t> unindexed;
};

inline fragment_coverage cover_fragments(const dataset::snapshot& base, const index_segments& ix) {
  fragment_coverage c;
  std::set<std::uint64_t> covered;
  for (const auto& f : base.manifest().fragments) c.current.insert(f.id);
  for (const auto& s : ix.segs)
    for (auto f : s.info.fragment_ids) covered.insert(f);
  for (auto f : c.current)
    if (!covered.count(f)) c.unindexed.push_back(f);
  return c;
}

// What the stages of one index's optimisation share besides the segments.
struct optimize_run {
  const dataset::dataset& ds;
  const optimize_options& o;
  const index_segments& ix;
  bool multi = false;  // a multivector column (a list of vectors per row)
  std::string spill;   // where the shuffles spill

  void report(optimize_stage s, std::uint64_t done, std::uint64_t total) const {
    detail::report_optimize_progress(o, ix.name, s, done, total);
  }
  // The vector column and row ids of some fragments, decoded at most
  // fetch_chunk_bytes at a time.
  dataset::scanner scan_vectors(std::vector<std::uint64_t> fragment_ids) const {
    dataset::scan_options so;
    so.columns = {ix.column};
    so.with_row_id = true;
    so.fragment_ids = std::move(fragment_ids);
    so.read_ahead_bytes = o.fetch_chunk_bytes;
    so.batch_size = std::max<std::uint64_t>(
        1, o.fetch_chunk_bytes / std::max<std::uint64_t>(1, ix.dim * sizeof(float)) / (multi ? 64 : 1));
    return ds.scan(so);
  }
};

// The delta's row ids per partition: the plan and the reindexing need ids only.
struct delta_rows {
  std::vector<std::vector<std::uint64_t>> ids;
  std::uint64_t count = 0;  // vectors added
};

// Stage scan_unindexed: rows appended since take the index's centroids and quantizer
// as they are (a multivector row: each of its vectors, under the row's id), and go to
// the delta's shuffler.
inline delta_rows scan_delta(const optimize_run& run, const encoder& enc, const std::vector<std::uint64_t>& unindexed,
                             shuffler& delta_sh) {
  const auto& ix = run.ix;
  delta_rows delta;
  delta.ids.resize(ix.k0);
  run.report(optimize_stage::scan_unindexed, 0, unindexed.size());
  if (!unindexed.empty()) {
    auto sc = run.scan_vectors(unindexed);
    entry_batch eb;
    eb.dim = ix.dim;
    shuffle_batch sb;
    const auto flush = [&] {
      eb.part.resize(eb.size());
      route(ix.metric, ix.cents, ix.dim, eb.rows.data(), eb.size(), eb.part.data(), run.o.pool);
      sb = shuffle_batch{};
      enc.encode(eb, sb, run.o.pool);
      delta_sh.add(sb);
      for (std::size_t i = 0; i < eb.size(); ++i) delta.ids[eb.part[i]].push_back(eb.ids[i]);
      delta.count += eb.size();
      eb.clear();
    };
    while (auto b = sc.next()) {
      const auto* rid = b->columns[1]->values<std::uint64_t>();
      for_each_vector(*b->columns[0], ix.dim, ix.metric, ix.column, [&](std::int64_t r, const float* v, const double* w) {
        eb.add(rid[r], v, w);
        if (eb.size() == route_batch_rows) flush();
      });
      b.reset();
      detail::release_free_memory();
    }
    if (eb.size()) flush();
  }
  run.report(optimize_stage::scan_unindexed, unindexed.size(), unindexed.size());
  return delta;
}

// What the new segment does: the plan's splits / joins, and how many of the newest
// segments it merges.
struct merge_plan {
  partition_plan plan;
  std::size_t merge_n = 0;
};

// Stage plan: num_indices_to_merge merges without adjusting partitions; otherwise the
// plan over the partition sizes summed over the delta and every segment, and a plan
// that does anything merges every segment.
inline merge_plan plan_stage(const optimize_run& run, const delta_rows& delta) {
  const auto& ix = run.ix;
  merge_plan mp;
  if (run.o.num_indices_to_merge) {
    mp.merge_n = std::min(*run.o.num_indices_to_merge, ix.segs.size());
    return mp;
  }
  std::vector<std::uint64_t> sizes(ix.k0, 0);
  for (std::size_t p = 0; p < ix.k0; ++p) {
    sizes[p] = delta.ids[p].size();
    for (const auto& s : ix.segs) sizes[p] += s.storage->ivf().lengths.at(p);
  }
  run.report(optimize_stage::plan, 0, 1);
  mp.plan = plan_partitions(sizes, ix.target);
  run.report(optimize_stage::plan, 1, 1);
  if (!mp.plan.empty()) mp.merge_n = ix.segs.size();
  return mp;
}

// The segments the new one merges (the newest merge_n) and their rows still live.
struct merged_segments {
  const index_segments& ix;
  std::size_t first = 0;              // the oldest merged segment
  std::set<std::uint64_t> fragments;  // theirs still in the version
  id_set live;                        // their fragments' rows not deleted since

  // Their entries, newest segment first, one partition read at a time: a row held by
  // a newer segment is dropped from older ones, all its entries at once (a
  // multivector row has several, in one segment). fn(p, contents, i) per entry kept;
  // returns the entries dropped (rows deleted, rewritten or held by a newer segment).
  template <class Fn>
  std::uint64_t for_each_kept(Fn&& fn) const {
    std::uint64_t dropped = 0;
    id_set claimed, mine;
    for (std::size_t i = ix.segs.size(); i-- > first;) {
      mine.ids.clear();
      for (std::size_t p = 0; p < ix.k0; ++p) {
        const auto c = ix.segs[i].storage->read_partition(p);
        const auto d = c.view();
        for (std::size_t r = 0; r < c.size(); ++r) {
          const auto id = c.row_ids[r];
          if (!live.contains(id) || claimed.contains(id)) {
            ++dropped;
            continue;
          }
          if (i > first) mine.ids.push_back(id);  // the oldest claims for no one
          fn(std::uint32_t(p), d, r);
        }
        detail::release_free_memory();  // glibc would keep the freed reads resident
      }
      mine.seal();
      claimed.merge(mine);
    }
    return dropped;
  }
};

// Live rows of the merged segments' fragments: deleted / rewritten rows drop out.
inline merged_segments merged_rows(const optimize_run& run, const fragment_coverage& cov, std::size_t merge_n) {
  const auto& ix = run.ix;
  merged_segments m{ix, ix.segs.size() - merge_n, {}, {}};
  for (std::size_t i = m.first; i < ix.segs.size(); ++i)
    for (auto f : ix.segs[i].info.fragment_ids) {
      if (!cov.current.count(f) || !m.fragments.insert(f).second) continue;
      const auto ids = run.ds.fragment_row_ids(f);
      const auto dv = run.ds.deleted_rows(f);
      for (std::size_t r = 0; r < ids.size(); ++r)
        if (!dv.contains(r)) m.live.ids.push_back(ids[r]);
    }
  m.live.seal();
  return m;
}

// Row ids (entries) per partition, of the merged segments and the delta.
using partition_rows = std::map<std::uint32_t, std::vector<std::uint64_t>>;

// The partitions a split or join may move (a split one and its neighbours, or the
// joined ones) with their rows: the split samples and the reindexing read them.
inline partition_rows candidate_rows(const optimize_run& run, const partition_plan& plan,
                                     const merged_segments& merged, const delta_rows& delta) {
  const auto& ix = run.ix;
  partition_rows cand;
  for (const auto& sp : plan.splits) {
    cand[sp.partition];
    for (auto c : nearest_centroids(ix.metric, ix.cents, ix.dim, sp.partition, reassign_range)) cand[c];
  }
  if (plan.splits.empty())
    for (auto j : plan.joins) cand[j];
  if (!cand.empty()) {
    run.report(optimize_stage::split, 0, plan.splits.size());
    merged.for_each_kept([&](std::uint32_t p, const partition_data& d, std::size_t r) {
      const auto it = cand.find(p);
      if (it != cand.end()) it->second.push_back(d.row_ids[r]);
    });
    for (auto& [p, ids] : cand) ids.insert(ids.end(), delta.ids[p].begin(), delta.ids[p].end());
  }
  return cand;
}

// The new segment's partitions: its centroids, and where old partitions' entries go.
struct partition_moves {
  std::vector<float> cents;          // k1 x dim
  std::vector<std::uint32_t> from;   // old partitions whose rows are all reindexed
  std::vector<std::uint32_t> renum;  // old partition -> new one of its kept entries
  std::vector<bool> alive;           // old partitions that are not joined away
  std::size_t k1(std::size_t dim) const noexcept { return cents.size() / dim; }
};

// Centroids splitting partition sp, trained on an even sample of its rows `ids`: the
// k-means centroids that win some sampled row against the old centroid and its
// neighbours (an exact tie goes to the old ones); none when fewer than two do.
inline std::vector<float> split_centroids(const optimize_run& run, const partition_split& sp,
                                          std::vector<std::uint64_t> ids) {
  const auto& ix = run.ix;
  const std::size_t dim = ix.dim;
  const auto route_metric = ix.route_metric();
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const std::size_t want = std::size_t(sp.ways) * split_sample_per_piece;
  const std::size_t m = std::min(want, ids.size());
  std::vector<std::uint64_t> sample(m);
  for (std::size_t j = 0; j < m; ++j) sample[j] = ids[std::size_t(std::uint64_t(j) * ids.size() / m)];
  std::vector<std::uint64_t>().swap(ids);
  std::vector<float> rows;
  fetch_vectors_chunked(run.ds, ix.column, dim, ix.metric, sample, run.o.fetch_chunk_bytes, run.multi,
                        [&](std::uint64_t, const float* v, const double*) { rows.insert(rows.end(), v, v + dim); });
  if (run.multi && !rows.empty()) {
    // A multivector row's vectors in this partition: those nearest its centroid.
    std::vector<std::uint32_t> at(rows.size() / dim);
    route(ix.metric, ix.cents, dim, rows.data(), at.size(), at.data(), run.o.pool);
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
  if (ix.metric == simd::distance_type::cosine)
    for (std::size_t i = 0; i < ns; ++i) quantizer::normalise_row_double(rows.data() + i * dim, dim);
  const std::size_t ways = std::min<std::size_t>(sp.ways, ns);
  if (ways < 2) return {};
  std::set<std::vector<float>> distinct;
  for (std::size_t i = 0; i < ns && distinct.size() < ways; ++i)
    distinct.insert(std::vector<float>(rows.begin() + std::ptrdiff_t(i * dim), rows.begin() + std::ptrdiff_t((i + 1) * dim)));
  kmeans_params kp;
  kp.seed = sp.partition;
  kp.distance = route_metric;
  kp.sample_rate = 0;
  kp.hierarchical_k = (ways > 256 && distinct.size() >= ways) ? 16 : 1;
  const auto km = train_kmeans(rows.data(), ns, dim, ways, kp, run.o.pool);
  auto window = nearest_centroids(ix.metric, ix.cents, dim, sp.partition, reassign_range);
  window.insert(window.begin(), sp.partition);
  std::vector<bool> wins(ways, false);
  for (std::size_t i = 0; i < ns; ++i) {
    const float* r = rows.data() + i * dim;
    float best_old = std::numeric_limits<float>::infinity();
    for (auto c : window) best_old = std::min(best_old, route_distance(route_metric, r, ix.cents.data() + c * dim, dim));
    float best_new = std::numeric_limits<float>::infinity();
    std::size_t arg = 0;
    for (std::size_t c = 0; c < ways; ++c) {
      const float d = route_distance(route_metric, r, km.centroids.data() + c * dim, dim);
      if (d < best_new) best_new = d, arg = c;
    }
    if (best_new < best_old) wins[arg] = true;
  }
  std::vector<float> out;
  for (std::size_t c = 0; c < ways; ++c)
    if (wins[c]) out.insert(out.end(), km.centroids.begin() + std::ptrdiff_t(c * dim),
                            km.centroids.begin() + std::ptrdiff_t((c + 1) * dim));
  if (out.size() < 2 * dim) out.clear();  // left as is
  return out;
}

// Stage split: each split partition's centroid replaced by the first of its new
// ones, the others appended; the rows of the split partitions and of their
// neighbours are reindexed (routed with the new centroids).
inline void split_stage(const optimize_run& run, const partition_plan& plan, const partition_rows& cand,
                        partition_moves& m, index_optimize_result& res) {
  const auto& ix = run.ix;
  const std::size_t dim = ix.dim;
  std::vector<std::uint32_t> done_splits;
  std::size_t step = 0;
  for (const auto& sp : plan.splits) {
    run.report(optimize_stage::split, step++, plan.splits.size());
    const auto nc = split_centroids(run, sp, cand.at(sp.partition));
    if (nc.empty()) continue;
    std::copy(nc.begin(), nc.begin() + std::ptrdiff_t(dim), m.cents.begin() + std::ptrdiff_t(sp.partition * dim));
    m.cents.insert(m.cents.end(), nc.begin() + std::ptrdiff_t(dim), nc.end());
    res.splits.push_back({sp.partition, std::uint32_t(nc.size() / dim)});
    done_splits.push_back(sp.partition);
    detail::release_free_memory();
  }
  run.report(optimize_stage::split, plan.splits.size(), plan.splits.size());
  std::vector<bool> affected(ix.k0, false);
  for (auto p : done_splits) {
    affected[p] = true;
    for (auto c : nearest_centroids(ix.metric, ix.cents, dim, p, reassign_range)) affected[c] = true;
  }
  for (std::size_t p = 0; p < ix.k0; ++p)
    if (affected[p]) m.from.push_back(std::uint32_t(p));
}

// The joined partitions' centroids leave and the survivors are renumbered in order;
// the joined partitions' rows are reindexed.
inline void join_renumbering(const index_segments& ix, const std::vector<std::uint32_t>& joins, partition_moves& m) {
  m.from = joins;
  for (auto j : joins) m.alive[j] = false;
  m.cents.clear();
  std::uint32_t k1 = 0;
  for (std::size_t p = 0; p < ix.k0; ++p)
    if (m.alive[p]) {
      m.renum[p] = k1++;
      m.cents.insert(m.cents.end(), ix.cents.begin() + std::ptrdiff_t(p * ix.dim),
                     ix.cents.begin() + std::ptrdiff_t((p + 1) * ix.dim));
    }
}

// The new segment's partitions under the plan (splits take precedence over joins).
inline partition_moves move_partitions(const optimize_run& run, const partition_plan& plan, const partition_rows& cand,
                                       index_optimize_result& res) {
  const auto& ix = run.ix;
  partition_moves m;
  m.cents = ix.cents;
  m.alive.assign(ix.k0, true);
  m.renum.resize(ix.k0);
  for (std::size_t p = 0; p < ix.k0; ++p) m.renum[p] = std::uint32_t(p);
  if (!plan.splits.empty()) split_stage(run, plan, cand, m, res);
  else if (!plan.joins.empty()) join_renumbering(ix, plan.joins, m);
  return m;
}

// The rows to reindex, sorted by row id, each once with a partition it had an entry
// in. All their entries leave (a multivector row's entries elsewhere too): all their
// vectors are routed again.
struct reindex_rows {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> rows;

  const std::pair<std::uint64_t, std::uint32_t>* find(std::uint64_t id) const {
    const auto it = std::lower_bound(rows.begin(), rows.end(), id,
                                     [](const auto& a, std::uint64_t v) { return a.first < v; });
    return it != rows.end() && it->first == id ? &*it : nullptr;
  }
};

// Every row with an entry in a `from` partition (cand is emptied: its ids move here).
inline reindex_rows rows_to_reindex(const std::vector<std::uint32_t>& from, partition_rows& cand) {
  reindex_rows want;
  auto& w = want.rows;
  for (auto p : from)
    for (auto id : cand.at(p)) w.push_back({id, p});
  cand.clear();
  std::stable_sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  w.erase(std::unique(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.first == b.first; }), w.end());
  return want;
}

// Stage merge (entries that stay): the merged segments' (newest first) and then the
// delta's entries of rows not reindexed go to the new segment's shuffler under their
// partition's new number; fill counts them per new partition. Returns the entries
// dropped.
inline std::uint64_t keep_entries(const index_segments& ix, const merged_segments& merged, shuffler& delta_sh,
                                  const reindex_rows& want, const partition_moves& m, shuffler& out_sh,
                                  std::vector<std::uint64_t>& fill) {
  shuffle_batch sb;
  const auto keep = [&](std::uint32_t p, const partition_data& d, std::size_t r) {
    if (want.find(d.row_ids[r])) return;
    const std::uint32_t to = m.renum[p];
    append_entry(sb, to, d, r, ix.width);
    ++fill[to];
    if (sb.size() >= route_batch_rows) out_sh.add(sb), sb = shuffle_batch{};
  };
  const auto dropped = merged.for_each_kept(keep);
  partition_visitor visit{[&](std::uint32_t p, const partition_data& d) {
    for (std::size_t r = 0; r < d.size(); ++r) keep(p, d, r);
  }};
  delta_sh.write_partitions(visit);
  if (sb.size()) out_sh.add(sb);
  return dropped;
}

// Where a vector of a joined partition's row goes: choose(source partition,
// normalised vector) returns its new partition.
using partition_chooser = std::function<std::uint32_t(std::uint32_t, const float*)>;

// Stage reassign: re-reads the rows to reindex (scanning the fragments that hold
// them, decoded at most fetch_chunk_bytes at a time), routes each vector to
// choose(...) or (no choose) its nearest new centroid, route_batch_rows vectors at a
// time, re-encodes them and hands them to the new segment's shuffler.
inline void reencode_stage(const optimize_run& run, const reindex_rows& want, const std::vector<float>& cents,
                           std::vector<std::uint64_t> fragment_ids, shuffler& out_sh,
                           const partition_chooser& choose) {
  const auto& ix = run.ix;
  const std::size_t dim = ix.dim;
  const std::uint64_t rows_wanted = want.rows.size();
  run.report(optimize_stage::reassign, 0, rows_wanted);
  encoder e2(ix.q, ix.metric, cents, dim);
  std::uint64_t done = 0;
  auto sc = run.scan_vectors(std::move(fragment_ids));
  entry_batch eb;
  eb.dim = dim;
  shuffle_batch sb;
  std::vector<float> r(dim);
  const auto flush = [&] {
    if (!choose) {  // nearest of all the new centroids, a batch at a time (SIMD)
      eb.part.resize(eb.size());
      route(ix.metric, cents, dim, eb.rows.data(), eb.size(), eb.part.data(), run.o.pool);
    }
    sb = shuffle_batch{};
    e2.encode(eb, sb, run.o.pool);
    out_sh.add(sb);
    done += eb.size();
    run.report(optimize_stage::reassign, std::min(done, rows_wanted), rows_wanted);
    eb.clear();
  };
  std::uint64_t found = 0;  // rows met so far (a row is met once)
  while (found < rows_wanted) {
    auto b = sc.next();
    if (!b) break;
    const auto* bid = b->columns[1]->values<std::uint64_t>();
    const auto& col = *b->columns[0];
    for (std::int64_t i = 0; i < col.length; ++i) found += want.find(bid[i]) != nullptr;
    for_each_vector(col, dim, ix.metric, ix.column, [&](std::int64_t i, const float* v, const double* w) {
      const auto* it = want.find(bid[i]);
      if (!it) return;  // a row null / unusable now is no longer indexed
      if (choose) {
        std::copy(v, v + dim, r.begin());
        if (ix.metric == simd::distance_type::cosine) quantizer::normalise_row_double(r.data(), dim);
        eb.part.push_back(choose(it->second, r.data()));
      }
      eb.add(bid[i], v, w);
      if (eb.size() == route_batch_rows) flush();
    });
    b.reset();
    detail::release_free_memory();
  }
  if (eb.size()) flush();
}

// A joined row's vector goes to the nearest survivor with room below the split
// threshold (the survivors' sizes counted after the reindexed rows' entries left):
// among the 64 survivors nearest its old centroid (the window), else among all; with
// no room anywhere, to the nearest of the window (an overflow row).
struct join_chooser {
  const index_segments& ix;
  const partition_moves& m;
  bool multi = false;
  std::vector<std::uint64_t>& fill;  // entries per new partition so far
  std::uint64_t threshold = 0;
  std::uint64_t& overflow_rows;
  std::map<std::uint32_t, std::vector<std::uint32_t>> windows;

  // The window of an old centroid: its nearest survivors (itself first when it survives).
  const std::vector<std::uint32_t>& window_of(std::uint32_t c) {
    auto it = windows.find(c);
    if (it != windows.end()) return it->second;
    std::vector<std::uint32_t> w;
    if (m.alive[c]) w.push_back(c);
    const auto near = nearest_centroids(ix.metric, ix.cents, ix.dim, c, reassign_range - w.size(), &m.alive);
    w.insert(w.end(), near.begin(), near.end());
    return windows.emplace(c, std::move(w)).first->second;
  }

  float distance(const float* r, std::size_t c) const {
    return route_distance(ix.route_metric(), r, ix.cents.data() + c * ix.dim, ix.dim);
  }

  // The first of `ranked` (distance, new partition) with room, after sorting.
  std::optional<std::uint32_t> first_with_room(std::vector<std::pair<float, std::uint32_t>>& ranked) {
    std::sort(ranked.begin(), ranked.end());
    for (const auto& [d, c] : ranked)
      if (fill[c] + 1 <= threshold) return ++fill[c], c;
    return std::nullopt;
  }

  std::uint32_t operator()(std::uint32_t src, const float* r) {
    // A multivector row's vectors each use the window of their own nearest old
    // centroid; a row's single vector that of its joined partition.
    std::uint32_t at = src;
    if (multi) {
      float best = std::numeric_limits<float>::infinity();
      for (std::size_t c = 0; c < ix.k0; ++c) {
        const float d = distance(r, c);
        if (d < best) best = d, at = std::uint32_t(c);
      }
    }
    std::vector<std::pair<float, std::uint32_t>> near;
    for (auto c : window_of(at)) near.push_back({distance(r, c), m.renum[c]});
    if (const auto c = first_with_room(near)) return *c;
    std::vector<std::pair<float, std::uint32_t>> all;
    for (std::size_t c = 0; c < ix.k0; ++c)
      if (m.alive[c]) all.push_back({distance(r, c), m.renum[c]});
    if (const auto c = first_with_room(all)) return *c;
    ++overflow_rows;
    const auto c = near.empty() ? all.front().second : near.front().second;
    ++fill[c];
    return c;
  }
};

// The new segment's centroids in the index's element type: exactly the old ones when
// no partition changed.
inline matrix new_centroids(const index_segments& ix, const partition_moves& m, const index_optimize_result& res) {
  const matrix& cm = ix.centroids();
  const std::size_t k1 = m.k1(ix.dim);
  if (k1 == ix.k0 && res.splits.empty() && res.joins.empty()) return cm;
  switch (cm.type) {
    case element_type::f16: {
      std::vector<simd::f16> v(m.cents.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = simd::f16(m.cents[i]);
      return matrix::of(v, k1, ix.dim);
    }
    case element_type::f64: {
      std::vector<double> v(m.cents.begin(), m.cents.end());
      return matrix::of(v, k1, ix.dim);
    }
    default: return k1 == ix.k0 ? cm : matrix::of(m.cents, k1, ix.dim);
  }
}

// Stage merge_partitions: the new segment's files in dir (auxiliary.idx from the
// shuffler, index.idx; IVF_HNSW_*: the partitions' graphs over the rows as stored)
// and its metadata, covering the merged segments' fragments and the delta's, with the
// original build's details and index version.
inline pb::index_metadata write_segment(const optimize_run& run, const dataset::snapshot& base, const pb::uuid& uuid,
                                        const std::string& dir, matrix centroids, shuffler& out_sh,
                                        std::vector<std::uint64_t> fragments) {  // sorted
  const auto& ix = run.ix;
  const auto version = ix.newest().index_file.version;
  auto model = ivf_model::with_centroids(std::move(centroids), ix.newest().index_file.ivf.loss);
  auto files = write_index_directory(dir, version, model, ix.q, ix.metric, [&](auto& aux) {
    out_sh.write_partitions(aux, [&](std::size_t p, std::size_t k) { run.report(optimize_stage::merge_partitions, p, k); });
  });
  if (ix.graph) {
    const auto size = write_hnsw_index_file(dir, version, model, ix.metric, *ix.graph, {}, run.o.pool);
    for (auto& f : files)
      if (f.path == detail::index_file_name) f.size_bytes = size;
  }
  index_spec spec;
  spec.column = ix.column;
  spec.name = ix.name;
  spec.quantizer = ix.q;
  spec.distance = ix.metric;
  spec.fragment_ids = std::move(fragments);
  auto meta = make_index_metadata(base.manifest(), spec, uuid, files);
  const auto& original = *ix.metas.back();
  meta.index_details = original.index_details;
  meta.index_version = original.index_version;
  meta.fields = original.fields;
  if (run.o.target_partition_size) persist_target_partition_size(meta, *run.o.target_partition_size);
  return meta;
}

// Optimises one index: runs the stages above and returns the new segment (written,
// not committed) and the segments it replaces.
inline planned_change optimize_one(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                   const std::string& name, const optimize_options& o) {
  planned_change out;
  auto& res = out.result;
  res.name = name;
  const auto ix = open_segments(root, base, name, o);
  res.segments_before = res.segments_after = ix.segs.size();
  const auto cov = cover_fragments(base, ix);
  if (o.retrain) {
    res.changed = true;
    return out;  // done by the caller (a full build)
  }

  // The new segment's directory; the shuffles spill under it (or o.spill_directory)
  // and are removed when done, the directory too unless the segment was written.
  const auto uuid = pb::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const optimize_run run{ds, o, ix, detail::is_multivector(ds, ix.column),
                         o.spill_directory.empty() ? dir + "/_shuffle"
                                                   : o.spill_directory + "/lancet-optimize-" + uuid.to_string()};
  struct spill_guard {
    std::string spill, dir;
    bool written = false;
    ~spill_guard() {
      std::error_code ec;
      std::filesystem::remove_all(spill, ec);
      if (!written) std::filesystem::remove_all(dir, ec);
    }
  } guard{run.spill, dir};

  const encoder enc(ix.q, ix.metric, ix.cents, ix.dim);  // also refuses what lancet cannot re-encode
  shuffler delta_sh(ix.k0, ix.q, run.spill + "/delta", o.memory_budget_bytes, o.pool);
  auto delta = scan_delta(run, enc, cov.unindexed, delta_sh);
  res.rows_added = delta.count;
  const auto [plan, merge_n] = plan_stage(run, delta);
  if (res.rows_added == 0 && merge_n == 0) return out;  // nothing to do
  if (res.rows_added == 0 && merge_n == 1 && plan.empty() && cov.unindexed.empty()) return out;  // one segment, as is

  const auto merged = merged_rows(run, cov, merge_n);
  auto cand = candidate_rows(run, plan, merged, delta);
  const auto moves = move_partitions(run, plan, cand, res);
  const std::size_t k1 = moves.k1(ix.dim);
  const auto want = rows_to_reindex(moves.from, cand);

  // The new segment's entries, streamed to a shuffler: those that stay, then the
  // reindexed rows.
  shuffler out_sh(k1, ix.q, run.spill + "/merge", o.memory_budget_bytes, o.pool);
  std::vector<std::uint64_t> fill(k1, 0);
  res.rows_dropped = keep_entries(ix, merged, delta_sh, want, moves, out_sh, fill);
  std::vector<std::vector<std::uint64_t>>().swap(delta.ids);
  // The fragments the new segment covers: the merged segments' and the delta's.
  std::vector<std::uint64_t> fragments(merged.fragments.begin(), merged.fragments.end());
  fragments.insert(fragments.end(), cov.unindexed.begin(), cov.unindexed.end());
  std::sort(fragments.begin(), fragments.end());
  if (!res.splits.empty()) {
    reencode_stage(run, want, moves.cents, fragments, out_sh, nullptr);
  } else if (!plan.joins.empty() && plan.splits.empty()) {
    join_chooser choose{ix, moves, run.multi, fill, split_threshold(ix.target), res.overflow_rows, {}};
    run.report(optimize_stage::join, 0, plan.joins.size());
    reencode_stage(run, want, moves.cents, fragments, out_sh, std::ref(choose));
    res.joins = plan.joins;
    run.report(optimize_stage::join, plan.joins.size(), plan.joins.size());
  }

  out.directory = dir;
  auto meta = write_segment(run, base, uuid, dir, new_centroids(ix, moves, res), out_sh, std::move(fragments));
  res.rows_in_segment = out_sh.rows();
  for (std::size_t i = merged.first; i < ix.segs.size(); ++i) out.removed.push_back(*ix.metas[i]);
  out.added = std::move(meta);
  res.changed = true;
  res.uuid = uuid;
  res.segments_merged = merge_n;
  res.segments_after = ix.segs.size() - merge_n + 1;
  res.num_partitions = k1;
  guard.written = true;  // from here the caller removes the directory if the commit fails
  return out;
}

}  // namespace detail

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
  std::vector<detail::planned_change> changes;
  const auto cleanup = [&] {
    for (const auto& c : changes)
      if (!c.directory.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(c.directory, ec);
      }
  };
  try {
    for (const auto& n : names) changes.push_back(detail::optimize_one(root, *base, ds, n, o));
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
      b.type = ivf_index_type_of(q);
      if (seg.index_file.sub_index_key == detail::hnsw_metadata_key) {
        const auto gp = recorded_hnsw_params(seg.index_file, "index '" + c.result.name + "'");
        b.type = with_hnsw(b.type);
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
    const auto after = detail::commit_optimized_segments(root, *base, std::move(added), removed, &r.retries);
    r.version = after.version();
    if (o.on_progress) o.on_progress({"", optimize_stage::commit, 1, 1});
  } catch (...) {
    cleanup();
    throw;
  }
  return r;
}

// An IVF_FLAT index over `column` with the centroids given (k x dim, row-major f32)
// instead of trained ones: build_ivf_index with them as build_options::ivf_centroids
// (every row assigned to its nearest centroid, the shuffle bounded by
// memory_budget_bytes), committed as the next version. A target partition size given
// is recorded in the index's details for later optimisation (Lance's and ours). Other
// index types, a pool or progress: set ivf_centroids on build_options directly.
inline build_result create_ivf_flat_with_centroids(const std::string& root, const std::string& column,
                                                   const std::vector<float>& centroids, std::size_t k,
                                                   simd::distance_type metric = simd::distance_type::l2,
                                                   const std::string& name = {},
                                                   std::optional<std::size_t> target_partition_size = {},
                                                   std::uint64_t memory_budget_bytes = build_options{}.memory_budget_bytes) {
  if (target_partition_size && *target_partition_size == 0)
    throw invalid_input_error("target_partition_size must be positive");
  if (k == 0 || centroids.empty() || centroids.size() % k)
    throw invalid_input_error("centroids: " + std::to_string(centroids.size()) + " values do not form " +
                              std::to_string(k) + " centroids");
  build_options b;
  b.column = column;
  b.type = ivf_index_type::ivf_flat;
  b.metric = metric;
  b.name = name;
  b.target_partition_size = target_partition_size;
  b.memory_budget_bytes = memory_budget_bytes;
  b.ivf_centroids = matrix::of(centroids, k, centroids.size() / k);
  return build_ivf_index(root, b);
}

}  // namespace lancet::index
