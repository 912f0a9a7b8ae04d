// The product quantizer's codec (quantizer/contract.hpp): what a build asks of PQ
// (build_choice, training_rows), the codebook trained on the IVF residuals as Lance
// trains it (train_for_ivf), and rows encoded under their partition's centroid.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/pq/encode.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/index/quantizer/pq/params.hpp"
#include "lancet/index/quantizer/pq/train.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index::pq {

// The sub-vectors and bits a build asks for (Lance's defaults: dim / 16, else dim / 8,
// else 1 sub-vectors; 8 bits), checked against the column's dimension.
struct choice {
  std::size_t num_sub_vectors = 0;
  std::uint32_t num_bits = 8;
};
inline choice build_choice(const build_options& o, std::size_t dim) {
  choice c;
  c.num_sub_vectors = o.num_sub_vectors.value_or(dim % 16 == 0 ? dim / 16 : dim % 8 == 0 ? dim / 8 : 1);
  c.num_bits = o.num_bits.value_or(8);
  if (c.num_sub_vectors == 0 || dim % c.num_sub_vectors != 0)
    throw invalid_input_error("IVF_PQ: num_sub_vectors " + std::to_string(c.num_sub_vectors) +
                              " does not divide dimension " + std::to_string(dim) + " of column '" + o.column + "'");
  if (c.num_bits != 8 && c.num_bits != 4)
    throw invalid_input_error("IVF_PQ: num_bits " + std::to_string(c.num_bits) + " is not supported (4 or 8)");
  if (c.num_bits == 4 && c.num_sub_vectors % 2)
    throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " +
                              std::to_string(c.num_sub_vectors));
  return c;
}

// The rows PQ trains on: Lance's sample (sample_rate x 2^bits) when the memory
// budget holds its training, else as many as it holds, at least the 2^bits a codebook
// needs (a lancet deviation, warned about by codec::train). A training row holds its
// decoded vector and row id (the builder's sample), its index in the PQ sample, and,
// in each sub-vector k-means running at once (one per core, at most num_sub_vectors),
// its sub-vector in working precision plus an assignment and a distance.
inline std::size_t training_rows(const build_options& o, std::size_t dim, std::size_t element_bytes) {
  const auto c = build_choice(o, dim);
  const std::size_t lance = o.sample_rate << c.num_bits;
  const std::uint64_t work = element_bytes == 8 ? 8 : 4;  // double, else float
  const std::uint64_t trainers =
      o.pool ? std::clamp<std::uint64_t>(std::thread::hardware_concurrency(), 1, c.num_sub_vectors) : 1;
  const std::uint64_t sub = dim / c.num_sub_vectors;
  const std::uint64_t per_row = dim * element_bytes + 8 + 8 + trainers * (sub * work + 4 + work);
  return std::size_t(std::clamp<std::uint64_t>(o.memory_budget_bytes / per_row, std::uint64_t(1) << c.num_bits, lance));
}

template <class T>
class codec {
  static constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  using value_type = std::conditional_t<is_u8, float, T>;
  using model_type = model<value_type>;

 public:
  static codec of(const pq_params& p, std::size_t dim, simd::distance_type metric, std::string_view column) {
    if (is_u8) throw invalid_input_error("IVF_PQ does not support hamming distance");
    if (p.dimension != dim)
      throw invalid_input_error("the PQ codebook has dimension " + std::to_string(p.dimension) + ", column '" +
                                std::string(column) + "' has " + std::to_string(dim));
    return codec(from_params<value_type>(p, metric), p, metric);
  }

  // Trained on n rows under the IVF centroids; writable rows are left as residuals.
  template <class R, class C>
  static codec train(const build_options& o, std::size_t dim, R* rows, std::size_t n, const C* cents, std::size_t k) {
    if constexpr (is_u8) {
      throw invalid_input_error("IVF_PQ does not support hamming distance");
    } else {
      const auto c = build_choice(o, dim);
      pq::params pp;
      pp.num_sub_vectors = c.num_sub_vectors;
      pp.num_bits = c.num_bits;
      pp.max_iters = o.max_iters;
      pp.choose_iterate = o.pq_choose_iterate;
      pp.sample_rate = o.sample_rate;
      pp.seed = o.seed;
      pp.sample_seed = quantizer::mix_seed(o.seed, 0x9c5d3e7a1b2f4068ull);  // not the IVF sample's draw
      pp.max_sample_rows = training_rows(o, dim, sizeof(T));
      if (pp.max_sample_rows < (o.sample_rate << c.num_bits) && n >= pp.max_sample_rows)
        warn("PQ codebook of the index on column '" + o.column + "': PQ trained on " +
             std::to_string(pp.max_sample_rows) + " rows, not Lance's " + std::to_string(o.sample_rate << c.num_bits) +
             ": memory_budget_bytes (" + std::to_string(o.memory_budget_bytes >> 20) +
             " MiB) holds no more (raise it for Lance's sample)");
      auto m = [&] {
        if constexpr (std::is_const_v<R>) return train_for_ivf(rows, n, dim, cents, k, o.metric, pp, o.pool);
        else return train_for_ivf_in_place(rows, n, dim, cents, k, o.metric, pp, o.pool);
      }();
      auto stored = to_params(m);
      return codec(std::move(m), std::move(stored), o.metric);
    }
  }

  const pq_params& params() const noexcept { return p_; }
  const model_type& pq_model() const noexcept { return m_; }

  template <class C>
  void encode(const T* rows, const double*, std::size_t n, const C* cents, std::size_t k, const std::uint32_t* parts,
              std::uint8_t* codes, row_factors, boost::asio::thread_pool* pool) const {
    if constexpr (!is_u8) encode_for_ivf(m_, rows, n, metric_, cents, k, parts, codes, pool);
  }

 private:
  codec(model_type m, pq_params p, simd::distance_type metric) : m_(std::move(m)), p_(std::move(p)), metric_(metric) {}
  model_type m_;
  pq_params p_;
  simd::distance_type metric_;
};

}  // namespace lancet::index::pq
