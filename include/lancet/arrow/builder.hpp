// Builders: the short way to make arrays in tests, examples and user code.
//
//   auto a = arrow::make_array<int32_t>({1, std::nullopt, 3});
//   auto s = arrow::string_array({"a", std::nullopt});
//   auto t = arrow::make_array<int64_t>({1, 2}, arrow::timestamp(arrow::time_unit::micro, "UTC"));
//   auto l = arrow::make_list(a, {0, 2, 2, 3}, {true, false, true});
//   auto v = arrow::make_fixed_size_list(arrow::make_array<float>({1, 2, 3, 4}), 2);
//   auto st = arrow::struct_array({{"a", a}, {"s", s3}}, {true, true, false});
//
//   arrow::builder<double> b;          // one builder per value type, all alike:
//   b.append(1.5).append_null();       // append / append_null / append_nulls / finish
//   auto d = b.finish();
//
// Validity is given as std::vector<bool> (true = valid); an empty vector means
// "all valid". Builders write no validity buffer when nothing is null. Values under
// null slots are zero. Every function checks its input and throws
// invalid_input_error naming the problem.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/decimal.hpp"
#include "lancet/arrow/half.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"

namespace lancet::arrow {

using validity_list = std::vector<bool>;

// The Arrow type a C++ value type maps to by default.
template <class T>
type_ptr default_type_for() {
  if constexpr (std::is_same_v<T, bool>) {
    return boolean();
  } else if constexpr (std::is_floating_point_v<T>) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "only float and double map to Arrow types");
    return sizeof(T) == 4 ? float32() : float64();
  } else if constexpr (std::is_integral_v<T>) {
    static_assert(sizeof(T) <= 8, "integers wider than 64 bits map to decimals, not ints");
    if constexpr (std::is_signed_v<T>) {
      return sizeof(T) == 1 ? int8() : sizeof(T) == 2 ? int16() : sizeof(T) == 4 ? int32() : int64();
    } else {
      return sizeof(T) == 1 ? uint8() : sizeof(T) == 2 ? uint16() : sizeof(T) == 4 ? uint32() : uint64();
    }
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    return utf8();
  } else {
    static_assert(sizeof(T) == 0, "no default Arrow type for this C++ type");
  }
}

namespace detail {

inline std::int64_t bitmap_bytes(std::int64_t bits) noexcept { return (bits + 7) / 8; }

// Makes `bits` hold at least `count` bits (doubling capacity, so appends stay amortised O(1)).
inline void grow_bitmap(aligned_buffer& bits, std::int64_t count) {
  auto need = std::size_t(bitmap_bytes(count));
  if (bits.size() < need) {
    bits.reserve(std::max(need, bits.size() * 2));
    bits.resize(need);
  }
}

// A growing bitmap of validity flags that only materialises once a null arrives.
class validity_builder {
 public:
  void append(bool valid) {
    if (!valid && !materialized_) materialize();
    if (materialized_) {
      grow_bitmap(bits_, length_ + 1);
      set_bit(bits_.data(), length_, valid);
    }
    ++length_;
    nulls_ += !valid;
  }
  void append_n(bool valid, std::int64_t n) {
    if (n <= 0) return;
    if (!valid && !materialized_) materialize();
    if (materialized_) {
      grow_bitmap(bits_, length_ + n);
      for (std::int64_t i = 0; i < n; ++i) set_bit(bits_.data(), length_ + i, valid);
    }
    length_ += n;
    if (!valid) nulls_ += n;
  }
  std::int64_t length() const noexcept { return length_; }
  std::int64_t null_count() const noexcept { return nulls_; }
  void reserve(std::int64_t n) {
    if (materialized_) bits_.reserve(std::size_t(bitmap_bytes(n)));
  }
  // The bitmap, or an empty buffer when nothing is null; resets the builder.
  shared_bytes finish() {
    shared_bytes out;
    if (materialized_ && nulls_ > 0) {
      bits_.resize(std::size_t(bitmap_bytes(length_)));
      out = shared_bytes(std::move(bits_));
    }
    bits_ = aligned_buffer();
    length_ = nulls_ = 0;
    materialized_ = false;
    return out;
  }

