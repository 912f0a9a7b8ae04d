// Builds an IVF vector index over a dataset column the way Lance 12 does, stage by
// stage, and registers it in a new manifest version:
//
//   index::build_options o;  o.column = "vector";  o.type = index::ivf_index_type::ivf_pq;
//   auto r = index::build_ivf_index("/data/ds", o);   // r.index: the IndexMetadata committed
//
// Stages (reported through build_options::on_progress), each a reusable function of
// detail (index optimisation calls them too):
//   train_ivf        k-means (cosine: normalised, trained as l2; hamming: k-modes) on
//                    the whole column when its decoded rows fit memory_budget_bytes
//                    (as before: same centroids, same codes), else on a random sample
//                    of max(sample_rate x num_partitions, the quantizer's sample) rows
//                    read in one streaming pass; skipped with given ivf_centroids;
//   train_quantizer  PQ (residuals for l2/cosine, as Lance, taken in place on the
//                    training rows), SQ bounds, RaBitQ rotation, on the same rows;
//                    skipped with a given quantizer;
//   shuffle          the column streamed in batches: each assigned (SIMD kernels, or
//                    precomputed_partitions) and encoded by ivf_encoder, and handed to
//                    the shuffler (shuffler.hpp), which spills rows grouped by
//                    partition to temporary Lance files beyond a quarter of the budget;
//                    precomputed_shuffle_buffers replace this stage;
//   merge_partitions the spilled runs merged partition by partition, in partition
//                    order (windows read in parallel on the pool), into auxiliary.idx;
//                    then index.idx (IVF_HNSW_*: the partitions' graphs, built in
//                    windows that fit three quarters of the budget, written as done).
// Null vectors, vectors with a non-finite value, and (cosine) zero vectors are not
// indexed. A multivector column (a list of fixed-size-list vectors per row) indexes
// every vector under its row's id, with cosine distance only (Lance's rule).
// Distributed builds: train_ivf_model once, build segments over disjoint
// fragment_ids with commit = false (separate processes may do this), then
// commit_index_segments commits them as one index (same name, one IndexMetadata each).
// The dataset is only changed by the final commit: any error before it leaves it as it
// was (a half-written index directory and the spilled runs are removed).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "lancet/core/error.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/hnsw/index_file.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/hnsw/partition_graphs.hpp"
#include "lancet/index/storage_reader.hpp"
#include "lancet/index/storage_writer.hpp"
#include "lancet/index/ivf_model.hpp"
#include "lancet/index/kmeans.hpp"
#include "lancet/index/quantizer/flat.hpp"
#include "lancet/index/quantizer/pq.hpp"
#include "lancet/index/quantizer/rabitq.hpp"
#include "lancet/index/quantizer/sq.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/search.hpp"
#include "lancet/index/shuffler.hpp"
#include "lancet/index/vector_index.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index {

// Lance's target partition size per index type (IndexType::target_partition_size).
inline std::size_t default_target_partition_size(ivf_index_type t) noexcept {
  t = hnsw_base_type(t);
  return t == ivf_index_type::ivf_flat ? 4096 : 8192;
}

// Lance's recommended_num_partitions: rows / target, clamped to [1, 4096].
inline std::size_t recommended_num_partitions(std::uint64_t rows, std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  return std::size_t(std::clamp<std::uint64_t>(rows / target, 1, 4096));
}

enum class build_stage : std::uint8_t { train_ivf, train_quantizer, shuffle, merge_partitions };

inline std::string_view build_stage_name(build_stage s) noexcept {
  switch (s) {
    case build_stage::train_ivf: return "train_ivf";
    case build_stage::train_quantizer: return "train_quantizer";
    case build_stage::shuffle: return "shuffle";
    case build_stage::merge_partitions: return "merge_partitions";
  }
  return "?";
}

struct build_progress {
  build_stage stage;
  std::uint64_t done = 0;   // iterations (train_ivf), rows (shuffle), partitions (merge)
  std::uint64_t total = 0;
};

struct build_options {
  std::string column;
  ivf_index_type type = ivf_index_type::ivf_pq;
  std::optional<std::size_t> num_partitions;         // else rows / target_partition_size
  std::optional<std::size_t> target_partition_size;  // else Lance's default for the type
  std::optional<std::size_t> num_sub_vectors;        // PQ; default dim / 16 (or / 8, or 1)
  std::optional<std::uint32_t> num_bits;             // PQ 8 (or 4), SQ 8, RQ 1
  simd::distance_type metric = simd::distance_type::l2;
  std::string name;  // default "{column}_idx"
  bool replace = false;
  std::size_t sample_rate = 256;
  std::uint32_t max_iters = 50;
  std::uint64_t seed = 42;
  // IVF_HNSW_* graphs (Lance's HnswBuildParams; its defaults).
  std::uint32_t m = 20;
  std::uint32_t ef_construction = 150;
  std::uint16_t max_level = 7;
  boost::asio::thread_pool* pool = nullptr;
  std::function<void(const build_progress&)> on_progress;

  // Decoded rows held at once (the IVF k-means sample aside): scan read-ahead,
  // buffered encoded rows (spilled to temporary Lance files beyond a quarter of it),
  // merge reads, HNSW graphs, and PQ training (its rows and sub-vector k-means).
  // A column that fits is trained on whole, as today; a larger one on a sample.
  // PQ trains on Lance's sample (sample_rate x 2^num_bits rows) whenever the budget
  // holds it (512 MiB does for f32 vectors of up to about 1,900 dimensions, f16 of
  // 3,800, on a few cores); when it cannot, on as many rows as fit (at least
  // 2^num_bits): a deviation from Lance (a codebook from fewer rows), reported
  // through lancet::warn (core/warning.hpp).
  std::uint64_t memory_budget_bytes = std::uint64_t(512) << 20;
  std::string spill_directory;  // where runs are spilled; default: the index directory

