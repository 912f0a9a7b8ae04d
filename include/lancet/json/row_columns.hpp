// JSON values -> Arrow columns: one column type per Arrow type, each converting a parsed
// JSON value (or refusing it with the path of the value) and appending it once the row
// commits. The per-value half of the JSON Lines reader (json/rows_reader.hpp, whose
// opening comment lists what each type takes), with its read_options.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/decimal.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/error.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/json/numbers.hpp"
#include "lancet/json/parse.hpp"
#include "lancet/json/value.hpp"
#include "lancet/json/value_path.hpp"

namespace lancet::json {

struct read_options {
  // Rows per batch returned by rows_reader::next() (a batch also ends early when one
  // more row would overflow the 32-bit offsets of a utf8/binary/list column).
  std::int64_t batch_size = 65536;
  // Members that name no field of the schema (or of a struct): an error by default,
  // so that a misspelt key does not silently become a null; skipped when true.
  bool ignore_unknown_fields = false;
  // Bounds the value bytes of each utf8/binary column in one batch (0: no bound
  // beyond the 2^31 - 1 bytes that 32-bit offsets allow): a batch ends early
  // rather than grow past it, which keeps memory in check for large values.
  std::int64_t max_batch_bytes = 0;
};

namespace detail {

// Internal: a value that the schema refuses (turned into invalid_input_error with
// the line number by row_builder).
struct value_error {
  std::string path;
  std::string message;
};
// Internal: the row does not fit the batch (32-bit offsets, max_batch_bytes);
// `why` says what a row alone exceeds, for when the batch is empty.
struct batch_full {
  std::string path;
  std::string why;
};

[[noreturn]] inline void refuse(const value_path& at, std::string message) {
  throw value_error{at.render(), std::move(message)};
}

// One builder per schema node. Each row is offered twice: first with commit =
// false (everything is checked, nothing appended), then with commit = true.
class column {
 public:
  explicit column(arrow::field f) : field_(std::move(f)) {}
  virtual ~column() = default;
  column(const column&) = delete;
  column& operator=(const column&) = delete;

  // A value, null, or absent (v == nullptr).
  void put(const value* v, const value_path& at, bool commit) {
    if (v == nullptr || v->is_null()) {
      if (!field_.nullable && field_.type->id != arrow::type_id::null)
        refuse(at, v ? "null for a non-nullable field" : "missing value for a non-nullable field");
      if (commit) append_null();
      return;
    }
    put_value(*v, at, commit);
  }
  // The slot under a null struct or fixed-size list: null where the field allows it,
  // otherwise a valid default (zero, empty) so that no non-nullable child holds a null.
  void put_filler() {
    if (field_.nullable || field_.type->id == arrow::type_id::null) append_null();
    else append_default();
  }
  virtual void put_value(const value& v, const value_path& at, bool commit) = 0;
  virtual void append_null() = 0;
  virtual void append_default() = 0;
  virtual arrow::array_ptr finish() = 0;
  // Forgets what the check pass counted towards the 32-bit offset limits.
  virtual void reset_pending() {}

 protected:
  const arrow::field field_;  // a copy: it keeps the type (and struct members) alive
};

using column_ptr = std::unique_ptr<column>;
column_ptr make_column(const arrow::field& f, const read_options& o);

// A column of one Arrow builder: nulls and finish go straight to it.
template <class Builder>
class leaf_column : public column {
 public:
  explicit leaf_column(const arrow::field& f) : column(f), b_(f.type) {}
  void append_null() override { b_.append_null(); }
  arrow::array_ptr finish() override { return b_.finish(); }

 protected:
  Builder b_;
};

// A column of fixed-width numbers: Derived::convert turns one JSON value into a T
// (or refuses it); the default is T{}.
template <class T, class Derived>
class number_column : public leaf_column<arrow::primitive_builder<T>> {
 public:
  using leaf_column<arrow::primitive_builder<T>>::leaf_column;
  void put_value(const value& v, const value_path& at, bool commit) override {
    const T x = static_cast<const Derived&>(*this).convert(v, at);
    if (commit) this->b_.append(x);
  }
  void append_default() override { this->b_.append(T{}); }
};

class null_column final : public leaf_column<arrow::null_builder> {
 public:
  using leaf_column::leaf_column;
  void put_value(const value& v, const value_path& at, bool) override { refuse(at, "expected null, got " + describe(v)); }
  void append_default() override { b_.append_null(); }
};

class bool_column final : public leaf_column<arrow::boolean_builder> {
 public:
  using leaf_column::leaf_column;
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::boolean) refuse(at, "expected true or false, got " + describe(v));
    if (commit) b_.append(v.b);
  }
  void append_default() override { b_.append(false); }
};

