// Many-to-many distances and nearest-centroid assignment, tiled like a GEMM.
//
// Distances come from norms and dot products: |x - c|^2 = |x|^2 - 2 x.c + |c|^2, and
// the dot products from a register-tiled microkernel: MR rows times NRV registers of
// centroids, centroids packed panel by panel so that each step of the inner loop is
// NRV aligned loads, MR broadcasts and MR*NRV FMAs. The assignment fuses the arg-min
// into the tile epilogue (no n*k matrix is materialised) and then recomputes the
// chosen distance exactly, so reported distances are as accurate as simd::l2().
//
//   simd::packed_centroids<float> pc(distance_type::l2, centroids, k, dim);
//   simd::assign_nearest(pc, rows, n, index_out, dist_out, &pool);
//
// Each row's result depends only on that row, never on how rows are split across
// threads, so results are identical for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/simd/batch.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/topk.hpp"

namespace lancet::simd {

// Working precision when rows of type T meet centroids of type C: double if either is
// double, float otherwise (f16 and uint8 are widened to float).
template <class T, class C>
using work_t = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<C, double>, double, float>;

namespace detail {

// Vector registers available to a microkernel: 32 with AVX-512 (and on AArch64),
// 16 on SSE/AVX2.
inline constexpr std::size_t vector_registers =
#if defined(__AVX512F__) || defined(__aarch64__)
    32;
#else
    16;
#endif

}  // namespace detail

// A 64-byte aligned array of trivially copyable values.
template <class W>
class aligned_array {
 public:
  aligned_array() = default;
  explicit aligned_array(std::size_t n) { resize(n); }
  void resize(std::size_t n) {
    buf_.resize(n * sizeof(W));
    n_ = n;
  }
  W* data() noexcept { return reinterpret_cast<W*>(buf_.data()); }
  const W* data() const noexcept { return reinterpret_cast<const W*>(buf_.data()); }
  std::size_t size() const noexcept { return n_; }
  W& operator[](std::size_t i) noexcept { return data()[i]; }
  const W& operator[](std::size_t i) const noexcept { return data()[i]; }

 private:
  aligned_buffer buf_;
  std::size_t n_ = 0;
};

// Converts the d values at src to W into dst (f16 to float with f16_to_f32).
template <class T, class W>
inline void convert_row(const T* src, W* dst, std::size_t d) {
  if constexpr (std::is_same_v<T, f16> && std::is_same_v<W, float>) f16_to_f32(src, dst, d);
  else if constexpr (std::is_same_v<T, f16>)
    for (std::size_t i = 0; i < d; ++i) dst[i] = static_cast<W>(src[i].to_float());
  else
    for (std::size_t i = 0; i < d; ++i) dst[i] = static_cast<W>(src[i]);
}

// Tile shapes (rows MR x centroid registers NRV) for a centroid count: wide panels
// when there are many centroids, narrow ones when k is small so padding stays cheap.
template <class W>
struct tile_plan {
  static constexpr std::size_t NW = vec<W>::size;
  static constexpr bool big = detail::vector_registers >= 32;
  static constexpr std::size_t max_nrv = big ? 4 : 2;
  static std::size_t nrv_for(std::size_t k) {
    if (k <= NW) return 1;
    if (k <= 2 * NW || max_nrv == 2) return 2;
    return 4;
  }
  static constexpr std::size_t mr_for(std::size_t nrv) {
    if (big) return nrv == 1 ? 12 : nrv == 2 ? 10 : 6;
    return nrv == 1 ? 8 : 6;
  }
};

// The microkernel: acc[i][v] = sum_t x[i][t] * panel[t][v] for MR rows of x (stride
// ldx) and the NRV registers of one packed panel (packed_centroids::panel).
template <class W, std::size_t MR, std::size_t NRV>
inline void dot_tile(const W* x, std::size_t ldx, const W* panel, std::size_t d, vec<W> (&acc)[MR][NRV]) {
  constexpr std::size_t NW = vec<W>::size;
  constexpr std::size_t NR = NRV * NW;
#pragma GCC unroll 16
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NRV; ++v) acc[i][v] = vec<W>(W(0));
  for (std::size_t t = 0; t < d; ++t) {
    vec<W> b[NRV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NRV; ++v) b[v] = vload(panel + t * NR + v * NW);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < MR; ++i) {
      const vec<W> a(x[i * ldx + t]);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NRV; ++v) acc[i][v] = vfma<W>(a, b[v], acc[i][v]);
    }
  }
}

