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

namespace detail {
// Copies codes between row-major [n][w] and transposed [w][n] (ToTransposed: the
// first into the second), tiled by rows so both sides stay in cache.
template <bool ToTransposed>
inline void copy_codes_tiled(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t tile = 64;
  for (std::size_t r0 = 0; r0 < n; r0 += tile) {
    const std::size_t r1 = std::min(n, r0 + tile);
    for (std::size_t c = 0; c < w; ++c)
      for (std::size_t r = r0; r < r1; ++r) {
        if constexpr (ToTransposed) out[c * n + r] = in[r * w + c];
        else out[r * w + c] = in[c * n + r];
      }
  }
}

// Packs (Pack) or unpacks RaBitQ codes, as pack_rabit_codes below describes. Rows
// perm[j] and perm[j] + 16 of a block trade nibbles with bytes j and 16 + j of its
// group: (a, c) -> (a's low | c's low << 4, a's high >> 4 | c's high), an exchange
// that is its own inverse, so packing and unpacking differ only in which side is read.
template <bool Pack>
inline void copy_rabit_blocks(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t blocks = n / rabit_block_rows;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t base = b * rabit_block_rows * w;
    for (std::size_t i = 0; i < w; ++i)
      for (std::size_t j = 0; j < 16; ++j) {
        const std::size_t row_a = base + rabit_perm[j] * w + i, row_c = base + (rabit_perm[j] + 16) * w + i;
        const std::size_t byte_a = base + i * rabit_block_rows + j, byte_c = byte_a + 16;
        const std::uint8_t a = in[Pack ? row_a : byte_a], c = in[Pack ? row_c : byte_c];
        out[Pack ? byte_a : row_a] = std::uint8_t((a & 0x0F) | ((c & 0x0F) << 4));
        out[Pack ? byte_c : row_c] = std::uint8_t((a >> 4) | (c & 0xF0));
      }
  }
  const std::size_t done = blocks * rabit_block_rows;
  copy_codes_tiled<Pack>(in + done * w, n - done, w, out + done * w);
}
}  // namespace detail

// Row-major codes [n][w] -> Lance's transposed layout [w][n] (PQ codes in storage and
// in the scan; also the tail of packed RaBitQ codes).
inline void transpose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  detail::copy_codes_tiled<true>(in, n, w, out);
}

// The inverse of transpose_codes.
inline void untranspose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  detail::copy_codes_tiled<false>(in, n, w, out);
}

// RaBitQ codes of one partition ([n][w] row-major) to Lance's packed layout: each
// full block of 32 rows becomes w groups of 32 bytes; group i holds byte i of the 32
// rows as nibbles: byte j < 16 = low nibbles of rows perm[j] (low half) and
// perm[j] + 16 (high half); byte 16 + j = the same for the high nibbles. Rows after
// the last full block are transposed ([w][rest]).
inline void pack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  detail::copy_rabit_blocks<true>(in, n, w, out);
}
inline void unpack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  detail::copy_rabit_blocks<false>(in, n, w, out);
}

}  // namespace lancet::index

namespace lancet::index::pq {

// The centroid index of sub-vector s in a row-major code row (4-bit codes: sub-vector
// 2i in the low nibble of byte i, 2i + 1 in the high one).
inline std::uint32_t code_of(const std::uint8_t* code_row, std::uint32_t num_bits, std::size_t s) noexcept {
  if (num_bits == 8) return code_row[s];
  const std::uint8_t b = code_row[s / 2];
  return s % 2 == 0 ? (b & 0x0fu) : (b >> 4);
}

}  // namespace lancet::index::pq
