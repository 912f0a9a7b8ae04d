// Bit-packing in Lance's exact layout: the FastLanes "1024-value" transposed layout
// (Lance's lance-bitpacking crate). 1024 values of a T-bit word type are packed to
// W bits each into 1024 * W / T words. Lane l (of 1024 / T lanes) holds the values at
// index(row, l) = ORDER[row / 8] * 16 + (row % 8) * 128 + l for rows 0..T-1, their bits
// laid down LSB first one after another in the lane's words, which sit at word
// positions lanes * k + l.
//
// Two framings use it:
//   inline   (mini-block values): per chunk of 1024 values [T bit width][packed words];
//            the last chunk is zero-padded to 1024 values.
//   out-of-line (block, e.g. rep/def levels): one width for the page; whole chunks of
//            packed words; a runt tail is either padded to 1024 and packed or stored
//            raw, whichever is smaller (the reader infers which from the length).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding::structural::bitpack {

inline constexpr std::size_t chunk_values = 1024;
inline constexpr unsigned fl_order[8] = {0, 4, 2, 6, 1, 5, 3, 7};

template <class T>
constexpr unsigned word_bits = unsigned(sizeof(T) * 8);

// Words of T one packed chunk of 1024 values at `width` bits takes.
template <class T>
constexpr std::size_t packed_words(unsigned width) noexcept {
  return chunk_values * width / word_bits<T>;
}

}  // namespace lancet::encoding::structural::bitpack

