// Messages of Lance's encodings_v2_1.proto (package lance.encodings21), used by file
// formats 2.1 and 2.2 (and later): a page's structural layout (PageLayout) and the
// compressive encodings (CompressiveEncoding tree) of its values and rep/def levels.
//
// Beyond the 1.0-beta snapshot in the Lance mirror this covers what newer Lance protos
// define: MiniBlockLayout.has_large_chunk (10, required by 2.2), ConstantLayout (which
// took PageLayout field 2 over from AllNullLayout, wire-compatibly), the Range and Delta
// compressive encodings, and the 2.3 SparseLayout family (decoded for completeness).
//
// Representation as in encodings_v2_0.hpp: a oneof is a std::variant<std::monostate, ...>
// whose index is the proto field number; recursive children are pb::box<T>; other
// sub-messages are std::optional<T>; scalar oneofs (FullZipLayout.details,
// VariablePackedStruct.FieldEncoding.layout) are two std::optional scalars of which at
// most one may be set. Fields are written in field-number order, as prost does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

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

enum class compression_scheme : std::int32_t {
  unspecified = 0,  // COMPRESSION_ALGORITHM_UNSPECIFIED
  lz4 = 1,          // COMPRESSION_ALGORITHM_LZ4
  zstd = 2,         // COMPRESSION_ALGORITHM_ZSTD
};

struct compressive_encoding;
struct page_layout;

// General-purpose compression of one buffer (a leaf of the compression tree).
struct buffer_compression {
  static constexpr std::string_view message_name = "BufferCompression";
  static constexpr std::uint32_t f_scheme = 1, f_level = 2;
  compression_scheme scheme = compression_scheme::unspecified;
  std::optional<std::int32_t> level{};  // absent: the scheme's default level
  void encode(writer& w) const;
  static buffer_compression decode(reader r);
  bool operator==(const buffer_compression&) const = default;
};

struct flat {
  static constexpr std::string_view message_name = "Flat";
  static constexpr std::uint32_t f_bits_per_value = 1, f_data = 2;
  std::uint64_t bits_per_value = 0;
  std::optional<buffer_compression> data{};
  void encode(writer& w) const;
  static flat decode(reader r);
  bool operator==(const flat&) const = default;
};

struct variable {
  static constexpr std::string_view message_name = "Variable";
  static constexpr std::uint32_t f_offsets = 1, f_values = 2;
  box<compressive_encoding> offsets{};
  std::optional<buffer_compression> values{};
  void encode(writer& w) const;
  static variable decode(reader r);
  bool operator==(const variable&) const = default;
};

struct constant {
  static constexpr std::string_view message_name = "Constant";
  static constexpr std::uint32_t f_value = 1;
  std::optional<std::string> value{};
  void encode(writer& w) const;
  static constant decode(reader r);
  bool operator==(const constant&) const = default;
};

// value[i] = start + step * i (newer Lance).
struct range {
  static constexpr std::string_view message_name = "Range";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_start = 2, f_step = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t start = 0;
  std::uint64_t step = 0;
  void encode(writer& w) const;
  static range decode(reader r);
  bool operator==(const range&) const = default;
};

// A first value plus compressed adjacent differences (newer Lance).
struct delta {
  static constexpr std::string_view message_name = "Delta";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_base = 2, f_deltas = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::uint64_t base = 0;
  box<compressive_encoding> deltas{};
  void encode(writer& w) const;
  static delta decode(reader r);
  bool operator==(const delta&) const = default;
};

struct out_of_line_bitpacking {
  static constexpr std::string_view message_name = "OutOfLineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_values = 3;
  std::uint64_t uncompressed_bits_per_value = 0;
  box<compressive_encoding> values{};
  void encode(writer& w) const;
  static out_of_line_bitpacking decode(reader r);
  bool operator==(const out_of_line_bitpacking&) const = default;
};

struct inline_bitpacking {
  static constexpr std::string_view message_name = "InlineBitpacking";
  static constexpr std::uint32_t f_uncompressed_bits_per_value = 1, f_values = 2;
  std::uint64_t uncompressed_bits_per_value = 0;
  std::optional<buffer_compression> values{};
  void encode(writer& w) const;
  static inline_bitpacking decode(reader r);
  bool operator==(const inline_bitpacking&) const = default;
};

