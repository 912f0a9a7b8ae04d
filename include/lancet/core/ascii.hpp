// ASCII case folding for names and option values compared case-insensitively (index
// types, distance names, storage options, HTTP header names): bytes outside A-Z pass
// unchanged, whatever the locale.
#pragma once

#include <string>
#include <string_view>

namespace lancet {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

}  // namespace lancet
