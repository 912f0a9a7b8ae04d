// The flat "quantizer" of IVF_FLAT: rows are stored as they are (normalised under
// cosine, as Lance's flat transform stores them) and searched with exact distances.
//
//   index::flat::distances(distance_type::l2, query, vectors, n, dim, out);
//
// Lance's conventions (lance-index vector/flat): l2 is the squared distance, cosine
// 1 - cos, dot 1 - x.y, and uint8 vectors are binary codes compared with hamming
// (FlatBinQuantizer). The query is cast to the vectors' element type first, as Lance
// casts it to the column's type. Distances are reported as f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::flat {

using simd::distance_type;

// Distances from query (dim values of Q) to n row-major vectors of T into out[n].
template <class T, class Q>
inline void distances(distance_type t, const Q* query, const T* vectors, std::size_t n, std::size_t dim, float* out) {
  static_assert(simd::is_element_v<T> && simd::is_element_v<Q>, "flat vectors are float, double, f16 or uint8");
  if (n == 0) return;
  if (query == nullptr || vectors == nullptr) throw invalid_input_error("flat distances: null query or vectors");
  if (t == distance_type::hamming && !std::is_same_v<T, std::uint8_t>)
    throw invalid_input_error("flat distances: hamming needs uint8 binary codes");
  std::vector<T> q(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    if constexpr (std::is_same_v<T, Q>) q[i] = query[i];
    else if constexpr (std::is_same_v<T, std::uint8_t>) {
      const double v = quantizer::to_work<double>(query[i]);  // saturating, NaN -> 0
      q[i] = !(v > 0.0) ? 0 : v >= 255.0 ? 255 : static_cast<std::uint8_t>(v);
    }
    else if constexpr (std::is_same_v<Q, std::uint8_t>) q[i] = quantizer::from_work<T>(double(query[i]));
    else q[i] = quantizer::from_work<T>(quantizer::to_work<double>(query[i]));
  }
  if constexpr (std::is_same_v<T, double>) {
    std::vector<double> d(n);
    simd::distances_to_many(t, q.data(), vectors, n, dim, d.data());
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(d[i]);
  } else {
    simd::distances_to_many(t, q.data(), vectors, n, dim, out);
  }
}

// What the index files record about a flat index of dim values of T.
template <class T>
inline flat_params to_params(std::size_t dim) {
  return flat_params{static_cast<std::uint32_t>(dim), element_type_of<T>()};
}

}  // namespace lancet::index::flat
