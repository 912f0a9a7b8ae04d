// Roaring bitmaps in the portable serialization format
// (https://github.com/RoaringBitmap/RoaringFormatSpec), as Lance stores them: the
// fragment ids an index covers (IndexMetadata.fragment_bitmap) and the deleted row
// offsets of a BITMAP deletion file (_deletions/*.bin).
//
// Reading accepts all three container kinds (array, bitset, run). Writing produces
// what Lance's Rust `roaring` crate writes: the no-run cookie (12346), an offset
// header, and array containers up to 4096 values, bitset containers above.
//
// roaring_treemap is the 64-bit extension of the spec (u64 bucket count, then per
// bucket a u32 high key and a 32-bit bitmap).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::dataset {

namespace detail {

inline constexpr std::uint32_t serial_cookie_no_run = 12346;
inline constexpr std::uint16_t serial_cookie = 12347;
inline constexpr std::uint32_t no_offset_threshold = 4;
inline constexpr std::uint32_t array_limit = 4096;  // arrays hold at most this many values
inline constexpr std::size_t bitset_words = 1024;   // 65536 bits

// Bounds-checked little-endian cursor over untrusted bytes.
class cursor {
 public:
  explicit cursor(bytes_view d) : d_(d) {}
  std::size_t pos() const noexcept { return pos_; }
  std::size_t left() const noexcept { return d_.size() - pos_; }
  void need(std::size_t n, const char* what) const {
    if (left() < n)
      throw corrupt_error(std::string("roaring bitmap: truncated ") + what + " at byte " + std::to_string(pos_) +
                          " (need " + std::to_string(n) + ", have " + std::to_string(left()) + ")");
  }
  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v = le::load<T>(d_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  const std::uint8_t* take(std::size_t n, const char* what) {
    need(n, what);
    const std::uint8_t* p = d_.data() + pos_;
    pos_ += n;
    return p;
  }

 private:
  bytes_view d_;
  std::size_t pos_ = 0;
};

}  // namespace detail

// A set of u32 values.
class roaring_bitmap {
 public:
  roaring_bitmap() = default;
  roaring_bitmap(std::initializer_list<std::uint32_t> values) {
    for (auto v : values) add(v);
  }
  template <class It>
  static roaring_bitmap from_values(It first, It last) {
    roaring_bitmap b;
    for (; first != last; ++first) b.add(std::uint32_t(*first));
    return b;
  }
  template <class Range>
  static roaring_bitmap from_values(const Range& r) {
    return from_values(std::begin(r), std::end(r));
  }

  bool empty() const noexcept { return containers_.empty(); }
  std::uint64_t cardinality() const noexcept {
    std::uint64_t n = 0;
    for (const auto& c : containers_) n += c.card;
    return n;
  }
  std::size_t container_count() const noexcept { return containers_.size(); }

  bool contains(std::uint32_t v) const {
    const container* c = find(std::uint16_t(v >> 16));
    if (!c) return false;
    const auto low = std::uint16_t(v);
    if (c->is_bitset()) return (c->bits[low >> 6] >> (low & 63)) & 1;
    return std::binary_search(c->array.begin(), c->array.end(), low);
  }

  // Returns whether v was newly added.
  bool add(std::uint32_t v) {
    container& c = find_or_insert(std::uint16_t(v >> 16));
    const auto low = std::uint16_t(v);
    if (c.is_bitset()) {
      std::uint64_t& w = c.bits[low >> 6];
      const std::uint64_t m = std::uint64_t(1) << (low & 63);
      if (w & m) return false;
      w |= m;
      ++c.card;
      return true;
    }
    auto it = std::lower_bound(c.array.begin(), c.array.end(), low);
    if (it != c.array.end() && *it == low) return false;
    c.array.insert(it, low);
    ++c.card;
    if (c.card > detail::array_limit) c.to_bitset();
    return true;
  }

