// Searching an IVF vector index (ours or one LanceDB built) the way Lance 12 does:
//
//   index::ivf_searcher s(distance_type::l2, ivf.centroids.value(), quantizer,
//                         [&](std::size_t p) { return std::make_shared<const index::partition_contents>(
//                                                  reader.read_partition(p)); });
//   index::search_params sp;  sp.k = 10;  sp.nprobes = 20;
//   std::vector<index::neighbor> hits = s.search(query, dim, sp);   // row ids + distances
//
// Following Lance:
// - the nprobes partitions whose centroids are nearest to the query (l2 of the
//   normalised query under cosine, 1 - q.c under dot, hamming for binary codes);
// - in each partition, distances as Lance's storage computes them: IVF_FLAT exact
//   (l2, 1 - cos, 1 - x.y, hamming; over f16 storage the query is rounded to f16 first,
//   as Lance casts it to the column's type); IVF_PQ the distance table of the residual query
//   (l2 / cosine, the normalised query minus the centroid) or of the raw query (dot);
//   IVF_SQ the integer estimate of the quantized query; IVF_RQ the RaBitQ estimator;
// - the k nearest overall, the smallest distance first, the lowest row id winning
//   a tie, NaN never returned;
// - refine_factor r > 0: k * r candidates re-ranked with exact distances computed on
//   the original vectors (fetched through search_params::fetch), which are then the
//   distances reported;
// - a prefilter (row_filter) limits the rows a search may return.
// - IVF_HNSW_* (with_graphs): in each partition the graph is searched with a beam of
//   ef (default 1.5 x the candidates wanted, as Lance; ef below them is an error),
//   distances as above; when the prefilter keeps under 10% of a partition's rows
//   those rows are scanned instead (Lance's rule).
// With a pool, search() splits one query's partitions across the calling thread and
// the pool's threads when the probed partitions hold enough code bytes to pay for it
// (search_params::split_min_bytes): after the caller scans the nearest partition, each
// thread keeps one top-k across the partitions it claims, and the smallest k-th
// distance any of them has reached prunes every scan; the top-ks are merged at the
// end. search_many() runs whole queries on the pool's threads (chunks of queries per
// thread, none split). Results do not depend on the thread count. Without a pool every partition
// feeds one top-k, whose bound then prunes from the first partition on. IVF_PQ (8 and
// 4 bits) and IVF_RQ (raw-query) scans where AVX-512 VBMI exists use u8-quantized
// tables only as a filter (pq::lut_scan_filtered, rabitq::query_estimator::
// scan_filtered): the rows that may enter the top-k get their exact f32 distance, so
// results and distances are those of a full f32 scan. IVF_SQ sums its integer
// distances with AVX-512 BW (exact: integer sums). Prepared partitions (PQ / RQ codes
// transposed for the table-lookup scans) are cached by the searcher.
// This header declares the searcher; search/ivf_searcher_impl.hpp defines it (included here in
// header-only mode, compiled into the library in compiled mode: core/config.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/index/search/neighbors.hpp"
#include "lancet/index/quantizer/params.hpp"

namespace lancet::index {

namespace hnsw {
struct graph;  // hnsw/graph.hpp
}  // namespace hnsw

namespace detail {
class ivf_search_engine;  // search/ivf_searcher_impl.hpp
}  // namespace detail

class ivf_searcher {
 public:
  using partition_loader = std::function<std::shared_ptr<const partition_contents>(std::size_t partition)>;
  // IVF_HNSW_*: graphs(p) returns partition p's graph (node i = row i of load(p));
  // it may be called from several threads at once.
  using graph_loader = std::function<std::shared_ptr<const hnsw::graph>(std::size_t partition)>;

  // centroids: num_partitions x dimension (any element type; uint8 for hamming).
  // load(p) returns partition p's rows (codes row-major, as quantizer/params.hpp
  // describes them); it may be called from several threads at once.
  LANCET_INLINE ivf_searcher(distance_type distance, const matrix& centroids, quantizer_params quantizer,
                             partition_loader load, bool cache_partitions = true);
  // In-memory partitions (e.g. just built), one per centroid.
  LANCET_INLINE ivf_searcher(distance_type distance, const matrix& centroids, quantizer_params quantizer,
                             std::vector<partition_contents> partitions);
  LANCET_INLINE ~ivf_searcher();
  LANCET_INLINE ivf_searcher(ivf_searcher&&) noexcept;
  LANCET_INLINE ivf_searcher& operator=(ivf_searcher&&) noexcept;

  LANCET_INLINE void with_graphs(graph_loader graphs);
  LANCET_INLINE bool has_graphs() const noexcept;

  LANCET_INLINE distance_type distance() const noexcept;
  LANCET_INLINE std::size_t dimension() const noexcept;
  LANCET_INLINE std::size_t num_partitions() const noexcept;
  LANCET_INLINE const quantizer_params& quantizer() const noexcept;

  // Q, a query's element type: float, double, simd::f16 or std::uint8_t
  // (LANCET_SEARCH_QUERY_TYPES).
  // The nprobes partitions nearest the query with their centroid distances, nearest
  // first (lowest partition on a tie).
  template <class Q>
  std::vector<std::pair<std::uint32_t, float>> probe(const Q* query, std::size_t dim, std::size_t nprobes) const;

  // The k nearest rows to query (dim values).
  template <class Q>
  std::vector<neighbor> search(const Q* query, std::size_t dim, const search_params& sp) const;

  // Many queries (nq x dim, row-major), searched in parallel on sp.pool: each query
  // on one thread (none is split), the threads claiming contiguous chunks of queries.
  // out[i] is search(query i) whatever the thread count.
  template <class Q>
  std::vector<std::vector<neighbor>> search_many(const Q* queries, std::size_t nq, std::size_t dim,
                                                 const search_params& sp) const;

 private:
  std::unique_ptr<detail::ivf_search_engine> engine_;
};

}  // namespace lancet::index

// The query element types compiled mode's library instantiates the searches for.
#define LANCET_SEARCH_QUERY_TYPES(X) X(float) X(double) X(::lancet::simd::f16) X(std::uint8_t)

#if LANCET_HEADER_ONLY
#include "lancet/index/search/ivf_searcher_impl.hpp"
#endif
