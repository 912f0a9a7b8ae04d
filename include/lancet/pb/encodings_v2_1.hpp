// Messages of Lance's encodings_v2_1.proto (package lance.encodings21), used by file
// formats 2.1 and 2.2 (and later): a page's structural layout (PageLayout) and the
// compressive encodings (CompressiveEncoding tree) of its values and rep/def levels.
//
// Beyond the 1.0-beta snapshot in the Lance mirror this covers what newer Lance protos
// define: MiniBlockLayout.has_large_chunk (10, required by 2.2), ConstantLayout (which
// took PageLayout field 2 over from AllNullLayout, wire-compatibly), the Range and Delta
// compressive encodings, and the 2.3 SparseLayout family (decoded for completeness).
//
// Each message lists its fields in proto_fields() and gets pb::encode / pb::decode from
// pb/message.hpp: a oneof is a std::variant<std::monostate, ...> whose index is the
// proto field number; recursive children are pb::box<T>; other sub-messages are
// std::optional<T>; scalar oneofs (FullZipLayout.details,
// VariablePackedStruct.FieldEncoding.layout) are two std::optional scalars of which at
// most one may be set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lancet/pb/compression_scheme.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb::enc21 {

// What each repetition/definition layer means, outermost first.
enum class rep_def_layer : std::int32_t {
  unspecified = 0,
  all_valid_item = 1,       // REPDEF_ALL_VALID_ITEM
  all_valid_list = 2,       // REPDEF_ALL_VALID_LIST
  nullable_item = 3,        // REPDEF_NULLABLE_ITEM
  nullable_list = 4,        // REPDEF_NULLABLE_LIST
  emptyable_list = 5,       // REPDEF_EMPTYABLE_LIST
  null_and_empty_list = 6,  // REPDEF_NULL_AND_EMPTY_LIST
};


struct compressive_encoding;
struct page_layout;

// General-purpose compression of one buffer (a leaf of the compression tree).
struct buffer_compression {
  static constexpr std::string_view message_name = "BufferCompression";
  static constexpr std::uint32_t f_scheme = 1, f_level = 2;
  compression_scheme scheme = compression_scheme::unspecified;
  std::optional<std::int32_t> level{};  // absent: the scheme's default level
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_scheme, &buffer_compression::scheme, "BufferCompression.scheme"),
                      pb::field(f_level, &buffer_compression::level, "BufferCompression.level"));
  }
  bool operator==(const buffer_compression&) const = default;
};

struct flat {
  static constexpr std::string_view message_name = "Flat";
  static constexpr std::uint32_t f_bits_per_value = 1, f_data = 2;
  std::uint64_t bits_per_value = 0;
  std::optional<buffer_compression> data{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_value, &flat::bits_per_value, "Flat.bits_per_value"),
                      pb::field(f_data, &flat::data, "Flat.data"));
  }
  bool operator==(const flat&) const = default;
};

struct variable {
  static constexpr std::string_view message_name = "Variable";
  static constexpr std::uint32_t f_offsets = 1, f_values = 2;
  box<compressive_encoding> offsets{};
  std::optional<buffer_compression> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_offsets, &variable::offsets, "Variable.offsets"),
                      pb::field(f_values, &variable::values, "Variable.values"));
  }
  bool operator==(const variable&) const = default;
};

struct constant {
  static constexpr std::string_view message_name = "Constant";
  static constexpr std::uint32_t f_value = 1;
  std::optional<std::string> value{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_value, &constant::value, "Constant.value"));
  }
  bool operator==(const constant&) const = default;
};

// value[i] = start + step * i (newer Lance).
struct range {
  static constexpr std::string_view message_name = "Range";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_start = 2, f_step = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t start = 0;
  std::uint64_t step = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &range::uncompressed_bits_per_value, "Range.uncompressed_bits_per_value"),
                      pb::field(f_start, &range::start, "Range.start"),
                      pb::field(f_step, &range::step, "Range.step"));
  }
  bool operator==(const range&) const = default;
};

// A first value plus compressed adjacent differences (newer Lance).
struct delta {
  static constexpr std::string_view message_name = "Delta";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_base = 2, f_deltas = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t base = 0;
  box<compressive_encoding> deltas{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &delta::uncompressed_bits_per_value, "Delta.uncompressed_bits_per_value"),
                      pb::field(f_base, &delta::base, "Delta.base"),
                      pb::field(f_deltas, &delta::deltas, "Delta.deltas"));
  }
  bool operator==(const delta&) const = default;
};

