// FSST string compression (Boncz, Neumann, Leis) with Lance's symbol-table
// serialisation, so that Lance's decoder reads our tables and we read Lance's.
//
// Symbol table (always 2312 bytes, zero-filled past its content, as Lance requires):
//   u64 info = "FSST" << 32 | switch << 24 | suffix_lim << 16 | terminator << 8 | n_symbols
//   n_symbols x u64 symbol (little-endian bytes, zero past its length)
//   n_symbols x u8 symbol length (1..8)
// Compressed bytes: code c < n_symbols stands for symbol c; 255 escapes the next byte
// literally. With switch = 0 the values are stored uncompressed (Lance does that below
// 32 KiB of input). Each value is compressed on its own, so offsets stay per value.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding::structural::fsst {

inline constexpr std::size_t table_bytes = 8 + 256 * 8 + 256;
inline constexpr std::uint64_t magic = std::uint64_t(0x46535354) << 32;
inline constexpr std::uint8_t escape = 255;
inline constexpr std::size_t max_symbols = 255;
// Lance's thresholds for choosing FSST: page data of at least 32 KiB, values of length >= 5.
inline constexpr std::uint64_t least_input_size = 32 * 1024;
inline constexpr std::uint64_t least_max_length = 5;

struct symbol {
  std::uint64_t value = 0;
  std::uint8_t len = 0;
  std::uint8_t byte(std::size_t i) const noexcept { return std::uint8_t(value >> (8 * i)); }
};

inline symbol make_symbol(const std::uint8_t* p, std::size_t len) noexcept {
  symbol s;
  s.len = std::uint8_t(len);
  for (std::size_t i = 0; i < len; ++i) s.value |= std::uint64_t(p[i]) << (8 * i);
  return s;
}

class symbol_table {
 public:
  symbol_table() = default;

  std::size_t size() const noexcept { return symbols_.size(); }
  const symbol& operator[](std::size_t i) const noexcept { return symbols_[i]; }
  bool compressing() const noexcept { return enabled_; }

  // Longest symbol matching at p (code), or -1 when the byte must be escaped.
  // Needs the lookup index (trained tables, or parse(bytes, true)).
  int find(const std::uint8_t* p, std::size_t left) const noexcept {
    if (left >= 2 && !prefix_start_.empty()) {
      const std::size_t prefix = std::size_t(p[0]) | (std::size_t(p[1]) << 8);
      const auto b = prefix_start_[prefix], e = prefix_start_[prefix + 1];
      if (b != e) {
        std::uint64_t w = 0;
        std::memcpy(&w, p, left >= 8 ? 8 : left);
        w = le_word(w);
        for (auto i = b; i < e; ++i) {
          const auto code = prefix_codes_[i];
          const auto& s = symbols_[code];
          if (s.len <= left && (w & len_mask(s.len)) == s.value) return code;
        }
      }
    }
    return single_[*p];
  }

  // Trains a table on a sample of the values (offsets n + 1 into bytes).
  template <class Offset>
  static symbol_table train(const Offset* offsets, std::size_t n, const std::uint8_t* bytes) {
    // Sample about 32 KiB of whole values spread over the input.
    std::vector<std::pair<const std::uint8_t*, std::size_t>> sample;
    const std::uint64_t total = std::uint64_t(offsets[n] - offsets[0]);
    const std::size_t stride = total > (1u << 15) ? std::size_t(total / (1u << 15)) + 1 : 1;
    std::uint64_t taken = 0;
    for (std::size_t i = 0; i < n && taken < (1u << 15); i += stride) {
      const auto len = std::size_t(offsets[i + 1] - offsets[i]);
      if (len == 0) continue;
      const std::size_t use = std::min<std::size_t>(len, 512);
      sample.emplace_back(bytes + std::size_t(offsets[i]), use);
      taken += use;
    }
    return train_on(sample);
  }

