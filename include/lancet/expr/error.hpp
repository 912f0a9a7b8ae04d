// Errors of a filter expression: where in the text (byte offset) and which token.
// A malformed or ill-typed filter is an invalid_filter (invalid input); valid SQL that
// lancet does not evaluate (a function call, a subquery) is an unsupported_filter.
#pragma once

#include <cstddef>
#include <string>

#include "lancet/core/error.hpp"

namespace lancet::expr {

template <errc Code>
class error_at : public error_of<Code> {
 public:
  error_at(const std::string& message, std::size_t position, std::string token)
      : error_of<Code>("filter: " + message + " at position " + std::to_string(position) +
                       (token.empty() ? std::string(" (end of the filter)") : " ('" + token + "')")),
        position_(position),
        token_(std::move(token)) {}
  // Byte offset of the offending token in the filter text (its length at the end).
  std::size_t position() const noexcept { return position_; }
  // The offending token as written (empty at the end of the text).
  const std::string& token() const noexcept { return token_; }

 private:
  std::size_t position_;
  std::string token_;
};

using invalid_filter = error_at<errc::invalid_input>;
using unsupported_filter = error_at<errc::unsupported>;

}  // namespace lancet::expr
