// The flat quantizer's partition scanner (quantizer/contract.hpp): exact distances
// over the stored vectors, the query cast to their element type as Lance casts it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/flat/distances.hpp"
#include "lancet/index/quantizer/flat/params.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index::flat {

class scanner {
 public:
  static constexpr bool exact = true;
  static constexpr bool supports_graphs = true;
  struct query {
    std::vector<double> f16;  // f16 storage: the query as Lance rounds it (f16_query)
  };
  struct partition {};

  scanner(const flat_params& p, const scan_setup& s) : p_(p), distance_(s.distance), dim_(s.dim) {
    if (p.dimension != s.dim)
      throw invalid_input_error("ivf_searcher: flat quantizer of dimension " + std::to_string(p.dimension) +
                                " under centroids of dimension " + std::to_string(s.dim));
  }

  bool adaptive_probes() const noexcept { return p_.element == element_type::f32; }

  query prepare(const scan_query& q) const {
    query out;
    if (p_.element == element_type::f16) out.f16 = f16_query(q);
    return out;
  }
  partition prepare_partition(std::uint32_t, const partition_contents&) const { return {}; }

  void distances(const scan_query& q, const query& s, std::uint32_t, float, const partition_contents& pc,
                 const partition&, float* out) const {
    const std::size_t n = pc.size();
    const std::uint8_t* v = pc.codes.data();
    switch (p_.element) {
      case element_type::f32:
        flat::distances(distance_, q.used.data(), reinterpret_cast<const float*>(v), n, dim_, out);
        break;
      case element_type::f64:
        flat::distances(distance_, q.used.data(), reinterpret_cast<const double*>(v), n, dim_, out);
        break;
      case element_type::f16:
        flat::distances(distance_, s.f16.data(), reinterpret_cast<const simd::f16*>(v), n, dim_, out);
        break;
      case element_type::u8:
        if (distance_ == distance_type::hamming) flat::distances(distance_, q.bytes.data(), v, n, dim_, out);
        else flat::distances(distance_, q.used.data(), v, n, dim_, out);
        break;
    }
  }

  template <class Bound, class Push>
  bool scan_filtered(const scan_query&, const query&, std::uint32_t, float, const partition_contents&,
                     const partition&, Bound&&, Push&&) const {
    return false;
  }

 private:
  // The distance to row i of a partition of T vectors (defined before its use: its
  // return type is deduced).
  template <class T>
  auto row_distance(const double* query, const std::uint8_t* v) const {
    return [this, query, v](std::uint32_t i) {
      float d = 0;
      flat::distances(distance_, query, reinterpret_cast<const T*>(v) + std::size_t(i) * dim_, 1, dim_, &d);
      return d;
    };
  }

 public:
  template <class F>
  void with_row_distance(const scan_query& q, const query& s, std::uint32_t, const partition_contents& pc,
                         const partition&, F&& f) const {
    const std::uint8_t* v = pc.codes.data();
    switch (p_.element) {
      case element_type::f32: return f(row_distance<float>(q.used.data(), v));
      case element_type::f64: return f(row_distance<double>(q.used.data(), v));
      case element_type::f16: return f(row_distance<simd::f16>(s.f16.data(), v));
      case element_type::u8: return f(row_distance<std::uint8_t>(q.used.data(), v));
    }
  }

 private:
  // The query for f16 storage. Lance casts the query to the column's type before the
  // index normalises it (cosine, in f32, the result in f16 again) and its f16 kernels
  // take two f16 vectors: the same roundings here, so near-ties order as there.
  std::vector<double> f16_query(const scan_query& q) const {
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

  flat_params p_;
  distance_type distance_;
  std::size_t dim_;
};

}  // namespace lancet::index::flat