// Centroids re-laid out for the microkernel, plus what the epilogue needs. Build once
// and reuse for every batch of rows assigned against the same centroids.
template <class W>
class packed_centroids {
 public:
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, double>);
  using plan = tile_plan<W>;

  packed_centroids() = default;

  // centroids: k * d values, row-major. bias (optional, k values) is added to each
  // centroid's distance when choosing the nearest one (Lance's balance term); it does
  // not change reported distances.
  template <class C>
  packed_centroids(distance_type t, const C* centroids, std::size_t k, std::size_t d,
                   const W* bias = nullptr)
      : type_(t), k_(k), d_(d) {
    if (t == distance_type::hamming)
      throw invalid_input_error("packed_centroids: hamming distance has no tiled float kernel");
    if (k == 0 || d == 0) throw invalid_input_error("packed_centroids: need k > 0 and dimension > 0");
    if (k >= (std::size_t(1) << (std::numeric_limits<W>::digits - 1)))
      throw invalid_input_error("packed_centroids: too many centroids (" + std::to_string(k) + ")");
    nrv_ = plan::nrv_for(k);
    nr_ = nrv_ * plan::NW;
    panels_ = (k + nr_ - 1) / nr_;
    rows_.resize(k * d);
    for (std::size_t j = 0; j < k; ++j) convert_row(centroids + j * d, rows_.data() + j * d, d);
    packed_.resize(panels_ * d * nr_);
    cterm_.resize(panels_ * nr_);
    bias_.resize(k);
    for (std::size_t j = 0; j < k; ++j) bias_[j] = bias ? bias[j] : W(0);
    std::vector<W> scale(k, W(1));
    for (std::size_t j = 0; j < panels_ * nr_; ++j) {
      if (j >= k) {
        cterm_[j] = std::numeric_limits<W>::infinity();  // padding never wins
        continue;
      }
      const W nsq = norm_sq(rows_.data() + j * d, d);
      W ct = W(0);
      if (t == distance_type::l2) ct = nsq;
      if (t == distance_type::cosine) {
        const W nrm = std::sqrt(nsq);
        if (nrm > W(0) && std::isfinite(nrm)) scale[j] = W(1) / nrm;
        else ct = std::numeric_limits<W>::quiet_NaN();  // cos undefined: never nearest
      }
      if (bias) ct += bias[j];
      cterm_[j] = ct;
    }
    for (std::size_t p = 0; p < panels_; ++p)
      for (std::size_t t2 = 0; t2 < d; ++t2)
        for (std::size_t jj = 0; jj < nr_; ++jj) {
          const std::size_t j = p * nr_ + jj;
          packed_[(p * d + t2) * nr_ + jj] = j < k ? rows_[j * d + t2] * scale[j] : W(0);
        }
  }

  distance_type type() const noexcept { return type_; }
  std::size_t k() const noexcept { return k_; }
  std::size_t dimension() const noexcept { return d_; }
  std::size_t nrv() const noexcept { return nrv_; }
  std::size_t panel_width() const noexcept { return nr_; }
  std::size_t panels() const noexcept { return panels_; }
  const W* panel(std::size_t p) const noexcept { return packed_.data() + p * d_ * nr_; }
  const W* cterm() const noexcept { return cterm_.data(); }
  // Centroid j in working precision, as given (not normalised).
  const W* centroid(std::size_t j) const noexcept { return rows_.data() + j * d_; }
  // The per-centroid bias given at construction (zeros when none was given).
  const W* bias() const noexcept { return bias_.data(); }

 private:
  distance_type type_ = distance_type::l2;
  std::size_t k_ = 0, d_ = 0, nrv_ = 1, nr_ = 0, panels_ = 0;
  aligned_array<W> rows_, packed_, cterm_, bias_;
};

