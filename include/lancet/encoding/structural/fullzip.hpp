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

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// How a page's slots are zipped: control word bits and bytes, and the bytes of each
// value (fixed width) or of each value's length (variable width).
struct fullzip_shape {
  unsigned bits_rep = 0, bits_def = 0;
  std::size_t cw = 0;     // control word bytes (0: no levels)
  std::size_t slots = 0;  // level slots (values when there are no levels)
  bool fixed = false;
  std::uint64_t vbytes = 0;                   // fixed: bytes per value, item validity included
  std::vector<std::uint64_t> validity_bytes;  // fixed-size lists: per layer, its item validity bytes per value
  std::uint64_t item_bytes = 0;               // fixed: bytes of a value's items
  std::uint64_t lbytes = 0;                   // variable: bytes per length
};

// The control word: as few bits as the largest levels need, in 1, 2 or 4 bytes; the
// layout's level bits and item counts.
inline void plan_fullzip_levels(const structural::data_block& values, const std::vector<std::uint16_t>& rep,
                                const std::vector<std::uint16_t>& def, fullzip_shape& f,
                                pb::enc21::full_zip_layout& z) {
  std::uint16_t max_r = 0, max_d = 0;
  for (auto r : rep) max_r = std::max(max_r, r);
  for (auto d : def) max_d = std::max(max_d, d);
  f.bits_rep = rep.empty() ? 0 : unsigned(std::bit_width(unsigned(max_r)));
  f.bits_def = def.empty() ? 0 : unsigned(std::bit_width(unsigned(max_d)));
  const unsigned total = f.bits_rep + f.bits_def;
  f.cw = total == 0 ? 0 : total <= 8 ? 1 : total <= 16 ? 2 : 4;
  z.bits_rep = f.bits_rep;
  z.bits_def = f.bits_def;
  f.slots = rep.empty() && def.empty() ? std::size_t(values.num_values) : std::max(rep.size(), def.size());
  if (f.slots > 0xFFFFFFFFull || values.num_values > 0xFFFFFFFFull)
    throw invalid_input_error("a full-zip page holds at most 2^32 values");
  z.num_items = std::uint32_t(rep.empty() ? values.num_values : f.slots);
  z.num_visible_items = std::uint32_t(values.num_values);
}

// Fixed-width values: bytes per value (a fixed-size list's item validity bytes, per
// layer that has it, then its items) and their encoding.
inline void plan_fullzip_fixed_values(const structural::data_block& values, fullzip_shape& f,
                                      pb::enc21::full_zip_layout& z) {
  namespace enc = structural::enc;
  if (values.k == structural::data_block::kind::fixed_size_list) {
    std::uint64_t cum = 1;
    structural::compressive e = enc::flat(values.bits_per_value);
    for (const auto& l : values.fsl) {
      cum *= l.dimension;
      f.validity_bytes.push_back(l.has_validity ? (cum + 7) / 8 : 0);
    }
    if ((cum * values.bits_per_value) % 8) throw unsupported_error("full-zip fixed-size lists of sub-byte items");
    f.vbytes = cum * values.bits_per_value / 8;
    for (auto v : f.validity_bytes) f.vbytes += v;
    z.value_compression = enc::fixed_size_lists(std::move(e), values.fsl);
  } else {
    if (values.bits_per_value % 8) throw unsupported_error("full-zip pages of sub-byte values");
    f.vbytes = values.bits_per_value / 8;
    z.value_compression = enc::flat(values.bits_per_value);
  }
  if (f.vbytes * 8 > 0xFFFFFFFFull) throw invalid_input_error("values too wide for a full-zip page");
  z.bits_per_value = std::uint32_t(f.vbytes * 8);
}

// The FSST symbol table variable values are compressed with, trained on the page's
// values (none when the codec is not FSST or the page is too small to gain).
inline std::optional<structural::fsst::symbol_table> train_fullzip_fsst(const structural::data_block& values, bool fixed,
                                                                        const structural::per_value_codec& codec) {
  namespace fsst = structural::fsst;
  std::optional<fsst::symbol_table> table;
  const bool fsst_on = !fixed && codec.k == structural::per_value_codec::kind::fsst && values.value_bytes() >= fsst::least_input_size;
  if (fsst_on) {
    if (values.bits_per_offset == 64)
      table = fsst::symbol_table::train(reinterpret_cast<const std::uint64_t*>(values.offsets.data()), std::size_t(values.num_values), values.data.data());
    else
      table = fsst::symbol_table::train(reinterpret_cast<const std::uint32_t*>(values.offsets.data()), std::size_t(values.num_values), values.data.data());
  }
  return table;
}

// The encoding of variable values: Variable, inside FSST (its table, or an empty one)
// or general compression as the codec says.
inline structural::compressive fullzip_variable_encoding(const structural::data_block& values,
                                                         const structural::per_value_codec& codec,
                                                         const std::optional<structural::fsst::symbol_table>& table) {
  namespace enc = structural::enc;
  structural::compressive e = enc::variable(values.bits_per_offset);
  if (codec.k == structural::per_value_codec::kind::fsst) {
    pb::enc21::fsst f;
    f.symbol_table = table ? table->serialize() : structural::fsst::symbol_table().serialize();
    f.values = std::move(e);
    e = structural::compressive{std::move(f)};
  } else if (codec.k == structural::per_value_codec::kind::general) {
    e = enc::general(codec.scheme, codec.level, std::move(e));
  }
  return e;
}

