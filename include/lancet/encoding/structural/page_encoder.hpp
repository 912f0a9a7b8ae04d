// Encoding one page of one leaf column (2.1+): a plan (the structural layout and the
// codecs, chosen by the strategy) applied to the leaf's levels and values.
//
//   all values null, no lists   -> AllNullLayout {layers}, no buffers
//   no values at all / all null -> AllNullLayout with raw u16 rep/def level buffers
//   one repeated value (2.2+)   -> ConstantLayout (inline value, or a scalar buffer for strings)
//   narrow values               -> MiniBlockLayout (optionally with a dictionary)
//   wide values                 -> FullZipLayout
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/structural/compression/bitpack.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/fullzip.hpp"
#include "lancet/encoding/structural/miniblock.hpp"
#include "lancet/encoding/structural/page_plan.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/file2.hpp"

namespace lancet::encoding::detail {

inline std::string page_encoding(const pb::enc21::page_layout& l) { return pb::encode(pb::pack_any(l)); }

inline shared_bytes to_shared(aligned_buffer&& b) { return shared_bytes(std::move(b)); }

inline aligned_buffer raw_levels(const std::vector<std::uint16_t>& v) {
  aligned_buffer b;
  b.append(v.data(), v.size() * 2);
  return b;
}

// Is every value the same (and is it a scalar the constant layout can hold)?
inline std::optional<std::string> constant_value(const structural::data_block& b) {
  if (b.num_values == 0) return std::nullopt;
  if (b.k == structural::data_block::kind::fixed) {
    if (b.bits_per_value == 1) {
      const bool first = arrow::get_bit(b.data.data(), 0);
      for (std::uint64_t i = 1; i < b.num_values; ++i)
        if (arrow::get_bit(b.data.data(), std::int64_t(i)) != first) return std::nullopt;
      return std::string(1, first ? '\1' : '\0');
    }
    if (b.bits_per_value % 8 || b.bits_per_value > 256) return std::nullopt;
    const std::size_t w = std::size_t(b.bits_per_value / 8);
    for (std::uint64_t i = 1; i < b.num_values; ++i)
      if (std::memcmp(b.data.data(), b.data.data() + i * w, w) != 0) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(b.data.data()), w);
  }
  if (b.k == structural::data_block::kind::variable) {
    const auto len = b.offset(1) - b.offset(0);
    // Empty values may come with no data buffer at all (a null pointer memcmp may not see).
    if (len == 0) {
      for (std::uint64_t i = 1; i < b.num_values; ++i)
        if (b.offset(i + 1) != b.offset(i)) return std::nullopt;
      return std::string();
    }
    for (std::uint64_t i = 1; i < b.num_values; ++i) {
      const auto s = b.offset(i), e = b.offset(i + 1);
      if (e - s != len || std::memcmp(b.data.data() + b.offset(0), b.data.data() + s, std::size_t(len)) != 0)
        return std::nullopt;
    }
    return std::string(reinterpret_cast<const char*>(b.data.data() + b.offset(0)), std::size_t(len));
  }
  return std::nullopt;
}

