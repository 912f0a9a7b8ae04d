// The flat quantizer's codec (quantizer/contract.hpp): no training; the codes are the
// vectors in the stored element type, normalised under cosine (as Lance's flat
// transform stores them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/flat/distances.hpp"
#include "lancet/index/quantizer/flat/params.hpp"
#include "lancet/simd/distance_type.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index::flat {

template <class T>
class codec {
 public:
  static codec of(const flat_params& p, std::size_t dim, simd::distance_type metric, std::string_view column) {
    if (p.dimension != dim)
      throw invalid_input_error("the flat storage has dimension " + std::to_string(p.dimension) + ", column '" +
                                std::string(column) + "' has " + std::to_string(dim));
    if ((p.element == element_type::u8) != std::is_same_v<T, std::uint8_t>)
      throw unsupported_error(std::string("IVF_FLAT storage of ") + std::string(element_name(p.element)) +
                              " vectors is encoded from rows of the same kind (column '" + std::string(column) +
                              "' gives " + (std::is_same_v<T, std::uint8_t> ? "uint8" : "float") + " rows)");
    return codec(p, metric);
  }
  template <class R, class C>
  static codec train(const build_options& o, std::size_t dim, R*, std::size_t, const C*, std::size_t) {
    return codec(to_params<T>(dim), o.metric);
  }

  const flat_params& params() const noexcept { return p_; }

  template <class C>
  void encode(const T* rows, const double* wide, std::size_t n, const C*, std::size_t, const std::uint32_t*,
              std::uint8_t* codes, row_factors, boost::asio::thread_pool*) const {
    const std::size_t d = p_.dimension, width = p_.code_bytes();
    const bool cos = metric_ == simd::distance_type::cosine;
    if (p_.element == element_type_of<T>()) {
      // Rows of the stored type: as they are, normalised in their own precision.
      if constexpr (!std::is_same_v<T, std::uint8_t>) {
        if (cos) {
          std::vector<T> tmp(rows, rows + n * d);
          for (std::size_t r = 0; r < n; ++r) quantizer::normalise_row_double(tmp.data() + r * d, d);
          std::memcpy(codes, tmp.data(), n * width);
          return;
        }
      }
      std::memcpy(codes, rows, n * width);
      return;
    }
    if constexpr (!std::is_same_v<T, std::uint8_t>) {
      if (p_.element == element_type::f64) {
        // float64 storage: the column's own values when given, else the rows widened.
        std::vector<double> v(n * d);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = wide ? wide[i] : quantizer::to_work<double>(rows[i]);
        if (cos)
          for (std::size_t r = 0; r < n; ++r) quantizer::normalise_row_double(v.data() + r * d, d);
        std::memcpy(codes, v.data(), n * width);
        return;
      }
      // float32 or f16 storage: normalised in float, then stored in its type.
      std::vector<float> v(n * d);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = quantizer::to_work<float>(rows[i]);
      if (cos)
        for (std::size_t r = 0; r < n; ++r) quantizer::normalise_row_double(v.data() + r * d, d);
      if (p_.element == element_type::f32) {
        std::memcpy(codes, v.data(), n * width);
        return;
      }
      for (std::size_t i = 0; i < v.size(); ++i) {
        const simd::f16 h(v[i]);
        std::memcpy(codes + i * 2, &h, 2);
      }
    }
  }

 private:
  codec(flat_params p, simd::distance_type metric) : p_(p), metric_(metric) {}
  flat_params p_;
  simd::distance_type metric_;
};

}  // namespace lancet::index::flat
