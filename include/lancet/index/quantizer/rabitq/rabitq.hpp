// RaBitQ (Lance's IVF_RQ) as Lance 12 builds and searches it (lance-index vector/bq):
//
//   auto rq = index::rabitq::make(dim);                  // fast rotation, 1 bit, raw-query
//   index::rabitq::encoded_rows out(n, rq.code_bytes());
//   index::rabitq::encode_for_ivf(rq, rows, n, distance_type::l2, centroids, k, partitions,
//                                 out, &pool);           // codes + the factors Lance stores
//   index::pack_rabit_codes(codes_of_one_partition, rows_in_partition, code_bytes, out);
//   index::rabitq::query_estimator est(rq, query, distance_type::l2);   // per query
//   est.scan(transposed_codes, n, add, scale, query_factor(...), out);  // per partition
//
// What follows Lance 12:
// - one bit per dimension of the rotated residual (vector - its IVF centroid; cosine
//   normalises the vector first and is l2 from then on); the dimension must be a
//   multiple of 8 (Lance refuses others); a bit is 1 when the rotated value's sign
//   bit is clear (Rust's is_sign_positive), bits LSB first, dim / 8 bytes per row;
// - rotation "fast" (Lance 12's default): 4 rounds of random sign flips (4 * dim/8
//   bytes stored as `fast_rotation_signs`, bit i of a round flips dimension i) and a
//   normalised Walsh-Hadamard transform; for a dimension that is not a power of two
//   the transform alternates between the leading and the trailing power-of-two block,
//   each round ends with a Kac walk (x + y, x - y over the two halves) and the result
//   is scaled by 1/4 (RaBitQ-Library's FhtKacRotator). Rotation "matrix": an
//   orthogonal matrix (Householder QR of a Gaussian matrix) in the element type;
// - factors of the "raw_query" estimator (Lance 12's default for new indexes) per
//   row, with r' the rotated residual, c' the rotated centroid, x = +-1/2 by bit and
//   |r|^2 the squared residual norm (l2: the row's distance to its centroid):
//     l2:  add = |r|^2 + 2 |r|^2 <x,c'>/<x,r'>,      scale = -2 |r|^2 / <x,r'>
//     dot: add = 1 - <r',c'> + |r|^2 <x,c'>/<x,r'>,  scale = -|r|^2 / <x,r'>
//     error = 1.9 sqrt(|r|^2) sqrt(max(0, |r|^2 d/4 / <x,r'>^2 - 1) / (d - 1)), x2 for l2
//   (a ratio with a zero denominator is 0); the older "residual_query" estimator's
//   factors are available too (encode_options::estimator);
// - search with raw_query: q' = rotation of the (normalised) query, and a row's
//   distance is (<bits,q'> - sum(q')/2) * scale + add + f, with f = |q - c|^2 for l2,
//   -<q',c'> for dot and |q - c|^2 - 1 for cosine;
// - storage: per partition, full blocks of 32 rows in the fast-scan layout (4-bit
//   nibbles of 32 rows interleaved in Lance's PERM0 order) and the remaining rows
//   transposed ([code_bytes][rest]); `packed: true` in the metadata (pack_rabit_codes, code_layout.hpp).
// Verified against LanceDB 0.39 (tests/fixtures/quantizer): for LanceDB's signs and
// centroids our codes, packing and add / scale / error factors equal LanceDB's (l2,
// dot, cosine; power-of-two and Kac dimensions; f32 and f16), also the sign codes of
// a 2-bit index.
// Where lancet differs: the signs and matrices come from a seed (Lance uses OS
// entropy); scans sum exact f32 values (Lance quantizes the lookup table to u8/u16);
// lancet writes 1-bit indexes only and searches multi-bit ones with their sign bits.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/pq/pq.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::rabitq {

using simd::distance_type;

enum class rotation_type : std::uint8_t { fast, matrix };
enum class estimator_type : std::uint8_t { residual_query, raw_query };

inline const char* rotation_name(rotation_type t) noexcept { return t == rotation_type::fast ? "fast" : "matrix"; }
inline const char* estimator_name(estimator_type t) noexcept {
  return t == estimator_type::raw_query ? "raw_query" : "residual_query";
}

}  // namespace lancet::index::rabitq

namespace lancet::index::detail {
// Rounds of RaBitQ's fast rotation (each: sign flips, a Walsh-Hadamard transform).
inline constexpr std::size_t rabitq_fast_rotation_rounds = 4;
inline constexpr float rabitq_error_epsilon = 1.9f;  // Lance's RABIT_ERROR_EPSILON
}  // namespace lancet::index::detail

