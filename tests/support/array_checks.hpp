// Checks that two Arrow arrays hold the same values, naming the first difference.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include <lancet/arrow/array.hpp>
#include <lancet/arrow/compare.hpp>

namespace lancet::testing {

// `what` names the arrays in the failure (a column, a case).
inline void check_same(const arrow::array_ptr& expected, const arrow::array_ptr& actual, const std::string& what) {
  auto diff = arrow::first_difference(expected, actual);
  INFO(what << ": " << diff.value_or(""));
  CHECK_FALSE(diff.has_value());
}

}  // namespace lancet::testing