 private:
  void materialize() {
    materialized_ = true;
    grow_bitmap(bits_, length_);
    for (std::int64_t i = 0; i < length_; ++i) set_bit(bits_.data(), i, true);
  }
  aligned_buffer bits_;
  std::int64_t length_ = 0;
  std::int64_t nulls_ = 0;
  bool materialized_ = false;
};

// Packs a validity list for `length` slots; empty result when everything is valid.
inline shared_bytes pack_validity(const validity_list& valid, std::int64_t length, std::int64_t& nulls,
                                  std::string_view what) {
  nulls = 0;
  if (valid.empty()) return {};
  if (std::int64_t(valid.size()) != length)
    throw invalid_input_error(std::string(what) + ": validity has " + std::to_string(valid.size()) +
                              " entries for " + std::to_string(length) + " values");
  validity_builder b;
  for (bool v : valid) b.append(v);
  nulls = b.null_count();
  return b.finish();
}

inline std::shared_ptr<array_data> new_array(type_ptr type, std::int64_t length, std::int64_t nulls,
                                             std::vector<shared_bytes> buffers,
                                             std::vector<array_ptr> children = {}) {
  auto a = std::make_shared<array_data>();
  a->type = std::move(type);
  a->length = length;
  a->null_count = nulls;
  a->buffers = std::move(buffers);
  a->children = std::move(children);
  return a;
}

// Slots of `width` bytes each beside their validity: the storage of every builder
// whose values are whole bytes (primitives, fixed_size_binary, decimals). Null
// slots hold zeros.
class fixed_width_slots {
 public:
  explicit fixed_width_slots(std::size_t width) : width_(width) {}
  void append(const void* value) {
    values_.append(value, width_);
    valid_.append(true);
  }
  void append_values(const void* values, std::int64_t n) {
    values_.append(values, std::size_t(n) * width_);
    valid_.append_n(true, n);
  }
  void append_nulls(std::int64_t n) {
    if (n <= 0) return;
    values_.append_zeros(std::size_t(n) * width_);
    valid_.append_n(false, n);
  }
  void reserve(std::int64_t n) {
    values_.reserve(values_.size() + std::size_t(n) * width_);
    valid_.reserve(valid_.length() + n);
  }
  std::int64_t length() const noexcept { return valid_.length(); }
  // The array of `type` over the slots so far; resets the slots.
  array_ptr finish(const type_ptr& type);

 private:
  std::size_t width_;
  aligned_buffer values_;
  validity_builder valid_;
};

inline void require_type(const type_ptr& t, std::string_view builder) {
  if (!t) throw invalid_input_error(std::string(builder) + ": the type is null");
}

inline array_ptr fixed_width_slots::finish(const type_ptr& type) {
  const auto n = valid_.length(), nulls = valid_.null_count();
  auto validity = valid_.finish();
  shared_bytes values(std::move(values_));
  values_ = aligned_buffer();
  return new_array(type, n, nulls, {std::move(validity), std::move(values)});
}

}  // namespace detail

// ---- leaf builders -----------------------------------------------------------

// All-null array of the null type.
class null_builder {
 public:
  explicit null_builder(const type_ptr& type = null_type()) {
    detail::require_type(type, "null_builder");
    if (type->id != type_id::null) throw invalid_input_error("null_builder cannot build " + to_string(*type));
  }
  null_builder& append_null() { ++length_; return *this; }
  null_builder& append_nulls(std::int64_t n) {
    if (n > 0) length_ += n;
    return *this;
  }
  std::int64_t length() const noexcept { return length_; }
  array_ptr finish() {
    auto a = detail::new_array(null_type(), length_, length_, {});
    length_ = 0;
    return a;
  }

 private:
  std::int64_t length_ = 0;
};

