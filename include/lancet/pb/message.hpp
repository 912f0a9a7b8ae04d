// Declarative protobuf messages: a message struct lists its fields once, in field-number
// order, and gets prost-compatible bytes (Lance's protobuf library) from that list. The
// list is turned, at compile time, into tables that one encoding loop and one decoding
// loop walk (see "the table-driven codec" below): a message costs a table to compile,
// not a tree of template instantiations.
//
// One piece on purpose: descriptors, the tables built from them and the two loops that
// walk the tables are one mechanism, and every message header includes it; keeping
// it in one header keeps the pb headers' compile cost (bench/compile_cost) down.
//
//   struct flat {
//     static constexpr std::string_view message_name = "Flat";
//     static constexpr std::uint32_t f_bits_per_value = 1, f_data = 2;
//     std::uint64_t bits_per_value = 0;
//     std::optional<buffer_compression> data{};
//     static constexpr auto proto_fields() {
//       return pb::fields(pb::field(f_bits_per_value, &flat::bits_per_value, "Flat.bits_per_value"),
//                         pb::field(f_data, &flat::data, "Flat.data"));
//     }
//   };
//
//   std::string bytes = pb::encode(f);           // message -> bytes
//   auto back = pb::decode<flat>(bytes);         // bytes -> message
//
// A message has no encode / decode members: its codec is instantiated where pb::encode
// or pb::decode is called for it (or for a message containing it), so a TU that only
// includes the message headers compiles their declarations and nothing more. Optional
// members a message may add (looked for by the codec, each a plain function):
//   void check_encodable() const     called before writing (throws invalid_input_error)
//   void check_decoded() const       called after reading (throws corrupt_error, ...)
//   W to_wire() const + static M from_wire(W)
//                                    M is written as message W (its own struct on the
//                                    wire: a different shape than the one users see)
// A value type declared below pb becomes a message through a specialisation of
// pb::message_traits (its name and descriptors), as core's uuid does.
// A type outside the library may still bring its own codec, `void encode(writer&) const`
// and `static M decode(reader)`; pb::encode / pb::decode call those.
//
// The member's C++ type decides the wire form, following proto3 as prost writes it:
//   integers, bools, enums      varint (signed values sign-extended to 64 bits), skipped when 0
//   float / double              fixed32 / fixed64, skipped when 0
//   std::string                 length-delimited (string or bytes), skipped when empty
//   std::array<uint8_t, N>      bytes of exactly N (a UUID), always written
//   std::optional<scalar>       explicit presence: written whenever set (proto3 `optional`)
//   std::optional<M>, box<M>    a sub-message, written when present
//   M                           a sub-message, always written
//   std::vector<int|enum>       packed varints;  std::vector<float>: packed fixed32
//   std::vector<M|std::string>  one field per element
//   std::map<K, V>, std::vector<std::pair<K, V>>
//                               a map: one {key = 1, value = 2} entry per pair, in the
//                               container's order; V may be optional (explicit presence)
// pb::required(...) is a field whose absence makes decoding fail (corrupt_error).
// A oneof is a std::variant whose cases (after a leading std::monostate, "not set", if
// any) have the field numbers pb::oneof lists: 1, 2, ... by default, from a first number,
// or given one by one. Unknown fields are skipped, except where a oneof refuses them
// (.refusing(...)): messages that are nothing but a oneof (pb::only_oneof) refuse any
// unknown number as a variant written by a newer Lance (unsupported_error). A oneof of
// scalars is two std::optional members of which at most one may be set (pb::scalar_oneof).
//
// Also here: pb::box<T> (deep-copying nullable owner for recursive messages),
// pb::empty (google.protobuf.Empty), pb::encode / pb::decode (message <-> bytes: the one
// spelling; encode also appends to a writer, decode also reads from a reader), and pack_any /
// unpack_any (google.protobuf.Any with Lance's "/package.Message" type URLs).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb {

// A message's name and descriptors. A message declares them as members; a value type
// declared below pb (core's uuid) is made a message by specialising this template.
template <class M>
struct message_traits {
  static constexpr std::string_view message_name = M::message_name;
  static constexpr auto proto_fields() { return M::proto_fields(); }
};

