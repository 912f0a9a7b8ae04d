// The definitions behind ivf_searcher.hpp: ivf_searcher's engine (query setup, the
// probes, the partition scans through the quantizer's scanner, the HNSW walk, the
// partition cache) and the searcher's members. Included by ivf_searcher.hpp in
// header-only mode; in compiled mode the library defines them, the searches for every
// query type of LANCET_SEARCH_QUERY_TYPES. Each quantizer's scan (its query and
// partition state, distances, filtered scan, HNSW distance) is its scanner
// (quantizer/<name>/scanner.hpp, quantizer/contract.hpp); the engine visits it once
// per partition. What every searcher shares is in neighbors.hpp.
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
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/quantizer/traits.hpp"
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
    const bool u8_flat = binary_rows(quantizer_);  // IVF_FLAT over uint8 (hamming)
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
    scanner_.emplace(make_scanner(quantizer_, scan_setup{distance, cents_.data(), num_partitions_, dim_}));
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
    const bool graphs_fit = std::visit([](const auto& sc) { return std::remove_cvref_t<decltype(sc)>::supports_graphs; }, *scanner_);
    if (!graphs_fit || distance_ == distance_type::hamming)
      throw invalid_input_error("ivf_searcher: HNSW graphs over " + index_type_name(quantizer_) +
                                " or hamming storage are not supported");
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
    const bool exact_storage = exact_distances(quantizer_);
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
  using prepared_query = scan_query;

  // The scanners' per-partition and per-query states, one alternative per quantizer.
  template <class V>
  struct scanner_states;
  template <class... S>
  struct scanner_states<std::variant<S...>> {
    using partition = std::variant<typename S::partition...>;
    using query = std::variant<typename S::query...>;
  };

  struct prepared_partition {
    std::shared_ptr<const partition_contents> data;
    typename scanner_states<quantizer_scanner>::partition extra;  // the scanner's
  };

  // Per-query state shared by every partition (the scanner's).
  using query_state_t = typename scanner_states<quantizer_scanner>::query;

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
    const bool adaptive = std::visit([](const auto& sc) { return sc.adaptive_probes(); }, *scanner_) && !graphs_ &&
                          sp.maximum_nprobes &&
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
    return std::visit([&](const auto& sc) -> query_state_t { return sc.prepare(q); }, *scanner_);
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
    prep->extra = std::visit(
        [&](const auto& sc) -> decltype(prep->extra) { return sc.prepare_partition(std::uint32_t(p), pc); }, *scanner_);
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

  // Distance of the query to row i of a partition, as the full scan computes it
  // (the HNSW walk's distance): f(distance function), from the scanner.
  template <class F>
  void with_row_distance(const prepared_query& q, const query_state_t& s, std::uint32_t p,
                         const prepared_partition& part, F&& f) const {
    std::visit(
        [&](const auto& sc) {
          using S = std::remove_cvref_t<decltype(sc)>;
          sc.with_row_distance(q, std::get<typename S::query>(s), p, *part.data,
                               std::get<typename S::partition>(part.extra), f);
        },
        *scanner_);
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
    const std::uint64_t* ids = pc.row_ids.data();
    const bool ranged = sp.distance_lower || sp.distance_upper;
    std::visit(
        [&](const auto& sc) {
          using S = std::remove_cvref_t<decltype(sc)>;
          const auto& qs = std::get<typename S::query>(s);
          const auto& ex = std::get<typename S::partition>(part->extra);
          // Scanners with a filtered scan give distances only to rows that may enter
          // `out`, the same distances as distances(): the result is a full scan's.
          if (sc.scan_filtered(q, qs, p, dist_q_c, pc, ex, [&] { return push_bound(out, bound); },
                               [&](std::size_t r, float d) {
                                 if (!(d <= push_bound(out, bound))) return;
                                 if (!sp.in_range(d)) return;
                                 if (filter && !filter->contains(ids[r])) return;
                                 out.push(d, ids[r]);
                               }))
            return;
          // Per-thread scratch: no allocation per partition once warm.
          thread_local std::vector<float> d;
          if (d.size() < n) d.resize(n);
          sc.distances(q, qs, p, dist_q_c, pc, ex, d.data());
          for (std::size_t i = 0; i < n; ++i) {
            if (!(d[i] <= push_bound(out, bound))) continue;
            if (ranged && !sp.in_range(d[i])) continue;
            if (filter && !filter->contains(ids[i])) continue;
            out.push(d[i], ids[i]);
          }
        },
        *scanner_);
  }

  distance_type distance_;
  quantizer_params quantizer_;
  partition_loader load_;
  bool cache_enabled_;
  std::size_t num_partitions_ = 0, dim_ = 0;
  std::vector<float> cents_;
  std::vector<std::uint8_t> cents_u8_;
  std::optional<quantizer_scanner> scanner_;  // over cents_, which stay put
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