struct fsst {
  static constexpr std::string_view message_name = "Fsst";
  static constexpr std::uint32_t f_symbol_table = 1, f_values = 2;
  std::string symbol_table{};
  box<compressive_encoding> values{};
  void encode(writer& w) const;
  static fsst decode(reader r);
  bool operator==(const fsst&) const = default;
};

struct dictionary {
  static constexpr std::string_view message_name = "Dictionary";
  static constexpr std::uint32_t f_indices = 1, f_items = 2, f_num_dictionary_items = 3;
  box<compressive_encoding> indices{};
  box<compressive_encoding> items{};
  std::uint32_t num_dictionary_items = 0;
  void encode(writer& w) const;
  static dictionary decode(reader r);
  bool operator==(const dictionary&) const = default;
};

struct rle {
  static constexpr std::string_view message_name = "Rle";
  static constexpr std::uint32_t f_values = 1, f_run_lengths = 2;
  box<compressive_encoding> values{};
  box<compressive_encoding> run_lengths{};
  void encode(writer& w) const;
  static rle decode(reader r);
  bool operator==(const rle&) const = default;
};

struct fixed_size_list {
  static constexpr std::string_view message_name = "FixedSizeList";
  static constexpr std::uint32_t f_items_per_value = 1, f_values = 2, f_has_validity = 3;
  std::uint64_t items_per_value = 0;
  box<compressive_encoding> values{};
  bool has_validity = false;
  void encode(writer& w) const;
  static fixed_size_list decode(reader r);
  bool operator==(const fixed_size_list&) const = default;
};

struct packed_struct {
  static constexpr std::string_view message_name = "PackedStruct";
  static constexpr std::uint32_t f_bits_per_value = 1, f_values = 2;
  std::vector<std::uint64_t> bits_per_value{};
  box<compressive_encoding> values{};
  void encode(writer& w) const;
  static packed_struct decode(reader r);
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
    void encode(writer& w) const;
    static field_encoding decode(reader r);
    bool operator==(const field_encoding&) const = default;
  };
  static constexpr std::uint32_t f_fields = 1;
  std::vector<field_encoding> fields{};
  void encode(writer& w) const;
  static variable_packed_struct decode(reader r);
  bool operator==(const variable_packed_struct&) const = default;
};

// Whole-block general compression (zstd/lz4) of the inner encoding's output.
struct general {
  static constexpr std::string_view message_name = "General";
  static constexpr std::uint32_t f_compression = 1, f_values = 3;
  std::optional<buffer_compression> compression{};
  box<compressive_encoding> values{};
  void encode(writer& w) const;
  static general decode(reader r);
  bool operator==(const general&) const = default;
};

struct byte_stream_split {
  static constexpr std::string_view message_name = "ByteStreamSplit";
  static constexpr std::uint32_t f_values = 1;
  box<compressive_encoding> values{};
  void encode(writer& w) const;
  static byte_stream_split decode(reader r);
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

  void encode(writer& w) const { detail::oneof_encode(w, value); }
  static compressive_encoding decode(reader r);
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
  void encode(writer& w) const;
  static mini_block_layout decode(reader r);
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
  void encode(writer& w) const;
  static full_zip_layout decode(reader r);
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
  void encode(writer& w) const;
  static constant_layout decode(reader r);
  bool operator==(const constant_layout&) const = default;
};
using all_null_layout = constant_layout;

struct blob_layout {
  static constexpr std::string_view message_name = "BlobLayout";
  static constexpr std::uint32_t f_inner_layout = 1, f_layers = 2;
  box<page_layout> inner_layout{};
  std::vector<rep_def_layer> layers{};
  void encode(writer& w) const;
  static blob_layout decode(reader r);
  bool operator==(const blob_layout&) const = default;
};

// --- the 2.3 sparse layout (newer than Lance 12) ---

