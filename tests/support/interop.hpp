// Helpers for interop tests that drive LanceDB through the Node scripts in
// tests/interop/: run a command and capture its output, temporary directories, the
// raw vector files the scripts read.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "f32_file.hpp"
#include "temp_dir.hpp"

#ifndef LANCET_SOURCE_ROOT
#error "LANCET_SOURCE_ROOT must name the source tree (tests/meson.build defines it)"
#endif

namespace lancet::testing {

inline std::filesystem::path source_root() { return LANCET_SOURCE_ROOT; }
inline std::filesystem::path interop_dir() { return source_root() / "tests" / "interop"; }

struct command_result {
  int status = -1;
  std::string out;
};

// Runs a shell command; stdout is captured, stderr passes through.
inline command_result run(const std::string& cmd) {
  command_result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + cmd);
  std::array<char, 65536> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// Runs `node tests/interop/<script> args...`; throws with the output when it fails.
inline std::string node(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = "node " + quote((interop_dir() / script).string());
  for (const auto& a : args) cmd += " " + quote(a);
  auto r = run(cmd);
  if (r.status != 0) throw std::runtime_error("'" + cmd + "' failed with status " + std::to_string(r.status) + ": " + r.out);
  return r.out;
}

// A fresh directory removed at the end of the scope (scratch_dir, with its path as a
// std::filesystem::path for the interop scripts' arguments).
class temp_dir : public scratch_dir {
 public:
  explicit temp_dir(const std::string& tag) : scratch_dir(tag) {}
  std::filesystem::path path() const { return scratch_dir::path(); }
};

// The data files of a dataset directory, sorted by name.
inline std::vector<std::filesystem::path> data_files(const std::filesystem::path& dataset) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dataset / "data"))
    if (e.path().extension() == ".lance") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lancet::testing
