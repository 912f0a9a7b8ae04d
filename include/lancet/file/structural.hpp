// The file version policies of Lance 2.1, 2.2 and 2.3 (`file::v2_1`, `v2_2`, `v2_3`)
// with their encoders: the structural encodings. Include it to write those files.
// (In compiled mode the encoders come from the library; a writer with a policy of your
// own then also needs "lancet/encoding/structural/field_encoders.hpp" where it is created.)
#pragma once

#include <cstdint>

#include "lancet/core/config.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/encoding/structural/strategy.hpp"
#include "lancet/file/version.hpp"
#if LANCET_HEADER_ONLY
#include "lancet/encoding/structural/field_encoders.hpp"
#endif

namespace lancet::file {

namespace detail {
// The strategy for a user's encoding policy. A class that is not a policy gets the
// static_asserts of check_structural_policy, naming what it lacks (and, to keep the
// compiler's report to that, the default strategy in its place).
template <unsigned Minor, class Policy, bool = encoding::structural::structural_policy<Policy>>
struct structural_policy_strategy {
  using type = encoding::structural::structural_strategy<Minor, Policy>;
};
template <unsigned Minor, class Policy>
struct structural_policy_strategy<Minor, Policy, false> {
  static_assert(encoding::structural::check_structural_policy<Policy>());
  using type = encoding::structural::default_strategy<Minor>;
};

// What the structural versions share: 2.<Minor> in files and in memory, structural
// page layouts.
template <unsigned Minor, bool Unstable>
struct structural_version {
  static constexpr format_version value = format_version(Minor);
  static constexpr std::uint16_t footer_major = 2, footer_minor = Minor;
  static constexpr std::uint16_t memory_major = 2, memory_minor = Minor;
  static constexpr bool structural = true;
  static constexpr bool unstable = Unstable;
  using default_strategy = encoding::structural::default_strategy<Minor>;
  template <class Policy>
  using policy_strategy = typename structural_policy_strategy<Minor, Policy>::type;
};
}  // namespace detail

// Lance 2.1: structural encodings (rep/def levels, mini-block and full-zip pages).
struct v2_1 : detail::structural_version<1, false> {};
// Lance 2.2 ("stable" in Lance 12): 32-bit mini-block chunk sizes (has_large_chunk),
// constant pages, LZ4-compressed dictionaries, RLE for levels.
struct v2_2 : detail::structural_version<2, false> {};
// Lance 2.3 ("next"): unstable; lancet writes it as 2.2 does and warns, as Lance does.
struct v2_3 : detail::structural_version<3, true> {};

static_assert(v2_1::value == format_version::v2_1 && v2_2::value == format_version::v2_2 &&
              v2_3::value == format_version::v2_3);

}  // namespace lancet::file
