// The element types of stored vectors and a dense row-major matrix of them (IVF
// centroids, PQ codebooks, RaBitQ rotation matrices), as the index files hold them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
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

}  // namespace lancet::index
