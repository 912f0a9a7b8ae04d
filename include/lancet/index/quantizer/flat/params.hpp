// The flat quantizer's stored parameters (IVF_FLAT).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lancet/index/quantizer/matrix.hpp"

namespace lancet::index {

// IVF_FLAT: the vectors themselves, in column `flat` (fixed_size_list<element, dimension>).
// Hamming indexes store uint8 vectors (dimension = bytes per vector).
struct flat_params {
  std::uint32_t dimension = 0;
  element_type element = element_type::f32;
  std::size_t code_bytes() const noexcept { return std::size_t(dimension) * element_size(element); }
  friend bool operator==(const flat_params&, const flat_params&) = default;
};

}  // namespace lancet::index
