// The product quantizer's partition scanner (quantizer/contract.hpp): lookup tables
// of the query (dot: one for every partition; l2 / cosine: the residual table of each
// probed partition, from per-query and per-partition terms) over transposed codes,
// with the u8-quantized filtered scan where the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/index/quantizer/pq/params.hpp"
#include "lancet/index/quantizer/pq/scan.hpp"

namespace lancet::index::pq {

class scanner {
 public:
  static constexpr bool exact = false;
  static constexpr bool supports_graphs = true;
  struct query {
    std::shared_ptr<distance_table> table;  // dot: one table for all partitions
    std::vector<double> qterm;              // residual: |p|^2 - 2 q_s.p
  };
  struct partition {
    std::vector<std::uint8_t> transposed;  // [code byte][row]
    std::vector<double> term;              // residual: 2 c_s.p (partition_term)
  };

  scanner(const pq_params& p, const scan_setup& s)
      : pq_(from_params<float>(p, s.distance)), distance_(s.distance), cents_(s.centroids), dim_(s.dim) {
    if (pq_.dimension != s.dim)
      throw invalid_input_error("ivf_searcher: PQ quantizer of dimension " + std::to_string(pq_.dimension) +
                                " under centroids of dimension " + std::to_string(s.dim));
    plan_ = query_term_plan(pq_);
  }

  bool adaptive_probes() const noexcept { return false; }

  query prepare(const scan_query& q) const {
    query s;
    if (uses_residual(distance_)) {
      s.qterm.resize(pq_.num_sub_vectors * pq_.num_centroids());
      plan_.compute(q.used.data(), s.qterm.data());
    } else {
      s.table = std::make_shared<distance_table>(pq_, q.used.data());
    }
    return s;
  }

  partition prepare_partition(std::uint32_t p, const partition_contents& pc) const {
    partition out;
    const std::size_t n = pc.size(), cb = pq_.code_bytes();
    out.transposed.resize(n * cb);
    transpose_codes(pc.codes.data(), n, cb, out.transposed.data());
    if (uses_residual(distance_)) out.term = partition_term(pq_, cents_ + std::size_t(p) * dim_);
    return out;
  }

  void distances(const scan_query& q, const query& s, std::uint32_t p, float, const partition_contents& pc,
                 const partition& part, float* out) const {
    const std::size_t n = pc.size();
    if (s.table) {
      s.table->scan(part.transposed.data(), n, out);
      return;
    }
    // The residual query's table, in per-thread scratch (no offset: residual tables
    // hold the whole distance).
    thread_local std::vector<float> scratch;
    float offset = 0.0f;
    const float* lut = lookup_table(q, s, p, part, scratch, offset);
    lut_scan(lut, pq_.code_bytes(), part.transposed.data(), n, out);
  }

  // The u8-quantized filter (lut_scan_filtered): only rows that may beat bound() get
  // their exact f32 distance, the one distances() computes; the rows pushed and the
  // result are the same as a full scan's.
  template <class Bound, class Push>
  bool scan_filtered(const scan_query& q, const query& s, std::uint32_t p, float, const partition_contents& pc,
                     const partition& part, Bound&& bound, Push&& push) const {
    if constexpr (!has_filtered_lut_scan) {
      return false;
    } else {
      thread_local std::vector<float> rl;
      thread_local std::vector<std::uint8_t> qs;
      const std::size_t nb = pq_.code_bytes();
      float offset = 0.0f;
      const float* lut = lookup_table(q, s, p, part, rl, offset);
      if (qs.size() < nb * 256) qs.resize(nb * 256);
      constexpr float inf = std::numeric_limits<float>::infinity();
      lut_scan_filtered(
          lut, nb, part.transposed.data(), pc.size(), qs.data(),
          [&] {
            const float b = bound();
            return b < inf ? b - offset : inf;
          },
          [&](std::size_t r, float d) { push(r, offset != 0.0f ? d + offset : d); });
      return true;
    }
  }

  // One table lookup per code byte.
  template <class F>
  void with_row_distance(const scan_query& q, const query& s, std::uint32_t p, const partition_contents& pc,
                         const partition& part, F&& f) const {
    const std::size_t nb = pq_.code_bytes();
    std::vector<float> own;
    float offset = 0.0f;
    const float* lut = lookup_table(q, s, p, part, own, offset);
    const std::uint8_t* c = pc.codes.data();
    return f([c, lut, offset, nb](std::uint32_t i) {
      const std::uint8_t* row = c + std::size_t(i) * nb;
      float d = 0.0f;
      for (std::size_t b = 0; b < nb; ++b) d += lut[b * 256 + row[b]];
      return d + offset;
    });
  }

 private:
  // The lookup table for partition p: the query's one table (dot), else its
  // residual table, built in `scratch` (grown to fit); `offset` is the table's.
  const float* lookup_table(const scan_query& q, const query& s, std::uint32_t p, const partition& part,
                            std::vector<float>& scratch, float& offset) const {
    if (s.table) {
      offset = s.table->offset();
      return s.table->lut().data();
    }
    const std::size_t nb = pq_.code_bytes();
    if (scratch.size() < nb * 256) scratch.resize(nb * 256);
    residual_lut(pq_, s.qterm.data(), part.term.data(), q.used.data(), cents_ + std::size_t(p) * dim_,
                 scratch.data());
    return scratch.data();
  }

  model<float> pq_;
  query_term_plan plan_;
  distance_type distance_;
  const float* cents_;  // the engine's, num_partitions x dim
  std::size_t dim_;
};

}  // namespace lancet::index::pq
