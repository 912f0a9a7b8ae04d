// RaBitQ's partition scanner (quantizer/contract.hpp): the raw query's estimator
// over packed sign codes and per-row factors (with the u8-quantized filtered scan
// where the CPU has it), or the residual query's for older indexes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/pq/scan.hpp"
#include "lancet/index/quantizer/rabitq/params.hpp"
#include "lancet/index/quantizer/rabitq/rabitq.hpp"

namespace lancet::index::rabitq {

class scanner {
 public:
  static constexpr bool exact = false;
  static constexpr bool supports_graphs = false;
  struct query {
    std::shared_ptr<query_estimator> est;  // raw_query estimator
  };
  struct partition {
    std::vector<std::uint8_t> transposed;  // [code byte][row]
  };

  scanner(const rq_params& p, const scan_setup& s)
      : rq_(from_params(p)), distance_(s.distance), cents_(s.centroids), dim_(s.dim) {
    if (rq_.dimension != s.dim)
      throw invalid_input_error("ivf_searcher: RaBitQ quantizer of dimension " + std::to_string(rq_.dimension) +
                                " under centroids of dimension " + std::to_string(s.dim));
    rotated_.resize(s.num_partitions * dim_);
    for (std::size_t c = 0; c < s.num_partitions; ++c) rq_.rotate(cents_ + c * dim_, rotated_.data() + c * dim_);
  }

  bool adaptive_probes() const noexcept { return false; }

  query prepare(const scan_query& q) const {
    query s;
    if (rq_.estimator == estimator_type::raw_query) s.est = std::make_shared<query_estimator>(rq_, q.raw.data(), distance_);
    return s;
  }

  partition prepare_partition(std::uint32_t p, const partition_contents& pc) const {
    const std::size_t n = pc.size(), cb = rq_.code_bytes();
    if (pc.add_factors.size() != n || pc.scale_factors.size() != n)
      throw corrupt_error("partition " + std::to_string(p) + ": RaBitQ factors for " +
                          std::to_string(pc.add_factors.size()) + " of " + std::to_string(n) + " rows");
    partition out;
    out.transposed.resize(n * cb);
    transpose_codes(pc.codes.data(), n, cb, out.transposed.data());
    return out;
  }

  void distances(const scan_query& q, const query& s, std::uint32_t p, float dist_q_c, const partition_contents& pc,
                 const partition& part, float* out) const {
    if (s.est) {
      const float qf = s.est->query_factor(dist_q_c, rotated_.data() + std::size_t(p) * dim_);
      s.est->scan(part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf, out);
      return;
    }
    // residual_query (older indexes): the estimator of the residual query.
    std::vector<double> r(dim_);
    for (std::size_t i = 0; i < dim_; ++i) r[i] = q.used[i] - double(cents_[std::size_t(p) * dim_ + i]);
    const query_estimator est(rq_, r.data(), distance_ == distance_type::cosine ? distance_type::l2 : distance_);
    const float qf = distance_ == distance_type::l2 ? dist_q_c : dist_q_c - 1.0f;
    est.scan(part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf, out);
  }

  // The raw query's u8-quantized filter (query_estimator::scan_filtered): only rows
  // that may beat bound() get their distance, the one distances() computes.
  template <class Bound, class Push>
  bool scan_filtered(const scan_query&, const query& s, std::uint32_t p, float dist_q_c,
                     const partition_contents& pc, const partition& part, Bound&& bound, Push&& push) const {
    if constexpr (!pq::has_filtered_lut_scan) {
      return false;
    } else {
      if (!s.est) return false;
      thread_local std::vector<std::uint8_t> qs;
      if (qs.size() < rq_.code_bytes() * 256) qs.resize(rq_.code_bytes() * 256);
      const float qf = s.est->query_factor(dist_q_c, rotated_.data() + std::size_t(p) * dim_);
      s.est->scan_filtered(part.transposed.data(), pc.size(), pc.add_factors.data(), pc.scale_factors.data(), qf,
                           qs.data(), bound, push);
      return true;
    }
  }

  template <class F>
  [[noreturn]] void with_row_distance(const scan_query&, const query&, std::uint32_t, const partition_contents&,
                                      const partition&, F&&) const {
    throw unsupported_error("ivf_searcher: HNSW graphs over RaBitQ storage are not supported");
  }

 private:
  model rq_;
  distance_type distance_;
  const float* cents_;          // the engine's, num_partitions x dim
  std::vector<float> rotated_;  // the centroids rotated
  std::size_t dim_;
};

}  // namespace lancet::index::rabitq
