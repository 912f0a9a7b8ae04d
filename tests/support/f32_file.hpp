// Raw little-endian float32 files: the vectors and queries the Node scripts read
// (--vectors, --queries).
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace lancet::testing {

inline void write_f32(const std::filesystem::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  if (!out.good()) throw std::runtime_error("cannot write " + p.string());
}

}  // namespace lancet::testing
