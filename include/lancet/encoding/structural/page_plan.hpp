// The vocabulary of encoding decisions for structural (2.1+) pages: what is known of a
// leaf column and of a page (leaf_info, data_block, page_facts) and what a policy
// decides for it (page_plan). Light on purpose: encoding policies and the writer's
// class definitions need these types, not the encoders.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/pb/compression_scheme.hpp"

namespace lancet::pb::enc21 {
struct page_layout;
}

namespace lancet::encoding::structural {

namespace enc21 = pb::enc21;

// Changes a page's layout before it is serialized: the blob encoders wrap (legacy) or
// rewrite (v2) the layout of their description column's pages this way, on the
// structure, rather than decoding the serialized layout again.
using layout_rewrite = std::function<void(enc21::page_layout&)>;

// Bytes of values per mini-block chunk Lance aims for (lance-encoding:minichunk-size).
inline constexpr std::uint64_t default_minichunk_bytes = 4096;

// How variable-width full-zip values are compressed, value by value.
struct per_value_codec {
  enum class kind : std::uint8_t { plain, fsst, general } k = kind::plain;
  enc21::compression_scheme scheme = enc21::compression_scheme::zstd;
  std::optional<std::int32_t> level;
};

// What the strategy knows about a leaf column.
struct leaf_info {
  std::string column;                 // dotted path, e.g. "s.b" (parameters, errors)
  arrow::type_ptr type;               // the leaf's Arrow type
  arrow::metadata metadata;           // the leaf field's metadata
  field_compression params;           // resolved compression parameters
  unsigned minor = 2;                 // file format minor version (1, 2, 3)
  arrow::type_ptr dictionary_index{};  // a dictionary field: its index type (Lance keeps
                                       // such a field's pages dictionary-encoded)
};

enum class value_codec : std::uint8_t { flat, bitpack, rle, bss, variable, fsst };

// The encoding of one page.
struct page_plan {
  enum class layout_kind : std::uint8_t { miniblock, fullzip, constant, all_null };
  layout_kind layout = layout_kind::miniblock;
  bool dictionary = false;
  std::uint32_t dictionary_index_bits = 32;          // width of the dictionary indices
  bool field_dictionary = false;                     // the dictionary of a dictionary field
  value_codec codec = value_codec::flat;            // mini-block values (dictionary indices)
  std::optional<enc21::compression_scheme> general;  // mini-block: wrap the first buffer
  std::optional<std::int32_t> general_level;
  per_value_codec per_value;                         // full-zip variable values
  std::uint64_t minichunk_bytes = default_minichunk_bytes;
  bool packed_struct = false;  // values are packed struct rows (set by the strategy)
  std::vector<std::uint64_t> packed_widths;  // member widths in bits (filled when encoding)
};

// Facts about a page that plans are made from.
struct page_facts {
  std::uint64_t num_rows = 0;
  std::uint64_t num_values = 0;   // visible values
  std::uint64_t leaf_nulls = 0;   // visible values that are null
  bool has_rep = false;
  bool has_def = false;
  std::size_t num_layers = 0;
};

}  // namespace lancet::encoding::structural