  // Adds every value in [lo, hi).
  void add_range(std::uint64_t lo, std::uint64_t hi) {
    if (hi > (std::uint64_t(1) << 32)) throw invalid_input_error("roaring bitmap: range end " + std::to_string(hi) + " exceeds 2^32");
    for (std::uint64_t v = lo; v < hi;) {
      const auto key = std::uint16_t(v >> 16);
      const std::uint64_t chunk_end = std::min<std::uint64_t>(hi, (std::uint64_t(key) + 1) << 16);
      container& c = find_or_insert(key);
      if (chunk_end - v > detail::array_limit || c.card + (chunk_end - v) > detail::array_limit) c.to_bitset();
      if (c.is_bitset()) {
        for (std::uint64_t x = v; x < chunk_end; ++x) {
          const auto low = std::uint16_t(x);
          std::uint64_t& w = c.bits[low >> 6];
          const std::uint64_t m = std::uint64_t(1) << (low & 63);
          if (!(w & m)) {
            w |= m;
            ++c.card;
          }
        }
      } else {
        for (std::uint64_t x = v; x < chunk_end; ++x) add(std::uint32_t(x));
      }
      // Keep the invariant: arrays up to 4096 values, bitsets above.
      if (c.card <= detail::array_limit) c.to_array();
      v = chunk_end;
    }
  }

  // Returns whether v was present.
  bool remove(std::uint32_t v) {
    const auto key = std::uint16_t(v >> 16);
    auto it = std::lower_bound(containers_.begin(), containers_.end(), key,
                               [](const container& c, std::uint16_t k) { return c.key < k; });
    if (it == containers_.end() || it->key != key) return false;
    container& c = *it;
    const auto low = std::uint16_t(v);
    if (c.is_bitset()) {
      std::uint64_t& w = c.bits[low >> 6];
      const std::uint64_t m = std::uint64_t(1) << (low & 63);
      if (!(w & m)) return false;
      w &= ~m;
      --c.card;
      if (c.card <= detail::array_limit) c.to_array();
    } else {
      auto pos = std::lower_bound(c.array.begin(), c.array.end(), low);
      if (pos == c.array.end() || *pos != low) return false;
      c.array.erase(pos);
      --c.card;
    }
    if (c.card == 0) containers_.erase(it);
    return true;
  }