  // A given model (Lance's ivf_centroids / precomputed codebook): no training. The
  // quantizer of PQ / RQ needs the centroids it was trained with.
  std::optional<matrix> ivf_centroids;          // num_partitions x dimension
  std::optional<quantizer_params> quantizer;    // of the index type
  // Row id -> partition (Lance's precomputed_partitions); other rows are assigned.
  std::shared_ptr<const std::unordered_map<std::uint64_t, std::uint32_t>> precomputed_partitions;
  // Already shuffled files (shuffler.hpp's run format, rows sorted by partition):
  // the column is not read. Needs ivf_centroids and quantizer.
  std::vector<std::string> precomputed_shuffle_buffers;

  // Distributed building: index only these fragments (a segment), and commit=false
  // to write the segment's files without committing (see commit_index_segments).
  std::optional<std::vector<std::uint64_t>> fragment_ids;
  bool commit = true;
};

// A trained model shared by the segments of a distributed build (train_ivf_model).
struct ivf_training {
  matrix centroids;
  quantizer_params quantizer;
};

struct build_result {
  pb::index_metadata index;       // as committed
  std::uint64_t version = 0;      // the dataset version that has the index
  std::size_t num_partitions = 0;
  std::uint64_t rows_indexed = 0;
  std::uint64_t rows_skipped = 0;  // null / non-finite / zero (cosine) vectors
  std::string directory;           // _indices/<uuid>
  std::size_t shuffle_runs = 0;    // temporary files spilled under the memory budget
  unsigned retries = 0;            // commits lost to other writers before this one won
  // With build_options::commit = false: index is the segment's IndexMetadata, not
  // committed, and version the dataset version it was built from.
};

