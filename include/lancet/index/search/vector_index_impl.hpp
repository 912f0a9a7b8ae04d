// The definitions behind vector_index.hpp: opening an index's segments (index.idx
// read, auxiliary.idx opened, HNSW graphs read on demand). Included by
// vector_index.hpp in header-only mode; in compiled mode the library defines them.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/index/search/brute_force.hpp"
#include "lancet/index/hnsw/index_file.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/search/query_batch.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/search/vector_index.hpp"

namespace lancet::index {

namespace detail {

inline void check_searchable(const vector_index_info& i) {
  if (i.index_type.rfind("IVF_", 0) != 0 || i.index_type == "IVF_HNSW_RQ")
    throw unsupported_error("index '" + i.name + "' is " + (i.index_type.empty() ? "not a vector index" : i.index_type) +
                            "; lancet searches IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ and IVF_HNSW_FLAT / SQ / PQ");
}

}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE index_segment open_index_segment(const std::string& root, const vector_index_info& i) {
  detail::check_searchable(i);
  index_segment seg;
  seg.info = i;
  const std::string dir = index_directory(root, i.uuid);
  seg.index_file = read_index_file(dir + "/" + std::string(detail::index_file_name));
  seg.storage =
      std::make_shared<storage_reader<io::any_source>>(open_storage(dir + "/" + std::string(detail::auxiliary_file_name)));
  if (!seg.index_file.ivf.centroids) throw corrupt_error("index '" + i.name + "': index.idx has no centroids");
  auto st = seg.storage;
  auto mu = std::make_shared<std::mutex>();
  seg.searcher = std::make_shared<ivf_searcher>(seg.index_file.distance, *seg.index_file.ivf.centroids, st->quantizer(),
                                                [st, mu](std::size_t p) {
                                                  std::lock_guard<std::mutex> lock(*mu);
                                                  return std::make_shared<const partition_contents>(
                                                      st->read_partition(p));
                                                });
  if (seg.index_file.sub_index_key == detail::hnsw_metadata_key) {
    // IVF_HNSW_*: each partition's graph read from index.idx when first probed.
    const std::string path = dir + "/" + std::string(detail::index_file_name);
    auto reader = std::make_shared<file::file_reader<io::any_source>>(io::storage_for(path).open_source(path));
    auto info = std::make_shared<index_file_info>(seg.index_file);
    const std::string what = "index '" + i.name + "' " + path;
    seg.searcher->with_graphs([reader, info, mu, what](std::size_t p) {
      std::lock_guard<std::mutex> lock(*mu);
      return std::make_shared<const hnsw::graph>(hnsw::read_graph(*reader, *info, p, what));
    });
  }
  return seg;
}

namespace detail {
inline opened_index open_vector_index(const std::string& root, const std::vector<vector_index_info>& all,
                                      bool stable_row_ids, const std::string& column, const std::string& name) {
  std::string names;
  std::string chosen;
  for (const auto& i : all) {
    names += (names.empty() ? "" : ", ") + i.name;
    const bool match = name.empty() ? (!i.columns.empty() && i.columns[0] == column && i.index_type.rfind("IVF_", 0) == 0)
                                    : i.name == name;
    if (match && chosen.empty()) chosen = i.name;
  }
  if (chosen.empty())
    throw invalid_input_error((name.empty() ? "no vector index on column '" + column + "'" : "no index named '" + name + "'") +
                              " (indexes: " + (names.empty() ? std::string("none") : names) + ")");
  opened_index o;
  std::vector<std::shared_ptr<ivf_searcher>> searchers;
  std::vector<std::vector<std::uint64_t>> frags;
  for (const auto& i : all) {
    if (i.name != chosen) continue;
    o.segments.push_back(open_index_segment(root, i));
    searchers.push_back(o.segments.back().searcher);
    frags.push_back(i.fragment_ids);
  }
  const auto& newest = o.segments.back();
  o.info = newest.info;
  o.index_file = newest.index_file;
  o.storage = newest.storage;
  // Several segments and row addresses: each segment answers for its own fragments.
  const bool addresses = o.segments.size() > 1 && !stable_row_ids;
  o.searcher = std::make_unique<segmented_searcher>(std::move(searchers), std::move(frags), addresses);
  return o;
}
}  // namespace detail

LANCET_INLINE std::vector<vector_index_info> list_indices(const dataset::dataset& ds) {
  return list_indices(ds.lance_schema(), ds.indices());
}
LANCET_INLINE opened_index open_vector_index(const dataset::dataset& ds, const std::string& column,
                                             const std::string& name) {
  return detail::open_vector_index(ds.path(), list_indices(ds), ds.stable_row_ids(), column, name);
}
LANCET_INLINE opened_index open_vector_index(const dataset::snapshot& s, const std::string& column,
                                             const std::string& name) {
  return detail::open_vector_index(s.root, list_indices(s), dataset::uses_stable_row_ids(s.manifest()), column, name);
}

#endif

template <class Q>
std::vector<std::pair<std::uint32_t, float>> segmented_searcher::probe(const Q* query, std::size_t dim,
                                                                     std::size_t nprobes) const {
  return segs_.back()->probe(query, dim, nprobes);
}

template <class Q>
std::vector<neighbor> segmented_searcher::search(const Q* query, std::size_t dim, const search_params& sp) const {
  if (segs_.size() == 1 && !addresses_) return segs_[0]->search(query, dim, sp);
  // Each segment answers for its own fragments (row addresses name them).
  std::vector<std::optional<row_filter>> own(segs_.size());
  std::vector<search_params> each(segs_.size(), sp);
  // Refine once, over the k x refine_factor best candidates of every segment.
  const bool refine = sp.refine_factor > 0 && !exact_distances(quantizer());
  const std::size_t kk = refine ? sp.k * sp.refine_factor : sp.k;
  for (std::size_t i = 0; i < segs_.size(); ++i) {
    each[i].add_unfound_rows = false;
    each[i].defer_refine = true;
    if (addresses_) {
      const auto* user = sp.filter;
      const auto* frags = &frags_[i];
      own[i].emplace(row_filter::where([user, frags](std::uint64_t id) {
        return frags->count(id >> 32) != 0 && (!user || user->contains(id));
      }));
      each[i].filter = &*own[i];
    }
  }
  // Newest segment first so that its entry wins a duplicate row id.
  const auto merge = [&](const std::vector<std::vector<neighbor>>& per) {
    std::unordered_set<std::uint64_t> seen;
    std::vector<neighbor> all;
    for (std::size_t i = segs_.size(); i-- > 0;)
      for (const auto& n : per[i])
        if (seen.insert(n.row_id).second) all.push_back(n);
    std::sort(all.begin(), all.end(), closer);
    return all;
  };
  // The first partitions of every segment, then (as Lance, once all are counted) the
  // late search where they found fewer than k rows.
  const bool may_probe_more =
      sp.late_search && sp.maximum_nprobes && (*sp.maximum_nprobes == 0 || *sp.maximum_nprobes > sp.nprobes);
  std::vector<std::vector<neighbor>> per(segs_.size());
  for (std::size_t i = 0; i < segs_.size(); ++i) {
    search_params first = each[i];
    first.late_search = false;
    per[i] = segs_[i]->search(query, dim, first);
  }
  auto all = merge(per);
  const std::size_t found = std::min(all.size(), sp.k);
  if (may_probe_more && found < sp.k) {
    const auto allowed = sp.filter ? sp.filter->size() : std::nullopt;
    if (sp.add_unfound_rows && allowed && found < *allowed && *allowed <= sp.k) {
      if (const auto rows = sp.filter->rows()) {
        std::unordered_set<std::uint64_t> have;
        for (const auto& n : all) have.insert(n.row_id);
        for (auto id : *rows)
          if (!have.count(id)) all.push_back({id, std::numeric_limits<float>::infinity()});
        std::sort(all.begin(), all.end(), closer);
      }
    } else {
      std::size_t target = sp.k;
      if (allowed) target = std::min(target, *allowed);
      for (std::size_t i = 0; i < segs_.size(); ++i) {
        // This segment goes on until the rows of all reach the target.
        const std::size_t others = found - std::min(found, per[i].size());
        each[i].found_target = std::max<std::size_t>(1, target > others ? target - others : 1);
        per[i] = segs_[i]->search(query, dim, each[i]);
      }
      all = merge(per);
    }
  }
  if (all.size() > kk) all.resize(kk);
  if (refine) {
    std::vector<double> q(dim);
    for (std::size_t i = 0; i < dim; ++i) q[i] = quantizer::to_work<double>(query[i]);
    return refine_candidates(distance(), q.data(), dim, all, sp);
  }
  return all;
}

template <class Q>
std::vector<std::vector<neighbor>> segmented_searcher::search_many(const Q* queries, std::size_t nq, std::size_t dim,
                                                                 const search_params& sp) const {
  if (segs_.size() == 1 && !addresses_) return segs_[0]->search_many(queries, nq, dim, sp);
  return detail::search_each(*this, queries, nq, dim, sp);
}

}  // namespace lancet::index
