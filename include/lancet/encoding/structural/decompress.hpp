// Reading CompressiveEncoding trees back into data blocks, in two of the three roles
// Lance uses them: mini-block (a chunk's value buffers) and block (one opaque buffer:
// rep/def levels, dictionaries); the third, per-value (full-zip values), is read in
// fullzip_reader.hpp. Every size is checked; what lancet cannot decode is an
// unsupported_error naming the encoding.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <variant>
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
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

namespace enc21 = pb::enc21;
using compressive = enc21::compressive_encoding;

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

inline const char* encoding_name(const structural::compressive& e) noexcept {
  static constexpr const char* names[] = {"(none)",         "Flat",          "Variable",      "Constant",
                                          "OutOfLineBitpacking", "InlineBitpacking", "Fsst", "Dictionary",
                                          "Rle",            "ByteStreamSplit", "General",     "FixedSizeList",
                                          "PackedStruct",   "VariablePackedStruct", "Range",  "Delta"};
  const auto i = e.value.index();
  return i < std::size(names) ? names[i] : "unknown";
}

inline shared_bytes owned(aligned_buffer&& b) { return shared_bytes(std::move(b)); }

inline shared_bytes zeros(std::uint64_t n) {
  aligned_buffer b;
  b.resize(std::size_t(n));
  return shared_bytes(std::move(b));
}

inline void require_bytes(const shared_bytes& b, std::uint64_t need, const std::string& what) {
  if (b.size() < need)
    throw corrupt_error(what + ": buffer of " + std::to_string(b.size()) + " bytes, " + std::to_string(need) +
                        " needed");
}

inline std::uint64_t flat_bits(const structural::compressive& e, const std::string& where, const char* what) {
  const auto* f = std::get_if<pb::enc21::flat>(&e.value);
  if (!f) throw unsupported_error(where + ": " + what + " must be Flat, found " + encoding_name(e));
  if (f->data) throw unsupported_error(where + ": " + what + " with per-buffer compression");
  return f->bits_per_value;
}

inline void check_word_bits(std::uint64_t bits, const std::string& where, const char* what) {
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    throw corrupt_error(where + ": " + what + " of " + std::to_string(bits) + " bits per value (8/16/32/64 expected)");
}

// n fixed-width values of `bits` each at the start of `b` (`what` names them in errors).
inline structural::data_block flat_values(const shared_bytes& b, std::uint64_t n, std::uint64_t bits,
                                          const std::string& where, const char* what) {
  const auto need = (structural::checked_mul(n, bits, where.c_str()) + 7) / 8;
  require_bytes(b, need, where + ": " + what);
  return structural::data_block::fixed(n, bits, b.slice(0, std::size_t(need)));
}

// The offset width of a Variable encoding: 32 or 64 bits, its offsets uncompressed.
inline std::uint64_t variable_offset_bits(const pb::enc21::variable& v, const std::string& where) {
  const auto bits = flat_bits(v.offsets.value(where + ": Variable.offsets"), where, "Variable offsets");
  if (bits != 32 && bits != 64) throw corrupt_error(where + ": Variable offsets of " + std::to_string(bits) + " bits");
  return bits;
}

