// Reading full-zip pages, the layout fullzip.hpp writes (described there): how the
// values decode (per_value_decoder; 2.2 VariablePackedStruct rows in
// variable_packed_layout), where a page's rows are without reading its values (a fixed
// stride, or the repetition index), and the parse of the zipped slots into levels and
// values. page_decoder.hpp's read_page and page_ranges.hpp's ranged reads call it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/compression/general.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/decompress.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

// ---- per-value decoding ---------------------------------------------------------------

struct variable_packed_layout;

// How a full-zip page's values decode: fixed width (bits per value known from the
// layout) or variable (each value compressed on its own).
struct per_value_decoder {
  enum class kind : std::uint8_t { fixed, variable };
  kind k = kind::fixed;
  // fixed
  std::uint64_t bits_per_value = 0;    // per value, including per-value validity bytes
  std::uint64_t item_bits = 0;         // innermost item width
  std::vector<fsl_layer> fsl;          // layers (validity placeholders) when a fixed_size_list
  // variable
  std::uint32_t bits_per_offset = 32;
  std::optional<fsst::symbol_table> table;
  std::optional<enc21::compression_scheme> general;
  // set: each value is a row of struct members side by side (2.2 VariablePackedStruct,
  // e.g. blob v2 descriptions); the rows are kept whole and split by the field decoder.
  std::shared_ptr<const variable_packed_layout> packed;

  static std::shared_ptr<const variable_packed_layout> parse_variable_packed(const enc21::variable_packed_struct& vp,
                                                                             const std::string& where);

  static per_value_decoder from(const compressive& e, const std::string& where) {
    per_value_decoder d;
    if (const auto* vp = std::get_if<enc21::variable_packed_struct>(&e.value)) {
      d.k = kind::variable;
      d.bits_per_offset = 64;
      d.packed = parse_variable_packed(*vp, where);
      return d;
    }
    if (const auto* f = std::get_if<enc21::flat>(&e.value)) {
      if (f->data) throw unsupported_error(where + ": per-value Flat with buffer compression");
      d.bits_per_value = d.item_bits = f->bits_per_value;
      return d;
    }
    if (const auto* l = std::get_if<enc21::fixed_size_list>(&e.value)) {
      const compressive* cur = &e;
      std::uint64_t cum = 1, validity_bytes = 0;
      while (const auto* fl = std::get_if<enc21::fixed_size_list>(&cur->value)) {
        if (fl->items_per_value == 0) throw corrupt_error(where + ": FixedSizeList of dimension 0");
        cum = checked_mul(cum, fl->items_per_value, where.c_str());
        fsl_layer layer;
        layer.dimension = fl->items_per_value;
        layer.has_validity = fl->has_validity;
        if (fl->has_validity) validity_bytes += (cum + 7) / 8;
        d.fsl.push_back(layer);
        cur = &fl->values.value(where + ": FixedSizeList.values");
      }
      d.item_bits = detail::flat_bits(*cur, where, "FixedSizeList items");
      d.bits_per_value = validity_bytes * 8 + checked_mul(cum, d.item_bits, where.c_str());
      (void)l;
      return d;
    }
    d.k = kind::variable;
    const compressive* cur = &e;
    if (const auto* fs = std::get_if<enc21::fsst>(&cur->value)) {
      d.table = fsst::symbol_table::parse(fs->symbol_table);
      cur = &fs->values.value(where + ": Fsst.values");
    } else if (const auto* g = std::get_if<enc21::general>(&cur->value)) {
      if (!g->compression) throw corrupt_error(where + ": General without a compression");
      d.general = g->compression->scheme;
      cur = &g->values.value(where + ": General.values");
    }
    const auto* v = std::get_if<enc21::variable>(&cur->value);
    if (!v) throw unsupported_error(where + ": full-zip values encoded as " + detail::encoding_name(*cur));
    const auto bits = detail::flat_bits(v->offsets.value(where + ": Variable.offsets"), where, "Variable offsets");
    if (bits != 32 && bits != 64) throw corrupt_error(where + ": Variable offsets of " + std::to_string(bits) + " bits");
    d.bits_per_offset = std::uint32_t(bits);
    return d;
  }

  // Turns one stored variable value into its bytes (appended to out).
  void decode_value(bytes_view stored, aligned_buffer& out) const {
    if (table && table->compressing()) table->decompress(stored.data(), stored.size(), out);
    else if (general) general::decompress(*general, stored, out);
    else out.append(stored);
  }
};

