// Reading chosen rows of a Lance 2.0 page without fetching the whole page.
//
// Lance 2.0 pages are large (LanceDB writes 50,000 rows of a 128-d float vector as one
// 25.6 MB page), and decoding a few rows from a fetched page is what made a random
// take cost one whole page per row. For the encodings whose rows sit at fixed bit
// positions of their buffers (uncompressed Flat values, Nullable over those with a
// flat validity bitmap, FixedSizeList of those) a row's bytes are found by arithmetic:
// these are read in place, only the bytes of the requested rows, with nearby rows
// merged into one read. Binary pages (strings) are read in two steps: the offsets of
// the requested rows, then their bytes. Other encodings (dictionary, bit-packed,
// compressed, FSST, ...) are not addressable: rows_addressable() says so before
// anything is read, and the caller decodes the whole page.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/legacy/decoder.hpp"
#include "lancet/pb/encodings_v2_0.hpp"

namespace lancet::encoding::legacy {

// Reads `size` bytes at absolute file position `offset`.
using byte_reader = std::function<shared_bytes(std::uint64_t offset, std::uint64_t size)>;
// Reads many ({offset, size}, absolute) ranges end to end into out (the sum of the
// sizes): a take's scattered rows in one request where the source can (io::read_into).
using byte_ranges_reader = std::function<void(std::span<const std::pair<std::uint64_t, std::uint64_t>>, std::uint8_t* out)>;

}  // namespace lancet::encoding::legacy

namespace lancet::encoding::detail {

// Rows whose bytes lie closer than this are fetched in one read (a local read of a
// few KiB costs about what a separate request does).
inline constexpr std::uint64_t merge_gap_bytes = 16 * 1024;

inline int value_bits(const arrow::type_ptr& type) {
  return type->id == arrow::type_id::boolean ? 1 : arrow::bit_width(*type);
}

// The flat encoding under at most one NoNull wrapper (what Lance writes for offsets and
// validity), or null.
inline const pb::enc20::flat* plain_flat(const pb::enc20::array_encoding& e) {
  const pb::enc20::array_encoding* cur = &e;
  if (const auto* nl = std::get_if<pb::enc20::nullable>(&cur->value)) {
    const auto* nn = std::get_if<pb::enc20::nullable::no_null>(&nl->nullability);
    if (!nn || !nn->values) return nullptr;
    cur = &*nn->values;
  }
  const auto* f = std::get_if<pb::enc20::flat>(&cur->value);
  if (!f || f->compression || !f->buffer || f->buffer->type != pb::enc20::buffer::page) return nullptr;
  return f;
}

class page_rows {
 public:
  page_rows(const std::vector<std::uint64_t>& buffer_offsets, const std::vector<std::uint64_t>& buffer_sizes,
            std::uint64_t page_length, const legacy::byte_reader& read,
            const legacy::byte_ranges_reader& read_ranges, std::string where)
      : offsets_(buffer_offsets),
        sizes_(buffer_sizes),
        page_length_(page_length),
        read_(read),
        read_ranges_(read_ranges),
        where_(std::move(where)) {}

  static bool addressable(const pb::enc20::array_encoding& e, const arrow::type_ptr& type) {
    using arrow::type_id;
    if (const auto* f = std::get_if<pb::enc20::flat>(&e.value)) {
      const auto bits = value_bits(type);
      return bits > 0 && !f->compression && f->bits_per_value == std::uint64_t(bits) && f->buffer &&
             f->buffer->type == pb::enc20::buffer::page;
    }
    if (const auto* nl = std::get_if<pb::enc20::nullable>(&e.value)) {
      if (std::holds_alternative<pb::enc20::nullable::all_null>(nl->nullability)) return true;
      if (const auto* nn = std::get_if<pb::enc20::nullable::no_null>(&nl->nullability))
        return nn->values && addressable(*nn->values, type);
      if (const auto* sn = std::get_if<pb::enc20::nullable::some_null>(&nl->nullability)) {
        if (!sn->validity || !sn->values) return false;
        const auto* v = plain_flat(*sn->validity);
        return v && v->bits_per_value == 1 && addressable(*sn->values, type);
      }
      return false;
    }
    if (const auto* l = std::get_if<pb::enc20::fixed_size_list>(&e.value))
      return type->id == arrow::type_id::fixed_size_list && !l->has_validity && l->items &&
             l->dimension == std::uint32_t(type->list_size) && l->dimension > 0 &&
             addressable(*l->items, type->children.at(0).type);
    if (const auto* b = std::get_if<pb::enc20::binary>(&e.value)) {
      if (!arrow::is_binary_like(type->id) || !b->indices || !b->bytes) return false;
      const auto* idx = plain_flat(*b->indices);
      const auto* bytes = std::get_if<pb::enc20::flat>(&b->bytes->value);
      return idx && idx->bits_per_value == 64 && bytes && bytes->bits_per_value == 8 && !bytes->compression &&
             bytes->buffer && bytes->buffer->type == pb::enc20::buffer::page;
    }
    return false;
  }

