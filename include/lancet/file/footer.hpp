// The 40-byte footer that ends every Lance v2 file, and the two offset tables
// (column metadata, global buffers) it points at.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::file {

inline constexpr char magic[4] = {'L', 'A', 'N', 'C'};
inline constexpr std::size_t footer_size = 40;

struct footer {
  std::uint64_t column_meta_start = 0;     // first column metadata message
  std::uint64_t column_meta_offsets = 0;   // table of (position, size) per column
  std::uint64_t global_buff_offsets = 0;   // table of (position, size) per global buffer
  std::uint32_t num_global_buffers = 0;
  std::uint32_t num_columns = 0;
  std::uint16_t major = 0;
  std::uint16_t minor = 0;

  void encode(std::uint8_t* out) const noexcept {
    le::store(out + 0, column_meta_start);
    le::store(out + 8, column_meta_offsets);
    le::store(out + 16, global_buff_offsets);
    le::store(out + 24, num_global_buffers);
    le::store(out + 28, num_columns);
    le::store(out + 32, major);
    le::store(out + 34, minor);
    out[36] = 'L'; out[37] = 'A'; out[38] = 'N'; out[39] = 'C';
  }

  // Parses and checks the footer of a file of `file_size` bytes: every table must lie
  // inside the file, before the footer.
  static footer decode(bytes_view tail, std::uint64_t file_size) {
    if (tail.size() != footer_size || file_size < footer_size)
      throw corrupt_error("file of " + std::to_string(file_size) + " bytes is too short for a Lance footer");
    const auto* p = tail.data();
    if (p[36] != 'L' || p[37] != 'A' || p[38] != 'N' || p[39] != 'C')
      throw corrupt_error("no LANC magic at the end of the file (offset " + std::to_string(file_size - 4) + ")");
    footer f;
    f.column_meta_start = le::load<std::uint64_t>(p);
    f.column_meta_offsets = le::load<std::uint64_t>(p + 8);
    f.global_buff_offsets = le::load<std::uint64_t>(p + 16);
    f.num_global_buffers = le::load<std::uint32_t>(p + 24);
    f.num_columns = le::load<std::uint32_t>(p + 28);
    f.major = le::load<std::uint16_t>(p + 32);
    f.minor = le::load<std::uint16_t>(p + 34);
    const std::uint64_t body = file_size - footer_size;
    auto table_ok = [&](std::uint64_t start, std::uint64_t entries) {
      return start <= body && entries <= (body - start) / 16;
    };
    if (!table_ok(f.column_meta_offsets, f.num_columns))
      throw corrupt_error("column metadata offset table at " + std::to_string(f.column_meta_offsets) + " with " +
                          std::to_string(f.num_columns) + " entries runs past the footer");
    if (!table_ok(f.global_buff_offsets, f.num_global_buffers))
      throw corrupt_error("global buffer offset table at " + std::to_string(f.global_buff_offsets) + " with " +
                          std::to_string(f.num_global_buffers) + " entries runs past the footer");
    if (f.column_meta_start > body)
      throw corrupt_error("column metadata start " + std::to_string(f.column_meta_start) + " is past the footer");
    return f;
  }
};

// One (position, size) entry of an offset table.
struct region {
  std::uint64_t position = 0;
  std::uint64_t size = 0;
  friend bool operator==(const region&, const region&) = default;
};

// An offset table's bytes: (u64 position, u64 size) per entry.
inline std::string encode_offset_table(const std::vector<region>& rs) {
  std::string t(rs.size() * 16, '\0');
  for (std::size_t i = 0; i < rs.size(); ++i) {
    le::store(t.data() + 16 * i, rs[i].position);
    le::store(t.data() + 16 * i + 8, rs[i].size);
  }
  return t;
}

inline std::vector<region> decode_offset_table(bytes_view table, std::uint32_t entries, std::uint64_t file_size,
                                              const char* what) {
  if (table.size() < std::size_t(entries) * 16)
    throw corrupt_error(std::string(what) + " offset table is truncated");
  std::vector<region> out(entries);
  for (std::uint32_t i = 0; i < entries; ++i) {
    out[i].position = le::load<std::uint64_t>(table.data() + 16 * i);
    out[i].size = le::load<std::uint64_t>(table.data() + 16 * i + 8);
    if (out[i].position > file_size || out[i].size > file_size - out[i].position)
      throw corrupt_error(std::string(what) + " " + std::to_string(i) + " at " + std::to_string(out[i].position) +
                          " (+" + std::to_string(out[i].size) + " bytes) lies outside the file of " +
                          std::to_string(file_size) + " bytes");
  }
  return out;
}

}  // namespace lancet::file