// Integer-backed types: ints, dates, times, timestamps, durations.
template <class T>
class int_column final : public number_column<T, int_column<T>> {
  friend number_column<T, int_column<T>>;
  using column::field_;

 public:
  using number_column<T, int_column<T>>::number_column;

 private:
  T convert(const value& v, const value_path& at) const {
    arrow::int128_t x = 0;
    switch (v.k) {
      case value::kind::integer: x = v.i; break;
      case value::kind::unsigned_: x = v.u; break;
      case value::kind::number:
      case value::kind::string: {
        const bool text_ok = v.k == value::kind::number || (sizeof(T) == 8 && is_integer_text(v.text));
        if (!text_ok) refuse(at, "expected an integer, got " + describe(v));
        auto d = parse_decimal_literal(v.text);
        auto digits = d ? scaled_integer_digits(*d, 0, 20) : std::nullopt;
        if (!digits) refuse(at, "expected an integer, got " + describe(v));
        arrow::int128_t mag = 0;
        for (char c : *digits) mag = mag * 10 + (c - '0');
        x = d->negative ? -mag : mag;
        break;
      }
      default: refuse(at, "expected an integer, got " + describe(v));
    }
    if (x < arrow::int128_t(std::numeric_limits<T>::min()) || x > arrow::int128_t(std::numeric_limits<T>::max()))
      refuse(at, describe(v) + " is out of range for " + arrow::to_string(*field_.type));
    return T(x);
  }
  static bool is_integer_text(std::string_view s) noexcept {
    if (!s.empty() && s[0] == '-') s.remove_prefix(1);
    if (s.empty()) return false;
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  }
};

// float32 / float64 (F = float / double) and float16 (F = std::uint16_t bits).
template <class F>
class float_column final : public number_column<F, float_column<F>> {
  friend number_column<F, float_column<F>>;
  using column::field_;
  static constexpr bool half = std::is_same_v<F, std::uint16_t>;
  using parse_t = std::conditional_t<half, double, F>;

 public:
  using number_column<F, float_column<F>>::number_column;

 private:
  F convert(const value& v, const value_path& at) const {
    parse_t x{};
    switch (v.k) {
      case value::kind::integer: x = static_cast<parse_t>(v.i); break;
      case value::kind::unsigned_: x = static_cast<parse_t>(v.u); break;
      case value::kind::number: {
        auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), x);
        if (r.ec == std::errc::result_out_of_range) {
          // Too small rounds to zero; too large is refused below.
          auto d = parse_decimal_literal(v.text);
          if (d && d->exponent + std::int64_t(d->digits.size()) <= 0) x = d->negative ? -parse_t(0) : parse_t(0);
          else refuse(at, describe(v) + " is out of range for " + arrow::to_string(*field_.type));
        } else if (r.ec != std::errc() || r.ptr != v.text.data() + v.text.size()) {
          refuse(at, "expected a number, got " + describe(v));
        }
        break;
      }
      case value::kind::string:
        if (v.text == "NaN") x = std::numeric_limits<parse_t>::quiet_NaN();
        else if (v.text == "Infinity") x = std::numeric_limits<parse_t>::infinity();
        else if (v.text == "-Infinity") x = -std::numeric_limits<parse_t>::infinity();
        else refuse(at, "expected a number, got " + describe(v) + " (the only strings taken are \"NaN\", \"Infinity\" and \"-Infinity\")");
        break;
      default: refuse(at, "expected a number, got " + describe(v));
    }
    if constexpr (half) {
      const std::uint16_t h = double_to_half(x);
      if (std::isfinite(x) && (h & 0x7C00u) == 0x7C00u)
        refuse(at, describe(v) + " is out of range for float16");
      return h;
    } else {
      return x;
    }
  }
};

class decimal_column final : public leaf_column<arrow::decimal_builder> {
 public:
  explicit decimal_column(const arrow::field& f)
      : leaf_column(f), width_(f.type->id == arrow::type_id::decimal128 ? 16 : 32) {}
  void put_value(const value& v, const value_path& at, bool commit) override {
    std::uint8_t bytes[32];
    convert(v, at, bytes);
    if (commit) b_.append_bytes(bytes_view(bytes, std::size_t(width_)));
  }
  void append_default() override { b_.append(arrow::int128_t(0)); }