struct out_of_line_bitpacking {
  static constexpr std::string_view message_name = "OutOfLineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_values = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  box<compressive_encoding> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &out_of_line_bitpacking::uncompressed_bits_per_value, "OutOfLineBitpacking.uncompressed_bits_per_value"),
                      pb::field(f_values, &out_of_line_bitpacking::values, "OutOfLineBitpacking.values"));
  }
  bool operator==(const out_of_line_bitpacking&) const = default;
};

struct inline_bitpacking {
  static constexpr std::string_view message_name = "InlineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_values = 2;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::optional<buffer_compression> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_uncompressed_bits_per_value, &inline_bitpacking::uncompressed_bits_per_value, "InlineBitpacking.uncompressed_bits_per_value"),
                      pb::field(f_values, &inline_bitpacking::values, "InlineBitpacking.values"));
  }
  bool operator==(const inline_bitpacking&) const = default;
};

struct fsst {
  static constexpr std::string_view message_name = "Fsst";
  static constexpr std::uint32_t f_symbol_table = 1, f_values = 2;
  std::string symbol_table{};
  box<compressive_encoding> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_symbol_table, &fsst::symbol_table, "Fsst.symbol_table"),
                      pb::field(f_values, &fsst::values, "Fsst.values"));
  }
  bool operator==(const fsst&) const = default;
};

struct dictionary {
  static constexpr std::string_view message_name = "Dictionary";
  static constexpr std::uint32_t f_indices = 1, f_items = 2, f_num_dictionary_items = 3;
  box<compressive_encoding> indices{};
  box<compressive_encoding> items{};
  std::uint32_t num_dictionary_items = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_indices, &dictionary::indices, "Dictionary.indices"),
                      pb::field(f_items, &dictionary::items, "Dictionary.items"),
                      pb::field(f_num_dictionary_items, &dictionary::num_dictionary_items, "Dictionary.num_dictionary_items"));
  }
  bool operator==(const dictionary&) const = default;
};

struct rle {
  static constexpr std::string_view message_name = "Rle";
  static constexpr std::uint32_t f_values = 1, f_run_lengths = 2;
  box<compressive_encoding> values{};
  box<compressive_encoding> run_lengths{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_values, &rle::values, "Rle.values"),
                      pb::field(f_run_lengths, &rle::run_lengths, "Rle.run_lengths"));
  }
  bool operator==(const rle&) const = default;
};

struct fixed_size_list {
  static constexpr std::string_view message_name = "FixedSizeList";
  static constexpr std::uint32_t f_items_per_value = 1, f_values = 2, f_has_validity = 3;
  std::uint64_t items_per_value = 0;
  box<compressive_encoding> values{};
  bool has_validity = false;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_items_per_value, &fixed_size_list::items_per_value, "FixedSizeList.items_per_value"),
                      pb::field(f_values, &fixed_size_list::values, "FixedSizeList.values"),
                      pb::field(f_has_validity, &fixed_size_list::has_validity, "FixedSizeList.has_validity"));
  }
  bool operator==(const fixed_size_list&) const = default;
};

struct packed_struct {
  static constexpr std::string_view message_name = "PackedStruct";
  static constexpr std::uint32_t f_bits_per_value = 1, f_values = 2;
  std::vector<std::uint64_t> bits_per_value{};
  box<compressive_encoding> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_per_value, &packed_struct::bits_per_value, "PackedStruct.bits_per_value"),
                      pb::field(f_values, &packed_struct::values, "PackedStruct.values"));
  }
  bool operator==(const packed_struct&) const = default;
};

struct variable_packed_struct {
  static constexpr std::string_view message_name = "VariablePackedStruct";
  struct field_encoding {
    static constexpr std::string_view message_name = "VariablePackedStruct.FieldEncoding";
    static constexpr std::uint32_t f_value = 1, f_bits_per_value = 2, f_bits_per_length = 3;
    box<compressive_encoding> value{};
    // oneof layout: at most one of these is set.
    std::optional<std::uint64_t> bits_per_value{};   // fixed-width compressed values
    std::optional<std::uint64_t> bits_per_length{};  // variable-width: length prefix width
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_value, &field_encoding::value, "VariablePackedStruct.FieldEncoding.value"),
                        pb::scalar_oneof(pb::field(f_bits_per_value, &field_encoding::bits_per_value, "VariablePackedStruct.FieldEncoding.bits_per_value"),
                                      pb::field(f_bits_per_length, &field_encoding::bits_per_length, "VariablePackedStruct.FieldEncoding.bits_per_length"), "VariablePackedStruct.FieldEncoding.layout"));
    }
    bool operator==(const field_encoding&) const = default;
  };
  static constexpr std::uint32_t f_fields = 1;
  std::vector<field_encoding> fields{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_fields, &variable_packed_struct::fields, "VariablePackedStruct.fields"));
  }
  bool operator==(const variable_packed_struct&) const = default;
};

