// How the quantizers' codes lie in auxiliary.idx, which differs from the row-major
// codes the quantizers produce: PQ codes are transposed ([code byte][row]) and
// RaBitQ codes are packed in blocks of 32 rows for Lance's SIMD scan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lancet::index {

// RaBitQ codes are packed in blocks of this many rows.
inline constexpr std::size_t rabit_block_rows = 32;

// Row order inside the 16 nibble pairs of a packed RaBitQ block (Lance's PERM0, the
// SIMD shuffle layout).
inline constexpr std::size_t rabit_perm[16] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};

// Row-major codes [n][w] -> Lance's transposed layout [w][n] (PQ codes in storage and
// in the scan; also the tail of packed RaBitQ codes). Tiled by rows so both sides stay
// in cache.
inline void transpose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t tile = 64;
  for (std::size_t r0 = 0; r0 < n; r0 += tile) {
    const std::size_t r1 = std::min(n, r0 + tile);
    for (std::size_t c = 0; c < w; ++c)
      for (std::size_t r = r0; r < r1; ++r) out[c * n + r] = in[r * w + c];
  }
}

// The inverse of transpose_codes.
inline void untranspose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t tile = 64;
  for (std::size_t r0 = 0; r0 < n; r0 += tile) {
    const std::size_t r1 = std::min(n, r0 + tile);
    for (std::size_t c = 0; c < w; ++c)
      for (std::size_t r = r0; r < r1; ++r) out[r * w + c] = in[c * n + r];
  }
}

// RaBitQ codes of one partition ([n][w] row-major) to Lance's packed layout: each
// full block of 32 rows becomes w groups of 32 bytes; group i holds byte i of the 32
// rows as nibbles: byte j < 16 = low nibbles of rows perm[j] (low half) and
// perm[j] + 16 (high half); byte 16 + j = the same for the high nibbles. Rows after
// the last full block are transposed ([w][rest]).
inline void pack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t blocks = n / rabit_block_rows;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* rows = in + b * rabit_block_rows * w;
    std::uint8_t* dst = out + b * rabit_block_rows * w;
    for (std::size_t i = 0; i < w; ++i) {
      std::uint8_t* g = dst + i * rabit_block_rows;
      for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t a = rows[rabit_perm[j] * w + i];
        const std::uint8_t c = rows[(rabit_perm[j] + 16) * w + i];
        g[j] = std::uint8_t((a & 0x0F) | ((c & 0x0F) << 4));
        g[j + 16] = std::uint8_t((a >> 4) | (c & 0xF0));
      }
    }
  }
  const std::size_t done = blocks * rabit_block_rows;
  transpose_codes(in + done * w, n - done, w, out + done * w);
}
inline void unpack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t blocks = n / rabit_block_rows;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* src = in + b * rabit_block_rows * w;
    std::uint8_t* rows = out + b * rabit_block_rows * w;
    for (std::size_t i = 0; i < w; ++i) {
      const std::uint8_t* g = src + i * rabit_block_rows;
      for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t lo = g[j], hi = g[j + 16];
        rows[rabit_perm[j] * w + i] = std::uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
        rows[(rabit_perm[j] + 16) * w + i] = std::uint8_t((lo >> 4) | (hi & 0xF0));
      }
    }
  }
  const std::size_t done = blocks * rabit_block_rows;
  untranspose_codes(in + done * w, n - done, w, out + done * w);
}

}  // namespace lancet::index
