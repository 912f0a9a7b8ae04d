// Seeded random Arrow types and arrays for round-trip tests: every type lancet stores,
// nulls at every level (rows, items, struct members), empty lists, slices.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <lancet/arrow/array.hpp>
#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/type.hpp>

namespace lancet::testing {

using namespace lancet::arrow;

struct random_options {
  double null_probability = 0.2;
  int max_depth = 3;
  bool allow_struct_nulls = true;   // 2.0 cannot store null structs
  bool allow_large_types = true;
};

// All leaf types (fixed width, variable width, null).
inline std::vector<type_ptr> leaf_types() {
  return {null_type(), boolean(), int8(), int16(), int32(), int64(), uint8(), uint16(), uint32(), uint64(),
          float16(), float32(), float64(), date32(), date64(), time32(time_unit::second),
          time32(time_unit::milli), time64(time_unit::micro), time64(time_unit::nano),
          timestamp(time_unit::second), timestamp(time_unit::milli, "UTC"), timestamp(time_unit::micro),
          timestamp(time_unit::nano, "America/New_York"), duration(time_unit::second), duration(time_unit::nano),
          decimal128(20, 4), decimal256(50, 6), utf8(), large_utf8(), binary(), large_binary(),
          fixed_size_binary(5)};
}

class random_data {
 public:
  explicit random_data(std::uint64_t seed, random_options o = {}) : rng_(seed), o_(o) {}

  std::mt19937_64& rng() { return rng_; }

  type_ptr random_type(int depth = 0) {
    const auto leaves = leaf_types();
    std::uniform_int_distribution<int> kind(0, depth >= o_.max_depth ? 0 : 9);
    switch (kind(rng_)) {
      case 6: return list(random_type(depth + 1), coin(0.8));
      case 7: return o_.allow_large_types ? large_list(random_type(depth + 1), coin(0.8)) : list(random_type(depth + 1));
      case 8: {
        // Lance keeps only the item's type for fixed-size lists: fixed width or var width leaves.
        auto item = leaves[pick(leaves.size() - 1) + 1];
        return fixed_size_list(item, std::int32_t(1 + pick(4)), true);
      }
      case 9: {
        std::vector<field> members;
        const auto n = 1 + pick(3);
        for (std::size_t i = 0; i < n; ++i)
          members.push_back(field{"f" + std::to_string(i), random_type(depth + 1), true, {}});
        return struct_(std::move(members));
      }
      default: {
        auto t = leaves[pick(leaves.size())];
        if (!o_.allow_large_types && (t->id == type_id::large_utf8 || t->id == type_id::large_binary)) return utf8();
        return t;
      }
    }
  }

  // A random array of `type` with `length` rows.
  array_ptr random_array(const type_ptr& type, std::int64_t length, bool nullable = true) {
    std::vector<bool> valid(std::size_t(length), true);
    const bool may_null = nullable && (type->id != type_id::struct_ || o_.allow_struct_nulls);
    if (may_null)
      for (auto&& v : valid) v = !coin(o_.null_probability);
    validity_list vl;
    if (may_null)
      for (bool v : valid) vl.push_back(v);
    switch (type->id) {
      case type_id::null: return null_array(length);
      case type_id::list:
      case type_id::large_list: {
        std::vector<std::int64_t> offs{0};
        for (std::int64_t i = 0; i < length; ++i)
          offs.push_back(offs.back() + (valid[std::size_t(i)] && !coin(0.15) ? std::int64_t(pick(4)) : 0));
        auto child = random_array(type->children[0].type, offs.back(), type->children[0].nullable);
        if (type->id == type_id::large_list) return make_large_list(type->children[0], child, offs, vl);
        std::vector<std::int32_t> o32(offs.begin(), offs.end());
        return make_list(type->children[0], child, o32, vl);
      }
      case type_id::fixed_size_list: {
        auto child = random_array(type->children[0].type, length * type->list_size, type->children[0].nullable);
        return make_fixed_size_list(type->children[0], child, type->list_size, vl);
      }
      case type_id::struct_: {
        std::vector<array_ptr> children;
        for (const auto& c : type->children) children.push_back(random_array(c.type, length, c.nullable));
        return make_struct(type->children, children, vl);
      }
      default: return random_leaf(type, valid);
    }
  }

