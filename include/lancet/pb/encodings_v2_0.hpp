// Messages of Lance's encodings_v2_0.proto (package lance.encodings): the 2.0 "array
// encoding" tree of a page, and the ColumnEncoding every 2.x column carries (Lance 2.1
// and 2.2 files still write `/lance.encodings.ColumnEncoding` for their columns).
//
// Representation: a proto oneof is a std::variant<std::monostate, ...> whose index is
// the proto field number; recursive children (ArrayEncoding inside ArrayEncoding,
// ColumnEncoding inside ZoneIndex/Blob) are pb::box<T> (nullable, deep-copying);
// other sub-messages are std::optional<T>. All structs are aggregates, so
//   enc20::array_encoding{enc20::flat{.bits_per_value = 32, .buffer = enc20::buffer{}}}
// builds a page encoding. Fields are written in ascending field-number order, as
// prost (Lance's protobuf library) does, so our bytes match Lance's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lancet/pb/file2.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb::enc20 {

struct array_encoding;
struct column_encoding;

// Where a buffer lives: the page's buffers, the column metadata buffers or the file's
// global buffers.
struct buffer {
  static constexpr std::string_view message_name = "Buffer";
  enum buffer_type : std::int32_t { page = 0, column = 1, file = 2 };
  static constexpr std::uint32_t f_buffer_index = 1, f_buffer_type = 2;
  std::uint32_t buffer_index = 0;
  buffer_type type = page;

  void encode(writer& w) const;
  static buffer decode(reader r);
  bool operator==(const buffer&) const = default;
};

struct nullable {
  static constexpr std::string_view message_name = "Nullable";
  struct no_null {
    static constexpr std::string_view message_name = "Nullable.NoNull";
    static constexpr std::uint32_t f_values = 1;
    box<array_encoding> values{};
    void encode(writer& w) const;
    static no_null decode(reader r);
    bool operator==(const no_null&) const = default;
  };
  struct some_null {
    static constexpr std::string_view message_name = "Nullable.SomeNull";
    static constexpr std::uint32_t f_validity = 1, f_values = 2;
    box<array_encoding> validity{};
    box<array_encoding> values{};
    void encode(writer& w) const;
    static some_null decode(reader r);
    bool operator==(const some_null&) const = default;
  };
  struct all_null {
    static constexpr std::string_view message_name = "Nullable.AllNull";
    void encode(writer&) const {}
    static all_null decode(reader r);
    bool operator==(const all_null&) const = default;
  };
  // oneof nullability { NoNull no_nulls = 1; SomeNull some_nulls = 2; AllNull all_nulls = 3; }
  static constexpr std::uint32_t f_no_nulls = 1, f_some_nulls = 2, f_all_nulls = 3;
  std::variant<std::monostate, no_null, some_null, all_null> nullability{};

  void encode(writer& w) const;
  static nullable decode(reader r);
  bool operator==(const nullable&) const = default;
};

struct list {
  static constexpr std::string_view message_name = "List";
  static constexpr std::uint32_t f_offsets = 1, f_null_offset_adjustment = 2, f_num_items = 3;
  box<array_encoding> offsets{};
  std::uint64_t null_offset_adjustment = 0;
  std::uint64_t num_items = 0;
  void encode(writer& w) const;
  static list decode(reader r);
  bool operator==(const list&) const = default;
};

struct fixed_size_list {
  static constexpr std::string_view message_name = "FixedSizeList";
  static constexpr std::uint32_t f_dimension = 1, f_items = 2, f_has_validity = 3;
  std::uint32_t dimension = 0;
  box<array_encoding> items{};
  bool has_validity = false;
  void encode(writer& w) const;
  static fixed_size_list decode(reader r);
  bool operator==(const fixed_size_list&) const = default;
};

// General-purpose compression of a buffer ("zstd", "lz4", ...).
struct compression {
  static constexpr std::string_view message_name = "Compression";
  static constexpr std::uint32_t f_scheme = 1, f_level = 2;
  std::string scheme{};
  std::optional<std::int32_t> level{};
  void encode(writer& w) const;
  static compression decode(reader r);
  bool operator==(const compression&) const = default;
};