// A message's descriptors, as proto_fields() returns them: pb::fields(d0, d1, ...).
// Not a std::tuple: proto_fields()'s return type is deduced where its message is
// declared, in every TU that includes it, and deducing a std::tuple (CTAD over its
// constructor set) cost more than the rest of the message. This is a plain aggregate,
// descriptor i in base slot<i>.
namespace detail {
template <std::size_t I, class D>
struct slot {
  D d;
};
template <class Seq, class... D>
struct slots;
template <std::size_t... I, class... D>
struct slots<std::index_sequence<I...>, D...> : slot<I, D>... {};
// Descriptor I (deduces D from the one base slot<I, D>).
template <std::size_t I, class D>
constexpr const D& get(const slot<I, D>& s) noexcept {
  return s.d;
}
}  // namespace detail

template <class... D>
struct field_list : detail::slots<std::index_sequence_for<D...>, D...> {
  static constexpr std::size_t size = sizeof...(D);
};
template <class... D>
constexpr field_list<D...> fields(D... d) {
  return {{{d}...}};
}

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

// google.protobuf.Empty: no fields (a reader skips any it finds).
struct empty {
  static constexpr std::string_view message_name = "Empty";
  static constexpr auto proto_fields() { return pb::fields(); }
  bool operator==(const empty&) const = default;
};

// ---- field descriptors -------------------------------------------------------------

template <class M, class T>
struct field_desc {
  std::uint32_t number;
  T M::*member;
  std::string_view name;  // "Message.field", used in errors
  bool required = false;  // decoding refuses a message without it (corrupt_error); always written
};
template <class M, class T>
constexpr field_desc<M, T> field(std::uint32_t number, T M::*member, std::string_view name) {
  return {number, member, name, false};
}
// A field Lance refuses to read a message without (a UUID's bytes, a run's span...).
template <class M, class T>
constexpr field_desc<M, T> required(std::uint32_t number, T M::*member, std::string_view name) {
  return {number, member, name, true};
}

// What decoding does with a field number that no field and no alternative of a oneof
// claims, within the oneof's refused range.
enum class unknown_field : std::uint8_t {
  skip,         // protobuf's default
  unsupported,  // a variant written by a newer Lance (unsupported_error)
  corrupt,      // corrupt_error
};

// A oneof: a std::variant whose alternatives (after a leading std::monostate, "not set",
// if there is one) are the oneof's cases, with field numbers `numbers`.
namespace detail {
// The first alternative of a oneof's variant that is a case: 1 after a std::monostate.
template <class V>
inline constexpr std::size_t first_case = std::is_same_v<std::variant_alternative_t<0, V>, std::monostate> ? 1 : 0;
}  // namespace detail

template <class M, class V>
struct oneof_desc {
  static constexpr std::size_t first = detail::first_case<V>;
  static constexpr std::size_t count = std::variant_size_v<V> - first;
  V M::*member;
  std::string_view name;
  std::array<std::uint32_t, count> numbers;  // numbers[i]: field of alternative first + i
  unknown_field on_unknown = unknown_field::skip;
  std::uint32_t refuse_from = 1, refuse_to = 0x1FFFFFFF;  // the range on_unknown applies to
  bool required = false;