namespace detail {

// Exact distance between a row and a centroid, both in working precision.
template <class W>
inline W exact_distance(distance_type t, const W* x, const W* c, std::size_t d) {
  switch (t) {
    case distance_type::l2: return l2(x, c, d);
    case distance_type::dot: return W(1) - dot(x, c, d);
    case distance_type::cosine: return cosine(x, c, d);
    case distance_type::hamming: break;
  }
  return std::numeric_limits<W>::quiet_NaN();
}

}  // namespace detail

// Rows per task of the tiled kernel (mr rows per tile): the block of converted rows
// stays in L2 while every panel passes.
template <class W>
inline std::size_t tile_rows_per_block(std::size_t d, std::size_t mr) {
  std::size_t rb = (std::size_t(192) << 10) / (std::max<std::size_t>(d, 1) * sizeof(W));
  rb = std::clamp<std::size_t>(rb, mr, 768);
  return std::max(mr, rb / mr * mr);
}

// The per-row scale of the dot product in the epilogue: -2 (l2), -1 (dot),
// -1/|x| (cosine). A row that is not finite (or, for cosine, has zero norm) gets NaN:
// the tiles skip it and the caller handles it with exact distances.
template <class W>
inline W tile_row_scale(distance_type t, const W* x, std::size_t d) {
  const W nsq = norm_sq(x, d);
  if (!std::isfinite(nsq)) return std::numeric_limits<W>::quiet_NaN();
  if (t == distance_type::l2) return W(-2);
  if (t == distance_type::dot) return W(-1);
  const W n = std::sqrt(nsq);
  if (!(n > W(0))) return std::numeric_limits<W>::quiet_NaN();
  return W(-1) / n;
}

// What a tile's epilogue does with its distances: keep each lane's least one and its
// centroid (argmin), or store them all (store).
enum class tile_epilogue { argmin, store };

