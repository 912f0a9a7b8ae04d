// Messages of Lance's file2.proto (package lance.file.v2): the per-column metadata of
// a v2.x file and the Encoding envelope that points at a page/column encoding.
//
// Also home of the small building blocks every hand-written v2 message shares:
//   pb::box<T>     a deep-copying, nullable owner for recursive sub-messages;
//   pb::empty      google.protobuf.Empty;
//   oneof helpers  a proto oneof is a std::variant<std::monostate, Alt1, Alt2, ...> whose
//                  alternative index equals the proto field number (true for every
//                  oneof in file2 / encodings_v2_0 / encodings_v2_1);
//   pack_any / unpack_any  google.protobuf.Any with Lance's "/package.Message" URLs.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb {

// Owns at most one T and copies it deeply: value semantics for recursive messages
// (an ArrayEncoding inside a Nullable inside an ArrayEncoding...). Empty means "field
// not present". T may be incomplete where box<T> is declared.
template <class T>
class box {
 public:
  box() noexcept = default;
  box(std::nullptr_t) noexcept {}
  box(T v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT: implicit on purpose
  box(const box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  box(box&&) noexcept = default;
  box& operator=(const box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  box& operator=(box&&) noexcept = default;
  box& operator=(T v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }
  ~box() = default;

  bool has_value() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  T& operator*() noexcept { return *p_; }
  const T& operator*() const noexcept { return *p_; }
  T* operator->() noexcept { return p_.get(); }
  const T* operator->() const noexcept { return p_.get(); }
  T* get() noexcept { return p_.get(); }
  const T* get() const noexcept { return p_.get(); }
  // Checked access for code that requires the field (names it in the error).
  const T& value(std::string_view what) const {
    if (!p_) throw corrupt_error(std::string(what) + " is missing");
    return *p_;
  }
  void reset() noexcept { p_.reset(); }

  friend bool operator==(const box& a, const box& b) {
    if (!a.p_ || !b.p_) return !a.p_ && !b.p_;
    return *a.p_ == *b.p_;
  }

 private:
  std::unique_ptr<T> p_;
};

// google.protobuf.Empty: no fields; any fields found are skipped.
struct empty {
  void encode(writer&) const {}
  static empty decode(reader r) {
    while (!r.done()) r.next();
    return {};
  }
  bool operator==(const empty&) const = default;
};

namespace detail {

template <class T>
struct is_box : std::false_type {};
template <class T>
struct is_box<box<T>> : std::true_type {};

// Writes the set alternative of a oneof variant as a nested message whose field number
// is the variant index. monostate (oneof not set) writes nothing.
template <class Variant>
void oneof_encode(writer& w, const Variant& v) {
  if (v.valueless_by_exception() || v.index() == 0) return;
  const auto field = std::uint32_t(v.index());
  std::visit(
      [&](const auto& alt) {
        using A = std::decay_t<decltype(alt)>;
        if constexpr (std::is_same_v<A, std::monostate>) {
        } else if constexpr (is_box<A>::value) {
          if (alt) w.message(field, *alt);
          else w.bytes(field, std::string_view());  // an empty message of that type
        } else {
          w.message(field, alt);
        }
      },
      v);
}

template <class A>
A oneof_decode_alt(reader sub) {
  if constexpr (is_box<A>::value) {
    using T = std::decay_t<decltype(*std::declval<A&>())>;
    return A(T::decode(std::move(sub)));
  } else {
    return A::decode(std::move(sub));
  }
}

template <class Variant, std::size_t I = 1>
bool oneof_decode_at(Variant& out, const reader& r, const field_view& f, std::string_view what) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (f.number == I) {
      using A = std::variant_alternative_t<I, Variant>;
      out.template emplace<I>(oneof_decode_alt<A>(r.sub(f, what)));
      return true;
    }
    return oneof_decode_at<Variant, I + 1>(out, r, f, what);
  } else {
    return false;
  }
}

// Decodes field f into the oneof if its number names an alternative; returns false
// otherwise (the caller decides whether that is an unknown field or an error). As in
// protobuf, when several alternatives appear the last one wins.
template <class Variant>
bool oneof_decode(Variant& out, const reader& r, const field_view& f, std::string_view what) {
  return oneof_decode_at<Variant>(out, r, f, what);
}

// For messages that consist of nothing but a oneof: a field number we do not know is
// well-formed protobuf, most likely an encoding added by a newer Lance, so it is
// refused as unsupported_error (not corrupt_error); a known number with the wrong wire
// type is corrupt_error (raised by reader::sub).
[[noreturn]] inline void unknown_variant(std::string_view message, const field_view& f) {
  throw unsupported_error(std::string(message) + ": unknown variant (field " +
                          std::to_string(f.number) + "), written by a newer Lance?");
}

template <class Variant>
void oneof_only_decode(Variant& out, const reader& r, const field_view& f, std::string_view what) {
  if (!oneof_decode(out, r, f, what)) unknown_variant(what, f);
}

// Optional sub-message (proto3 message fields have presence).
template <class Msg>
void write_opt(writer& w, std::uint32_t field, const std::optional<Msg>& m) {
  if (m) w.message(field, *m);
}
template <class Msg>
void write_opt(writer& w, std::uint32_t field, const box<Msg>& m) {
  if (m) w.message(field, *m);
}
template <class Msg>
void write_repeated(writer& w, std::uint32_t field, const std::vector<Msg>& ms) {
  for (const auto& m : ms) w.message(field, m);
}

// Enums travel as int32 varints; unknown values are kept (proto3 open enums) and left
// to the code that interprets them.
template <class Enum>
Enum read_enum(const reader& r, const field_view& f, std::string_view what) {
  return Enum(std::int32_t(std::int64_t(r.varint(f, what))));
}
template <class Enum>
void read_enums(const reader& r, const field_view& f, std::vector<Enum>& out) {
  std::vector<std::int32_t> raw{};
  r.repeated_varint(f, raw);
  for (auto v : raw) out.push_back(Enum(v));
}
template <class Enum>
void write_enums(writer& w, std::uint32_t field, const std::vector<Enum>& vs) {
  std::vector<std::int64_t> raw{};  // int64 so negative values sign-extend as protobuf does
  raw.reserve(vs.size());
  for (auto v : vs) raw.push_back(std::int64_t(std::int32_t(v)));
  w.packed_varint(field, raw);
}

inline std::string encode_to_string(const auto& msg) {
  writer w;
  msg.encode(w);
  return w.take();
}

}  // namespace detail

// Encodes any message of this family to bytes.
template <class Msg>
std::string to_bytes(const Msg& m) {
  return detail::encode_to_string(m);
}
// Decodes a message from bytes (depth starts at 0).
template <class Msg>
Msg from_bytes(bytes_view data) {
  return Msg::decode(reader(data, 0, Msg::message_name));
}
template <class Msg>
Msg from_bytes(std::string_view data) {
  return Msg::decode(reader(data, 0, Msg::message_name));
}

// Wraps a message in google.protobuf.Any the way Lance (prost's Any::from_msg) does:
// type_url = "/" + full proto name, e.g. "/lance.encodings21.PageLayout".
template <class Msg>
any pack_any(const Msg& m) {
  any a;
  a.type_url = std::string(Msg::type_url);
  a.value = detail::encode_to_string(m);
  return a;
}

// Unwraps an Any holding Msg; a different type URL is corrupt_error (check
// any::type_url first when several message types are acceptable).
template <class Msg>
Msg unpack_any(const any& a) {
  if (a.type_url != Msg::type_url)
    throw corrupt_error("expected a protobuf Any of type " + std::string(Msg::type_url) + ", found '" +
                        a.type_url + "'");
  return Msg::decode(reader(std::string_view(a.value), 0, Msg::message_name));
}

namespace file2 {

// The encoding lives elsewhere in the file (a global, column or page buffer).
struct deferred_encoding {
  static constexpr std::string_view message_name = "DeferredEncoding";
  static constexpr std::uint32_t f_buffer_location = 1, f_buffer_length = 2;
  std::uint64_t buffer_location = 0;
  std::uint64_t buffer_length = 0;