  // Trains a table on sampled values (pointer, length). Not a template: the offset
  // width only matters for taking the sample.
  static symbol_table train_on(const std::vector<std::pair<const std::uint8_t*, std::size_t>>& sample) {
    symbol_table st;
    st.enabled_ = true;
    constexpr std::size_t codes = 256 + 256;  // 0..254 symbols, 256 + b: escaped byte b
    std::vector<std::uint32_t> count1(codes), count2(codes * codes);
    for (int generation = 0; generation < 5; ++generation) {
      std::fill(count1.begin(), count1.end(), 0);
      std::fill(count2.begin(), count2.end(), 0);
      for (const auto& [p, len] : sample) {
        std::size_t at = 0;
        int prev = -1;
        while (at < len) {
          const int c = st.find(p + at, len - at);
          const int cur = c < 0 ? 256 + p[at] : c;
          at += c < 0 ? 1 : st.symbols_[std::size_t(c)].len;
          ++count1[std::size_t(cur)];
          if (prev >= 0) ++count2[std::size_t(prev) * codes + std::size_t(cur)];
          prev = cur;
        }
      }
      auto sym_of = [&](std::size_t code) {
        if (code >= 256) {
          const std::uint8_t b = std::uint8_t(code - 256);
          return make_symbol(&b, 1);
        }
        return st.symbols_[code];
      };
      struct candidate {
        symbol s;
        std::uint64_t gain;
      };
      std::vector<candidate> cands;
      for (std::size_t a = 0; a < codes; ++a) {
        if (!count1[a]) continue;
        const symbol sa = sym_of(a);
        // Early generations favour single bytes a little (as FSST does) so they survive.
        const std::uint64_t weight = sa.len == 1 && generation < 4 ? 8 : 1;
        cands.push_back({sa, std::uint64_t(count1[a]) * sa.len * weight});
        if (sa.len >= 8) continue;
        for (std::size_t b = 0; b < codes; ++b) {
          const auto f = count2[a * codes + b];
          if (!f) continue;
          const symbol sb = sym_of(b);
          const std::size_t len = std::min<std::size_t>(8, std::size_t(sa.len) + sb.len);
          symbol s;
          s.len = std::uint8_t(len);
          s.value = sa.value | (len > sa.len ? (sb.value << (8 * sa.len)) : 0);
          if (len < 8) s.value &= (std::uint64_t(1) << (8 * len)) - 1;
          cands.push_back({s, std::uint64_t(f) * len});
        }
      }
      // Merge duplicates, keep the best max_symbols by gain.
      std::sort(cands.begin(), cands.end(), [](const candidate& x, const candidate& y) {
        return x.s.len != y.s.len ? x.s.len < y.s.len : x.s.value < y.s.value;
      });
      std::vector<candidate> merged;
      for (const auto& c : cands) {
        if (!merged.empty() && merged.back().s.len == c.s.len && merged.back().s.value == c.s.value)
          merged.back().gain += c.gain;
        else
          merged.push_back(c);
      }
      std::sort(merged.begin(), merged.end(), [](const candidate& x, const candidate& y) {
        return x.gain != y.gain ? x.gain > y.gain : (x.s.len != y.s.len ? x.s.len > y.s.len : x.s.value < y.s.value);
      });
      st.symbols_.clear();
      for (std::size_t i = 0; i < merged.size() && st.symbols_.size() < max_symbols; ++i)
        st.symbols_.push_back(merged[i].s);
      st.index();
    }
    // Room left: a one-byte symbol for every byte of the sample without one, most
    // frequent first. Long symbols fitted to the sample (digits of particular numbers)
    // leave those bytes without a code, so outside the sample they would be escaped at
    // two bytes each; a one-byte code is never worse than an escape.
    std::array<std::uint64_t, 256> freq{};
    for (const auto& [p, len] : sample)
      for (std::size_t i = 0; i < len; ++i) ++freq[p[i]];
    std::vector<std::uint8_t> missing;
    for (std::size_t b = 0; b < 256; ++b)
      if (freq[b] && st.single_[b] < 0) missing.push_back(std::uint8_t(b));
    std::stable_sort(missing.begin(), missing.end(), [&](std::uint8_t a, std::uint8_t b) { return freq[a] > freq[b]; });
    for (std::size_t i = 0; i < missing.size() && st.symbols_.size() < max_symbols; ++i)
      st.symbols_.push_back(make_symbol(&missing[i], 1));
    st.index();
    return st;
  }

  // Compresses one value, appending codes to out: 256 input bytes at a time into a
  // stack block (at most 2 code bytes per input byte), appended once per block.
  void compress(const std::uint8_t* p, std::size_t len, aligned_buffer& out) const {
    std::uint8_t block[2 * 256];
    std::size_t at = 0;
    while (at < len) {
      const std::size_t stop = std::min(len, at + 256);
      std::size_t w = 0;
      while (at < stop) {
        const int c = find(p + at, len - at);
        if (c < 0) {
          block[w++] = escape;
          block[w++] = p[at++];
        } else {
          block[w++] = std::uint8_t(c);
          at += symbols_[std::size_t(c)].len;
        }
      }
      out.append(block, w);
    }
  }

  std::string serialize() const {
    std::string out(table_bytes, '\0');
    // A disabled table (values stored as they are) is the bare magic number.
    const std::uint64_t info = enabled_ ? magic | (std::uint64_t(1) << 24) | (std::uint64_t(8) << 16) |
                                              std::uint64_t(symbols_.size() & 255)
                                        : magic;
    le::store(out.data(), info);
    std::size_t pos = 8;
    for (const auto& s : symbols_) {
      le::store(out.data() + pos, s.value);
      pos += 8;
    }
    for (const auto& s : symbols_) out[pos++] = char(s.len);
    return out;
  }