struct sparse_position_empty {
  static constexpr std::string_view message_name = "SparsePositionEmpty";
  void encode(writer&) const {}
  static sparse_position_empty decode(reader r) {
    empty::decode(std::move(r));  // no fields; skip any
    return {};
  }
  bool operator==(const sparse_position_empty&) const = default;
};
struct sparse_position_all {
  static constexpr std::string_view message_name = "SparsePositionAll";
  void encode(writer&) const {}
  static sparse_position_all decode(reader r) {
    empty::decode(std::move(r));  // no fields; skip any
    return {};
  }
  bool operator==(const sparse_position_all&) const = default;
};
struct sparse_position_range {
  static constexpr std::string_view message_name = "SparsePositionRange";
  static constexpr std::uint32_t f_start = 1, f_length = 2;
  std::uint64_t start = 0;
  std::uint64_t length = 0;
  void encode(writer& w) const;
  static sparse_position_range decode(reader r);
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
  void encode(writer& w) const;
  static sparse_position_set decode(reader r);
  bool operator==(const sparse_position_set&) const = default;
};
struct sparse_count_empty {
  static constexpr std::string_view message_name = "SparseCountEmpty";
  void encode(writer&) const {}
  static sparse_count_empty decode(reader r) {
    empty::decode(std::move(r));  // no fields; skip any
    return {};
  }
  bool operator==(const sparse_count_empty&) const = default;
};
struct sparse_count_constant {
  static constexpr std::string_view message_name = "SparseCountConstant";
  static constexpr std::uint32_t f_value = 1;
  std::uint64_t value = 0;
  void encode(writer& w) const;
  static sparse_count_constant decode(reader r);
  bool operator==(const sparse_count_constant&) const = default;
};
struct sparse_count_set {
  static constexpr std::string_view message_name = "SparseCountSet";
  // oneof counts { CompressiveEncoding explicit = 1; Constant constant = 2; Empty empty = 3; }
  static constexpr std::uint32_t f_explicit = 1, f_constant = 2, f_empty = 3;
  std::variant<std::monostate, compressive_encoding, sparse_count_constant, sparse_count_empty> counts{};
  void encode(writer& w) const { detail::oneof_encode(w, counts); }
  static sparse_count_set decode(reader r);
  bool operator==(const sparse_count_set&) const = default;
};
struct sparse_validity_set {
  static constexpr std::string_view message_name = "SparseValiditySet";
  enum class meaning_type : std::int32_t { unspecified = 0, null_positions = 1, valid_positions = 2 };
  static constexpr std::uint32_t f_meaning = 1, f_positions = 2;
  meaning_type meaning = meaning_type::unspecified;
  std::optional<sparse_position_set> positions{};
  void encode(writer& w) const;
  static sparse_validity_set decode(reader r);
  bool operator==(const sparse_validity_set&) const = default;
};
struct sparse_validity_layer {
  static constexpr std::string_view message_name = "SparseValidityLayer";
  static constexpr std::uint32_t f_num_slots = 1, f_validity = 2;
  std::uint64_t num_slots = 0;
  std::optional<sparse_validity_set> validity{};
  void encode(writer& w) const;
  static sparse_validity_layer decode(reader r);
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
  void encode(writer& w) const;
  static sparse_list_layer decode(reader r);
  bool operator==(const sparse_list_layer&) const = default;
};
struct sparse_fixed_size_list_layer {
  static constexpr std::string_view message_name = "SparseFixedSizeListLayer";
  static constexpr std::uint32_t f_num_slots = 1, f_dimension = 2, f_validity = 3;
  std::uint64_t num_slots = 0;
  std::uint64_t dimension = 0;
  std::optional<sparse_validity_set> validity{};
  void encode(writer& w) const;
  static sparse_fixed_size_list_layer decode(reader r);
  bool operator==(const sparse_fixed_size_list_layer&) const = default;
};
struct sparse_structural_layer {
  static constexpr std::string_view message_name = "SparseStructuralLayer";
  // oneof layer { validity = 1; list = 2; fixed_size_list = 3; }
  static constexpr std::uint32_t f_validity = 1, f_list = 2, f_fixed_size_list = 3;
  std::variant<std::monostate, sparse_validity_layer, sparse_list_layer, sparse_fixed_size_list_layer> layer{};
  void encode(writer& w) const { detail::oneof_encode(w, layer); }
  static sparse_structural_layer decode(reader r);
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
  void encode(writer& w) const;
  static sparse_layout decode(reader r);
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