// Fixed-width values of C type T (integers, float, double; uint16_t bit patterns for
// float16). The Arrow type defaults from T and may be any fixed-width type of the
// same width (date32 with int32_t, timestamp with int64_t, ...).
template <class T>
class primitive_builder {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "use boolean_builder for bool");

 public:
  using value_type = T;
  explicit primitive_builder(type_ptr type = default_type_for<T>()) : type_(std::move(type)) {
    detail::require_type(type_, "primitive_builder");
    const auto id = type_->id;
    const bool shape_ok = id != type_id::boolean && id != type_id::fixed_size_binary &&
                          id != type_id::decimal128 && id != type_id::decimal256 &&
                          bit_width(*type_) == std::int64_t(sizeof(T)) * 8;
    const bool float_ok = !std::is_floating_point_v<T> || id == type_id::float32 || id == type_id::float64;
    const bool float_type_ok = (id != type_id::float32 && id != type_id::float64) || std::is_floating_point_v<T>;
    if (!shape_ok || !float_ok || !float_type_ok)
      throw invalid_input_error("cannot build " + to_string(*type_) + " values from a " +
                                std::to_string(sizeof(T) * 8) + "-bit " +
                                (std::is_floating_point_v<T> ? "floating point" : "integer") + " C++ type");
  }

  primitive_builder& append(T v) {
    slots_.append(&v);
    return *this;
  }
  primitive_builder& append(const std::optional<T>& v) { return v ? append(*v) : append_null(); }
  primitive_builder& append_null() { return append_nulls(1); }
  primitive_builder& append_nulls(std::int64_t n) {
    slots_.append_nulls(n);
    return *this;
  }
  primitive_builder& append_values(std::span<const T> vs) {
    slots_.append_values(vs.data(), std::int64_t(vs.size()));
    return *this;
  }
  void reserve(std::int64_t n) { slots_.reserve(n); }
  std::int64_t length() const noexcept { return slots_.length(); }
  const type_ptr& type() const noexcept { return type_; }
  array_ptr finish() { return slots_.finish(type_); }

 private:
  type_ptr type_;
  detail::fixed_width_slots slots_{sizeof(T)};
};

// float16 values given as floats (converted with round-to-nearest-even), or as bits.
class float16_builder {
 public:
  float16_builder& append(float v) { b_.append(float_to_half(v)); return *this; }
  float16_builder& append(const std::optional<float>& v) { return v ? append(*v) : append_null(); }
  float16_builder& append_bits(std::uint16_t bits) { b_.append(bits); return *this; }
  float16_builder& append_null() { b_.append_null(); return *this; }
  float16_builder& append_nulls(std::int64_t n) { b_.append_nulls(n); return *this; }
  void reserve(std::int64_t n) { b_.reserve(n); }
  std::int64_t length() const noexcept { return b_.length(); }
  array_ptr finish() { return b_.finish(); }

 private:
  primitive_builder<std::uint16_t> b_{float16()};
};

class boolean_builder {
 public:
  using value_type = bool;
  explicit boolean_builder(const type_ptr& type = boolean()) {
    detail::require_type(type, "boolean_builder");
    if (type->id != type_id::boolean) throw invalid_input_error("boolean_builder cannot build " + to_string(*type));
  }
  boolean_builder& append(bool v) {
    detail::grow_bitmap(bits_, n_ + 1);
    set_bit(bits_.data(), n_, v);
    ++n_;
    valid_.append(true);
    return *this;
  }
  boolean_builder& append(const std::optional<bool>& v) { return v ? append(*v) : append_null(); }
  boolean_builder& append_null() {
    detail::grow_bitmap(bits_, n_ + 1);
    set_bit(bits_.data(), n_, false);
    ++n_;
    valid_.append(false);
    return *this;
  }
  boolean_builder& append_nulls(std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) append_null();
    return *this;
  }
  void reserve(std::int64_t n) { bits_.reserve(std::size_t(detail::bitmap_bytes(n_ + n))); }
  std::int64_t length() const noexcept { return n_; }
  array_ptr finish() {
    const auto n = n_, nulls = valid_.null_count();
    auto validity = valid_.finish();
    bits_.resize(std::size_t(detail::bitmap_bytes(n)));
    shared_bytes values(std::move(bits_));
    bits_ = aligned_buffer();
    n_ = 0;
    return detail::new_array(boolean(), n, nulls, {std::move(validity), std::move(values)});
  }

 private:
  aligned_buffer bits_;
  std::int64_t n_ = 0;
  detail::validity_builder valid_;
};