// Rebases n + 1 offsets read from `src` (width bits, relative to base) to start at 0,
// producing a variable block over data[first, last).
inline structural::data_block variable_from(const std::uint8_t* offs, std::uint32_t width, std::uint64_t n,
                                            const shared_bytes& holder, std::uint64_t data_begin,
                                            std::uint64_t data_limit, const std::string& where) {
  const std::uint64_t bw = width / 8;
  aligned_buffer out;
  out.resize(std::size_t((n + 1) * bw));
  auto get = [&](std::uint64_t i) {
    return width == 64 ? le::load<std::uint64_t>(offs + 8 * i) : std::uint64_t(le::load<std::uint32_t>(offs + 4 * i));
  };
  const std::uint64_t first = get(0);
  std::uint64_t prev = first;
  for (std::uint64_t i = 0; i <= n; ++i) {
    const std::uint64_t o = get(i);
    if (o < prev || o < first || data_begin + o > data_limit)
      throw corrupt_error(where + ": variable-width offset " + std::to_string(o) + " at " + std::to_string(i) +
                          " is out of order or past the buffer");
    prev = o;
    if (width == 64) le::store<std::uint64_t>(out.data() + 8 * i, o - first);
    else le::store<std::uint32_t>(out.data() + 4 * i, std::uint32_t(o - first));
  }
  return structural::data_block::variable(n, width, owned(std::move(out)),
                                          holder.slice(std::size_t(data_begin + first), std::size_t(prev - first)));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// Decodes the value buffers of one chunk (bufs[at...]) holding n values.
inline data_block decode_miniblock(const compressive& e, std::vector<shared_bytes>& bufs, std::size_t& at,
                                   std::uint64_t n, const std::string& where);

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// ---- mini-block, one function per encoding ---------------------------------------
// Each takes the chunk buffers it uses from bufs[at...] (advancing at) and decodes n
// values; the ones wrapping an inner encoding decode it with decode_miniblock.

// The next chunk buffer (`what` names its user when the layout declared too few).
inline shared_bytes& next_chunk_buffer(std::vector<shared_bytes>& bufs, std::size_t& at, const char* what,
                                       const std::string& where) {
  if (at >= bufs.size())
    throw corrupt_error(where + ": " + what + " needs a chunk buffer beyond the " + std::to_string(bufs.size()) +
                        " the layout declares");
  return bufs[at++];
}

inline structural::data_block mini_variable(const pb::enc21::variable& v, std::vector<shared_bytes>& bufs,
                                            std::size_t& at, std::uint64_t n, const std::string& where) {
  const auto bits = variable_offset_bits(v, where);
  if (v.values) throw unsupported_error(where + ": Variable values with per-buffer compression");
  const auto& b = next_chunk_buffer(bufs, at, "Variable", where);
  require_bytes(b, structural::checked_mul(n + 1, bits / 8, where.c_str()), where + ": Variable offsets");
  return variable_from(b.data(), std::uint32_t(bits), n, b, 0, b.size(), where);
}

inline structural::data_block mini_inline_bitpacking(const pb::enc21::inline_bitpacking& ib,
                                                     std::vector<shared_bytes>& bufs, std::size_t& at, std::uint64_t n,
                                                     const std::string& where) {
  const auto bits = ib.uncompressed_bits_per_value;
  check_word_bits(bits, where, "InlineBitpacking");
  const auto& b = next_chunk_buffer(bufs, at, "InlineBitpacking", where);
  if (n > structural::bitpack::chunk_values)
    throw corrupt_error(where + ": inline bit-packed chunk of " + std::to_string(n) + " values (at most 1024)");
  aligned_buffer out;
  out.resize(std::size_t(n * bits / 8));
  by_width(bits, [&](auto t) {
    using T = decltype(t);
    structural::bitpack::decode_inline_chunk<T>(b.view(), std::size_t(n), out.data());
    return 0;
  });
  return structural::data_block::fixed(n, bits, owned(std::move(out)));
}

inline structural::data_block mini_rle(const pb::enc21::rle& r, std::vector<shared_bytes>& bufs, std::size_t& at,
                                       std::uint64_t n, const std::string& where) {
  const auto bits = flat_bits(r.values.value(where + ": Rle.values"), where, "Rle values");
  check_word_bits(bits, where, "Rle values");
  if (r.run_lengths && flat_bits(*r.run_lengths, where, "Rle run lengths") != 8)
    throw unsupported_error(where + ": Rle run lengths wider than 8 bits");
  const auto& values = next_chunk_buffer(bufs, at, "Rle values", where);
  const auto& lengths = next_chunk_buffer(bufs, at, "Rle run lengths", where);
  if (n > 255 * std::uint64_t(lengths.size()))
    throw corrupt_error(where + ": " + std::to_string(lengths.size()) + " RLE runs cannot hold " + std::to_string(n) + " values");
  structural::check_alloc(structural::checked_mul(n, bits / 8, where.c_str()), where);
  aligned_buffer out;
  out.resize(std::size_t(structural::checked_mul(n, bits / 8, where.c_str())));
  structural::rle::decode(values.view(), lengths.view(), std::size_t(n), std::size_t(bits / 8), out.data());
  return structural::data_block::fixed(n, bits, owned(std::move(out)));
}

inline structural::data_block mini_byte_stream_split(const pb::enc21::byte_stream_split& s,
                                                     std::vector<shared_bytes>& bufs, std::size_t& at, std::uint64_t n,
                                                     const std::string& where) {
  const auto bits = flat_bits(s.values.value(where + ": ByteStreamSplit.values"), where, "ByteStreamSplit values");
  check_word_bits(bits, where, "ByteStreamSplit values");
  const auto& b = next_chunk_buffer(bufs, at, "ByteStreamSplit", where);
  const auto need = structural::checked_mul(n, bits / 8, where.c_str());
  require_bytes(b, need, where + ": ByteStreamSplit values");
  aligned_buffer out;
  out.resize(std::size_t(need));
  structural::bss::join(b.data(), std::size_t(n), std::size_t(bits / 8), out.data());
  return structural::data_block::fixed(n, bits, owned(std::move(out)));
}

// General compression of the chunk's next buffer: decompressed in place, then decoded
// by the inner encoding.
inline structural::data_block mini_general(const pb::enc21::general& g, std::vector<shared_bytes>& bufs,
                                           std::size_t& at, std::uint64_t n, const std::string& where) {
  if (!g.compression) throw corrupt_error(where + ": General without a compression");
  if (at >= bufs.size()) throw corrupt_error(where + ": General has no chunk buffer");
  aligned_buffer out;
  structural::general::decompress(g.compression->scheme, bufs[at].view(), out);
  bufs[at] = owned(std::move(out));
  return structural::decode_miniblock(g.values.value(where + ": General.values"), bufs, at, n, where);
}

// FSST: the inner variable values, each decompressed with the chunk's symbol table.
inline structural::data_block mini_fsst(const pb::enc21::fsst& fs, std::vector<shared_bytes>& bufs, std::size_t& at,
                                        std::uint64_t n, const std::string& where) {
  using structural::data_block;
  auto inner = structural::decode_miniblock(fs.values.value(where + ": Fsst.values"), bufs, at, n, where);
  if (inner.k != data_block::kind::variable) throw corrupt_error(where + ": Fsst over non-variable values");
  const auto table = structural::fsst::symbol_table::parse(fs.symbol_table);
  if (!table.compressing()) return inner;
  aligned_buffer bytes, offs;
  offs.resize(std::size_t((n + 1) * (inner.bits_per_offset / 8)));
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto b = inner.offset(i), e2 = inner.offset(i + 1);
    table.decompress(inner.data.data() + b, std::size_t(e2 - b), bytes);
    if (inner.bits_per_offset == 64) le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
    else {
      if (bytes.size() > 0xFFFFFFFFull) throw corrupt_error(where + ": FSST output exceeds 32-bit offsets");
      le::store<std::uint32_t>(offs.data() + 4 * (i + 1), std::uint32_t(bytes.size()));
    }
  }
  return data_block::variable(n, inner.bits_per_offset, owned(std::move(offs)), owned(std::move(bytes)));
}

