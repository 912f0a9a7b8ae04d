// Where a value sits inside a row, for error messages: "s.a", "tags[2]". Shared by the
// row reader (values the schema refuses) and the row writer (values it cannot write).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lancet::json::detail {

// A chain of steps from the row down to one value; each step is a member name or,
// when index >= 0, a list position. Rendered only when a message needs it.
struct value_path {
  const value_path* parent = nullptr;
  std::string_view name;
  std::int64_t index = -1;

  std::string render() const {
    std::string s = parent ? parent->render() : std::string();
    if (index >= 0) {
      s += '[';
      s += std::to_string(index);
      s += ']';
    } else {
      if (!s.empty()) s += '.';
      s += name;
    }
    return s;
  }
};

}  // namespace lancet::json::detail
