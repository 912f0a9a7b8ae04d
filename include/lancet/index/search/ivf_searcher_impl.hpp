// The definitions behind ivf_searcher.hpp: ivf_searcher's engine (query setup, the
// per-quantizer partition scans, the HNSW walk, the partition cache) and the
// searcher's members. Included by ivf_searcher.hpp in header-only mode; in compiled mode the
// library defines them, the searches for every query type of LANCET_SEARCH_QUERY_TYPES.
// One cohesive piece, longer than most headers: the engine is one class whose
// query setup, per-quantizer partition scans (flat, PQ, SQ, RaBitQ, each with its
// pruned and SIMD-filtered form), HNSW walk and partition cache share the searcher's
// prepared query, per-query state and cached partitions; splitting it would expose
// those private structures. What every searcher shares is in neighbors.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/search/brute_force.hpp"
#include "lancet/index/hnsw/graph.hpp"
#include "lancet/index/search/neighbors.hpp"
#include "lancet/index/hnsw/search.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/flat/distances.hpp"
#include "lancet/index/quantizer/pq/pq.hpp"
#include "lancet/index/quantizer/rabitq/rabitq.hpp"
#include "lancet/index/quantizer/sq/sq.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/search/query_batch.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/topk.hpp"

namespace lancet::index {

namespace detail {

// What an ivf_searcher holds (through a pointer: ivf_searcher.hpp declares the searcher
// without the quantizers and kernels this needs).
class ivf_search_engine {
 public:
  using partition_loader = ivf_searcher::partition_loader;

  // centroids: num_partitions x dimension (any element type; uint8 for hamming).
  // load(p) returns partition p's rows (codes row-major, as quantizer/params.hpp
  // describes them); it may be called from several threads at once.
  ivf_search_engine(distance_type distance, const matrix& centroids, quantizer_params quantizer, partition_loader load,
               bool cache_partitions = true)
      : distance_(distance), quantizer_(std::move(quantizer)), load_(std::move(load)), cache_enabled_(cache_partitions) {
    if (!load_) throw invalid_input_error("ivf_searcher: the partition loader is empty");
    num_partitions_ = centroids.rows;
    dim_ = centroids.cols;
    if (num_partitions_ == 0 || dim_ == 0) throw invalid_input_error("ivf_searcher: the IVF model has no centroids");
    const auto* flat = std::get_if<flat_params>(&quantizer_);
    const bool u8_flat = flat && flat->element == element_type::u8;  // binary vectors (hamming)
    if (distance == distance_type::hamming) {
      if (!u8_flat || centroids.type != element_type::u8)
        throw invalid_input_error("ivf_searcher: hamming indexes are IVF_FLAT over uint8 codes");
      const auto v = centroids.values<std::uint8_t>();
      cents_u8_.assign(v.begin(), v.end());
    } else {
      if (centroids.type == element_type::u8 && !u8_flat)
        throw invalid_input_error("ivf_searcher: uint8 centroids need an IVF_FLAT index over uint8 vectors");
      cents_.resize(num_partitions_ * dim_);
      for (std::size_t i = 0; i < cents_.size(); ++i) cents_[i] = static_cast<float>(centroids.at(i / dim_, i % dim_));
    }
    std::visit([&](const auto& q) { setup(q); }, quantizer_);
    cache_.resize(num_partitions_);
    cached_ = std::make_unique<std::atomic<const prepared_partition*>[]>(num_partitions_);
  }

  // In-memory partitions (e.g. just built), one per centroid.
  ivf_search_engine(distance_type distance, const matrix& centroids, quantizer_params quantizer,
                    std::vector<partition_contents> partitions)
      : ivf_search_engine(distance, centroids, std::move(quantizer), owned_loader(std::move(partitions), centroids.rows)) {}

  // IVF_HNSW_*: graphs(p) returns partition p's graph (node i = row i of load(p));
  // it may be called from several threads at once.
  using graph_loader = ivf_searcher::graph_loader;
  void with_graphs(graph_loader graphs) {
    if (std::holds_alternative<rq_params>(quantizer_) || distance_ == distance_type::hamming)
      throw invalid_input_error("ivf_searcher: HNSW graphs over RaBitQ or hamming storage are not supported");
    graphs_ = std::move(graphs);
    graph_cache_.assign(num_partitions_, nullptr);
    graph_cached_ = std::make_unique<std::atomic<const hnsw::graph*>[]>(num_partitions_);
  }
  bool has_graphs() const noexcept { return static_cast<bool>(graphs_); }

  distance_type distance() const noexcept { return distance_; }
  std::size_t dimension() const noexcept { return dim_; }
  std::size_t num_partitions() const noexcept { return num_partitions_; }
  const quantizer_params& quantizer() const noexcept { return quantizer_; }

  // The nprobes partitions nearest the query with their centroid distances, nearest
  // first (lowest partition on a tie).
  template <class Q>
  std::vector<std::pair<std::uint32_t, float>> probe(const Q* query, std::size_t dim, std::size_t nprobes) const {
    const auto q = prepare_query(query, dim);
    return probe_prepared(q, nprobes);
  }

