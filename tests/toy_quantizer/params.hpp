// A toy quantizer to show that the quantizer contract is complete: four bits per
// dimension, over a range [lower, upper] of its own for each dimension. Codes are
// (dimension + 1) / 2 bytes: dimension 2i in the low nibble of byte i, 2i + 1 in the
// high one; code c stands for lower + c * (upper - lower) / 15.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace toy_q4 {

struct q4_params {
  std::uint32_t dimension = 0;
  std::vector<float> lower, upper;  // one per dimension
  std::uint32_t code_bytes() const noexcept { return (dimension + 1) / 2; }
  friend bool operator==(const q4_params&, const q4_params&) = default;
};

inline constexpr unsigned levels = 15;  // the largest code

// The value code c of dimension d stands for.
inline float level(const q4_params& p, std::size_t d, unsigned c) {
  return p.lower[d] + float(c) * (p.upper[d] - p.lower[d]) / float(levels);
}

inline unsigned code_at(const std::uint8_t* row, std::size_t d) { return (row[d / 2] >> (4 * (d % 2))) & 0xf; }

}  // namespace toy_q4
