// The inserted-key filter of a merge insert into a table with an unenforced primary key
// (Update.inserted_rows_filter), as Lance 12 writes it: a split-block bloom filter
// (Parquet's: 32-byte blocks of eight u32 words, XXH64 of the key's bytes) sized for
// 8,192 keys at a false-positive rate of 0.00057 (Parquet's sizing rounds it up to 32 KiB),
// over the keys of the rows it inserted. Two concurrent merge inserts whose filters may
// share a key conflict (retryable): the second runs again and finds the first one's row.
//
// A key's bytes: a string or binary value's bytes; an int32 / int64 as 8 little-endian
// bytes of its int64 value, a uint32 / uint64 as those of its uint64; a key of several
// columns, each part followed by a zero byte. A key with a NULL part, or of another type,
// is left out (as Lance leaves it out).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/xxhash64.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset::detail {

inline constexpr std::uint64_t key_filter_items = 8192;
inline constexpr double key_filter_probability = 0.00057;
inline constexpr std::size_t key_filter_bytes = 32768;

// Appends a key part's bytes; false when the part is NULL or of a type keys leave out.
inline bool append_key_part(const arrow::array_data& a, std::int64_t row, std::string& out) {
  if (!a.is_valid(row)) return false;
  const auto le8 = [&](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) out.push_back(char((v >> (8 * b)) & 0xFF));
  };
  switch (a.type->id) {
    case arrow::type_id::utf8:
    case arrow::type_id::large_utf8:
    case arrow::type_id::binary:
    case arrow::type_id::large_binary: out += a.string_value(row); return true;
    case arrow::type_id::int32: le8(std::uint64_t(std::int64_t(a.value<std::int32_t>(row)))); return true;
    case arrow::type_id::int64: le8(std::uint64_t(a.value<std::int64_t>(row))); return true;
    case arrow::type_id::uint32: le8(a.value<std::uint32_t>(row)); return true;
    case arrow::type_id::uint64: le8(a.value<std::uint64_t>(row)); return true;
    default: return false;
  }
}

// The key of `row` over `columns` (nullopt: left out of the filter).
inline std::optional<std::string> filter_key(const std::vector<const arrow::array_data*>& columns, std::int64_t row) {
  std::string key;
  for (const auto* c : columns) {
    if (!append_key_part(*c, row, key)) return std::nullopt;
    if (columns.size() > 1) key.push_back('\0');
  }
  return key;
}

class key_existence_builder {
 public:
  explicit key_existence_builder(std::vector<std::int32_t> field_ids)
      : field_ids_(std::move(field_ids)), words_(key_filter_bytes / 4, 0) {}

  void insert(std::string_view key) {
    const auto h = xxhash64(key);
    const std::size_t blocks = words_.size() / 8;
    const auto block = std::size_t(((h >> 32) * blocks) >> 32);
    static constexpr std::array<std::uint32_t, 8> salt = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                                          0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};
    for (std::size_t i = 0; i < 8; ++i) words_[block * 8 + i] |= std::uint32_t(1) << ((std::uint32_t(h) * salt[i]) >> 27);
  }

  pb::transaction::key_existence_filter message() const {
    pb::transaction::bloom_filter b;
    b.bitmap.resize(words_.size() * 4);
    for (std::size_t i = 0; i < words_.size(); ++i)
      for (int k = 0; k < 4; ++k) b.bitmap[i * 4 + std::size_t(k)] = char((words_[i] >> (8 * k)) & 0xFF);
    b.num_bits = std::uint32_t(words_.size() * 32);
    b.number_of_items = key_filter_items;
    b.probability = key_filter_probability;
    return {field_ids_, std::move(b)};
  }

 private:
  std::vector<std::int32_t> field_ids_;
  std::vector<std::uint32_t> words_;
};

// Whether two inserted-key filters may hold a common key, as Lance decides it: exact
// sets (a filter without data is an empty one) by their hashes; a bloom filter against
// an exact set (hashes of another scheme) always; bloom filters of one size when some
// block has a bit in common in each of its eight words (each key sets one bit in each).
inline bool may_share_key(const pb::transaction::key_existence_filter& a, const pb::transaction::key_existence_filter& b) {
  using bloom = pb::transaction::bloom_filter;
  using exact = pb::transaction::exact_key_set_filter;
  if (a.field_ids != b.field_ids) return true;
  const auto* x = std::get_if<bloom>(&a.data);
  const auto* y = std::get_if<bloom>(&b.data);
  if (!x && !y) {
    const auto* ex = std::get_if<exact>(&a.data);
    const auto* ey = std::get_if<exact>(&b.data);
    if (!ex || !ey) return false;
    for (auto k : ex->key_hashes)
      if (std::find(ey->key_hashes.begin(), ey->key_hashes.end(), k) != ey->key_hashes.end()) return true;
    return false;
  }
  if (!x || !y || x->bitmap.size() != y->bitmap.size() || x->bitmap.size() % 32 != 0) return true;
  for (std::size_t block = 0; block < x->bitmap.size(); block += 32) {
    bool every_word = true;
    for (std::size_t w = block; w < block + 32 && every_word; w += 4) {
      bool common = false;
      for (std::size_t k = w; k < w + 4; ++k) common |= (x->bitmap[k] & y->bitmap[k]) != 0;
      every_word = common;
    }
    if (every_word) return true;
  }
  return false;
}

}  // namespace lancet::dataset::detail