struct flat {
  static constexpr std::string_view message_name = "Flat";
  static constexpr std::uint32_t f_bits_per_value = 1, f_buffer = 2, f_compression = 3;
  std::uint64_t bits_per_value = 0;
  std::optional<enc20::buffer> buffer{};
  std::optional<enc20::compression> compression{};
  void encode(writer& w) const;
  static flat decode(reader r);
  bool operator==(const flat&) const = default;
};

struct constant {
  static constexpr std::string_view message_name = "Constant";
  static constexpr std::uint32_t f_value = 1;
  std::string value{};
  void encode(writer& w) const;
  static constant decode(reader r);
  bool operator==(const constant&) const = default;
};

struct bitpacked {
  static constexpr std::string_view message_name = "Bitpacked";
  static constexpr std::uint32_t f_compressed_bits_per_value = 1, f_uncompressed_bits_per_value = 2,
                                 f_buffer = 3, f_signed = 4;
  std::uint64_t compressed_bits_per_value = 0;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::optional<enc20::buffer> buffer{};
  bool is_signed = false;  // proto field "signed"
  void encode(writer& w) const;
  static bitpacked decode(reader r);
  bool operator==(const bitpacked&) const = default;
};

struct bitpacked_for_non_neg {
  static constexpr std::string_view message_name = "BitpackedForNonNeg";
  static constexpr std::uint32_t f_compressed_bits_per_value = 1, f_uncompressed_bits_per_value = 2,
                                 f_buffer = 3;
  std::uint64_t compressed_bits_per_value = 0;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::optional<enc20::buffer> buffer{};
  void encode(writer& w) const;
  static bitpacked_for_non_neg decode(reader r);
  bool operator==(const bitpacked_for_non_neg&) const = default;
};

struct inline_bitpacking {
  static constexpr std::string_view message_name = "InlineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 2;  // field 1 is unused in the proto
  std::uint64_t uncompressed_bits_per_value = 0;
  void encode(writer& w) const;
  static inline_bitpacking decode(reader r);
  bool operator==(const inline_bitpacking&) const = default;
};

struct out_of_line_bitpacking {
  static constexpr std::string_view message_name = "OutOfLineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 2, f_compressed_bits_per_value = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t compressed_bits_per_value = 0;
  void encode(writer& w) const;
  static out_of_line_bitpacking decode(reader r);
  bool operator==(const out_of_line_bitpacking&) const = default;
};

// A struct column: no data of its own (children are separate columns).
struct simple_struct {
  static constexpr std::string_view message_name = "SimpleStruct";
  void encode(writer&) const {}
  static simple_struct decode(reader r);
  bool operator==(const simple_struct&) const = default;
};

struct binary {
  static constexpr std::string_view message_name = "Binary";
  static constexpr std::uint32_t f_indices = 1, f_bytes = 2, f_null_adjustment = 3;
  box<array_encoding> indices{};
  box<array_encoding> bytes{};
  std::uint64_t null_adjustment = 0;
  void encode(writer& w) const;
  static binary decode(reader r);
  bool operator==(const binary&) const = default;
};

struct variable {
  static constexpr std::string_view message_name = "Variable";
  static constexpr std::uint32_t f_bits_per_offset = 1;
  std::uint32_t bits_per_offset = 0;
  void encode(writer& w) const;
  static variable decode(reader r);
  bool operator==(const variable&) const = default;
};

struct fsst {
  static constexpr std::string_view message_name = "Fsst";
  static constexpr std::uint32_t f_binary = 1, f_symbol_table = 2;
  box<array_encoding> binary{};
  std::string symbol_table{};
  void encode(writer& w) const;
  static fsst decode(reader r);
  bool operator==(const fsst&) const = default;
};

struct dictionary {
  static constexpr std::string_view message_name = "Dictionary";
  static constexpr std::uint32_t f_indices = 1, f_items = 2, f_num_dictionary_items = 3;
  box<array_encoding> indices{};
  box<array_encoding> items{};
  std::uint32_t num_dictionary_items = 0;
  void encode(writer& w) const;
  static dictionary decode(reader r);
  bool operator==(const dictionary&) const = default;
};