  // The k nearest rows to query (dim values of any element type).
  template <class Q>
  std::vector<neighbor> search(const Q* query, std::size_t dim, const search_params& sp) const {
    if (sp.nprobes == 0) throw invalid_input_error("search: nprobes must be positive");
    const auto q = prepare_query(query, dim);
    if (sp.k == 0) return {};
    const bool exact_storage = std::holds_alternative<flat_params>(quantizer_);
    const bool refine = sp.refine_factor > 0 && !exact_storage;
    if (refine && !sp.fetch && !sp.defer_refine)
      throw invalid_input_error("search: refine_factor needs the original vectors (search_params::fetch)");
    const std::size_t kk = refine ? sp.k * sp.refine_factor : sp.k;
    const std::size_t ef = sp.ef.value_or(kk + kk / 2);
    if (graphs_ && ef < kk)
      throw invalid_input_error("search: ef " + std::to_string(ef) + " is below the " + std::to_string(kk) +
                                " candidates wanted (k x refine factor); Lance requires ef >= k");
    // Lance's probe counts: a fixed nprobes, or a minimum raised by early pruning and
    // a maximum the late search may reach.
    std::size_t max_n = std::min(sp.nprobes, num_partitions_);
    if (sp.maximum_nprobes)
      max_n = *sp.maximum_nprobes == 0 ? num_partitions_ : std::min(*sp.maximum_nprobes, num_partitions_);
    std::size_t min_n = std::min(sp.nprobes, max_n);
    const auto probes = probe_prepared(q, max_n);
    if (max_n > min_n && !probes.empty()) min_n = initial_probes(q, probes, sp, min_n, max_n);
    const std::span<const std::pair<std::uint32_t, float>> initial(probes.data(), std::min(min_n, probes.size()));
    const auto state = query_state(q);
    topk all(kk);
    scan_probes(q, state, initial, sp, all, ef);
    if (sp.late_search && probes.size() > initial.size()) late_search(q, state, probes, initial.size(), sp, all, ef);
    auto found = all.sorted();
    if (!refine || sp.defer_refine) return found;
    return refine_candidates(distance_, q.raw.data(), dim_, found, sp);
  }

  // Many queries (nq x dim, row-major), searched in parallel on sp.pool: each query
  // on one thread (none is split), the threads claiming contiguous chunks of queries.
  // out[i] is search(query i) whatever the thread count.
  template <class Q>
  std::vector<std::vector<neighbor>> search_many(const Q* queries, std::size_t nq, std::size_t dim,
                                                 const search_params& sp) const {
    return detail::search_each(*this, queries, nq, dim, sp);
  }

 private:
  // A query widened to double, plus its normalised form (cosine).
  struct prepared_query {
    std::vector<double> raw;   // as given
    std::vector<double> used;  // normalised under cosine, else raw
    std::vector<std::uint8_t> bytes;  // hamming
  };

  struct prepared_partition {
    std::shared_ptr<const partition_contents> data;
    std::vector<std::uint8_t> transposed;  // PQ / RQ codes, [code_bytes][n]
    std::vector<double> pq_term;           // residual PQ: 2 c_s.p (pq::partition_term)
  };

  // Per-query state shared by every partition.
  struct query_state_t {
    std::shared_ptr<pq::distance_table> pq_table;      // dot: one table for all partitions
    std::vector<double> pq_qterm;                      // residual PQ: |p|^2 - 2 q_s.p
    std::shared_ptr<sq::distance_estimator> sq_est;
    std::shared_ptr<rabitq::query_estimator> rq_est;   // raw_query estimator
  };

  // Jobs posted for one query's partitions on a pool (at most this many threads work
  // on one query).
  static constexpr std::size_t max_query_tasks = 8;

  // Fewer than k rows found in the first partitions (a selective filter): the rows
  // the filter keeps at +inf when it keeps no more than k, else more partitions, one
  // at a time, until enough rows are found (Lance's late search).
  void late_search(const prepared_query& q, const query_state_t& state,
                   const std::vector<std::pair<std::uint32_t, float>>& probes, std::size_t from,
                   const search_params& sp, topk& all, std::size_t ef) const {
    const std::size_t found = std::min(all.size(), sp.k);
    if (found >= sp.k) return;
    const auto allowed = sp.filter ? sp.filter->size() : std::nullopt;
    if (sp.add_unfound_rows && allowed && found < *allowed && *allowed <= sp.k) {
      add_unfound(*sp.filter, all);
      return;
    }
    std::size_t target = sp.found_target ? sp.found_target : sp.k;
    if (allowed) target = std::min(target, *allowed);
    for (std::size_t i = from; i < probes.size() && all.size() < target; ++i)
      scan(q, state, probes[i].first, probes[i].second, sp, all, ef, nullptr);
  }

