// Writing mini-block pages: value compressors that cut a page's values into chunks
// (a power-of-two number of values each, but the last), the compression of each
// chunk's rep/def levels, the chunk serialisation (see page_decoder.hpp for the
// layout), the chunk metadata words and the repetition index.
//
// Chunk sizes follow Lance: about 4 KiB of values (the field's minichunk size), at most
// 4096 values; bit-packed chunks hold 1024 values; RLE chunks at most 4096.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/by_width.hpp"
#include "lancet/encoding/structural/compression/bitpack.hpp"
#include "lancet/encoding/structural/compression/bss.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/compression/general.hpp"
#include "lancet/encoding/structural/compression/rle.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/page_plan.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

namespace enc21 = pb::enc21;
using compressive = enc21::compressive_encoding;

inline constexpr std::uint64_t max_chunk_values = 4096;

struct mini_chunk {
  std::uint64_t values = 0;
  std::vector<std::uint64_t> sizes;  // bytes of each value buffer in this chunk
};

// A page's values cut into chunks: each value buffer is the concatenation of its
// per-chunk parts.
struct mini_compressed {
  std::vector<aligned_buffer> buffers;
  std::vector<mini_chunk> chunks;
  compressive encoding;
};

namespace enc {

inline compressive flat(std::uint64_t bits) { return compressive{enc21::flat{bits, std::nullopt}}; }
inline compressive variable(std::uint64_t offset_bits) {
  enc21::variable v;
  v.offsets = flat(offset_bits);
  return compressive{std::move(v)};
}
inline compressive general(enc21::compression_scheme s, std::optional<std::int32_t> level, compressive inner) {
  enc21::general g;
  g.compression = enc21::buffer_compression{s, level};
  g.values = std::move(inner);
  return compressive{std::move(g)};
}
// `values` inside one fixed_size_list per FSL layer of the block (the outermost last
// wrapped, so it ends outermost).
inline compressive fixed_size_lists(compressive values, const std::vector<fsl_layer>& layers) {
  for (std::size_t l = layers.size(); l-- > 0;) {
    enc21::fixed_size_list f;
    f.items_per_value = layers[l].dimension;
    f.values = std::move(values);
    f.has_validity = layers[l].has_validity;
    values = compressive{std::move(f)};
  }
  return values;
}

}  // namespace enc