struct packed_struct {
  static constexpr std::string_view message_name = "PackedStruct";
  static constexpr std::uint32_t f_inner = 1, f_buffer = 2;
  std::vector<array_encoding> inner{};
  std::optional<enc20::buffer> buffer{};
  void encode(writer& w) const;
  static packed_struct decode(reader r);
  bool operator==(const packed_struct&) const;
};

struct packed_struct_fixed_width_mini_block {
  static constexpr std::string_view message_name = "PackedStructFixedWidthMiniBlock";
  static constexpr std::uint32_t f_flat = 1, f_bits_per_values = 2;
  box<array_encoding> flat{};  // proto field "Flat"
  std::vector<std::uint32_t> bits_per_values{};
  void encode(writer& w) const;
  static packed_struct_fixed_width_mini_block decode(reader r);
  bool operator==(const packed_struct_fixed_width_mini_block&) const = default;
};

struct fixed_size_binary {
  static constexpr std::string_view message_name = "FixedSizeBinary";
  static constexpr std::uint32_t f_bytes = 1, f_byte_width = 2;
  box<array_encoding> bytes{};
  std::uint32_t byte_width = 0;
  void encode(writer& w) const;
  static fixed_size_binary decode(reader r);
  bool operator==(const fixed_size_binary&) const = default;
};

struct block {
  static constexpr std::string_view message_name = "Block";
  static constexpr std::uint32_t f_scheme = 1;
  std::string scheme{};
  void encode(writer& w) const;
  static block decode(reader r);
  bool operator==(const block&) const = default;
};

struct rle {
  static constexpr std::string_view message_name = "Rle";
  static constexpr std::uint32_t f_bits_per_value = 1;
  std::uint64_t bits_per_value = 0;
  void encode(writer& w) const;
  static rle decode(reader r);
  bool operator==(const rle&) const = default;
};

struct byte_stream_split {
  static constexpr std::string_view message_name = "ByteStreamSplit";
  static constexpr std::uint32_t f_bits_per_value = 1;
  std::uint64_t bits_per_value = 0;
  void encode(writer& w) const;
  static byte_stream_split decode(reader r);
  bool operator==(const byte_stream_split&) const = default;
};

struct general_mini_block {
  static constexpr std::string_view message_name = "GeneralMiniBlock";
  static constexpr std::uint32_t f_inner = 1, f_compression = 2;
  box<array_encoding> inner{};
  std::optional<enc20::compression> compression{};
  void encode(writer& w) const;
  static general_mini_block decode(reader r);
  bool operator==(const general_mini_block&) const = default;
};

// The root of a 2.0 page encoding. Variant index == proto field number:
// 1 flat, 2 nullable, 3 fixed_size_list, 4 list, 5 struct, 6 binary, 7 dictionary,
// 8 fsst, 9 packed_struct, 10 bitpacked, 11 fixed_size_binary, 12 bitpacked_for_non_neg,
// 13 constant, 14 inline_bitpacking, 15 out_of_line_bitpacking, 16 variable,
// 17 packed_struct_fixed_width_mini_block, 18 block, 19 rle, 20 general_mini_block,
// 21 byte_stream_split.
struct array_encoding {
  static constexpr std::string_view message_name = "ArrayEncoding";
  static constexpr std::string_view type_url = "/lance.encodings.ArrayEncoding";
  static constexpr std::uint32_t f_flat = 1, f_nullable = 2, f_fixed_size_list = 3, f_list = 4, f_struct = 5,
                                 f_binary = 6, f_dictionary = 7, f_fsst = 8, f_packed_struct = 9,
                                 f_bitpacked = 10, f_fixed_size_binary = 11, f_bitpacked_for_non_neg = 12,
                                 f_constant = 13, f_inline_bitpacking = 14, f_out_of_line_bitpacking = 15,
                                 f_variable = 16, f_packed_struct_fixed_width_mini_block = 17, f_block = 18,
                                 f_rle = 19, f_general_mini_block = 20, f_byte_stream_split = 21;
  using value_type =
      std::variant<std::monostate, enc20::flat, enc20::nullable, enc20::fixed_size_list, enc20::list,
                   enc20::simple_struct, enc20::binary, enc20::dictionary, enc20::fsst, enc20::packed_struct,
                   enc20::bitpacked, enc20::fixed_size_binary, enc20::bitpacked_for_non_neg, enc20::constant,
                   enc20::inline_bitpacking, enc20::out_of_line_bitpacking, enc20::variable,
                   enc20::packed_struct_fixed_width_mini_block, enc20::block, enc20::rle,
                   enc20::general_mini_block, enc20::byte_stream_split>;
  value_type value{};

