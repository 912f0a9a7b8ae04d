// The stages of an IVF index build (ivf_builder.hpp describes them), as functions of
// the index module's detail namespace that index optimisation (optimize/optimize_indices.hpp) and
// segments reuse: the column's rows gathered (vectors, gather), the parameters
// checked (check_parameters), the trained model (ivf_encoder: centroids and
// quantizer, with the encoding of rows), train_stage (train_ivf and
// train_quantizer), shuffle_stage and write_stage (merge_partitions).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
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


#include "lancet/core/error.hpp"
#include "lancet/core/release_memory.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/hnsw/index_file.hpp"
#include "lancet/index/hnsw/partition_graphs.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/ivf/storage_writer.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/index/build/shuffler.hpp"
#include "lancet/index/search/vector_index_impl.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index::detail {

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

// Freed heap pages go back to the system after each batch and stage (page reads and
// encoded batches of many sizes are allocated and freed all along).
using lancet::release_free_memory;

// The build options checked before any work: the quantizer's (its check_build) and
// the partition count's and budget's.
inline void check_parameters(const build_options& o, std::size_t dim) {
  check_quantizer_build(o.type, o, dim);
  if (o.num_partitions && o.target_partition_size)
    throw invalid_input_error("give num_partitions or target_partition_size, not both");
  if (o.num_partitions && *o.num_partitions == 0) throw invalid_input_error("num_partitions must be positive");
  if (o.memory_budget_bytes < (std::uint64_t(1) << 20))
    throw invalid_input_error("memory_budget_bytes must be at least 1 MiB, got " + std::to_string(o.memory_budget_bytes));
}

// A trained (or given) IVF model and quantizer, ready to assign and encode rows:
// the reusable core of the shuffle stage (index optimisation encodes new rows with
// an existing index's model through it).
template <class T>
struct ivf_encoder {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  using centroid_type = std::conditional_t<is_u8, std::uint8_t, centroid_t<T>>;
  kmeans_result<centroid_type> km;
  simd::distance_type metric = simd::distance_type::l2;
  std::optional<quantizer_codec<T>> codec;
  quantizer_params params;  // codec's
  std::size_t width = 0;    // code bytes per row
  // Row id -> partition (Lance's precomputed_partitions); other rows are assigned.
  const std::unordered_map<std::uint64_t, std::uint32_t>* precomputed = nullptr;

  std::size_t num_partitions() const noexcept { return km.k; }
  std::size_t dimension() const noexcept { return km.dimension; }

  // Assigns and encodes n usable rows (row-major) with their ids, appending to out.
  // loss accumulates the rows' distances to their assigned centroid in row order
  // (rows with a precomputed partition add nothing).
  void encode(const T* rows, std::size_t n, const std::uint64_t* ids, shuffle_batch& out, double& loss,
              boost::asio::thread_pool* pool = nullptr) const {
    const std::size_t k = km.k;
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
    append_encoded(out, *codec, width, rows, nullptr, n, km.centroids.data(), k, part.data(), ids, pool);
  }

  void use(quantizer_codec<T> c) {
    params = codec_params<T>(c);
    width = code_bytes(params);
    codec = std::move(c);
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
  e.use(make_codec<T>(q, dim, o.metric, o.column));
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

// Rows a sampled training reads: max(sample_rate x k, the quantizer's sample).
inline std::size_t training_sample_size(const build_options& o, std::size_t k, std::size_t dim,
                                        std::size_t element_bytes) {
  return std::max(o.sample_rate * k, quantizer_training_rows(o.type, o, dim, element_bytes));
}

// Stage 1 + 2 on training rows in memory (n usable rows, row-major): k-means and
// the quantizer, unless given. Writable rows (R = T) are PQ's to prepare in place
// (left as residuals); const rows are copied.
template <class T, class R>
inline ivf_encoder<T> train_on_rows(const build_options& o, std::size_t dim, R* rows, std::size_t n, std::size_t k) {
  static_assert(std::is_same_v<std::remove_const_t<R>, T>, "training rows of the column's element type");
  constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  const auto metric = o.metric;
  ivf_encoder<T> e;
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
    visit_quantizer_type(o.type, [&]<class P>() {
      e.use(quantizer_traits<P>::template codec<T>::train(o, dim, rows, n, e.km.centroids.data(), e.km.k));
    });
  }
  report_build_progress(o, build_stage::train_quantizer, 1, 1);
  return e;
}

// Stage 1 + 2: the training rows (the whole column when it fits the budget, as
// Lance trains on all rows of a small dataset; else a random sample of
// max(sample_rate * k, the quantizer's sample) live rows), then k-means and the
// quantizer, unless given.
template <class T>
inline ivf_encoder<T> train_stage(const dataset::dataset& ds, const build_options& o, std::size_t dim,
                                  const std::vector<std::uint64_t>& frags, std::uint64_t live_rows, std::size_t k) {
  const auto metric = o.metric;
  const bool need_ivf = !o.ivf_centroids;
  const bool need_q = !o.quantizer && quantizer_training_rows(o.type, o, dim, sizeof(T)) > 0;
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
      const std::size_t want = training_sample_size(o, k, dim, sizeof(T));
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
  return train_on_rows<T>(o, dim, vs.values.data(), vs.rows(), k);
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
  const auto files = io::storage_for(dir);
  const std::string aux_path = dir + "/" + std::string(detail::auxiliary_file_name);
  const std::string idx_path = dir + "/" + std::string(detail::index_file_name);
  std::uint64_t aux_size = 0, idx_size = 0;
  const auto model = ivf_model::with_centroids(matrix::of(e.km.centroids, e.km.k, e.km.dimension), loss);
  with_index_file_version(v, [&]<class V>() {
    file::writer_options wo;
    wo.data_cache_bytes = std::clamp<std::uint64_t>(o.memory_budget_bytes / 16, 1 << 20, std::uint64_t(16) << 20);
    storage_writer<V, io::any_sink> aux(files.create_sink(aux_path), e.params, o.metric, wo);
    aux.store_nearest_first();
    sh.write_partitions(aux, [&](std::size_t p, std::size_t k) { report_build_progress(o, build_stage::merge_partitions, p, k); });
    aux_size = aux.finish().file_size;
    if (graph) {
      // The graphs link the stored rows, so they are built from auxiliary.idx as written,
      // and go to index.idx as they are done. They get three quarters of the budget:
      // the shuffler may still hold its in-memory buffer (a quarter) when nothing spilled.
      const auto storage = open_storage(aux_path);
      hnsw::index_file_writer<V, io::any_sink> idx(files.create_sink(idx_path), model, hnsw_index_type_name(e.params),
                                                  o.metric, wo);
      hnsw::build_partition_graphs(storage, o.metric, e.km.dimension, *graph, o.pool, o.memory_budget_bytes / 4 * 3,
                                   [&](std::size_t, const hnsw::graph& g) { idx.add(g); });
      idx_size = idx.finish().file_size;
    } else {
      idx_size = write_index_file<V>(files.create_sink(idx_path), model, index_type_name(e.params), o.metric).file_size;
    }
  });
  return {{std::string(detail::auxiliary_file_name), aux_size}, {std::string(detail::index_file_name), idx_size}};
}

}  // namespace lancet::index::detail
