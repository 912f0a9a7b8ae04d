// Declarative protobuf messages: a message struct lists its fields once, in field-number
// order, and gets prost-compatible bytes (Lance's protobuf library) from that list.
//
//   struct flat {
//     static constexpr std::string_view message_name = "Flat";
//     static constexpr std::uint32_t f_bits_per_value = 1, f_data = 2;
//     std::uint64_t bits_per_value = 0;
//     std::optional<buffer_compression> data{};
//     static constexpr auto proto_fields() {
//       return std::tuple{pb::field(f_bits_per_value, &flat::bits_per_value, "Flat.bits_per_value"),
//                         pb::field(f_data, &flat::data, "Flat.data")};
//     }
//     void encode(writer& w) const { pb::encode_message(w, *this); }
//     static flat decode(reader r) { return pb::decode_message<flat>(std::move(r)); }
//   };
//
// The member's C++ type decides the wire form, following proto3 as prost writes it:
//   integers, bools, enums      varint (signed values sign-extended to 64 bits), skipped when 0
//   float / double              fixed32 / fixed64, skipped when 0
//   std::string                 length-delimited, skipped when empty
//   std::optional<scalar>       explicit presence: written whenever set (proto3 `optional`)
//   std::optional<M>, box<M>    a sub-message, written when present
//   std::vector<int|enum>       packed varints;  std::vector<float>: packed fixed32
//   std::vector<M|std::string>  one field per element
// A oneof is a std::variant<std::monostate, A1, A2, ...> whose alternative i is field i
// (pb::oneof); a oneof of scalars is two std::optional members of which at most one
// may be set (pb::scalar_oneof). Decoding skips unknown fields, except in messages that
// are nothing but a oneof (pb::only_oneof): there an unknown field number is a variant
// written by a newer Lance and refused as unsupported_error.
//
// Also here: pb::box<T> (deep-copying nullable owner for recursive messages),
// pb::empty (google.protobuf.Empty), to_bytes / from_bytes, and pack_any / unpack_any
// (google.protobuf.Any with Lance's "/package.Message" type URLs).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
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

// google.protobuf.Empty
struct empty {
  static constexpr std::string_view message_name = "Empty";
  void encode(writer&) const {}
  static empty decode(reader r) {
    while (!r.done()) r.next();  // no fields; skip any
    return {};
  }
  bool operator==(const empty&) const = default;
};

// ---- field descriptors -------------------------------------------------------------

template <class M, class T>
struct field_desc {
  std::uint32_t number;
  T M::*member;
  std::string_view name;  // "Message.field", used in errors
};
template <class M, class T>
constexpr field_desc<M, T> field(std::uint32_t number, T M::*member, std::string_view name) {
  return {number, member, name};
}

template <class M, class V>
struct oneof_desc {
  V M::*member;
  std::string_view name;
  bool refuse_unknown;
};
// A oneof among other fields: unknown field numbers are skipped.
template <class M, class V>
constexpr oneof_desc<M, V> oneof(V M::*member, std::string_view name) {
  return {member, name, false};
}
// The message is nothing but this oneof: an unknown field number is refused.
template <class M, class V>
constexpr oneof_desc<M, V> only_oneof(V M::*member, std::string_view name) {
  return {member, name, true};
}

template <class M, class T>
struct scalar_oneof_desc {
  field_desc<M, std::optional<T>> a, b;
  std::string_view name;
};
template <class M, class T>
constexpr scalar_oneof_desc<M, T> scalar_oneof(field_desc<M, std::optional<T>> a, field_desc<M, std::optional<T>> b,
                                               std::string_view name) {
  return {a, b, name};
}

