// The file version policies of Lance 2.1, 2.2 and 2.3 (`file::v2_1`, `v2_2`, `v2_3`)
// with their encoders: the structural encodings. Include it to write those files.
// (In compiled mode the encoders come from the library; a writer with a policy of your
// own then also needs "lancet/encoding/v2_1/field_encoders.hpp" where it is created.)
#pragma once

#include <cstdint>

#include "lancet/core/config.hpp"
#include "lancet/encoding/v2_1/policy.hpp"
#include "lancet/encoding/v2_1/strategy.hpp"
#include "lancet/file/version.hpp"
#if LANCET_HEADER_ONLY
#include "lancet/encoding/v2_1/field_encoders.hpp"
#endif

namespace lancet::file {

namespace detail {
// The strategy for a user's encoding policy. A class that is not a policy gets the
// static_asserts of check_structural_policy, naming what it lacks (and, to keep the
// compiler's report to that, the default strategy in its place).
template <unsigned Minor, class Policy, bool = encoding::v2_1::structural_policy<Policy>>
struct structural_policy_strategy {
  using type = encoding::v2_1::structural_strategy<Minor, Policy>;
};
template <unsigned Minor, class Policy>
struct structural_policy_strategy<Minor, Policy, false> {
  static_assert(encoding::v2_1::check_structural_policy<Policy>());
  using type = encoding::v2_1::default_strategy<Minor>;
};
}  // namespace detail

// Lance 2.1: structural encodings (rep/def levels, mini-block and full-zip pages).
struct v2_1 {
  static constexpr format_version value = format_version::v2_1;
  static constexpr std::uint16_t footer_major = 2, footer_minor = 1;
  static constexpr std::uint16_t memory_major = 2, memory_minor = 1;
  static constexpr bool structural = true;
  static constexpr bool unstable = false;
  static constexpr bool split_pages_on_write = false;  // large pages are split on read
  using default_strategy = encoding::v2_1::default_strategy<1>;
  template <class Policy>
  using policy_strategy = typename detail::structural_policy_strategy<1, Policy>::type;
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
  template <class Policy>
  using policy_strategy = typename detail::structural_policy_strategy<2, Policy>::type;
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
  template <class Policy>
  using policy_strategy = typename detail::structural_policy_strategy<3, Policy>::type;
};

}  // namespace lancet::file
