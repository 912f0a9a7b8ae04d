// What an IVF index stores about its quantizer, as plain data shared by the
// quantizers (index/quantizer/) and the index file layout (ivf/storage_writer.hpp, quantizer/traits.hpp):
//
//   matrix            a dense row-major matrix of f16/f32/f64/u8 (centroids, PQ
//                     codebooks, RaBitQ rotation matrices)
//   flat_params ...   the quantizer's parameters, one struct per kind; the file
//                     writer turns them into auxiliary.idx's `storage_metadata` JSON
//                     and global buffers exactly as Lance 12 does
//   partition_data    the rows of one IVF partition: row ids and, row-aligned, the
//                     codes and factors, always row-major (the writer transposes PQ
//                     codes and packs RaBitQ codes into Lance's on-disk layout)
//
// Code layouts (one row = one vector):
//   flat : the raw vector, dimension elements of flat_params::element
//   PQ   : num_sub_vectors bytes (8 bits), or num_sub_vectors / 2 bytes (4 bits: the
//          code of sub-vector 2i in the low nibble of byte i, 2i+1 in the high one)
//   SQ   : dimension bytes
//   RQ   : code_dim * 1 / 8 bytes: the sign bit of rotated dimension j is bit j % 8 of
//          byte j / 8; plus the per-row add / scale / error factors; with num_bits > 1
//          also Lance's `__blocked_ex_codes` bytes and the two `_ex` factors (stored
//          as given)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index {

enum class element_type : std::uint8_t { f16, f32, f64, u8 };

inline constexpr std::size_t element_size(element_type t) noexcept {
  switch (t) {
    case element_type::f16: return 2;
    case element_type::f32: return 4;
    case element_type::f64: return 8;
    case element_type::u8: return 1;
  }
  return 0;
}

// Lance's logical type names ("halffloat", "float", "double", "uint8").
inline constexpr std::string_view element_name(element_type t) noexcept {
  switch (t) {
    case element_type::f16: return "halffloat";
    case element_type::f32: return "float";
    case element_type::f64: return "double";
    case element_type::u8: return "uint8";
  }
  return "?";
}

template <class T>
inline constexpr element_type element_type_of() {
  if constexpr (std::is_same_v<T, simd::f16>) return element_type::f16;
  else if constexpr (std::is_same_v<T, float>) return element_type::f32;
  else if constexpr (std::is_same_v<T, double>) return element_type::f64;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "element types are simd::f16, float, double and uint8_t");
    return element_type::u8;
  }
}

// A dense row-major matrix of one element type, little-endian.
struct matrix {
  element_type type = element_type::f32;
  std::size_t rows = 0;
  std::size_t cols = 0;
  aligned_buffer data;  // rows * cols * element_size(type) bytes

  template <class T>
  static matrix of(const T* values, std::size_t rows, std::size_t cols) {
    matrix m;
    m.type = element_type_of<T>();
    m.rows = rows;
    m.cols = cols;
    m.data.append(values, rows * cols * sizeof(T));
    return m;
  }
  template <class T>
  static matrix of(const std::vector<T>& values, std::size_t rows, std::size_t cols) {
    if (values.size() != rows * cols)
      throw invalid_input_error("a " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix needs " +
                                std::to_string(rows * cols) + " values, got " + std::to_string(values.size()));
    return of(values.data(), rows, cols);
  }

  std::size_t size() const noexcept { return rows * cols; }
  std::size_t byte_size() const noexcept { return size() * element_size(type); }

  // The values as T; invalid_input_error when the matrix holds another type.
  template <class T>
  std::span<const T> values() const {
    if (type != element_type_of<T>())
      throw invalid_input_error("matrix holds " + std::string(element_name(type)) + " values, not " +
                                std::string(element_name(element_type_of<T>())));
    return {reinterpret_cast<const T*>(data.data()), size()};
  }
  // One value widened to double (any element type).
  double at(std::size_t row, std::size_t col) const {
    const std::size_t i = row * cols + col;
    const std::uint8_t* p = data.data() + i * element_size(type);
    switch (type) {
      case element_type::f16: {
        std::uint16_t bits;
        std::memcpy(&bits, p, 2);
        return double(simd::f16::from_bits(bits).to_float());
      }
      case element_type::f32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case element_type::f64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
      case element_type::u8: return double(*p);
    }
    return 0;
  }