  // Unknown field numbers in [from, to] are refused as `how`.
  constexpr oneof_desc refusing(unknown_field how, std::uint32_t from = 1, std::uint32_t to = 0x1FFFFFFF) const {
    oneof_desc d = *this;
    d.on_unknown = how;
    d.refuse_from = from;
    d.refuse_to = to;
    return d;
  }
  // Decoding refuses a message in which no case is present.
  constexpr oneof_desc require() const {
    oneof_desc d = *this;
    d.required = true;
    return d;
  }
};
// Cases numbered from `first_number` (1 unless given), in alternative order.
template <class M, class V>
constexpr oneof_desc<M, V> oneof(V M::*member, std::string_view name, std::uint32_t first_number = 1) {
  oneof_desc<M, V> d{member, name, {}};
  for (std::size_t i = 0; i < d.count; ++i) d.numbers[i] = first_number + std::uint32_t(i);
  return d;
}
// Cases with the given field numbers, in alternative order.
template <class M, class V, std::size_t N>
constexpr oneof_desc<M, V> oneof(V M::*member, std::string_view name, const std::uint32_t (&numbers)[N]) {
  static_assert(N == oneof_desc<M, V>::count, "one field number per case of the oneof");
  oneof_desc<M, V> d{member, name, {}};
  for (std::size_t i = 0; i < N; ++i) d.numbers[i] = numbers[i];
  return d;
}
// The message is nothing but this oneof: an unknown field number is a variant written by
// a newer Lance, refused as unsupported_error.
template <class M, class V>
constexpr oneof_desc<M, V> only_oneof(V M::*member, std::string_view name) {
  return oneof(member, name).refusing(unknown_field::unsupported);
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
template <class T> struct is_fixed_bytes : std::false_type {};
template <std::size_t N> struct is_fixed_bytes<std::array<std::uint8_t, N>> : std::true_type {};
// A protobuf map: std::map (key order) or a vector of pairs (the order entries came in).
template <class T> struct is_map : std::false_type {};
template <class K, class V, class C, class A> struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class A> struct is_map<std::vector<std::pair<K, V>, A>> : std::true_type {};

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
T from_varint(std::uint64_t raw, std::string_view what) {
  if constexpr (std::is_enum_v<T>) {
    // An enum value its C++ type cannot hold is not one Lance wrote.
    using U = std::underlying_type_t<T>;
    const auto s = std::int64_t(raw);
    if (s < std::int64_t(std::numeric_limits<U>::min()) ||
        (s > 0 && std::uint64_t(s) > std::uint64_t(std::numeric_limits<U>::max())))
      throw corrupt_error(std::string(what) + ": enum value " + std::to_string(s) + " out of range");
    return T(U(s));
  } else if constexpr (std::is_same_v<T, bool>) {
    return raw != 0;
  } else if constexpr (std::is_signed_v<T>) {
    return T(std::int64_t(raw));
  } else {
    return T(raw);
  }
}

template <class T>
void encode_value(writer& w, std::uint32_t n, const T& v, bool implicit);

// A message's fields into w / out of r: its table, its wire form or its own codec
// (defined below, after the tables).
template <class M>
void write_message(writer& w, const M& m);
template <class M>
M read_message(reader r);

// A sub-message, always written (even when empty: presence matters for oneofs and
// optional sub-messages).
template <class T>
void encode_sub(writer& w, std::uint32_t n, const T& v) {
  writer inner;
  write_message(inner, v);
  w.bytes(n, inner.bytes());
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
  } else if constexpr (is_fixed_bytes<T>::value) {
    w.bytes(n, bytes_view(v.data(), v.size()));  // fixed width: no default to skip
  } else if constexpr (is_optional<T>::value || is_box<T>::value) {
    if (v) encode_value(w, n, *v, false);
  } else if constexpr (is_map<T>::value) {
    // One entry message per pair: key = 1, value = 2, each with implicit presence (as
    // prost writes them: an empty value leaves only the key).
    for (const auto& kv : v) {
      writer e;
      encode_value(e, 1, kv.first, true);
      encode_value(e, 2, kv.second, true);
      w.bytes(n, e.bytes());
    }
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
    encode_sub(w, n, v);
  }
}

