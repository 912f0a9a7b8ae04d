// The stages of optimising one IVF index (optimize/optimize_indices.hpp lists them and runs them
// through optimize_one): open_segments and cover_fragments (what the index holds),
// scan_delta, plan_stage, merged_rows, candidate_rows / split_stage /
// move_partitions, keep_entries / reencode_stage (with join_chooser), new_centroids
// and write_segment. One piece: each stage reads the optimize_run and what the
// stage before it returned.
#pragma once

#include "lancet/index/optimize/rows.hpp"

namespace lancet::index::detail {

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
  const auto lance_schema = dataset::manifest_schema(base.manifest());
  for (const auto& im : base.file.indices) {
    if (im.name != name) continue;
    ix.segs.push_back(open_index_segment(root, describe_index(lance_schema, im)));
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
  encoder e2(ix.q, ix.metric, cents, dim, ix.column);
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
inline pb::index_metadata write_segment(const optimize_run& run, const dataset::snapshot& base, const lancet::uuid& uuid,
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

}  // namespace lancet::index::detail