namespace lancet::index::rabitq {

struct params {
  std::uint8_t num_bits = 1;  // lancet encodes 1 bit per dimension
  rotation_type rotation = rotation_type::fast;
  estimator_type estimator = estimator_type::raw_query;
  std::uint64_t seed = 42;
};

// A RaBitQ quantizer: the rotation and what Lance records about it.
struct model {
  std::size_t dimension = 0;  // vector dimension = rotated (code) dimension
  std::uint8_t num_bits = 1;
  // Bits per dimension the index stores. An index LanceDB built with num_bits > 1
  // also stores "extended" codes; lancet searches it with the sign bits and their
  // factors alone (a coarser estimate than LanceDB's) and does not write such indexes.
  std::uint8_t stored_bits = 1;
  rotation_type rotation = rotation_type::fast;
  estimator_type estimator = estimator_type::raw_query;
  std::vector<std::uint8_t> fast_rotation_signs;  // fast: 4 * ceil(dimension / 8) bytes
  // matrix: dimension x dimension, row-major (row i gives rotated value i), values
  // exactly representable in rotate_mat_element, the vectors' element type (Lance
  // stores the matrix in it).
  std::vector<double> rotate_mat;
  element_type rotate_mat_element = element_type::f32;

  std::size_t code_dim() const noexcept { return dimension * num_bits; }
  std::size_t code_bytes() const noexcept { return (code_dim() + 7) / 8; }

  void validate() const {
    if (num_bits != 1)
      throw unsupported_error("RaBitQ: num_bits " + std::to_string(num_bits) + " is not supported (lancet writes 1)");
    if (dimension == 0 || dimension % 8 != 0)
      throw invalid_input_error("RaBitQ: vector dimension must be divisible by 8 for IVF_RQ, got " +
                                std::to_string(dimension));
    if (rotation == rotation_type::fast &&
        fast_rotation_signs.size() != detail::rabitq_fast_rotation_rounds * ((dimension + 7) / 8))
      throw invalid_input_error("RaBitQ: fast_rotation_signs has " + std::to_string(fast_rotation_signs.size()) +
                                " bytes, expected " +
                                std::to_string(detail::rabitq_fast_rotation_rounds * ((dimension + 7) / 8)) +
                                " for dimension " + std::to_string(dimension));
    if (rotation == rotation_type::matrix && rotate_mat.size() != dimension * dimension)
      throw invalid_input_error("RaBitQ: rotation matrix has " + std::to_string(rotate_mat.size()) +
                                " values, expected " + std::to_string(dimension * dimension));
  }

  // out[code_dim] = rotation of in[dimension], in f32 as Lance computes it.
  template <class T>
  void rotate(const T* in, float* out) const;
};

}  // namespace lancet::index::rabitq

namespace lancet::index::detail {

// The fast Walsh-Hadamard transform of v[n] in place (n a power of two, unnormalised).
inline void fwht(float* v, std::size_t n) noexcept {
  for (std::size_t h = 1; h < n; h *= 2)
    for (std::size_t i = 0; i < n; i += 2 * h)
      for (std::size_t j = i; j < i + h; ++j) {
        const float x = v[j], y = v[j + h];
        v[j] = x + y;
        v[j + h] = x - y;
      }
}

// Negates v[i] where bit i of signs is set.
inline void flip_signs(float* v, std::size_t n, const std::uint8_t* signs) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if ((signs[i / 8] >> (i % 8)) & 1u) v[i] = -v[i];
}

// Multiplies v[n] by f.
inline void scale_in_place(float* v, std::size_t n, float f) noexcept {
  for (std::size_t i = 0; i < n; ++i) v[i] *= f;
}

// Lance's fast rotation in place over v[dim].
inline void fast_rotate(float* v, std::size_t dim, const std::uint8_t* signs) noexcept {
  if (dim == 0) return;
  const std::size_t per_round = (dim + 7) / 8;
  const std::size_t trunc = std::bit_floor(dim);
  const float s = 1.0f / std::sqrt(static_cast<float>(trunc));
  if (trunc == dim) {
    for (std::size_t r = 0; r < rabitq_fast_rotation_rounds; ++r) {
      flip_signs(v, dim, signs + r * per_round);
      fwht(v, dim);
      scale_in_place(v, dim, s);
    }
    return;
  }
  const std::size_t start = dim - trunc, half = dim / 2;
  for (std::size_t r = 0; r < rabitq_fast_rotation_rounds; ++r) {
    flip_signs(v, dim, signs + r * per_round);
    float* block = r % 2 == 0 ? v : v + start;
    fwht(block, trunc);
    scale_in_place(block, trunc, s);
    for (std::size_t i = 0; i < half; ++i) {  // Kac walk
      const float x = v[i], y = v[i + half];
      v[i] = x + y;
      v[i + half] = x - y;
    }
  }
  scale_in_place(v, dim, 0.25f);
}

