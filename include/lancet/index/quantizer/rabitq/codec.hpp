// RaBitQ's codec (quantizer/contract.hpp): a random rotation (nothing to train), 1-bit
// codes of the rows' residuals to their centroid with per-row factors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/rabitq/params.hpp"
#include "lancet/index/quantizer/rabitq/rabitq.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index::rabitq {

template <class T>
class codec {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;

 public:
  static codec of(const rq_params& p, std::size_t dim, simd::distance_type metric, std::string_view column) {
    if (is_u8) throw invalid_input_error("IVF_RQ does not support hamming distance");
    if (p.num_bits != 1)
      throw unsupported_error("the RaBitQ model has " + std::to_string(p.num_bits) +
                              "-bit codes; lancet encodes 1-bit codes only");
    auto m = from_params(p);
    if (m.dimension != dim)
      throw invalid_input_error("the RaBitQ model has dimension " + std::to_string(m.dimension) + ", column '" +
                                std::string(column) + "' has " + std::to_string(dim));
    return codec(std::move(m), p, metric);
  }
  template <class R, class C>
  static codec train(const build_options& o, std::size_t dim, R*, std::size_t, const C*, std::size_t) {
    if constexpr (is_u8) {
      throw invalid_input_error("IVF_RQ does not support hamming distance");
    } else {
      rabitq::params rp;
      rp.seed = o.seed;
      auto m = make<T>(dim, rp);
      auto stored = to_params(m);
      return codec(std::move(m), std::move(stored), o.metric);
    }
  }

  const rq_params& params() const noexcept { return p_; }

  template <class C>
  void encode(const T* rows, const double*, std::size_t n, const C* cents, std::size_t k, const std::uint32_t* parts,
              std::uint8_t* codes, row_factors factors, boost::asio::thread_pool* pool) const {
    if constexpr (!is_u8) {
      encoded_rows er;
      encode_for_ivf(m_, rows, n, metric_, cents, k, parts, er, pool);
      std::memcpy(codes, er.codes.data(), n * p_.code_bytes());
      factors.add->insert(factors.add->end(), er.add_factors.begin(), er.add_factors.end());
      factors.scale->insert(factors.scale->end(), er.scale_factors.begin(), er.scale_factors.end());
      factors.error->insert(factors.error->end(), er.error_factors.begin(), er.error_factors.end());
    }
  }

 private:
  codec(model m, rq_params p, simd::distance_type metric) : m_(std::move(m)), p_(std::move(p)), metric_(metric) {}
  model m_;
  rq_params p_;
  simd::distance_type metric_;
};

}  // namespace lancet::index::rabitq