  // How many of the probed partitions (nearest first) the search scans before any late
  // search, when the minimum and maximum differ (Lance 12's probe policies). IVF_FLAT
  // over float32 vectors without a maximum (l2, cosine, dot; k <= 1000; refine <= 1):
  // the partitions whose centroid distance is within a margin of the nearest one's,
  // between a floor and a cap that depend on the metric and k (Lance's calibrated
  // profiles). Otherwise the legacy rule: those within a factor of the nearest one's
  // distance (0.6 for k = 1, 7 for k <= 10, 81 beyond).
  std::size_t initial_probes(const prepared_query& q, const std::vector<std::pair<std::uint32_t, float>>& probes,
                             const search_params& sp, std::size_t min_n, std::size_t max_n) const {
    const auto* flat = std::get_if<flat_params>(&quantizer_);
    const bool adaptive = flat && flat->element == element_type::f32 && !graphs_ && sp.maximum_nprobes &&
                          *sp.maximum_nprobes == 0 && sp.k <= 1000 && sp.refine_factor <= 1 &&
                          (distance_ == distance_type::l2 || distance_ == distance_type::cosine ||
                           distance_ == distance_type::dot) &&
                          std::all_of(q.raw.begin(), q.raw.end(), [](double x) { return std::isfinite(x); });
    if (!adaptive) {
      const float factor = sp.k <= 1 ? 0.6f : sp.k <= 10 ? 7.0f : 81.0f;
      const float threshold = probes[0].second * factor;
      std::size_t pruned = 0;
      while (pruned < probes.size() && probes[pruned].second <= threshold) ++pruned;
      return std::min(std::max(min_n, pruned), max_n);
    }
    const std::size_t bucket = sp.k <= 1 ? 0 : sp.k <= 10 ? 1 : sp.k <= 100 ? 2 : sp.k <= 200 ? 3 : sp.k <= 500 ? 4 : 5;
    static constexpr double l2_margin[] = {0.2175, 0.265, 0.33, 0.375, 0.3725, 0.4175};
    static constexpr std::size_t l2_floor[] = {5, 6, 11, 15, 22, 29}, l2_cap[] = {19, 24, 38, 56, 81, 93};
    static constexpr double cos_margin[] = {0.235, 0.2875, 0.38, 0.415, 0.45, 0.47};
    static constexpr std::size_t cos_floor[] = {3, 8, 7, 18, 28, 34}, cos_cap[] = {50, 77, 106, 156, 192, 248};
    static constexpr double dot_margin[] = {0.14, 0.055, 0.0625, 0.0675, 0.07, 0.0725};
    static constexpr std::size_t dot_floor[] = {56, 144, 200, 211, 244, 279}, dot_cap[] = {112, 432, 768, 833, 971, 1092};
    const bool dot = distance_ == distance_type::dot, cos = distance_ == distance_type::cosine;
    const double margin = dot ? dot_margin[bucket] : cos ? cos_margin[bucket] : l2_margin[bucket];
    const std::size_t floor = dot ? dot_floor[bucket] : cos ? cos_floor[bucket] : l2_floor[bucket];
    const std::size_t cap = dot ? dot_cap[bucket] : cos ? cos_cap[bucket] : l2_cap[bucket];
    const double nearest = probes[0].second;
    std::size_t selected = probes.size();
    if (std::isfinite(nearest)) {
      const double gap = margin * (dot ? std::abs(1.0 - nearest) : nearest);
      selected = 0;
      while (selected < probes.size() && std::isfinite(probes[selected].second) &&
             double(probes[selected].second) - nearest <= gap)
        ++selected;
    }
    selected = std::min(std::max(selected, floor), cap);
    return std::min({std::max(min_n, selected), max_n, probes.size()});
  }

  // The filter's rows not yet in `all`, at distance +inf.
  static void add_unfound(const row_filter& filter, topk& all) {
    const auto rows = filter.rows();
    if (!rows) return;
    std::vector<std::uint64_t> have;
    for (const auto& n : all.sorted()) have.push_back(n.row_id);
    std::sort(have.begin(), have.end());
    for (auto id : *rows)
      if (!std::binary_search(have.begin(), have.end(), id)) all.push(std::numeric_limits<float>::infinity(), id);
  }

  // Scans the given partitions into `all`, splitting them across sp.pool when it pays.
  void scan_probes(const prepared_query& q, const query_state_t& state,
                   std::span<const std::pair<std::uint32_t, float>> probes, const search_params& sp, topk& all,
                   std::size_t ef) const {
    if (probes.empty()) return;
    if (!split_pays(probes, sp)) {
      // One thread: every partition into one heap (its threshold prunes from the
      // first partition on). The k nearest under `closer` are the same set whatever
      // the order rows arrive in, so the result equals the parallel one.
      for (const auto& pr : probes) scan(q, state, pr.first, pr.second, sp, all, ef, nullptr);
      return;
    }
    // The calling thread and a few pool jobs, each with its own top-k, claim
    // partitions one at a time until none are left; the smallest k-th distance any
    // of them has reached prunes every scan. A row farther than some k rows cannot be
    // among the k nearest, so the merged result is the single-threaded one. The
    // calling thread scans the nearest partition first, alone: its k-th distance
    // bounds every task from the start (tasks starting with empty top-ks would
    // push rows the single-threaded scan prunes). It then works as task 0 and waits
    // only for jobs that started before it ran out of partitions (a busy pool
    // delays nothing: the caller does the work).
    scan(q, state, probes[0].first, probes[0].second, sp, all, ef, nullptr);
    shared_bound bound;
    if (all.full()) bound.offer(all.worst().distance);
    const std::size_t tasks = std::min<std::size_t>(probes.size() - 1, max_query_tasks);
    std::atomic<std::size_t> next{1};
    std::vector<topk> local(tasks, topk(all.k()));
    const auto work = [&](std::size_t t) {
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < probes.size();) {
        scan(q, state, probes[i].first, probes[i].second, sp, local[t], ef, &bound);
        if (local[t].full()) bound.offer(local[t].worst().distance);
      }
    };
    run_with_helpers(*sp.pool, tasks, work);
    for (const auto& t : local) all.merge(t);
  }

  // Whether search() splits one query's probed partitions across sp.pool. A split
  // costs CPU the single-threaded scan does not spend: the pool's wake-ups (a fixed
  // cost per query) and pruning with a looser bound (each thread's top-k holds only
  // its own partitions' rows, so more rows pass the filter and get exact distances).
  // It pays in wall time only where that is small beside the scan, i.e. when the scan
  // reads many bytes: split when the probed partitions hold >= sp.split_min_bytes
  // code bytes (rows x bytes per row; the default is where the split's fixed CPU
  // cost fell to ~10% of the scan on PQ 16 x 8: bench/RESULTS.md, bench_ivf). Partitions not yet loaded count as large (loading
  // them in parallel pays), as do IVF_HNSW partitions (a graph walk per partition,
  // not a scan of its rows). Results are the same either way.
  bool split_pays(std::span<const std::pair<std::uint32_t, float>> probes, const search_params& sp) const {
    if (sp.pool == nullptr || probes.size() < 2) return false;
    if (graphs_ || !cache_enabled_) return true;
    const std::size_t row_bytes = std::max<std::size_t>(1, code_bytes(quantizer_));
    std::size_t bytes = 0;
    for (const auto& pr : probes) {
      const auto* c = cached_[pr.first].load(std::memory_order_acquire);
      if (!c) return true;
      bytes += c->data->size() * row_bytes;
      if (bytes >= sp.split_min_bytes) return true;
    }
    return false;
  }

