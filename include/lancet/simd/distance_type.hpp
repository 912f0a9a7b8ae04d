// The distance types of Lance's vector indexes, their names and their parsing: what
// options and index metadata name, without the kernels (simd/distance.hpp) and the
// SIMD headers they need.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"

namespace lancet::simd {

enum class distance_type : std::uint8_t { l2, cosine, dot, hamming };

inline const char* distance_name(distance_type t) noexcept {
  switch (t) {
    case distance_type::l2: return "l2";
    case distance_type::cosine: return "cosine";
    case distance_type::dot: return "dot";
    case distance_type::hamming: return "hamming";
  }
  return "unknown";
}

// Accepts Lance's spellings ("l2", "euclidean", "cosine", "dot", "hamming"), any case.
inline distance_type parse_distance_type(std::string_view s) {
  const std::string l = ascii_lower(s);
  if (l == "l2" || l == "euclidean") return distance_type::l2;
  if (l == "cosine") return distance_type::cosine;
  if (l == "dot") return distance_type::dot;
  if (l == "hamming") return distance_type::hamming;
  throw invalid_input_error("unknown distance type '" + std::string(s) +
                            "' (expected l2, euclidean, cosine, dot or hamming)");
}

}  // namespace lancet::simd