// The members of a 2.2 VariablePackedStruct row: a fixed member is `width` bytes as
// they are; a variable one is a `prefix`-byte length and that many stored bytes, which
// its own per-value decoder (plain, FSST or general compression) turns into the value.
struct variable_packed_layout {
  struct member {
    std::uint64_t width = 0;   // fixed: bytes per value
    std::uint64_t prefix = 0;  // variable: bytes of the length prefix
    per_value_decoder values;  // variable
  };
  std::vector<member> members;
};

inline std::shared_ptr<const variable_packed_layout> per_value_decoder::parse_variable_packed(
    const enc21::variable_packed_struct& vp, const std::string& where) {
  auto out = std::make_shared<variable_packed_layout>();
  for (std::size_t i = 0; i < vp.fields.size(); ++i) {
    const auto& f = vp.fields[i];
    const std::string fw = where + ": packed struct member " + std::to_string(i);
    const auto& enc = f.value.value(fw + " without an encoding");
    variable_packed_layout::member m;
    if (f.bits_per_value) {
      const auto bits = detail::flat_bits(enc, fw, "fixed member");
      if (bits != *f.bits_per_value || bits == 0 || bits % 8)
        throw unsupported_error(fw + " of " + std::to_string(*f.bits_per_value) + " bits (flat " + std::to_string(bits) + ")");
      m.width = bits / 8;
    } else if (f.bits_per_length) {
      const auto bl = *f.bits_per_length;
      if (bl != 8 && bl != 16 && bl != 32 && bl != 64) throw corrupt_error(fw + ": length prefix of " + std::to_string(bl) + " bits");
      m.prefix = bl / 8;
      m.values = per_value_decoder::from(enc, fw);
      if (m.values.k != kind::variable || m.values.packed)
        throw unsupported_error(fw + " is variable width but encoded as " + detail::encoding_name(enc));
    } else {
      throw corrupt_error(fw + " has neither a value width nor a length width");
    }
    out->members.push_back(std::move(m));
  }
  return out;
}

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// ---- where rows are -------------------------------------------------------------------

// Bytes of the control word of a slot with `bits` bits of levels: none, 1, 2 or 4.
inline std::uint64_t full_zip_control_word_bytes(unsigned bits) noexcept {
  return bits == 0 ? 0 : bits <= 8 ? 1 : bits <= 16 ? 2 : 4;
}

// The entry width (1, 2, 4 or 8 bytes) of a repetition index of index_bytes bytes for
// page_rows rows (page_rows + 1 entries: the byte offset of each row, then the end).
inline std::uint64_t full_zip_index_width(std::uint64_t index_bytes, std::uint64_t page_rows, const std::string& where) {
  const std::uint64_t entries = page_rows + 1;
  const std::uint64_t w = index_bytes % entries == 0 ? index_bytes / entries : 0;
  if (w != 1 && w != 2 && w != 4 && w != 8)
    throw corrupt_error(where + ": full-zip repetition index of " + std::to_string(index_bytes) + " bytes for " +
                        std::to_string(page_rows) + " rows");
  return w;
}