  // Runs work(0) on this thread and work(1..tasks-1) on pool jobs; returns when
  // work(0) and every job that started before work(0) returned have finished. Jobs
  // that start later return at once without touching work (so the caller never waits
  // for a busy pool). Each work(t) must claim its share itself (it may get nothing).
  // The first exception thrown by any of them is rethrown here.
  template <class F>
  static void run_with_helpers(boost::asio::thread_pool& pool, std::size_t tasks, const F& work) {
    struct control {
      std::mutex mu;
      std::condition_variable cv;
      bool closed = false;     // the caller is done: later jobs must not run work
      std::size_t active = 0;  // jobs inside work
      std::exception_ptr error;
    };
    auto ctl = std::make_shared<control>();
    const F* w = &work;  // valid while a job is counted in `active`: the caller waits for those
    for (std::size_t t = 1; t < tasks; ++t)
      boost::asio::post(pool, [ctl, w, t] {
        {
          std::lock_guard<std::mutex> lk(ctl->mu);
          if (ctl->closed) return;
          ++ctl->active;
        }
        std::exception_ptr err;
        try {
          (*w)(t);
        } catch (...) {
          err = std::current_exception();
        }
        std::lock_guard<std::mutex> lk(ctl->mu);
        if (err && !ctl->error) ctl->error = err;
        if (--ctl->active == 0 && ctl->closed) ctl->cv.notify_all();
      });
    std::exception_ptr err;
    try {
      work(0);
    } catch (...) {
      err = std::current_exception();
    }
    std::unique_lock<std::mutex> lk(ctl->mu);
    ctl->closed = true;
    ctl->cv.wait(lk, [&] { return ctl->active == 0; });
    if (!err) err = ctl->error;
    lk.unlock();
    if (err) std::rethrow_exception(err);
  }

  // The smallest k-th distance any thread's top-k has reached for one query: rows
  // farther than it need not be pushed anywhere.
  struct shared_bound {
    std::atomic<float> value{std::numeric_limits<float>::infinity()};
    float get() const noexcept { return value.load(std::memory_order_relaxed); }
    void offer(float d) noexcept {
      float cur = value.load(std::memory_order_relaxed);
      while (d < cur && !value.compare_exchange_weak(cur, d, std::memory_order_relaxed)) {
      }
    }
  };

  // The distance a row must not exceed to be pushed into out (+inf while nothing bounds it).
  static float push_bound(const topk& out, const shared_bound* bound) noexcept {
    float b = out.full() ? out.worst().distance : std::numeric_limits<float>::infinity();
    if (bound) b = std::min(b, bound->get());
    return b;
  }

  static partition_loader owned_loader(std::vector<partition_contents> parts, std::size_t expected) {
    if (parts.size() != expected)
      throw invalid_input_error("ivf_searcher: " + std::to_string(parts.size()) + " partitions for " +
                                std::to_string(expected) + " centroids");
    auto shared = std::make_shared<std::vector<std::shared_ptr<const partition_contents>>>();
    for (auto& p : parts) shared->push_back(std::make_shared<const partition_contents>(std::move(p)));
    return [shared](std::size_t p) { return (*shared)[p]; };
  }

  void setup(const flat_params& f) {
    if (f.dimension != dim_) dimension_mismatch("flat", f.dimension);
  }
  void setup(const pq_params& p) {
    pq_ = pq::from_params<float>(p, distance_);
    if (pq_.dimension != dim_) dimension_mismatch("PQ", pq_.dimension);
    pq_qplan_ = pq::query_term_plan(pq_);
  }
  void setup(const sq_params& p) {
    sq_ = sq::from_params(p);
    if (sq_.dimension != dim_) dimension_mismatch("SQ", sq_.dimension);
  }
  void setup(const rq_params& p) {
    rq_ = rabitq::from_params(p);
    if (rq_.dimension != dim_) dimension_mismatch("RaBitQ", rq_.dimension);
    rq_cents_.resize(num_partitions_ * dim_);
    for (std::size_t c = 0; c < num_partitions_; ++c) rq_.rotate(cents_.data() + c * dim_, rq_cents_.data() + c * dim_);
  }
  [[noreturn]] void dimension_mismatch(const char* what, std::size_t d) const {
    throw invalid_input_error(std::string("ivf_searcher: ") + what + " quantizer of dimension " + std::to_string(d) +
                              " under centroids of dimension " + std::to_string(dim_));
  }

  template <class Q>
  prepared_query prepare_query(const Q* query, std::size_t dim) const {
    static_assert(simd::is_element_v<Q>, "queries are float, double, f16 or uint8");
    if (query == nullptr) throw invalid_input_error("search: the query is null");
    if (dim != dim_)
      throw invalid_input_error("search: the query has " + std::to_string(dim) + " values, the index " +
                                std::to_string(dim_) + " dimensions");
    prepared_query q;
    q.raw.resize(dim);
    for (std::size_t i = 0; i < dim; ++i) q.raw[i] = quantizer::to_work<double>(query[i]);
    if (distance_ == distance_type::hamming) {
      q.bytes.resize(dim);
      for (std::size_t i = 0; i < dim; ++i) {
        if (!(q.raw[i] >= 0 && q.raw[i] <= 255 && q.raw[i] == std::floor(q.raw[i])))
          throw invalid_input_error("search: a hamming query holds bytes, value " + std::to_string(i) + " is " +
                                    std::to_string(q.raw[i]));
        q.bytes[i] = static_cast<std::uint8_t>(q.raw[i]);
      }
    }
    q.used = q.raw;
    if (distance_ == distance_type::cosine && !quantizer::normalise_row(q.used.data(), dim))
      throw invalid_input_error("search: a cosine query must have a finite, non-zero norm");
    return q;
  }