 private:
  void convert(const value& v, const value_path& at, std::uint8_t* out) const {
    const auto& t = *field_.type;
    std::string text;
    switch (v.k) {
      case value::kind::integer: text = std::to_string(v.i); break;
      case value::kind::unsigned_: text = std::to_string(v.u); break;
      case value::kind::number:
      case value::kind::string: text = v.text; break;
      default: refuse(at, "expected a decimal string or number, got " + describe(v));
    }
    auto d = parse_decimal_literal(text);
    if (!d) refuse(at, "expected a decimal string or number, got " + describe(v));
    auto digits = scaled_integer_digits(*d, t.scale, std::size_t(t.precision));
    if (!digits) {
      if (t.scale >= 0)
        refuse(at, describe(v) + " has more than " + std::to_string(t.scale) + " fractional digits (" +
                       arrow::to_string(t) + ")");
      refuse(at, describe(v) + " is not a multiple of 1" + std::string(std::size_t(-t.scale), '0') + " (" +
                     arrow::to_string(t) + ")");
    }
    if (digits->size() > std::size_t(t.precision))
      refuse(at, describe(v) + " does not fit " + arrow::to_string(t) + " (more than " +
                     std::to_string(t.precision) + " digits)");
    u256 x = u256_from_digits(*digits);
    if (d->negative) x.negate();
    x.to_bytes(out, width_);
  }

  int width_;
};

// utf8 / large_utf8 (strings) and binary / large_binary (base64 strings).
class binary_column final : public leaf_column<arrow::binary_builder> {
 public:
  binary_column(const arrow::field& f, const read_options& o)
      : leaf_column(f), text_(f.type->id == arrow::type_id::utf8 || f.type->id == arrow::type_id::large_utf8) {
    const bool large = arrow::is_large_binary_like(f.type->id);
    limit_ = large ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int32_t>::max();
    const auto type = arrow::to_string(*f.type);
    why_ = "more than 2^31 - 1 bytes of " + type + " values, too many for 32-bit offsets; use large_" +
           (text_ ? "utf8" : "binary");
    if (o.max_batch_bytes > 0 && o.max_batch_bytes < limit_) {
      limit_ = o.max_batch_bytes;
      why_ = "more than max_batch_bytes (" + std::to_string(limit_) + ") bytes of " + type + " values";
    }
  }
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::string)
      refuse(at, std::string(text_ ? "expected a string" : "expected a base64 string") + ", got " + describe(v));
    std::string_view bytes = v.text;
    if (!text_) {
      scratch_.clear();
      if (auto err = base64_decode(v.text, scratch_)) refuse(at, "invalid base64: " + *err);
      bytes = scratch_;
    }
    if (!commit) {
      pending_ += std::int64_t(bytes.size());
      if (committed_ + pending_ > limit_) throw batch_full{at.render(), why_};
      return;
    }
    committed_ += std::int64_t(bytes.size());
    b_.append(bytes);
  }
  void append_default() override { b_.append(std::string_view()); }
  arrow::array_ptr finish() override {
    committed_ = pending_ = 0;
    return b_.finish();
  }
  void reset_pending() override { pending_ = 0; }

 private:
  bool text_;
  std::int64_t limit_;
  std::string why_;
  std::string scratch_;
  std::int64_t committed_ = 0, pending_ = 0;
};

class fixed_binary_column final : public leaf_column<arrow::fixed_size_binary_builder> {
 public:
  using leaf_column::leaf_column;
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::string) refuse(at, "expected a base64 string, got " + describe(v));
    scratch_.clear();
    if (auto err = base64_decode(v.text, scratch_)) refuse(at, "invalid base64: " + *err);
    if (std::int64_t(scratch_.size()) != field_.type->byte_width)
      refuse(at, "expected " + std::to_string(field_.type->byte_width) + " bytes, got " +
                     std::to_string(scratch_.size()));
    if (commit) b_.append(std::string_view(scratch_));
  }
  void append_default() override { b_.append(std::string(std::size_t(field_.type->byte_width), '\0')); }

 private:
  std::string scratch_;
};