// Dictionary-encodes variable or 128-bit values: i32 indices (first-seen order) and
// the distinct values.
// `index_bits` (8, 16, 32, 64) is the width of the indices (a dictionary field's index type).
inline std::pair<structural::data_block, structural::data_block> dictionary_encode(const structural::data_block& b,
                                                                                   std::uint32_t index_bits = 32) {
  aligned_buffer idx;
  const std::size_t iw = index_bits / 8;
  idx.resize(std::size_t(b.num_values * iw));
  auto put = [&](std::uint64_t i, std::int32_t k) {
    const std::uint64_t v = std::uint64_t(std::uint32_t(k));
    std::memcpy(idx.data() + i * iw, &v, iw);  // little-endian: the low bytes
  };
  if (b.k == structural::data_block::kind::variable) {
    std::unordered_map<std::string_view, std::int32_t> seen;
    aligned_buffer offs, bytes;
    const std::uint64_t w = b.bits_per_offset / 8;
    offs.resize(std::size_t(w));
    for (std::uint64_t i = 0; i < b.num_values; ++i) {
      const auto s = b.offset(i), e = b.offset(i + 1);
      std::string_view key(reinterpret_cast<const char*>(b.data.data() + s), std::size_t(e - s));
      auto [it, fresh] = seen.emplace(key, std::int32_t(seen.size()));
      if (fresh) {
        bytes.append(key);
        const auto at = offs.size();
        offs.resize(at + std::size_t(w));
        if (w == 8) le::store<std::uint64_t>(offs.data() + at, bytes.size());
        else le::store<std::uint32_t>(offs.data() + at, std::uint32_t(bytes.size()));
      }
      put(i, it->second);
    }
    auto dict = structural::data_block::variable(seen.size(), b.bits_per_offset, to_shared(std::move(offs)), to_shared(std::move(bytes)));
    return {structural::data_block::fixed(b.num_values, index_bits, to_shared(std::move(idx))), std::move(dict)};
  }
  std::unordered_map<std::string_view, std::int32_t> seen;
  aligned_buffer values;
  const std::size_t w = std::size_t(b.bits_per_value / 8);
  for (std::uint64_t i = 0; i < b.num_values; ++i) {
    std::string_view key(reinterpret_cast<const char*>(b.data.data() + i * w), w);
    auto [it, fresh] = seen.emplace(key, std::int32_t(seen.size()));
    if (fresh) values.append(key);
    put(i, it->second);
  }
  auto dict = structural::data_block::fixed(seen.size(), b.bits_per_value, to_shared(std::move(values)));
  return {structural::data_block::fixed(b.num_values, index_bits, to_shared(std::move(idx))), std::move(dict)};
}

// The block form of a dictionary: 2.1 plain, 2.2+ LZ4-compressed (as Lance 12 writes).
// `field_dictionary`: a dictionary field's own dictionary, whose fixed-width values
// Lance 12 LZ4-compresses (2.2+) when bit-packing does not make them smaller.
inline std::pair<aligned_buffer, structural::compressive> dictionary_block(const structural::data_block& d,
                                                                           unsigned minor,
                                                                           bool field_dictionary = false) {
  aligned_buffer raw;
  structural::compressive e;
  if (d.k == structural::data_block::kind::variable) {
    const std::uint64_t w = d.bits_per_offset / 8;
    const std::uint64_t start = 2 * w + (d.num_values + 1) * w;
    std::uint8_t b[8];
    if (w == 8) { le::store<std::uint64_t>(b, 64); raw.append(b, 8); le::store<std::uint64_t>(b, start); raw.append(b, 8); }
    else { le::store<std::uint32_t>(b, 32); raw.append(b, 4); le::store<std::uint32_t>(b, std::uint32_t(start)); raw.append(b, 4); }
    raw.append(d.offsets.data(), std::size_t((d.num_values + 1) * w));
    raw.append(d.data.data(), std::size_t(d.value_bytes()));
    e = structural::enc::variable(d.bits_per_offset);
  } else {
    raw.append(d.data.data(), std::size_t(d.num_values * d.bits_per_value / 8));
    e = structural::enc::flat(d.bits_per_value);
    // 2.2+: fixed-width dictionaries are bit-packed when that is smaller (never LZ4).
    const auto bits = d.bits_per_value;
    if (minor >= 2 && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) {
      aligned_buffer packed;
      structural::compressive pe;
      detail::by_width(bits, [&](auto t) {
        using T = decltype(t);
        const T* v = reinterpret_cast<const T*>(d.data.data());
        if (d.num_values <= structural::bitpack::chunk_values) {
          structural::bitpack::append_inline_chunk<T>(v, std::size_t(d.num_values), packed);
          pb::enc21::inline_bitpacking ib;
          ib.uncompressed_bits_per_value = bits;
          pe = structural::compressive{ib};
        } else {
          const auto w = structural::bitpack::needed_width(v, std::size_t(d.num_values));
          packed = structural::bitpack::encode_out_of_line<T>(v, std::size_t(d.num_values), w);
          pb::enc21::out_of_line_bitpacking ob;
          ob.uncompressed_bits_per_value = bits;
          ob.values = structural::enc::flat(w);
          pe = structural::compressive{std::move(ob)};
        }
        return 0;
      });
      if (packed.size() < raw.size()) return {std::move(packed), std::move(pe)};
    }
    if (!field_dictionary || minor < 2) return {std::move(raw), std::move(e)};
  }
  if (minor < 2) return {std::move(raw), std::move(e)};
  aligned_buffer packed;
  structural::general::compress(pb::enc21::compression_scheme::lz4, std::nullopt, raw.view(), packed);
  return {std::move(packed), structural::enc::general(pb::enc21::compression_scheme::lz4, std::nullopt, std::move(e))};
}