  // A random array sliced out of a larger one (exercises offsets).
  array_ptr random_sliced_array(const type_ptr& type, std::int64_t length, bool nullable = true) {
    const auto pre = std::int64_t(pick(5)), post = std::int64_t(pick(5));
    auto a = random_array(type, pre + length + post, nullable);
    return slice(a, pre, length);
  }

  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::size_t pick(std::size_t n) { return n ? std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_) : 0; }

 private:
  std::string random_string() {
    std::string s(pick(20), ' ');
    for (auto& c : s) c = char(pick(256));
    return s;
  }

  array_ptr random_leaf(const type_ptr& type, const std::vector<bool>& valid) {
    const auto n = valid.size();
    auto opt = [&](std::size_t i, auto v) -> std::optional<decltype(v)> {
      if (!valid[i]) return std::nullopt;
      return v;
    };
    switch (type->id) {
      case type_id::boolean: {
        std::vector<std::optional<bool>> v;
        for (std::size_t i = 0; i < n; ++i) v.push_back(opt(i, coin(0.5)));
        return bool_array(v);
      }
      case type_id::float16: {
        std::vector<std::optional<float>> v;
        for (std::size_t i = 0; i < n; ++i) v.push_back(opt(i, float(int(pick(2000)) - 1000) / 8.0f));
        return float16_array(v);
      }
      case type_id::utf8: case type_id::large_utf8: case type_id::binary: case type_id::large_binary: {
        std::vector<std::optional<std::string>> v;
        for (std::size_t i = 0; i < n; ++i) v.push_back(opt(i, random_string()));
        if (type->id == type_id::utf8) return string_array(v);
        if (type->id == type_id::large_utf8) return large_string_array(v);
        if (type->id == type_id::binary) return binary_array(v);
        return large_binary_array(v);
      }
      case type_id::fixed_size_binary: {
        std::vector<std::optional<std::string>> v;
        for (std::size_t i = 0; i < n; ++i) {
          std::string s(std::size_t(type->byte_width), ' ');
          for (auto& c : s) c = char(pick(256));
          v.push_back(opt(i, s));
        }
        return fixed_size_binary_array(type->byte_width, v);
      }
      case type_id::decimal128: case type_id::decimal256: {
        decimal_builder b(type);
        for (std::size_t i = 0; i < n; ++i) {
          if (valid[i]) b.append(int128_t(std::int64_t(rng_())) * 1000);
          else b.append_null();
        }
        return b.finish();
      }
      default: return random_fixed(type, valid);
    }
  }

  template <class T>
  array_ptr fill(const type_ptr& type, const std::vector<bool>& valid) {
    std::vector<std::optional<T>> v;
    for (std::size_t i = 0; i < valid.size(); ++i) {
      if (!valid[i]) { v.push_back(std::nullopt); continue; }
      if constexpr (std::is_floating_point_v<T>) v.push_back(T(std::int64_t(rng_() % 2000001) - 1000000) / T(64));
      else v.push_back(T(rng_()));
    }
    return make_array<T>(v, type);
  }

  array_ptr random_fixed(const type_ptr& type, const std::vector<bool>& valid) {
    switch (arrow::bit_width(*type)) {
      case 8: return type->id == type_id::int8 ? fill<std::int8_t>(type, valid) : fill<std::uint8_t>(type, valid);
      case 16: return type->id == type_id::int16 ? fill<std::int16_t>(type, valid) : fill<std::uint16_t>(type, valid);
      case 32:
        if (type->id == type_id::float32) return fill<float>(type, valid);
        return type->id == type_id::uint32 ? fill<std::uint32_t>(type, valid) : fill<std::int32_t>(type, valid);
      default:
        if (type->id == type_id::float64) return fill<double>(type, valid);
        return type->id == type_id::uint64 ? fill<std::uint64_t>(type, valid) : fill<std::int64_t>(type, valid);
    }
  }

  std::mt19937_64 rng_;
  random_options o_;
};

}  // namespace lancet::testing