// A fixed-size list layer (its item validity, if any, in the chunk's next buffer) over
// fixed-width items or further layers.
inline structural::data_block mini_fixed_size_list(const pb::enc21::fixed_size_list& l, std::vector<shared_bytes>& bufs,
                                                   std::size_t& at, std::uint64_t n, const std::string& where) {
  using structural::data_block;
  if (l.items_per_value == 0) throw corrupt_error(where + ": FixedSizeList of dimension 0");
  const auto items = structural::checked_mul(n, l.items_per_value, where.c_str());
  structural::fsl_layer layer;
  layer.dimension = l.items_per_value;
  if (l.has_validity) {
    const auto& v = next_chunk_buffer(bufs, at, "FixedSizeList validity", where);
    require_bytes(v, (items + 7) / 8, where + ": FixedSizeList validity");
    layer.has_validity = true;
    layer.validity = v.slice(0, std::size_t((items + 7) / 8));
  }
  auto inner = structural::decode_miniblock(l.values.value(where + ": FixedSizeList.values"), bufs, at, items, where);
  data_block out;
  out.k = data_block::kind::fixed_size_list;
  out.num_values = n;
  out.fsl.push_back(std::move(layer));
  if (inner.k == data_block::kind::fixed) {
    out.bits_per_value = inner.bits_per_value;
    out.data = std::move(inner.data);
  } else if (inner.k == data_block::kind::fixed_size_list) {
    out.bits_per_value = inner.bits_per_value;
    out.data = std::move(inner.data);
    for (auto& il : inner.fsl) out.fsl.push_back(std::move(il));
  } else {
    throw unsupported_error(where + ": FixedSizeList over variable-width items");
  }
  return out;
}