template <class T>
void decode_value(const reader& r, const field_view& f, T& out, std::string_view what) {
  if constexpr (varint_scalar<T>) {
    out = from_varint<T>(r.varint(f, what), what);
  } else if constexpr (std::is_same_v<T, float>) {
    r.expect(f, wire_type::fixed32, what);
    out = f.as_float();
  } else if constexpr (std::is_same_v<T, double>) {
    r.expect(f, wire_type::fixed64, what);
    out = f.as_double();
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = r.string(f, what);
  } else if constexpr (is_fixed_bytes<T>::value) {
    r.expect(f, wire_type::len, what);
    if (f.data.size() != out.size())
      throw corrupt_error(std::string(what) + ": " + std::to_string(f.data.size()) + " bytes, expected " +
                          std::to_string(out.size()));
    std::memcpy(out.data(), f.data.data(), out.size());
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type v{};
    decode_value(r, f, v, what);
    out = std::move(v);
  } else if constexpr (is_box<T>::value) {
    using U = std::decay_t<decltype(*out)>;
    out = read_message<U>(r.sub(f, what));
  } else if constexpr (is_map<T>::value) {
    reader e = r.sub(f, what);
    std::remove_const_t<typename T::value_type::first_type> key{};
    typename T::value_type::second_type value{};
    while (!e.done()) {
      const auto g = e.next();
      if (g.number == 1) decode_value(e, g, key, what);
      else if (g.number == 2) decode_value(e, g, value, what);
    }
    if constexpr (is_vector<T>::value) out.emplace_back(std::move(key), std::move(value));
    else out.insert_or_assign(std::move(key), std::move(value));
  } else if constexpr (is_vector<T>::value) {
    using E = typename T::value_type;
    if constexpr (varint_scalar<E>) {
      if (f.type == wire_type::varint) {
        out.push_back(from_varint<E>(f.scalar, what));
        return;
      }
      r.expect(f, wire_type::len, what);
      reader packed(f.data, r.depth() + 1, what);
      while (!packed.done()) out.push_back(from_varint<E>(packed.raw_varint(), what));
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
    out = read_message<T>(r.sub(f, what));
  }
}

// ---- the table-driven codec ---------------------------------------------------------
//
// A message's descriptors become two constexpr tables (one to encode, one to decode) of
// entries: field number, name, where the member is, and a pointer to the codec of the
// member's C++ type. One non-template loop walks a table. Codecs are instantiated per
// C++ type (shared by every message with a member of that type) and called through a
// pointer, so a message costs a table, not a tree of inlined instantiations; and a
// program that only writes never instantiates the decoders (the tables are separate).

using encode_fn = void (*)(writer&, std::uint32_t number, const void* value, bool implicit);
using decode_fn = void (*)(const reader&, const field_view&, void* value, std::string_view what);

template <class T>
void encode_erased(writer& w, std::uint32_t n, const void* v, bool implicit) {
  encode_value(w, n, *static_cast<const T*>(v), implicit);
}
template <class T>
void decode_erased(const reader& r, const field_view& f, void* v, std::string_view what) {
  decode_value(r, f, *static_cast<T*>(v), what);
}

// One case of a oneof, written always, even when empty (its presence is the information).
template <class A>
void encode_case(writer& w, std::uint32_t n, const void* v, bool) {
  const A& alt = *static_cast<const A*>(v);
  if constexpr (is_box<A>::value) {
    if (alt) encode_sub(w, n, *alt);
    else w.bytes(n, std::string_view());  // an empty message of that type
  } else {
    encode_value(w, n, alt, false);
  }
}

// Where a member is: one function per field (an address computation).
template <class M, class T, T M::*P>
const void* member_of(const void* m) {
  return &(static_cast<const M*>(m)->*P);
}
template <class M, class T, T M::*P>
void* member_of_mut(void* m) {
  return &(static_cast<M*>(m)->*P);
}
// Set / clear of a std::optional member (the two halves of a scalar oneof).
template <class T>
bool optional_is_set(const void* v) {
  return static_cast<const T*>(v)->has_value();
}
template <class T>
void optional_clear(void* v) {
  static_cast<T*>(v)->reset();
}

// The cases of a std::variant, type-erased: a test of the index per alternative, not
// std::visit (its dispatch tables cost more to compile than they save).
struct variant_encoder {
  std::size_t first;                        // 1 when alternative 0 is std::monostate, "not set"
  std::size_t (*index)(const void*);        // the variant's index (variant_npos: valueless)
  const void* (*get)(const void*);          // the active alternative
  const encode_fn* cases;                   // cases[i]: alternative first + i
};
struct variant_decoder {
  std::size_t count;
  void* (*emplace)(void*, std::size_t);     // default-constructs case i, returns it
  const decode_fn* cases;
};

template <class V>
std::size_t variant_index(const void* v) {
  return static_cast<const V*>(v)->index();
}
template <class V>
const void* variant_get(const void* p) {
  const V& v = *static_cast<const V*>(p);
  const void* r = nullptr;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (void)((v.index() == I ? (r = std::get_if<I>(&v), true) : false) || ...);
  }(std::make_index_sequence<std::variant_size_v<V>>{});
  return r;
}
template <class V>
void* variant_emplace(void* p, std::size_t c) {
  V& v = *static_cast<V*>(p);
  void* r = nullptr;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (void)((c == I ? (r = &v.template emplace<first_case<V> + I>(), true) : false) || ...);
  }(std::make_index_sequence<std::variant_size_v<V> - first_case<V>>{});
  return r;
}
template <class V, std::size_t... I>
constexpr std::array<encode_fn, sizeof...(I)> case_encoders(std::index_sequence<I...>) {
  return {&encode_case<std::variant_alternative_t<first_case<V> + I, V>>...};
}
template <class V, std::size_t... I>
constexpr std::array<decode_fn, sizeof...(I)> case_decoders(std::index_sequence<I...>) {
  return {&decode_erased<std::variant_alternative_t<first_case<V> + I, V>>...};
}
template <class V>
inline constexpr auto case_encoders_of = case_encoders<V>(std::make_index_sequence<std::variant_size_v<V> - first_case<V>>{});
template <class V>
inline constexpr auto case_decoders_of = case_decoders<V>(std::make_index_sequence<std::variant_size_v<V> - first_case<V>>{});
template <class V>
inline constexpr variant_encoder variant_encoder_of{first_case<V>, &variant_index<V>, &variant_get<V>,
                                                   case_encoders_of<V>.data()};
