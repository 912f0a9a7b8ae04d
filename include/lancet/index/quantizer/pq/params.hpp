// The product quantizer's stored parameters (IVF_PQ).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lancet/index/quantizer/matrix.hpp"

namespace lancet::index {

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

}  // namespace lancet::index
