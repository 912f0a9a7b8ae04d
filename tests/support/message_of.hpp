// The message of the exception a call must throw: checks of error messages.
#pragma once

#include <doctest/doctest.h>

#include <exception>
#include <string>

#include <lancet/core/error.hpp>

namespace lancet::testing {

// Runs f and returns the message of the E it throws; fails the test when it throws
// nothing or another type.
template <class E = invalid_input_error, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
    return {};
  }
  FAIL("no exception thrown");
  return {};
}

}  // namespace lancet::testing