// Entry i of repetition index entries of w bytes each.
inline std::uint64_t full_zip_index_entry(const std::uint8_t* entries, std::uint64_t w, std::uint64_t i) {
  const auto* p = entries + i * w;
  switch (w) { case 1: return *p; case 2: return le::load<std::uint16_t>(p); case 4: return le::load<std::uint32_t>(p); default: return le::load<std::uint64_t>(p); }
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// How the rows of a full-zip page are found without reading its values (buffer 0):
// at a fixed stride (fixed-width values, no repetition) or through the repetition
// index (buffer 1).
struct full_zip_row_locator {
  enum class by : std::uint8_t { none, stride, index };
  by how = by::none;
  std::uint64_t row_bytes = 0;    // stride
  std::uint64_t entry_bytes = 0;  // index: the width of an entry

  // The page's rows cannot be located so (the page is read whole).
  static full_zip_row_locator of(const enc21::full_zip_layout& z, std::span<const std::uint64_t> buffer_sizes,
                                 std::uint64_t page_rows, const std::string& where) {
    full_zip_row_locator loc;
    const level_scheme s(z.layers);
    if (z.bits_per_value && s.max_rep == 0) {
      if (z.bits_rep > 16 || z.bits_def > 16 || *z.bits_per_value % 8 != 0) return loc;
      loc.row_bytes = detail::full_zip_control_word_bytes(z.bits_rep + z.bits_def) + *z.bits_per_value / 8;
      if (loc.row_bytes != 0) loc.how = by::stride;
    } else if (buffer_sizes.size() >= 2) {
      loc.entry_bytes = detail::full_zip_index_width(buffer_sizes[1], page_rows, where);
      loc.how = by::index;
    }
    return loc;
  }

  // stride: the values' bytes [pb, pe) of rows [begin, end).
  std::pair<std::uint64_t, std::uint64_t> stride_bytes(std::uint64_t begin, std::uint64_t end) const {
    return {checked_mul(begin, row_bytes, "full-zip rows"), checked_mul(end, row_bytes, "full-zip rows")};
  }

  // index: the bytes [from, to) of the repetition index that hold the entries of rows
  // [begin, end) (end - begin + 1 entries).
  std::pair<std::uint64_t, std::uint64_t> entries_of(std::uint64_t begin, std::uint64_t end) const {
    return {begin * entry_bytes, (end + 1) * entry_bytes};
  }

  // index: the values' bytes [pb, pe) of rows [begin, end) from their entries (see
  // entries_of), checked against the values' size.
  std::pair<std::uint64_t, std::uint64_t> indexed_bytes(const shared_bytes& entries, std::uint64_t begin,
                                                        std::uint64_t end, std::uint64_t values_size,
                                                        const std::string& where) const {
    const auto pb = detail::full_zip_index_entry(entries.data(), entry_bytes, 0);
    const auto pe = detail::full_zip_index_entry(entries.data(), entry_bytes, end - begin);
    if (pb > pe || pe > values_size)
      throw corrupt_error(where + ": full-zip repetition index gives rows " + std::to_string(begin) + ".." +
                          std::to_string(end) + " bytes [" + std::to_string(pb) + ", " + std::to_string(pe) +
                          "), the values hold " + std::to_string(values_size));
    return {pb, pe};
  }
};

// The slots of rows of a full-zip page, parsed: levels (empty when absent) and the
// visible values. With whole_page the page had no way to find rows [begin, end) in it
// (no repetition index): these are all its rows, and the caller cuts them out.
struct full_zip_slots {
  std::vector<std::uint16_t> rep, def;
  std::uint64_t num_slots = 0;
  data_block values;
  std::shared_ptr<const variable_packed_layout> packed;  // see page_slice::packed
  bool whole_page = false;
};

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// ---- parsing the zipped slots -------------------------------------------------------

// A full-zip layout's values, checked: control word bytes, and bytes per fixed-width
// value or per length of a variable one.
struct full_zip_shape {
  std::uint64_t cw = 0;  // control word bytes (0: no levels)
  bool fixed = false;
  std::uint64_t vbytes = 0;  // fixed: bytes per value
  std::uint64_t lbytes = 0;  // variable: bytes per length
  structural::per_value_decoder dec;
};

inline full_zip_shape full_zip_shape_of(const pb::enc21::full_zip_layout& z, const std::string& where) {
  using structural::per_value_decoder;
  const unsigned cw_bits = z.bits_rep + z.bits_def;
  if (z.bits_rep > 16 || z.bits_def > 16) throw corrupt_error(where + ": control word of " + std::to_string(cw_bits) + " bits");
  const std::uint64_t cw = full_zip_control_word_bytes(cw_bits);
  if (!z.value_compression) throw corrupt_error(where + ": full-zip layout without a value compression");
  full_zip_shape f{cw, z.bits_per_value.has_value(), 0, 0, per_value_decoder::from(*z.value_compression, where)};
  const bool fixed = f.fixed;
  if (fixed == z.bits_per_offset.has_value()) throw corrupt_error(where + ": full-zip layout needs exactly one of bits per value / offset");
  if (fixed && f.dec.k != per_value_decoder::kind::fixed) throw corrupt_error(where + ": fixed full-zip with variable values");
  if (!fixed && f.dec.k != per_value_decoder::kind::variable) throw corrupt_error(where + ": variable full-zip with fixed values");
  if (fixed && *z.bits_per_value % 8 != 0) throw unsupported_error(where + ": bit-packed full-zip values");
  f.vbytes = fixed ? *z.bits_per_value / 8 : 0;
  if (fixed && f.vbytes == 0 && f.cw == 0) throw corrupt_error(where + ": full-zip values of zero width without control words");
  f.lbytes = fixed ? 0 : *z.bits_per_offset / 8;
  if (!fixed && f.lbytes != 1 && f.lbytes != 2 && f.lbytes != 4 && f.lbytes != 8)
    throw corrupt_error(where + ": full-zip lengths of " + std::to_string(*z.bits_per_offset) + " bits");
  if (fixed && f.dec.bits_per_value != *z.bits_per_value)
    throw corrupt_error(where + ": full-zip values of " + std::to_string(*z.bits_per_value) + " bits, the encoding has " +
                        std::to_string(f.dec.bits_per_value));
  return f;
}

// The bytes [pb, pe) of the zipped values that hold rows [begin, end). ranged false:
// they cannot be located (no repetition index), the whole page is to be parsed.
struct full_zip_byte_range {
  std::uint64_t pb = 0, pe = 0;
  bool ranged = true;
};

inline full_zip_byte_range full_zip_rows_bytes(const full_zip_shape& f, const structural::level_scheme& s,
                                               const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                               std::uint64_t begin, std::uint64_t end, const std::string& where) {
  const auto& zipped = buffers[0];
  full_zip_byte_range r{0, zipped.size(), true};
  const bool simple_rows = s.max_rep == 0 && f.fixed;
  if (begin == end) {
    r.pb = r.pe = 0;
  } else if (simple_rows) {
    const auto row_bytes = f.cw + f.vbytes;
    r.pb = structural::checked_mul(begin, row_bytes, "full-zip rows");
    r.pe = structural::checked_mul(end, row_bytes, "full-zip rows");
    if (r.pe > zipped.size()) throw corrupt_error(where + ": full-zip buffer of " + std::to_string(zipped.size()) + " bytes for " +
                                                  std::to_string(page_rows) + " rows of " + std::to_string(row_bytes));
  } else if (buffers.size() >= 2 && (begin > 0 || end < page_rows)) {
    const auto& ri = buffers[1];
    const std::uint64_t w = full_zip_index_width(ri.size(), page_rows, where);
    r.pb = full_zip_index_entry(ri.data(), w, begin);
    r.pe = full_zip_index_entry(ri.data(), w, end);
    if (r.pb > r.pe || r.pe > zipped.size()) throw corrupt_error(where + ": full-zip repetition index points outside the values");
  } else if (begin > 0 || end < page_rows) {
    r.ranged = false;
  }
  return r;
}

// Fixed-width values without levels or item validity: the zipped bytes of rows
// [begin, end) are the values themselves.
inline structural::data_block full_zip_raw_values(const full_zip_shape& f, const shared_bytes& zipped,
                                                  const full_zip_byte_range& r, std::uint64_t n) {
  auto bytes = zipped.slice(std::size_t(r.pb), std::size_t(r.pe - r.pb));
  if (f.dec.fsl.empty()) return structural::data_block::fixed(n, f.dec.bits_per_value, bytes);
  structural::data_block b;
  b.k = structural::data_block::kind::fixed_size_list;
  b.num_values = n;
  b.bits_per_value = f.dec.item_bits;
  b.fsl = f.dec.fsl;
  b.data = bytes;
  return b;
}

// What the slots of a full-zip page's bytes hold: their levels (empty when absent) and
// the visible values (fixed-width bytes, or variable bytes and their offsets).
struct unzipped_slots {
  std::vector<std::uint16_t> rep, def;
  aligned_buffer fixed_values, var_bytes, var_offs;
  std::uint64_t nvals = 0, rows_seen = 0;
};

// Parses the slots in bytes [pb, pe) of the zipped values: per slot its control word,
// then, when visible, its value.
inline unzipped_slots unzip_slots(const pb::enc21::full_zip_layout& z, const structural::level_scheme& s,
                                  const full_zip_shape& f, const shared_bytes& zipped, std::uint64_t pb, std::uint64_t pe,
                                  const std::string& where) {
  // The loop reads these as locals (as registers), not through the references.
  const auto bits_rep = z.bits_rep, bits_def = z.bits_def;
  const std::uint16_t def_mask = std::uint16_t((1u << bits_def) - 1);
  const std::uint16_t max_rep = s.max_rep, max_def = s.max_def, max_visible_def = s.max_visible_def;
  const std::uint64_t cw = f.cw, vbytes = f.vbytes, lbytes = f.lbytes;
  const bool fixed = f.fixed;
  const auto& dec = f.dec;
  unzipped_slots u;
  auto& rep = u.rep;
  auto& def = u.def;
  auto& fixed_values = u.fixed_values;
  auto& var_bytes = u.var_bytes;
  auto& var_offs = u.var_offs;
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
      if (bits_rep && bits_def) { r = std::uint16_t(word >> bits_def); d = std::uint16_t(word & def_mask); }
      else if (bits_rep) r = std::uint16_t(word);
      else d = std::uint16_t(word);
    }
    if (max_rep) rep.push_back(r);
    else ++rows_seen;
    if (max_def) def.push_back(d);
    if (d > max_visible_def) continue;
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
  u.nvals = nvals;
  u.rows_seen = rows_seen;
  return u;
}