template <class V>
inline constexpr variant_decoder variant_decoder_of{std::variant_size_v<V> - first_case<V>, &variant_emplace<V>,
                                                   case_decoders_of<V>.data()};

// One entry of a message's encoding table: a field, or a oneof (variant != nullptr).
struct encode_entry {
  std::uint32_t number = 0;
  bool required = false;                      // written even when it holds the default
  std::string_view name;                      // the field's, or the oneof's
  const void* (*at)(const void*) = nullptr;   // the member in the message
  encode_fn encode = nullptr;                 // a field
  const variant_encoder* variant = nullptr;   // a oneof
  const std::uint32_t* numbers = nullptr;     // a oneof: the field number of each case
  // A scalar oneof is two entries, each naming the other: both set is an error.
  int partner = -1;
  bool (*is_set)(const void*) = nullptr;
};
struct decode_entry {
  std::uint32_t number = 0;
  bool required = false;                      // absent: corrupt_error
  std::string_view name;
  void* (*at)(void*) = nullptr;
  decode_fn decode = nullptr;
  const variant_decoder* variant = nullptr;
  const std::uint32_t* numbers = nullptr;
  unknown_field on_unknown = unknown_field::skip;  // for numbers in [refuse_from, refuse_to]
  std::uint32_t refuse_from = 0, refuse_to = 0;
  int partner = -1;                           // a scalar oneof: decoding one clears the other
  void (*clear)(void*) = nullptr;
};

// A field no entry claimed, in the refused range of a oneof.
[[noreturn]] inline void refuse_unknown(std::string_view oneof, std::uint32_t number, unknown_field how) {
  const std::string msg = std::string(oneof) + ": unknown variant (field " + std::to_string(number) + ")";
  if (how == unknown_field::corrupt) throw corrupt_error(msg);
  throw unsupported_error(msg + ", written by a newer Lance?");
}
[[noreturn]] inline void missing_field(std::string_view name) { throw corrupt_error(std::string(name) + " is missing"); }
[[noreturn]] inline void both_set(std::string_view oneof) {
  throw invalid_input_error(std::string(oneof) + ": both alternatives of a oneof are set");
}

// The encoding loop: every message with descriptors runs this one function.
inline void encode_fields(writer& w, const void* m, const encode_entry* t, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const encode_entry& e = t[i];
    const void* v = e.at(m);
    if (e.variant) {
      const std::size_t k = e.variant->index(v);
      if (k == std::variant_npos || k < e.variant->first) continue;  // not set: nothing written
      e.variant->cases[k - e.variant->first](w, e.numbers[k - e.variant->first], e.variant->get(v), false);
      continue;
    }
    if (e.partner > int(i) && e.is_set(v) && t[e.partner].is_set(t[e.partner].at(m))) both_set(e.name);
    e.encode(w, e.number, v, !e.required);
  }
}

