// General-purpose buffer compression with Lance's framing:
//   lz4  : [u32 uncompressed size][LZ4 block]            (lz4's "prepend size" form)
//   zstd : [u64 uncompressed size][zstd frame]           (a bare zstd frame also reads back)
// Lance's defaults: LZ4 has no level; zstd defaults to level 0 (zstd's default, 3).
#pragma once

#include <lz4.h>
#include <zstd.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural::general {

using scheme = pb::enc21::compression_scheme;

// The most a decompressor will allocate for one buffer (sizes come from the file).
inline std::uint64_t max_decompressed_bytes = std::uint64_t(2) << 30;

inline const char* scheme_name(scheme s) noexcept {
  switch (s) {
    case scheme::lz4: return "lz4";
    case scheme::zstd: return "zstd";
    default: return "unspecified";
  }
}

// Compresses `in` and appends the framed result to `out`.
inline void compress(scheme s, std::optional<std::int32_t> level, bytes_view in, aligned_buffer& out) {
  const std::size_t at = out.size();
  if (s == scheme::lz4) {
    if (in.size() > std::size_t(LZ4_MAX_INPUT_SIZE))
      throw invalid_input_error("a buffer of " + std::to_string(in.size()) + " bytes is too large for LZ4");
    const int bound = LZ4_compressBound(int(in.size()));
    out.resize(at + 4 + std::size_t(bound));
    le::store<std::uint32_t>(out.data() + at, std::uint32_t(in.size()));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                       reinterpret_cast<char*>(out.data() + at + 4), int(in.size()), bound);
    if (n <= 0 && !in.empty()) throw io_error("LZ4 compression failed");
    out.resize(at + 4 + std::size_t(n));
  } else if (s == scheme::zstd) {
    const std::size_t bound = ZSTD_compressBound(in.size());
    out.resize(at + 8 + bound);
    le::store<std::uint64_t>(out.data() + at, std::uint64_t(in.size()));
    const std::size_t n = ZSTD_compress(out.data() + at + 8, bound, in.data(), in.size(), level.value_or(0));
    if (ZSTD_isError(n)) throw io_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    out.resize(at + 8 + n);
  } else {
    throw invalid_input_error("unknown general compression scheme");
  }
}

// Decompresses one framed buffer, appending to `out`.
inline void decompress(scheme s, bytes_view in, aligned_buffer& out) {
  if (s == scheme::lz4) {
    if (in.size() < 4) throw corrupt_error("LZ4 buffer of " + std::to_string(in.size()) + " bytes has no size prefix");
    const std::uint32_t size = le::load<std::uint32_t>(in.data());
    if (size > std::uint64_t(std::numeric_limits<int>::max()) || size > max_decompressed_bytes ||
        (in.size() - 4) * 255 + 16 < size)  // LZ4 expands at most ~255x
      throw corrupt_error("LZ4 buffer claims " + std::to_string(size) + " bytes");
    const std::size_t at = out.size();
    out.resize(at + size);
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + 4),
                                      reinterpret_cast<char*>(out.data() + at), int(in.size() - 4), int(size));
    if (n < 0 || std::uint32_t(n) != size)
      throw corrupt_error("LZ4 buffer does not decompress to its " + std::to_string(size) + " bytes");
    return;
  }
  if (s != scheme::zstd) throw corrupt_error("unknown general compression scheme");
  if (in.empty()) return;
  bytes_view frame = in;
  std::uint64_t size = 0;
  bool prefixed = true;
  // A bare zstd frame starts with the magic number and has a clear reserved bit.
  if (in.size() >= 5 && le::load<std::uint32_t>(in.data()) == 0xFD2FB528u && (in[4] & 0x10) == 0) prefixed = false;
  if (prefixed) {
    if (in.size() < 8) throw corrupt_error("zstd buffer of " + std::to_string(in.size()) + " bytes has no size prefix");
    size = le::load<std::uint64_t>(in.data());
    frame = in.subspan(8);
  } else {
    const auto c = ZSTD_getFrameContentSize(in.data(), in.size());
    if (c == ZSTD_CONTENTSIZE_ERROR || c == ZSTD_CONTENTSIZE_UNKNOWN)
      throw corrupt_error("zstd frame without a known content size");
    size = c;
  }
  if (size > max_decompressed_bytes)
    throw corrupt_error("zstd buffer claims " + std::to_string(size) + " bytes, more than lancet decompresses");
  // A zstd block yields at most 128 KiB and takes at least 4 bytes (3 of header, 1 of
  // RLE byte), so no frame expands more than 32768x: a larger claim is a corrupt size,
  // refused before allocating it.
  if (size > (std::uint64_t(frame.size()) / 4 + 1) * (std::uint64_t(1) << 17))
    throw corrupt_error("zstd buffer of " + std::to_string(frame.size()) + " bytes claims " + std::to_string(size) +
                        " bytes, more than zstd can expand to");
  const std::size_t at = out.size();
  out.resize(at + std::size_t(size));
  const std::size_t n = ZSTD_decompress(out.data() + at, std::size_t(size), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size)
    throw corrupt_error("zstd buffer does not decompress to its " + std::to_string(size) + " bytes");
}

}  // namespace lancet::encoding::structural::general