  void encode(writer& w) const { detail::oneof_encode(w, value); }
  static array_encoding decode(reader r);
  bool operator==(const array_encoding&) const = default;
};

inline bool packed_struct::operator==(const packed_struct& o) const {
  return inner == o.inner && buffer == o.buffer;
}

// A column wrapped with a zone map (min/max per zone) for filter pushdown.
struct zone_index {
  static constexpr std::string_view message_name = "ZoneIndex";
  static constexpr std::uint32_t f_rows_per_zone = 1, f_zone_map_buffer = 2, f_inner = 3;
  std::uint32_t rows_per_zone = 0;
  std::optional<enc20::buffer> zone_map_buffer{};
  box<column_encoding> inner{};
  void encode(writer& w) const;
  static zone_index decode(reader r);
  bool operator==(const zone_index&) const = default;
};

// A blob column: the page holds (position, size) descriptions of out-of-line values.
struct blob {
  static constexpr std::string_view message_name = "Blob";
  static constexpr std::uint32_t f_inner = 1;
  box<column_encoding> inner{};
  void encode(writer& w) const;
  static blob decode(reader r);
  bool operator==(const blob&) const = default;
};

// oneof column_encoding { Empty values = 1; ZoneIndex zone_index = 2; Blob blob = 3; }
struct column_encoding {
  static constexpr std::string_view message_name = "ColumnEncoding";
  static constexpr std::string_view type_url = "/lance.encodings.ColumnEncoding";
  static constexpr std::uint32_t f_values = 1, f_zone_index = 2, f_blob = 3;
  using value_type = std::variant<std::monostate, empty, enc20::zone_index, enc20::blob>;
  value_type value{};

  // The plain column encoding every ordinary column carries.
  static column_encoding values() { return column_encoding{empty{}}; }
  void encode(writer& w) const { detail::oneof_encode(w, value); }
  static column_encoding decode(reader r);
  bool operator==(const column_encoding&) const = default;
};

// ---------------------------------------------------------------------------------
// Definitions (after every type is complete, since children are boxed).

inline void buffer::encode(writer& w) const {
  w.uint32_opt(f_buffer_index, buffer_index);
  w.int32_opt(f_buffer_type, std::int32_t(type));
}
inline buffer buffer::decode(reader r) {
  buffer m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_buffer_index) m.buffer_index = std::uint32_t(r.varint(f, "Buffer.buffer_index"));
    else if (f.number == f_buffer_type) m.type = detail::read_enum<buffer_type>(r, f, "Buffer.buffer_type");
  }
  return m;
}

inline void nullable::no_null::encode(writer& w) const { detail::write_opt(w, f_values, values); }
inline nullable::no_null nullable::no_null::decode(reader r) {
  no_null m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_values) m.values = array_encoding::decode(r.sub(f, "NoNull.values"));
  }
  return m;
}
inline void nullable::some_null::encode(writer& w) const {
  detail::write_opt(w, f_validity, validity);
  detail::write_opt(w, f_values, values);
}
inline nullable::some_null nullable::some_null::decode(reader r) {
  some_null m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_validity) m.validity = array_encoding::decode(r.sub(f, "SomeNull.validity"));
    else if (f.number == f_values) m.values = array_encoding::decode(r.sub(f, "SomeNull.values"));
  }
  return m;
}
inline nullable::all_null nullable::all_null::decode(reader r) {
  while (!r.done()) r.next();
  return {};
}
inline void nullable::encode(writer& w) const { detail::oneof_encode(w, nullability); }
inline nullable nullable::decode(reader r) {
  nullable m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.nullability, r, f, "Nullable");
  }
  return m;
}