  void encode(writer& w) const {
    w.uint64_opt(f_buffer_location, buffer_location);
    w.uint64_opt(f_buffer_length, buffer_length);
  }
  static deferred_encoding decode(reader r) {
    deferred_encoding m;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_buffer_location) m.buffer_location = r.varint(f, "DeferredEncoding.buffer_location");
      else if (f.number == f_buffer_length) m.buffer_length = r.varint(f, "DeferredEncoding.buffer_length");
    }
    return m;
  }
  bool operator==(const deferred_encoding&) const = default;
};

// The encoding bytes inline; Lance puts an encoded google.protobuf.Any here.
struct direct_encoding {
  static constexpr std::string_view message_name = "DirectEncoding";
  static constexpr std::uint32_t f_encoding = 1;
  std::string encoding{};

  void encode(writer& w) const { w.string_opt(f_encoding, encoding); }
  static direct_encoding decode(reader r) {
    direct_encoding m;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_encoding) m.encoding = r.string(f, "DirectEncoding.encoding");
    }
    return m;
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
  static encoding direct_of(const any& a) {
    writer w;
    a.encode(w);
    return encoding{direct_encoding{w.take()}};
  }
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
    return any::decode(reader(std::string_view(std::get<direct_encoding>(location).encoding), 0,
                              "Encoding.direct (Any)"));
  }
  template <class Msg>
  Msg unwrap() const {
    return unpack_any<Msg>(direct_any());
  }

  void encode(writer& w) const { detail::oneof_encode(w, location); }
  static encoding decode(reader r) {
    encoding m;
    while (!r.done()) {
      auto f = r.next();
      detail::oneof_only_decode(m.location, r, f, "Encoding");
    }
    return m;
  }
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

    void encode(writer& w) const {
      if (buffer_offsets.size() != buffer_sizes.size())
        throw invalid_input_error("ColumnMetadata.Page: " + std::to_string(buffer_offsets.size()) +
                                  " buffer offsets but " + std::to_string(buffer_sizes.size()) + " sizes");
      w.packed_varint(f_buffer_offsets, buffer_offsets);
      w.packed_varint(f_buffer_sizes, buffer_sizes);
      w.uint64_opt(f_length, length);
      detail::write_opt(w, f_encoding, encoding);
      w.uint64_opt(f_priority, priority);
    }
    static page decode(reader r) {
      page m;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case f_buffer_offsets: r.repeated_varint(f, m.buffer_offsets); break;
          case f_buffer_sizes: r.repeated_varint(f, m.buffer_sizes); break;
          case f_length: m.length = r.varint(f, "Page.length"); break;
          case f_encoding: m.encoding = file2::encoding::decode(r.sub(f, "Page.encoding")); break;
          case f_priority: m.priority = r.varint(f, "Page.priority"); break;
          default: break;
        }
      }
      if (m.buffer_offsets.size() != m.buffer_sizes.size())
        throw corrupt_error("ColumnMetadata.Page: " + std::to_string(m.buffer_offsets.size()) +
                            " buffer offsets but " + std::to_string(m.buffer_sizes.size()) + " sizes");
      return m;
    }
    bool operator==(const page&) const = default;
  };

  static constexpr std::uint32_t f_encoding = 1, f_pages = 2, f_buffer_offsets = 3, f_buffer_sizes = 4;
  std::optional<file2::encoding> encoding{};    // the column encoding (Any of ColumnEncoding)
  std::vector<page> pages{};
  std::vector<std::uint64_t> buffer_offsets{};  // column metadata buffers
  std::vector<std::uint64_t> buffer_sizes{};

  void encode(writer& w) const {
    if (buffer_offsets.size() != buffer_sizes.size())
      throw invalid_input_error("ColumnMetadata: " + std::to_string(buffer_offsets.size()) +
                                " buffer offsets but " + std::to_string(buffer_sizes.size()) + " sizes");
    detail::write_opt(w, f_encoding, encoding);
    detail::write_repeated(w, f_pages, pages);
    w.packed_varint(f_buffer_offsets, buffer_offsets);
    w.packed_varint(f_buffer_sizes, buffer_sizes);
  }
  static column_metadata decode(reader r) {
    column_metadata m;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_encoding: m.encoding = file2::encoding::decode(r.sub(f, "ColumnMetadata.encoding")); break;
        case f_pages: m.pages.push_back(page::decode(r.sub(f, "ColumnMetadata.pages"))); break;
        case f_buffer_offsets: r.repeated_varint(f, m.buffer_offsets); break;
        case f_buffer_sizes: r.repeated_varint(f, m.buffer_sizes); break;
        default: break;
      }
    }
    if (m.buffer_offsets.size() != m.buffer_sizes.size())
      throw corrupt_error("ColumnMetadata: " + std::to_string(m.buffer_offsets.size()) +
                          " buffer offsets but " + std::to_string(m.buffer_sizes.size()) + " sizes");
    return m;
  }
  bool operator==(const column_metadata&) const = default;
};

}  // namespace file2
}  // namespace lancet::pb