  // Calls f(value) in increasing order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& c : containers_) {
      const std::uint32_t high = std::uint32_t(c.key) << 16;
      if (c.is_bitset()) {
        for (std::size_t i = 0; i < detail::bitset_words; ++i) {
          std::uint64_t w = c.bits[i];
          while (w) {
            const int b = std::countr_zero(w);
            f(high | std::uint32_t(i * 64 + std::size_t(b)));
            w &= w - 1;
          }
        }
      } else {
        for (auto low : c.array) f(high | low);
      }
    }
  }
  std::vector<std::uint32_t> to_vector() const {
    std::vector<std::uint32_t> out;
    out.reserve(std::size_t(cardinality()));
    for_each([&](std::uint32_t v) { out.push_back(v); });
    return out;
  }
  std::optional<std::uint32_t> min() const {
    if (containers_.empty()) return std::nullopt;
    const container& c = containers_.front();
    const std::uint32_t high = std::uint32_t(c.key) << 16;
    if (!c.is_bitset()) return high | c.array.front();
    for (std::size_t i = 0; i < detail::bitset_words; ++i)
      if (c.bits[i]) return high | std::uint32_t(i * 64 + std::size_t(std::countr_zero(c.bits[i])));
    return std::nullopt;
  }
  std::optional<std::uint32_t> max() const {
    if (containers_.empty()) return std::nullopt;
    const container& c = containers_.back();
    const std::uint32_t high = std::uint32_t(c.key) << 16;
    if (!c.is_bitset()) return high | c.array.back();
    for (std::size_t i = detail::bitset_words; i-- > 0;)
      if (c.bits[i]) return high | std::uint32_t(i * 64 + 63 - std::size_t(std::countl_zero(c.bits[i])));
    return std::nullopt;
  }

  friend roaring_bitmap operator&(const roaring_bitmap& a, const roaring_bitmap& b) {
    roaring_bitmap out;
    const roaring_bitmap& small = a.cardinality() <= b.cardinality() ? a : b;
    const roaring_bitmap& big = &small == &a ? b : a;
    small.for_each([&](std::uint32_t v) {
      if (big.contains(v)) out.add(v);
    });
    return out;
  }
  friend roaring_bitmap operator|(const roaring_bitmap& a, const roaring_bitmap& b) {
    roaring_bitmap out = a;
    b.for_each([&](std::uint32_t v) { out.add(v); });
    return out;
  }
  friend bool operator==(const roaring_bitmap& a, const roaring_bitmap& b) {
    if (a.containers_.size() != b.containers_.size()) return false;
    for (std::size_t i = 0; i < a.containers_.size(); ++i) {
      const container &x = a.containers_[i], &y = b.containers_[i];
      if (x.key != y.key || x.card != y.card || x.array != y.array || x.bits != y.bits) return false;
    }
    return true;
  }

  // Bytes serialize() produces.
  std::size_t serialized_size() const noexcept {
    std::size_t n = 8 + 8 * containers_.size();
    for (const auto& c : containers_) n += c.is_bitset() ? detail::bitset_words * 8 : 2 * c.array.size();
    return n;
  }

  // Portable format, no run containers (what the Rust `roaring` crate writes).
  std::string serialize() const {
    std::string out(serialized_size(), '\0');
    char* p = out.data();
    le::store(p, detail::serial_cookie_no_run);
    le::store(p + 4, std::uint32_t(containers_.size()));
    std::size_t desc = 8, offs = 8 + 4 * containers_.size();
    std::size_t data = offs + 4 * containers_.size();
    for (const auto& c : containers_) {
      le::store(p + desc, c.key);
      le::store(p + desc + 2, std::uint16_t(c.card - 1));
      desc += 4;
      le::store(p + offs, std::uint32_t(data));
      offs += 4;
      if (c.is_bitset()) {
        for (std::size_t i = 0; i < detail::bitset_words; ++i) le::store(p + data + 8 * i, c.bits[i]);
        data += detail::bitset_words * 8;
      } else {
        for (std::size_t i = 0; i < c.array.size(); ++i) le::store(p + data + 2 * i, c.array[i]);
        data += 2 * c.array.size();
      }
    }
    return out;
  }

  // Parses one serialized bitmap. With `consumed`, trailing bytes are allowed and the
  // bitmap's length is stored there; without it they are corrupt.
  static roaring_bitmap deserialize(bytes_view bytes, std::size_t* consumed = nullptr) {
    using namespace detail;
    cursor in(bytes);
    const auto cookie = in.read<std::uint32_t>("cookie");
    std::size_t n = 0;
    bool run_cookie = false;
    const std::uint8_t* run_flags = nullptr;
    if (cookie == serial_cookie_no_run) {
      const auto size = in.read<std::uint32_t>("container count");
      if (size > 65536) throw corrupt_error("roaring bitmap: " + std::to_string(size) + " containers (at most 65536)");
      n = size;
    } else if ((cookie & 0xFFFF) == serial_cookie) {
      run_cookie = true;
      n = (cookie >> 16) + 1;
      run_flags = in.take((n + 7) / 8, "run-container flags");
    } else {
      throw corrupt_error("roaring bitmap: unknown cookie " + std::to_string(cookie));
    }
    const std::uint8_t* desc = in.take(4 * n, "descriptive header");
    const bool has_offsets = !run_cookie || n >= no_offset_threshold;
    const std::uint8_t* offsets = has_offsets ? in.take(4 * n, "offset header") : nullptr;

    roaring_bitmap out;
    out.containers_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      container c;
      c.key = le::load<std::uint16_t>(desc + 4 * i);
      c.card = std::uint32_t(le::load<std::uint16_t>(desc + 4 * i + 2)) + 1;
      if (i > 0 && c.key <= out.containers_.back().key)
        throw corrupt_error("roaring bitmap: container keys not increasing at container " + std::to_string(i));
      if (offsets && le::load<std::uint32_t>(offsets + 4 * i) != in.pos())
        throw corrupt_error("roaring bitmap: container " + std::to_string(i) + " offset " +
                            std::to_string(le::load<std::uint32_t>(offsets + 4 * i)) + " does not match its position " +
                            std::to_string(in.pos()));
      const bool is_run = run_flags && ((run_flags[i / 8] >> (i % 8)) & 1);
      if (is_run) {
        read_run_container(in, c, i);
      } else if (c.card <= array_limit) {
        const std::uint8_t* v = in.take(2 * std::size_t(c.card), "array container");
        c.array.resize(c.card);
        for (std::size_t k = 0; k < c.card; ++k) {
          c.array[k] = le::load<std::uint16_t>(v + 2 * k);
          if (k > 0 && c.array[k] <= c.array[k - 1])
            throw corrupt_error("roaring bitmap: array container " + std::to_string(i) + " not strictly increasing");
        }
      } else {
        const std::uint8_t* v = in.take(bitset_words * 8, "bitset container");
        c.bits.resize(bitset_words);
        std::uint32_t pop = 0;
        for (std::size_t k = 0; k < bitset_words; ++k) {
          c.bits[k] = le::load<std::uint64_t>(v + 8 * k);
          pop += std::uint32_t(std::popcount(c.bits[k]));
        }
        if (pop != c.card)
          throw corrupt_error("roaring bitmap: bitset container " + std::to_string(i) + " holds " + std::to_string(pop) +
                              " values, header says " + std::to_string(c.card));
      }
      out.containers_.push_back(std::move(c));
    }
    if (consumed) *consumed = in.pos();
    else if (in.left())
      throw corrupt_error("roaring bitmap: " + std::to_string(in.left()) + " trailing bytes after " + std::to_string(in.pos()));
    return out;
  }
  static roaring_bitmap deserialize(std::string_view bytes, std::size_t* consumed = nullptr) {
    return deserialize(bytes_view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), consumed);
  }

 private:
  // Values of one 16-bit key: a sorted array (card <= 4096) or a 65536-bit bitset.
  struct container {
    std::uint16_t key = 0;
    std::uint32_t card = 0;
    std::vector<std::uint16_t> array;
    std::vector<std::uint64_t> bits;
    bool is_bitset() const noexcept { return !bits.empty(); }
    void to_bitset() {
      if (is_bitset()) return;
      bits.assign(detail::bitset_words, 0);
      for (auto v : array) bits[v >> 6] |= std::uint64_t(1) << (v & 63);
      array.clear();
      array.shrink_to_fit();
    }
    void to_array() {
      if (!is_bitset()) return;
      array.clear();
      array.reserve(card);
      for (std::size_t i = 0; i < detail::bitset_words; ++i) {
        std::uint64_t w = bits[i];
        while (w) {
          array.push_back(std::uint16_t(i * 64 + std::size_t(std::countr_zero(w))));
          w &= w - 1;
        }
      }
      bits.clear();
      bits.shrink_to_fit();
    }
  };

  static void read_run_container(detail::cursor& in, container& c, std::size_t index) {
    const auto runs = in.read<std::uint16_t>("run count");
    const std::uint8_t* p = in.take(4 * std::size_t(runs), "run container");
    std::uint32_t total = 0;
    std::int64_t prev_end = -1;  // last value of the previous run
    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
    for (std::size_t r = 0; r < runs; ++r) {
      const std::uint32_t start = le::load<std::uint16_t>(p + 4 * r);
      const std::uint32_t len = std::uint32_t(le::load<std::uint16_t>(p + 4 * r + 2)) + 1;
      if (start + len > 65536 || std::int64_t(start) <= prev_end)
        throw corrupt_error("roaring bitmap: run " + std::to_string(r) + " of container " + std::to_string(index) +
                            " overlaps, is unsorted or overflows 16 bits");
      prev_end = std::int64_t(start + len - 1);
      total += len;
      spans.emplace_back(start, len);
    }
    if (total != c.card)
      throw corrupt_error("roaring bitmap: run container " + std::to_string(index) + " holds " + std::to_string(total) +
                          " values, header says " + std::to_string(c.card));
    if (c.card > detail::array_limit) {
      c.bits.assign(detail::bitset_words, 0);
      for (auto [s, l] : spans)
        for (std::uint32_t v = s; v < s + l; ++v) c.bits[v >> 6] |= std::uint64_t(1) << (v & 63);
    } else {
      c.array.reserve(c.card);
      for (auto [s, l] : spans)
        for (std::uint32_t v = s; v < s + l; ++v) c.array.push_back(std::uint16_t(v));
    }
  }

  const container* find(std::uint16_t key) const {
    auto it = std::lower_bound(containers_.begin(), containers_.end(), key,
                               [](const container& c, std::uint16_t k) { return c.key < k; });
    return it != containers_.end() && it->key == key ? &*it : nullptr;
  }
  container& find_or_insert(std::uint16_t key) {
    auto it = std::lower_bound(containers_.begin(), containers_.end(), key,
                               [](const container& c, std::uint16_t k) { return c.key < k; });
    if (it != containers_.end() && it->key == key) return *it;
    container c;
    c.key = key;
    return *containers_.insert(it, std::move(c));
  }

  std::vector<container> containers_;  // sorted by key, none empty
};

