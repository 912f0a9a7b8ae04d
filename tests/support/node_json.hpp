// The JSON lines a Node script of tests/interop/ prints, parsed.
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interop.hpp"

namespace lancet::testing {

// Runs `node tests/interop/<script> args...` and parses each non-empty line of its
// output; a line that does not parse fails the test, showing the line.
inline std::vector<nlohmann::json> node_json(const std::string& script, const std::vector<std::string>& args) {
  std::istringstream lines(node(script, args));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::parse_error& e) {
      FAIL(script << ": line " << out.size() + 1 << " is not JSON (" << e.what() << "): '" << line.substr(0, 600) << "'");
    }
  }
  return out;
}

}  // namespace lancet::testing
