// Encoding rows to product-quantization codes (quantizer/pq/pq.hpp says how it follows
// Lance): each sub-vector's nearest code word under l2, rows as given or prepared as
// an IVF index's (residuals, normalised).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/tiled.hpp"

namespace lancet::index::detail {

// The nearest of k centroids (k x d, row-major) for short vectors stored column-major
// (value t of row r at cols[t * stride + r]); the lowest index wins a tie and a row
// without a finite distance gets 0 (Lance's compute_partition). Ranks by
// |c|^2 - 2 x.c, 2 x SIMD-width rows at a time held in registers, every centroid
// streamed past them; sub-vectors longer than 16 use the tiled kernel instead.
template <class W>
class subvector_nearest_centroid {
 public:
  subvector_nearest_centroid(const W* cents, std::size_t k, std::size_t d) : k_(k), d_(d), m2c_(k * d), csq_(k) {
    for (std::size_t j = 0; j < k; ++j) {
      W s = W(0);
      for (std::size_t t = 0; t < d; ++t) {
        m2c_[j * d + t] = W(-2) * cents[j * d + t];
        s += cents[j * d + t] * cents[j * d + t];
      }
      csq_[j] = s;
    }
    if (reads_rows(d)) tiled_ = std::make_shared<const simd::packed_centroids<W>>(simd::distance_type::l2, cents, k, d);
  }

  // Whether sub-vectors of d values go through the tiled kernel, which reads rows.
  static constexpr bool reads_rows(std::size_t d) noexcept { return d > 16; }

  // True when the sub-vectors are better given row-major (assign_rows): long ones go
  // through the tiled kernel, which reads rows; short ones are scanned column-major.
  bool prefers_rows() const noexcept { return reads_rows(d_); }

  // assign for n sub-vectors stored row-major (d values each, contiguous): the same
  // results, without a column-major copy where the tiled kernel reads rows anyway.
  void assign_rows(const W* rows, std::size_t n, std::uint32_t* member) const {
    if (!tiled_) {
      std::vector<W> cols(n * d_);
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t t = 0; t < d_; ++t) cols[t * n + r] = rows[r * d_ + t];
      assign(cols.data(), n, n, member);
      return;
    }
    simd::assign_nearest(*tiled_, rows, n, member, static_cast<W*>(nullptr), nullptr);
    for (std::size_t i = 0; i < n; ++i)
      if (member[i] == simd::no_index) member[i] = 0;
  }

  void assign(const W* cols, std::size_t stride, std::size_t n, std::uint32_t* member) const {
    std::size_t r = 0;
    if (tiled_) {
      // Row-major a block at a time (not a second copy of the sub-vector): each row's
      // nearest centroid depends on that row only.
      constexpr std::size_t block = 4096;
      std::vector<W> rows(std::min(n, block) * d_);
      for (std::size_t r0 = 0; r0 < n; r0 += block) {
        const std::size_t cnt = std::min(block, n - r0);
        for (std::size_t i = 0; i < cnt; ++i)
          for (std::size_t t = 0; t < d_; ++t) rows[i * d_ + t] = cols[t * stride + r0 + i];
        assign_rows(rows.data(), cnt, member + r0);
      }
      return;
    }
    switch (d_) {
      case 4: r = blocks<4>(cols, stride, n, member); break;
      case 8: r = blocks<8>(cols, stride, n, member); break;
      case 16: r = blocks<16>(cols, stride, n, member); break;
      default: r = blocks<0>(cols, stride, n, member);
    }
    for (; r < n; ++r) {  // the tail, scalar, same expansion
      W best = std::numeric_limits<W>::infinity();
      std::uint32_t bi = 0;
      for (std::size_t j = 0; j < k_; ++j) {
        W a = csq_[j];
        for (std::size_t t = 0; t < d_; ++t) a += cols[t * stride + r] * m2c_[j * d_ + t];
        if (a < best) {
          best = a;
          bi = static_cast<std::uint32_t>(j);
        }
      }
      member[r] = bi;
    }
  }