template <class Offset>
class list_column final : public column {
 public:
  list_column(const arrow::field& f, const read_options& o)
      : column(f), child_(make_column(f.type->children[0], o)) {
    offsets_.push_back(0);
  }
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::array) refuse(at, "expected an array, got " + describe(v));
    const auto n = std::int64_t(v.items.size());
    if (!commit) {
      pending_ += n;
      if (offsets_.back() + pending_ > std::int64_t(std::numeric_limits<Offset>::max()))
        throw batch_full{at.render(), "more than 2^31 - 1 items of " + arrow::to_string(*field_.type) +
                                          ", too many for 32-bit offsets; use large_list"};
    }
    for (std::int64_t k = 0; k < n; ++k) child_->put(&v.items[std::size_t(k)], value_path{&at, {}, k}, commit);
    if (commit) {
      offsets_.push_back(Offset(offsets_.back() + n));
      valid_.push_back(true);
    }
  }
  void append_null() override {
    offsets_.push_back(offsets_.back());
    valid_.push_back(false);
  }
  void append_default() override {
    offsets_.push_back(offsets_.back());
    valid_.push_back(true);
  }
  arrow::array_ptr finish() override {
    auto child = child_->finish();
    const auto& item = field_.type->children[0];
    arrow::array_ptr out = std::is_same_v<Offset, std::int32_t>
                               ? arrow::make_list(item, std::move(child), as_vector<std::int32_t>(), valid_)
                               : arrow::make_large_list(item, std::move(child), as_vector<std::int64_t>(), valid_);
    if (field_.type->id == arrow::type_id::map) {  // same layout as the list of its entries
      auto m = std::make_shared<arrow::array_data>(*out);
      m->type = field_.type;
      out = std::move(m);
    }
    offsets_.assign(1, 0);
    valid_.clear();
    pending_ = 0;
    return out;
  }
  void reset_pending() override {
    pending_ = 0;
    child_->reset_pending();
  }

 private:
  template <class O>
  std::vector<O> as_vector() const {
    if constexpr (std::is_same_v<O, Offset>) return offsets_;
    else return std::vector<O>(offsets_.begin(), offsets_.end());
  }

  column_ptr child_;
  std::vector<Offset> offsets_;
  arrow::validity_list valid_;
  std::int64_t pending_ = 0;
};

class fixed_list_column final : public column {
 public:
  fixed_list_column(const arrow::field& f, const read_options& o)
      : column(f), child_(make_column(f.type->children[0], o)), size_(f.type->list_size) {}
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::array) refuse(at, "expected an array, got " + describe(v));
    if (std::int64_t(v.items.size()) != size_)
      refuse(at, "expected an array of " + std::to_string(size_) + " items, got " + std::to_string(v.items.size()));
    for (std::int64_t k = 0; k < size_; ++k) child_->put(&v.items[std::size_t(k)], value_path{&at, {}, k}, commit);
    if (commit) valid_.push_back(true);
  }
  void append_null() override {
    for (std::int64_t k = 0; k < size_; ++k) child_->put_filler();
    valid_.push_back(false);
  }
  void append_default() override {
    for (std::int64_t k = 0; k < size_; ++k) child_->put_filler();
    valid_.push_back(true);
  }
  arrow::array_ptr finish() override {
    auto out = arrow::make_fixed_size_list(field_.type->children[0], child_->finish(), std::int32_t(size_), valid_);
    valid_.clear();
    return out;
  }
  void reset_pending() override { child_->reset_pending(); }

 private:
  column_ptr child_;
  std::int64_t size_;
  arrow::validity_list valid_;
};