// Whether entry i takes field f (and decodes it into m).
inline bool decode_claims(const reader& r, const field_view& f, void* m, const decode_entry* t, std::size_t i) {
  const decode_entry& e = t[i];
  if (e.variant) {
    for (std::size_t c = 0; c < e.variant->count; ++c)
      if (f.number == e.numbers[c]) {
        // As in protobuf, when several cases appear the last one wins.
        e.variant->cases[c](r, f, e.variant->emplace(e.at(m), c), e.name);
        return true;
      }
    return false;
  }
  if (f.number != e.number) return false;
  e.decode(r, f, e.at(m), e.name);
  if (e.partner >= 0) t[e.partner].clear(t[e.partner].at(m));  // a oneof: the last alternative wins
  return true;
}

// The decoding loop: unknown fields are skipped (or refused, as a oneof says); a
// required field or oneof that is absent is corrupt_error.
inline void decode_fields(reader& r, void* m, const decode_entry* t, std::size_t n) {
  std::uint64_t seen = 0;  // bit i: entry i was present (tables have at most 64 entries)
  while (!r.done()) {
    const field_view f = r.next();
    std::size_t i = 0;
    while (i < n && !decode_claims(r, f, m, t, i)) ++i;
    if (i < n) {
      seen |= std::uint64_t(1) << i;
      continue;
    }
    for (std::size_t j = 0; j < n; ++j)
      if (t[j].on_unknown != unknown_field::skip && f.number >= t[j].refuse_from && f.number <= t[j].refuse_to)
        refuse_unknown(t[j].name, f.number, t[j].on_unknown);
  }
  for (std::size_t j = 0; j < n; ++j)
    if (t[j].required && !((seen >> j) & 1)) missing_field(t[j].name);
}

// ---- building a message's tables from its descriptors (at compile time) ---------------

template <class M>
inline constexpr auto descriptors = message_traits<M>::proto_fields();

template <class D> struct is_oneof_desc : std::false_type {};
template <class M, class V> struct is_oneof_desc<oneof_desc<M, V>> : std::true_type {};
template <class D> struct is_scalar_oneof_desc : std::false_type {};
template <class M, class T> struct is_scalar_oneof_desc<scalar_oneof_desc<M, T>> : std::true_type {};

// Entries of M's tables: one per field or oneof, two per scalar oneof.
template <class... D>
constexpr std::size_t entry_count(const field_list<D...>&) {
  return (std::size_t(0) + ... + (is_scalar_oneof_desc<D>::value ? 2 : 1));
}

// The entry of one field in an encoding or a decoding table (Entry says which).
template <class Entry, class M, class T, T M::*P>
constexpr Entry field_entry(const field_desc<M, T>& d) {
  Entry e;
  e.number = d.number;
  e.required = d.required;
  e.name = d.name;
  if constexpr (std::is_same_v<Entry, encode_entry>) {
    e.at = &member_of<M, T, P>;
    e.encode = &encode_erased<T>;
    if constexpr (is_optional<T>::value) e.is_set = &optional_is_set<T>;
  } else {
    e.at = &member_of_mut<M, T, P>;
    e.decode = &decode_erased<T>;
    if constexpr (is_optional<T>::value) e.clear = &optional_clear<T>;
  }
  return e;
}