// utf8 / large_utf8 / binary / large_binary. UTF-8 is not checked here
// (validate() does that).
class binary_builder {
 public:
  using value_type = std::string_view;
  explicit binary_builder(type_ptr type = utf8()) : type_(std::move(type)) {
    detail::require_type(type_, "binary_builder");
    if (!is_binary_like(type_->id))
      throw invalid_input_error("binary_builder cannot build " + to_string(*type_));
    large_ = is_large_binary_like(type_->id);
    push_offset(0);
  }
  binary_builder& append(std::string_view v) {
    data_.append(v);
    if (!large_ && data_.size() > std::size_t(std::numeric_limits<std::int32_t>::max())) {
      data_.resize(data_.size() - v.size());
      throw invalid_input_error(to_string(*type_) + " array would exceed 2 GiB of value bytes (32-bit offsets); use " +
                                (type_->id == type_id::utf8 ? "large_utf8" : "large_binary"));
    }
    push_offset(std::int64_t(data_.size()));
    valid_.append(true);
    return *this;
  }
  binary_builder& append(bytes_view v) {
    return append(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()));
  }
  binary_builder& append(const char* v) { return append(std::string_view(v)); }
  binary_builder& append(const std::string& v) { return append(std::string_view(v)); }
  template <class S>
  binary_builder& append(const std::optional<S>& v) { return v ? append(*v) : append_null(); }
  binary_builder& append_null() {
    push_offset(std::int64_t(data_.size()));
    valid_.append(false);
    return *this;
  }
  binary_builder& append_nulls(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) append_null();
    return *this;
  }
  void reserve(std::int64_t n, std::int64_t value_bytes = 0) {
    offsets_.reserve(offsets_.size() + std::size_t(n) * (large_ ? 8 : 4));
    data_.reserve(data_.size() + std::size_t(value_bytes));
  }
  std::int64_t length() const noexcept { return valid_.length(); }
  array_ptr finish() {
    const auto n = valid_.length(), nulls = valid_.null_count();
    auto validity = valid_.finish();
    shared_bytes offsets(std::move(offsets_)), data(std::move(data_));
    offsets_ = aligned_buffer();
    data_ = aligned_buffer();
    push_offset(0);
    return detail::new_array(type_, n, nulls, {std::move(validity), std::move(offsets), std::move(data)});
  }

 private:
  void push_offset(std::int64_t o) {
    if (large_) {
      offsets_.append(&o, 8);
    } else {
      auto o32 = std::int32_t(o);
      offsets_.append(&o32, 4);
    }
  }
  type_ptr type_;
  bool large_ = false;
  aligned_buffer offsets_, data_;
  detail::validity_builder valid_;
};

class fixed_size_binary_builder {
 public:
  using value_type = std::string_view;
  explicit fixed_size_binary_builder(std::int32_t width) : fixed_size_binary_builder(fixed_size_binary(width)) {}
  explicit fixed_size_binary_builder(type_ptr type) : type_(std::move(type)), slots_(checked_width(type_)) {}
  fixed_size_binary_builder& append(std::string_view v) {
    if (std::int64_t(v.size()) != type_->byte_width)
      throw invalid_input_error("fixed_size_binary[" + std::to_string(type_->byte_width) + "] value " +
                                std::to_string(slots_.length()) + " has " + std::to_string(v.size()) + " bytes");
    slots_.append(v.data());
    return *this;
  }
  fixed_size_binary_builder& append(bytes_view v) {
    return append(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()));
  }
  fixed_size_binary_builder& append(const char* v) { return append(std::string_view(v)); }
  fixed_size_binary_builder& append(const std::string& v) { return append(std::string_view(v)); }
  template <class S>
  fixed_size_binary_builder& append(const std::optional<S>& v) { return v ? append(*v) : append_null(); }
  fixed_size_binary_builder& append_null() { return append_nulls(1); }
  fixed_size_binary_builder& append_nulls(std::int64_t n) {
    slots_.append_nulls(n);
    return *this;
  }
  std::int64_t length() const noexcept { return slots_.length(); }
  array_ptr finish() { return slots_.finish(type_); }

 private:
  static std::size_t checked_width(const type_ptr& type) {
    detail::require_type(type, "fixed_size_binary_builder");
    if (type->id != type_id::fixed_size_binary || type->byte_width < 0)
      throw invalid_input_error("fixed_size_binary_builder cannot build " + to_string(*type));
    return std::size_t(type->byte_width);
  }
  type_ptr type_;
  detail::fixed_width_slots slots_;
};