// Standard normal deviates (Box-Muller over splitmix64), reproducible per seed.
class normal_rng {
 public:
  explicit normal_rng(std::uint64_t seed) : rng_(seed) {}
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0;
    while (u <= 0.0) u = rng_.uniform01();
    const double v = rng_.uniform01();
    const double r = std::sqrt(-2.0 * std::log(u));
    spare_ = r * std::sin(2.0 * std::numbers::pi * v);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * v);
  }

 private:
  index::detail::rng64 rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// Q of the Householder QR decomposition of a, n x n row-major (Q = H_1 H_2 ...).
inline std::vector<double> householder_q(std::vector<double> a, std::size_t n) {
  std::vector<double> q(n * n, 0.0), u(n), w(n);
  for (std::size_t i = 0; i < n; ++i) q[i * n + i] = 1.0;
  for (std::size_t k = 0; k + 1 < n; ++k) {
    double norm = 0;
    for (std::size_t i = k; i < n; ++i) norm += a[i * n + k] * a[i * n + k];
    norm = std::sqrt(norm);
    if (norm < std::numeric_limits<double>::epsilon()) continue;
    for (std::size_t i = k; i < n; ++i) u[i] = a[i * n + k];
    u[k] += u[k] >= 0 ? norm : -norm;
    double un = 0;
    for (std::size_t i = k; i < n; ++i) un += u[i] * u[i];
    un = std::sqrt(un);
    for (std::size_t i = k; i < n; ++i) u[i] /= un;
    // A[k:, k:] -= 2 u (u^T A[k:, k:])
    for (std::size_t j = k; j < n; ++j) {
      double s = 0;
      for (std::size_t i = k; i < n; ++i) s += u[i] * a[i * n + j];
      for (std::size_t i = k; i < n; ++i) a[i * n + j] -= 2.0 * u[i] * s;
    }
    // Q[:, k:] -= 2 (Q[:, k:] u) u^T
    for (std::size_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::size_t j = k; j < n; ++j) s += q[i * n + j] * u[j];
      w[i] = s;
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = k; j < n; ++j) q[i * n + j] -= 2.0 * w[i] * u[j];
  }
  return q;
}

}  // namespace lancet::index::detail

namespace lancet::index::rabitq {

template <class T>
inline void model::rotate(const T* in, float* out) const {
  const std::size_t d = dimension;
  if (rotation == rotation_type::fast) {
    for (std::size_t i = 0; i < d; ++i) out[i] = quantizer::to_work<float>(in[i]);
    detail::fast_rotate(out, d, fast_rotation_signs.data());
    return;
  }
  using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (std::size_t i = 0; i < d; ++i) {
    const double* row = rotate_mat.data() + i * d;
    W s = W(0);
    for (std::size_t j = 0; j < d; ++j) s += static_cast<W>(row[j]) * quantizer::to_work<W>(in[j]);
    out[i] = static_cast<float>(s);
  }
}

// A new quantizer for vectors of `dim` values of element type T (the type only
// matters for matrix rotations, stored in that type as Lance does).
template <class T = float>
inline model make(std::size_t dim, const params& p = {}) {
  static_assert(quantizer::is_float_element_v<T>, "RaBitQ quantizes float, double or f16 vectors");
  model m;
  m.dimension = dim;
  m.num_bits = p.num_bits;
  m.rotation = p.rotation;
  m.estimator = p.estimator;
  if (p.num_bits != 1)
    throw unsupported_error("RaBitQ: num_bits " + std::to_string(p.num_bits) + " is not supported (lancet writes 1)");
  if (dim == 0 || dim % 8 != 0)
    throw invalid_input_error("RaBitQ: vector dimension must be divisible by 8 for IVF_RQ, got " + std::to_string(dim));
  index::detail::rng64 rng(quantizer::mix_seed(p.seed, 0x5241424954ull));
  if (p.rotation == rotation_type::fast) {
    m.fast_rotation_signs.resize(detail::rabitq_fast_rotation_rounds * ((dim + 7) / 8));
    for (auto& b : m.fast_rotation_signs) b = static_cast<std::uint8_t>(rng.next() >> 56);
  } else {
    detail::normal_rng g(rng.next());
    std::vector<double> a(dim * dim);
    for (auto& v : a) v = g.next();
    m.rotate_mat = detail::householder_q(std::move(a), dim);
    for (auto& v : m.rotate_mat) v = quantizer::to_work<double>(quantizer::from_work<T>(v));
    m.rotate_mat_element = element_type_of<T>();
  }
  return m;
}

// Rows encoded for storage: codes row-major (n x code_bytes, pack per partition with
// pack_rabit_codes before writing) and Lance's factor columns.
struct encoded_rows {
  std::vector<std::uint8_t> codes;   // _rabit_codes
  std::vector<float> add_factors;    // __add_factors
  std::vector<float> scale_factors;  // __scale_factors
  std::vector<float> error_factors;  // __error_factors (raw_query only)