// Whole-block general compression (zstd/lz4) of the inner encoding's output.
struct general {
  static constexpr std::string_view message_name = "General";
  static constexpr std::uint32_t f_compression = 1, f_values = 3;
  std::optional<buffer_compression> compression{};
  box<compressive_encoding> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_compression, &general::compression, "General.compression"),
                      pb::field(f_values, &general::values, "General.values"));
  }
  bool operator==(const general&) const = default;
};

struct byte_stream_split {
  static constexpr std::string_view message_name = "ByteStreamSplit";
  static constexpr std::uint32_t f_values = 1;
  box<compressive_encoding> values{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_values, &byte_stream_split::values, "ByteStreamSplit.values"));
  }
  bool operator==(const byte_stream_split&) const = default;
};

// Variant index == proto field number: 1 flat, 2 variable, 3 constant,
// 4 out_of_line_bitpacking, 5 inline_bitpacking, 6 fsst, 7 dictionary, 8 rle,
// 9 byte_stream_split, 10 general, 11 fixed_size_list, 12 packed_struct,
// 13 variable_packed_struct, 14 range, 15 delta.
struct compressive_encoding {
  static constexpr std::string_view message_name = "CompressiveEncoding";
  static constexpr std::uint32_t f_flat = 1, f_variable = 2, f_constant = 3, f_out_of_line_bitpacking = 4,
                                 f_inline_bitpacking = 5, f_fsst = 6, f_dictionary = 7, f_rle = 8,
                                 f_byte_stream_split = 9, f_general = 10, f_fixed_size_list = 11,
                                 f_packed_struct = 12, f_variable_packed_struct = 13, f_range = 14,
                                 f_delta = 15;
  using value_type =
      std::variant<std::monostate, enc21::flat, enc21::variable, enc21::constant, enc21::out_of_line_bitpacking,
                   enc21::inline_bitpacking, enc21::fsst, enc21::dictionary, enc21::rle,
                   enc21::byte_stream_split, enc21::general, enc21::fixed_size_list, enc21::packed_struct,
                   enc21::variable_packed_struct, enc21::range, enc21::delta>;
  value_type value{};

  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&compressive_encoding::value, "CompressiveEncoding"));
  }
  bool operator==(const compressive_encoding&) const = default;
};

// ---------------------------------------------------------------------------------
// Structural layouts

struct mini_block_layout {
  static constexpr std::string_view message_name = "MiniBlockLayout";
  static constexpr std::uint32_t f_rep_compression = 1, f_def_compression = 2, f_value_compression = 3,
                                 f_dictionary = 4, f_num_dictionary_items = 5, f_layers = 6,
                                 f_num_buffers = 7, f_repetition_index_depth = 8, f_num_items = 9,
                                 f_has_large_chunk = 10;
  std::optional<compressive_encoding> rep_compression{};  // absent: no repetition
  std::optional<compressive_encoding> def_compression{};  // absent: no definition levels
  std::optional<compressive_encoding> value_compression{};
  std::optional<compressive_encoding> dictionary{};       // absent: no dictionary
  std::uint64_t num_dictionary_items = 0;
  std::vector<rep_def_layer> layers{};
  std::uint64_t num_buffers = 0;
  std::uint32_t repetition_index_depth = 0;
  std::uint64_t num_items = 0;
  bool has_large_chunk = false;  // 2.2: u32 chunk sizes; Lance 2.2 requires it on every page
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_rep_compression, &mini_block_layout::rep_compression, "MiniBlockLayout.rep_compression"),
                      pb::field(f_def_compression, &mini_block_layout::def_compression, "MiniBlockLayout.def_compression"),
                      pb::field(f_value_compression, &mini_block_layout::value_compression, "MiniBlockLayout.value_compression"),
                      pb::field(f_dictionary, &mini_block_layout::dictionary, "MiniBlockLayout.dictionary"),
                      pb::field(f_num_dictionary_items, &mini_block_layout::num_dictionary_items, "MiniBlockLayout.num_dictionary_items"),
                      pb::field(f_layers, &mini_block_layout::layers, "MiniBlockLayout.layers"),
                      pb::field(f_num_buffers, &mini_block_layout::num_buffers, "MiniBlockLayout.num_buffers"),
                      pb::field(f_repetition_index_depth, &mini_block_layout::repetition_index_depth, "MiniBlockLayout.repetition_index_depth"),
                      pb::field(f_num_items, &mini_block_layout::num_items, "MiniBlockLayout.num_items"),
                      pb::field(f_has_large_chunk, &mini_block_layout::has_large_chunk, "MiniBlockLayout.has_large_chunk"));
  }
  bool operator==(const mini_block_layout&) const = default;
};