  std::vector<std::pair<std::uint32_t, float>> probe_prepared(const prepared_query& q, std::size_t nprobes) const {
    std::vector<float> d(num_partitions_);
    if (distance_ == distance_type::hamming) {
      for (std::size_t c = 0; c < num_partitions_; ++c)
        d[c] = simd::hamming(q.bytes.data(), cents_u8_.data() + c * dim_, dim_);
    } else {
      std::vector<float> qf(q.used.begin(), q.used.end());
      simd::distances_to_many(distance_ == distance_type::dot ? distance_type::dot : distance_type::l2, qf.data(),
                              cents_.data(), num_partitions_, dim_, d.data());
    }
    const std::size_t np = std::min(nprobes, num_partitions_);
    std::vector<std::uint32_t> idx(np);
    std::vector<float> val(np);
    const std::size_t got = simd::topk(d.data(), num_partitions_, np, idx.data(), val.data());
    std::vector<std::pair<std::uint32_t, float>> out(got);
    for (std::size_t i = 0; i < got; ++i) out[i] = {idx[i], val[i]};
    return out;
  }

  query_state_t query_state(const prepared_query& q) const {
    query_state_t s;
    std::visit(
        [&](const auto& qp) {
          using P = std::remove_cvref_t<decltype(qp)>;
          if constexpr (std::is_same_v<P, pq_params>) {
            if (pq::uses_residual(distance_)) {
              s.pq_qterm.resize(pq_.num_sub_vectors * pq_.num_centroids());
              pq_qplan_.compute(q.used.data(), s.pq_qterm.data());
            } else {
              s.pq_table = std::make_shared<pq::distance_table>(pq_, q.used.data());
            }
          } else if constexpr (std::is_same_v<P, sq_params>) {
            s.sq_est = std::make_shared<sq::distance_estimator>(sq_, q.used.data(), distance_);
          } else if constexpr (std::is_same_v<P, rq_params>) {
            if (rq_.estimator == rabitq::estimator_type::raw_query)
              s.rq_est = std::make_shared<rabitq::query_estimator>(rq_, q.raw.data(), distance_);
          }
        },
        quantizer_);
    return s;
  }

  // Partition p, prepared. A cached one is found without a lock or a reference count
  // (cached entries live as long as the searcher): concurrent queries on a pool would
  // otherwise bounce the mutex's and the shared pointers' cache lines between cores on
  // every probed partition. `hold` keeps an uncached one alive.
  const prepared_partition& partition(std::size_t p, std::shared_ptr<const prepared_partition>& hold) const {
    if (cache_enabled_)
      if (const auto* c = cached_[p].load(std::memory_order_acquire)) return *c;
    hold = load_partition(p);
    return *hold;
  }