  void encode(writer& w) const { detail::oneof_encode(w, value); }
  static page_layout decode(reader r);
  bool operator==(const page_layout&) const = default;
};

// ---------------------------------------------------------------------------------
// Definitions

namespace detail21 {
inline void check_scalar_oneof(bool a, bool b, std::string_view what) {
  if (a && b) throw invalid_input_error(std::string(what) + ": both alternatives of a oneof are set");
}
}  // namespace detail21

inline void buffer_compression::encode(writer& w) const {
  w.int32_opt(f_scheme, std::int32_t(scheme));
  if (level) w.int32(f_level, *level);
}
inline buffer_compression buffer_compression::decode(reader r) {
  buffer_compression m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_scheme) m.scheme = detail::read_enum<compression_scheme>(r, f, "BufferCompression.scheme");
    else if (f.number == f_level) m.level = std::int32_t(std::int64_t(r.varint(f, "BufferCompression.level")));
  }
  return m;
}

inline void flat::encode(writer& w) const {
  w.uint64_opt(f_bits_per_value, bits_per_value);
  detail::write_opt(w, f_data, data);
}
inline flat flat::decode(reader r) {
  flat m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bits_per_value) m.bits_per_value = r.varint(f, "Flat.bits_per_value");
    else if (f.number == f_data) m.data = buffer_compression::decode(r.sub(f, "Flat.data"));
  }
  return m;
}

inline void variable::encode(writer& w) const {
  detail::write_opt(w, f_offsets, offsets);
  detail::write_opt(w, f_values, values);
}
inline variable variable::decode(reader r) {
  variable m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_offsets) m.offsets = compressive_encoding::decode(r.sub(f, "Variable.offsets"));
    else if (f.number == f_values) m.values = buffer_compression::decode(r.sub(f, "Variable.values"));
  }
  return m;
}

inline void constant::encode(writer& w) const {
  if (value) w.bytes(f_value, std::string_view(*value));
}
inline constant constant::decode(reader r) {
  constant m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_value) m.value = r.string(f, "Constant.value");
  }
  return m;
}

inline void range::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  w.uint64_opt(f_start, start);
  w.uint64_opt(f_step, step);
}
inline range range::decode(reader r) {
  range m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_uncompressed_bits_per_value:
        m.uncompressed_bits_per_value = r.varint(f, "Range.uncompressed_bits_per_value");
        break;
      case f_start: m.start = r.varint(f, "Range.start"); break;
      case f_step: m.step = r.varint(f, "Range.step"); break;
      default: break;
    }
  }
  return m;
}

inline void delta::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  w.uint64_opt(f_base, base);
  detail::write_opt(w, f_deltas, deltas);
}
inline delta delta::decode(reader r) {
  delta m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_uncompressed_bits_per_value:
        m.uncompressed_bits_per_value = r.varint(f, "Delta.uncompressed_bits_per_value");
        break;
      case f_base: m.base = r.varint(f, "Delta.base"); break;
      case f_deltas: m.deltas = compressive_encoding::decode(r.sub(f, "Delta.deltas")); break;
      default: break;
    }
  }
  return m;
}

inline void out_of_line_bitpacking::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  detail::write_opt(w, f_values, values);
}
inline out_of_line_bitpacking out_of_line_bitpacking::decode(reader r) {
  out_of_line_bitpacking m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_uncompressed_bits_per_value)
      m.uncompressed_bits_per_value = r.varint(f, "OutOfLineBitpacking.uncompressed_bits_per_value");
    else if (f.number == f_values)
      m.values = compressive_encoding::decode(r.sub(f, "OutOfLineBitpacking.values"));
  }
  return m;
}

inline void inline_bitpacking::encode(writer& w) const {
  w.uint64_opt(f_uncompressed_bits_per_value, uncompressed_bits_per_value);
  detail::write_opt(w, f_values, values);
}
inline inline_bitpacking inline_bitpacking::decode(reader r) {
  inline_bitpacking m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_uncompressed_bits_per_value)
      m.uncompressed_bits_per_value = r.varint(f, "InlineBitpacking.uncompressed_bits_per_value");
    else if (f.number == f_values) m.values = buffer_compression::decode(r.sub(f, "InlineBitpacking.values"));
  }
  return m;
}

