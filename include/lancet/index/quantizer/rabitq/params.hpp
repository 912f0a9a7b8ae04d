// RaBitQ's stored parameters (IVF_RQ).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lancet/index/quantizer/matrix.hpp"

namespace lancet::index {

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

}  // namespace lancet::index