  std::shared_ptr<const prepared_partition> load_partition(std::size_t p) const {
    if (cache_enabled_) {
      std::lock_guard<std::mutex> lk(mu_);
      if (cache_[p]) return cache_[p];
    }
    auto prep = std::make_shared<prepared_partition>();
    prep->data = load_(p);
    if (!prep->data) throw invalid_input_error("ivf_searcher: the loader returned no partition " + std::to_string(p));
    const auto& pc = *prep->data;
    const std::size_t n = pc.size(), cb = code_bytes(quantizer_);
    if (pc.codes.size() != n * cb)
      throw corrupt_error("partition " + std::to_string(p) + ": " + std::to_string(pc.codes.size()) +
                          " code bytes for " + std::to_string(n) + " rows of " + std::to_string(cb));
    // PQ and RaBitQ scan transposed codes ([code byte][row]).
    std::visit(
        [&](const auto& qp) {
          using P = std::remove_cvref_t<decltype(qp)>;
          if constexpr (std::is_same_v<P, pq_params> || std::is_same_v<P, rq_params>) {
            prep->transposed.resize(n * cb);
            transpose_codes(pc.codes.data(), n, cb, prep->transposed.data());
          }
          if constexpr (std::is_same_v<P, pq_params>) {
            if (pq::uses_residual(distance_)) prep->pq_term = pq::partition_term(pq_, cents_.data() + p * dim_);
          } else if constexpr (std::is_same_v<P, rq_params>) {
            if (pc.add_factors.size() != n || pc.scale_factors.size() != n)
              throw corrupt_error("partition " + std::to_string(p) + ": RaBitQ factors for " +
                                  std::to_string(pc.add_factors.size()) + " of " + std::to_string(n) + " rows");
          }
        },
        quantizer_);
    std::shared_ptr<const prepared_partition> out = std::move(prep);
    if (cache_enabled_) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!cache_[p]) {
        cache_[p] = out;
        cached_[p].store(out.get(), std::memory_order_release);
      }
      return cache_[p];
    }
    return out;
  }

  // Partition p's graph, cached for the searcher's life (found without a lock, as partitions are).
  const hnsw::graph& graph_of(std::size_t p) const {
    if (const auto* g = graph_cached_[p].load(std::memory_order_acquire)) return *g;
    auto g = graphs_(p);
    if (!g) throw invalid_input_error("ivf_searcher: the graph loader returned no graph for partition " + std::to_string(p));
    std::lock_guard<std::mutex> lk(mu_);
    if (!graph_cache_[p]) {
      graph_cache_[p] = std::move(g);
      graph_cached_[p].store(graph_cache_[p].get(), std::memory_order_release);
    }
    return *graph_cache_[p];
  }

  // The query for f16 storage. Lance casts the query to the column's type before the
  // index normalises it (cosine, in f32, the result in f16 again) and its f16 kernels
  // take two f16 vectors: the same roundings here, so near-ties order as there.
  std::vector<double> f16_query(const prepared_query& q) const {
    std::vector<double> q16(dim_);
    float norm2 = 0.0f;
    for (std::size_t i = 0; i < dim_; ++i) {
      const float h = simd::f16(static_cast<float>(q.raw[i])).to_float();
      q16[i] = h;
      norm2 += h * h;
    }
    if (distance_ == distance_type::cosine && norm2 > 0.0f) {
      const float norm = std::sqrt(norm2);
      for (auto& x : q16) x = simd::f16(static_cast<float>(x) / norm).to_float();
    }
    return q16;
  }

  // Distance of the query to row i of a partition, as the full scan computes it
  // (the HNSW walk's distance; graphs exist over flat, SQ and PQ storage only).
  template <class F>
  void with_row_distance(const prepared_query& q, const query_state_t& s, std::uint32_t p,
                         const prepared_partition& part, F&& f) const {
    const auto& pc = *part.data;
    std::visit([&](const auto& qp) { row_distance(qp, q, s, p, part, pc, f); }, quantizer_);
  }
  template <class F>
  void row_distance(const flat_params& fp, const prepared_query& q, const query_state_t&, std::uint32_t,
                    const prepared_partition&, const partition_contents& pc, F& f) const {
    const std::uint8_t* v = pc.codes.data();
    switch (fp.element) {
      case element_type::f32:
        return f([&, v](std::uint32_t i) {
          float d = 0;
          flat::distances(distance_, q.used.data(), reinterpret_cast<const float*>(v) + std::size_t(i) * dim_, 1, dim_, &d);
          return d;
        });
      case element_type::f64:
        return f([&, v](std::uint32_t i) {
          float d = 0;
          flat::distances(distance_, q.used.data(), reinterpret_cast<const double*>(v) + std::size_t(i) * dim_, 1, dim_, &d);
          return d;
        });
      case element_type::f16: {
        const auto q16 = f16_query(q);  // as distances() rounds it for f16 storage
        return f([&, v](std::uint32_t i) {
          float d = 0;
          flat::distances(distance_, q16.data(), reinterpret_cast<const simd::f16*>(v) + std::size_t(i) * dim_, 1, dim_, &d);
          return d;
        });
      }
      case element_type::u8:
        return f([&, v](std::uint32_t i) {
          float d = 0;
          flat::distances(distance_, q.used.data(), v + std::size_t(i) * dim_, 1, dim_, &d);
          return d;
        });
    }
  }
  template <class F>
  void row_distance(const sq_params&, const prepared_query&, const query_state_t& s, std::uint32_t,
                    const prepared_partition&, const partition_contents& pc, F& f) const {
    const std::uint8_t* c = pc.codes.data();
    const auto* est = s.sq_est.get();
    return f([c, est, this](std::uint32_t i) { return est->distance(c + std::size_t(i) * dim_); });
  }
  // The PQ lookup table for partition p: the query's one table (dot), else its
  // residual table, built in `scratch` (grown to fit); `offset` is the table's.
  const float* pq_lut(const prepared_query& q, const query_state_t& s, std::uint32_t p, const prepared_partition& part,
                      std::vector<float>& scratch, float& offset) const {
    if (s.pq_table) {
      offset = s.pq_table->offset();
      return s.pq_table->lut().data();
    }
    const std::size_t nb = pq_.code_bytes();
    if (scratch.size() < nb * 256) scratch.resize(nb * 256);
    pq::residual_lut(pq_, s.pq_qterm.data(), part.pq_term.data(), q.used.data(), cents_.data() + p * dim_,
                     scratch.data());
    return scratch.data();
  }
  // PQ: the query's lookup table (one 256-entry table per code byte).
  template <class F>
  void row_distance(const pq_params&, const prepared_query& q, const query_state_t& s, std::uint32_t p,
                    const prepared_partition& part, const partition_contents& pc, F& f) const {
    const std::size_t nb = pq_.code_bytes();
    std::vector<float> own;
    float offset = 0.0f;
    const float* lut = pq_lut(q, s, p, part, own, offset);
    const std::uint8_t* c = pc.codes.data();
    return f([c, lut, offset, nb](std::uint32_t i) {
      const std::uint8_t* row = c + std::size_t(i) * nb;
      float d = 0.0f;
      for (std::size_t b = 0; b < nb; ++b) d += lut[b * 256 + row[b]];
      return d + offset;
    });
  }
  template <class F>
  void row_distance(const rq_params&, const prepared_query&, const query_state_t&, std::uint32_t,
                    const prepared_partition&, const partition_contents&, F&) const {
    throw unsupported_error("ivf_searcher: HNSW graphs over RaBitQ storage are not supported");
  }

  // IVF_HNSW_*: the partition's graph searched with a beam of ef (Lance's HNSW::search).
  void scan_graph(const prepared_query& q, const query_state_t& s, std::uint32_t p, const prepared_partition& part,
                  const search_params& sp, topk& out, std::size_t ef) const {
    const row_filter* filter = sp.filter;
    const auto& pc = *part.data;
    const std::size_t n = pc.size();
    const auto* g = &graph_of(p);
    if (g->size() != n)
      throw corrupt_error("partition " + std::to_string(p) + ": the HNSW graph has " + std::to_string(g->size()) +
                          " nodes but the storage " + std::to_string(n) + " rows");
    const std::uint64_t* ids = pc.row_ids.data();
    std::size_t kept = n;
    if (filter) {
      kept = 0;
      for (std::size_t i = 0; i < n; ++i) kept += filter->contains(ids[i]);
    }
    with_row_distance(q, s, p, part, [&](const auto& dist) {
      if (filter && kept < n * 10 / 100) {
        // Few rows pass the prefilter: Lance scans them instead of walking the graph.
        for (std::uint32_t i = 0; i < n; ++i)
          if (filter->contains(ids[i])) {
            const float d = dist(i);
            if (sp.in_range(d)) out.push(d, ids[i]);
          }
        return;
      }
      thread_local hnsw::visited_set visited;
      const auto keep = [&](std::uint32_t i) { return !filter || filter->contains(ids[i]); };
      for (const auto& r : hnsw::search(*g, ef, dist, keep, visited))
        if (sp.in_range(r.distance)) out.push(r.distance, ids[r.id]);
    });
  }

  void scan(const prepared_query& q, const query_state_t& s, std::uint32_t p, float dist_q_c,
            const search_params& sp, topk& out, std::size_t ef, const shared_bound* bound) const {
    const row_filter* filter = sp.filter;
    std::shared_ptr<const prepared_partition> hold;
    const auto* part = &partition(p, hold);
    const auto& pc = *part->data;
    const std::size_t n = pc.size();
    if (n == 0) return;
    if (graphs_) {
      scan_graph(q, s, p, *part, sp, out, ef);
      return;
    }
    if constexpr (pq::has_filtered_lut_scan) {
      if (std::holds_alternative<pq_params>(quantizer_)) {
        scan_pq_filtered(q, s, p, *part, sp, out, bound);
        return;
      }
      if (s.rq_est) {
        scan_rq_filtered(s, p, dist_q_c, *part, sp, out, bound);
        return;
      }
    }
    // Per-thread scratch: no allocation per partition once warm.
    thread_local std::vector<float> d;
    if (d.size() < n) d.resize(n);
    std::visit([&](const auto& qp) { distances(qp, q, s, p, dist_q_c, *part, d.data()); }, quantizer_);
    const std::uint64_t* ids = pc.row_ids.data();
    const bool ranged = sp.distance_lower || sp.distance_upper;
    for (std::size_t i = 0; i < n; ++i) {
      if (!(d[i] <= push_bound(out, bound))) continue;
      if (ranged && !sp.in_range(d[i])) continue;
      if (filter && !filter->contains(ids[i])) continue;
      out.push(d[i], ids[i]);
    }
  }

  // RaBitQ (raw_query) with the u8-quantized filter (rabitq::query_estimator::
  // scan_filtered): only rows that may enter `out` get their distance, the one
  // distances() computes; the result is the same as a full scan's.
  void scan_rq_filtered(const query_state_t& s, std::uint32_t p, float dist_q_c, const prepared_partition& part,
                        const search_params& sp, topk& out, const shared_bound* bound) const {
    const row_filter* filter = sp.filter;
    const auto& pc = *part.data;
    thread_local std::vector<std::uint8_t> qs;
    if (qs.size() < rq_.code_bytes() * 256) qs.resize(rq_.code_bytes() * 256);
    const float qf = s.rq_est->query_factor(dist_q_c, rq_cents_.data() + std::size_t(p) * dim_);
    const std::uint64_t* ids = pc.row_ids.data();
    s.rq_est->scan_filtered(
        part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf, qs.data(),
        [&] { return push_bound(out, bound); },
        [&](std::size_t r, float d) {
          if (!(d <= push_bound(out, bound))) return;
          if (!sp.in_range(d)) return;
          if (filter && !filter->contains(ids[r])) return;
          out.push(d, ids[r]);
        });
  }

  // PQ with the u8-quantized filter (pq::lut_scan_filtered): only rows that
  // may enter `out` get their exact f32 distance, which is the one distances()
  // computes; the rows pushed and the result are the same as a full scan's.
  void scan_pq_filtered(const prepared_query& q, const query_state_t& s, std::uint32_t p,
                        const prepared_partition& part, const search_params& sp, topk& out,
                        const shared_bound* bound) const {
    const row_filter* filter = sp.filter;
    const auto& pc = *part.data;
    const std::size_t n = pc.size(), nb = pq_.code_bytes();
    thread_local std::vector<float> rl;
    thread_local std::vector<std::uint8_t> qs;
    float offset = 0.0f;
    const float* lut = pq_lut(q, s, p, part, rl, offset);
    if (qs.size() < nb * 256) qs.resize(nb * 256);
    const std::uint64_t* ids = pc.row_ids.data();
    constexpr float inf = std::numeric_limits<float>::infinity();
    pq::lut_scan_filtered(
        lut, nb, part.transposed.data(), n, qs.data(),
        [&] {
          const float b = push_bound(out, bound);
          return b < inf ? b - offset : inf;
        },
        [&](std::size_t r, float d) {
          if (offset != 0.0f) d += offset;
          if (!(d <= push_bound(out, bound))) return;
          if (!sp.in_range(d)) return;
          if (filter && !filter->contains(ids[r])) return;
          out.push(d, ids[r]);
        });
  }

  void distances(const flat_params& f, const prepared_query& q, const query_state_t&, std::uint32_t,
                 float, const prepared_partition& part, float* out) const {
    const auto& pc = *part.data;
    const std::size_t n = pc.size();
    const std::uint8_t* v = pc.codes.data();
    switch (f.element) {
      case element_type::f32:
        flat::distances(distance_, q.used.data(), reinterpret_cast<const float*>(v), n, dim_, out);
        break;
      case element_type::f64:
        flat::distances(distance_, q.used.data(), reinterpret_cast<const double*>(v), n, dim_, out);
        break;
      case element_type::f16: {
        const auto q16 = f16_query(q);
        flat::distances(distance_, q16.data(), reinterpret_cast<const simd::f16*>(v), n, dim_, out);
        break;
      }
      case element_type::u8:
        if (distance_ == distance_type::hamming) flat::distances(distance_, q.bytes.data(), v, n, dim_, out);
        else flat::distances(distance_, q.used.data(), v, n, dim_, out);
        break;
    }
  }

  void distances(const pq_params&, const prepared_query& q, const query_state_t& s, std::uint32_t p, float,
                 const prepared_partition& part, float* out) const {
    const std::size_t n = part.data->size();
    if (s.pq_table) {
      s.pq_table->scan(part.transposed.data(), n, out);
      return;
    }
    // The residual query's table from the query and partition terms, written in
    // lookup form into per-thread scratch (the values of pq::residual_table).
    thread_local std::vector<float> lut;
    const std::size_t nb = pq_.code_bytes();
    if (lut.size() < nb * 256) lut.resize(nb * 256);
    pq::residual_lut(pq_, s.pq_qterm.data(), part.pq_term.data(), q.used.data(), cents_.data() + p * dim_, lut.data());
    pq::lut_scan(lut.data(), nb, part.transposed.data(), n, out);
  }

  void distances(const sq_params&, const prepared_query&, const query_state_t& s, std::uint32_t, float,
                 const prepared_partition& part, float* out) const {
    s.sq_est->scan(part.data->codes.data(), part.data->size(), out);
  }

  void distances(const rq_params&, const prepared_query& q, const query_state_t& s, std::uint32_t p,
                 float dist_q_c, const prepared_partition& part, float* out) const {
    const auto& pc = *part.data;
    if (s.rq_est) {
      const float qf = s.rq_est->query_factor(dist_q_c, rq_cents_.data() + std::size_t(p) * dim_);
      s.rq_est->scan(part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf, out);
      return;
    }
    // residual_query (older indexes): the estimator of the residual query.
    std::vector<double> r(dim_);
    for (std::size_t i = 0; i < dim_; ++i) r[i] = q.used[i] - double(cents_[p * dim_ + i]);
    const rabitq::query_estimator est(rq_, r.data(),
                                      distance_ == distance_type::cosine ? distance_type::l2 : distance_);
    const float qf = distance_ == distance_type::l2 ? dist_q_c : dist_q_c - 1.0f;
    est.scan(part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf, out);
  }

  distance_type distance_;
  quantizer_params quantizer_;
  partition_loader load_;
  bool cache_enabled_;
  std::size_t num_partitions_ = 0, dim_ = 0;
  std::vector<float> cents_;
  std::vector<std::uint8_t> cents_u8_;
  pq::model<float> pq_;
  pq::query_term_plan pq_qplan_;
  sq::model sq_;
  rabitq::model rq_;
  std::vector<float> rq_cents_;
  mutable std::mutex mu_;
  mutable std::vector<std::shared_ptr<const prepared_partition>> cache_;  // owners (under mu_)
  std::unique_ptr<std::atomic<const prepared_partition*>[]> cached_;     // cache_[p].get() once set
  graph_loader graphs_;
  mutable std::vector<std::shared_ptr<const hnsw::graph>> graph_cache_;   // owners (under mu_)
  std::unique_ptr<std::atomic<const hnsw::graph*>[]> graph_cached_;       // graph_cache_[p].get() once set
};

}  // namespace detail

