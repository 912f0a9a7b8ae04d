// Messages of Lance's encodings_v2_0.proto (package lance.encodings): the 2.0 "array
// encoding" tree of a page, and the ColumnEncoding every 2.x column carries (Lance 2.1
// and 2.2 files still write `/lance.encodings.ColumnEncoding` for their columns).
//
// Representation: a proto oneof is a std::variant<std::monostate, ...> whose index is
// the proto field number; recursive children (ArrayEncoding inside ArrayEncoding,
// ColumnEncoding inside ZoneIndex/Blob) are pb::box<T> (nullable, deep-copying);
// other sub-messages are std::optional<T>. All structs are aggregates, so
//   enc20::array_encoding{enc20::flat{.bits_per_value = 32, .buffer = enc20::buffer{}}}
// builds a page encoding. Each message lists its fields in proto_fields(), in field-number
// order, and gets prost-compatible pb::encode / pb::decode from pb/message.hpp.
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

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_buffer_index, &buffer::buffer_index, "Buffer.buffer_index"),
                      pb::field(f_buffer_type, &buffer::type, "Buffer.buffer_type"));
  }
  bool operator==(const buffer&) const = default;
};

struct nullable {
  static constexpr std::string_view message_name = "Nullable";
  struct no_null {
    static constexpr std::string_view message_name = "Nullable.NoNull";
    static constexpr std::uint32_t f_values = 1;
    box<array_encoding> values{};
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_values, &no_null::values, "Nullable.NoNull.values"));
    }
    bool operator==(const no_null&) const = default;
  };
  struct some_null {
    static constexpr std::string_view message_name = "Nullable.SomeNull";
    static constexpr std::uint32_t f_validity = 1, f_values = 2;
    box<array_encoding> validity{};
    box<array_encoding> values{};
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_validity, &some_null::validity, "Nullable.SomeNull.validity"),
                        pb::field(f_values, &some_null::values, "Nullable.SomeNull.values"));
    }
    bool operator==(const some_null&) const = default;
  };
  struct all_null {
    static constexpr std::string_view message_name = "Nullable.AllNull";
    static constexpr auto proto_fields() { return pb::fields(); }
    bool operator==(const all_null&) const = default;
  };
  // oneof nullability { NoNull no_nulls = 1; SomeNull some_nulls = 2; AllNull all_nulls = 3; }
  static constexpr std::uint32_t f_no_nulls = 1, f_some_nulls = 2, f_all_nulls = 3;
  std::variant<std::monostate, no_null, some_null, all_null> nullability{};

  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&nullable::nullability, "Nullable"));
  }
  bool operator==(const nullable&) const = default;
};

struct list {
  static constexpr std::string_view message_name = "List";
  static constexpr std::uint32_t f_offsets = 1, f_null_offset_adjustment = 2, f_num_items = 3;
  box<array_encoding> offsets{};
  std::uint64_t null_offset_adjustment = 0;
  std::uint64_t num_items = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_offsets, &list::offsets, "List.offsets"),
                      pb::field(f_null_offset_adjustment, &list::null_offset_adjustment, "List.null_offset_adjustment"),
                      pb::field(f_num_items, &list::num_items, "List.num_items"));
  }
  bool operator==(const list&) const = default;
};

struct fixed_size_list {
  static constexpr std::string_view message_name = "FixedSizeList";
  static constexpr std::uint32_t f_dimension = 1, f_items = 2, f_has_validity = 3;
  std::uint32_t dimension = 0;
  box<array_encoding> items{};
  bool has_validity = false;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_dimension, &fixed_size_list::dimension, "FixedSizeList.dimension"),
                      pb::field(f_items, &fixed_size_list::items, "FixedSizeList.items"),
                      pb::field(f_has_validity, &fixed_size_list::has_validity, "FixedSizeList.has_validity"));
  }
  bool operator==(const fixed_size_list&) const = default;
};

// General-purpose compression of a buffer ("zstd", "lz4", ...).
struct compression {
  static constexpr std::string_view message_name = "Compression";
  static constexpr std::uint32_t f_scheme = 1, f_level = 2;
  std::string scheme{};
  std::optional<std::int32_t> level{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_scheme, &compression::scheme, "Compression.scheme"),
                      pb::field(f_level, &compression::level, "Compression.level"));
  }
  bool operator==(const compression&) const = default;
};

struct flat {
  static constexpr std::string_view message_name = "Flat";
  static constexpr std::uint32_t f_bits_per_value = 1, f_buffer = 2, f_compression = 3;
  std::uint64_t bits_per_value = 0;
  std::optional<enc20::buffer> buffer{};
  std::optional<enc20::compression> compression{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_value, &flat::bits_per_value, "Flat.bits_per_value"),
                      pb::field(f_buffer, &flat::buffer, "Flat.buffer"),
                      pb::field(f_compression, &flat::compression, "Flat.compression"));
  }
  bool operator==(const flat&) const = default;
};