// Rows of the fields' values side by side; kept as one fixed-width value per row.
inline structural::data_block mini_packed_struct(const pb::enc21::packed_struct& ps, std::vector<shared_bytes>& bufs,
                                                 std::size_t& at, std::uint64_t n, const std::string& where) {
  std::uint64_t bits = 0;
  for (auto b : ps.bits_per_value) {
    if (b % 8) throw unsupported_error(where + ": packed struct fields of " + std::to_string(b) + " bits");
    bits += b;
  }
  auto inner = structural::decode_miniblock(ps.values.value(where + ": PackedStruct.values"), bufs, at, n, where);
  if (inner.k != structural::data_block::kind::fixed || inner.bits_per_value != bits)
    throw corrupt_error(where + ": packed struct rows of " + std::to_string(inner.bits_per_value) + " bits, its fields sum to " +
                        std::to_string(bits));
  return inner;
}

// n copies of the scalar (no buffer).
inline structural::data_block mini_constant(const pb::enc21::constant& c, std::uint64_t n, const std::string& where) {
  const std::string& v = c.value.value_or(std::string());
  structural::check_alloc(structural::checked_mul(n, v.size(), where.c_str()), where);
  aligned_buffer out;
  out.reserve(std::size_t(structural::checked_mul(n, v.size(), where.c_str())));
  for (std::uint64_t i = 0; i < n; ++i) out.append(std::string_view(v));
  return structural::data_block::fixed(n, v.size() * 8, owned(std::move(out)));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// ---- mini-block --------------------------------------------------------------------

inline data_block decode_miniblock(const compressive& e, std::vector<shared_bytes>& bufs, std::size_t& at,
                                   std::uint64_t n, const std::string& where) {
  using namespace detail;
  if (const auto* f = std::get_if<enc21::flat>(&e.value)) {
    if (f->data) throw unsupported_error(where + ": Flat values with per-buffer compression");
    return flat_values(next_chunk_buffer(bufs, at, "Flat", where), n, f->bits_per_value, where, "Flat values");
  }
  if (const auto* v = std::get_if<enc21::variable>(&e.value)) return mini_variable(*v, bufs, at, n, where);
  if (const auto* ib = std::get_if<enc21::inline_bitpacking>(&e.value)) return mini_inline_bitpacking(*ib, bufs, at, n, where);
  if (const auto* r = std::get_if<enc21::rle>(&e.value)) return mini_rle(*r, bufs, at, n, where);
  if (const auto* s = std::get_if<enc21::byte_stream_split>(&e.value)) return mini_byte_stream_split(*s, bufs, at, n, where);
  if (const auto* g = std::get_if<enc21::general>(&e.value)) return mini_general(*g, bufs, at, n, where);
  if (const auto* fs = std::get_if<enc21::fsst>(&e.value)) return mini_fsst(*fs, bufs, at, n, where);
  if (const auto* l = std::get_if<enc21::fixed_size_list>(&e.value)) return mini_fixed_size_list(*l, bufs, at, n, where);
  if (const auto* ps = std::get_if<enc21::packed_struct>(&e.value)) return mini_packed_struct(*ps, bufs, at, n, where);
  if (const auto* c = std::get_if<enc21::constant>(&e.value)) return mini_constant(*c, n, where);
  throw unsupported_error(where + ": mini-block values encoded as " + detail::encoding_name(e) +
                          " are not supported by lancet");
}

// Buffers a mini-block value encoding occupies in each chunk.
inline std::uint64_t miniblock_buffers(const compressive& e) {
  if (std::holds_alternative<enc21::rle>(e.value)) return 2;
  if (const auto* p = std::get_if<enc21::packed_struct>(&e.value)) return p->values ? miniblock_buffers(*p->values) : 1;
  if (const auto* g = std::get_if<enc21::general>(&e.value)) return g->values ? miniblock_buffers(*g->values) : 1;
  if (const auto* f = std::get_if<enc21::fsst>(&e.value)) return f->values ? miniblock_buffers(*f->values) : 1;
  if (const auto* l = std::get_if<enc21::fixed_size_list>(&e.value))
    return (l->has_validity ? 1 : 0) + (l->values ? miniblock_buffers(*l->values) : 1);
  return 1;
}

// ---- block -------------------------------------------------------------------------

inline data_block decode_block(const compressive& e, const shared_bytes& buf, std::uint64_t n,
                               const std::string& where) {
  using namespace detail;
  if (const auto* f = std::get_if<enc21::flat>(&e.value)) {
    if (f->data) {
      aligned_buffer out;
      general::decompress(f->data->scheme, buf.view(), out);
      compressive plain{enc21::flat{f->bits_per_value, std::nullopt}};
      return decode_block(plain, owned(std::move(out)), n, where);
    }
    return flat_values(buf, n, f->bits_per_value, where, "Flat block");
  }
  if (const auto* v = std::get_if<enc21::variable>(&e.value)) {
    const auto bits = variable_offset_bits(*v, where);
    const std::uint64_t w = bits / 8;
    require_bytes(buf, 2 * w, where + ": Variable block header");
    const std::uint64_t header_bits = w == 8 ? le::load<std::uint64_t>(buf.data()) : le::load<std::uint32_t>(buf.data());
    const std::uint64_t data_start =
        w == 8 ? le::load<std::uint64_t>(buf.data() + 8) : le::load<std::uint32_t>(buf.data() + 4);
    if (header_bits != bits) throw corrupt_error(where + ": Variable block says " + std::to_string(header_bits) + " bits");
    const auto offs_end = 2 * w + checked_mul(n + 1, w, where.c_str());
    if (data_start < offs_end || data_start > buf.size())
      throw corrupt_error(where + ": Variable block data starts at " + std::to_string(data_start));
    return variable_from(buf.data() + 2 * w, std::uint32_t(bits), n, buf, data_start, buf.size(), where);
  }
  if (const auto* ib = std::get_if<enc21::inline_bitpacking>(&e.value)) {
    const auto bits = ib->uncompressed_bits_per_value;
    check_word_bits(bits, where, "InlineBitpacking");
    // Each 1024 values take at least their width word.
    if ((n + bitpack::chunk_values - 1) / bitpack::chunk_values * (bits / 8) > buf.size())
      throw corrupt_error(where + ": InlineBitpacking block of " + std::to_string(buf.size()) + " bytes cannot hold " +
                          std::to_string(n) + " values");
    aligned_buffer out;
    out.resize(std::size_t(checked_mul(n, bits / 8, where.c_str())));
    by_width(bits, [&](auto t) {
      using T = decltype(t);
      const std::size_t chunk_bytes_min = sizeof(T);
      std::size_t pos = 0;
      for (std::uint64_t done = 0; done < n; done += bitpack::chunk_values) {
        if (pos + chunk_bytes_min > buf.size()) throw corrupt_error(where + ": InlineBitpacking block is truncated");
        const auto w = le::load<T>(buf.data() + pos);
        const std::size_t len = (1 + bitpack::packed_words<T>(unsigned(std::min<std::uint64_t>(w, sizeof(T) * 8)))) * sizeof(T);
        if (pos + len > buf.size()) throw corrupt_error(where + ": InlineBitpacking block is truncated");
        const auto cnt = std::min<std::uint64_t>(bitpack::chunk_values, n - done);
        bitpack::decode_inline_chunk<T>(buf.view().subspan(pos, len), std::size_t(cnt), out.data() + done * sizeof(T));
        pos += len;
      }
      return 0;
    });
    return data_block::fixed(n, bits, owned(std::move(out)));
  }
  if (const auto* ob = std::get_if<enc21::out_of_line_bitpacking>(&e.value)) {
    const auto bits = ob->uncompressed_bits_per_value;
    check_word_bits(bits, where, "OutOfLineBitpacking");
    const auto width = flat_bits(ob->values.value(where + ": OutOfLineBitpacking.values"), where, "bit-packed values");
    if (width > bits) throw corrupt_error(where + ": OutOfLineBitpacking width " + std::to_string(width) + " > " + std::to_string(bits));
    check_alloc(checked_mul(n, bits / 8, where.c_str()), where);
    aligned_buffer out;
    out.resize(std::size_t(checked_mul(n, bits / 8, where.c_str())));
    by_width(bits, [&](auto t) {
      using T = decltype(t);
      bitpack::decode_out_of_line<T>(buf.view(), std::size_t(n), unsigned(width), out.data());
      return 0;
    });
    return data_block::fixed(n, bits, owned(std::move(out)));
  }
  if (const auto* r = std::get_if<enc21::rle>(&e.value)) {
    const auto bits = flat_bits(r->values.value(where + ": Rle.values"), where, "Rle values");
    check_word_bits(bits, where, "Rle values");
    if (n > 255 * std::uint64_t(buf.size()))
      throw corrupt_error(where + ": RLE block of " + std::to_string(buf.size()) + " bytes cannot hold " + std::to_string(n) + " values");
    check_alloc(checked_mul(n, bits / 8, where.c_str()), where);
    aligned_buffer out;
    out.resize(std::size_t(checked_mul(n, bits / 8, where.c_str())));
    rle::decode_block(buf.view(), std::size_t(n), std::size_t(bits / 8), out.data());
    return data_block::fixed(n, bits, owned(std::move(out)));
  }
  if (const auto* g = std::get_if<enc21::general>(&e.value)) {
    if (!g->compression) throw corrupt_error(where + ": General without a compression");
    aligned_buffer out;
    general::decompress(g->compression->scheme, buf.view(), out);
    return decode_block(g->values.value(where + ": General.values"), owned(std::move(out)), n, where);
  }
  if (const auto* c = std::get_if<enc21::constant>(&e.value)) {
    std::vector<shared_bytes> none;
    std::size_t at = 0;
    (void)buf;
    return decode_miniblock(compressive{*c}, none, at, n, where);
  }
  throw unsupported_error(where + ": block encoded as " + detail::encoding_name(e) + " is not supported by lancet");
}

// Rep/def levels of a block: n u16 levels.
inline std::vector<std::uint16_t> decode_levels(const compressive& e, const shared_bytes& buf, std::uint64_t n,
                                                const std::string& where) {
  auto b = decode_block(e, buf, n, where);
  if (b.k != data_block::kind::fixed || b.bits_per_value != 16)
    throw corrupt_error(where + ": levels must decode to 16-bit values");
  std::vector<std::uint16_t> out(static_cast<std::size_t>(n));
  if (n) std::memcpy(out.data(), b.data.data(), std::size_t(n) * 2);
  return out;
}

}  // namespace lancet::encoding::structural
