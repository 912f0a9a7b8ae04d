// Byte-stream split (floats): within a chunk of n values of w bytes, byte j of value i
// is stored at j * n + i, so bytes of equal significance sit together and a general
// compressor that follows finds more to squeeze. Lance chunks 1024 32-bit or 512
// 64-bit values.
#pragma once

#include <cstdint>
#include <cstddef>

namespace lancet::encoding::structural::bss {

inline std::size_t chunk_values(std::size_t width) noexcept { return width == 4 ? 1024 : 512; }

inline void split(const std::uint8_t* in, std::size_t n, std::size_t width, std::uint8_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < width; ++j) out[j * n + i] = in[i * width + j];
}
inline void join(const std::uint8_t* in, std::size_t n, std::size_t width, std::uint8_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < width; ++j) out[i * width + j] = in[j * n + i];
}

}  // namespace lancet::encoding::structural::bss