inline structural::mini_compressed compress_values(const structural::data_block& v, const structural::page_plan& plan,
                                                   std::uint64_t max_values) {
  // The minichunk size steers variable-width chunks; fixed-width chunks stay ~4 KiB (as in Lance 12).
  const auto target = v.k == structural::data_block::kind::variable ? plan.minichunk_bytes : structural::default_minichunk_bytes;
  structural::mini_compressed mc;
  if (v.k == structural::data_block::kind::fixed_size_list) mc = structural::mini::fsl(v, target, max_values);
  else if (v.k == structural::data_block::kind::variable) {
    mc = plan.codec == structural::value_codec::fsst ? structural::mini::fsst_variable(v, target, max_values) : structural::mini::variable(v, target, max_values);
  } else {
    const bool word = v.bits_per_value == 8 || v.bits_per_value == 16 || v.bits_per_value == 32 || v.bits_per_value == 64;
    switch (word ? plan.codec : structural::value_codec::flat) {
      case structural::value_codec::bitpack: mc = structural::mini::bitpack_inline(v, max_values); break;
      case structural::value_codec::rle: mc = structural::mini::rle(v, 8186, max_values); break;
      case structural::value_codec::bss:
        mc = (v.bits_per_value == 32 || v.bits_per_value == 64) ? structural::mini::bss(v, max_values) : structural::mini::flat(v, target, max_values);
        break;
      default: mc = structural::mini::flat(v, target, max_values); break;
    }
  }
  if (plan.general) mc = structural::mini::general(std::move(mc), *plan.general, plan.general_level);
  return mc;
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// Encodes one page of a leaf column.
inline encoded_page encode_leaf_page(const level_scheme& s, const std::vector<std::uint16_t>& rep,
                                     const std::vector<std::uint16_t>& def, const data_block& values,
                                     const page_plan& plan, std::uint64_t num_rows, unsigned minor,
                                     const layout_rewrite& rewrite = {}) {
  encoded_page page;
  page.num_rows = num_rows;
  enc21::page_layout layout;
  const bool large = minor >= 2;
  switch (plan.layout) {
    case page_plan::layout_kind::all_null: {
      enc21::constant_layout c;
      c.layers = s.layers;
      if (!rep.empty() || s.max_rep > 0 || s.layers.size() > 1) {
        // Levels tell null from empty and which layer is null: raw u16 in 2.1; in 2.2+
        // each compressed as one block (as Lance 12 writes them).
        auto put = [&](const std::vector<std::uint16_t>& levels, std::optional<compressive>& comp, std::uint64_t& count) {
          if (minor < 2 || levels.empty()) {
            page.buffers.push_back(detail::to_shared(detail::raw_levels(levels)));
            return;
          }
          const auto codec = choose_level_codec(levels, minor);
          comp = codec.encoding();
          count = levels.size();
          page.buffers.push_back(detail::to_shared(codec.compress(levels.data(), levels.size())));
        };
        put(rep, c.rep_compression, c.num_rep_values);
        put(def, c.def_compression, c.num_def_values);
      }
      layout.value = std::move(c);
      break;
    }
    case page_plan::layout_kind::constant: {
      enc21::constant_layout c;
      c.layers = s.layers;
      const auto v = detail::constant_value(values);
      if (!v) throw internal_error("a constant layout for values that differ");
      if (values.k == data_block::kind::variable) {
        // u32 count, then per part u32 length + bytes: [u64 length][the bytes].
        aligned_buffer b;
        std::uint8_t w[8];
        le::store<std::uint32_t>(w, 2); b.append(w, 4);
        le::store<std::uint32_t>(w, 8); b.append(w, 4);
        le::store<std::uint64_t>(w, v->size()); b.append(w, 8);
        le::store<std::uint32_t>(w, std::uint32_t(v->size())); b.append(w, 4);
        b.append(std::string_view(*v));
        page.buffers.push_back(detail::to_shared(std::move(b)));
      } else {
        c.inline_value = *v;
      }
      if (!rep.empty() || !def.empty()) {
        page.buffers.push_back(detail::to_shared(detail::raw_levels(rep)));
        page.buffers.push_back(detail::to_shared(detail::raw_levels(def)));
      }
      layout.value = std::move(c);
      break;
    }
    case page_plan::layout_kind::fullzip: {
      auto z = encode_fullzip(values, s, rep, def, plan.per_value);
      for (auto& b : z.buffers) page.buffers.push_back(std::move(b));
      layout.value = std::move(z.layout);
      break;
    }
    case page_plan::layout_kind::miniblock: {
      data_block indices;
      std::optional<data_block> dict;
      const data_block* vals = &values;
      if (plan.dictionary) {
        auto [i, d] = detail::dictionary_encode(values, plan.dictionary_index_bits);
        indices = std::move(i);
        dict = std::move(d);
        vals = &indices;
      }
      // Chunks are cut smaller when a chunk breaks a limit of the format.
      std::uint64_t max_values = max_chunk_values;
      page_plan p = plan;
      while (true) {
        try {
          auto mc = detail::compress_values(*vals, p, max_values);
          if (p.packed_struct) {
            enc21::packed_struct ps;
            ps.bits_per_value = p.packed_widths;
            ps.values = std::move(mc.encoding);
            mc.encoding = compressive{std::move(ps)};
          }
          auto ser = serialize_miniblock(mc, s, rep, def, large, minor);
          enc21::mini_block_layout m;
          if (s.max_rep > 0) m.rep_compression = ser.rep_encoding;
          if (s.max_def > 0) m.def_compression = ser.def_encoding;
          m.value_compression = std::move(mc.encoding);
          m.layers = s.layers;
          m.num_buffers = mc.buffers.size();
          m.num_items = values.num_values;
          m.has_large_chunk = large;
          page.buffers.push_back(detail::to_shared(std::move(ser.metadata)));
          page.buffers.push_back(detail::to_shared(std::move(ser.data)));
          if (dict) {
            auto [bytes, enc] = detail::dictionary_block(*dict, minor, plan.field_dictionary);
            m.dictionary = std::move(enc);
            m.num_dictionary_items = dict->num_values;
            page.buffers.push_back(detail::to_shared(std::move(bytes)));
          }
          if (ser.repetition_index) {
            m.repetition_index_depth = 1;
            page.buffers.push_back(detail::to_shared(std::move(*ser.repetition_index)));
          }
          layout.value = std::move(m);
          break;
        } catch (const chunk_too_large&) {
          if (max_values <= 2)
            throw invalid_input_error("a value is too large for a mini-block chunk; use the full-zip layout");
          max_values /= 2;
          if (p.codec == value_codec::bitpack || p.codec == value_codec::bss) p.codec = value_codec::flat;
          page.buffers.clear();
        }
      }
      break;
    }
  }
  if (rewrite) rewrite(layout);
  page.encoding = detail::page_encoding(layout);
  return page;
}

}  // namespace lancet::encoding::structural