inline void fsst::encode(writer& w) const {
  w.string_opt(f_symbol_table, symbol_table);
  detail::write_opt(w, f_values, values);
}
inline fsst fsst::decode(reader r) {
  fsst m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_symbol_table) m.symbol_table = r.string(f, "Fsst.symbol_table");
    else if (f.number == f_values) m.values = compressive_encoding::decode(r.sub(f, "Fsst.values"));
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
      case f_indices: m.indices = compressive_encoding::decode(r.sub(f, "Dictionary.indices")); break;
      case f_items: m.items = compressive_encoding::decode(r.sub(f, "Dictionary.items")); break;
      case f_num_dictionary_items:
        m.num_dictionary_items = std::uint32_t(r.varint(f, "Dictionary.num_dictionary_items"));
        break;
      default: break;
    }
  }
  return m;
}

inline void rle::encode(writer& w) const {
  detail::write_opt(w, f_values, values);
  detail::write_opt(w, f_run_lengths, run_lengths);
}
inline rle rle::decode(reader r) {
  rle m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_values) m.values = compressive_encoding::decode(r.sub(f, "Rle.values"));
    else if (f.number == f_run_lengths) m.run_lengths = compressive_encoding::decode(r.sub(f, "Rle.run_lengths"));
  }
  return m;
}

inline void fixed_size_list::encode(writer& w) const {
  w.uint64_opt(f_items_per_value, items_per_value);
  detail::write_opt(w, f_values, values);
  w.boolean_opt(f_has_validity, has_validity);
}
inline fixed_size_list fixed_size_list::decode(reader r) {
  fixed_size_list m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_items_per_value: m.items_per_value = r.varint(f, "FixedSizeList.items_per_value"); break;
      case f_values: m.values = compressive_encoding::decode(r.sub(f, "FixedSizeList.values")); break;
      case f_has_validity: m.has_validity = r.varint(f, "FixedSizeList.has_validity") != 0; break;
      default: break;
    }
  }
  return m;
}

inline void packed_struct::encode(writer& w) const {
  w.packed_varint(f_bits_per_value, bits_per_value);
  detail::write_opt(w, f_values, values);
}
inline packed_struct packed_struct::decode(reader r) {
  packed_struct m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_bits_per_value) r.repeated_varint(f, m.bits_per_value);
    else if (f.number == f_values) m.values = compressive_encoding::decode(r.sub(f, "PackedStruct.values"));
  }
  return m;
}

inline void variable_packed_struct::field_encoding::encode(writer& w) const {
  detail21::check_scalar_oneof(bits_per_value.has_value(), bits_per_length.has_value(),
                               "VariablePackedStruct.FieldEncoding.layout");
  detail::write_opt(w, f_value, value);
  if (bits_per_value) w.uint64(f_bits_per_value, *bits_per_value);
  if (bits_per_length) w.uint64(f_bits_per_length, *bits_per_length);
}
inline variable_packed_struct::field_encoding variable_packed_struct::field_encoding::decode(reader r) {
  field_encoding m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_value: m.value = compressive_encoding::decode(r.sub(f, "FieldEncoding.value")); break;
      case f_bits_per_value:
        m.bits_per_value = r.varint(f, "FieldEncoding.bits_per_value");
        m.bits_per_length.reset();  // oneof: the last alternative wins
        break;
      case f_bits_per_length:
        m.bits_per_length = r.varint(f, "FieldEncoding.bits_per_length");
        m.bits_per_value.reset();
        break;
      default: break;
    }
  }
  return m;
}
inline void variable_packed_struct::encode(writer& w) const { detail::write_repeated(w, f_fields, fields); }
inline variable_packed_struct variable_packed_struct::decode(reader r) {
  variable_packed_struct m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_fields) m.fields.push_back(field_encoding::decode(r.sub(f, "VariablePackedStruct.fields")));
  }
  return m;
}

inline void general::encode(writer& w) const {
  detail::write_opt(w, f_compression, compression);
  detail::write_opt(w, f_values, values);
}
inline general general::decode(reader r) {
  general m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_compression) m.compression = buffer_compression::decode(r.sub(f, "General.compression"));
    else if (f.number == f_values) m.values = compressive_encoding::decode(r.sub(f, "General.values"));
  }
  return m;
}

