// Reading one structural page (2.1+) for a range of its rows: the page's layout is
// parsed, the chunks (mini-block) or zipped rows (full-zip) covering the rows are
// decoded, and the result is the levels of those rows plus their visible values.
//
// Mini-block pages: buffers [chunk metadata][chunk data][dictionary?][repetition index?].
//   metadata word (u16, or u32 with has_large_chunk): ((chunk bytes / 8) - 1) << 4 | log2(values)
//   (log2 = 0 on the last chunk, which holds the rest). Chunk:
//   u16 levels [u16 rep bytes] [u16 def bytes] (u16|u32 value bytes) x num_buffers, pad 8,
//   rep, pad 8, def, pad 8, each value buffer, pad 8.
//   repetition index: (depth + 1) u64 per chunk: rows completed in the chunk, then the
//   levels of a trailing partial row.
// Full-zip pages: [zipped values][repetition index?]: per level slot a control word
//   (rep << bits_def | def, 1, 2 or 4 bytes, absent without levels), then for a visible
//   slot the value: fixed width, or (variable) for a valid slot a length prefix and bytes.
//   The repetition index has rows + 1 byte offsets (1, 2, 4 or 8 bytes each).
// Constant pages (AllNullLayout/ConstantLayout): no values (all null) or one scalar
//   (inline_value, or a one-buffer scalar) for every slot, with optional rep/def buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/block_ops.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/decompress.hpp"
#include "lancet/encoding/structural/read_callbacks.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

// The rows [begin, end) of one page, as levels and values.
struct page_slice {
  std::vector<layer> layers;
  std::vector<std::uint16_t> rep, def;  // per slot; empty when absent
  std::uint64_t num_slots = 0;
  data_block values;                    // the visible values of these slots, in order
  std::optional<data_block> dictionary;  // set: values are dictionary indices
  std::optional<std::string> constant;   // set: every visible value is this scalar (values empty)
  // set: each variable value is one packed struct row (2.2 VariablePackedStruct)
  std::shared_ptr<const variable_packed_layout> packed;
};

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

inline std::uint64_t pad8(std::uint64_t n) noexcept { return (n + 7) & ~std::uint64_t(7); }

struct chunk_meta {
  std::uint64_t offset = 0;  // in the chunk data buffer
  std::uint64_t bytes = 0;
  std::uint64_t values = 0;
};

inline std::vector<chunk_meta> parse_chunk_meta(const shared_bytes& meta, std::uint64_t data_size, bool large,
                                                std::uint64_t num_items, const std::string& where) {
  const std::size_t w = large ? 4 : 2;
  if (meta.size() % w != 0)
    throw corrupt_error(where + ": chunk metadata of " + std::to_string(meta.size()) + " bytes is not a multiple of " +
                        std::to_string(w));
  std::vector<chunk_meta> out(meta.size() / w);
  std::uint64_t at = 0, values = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t word = large ? le::load<std::uint32_t>(meta.data() + 4 * i) : le::load<std::uint16_t>(meta.data() + 2 * i);
    const std::uint64_t bytes = ((word >> 4) + 1) * 8;
    const unsigned log = unsigned(word & 0xF);
    const bool last = i + 1 == out.size();
    std::uint64_t n;
    if (last) {
      if (values > num_items) throw corrupt_error(where + ": chunks hold more values than the page's " + std::to_string(num_items));
      n = num_items - values;
    } else {
      if (log == 0) throw corrupt_error(where + ": chunk " + std::to_string(i) + " is not the last but has no value count");
      n = std::uint64_t(1) << log;
    }
    out[i] = {at, bytes, n};
    at += bytes;
    values += n;
    if (at > data_size)
      throw corrupt_error(where + ": chunk " + std::to_string(i) + " ends at byte " + std::to_string(at) +
                          " past the " + std::to_string(data_size) + "-byte chunk buffer");
  }
  if (values != num_items)
    throw corrupt_error(where + ": chunks hold " + std::to_string(values) + " values, the page has " + std::to_string(num_items));
  return out;
}

inline std::vector<chunk_meta> parse_chunk_meta(const shared_bytes& meta, const shared_bytes& data, bool large,
                                                std::uint64_t num_items, const std::string& where) {
  return parse_chunk_meta(meta, std::uint64_t(data.size()), large, num_items, where);
}