// decimal128 / decimal256 from unscaled integers (sign-extended) or raw
// little-endian two's complement bytes (16 or 32 of them).
class decimal_builder {
 public:
  using value_type = int128_t;
  explicit decimal_builder(type_ptr type) : type_(std::move(type)), width_(checked_width(type_)), slots_(width_) {}
  decimal_builder& append(int128_t v) {
    if (width_ == 16) {
      slots_.append(decimal128_bytes(v).data());
    } else {
      slots_.append(decimal256_bytes(v).data());
    }
    return *this;
  }
  decimal_builder& append(const std::optional<int128_t>& v) { return v ? append(*v) : append_null(); }
  decimal_builder& append_bytes(bytes_view raw) {
    if (std::int64_t(raw.size()) != width_)
      throw invalid_input_error(to_string(*type_) + " value " + std::to_string(slots_.length()) + " has " +
                                std::to_string(raw.size()) + " bytes, expected " + std::to_string(width_));
    slots_.append(raw.data());
    return *this;
  }
  decimal_builder& append_null() { return append_nulls(1); }
  decimal_builder& append_nulls(std::int64_t n) {
    slots_.append_nulls(n);
    return *this;
  }
  std::int64_t length() const noexcept { return slots_.length(); }
  array_ptr finish() { return slots_.finish(type_); }

 private:
  static std::int64_t checked_width(const type_ptr& type) {
    detail::require_type(type, "decimal_builder");
    if (type->id != type_id::decimal128 && type->id != type_id::decimal256)
      throw invalid_input_error("decimal_builder cannot build " + to_string(*type));
    return type->id == type_id::decimal128 ? 16 : 32;
  }
  type_ptr type_;
  std::int64_t width_;
  detail::fixed_width_slots slots_;
};

// The builder for a C++ value type: arrow::builder<int32_t>, builder<bool>,
// builder<std::string> (utf8 unless given another binary-like type).
namespace detail {
template <class T>
struct builder_for {
  using type = primitive_builder<T>;
};
template <>
struct builder_for<bool> {
  using type = boolean_builder;
};
template <>
struct builder_for<std::string> {
  using type = binary_builder;
};
template <>
struct builder_for<std::string_view> {
  using type = binary_builder;
};
}  // namespace detail

template <class T>
using builder = typename detail::builder_for<T>::type;

// ---- one-call array makers ------------------------------------------------------

template <class T, class Values>
array_ptr make_array_from(const Values& values, type_ptr type = default_type_for<T>()) {
  builder<T> b(std::move(type));
  for (const auto& v : values) b.append(v);
  return b.finish();
}

template <class T>
array_ptr make_array(std::initializer_list<std::optional<T>> values, type_ptr type = default_type_for<T>()) {
  return make_array_from<T>(values, std::move(type));
}
template <class T>
array_ptr make_array(const std::vector<std::optional<T>>& values, type_ptr type = default_type_for<T>()) {
  return make_array_from<T>(values, std::move(type));
}
template <class T>
array_ptr make_array(const std::vector<T>& values, type_ptr type = default_type_for<T>()) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    primitive_builder<T> b(std::move(type));
    b.append_values(std::span<const T>(values.data(), values.size()));
    return b.finish();
  } else {
    return make_array_from<T>(values, std::move(type));
  }
}

inline array_ptr null_array(std::int64_t length) {
  if (length < 0) throw invalid_input_error("null_array: negative length " + std::to_string(length));
  return null_builder().append_nulls(length).finish();
}

inline array_ptr bool_array(std::initializer_list<std::optional<bool>> values) {
  return make_array_from<bool>(values);
}
inline array_ptr bool_array(const std::vector<std::optional<bool>>& values) { return make_array_from<bool>(values); }