  // A table read back. Decoding needs no lookup index (building it costs a 256 KiB
  // table, and decoders parse a page's table once per mini-block chunk), so it is built
  // only when the table is to compress.
  static symbol_table parse(std::string_view bytes, bool for_compression = false) {
    if (bytes.size() < 8) throw corrupt_error("FSST symbol table of " + std::to_string(bytes.size()) + " bytes");
    const auto info = le::load<std::uint64_t>(bytes.data());
    if ((info & magic) != magic) throw corrupt_error("FSST symbol table without its magic number");
    symbol_table st;
    st.enabled_ = (info >> 24) & 1;
    const std::size_t n = info & 255;
    if (bytes.size() < 8 + 9 * n)
      throw corrupt_error("FSST symbol table of " + std::to_string(bytes.size()) + " bytes cannot hold " +
                          std::to_string(n) + " symbols");
    for (std::size_t i = 0; i < n; ++i) {
      symbol s;
      s.value = le::load<std::uint64_t>(bytes.data() + 8 + 8 * i);
      s.len = std::uint8_t(bytes[8 + 8 * n + i]);
      if (s.len > 8) throw corrupt_error("FSST symbol " + std::to_string(i) + " has length " + std::to_string(s.len));
      st.symbols_.push_back(s);
    }
    if (for_compression) st.index();
    return st;
  }

  // Decompresses one value (codes in [p, p + len)), appending to out. Symbols are
  // stored 8 bytes at a time into a stack block (then the length advances), and the
  // block is appended once per 256 codes.
  void decompress(const std::uint8_t* p, std::size_t len, aligned_buffer& out) const {
    std::uint8_t block[256 * 8 + 8];
    const std::size_t n_symbols = symbols_.size();
    std::size_t at = 0;
    while (at < len) {
      const std::size_t stop = std::min(len, at + 256);
      std::size_t w = 0;
      while (at < stop) {
        const std::uint8_t c = p[at++];
        if (c == escape) {
          if (at >= len) throw corrupt_error("FSST value ends in an escape code");
          block[w++] = p[at++];
        } else {
          if (c >= n_symbols)
            throw corrupt_error("FSST code " + std::to_string(c) + " past the " + std::to_string(n_symbols) +
                                " symbols of the table");
          const auto& s = symbols_[c];
          le::store(block + w, s.value);
          w += s.len;
        }
      }
      out.append(block, w);
    }
  }

 private:
  static std::uint64_t len_mask(std::uint8_t len) noexcept {
    return len >= 8 ? ~std::uint64_t(0) : (std::uint64_t(1) << (8 * len)) - 1;
  }
  static std::uint64_t le_word(std::uint64_t w) noexcept {
    std::uint8_t b[8];
    std::memcpy(b, &w, 8);
    return le::load<std::uint64_t>(b);
  }
  // Lookup: symbols of 2+ bytes by their first two bytes (longest first), and the
  // one-byte symbol of each byte.
  void index() {
    single_.fill(-1);
    std::vector<std::uint8_t> order;
    for (std::size_t i = 0; i < symbols_.size(); ++i) {
      if (symbols_[i].len == 1) {
        if (single_[symbols_[i].byte(0)] < 0) single_[symbols_[i].byte(0)] = int(i);
      } else if (symbols_[i].len >= 2) {
        order.push_back(std::uint8_t(i));
      }
    }
    auto prefix_of = [&](std::uint8_t c) { return std::size_t(symbols_[c].byte(0)) | (std::size_t(symbols_[c].byte(1)) << 8); };
    std::stable_sort(order.begin(), order.end(), [&](std::uint8_t a, std::uint8_t b) {
      const auto pa = prefix_of(a), pb = prefix_of(b);
      return pa != pb ? pa < pb : symbols_[a].len > symbols_[b].len;
    });
    prefix_start_.assign(65537, 0);
    for (auto c : order) ++prefix_start_[prefix_of(c) + 1];
    for (std::size_t i = 1; i < prefix_start_.size(); ++i) prefix_start_[i] += prefix_start_[i - 1];
    prefix_codes_ = std::move(order);
  }

  std::vector<symbol> symbols_;
  std::array<int, 256> single_ = [] { std::array<int, 256> a{}; a.fill(-1); return a; }();
  // First position in prefix_codes_ of each two-byte prefix (at most 255 symbols, so a
  // byte each: the 64 KiB table stays in cache while compressing).
  std::vector<std::uint8_t> prefix_start_;  // empty until index()
  std::vector<std::uint8_t> prefix_codes_;
  bool enabled_ = false;
};

}  // namespace lancet::encoding::structural::fsst
