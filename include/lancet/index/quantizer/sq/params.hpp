// The scalar quantizer's stored parameters (IVF_SQ).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lancet/index/quantizer/matrix.hpp"

namespace lancet::index {

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

}  // namespace lancet::index