  encoded_rows() = default;
  encoded_rows(std::size_t n, std::size_t code_bytes) : codes(n * code_bytes), add_factors(n), scale_factors(n), error_factors(n) {}
};

}  // namespace lancet::index::rabitq

namespace lancet::index::detail {

// num / den, 0 when den is 0 (Lance's rule for the RaBitQ factors).
inline float ratio_or_zero(float num, float den) noexcept { return den == 0.0f ? 0.0f : num / den; }

// A row's RaBitQ error factor (Lance's __error_factors) for the raw_query estimator.
inline float rabitq_error_factor(distance_type t, float norm_sq, float x_dot_r, std::size_t d) noexcept {
  if (d <= 1 || !(norm_sq > 0.0f) || x_dot_r == 0.0f) return 0.0f;
  const float code_norm_sq = static_cast<float>(d) * 0.25f;
  const float alignment = norm_sq * code_norm_sq / (x_dot_r * x_dot_r);
  const float angular = std::sqrt(std::max(alignment - 1.0f, 0.0f) / (static_cast<float>(d) - 1.0f));
  const float e = std::sqrt(norm_sq) * rabitq_error_epsilon * angular;
  return t == distance_type::l2 ? 2.0f * e : e;
}

}  // namespace lancet::index::detail

namespace lancet::index::rabitq {

// Encodes n rows of an IVF index: rows (n x dim) with partitions[r] indexing the
// num_partitions x dim centroids. distance is the index's: cosine normalises rows
// and is l2 from then on. centroid_dist (optional, n values) is each row's l2 /
// dot distance to its centroid as the IVF assignment reported it (Lance's
// __dist_q_c... column); lancet computes it when null.
template <class T, class C>
inline void encode_for_ivf(const model& m, const T* rows, std::size_t n, distance_type distance, const C* centroids,
                           std::size_t num_partitions, const std::uint32_t* partitions, encoded_rows& out,
                           boost::asio::thread_pool* pool = nullptr, const float* centroid_dist = nullptr) {
  static_assert(quantizer::is_float_element_v<T>, "RaBitQ quantizes float, double or f16 vectors");
  m.validate();
  quantizer::check_shape("RaBitQ encode", rows, n, m.dimension);
  if (distance == distance_type::hamming) throw invalid_input_error("RaBitQ: hamming distance is not supported");
  if (n > 0 && (centroids == nullptr || partitions == nullptr))
    throw invalid_input_error("RaBitQ encode: residuals need the IVF centroids and each row's partition");
  const std::size_t d = m.dimension, cb = m.code_bytes();
  const distance_type dt = distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  out.codes.resize(n * cb);
  out.add_factors.resize(n);
  out.scale_factors.resize(n);
  out.error_factors.resize(n);
  // Rotated centroids and |c|^2 (residual-query dot), once.
  std::vector<float> rc(num_partitions * d), cn(num_partitions);
  parallel_for(pool, num_partitions, [&](std::size_t p) {
    m.rotate(centroids + p * d, rc.data() + p * d);
    float s = 0.0f;
    for (std::size_t i = 0; i < d; ++i) {
      const float v = quantizer::to_work<float>(centroids[p * d + i]);
      s += v * v;
    }
    cn[p] = s;
  });
  using W = simd::work_t<T, C>;
  const std::size_t block = 512;
  parallel_for(pool, (n + block - 1) / block, [&](std::size_t b) {
    std::vector<W> v(d), cw(d);
    std::vector<T> res(d);
    std::vector<float> r(d);
    for (std::size_t row = b * block; row < std::min(n, (b + 1) * block); ++row) {
      const std::uint32_t p = partitions[row];
      if (p >= num_partitions)
        throw invalid_input_error("RaBitQ encode: row " + std::to_string(row) + " has partition " +
                                  std::to_string(p) + " of " + std::to_string(num_partitions));
      for (std::size_t i = 0; i < d; ++i) v[i] = quantizer::to_work<W>(rows[row * d + i]);
      if (distance == distance_type::cosine) {
        quantizer::normalise_row(v.data(), d);
        quantizer::round_through<T>(v.data(), d);
      }
      for (std::size_t i = 0; i < d; ++i) cw[i] = quantizer::to_work<W>(centroids[std::size_t(p) * d + i]);
      // Lance takes the residual in the vector's element type; for l2 |r|^2 is the
      // row's distance to its centroid.
      float norm_sq = 0.0f, v_dot_c = 0.0f;
      for (std::size_t i = 0; i < d; ++i) {
        res[i] = quantizer::from_work<T>(v[i] - cw[i]);
        const float rv = quantizer::to_work<float>(res[i]);
        norm_sq += rv * rv;
        v_dot_c += static_cast<float>(v[i] * cw[i]);
      }
      if (dt == distance_type::l2)
        norm_sq = centroid_dist ? centroid_dist[row] : static_cast<float>(simd::l2(v.data(), cw.data(), d));
      m.rotate(res.data(), r.data());
      std::uint8_t* code = out.codes.data() + row * cb;
      std::fill(code, code + cb, std::uint8_t(0));
      const float* crot = rc.data() + std::size_t(p) * d;
      float x_dot_r = 0.0f, x_dot_c = 0.0f, r_dot_c = 0.0f, abs_sum = 0.0f;
      for (std::size_t i = 0; i < d; ++i) {
        const bool bit = !std::signbit(r[i]);
        if (bit) code[i / 8] = static_cast<std::uint8_t>(code[i / 8] | (1u << (i % 8)));
        const float x = bit ? 0.5f : -0.5f;
        x_dot_r += r[i] * x;
        x_dot_c += crot[i] * x;
        r_dot_c += r[i] * crot[i];
        abs_sum += std::fabs(r[i]);
      }
      if (m.estimator == estimator_type::raw_query) {
        const float corr = detail::ratio_or_zero(norm_sq * x_dot_c, x_dot_r);
        if (dt == distance_type::l2) {
          out.add_factors[row] = norm_sq + 2.0f * corr;
          out.scale_factors[row] = detail::ratio_or_zero(-2.0f * norm_sq, x_dot_r);
        } else {
          out.add_factors[row] = (1.0f - r_dot_c) + corr;
          out.scale_factors[row] = detail::ratio_or_zero(-norm_sq, x_dot_r);
        }
        out.error_factors[row] = detail::rabitq_error_factor(dt, norm_sq, x_dot_r, d);
      } else {
        const float ip = abs_sum / std::sqrt(static_cast<float>(d));
        if (dt == distance_type::l2) {
          out.add_factors[row] = norm_sq;
          out.scale_factors[row] = detail::ratio_or_zero(-2.0f * norm_sq, ip);
        } else {
          const float dist_v_c = centroid_dist ? centroid_dist[row] : 1.0f - v_dot_c;
          out.add_factors[row] = dist_v_c + cn[p];
          out.scale_factors[row] = -detail::ratio_or_zero(norm_sq, ip);
        }
        out.error_factors[row] = 0.0f;
      }
    }
  });
  if (m.estimator == estimator_type::residual_query) out.error_factors.clear();
}

// ---- storage layout ---------------------------------------------------------------

// Packed partition codes -> transposed [code_bytes][n] (what query_estimator scans).
inline void packed_to_transposed(const std::uint8_t* packed, std::size_t n, std::size_t code_bytes,
                                 std::uint8_t* out) {
  std::vector<std::uint8_t> rows(n * code_bytes);
  unpack_rabit_codes(packed, n, code_bytes, rows.data());
  transpose_codes(rows.data(), n, code_bytes, out);
}

// ---- search -------------------------------------------------------------------

// The per-query part of Lance's RaBitQ distance: the rotated query and a 256-entry
// table per code byte summing the rotated query values whose bits are set.
class query_estimator {
 public:
  query_estimator() = default;