namespace detail {

// Usable rows of a column (row-major, contiguous) with their row ids.
template <class T>
struct vectors {
  std::vector<T> values;
  std::vector<std::uint64_t> ids;
  std::size_t dim = 0;
  std::uint64_t skipped = 0;
  std::size_t rows() const noexcept { return ids.size(); }
  void clear() noexcept { values.clear(), ids.clear(); }
};

// Appends the usable rows of a batch (vector column, _rowid) to out. With `pick`
// (ascending live-row ordinals) only those rows are looked at; `seen` counts the
// live rows of the batches before this one.
template <class T>
inline void gather(const arrow::record_batch& b, std::size_t dim, simd::distance_type metric, vectors<T>& out,
                   const std::vector<std::uint64_t>* pick = nullptr, std::uint64_t seen = 0,
                   std::size_t* pick_at = nullptr) {
  const auto& col = *b.columns[0];
  const auto& ids = *b.columns[1];
  const std::uint64_t* id = ids.values<std::uint64_t>();
  // Multivector column (a list of vectors per row): every vector under the row's id.
  const bool multi = col.type->id == arrow::type_id::list;
  const auto& fsl = multi ? *col.children.at(0) : col;
  const T* base = fsl.children[0]->template values<T>() + std::size_t(fsl.offset) * dim;
  const std::int32_t* offs = multi ? col.values<std::int32_t>() : nullptr;
  const auto one = [&](std::int64_t v, std::uint64_t row_id) {
    const T* row = base + std::size_t(v) * dim;
    if (fsl.is_null(v) || !quantizer::indexable_row(row, dim, metric)) {
      ++out.skipped;
      return;
    }
    out.values.insert(out.values.end(), row, row + dim);
    out.ids.push_back(row_id);
  };
  const auto take = [&](std::int64_t r) {
    if (!multi) return one(r, id[r]);
    if (col.is_null(r)) return void(++out.skipped);
    for (std::int64_t v = offs[r]; v < offs[r + 1]; ++v) one(v, id[r]);
  };
  if (!pick) {
    for (std::int64_t r = 0; r < col.length; ++r) take(r);
    return;
  }
  const std::uint64_t end = seen + std::uint64_t(col.length);
  while (*pick_at < pick->size() && (*pick)[*pick_at] < end) take(std::int64_t((*pick)[(*pick_at)++] - seen));
}

inline void report_build_progress(const build_options& o, build_stage s, std::uint64_t done, std::uint64_t total) {
  if (o.on_progress) o.on_progress({s, done, total});
}

// Hands freed heap pages back to the system after each batch and stage: page reads
// and encoded batches of many sizes are allocated and freed all along, and glibc
// (whose mmap threshold grows with the largest block freed) would otherwise keep
// them resident, several times the memory actually in use.
inline void release_free_memory() noexcept {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The quantizer parameters build_options asks for, checked before any work.
struct quantizer_choice {
  std::size_t m_sub = 0;
  std::uint32_t bits = 0;
};

inline quantizer_choice check_parameters(const build_options& o, std::size_t dim) {
  quantizer_choice c;
  if (o.type == ivf_index_type::ivf_pq) {
    c.m_sub = o.num_sub_vectors.value_or(dim % 16 == 0 ? dim / 16 : dim % 8 == 0 ? dim / 8 : 1);
    c.bits = o.num_bits.value_or(8);
    if (c.m_sub == 0 || dim % c.m_sub != 0)
      throw invalid_input_error("IVF_PQ: num_sub_vectors " + std::to_string(c.m_sub) + " does not divide dimension " +
                                std::to_string(dim) + " of column '" + o.column + "'");
    if (c.bits != 8 && c.bits != 4)
      throw invalid_input_error("IVF_PQ: num_bits " + std::to_string(c.bits) + " is not supported (4 or 8)");
    if (c.bits == 4 && c.m_sub % 2)
      throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " + std::to_string(c.m_sub));
  } else if (o.type == ivf_index_type::ivf_sq) {
    c.bits = o.num_bits.value_or(8);
    if (c.bits != 8) throw invalid_input_error("IVF_SQ: num_bits " + std::to_string(c.bits) + " is not supported (8)");
  } else if (o.type == ivf_index_type::ivf_rq) {
    c.bits = o.num_bits.value_or(1);
    if (c.bits != 1) throw invalid_input_error("IVF_RQ: lancet builds 1-bit codes, not " + std::to_string(c.bits));
    if (dim % 8) throw invalid_input_error("IVF_RQ: dimension " + std::to_string(dim) + " is not a multiple of 8");
  } else if (o.num_sub_vectors || o.num_bits) {
    throw invalid_input_error("IVF_FLAT takes no num_sub_vectors / num_bits");
  }
  if (o.num_partitions && o.target_partition_size)
    throw invalid_input_error("give num_partitions or target_partition_size, not both");
  if (o.num_partitions && *o.num_partitions == 0) throw invalid_input_error("num_partitions must be positive");
  if (o.memory_budget_bytes < (std::uint64_t(1) << 20))
    throw invalid_input_error("memory_budget_bytes must be at least 1 MiB, got " + std::to_string(o.memory_budget_bytes));
  return c;
}

// A trained (or given) IVF model and quantizer, ready to assign and encode rows:
// the reusable core of the shuffle stage (index optimisation encodes new rows with
// an existing index's model through it).
template <class T>
struct ivf_encoder {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  using centroid_type = std::conditional_t<is_u8, std::uint8_t, centroid_t<T>>;
  kmeans_result<centroid_type> km;
  ivf_index_type type = ivf_index_type::ivf_flat;
  simd::distance_type metric = simd::distance_type::l2;
  quantizer_params params;
  std::size_t width = 0;  // code bytes per row
  std::optional<pq::model<T>> pqm;
  std::optional<sq::model> sqm;
  std::optional<rabitq::model> rqm;
  // Row id -> partition (Lance's precomputed_partitions); other rows are assigned.
  const std::unordered_map<std::uint64_t, std::uint32_t>* precomputed = nullptr;

  std::size_t num_partitions() const noexcept { return km.k; }
  std::size_t dimension() const noexcept { return km.dimension; }

  // Assigns and encodes n usable rows (row-major) with their ids, appending to out.
  // loss accumulates the rows' distances to their assigned centroid in row order
  // (rows with a precomputed partition add nothing).
  void encode(const T* rows, std::size_t n, const std::uint64_t* ids, shuffle_batch& out, double& loss,
              boost::asio::thread_pool* pool = nullptr) const {
    const std::size_t d = km.dimension, k = km.k;
    std::vector<std::uint32_t> part(n);
    using W = simd::work_t<T, centroid_type>;
    std::vector<W> dist(n);
    assign_partitions(km, rows, n, part.data(), dist.data(), pool);
    if (precomputed) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto it = precomputed->find(ids[i]);
        if (it == precomputed->end()) continue;
        if (it->second >= k)
          throw invalid_input_error("precomputed partition " + std::to_string(it->second) + " of row " +
                                    std::to_string(ids[i]) + " is out of range (the index has " + std::to_string(k) +
                                    " partitions)");
        part[i] = it->second;
        dist[i] = std::numeric_limits<W>::quiet_NaN();
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (part[i] != simd::no_index && !std::isnan(double(dist[i]))) loss += double(dist[i]);
    const std::size_t at = out.size();
    out.partitions.insert(out.partitions.end(), part.begin(), part.end());
    out.row_ids.insert(out.row_ids.end(), ids, ids + n);
    out.codes.resize((at + n) * width);
    std::uint8_t* codes = out.codes.data() + at * width;
    if (type == ivf_index_type::ivf_flat) {
      if constexpr (!is_u8) {
        if (metric == simd::distance_type::cosine) {
          std::vector<T> tmp(rows, rows + n * d);
          for (std::size_t r = 0; r < n; ++r) quantizer::normalise_row_double(tmp.data() + r * d, d);
          std::memcpy(codes, tmp.data(), n * width);
          return;
        }
      }
      std::memcpy(codes, rows, n * width);
      return;
    }
    if constexpr (!is_u8) {
      const auto* cents = km.centroids.data();
      if (pqm) {
        pq::encode_for_ivf(*pqm, rows, n, metric, cents, k, part.data(), codes, pool);
      } else if (sqm) {
        sq::encode_for_ivf(*sqm, rows, n, metric, codes, pool);
      } else if (rqm) {
        rabitq::encoded_rows er;
        rabitq::encode_for_ivf(*rqm, rows, n, metric, cents, k, part.data(), er, pool);
        std::memcpy(codes, er.codes.data(), n * width);
        out.add_factors.insert(out.add_factors.end(), er.add_factors.begin(), er.add_factors.end());
        out.scale_factors.insert(out.scale_factors.end(), er.scale_factors.begin(), er.scale_factors.end());
        out.error_factors.insert(out.error_factors.end(), er.error_factors.begin(), er.error_factors.end());
      }
    }
  }
};

// Given centroids (a k x dim matrix of any float type, uint8 for hamming) as the
// k-means model the encoder assigns with.
template <class C>
inline kmeans_result<C> given_centroids(const matrix& m, std::size_t dim, simd::distance_type metric,
                                        const std::string& column) {
  if (m.cols != dim)
    throw invalid_input_error("the given IVF centroids have dimension " + std::to_string(m.cols) + ", column '" +
                              column + "' has " + std::to_string(dim));
  if (m.rows == 0) throw invalid_input_error("the given IVF centroids are empty");
  if ((m.type == element_type::u8) != std::is_same_v<C, std::uint8_t>)
    throw invalid_input_error(std::string("the given IVF centroids are ") + std::string(element_name(m.type)) +
                              (std::is_same_v<C, std::uint8_t> ? ", hamming indexes need uint8 centroids"
                                                               : ", float vectors need float centroids"));
  kmeans_result<C> km;
  km.k = m.rows;
  km.dimension = dim;
  km.distance = metric;
  km.centroids.resize(m.size());
  for (std::size_t r = 0; r < m.rows; ++r)
    for (std::size_t c = 0; c < dim; ++c) {
      const double v = m.at(r, c);
      if constexpr (std::is_same_v<C, simd::f16>) km.centroids[r * dim + c] = simd::f16(float(v));
      else km.centroids[r * dim + c] = static_cast<C>(v);
    }
  return km;
}

// The quantizer of a given model, checked against the options.
template <class T>
inline void use_given_quantizer(ivf_encoder<T>& e, const quantizer_params& q, const build_options& o,
                                std::size_t dim) {
  validate(q);
  const std::string want(ivf_index_type_name(o.type));
  if (index_type_name(q) != want)
    throw invalid_input_error("the given quantizer is for " + index_type_name(q) + ", the index is " + want);
  e.params = q;
  std::visit(
      [&](const auto& qp) {
        using P = std::remove_cvref_t<decltype(qp)>;
        if constexpr (std::is_same_v<P, flat_params>) {
          if (qp.dimension != dim)
            throw invalid_input_error("the given flat storage has dimension " + std::to_string(qp.dimension) +
                                      ", column '" + o.column + "' has " + std::to_string(dim));
        } else if constexpr (std::is_same_v<T, std::uint8_t>) {
          // uint8 vectors (hamming): no PQ / SQ / RaBitQ model to prepare.
        } else if constexpr (std::is_same_v<P, pq_params>) {
          if (qp.dimension != dim)
            throw invalid_input_error("the given PQ codebook has dimension " + std::to_string(qp.dimension) +
                                      ", column '" + o.column + "' has " + std::to_string(dim));
          e.pqm = pq::from_params<T>(qp, o.metric);
        } else if constexpr (std::is_same_v<P, sq_params>) {
          if (qp.dimension != dim)
            throw invalid_input_error("the given SQ bounds have dimension " + std::to_string(qp.dimension) +
                                      ", column '" + o.column + "' has " + std::to_string(dim));
          e.sqm = sq::from_params(qp);
        } else {
          if (qp.num_bits != 1)
            throw invalid_input_error("the given RaBitQ model has " + std::to_string(qp.num_bits) +
                                      "-bit codes; lancet builds 1-bit codes");
          e.rqm = rabitq::from_params(qp);
          if (e.rqm->dimension != dim)
            throw invalid_input_error("the given RaBitQ model has dimension " + std::to_string(e.rqm->dimension) +
                                      ", column '" + o.column + "' has " + std::to_string(dim));
        }
      },
      q);
  e.width = code_bytes(q);
}

// The rows a build reads: every fragment, or o.fragment_ids (a segment).
inline std::vector<std::uint64_t> build_fragments(const dataset::dataset& ds, const build_options& o,
                                                  std::uint64_t& live_rows) {
  std::vector<std::uint64_t> ids;
  live_rows = 0;
  const auto frags = ds.fragments();
  if (o.fragment_ids) {
    if (o.fragment_ids->empty()) throw invalid_input_error("fragment_ids is empty: a segment needs fragments");
    std::set<std::uint64_t> seen;
    for (auto id : *o.fragment_ids) {
      if (!seen.insert(id).second) throw invalid_input_error("fragment " + std::to_string(id) + " is listed twice");
      const auto it = std::find_if(frags.begin(), frags.end(), [&](const dataset::fragment_info& f) { return f.id == id; });
      if (it == frags.end())
        throw invalid_input_error("fragment " + std::to_string(id) + " is not in version " + std::to_string(ds.version()));
      ids.push_back(id);
      live_rows += it->live_rows();
    }
  } else {
    for (const auto& f : frags) ids.push_back(f.id), live_rows += f.live_rows();
  }
  return ids;
}

template <class T>
inline dataset::scan_options column_scan(const build_options& o, const std::vector<std::uint64_t>& frags,
                                         std::size_t dim) {
  dataset::scan_options so;
  so.columns = {o.column};
  so.with_row_id = true;
  so.fragment_ids = frags;
  const std::uint64_t row_bytes = dim * sizeof(T) + 8;
  so.read_ahead_bytes = std::clamp<std::uint64_t>(o.memory_budget_bytes / 32, 1 << 20, std::uint64_t(64) << 20);
  so.batch_size = std::clamp<std::uint64_t>(o.memory_budget_bytes / 64 / row_bytes, 256, 65536);
  return so;
}

// Whether the column holds a list of vectors per row.
inline bool is_multivector(const dataset::dataset& ds, const std::string& column) {
  for (const auto& f : ds.schema().fields)
    if (f.name == column) return f.type->id == arrow::type_id::list;
  return false;
}

// The rows PQ trains on: Lance's sample (sample_rate x 2^bits) when the memory
// budget holds its training, else as many as it holds, at least the 2^bits a codebook
// needs (a lancet deviation, warned about in train_on_rows). A training row holds its
// decoded vector and row id (the builder's sample), its index in the PQ sample, and,
// in each sub-vector k-means running at once (one per core, at most num_sub_vectors),
// its sub-vector in working precision plus an assignment and a distance.
inline std::size_t pq_sample_rows(const build_options& o, const quantizer_choice& qc, std::size_t dim,
                                  std::size_t element_bytes) {
  const std::size_t lance = o.sample_rate << qc.bits;
  const std::uint64_t work = element_bytes == 8 ? 8 : 4;  // double, else float
  const std::uint64_t trainers =
      o.pool ? std::clamp<std::uint64_t>(std::thread::hardware_concurrency(), 1, std::max<std::size_t>(qc.m_sub, 1)) : 1;
  const std::uint64_t sub = dim / std::max<std::size_t>(qc.m_sub, 1);
  const std::uint64_t per_row = dim * element_bytes + 8 + 8 + trainers * (sub * work + 4 + work);
  return std::size_t(std::clamp<std::uint64_t>(o.memory_budget_bytes / per_row, std::uint64_t(1) << qc.bits, lance));
}

// Rows a sampled training reads: max(sample_rate x k, the quantizer's sample; for
// PQ, what the budget holds of it: pq_sample_rows).
inline std::size_t training_sample_size(const build_options& o, const quantizer_choice& qc, std::size_t k,
                                        std::size_t dim, std::size_t element_bytes) {
  std::size_t want = o.sample_rate * k;
  if (o.type == ivf_index_type::ivf_pq) want = std::max(want, pq_sample_rows(o, qc, dim, element_bytes));
  if (o.type == ivf_index_type::ivf_sq) want = std::max(want, o.sample_rate << qc.bits);
  return want;
}

// Stage 1 + 2 on training rows in memory (n usable rows, row-major): k-means and
// the quantizer, unless given. Writable rows (R = T) are PQ's to prepare in place
// (left as residuals); const rows are copied.
template <class T, class R>
inline ivf_encoder<T> train_on_rows(const build_options& o, const quantizer_choice& qc, std::size_t dim, R* rows,
                                    std::size_t n, std::size_t k) {
  static_assert(std::is_same_v<std::remove_const_t<R>, T>, "training rows of the column's element type");
  constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  const auto metric = o.metric;
  ivf_encoder<T> e;
  e.type = o.type;
  e.metric = metric;
  const bool need_ivf = !o.ivf_centroids;

  // Stage 1: IVF.
  if (need_ivf) {
    // Lance's IVF training passes balance_factor 1 (divided by the rows, then capped by
    // its adaptive bound): no measurable effect on partitions (bench/RESULTS.md, "IVF
    // partition quality"), and 0 keeps the exact pruned iterations.
    kmeans_params kp;
    kp.max_iters = o.max_iters;
    kp.distance = metric;
    kp.seed = o.seed;
    kp.sample_rate = o.sample_rate;
    kp.on_progress = [&](const kmeans_progress& p) {
      report_build_progress(o, build_stage::train_ivf, p.iteration, p.max_iters);
      return true;
    };
    if constexpr (is_u8) e.km = train_kmodes(rows, n, dim, k, kp, o.pool);
    else e.km = train_kmeans(rows, n, dim, k, kp, o.pool);
  } else {
    e.km = given_centroids<typename ivf_encoder<T>::centroid_type>(*o.ivf_centroids, dim, metric, o.column);
    if (o.num_partitions && *o.num_partitions != e.km.k)
      throw invalid_input_error("num_partitions is " + std::to_string(*o.num_partitions) + " but " +
                                std::to_string(e.km.k) + " IVF centroids are given");
  }

  // Stage 2: quantizer.
  report_build_progress(o, build_stage::train_quantizer, 0, 1);
  if (o.quantizer) {
    use_given_quantizer(e, *o.quantizer, o, dim);
  } else {
    if constexpr (!is_u8) {
      const auto* cents = e.km.centroids.data();
      if (o.type == ivf_index_type::ivf_pq) {
        pq::params pp;
        pp.num_sub_vectors = qc.m_sub;
        pp.num_bits = qc.bits;
        pp.max_iters = o.max_iters;
        pp.sample_rate = o.sample_rate;
        pp.seed = o.seed;
        pp.max_sample_rows = pq_sample_rows(o, qc, dim, sizeof(T));
        if (pp.max_sample_rows < (o.sample_rate << qc.bits) && n >= pp.max_sample_rows)
          warn("PQ codebook of the index on column '" + o.column + "': PQ trained on " + std::to_string(pp.max_sample_rows) +
               " rows, not Lance's " + std::to_string(o.sample_rate << qc.bits) + ": memory_budget_bytes (" +
               std::to_string(o.memory_budget_bytes >> 20) + " MiB) holds no more (raise it for Lance's sample)");
        if constexpr (std::is_const_v<R>) e.pqm = pq::train_for_ivf(rows, n, dim, cents, e.km.k, metric, pp, o.pool);
        else e.pqm = pq::train_for_ivf_in_place(rows, n, dim, cents, e.km.k, metric, pp, o.pool);
        e.params = pq::to_params(*e.pqm);
      } else if (o.type == ivf_index_type::ivf_sq) {
        sq::params sp;
        sp.num_bits = qc.bits;
        sp.sample_rate = o.sample_rate;
        sp.seed = o.seed;
        e.sqm = sq::train(rows, n, dim, sp, metric, o.pool);
        e.params = sq::to_params(*e.sqm);
      } else if (o.type == ivf_index_type::ivf_rq) {
        rabitq::params rp;
        rp.seed = o.seed;
        e.rqm = rabitq::make<T>(dim, rp);
        e.params = rabitq::to_params(*e.rqm);
      }
    }
    if (o.type == ivf_index_type::ivf_flat) e.params = flat::to_params<T>(dim);
    e.width = code_bytes(e.params);
  }
  report_build_progress(o, build_stage::train_quantizer, 1, 1);
  return e;
}

// Stage 1 + 2: the training rows (the whole column when it fits the budget, as
// Lance trains on all rows of a small dataset; else a random sample of
// max(sample_rate * k, the quantizer's sample) live rows), then k-means and the
// quantizer, unless given.
template <class T>
inline ivf_encoder<T> train_stage(const dataset::dataset& ds, const build_options& o, const quantizer_choice& qc,
                                  std::size_t dim, const std::vector<std::uint64_t>& frags, std::uint64_t live_rows,
                                  std::size_t k) {
  const auto metric = o.metric;
  const bool need_ivf = !o.ivf_centroids;
  const bool need_q = !o.quantizer && o.type != ivf_index_type::ivf_flat && o.type != ivf_index_type::ivf_rq;
  vectors<T> vs;
  vs.dim = dim;
  if (need_ivf || need_q) {
    const std::uint64_t row_bytes = dim * sizeof(T) + 8;
    auto so = column_scan<T>(o, frags, dim);
    auto sc = ds.scan(so);
    if (!is_multivector(ds, o.column) && live_rows * row_bytes <= o.memory_budget_bytes) {
      vs.values.reserve(std::size_t(live_rows) * dim);
      while (auto b = sc.next()) gather(*b, dim, metric, vs);
    } else {
      const std::size_t want = training_sample_size(o, qc, k, dim, sizeof(T));
      detail::rng64 rng(o.seed ^ 0x5a3c9e1b7d24f681ull);
      const auto picked = detail::sample_indices(std::size_t(live_rows), want, rng);
      const std::vector<std::uint64_t> pick(picked.begin(), picked.end());
      vs.values.reserve(pick.size() * dim);
      std::uint64_t seen = 0;
      std::size_t at = 0;
      while (auto b = sc.next()) {
        gather(*b, dim, metric, vs, &pick, seen, &at);
        release_free_memory();
        seen += std::uint64_t(b->num_rows());
        if (at == pick.size()) break;
      }
    }
    if (vs.rows() == 0) throw invalid_input_error("column '" + o.column + "' has no vectors to index");
    release_free_memory();  // what the scan freed, before training adds its own holdings
    if (need_ivf && k > vs.rows())
      throw invalid_input_error("cannot build " + std::to_string(k) + " partitions from " +
                                std::to_string(vs.rows()) + " indexable vectors of column '" + o.column + "'");
  }
  return train_on_rows<T>(o, qc, dim, vs.values.data(), vs.rows(), k);
}

// Stage 3: streams the column in batches (bounded by the budget), assigns and
// encodes each, and hands the rows to the shuffler. Returns the skipped rows.
template <class T>
inline std::uint64_t shuffle_stage(const dataset::dataset& ds, const build_options& o, const ivf_encoder<T>& e,
                                   const std::vector<std::uint64_t>& frags, std::uint64_t live_rows, shuffler& sh,
                                   double& loss) {
  const std::size_t dim = e.dimension();
  auto sc = ds.scan(column_scan<T>(o, frags, dim));
  vectors<T> vs;
  vs.dim = dim;
  shuffle_batch sb;
  std::uint64_t done = 0, dropped = 0;
  report_build_progress(o, build_stage::shuffle, 0, live_rows);
  while (auto b = sc.next()) {
    vs.clear();
    gather(*b, dim, o.metric, vs);
    sb = shuffle_batch{};
    e.encode(vs.values.data(), vs.rows(), vs.ids.data(), sb, loss, o.pool);
    for (auto p : sb.partitions) dropped += p == simd::no_index;
    sh.add(sb);
    release_free_memory();
    done += std::uint64_t(b->num_rows());
    report_build_progress(o, build_stage::shuffle, done, live_rows);
  }
  return vs.skipped + dropped;
}

// Stage 4: auxiliary.idx from the shuffler, then index.idx, into dir.
template <class T>
inline std::vector<pb::index_file> write_stage(const std::string& dir, file::format_version v, const build_options& o,
                                               const ivf_encoder<T>& e, double loss, shuffler& sh,
                                               const std::optional<hnsw::build_params>& graph) {
  io::make_directories(dir);
  const std::string aux_path = dir + "/" + std::string(detail::auxiliary_file_name);
  const std::string idx_path = dir + "/" + std::string(detail::index_file_name);
  std::uint64_t aux_size = 0, idx_size = 0;
  const auto model = ivf_model::with_centroids(matrix::of(e.km.centroids, e.km.k, e.km.dimension), loss);
  with_index_file_version(v, [&]<class V>() {
    file::writer_options wo;
    wo.data_cache_bytes = std::clamp<std::uint64_t>(o.memory_budget_bytes / 16, 1 << 20, std::uint64_t(16) << 20);
    storage_writer<V, io::file_sink> aux(io::file_sink(aux_path), e.params, o.metric, wo);
    sh.write_partitions(aux, [&](std::size_t p, std::size_t k) { report_build_progress(o, build_stage::merge_partitions, p, k); });
    aux_size = aux.finish().file_size;
    if (graph) {
      // The graphs link the stored rows, so they are built from auxiliary.idx as written,
      // and go to index.idx as they are done. They get three quarters of the budget:
      // the shuffler may still hold its in-memory buffer (a quarter) when nothing spilled.
      const auto storage = open_storage(aux_path);
      hnsw::index_file_writer<V, io::file_sink> idx(io::file_sink(idx_path), model, hnsw_index_type_name(e.params),
                                                   o.metric, wo);
      hnsw::build_partition_graphs(storage, o.metric, e.km.dimension, *graph, o.pool, o.memory_budget_bytes / 4 * 3,
                                   [&](std::size_t, const hnsw::graph& g) {
                                     idx.add(g);
                                     release_free_memory();  // the graph's builder and decoded rows, freed
                                   });
      idx_size = idx.finish().file_size;
    } else {
      idx_size = write_index_file<V>(io::file_sink(idx_path), model, index_type_name(e.params), o.metric).file_size;
    }
  });
  return {{std::string(detail::auxiliary_file_name), aux_size}, {std::string(detail::index_file_name), idx_size}};
}

template <class T>
inline build_result build_typed(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                 const build_options& o, const std::string& index_name, std::size_t dim,
                                 const std::optional<hnsw::build_params>& graph, ivf_training* train_only = nullptr) {
  constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  const auto metric = o.metric;
  if (is_u8 != (metric == simd::distance_type::hamming))
    throw invalid_input_error(is_u8 ? "column '" + o.column + "' holds uint8 vectors: only ivf_flat with hamming distance"
                                    : "hamming distance needs a column of uint8 vectors ('" + o.column + "' is not)");
  if (is_u8 && o.type != ivf_index_type::ivf_flat)
    throw invalid_input_error(std::string(ivf_index_type_name(o.type)) + " does not support hamming distance");
  const auto qc = check_parameters(o, dim);
  const bool given_shuffle = !o.precomputed_shuffle_buffers.empty();
  if (given_shuffle && (!o.ivf_centroids || (!o.quantizer && o.type != ivf_index_type::ivf_flat)))
    throw invalid_input_error("precomputed shuffle buffers need the IVF centroids and the quantizer they were built with");
  if (o.quantizer && !o.ivf_centroids && o.type != ivf_index_type::ivf_sq)
    throw invalid_input_error("a given " + std::string(ivf_index_type_name(o.type)) +
                              " quantizer needs the IVF centroids it was trained with");

  std::uint64_t live_rows = 0;
  const auto frags = build_fragments(ds, o, live_rows);
  const std::size_t k = o.ivf_centroids ? o.ivf_centroids->rows
                                        : o.num_partitions.value_or(recommended_num_partitions(
                                              live_rows, o.target_partition_size.value_or(
                                                             default_target_partition_size(o.type))));
  if (!o.ivf_centroids && k > live_rows)
    throw invalid_input_error("cannot build " + std::to_string(k) + " partitions from " + std::to_string(live_rows) +
                              " rows of column '" + o.column + "'");

  auto enc = train_stage<T>(ds, o, qc, dim, frags, live_rows, k);
  release_free_memory();
  if (o.type == ivf_index_type::ivf_flat && !o.quantizer) enc.params = flat::to_params<T>(dim), enc.width = code_bytes(enc.params);
  if (train_only) {
    train_only->centroids = matrix::of(enc.km.centroids, enc.km.k, enc.km.dimension);
    train_only->quantizer = enc.params;
    return {};
  }
  enc.precomputed = o.precomputed_partitions.get();

  const auto uuid = pb::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const std::string spill = o.spill_directory.empty() ? dir + "/_shuffle"
                                                      : o.spill_directory + "/lancet-shuffle-" + uuid.to_string();
  const auto remove_all = [](const std::string& p) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  };
  try {
    double loss = 0;
    std::uint64_t skipped = 0;
    std::vector<pb::index_file> files;
    std::uint64_t rows = 0;
    std::size_t runs = 0;
    {
      shuffler sh(enc.num_partitions(), enc.params, spill, o.memory_budget_bytes, o.pool);
      if (given_shuffle) {
        for (const auto& f : o.precomputed_shuffle_buffers) sh.add_buffer_file(f);
        report_build_progress(o, build_stage::shuffle, sh.rows(), sh.rows());
      } else {
        skipped = shuffle_stage(ds, o, enc, frags, live_rows, sh, loss);
      }
      release_free_memory();
      rows = sh.rows();
      if (rows == 0) throw invalid_input_error("column '" + o.column + "' has no vectors to index");
      files = write_stage(dir, ds.storage_version(), o, enc, loss, sh, graph);
      runs = sh.runs_spilled();
    }
    remove_all(spill);

    index_spec spec;
    spec.column = o.column;
    spec.name = index_name;
    spec.quantizer = enc.params;
    spec.distance = metric;
    spec.hints.ivf_sample_rate = o.sample_rate;
    spec.hints.ivf_max_iters = o.max_iters;
    if (graph) spec.hnsw = pb::index::vector_index_details::hnsw_params{graph->m, graph->ef_construction, graph->max_level};
    if (o.type == ivf_index_type::ivf_pq) spec.hints.pq_sample_rate = o.sample_rate, spec.hints.pq_max_iters = o.max_iters;
    if (o.type == ivf_index_type::ivf_sq) spec.hints.sq_sample_rate = o.sample_rate;
    if (o.fragment_ids) spec.fragment_ids = frags;
    auto meta = make_index_metadata(base.manifest(), spec, uuid, files);
    // Lance's optimize plans splits and joins around the target the index was built for.
    if (o.target_partition_size) persist_target_partition_size(meta, *o.target_partition_size);

    build_result r;
    r.num_partitions = enc.num_partitions();
    r.rows_indexed = rows;
    r.rows_skipped = skipped;
    r.directory = dir;
    r.shuffle_runs = runs;
    r.version = base.version();
    if (!o.commit) {
      r.index = std::move(meta);
      return r;
    }
    // Register on the version built from, rebased as Lance does on what other writers
    // committed meanwhile (rows appended since stay unindexed; a rewrite of indexed
    // fragments or an overwrite is commit_conflict_error).
    commit_index_options co;
    co.replace = o.replace;
    const auto after = commit_index(root, base, meta, co, dataset::default_sink_factory{}, &r.retries);
    r.index = after.file.indices.back();
    for (const auto& im : after.file.indices)
      if (im.uuid == uuid) r.index = im;
    r.version = after.version();
    return r;
  } catch (...) {
    remove_all(spill);
    remove_all(dir);
    throw;
  }
}

inline build_result run_build(const std::string& root, const build_options& given, ivf_training* train_only) {
  // IVF_HNSW_*: trained and stored as the base type, plus the graphs.
  build_options o = given;
  std::optional<hnsw::build_params> graph;
  if (is_hnsw(given.type)) {
    o.type = hnsw_base_type(given.type);
    if (given.metric == simd::distance_type::hamming)
      throw invalid_input_error(std::string(ivf_index_type_name(given.type)) + " does not support hamming distance");
    hnsw::build_params hp;
    hp.m = given.m;
    hp.ef_construction = given.ef_construction;
    hp.max_level = given.max_level;
    hp.seed = given.seed;
    hp.validate("index on column '" + given.column + "'");
    graph = hp;
  }
  if (o.column.empty()) throw invalid_input_error("build_ivf_index: no column given");
  if (o.sample_rate == 0) throw invalid_input_error("sample_rate must be positive");
  const auto base = dataset::load_latest(root);
  if (!base) throw invalid_input_error("'" + root + "' is not a Lance dataset (no versions)");
  const auto ds = dataset::dataset::open(root, base->version());
  const std::string name = o.name.empty() ? o.column + "_idx" : o.name;
  if (!o.replace && o.commit && !train_only)
    for (const auto& im : base->file.indices)
      if (im.name == name)
        throw invalid_input_error("the dataset already has an index named '" + name +
                                  "' (replace it, or choose another name)");
  // The column: a fixed-size list of f16 / f32 / f64 (or uint8 for hamming).
  column_field_id(base->manifest(), o.column);  // names the columns when missing
  const auto schema = ds.to_batch({.columns = {o.column}, .limit = 0}).schema;
  const arrow::data_type* tp = schema->fields.at(0).type.get();
  if (tp->id == arrow::type_id::list && !tp->children.empty()) {
    // A multivector column: Lance indexes it with cosine distance only.
    if (o.metric != simd::distance_type::cosine)
      throw invalid_input_error("column '" + o.column + "' holds multivectors (" + arrow::to_string(*tp) +
                                "): Lance indexes them with cosine distance only, not " +
                                std::string(simd::distance_name(o.metric)));
    tp = tp->children[0].type.get();
  }
  const auto& t = *tp;
  if (t.id != arrow::type_id::fixed_size_list || t.children.empty())
    throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                              ", not a fixed-size list of vectors");
  const std::size_t dim = std::size_t(t.list_size);
  if (dim == 0) throw invalid_input_error("column '" + o.column + "' has vectors of dimension 0");
  switch (t.children[0].type->id) {
    case arrow::type_id::float16: return build_typed<simd::f16>(root, *base, ds, o, name, dim, graph, train_only);
    case arrow::type_id::float32: return build_typed<float>(root, *base, ds, o, name, dim, graph, train_only);
    case arrow::type_id::float64: return build_typed<double>(root, *base, ds, o, name, dim, graph, train_only);
    case arrow::type_id::uint8: return build_typed<std::uint8_t>(root, *base, ds, o, name, dim, graph, train_only);
    default:
      throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                                ": vectors must be float16, float32, float64 (or uint8 for hamming)");
  }
}

}  // namespace detail

