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
// Full-zip pages: [zipped values][repetition index?], written by fullzip.hpp (which
//   describes the layout) and parsed by fullzip_reader.hpp.
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
#include "lancet/encoding/structural/fullzip_reader.hpp"
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

// The page has at least n buffers (`what` names the layout).
inline void check_page_buffers(const std::vector<shared_bytes>& buffers, std::size_t n, const char* what,
                               const std::string& where) {
  if (buffers.size() < n)
    throw corrupt_error(where + ": " + what + " needs " + std::to_string(n) + " buffers, the page has " +
                        std::to_string(buffers.size()));
}

// ---- mini-block pages ------------------------------------------------------------------

// The chunks [c0, c1) to decode for a row range; first_row: the number of the first
// row that starts in chunk c0.
struct chunk_span {
  std::size_t c0 = 0, c1 = 0;
  std::uint64_t first_row = 0;
};

// The chunks holding rows [begin, end) (begin < end) of a page with repetition, from
// its repetition index ri: per chunk the rows it completes, and the levels of a row it
// leaves unfinished.
inline chunk_span chunks_by_repetition_index(const pb::enc21::mini_block_layout& m, const std::vector<chunk_meta>& chunks,
                                             const shared_bytes& ri, std::uint64_t page_rows, std::uint64_t begin,
                                             std::uint64_t end, const std::string& where) {
  chunk_span out;
  const std::uint64_t stride = 8 * (std::uint64_t(m.repetition_index_depth) + 1);
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
  out.c0 = i;
  out.first_row = rows_before[i] + ((i > 0 && leftover[i - 1] > 0) ? 1 : 0);
  std::size_t j = out.c0;
  while (j < chunks.size() && rows_before[j + 1] < end) ++j;
  out.c1 = std::min(chunks.size(), j + 1);
  return out;
}

// The chunks to decode for rows [begin, end): none for no rows; without repetition
// values are rows; with repetition the index narrows them down, else all of them.
inline chunk_span mini_block_chunks_of_rows(const pb::enc21::mini_block_layout& m, const structural::level_scheme& s,
                                            const std::vector<chunk_meta>& chunks,
                                            const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                            std::uint64_t begin, std::uint64_t end, const std::string& where) {
  chunk_span out{0, chunks.size(), 0};
  if (begin == end) {
    out.c1 = out.c0;
  } else if (s.max_rep == 0) {
    // Values are rows.
    std::uint64_t at = 0;
    std::size_t i = 0;
    while (i < chunks.size() && at + chunks[i].values <= begin) at += chunks[i++].values;
    out.c0 = i;
    out.first_row = at;
    std::uint64_t e = at;
    while (i < chunks.size() && e < end) e += chunks[i++].values;
    out.c1 = i;
  } else if (m.repetition_index_depth > 0) {
    const std::size_t dict_buffers = m.dictionary ? 1 : 0;
    out = chunks_by_repetition_index(m, chunks, buffers[2 + dict_buffers], page_rows, begin, end, where);
  }
  return out;
}

// Chunks [c0, c1) decoded and put together: their levels and values.
struct decoded_chunks {
  std::vector<std::uint16_t> rep, def;
  structural::data_block values;
};

inline decoded_chunks decode_chunks(const pb::enc21::mini_block_layout& m, const shared_bytes& data,
                                    const std::vector<chunk_meta>& chunks, std::size_t c0, std::size_t c1,
                                    const std::string& where) {
  decoded_chunks out;
  std::vector<structural::data_block> parts;
  for (std::size_t i = c0; i < c1; ++i) {
    auto d = decode_chunk(m, data, chunks[i], m.has_large_chunk, where + " chunk " + std::to_string(i));
    if (m.rep_compression) out.rep.insert(out.rep.end(), d.rep.begin(), d.rep.end());
    if (m.def_compression) out.def.insert(out.def.end(), d.def.begin(), d.def.end());
    if (!m.rep_compression && !m.def_compression) {
      // no levels: slots are values
    }
    parts.push_back(std::move(d.values));
  }
  out.values = concat_blocks(parts);
  return out;
}