 private:
  // D > 0: the sub-vector length known at compile time; 0: d_ (at most 16).
  template <std::size_t D>
  std::size_t blocks(const W* cols, std::size_t stride, std::size_t n, std::uint32_t* member) const {
    using V = simd::vec<W>;
    constexpr std::size_t L = V::size;
    const std::size_t d = D ? D : d_;
    std::size_t r = 0;
    for (; r + 2 * L <= n; r += 2 * L) {
      V x0[16], x1[16];
      for (std::size_t t = 0; t < d; ++t) {
        x0[t] = simd::vload(cols + t * stride + r);
        x1[t] = simd::vload(cols + t * stride + r + L);
      }
      V b0(std::numeric_limits<W>::infinity()), b1(std::numeric_limits<W>::infinity());
      V i0(W(0)), i1(W(0));
      for (std::size_t j = 0; j < k_; ++j) {
        const W* c = m2c_.data() + j * d;
        V a0(csq_[j]), a1(csq_[j]);
#pragma GCC unroll 16
        for (std::size_t t = 0; t < (D ? D : d); ++t) {
          const V ct(c[t]);
          a0 = simd::vfma<W>(x0[t], ct, a0);
          a1 = simd::vfma<W>(x1[t], ct, a1);
        }
        const V jv(static_cast<W>(j));
        const auto m0 = a0 < b0;
        const auto m1 = a1 < b1;
        b0 = simd::vselect<W>(m0, a0, b0);
        i0 = simd::vselect<W>(m0, jv, i0);
        b1 = simd::vselect<W>(m1, a1, b1);
        i1 = simd::vselect<W>(m1, jv, i1);
      }
      alignas(64) W idx[2 * L];
      simd::vstore(idx, i0);
      simd::vstore(idx + L, i1);
      for (std::size_t l = 0; l < 2 * L; ++l) member[r + l] = static_cast<std::uint32_t>(idx[l]);
    }
    return r;
  }

  std::size_t k_, d_;
  std::vector<W> m2c_, csq_;
  std::shared_ptr<const simd::packed_centroids<W>> tiled_;
};

// Encodes rows [r0, r0 + cnt) given a function that writes row r's quantizer input
// (working precision) into a buffer. The rows stay row-major; each sub-vector is
// copied out in the layout its subvector_nearest_centroid reads (rows for long sub-vectors,
// columns for short ones), so no copy strides across the whole block.
template <class W, class C, class Fill>
inline void pq_encode_block(const pq::model<C>& pq, const std::vector<subvector_nearest_centroid<W>>& near,
                            std::size_t r0, std::size_t cnt, std::uint8_t* codes, Fill&& fill) {
  const std::size_t d = pq.dimension, m = pq.num_sub_vectors, sd = pq.sub_dimension(), cb = pq.code_bytes();
  std::vector<W> rows(cnt * d);
  for (std::size_t r = 0; r < cnt; ++r) fill(r0 + r, rows.data() + r * d);
  std::vector<W> sub(cnt * sd);
  std::vector<std::uint32_t> idx(cnt);
  for (std::size_t s = 0; s < m; ++s) {
    const W* first = rows.data() + s * sd;  // sub-vector s of row r at first[r * d]
    if (near[s].prefers_rows()) {
      for (std::size_t r = 0; r < cnt; ++r) std::copy_n(first + r * d, sd, sub.data() + r * sd);
      near[s].assign_rows(sub.data(), cnt, idx.data());
    } else {
      for (std::size_t r = 0; r < cnt; ++r)
        for (std::size_t t = 0; t < sd; ++t) sub[t * cnt + r] = first[r * d + t];
      near[s].assign(sub.data(), cnt, cnt, idx.data());
    }
    for (std::size_t r = 0; r < cnt; ++r) {
      // Lance: a sub-vector with no finite distance (NaN, +-inf) gets code 0.
      const W* v = first + r * d;
      bool finite = true;
      for (std::size_t t = 0; t < sd; ++t) finite &= std::isfinite(v[t]);
      const auto c = finite ? static_cast<std::uint8_t>(idx[r]) : std::uint8_t(0);
      std::uint8_t* code = codes + (r0 + r) * cb;
      if (pq.num_bits == 8) code[s] = c;
      else if (s % 2 == 0) code[s / 2] = c;
      else code[s / 2] = static_cast<std::uint8_t>(code[s / 2] | (c << 4));
    }
  }
}