namespace detail {

// One block of rows (already in working precision, stride d) against every panel.
// argmin: best_v/best_i hold NW lanes per row. store: out is rows x k, row stride k.
template <class W, std::size_t MR, std::size_t NRV, tile_epilogue E>
inline void run_panels(const packed_centroids<W>& pc, const W* xw, std::size_t rows, const W* alpha,
                       const W* add, W* best_v, W* best_i, W* out) {
  constexpr std::size_t NW = vec<W>::size;
  constexpr std::size_t NR = NRV * NW;
  const std::size_t d = pc.dimension(), k = pc.k();
  alignas(64) W iota[NW];
  for (std::size_t l = 0; l < NW; ++l) iota[l] = static_cast<W>(l);
  const vec<W> lane = vload(iota);

  auto finish = [&]<std::size_t R>(const vec<W>(&acc)[R][NRV], std::size_t r0, std::size_t p) {
    const W* ct = pc.cterm() + p * NR;
    for (std::size_t i = 0; i < R; ++i) {
      const vec<W> a(alpha[r0 + i]);
      if constexpr (E == tile_epilogue::argmin) {
        vec<W> bv = vload(best_v + (r0 + i) * NW);
        vec<W> bi = vload(best_i + (r0 + i) * NW);
        for (std::size_t v = 0; v < NRV; ++v) {
          const vec<W> val = vfma<W>(a, acc[i][v], vload(ct + v * NW));
          const auto m = val < bv;
          bv = vselect<W>(m, val, bv);
          bi = vselect<W>(m, lane + vec<W>(static_cast<W>(p * NR + v * NW)), bi);
        }
        vstore(best_v + (r0 + i) * NW, bv);
        vstore(best_i + (r0 + i) * NW, bi);
      } else {
        alignas(64) W tmp[NR];
        const vec<W> ad(add[r0 + i]);
        for (std::size_t v = 0; v < NRV; ++v) {
          vec<W> val = vfma<W>(a, acc[i][v], vload(ct + v * NW)) + ad;
          vstore(tmp + v * NW, val);
        }
        const std::size_t j0 = p * NR;
        const std::size_t cnt = std::min(NR, k - j0);
        W* o = out + (r0 + i) * k + j0;
        if (pc.type() == distance_type::l2)
          for (std::size_t j = 0; j < cnt; ++j) o[j] = tmp[j] < W(0) ? W(0) : tmp[j];
        else
          for (std::size_t j = 0; j < cnt; ++j) o[j] = tmp[j];
      }
    }
  };

  for (std::size_t p = 0; p < pc.panels(); ++p) {
    const W* panel = pc.panel(p);
    std::size_t r = 0;
    for (; r + MR <= rows; r += MR) {
      vec<W> acc[MR][NRV];
      dot_tile<W, MR, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
    for (; r < rows; ++r) {
      vec<W> acc[1][NRV];
      dot_tile<W, 1, NRV>(xw + r * d, d, panel, d, acc);
      finish(acc, r, p);
    }
  }
}

// Each row's nearest centroid from its NW argmin lanes: the lanes' least value, the
// lowest index on a tie; +inf when every lane is (lanes that matched nothing stay at
// +inf, and a value enters a lane only below it). NW rows at a time, lane l of each
// row in one register, so the comparisons run across rows, not along one row's lanes
// (a chain of data-dependent branches).
template <class W, std::size_t NW>
inline void reduce_lanes(const W* best_v, const W* best_i, std::size_t rows, W* out_v, W* out_i) {
  std::size_t r = 0;
  if constexpr (NW > 1) {
    alignas(64) W tv[NW * NW], ti[NW * NW];
    for (; r + NW <= rows; r += NW) {
      for (std::size_t i = 0; i < NW; ++i)
        for (std::size_t l = 0; l < NW; ++l) {
          tv[l * NW + i] = best_v[(r + i) * NW + l];
          ti[l * NW + i] = best_i[(r + i) * NW + l];
        }
      vec<W> bv = vload(tv), bi = vload(ti);
      for (std::size_t l = 1; l < NW; ++l) {
        const vec<W> v = vload(tv + l * NW), j = vload(ti + l * NW);
        const auto take = (v < bv) | ((v == bv) & (j < bi));
        bv = vselect<W>(take, v, bv);
        bi = vselect<W>(take, j, bi);
      }
      vstore(out_v + r, bv);
      vstore(out_i + r, bi);
    }
  }
  for (; r < rows; ++r) {
    W bv = best_v[r * NW], bi = best_i[r * NW];
    for (std::size_t l = 1; l < NW; ++l) {
      const W v = best_v[r * NW + l], j = best_i[r * NW + l];
      if (v < bv || (v == bv && j < bi)) {
        bv = v;
        bi = j;
      }
    }
    out_v[r] = bv;
    out_i[r] = bi;
  }
}

}  // namespace detail

// Calls f.template operator()<MR, NRV>() with the tile shape tile_plan<W> gives for
// nrv centroid registers (1, 2, or 4 where the target has the registers).
template <class W, tile_epilogue E, class F>
inline void dispatch_tile_shape(std::size_t nrv, F&& f) {
  using plan = tile_plan<W>;
  if (nrv == 1) f.template operator()<plan::mr_for(1), 1>();
  else if (nrv == 2) f.template operator()<plan::mr_for(2), 2>();
  else if constexpr (plan::max_nrv >= 4) f.template operator()<plan::mr_for(4), 4>();
}

namespace detail {

// Runs fn(block_index, first_row, row_count, converted_rows) over row blocks.
template <class W, class T, class F>
inline void for_row_blocks(const T* x, std::size_t n, std::size_t d, std::size_t mr,
                           boost::asio::thread_pool* pool, F&& fn) {
  const std::size_t rb = tile_rows_per_block<W>(d, mr);
  const std::size_t blocks = (n + rb - 1) / rb;
  parallel_for(pool, blocks, [&](std::size_t b) {
    const std::size_t r0 = b * rb;
    const std::size_t rows = std::min(rb, n - r0);
    if constexpr (std::is_same_v<T, W>) {
      fn(r0, rows, x + r0 * d);
    } else {
      aligned_array<W> conv(rows * d);
      for (std::size_t r = 0; r < rows; ++r) convert_row(x + (r0 + r) * d, conv.data() + r * d, d);
      fn(r0, rows, static_cast<const W*>(conv.data()));
    }
  });
}

}  // namespace detail

// For each of the n rows of x (row-major, pc.dimension() wide), the index of the
// nearest centroid (lowest index on a tie; simd::no_index when every distance is NaN
// or +inf, e.g. for a row containing NaN) and, if dist is not null, its exact
// distance (NaN for unmatched rows).
template <class T, class W>
inline void assign_nearest(const packed_centroids<W>& pc, const T* x, std::size_t n, std::uint32_t* index,
                           W* dist = nullptr, boost::asio::thread_pool* pool = nullptr) {
  static_assert(is_element_v<T>, "lancet::simd: element type must be float, double, f16 or uint8_t");
  static_assert(std::is_same_v<work_t<T, W>, W>, "double rows need double centroids");
  using plan = tile_plan<W>;
  constexpr std::size_t NW = plan::NW;
  const std::size_t d = pc.dimension();
  const std::size_t mr = plan::mr_for(pc.nrv());
  detail::for_row_blocks<W>(x, n, d, mr, pool, [&](std::size_t r0, std::size_t rows, const W* xw) {
    aligned_array<W> alpha(rows), best_v(rows * NW), best_i(rows * NW);
    for (std::size_t r = 0; r < rows; ++r) alpha[r] = tile_row_scale(pc.type(), xw + r * d, d);
    std::fill(best_v.data(), best_v.data() + rows * NW, std::numeric_limits<W>::infinity());
    std::fill(best_i.data(), best_i.data() + rows * NW, W(0));
    dispatch_tile_shape<W, tile_epilogue::argmin>(pc.nrv(), [&]<std::size_t MR, std::size_t NRV>() {
      detail::run_panels<W, MR, NRV, tile_epilogue::argmin>(pc, xw, rows, alpha.data(), nullptr,
                                                            best_v.data(), best_i.data(), nullptr);
    });
    aligned_array<W> least_v(rows), least_i(rows);
    detail::reduce_lanes<W, NW>(best_v.data(), best_i.data(), rows, least_v.data(), least_i.data());
    for (std::size_t r = 0; r < rows; ++r) {
      std::uint32_t bi = no_index;
      W bv = std::numeric_limits<W>::infinity();
      if (std::isnan(alpha[r])) {
        // Not finite (or a zero row under cosine): Lance's exact rule, distance by
        // distance, so e.g. an l2 row with an infinity matches nothing.
        const W* xr = xw + r * d;
        for (std::size_t j = 0; j < pc.k(); ++j) {
          const W v = detail::exact_distance(pc.type(), xr, pc.centroid(j), d) + pc.bias()[j];
          if (v < bv) {
            bv = v;
            bi = static_cast<std::uint32_t>(j);
          }
        }
        index[r0 + r] = bi;
        if (dist)
          dist[r0 + r] = bi == no_index ? std::numeric_limits<W>::quiet_NaN()
                                        : detail::exact_distance(pc.type(), xr, pc.centroid(bi), d);
        continue;
      }
      if (least_v[r] < std::numeric_limits<W>::infinity()) bi = static_cast<std::uint32_t>(least_i[r]);
      index[r0 + r] = bi;
      if (dist)
        dist[r0 + r] = bi == no_index ? std::numeric_limits<W>::quiet_NaN()
                                      : detail::exact_distance(pc.type(), xw + r * d, pc.centroid(bi), d);
    }
  });
}

// Convenience: packs the centroids and assigns. Hamming (uint8 codes) is supported
// here too, by direct popcount comparison.
template <class T, class C>
inline void assign_nearest(distance_type t, const T* x, std::size_t n, const C* centroids, std::size_t k,
                           std::size_t d, std::uint32_t* index, work_t<T, C>* dist = nullptr,
                           boost::asio::thread_pool* pool = nullptr) {
  using W = work_t<T, C>;
  if (t == distance_type::hamming) {
    if constexpr (std::is_same_v<T, std::uint8_t> && std::is_same_v<C, std::uint8_t>) {
      const std::size_t rb = 1024;
      parallel_for(pool, (n + rb - 1) / rb, [&](std::size_t b) {
        std::vector<float> tmp(k);
        for (std::size_t r = b * rb; r < std::min(n, (b + 1) * rb); ++r) {
          for (std::size_t j = 0; j < k; ++j) tmp[j] = hamming(x + r * d, centroids + j * d, d);
          const auto a = argmin(tmp.data(), k);
          index[r] = a ? a->index : no_index;
          if (dist) dist[r] = a ? a->value : std::numeric_limits<float>::quiet_NaN();
        }
      });
      return;
    } else {
      throw invalid_input_error("hamming distance needs uint8 rows and uint8 centroids");
    }
  }
  packed_centroids<W> pc(t, centroids, k, d);
  assign_nearest(pc, x, n, index, dist, pool);
}

// All n x k distances between the rows of x and packed centroids (of type t, given at
// packing), row-major into out. l2 values are clamped at 0 (the norm expansion can
// round slightly below). Packing once serves many calls: e.g. a batch of queries
// packed as the centroids, and the rows they rank streamed through in chunks.
template <class T, class W>
inline void distances_many_to_many(const packed_centroids<W>& pc, const T* x, std::size_t n, W* out,
                                   boost::asio::thread_pool* pool = nullptr) {
  const distance_type t = pc.type();
  const std::size_t k = pc.k(), d = pc.dimension();
  using plan = tile_plan<W>;
  const std::size_t mr = plan::mr_for(pc.nrv());
  detail::for_row_blocks<W>(x, n, d, mr, pool, [&](std::size_t r0, std::size_t rows, const W* xw) {
    aligned_array<W> alpha(rows), add(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      alpha[r] = tile_row_scale(t, xw + r * d, d);
      add[r] = t == distance_type::l2 ? norm_sq(xw + r * d, d) : W(1);
    }
    dispatch_tile_shape<W, tile_epilogue::store>(pc.nrv(), [&]<std::size_t MR, std::size_t NRV>() {
      detail::run_panels<W, MR, NRV, tile_epilogue::store>(pc, xw, rows, alpha.data(), add.data(), nullptr,
                                                           nullptr, out + r0 * k);
    });
    for (std::size_t r = 0; r < rows; ++r)  // rows the tiles skipped: exact distances
      if (std::isnan(alpha[r]))
        for (std::size_t j = 0; j < k; ++j)
          out[(r0 + r) * k + j] = detail::exact_distance(t, xw + r * d, pc.centroid(j), d);
  });
}

// All n x k distances between the rows of x and the centroids, row-major into out.
template <class T, class C>
inline void distances_many_to_many(distance_type t, const T* x, std::size_t n, const C* centroids,
                                   std::size_t k, std::size_t d, work_t<T, C>* out,
                                   boost::asio::thread_pool* pool = nullptr) {
  if (t == distance_type::hamming) {
    if constexpr (std::is_same_v<T, std::uint8_t> && std::is_same_v<C, std::uint8_t>) {
      const std::size_t rb = 256;
      parallel_for(pool, (n + rb - 1) / rb, [&](std::size_t b) {
        for (std::size_t r = b * rb; r < std::min(n, (b + 1) * rb); ++r)
          for (std::size_t j = 0; j < k; ++j) out[r * k + j] = hamming(x + r * d, centroids + j * d, d);
      });
      return;
    } else {
      throw invalid_input_error("hamming distance needs uint8 rows and uint8 centroids");
    }
  }
  distances_many_to_many(packed_centroids<work_t<T, C>>(t, centroids, k, d), x, n, out, pool);
}

}  // namespace lancet::simd