struct full_zip_layout {
  static constexpr std::string_view message_name = "FullZipLayout";
  static constexpr std::uint32_t f_bits_rep = 1, f_bits_def = 2, f_bits_per_value = 3, f_bits_per_offset = 4,
                                 f_num_items = 5, f_num_visible_items = 6, f_value_compression = 7,
                                 f_layers = 8;
  std::uint32_t bits_rep = 0;
  std::uint32_t bits_def = 0;
  // oneof details: at most one of these is set.
  std::optional<std::uint32_t> bits_per_value{};   // fixed-width values
  std::optional<std::uint32_t> bits_per_offset{};  // variable-width values
  std::uint32_t num_items = 0;
  std::uint32_t num_visible_items = 0;
  std::optional<compressive_encoding> value_compression{};
  std::vector<rep_def_layer> layers{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_bits_rep, &full_zip_layout::bits_rep, "FullZipLayout.bits_rep"),
                      pb::field(f_bits_def, &full_zip_layout::bits_def, "FullZipLayout.bits_def"),
                      pb::scalar_oneof(pb::field(f_bits_per_value, &full_zip_layout::bits_per_value, "FullZipLayout.bits_per_value"),
                                      pb::field(f_bits_per_offset, &full_zip_layout::bits_per_offset, "FullZipLayout.bits_per_offset"), "FullZipLayout.details"),
                      pb::field(f_num_items, &full_zip_layout::num_items, "FullZipLayout.num_items"),
                      pb::field(f_num_visible_items, &full_zip_layout::num_visible_items, "FullZipLayout.num_visible_items"),
                      pb::field(f_value_compression, &full_zip_layout::value_compression, "FullZipLayout.value_compression"),
                      pb::field(f_layers, &full_zip_layout::layers, "FullZipLayout.layers"));
  }
  bool operator==(const full_zip_layout&) const = default;
};

// Every visible value is the same scalar (inline_value) or null. Older protos call the
// message at this position AllNullLayout with only `layers` (5); the bytes are the same.
struct constant_layout {
  static constexpr std::string_view message_name = "ConstantLayout";
  static constexpr std::uint32_t f_layers = 5, f_inline_value = 6, f_rep_compression = 7,
                                 f_def_compression = 8, f_num_rep_values = 9, f_num_def_values = 10;
  std::vector<rep_def_layer> layers{};
  std::optional<std::string> inline_value{};  // absent for an all-null page; at most 32 bytes
  std::optional<compressive_encoding> rep_compression{};  // absent: raw u16 levels
  std::optional<compressive_encoding> def_compression{};
  std::uint64_t num_rep_values = 0;
  std::uint64_t num_def_values = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_layers, &constant_layout::layers, "ConstantLayout.layers"),
                      pb::field(f_inline_value, &constant_layout::inline_value, "ConstantLayout.inline_value"),
                      pb::field(f_rep_compression, &constant_layout::rep_compression, "ConstantLayout.rep_compression"),
                      pb::field(f_def_compression, &constant_layout::def_compression, "ConstantLayout.def_compression"),
                      pb::field(f_num_rep_values, &constant_layout::num_rep_values, "ConstantLayout.num_rep_values"),
                      pb::field(f_num_def_values, &constant_layout::num_def_values, "ConstantLayout.num_def_values"));
  }
  bool operator==(const constant_layout&) const = default;
};
using all_null_layout = constant_layout;

struct blob_layout {
  static constexpr std::string_view message_name = "BlobLayout";
  static constexpr std::uint32_t f_inner_layout = 1, f_layers = 2;
  box<page_layout> inner_layout{};
  std::vector<rep_def_layer> layers{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_inner_layout, &blob_layout::inner_layout, "BlobLayout.inner_layout"),
                      pb::field(f_layers, &blob_layout::layers, "BlobLayout.layers"));
  }
  bool operator==(const blob_layout&) const = default;
};