struct constant {
  static constexpr std::string_view message_name = "Constant";
  static constexpr std::uint32_t f_value = 1;
  std::string value{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_value, &constant::value, "Constant.value"));
  }
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
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_compressed_bits_per_value, &bitpacked::compressed_bits_per_value, "Bitpacked.compressed_bits_per_value"),
                      pb::field(f_uncompressed_bits_per_value, &bitpacked::uncompressed_bits_per_value, "Bitpacked.uncompressed_bits_per_value"),
                      pb::field(f_buffer, &bitpacked::buffer, "Bitpacked.buffer"),
                      pb::field(f_signed, &bitpacked::is_signed, "Bitpacked.signed"));
  }
  bool operator==(const bitpacked&) const = default;
};

struct bitpacked_for_non_neg {
  static constexpr std::string_view message_name = "BitpackedForNonNeg";
  static constexpr std::uint32_t f_compressed_bits_per_value = 1, f_uncompressed_bits_per_value = 2,
                                 f_buffer = 3;
  std::uint64_t compressed_bits_per_value = 0;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::optional<enc20::buffer> buffer{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_compressed_bits_per_value, &bitpacked_for_non_neg::compressed_bits_per_value, "BitpackedForNonNeg.compressed_bits_per_value"),
                      pb::field(f_uncompressed_bits_per_value, &bitpacked_for_non_neg::uncompressed_bits_per_value, "BitpackedForNonNeg.uncompressed_bits_per_value"),
                      pb::field(f_buffer, &bitpacked_for_non_neg::buffer, "BitpackedForNonNeg.buffer"));
  }
  bool operator==(const bitpacked_for_non_neg&) const = default;
};

struct inline_bitpacking {
  static constexpr std::string_view message_name = "InlineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 2;  // field 1 is unused in the proto
  std::uint64_t uncompressed_bits_per_value = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &inline_bitpacking::uncompressed_bits_per_value, "InlineBitpacking.uncompressed_bits_per_value"));
  }
  bool operator==(const inline_bitpacking&) const = default;
};

struct out_of_line_bitpacking {
  static constexpr std::string_view message_name = "OutOfLineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 2, f_compressed_bits_per_value = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t compressed_bits_per_value = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &out_of_line_bitpacking::uncompressed_bits_per_value, "OutOfLineBitpacking.uncompressed_bits_per_value"),
                      pb::field(f_compressed_bits_per_value, &out_of_line_bitpacking::compressed_bits_per_value, "OutOfLineBitpacking.compressed_bits_per_value"));
  }
  bool operator==(const out_of_line_bitpacking&) const = default;
};

// A struct column: no data of its own (children are separate columns).
struct simple_struct {
  static constexpr std::string_view message_name = "SimpleStruct";
  static constexpr auto proto_fields() { return pb::fields(); }
  bool operator==(const simple_struct&) const = default;
};

struct binary {
  static constexpr std::string_view message_name = "Binary";
  static constexpr std::uint32_t f_indices = 1, f_bytes = 2, f_null_adjustment = 3;
  box<array_encoding> indices{};
  box<array_encoding> bytes{};
  std::uint64_t null_adjustment = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_indices, &binary::indices, "Binary.indices"),
                      pb::field(f_bytes, &binary::bytes, "Binary.bytes"),
                      pb::field(f_null_adjustment, &binary::null_adjustment, "Binary.null_adjustment"));
  }
  bool operator==(const binary&) const = default;
};

struct variable {
  static constexpr std::string_view message_name = "Variable";
  static constexpr std::uint32_t f_bits_per_offset = 1;
  std::uint32_t bits_per_offset = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_offset, &variable::bits_per_offset, "Variable.bits_per_offset"));
  }
  bool operator==(const variable&) const = default;
};

struct fsst {
  static constexpr std::string_view message_name = "Fsst";
  static constexpr std::uint32_t f_binary = 1, f_symbol_table = 2;
  box<array_encoding> binary{};
  std::string symbol_table{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_binary, &fsst::binary, "Fsst.binary"),
                      pb::field(f_symbol_table, &fsst::symbol_table, "Fsst.symbol_table"));
  }
  bool operator==(const fsst&) const = default;
};

struct dictionary {
  static constexpr std::string_view message_name = "Dictionary";
  static constexpr std::uint32_t f_indices = 1, f_items = 2, f_num_dictionary_items = 3;
  box<array_encoding> indices{};
  box<array_encoding> items{};
  std::uint32_t num_dictionary_items = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_indices, &dictionary::indices, "Dictionary.indices"),
                      pb::field(f_items, &dictionary::items, "Dictionary.items"),
                      pb::field(f_num_dictionary_items, &dictionary::num_dictionary_items, "Dictionary.num_dictionary_items"));
  }
  bool operator==(const dictionary&) const = default;
};