// The parsed slots hold want_rows rows: with repetition the byte range came from the
// index (or is the whole page).
inline void check_full_zip_rows(const unzipped_slots& u, const structural::level_scheme& s, std::uint64_t want_rows,
                                const std::string& where) {
  if (s.max_rep) {
    std::uint64_t rows = 0;
    for (auto r : u.rep) rows += r == s.max_rep;
    if (!u.rep.empty() && u.rep[0] != s.max_rep) throw corrupt_error(where + ": full-zip levels do not start with a row");
    if (rows != want_rows) throw corrupt_error(where + ": full-zip data holds " + std::to_string(rows) + " rows, " + std::to_string(want_rows) + " expected");
  } else if (u.rows_seen != want_rows) {
    throw corrupt_error(where + ": full-zip data holds " + std::to_string(u.rows_seen) + " rows, " + std::to_string(want_rows) + " expected");
  }
}

// Splits nvals fixed-size list rows of [validity bytes per layer][items] into a
// fixed-size list block (the validity of each layer a bitmap of its own).
inline structural::data_block split_full_zip_fsl_rows(const aligned_buffer& fixed_values, std::uint64_t nvals,
                                                      const structural::per_value_decoder& dec, const std::string& where) {
  using structural::data_block;
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
  return b;
}

// The block of the parsed slots' visible values.
inline structural::data_block full_zip_values_block(unzipped_slots& u, const full_zip_shape& f, const std::string& where) {
  using structural::data_block;
  if (!f.fixed)
    return data_block::variable(u.nvals, f.dec.bits_per_offset, shared_bytes(std::move(u.var_offs)), shared_bytes(std::move(u.var_bytes)));
  if (f.dec.fsl.empty()) return data_block::fixed(u.nvals, f.dec.bits_per_value, shared_bytes(std::move(u.fixed_values)));
  return split_full_zip_fsl_rows(u.fixed_values, u.nvals, f.dec, where);
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// The slots of rows [begin, end) of a full-zip page of page_rows rows (buffers:
// [zipped values][repetition index?], at least the first; s: the layout's levels).
// Rows are found by their fixed stride or through the repetition index; without
// either, the whole page is parsed (whole_page).
inline full_zip_slots read_full_zip_slots(const enc21::full_zip_layout& z, const level_scheme& s,
                                          const std::vector<shared_bytes>& buffers, std::uint64_t page_rows,
                                          std::uint64_t begin, std::uint64_t end, const std::string& where) {
  using namespace detail;
  full_zip_slots out;
  const auto& zipped = buffers[0];
  auto f = full_zip_shape_of(z, where);
  out.packed = f.dec.packed;
  const auto r = full_zip_rows_bytes(f, s, buffers, page_rows, begin, end, where);
  const std::uint64_t want_rows = r.ranged ? end - begin : page_rows;
  bool any_validity = false;
  for (const auto& l : f.dec.fsl) any_validity |= l.has_validity;
  if (f.fixed && f.cw == 0 && !any_validity) {
    if (!(s.max_rep == 0 && f.fixed) || f.vbytes == 0) throw corrupt_error(where + ": full-zip values of zero width");
    out.num_slots = end - begin;
    out.values = full_zip_raw_values(f, zipped, r, end - begin);
    return out;
  }
  auto u = unzip_slots(z, s, f, zipped, r.pb, r.pe, where);
  check_full_zip_rows(u, s, want_rows, where);
  out.rep = std::move(u.rep);
  out.def = std::move(u.def);
  out.num_slots = s.max_rep ? out.rep.size() : want_rows;
  out.values = full_zip_values_block(u, f, where);
  out.whole_page = !r.ranged;
  return out;
}

}  // namespace lancet::encoding::structural
