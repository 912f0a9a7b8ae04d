// What a directory holds: the names of the entries under it, to compare before and after.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace lancet::testing {

// The entries of `dir`, sorted, as paths relative to it ('/'-separated); with
// `recursive`, those of its subdirectories too; with `files_only`, regular files only.
// None when `dir` does not exist.
inline std::vector<std::string> files_under(const std::filesystem::path& dir, bool recursive = false,
                                            bool files_only = false) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  auto add = [&](const fs::directory_entry& e) {
    if (!files_only || e.is_regular_file()) out.push_back(e.path().lexically_relative(dir).generic_string());
  };
  if (recursive)
    for (const auto& e : fs::recursive_directory_iterator(dir)) add(e);
  else
    for (const auto& e : fs::directory_iterator(dir)) add(e);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lancet::testing