inline void byte_stream_split::encode(writer& w) const { detail::write_opt(w, f_values, values); }
inline byte_stream_split byte_stream_split::decode(reader r) {
  byte_stream_split m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_values) m.values = compressive_encoding::decode(r.sub(f, "ByteStreamSplit.values"));
  }
  return m;
}

inline compressive_encoding compressive_encoding::decode(reader r) {
  compressive_encoding m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.value, r, f, "CompressiveEncoding");
  }
  return m;
}

inline void mini_block_layout::encode(writer& w) const {
  detail::write_opt(w, f_rep_compression, rep_compression);
  detail::write_opt(w, f_def_compression, def_compression);
  detail::write_opt(w, f_value_compression, value_compression);
  detail::write_opt(w, f_dictionary, dictionary);
  w.uint64_opt(f_num_dictionary_items, num_dictionary_items);
  detail::write_enums(w, f_layers, layers);
  w.uint64_opt(f_num_buffers, num_buffers);
  w.uint32_opt(f_repetition_index_depth, repetition_index_depth);
  w.uint64_opt(f_num_items, num_items);
  w.boolean_opt(f_has_large_chunk, has_large_chunk);
}
inline mini_block_layout mini_block_layout::decode(reader r) {
  mini_block_layout m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_rep_compression:
        m.rep_compression = compressive_encoding::decode(r.sub(f, "MiniBlockLayout.rep_compression"));
        break;
      case f_def_compression:
        m.def_compression = compressive_encoding::decode(r.sub(f, "MiniBlockLayout.def_compression"));
        break;
      case f_value_compression:
        m.value_compression = compressive_encoding::decode(r.sub(f, "MiniBlockLayout.value_compression"));
        break;
      case f_dictionary: m.dictionary = compressive_encoding::decode(r.sub(f, "MiniBlockLayout.dictionary")); break;
      case f_num_dictionary_items:
        m.num_dictionary_items = r.varint(f, "MiniBlockLayout.num_dictionary_items");
        break;
      case f_layers: detail::read_enums(r, f, m.layers); break;
      case f_num_buffers: m.num_buffers = r.varint(f, "MiniBlockLayout.num_buffers"); break;
      case f_repetition_index_depth:
        m.repetition_index_depth = std::uint32_t(r.varint(f, "MiniBlockLayout.repetition_index_depth"));
        break;
      case f_num_items: m.num_items = r.varint(f, "MiniBlockLayout.num_items"); break;
      case f_has_large_chunk: m.has_large_chunk = r.varint(f, "MiniBlockLayout.has_large_chunk") != 0; break;
      default: break;
    }
  }
  return m;
}

inline void full_zip_layout::encode(writer& w) const {
  detail21::check_scalar_oneof(bits_per_value.has_value(), bits_per_offset.has_value(), "FullZipLayout.details");
  w.uint32_opt(f_bits_rep, bits_rep);
  w.uint32_opt(f_bits_def, bits_def);
  if (bits_per_value) w.uint32(f_bits_per_value, *bits_per_value);
  if (bits_per_offset) w.uint32(f_bits_per_offset, *bits_per_offset);
  w.uint32_opt(f_num_items, num_items);
  w.uint32_opt(f_num_visible_items, num_visible_items);
  detail::write_opt(w, f_value_compression, value_compression);
  detail::write_enums(w, f_layers, layers);
}
inline full_zip_layout full_zip_layout::decode(reader r) {
  full_zip_layout m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_bits_rep: m.bits_rep = std::uint32_t(r.varint(f, "FullZipLayout.bits_rep")); break;
      case f_bits_def: m.bits_def = std::uint32_t(r.varint(f, "FullZipLayout.bits_def")); break;
      case f_bits_per_value:
        m.bits_per_value = std::uint32_t(r.varint(f, "FullZipLayout.bits_per_value"));
        m.bits_per_offset.reset();  // oneof: the last alternative wins
        break;
      case f_bits_per_offset:
        m.bits_per_offset = std::uint32_t(r.varint(f, "FullZipLayout.bits_per_offset"));
        m.bits_per_value.reset();
        break;
      case f_num_items: m.num_items = std::uint32_t(r.varint(f, "FullZipLayout.num_items")); break;
      case f_num_visible_items:
        m.num_visible_items = std::uint32_t(r.varint(f, "FullZipLayout.num_visible_items"));
        break;
      case f_value_compression:
        m.value_compression = compressive_encoding::decode(r.sub(f, "FullZipLayout.value_compression"));
        break;
      case f_layers: detail::read_enums(r, f, m.layers); break;
      default: break;
    }
  }
  return m;
}