namespace mini {

// Values per chunk for fixed-width data: the largest power of two whose bytes stay
// within the target (Lance's ValueEncoder), at most max_values.
inline std::uint64_t fixed_chunk_values(std::uint64_t bits, std::uint64_t target, std::uint64_t max_values) {
  const bool whole_bytes = bits % 8 == 0;
  std::uint64_t size = whole_bytes ? 2 * (bits / 8) : 2 * bits;  // bytes for 2 values / 8-value words
  std::uint64_t n = whole_bytes ? 2 : 8;
  // Lance doubles while twice the size stays under 8186 bytes for its 4 KiB target.
  const std::uint64_t limit = 2 * target - 6;
  while (2 * size < limit && 2 * n <= max_values) {
    size *= 2;
    n *= 2;
  }
  return std::max<std::uint64_t>(std::min(n, max_values), 2);
}

inline mini_compressed flat(const data_block& b, std::uint64_t target, std::uint64_t max_values) {
  mini_compressed out;
  out.encoding = enc::flat(b.bits_per_value);
  const auto per = fixed_chunk_values(b.bits_per_value, target, max_values);
  aligned_buffer buf;
  buf.append(b.data.data(), std::size_t((b.num_values * b.bits_per_value + 7) / 8));
  for (std::uint64_t at = 0; at < b.num_values; at += per) {
    const auto n = std::min(per, b.num_values - at);
    const auto bytes = ((at + n) * b.bits_per_value + 7) / 8 - (at * b.bits_per_value) / 8;
    out.chunks.push_back({n, {bytes}});
  }
  out.buffers.push_back(std::move(buf));
  return out;
}

// Fixed-size lists: rows are never split; item validity (one bit per item, per layer
// that has it) is a buffer of its own before the values.
inline mini_compressed fsl(const data_block& b, std::uint64_t target, std::uint64_t max_values) {
  mini_compressed out;
  std::uint64_t cum = 1, validity_bytes = 0;
  for (const auto& l : b.fsl) {
    cum *= l.dimension;
    if (l.has_validity) validity_bytes += (cum + 7) / 8;
  }
  const std::uint64_t row_bits = cum * b.bits_per_value;
  // Rows per chunk from the estimated row size.
  std::uint64_t per;
  if (row_bits % 8 == 0) per = fixed_chunk_values((row_bits / 8 + validity_bytes) * 8, target, max_values);
  else per = fixed_chunk_values(row_bits + validity_bytes * 8 * 8, target, max_values);
  out.encoding = enc::fixed_size_lists(enc::flat(b.bits_per_value), b.fsl);
  std::vector<aligned_buffer> validity;
  for (const auto& l : b.fsl)
    if (l.has_validity) validity.emplace_back();
  for (std::uint64_t at = 0; at < b.num_values; at += per) {
    const auto n = std::min(per, b.num_values - at);
    mini_chunk c{n, {}};
    std::uint64_t c2 = 1;
    std::size_t v = 0;
    for (const auto& l : b.fsl) {
      c2 *= l.dimension;
      if (!l.has_validity) continue;
      aligned_buffer& dst = validity[v++];
      const auto start = dst.size();
      dst.resize(start + std::size_t((n * c2 + 7) / 8));
      arrow::copy_bits(l.validity.data(), std::int64_t(at * c2), dst.data() + start, 0, std::int64_t(n * c2));
      c.sizes.push_back((n * c2 + 7) / 8);
    }
    c.sizes.push_back((n * row_bits + 7) / 8);
    out.chunks.push_back(std::move(c));
  }
  for (auto& v : validity) out.buffers.push_back(std::move(v));
  aligned_buffer data;
  if (row_bits % 8 == 0) {
    data.append(b.data.data(), std::size_t(b.num_values * row_bits / 8));
  } else {
    // Each chunk's bits start on a byte.
    for (std::uint64_t at = 0; at < b.num_values; at += per) {
      const auto n = std::min(per, b.num_values - at);
      const auto start = data.size();
      data.resize(start + std::size_t((n * row_bits + 7) / 8));
      arrow::copy_bits(b.data.data(), std::int64_t(at * row_bits), data.data() + start, 0, std::int64_t(n * row_bits));
    }
  }
  out.buffers.push_back(std::move(data));
  return out;
}

// Variable-width values: each chunk holds n + 1 offsets (counted from the chunk's
// start) then the bytes, padded to the offset width; chunks are cut where Lance cuts
// them (doubling the value count while the chunk stays within the target).
inline mini_compressed variable(const data_block& b, std::uint64_t target, std::uint64_t max_values) {
  mini_compressed out;
  const std::uint64_t w = b.bits_per_offset / 8;
  out.encoding = enc::variable(b.bits_per_offset);
  aligned_buffer buf;
  const std::uint64_t n = b.num_values;
  std::uint64_t last = 0;
  auto bytes_between = [&](std::uint64_t from, std::uint64_t to) { return b.offset(to) - b.offset(from); };
  while (last < n) {
    std::uint64_t take;
    std::uint64_t num = 1, next = 2;
    while (true) {
      if (last + next > n) {
        const auto size = bytes_between(last, n) + (n - last + 1) * w;
        take = (size <= target && n - last <= max_values) ? n - last : num;
        break;
      }
      const auto size = bytes_between(last, last + next) + (next + 1) * w;
      if (size <= target && next <= max_values) {
        num = next;
        next *= 2;
      } else {
        take = num;  // Lance 12 keeps the last count that fits
        break;
      }
    }
    take = std::max<std::uint64_t>(1, std::min(take, n - last));
    if (last + take < n && take < 2) take = std::min<std::uint64_t>(2, n - last);
    const auto start = buf.size();
    const std::uint64_t header = (take + 1) * w;
    for (std::uint64_t i = 0; i <= take; ++i) {
      const auto o = header + bytes_between(last, last + i);
      std::uint8_t tmp[8];
      if (w == 8) le::store<std::uint64_t>(tmp, o);
      else le::store<std::uint32_t>(tmp, std::uint32_t(o));
      buf.append(tmp, std::size_t(w));
    }
    buf.append(b.data.data() + b.offset(last), std::size_t(bytes_between(last, last + take)));
    while ((buf.size() - start) % w) buf.push_back(0x48);
    out.chunks.push_back({take, {buf.size() - start}});
    last += take;
  }
  out.buffers.push_back(std::move(buf));
  return out;
}

// FSST over the whole page, then variable chunks of the compressed values.
inline mini_compressed fsst_variable(const data_block& b, std::uint64_t target, std::uint64_t max_values) {
  const std::uint64_t w = b.bits_per_offset / 8;
  if (b.value_bytes() < fsst::least_input_size) {
    // Lance's FSST leaves fewer than 32 KiB of bytes uncompressed (a disabled table).
    auto out = variable(b, target, max_values);
    enc21::fsst f;
    f.symbol_table = fsst::symbol_table().serialize();
    f.values = std::move(out.encoding);
    out.encoding = compressive{std::move(f)};
    return out;
  }
  fsst::symbol_table table;
  if (w == 8) table = fsst::symbol_table::train(reinterpret_cast<const std::uint64_t*>(b.offsets.data()), std::size_t(b.num_values), b.data.data());
  else table = fsst::symbol_table::train(reinterpret_cast<const std::uint32_t*>(b.offsets.data()), std::size_t(b.num_values), b.data.data());
  aligned_buffer offs, bytes;
  offs.resize(std::size_t((b.num_values + 1) * w));
  for (std::uint64_t i = 0; i < b.num_values; ++i) {
    table.compress(b.data.data() + b.offset(i), std::size_t(b.offset(i + 1) - b.offset(i)), bytes);
    if (w == 8) le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
    else le::store<std::uint32_t>(offs.data() + 4 * (i + 1), std::uint32_t(bytes.size()));
  }
  const auto compressed = data_block::variable(b.num_values, b.bits_per_offset, shared_bytes(std::move(offs)),
                                               shared_bytes(std::move(bytes)));
  auto out = variable(compressed, target, max_values);
  enc21::fsst f;
  f.symbol_table = table.serialize();
  f.values = std::move(out.encoding);
  out.encoding = compressive{std::move(f)};
  return out;
}

// Inline bit-packing: chunks of 1024 values (fewer if capped), each [T width][packed 1024].
inline mini_compressed bitpack_inline(const data_block& b, std::uint64_t max_values) {
  mini_compressed out;
  enc21::inline_bitpacking ib;
  ib.uncompressed_bits_per_value = b.bits_per_value;
  out.encoding = compressive{ib};
  const std::uint64_t per = std::min<std::uint64_t>(bitpack::chunk_values, std::bit_floor(std::max<std::uint64_t>(2, max_values)));
  aligned_buffer buf;
  detail::by_width(b.bits_per_value, [&](auto t) {
    using T = decltype(t);
    const T* v = reinterpret_cast<const T*>(b.data.data());
    for (std::uint64_t at = 0; at < b.num_values; at += per) {
      const auto n = std::min(per, b.num_values - at);
      const auto start = buf.size();
      bitpack::append_inline_chunk<T>(v + at, std::size_t(n), buf);
      out.chunks.push_back({n, {buf.size() - start}});
    }
    return 0;
  });
  out.buffers.push_back(std::move(buf));
  return out;
}

// RLE chunks: the most values (a power of two, at most 4096) whose runs fit the limit.
inline mini_compressed rle(const data_block& b, std::uint64_t limit, std::uint64_t max_values) {
  mini_compressed out;
  const std::size_t w = std::size_t(b.bits_per_value / 8);
  enc21::rle r;
  r.values = enc::flat(b.bits_per_value);
  r.run_lengths = enc::flat(8);
  out.encoding = compressive{std::move(r)};
  const std::uint64_t cap = std::min<std::uint64_t>(4096, std::max<std::uint64_t>(2, max_values));
  aligned_buffer values, lengths;
  const std::uint8_t* d = b.data.data();
  std::uint64_t at = 0;
  while (at < b.num_values) {
    const std::uint64_t rest = b.num_values - at;
    // Scan runs from `at`, noting the cost at each power-of-two boundary.
    std::uint64_t count = 0, entries = 0, best = 0;
    bool all_fit = false;
    std::uint64_t i = at;
    while (i < b.num_values && count < cap) {
      std::uint64_t j = i + 1;
      while (j < b.num_values && std::memcmp(d + j * w, d + i * w, w) == 0) ++j;
      const std::uint64_t len = j - i;
      for (std::uint64_t p = std::bit_ceil(count + 1); p <= count + len && p <= cap; p *= 2) {
        const auto e = entries + (p - count + 254) / 255;
        if (e * (w + 1) <= limit) best = p;
      }
      entries += (len + 254) / 255;
      count += len;
      i = j;
      if (entries * (w + 1) > limit) break;
    }
    if (count >= rest && rest <= cap && entries * (w + 1) <= limit) all_fit = true;
    const std::uint64_t n = all_fit ? rest : std::max<std::uint64_t>(best, std::min<std::uint64_t>(2, rest));
    const auto vs = values.size(), ls = lengths.size();
    rle::encode(d + at * w, std::size_t(n), w, values, lengths);
    out.chunks.push_back({n, {values.size() - vs, lengths.size() - ls}});
    at += n;
  }
  out.buffers.push_back(std::move(values));
  out.buffers.push_back(std::move(lengths));
  return out;
}

// Byte-stream split, 1024 (32-bit) or 512 (64-bit) values per chunk.
inline mini_compressed bss(const data_block& b, std::uint64_t max_values) {
  mini_compressed out;
  const std::size_t w = std::size_t(b.bits_per_value / 8);
  enc21::byte_stream_split s;
  s.values = enc::flat(b.bits_per_value);
  out.encoding = compressive{std::move(s)};
  const std::uint64_t per = std::min<std::uint64_t>(bss::chunk_values(w), std::bit_floor(std::max<std::uint64_t>(2, max_values)));
  aligned_buffer buf;
  buf.resize(std::size_t(b.num_values * w));
  for (std::uint64_t at = 0; at < b.num_values; at += per) {
    const auto n = std::min(per, b.num_values - at);
    bss::split(b.data.data() + at * w, std::size_t(n), w, buf.data() + at * w);
    out.chunks.push_back({n, {n * w}});
  }
  out.buffers.push_back(std::move(buf));
  return out;
}

// General compression of each chunk's first buffer; kept only when it is smaller.
inline mini_compressed general(mini_compressed inner, enc21::compression_scheme s, std::optional<std::int32_t> level) {
  if (inner.buffers.empty() || inner.buffers[0].size() < 4096) return inner;
  aligned_buffer packed;
  std::vector<mini_chunk> chunks = inner.chunks;
  std::uint64_t at = 0;
  for (auto& c : chunks) {
    const auto start = packed.size();
    general::compress(s, level, inner.buffers[0].view().subspan(std::size_t(at), std::size_t(c.sizes[0])), packed);
    at += c.sizes[0];
    c.sizes[0] = packed.size() - start;
  }
  if (packed.size() >= inner.buffers[0].size()) return inner;
  inner.buffers[0] = std::move(packed);
  inner.chunks = std::move(chunks);
  inner.encoding = enc::general(s, level, std::move(inner.encoding));
  return inner;
}

}  // namespace mini

