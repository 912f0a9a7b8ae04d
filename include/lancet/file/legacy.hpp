// The file version policy of Lance 2.0 (`file::v2_0`) with its encoders: the legacy
// array encodings. Include it to write 2.0 files.
#pragma once

#include <cstdint>

#include "lancet/core/config.hpp"
#include "lancet/encoding/legacy/strategy.hpp"
#include "lancet/file/version.hpp"
#if LANCET_HEADER_ONLY
#include "lancet/encoding/legacy/field_encoders.hpp"
#endif

namespace lancet::file {

namespace detail {
template <class>
inline constexpr bool always_false = false;
// 2.0 has a single way to encode each type: nothing for a policy to decide.
template <class Policy>
struct legacy_policy_strategy {
  static_assert(always_false<Policy>, "lancet: Lance 2.0 files are written with the legacy encodings, which take no "
                                      "encoding policy; policies customise files 2.1, 2.2 and 2.3");
  using type = encoding::legacy::default_strategy;
};
}  // namespace detail

// Lance 2.0: the "legacy" array encodings.
struct v2_0 {
  static constexpr format_version value = format_version::v2_0;
  static constexpr std::uint16_t footer_major = 0, footer_minor = 3;   // what Lance 12 writes in files
  static constexpr std::uint16_t memory_major = 2, memory_minor = 0;   // in-memory serialisations
  static constexpr bool structural = false;   // 2.1+ use structural page layouts
  static constexpr bool unstable = false;
  using default_strategy = encoding::legacy::default_strategy;
  template <class Policy>
  using policy_strategy = typename detail::legacy_policy_strategy<Policy>::type;
};

}  // namespace lancet::file