inline void constant_layout::encode(writer& w) const {
  detail::write_enums(w, f_layers, layers);
  if (inline_value) w.bytes(f_inline_value, std::string_view(*inline_value));
  detail::write_opt(w, f_rep_compression, rep_compression);
  detail::write_opt(w, f_def_compression, def_compression);
  w.uint64_opt(f_num_rep_values, num_rep_values);
  w.uint64_opt(f_num_def_values, num_def_values);
}
inline constant_layout constant_layout::decode(reader r) {
  constant_layout m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_layers: detail::read_enums(r, f, m.layers); break;
      case f_inline_value: m.inline_value = r.string(f, "ConstantLayout.inline_value"); break;
      case f_rep_compression:
        m.rep_compression = compressive_encoding::decode(r.sub(f, "ConstantLayout.rep_compression"));
        break;
      case f_def_compression:
        m.def_compression = compressive_encoding::decode(r.sub(f, "ConstantLayout.def_compression"));
        break;
      case f_num_rep_values: m.num_rep_values = r.varint(f, "ConstantLayout.num_rep_values"); break;
      case f_num_def_values: m.num_def_values = r.varint(f, "ConstantLayout.num_def_values"); break;
      default: break;
    }
  }
  return m;
}

inline void blob_layout::encode(writer& w) const {
  detail::write_opt(w, f_inner_layout, inner_layout);
  detail::write_enums(w, f_layers, layers);
}
inline blob_layout blob_layout::decode(reader r) {
  blob_layout m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_inner_layout) m.inner_layout = page_layout::decode(r.sub(f, "BlobLayout.inner_layout"));
    else if (f.number == f_layers) detail::read_enums(r, f, m.layers);
  }
  return m;
}

inline void sparse_position_range::encode(writer& w) const {
  w.uint64_opt(f_start, start);
  w.uint64_opt(f_length, length);
}
inline sparse_position_range sparse_position_range::decode(reader r) {
  sparse_position_range m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_start) m.start = r.varint(f, "SparsePositionRange.start");
    else if (f.number == f_length) m.length = r.varint(f, "SparsePositionRange.length");
  }
  return m;
}

inline void sparse_position_set::encode(writer& w) const {
  detail::oneof_encode(w, positions);
  w.uint64_opt(f_num_positions, num_positions);
}
inline sparse_position_set sparse_position_set::decode(reader r) {
  sparse_position_set m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_num_positions) m.num_positions = r.varint(f, "SparsePositionSet.num_positions");
    else detail::oneof_decode(m.positions, r, f, "SparsePositionSet.positions");  // others: unknown, skipped
  }
  return m;
}

inline void sparse_count_constant::encode(writer& w) const { w.uint64_opt(f_value, value); }
inline sparse_count_constant sparse_count_constant::decode(reader r) {
  sparse_count_constant m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_value) m.value = r.varint(f, "SparseCountConstant.value");
  }
  return m;
}

inline sparse_count_set sparse_count_set::decode(reader r) {
  sparse_count_set m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.counts, r, f, "SparseCountSet");
  }
  return m;
}

inline void sparse_validity_set::encode(writer& w) const {
  w.int32_opt(f_meaning, std::int32_t(meaning));
  detail::write_opt(w, f_positions, positions);
}
inline sparse_validity_set sparse_validity_set::decode(reader r) {
  sparse_validity_set m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_meaning) m.meaning = detail::read_enum<meaning_type>(r, f, "SparseValiditySet.meaning");
    else if (f.number == f_positions)
      m.positions = sparse_position_set::decode(r.sub(f, "SparseValiditySet.positions"));
  }
  return m;
}

