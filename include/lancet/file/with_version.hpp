// Every file version policy, and `with_version`: the one place where a version chosen
// at run time (a dataset's storage version) becomes a policy type.
#pragma once

#include <string>

#include "lancet/core/error.hpp"
#include "lancet/file/legacy.hpp"
#include "lancet/file/structural.hpp"
#include "lancet/file/version.hpp"

namespace lancet::file {

// Calls f.template operator()<Policy>() for the policy of a runtime version.
template <class F>
decltype(auto) with_version(format_version v, F&& f) {
  switch (v) {
    case format_version::v2_0: return f.template operator()<v2_0>();
    case format_version::v2_1: return f.template operator()<v2_1>();
    case format_version::v2_2: return f.template operator()<v2_2>();
    case format_version::v2_3: return f.template operator()<v2_3>();
  }
  throw invalid_input_error("unknown Lance file format version " + std::to_string(int(v)));
}

}  // namespace lancet::file