  friend bool operator==(const matrix& a, const matrix& b) {
    return a.type == b.type && a.rows == b.rows && a.cols == b.cols && a.data.size() == b.data.size() &&
           (a.data.size() == 0 || std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
  }
};

// IVF_FLAT: the vectors themselves, in column `flat` (fixed_size_list<element, dimension>).
// Hamming indexes store uint8 vectors (dimension = bytes per vector).
struct flat_params {
  std::uint32_t dimension = 0;
  element_type element = element_type::f32;
  std::size_t code_bytes() const noexcept { return std::size_t(dimension) * element_size(element); }
  friend bool operator==(const flat_params&, const flat_params&) = default;
};

// IVF_PQ: num_sub_vectors codes of num_bits (8 or 4) per vector.
struct pq_params {
  std::uint32_t num_sub_vectors = 0;
  std::uint32_t num_bits = 8;
  std::uint32_t dimension = 0;
  // [num_sub_vectors][2^num_bits][dimension / num_sub_vectors] centroids, as a
  // (num_sub_vectors * 2^num_bits) x (dimension / num_sub_vectors) matrix in the
  // vectors' element type (Lance's tensor of it has shape [2^num_bits, dimension]).
  matrix codebook;
  std::uint32_t code_bytes() const noexcept { return num_bits == 4 ? num_sub_vectors / 2 : num_sub_vectors; }
  friend bool operator==(const pq_params&, const pq_params&) = default;
};

// IVF_SQ: one code of num_bits (8) per dimension; Lance keeps one global range
// [lower, upper] for all dimensions.
struct sq_params {
  std::uint32_t dimension = 0;
  std::uint32_t num_bits = 8;
  double lower = 0;
  double upper = 0;
  std::uint32_t code_bytes() const noexcept { return dimension; }
  friend bool operator==(const sq_params&, const sq_params&) = default;
};

// IVF_RQ (RaBitQ): one sign bit per rotated dimension, plus per-row factors.
struct rq_params {
  enum class rotation : std::uint8_t { fast, matrix };
  std::uint32_t code_dim = 0;  // dimensions after rotation (a multiple of 8)
  std::uint32_t num_bits = 1;  // bits per dimension; > 1 adds the `_ex` columns
  rotation rotation_type = rotation::fast;
  std::vector<std::uint8_t> fast_rotation_signs;  // rotation_type fast: Lance's sign bytes
  std::optional<matrix> rotate_mat;               // rotation_type matrix: code_dim x dimension
  std::string query_estimator = "raw_query";
  std::uint32_t ex_code_bytes = 0;  // bytes per row of __blocked_ex_codes (num_bits > 1)
  std::uint32_t code_bytes() const noexcept { return code_dim / 8; }
  friend bool operator==(const rq_params&, const rq_params&) = default;
};

using quantizer_params = std::variant<flat_params, pq_params, sq_params, rq_params>;

// Bytes per row of the code column.
inline std::size_t code_bytes(const quantizer_params& q) {
  return std::visit([](const auto& p) { return std::size_t(p.code_bytes()); }, q);
}

// Bytes per row of RaBitQ's `__blocked_ex_codes` (codes of more than 1 bit), else 0.
inline std::size_t ex_code_bytes(const quantizer_params& q) {
  const auto* r = std::get_if<rq_params>(&q);
  return r && r->num_bits > 1 ? r->ex_code_bytes : 0;
}

// The rows of one partition, borrowed. Every span has one entry per row (codes and
// ex_codes: code_bytes / ex_code_bytes per row), row-major.
struct partition_data {
  std::span<const std::uint64_t> row_ids;
  bytes_view codes;
  std::span<const float> add_factors, scale_factors, error_factors;  // RQ
  bytes_view ex_codes;                                                // RQ, num_bits > 1
  std::span<const float> add_factors_ex, scale_factors_ex;            // RQ, num_bits > 1
  std::size_t size() const noexcept { return row_ids.size(); }
};

// The rows of one partition as read back from a file (codes row-major again).
struct partition_contents {
  std::vector<std::uint64_t> row_ids;
  aligned_buffer codes;
  std::vector<float> add_factors, scale_factors, error_factors;
  aligned_buffer ex_codes;
  std::vector<float> add_factors_ex, scale_factors_ex;

  std::size_t size() const noexcept { return row_ids.size(); }
  partition_data view() const noexcept {
    return {row_ids, codes.view(), add_factors, scale_factors, error_factors, ex_codes.view(), add_factors_ex,
            scale_factors_ex};
  }
};

}  // namespace lancet::index