struct packed_struct {
  static constexpr std::string_view message_name = "PackedStruct";
  static constexpr std::uint32_t f_inner = 1, f_buffer = 2;
  std::vector<array_encoding> inner;  // no {}: clang would need array_encoding complete here
  std::optional<enc20::buffer> buffer{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_inner, &packed_struct::inner, "PackedStruct.inner"),
                      pb::field(f_buffer, &packed_struct::buffer, "PackedStruct.buffer"));
  }
  bool operator==(const packed_struct&) const = default;
};

struct packed_struct_fixed_width_mini_block {
  static constexpr std::string_view message_name = "PackedStructFixedWidthMiniBlock";
  static constexpr std::uint32_t f_flat = 1, f_bits_per_values = 2;
  box<array_encoding> flat{};  // proto field "Flat"
  std::vector<std::uint32_t> bits_per_values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_flat, &packed_struct_fixed_width_mini_block::flat, "PackedStructFixedWidthMiniBlock.flat"),
                      pb::field(f_bits_per_values, &packed_struct_fixed_width_mini_block::bits_per_values, "PackedStructFixedWidthMiniBlock.bits_per_values"));
  }
  bool operator==(const packed_struct_fixed_width_mini_block&) const = default;
};

struct fixed_size_binary {
  static constexpr std::string_view message_name = "FixedSizeBinary";
  static constexpr std::uint32_t f_bytes = 1, f_byte_width = 2;
  box<array_encoding> bytes{};
  std::uint32_t byte_width = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bytes, &fixed_size_binary::bytes, "FixedSizeBinary.bytes"),
                      pb::field(f_byte_width, &fixed_size_binary::byte_width, "FixedSizeBinary.byte_width"));
  }
  bool operator==(const fixed_size_binary&) const = default;
};

struct block {
  static constexpr std::string_view message_name = "Block";
  static constexpr std::uint32_t f_scheme = 1;
  std::string scheme{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_scheme, &block::scheme, "Block.scheme"));
  }
  bool operator==(const block&) const = default;
};

struct rle {
  static constexpr std::string_view message_name = "Rle";
  static constexpr std::uint32_t f_bits_per_value = 1;
  std::uint64_t bits_per_value = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_value, &rle::bits_per_value, "Rle.bits_per_value"));
  }
  bool operator==(const rle&) const = default;
};

struct byte_stream_split {
  static constexpr std::string_view message_name = "ByteStreamSplit";
  static constexpr std::uint32_t f_bits_per_value = 1;
  std::uint64_t bits_per_value = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_value, &byte_stream_split::bits_per_value, "ByteStreamSplit.bits_per_value"));
  }
  bool operator==(const byte_stream_split&) const = default;
};

struct general_mini_block {
  static constexpr std::string_view message_name = "GeneralMiniBlock";
  static constexpr std::uint32_t f_inner = 1, f_compression = 2;
  box<array_encoding> inner{};
  std::optional<enc20::compression> compression{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_inner, &general_mini_block::inner, "GeneralMiniBlock.inner"),
                      pb::field(f_compression, &general_mini_block::compression, "GeneralMiniBlock.compression"));
  }
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

  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&array_encoding::value, "ArrayEncoding"));
  }
  bool operator==(const array_encoding&) const = default;
};


// A column wrapped with a zone map (min/max per zone) for filter pushdown.
struct zone_index {
  static constexpr std::string_view message_name = "ZoneIndex";
  static constexpr std::uint32_t f_rows_per_zone = 1, f_zone_map_buffer = 2, f_inner = 3;
  std::uint32_t rows_per_zone = 0;
  std::optional<enc20::buffer> zone_map_buffer{};
  box<column_encoding> inner{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_rows_per_zone, &zone_index::rows_per_zone, "ZoneIndex.rows_per_zone"),
                      pb::field(f_zone_map_buffer, &zone_index::zone_map_buffer, "ZoneIndex.zone_map_buffer"),
                      pb::field(f_inner, &zone_index::inner, "ZoneIndex.inner"));
  }
  bool operator==(const zone_index&) const = default;
};

// A blob column: the page holds (position, size) descriptions of out-of-line values.
struct blob {
  static constexpr std::string_view message_name = "Blob";
  static constexpr std::uint32_t f_inner = 1;
  box<column_encoding> inner{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_inner, &blob::inner, "Blob.inner"));
  }
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
  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&column_encoding::value, "ColumnEncoding"));
  }
  bool operator==(const column_encoding&) const = default;
};

}  // namespace lancet::pb::enc20