namespace detail {

template <class T> struct is_box : std::false_type {};
template <class T> struct is_box<box<T>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
concept varint_scalar = std::is_integral_v<T> || std::is_enum_v<T>;

template <class T>
std::uint64_t to_varint(T v) noexcept {
  if constexpr (std::is_enum_v<T>) return std::uint64_t(std::int64_t(std::underlying_type_t<T>(v)));
  else if constexpr (std::is_same_v<T, bool>) return v ? 1 : 0;
  else if constexpr (std::is_signed_v<T>) return std::uint64_t(std::int64_t(v));
  else return std::uint64_t(v);
}
template <class T>
T from_varint(std::uint64_t raw) noexcept {
  if constexpr (std::is_enum_v<T>) return T(std::underlying_type_t<T>(std::int64_t(raw)));
  else if constexpr (std::is_same_v<T, bool>) return raw != 0;
  else if constexpr (std::is_signed_v<T>) return T(std::int64_t(raw));
  else return T(raw);
}

// One value of field `n`. `implicit`: proto3 implicit presence (defaults not written).
template <class T>
void encode_value(writer& w, std::uint32_t n, const T& v, bool implicit) {
  if constexpr (varint_scalar<T>) {
    if (!implicit || v != T{}) w.uint64(n, to_varint(v));
  } else if constexpr (std::is_same_v<T, float>) {
    if (!implicit || v != 0.0f) w.float32(n, v);
  } else if constexpr (std::is_same_v<T, double>) {
    if (!implicit || v != 0.0) w.float64(n, v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!implicit || !v.empty()) w.bytes(n, std::string_view(v));
  } else if constexpr (is_optional<T>::value || is_box<T>::value) {
    if (v) encode_value(w, n, *v, false);
  } else if constexpr (is_vector<T>::value) {
    using E = typename T::value_type;
    if constexpr (varint_scalar<E>) {
      if (v.empty()) return;
      writer inner;
      for (const auto& e : v) inner.raw_varint(to_varint(e));
      w.bytes(n, inner.bytes());
    } else if constexpr (std::is_same_v<E, float>) {
      w.packed_float32(n, v);
    } else {
      for (const auto& e : v) encode_value(w, n, e, false);
    }
  } else {
    w.message(n, v);  // a sub-message
  }
}

template <class T>
void decode_value(const reader& r, const field_view& f, T& out, std::string_view what) {
  if constexpr (varint_scalar<T>) {
    out = from_varint<T>(r.varint(f, what));
  } else if constexpr (std::is_same_v<T, float>) {
    r.expect(f, wire_type::fixed32, what);
    out = f.as_float();
  } else if constexpr (std::is_same_v<T, double>) {
    r.expect(f, wire_type::fixed64, what);
    out = f.as_double();
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = r.string(f, what);
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type v{};
    decode_value(r, f, v, what);
    out = std::move(v);
  } else if constexpr (is_box<T>::value) {
    using U = std::decay_t<decltype(*out)>;
    out = U::decode(r.sub(f, what));
  } else if constexpr (is_vector<T>::value) {
    using E = typename T::value_type;
    if constexpr (varint_scalar<E>) {
      std::vector<std::uint64_t> raw;
      r.repeated_varint(f, raw);
      for (auto v : raw) out.push_back(from_varint<E>(v));
    } else if constexpr (std::is_same_v<E, float>) {
      if (f.type == wire_type::fixed32) {
        out.push_back(f.as_float());
        return;
      }
      r.expect(f, wire_type::len, what);
      if (f.data.size() % 4) throw corrupt_error(std::string(what) + ": packed floats not a multiple of 4 bytes");
      for (std::size_t i = 0; i < f.data.size(); i += 4) {
        std::uint32_t u = le::load<std::uint32_t>(f.data.data() + i);
        float x;
        std::memcpy(&x, &u, 4);
        out.push_back(x);
      }
    } else {
      E e{};
      decode_value(r, f, e, what);
      out.push_back(std::move(e));
    }
  } else {
    out = T::decode(r.sub(f, what));
  }
}

// Writes one alternative of a oneof as a nested message of field number `field`.
template <class A>
void oneof_encode_alternative(writer& w, std::uint32_t field, const A& alt) {
  if constexpr (is_box<A>::value) {
    if (alt) w.message(field, *alt);
    else w.bytes(field, std::string_view());  // an empty message of that type
  } else {
    w.message(field, alt);
  }
}

template <class Variant, std::size_t... I>
void oneof_encode_set(writer& w, const Variant& v, std::index_sequence<I...>) {
  (void)((v.index() == I + 1 ? (oneof_encode_alternative(w, std::uint32_t(I + 1), *std::get_if<I + 1>(&v)), true)
                             : false) ||
         ...);
}

// Writes the set alternative of a oneof variant as a nested message whose field number
// is the variant index. monostate (oneof not set) writes nothing. A test of the index per
// alternative, not std::visit: its dispatch tables cost more to compile than they save.
template <class Variant>
void oneof_encode(writer& w, const Variant& v) {
  if (v.valueless_by_exception() || v.index() == 0) return;
  oneof_encode_set(w, v, std::make_index_sequence<std::variant_size_v<Variant> - 1>{});
}

template <class Variant, std::size_t I = 1>
bool oneof_decode_at(Variant& out, const reader& r, const field_view& f, std::string_view what) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (f.number == I) {
      using A = std::variant_alternative_t<I, Variant>;
      if constexpr (is_box<A>::value) {
        using U = std::decay_t<decltype(*std::declval<A&>())>;
        out.template emplace<I>(A(U::decode(r.sub(f, what))));
      } else {
        out.template emplace<I>(A::decode(r.sub(f, what)));
      }
      return true;
    }
    return oneof_decode_at<Variant, I + 1>(out, r, f, what);
  } else {
    return false;
  }
}