inline void list::encode(writer& w) const {
  detail::write_opt(w, f_offsets, offsets);
  w.uint64_opt(f_null_offset_adjustment, null_offset_adjustment);
  w.uint64_opt(f_num_items, num_items);
}
inline list list::decode(reader r) {
  list m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_offsets: m.offsets = array_encoding::decode(r.sub(f, "List.offsets")); break;
      case f_null_offset_adjustment: m.null_offset_adjustment = r.varint(f, "List.null_offset_adjustment"); break;
      case f_num_items: m.num_items = r.varint(f, "List.num_items"); break;
      default: break;
    }
  }
  return m;
}

inline void fixed_size_list::encode(writer& w) const {
  w.uint32_opt(f_dimension, dimension);
  detail::write_opt(w, f_items, items);
  w.boolean_opt(f_has_validity, has_validity);
}
inline fixed_size_list fixed_size_list::decode(reader r) {
  fixed_size_list m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_dimension: m.dimension = std::uint32_t(r.varint(f, "FixedSizeList.dimension")); break;
      case f_items: m.items = array_encoding::decode(r.sub(f, "FixedSizeList.items")); break;
      case f_has_validity: m.has_validity = r.varint(f, "FixedSizeList.has_validity") != 0; break;
      default: break;
    }
  }
  return m;
}

inline void compression::encode(writer& w) const {
  w.string_opt(f_scheme, scheme);
  if (level) w.int32(f_level, *level);
}
inline compression compression::decode(reader r) {
  compression m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_scheme) m.scheme = r.string(f, "Compression.scheme");
    else if (f.number == f_level) m.level = std::int32_t(std::int64_t(r.varint(f, "Compression.level")));
  }
  return m;
}

inline void flat::encode(writer& w) const {
  w.uint64_opt(f_bits_per_value, bits_per_value);
  detail::write_opt(w, f_buffer, buffer);
  detail::write_opt(w, f_compression, compression);
}
inline flat flat::decode(reader r) {
  flat m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_bits_per_value: m.bits_per_value = r.varint(f, "Flat.bits_per_value"); break;
      case f_buffer: m.buffer = enc20::buffer::decode(r.sub(f, "Flat.buffer")); break;
      case f_compression: m.compression = enc20::compression::decode(r.sub(f, "Flat.compression")); break;
      default: break;
    }
  }
  return m;
}

inline void constant::encode(writer& w) const { w.string_opt(f_value, value); }
inline constant constant::decode(reader r) {
  constant m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_value) m.value = r.string(f, "Constant.value");
  }
  return m;
}

inline void bitpacked::encode(writer& w) const {
  w.uint64_opt(f_compressed_bits_per_value, compressed_bits_per_value);
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  detail::write_opt(w, f_buffer, buffer);
  w.boolean_opt(f_signed, is_signed);
}
inline bitpacked bitpacked::decode(reader r) {
  bitpacked m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_compressed_bits_per_value:
        m.compressed_bits_per_value = r.varint(f, "Bitpacked.compressed_bits_per_value");
        break;
      case f_uncompressed_bits_per_value:
        m.uncompressed_bits_per_value = r.varint(f, "Bitpacked.uncompressed_bits_per_value");
        break;
      case f_buffer: m.buffer = enc20::buffer::decode(r.sub(f, "Bitpacked.buffer")); break;
      case f_signed: m.is_signed = r.varint(f, "Bitpacked.signed") != 0; break;
      default: break;
    }
  }
  return m;
}

