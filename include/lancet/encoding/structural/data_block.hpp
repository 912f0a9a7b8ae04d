// The leaf values of a structural page, between Arrow arrays and compression: the
// values that have a slot (nulls included, null and empty lists excluded), without
// validity (which lives in the definition levels).
//   fixed            : num_values values of bits_per_value bits (1 = a bitmap, LSB first)
//   variable         : num_values + 1 offsets (32 or 64 bits, the first is 0) into data
//   fixed_size_list  : rows of dimension items (outermost layer first), each layer with an
//                      optional item validity bitmap; the innermost items are fixed width
//                      values in data
//   empty            : no values (all-null pages, null type)
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding::structural {

struct fsl_layer {
  std::uint64_t dimension = 0;
  bool has_validity = false;
  shared_bytes validity;  // one bit per item of this layer (rows x cumulative dimension)
};

struct data_block {
  enum class kind : std::uint8_t { empty, fixed, variable, fixed_size_list };
  kind k = kind::empty;
  std::uint64_t num_values = 0;
  std::uint64_t bits_per_value = 0;  // fixed, fixed_size_list (innermost items)
  shared_bytes data;
  shared_bytes offsets;               // variable
  std::uint32_t bits_per_offset = 0;  // variable: 32 or 64
  std::vector<fsl_layer> fsl;         // fixed_size_list

  std::uint64_t offset(std::uint64_t i) const noexcept {
    return bits_per_offset == 64 ? le::load<std::uint64_t>(offsets.data() + 8 * i)
                                 : std::uint64_t(le::load<std::uint32_t>(offsets.data() + 4 * i));
  }
  std::uint64_t value_bytes() const noexcept { return num_values ? offset(num_values) : 0; }
  // Items per row of a fixed-size list (product of the dimensions).
  std::uint64_t items_per_row() const noexcept {
    std::uint64_t d = 1;
    for (const auto& l : fsl) d *= l.dimension;
    return d;
  }
  // Bytes of raw data (what Lance calls data_size).
  std::uint64_t data_size() const noexcept {
    switch (k) {
      case kind::fixed: return (num_values * bits_per_value + 7) / 8;
      case kind::variable: return value_bytes() + offsets.size();
      case kind::fixed_size_list: return (num_values * items_per_row() * bits_per_value + 7) / 8;
      default: return 0;
    }
  }

  static data_block fixed(std::uint64_t n, std::uint64_t bits, shared_bytes data) {
    data_block b;
    b.k = kind::fixed;
    b.num_values = n;
    b.bits_per_value = bits;
    b.data = std::move(data);
    return b;
  }
  static data_block variable(std::uint64_t n, std::uint32_t bits_per_offset, shared_bytes offsets, shared_bytes data) {
    data_block b;
    b.k = kind::variable;
    b.num_values = n;
    b.bits_per_offset = bits_per_offset;
    b.offsets = std::move(offsets);
    b.data = std::move(data);
    return b;
  }
};

// The most bytes a decoder allocates for one buffer whose size comes from the file
// (decompressed buffers, expanded runs and constants, unpacked bits). Anything larger
// is reported as corrupt rather than attempted; raise it for files with larger pages.
inline std::uint64_t max_decoded_buffer_bytes = std::uint64_t(2) << 30;

inline void check_alloc(std::uint64_t bytes, const std::string& what) {
  if (bytes > max_decoded_buffer_bytes)
    throw corrupt_error(what + ": decoding needs " + std::to_string(bytes) + " bytes, more than the limit of " +
                        std::to_string(max_decoded_buffer_bytes));
}

// Multiplication that refuses to overflow (sizes derived from file contents).
inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    throw corrupt_error(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows");
  return a * b;
}

// Checks that n + 1 offsets are non-decreasing, start anywhere and end within `limit`.
inline void check_offsets(const data_block& b, std::uint64_t limit, const char* what) {
  std::uint64_t prev = 0;
  for (std::uint64_t i = 0; i <= b.num_values; ++i) {
    const auto o = b.offset(i);
    if (o < prev || o > limit)
      throw corrupt_error(std::string(what) + ": offset " + std::to_string(o) + " at " + std::to_string(i) +
                          " is out of order or past " + std::to_string(limit) + " bytes");
    prev = o;
  }
}

}  // namespace lancet::encoding::structural
