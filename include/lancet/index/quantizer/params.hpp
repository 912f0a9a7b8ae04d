// What an IVF index stores about its quantizer, as plain data shared by the
// quantizers (index/quantizer/) and the index file layout (ivf/storage_writer.hpp, quantizer/traits.hpp):
//
//   matrix            (matrix.hpp) a dense row-major matrix of f16/f32/f64/u8
//                     (centroids, PQ codebooks, RaBitQ rotation matrices)
//   flat_params ...   the quantizer's parameters, one struct per kind in its folder
//                     (flat/, pq/, sq/, rabitq/), one variant of them; the file
//                     writer turns them into auxiliary.idx's `storage_metadata` JSON
//                     and global buffers exactly as Lance 12 does
//   partition_data    the rows of one IVF partition: row ids and, row-aligned, the
//                     codes and factors, always row-major (the writer transposes PQ
//                     codes and packs RaBitQ codes into Lance's on-disk layout)
//
// Code layouts (one row = one vector):
//   flat : the raw vector, dimension elements of flat_params::element
//   PQ   : num_sub_vectors bytes (8 bits), or num_sub_vectors / 2 bytes (4 bits: the
//          code of sub-vector 2i in the low nibble of byte i, 2i+1 in the high one)
//   SQ   : dimension bytes
//   RQ   : code_dim * 1 / 8 bytes: the sign bit of rotated dimension j is bit j % 8 of
//          byte j / 8; plus the per-row add / scale / error factors; with num_bits > 1
//          also Lance's `__blocked_ex_codes` bytes and the two `_ex` factors (stored
//          as given)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/config.hpp"
#include "lancet/index/quantizer/flat/params.hpp"
#include "lancet/index/quantizer/matrix.hpp"
#include "lancet/index/quantizer/pq/params.hpp"
#include "lancet/index/quantizer/rabitq/params.hpp"
#include "lancet/index/quantizer/sq/params.hpp"

// A program registers quantizers of its own (docs/quantizers.md) by defining
// LANCET_QUANTIZER_EXTENSION, for every translation unit, as a header that declares
// their parameters and defines LANCET_EXTENSION_QUANTIZERS (", my_params, ...") and
// LANCET_EXTENSION_QUANTIZER_TRAITS (the header of their quantizer_traits, which
// quantizer/traits.hpp includes). The compiled library is built without them.
#ifdef LANCET_QUANTIZER_EXTENSION
#if defined(LANCET_COMPILED)
#error "LANCET_QUANTIZER_EXTENSION needs header-only mode (the compiled library knows only lancet's quantizers)"
#endif
#include LANCET_QUANTIZER_EXTENSION
#endif
#ifndef LANCET_EXTENSION_QUANTIZERS
#define LANCET_EXTENSION_QUANTIZERS
#endif

namespace lancet::index {

// Every quantizer, in the order model files number them: adding one is its folder
// (quantizer/<name>/: params, codec, scanner, traits; quantizer/contract.hpp says what
// they hold) plus its entry here and its traits' include in quantizer/traits.hpp.
using quantizer_params = std::variant<flat_params, pq_params, sq_params, rq_params LANCET_EXTENSION_QUANTIZERS>;

// Bytes per row of the code column.
inline std::size_t code_bytes(const quantizer_params& q) {
  return std::visit([](const auto& p) { return std::size_t(p.code_bytes()); }, q);
}

// Bytes per row of RaBitQ's `__blocked_ex_codes` (codes of more than 1 bit), else 0.
inline std::size_t ex_code_bytes(const quantizer_params& q) {
  const auto* r = std::get_if<rq_params>(&q);
  return r && r->num_bits > 1 ? r->ex_code_bytes : 0;
}

// The rows of one partition, borrowed. Every span has one entry per row (codes and
// ex_codes: code_bytes / ex_code_bytes per row), row-major.
struct partition_data {
  std::span<const std::uint64_t> row_ids;
  bytes_view codes;
  std::span<const float> add_factors, scale_factors, error_factors;  // RQ
  bytes_view ex_codes;                                                // RQ, num_bits > 1
  std::span<const float> add_factors_ex, scale_factors_ex;            // RQ, num_bits > 1
  std::size_t size() const noexcept { return row_ids.size(); }
};

// The rows of one partition as read back from a file (codes row-major again).
struct partition_contents {
  std::vector<std::uint64_t> row_ids;
  aligned_buffer codes;
  std::vector<float> add_factors, scale_factors, error_factors;
  aligned_buffer ex_codes;
  std::vector<float> add_factors_ex, scale_factors_ex;

  std::size_t size() const noexcept { return row_ids.size(); }
  partition_data view() const noexcept {
    return {row_ids, codes.view(), add_factors, scale_factors, error_factors, ex_codes.view(), add_factors_ex,
            scale_factors_ex};
  }
};

}  // namespace lancet::index