// Appends descriptor I of M to an encoding table (a scalar oneof takes two entries).
template <class M, std::size_t I, std::size_t N>
constexpr void add_entry(std::array<encode_entry, N>& t, std::size_t& k) {
  constexpr const auto& d = detail::get<I>(descriptors<M>);
  using D = std::remove_cvref_t<decltype(d)>;
  if constexpr (is_oneof_desc<D>::value) {
    using V = std::remove_cvref_t<decltype(std::declval<M&>().*d.member)>;
    encode_entry& e = t[k++];
    e.name = d.name;
    e.at = &member_of<M, V, d.member>;
    e.variant = &variant_encoder_of<V>;
    e.numbers = d.numbers.data();
  } else if constexpr (is_scalar_oneof_desc<D>::value) {
    using O = std::remove_cvref_t<decltype(std::declval<M&>().*d.a.member)>;
    t[k] = field_entry<encode_entry, M, O, d.a.member>(d.a);
    t[k + 1] = field_entry<encode_entry, M, O, d.b.member>(d.b);
    t[k].name = t[k + 1].name = d.name;  // the oneof's name, for the "both set" error
    t[k].required = t[k + 1].required = false;
    t[k].partner = int(k + 1);
    t[k + 1].partner = int(k);
    k += 2;
  } else {
    using T = std::remove_cvref_t<decltype(std::declval<M&>().*d.member)>;
    t[k++] = field_entry<encode_entry, M, T, d.member>(d);
  }
}
template <class M, std::size_t I, std::size_t N>
constexpr void add_entry(std::array<decode_entry, N>& t, std::size_t& k) {
  constexpr const auto& d = detail::get<I>(descriptors<M>);
  using D = std::remove_cvref_t<decltype(d)>;
  if constexpr (is_oneof_desc<D>::value) {
    using V = std::remove_cvref_t<decltype(std::declval<M&>().*d.member)>;
    decode_entry& e = t[k++];
    e.required = d.required;
    e.name = d.name;
    e.at = &member_of_mut<M, V, d.member>;
    e.variant = &variant_decoder_of<V>;
    e.numbers = d.numbers.data();
    e.on_unknown = d.on_unknown;
    e.refuse_from = d.refuse_from;
    e.refuse_to = d.refuse_to;
  } else if constexpr (is_scalar_oneof_desc<D>::value) {
    using O = std::remove_cvref_t<decltype(std::declval<M&>().*d.a.member)>;
    t[k] = field_entry<decode_entry, M, O, d.a.member>(d.a);
    t[k + 1] = field_entry<decode_entry, M, O, d.b.member>(d.b);
    t[k].partner = int(k + 1);
    t[k + 1].partner = int(k);
    k += 2;
  } else {
    using T = std::remove_cvref_t<decltype(std::declval<M&>().*d.member)>;
    t[k++] = field_entry<decode_entry, M, T, d.member>(d);
  }
}

// A message's encoding or decoding table (Entry: encode_entry or decode_entry).
template <class M, class Entry>
constexpr auto make_table() {
  std::array<Entry, entry_count(descriptors<M>)> t{};
  static_assert(t.size() <= 64, "decode_fields tracks at most 64 entries");
  std::size_t k = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (add_entry<M, I>(t, k), ...);
  }(std::make_index_sequence<std::remove_cvref_t<decltype(descriptors<M>)>::size>{});
  return t;
}
template <class M>
inline constexpr auto encoders = make_table<M, encode_entry>();
template <class M>
inline constexpr auto decoders = make_table<M, decode_entry>();

// ---- a message's codec: which of the three forms it has ------------------------------

// A type that brings its own codec (one not declared in lancet/pb, e.g. a user's).
template <class M>
concept own_codec = requires(const M& m, writer& w, reader r) {
  m.encode(w);
  { M::decode(std::move(r)) } -> std::same_as<M>;
};
// A message written as another message (to_wire / from_wire).
template <class M>
concept has_wire_form = requires(const M& m) { m.to_wire(); };
template <class M>
using wire_form_t = std::remove_cvref_t<decltype(std::declval<const M&>().to_wire())>;

template <class M>
void write_message(writer& w, const M& m) {
  if constexpr (own_codec<M>) {
    m.encode(w);
  } else if constexpr (has_wire_form<M>) {
    write_message(w, m.to_wire());
  } else {
    if constexpr (requires { m.check_encodable(); }) m.check_encodable();
    encode_fields(w, &m, encoders<M>.data(), encoders<M>.size());
  }
}

// Unknown fields are skipped (or refused, as a oneof says); a required field or oneof
// that is absent is corrupt_error.
template <class M>
M read_message(reader r) {
  if constexpr (own_codec<M>) {
    return M::decode(std::move(r));
  } else if constexpr (has_wire_form<M>) {
    return M::from_wire(read_message<wire_form_t<M>>(std::move(r)));
  } else {
    M m{};
    decode_fields(r, &m, decoders<M>.data(), decoders<M>.size());
    if constexpr (requires { m.check_decoded(); }) m.check_decoded();
    return m;
  }
}

}  // namespace detail