// A set of u64 values: 32-bit bitmaps keyed by the high 32 bits.
class roaring_treemap {
 public:
  bool empty() const noexcept { return buckets_.empty(); }
  std::uint64_t cardinality() const noexcept {
    std::uint64_t n = 0;
    for (const auto& [k, b] : buckets_) n += b.cardinality();
    return n;
  }
  bool add(std::uint64_t v) { return buckets_[std::uint32_t(v >> 32)].add(std::uint32_t(v)); }
  bool contains(std::uint64_t v) const {
    auto it = buckets_.find(std::uint32_t(v >> 32));
    return it != buckets_.end() && it->second.contains(std::uint32_t(v));
  }
  bool remove(std::uint64_t v) {
    auto it = buckets_.find(std::uint32_t(v >> 32));
    if (it == buckets_.end()) return false;
    bool removed = it->second.remove(std::uint32_t(v));
    if (it->second.empty()) buckets_.erase(it);
    return removed;
  }
  std::vector<std::uint64_t> to_vector() const {
    std::vector<std::uint64_t> out;
    for (const auto& [k, b] : buckets_)
      b.for_each([&, hi = std::uint64_t(k) << 32](std::uint32_t v) { out.push_back(hi | v); });
    return out;
  }
  const std::map<std::uint32_t, roaring_bitmap>& buckets() const noexcept { return buckets_; }
  friend bool operator==(const roaring_treemap&, const roaring_treemap&) = default;

