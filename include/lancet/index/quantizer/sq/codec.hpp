// The scalar quantizer's codec (quantizer/contract.hpp): one global range trained on
// Lance's sample, one byte per dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/sq/params.hpp"
#include "lancet/index/quantizer/sq/sq.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index::sq {

template <class T>
class codec {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;

 public:
  static codec of(const sq_params& p, std::size_t dim, simd::distance_type metric, std::string_view column) {
    if (is_u8) throw invalid_input_error("IVF_SQ does not support hamming distance");
    if (p.dimension != dim)
      throw invalid_input_error("the SQ bounds have dimension " + std::to_string(p.dimension) + ", column '" +
                                std::string(column) + "' has " + std::to_string(dim));
    return codec(from_params(p), p, metric);
  }
  template <class R, class C>
  static codec train(const build_options& o, std::size_t dim, R* rows, std::size_t n, const C*, std::size_t) {
    if constexpr (is_u8) {
      throw invalid_input_error("IVF_SQ does not support hamming distance");
    } else {
      sq::params sp;
      sp.num_bits = static_cast<std::uint16_t>(o.num_bits.value_or(8));
      sp.sample_rate = o.sample_rate;
      sp.seed = o.seed;
      auto m = sq::train(static_cast<const T*>(rows), n, dim, sp, o.metric, o.pool);
      auto stored = to_params(m);
      return codec(std::move(m), std::move(stored), o.metric);
    }
  }

  const sq_params& params() const noexcept { return p_; }

  template <class C>
  void encode(const T* rows, const double*, std::size_t n, const C*, std::size_t, const std::uint32_t*,
              std::uint8_t* codes, row_factors, boost::asio::thread_pool* pool) const {
    if constexpr (!is_u8) encode_for_ivf(m_, rows, n, metric_, codes, pool);
  }

 private:
  codec(model m, sq_params p, simd::distance_type metric) : m_(std::move(m)), p_(std::move(p)), metric_(metric) {}
  model m_;
  sq_params p_;
  simd::distance_type metric_;
};

}  // namespace lancet::index::sq