inline array_ptr float16_array(std::initializer_list<std::optional<float>> values) {
  float16_builder b;
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr float16_array(const std::vector<std::optional<float>>& values) {
  float16_builder b;
  for (const auto& v : values) b.append(v);
  return b.finish();
}

#define LANCET_ARROW_BINARY_MAKER(fn, type_fn)                                                     \
  inline array_ptr fn(std::initializer_list<std::optional<std::string_view>> values) {             \
    return make_array_from<std::string_view>(values, type_fn());                                   \
  }                                                                                                \
  inline array_ptr fn(const std::vector<std::optional<std::string>>& values) {                     \
    return make_array_from<std::string>(values, type_fn());                                        \
  }                                                                                                \
  inline array_ptr fn(const std::vector<std::string>& values) {                                    \
    return make_array_from<std::string>(values, type_fn());                                        \
  }
LANCET_ARROW_BINARY_MAKER(string_array, utf8)
LANCET_ARROW_BINARY_MAKER(large_string_array, large_utf8)
LANCET_ARROW_BINARY_MAKER(binary_array, binary)
LANCET_ARROW_BINARY_MAKER(large_binary_array, large_binary)
#undef LANCET_ARROW_BINARY_MAKER

inline array_ptr fixed_size_binary_array(std::int32_t width,
                                         std::initializer_list<std::optional<std::string_view>> values) {
  fixed_size_binary_builder b(width);
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr fixed_size_binary_array(std::int32_t width, const std::vector<std::optional<std::string>>& values) {
  fixed_size_binary_builder b(width);
  for (const auto& v : values) b.append(v);
  return b.finish();
}

inline array_ptr decimal128_array(std::int32_t precision, std::int32_t scale,
                                  std::initializer_list<std::optional<int128_t>> values) {
  decimal_builder b(decimal128(precision, scale));
  for (const auto& v : values) b.append(v);
  return b.finish();
}
inline array_ptr decimal256_array(std::int32_t precision, std::int32_t scale,
                                  std::initializer_list<std::optional<int128_t>> values) {
  decimal_builder b(decimal256(precision, scale));
  for (const auto& v : values) b.append(v);
  return b.finish();
}

// ---- nested arrays from children --------------------------------------------------

namespace detail {

template <class Offset>
array_ptr make_list_impl(type_id id, field item, array_ptr child, const std::vector<Offset>& offsets,
                         const validity_list& validity) {
  const char* kind = id == type_id::list ? "make_list" : "make_large_list";
  if (!child) throw invalid_input_error(std::string(kind) + ": the child array is null");
  if (!item.type) item.type = child->type;
  if (!equals(*item.type, *child->type))
    throw invalid_input_error(std::string(kind) + ": item field '" + item.name + "' has type " +
                              to_string(*item.type) + " but the child array is " + to_string(*child->type));
  if (offsets.empty())
    throw invalid_input_error(std::string(kind) + ": offsets need length + 1 entries (at least one)");
  if (offsets[0] < 0) throw invalid_input_error(std::string(kind) + ": offset 0 is negative");
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1])
      throw invalid_input_error(std::string(kind) + ": offsets decrease at index " + std::to_string(i) + " (" +
                                std::to_string(offsets[i - 1]) + " then " + std::to_string(offsets[i]) + ")");
  if (std::int64_t(offsets.back()) > child->length)
    throw invalid_input_error(std::string(kind) + ": last offset " + std::to_string(offsets.back()) +
                              " is past the child's length " + std::to_string(child->length));
  const auto length = std::int64_t(offsets.size()) - 1;
  std::int64_t nulls = 0;
  auto bitmap = pack_validity(validity, length, nulls, kind);
  aligned_buffer ob;
  ob.append(offsets.data(), offsets.size() * sizeof(Offset));
  auto t = std::make_shared<data_type>();
  t->id = id;
  t->children.push_back(std::move(item));
  return new_array(std::move(t), length, nulls, {std::move(bitmap), shared_bytes(std::move(ob))},
                   {std::move(child)});
}

}  // namespace detail