struct decoded_chunk {
  std::vector<std::uint16_t> rep, def;
  std::uint64_t levels = 0;
  structural::data_block values;
};

inline decoded_chunk decode_chunk(const pb::enc21::mini_block_layout& m, const shared_bytes& data, const chunk_meta& c,
                                  bool large, const std::string& where) {
  decoded_chunk out;
  const auto chunk = data.slice(std::size_t(c.offset), std::size_t(c.bytes));
  std::uint64_t pos = 0;
  auto need = [&](std::uint64_t n) {
    if (pos + n > chunk.size()) throw corrupt_error(where + ": chunk header runs past its " + std::to_string(chunk.size()) + " bytes");
  };
  need(2);
  const std::uint64_t num_levels = le::load<std::uint16_t>(chunk.data());
  pos = 2;
  std::uint64_t rep_bytes = 0, def_bytes = 0;
  if (m.rep_compression) { need(2); rep_bytes = le::load<std::uint16_t>(chunk.data() + pos); pos += 2; }
  if (m.def_compression) { need(2); def_bytes = le::load<std::uint16_t>(chunk.data() + pos); pos += 2; }
  if (m.num_buffers > 64) throw corrupt_error(where + ": " + std::to_string(m.num_buffers) + " value buffers per chunk");
  std::vector<std::uint64_t> sizes(std::size_t(m.num_buffers));
  for (auto& s : sizes) {
    if (large) { need(4); s = le::load<std::uint32_t>(chunk.data() + pos); pos += 4; }
    else { need(2); s = le::load<std::uint16_t>(chunk.data() + pos); pos += 2; }
  }
  pos = pad8(pos);
  auto take = [&](std::uint64_t n) {
    need(n);
    auto s = chunk.slice(std::size_t(pos), std::size_t(n));
    pos = pad8(pos + n);
    return s;
  };
  shared_bytes rep_buf, def_buf;
  if (m.rep_compression) rep_buf = take(rep_bytes);
  if (m.def_compression) def_buf = take(def_bytes);
  std::vector<shared_bytes> bufs;
  for (auto s : sizes) bufs.push_back(take(s));
  if (m.rep_compression) out.rep = structural::decode_levels(*m.rep_compression, rep_buf, num_levels, where + " (repetition)");
  if (m.def_compression) out.def = structural::decode_levels(*m.def_compression, def_buf, num_levels, where + " (definition)");
  std::size_t at = 0;
  if (!m.value_compression) throw corrupt_error(where + ": mini-block layout without a value compression");
  out.values = structural::decode_miniblock(*m.value_compression, bufs, at, c.values, where);
  out.levels = (m.rep_compression || m.def_compression) ? num_levels : c.values;
  if (!(m.rep_compression || m.def_compression) && num_levels != 0 && num_levels != c.values)
    throw corrupt_error(where + ": chunk without levels says it has " + std::to_string(num_levels));
  return out;
}

inline std::uint64_t visible_count(const structural::level_scheme& s, const std::vector<std::uint16_t>& def,
                                   std::uint64_t from, std::uint64_t to) {
  if (def.empty() || s.max_visible_def == s.max_def) return to - from;
  std::uint64_t n = 0;
  for (auto i = from; i < to; ++i) n += def[std::size_t(i)] <= s.max_visible_def;
  return n;
}

