// Writing full-zip pages (values too wide for mini-blocks: vectors, long strings):
// per level slot a control word (rep << bits_def | def; 1, 2 or 4 bytes; none without
// levels), then for a visible slot its value: fixed-width bytes (item validity bytes
// first for fixed-size lists with item nulls), or, for variable width, a length and the
// (optionally compressed) bytes when the value is valid. Buffers: [zipped values] and,
// with repetition or variable widths, a repetition index of rows + 1 byte offsets whose
// width (1/2/4/8 bytes) holds the buffer's size bound, as Lance writes it.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/compression/general.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/miniblock.hpp"
#include "lancet/encoding/structural/page_plan.hpp"
#include "lancet/encoding/structural/repdef.hpp"

namespace lancet::encoding::structural {

struct fullzip_page {
  std::vector<shared_bytes> buffers;
  enc21::full_zip_layout layout;
};

inline fullzip_page encode_fullzip(const data_block& values, const level_scheme& s, const std::vector<std::uint16_t>& rep,
                                   const std::vector<std::uint16_t>& def, const per_value_codec& codec) {
  fullzip_page out;
  auto& z = out.layout;
  z.layers = s.layers;
  std::uint16_t max_r = 0, max_d = 0;
  for (auto r : rep) max_r = std::max(max_r, r);
  for (auto d : def) max_d = std::max(max_d, d);
  const unsigned bits_rep = rep.empty() ? 0 : unsigned(std::bit_width(unsigned(max_r)));
  const unsigned bits_def = def.empty() ? 0 : unsigned(std::bit_width(unsigned(max_d)));
  const unsigned total = bits_rep + bits_def;
  const std::size_t cw = total == 0 ? 0 : total <= 8 ? 1 : total <= 16 ? 2 : 4;
  z.bits_rep = bits_rep;
  z.bits_def = bits_def;
  const std::size_t slots = rep.empty() && def.empty() ? std::size_t(values.num_values) : std::max(rep.size(), def.size());
  if (slots > 0xFFFFFFFFull || values.num_values > 0xFFFFFFFFull)
    throw invalid_input_error("a full-zip page holds at most 2^32 values");
  z.num_items = std::uint32_t(rep.empty() ? values.num_values : slots);
  z.num_visible_items = std::uint32_t(values.num_values);

  // Value bytes.
  const bool fixed = values.k != data_block::kind::variable;
  std::uint64_t vbytes = 0;
  std::vector<std::uint64_t> validity_bytes;  // fsl layers with item validity
  if (fixed) {
    if (values.k == data_block::kind::fixed_size_list) {
      std::uint64_t cum = 1;
      compressive e = enc::flat(values.bits_per_value);
      for (const auto& l : values.fsl) {
        cum *= l.dimension;
        validity_bytes.push_back(l.has_validity ? (cum + 7) / 8 : 0);
      }
      if ((cum * values.bits_per_value) % 8) throw unsupported_error("full-zip fixed-size lists of sub-byte items");
      vbytes = cum * values.bits_per_value / 8;
      for (auto v : validity_bytes) vbytes += v;
      z.value_compression = enc::fixed_size_lists(std::move(e), values.fsl);
    } else {
      if (values.bits_per_value % 8) throw unsupported_error("full-zip pages of sub-byte values");
      vbytes = values.bits_per_value / 8;
      z.value_compression = enc::flat(values.bits_per_value);
    }
    if (vbytes * 8 > 0xFFFFFFFFull) throw invalid_input_error("values too wide for a full-zip page");
    z.bits_per_value = std::uint32_t(vbytes * 8);
  } else {
    z.bits_per_offset = values.bits_per_offset;
  }

  // Variable values, compressed value by value.
  std::optional<fsst::symbol_table> table;
  const bool fsst_on = !fixed && codec.k == per_value_codec::kind::fsst && values.value_bytes() >= fsst::least_input_size;
  if (fsst_on) {
    if (values.bits_per_offset == 64)
      table = fsst::symbol_table::train(reinterpret_cast<const std::uint64_t*>(values.offsets.data()), std::size_t(values.num_values), values.data.data());
    else
      table = fsst::symbol_table::train(reinterpret_cast<const std::uint32_t*>(values.offsets.data()), std::size_t(values.num_values), values.data.data());
  }
  if (!fixed) {
    compressive e = enc::variable(values.bits_per_offset);
    if (codec.k == per_value_codec::kind::fsst) {
      enc21::fsst f;
      f.symbol_table = table ? table->serialize() : fsst::symbol_table().serialize();
      f.values = std::move(e);
      e = compressive{std::move(f)};
    } else if (codec.k == per_value_codec::kind::general) {
      e = enc::general(codec.scheme, codec.level, std::move(e));
    }
    z.value_compression = std::move(e);
  }

  const std::uint64_t lbytes = fixed ? 0 : values.bits_per_offset / 8;
  // Fixed-width values without levels or item validity: the zipped buffer is the values.
  bool any_validity = false;
  for (const auto& l : values.fsl) any_validity |= l.has_validity;
  if (fixed && cw == 0 && !any_validity) {
    out.buffers.push_back(values.data.slice(0, std::size_t(values.num_values * vbytes)));
    return out;
  }
  const std::uint64_t bound = fixed ? values.num_values * vbytes + cw * slots
                                    : values.value_bytes() + cw * slots + lbytes * values.num_values;
  aligned_buffer zipped;
  zipped.reserve(std::size_t(bound));
  const bool need_index = !rep.empty() || !fixed;
  std::vector<std::uint64_t> row_starts;
  std::uint64_t cum_items = 1;
  for (const auto& l : values.fsl) cum_items *= l.dimension;
  const std::uint64_t item_bytes = fixed && values.k == data_block::kind::fixed_size_list ? cum_items * values.bits_per_value / 8 : vbytes;
  aligned_buffer scratch;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < slots; ++i) {
    const std::uint16_t r = rep.empty() ? 0 : rep[i];
    const std::uint16_t d = def.empty() ? 0 : def[i];
    if (need_index && (rep.empty() || r == s.max_rep)) row_starts.push_back(zipped.size());
    if (cw) {
      const std::uint32_t word = bits_rep && bits_def ? (std::uint32_t(r) << bits_def) | d : (bits_rep ? r : d);
      std::uint8_t b[4];
      le::store<std::uint32_t>(b, word);
      zipped.append(b, cw);
    }
    if (d > s.max_visible_def) continue;
    if (fixed) {
      if (values.k == data_block::kind::fixed_size_list) {
        std::uint64_t c = 1;
        for (std::size_t l = 0; l < values.fsl.size(); ++l) {
          c *= values.fsl[l].dimension;
          if (!values.fsl[l].has_validity) continue;
          const auto at = zipped.size();
          zipped.resize(at + std::size_t(validity_bytes[l]));
          arrow::copy_bits(values.fsl[l].validity.data(), std::int64_t(v * c), zipped.data() + at, 0, std::int64_t(c));
        }
      }
      zipped.append(values.data.data() + v * item_bytes, std::size_t(item_bytes));
    } else if (d == 0) {
      const auto b = values.offset(v), e = values.offset(v + 1);
      const std::uint8_t* p = values.data.data() + b;
      std::size_t len = std::size_t(e - b);
      if (table) {
        scratch.clear();
        table->compress(p, len, scratch);
        p = scratch.data();
        len = scratch.size();
      } else if (codec.k == per_value_codec::kind::general) {
        scratch.clear();
        general::compress(codec.scheme, codec.level, bytes_view(p, len), scratch);
        p = scratch.data();
        len = scratch.size();
      }
      std::uint8_t lb[8];
      le::store<std::uint64_t>(lb, len);
      if (lbytes == 4 && len > 0xFFFFFFFFull) throw invalid_input_error("a value of " + std::to_string(len) + " bytes needs 64-bit offsets");
      zipped.append(lb, std::size_t(lbytes));
      zipped.append(p, len);
    }
    ++v;
  }
  out.buffers.push_back(shared_bytes(std::move(zipped)));
  if (need_index) {
    row_starts.push_back(out.buffers[0].size());
    const std::uint64_t max_val = std::max<std::uint64_t>(bound, out.buffers[0].size());
    const std::size_t w = max_val <= 0xFF ? 1 : max_val <= 0xFFFF ? 2 : max_val <= 0xFFFFFFFFull ? 4 : 8;
    aligned_buffer ri;
    ri.resize(row_starts.size() * w);
    for (std::size_t i = 0; i < row_starts.size(); ++i) {
      std::uint8_t b[8];
      le::store<std::uint64_t>(b, row_starts[i]);
      std::memcpy(ri.data() + i * w, b, w);
    }
    out.buffers.push_back(shared_bytes(std::move(ri)));
  }
  return out;
}

}  // namespace lancet::encoding::structural