inline void bitpacked_for_non_neg::encode(writer& w) const {
  w.uint64_opt(f_compressed_bits_per_value, compressed_bits_per_value);
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  detail::write_opt(w, f_buffer, buffer);
}
inline bitpacked_for_non_neg bitpacked_for_non_neg::decode(reader r) {
  bitpacked_for_non_neg m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_compressed_bits_per_value:
        m.compressed_bits_per_value = r.varint(f, "BitpackedForNonNeg.compressed_bits_per_value");
        break;
      case f_uncompressed_bits_per_value:
        m.uncompressed_bits_per_value = r.varint(f, "BitpackedForNonNeg.uncompressed_bits_per_value");
        break;
      case f_buffer: m.buffer = enc20::buffer::decode(r.sub(f, "BitpackedForNonNeg.buffer")); break;
      default: break;
    }
  }
  return m;
}

inline void inline_bitpacking::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
}
inline inline_bitpacking inline_bitpacking::decode(reader r) {
  inline_bitpacking m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_uncompressed_bits_per_value)
      m.uncompressed_bits_per_value = r.varint(f, "InlineBitpacking.uncompressed_bits_per_value");
  }
  return m;
}

inline void out_of_line_bitpacking::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  w.uint64_opt(f_compressed_bits_per_value, compressed_bits_per_value);
}
inline out_of_line_bitpacking out_of_line_bitpacking::decode(reader r) {
  out_of_line_bitpacking m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_uncompressed_bits_per_value)
      m.uncompressed_bits_per_value = r.varint(f, "OutOfLineBitpacking.uncompressed_bits_per_value");
    else if (f.number == f_compressed_bits_per_value)
      m.compressed_bits_per_value = r.varint(f, "OutOfLineBitpacking.compressed_bits_per_value");
  }
  return m;
}

inline simple_struct simple_struct::decode(reader r) {
  while (!r.done()) r.next();
  return {};
}

inline void binary::encode(writer& w) const {
  detail::write_opt(w, f_indices, indices);
  detail::write_opt(w, f_bytes, bytes);
  w.uint64_opt(f_null_adjustment, null_adjustment);
}
inline binary binary::decode(reader r) {
  binary m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_indices: m.indices = array_encoding::decode(r.sub(f, "Binary.indices")); break;
      case f_bytes: m.bytes = array_encoding::decode(r.sub(f, "Binary.bytes")); break;
      case f_null_adjustment: m.null_adjustment = r.varint(f, "Binary.null_adjustment"); break;
      default: break;
    }
  }
  return m;
}

inline void variable::encode(writer& w) const { w.uint32_opt(f_bits_per_offset, bits_per_offset); }
inline variable variable::decode(reader r) {
  variable m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bits_per_offset) m.bits_per_offset = std::uint32_t(r.varint(f, "Variable.bits_per_offset"));
  }
  return m;
}

inline void fsst::encode(writer& w) const {
  detail::write_opt(w, f_binary, binary);
  w.string_opt(f_symbol_table, symbol_table);
}
inline fsst fsst::decode(reader r) {
  fsst m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_binary) m.binary = array_encoding::decode(r.sub(f, "Fsst.binary"));
    else if (f.number == f_symbol_table) m.symbol_table = r.string(f, "Fsst.symbol_table");
  }
  return m;
}

inline void dictionary::encode(writer& w) const {
  detail::write_opt(w, f_indices, indices);
  detail::write_opt(w, f_items, items);
  w.uint32_opt(f_num_dictionary_items, num_dictionary_items);
}
inline dictionary dictionary::decode(reader r) {
  dictionary m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_indices: m.indices = array_encoding::decode(r.sub(f, "Dictionary.indices")); break;
      case f_items: m.items = array_encoding::decode(r.sub(f, "Dictionary.items")); break;
      case f_num_dictionary_items:
        m.num_dictionary_items = std::uint32_t(r.varint(f, "Dictionary.num_dictionary_items"));
        break;
      default: break;
    }
  }
  return m;
}

inline void packed_struct::encode(writer& w) const {
  detail::write_repeated(w, f_inner, inner);
  detail::write_opt(w, f_buffer, buffer);
}
inline packed_struct packed_struct::decode(reader r) {
  packed_struct m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_inner) m.inner.push_back(array_encoding::decode(r.sub(f, "PackedStruct.inner")));
    else if (f.number == f_buffer) m.buffer = enc20::buffer::decode(r.sub(f, "PackedStruct.buffer"));
  }
  return m;
}