  // query: dimension values (for residual_query models, the residual query - centroid
  // of the partition being scanned). distance is the index's.
  template <class Q>
  query_estimator(const model& m, const Q* query, distance_type distance)
      : d_(m.dimension), distance_(distance), estimator_(m.estimator) {
    static_assert(quantizer::is_float_element_v<Q>, "RaBitQ queries are float, double or f16");
    m.validate();
    if (query == nullptr) throw invalid_input_error("RaBitQ distance: query is null");
    if (distance == distance_type::hamming) throw invalid_input_error("RaBitQ distance: hamming is not supported");
    rotated_.resize(d_);
    if (distance == distance_type::cosine) {
      std::vector<double> q(d_);
      for (std::size_t i = 0; i < d_; ++i) q[i] = quantizer::to_work<double>(query[i]);
      quantizer::normalise_row(q.data(), d_);
      m.rotate(q.data(), rotated_.data());
    } else {
      m.rotate(query, rotated_.data());
    }
    sum_q_ = 0.0f;
    for (float v : rotated_) sum_q_ += v;
    const std::size_t nb = m.code_bytes();
    lut_.assign(nb * 256, 0.0f);
    for (std::size_t b = 0; b < nb; ++b) {
      float* t = lut_.data() + b * 256;
      for (std::size_t v = 1; v < 256; ++v) {
        const std::size_t low = v & (~v + 1);
        t[v] = t[v - low] + rotated_[b * 8 + std::size_t(std::countr_zero(low))];
      }
    }
    if (estimator_ == estimator_type::raw_query) {
      mul_ = 1.0f;
      off_ = -0.5f * sum_q_;
    } else {
      const float sqrt_d = std::sqrt(static_cast<float>(d_));
      mul_ = 2.0f / sqrt_d;
      off_ = -sum_q_ / sqrt_d;
    }
  }