namespace lancet::encoding::detail {

template <class T, unsigned W>
inline void unpack_fixed(const T* in, T* out) noexcept {
  constexpr unsigned B = structural::bitpack::word_bits<T>;
  constexpr unsigned lanes = 1024 / B;
  if constexpr (W == 0) {
    std::fill(out, out + 1024, T(0));
  } else {
    constexpr T mask = W == B ? T(~T(0)) : T((T(1) << (W % B)) - 1);
    // Rows outside, lanes inside: a row's lanes read contiguous words and write
    // contiguous values, so the inner loop vectorizes.
    for (unsigned row = 0; row < B; ++row) {
      const unsigned bit = row * W;
      const unsigned word = bit / B, shift = bit % B;
      const T* lo = in + lanes * word;
      T* dst = out + structural::bitpack::fl_order[row / 8] * 16 + (row % 8) * 128;
      if (shift + W > B) {
        const T* hi = lo + lanes;
        for (unsigned lane = 0; lane < lanes; ++lane)
          dst[lane] = T(T(T(lo[lane] >> shift) | T(hi[lane] << (B - shift))) & mask);
      } else {
        for (unsigned lane = 0; lane < lanes; ++lane) dst[lane] = T(T(lo[lane] >> shift) & mask);
      }
    }
  }
}

template <class T, unsigned... Ws>
inline void unpack_dispatch(unsigned w, const T* in, T* out, std::integer_sequence<unsigned, Ws...>) noexcept {
  (void)((w == Ws ? (unpack_fixed<T, Ws>(in, out), true) : false) || ...);
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural::bitpack {

// Packs exactly 1024 values to `width` bits (width <= bits of T) into packed_words<T>(width) words.
// One loop for every width (not a copy per width: that was ~100 functions of compile
// time and code for each program): rows outside, lanes inside, so that the inner loops
// run over contiguous values and words and vectorize with the width in a register.
template <class T>
inline void pack(unsigned width, const T* in, T* out) noexcept {
  static_assert(std::is_unsigned_v<T>);
  constexpr unsigned B = word_bits<T>;
  constexpr unsigned lanes = 1024 / B;
  if (width == 0 || width > B) return;  // wider than T: nothing to pack (callers check)
  const T mask = width == B ? T(~T(0)) : T((T(1) << width) - 1);
  alignas(64) T acc[lanes] = {};
  for (unsigned row = 0; row < B; ++row) {
    const T* src = in + fl_order[row / 8] * 16 + (row % 8) * 128;
    const unsigned bit = row * width;
    const unsigned shift = bit % B;
    for (unsigned lane = 0; lane < lanes; ++lane) acc[lane] = T(acc[lane] | T(T(src[lane] & mask) << shift));
    if (shift + width >= B) {
      // The lanes' words are full: store them and keep the bits that spilled over.
      T* dst = out + lanes * (bit / B);
      if (shift + width > B) {
        const unsigned back = B - shift;
        for (unsigned lane = 0; lane < lanes; ++lane) {
          dst[lane] = acc[lane];
          acc[lane] = T(T(src[lane] & mask) >> back);
        }
      } else {
        for (unsigned lane = 0; lane < lanes; ++lane) {
          dst[lane] = acc[lane];
          acc[lane] = 0;
        }
      }
    }
  }
}
// Unpacks packed_words<T>(width) words into exactly 1024 values.
template <class T>
inline void unpack(unsigned width, const T* in, T* out) noexcept {
  static_assert(std::is_unsigned_v<T>);
  detail::unpack_dispatch<T>(width, in, out, std::make_integer_sequence<unsigned, word_bits<T> + 1>{});
}

// Bits needed for the largest value (an OR of all values), 0 for all zeros.
template <class T>
inline unsigned needed_width(const T* v, std::size_t n) noexcept {
  T acc = 0;
  for (std::size_t i = 0; i < n; ++i) acc = T(acc | v[i]);
  return unsigned(std::bit_width(acc));
}

// ---- inline framing ---------------------------------------------------------------

// Appends one inline chunk ([T width][packed]) for up to 1024 values (zero-padded).
template <class T>
inline void append_inline_chunk(const T* values, std::size_t n, aligned_buffer& out) {
  alignas(64) T tmp[chunk_values];
  const T* src = values;
  if (n < chunk_values) {
    std::memcpy(tmp, values, n * sizeof(T));
    std::fill(tmp + n, tmp + chunk_values, T(0));
    src = tmp;
  }
  const unsigned w = needed_width(src, chunk_values);
  const std::size_t words = packed_words<T>(w);
  const std::size_t at = out.size();
  out.resize(at + (1 + words) * sizeof(T));
  T header = T(w);
  std::memcpy(out.data() + at, &header, sizeof(T));
  alignas(64) T packed[chunk_values];
  pack<T>(w, src, packed);
  std::memcpy(out.data() + at + sizeof(T), packed, words * sizeof(T));
}

// Decodes one inline chunk into `n` (<= 1024) values appended to `out` (as bytes).
template <class T>
inline void decode_inline_chunk(bytes_view chunk, std::size_t n, std::uint8_t* out) {
  if (n > chunk_values) throw corrupt_error("inline bit-packed chunk of " + std::to_string(n) + " values (at most 1024)");
  if (chunk.size() < sizeof(T)) throw corrupt_error("inline bit-packed chunk shorter than its width header");
  const std::uint64_t w = le::load<T>(chunk.data());
  if (w > word_bits<T>)
    throw corrupt_error("inline bit-packed chunk of width " + std::to_string(w) + " for " +
                        std::to_string(word_bits<T>) + "-bit values");
  const std::size_t words = packed_words<T>(unsigned(w));
  if (chunk.size() < (1 + words) * sizeof(T))
    throw corrupt_error("inline bit-packed chunk of " + std::to_string(chunk.size()) + " bytes, width " +
                        std::to_string(w) + " needs " + std::to_string((1 + words) * sizeof(T)));
  alignas(64) T packed[chunk_values];
  alignas(64) T values[chunk_values];
  std::memcpy(packed, chunk.data() + sizeof(T), words * sizeof(T));
  unpack<T>(unsigned(w), packed, values);
  std::memcpy(out, values, n * sizeof(T));
}

// ---- out-of-line framing ----------------------------------------------------------

template <class T>
inline aligned_buffer encode_out_of_line(const T* values, std::size_t n, unsigned width) {
  constexpr unsigned B = word_bits<T>;
  const std::size_t words = packed_words<T>(width);
  const std::size_t whole = n / chunk_values, tail = n % chunk_values;
  aligned_buffer out;
  out.reserve((whole + 1) * words * sizeof(T));
  alignas(64) T packed[chunk_values];
  auto put_chunk = [&](const T* src) {
    pack<T>(width, src, packed);
    out.append(packed, words * sizeof(T));
  };
  for (std::size_t c = 0; c < whole; ++c) put_chunk(values + c * chunk_values);
  if (tail) {
    const std::size_t savings = std::size_t(B > width ? B - width : 0) * tail;
    const std::size_t padding_cost = std::size_t(width) * (chunk_values - tail);
    if (padding_cost < savings) {
      alignas(64) T tmp[chunk_values] = {};
      std::memcpy(tmp, values + whole * chunk_values, tail * sizeof(T));
      put_chunk(tmp);
    } else {
      out.append(values + whole * chunk_values, tail * sizeof(T));
    }
  }
  return out;
}

template <class T>
inline void decode_out_of_line(bytes_view data, std::size_t n, unsigned width, std::uint8_t* out) {
  if (width > word_bits<T>) throw corrupt_error("out-of-line bit-packing width " + std::to_string(width) + " too wide");
  const std::size_t words = packed_words<T>(width);
  const std::size_t whole = n / chunk_values, tail = n % chunk_values;
  const std::size_t full_bytes = whole * words * sizeof(T);
  const std::size_t raw_tail = full_bytes + tail * sizeof(T);
  const std::size_t packed_tail = full_bytes + (tail ? words * sizeof(T) : 0);
  const bool tail_raw = tail > 0 && data.size() == raw_tail;
  if (!tail_raw && data.size() < packed_tail)
    throw corrupt_error("out-of-line bit-packed buffer of " + std::to_string(data.size()) + " bytes for " +
                        std::to_string(n) + " values at width " + std::to_string(width));
  alignas(64) T packed[chunk_values];
  alignas(64) T vals[chunk_values];
  for (std::size_t c = 0; c < whole; ++c) {
    std::memcpy(packed, data.data() + c * words * sizeof(T), words * sizeof(T));
    unpack<T>(width, packed, vals);
    std::memcpy(out + c * chunk_values * sizeof(T), vals, chunk_values * sizeof(T));
  }
  if (tail) {
    if (tail_raw) {
      std::memcpy(out + whole * chunk_values * sizeof(T), data.data() + full_bytes, tail * sizeof(T));
    } else {
      std::memcpy(packed, data.data() + full_bytes, words * sizeof(T));
      unpack<T>(width, packed, vals);
      std::memcpy(out + whole * chunk_values * sizeof(T), vals, tail * sizeof(T));
    }
  }
}

}  // namespace lancet::encoding::structural::bitpack