// Serialises a message: the one spelling for "message to bytes".
template <class Msg>
std::string encode(const Msg& m) {
  writer w;
  detail::write_message(w, m);
  return w.take();
}
// Appends a message's fields to w (the counterpart of decode from a reader).
template <class Msg>
void encode(writer& w, const Msg& m) {
  detail::write_message(w, m);
}
// Parses a message (nesting depth starts at 0; errors name the message).
template <class Msg>
Msg decode(bytes_view data) {
  return detail::read_message<Msg>(reader(data, 0, message_traits<Msg>::message_name));
}
template <class Msg>
Msg decode(std::string_view data) {
  return detail::read_message<Msg>(reader(data, 0, message_traits<Msg>::message_name));
}
// Parses a message from a reader: its depth and its name in errors are the reader's.
// (R is deduced, not converted to: a string still picks the overload above.)
template <class Msg, std::same_as<reader> R>
Msg decode(R r) {
  return detail::read_message<Msg>(std::move(r));
}

// google.protobuf.Any
struct any {
  static constexpr std::string_view message_name = "Any";
  static constexpr std::uint32_t f_type_url = 1, f_value = 2;
  std::string type_url;
  std::string value;

  // The message name after the last '/' of the type URL.
  std::string_view type_name() const noexcept {
    auto p = type_url.rfind('/');
    return p == std::string::npos ? std::string_view(type_url) : std::string_view(type_url).substr(p + 1);
  }
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_type_url, &any::type_url, "Any.type_url"),
                      pb::field(f_value, &any::value, "Any.value"));
  }
  friend bool operator==(const any&, const any&) = default;
};

// Wraps a message in google.protobuf.Any the way Lance (prost's Any::from_msg) does:
// type_url = "/" + full proto name, e.g. "/lance.encodings21.PageLayout".
template <class Msg>
any pack_any(const Msg& m) {
  any a;
  a.type_url = std::string(Msg::type_url);
  a.value = pb::encode(m);
  return a;
}

// Unwraps an Any holding Msg; a different type URL is corrupt_error (check
// any::type_url first when several message types are acceptable).
template <class Msg>
Msg unpack_any(const any& a) {
  if (a.type_url != Msg::type_url)
    throw corrupt_error("expected a protobuf Any of type " + std::string(Msg::type_url) + ", found '" +
                        a.type_url + "'");
  return pb::decode<Msg>(std::string_view(a.value));
}

}  // namespace lancet::pb

// Compiled mode (core/config.hpp): the codecs of the large messages (the manifest, the
// transaction, a file's schema: those a family header lists, e.g. LANCET_PB_TABLE_CODECS
// in pb/table.hpp) are instantiated once, in the library (src/lancet.cpp), and declared
// extern for programs. A manifest's or a transaction's codec instantiates those of about
// a hundred nested messages: ~1.5 s of compile time in every TU that includes a header
// whose inline functions read or write one, whether it calls them or not.
#define LANCET_PB_CODEC_INSTANCE(prefix, M)                                   \
  prefix template std::string lancet::pb::encode<M>(const M&);                \
  prefix template void lancet::pb::encode<M>(lancet::pb::writer&, const M&);  \
  prefix template M lancet::pb::decode<M>(lancet::bytes_view);                \
  prefix template M lancet::pb::decode<M>(std::string_view);                  \
  prefix template M lancet::pb::decode<M, lancet::pb::reader>(lancet::pb::reader);
// The library's explicit instantiations (at global scope, M fully qualified).
#define LANCET_PB_DEFINE_CODEC(M) LANCET_PB_CODEC_INSTANCE(, M)
#if LANCET_HEADER_ONLY
#define LANCET_PB_EXTERN_CODEC(M)
#else
#define LANCET_PB_EXTERN_CODEC(M) LANCET_PB_CODEC_INSTANCE(extern, M)
#endif