// Decodes field f into the oneof if its number names an alternative; returns false
// otherwise. As in protobuf, when several alternatives appear the last one wins.
template <class Variant>
bool oneof_decode(Variant& out, const reader& r, const field_view& f, std::string_view what) {
  return oneof_decode_at<Variant>(out, r, f, what);
}

[[noreturn]] inline void unknown_variant(std::string_view message, const field_view& f) {
  throw unsupported_error(std::string(message) + ": unknown variant (field " + std::to_string(f.number) +
                          "), written by a newer Lance?");
}

template <class M, class T>
void encode_desc(writer& w, const M& m, const field_desc<M, T>& d) {
  encode_value(w, d.number, m.*d.member, true);
}
template <class M, class V>
void encode_desc(writer& w, const M& m, const oneof_desc<M, V>& d) {
  oneof_encode(w, m.*d.member);
}
template <class M, class T>
void encode_desc(writer& w, const M& m, const scalar_oneof_desc<M, T>& d) {
  if (m.*d.a.member && m.*d.b.member)
    throw invalid_input_error(std::string(d.name) + ": both alternatives of a oneof are set");
  encode_value(w, d.a.number, m.*d.a.member, true);
  encode_value(w, d.b.number, m.*d.b.member, true);
}

template <class M, class T>
bool decode_desc(M& m, const reader& r, const field_view& f, const field_desc<M, T>& d) {
  if (f.number != d.number) return false;
  decode_value(r, f, m.*d.member, d.name);
  return true;
}
template <class M, class V>
bool decode_desc(M& m, const reader& r, const field_view& f, const oneof_desc<M, V>& d) {
  if (oneof_decode(m.*d.member, r, f, d.name)) return true;
  if (d.refuse_unknown) unknown_variant(d.name, f);
  return false;
}
template <class M, class T>
bool decode_desc(M& m, const reader& r, const field_view& f, const scalar_oneof_desc<M, T>& d) {
  if (decode_desc(m, r, f, d.a)) {
    (m.*d.b.member).reset();  // oneof: the last alternative wins
    return true;
  }
  if (decode_desc(m, r, f, d.b)) {
    (m.*d.a.member).reset();
    return true;
  }
  return false;
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

// Encodes m's fields as its proto_fields() lists them.
template <class M>
void encode_message(writer& w, const M& m) {
  std::apply([&](const auto&... d) { (detail::encode_desc(w, m, d), ...); }, M::proto_fields());
}

// Decodes a message whose fields proto_fields() lists; unknown fields are skipped.
template <class M>
M decode_message(reader r) {
  M m{};
  static constexpr auto fields = M::proto_fields();
  while (!r.done()) {
    const auto f = r.next();
    std::apply([&](const auto&... d) { (void)(detail::decode_desc(m, r, f, d) || ...); }, fields);
  }
  return m;
}

}  // namespace lancet::pb
