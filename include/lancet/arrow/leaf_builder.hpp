// Incremental builders, one per leaf (non-nested) Arrow type: append values and nulls
// one at a time (or in runs), then finish() into an array.
//
//   arrow::builder<double> b;          // one builder per value type, all alike:
//   b.append(1.5).append_null();       // append / append_null / append_nulls / finish
//   auto d = b.finish();
//
// Builders write no validity buffer when nothing is null; values under null slots are
// zero. arrow/builder.hpp makes whole arrays (nested ones too) with these.
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

// What every builder over fixed_width_slots shares: nulls, length and finish, each
// returning the Derived builder for chaining.
template <class Derived>
class fixed_width_builder {
 public:
  Derived& append_null() { return append_nulls(1); }
  Derived& append_nulls(std::int64_t n) {
    slots_.append_nulls(n);
    return static_cast<Derived&>(*this);
  }
  std::int64_t length() const noexcept { return slots_.length(); }
  array_ptr finish() { return slots_.finish(type_); }

 protected:
  fixed_width_builder(type_ptr type, std::size_t width) : type_(std::move(type)), slots_(width) {}
  type_ptr type_;
  fixed_width_slots slots_;
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
class primitive_builder : public detail::fixed_width_builder<primitive_builder<T>> {
  using base = detail::fixed_width_builder<primitive_builder<T>>;
  using base::slots_;
  using base::type_;
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "use boolean_builder for bool");

 public:
  using value_type = T;
  using base::append_null;
  using base::append_nulls;
  using base::finish;
  using base::length;
  explicit primitive_builder(type_ptr type = default_type_for<T>()) : base(std::move(type), sizeof(T)) {
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
  primitive_builder& append_values(std::span<const T> vs) {
    slots_.append_values(vs.data(), std::int64_t(vs.size()));
    return *this;
  }
  void reserve(std::int64_t n) { slots_.reserve(n); }
  const type_ptr& type() const noexcept { return type_; }
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

class fixed_size_binary_builder : public detail::fixed_width_builder<fixed_size_binary_builder> {
 public:
  using value_type = std::string_view;
  explicit fixed_size_binary_builder(std::int32_t width) : fixed_size_binary_builder(fixed_size_binary(width)) {}
  explicit fixed_size_binary_builder(const type_ptr& type) : fixed_width_builder(type, checked_width(type)) {}
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
 private:
  static std::size_t checked_width(const type_ptr& type) {
    detail::require_type(type, "fixed_size_binary_builder");
    if (type->id != type_id::fixed_size_binary || type->byte_width < 0)
      throw invalid_input_error("fixed_size_binary_builder cannot build " + to_string(*type));
    return std::size_t(type->byte_width);
  }
};

// decimal128 / decimal256 from unscaled integers (sign-extended) or raw
// little-endian two's complement bytes (16 or 32 of them).
class decimal_builder : public detail::fixed_width_builder<decimal_builder> {
 public:
  using value_type = int128_t;
  explicit decimal_builder(const type_ptr& type)
      : fixed_width_builder(type, std::size_t(checked_width(type))), width_(checked_width(type)) {}
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
 private:
  static std::int64_t checked_width(const type_ptr& type) {
    detail::require_type(type, "decimal_builder");
    if (type->id != type_id::decimal128 && type->id != type_id::decimal256)
      throw invalid_input_error("decimal_builder cannot build " + to_string(*type));
    return type->id == type_id::decimal128 ? 16 : 32;
  }
  std::int64_t width_;
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

}  // namespace lancet::arrow