// ---- levels ------------------------------------------------------------------------

// How a page's rep or def levels are compressed in each chunk (chosen once per page).
struct level_codec {
  enum class kind : std::uint8_t { flat, inline_bitpack, out_of_line, rle } k = kind::flat;
  unsigned width = 16;  // out_of_line
  compressive encoding() const {
    switch (k) {
      case kind::inline_bitpack: {
        enc21::inline_bitpacking ib;
        ib.uncompressed_bits_per_value = 16;
        return compressive{ib};
      }
      case kind::out_of_line: {
        enc21::out_of_line_bitpacking ob;
        ob.uncompressed_bits_per_value = 16;
        ob.values = enc::flat(width);
        return compressive{std::move(ob)};
      }
      case kind::rle: {
        enc21::rle r;
        r.values = enc::flat(16);
        r.run_lengths = enc::flat(8);
        return compressive{std::move(r)};
      }
      default: return enc::flat(16);
    }
  }
  aligned_buffer compress(const std::uint16_t* v, std::size_t n) const {
    switch (k) {
      case kind::inline_bitpack: {
        aligned_buffer out;
        for (std::size_t at = 0; at < n || (n == 0 && at == 0); at += bitpack::chunk_values) {
          bitpack::append_inline_chunk<std::uint16_t>(v + at, std::min<std::size_t>(bitpack::chunk_values, n - at), out);
          if (n == 0) break;
        }
        return out;
      }
      case kind::out_of_line: return bitpack::encode_out_of_line<std::uint16_t>(v, n, width);
      case kind::rle: return rle::encode_block(reinterpret_cast<const std::uint8_t*>(v), n, 2);
      default: {
        aligned_buffer out;
        out.append(v, n * 2);
        return out;
      }
    }
  }
};