  // The rows (page-relative, ascending, repeats allowed) of a page encoded as `e`;
  // `e` must be addressable.
  arrow::array_ptr take(const pb::enc20::array_encoding& e, const arrow::type_ptr& type,
                        const std::vector<std::uint64_t>& rows) const {
    for (auto r : rows)
      if (r >= page_length_) fail("row " + std::to_string(r) + " is past the page's " + std::to_string(page_length_) + " rows");
    return take_values(e, type, rows, 1);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw corrupt_error(where_ + ": " + msg); }

  // Buffer `index` of the page as (absolute position, size), checked to hold `need` bytes.
  std::pair<std::uint64_t, std::uint64_t> buffer_at(const std::optional<pb::enc20::buffer>& b, std::uint64_t need,
                                                    const char* what) const {
    if (!b || b->type != pb::enc20::buffer::page) fail(std::string(what) + " has no page buffer");
    if (b->buffer_index >= offsets_.size())
      fail(std::string(what) + " refers to buffer " + std::to_string(b->buffer_index) + " but the page has " +
           std::to_string(offsets_.size()));
    if (sizes_[b->buffer_index] < need)
      fail(std::string(what) + " buffer " + std::to_string(b->buffer_index) + " holds " +
           std::to_string(sizes_[b->buffer_index]) + " bytes, " + std::to_string(need) + " needed");
    return {offsets_[b->buffer_index], sizes_[b->buffer_index]};
  }

  static std::uint64_t bytes_for(std::uint64_t values, std::uint64_t bits) {
    if (bits != 0 && values > std::numeric_limits<std::uint64_t>::max() / bits)
      throw corrupt_error("value count " + std::to_string(values) + " overflows");
    return (values * bits + 7) / 8;
  }

  // Spans [lo, hi) of the buffer at `pos` (relative to it), each group's bytes read
  // into one buffer: all groups in one read_ranges_ call when there are several and it
  // is set, else one read per group. at[g] is where group g's bytes start.
  shared_bytes read_groups(std::uint64_t pos, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& groups,
                           std::vector<std::size_t>& at) const {
    at.assign(groups.size(), 0);
    if (groups.size() == 1) {
      const auto [lo, hi] = groups[0];
      auto got = read_(pos + lo, hi - lo);
      if (got.size() < hi - lo) fail("short read of " + std::to_string(got.size()) + " bytes");
      return got;
    }
    std::uint64_t total = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      at[g] = std::size_t(total);
      total += groups[g].second - groups[g].first;
    }
    if (read_ranges_) {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
      ranges.reserve(groups.size());
      for (const auto& [lo, hi] : groups) ranges.emplace_back(pos + lo, hi - lo);
      auto mem = shared_uninitialised_bytes(std::size_t(total));  // filled in full by the read
      read_ranges_(ranges, mem.get());
      const std::uint8_t* data = mem.get();
      return shared_bytes(std::move(mem), data, std::size_t(total));
    }
    aligned_buffer all;
    all.reserve(std::size_t(total));
    for (const auto& [lo, hi] : groups) {
      const auto got = read_(pos + lo, hi - lo);
      if (got.size() < hi - lo) fail("short read of " + std::to_string(got.size()) + " bytes");
      all.append(got.data(), std::size_t(hi - lo));
    }
    return shared_bytes(std::move(all));
  }

