// Messages of Lance's file2.proto (package lance.file.v2): the per-column metadata of
// a v2.x file and the Encoding envelope that points at a page/column encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb {

namespace file2 {

// Buffer offsets and sizes come in pairs.
template <class Error>
void check_buffers(std::string_view message, const std::vector<std::uint64_t>& offsets,
                   const std::vector<std::uint64_t>& sizes) {
  if (offsets.size() != sizes.size())
    throw Error(std::string(message) + ": " + std::to_string(offsets.size()) + " buffer offsets but " +
                std::to_string(sizes.size()) + " sizes");
}

// The encoding lives elsewhere in the file (a global, column or page buffer).
struct deferred_encoding {
  static constexpr std::string_view message_name = "DeferredEncoding";
  static constexpr std::uint32_t f_buffer_location = 1, f_buffer_length = 2;
  std::uint64_t buffer_location = 0;
  std::uint64_t buffer_length = 0;

  static constexpr auto proto_fields() {
    return pb::fields(
        pb::field(f_buffer_location, &deferred_encoding::buffer_location, "DeferredEncoding.buffer_location"),
        pb::field(f_buffer_length, &deferred_encoding::buffer_length, "DeferredEncoding.buffer_length"));
  }
  bool operator==(const deferred_encoding&) const = default;
};

// The encoding bytes inline; Lance puts an encoded google.protobuf.Any here.
struct direct_encoding {
  static constexpr std::string_view message_name = "DirectEncoding";
  static constexpr std::uint32_t f_encoding = 1;
  std::string encoding{};

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_encoding, &direct_encoding::encoding, "DirectEncoding.encoding"));
  }
  bool operator==(const direct_encoding&) const = default;
};

// oneof location { DeferredEncoding indirect = 1; DirectEncoding direct = 2; Empty none = 3; }
struct encoding {
  static constexpr std::string_view message_name = "Encoding";
  static constexpr std::uint32_t f_indirect = 1, f_direct = 2, f_none = 3;
  using location_type = std::variant<std::monostate, deferred_encoding, direct_encoding, empty>;
  location_type location{};

  // A direct encoding holding `a` serialized (what Lance writes for every page/column).
  static encoding direct_of(const any& a) { return encoding{direct_encoding{pb::encode(a)}}; }
  // Shorthand: direct_of(pack_any(m)).
  template <class Msg>
  static encoding wrap(const Msg& m) {
    return direct_of(pack_any(m));
  }
  bool is_direct() const noexcept { return location.index() == f_direct; }
  bool is_deferred() const noexcept { return location.index() == f_indirect; }
  bool is_none() const noexcept { return location.index() == f_none || location.index() == 0; }

  // The Any inside a direct encoding. Deferred encodings must be resolved by the caller
  // (unsupported_error here); "none" or an unset location is corrupt_error.
  any direct_any() const {
    if (is_deferred()) throw unsupported_error("Encoding: deferred encodings must be read from their buffer");
    if (!is_direct()) throw corrupt_error("Encoding: no encoding information (expected a direct encoding)");
    return pb::decode<any>(std::string_view(std::get<direct_encoding>(location).encoding));
  }
  template <class Msg>
  Msg unwrap() const {
    return unpack_any<Msg>(direct_any());
  }

  static constexpr auto proto_fields() { return pb::fields(pb::only_oneof(&encoding::location, "Encoding")); }
  bool operator==(const encoding&) const = default;
};

struct column_metadata {
  static constexpr std::string_view message_name = "ColumnMetadata";

  struct page {
    static constexpr std::string_view message_name = "ColumnMetadata.Page";
    static constexpr std::uint32_t f_buffer_offsets = 1, f_buffer_sizes = 2, f_length = 3, f_encoding = 4,
                                   f_priority = 5;
    std::vector<std::uint64_t> buffer_offsets{};  // absolute file offsets of the page buffers
    std::vector<std::uint64_t> buffer_sizes{};    // same length as buffer_offsets
    std::uint64_t length = 0;                   // rows in the page
    std::optional<file2::encoding> encoding{};
    std::uint64_t priority = 0;                 // top-level row number of the page's first row

    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_buffer_offsets, &page::buffer_offsets, "Page.buffer_offsets"),
                        pb::field(f_buffer_sizes, &page::buffer_sizes, "Page.buffer_sizes"),
                        pb::field(f_length, &page::length, "Page.length"),
                        pb::field(f_encoding, &page::encoding, "Page.encoding"),
                        pb::field(f_priority, &page::priority, "Page.priority"));
    }
    void check_encodable() const { check_buffers<invalid_input_error>(message_name, buffer_offsets, buffer_sizes); }
    void check_decoded() const { check_buffers<corrupt_error>(message_name, buffer_offsets, buffer_sizes); }
    bool operator==(const page&) const = default;
  };

  static constexpr std::uint32_t f_encoding = 1, f_pages = 2, f_buffer_offsets = 3, f_buffer_sizes = 4;
  std::optional<file2::encoding> encoding{};    // the column encoding (Any of ColumnEncoding)
  std::vector<page> pages{};
  std::vector<std::uint64_t> buffer_offsets{};  // column metadata buffers
  std::vector<std::uint64_t> buffer_sizes{};

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_encoding, &column_metadata::encoding, "ColumnMetadata.encoding"),
                      pb::field(f_pages, &column_metadata::pages, "ColumnMetadata.pages"),
                      pb::field(f_buffer_offsets, &column_metadata::buffer_offsets, "ColumnMetadata.buffer_offsets"),
                      pb::field(f_buffer_sizes, &column_metadata::buffer_sizes, "ColumnMetadata.buffer_sizes"));
  }
  void check_encodable() const { check_buffers<invalid_input_error>(message_name, buffer_offsets, buffer_sizes); }
  void check_decoded() const { check_buffers<corrupt_error>(message_name, buffer_offsets, buffer_sizes); }
  bool operator==(const column_metadata&) const = default;
};

}  // namespace file2
}  // namespace lancet::pb

// The messages whose codecs compiled mode's library instantiates (pb/message.hpp).
#define LANCET_PB_FILE2_CODECS(X) \
  X(lancet::pb::file2::column_metadata) X(lancet::pb::file2::column_metadata::page) X(lancet::pb::file2::encoding)
LANCET_PB_FILE2_CODECS(LANCET_PB_EXTERN_CODEC)