  const std::vector<float>& rotated_query() const noexcept { return rotated_; }

  // The per-partition term f of the distance: dist_q_c is the query's distance to
  // the partition's centroid as the IVF search computes it (l2 of the normalised
  // query under cosine, 1 - q.c under dot); rotated_centroid (dot, raw_query) is the
  // centroid rotated with the model.
  float query_factor(float dist_q_c, const float* rotated_centroid = nullptr) const noexcept {
    if (distance_ == distance_type::l2) return dist_q_c;
    if (distance_ == distance_type::dot && estimator_ == estimator_type::raw_query && rotated_centroid) {
      float s = 0.0f;
      for (std::size_t i = 0; i < d_; ++i) s += rotated_[i] * rotated_centroid[i];
      return -s;
    }
    return dist_q_c - 1.0f;
  }

  // The binary inner product of one row-major code row with the rotated query.
  float binary_ip(const std::uint8_t* code_row) const noexcept {
    float s = 0.0f;
    for (std::size_t b = 0; b < d_ / 8; ++b) s += lut_[b * 256 + code_row[b]];
    return s;
  }

  // Estimated distance of one row from its binary inner product and factors.
  float distance(float ip, float add, float scale, float qf) const noexcept {
    return (ip * mul_ + off_) * scale + add + qf;
  }

  // Distances of n rows of one partition: codes transposed ([code_bytes][n], see
  // packed_to_transposed), their add / scale factors, the partition's query factor.
  void scan(const std::uint8_t* transposed, std::size_t n, const float* add, const float* scale, float qf,
            float* out) const {
    if (n == 0) return;
    pq::lut_scan(lut_.data(), d_ / 8, transposed, n, out);
    for (std::size_t j = 0; j < n; ++j) out[j] = distance(out[j], add[j], scale[j], qf);
  }