  std::string serialize() const {
    std::string out(8, '\0');
    le::store(out.data(), std::uint64_t(buckets_.size()));
    for (const auto& [k, b] : buckets_) {
      char key[4];
      le::store(key, k);
      out.append(key, 4);
      out += b.serialize();
    }
    return out;
  }
  static roaring_treemap deserialize(bytes_view bytes, std::size_t* consumed = nullptr) {
    detail::cursor in(bytes);
    const auto n = in.read<std::uint64_t>("treemap bucket count");
    if (n > (std::uint64_t(1) << 32)) throw corrupt_error("roaring treemap: " + std::to_string(n) + " buckets");
    roaring_treemap out;
    std::size_t pos = 8;
    std::optional<std::uint32_t> prev;
    for (std::uint64_t i = 0; i < n; ++i) {
      detail::cursor at(bytes.subspan(pos));
      const auto key = at.read<std::uint32_t>("treemap bucket key");
      if (prev && key <= *prev) throw corrupt_error("roaring treemap: bucket keys not increasing at bucket " + std::to_string(i));
      prev = key;
      std::size_t used = 0;
      roaring_bitmap b = roaring_bitmap::deserialize(bytes.subspan(pos + 4), &used);
      pos += 4 + used;
      if (!b.empty()) out.buckets_.emplace(key, std::move(b));
    }
    if (consumed) *consumed = pos;
    else if (pos != bytes.size())
      throw corrupt_error("roaring treemap: " + std::to_string(bytes.size() - pos) + " trailing bytes after " + std::to_string(pos));
    return out;
  }
  static roaring_treemap deserialize(std::string_view bytes, std::size_t* consumed = nullptr) {
    return deserialize(bytes_view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), consumed);
  }

 private:
  std::map<std::uint32_t, roaring_bitmap> buckets_;
};

}  // namespace lancet::dataset
