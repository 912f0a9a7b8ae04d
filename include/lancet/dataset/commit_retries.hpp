// Lance's default number of commit retries (CommitConfig::num_retries): how many
// times a commit that lost the race for a version is rebased and tried again. Apart from
// the conflict resolution (conflict.hpp) so that declarations taking it as a default
// argument need not include that.
#pragma once

namespace lancet::dataset {

inline constexpr unsigned default_max_retries = 20;

}  // namespace lancet::dataset