// --- the 2.3 sparse layout (newer than Lance 12) ---

struct sparse_position_empty {
  static constexpr std::string_view message_name = "SparsePositionEmpty";
  static constexpr auto proto_fields() { return pb::fields(); }  // no fields; a reader skips any
  bool operator==(const sparse_position_empty&) const = default;
};
struct sparse_position_all {
  static constexpr std::string_view message_name = "SparsePositionAll";
  static constexpr auto proto_fields() { return pb::fields(); }  // no fields; a reader skips any
  bool operator==(const sparse_position_all&) const = default;
};
struct sparse_position_range {
  static constexpr std::string_view message_name = "SparsePositionRange";
  static constexpr std::uint32_t f_start = 1, f_length = 2;
  std::uint64_t start = 0;
  std::uint64_t length = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_start, &sparse_position_range::start, "SparsePositionRange.start"),
                      pb::field(f_length, &sparse_position_range::length, "SparsePositionRange.length"));
  }
  bool operator==(const sparse_position_range&) const = default;
};
struct sparse_position_set {
  static constexpr std::string_view message_name = "SparsePositionSet";
  // oneof positions { CompressiveEncoding explicit = 1; Range range = 2; All all = 3; Empty empty = 4; }
  static constexpr std::uint32_t f_explicit = 1, f_range = 2, f_all = 3, f_empty = 4, f_num_positions = 5;
  std::variant<std::monostate, compressive_encoding, sparse_position_range, sparse_position_all,
               sparse_position_empty>
      positions{};
  std::uint64_t num_positions = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::oneof(&sparse_position_set::positions, "SparsePositionSet.positions"),
                      pb::field(f_num_positions, &sparse_position_set::num_positions, "SparsePositionSet.num_positions"));
  }
  bool operator==(const sparse_position_set&) const = default;
};
struct sparse_count_empty {
  static constexpr std::string_view message_name = "SparseCountEmpty";
  static constexpr auto proto_fields() { return pb::fields(); }  // no fields; a reader skips any
  bool operator==(const sparse_count_empty&) const = default;
};
struct sparse_count_constant {
  static constexpr std::string_view message_name = "SparseCountConstant";
  static constexpr std::uint32_t f_value = 1;
  std::uint64_t value = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_value, &sparse_count_constant::value, "SparseCountConstant.value"));
  }
  bool operator==(const sparse_count_constant&) const = default;
};
struct sparse_count_set {
  static constexpr std::string_view message_name = "SparseCountSet";
  // oneof counts { CompressiveEncoding explicit = 1; Constant constant = 2; Empty empty = 3; }
  static constexpr std::uint32_t f_explicit = 1, f_constant = 2, f_empty = 3;
  std::variant<std::monostate, compressive_encoding, sparse_count_constant, sparse_count_empty> counts{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&sparse_count_set::counts, "SparseCountSet"));
  }
  bool operator==(const sparse_count_set&) const = default;
};
struct sparse_validity_set {
  static constexpr std::string_view message_name = "SparseValiditySet";
  enum class meaning_type : std::int32_t { unspecified = 0, null_positions = 1, valid_positions = 2 };
  static constexpr std::uint32_t f_meaning = 1, f_positions = 2;
  meaning_type meaning = meaning_type::unspecified;
  std::optional<sparse_position_set> positions{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_meaning, &sparse_validity_set::meaning, "SparseValiditySet.meaning"),
                      pb::field(f_positions, &sparse_validity_set::positions, "SparseValiditySet.positions"));
  }
  bool operator==(const sparse_validity_set&) const = default;
};
struct sparse_validity_layer {
  static constexpr std::string_view message_name = "SparseValidityLayer";
  static constexpr std::uint32_t f_num_slots = 1, f_validity = 2;
  std::uint64_t num_slots = 0;
  std::optional<sparse_validity_set> validity{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_num_slots, &sparse_validity_layer::num_slots, "SparseValidityLayer.num_slots"),
                      pb::field(f_validity, &sparse_validity_layer::validity, "SparseValidityLayer.validity"));
  }
  bool operator==(const sparse_validity_layer&) const = default;
};
struct sparse_list_layer {
  static constexpr std::string_view message_name = "SparseListLayer";
  static constexpr std::uint32_t f_num_slots = 1, f_num_child_slots = 2, f_non_empty_positions = 3, f_counts = 4,
                                 f_validity = 5;
  std::uint64_t num_slots = 0;
  std::uint64_t num_child_slots = 0;
  std::optional<sparse_position_set> non_empty_positions{};
  std::optional<sparse_count_set> counts{};
  std::optional<sparse_validity_set> validity{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_num_slots, &sparse_list_layer::num_slots, "SparseListLayer.num_slots"),
                      pb::field(f_num_child_slots, &sparse_list_layer::num_child_slots, "SparseListLayer.num_child_slots"),
                      pb::field(f_non_empty_positions, &sparse_list_layer::non_empty_positions, "SparseListLayer.non_empty_positions"),
                      pb::field(f_counts, &sparse_list_layer::counts, "SparseListLayer.counts"),
                      pb::field(f_validity, &sparse_list_layer::validity, "SparseListLayer.validity"));
  }
  bool operator==(const sparse_list_layer&) const = default;
};
struct sparse_fixed_size_list_layer {
  static constexpr std::string_view message_name = "SparseFixedSizeListLayer";
  static constexpr std::uint32_t f_num_slots = 1, f_dimension = 2, f_validity = 3;
  std::uint64_t num_slots = 0;
  std::uint64_t dimension = 0;
  std::optional<sparse_validity_set> validity{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_num_slots, &sparse_fixed_size_list_layer::num_slots, "SparseFixedSizeListLayer.num_slots"),
                      pb::field(f_dimension, &sparse_fixed_size_list_layer::dimension, "SparseFixedSizeListLayer.dimension"),
                      pb::field(f_validity, &sparse_fixed_size_list_layer::validity, "SparseFixedSizeListLayer.validity"));
  }
  bool operator==(const sparse_fixed_size_list_layer&) const = default;
};
struct sparse_structural_layer {
  static constexpr std::string_view message_name = "SparseStructuralLayer";
  // oneof layer { validity = 1; list = 2; fixed_size_list = 3; }
  static constexpr std::uint32_t f_validity = 1, f_list = 2, f_fixed_size_list = 3;
  std::variant<std::monostate, sparse_validity_layer, sparse_list_layer, sparse_fixed_size_list_layer> layer{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&sparse_structural_layer::layer, "SparseStructuralLayer"));
  }
  bool operator==(const sparse_structural_layer&) const = default;
};
struct sparse_layout {
  static constexpr std::string_view message_name = "SparseLayout";
  static constexpr std::uint32_t f_value_compression = 1, f_num_buffers = 2, f_num_items = 3,
                                 f_num_visible_items = 4, f_has_large_chunk = 5, f_structural_layers = 6;
  std::optional<compressive_encoding> value_compression{};
  std::uint64_t num_buffers = 0;
  std::uint64_t num_items = 0;
  std::uint64_t num_visible_items = 0;
  bool has_large_chunk = false;
  std::vector<sparse_structural_layer> structural_layers{};
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_value_compression, &sparse_layout::value_compression, "SparseLayout.value_compression"),
                      pb::field(f_num_buffers, &sparse_layout::num_buffers, "SparseLayout.num_buffers"),
                      pb::field(f_num_items, &sparse_layout::num_items, "SparseLayout.num_items"),
                      pb::field(f_num_visible_items, &sparse_layout::num_visible_items, "SparseLayout.num_visible_items"),
                      pb::field(f_has_large_chunk, &sparse_layout::has_large_chunk, "SparseLayout.has_large_chunk"),
                      pb::field(f_structural_layers, &sparse_layout::structural_layers, "SparseLayout.structural_layers"));
  }
  bool operator==(const sparse_layout&) const = default;
};

// The page encoding of 2.1+ files, stored as an Any "/lance.encodings21.PageLayout".
// Variant index == proto field number: 1 mini_block_layout, 2 constant_layout
// (all_null_layout in older protos), 3 full_zip_layout, 4 blob_layout, 5 sparse_layout.
struct page_layout {
  static constexpr std::string_view message_name = "PageLayout";
  static constexpr std::string_view type_url = "/lance.encodings21.PageLayout";
  static constexpr std::uint32_t f_mini_block_layout = 1, f_constant_layout = 2, f_all_null_layout = 2,
                                 f_full_zip_layout = 3, f_blob_layout = 4, f_sparse_layout = 5;
  using value_type = std::variant<std::monostate, mini_block_layout, constant_layout, full_zip_layout,
                                  blob_layout, sparse_layout>;
  value_type value{};

  static constexpr auto proto_fields() {
    return pb::fields(pb::only_oneof(&page_layout::value, "PageLayout"));
  }
  bool operator==(const page_layout&) const = default;
};

}  // namespace lancet::pb::enc21