// list<item>: `offsets` has length + 1 entries into `child`.
inline array_ptr make_list(field item, array_ptr child, const std::vector<std::int32_t>& offsets,
                           const validity_list& validity = {}) {
  return detail::make_list_impl(type_id::list, std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_list(array_ptr child, const std::vector<std::int32_t>& offsets,
                           const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_list(std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_large_list(field item, array_ptr child, const std::vector<std::int64_t>& offsets,
                                 const validity_list& validity = {}) {
  return detail::make_list_impl(type_id::large_list, std::move(item), std::move(child), offsets, validity);
}
inline array_ptr make_large_list(array_ptr child, const std::vector<std::int64_t>& offsets,
                                 const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_large_list(std::move(item), std::move(child), offsets, validity);
}

// map<key, value>: `offsets` (length + 1 entries) into `keys` and `values` (entry
// arrays of equal length; keys must not be null).
inline array_ptr make_map(array_ptr keys, array_ptr values, const std::vector<std::int32_t>& offsets,
                          const validity_list& validity = {}, bool value_nullable = true) {
  if (!keys || !values) throw invalid_input_error("make_map: the key or value array is null");
  if (keys->length != values->length)
    throw invalid_input_error("make_map: " + std::to_string(keys->length) + " keys but " +
                              std::to_string(values->length) + " values");
  if (keys->count_nulls() > 0) throw invalid_input_error("make_map: map keys cannot be null");
  auto t = map(keys->type, values->type, value_nullable);
  const auto& entries_field = t->children[0];
  auto entries = detail::new_array(entries_field.type, keys->length, 0, {shared_bytes()}, {keys, values});
  auto list = detail::make_list_impl(type_id::list, entries_field, std::move(entries), offsets, validity);
  auto out = std::make_shared<array_data>(*list);
  out->type = std::move(t);
  return out;
}

// dictionary<index, value>: integer `indices` (nulls are null slots) into `dictionary`.
inline array_ptr make_dictionary(array_ptr indices, array_ptr dictionary_values) {
  if (!indices || !dictionary_values) throw invalid_input_error("make_dictionary: an array is null");
  auto out = std::make_shared<array_data>(*indices);
  out->type = dictionary(indices->type, dictionary_values->type);
  out->children = {std::move(dictionary_values)};
  return out;
}

// fixed_size_list<item>[size]: the child holds length * size values.
inline array_ptr make_fixed_size_list(field item, array_ptr child, std::int32_t size,
                                      const validity_list& validity = {}) {
  if (!child) throw invalid_input_error("make_fixed_size_list: the child array is null");
  if (size < 0) throw invalid_input_error("make_fixed_size_list: negative list size " + std::to_string(size));
  if (!item.type) item.type = child->type;
  if (!equals(*item.type, *child->type))
    throw invalid_input_error("make_fixed_size_list: item field '" + item.name + "' has type " +
                              to_string(*item.type) + " but the child array is " + to_string(*child->type));
  std::int64_t length = 0;
  if (size == 0) {
    length = std::int64_t(validity.size());
  } else {
    if (child->length % size != 0)
      throw invalid_input_error("make_fixed_size_list: child length " + std::to_string(child->length) +
                                " is not a multiple of the list size " + std::to_string(size));
    length = child->length / size;
  }
  std::int64_t nulls = 0;
  auto bitmap = detail::pack_validity(validity, length, nulls, "make_fixed_size_list");
  return detail::new_array(fixed_size_list(std::move(item), size), length, nulls, {std::move(bitmap)},
                           {std::move(child)});
}
inline array_ptr make_fixed_size_list(array_ptr child, std::int32_t size, const validity_list& validity = {}) {
  field item{"item", child ? child->type : nullptr, true, {}};
  return make_fixed_size_list(std::move(item), std::move(child), size, validity);
}

// struct<fields...>: one child per field, all of the struct's length. With no
// fields, the length is the validity list's size.
inline array_ptr make_struct(std::vector<field> fields, std::vector<array_ptr> children,
                             const validity_list& validity = {}) {
  if (fields.size() != children.size())
    throw invalid_input_error("make_struct: " + std::to_string(fields.size()) + " fields but " +
                              std::to_string(children.size()) + " children");
  std::int64_t length = children.empty() ? std::int64_t(validity.size()) : -1;
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto& f = fields[i];
    if (!children[i]) throw invalid_input_error("make_struct: child '" + f.name + "' is null");
    if (!f.type) f.type = children[i]->type;
    if (!equals(*f.type, *children[i]->type))
      throw invalid_input_error("make_struct: field '" + f.name + "' has type " + to_string(*f.type) +
                                " but its child array is " + to_string(*children[i]->type));
    if (length < 0) length = children[i]->length;
    if (children[i]->length != length)
      throw invalid_input_error("make_struct: child '" + f.name + "' has length " +
                                std::to_string(children[i]->length) + ", expected " + std::to_string(length));
  }
  std::int64_t nulls = 0;
  auto bitmap = detail::pack_validity(validity, length, nulls, "make_struct");
  return detail::new_array(struct_(std::move(fields)), length, nulls, {std::move(bitmap)}, std::move(children));
}

// struct from named children (fields nullable, types from the children).
inline array_ptr struct_array(const std::vector<std::pair<std::string, array_ptr>>& members,
                              const validity_list& validity = {}) {
  std::vector<field> fields;
  std::vector<array_ptr> children;
  for (const auto& [name, child] : members) {
    fields.push_back(field{name, child ? child->type : nullptr, true, {}});
    children.push_back(child);
  }
  return make_struct(std::move(fields), std::move(children), validity);
}

// list<T> from nested values: list_array<int32_t>({{1, 2}, {}, {3, std::nullopt}}, {true, false, true}).
template <class T>
array_ptr list_array(const std::vector<std::vector<std::optional<T>>>& lists, const validity_list& validity = {},
                     type_ptr item_type = default_type_for<T>()) {
  builder<T> b(std::move(item_type));
  std::vector<std::int32_t> offsets{0};
  for (const auto& l : lists) {
    for (const auto& v : l) b.append(v);
    if (b.length() > std::numeric_limits<std::int32_t>::max())
      throw invalid_input_error("list_array: more than 2^31 - 1 items; use make_large_list");
    offsets.push_back(std::int32_t(b.length()));
  }
  return make_list(b.finish(), offsets, validity);
}

// ---- record batches ------------------------------------------------------------------

// A batch from named columns (fields nullable, types from the arrays).
inline record_batch make_batch(const std::vector<std::pair<std::string, array_ptr>>& columns,
                               arrow::metadata schema_metadata = {}) {
  auto s = std::make_shared<schema>();
  record_batch rb;
  for (const auto& [name, col] : columns) {
    if (!col) throw invalid_input_error("make_batch: column '" + name + "' is null");
    if (!rb.columns.empty() && col->length != rb.columns[0]->length)
      throw invalid_input_error("make_batch: column '" + name + "' has " + std::to_string(col->length) +
                                " rows, expected " + std::to_string(rb.columns[0]->length));
    s->fields.push_back(field{name, col->type, true, {}});
    rb.columns.push_back(col);
  }
  s->metadata = std::move(schema_metadata);
  rb.schema = std::move(s);
  return rb;
}

// A batch against a given schema: column count, types and lengths are checked.
inline record_batch make_batch(std::shared_ptr<const schema> s, std::vector<array_ptr> columns) {
  if (!s) throw invalid_input_error("make_batch: the schema is null");
  if (s->fields.size() != columns.size())
    throw invalid_input_error("make_batch: the schema has " + std::to_string(s->fields.size()) + " fields but " +
                              std::to_string(columns.size()) + " columns were given");
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& f = s->fields[i];
    if (!columns[i]) throw invalid_input_error("make_batch: column '" + f.name + "' is null");
    if (!f.type || !equals(*f.type, *columns[i]->type))
      throw invalid_input_error("make_batch: column '" + f.name + "' is " + to_string(*columns[i]->type) +
                                ", the schema says " + (f.type ? to_string(*f.type) : std::string("nothing")));
    if (columns[i]->length != columns[0]->length)
      throw invalid_input_error("make_batch: column '" + f.name + "' has " + std::to_string(columns[i]->length) +
                                " rows, expected " + std::to_string(columns[0]->length));
  }
  record_batch rb;
  rb.schema = std::move(s);
  rb.columns = std::move(columns);
  return rb;
}

}  // namespace lancet::arrow