// Lance 12's choice for a page of levels: the smallest of plain u16, bit-packing
// (inline for up to 1024 levels, else out-of-line at the page's widest width) and,
// from 2.2, RLE.
inline level_codec choose_level_codec(const std::vector<std::uint16_t>& levels, unsigned minor) {
  level_codec c;
  const std::size_t n = levels.size();
  if (n == 0) return c;
  const std::uint64_t flat_size = 2 * n;
  unsigned max_w = 0;
  std::uint64_t inline_size = 0;
  for (std::size_t at = 0; at < n; at += bitpack::chunk_values) {
    const auto w = bitpack::needed_width(levels.data() + at, std::min<std::size_t>(bitpack::chunk_values, n - at));
    max_w = std::max(max_w, w);
    inline_size += 2 * (1 + bitpack::packed_words<std::uint16_t>(w));
  }
  std::uint64_t best = flat_size;
  if (n <= bitpack::chunk_values) {
    if (inline_size < best) { best = inline_size; c.k = level_codec::kind::inline_bitpack; }
  } else {
    const std::size_t whole = n / bitpack::chunk_values, tail = n % bitpack::chunk_values;
    const std::uint64_t words = bitpack::packed_words<std::uint16_t>(max_w) * 2;
    std::uint64_t oob = whole * words;
    if (tail) oob += std::size_t(max_w) * (bitpack::chunk_values - tail) < (16 - max_w) * tail ? words : 2 * tail;
    if (oob < best) { best = oob; c.k = level_codec::kind::out_of_line; c.width = max_w; }
  }
  if (minor >= 2) {
    const auto rle_size = 8 + rle::encoded_size(reinterpret_cast<const std::uint8_t*>(levels.data()), n, 2);
    if (rle_size < best) { best = rle_size; c.k = level_codec::kind::rle; }
  }
  return c;
}