  // The rows of scan() whose distance may be <= threshold() (+inf while a result is
  // not full; it may only decrease between calls), each emitted once as emit(r, d)
  // with the distance scan() computes for it; the rest are skipped. Where AVX-512 VBMI
  // exists the binary inner products are bounded 64 rows at a time from u8-quantized
  // tables (pq::quantize_luts), the distance bounded over that interval with
  // the row's factors and a relative margin for f32 rounding; rows with non-finite
  // factors are always emitted. qscratch: code_bytes * 256 bytes.
  template <class Threshold, class Emit>
  void scan_filtered(const std::uint8_t* transposed, std::size_t n, const float* add, const float* scale, float qf,
                     std::uint8_t* qscratch, Threshold&& threshold, Emit&& emit) const {
    const std::size_t nb = d_ / 8;
    auto exact = [&](std::size_t r) {
      return distance(pq::lut_scan_row(lut_.data(), nb, transposed, n, r), add[r], scale[r], qf);
    };
    std::size_t j = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    const pq::quantized_luts ql =
        n >= 64 && std::isfinite(qf) ? pq::quantize_luts(lut_.data(), nb, qscratch) : pq::quantized_luts{};
    if (ql.ok) {
      // The exact sum lies in [bias + delta S - slack, bias + delta (S + 1.01 nb) + slack];
      // w bounds its magnitude, and f32 evaluation of the interval adds 1e-6 w.
      const double w = std::fabs(ql.bias) + ql.delta * 255.0 * double(nb) + ql.slack;
      const float widen = static_cast<float>(ql.slack + 1e-6 * w);
      const __m512 bias = _mm512_set1_ps(static_cast<float>(ql.bias)), delta = _mm512_set1_ps(static_cast<float>(ql.delta));
      const __m512 span = _mm512_set1_ps(static_cast<float>(1.01 * double(nb))), wv = _mm512_set1_ps(widen);
      const __m512 mul = _mm512_set1_ps(mul_), off = _mm512_set1_ps(off_), qfv = _mm512_set1_ps(qf);
      // Margin for the f32 rounding of the distance: 1e-5 of the magnitudes involved.
      const __m512 tmag = _mm512_set1_ps(static_cast<float>(double(mul_) * w + std::fabs(double(off_))));
      const __m512 rel = _mm512_set1_ps(1e-5f), tiny = _mm512_set1_ps(1e-30f), zero = _mm512_setzero_ps();
      const float fqf = std::fabs(qf);
      for (; j + 64 <= n; j += 64) {
        const float thr = threshold();
        if (!(thr < std::numeric_limits<float>::infinity())) {
          for (std::size_t r = j; r < j + 64; ++r) emit(r, exact(r));
          continue;
        }
        __m512i acc[2];
        pq::quantized_sums64(qscratch, nb, transposed, n, j, acc[0], acc[1]);
        const __m512 thrv = _mm512_set1_ps(thr);
        // Rows r0..r0+15 with quantized sums s16 (u16): those that may be <= thr.
        auto keep16 = [&](__m256i s16, std::size_t r0) -> std::uint64_t {
          const __m512 sum = _mm512_maskz_cvtepi32_ps(static_cast<__mmask16>(0xffff),
                                                      _mm512_maskz_cvtepu16_epi32(static_cast<__mmask16>(0xffff), s16));
          const __m512 a = _mm512_loadu_ps(add + r0), sc = _mm512_loadu_ps(scale + r0);
          const __m512 ip_lo = _mm512_sub_ps(_mm512_add_ps(bias, _mm512_mul_ps(delta, sum)), wv);
          const __m512 ip_hi = _mm512_add_ps(_mm512_add_ps(bias, _mm512_mul_ps(delta, _mm512_add_ps(sum, span))), wv);
          // The distance falls with the inner product when the scale is negative.
          const __mmask16 neg = _mm512_cmp_ps_mask(sc, zero, _CMP_LT_OQ);
          const __m512 ip = _mm512_mask_blend_ps(neg, ip_lo, ip_hi);
          const __m512 t = _mm512_add_ps(_mm512_mul_ps(ip, mul), off);
          const __m512 lb = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(t, sc), a), qfv);
          const __m512 abs_sc = _mm512_abs_ps(sc), abs_a = _mm512_abs_ps(a);
          const __m512 margin = _mm512_add_ps(
              _mm512_mul_ps(rel, _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(abs_sc, tmag), abs_a), _mm512_set1_ps(fqf))),
              tiny);
          const __mmask16 keep = _mm512_cmp_ps_mask(_mm512_sub_ps(lb, margin), thrv, _CMP_LE_OQ);
          // Non-finite factors: no bound, the row is emitted (its exact distance decides).
          const __mmask16 odd = static_cast<__mmask16>(_mm512_cmp_ps_mask(_mm512_sub_ps(a, a), zero, _CMP_NEQ_UQ) |
                                                       _mm512_cmp_ps_mask(_mm512_sub_ps(sc, sc), zero, _CMP_NEQ_UQ));
          return std::uint64_t(static_cast<__mmask16>(keep | odd));
        };
        const __mmask8 all8 = static_cast<__mmask8>(0xf);
        const std::uint64_t mask0 = keep16(_mm512_maskz_extracti64x4_epi64(all8, acc[0], 0), j) |
                                    (keep16(_mm512_maskz_extracti64x4_epi64(all8, acc[0], 1), j + 16) << 16) |
                                    (keep16(_mm512_maskz_extracti64x4_epi64(all8, acc[1], 0), j + 32) << 32) |
                                    (keep16(_mm512_maskz_extracti64x4_epi64(all8, acc[1], 1), j + 48) << 48);
        std::uint64_t mask = mask0;
        while (mask) {
          const std::size_t r = j + static_cast<std::size_t>(std::countr_zero(mask));
          mask &= mask - 1;
          emit(r, exact(r));
        }
      }
    }