// Slot range of rows [rb, re) counted from the start of `rep` (the first slot starts
// row `first_row`; continuation slots before the first row start are skipped).
inline std::pair<std::uint64_t, std::uint64_t> row_slots(const std::vector<std::uint16_t>& rep, std::uint16_t max_rep,
                                                         std::uint64_t first_row, std::uint64_t rb, std::uint64_t re,
                                                         const std::string& where) {
  std::uint64_t row = first_row - 1;  // incremented at each row start
  std::uint64_t sb = rep.size(), se = rep.size();
  bool found_begin = false;
  for (std::size_t i = 0; i < rep.size(); ++i) {
    if (rep[i] != max_rep) continue;
    ++row;
    if (row == rb && !found_begin) { sb = i; found_begin = true; }
    if (row == re) { se = i; break; }
  }
  if (!found_begin && rb != re) throw corrupt_error(where + ": row " + std::to_string(rb) + " not found in the levels");
  if (!found_begin) sb = se;
  return {sb, se};
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {


// Reads rows [begin, end) of a page of `page_rows` rows.
inline page_slice read_page(const enc21::page_layout& layout, const std::vector<shared_bytes>& buffers,
                            std::uint64_t page_rows, std::uint64_t begin, std::uint64_t end, const std::string& where,
                            const read_file_range& read_range = {}) {
  using namespace detail;
  if (begin > end || end > page_rows)
    throw corrupt_error(where + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside a page of " +
                        std::to_string(page_rows));
  page_slice out;
  auto need_buffers = [&](std::size_t n, const char* what) {
    if (buffers.size() < n)
      throw corrupt_error(where + ": " + what + " needs " + std::to_string(n) + " buffers, the page has " +
                          std::to_string(buffers.size()));
  };
  // ---- mini-block ----
  if (const auto* m = std::get_if<enc21::mini_block_layout>(&layout.value)) {
    out.layers = m->layers;
    const level_scheme s(m->layers);
    if (bool(m->rep_compression) != (s.max_rep > 0))
      throw corrupt_error(where + ": repetition levels and list layers disagree");
    if (m->def_compression && s.max_def == 0) throw corrupt_error(where + ": definition levels without nullable layers");
    const std::size_t dict_buffers = m->dictionary ? 1 : 0;
    const bool has_rep_index = m->repetition_index_depth > 0;
    need_buffers(2 + dict_buffers + (has_rep_index ? 1 : 0), "a mini-block page");
    if (m->dictionary) {
      out.dictionary = decode_block(*m->dictionary, buffers[2], m->num_dictionary_items, where + " (dictionary)");
    }
    const auto chunks = parse_chunk_meta(buffers[0], buffers[1], m->has_large_chunk, m->num_items, where);
    std::size_t c0 = 0, c1 = chunks.size();  // chunk range to decode
    std::uint64_t first_row = 0;             // row number of the first row starting in chunk c0
    if (begin == end) { c1 = c0; }
    else if (s.max_rep == 0) {
      // Values are rows.
      std::uint64_t at = 0;
      std::size_t i = 0;
      while (i < chunks.size() && at + chunks[i].values <= begin) at += chunks[i++].values;
      c0 = i;
      first_row = at;
      std::uint64_t e = at;
      while (i < chunks.size() && e < end) e += chunks[i++].values;
      c1 = i;
    } else if (has_rep_index) {
      const std::uint64_t stride = 8 * (std::uint64_t(m->repetition_index_depth) + 1);
      const auto& ri = buffers[2 + dict_buffers];
      if (ri.size() < chunks.size() * stride)
        throw corrupt_error(where + ": repetition index of " + std::to_string(ri.size()) + " bytes for " +
                            std::to_string(chunks.size()) + " chunks");
      std::vector<std::uint64_t> rows_before(chunks.size() + 1, 0), leftover(chunks.size(), 0);
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto r = le::load<std::uint64_t>(ri.data() + i * stride);
        leftover[i] = le::load<std::uint64_t>(ri.data() + i * stride + stride - 8);
        rows_before[i + 1] = rows_before[i] + r;
        if (rows_before[i + 1] < rows_before[i]) throw corrupt_error(where + ": repetition index overflows");
      }
      if (rows_before.back() != page_rows)
        throw corrupt_error(where + ": repetition index counts " + std::to_string(rows_before.back()) + " rows, the page has " +
                            std::to_string(page_rows));
      // Chunk where row `begin` completes, walked back to where it starts.
      std::size_t i = 0;
      while (i < chunks.size() && rows_before[i + 1] <= begin) ++i;
      while (i > 0 && leftover[i - 1] > 0 && rows_before[i] == begin) --i;
      c0 = i;
      first_row = rows_before[i] + ((i > 0 && leftover[i - 1] > 0) ? 1 : 0);
      std::size_t j = c0;
      while (j < chunks.size() && rows_before[j + 1] < end) ++j;
      c1 = std::min(chunks.size(), j + 1);
    }
    std::vector<data_block> parts;
    std::vector<std::uint16_t> rep, def;
    for (std::size_t i = c0; i < c1; ++i) {
      auto d = decode_chunk(*m, buffers[1], chunks[i], m->has_large_chunk, where + " chunk " + std::to_string(i));
      if (m->rep_compression) rep.insert(rep.end(), d.rep.begin(), d.rep.end());
      if (m->def_compression) def.insert(def.end(), d.def.begin(), d.def.end());
      if (!m->rep_compression && !m->def_compression) {
        // no levels: slots are values
      }
      parts.push_back(std::move(d.values));
    }
    auto values = concat_blocks(parts);
    std::uint64_t total_slots = (m->rep_compression || m->def_compression) ? std::max(rep.size(), def.size()) : values.num_values;
    if (!rep.empty() && !def.empty() && rep.size() != def.size())
      throw corrupt_error(where + ": " + std::to_string(rep.size()) + " repetition but " + std::to_string(def.size()) +
                          " definition levels");
    // Slot range of the requested rows.
    std::uint64_t sb, se;
    if (s.max_rep == 0) {
      sb = begin - first_row;
      se = end - first_row;
      if (se > total_slots) throw corrupt_error(where + ": chunks hold fewer rows than the page says");
    } else {
      if (!rep.empty() && first_row == 0 && c0 == 0 && rep[0] != s.max_rep)
        throw corrupt_error(where + ": the page's levels do not start with a row");
      // Skip continuation slots of a row started in an earlier chunk.
      std::size_t lead = 0;
      if (c0 > 0 && first_row > 0) {
        // when chunk c0 - 1 left a partial row, slots before the first row start belong to it
        while (lead < rep.size() && rep[lead] != s.max_rep) ++lead;
      }
      auto [b2, e2] = row_slots(rep, s.max_rep, first_row, begin, end, where);
      (void)lead;
      sb = b2;
      se = e2;
    }
    out.num_slots = se - sb;
    if (!rep.empty()) out.rep.assign(rep.begin() + std::ptrdiff_t(sb), rep.begin() + std::ptrdiff_t(se));
    if (!def.empty()) out.def.assign(def.begin() + std::ptrdiff_t(sb), def.begin() + std::ptrdiff_t(se));
    const auto vb = visible_count(s, def, 0, sb), vc = visible_count(s, def, sb, se);
    if (vb + vc > values.num_values) throw corrupt_error(where + ": levels need more values than the chunks hold");
    out.values = slice_block(values, vb, vc);
    return out;
  }
  // ---- full-zip ----
  if (const auto* z = std::get_if<enc21::full_zip_layout>(&layout.value)) {
    out.layers = z->layers;
    const level_scheme s(z->layers);
    need_buffers(1, "a full-zip page");
    const auto& zipped = buffers[0];
    const unsigned cw_bits = z->bits_rep + z->bits_def;
    if (z->bits_rep > 16 || z->bits_def > 16) throw corrupt_error(where + ": control word of " + std::to_string(cw_bits) + " bits");
    const std::uint64_t cw = cw_bits == 0 ? 0 : cw_bits <= 8 ? 1 : cw_bits <= 16 ? 2 : 4;
    if (!z->value_compression) throw corrupt_error(where + ": full-zip layout without a value compression");
    const auto dec = per_value_decoder::from(*z->value_compression, where);
    out.packed = dec.packed;
    const bool fixed = z->bits_per_value.has_value();
    if (fixed == z->bits_per_offset.has_value()) throw corrupt_error(where + ": full-zip layout needs exactly one of bits per value / offset");
    if (fixed && dec.k != per_value_decoder::kind::fixed) throw corrupt_error(where + ": fixed full-zip with variable values");
    if (!fixed && dec.k != per_value_decoder::kind::variable) throw corrupt_error(where + ": variable full-zip with fixed values");
    if (fixed && *z->bits_per_value % 8 != 0) throw unsupported_error(where + ": bit-packed full-zip values");
    const std::uint64_t vbytes = fixed ? *z->bits_per_value / 8 : 0;
    if (fixed && vbytes == 0 && cw == 0) throw corrupt_error(where + ": full-zip values of zero width without control words");
    const std::uint64_t lbytes = fixed ? 0 : *z->bits_per_offset / 8;
    if (!fixed && lbytes != 1 && lbytes != 2 && lbytes != 4 && lbytes != 8)
      throw corrupt_error(where + ": full-zip lengths of " + std::to_string(*z->bits_per_offset) + " bits");
    if (fixed && dec.bits_per_value != *z->bits_per_value)
      throw corrupt_error(where + ": full-zip values of " + std::to_string(*z->bits_per_value) + " bits, the encoding has " +
                          std::to_string(dec.bits_per_value));
    // Byte range of the requested rows.
    std::uint64_t pb = 0, pe = zipped.size();
    bool ranged = true;  // false: the whole page is parsed, rows are cut afterwards
    const bool simple_rows = s.max_rep == 0 && fixed;
    if (begin == end) { pb = pe = 0; }
    else if (simple_rows) {
      const auto row_bytes = cw + vbytes;
      pb = checked_mul(begin, row_bytes, "full-zip rows");
      pe = checked_mul(end, row_bytes, "full-zip rows");
      if (pe > zipped.size()) throw corrupt_error(where + ": full-zip buffer of " + std::to_string(zipped.size()) + " bytes for " +
                                                  std::to_string(page_rows) + " rows of " + std::to_string(row_bytes));
    } else if (buffers.size() >= 2 && (begin > 0 || end < page_rows)) {
      const auto& ri = buffers[1];
      const std::uint64_t entries = page_rows + 1;
      const std::uint64_t w = ri.size() % entries == 0 ? ri.size() / entries : 0;
      if (w != 1 && w != 2 && w != 4 && w != 8)
        throw corrupt_error(where + ": full-zip repetition index of " + std::to_string(ri.size()) + " bytes for " +
                            std::to_string(page_rows) + " rows");
      auto get = [&](std::uint64_t i) -> std::uint64_t {
        const auto* p = ri.data() + i * w;
        switch (w) { case 1: return *p; case 2: return le::load<std::uint16_t>(p); case 4: return le::load<std::uint32_t>(p); default: return le::load<std::uint64_t>(p); }
      };
      pb = get(begin);
      pe = get(end);
      if (pb > pe || pe > zipped.size()) throw corrupt_error(where + ": full-zip repetition index points outside the values");
    } else if (begin > 0 || end < page_rows) {
      ranged = false;
    }
    const std::uint64_t want_rows = ranged ? end - begin : page_rows;
    // Fixed-width values without levels or item validity are the zipped bytes themselves.
    bool any_validity = false;
    for (const auto& l : dec.fsl) any_validity |= l.has_validity;
    if (fixed && cw == 0 && !any_validity) {
      if (!simple_rows || vbytes == 0) throw corrupt_error(where + ": full-zip values of zero width");
      out.num_slots = end - begin;
      const auto n = end - begin;
      auto bytes = zipped.slice(std::size_t(pb), std::size_t(pe - pb));
      if (dec.fsl.empty()) {
        out.values = data_block::fixed(n, dec.bits_per_value, bytes);
      } else {
        out.values.k = data_block::kind::fixed_size_list;
        out.values.num_values = n;
        out.values.bits_per_value = dec.item_bits;
        out.values.fsl = dec.fsl;
        out.values.data = bytes;
      }
      return out;
    }
    const std::uint16_t def_mask = std::uint16_t((1u << z->bits_def) - 1);
    std::vector<std::uint16_t> rep, def;
    aligned_buffer fixed_values, var_bytes, var_offs;
    const std::uint32_t out_offset_bits = dec.bits_per_offset;
    if (!fixed) var_offs.resize(out_offset_bits / 8);
    std::uint64_t nvals = 0, rows_seen = 0;
    std::uint64_t pos = pb;
    const std::uint8_t* base = zipped.data();
    while (pos < pe) {
      std::uint16_t r = 0, d = 0;
      if (cw) {
        if (pos + cw > pe) throw corrupt_error(where + ": control word past the end of the values");
        const std::uint32_t word = cw == 1 ? base[pos] : cw == 2 ? le::load<std::uint16_t>(base + pos) : le::load<std::uint32_t>(base + pos);
        pos += cw;
        if (z->bits_rep && z->bits_def) { r = std::uint16_t(word >> z->bits_def); d = std::uint16_t(word & def_mask); }
        else if (z->bits_rep) r = std::uint16_t(word);
        else d = std::uint16_t(word);
      }
      if (s.max_rep) rep.push_back(r);
      else ++rows_seen;
      if (s.max_def) def.push_back(d);
      if (d > s.max_visible_def) continue;
      ++nvals;
      if (fixed) {
        if (pos + vbytes > pe) throw corrupt_error(where + ": full-zip value past the end of the buffer");
        fixed_values.append(base + pos, std::size_t(vbytes));
        pos += vbytes;
      } else {
        if (d == 0) {
          if (pos + lbytes > pe) throw corrupt_error(where + ": full-zip length past the end of the buffer");
          std::uint64_t len = lbytes == 1 ? base[pos] : lbytes == 2 ? le::load<std::uint16_t>(base + pos)
                            : lbytes == 4 ? le::load<std::uint32_t>(base + pos) : le::load<std::uint64_t>(base + pos);
          pos += lbytes;
          if (len > pe - pos) throw corrupt_error(where + ": full-zip value of " + std::to_string(len) + " bytes past the end of the buffer");
          dec.decode_value(bytes_view(base + pos, std::size_t(len)), var_bytes);
          pos += len;
        }
        const std::size_t at = var_offs.size();
        var_offs.resize(at + out_offset_bits / 8);
        if (out_offset_bits == 64) le::store<std::uint64_t>(var_offs.data() + at, var_bytes.size());
        else {
          if (var_bytes.size() > 0xFFFFFFFFull) throw corrupt_error(where + ": values exceed 32-bit offsets");
          le::store<std::uint32_t>(var_offs.data() + at, std::uint32_t(var_bytes.size()));
        }
      }
    }
    // Rows: with repetition the range came from the index (or is the whole page).
    if (s.max_rep) {
      std::uint64_t rows = 0;
      for (auto r : rep) rows += r == s.max_rep;
      if (!rep.empty() && rep[0] != s.max_rep) throw corrupt_error(where + ": full-zip levels do not start with a row");
      if (rows != want_rows) throw corrupt_error(where + ": full-zip data holds " + std::to_string(rows) + " rows, " + std::to_string(want_rows) + " expected");
    } else if (rows_seen != want_rows) {
      throw corrupt_error(where + ": full-zip data holds " + std::to_string(rows_seen) + " rows, " + std::to_string(want_rows) + " expected");
    }
    out.rep = std::move(rep);
    out.def = std::move(def);
    out.num_slots = s.max_rep ? out.rep.size() : want_rows;
    if (fixed) {
      if (dec.fsl.empty()) {
        out.values = data_block::fixed(nvals, dec.bits_per_value, shared_bytes(std::move(fixed_values)));
      } else {
        // Split [validity bytes per layer][items] rows into a fixed-size list block.
        data_block b;
        b.k = data_block::kind::fixed_size_list;
        b.num_values = nvals;
        b.bits_per_value = dec.item_bits;
        b.fsl = dec.fsl;
        std::uint64_t cum = 1;
        std::vector<std::uint64_t> vbytes_per_layer;
        for (auto& l : b.fsl) { cum *= l.dimension; vbytes_per_layer.push_back(l.has_validity ? (cum + 7) / 8 : 0); }
        const std::uint64_t item_bytes = cum * dec.item_bits / 8;
        if ((cum * dec.item_bits) % 8) throw unsupported_error(where + ": full-zip fixed-size list of sub-byte items");
        std::vector<aligned_buffer> vals(b.fsl.size());
        aligned_buffer items;
        const std::uint64_t row_bytes = dec.bits_per_value / 8;
        std::uint64_t cum2 = 1;
        for (std::size_t l = 0; l < b.fsl.size(); ++l) {
          cum2 *= b.fsl[l].dimension;
          if (b.fsl[l].has_validity) vals[l].resize(std::size_t((nvals * cum2 + 7) / 8));
        }
        for (std::uint64_t r = 0; r < nvals; ++r) {
          const std::uint8_t* row = fixed_values.data() + r * row_bytes;
          std::uint64_t off = 0, c = 1;
          for (std::size_t l = 0; l < b.fsl.size(); ++l) {
            c *= b.fsl[l].dimension;
            if (b.fsl[l].has_validity) {
              arrow::copy_bits(row + off, 0, vals[l].data(), std::int64_t(r * c), std::int64_t(c));
              off += vbytes_per_layer[l];
            }
          }
          items.append(row + off, std::size_t(item_bytes));
        }
        for (std::size_t l = 0; l < b.fsl.size(); ++l)
          if (b.fsl[l].has_validity) b.fsl[l].validity = shared_bytes(std::move(vals[l]));
        b.data = shared_bytes(std::move(items));
        out.values = std::move(b);
      }
    } else {
      out.values = data_block::variable(nvals, out_offset_bits, shared_bytes(std::move(var_offs)), shared_bytes(std::move(var_bytes)));
    }
    if (!ranged) {
      std::uint64_t sb = begin, se = end;
      if (s.max_rep) std::tie(sb, se) = row_slots(out.rep, s.max_rep, 0, begin, end, where);
      const auto vb = visible_count(s, out.def, 0, sb), vc = visible_count(s, out.def, sb, se);
      if (!out.rep.empty()) out.rep = std::vector<std::uint16_t>(out.rep.begin() + std::ptrdiff_t(sb), out.rep.begin() + std::ptrdiff_t(se));
      if (!out.def.empty()) out.def = std::vector<std::uint16_t>(out.def.begin() + std::ptrdiff_t(sb), out.def.begin() + std::ptrdiff_t(se));
      out.num_slots = se - sb;
      out.values = slice_block(out.values, vb, vc);
    }
    return out;
  }
  // ---- constant / all-null ----
  if (const auto* c = std::get_if<enc21::constant_layout>(&layout.value)) {
    out.layers = c->layers.empty() ? std::vector<layer>{layer::nullable_item} : c->layers;
    const level_scheme s(out.layers);
    std::size_t level_buf = 0;
    std::optional<std::string> scalar = c->inline_value;
    if (scalar) {
      if (buffers.size() != 0 && buffers.size() != 2)
        throw corrupt_error(where + ": constant layout with an inline value and " + std::to_string(buffers.size()) + " buffers");
    } else if (buffers.size() == 1 || buffers.size() == 3) {
      // A scalar in a buffer: u32 count, then per sub-buffer u32 length + bytes; the
      // value bytes are the last sub-buffer.
      const auto& b = buffers[0];
      if (b.size() < 4) throw corrupt_error(where + ": constant scalar buffer of " + std::to_string(b.size()) + " bytes");
      const auto count = le::load<std::uint32_t>(b.data());
      std::uint64_t pos = 4;
      std::string last;
      for (std::uint32_t i = 0; i < count; ++i) {
        if (pos + 4 > b.size()) throw corrupt_error(where + ": constant scalar buffer is truncated");
        const auto len = le::load<std::uint32_t>(b.data() + pos);
        pos += 4;
        if (len > b.size() - pos) throw corrupt_error(where + ": constant scalar buffer is truncated");
        last.assign(reinterpret_cast<const char*>(b.data() + pos), len);
        pos += len;
      }
      if (count == 0) throw corrupt_error(where + ": constant scalar buffer without a value");
      scalar = std::move(last);
      level_buf = 1;
    }
    const bool has_levels = buffers.size() >= level_buf + 2;
    std::uint64_t visible = 0;
    if (has_levels) {
      const auto& rb = buffers[level_buf];
      const auto& db = buffers[level_buf + 1];
      auto levels = [&](const std::optional<compressive>& comp, const shared_bytes& b, std::uint64_t n) {
        check_alloc(checked_mul(n, 2, "levels"), where + " levels");
        if (comp) return decode_levels(*comp, b, n, where);
        if (b.size() % 2) throw corrupt_error(where + ": level buffer of odd size");
        std::vector<std::uint16_t> v(b.size() / 2);
        if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
        return v;
      };
      auto rep = rb.empty() && !c->rep_compression ? std::vector<std::uint16_t>{}
                                                   : levels(c->rep_compression, rb, c->num_rep_values ? c->num_rep_values : rb.size() / 2);
      auto def = db.empty() && !c->def_compression ? std::vector<std::uint16_t>{}
                                                   : levels(c->def_compression, db, c->num_def_values ? c->num_def_values : db.size() / 2);
      if (!rep.empty() && !def.empty() && rep.size() != def.size())
        throw corrupt_error(where + ": constant layout with " + std::to_string(rep.size()) + " repetition and " +
                            std::to_string(def.size()) + " definition levels");
      std::uint64_t sb = 0, se = std::max(rep.size(), def.size());
      if (s.max_rep) {
        if (rep.empty()) throw corrupt_error(where + ": constant layout with lists but no repetition levels");
        auto [b2, e2] = row_slots(rep, s.max_rep, 0, begin, end, where);
        sb = b2;
        se = e2;
      } else {
        if (def.size() < end) throw corrupt_error(where + ": constant layout with fewer levels than rows");
        sb = begin;
        se = end;
      }
      if (!rep.empty()) out.rep.assign(rep.begin() + std::ptrdiff_t(sb), rep.begin() + std::ptrdiff_t(se));
      if (!def.empty()) out.def.assign(def.begin() + std::ptrdiff_t(sb), def.begin() + std::ptrdiff_t(se));
      out.num_slots = se - sb;
      visible = visible_count(s, out.def, 0, out.num_slots);
    } else {
      out.num_slots = end - begin;
      if (s.max_rep) throw corrupt_error(where + ": constant layout with lists but no levels");
      if (!scalar && s.max_def) out.def.assign(std::size_t(out.num_slots), s.null_level(0));
      visible = out.num_slots;
    }
    if (scalar) {
      out.constant = std::move(scalar);
      out.values.num_values = visible;
    } else {
      out.values.num_values = visible;  // empty block: all null
    }
    return out;
  }
  if (const auto* bl = std::get_if<enc21::blob_layout>(&layout.value)) {
    // Legacy blobs (2.1): the inner page holds a (position u64, size u64) descriptor per
    // row; the bytes live elsewhere in the file. size 0 is an empty value (position 0)
    // or a null (position = def << 16 | rep).
    if (!bl->inner_layout) throw corrupt_error(where + ": blob layout without an inner layout");
    if (!read_range) throw unsupported_error(where + ": blob values need the file's bytes (pass read_range to the decoder)");
    auto inner = read_page(*bl->inner_layout, buffers, page_rows, begin, end, where + " (blob descriptions)");
    if (!inner.rep.empty() || !inner.def.empty() || inner.values.k != data_block::kind::fixed || inner.values.bits_per_value != 128)
      throw corrupt_error(where + ": blob descriptions are not 128-bit (position, size) rows without levels");
    out.layers = bl->layers.empty() ? std::vector<layer>{layer::nullable_item} : bl->layers;
    const level_scheme s(out.layers);
    if (s.max_rep) throw unsupported_error(where + ": blobs inside lists");
    const auto n = inner.values.num_values;
    aligned_buffer offs, bytes;
    offs.resize(std::size_t((n + 1) * 8));
    std::vector<std::uint16_t> def;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto* d = inner.values.data.data() + 16 * i;
      const auto pos = le::load<std::uint64_t>(d), size = le::load<std::uint64_t>(d + 8);
      std::uint16_t level = 0;
      if (size == 0 && pos != 0) {
        level = std::uint16_t((pos >> 16) & 0xFFFF);
        if (level == 0 || level > s.max_def) throw corrupt_error(where + ": blob null marker " + std::to_string(pos));
      } else if (size) {
        check_alloc(bytes.size() + size, where + " (blob value)");
        shared_bytes v;
        try {
          v = read_range(pos, size);
        } catch (const corrupt_error& e) {  // name the row and its description, not just the file range
          throw corrupt_error(where + ": blob value of row " + std::to_string(begin + i) + " (" + std::to_string(size) +
                              " bytes at file offset " + std::to_string(pos) + "): " + e.what());
        }
        if (v.size() != size) throw corrupt_error(where + ": blob value at " + std::to_string(pos) + " is truncated");
        bytes.append(v.view());
      }
      def.push_back(level);
      le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
    }
    if (s.max_def) out.def = std::move(def);
    out.num_slots = n;
    out.values = data_block::variable(n, 64, shared_bytes(std::move(offs)), shared_bytes(std::move(bytes)));
    return out;
  }
  if (std::holds_alternative<enc21::sparse_layout>(layout.value))
    throw unsupported_error(where + ": sparse layouts (Lance 2.3) are not supported by lancet's reader");
  throw corrupt_error(where + ": page layout is empty");
}

}  // namespace lancet::encoding::structural
