// by_width: calls a generic lambda with a value of the unsigned integer type that is
// `bits` wide (8/16/32, anything else 64), so a loop over words is instantiated once per
// word width. Shared by the encoders and the decoders.
#pragma once

#include <cstdint>

namespace lancet::encoding::detail {

template <class F>
inline decltype(auto) by_width(std::uint64_t bits, F&& f) {
  switch (bits) {
    case 8: return f(std::uint8_t{});
    case 16: return f(std::uint16_t{});
    case 32: return f(std::uint32_t{});
    default: return f(std::uint64_t{});
  }
}

}  // namespace lancet::encoding::detail