// ---- serialisation ------------------------------------------------------------------

struct serialized_miniblock {
  aligned_buffer metadata;
  aligned_buffer data;
  std::optional<aligned_buffer> repetition_index;
  compressive rep_encoding, def_encoding;
};

// Thrown (internally) when a chunk breaks a limit of the chunk format; the caller
// re-chunks with fewer values per chunk.
struct chunk_too_large {
  std::uint64_t values;
};

// Lays out chunks with their levels. rep/def may be empty (absent). Slots are cut
// right after each chunk's last visible value (the last chunk takes the rest).
inline serialized_miniblock serialize_miniblock(const mini_compressed& mc, const level_scheme& s,
                                                const std::vector<std::uint16_t>& rep, const std::vector<std::uint16_t>& def,
                                                bool large, unsigned minor) {
  serialized_miniblock out;
  const bool has_rep = !rep.empty() || s.max_rep > 0;
  const bool has_def = !def.empty() || s.max_def > 0;
  const std::size_t num_levels = std::max(rep.size(), def.size());
  const level_codec rep_codec = has_rep ? choose_level_codec(rep, minor) : level_codec{};
  const level_codec def_codec = has_def ? choose_level_codec(def, minor) : level_codec{};
  out.rep_encoding = rep_codec.encoding();
  out.def_encoding = def_codec.encoding();
  std::vector<std::uint64_t> rep_index;
  std::vector<std::uint64_t> buffer_at(mc.buffers.size(), 0);
  std::size_t slot = 0;
  const std::uint64_t max_chunk_bytes = large ? (std::uint64_t(1) << 28) * 8 : 4096 * 8;
  {
    std::size_t total = 2 * (rep.size() + def.size()) + mc.chunks.size() * (16 + 8 * (2 + mc.buffers.size()));
    for (const auto& b : mc.buffers) total += b.size();
    out.data.reserve(total);
  }
  for (std::size_t ci = 0; ci < mc.chunks.size(); ++ci) {
    const auto& c = mc.chunks[ci];
    const bool last = ci + 1 == mc.chunks.size();
    // Levels of this chunk.
    std::size_t end_slot = slot;
    if (!has_rep && !has_def) {
      end_slot = slot;  // no levels
    } else if (last) {
      end_slot = num_levels;
    } else if (!has_rep || s.max_visible_def == s.max_def || def.empty()) {
      end_slot = slot + c.values;
    } else {
      std::uint64_t seen = 0;
      end_slot = slot;
      while (seen < c.values) {
        if (end_slot >= num_levels) throw corrupt_error("levels hold fewer values than the chunks");
        if (def[end_slot] <= s.max_visible_def) ++seen;
        ++end_slot;
      }
    }
    const std::size_t nl = end_slot - slot;
    if (nl > 0xFFFF) throw chunk_too_large{c.values};
    const std::size_t start = out.data.size();
    aligned_buffer rep_bytes, def_bytes;
    if (has_rep) rep_bytes = rep_codec.compress(rep.data() + slot, nl);
    if (has_def) def_bytes = def_codec.compress(def.data() + slot, nl);
    if (rep_bytes.size() > 0xFFFF || def_bytes.size() > 0xFFFF) throw chunk_too_large{c.values};
    auto put16 = [&](std::uint64_t v) {
      std::uint8_t b[2];
      le::store<std::uint16_t>(b, std::uint16_t(v));
      out.data.append(b, 2);
    };
    put16(has_rep || has_def ? nl : 0);
    if (has_rep) put16(rep_bytes.size());
    if (has_def) put16(def_bytes.size());
    for (auto sz : c.sizes) {
      if (large) {
        if (sz > 0xFFFFFFFFull) throw chunk_too_large{c.values};
        std::uint8_t b[4];
        le::store<std::uint32_t>(b, std::uint32_t(sz));
        out.data.append(b, 4);
      } else {
        if (sz > 0xFFFF) throw chunk_too_large{c.values};
        put16(sz);
      }
    }
    auto pad8 = [&](std::uint8_t byte) {
      while ((out.data.size() - start) % 8) out.data.push_back(byte);
    };
    pad8(0xFE);  // Lance pads with 0xFE everywhere, the 2.2 (large-chunk) header included
    if (has_rep) { out.data.append(rep_bytes.view()); pad8(0xFE); }
    if (has_def) { out.data.append(def_bytes.view()); pad8(0xFE); }
    for (std::size_t b = 0; b < mc.buffers.size(); ++b) {
      out.data.append(mc.buffers[b].data() + buffer_at[b], std::size_t(c.sizes[b]));
      buffer_at[b] += c.sizes[b];
      pad8(0xFE);
    }
    const std::uint64_t chunk_bytes = out.data.size() - start;
    if (chunk_bytes > max_chunk_bytes) throw chunk_too_large{c.values};
    const unsigned log = last ? 0 : unsigned(std::countr_zero(c.values));
    if (!last && (c.values < 2 || !std::has_single_bit(c.values) || log > 15))
      throw internal_error("mini-block chunk of " + std::to_string(c.values) + " values");
    const std::uint64_t word = ((chunk_bytes / 8 - 1) << 4) | log;
    if (large) {
      std::uint8_t b[4];
      le::store<std::uint32_t>(b, std::uint32_t(word));
      out.metadata.append(b, 4);
    } else {
      std::uint8_t b[2];
      le::store<std::uint16_t>(b, std::uint16_t(word));
      out.metadata.append(b, 2);
    }
    // Repetition index: rows that finish in this chunk, then leftover levels.
    if (s.max_rep > 0) {
      std::uint64_t rows = 0;
      for (std::size_t i = slot + 1; i < end_slot; ++i) rows += rep[i] == s.max_rep;
      std::uint64_t leftovers = 0;
      if (!last) {
        std::size_t i = end_slot;
        while (i > slot && rep[i - 1] != s.max_rep) --i;
        leftovers = i > slot ? end_slot - (i - 1) : nl;
      }
      if (ci != 0 && nl > 0 && rep[slot] == s.max_rep) {
        const auto k = rep_index.size();
        if (rep_index[k - 1] != 0) {
          rep_index[k - 2] += 1;
          rep_index[k - 1] = 0;
        }
      }
      if (last) rows += 1;
      rep_index.push_back(rows);
      rep_index.push_back(leftovers);
    }
    slot = end_slot;
  }
  if (s.max_rep > 0) {
    aligned_buffer ri;
    for (auto v : rep_index) {
      std::uint8_t b[8];
      le::store<std::uint64_t>(b, v);
      ri.append(b, 8);
    }
    out.repetition_index = std::move(ri);
  }
  return out;
}

}  // namespace lancet::encoding::structural
