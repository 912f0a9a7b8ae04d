// Exact search, the ground truth a vector search is measured against: the exact
// distance of a query to a vector (as the index's distance type reports it) and the
// exact k nearest of a set of vectors.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "lancet/index/search/neighbors.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

// Exact distance between a query and a vector (both widened to double), as the
// index's distance type reports it.
inline double exact_distance(distance_type t, const double* q, const double* v, std::size_t d) {
  switch (t) {
    case distance_type::l2: return simd::l2(q, v, d);
    case distance_type::dot: return 1.0 - simd::dot(q, v, d);
    case distance_type::cosine: return simd::cosine(q, v, d);
    case distance_type::hamming: {
      double h = 0;
      for (std::size_t i = 0; i < d; ++i) {
        const auto a = static_cast<unsigned>(q[i]), b = static_cast<unsigned>(v[i]);
        h += double(std::popcount((a ^ b) & 0xffu));
      }
      return h;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// The exact k nearest of n row-major vectors (dim values of T) to a query, with
// row ids 0..n-1 unless given: the ground truth a search is measured against.
template <class T, class Q>
inline std::vector<neighbor> brute_force(distance_type t, const Q* query, const T* vectors, std::size_t n,
                                         std::size_t dim, std::size_t k, const std::uint64_t* row_ids = nullptr,
                                         const row_filter* filter = nullptr) {
  std::vector<double> q(dim), v(dim);
  for (std::size_t i = 0; i < dim; ++i) q[i] = quantizer::to_work<double>(query[i]);
  topk best(k);
  for (std::size_t r = 0; r < n; ++r) {
    const std::uint64_t id = row_ids ? row_ids[r] : r;
    if (filter && !filter->contains(id)) continue;
    for (std::size_t i = 0; i < dim; ++i) v[i] = quantizer::to_work<double>(vectors[r * dim + i]);
    best.push(static_cast<float>(exact_distance(t, q.data(), v.data(), dim)), id);
  }
  return best.sorted();
}

// Refine: the candidates re-ranked by their exact distances (original vectors from
// sp.fetch, NaN for a row it cannot find, which is dropped), those in sp's distance
// range, the sp.k nearest.
inline std::vector<neighbor> refine_candidates(distance_type t, const double* query, std::size_t dim,
                                               const std::vector<neighbor>& cand, const search_params& sp) {
  if (!sp.fetch) throw invalid_input_error("search: refine_factor needs the original vectors (search_params::fetch)");
  std::vector<std::uint64_t> ids(cand.size());
  for (std::size_t i = 0; i < cand.size(); ++i) ids[i] = cand[i].row_id;
  std::vector<double> vecs(cand.size() * dim, std::numeric_limits<double>::quiet_NaN());
  sp.fetch(ids, vecs.data());
  topk best(sp.k);
  for (std::size_t i = 0; i < cand.size(); ++i) {
    const float d = static_cast<float>(exact_distance(t, query, vecs.data() + i * dim, dim));
    if (sp.in_range(d)) best.push(d, ids[i]);
  }
  return best.sorted();
}

}  // namespace lancet::index