#else
    (void)qscratch;
    (void)threshold;
#endif
    for (; j < n; ++j) emit(j, exact(j));
  }

 private:
  std::size_t d_ = 0;
  distance_type distance_ = distance_type::l2;
  estimator_type estimator_ = estimator_type::raw_query;
  std::vector<float> rotated_;
  std::vector<float> lut_;
  float sum_q_ = 0.0f, mul_ = 1.0f, off_ = 0.0f;
};

// ---- the shared storage description (quantizer/params.hpp) ----------------------

inline rq_params to_params(const model& m) {
  m.validate();
  if (m.stored_bits != 1)
    throw unsupported_error("RaBitQ: lancet writes 1-bit IVF_RQ only (this model was read from a " +
                            std::to_string(m.stored_bits) + "-bit index)");
  rq_params p;
  p.code_dim = static_cast<std::uint32_t>(m.code_dim());
  p.num_bits = m.num_bits;
  p.query_estimator = estimator_name(m.estimator);
  if (m.rotation == rotation_type::fast) {
    p.rotation_type = rq_params::rotation::fast;
    p.fast_rotation_signs = m.fast_rotation_signs;
  } else {
    p.rotation_type = rq_params::rotation::matrix;
    const std::size_t n = m.rotate_mat.size();
    switch (m.rotate_mat_element) {
      case element_type::f16: {
        std::vector<simd::f16> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = simd::f16(static_cast<float>(m.rotate_mat[i]));
        p.rotate_mat = matrix::of(v, m.dimension, m.dimension);
        break;
      }
      case element_type::f64: p.rotate_mat = matrix::of(m.rotate_mat, m.dimension, m.dimension); break;
      default: {
        std::vector<float> v(m.rotate_mat.begin(), m.rotate_mat.end());
        p.rotate_mat = matrix::of(v, m.dimension, m.dimension);
      }
    }
  }
  return p;
}

// A model for searching an index; num_bits > 1 indexes are searched with their sign
// bits (see model::stored_bits).
inline model from_params(const rq_params& p) {
  model m;
  if (p.num_bits < 1 || p.num_bits > 9)
    throw unsupported_error("RaBitQ: num_bits " + std::to_string(p.num_bits) + " is out of Lance's range 1..=9");
  m.num_bits = 1;
  m.stored_bits = static_cast<std::uint8_t>(p.num_bits);
  m.dimension = p.code_dim;
  if (p.query_estimator == "raw_query") m.estimator = estimator_type::raw_query;
  else if (p.query_estimator == "residual_query" || p.query_estimator.empty()) m.estimator = estimator_type::residual_query;
  else throw unsupported_error("RaBitQ: unknown query estimator '" + p.query_estimator + "'");
  if (p.rotation_type == rq_params::rotation::fast) {
    m.rotation = rotation_type::fast;
    m.fast_rotation_signs = p.fast_rotation_signs;
  } else {
    m.rotation = rotation_type::matrix;
    if (!p.rotate_mat) throw invalid_input_error("RaBitQ: a matrix rotation without its matrix");
    const matrix& r = *p.rotate_mat;
    if (r.rows != p.code_dim || r.cols != p.code_dim)
      throw invalid_input_error("RaBitQ: rotation matrix is " + std::to_string(r.rows) + " x " +
                                std::to_string(r.cols) + ", expected " + std::to_string(p.code_dim) + " x " +
                                std::to_string(p.code_dim));
    m.rotate_mat.resize(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) m.rotate_mat[i] = r.at(i / r.cols, i % r.cols);
    m.rotate_mat_element = r.type;
  }
  m.validate();
  return m;
}

}  // namespace lancet::index::rabitq
