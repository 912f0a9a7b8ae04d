// The scalar quantizer's partition scanner (quantizer/contract.hpp): the query's
// distance estimator over the codes as stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/sq/params.hpp"
#include "lancet/index/quantizer/sq/sq.hpp"

namespace lancet::index::sq {

class scanner {
 public:
  static constexpr bool exact = false;
  static constexpr bool supports_graphs = true;
  struct query {
    std::shared_ptr<distance_estimator> est;
  };
  struct partition {};

  scanner(const sq_params& p, const scan_setup& s) : sq_(from_params(p)), distance_(s.distance), dim_(s.dim) {
    if (sq_.dimension != s.dim)
      throw invalid_input_error("ivf_searcher: SQ quantizer of dimension " + std::to_string(sq_.dimension) +
                                " under centroids of dimension " + std::to_string(s.dim));
  }

  bool adaptive_probes() const noexcept { return false; }

  query prepare(const scan_query& q) const { return {std::make_shared<distance_estimator>(sq_, q.used.data(), distance_)}; }
  partition prepare_partition(std::uint32_t, const partition_contents&) const { return {}; }

  void distances(const scan_query&, const query& s, std::uint32_t, float, const partition_contents& pc,
                 const partition&, float* out) const {
    s.est->scan(pc.codes.data(), pc.size(), out);
  }

  template <class Bound, class Push>
  bool scan_filtered(const scan_query&, const query&, std::uint32_t, float, const partition_contents&,
                     const partition&, Bound&&, Push&&) const {
    return false;
  }

  template <class F>
  void with_row_distance(const scan_query&, const query& s, std::uint32_t, const partition_contents& pc,
                         const partition&, F&& f) const {
    const std::uint8_t* c = pc.codes.data();
    const auto* est = s.est.get();
    return f([c, est, dim = dim_](std::uint32_t i) { return est->distance(c + std::size_t(i) * dim); });
  }

 private:
  model sq_;
  distance_type distance_;
  std::size_t dim_;
};

}  // namespace lancet::index::sq