  // Bits [first[k] * unit, (first[k] + 1) * unit) of the buffer at `pos` for each k,
  // packed one after the other into the result. Nearby spans share one read.
  aligned_buffer gather_bits(std::uint64_t pos, const std::vector<std::uint64_t>& first, std::uint64_t unit) const {
    aligned_buffer out;
    out.resize(std::size_t(bytes_for(first.size(), unit)));
    const bool whole_bytes = unit % 8 == 0;
    // Group the spans (nearby ones share a read), then read every group, then copy.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> groups;
    std::vector<std::size_t> group_end;  // first index k of the next group
    std::size_t k = 0;
    while (k < first.size()) {
      const std::uint64_t lo = first[k] * unit / 8;
      std::uint64_t hi = ((first[k] + 1) * unit + 7) / 8;
      std::size_t j = k + 1;
      while (j < first.size()) {
        const std::uint64_t b = first[j] * unit / 8;
        if (b > hi + merge_gap_bytes) break;
        hi = std::max(hi, ((first[j] + 1) * unit + 7) / 8);
        ++j;
      }
      groups.emplace_back(lo, hi);
      group_end.push_back(j);
      k = j;
    }
    if (groups.empty()) return out;
    std::vector<std::size_t> at;
    const auto got = read_groups(pos, groups, at);
    k = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::uint64_t lo = groups[g].first;
      const std::uint8_t* base = got.data() + at[g];
      for (std::size_t i = k; i < group_end[g]; ++i) {
        const std::uint64_t src_bit = first[i] * unit - lo * 8;
        if (whole_bytes)
          std::memcpy(out.data() + i * (unit / 8), base + src_bit / 8, std::size_t(unit / 8));
        else
          arrow::copy_bits(base, std::int64_t(src_bit), out.data(), std::int64_t(i * unit), std::int64_t(unit));
      }
      k = group_end[g];
    }
    return out;
  }

  // Values [r * per_row, (r + 1) * per_row) for each row r, of an encoding holding
  // page_length_ * per_row values of `type`.
  arrow::array_ptr take_values(const pb::enc20::array_encoding& e, const arrow::type_ptr& type,
                               const std::vector<std::uint64_t>& rows, std::uint64_t per_row) const {
    const std::uint64_t values = page_length_ * per_row;
    const std::uint64_t n = rows.size() * per_row;
    if (const auto* f = std::get_if<pb::enc20::flat>(&e.value)) {
      const auto bits = std::uint64_t(value_bits(type));
      const auto [pos, size] = buffer_at(f->buffer, bytes_for(values, bits), "values");
      (void)size;
      auto out = std::make_shared<arrow::array_data>();
      out->type = type;
      out->length = std::int64_t(n);
      out->null_count = 0;
      out->buffers = {shared_bytes(), shared_bytes(gather_bits(pos, rows, bits * per_row))};
      return out;
    }
    if (const auto* nl = std::get_if<pb::enc20::nullable>(&e.value)) {
      if (std::holds_alternative<pb::enc20::nullable::all_null>(nl->nullability)) {
        const std::vector<shared_bytes> no_buffers;
        legacy::page_decoder none(no_buffers, where_);
        return none.decode(e, n, type);
      }
      if (const auto* nn = std::get_if<pb::enc20::nullable::no_null>(&nl->nullability))
        return take_values(*nn->values, type, rows, per_row);
      const auto& sn = std::get<pb::enc20::nullable::some_null>(nl->nullability);
      const auto* vf = plain_flat(*sn.validity);
      const auto [pos, size] = buffer_at(vf->buffer, bytes_for(values, 1), "validity");
      (void)size;
      auto validity = shared_bytes(gather_bits(pos, rows, per_row));
      return legacy::with_validity(*take_values(*sn.values, type, rows, per_row), std::move(validity), type);
    }
    if (const auto* l = std::get_if<pb::enc20::fixed_size_list>(&e.value)) {
      auto out = std::make_shared<arrow::array_data>();
      out->type = type;
      out->length = std::int64_t(n);
      out->null_count = 0;
      out->buffers = {shared_bytes()};
      out->children = {take_values(*l->items, type->children.at(0).type, rows, per_row * l->dimension)};
      return out;
    }
    if (const auto* b = std::get_if<pb::enc20::binary>(&e.value)) {
      if (per_row != 1) fail("a binary page inside a fixed-size list");
      return take_binary(*b, type, rows);
    }
    fail("page encoding cannot be read row by row");
  }

  // Strings and binaries: the end offsets of each row and of the row before it, then
  // the rows' bytes.
  arrow::array_ptr take_binary(const pb::enc20::binary& m, const arrow::type_ptr& type,
                               const std::vector<std::uint64_t>& rows) const {
    const auto* idx = plain_flat(*m.indices);
    const auto [ipos, isize] = buffer_at(idx->buffer, bytes_for(page_length_, 64), "binary offsets");
    (void)isize;
    // Row r's bytes: [end(r - 1), end(r)) with end(-1) = 0, nulls folded in by null_adjustment.
    std::vector<std::uint64_t> wanted;
    wanted.reserve(rows.size() * 2);
    for (auto r : rows) {
      if (r > 0) wanted.push_back(r - 1);
      wanted.push_back(r);
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    const auto ends_bytes = gather_bits(ipos, wanted, 64);
    auto end_of = [&](std::uint64_t r) {
      const auto k = std::size_t(std::lower_bound(wanted.begin(), wanted.end(), r) - wanted.begin());
      return le::load<std::uint64_t>(ends_bytes.data() + 8 * k);
    };
    const std::uint64_t adj = m.null_adjustment;
    auto plain = [&](std::uint64_t e) { return adj != 0 && e >= adj ? e - adj : e; };
    const auto* bf = std::get_if<pb::enc20::flat>(&m.bytes->value);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans(rows.size());
    std::uint64_t max_end = 0;
    const std::size_t n = rows.size();
    const bool large = arrow::is_large_binary_like(type->id);
    aligned_buffer offs, validity;
    offs.resize((n + 1) * (large ? 8 : 4));
    validity.resize((n + 7) / 8);
    std::int64_t nulls = 0;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t raw = end_of(rows[i]);
      const bool is_null = adj != 0 && raw >= adj;
      const std::uint64_t e = plain(raw), b = rows[i] == 0 ? 0 : plain(end_of(rows[i] - 1));
      if (e < b || (i > 0 && b < spans[i - 1].first))
        fail("binary offset " + std::to_string(e) + " at row " + std::to_string(rows[i]) + " goes backwards");
      spans[i] = {b, e};
      max_end = std::max(max_end, e);
      if (is_null) ++nulls;
      else arrow::set_bit(validity.data(), std::int64_t(i), true);
      total += e - b;
      if (large) le::store<std::int64_t>(offs.data() + 8 * (i + 1), std::int64_t(total));
      else {
        if (total > std::uint64_t(std::numeric_limits<std::int32_t>::max()))
          throw unsupported_error(where_ + ": taken binary values need more than 2^31 bytes");
        le::store<std::int32_t>(offs.data() + 4 * (i + 1), std::int32_t(total));
      }
    }
    const auto [bpos, bsize] = buffer_at(bf->buffer, max_end, "binary bytes");
    (void)bsize;
    aligned_buffer bytes;
    bytes.resize(std::size_t(total));
    // Group the spans (nearby ones share a read), read every non-empty group, copy.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> groups;
    std::vector<std::pair<std::size_t, std::size_t>> members;  // [k, j) of spans per group
    std::size_t k = 0;
    while (k < n) {
      std::uint64_t lo = spans[k].first, hi = spans[k].second;
      std::size_t j = k + 1;
      while (j < n && spans[j].first <= hi + merge_gap_bytes) hi = std::max(hi, spans[j++].second);
      if (hi > lo) {
        groups.emplace_back(lo, hi);
        members.emplace_back(k, j);
      }
      k = j;
    }
    if (!groups.empty()) {
      std::vector<std::size_t> group_at;
      const auto got = read_groups(bpos, groups, group_at);
      std::size_t at = 0;
      for (std::size_t g = 0; g < groups.size(); ++g)
        for (std::size_t i = members[g].first; i < members[g].second; ++i) {
          const auto len = std::size_t(spans[i].second - spans[i].first);
          if (len) std::memcpy(bytes.data() + at, got.data() + group_at[g] + (spans[i].first - groups[g].first), len);
          at += len;
        }
    }
    return legacy::binary_array(type, n, nulls, std::move(validity), std::move(offs), shared_bytes(std::move(bytes)));
  }

  const std::vector<std::uint64_t>& offsets_;
  const std::vector<std::uint64_t>& sizes_;
  std::uint64_t page_length_;
  const legacy::byte_reader& read_;
  const legacy::byte_ranges_reader& read_ranges_;
  std::string where_;
};

}  // namespace lancet::encoding::detail

namespace lancet::encoding::legacy {

// Whether rows of a page encoded as `e` (values of `type`) can be read in place.
inline bool rows_addressable(const enc20::array_encoding& e, const arrow::type_ptr& type) {
  return detail::page_rows::addressable(e, type);
}

// The given rows (page-relative, ascending, repeats allowed) of one page, reading only
// their bytes through `read` (and, when given, many scattered rows at once through
// `read_ranges`). The page's buffers are at the given absolute positions; `e` must be
// rows_addressable. Inconsistent sizes or offsets are corrupt_error naming `where`.
inline arrow::array_ptr take_page_rows(const enc20::array_encoding& e, const arrow::type_ptr& type,
                                       const std::vector<std::uint64_t>& buffer_offsets,
                                       const std::vector<std::uint64_t>& buffer_sizes, std::uint64_t page_length,
                                       const std::vector<std::uint64_t>& rows, const byte_reader& read,
                                       std::string where, const byte_ranges_reader& read_ranges = {}) {
  detail::page_rows p(buffer_offsets, buffer_sizes, page_length, read, read_ranges, std::move(where));
  return p.take(e, type, rows);
}

}  // namespace lancet::encoding::legacy