inline void packed_struct_fixed_width_mini_block::encode(writer& w) const {
  detail::write_opt(w, f_flat, flat);
  w.packed_varint(f_bits_per_values, bits_per_values);
}
inline packed_struct_fixed_width_mini_block packed_struct_fixed_width_mini_block::decode(reader r) {
  packed_struct_fixed_width_mini_block m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_flat) m.flat = array_encoding::decode(r.sub(f, "PackedStructFixedWidthMiniBlock.Flat"));
    else if (f.number == f_bits_per_values) r.repeated_varint(f, m.bits_per_values);
  }
  return m;
}

inline void fixed_size_binary::encode(writer& w) const {
  detail::write_opt(w, f_bytes, bytes);
  w.uint32_opt(f_byte_width, byte_width);
}
inline fixed_size_binary fixed_size_binary::decode(reader r) {
  fixed_size_binary m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bytes) m.bytes = array_encoding::decode(r.sub(f, "FixedSizeBinary.bytes"));
    else if (f.number == f_byte_width) m.byte_width = std::uint32_t(r.varint(f, "FixedSizeBinary.byte_width"));
  }
  return m;
}

inline void block::encode(writer& w) const { w.string_opt(f_scheme, scheme); }
inline block block::decode(reader r) {
  block m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_scheme) m.scheme = r.string(f, "Block.scheme");
  }
  return m;
}

inline void rle::encode(writer& w) const { w.uint64_opt(f_bits_per_value, bits_per_value); }
inline rle rle::decode(reader r) {
  rle m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bits_per_value) m.bits_per_value = r.varint(f, "Rle.bits_per_value");
  }
  return m;
}

inline void byte_stream_split::encode(writer& w) const { w.uint64_opt(f_bits_per_value, bits_per_value); }
inline byte_stream_split byte_stream_split::decode(reader r) {
  byte_stream_split m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bits_per_value) m.bits_per_value = r.varint(f, "ByteStreamSplit.bits_per_value");
  }
  return m;
}

inline void general_mini_block::encode(writer& w) const {
  detail::write_opt(w, f_inner, inner);
  detail::write_opt(w, f_compression, compression);
}
inline general_mini_block general_mini_block::decode(reader r) {
  general_mini_block m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_inner) m.inner = array_encoding::decode(r.sub(f, "GeneralMiniBlock.inner"));
    else if (f.number == f_compression)
      m.compression = enc20::compression::decode(r.sub(f, "GeneralMiniBlock.compression"));
  }
  return m;
}

inline array_encoding array_encoding::decode(reader r) {
  array_encoding m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.value, r, f, "ArrayEncoding");
  }
  return m;
}

inline void zone_index::encode(writer& w) const {
  w.uint32_opt(f_rows_per_zone, rows_per_zone);
  detail::write_opt(w, f_zone_map_buffer, zone_map_buffer);
  detail::write_opt(w, f_inner, inner);
}
inline zone_index zone_index::decode(reader r) {
  zone_index m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_rows_per_zone: m.rows_per_zone = std::uint32_t(r.varint(f, "ZoneIndex.rows_per_zone")); break;
      case f_zone_map_buffer: m.zone_map_buffer = enc20::buffer::decode(r.sub(f, "ZoneIndex.zone_map_buffer")); break;
      case f_inner: m.inner = column_encoding::decode(r.sub(f, "ZoneIndex.inner")); break;
      default: break;
    }
  }
  return m;
}

inline void blob::encode(writer& w) const { detail::write_opt(w, f_inner, inner); }
inline blob blob::decode(reader r) {
  blob m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_inner) m.inner = column_encoding::decode(r.sub(f, "Blob.inner"));
  }
  return m;
}

inline column_encoding column_encoding::decode(reader r) {
  column_encoding m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.value, r, f, "ColumnEncoding");
  }
  return m;
}

}  // namespace lancet::pb::enc20
