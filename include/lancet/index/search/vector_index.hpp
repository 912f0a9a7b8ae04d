// Opens a dataset's IVF vector index (one built by lancet or by LanceDB) for search:
// centroids from index.idx, partitions read from auxiliary.idx on demand.
//
// An index may have several segments: IndexMetadata entries with the same name and
// disjoint fragment bitmaps (Lance's delta indexes, written by an incremental
// optimize). The searcher searches every segment and merges the results, so every
// indexed row is covered once:
//
//   auto ix = index::open_vector_index(snapshot, "vector");
//   auto hits = ix.searcher->search(query, dim, sp);   // over all segments
//
// This header declares the opening; vector_index_impl.hpp defines it: included here
// in header-only mode, compiled into the library in compiled mode (core/config.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/index/index_info.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/io/source.hpp"

namespace lancet::dataset {
struct snapshot;  // dataset/snapshot.hpp
class dataset;    // dataset/dataset.hpp
}  // namespace lancet::dataset

namespace lancet::index {

template <io::source Source>
class storage_reader;  // storage_reader.hpp

// One segment of an index: its metadata, index.idx and a searcher over its partitions.
struct index_segment {
  vector_index_info info;
  index_file_info index_file;
  std::shared_ptr<storage_reader<io::any_source>> storage;
  std::shared_ptr<ivf_searcher> searcher;
};

// Searches all segments of one index and merges their neighbours (nearest first, the
// lowest row id winning a tie). A row id found in several segments is reported once
// (the newest segment's distance). Without stable row ids a segment only answers for
// rows of the fragments its bitmap names (a row address names its fragment), so rows
// a stale segment still holds after a rewrite are not returned twice.
class segmented_searcher {
 public:
  segmented_searcher(std::vector<std::shared_ptr<ivf_searcher>> segments,
                     std::vector<std::vector<std::uint64_t>> fragments, bool addresses)
      : segs_(std::move(segments)), addresses_(addresses) {
    if (segs_.empty()) throw invalid_input_error("segmented_searcher: no segment");
    if (fragments.size() != segs_.size())
      throw invalid_input_error("segmented_searcher: " + std::to_string(fragments.size()) + " fragment lists for " +
                                std::to_string(segs_.size()) + " segments");
    for (auto& f : fragments) frags_.emplace_back(f.begin(), f.end());
    for (const auto& s : segs_) {
      if (s->dimension() != segs_[0]->dimension() || s->distance() != segs_[0]->distance())
        throw invalid_input_error("index segments differ in dimension or distance type");
    }
  }

  std::size_t num_segments() const noexcept { return segs_.size(); }
  const ivf_searcher& segment(std::size_t i) const { return *segs_.at(i); }
  distance_type distance() const noexcept { return segs_[0]->distance(); }
  std::size_t dimension() const noexcept { return segs_[0]->dimension(); }
  // Partitions of the newest segment (segments of one IVF model share them).
  std::size_t num_partitions() const noexcept { return segs_.back()->num_partitions(); }
  const quantizer_params& quantizer() const noexcept { return segs_.back()->quantizer(); }

  // Q, a query's element type, as ivf_searcher's (LANCET_SEARCH_QUERY_TYPES).
  template <class Q>
  std::vector<std::pair<std::uint32_t, float>> probe(const Q* query, std::size_t dim, std::size_t nprobes) const;

  // The k nearest rows over every segment (each segment probes its own nprobes).
  template <class Q>
  std::vector<neighbor> search(const Q* query, std::size_t dim, const search_params& sp) const;

  // Many queries, batched on sp.pool as ivf_searcher::search_many does (each query on
  // one thread; a pool never splits one query here).
  template <class Q>
  std::vector<std::vector<neighbor>> search_many(const Q* queries, std::size_t nq, std::size_t dim,
                                                 const search_params& sp) const;

 private:
  std::vector<std::shared_ptr<ivf_searcher>> segs_;
  std::vector<std::set<std::uint64_t>> frags_;
  bool addresses_ = false;
};

// A searcher over one IVF index of a dataset version (ours or one LanceDB built).
// info / index_file / storage describe the newest segment; `segments` lists them all
// (oldest first, in manifest order) and `searcher` searches them together.
struct opened_index {
  vector_index_info info;
  index_file_info index_file;
  std::shared_ptr<storage_reader<io::any_source>> storage;
  std::unique_ptr<segmented_searcher> searcher;
  std::vector<index_segment> segments;
};

// One segment, opened: index.idx read, auxiliary.idx opened, a searcher over it.
LANCET_INLINE index_segment open_index_segment(const std::string& root, const vector_index_info& i);

// Every index of a dataset version (vector indices with their type, metric and parameters).
LANCET_INLINE std::vector<vector_index_info> list_indices(const dataset::dataset& ds);

// The index on `column` (or named `name` when given) of a dataset version, all its segments;
// invalid_input_error naming the indexes there are when none matches.
LANCET_INLINE opened_index open_vector_index(const dataset::dataset& ds, const std::string& column,
                                             const std::string& name = {});
LANCET_INLINE opened_index open_vector_index(const dataset::snapshot& s, const std::string& column,
                                             const std::string& name = {});

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/search/vector_index_impl.hpp"
#endif
