// The toy quantizer's codec (quantizer/contract.hpp): each dimension's range trained
// as the minimum and maximum of the training rows (normalised under cosine, as every
// quantizer does), rows rounded to the nearest of 16 levels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <lancet/core/error.hpp>
#include <lancet/core/thread_pool_fwd.hpp>
#include <lancet/index/build/options.hpp>
#include <lancet/index/quantizer/common.hpp>
#include <lancet/index/quantizer/contract.hpp>
#include <lancet/simd/distance_type.hpp>

#include "toy_quantizer/params.hpp"

namespace toy_q4 {

template <class T>
class codec {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;

 public:
  static codec of(const q4_params& p, std::size_t dim, lancet::simd::distance_type metric, std::string_view column) {
    if (is_u8) throw lancet::invalid_input_error("IVF_Q4 does not support hamming distance");
    if (p.dimension != dim)
      throw lancet::invalid_input_error("the Q4 ranges have dimension " + std::to_string(p.dimension) + ", column '" +
                                        std::string(column) + "' has " + std::to_string(dim));
    return codec(p, metric);
  }

  template <class R, class C>
  static codec train(const lancet::index::build_options& o, std::size_t dim, R* rows, std::size_t n, const C*,
                     std::size_t) {
    if (is_u8) throw lancet::invalid_input_error("IVF_Q4 does not support hamming distance");
    if (n == 0) throw lancet::invalid_input_error("IVF_Q4: no rows to train the ranges on");
    q4_params p;
    p.dimension = std::uint32_t(dim);
    p.lower.assign(dim, std::numeric_limits<float>::infinity());
    p.upper.assign(dim, -std::numeric_limits<float>::infinity());
    std::vector<float> row(dim);
    for (std::size_t r = 0; r < n; ++r) {
      if (!load(static_cast<const T*>(rows) + r * dim, dim, o.metric, row.data())) continue;
      for (std::size_t d = 0; d < dim; ++d) {
        p.lower[d] = std::min(p.lower[d], row[d]);
        p.upper[d] = std::max(p.upper[d], row[d]);
      }
    }
    if (!(p.lower[0] <= p.upper[0])) throw lancet::invalid_input_error("IVF_Q4: no finite row to train the ranges on");
    return codec(std::move(p), o.metric);
  }

  const q4_params& params() const noexcept { return p_; }

  template <class C>
  void encode(const T* rows, const double*, std::size_t n, const C*, std::size_t, const std::uint32_t*,
              std::uint8_t* codes, lancet::index::row_factors, boost::asio::thread_pool*) const {
    const std::size_t dim = p_.dimension, w = p_.code_bytes();
    std::vector<float> row(dim);
    for (std::size_t r = 0; r < n; ++r) {
      std::uint8_t* out = codes + r * w;
      std::fill(out, out + w, std::uint8_t(0));
      load(rows + r * dim, dim, metric_, row.data());
      for (std::size_t d = 0; d < dim; ++d) {
        const float span = p_.upper[d] - p_.lower[d];
        const float x = span > 0 ? (row[d] - p_.lower[d]) / span * float(levels) : 0.0f;
        const auto c = unsigned(std::clamp(std::lround(x), 0l, long(levels)));
        out[d / 2] = std::uint8_t(out[d / 2] | (c << (4 * (d % 2))));
      }
    }
  }

 private:
  codec(q4_params p, lancet::simd::distance_type metric) : p_(std::move(p)), metric_(metric) {}

  // One row in float, normalised under cosine; false when it cannot be (zero norm).
  static bool load(const T* in, std::size_t dim, lancet::simd::distance_type metric, float* out) {
    if constexpr (is_u8) {
      return false;
    } else {
      for (std::size_t d = 0; d < dim; ++d) out[d] = lancet::index::quantizer::to_work<float>(in[d]);
      return metric != lancet::simd::distance_type::cosine || lancet::index::quantizer::normalise_row(out, dim);
    }
  }

  q4_params p_;
  lancet::simd::distance_type metric_;
};

}  // namespace toy_q4