// Structs, and the top level of a row (`top` = true: never null, not in the path).
class struct_column final : public column {
 public:
  struct_column(const arrow::field& f, const read_options& o)
      : column(f), members_(field_.type->children), ignore_unknown_(o.ignore_unknown_fields),
        seen_(members_.size()) {
    for (std::size_t i = 0; i < members_.size(); ++i) {
      children_.push_back(make_column(members_[i], o));
      if (!index_.emplace(members_[i].name, i).second)
        throw invalid_input_error("JSON rows: two fields named '" + members_[i].name + "'" +
                                  (field_.name.empty() ? std::string() : " in struct '" + field_.name + "'"));
    }
  }
  void put_value(const value& v, const value_path& at, bool commit) override {
    if (v.k != value::kind::object) refuse(at, "expected an object, got " + describe(v));
    std::fill(seen_.begin(), seen_.end(), false);
    for (const auto& [key, m] : v.members) {
      auto it = index_.find(key);
      if (it == index_.end()) {
        if (ignore_unknown_) continue;
        refuse(value_path{&at, key, -1}, "no such field in the schema");
      }
      if (seen_[it->second]) refuse(value_path{&at, key, -1}, "given twice");
      seen_[it->second] = true;
      children_[it->second]->put(&m, value_path{&at, members_[it->second].name, -1}, commit);
    }
    for (std::size_t i = 0; i < children_.size(); ++i)
      if (!seen_[i]) children_[i]->put(nullptr, value_path{&at, members_[i].name, -1}, commit);
    if (commit) valid_.push_back(true);
  }
  void append_null() override {
    for (auto& c : children_) c->put_filler();
    valid_.push_back(false);
  }
  void append_default() override {
    for (auto& c : children_) c->put_filler();
    valid_.push_back(true);
  }
  arrow::array_ptr finish() override {
    std::vector<arrow::array_ptr> arrays;
    for (auto& c : children_) arrays.push_back(c->finish());
    auto out = arrow::make_struct(members_, std::move(arrays), valid_);
    valid_.clear();
    return out;
  }
  // The top level: one array per member instead of a struct.
  std::vector<arrow::array_ptr> finish_members() {
    std::vector<arrow::array_ptr> arrays;
    for (auto& c : children_) arrays.push_back(c->finish());
    valid_.clear();
    return arrays;
  }
  void reset_pending() override {
    for (auto& c : children_) c->reset_pending();
  }

 private:
  const std::vector<arrow::field>& members_;
  bool ignore_unknown_;
  std::vector<column_ptr> children_;
  std::unordered_map<std::string_view, std::size_t> index_;
  std::vector<bool> seen_;
  arrow::validity_list valid_;
};

// A dictionary column reads its values as the value type and encodes them at finish.
class dictionary_column final : public column {
 public:
  dictionary_column(const arrow::field& f, const read_options& o)
      : column(f),
        values_(make_column(arrow::field{f.name, f.type->children[0].type, f.nullable, {}}, o)) {}
  void put_value(const value& v, const value_path& at, bool commit) override { values_->put(&v, at, commit); }
  void append_null() override { values_->append_null(); }
  void append_default() override { values_->append_default(); }
  arrow::array_ptr finish() override { return arrow::dictionary_encode(values_->finish(), field_.type); }
  void reset_pending() override { values_->reset_pending(); }

 private:
  column_ptr values_;
};

inline column_ptr make_column(const arrow::field& f, const read_options& o) {
  using arrow::type_id;
  switch (f.type->id) {
    case type_id::null: return std::make_unique<null_column>(f);
    case type_id::boolean: return std::make_unique<bool_column>(f);
    case type_id::int8: return std::make_unique<int_column<std::int8_t>>(f);
    case type_id::int16: return std::make_unique<int_column<std::int16_t>>(f);
    case type_id::int32: case type_id::date32: case type_id::time32:
      return std::make_unique<int_column<std::int32_t>>(f);
    case type_id::int64: case type_id::date64: case type_id::time64: case type_id::timestamp:
    case type_id::duration:
      return std::make_unique<int_column<std::int64_t>>(f);
    case type_id::uint8: return std::make_unique<int_column<std::uint8_t>>(f);
    case type_id::uint16: return std::make_unique<int_column<std::uint16_t>>(f);
    case type_id::uint32: return std::make_unique<int_column<std::uint32_t>>(f);
    case type_id::uint64: return std::make_unique<int_column<std::uint64_t>>(f);
    case type_id::float16: return std::make_unique<float_column<std::uint16_t>>(f);
    case type_id::float32: return std::make_unique<float_column<float>>(f);
    case type_id::float64: return std::make_unique<float_column<double>>(f);
    case type_id::decimal128: case type_id::decimal256: return std::make_unique<decimal_column>(f);
    case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary:
      return std::make_unique<binary_column>(f, o);
    case type_id::fixed_size_binary: return std::make_unique<fixed_binary_column>(f);
    case type_id::list: case type_id::map: return std::make_unique<list_column<std::int32_t>>(f, o);
    case type_id::dictionary: return std::make_unique<dictionary_column>(f, o);
    case type_id::large_list: return std::make_unique<list_column<std::int64_t>>(f, o);
    case type_id::fixed_size_list: return std::make_unique<fixed_list_column>(f, o);
    case type_id::struct_: return std::make_unique<struct_column>(f, o);
  }
  throw unsupported_error("JSON rows: no reader for " + arrow::to_string(*f.type));
}

}  // namespace detail

}  // namespace lancet::json
