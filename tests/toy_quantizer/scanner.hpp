// The toy quantizer's partition scanner (quantizer/contract.hpp): a table of each
// dimension's 16 contributions per query, summed over a row's codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <lancet/core/error.hpp>
#include <lancet/index/quantizer/contract.hpp>
#include <lancet/simd/distance_type.hpp>

#include "toy_quantizer/params.hpp"

namespace toy_q4 {

class scanner {
 public:
  static constexpr bool exact = false;
  static constexpr bool supports_graphs = false;
  struct query {
    std::vector<float> table;  // [dimension][16]
    float base = 0;            // 1 for dot and cosine (1 - x.y)
  };
  struct partition {};

  scanner(const q4_params& p, const lancet::index::scan_setup& s) : p_(p), distance_(s.distance) {
    if (p.dimension != s.dim)
      throw lancet::invalid_input_error("ivf_searcher: Q4 ranges of dimension " + std::to_string(p.dimension) +
                                        " under centroids of dimension " + std::to_string(s.dim));
  }

  bool adaptive_probes() const noexcept { return false; }

  query prepare(const lancet::index::scan_query& q) const {
    query s;
    const bool l2 = distance_ == lancet::simd::distance_type::l2;
    s.base = l2 ? 0.0f : 1.0f;
    s.table.resize(std::size_t(p_.dimension) * 16);
    for (std::size_t d = 0; d < p_.dimension; ++d)
      for (unsigned c = 0; c <= levels; ++c) {
        const double v = level(p_, d, c), x = q.used[d];
        s.table[d * 16 + c] = float(l2 ? (x - v) * (x - v) : -x * v);
      }
    return s;
  }

  partition prepare_partition(std::uint32_t p, const lancet::index::partition_contents& pc) const {
    if (pc.codes.size() != pc.size() * p_.code_bytes())
      throw lancet::corrupt_error("Q4 partition " + std::to_string(p) + ": " + std::to_string(pc.codes.size()) +
                                  " code bytes for " + std::to_string(pc.size()) + " rows");
    return {};
  }

  void distances(const lancet::index::scan_query&, const query& s, std::uint32_t, float,
                 const lancet::index::partition_contents& pc, const partition&, float* out) const {
    for (std::size_t i = 0; i < pc.size(); ++i) out[i] = row_distance(s, pc.codes.data() + i * p_.code_bytes());
  }

  template <class Bound, class Push>
  bool scan_filtered(const lancet::index::scan_query&, const query&, std::uint32_t, float,
                     const lancet::index::partition_contents&, const partition&, Bound&&, Push&&) const {
    return false;
  }

  template <class F>
  void with_row_distance(const lancet::index::scan_query&, const query& s, std::uint32_t,
                         const lancet::index::partition_contents& pc, const partition&, F&& f) const {
    const std::uint8_t* codes = pc.codes.data();
    return f([this, &s, codes](std::uint32_t i) { return row_distance(s, codes + std::size_t(i) * p_.code_bytes()); });
  }

 private:
  float row_distance(const query& s, const std::uint8_t* row) const {
    float sum = s.base;
    for (std::size_t d = 0; d < p_.dimension; ++d) sum += s.table[d * 16 + code_at(row, d)];
    return sum;
  }

  q4_params p_;
  lancet::simd::distance_type distance_;
};

}  // namespace toy_q4