inline void sparse_validity_layer::encode(writer& w) const {
  w.uint64_opt(f_num_slots, num_slots);
  detail::write_opt(w, f_validity, validity);
}
inline sparse_validity_layer sparse_validity_layer::decode(reader r) {
  sparse_validity_layer m;
  while (!r.done()) {
    auto f = r.next();
    if (f.number == f_num_slots) m.num_slots = r.varint(f, "SparseValidityLayer.num_slots");
    else if (f.number == f_validity) m.validity = sparse_validity_set::decode(r.sub(f, "SparseValidityLayer.validity"));
  }
  return m;
}

inline void sparse_list_layer::encode(writer& w) const {
  w.uint64_opt(f_num_slots, num_slots);
  w.uint64_opt(f_num_child_slots, num_child_slots);
  detail::write_opt(w, f_non_empty_positions, non_empty_positions);
  detail::write_opt(w, f_counts, counts);
  detail::write_opt(w, f_validity, validity);
}
inline sparse_list_layer sparse_list_layer::decode(reader r) {
  sparse_list_layer m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_num_slots: m.num_slots = r.varint(f, "SparseListLayer.num_slots"); break;
      case f_num_child_slots: m.num_child_slots = r.varint(f, "SparseListLayer.num_child_slots"); break;
      case f_non_empty_positions:
        m.non_empty_positions = sparse_position_set::decode(r.sub(f, "SparseListLayer.non_empty_positions"));
        break;
      case f_counts: m.counts = sparse_count_set::decode(r.sub(f, "SparseListLayer.counts")); break;
      case f_validity: m.validity = sparse_validity_set::decode(r.sub(f, "SparseListLayer.validity")); break;
      default: break;
    }
  }
  return m;
}

inline void sparse_fixed_size_list_layer::encode(writer& w) const {
  w.uint64_opt(f_num_slots, num_slots);
  w.uint64_opt(f_dimension, dimension);
  detail::write_opt(w, f_validity, validity);
}
inline sparse_fixed_size_list_layer sparse_fixed_size_list_layer::decode(reader r) {
  sparse_fixed_size_list_layer m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_num_slots: m.num_slots = r.varint(f, "SparseFixedSizeListLayer.num_slots"); break;
      case f_dimension: m.dimension = r.varint(f, "SparseFixedSizeListLayer.dimension"); break;
      case f_validity:
        m.validity = sparse_validity_set::decode(r.sub(f, "SparseFixedSizeListLayer.validity"));
        break;
      default: break;
    }
  }
  return m;
}

inline sparse_structural_layer sparse_structural_layer::decode(reader r) {
  sparse_structural_layer m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.layer, r, f, "SparseStructuralLayer");
  }
  return m;
}

inline void sparse_layout::encode(writer& w) const {
  detail::write_opt(w, f_value_compression, value_compression);
  w.uint64_opt(f_num_buffers, num_buffers);
  w.uint64_opt(f_num_items, num_items);
  w.uint64_opt(f_num_visible_items, num_visible_items);
  w.boolean_opt(f_has_large_chunk, has_large_chunk);
  detail::write_repeated(w, f_structural_layers, structural_layers);
}
inline sparse_layout sparse_layout::decode(reader r) {
  sparse_layout m;
  while (!r.done()) {
    auto f = r.next();
    switch (f.number) {
      case f_value_compression:
        m.value_compression = compressive_encoding::decode(r.sub(f, "SparseLayout.value_compression"));
        break;
      case f_num_buffers: m.num_buffers = r.varint(f, "SparseLayout.num_buffers"); break;
      case f_num_items: m.num_items = r.varint(f, "SparseLayout.num_items"); break;
      case f_num_visible_items: m.num_visible_items = r.varint(f, "SparseLayout.num_visible_items"); break;
      case f_has_large_chunk: m.has_large_chunk = r.varint(f, "SparseLayout.has_large_chunk") != 0; break;
      case f_structural_layers:
        m.structural_layers.push_back(sparse_structural_layer::decode(r.sub(f, "SparseLayout.structural_layers")));
        break;
      default: break;
    }
  }
  return m;
}

inline page_layout page_layout::decode(reader r) {
  page_layout m;
  while (!r.done()) {
    auto f = r.next();
    detail::oneof_only_decode(m.value, r, f, "PageLayout");
  }
  return m;
}

}  // namespace lancet::pb::enc21