// FSST-compresses one value (appended to out). Out of line on purpose: inlined into
// zip_fullzip_slots' loop (as GCC does once that loop is a function of its own),
// compression runs short of registers and full-zip FSST pages take ~4% longer to write.
[[gnu::noinline]] inline void fsst_compress_value(const structural::fsst::symbol_table& table, const std::uint8_t* p,
                                                  std::size_t len, aligned_buffer& out) {
  table.compress(p, len, out);
}

// Appends the zipped slots: per slot its control word, then, when visible, its value
// (fixed: item validity bytes, then items; variable and valid: a length, then the
// bytes, compressed value by value). With need_index, row_starts gets each row's
// first byte.
inline void zip_fullzip_slots(const structural::data_block& values, const structural::level_scheme& s,
                              const std::vector<std::uint16_t>& rep, const std::vector<std::uint16_t>& def,
                              const fullzip_shape& f, const std::optional<structural::fsst::symbol_table>& table,
                              const structural::per_value_codec& codec, bool need_index, aligned_buffer& zipped,
                              std::vector<std::uint64_t>& row_starts) {
  // The loop reads these as locals (as registers), not through the references.
  const unsigned bits_rep = f.bits_rep, bits_def = f.bits_def;
  const std::size_t cw = f.cw, slots = f.slots;
  const bool fixed = f.fixed;
  const std::uint64_t item_bytes = f.item_bytes, lbytes = f.lbytes;
  const auto& validity_bytes = f.validity_bytes;
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
      if (values.k == structural::data_block::kind::fixed_size_list) {
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
        fsst_compress_value(*table, p, len, scratch);
        p = scratch.data();
        len = scratch.size();
      } else if (codec.k == structural::per_value_codec::kind::general) {
        scratch.clear();
        structural::general::compress(codec.scheme, codec.level, bytes_view(p, len), scratch);
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
}

// The repetition index: each row's first byte, then the end, in entries as wide as
// the buffer's size bound needs (as Lance writes it).
inline shared_bytes fullzip_repetition_index(std::vector<std::uint64_t>& row_starts, std::uint64_t bound,
                                             std::uint64_t zipped_bytes) {
  row_starts.push_back(zipped_bytes);
  const std::uint64_t max_val = std::max<std::uint64_t>(bound, zipped_bytes);
  const std::size_t w = max_val <= 0xFF ? 1 : max_val <= 0xFFFF ? 2 : max_val <= 0xFFFFFFFFull ? 4 : 8;
  aligned_buffer ri;
  ri.resize(row_starts.size() * w);
  for (std::size_t i = 0; i < row_starts.size(); ++i) {
    std::uint8_t b[8];
    le::store<std::uint64_t>(b, row_starts[i]);
    std::memcpy(ri.data() + i * w, b, w);
  }
  return shared_bytes(std::move(ri));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

inline fullzip_page encode_fullzip(const data_block& values, const level_scheme& s, const std::vector<std::uint16_t>& rep,
                                   const std::vector<std::uint16_t>& def, const per_value_codec& codec) {
  using namespace detail;
  fullzip_page out;
  auto& z = out.layout;
  z.layers = s.layers;
  fullzip_shape f;
  plan_fullzip_levels(values, rep, def, f, z);

  // Value bytes.
  f.fixed = values.k != data_block::kind::variable;
  if (f.fixed) plan_fullzip_fixed_values(values, f, z);
  else z.bits_per_offset = values.bits_per_offset;

  // Variable values, compressed value by value.
  const auto table = train_fullzip_fsst(values, f.fixed, codec);
  if (!f.fixed) z.value_compression = fullzip_variable_encoding(values, codec, table);

  f.lbytes = f.fixed ? 0 : values.bits_per_offset / 8;
  // Fixed-width values without levels or item validity: the zipped buffer is the values.
  bool any_validity = false;
  for (const auto& l : values.fsl) any_validity |= l.has_validity;
  if (f.fixed && f.cw == 0 && !any_validity) {
    out.buffers.push_back(values.data.slice(0, std::size_t(values.num_values * f.vbytes)));
    return out;
  }
  const std::uint64_t bound = f.fixed ? values.num_values * f.vbytes + f.cw * f.slots
                                      : values.value_bytes() + f.cw * f.slots + f.lbytes * values.num_values;
  aligned_buffer zipped;
  zipped.reserve(std::size_t(bound));
  const bool need_index = !rep.empty() || !f.fixed;
  std::vector<std::uint64_t> row_starts;
  std::uint64_t cum_items = 1;
  for (const auto& l : values.fsl) cum_items *= l.dimension;
  f.item_bytes = f.fixed && values.k == data_block::kind::fixed_size_list ? cum_items * values.bits_per_value / 8 : f.vbytes;
  zip_fullzip_slots(values, s, rep, def, f, table, codec, need_index, zipped, row_starts);
  out.buffers.push_back(shared_bytes(std::move(zipped)));
  if (need_index) out.buffers.push_back(fullzip_repetition_index(row_starts, bound, out.buffers[0].size()));
  return out;
}

}  // namespace lancet::encoding::structural
