// Little-endian loads and stores on unaligned memory (Lance is little-endian on disk).
#pragma once

#include <boost/endian/conversion.hpp>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace lancet::le {

template <class T>
  requires std::is_arithmetic_v<T>
inline T load(const void* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (sizeof(T) > 1 && std::is_integral_v<T>) boost::endian::little_to_native_inplace(v);
  return v;
}

template <class T>
  requires std::is_arithmetic_v<T>
inline void store(void* p, T v) noexcept {
  if constexpr (sizeof(T) > 1 && std::is_integral_v<T>) boost::endian::native_to_little_inplace(v);
  std::memcpy(p, &v, sizeof(T));
}

static_assert(boost::endian::order::native == boost::endian::order::little,
              "lancet stores arrays zero-copy and assumes a little-endian host");

}  // namespace lancet::le
