// Run-length encoding as Lance writes it: runs of equal fixed-width values (8/16/32/64
// bits) as two buffers, the run values and u8 run lengths (a run longer than 255 is cut
// into several). Mini-block chunks hold power-of-two value counts (but the last); as a
// block (e.g. definition levels in 2.2) the two buffers are framed as
// [u64 byte length of the values][values][lengths].
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding::structural::rle {

// Number of runs of equal `width`-byte values (each run counted once, whatever its length).
inline std::uint64_t count_runs(const std::uint8_t* data, std::size_t n, std::size_t width) noexcept {
  if (n == 0) return 0;
  std::uint64_t runs = 1;
  for (std::size_t i = 1; i < n; ++i) runs += std::memcmp(data + i * width, data + (i - 1) * width, width) != 0;
  return runs;
}

// Encoded size (values + lengths) of n values: each run costs ceil(len / 255) entries.
inline std::size_t encoded_size(const std::uint8_t* data, std::size_t n, std::size_t width) noexcept {
  std::size_t entries = 0, i = 0;
  while (i < n) {
    std::size_t j = i + 1;
    while (j < n && std::memcmp(data + j * width, data + i * width, width) == 0) ++j;
    entries += (j - i + 254) / 255;
    i = j;
  }
  return entries * (width + 1);
}

inline void encode(const std::uint8_t* data, std::size_t n, std::size_t width, aligned_buffer& values,
                   aligned_buffer& lengths) {
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i + 1;
    while (j < n && std::memcmp(data + j * width, data + i * width, width) == 0) ++j;
    for (std::size_t left = j - i; left > 0;) {
      const std::size_t run = left > 255 ? 255 : left;
      values.append(data + i * width, width);
      lengths.push_back(std::uint8_t(run));
      left -= run;
    }
    i = j;
  }
}

// Expands runs into exactly n values written to out (n * width bytes).
inline void decode(bytes_view values, bytes_view lengths, std::size_t n, std::size_t width, std::uint8_t* out) {
  if (values.size() % width != 0 || values.size() / width != lengths.size())
    throw corrupt_error("RLE buffers of " + std::to_string(values.size()) + " value bytes and " +
                        std::to_string(lengths.size()) + " run lengths do not match for " + std::to_string(width) +
                        "-byte values");
  std::size_t at = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const std::size_t len = lengths[r];
    if (len > n - at)
      throw corrupt_error("RLE runs expand past the " + std::to_string(n) + " values of the block");
    const std::uint8_t* v = values.data() + r * width;
    if (width == 1) {
      std::memset(out + at, v[0], len);
    } else {
      for (std::size_t k = 0; k < len; ++k) std::memcpy(out + (at + k) * width, v, width);
    }
    at += len;
  }
  if (at != n)
    throw corrupt_error("RLE runs hold " + std::to_string(at) + " values, " + std::to_string(n) + " expected");
}

// Block framing.
inline aligned_buffer encode_block(const std::uint8_t* data, std::size_t n, std::size_t width) {
  aligned_buffer values, lengths, out;
  encode(data, n, width, values, lengths);
  out.resize(8);
  le::store<std::uint64_t>(out.data(), values.size());
  out.append(values.view());
  out.append(lengths.view());
  return out;
}
inline void decode_block(bytes_view block, std::size_t n, std::size_t width, std::uint8_t* out) {
  if (block.size() < 8) throw corrupt_error("RLE block of " + std::to_string(block.size()) + " bytes has no header");
  const std::uint64_t vbytes = le::load<std::uint64_t>(block.data());
  if (vbytes > block.size() - 8) throw corrupt_error("RLE block header claims " + std::to_string(vbytes) + " value bytes");
  decode(block.subspan(8, std::size_t(vbytes)), block.subspan(8 + std::size_t(vbytes)), n, width, out);
}

}  // namespace lancet::encoding::structural::rle