// How many rows PQ trains on for o (IVF_PQ) over vectors of dimension `dim` whose
// elements take `element_bytes`: Lance's sample when memory_budget_bytes holds its
// training, else what the budget holds (at least the 2^num_bits a codebook needs).
inline std::size_t pq_training_rows(const build_options& o, std::size_t dim, std::size_t element_bytes) {
  return detail::pq_sample_rows(o, detail::check_parameters(o, dim), dim, element_bytes);
}

// Builds the index over the latest version of the dataset at `root` and commits it as
// the next version. Errors: invalid_input_error (bad column / parameters / name taken
// without replace), conflict_error (the dataset changed meanwhile), io/corrupt errors
// of the dataset; in every case the dataset is left unchanged.
inline build_result build_ivf_index(const std::string& root, const build_options& o) {
  return detail::run_build(root, o, nullptr);
}

// Trains the IVF centroids and the quantizer as build_ivf_index would (over
// o.fragment_ids when given) without writing anything: the shared model of a
// distributed build. Pass it back as o.ivf_centroids / o.quantizer for each segment.
inline ivf_training train_ivf_model(const std::string& root, const build_options& o) {
  ivf_training t;
  detail::run_build(root, o, &t);
  return t;
}

// Commits segments built separately (build_options::commit = false, each over its own
// fragments, from the same dataset version) as one index in one new version: several
// IndexMetadata entries with the same name and disjoint fragment bitmaps, as Lance
// does. Errors (nothing committed): no segments, different names / columns / versions,
// overlapping fragments, conflict_error when the dataset changed since.
inline dataset::snapshot commit_index_segments(const std::string& root, const std::vector<build_result>& segments,
                                               bool replace = false) {
  if (segments.empty()) throw invalid_input_error("commit_index_segments: no segments");
  const auto& first = segments.front().index;
  std::set<std::uint64_t> covered;
  std::vector<pb::index_metadata> metas;
  for (const auto& s : segments) {
    const auto& im = s.index;
    if (im.name != first.name)
      throw invalid_input_error("segments of one index must share its name: '" + im.name + "' and '" + first.name + "'");
    if (im.fields != first.fields) throw invalid_input_error("segments of index '" + im.name + "' cover different columns");
    if (im.dataset_version != first.dataset_version)
      throw invalid_input_error("segments of index '" + im.name + "' were built from versions " +
                                std::to_string(im.dataset_version) + " and " + std::to_string(first.dataset_version));
    for (auto f : dataset::index_fragment_bitmap(im).to_vector())
      if (!covered.insert(f).second)
        throw invalid_input_error("segments of index '" + im.name + "' both cover fragment " + std::to_string(f));
    metas.push_back(im);
  }
  const auto base = dataset::load_version(root, first.dataset_version);
  commit_index_options co;
  co.replace = replace;
  return commit_index(root, base, std::move(metas), co);
}

}  // namespace lancet::index