// Rows [begin, end) of a mini-block page: buffers [chunk metadata][chunk data]
// [dictionary?][repetition index?].
inline structural::page_slice read_mini_block_page(const pb::enc21::mini_block_layout& m,
                                                   const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                                   std::uint64_t begin, std::uint64_t end, const std::string& where) {
  structural::page_slice out;
  out.layers = m.layers;
  const structural::level_scheme s(m.layers);
  if (bool(m.rep_compression) != (s.max_rep > 0))
    throw corrupt_error(where + ": repetition levels and list layers disagree");
  if (m.def_compression && s.max_def == 0) throw corrupt_error(where + ": definition levels without nullable layers");
  const std::size_t dict_buffers = m.dictionary ? 1 : 0;
  const bool has_rep_index = m.repetition_index_depth > 0;
  check_page_buffers(buffers, 2 + dict_buffers + (has_rep_index ? 1 : 0), "a mini-block page", where);
  if (m.dictionary) {
    out.dictionary = structural::decode_block(*m.dictionary, buffers[2], m.num_dictionary_items, where + " (dictionary)");
  }
  const auto chunks = parse_chunk_meta(buffers[0], buffers[1], m.has_large_chunk, m.num_items, where);
  const auto [c0, c1, first_row] = mini_block_chunks_of_rows(m, s, chunks, buffers, page_rows, begin, end, where);
  auto [rep, def, values] = decode_chunks(m, buffers[1], chunks, c0, c1, where);
  std::uint64_t total_slots = (m.rep_compression || m.def_compression) ? std::max(rep.size(), def.size()) : values.num_values;
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

// ---- full-zip pages (parsed by fullzip_reader.hpp) ----------------------------------------

// Cuts rows [begin, end) out of a slice of a whole page: its levels and its values.
inline void keep_rows(structural::page_slice& out, const structural::level_scheme& s, std::uint64_t begin,
                      std::uint64_t end, const std::string& where) {
  std::uint64_t sb = begin, se = end;
  if (s.max_rep) std::tie(sb, se) = row_slots(out.rep, s.max_rep, 0, begin, end, where);
  const auto vb = visible_count(s, out.def, 0, sb), vc = visible_count(s, out.def, sb, se);
  if (!out.rep.empty()) out.rep = std::vector<std::uint16_t>(out.rep.begin() + std::ptrdiff_t(sb), out.rep.begin() + std::ptrdiff_t(se));
  if (!out.def.empty()) out.def = std::vector<std::uint16_t>(out.def.begin() + std::ptrdiff_t(sb), out.def.begin() + std::ptrdiff_t(se));
  out.num_slots = se - sb;
  out.values = slice_block(out.values, vb, vc);
}

inline structural::page_slice read_full_zip_page(const pb::enc21::full_zip_layout& z,
                                                 const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                                 std::uint64_t begin, std::uint64_t end, const std::string& where) {
  structural::page_slice out;
  out.layers = z.layers;
  const structural::level_scheme s(z.layers);
  check_page_buffers(buffers, 1, "a full-zip page", where);
  auto part = structural::read_full_zip_slots(z, s, buffers, page_rows, begin, end, where);
  out.rep = std::move(part.rep);
  out.def = std::move(part.def);
  out.num_slots = part.num_slots;
  out.values = std::move(part.values);
  out.packed = std::move(part.packed);
  if (part.whole_page) keep_rows(out, s, begin, end, where);
  return out;
}

// ---- constant / all-null pages -----------------------------------------------------------

// The scalar of a constant page stored in a buffer: u32 count, then per sub-buffer u32
// length + bytes; the value bytes are the last sub-buffer.
inline std::string parse_constant_scalar(const shared_bytes& b, const std::string& where) {
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
  return last;
}

// The levels of rows [begin, end) of a constant page from its rep / def buffers (rb,
// db); returns how many of the slots are visible.
inline std::uint64_t constant_page_levels(const pb::enc21::constant_layout& c, const structural::level_scheme& s,
                                          const shared_bytes& rb, const shared_bytes& db, std::uint64_t begin,
                                          std::uint64_t end, const std::string& where, structural::page_slice& out) {
  auto levels = [&](const std::optional<structural::compressive>& comp, const shared_bytes& b, std::uint64_t n) {
    structural::check_alloc(structural::checked_mul(n, 2, "levels"), where + " levels");
    if (comp) return structural::decode_levels(*comp, b, n, where);
    if (b.size() % 2) throw corrupt_error(where + ": level buffer of odd size");
    std::vector<std::uint16_t> v(b.size() / 2);
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  auto rep = rb.empty() && !c.rep_compression ? std::vector<std::uint16_t>{}
                                              : levels(c.rep_compression, rb, c.num_rep_values ? c.num_rep_values : rb.size() / 2);
  auto def = db.empty() && !c.def_compression ? std::vector<std::uint16_t>{}
                                              : levels(c.def_compression, db, c.num_def_values ? c.num_def_values : db.size() / 2);
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
  return visible_count(s, out.def, 0, out.num_slots);
}

// Rows [begin, end) of a constant page (AllNullLayout / ConstantLayout): no values (all
// null) or one scalar, inline or in a buffer, for every visible slot.
inline structural::page_slice read_constant_page(const pb::enc21::constant_layout& c,
                                                 const std::vector<shared_bytes>& buffers, std::uint64_t begin,
                                                 std::uint64_t end, const std::string& where) {
  using structural::layer;
  structural::page_slice out;
  out.layers = c.layers.empty() ? std::vector<layer>{layer::nullable_item} : c.layers;
  const structural::level_scheme s(out.layers);
  std::size_t level_buf = 0;
  std::optional<std::string> scalar = c.inline_value;
  if (scalar) {
    if (buffers.size() != 0 && buffers.size() != 2)
      throw corrupt_error(where + ": constant layout with an inline value and " + std::to_string(buffers.size()) + " buffers");
  } else if (buffers.size() == 1 || buffers.size() == 3) {
    scalar = parse_constant_scalar(buffers[0], where);
    level_buf = 1;
  }
  const bool has_levels = buffers.size() >= level_buf + 2;
  std::uint64_t visible = 0;
  if (has_levels) {
    visible = constant_page_levels(c, s, buffers[level_buf], buffers[level_buf + 1], begin, end, where, out);
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

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// Reads rows [begin, end) of a page of `page_rows` rows.
inline page_slice read_page(const enc21::page_layout& layout, const std::vector<shared_bytes>& buffers,
                            std::uint64_t page_rows, std::uint64_t begin, std::uint64_t end, const std::string& where,
                            const read_file_range& read_range = {});

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// ---- legacy blob pages (2.1) ---------------------------------------------------------------

// Rows [begin, end) of a 2.1 blob page: the inner page holds a (position u64, size u64)
// description per row; the bytes live elsewhere in the file (read with read_range).
// size 0 is an empty value (position 0) or a null (position = def << 16 | rep).
inline structural::page_slice read_legacy_blob_page(const pb::enc21::blob_layout& bl,
                                                    const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                                    std::uint64_t begin, std::uint64_t end, const std::string& where,
                                                    const structural::read_file_range& read_range) {
  using structural::data_block;
  using structural::layer;
  if (!bl.inner_layout) throw corrupt_error(where + ": blob layout without an inner layout");
  if (!read_range) throw unsupported_error(where + ": blob values need the file's bytes (pass read_range to the decoder)");
  auto inner = structural::read_page(*bl.inner_layout, buffers, page_rows, begin, end, where + " (blob descriptions)");
  if (!inner.rep.empty() || !inner.def.empty() || inner.values.k != data_block::kind::fixed || inner.values.bits_per_value != 128)
    throw corrupt_error(where + ": blob descriptions are not 128-bit (position, size) rows without levels");
  structural::page_slice out;
  out.layers = bl.layers.empty() ? std::vector<layer>{layer::nullable_item} : bl.layers;
  const structural::level_scheme s(out.layers);
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
      structural::check_alloc(bytes.size() + size, where + " (blob value)");
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

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

inline page_slice read_page(const enc21::page_layout& layout, const std::vector<shared_bytes>& buffers,
                            std::uint64_t page_rows, std::uint64_t begin, std::uint64_t end, const std::string& where,
                            const read_file_range& read_range) {
  if (begin > end || end > page_rows)
    throw corrupt_error(where + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside a page of " +
                        std::to_string(page_rows));
  if (const auto* m = std::get_if<enc21::mini_block_layout>(&layout.value))
    return detail::read_mini_block_page(*m, buffers, page_rows, begin, end, where);
  if (const auto* z = std::get_if<enc21::full_zip_layout>(&layout.value))
    return detail::read_full_zip_page(*z, buffers, page_rows, begin, end, where);
  if (const auto* c = std::get_if<enc21::constant_layout>(&layout.value))
    return detail::read_constant_page(*c, buffers, begin, end, where);
  if (const auto* bl = std::get_if<enc21::blob_layout>(&layout.value))
    return detail::read_legacy_blob_page(*bl, buffers, page_rows, begin, end, where, read_range);
  if (std::holds_alternative<enc21::sparse_layout>(layout.value))
    throw unsupported_error(where + ": sparse layouts (Lance 2.3) are not supported by lancet's reader");
  throw corrupt_error(where + ": page layout is empty");
}

}  // namespace lancet::encoding::structural
