// File format versions: `format_version`, the runtime name of a version, and the
// concept of a version policy: a small type carrying the numbers a version writes, its
// default encoding strategy and what it allows, which the writer is a template over.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"

namespace lancet::file {

enum class format_version : std::uint8_t { v2_0, v2_1, v2_2, v2_3 };

inline std::string_view to_string(format_version v) noexcept {
  switch (v) {
    case format_version::v2_0: return "2.0";
    case format_version::v2_1: return "2.1";
    case format_version::v2_2: return "2.2";
    case format_version::v2_3: return "2.3";
  }
  return "?";
}

inline format_version parse_format_version(std::string_view s) {
  if (s == "2.0" || s == "legacy") return format_version::v2_0;
  if (s == "2.1") return format_version::v2_1;
  if (s == "2.2" || s == "stable") return format_version::v2_2;
  if (s == "2.3" || s == "next") return format_version::v2_3;
  throw invalid_input_error("unknown Lance file format version '" + std::string(s) +
                            "' (expected 2.0, 2.1, 2.2 or 2.3/next)");
}

// The version a footer's numbers denote (Lance writes 0.3 for 2.0).
inline std::optional<format_version> version_from_footer(std::uint16_t major, std::uint16_t minor) noexcept {
  if ((major == 0 && minor == 3) || (major == 2 && minor == 0)) return format_version::v2_0;
  if (major == 2 && minor == 1) return format_version::v2_1;
  if (major == 2 && minor == 2) return format_version::v2_2;
  if (major == 2 && minor == 3) return format_version::v2_3;
  return std::nullopt;
}

// The version policies themselves live with their encoders, so that a program pays
// only for the versions it writes:
//   lancet/file/legacy.hpp       v2_0 (2.0, the legacy array encodings)
//   lancet/file/structural.hpp   v2_1, v2_2, v2_3 (structural encodings)
//   lancet/file/with_version.hpp     all of them, and with_version (a runtime choice)
struct v2_0;
struct v2_1;
struct v2_2;
struct v2_3;

template <class V>
concept version_policy = requires {
  { V::value } -> std::convertible_to<format_version>;
  { V::footer_major } -> std::convertible_to<std::uint16_t>;
  { V::footer_minor } -> std::convertible_to<std::uint16_t>;
  typename V::default_strategy;
};

}  // namespace lancet::file
