// Operations on decoded data blocks: concatenating the blocks of several chunks and
// slicing a value range out of one (copying only where bit offsets demand it), as the
// page readers (page_decoder.hpp, page_ranges.hpp) assemble a row range.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/data_block.hpp"

namespace lancet::encoding::detail {

// Concatenates data blocks of one kind.
inline structural::data_block concat_blocks(std::vector<structural::data_block>& parts) {
  if (parts.empty()) return {};
  if (parts.size() == 1) return std::move(parts[0]);
  structural::data_block out;
  out.k = parts[0].k;
  out.bits_per_value = parts[0].bits_per_value;
  out.bits_per_offset = parts[0].bits_per_offset;
  std::uint64_t n = 0;
  for (const auto& p : parts) {
    if (p.k != out.k || p.bits_per_value != out.bits_per_value || p.bits_per_offset != out.bits_per_offset ||
        p.fsl.size() != parts[0].fsl.size())
      throw corrupt_error("chunks of one page decode to different kinds of values");
    n += p.num_values;
  }
  out.num_values = n;
  auto bits_concat = [&](auto get_bits, std::uint64_t bits_each) {
    aligned_buffer b;
    b.resize(std::size_t((structural::checked_mul(n, bits_each, "values") + 7) / 8));
    std::uint64_t at = 0;
    for (auto& p : parts) {
      const auto cnt = p.num_values * bits_each;
      const shared_bytes& src = get_bits(p);
      if (cnt) arrow::copy_bits(src.data(), 0, b.data(), std::int64_t(at), std::int64_t(cnt));
      at += cnt;
    }
    return shared_bytes(std::move(b));
  };
  switch (out.k) {
    case structural::data_block::kind::fixed:
      if (out.bits_per_value % 8 == 0) {
        aligned_buffer b;
        for (auto& p : parts) b.append(p.data.data(), std::size_t(p.num_values * p.bits_per_value / 8));
        out.data = shared_bytes(std::move(b));
      } else {
        out.data =
            bits_concat([](const structural::data_block& p) -> const shared_bytes& { return p.data; }, out.bits_per_value);
      }
      break;
    case structural::data_block::kind::variable: {
      const std::uint64_t w = out.bits_per_offset / 8;
      aligned_buffer offs, bytes;
      offs.resize(std::size_t((n + 1) * w));
      std::uint64_t row = 0, base = 0;
      for (auto& p : parts) {
        for (std::uint64_t i = 1; i <= p.num_values; ++i) {
          const auto o = base + p.offset(i);
          if (w == 8) le::store<std::uint64_t>(offs.data() + 8 * (row + i), o);
          else {
            if (o > 0xFFFFFFFFull) throw corrupt_error("variable-width values exceed 32-bit offsets");
            le::store<std::uint32_t>(offs.data() + 4 * (row + i), std::uint32_t(o));
          }
        }
        bytes.append(p.data.data(), std::size_t(p.value_bytes()));
        base += p.value_bytes();
        row += p.num_values;
      }
      out.offsets = shared_bytes(std::move(offs));
      out.data = shared_bytes(std::move(bytes));
      break;
    }
    case structural::data_block::kind::fixed_size_list: {
      out.fsl = parts[0].fsl;
      std::uint64_t cum = 1;
      for (std::size_t l = 0; l < out.fsl.size(); ++l) {
        cum *= out.fsl[l].dimension;
        for (const auto& p : parts)
          if (p.fsl[l].dimension != out.fsl[l].dimension || p.fsl[l].has_validity != out.fsl[l].has_validity)
            throw corrupt_error("chunks of one page disagree on a fixed-size list's layout");
        if (out.fsl[l].has_validity)
          out.fsl[l].validity = bits_concat([l](const structural::data_block& p) -> const shared_bytes& { return p.fsl[l].validity; }, cum);
      }
      if ((cum * out.bits_per_value) % 8 == 0) {
        aligned_buffer b;
        for (auto& p : parts) b.append(p.data.data(), std::size_t(p.num_values * cum * p.bits_per_value / 8));
        out.data = shared_bytes(std::move(b));
      } else {
        out.data = bits_concat([](const structural::data_block& p) -> const shared_bytes& { return p.data; }, cum * out.bits_per_value);
      }
      break;
    }
    default: break;
  }
  return out;
}

// Values [first, first + count) of a block (copies where bit offsets demand it).
inline structural::data_block slice_block(const structural::data_block& b, std::uint64_t first, std::uint64_t count) {
  if (first == 0 && count == b.num_values) return b;
  structural::data_block out = b;
  out.num_values = count;
  auto bits_slice = [&](const shared_bytes& src, std::uint64_t bits_each) {
    if ((first * bits_each) % 8 == 0)
      return src.slice(std::size_t(first * bits_each / 8), std::size_t((count * bits_each + 7) / 8));
    aligned_buffer c;
    c.resize(std::size_t((count * bits_each + 7) / 8));
    arrow::copy_bits(src.data(), std::int64_t(first * bits_each), c.data(), 0, std::int64_t(count * bits_each));
    return shared_bytes(std::move(c));
  };
  switch (b.k) {
    case structural::data_block::kind::fixed: out.data = bits_slice(b.data, b.bits_per_value); break;
    case structural::data_block::kind::variable: {
      const std::uint64_t w = b.bits_per_offset / 8;
      const auto base = b.offset(first);
      aligned_buffer offs;
      offs.resize(std::size_t((count + 1) * w));
      for (std::uint64_t i = 0; i <= count; ++i) {
        const auto o = b.offset(first + i) - base;
        if (w == 8) le::store<std::uint64_t>(offs.data() + 8 * i, o);
        else le::store<std::uint32_t>(offs.data() + 4 * i, std::uint32_t(o));
      }
      out.offsets = shared_bytes(std::move(offs));
      out.data = b.data.slice(std::size_t(base), std::size_t(b.offset(first + count) - base));
      break;
    }
    case structural::data_block::kind::fixed_size_list: {
      std::uint64_t cum = 1;
      for (auto& l : out.fsl) {
        cum *= l.dimension;
        if (l.has_validity) {
          const std::uint64_t f = first * cum, c = count * cum;
          if (f % 8 == 0) l.validity = l.validity.slice(std::size_t(f / 8), std::size_t((c + 7) / 8));
          else {
            aligned_buffer v;
            v.resize(std::size_t((c + 7) / 8));
            arrow::copy_bits(l.validity.data(), std::int64_t(f), v.data(), 0, std::int64_t(c));
            l.validity = shared_bytes(std::move(v));
          }
        }
      }
      out.data = bits_slice(b.data, cum * b.bits_per_value);
      break;
    }
    default: break;
  }
  return out;
}

}  // namespace lancet::encoding::detail
