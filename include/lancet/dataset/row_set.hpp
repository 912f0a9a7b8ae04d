// A set of row ids (or row addresses) as bitmaps keyed by the upper 32 bits: one
// bitmap per fragment for addresses ((fragment << 32) | offset), a few for stable row
// ids. What a search may return (live rows, rows a prefilter kept) is one of these:
// membership is a table lookup and a bit test.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lancet::dataset {

class row_set {
 public:
  // Adds one id. Ids may come in any order; adding in ascending order is fastest.
  void insert(std::uint64_t id) {
    auto& w = words_of(std::uint32_t(id >> 32), std::uint32_t(id));
    const std::uint32_t lo = std::uint32_t(id);
    std::uint64_t& word = w[lo >> 6];
    const std::uint64_t bit = std::uint64_t(1) << (lo & 63);
    count_ += (word & bit) == 0;
    word |= bit;
  }
  // Adds ids [first, first + n) (all of one upper half: first's low 32 bits + n <= 2^32).
  void insert_run(std::uint64_t first, std::uint32_t n) {
    if (n == 0) return;
    const std::uint32_t lo = std::uint32_t(first);
    auto& w = words_of(std::uint32_t(first >> 32), lo + (n - 1));
    for (std::uint64_t i = lo, end = std::uint64_t(lo) + n; i < end;) {
      if ((i & 63) == 0 && i + 64 <= end) {
        count_ += 64 - std::size_t(std::popcount(w[i >> 6]));
        w[i >> 6] = ~std::uint64_t(0);
        i += 64;
        continue;
      }
      const std::uint64_t bit = std::uint64_t(1) << (i & 63);
      count_ += (w[i >> 6] & bit) == 0;
      w[i >> 6] |= bit;
      ++i;
    }
  }
  // Removes one id (if present).
  void erase(std::uint64_t id) {
    const std::uint32_t lo = std::uint32_t(id);
    bucket* b = const_cast<bucket*>(find(std::uint32_t(id >> 32)));
    if (b == nullptr || (lo >> 6) >= b->words.size()) return;
    std::uint64_t& word = b->words[lo >> 6];
    const std::uint64_t bit = std::uint64_t(1) << (lo & 63);
    count_ -= (word & bit) != 0;
    word &= ~bit;
  }

  bool contains(std::uint64_t id) const noexcept {
    const std::uint32_t hi = std::uint32_t(id >> 32), lo = std::uint32_t(id);
    const bucket* b = find(hi);
    if (b == nullptr || (lo >> 6) >= b->words.size()) return false;
    return (b->words[lo >> 6] >> (lo & 63)) & 1;
  }

  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }

  // Every id, ascending.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& b : buckets_)
      for (std::size_t w = 0; w < b.words.size(); ++w)
        for (std::uint64_t x = b.words[w]; x != 0; x &= x - 1)
          f((std::uint64_t(b.hi) << 32) | (std::uint64_t(w) << 6 | std::uint64_t(std::countr_zero(x))));
  }

  // Ids of the set, ascending.
  std::vector<std::uint64_t> to_vector() const {
    std::vector<std::uint64_t> out;
    out.reserve(count_);
    for_each([&](std::uint64_t id) { out.push_back(id); });
    return out;
  }

  // The ids of one upper half (a fragment's offsets), as a bitmap of words; empty when none.
  const std::vector<std::uint64_t>* bitmap(std::uint32_t hi) const noexcept {
    const bucket* b = find(hi);
    return b ? &b->words : nullptr;
  }

 private:
  struct bucket {
    std::uint32_t hi = 0;
    std::vector<std::uint64_t> words;
  };

  // Upper halves below this are found by a direct table; others by binary search.
  static constexpr std::uint32_t direct_limit = 1u << 20;

  const bucket* find(std::uint32_t hi) const noexcept {
    if (hi < direct_.size()) {
      const std::int32_t k = direct_[hi];
      return k < 0 ? nullptr : &buckets_[std::size_t(k)];
    }
    if (hi < direct_limit) return nullptr;
    auto it = std::lower_bound(buckets_.begin(), buckets_.end(), hi, [](const bucket& b, std::uint32_t h) { return b.hi < h; });
    return it != buckets_.end() && it->hi == hi ? &*it : nullptr;
  }

  std::vector<std::uint64_t>& words_of(std::uint32_t hi, std::uint32_t lo) {
    bucket* b = const_cast<bucket*>(find(hi));
    if (b == nullptr) {
      auto it = std::lower_bound(buckets_.begin(), buckets_.end(), hi, [](const bucket& x, std::uint32_t h) { return x.hi < h; });
      it = buckets_.insert(it, bucket{hi, {}});
      b = &*it;
      reindex();
    }
    const std::size_t need = (std::size_t(lo) >> 6) + 1;
    if (b->words.size() < need) b->words.resize(std::max(need, b->words.size() * 2));
    return b->words;
  }

  void reindex() {
    std::uint32_t top = 0;
    for (const auto& b : buckets_)
      if (b.hi < direct_limit) top = std::max(top, b.hi + 1);
    direct_.assign(top, -1);
    for (std::size_t k = 0; k < buckets_.size(); ++k)
      if (buckets_[k].hi < direct_limit) direct_[buckets_[k].hi] = std::int32_t(k);
  }

  std::vector<bucket> buckets_;     // ascending by hi
  std::vector<std::int32_t> direct_;  // hi -> bucket index (-1: none), for hi < direct_limit
  std::size_t count_ = 0;
};

}  // namespace lancet::dataset