#if LANCET_HEADER_ONLY

LANCET_INLINE ivf_searcher::ivf_searcher(distance_type distance, const matrix& centroids, quantizer_params quantizer,
                                         partition_loader load, bool cache_partitions)
    : engine_(std::make_unique<detail::ivf_search_engine>(distance, centroids, std::move(quantizer), std::move(load),
                                                          cache_partitions)) {}
LANCET_INLINE ivf_searcher::ivf_searcher(distance_type distance, const matrix& centroids, quantizer_params quantizer,
                                         std::vector<partition_contents> partitions)
    : engine_(std::make_unique<detail::ivf_search_engine>(distance, centroids, std::move(quantizer),
                                                          std::move(partitions))) {}
LANCET_INLINE ivf_searcher::~ivf_searcher() = default;
LANCET_INLINE ivf_searcher::ivf_searcher(ivf_searcher&&) noexcept = default;
LANCET_INLINE ivf_searcher& ivf_searcher::operator=(ivf_searcher&&) noexcept = default;

LANCET_INLINE void ivf_searcher::with_graphs(graph_loader graphs) { engine_->with_graphs(std::move(graphs)); }
LANCET_INLINE bool ivf_searcher::has_graphs() const noexcept { return engine_->has_graphs(); }
LANCET_INLINE distance_type ivf_searcher::distance() const noexcept { return engine_->distance(); }
LANCET_INLINE std::size_t ivf_searcher::dimension() const noexcept { return engine_->dimension(); }
LANCET_INLINE std::size_t ivf_searcher::num_partitions() const noexcept { return engine_->num_partitions(); }
LANCET_INLINE const quantizer_params& ivf_searcher::quantizer() const noexcept { return engine_->quantizer(); }

#endif

template <class Q>
std::vector<std::pair<std::uint32_t, float>> ivf_searcher::probe(const Q* query, std::size_t dim,
                                                                 std::size_t nprobes) const {
  return engine_->probe(query, dim, nprobes);
}
template <class Q>
std::vector<neighbor> ivf_searcher::search(const Q* query, std::size_t dim, const search_params& sp) const {
  return engine_->search(query, dim, sp);
}
template <class Q>
std::vector<std::vector<neighbor>> ivf_searcher::search_many(const Q* queries, std::size_t nq, std::size_t dim,
                                                             const search_params& sp) const {
  return engine_->search_many(queries, nq, dim, sp);
}

}  // namespace lancet::index
