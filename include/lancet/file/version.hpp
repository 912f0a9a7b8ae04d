// File format version policies. A policy is a small type carrying the numbers a
// version writes, its default encoding strategy, and what it allows; the writer is a
// template over it. `format_version` is the runtime name of a version, mapped onto the
// policy types in one place (`with_version`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"
#include "lancet/encoding/v2_0/field_encoders.hpp"
#include "lancet/encoding/v2_1/field_encoders.hpp"

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

// Lance 2.0: the "legacy" array encodings.
struct v2_0 {
  static constexpr format_version value = format_version::v2_0;
  static constexpr std::uint16_t footer_major = 0, footer_minor = 3;   // what Lance 12 writes in files
  static constexpr std::uint16_t memory_major = 2, memory_minor = 0;   // in-memory serialisations
  static constexpr bool structural = false;   // 2.1+ use structural page layouts
  static constexpr bool unstable = false;
  static constexpr bool split_pages_on_write = true;  // max_page_bytes applies when writing
  using default_strategy = encoding::v2_0::default_strategy;
};

// Lance 2.1: structural encodings (rep/def levels, mini-block and full-zip pages).
struct v2_1 {
  static constexpr format_version value = format_version::v2_1;
  static constexpr std::uint16_t footer_major = 2, footer_minor = 1;
  static constexpr std::uint16_t memory_major = 2, memory_minor = 1;
  static constexpr bool structural = true;
  static constexpr bool unstable = false;
  static constexpr bool split_pages_on_write = false;  // large pages are split on read
  using default_strategy = encoding::v2_1::default_strategy<1>;
};

// Lance 2.2 ("stable" in Lance 12): 32-bit mini-block chunk sizes (has_large_chunk),
// constant pages, LZ4-compressed dictionaries, RLE for levels.
struct v2_2 {
  static constexpr format_version value = format_version::v2_2;
  static constexpr std::uint16_t footer_major = 2, footer_minor = 2;
  static constexpr std::uint16_t memory_major = 2, memory_minor = 2;
  static constexpr bool structural = true;
  static constexpr bool unstable = false;
  static constexpr bool split_pages_on_write = false;
  using default_strategy = encoding::v2_1::default_strategy<2>;
};

// Lance 2.3 ("next"): unstable; lancet writes it as 2.2 does and warns, as Lance does.
struct v2_3 {
  static constexpr format_version value = format_version::v2_3;
  static constexpr std::uint16_t footer_major = 2, footer_minor = 3;
  static constexpr std::uint16_t memory_major = 2, memory_minor = 3;
  static constexpr bool structural = true;
  static constexpr bool unstable = true;
  static constexpr bool split_pages_on_write = false;
  using default_strategy = encoding::v2_1::default_strategy<3>;
};

template <class V>
concept version_policy = requires {
  { V::value } -> std::convertible_to<format_version>;
  { V::footer_major } -> std::convertible_to<std::uint16_t>;
  { V::footer_minor } -> std::convertible_to<std::uint16_t>;
  typename V::default_strategy;
};

// Whether runtime version choices (with_version, hence datasets) may pick 2.1+. The
// writer and the structural encoders are ready (file_writer<v2_2, ...> works); the
// switch waits for file_reader to decode 2.1+ pages through encoding/v2_1/decoder.hpp,
// since datasets default to 2.2 as soon as they can write it.
inline constexpr bool runtime_structural_versions = true;

// Calls f.template operator()<Policy>() for the policy of a runtime version.
template <class F>
decltype(auto) with_version(format_version v, F&& f) {
  if constexpr (runtime_structural_versions) {
    switch (v) {
      case format_version::v2_1: return f.template operator()<v2_1>();
      case format_version::v2_2: return f.template operator()<v2_2>();
      case format_version::v2_3: return f.template operator()<v2_3>();
      default: break;
    }
  }
  switch (v) {
    case format_version::v2_0: return f.template operator()<v2_0>();
    default:
      throw unsupported_error("lancet cannot write Lance " + std::string(to_string(v)) + " files through a runtime "
                              "version choice yet (use file_writer<file::v2_1/v2_2, ...>)");
  }
}

}  // namespace lancet::file