template <class W, class C, class Fill>
inline void pq_encode_rows(const pq::model<C>& pq, std::size_t n, std::uint8_t* codes,
                           boost::asio::thread_pool* pool, Fill&& fill) {
  pq.validate();
  if (n > 0 && codes == nullptr) throw invalid_input_error("PQ encode: output codes are null");
  std::vector<subvector_nearest_centroid<W>> near;
  near.reserve(pq.num_sub_vectors);
  std::vector<W> cw(pq.num_centroids() * pq.sub_dimension());
  for (std::size_t s = 0; s < pq.num_sub_vectors; ++s) {
    const C* c = pq.centroids(s);
    for (std::size_t i = 0; i < cw.size(); ++i) cw[i] = quantizer::to_work<W>(c[i]);
    near.emplace_back(cw.data(), pq.num_centroids(), pq.sub_dimension());
  }
  const std::size_t block = 1024;
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    const std::size_t r0 = b * block;
    pq_encode_block<W>(pq, near, r0, std::min(block, n - r0), codes, fill);
  });
}

}  // namespace lancet::index::detail

namespace lancet::index::pq {

// Codes of n rows as given (n x dimension), row-major: n x code_bytes() bytes.
template <class T, class C>
inline void encode(const model<C>& pq, const T* rows, std::size_t n, std::uint8_t* codes,
                   boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "PQ encodes float, double or f16 vectors");
  using W = simd::work_t<T, C>;
  quantizer::check_shape("PQ encode", rows, n, pq.dimension);
  const std::size_t d = pq.dimension;
  detail::pq_encode_rows<W>(pq, n, codes, pool, [&](std::size_t r, W* out) {
    for (std::size_t i = 0; i < d; ++i) out[i] = quantizer::to_work<W>(rows[r * d + i]);
  });
}

// Codes of n rows of an IVF index, as Lance's shuffle computes them: normalised under
// cosine, minus the centroid of the row's partition for l2 / cosine (`partitions[r]`
// indexes the num_partitions x dimension `centroids`), raw for dot. Rows that cannot
// be prepared (zero under cosine, partition out of range) get code 0 everywhere, as
// Lance codes a row without finite distances; Lance's builder drops such rows first.
template <class T, class C, class CC>
inline void encode_for_ivf(const model<C>& pq, const T* rows, std::size_t n, distance_type distance,
                           const CC* centroids, std::size_t num_partitions, const std::uint32_t* partitions,
                           std::uint8_t* codes, boost::asio::thread_pool* pool = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "PQ encodes float, double or f16 vectors");
  using W = std::conditional_t<std::is_same_v<simd::work_t<T, C>, double> || std::is_same_v<CC, double>, double, float>;
  quantizer::check_shape("PQ encode", rows, n, pq.dimension);
  quantizer::ivf_input<CC> in{distance, centroids, num_partitions, partitions, uses_residual(distance)};
  if (in.residual && (centroids == nullptr || partitions == nullptr) && n > 0)
    throw invalid_input_error("PQ encode: residuals need the IVF centroids and each row's partition");
  const std::size_t d = pq.dimension;
  detail::pq_encode_rows<W>(pq, n, codes, pool,
                            [&](std::size_t r, W* out) { quantizer::ivf_input_row(in, rows, r, d, out); });
}

}  // namespace lancet::index::pq
