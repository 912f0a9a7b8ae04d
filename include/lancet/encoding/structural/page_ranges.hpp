// Reading a row range of one structural page (2.1+) by fetching only the bytes those
// rows need, for full-zip pages (a fixed stride or the repetition index locates the
// rows) and mini-block pages without repetition (the chunk metadata locates the
// chunks). Pages it cannot narrow down are read whole by page_decoder.hpp's read_page.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/encoding/structural/decompress.hpp"
#include "lancet/encoding/structural/fullzip_reader.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

#include "lancet/encoding/structural/page_decoder.hpp"
#include "lancet/encoding/structural/read_callbacks.hpp"

namespace lancet::encoding::detail {

// The absolute file offset of bytes [from, to) of page buffer `buf`, checked against
// the buffer's recorded size (corrupt_error naming `what` and `where`).
inline std::uint64_t buffer_part_offset(std::span<const std::uint64_t> buffer_offsets,
                                        std::span<const std::uint64_t> buffer_sizes, std::size_t buf, std::uint64_t from,
                                        std::uint64_t to, const char* what, const std::string& where) {
  if (from > to || to > buffer_sizes[buf])
    throw corrupt_error(where + ": " + what + " bytes [" + std::to_string(from) + ", " + std::to_string(to) +
                        ") outside page buffer " + std::to_string(buf) + " of " + std::to_string(buffer_sizes[buf]) +
                        " bytes");
  const auto at = buffer_offsets[buf];
  if (at > ~std::uint64_t(0) - to) throw corrupt_error(where + ": page buffer offset " + std::to_string(at) + " overflows");
  return at + from;
}

// Bytes [from, to) of page buffer `buf`, read from the file; bounds-checked against
// the buffer's recorded size.
inline shared_bytes read_buffer_part(std::span<const std::uint64_t> buffer_offsets, std::span<const std::uint64_t> buffer_sizes,
                                     std::size_t buf, std::uint64_t from, std::uint64_t to, const char* what,
                                     const std::string& where, const structural::read_file_range& read_range) {
  const auto offset = buffer_part_offset(buffer_offsets, buffer_sizes, buf, from, to, what, where);
  auto bytes = read_range(offset, to - from);
  if (bytes.size() != to - from)
    throw corrupt_error(where + ": read " + std::to_string(bytes.size()) + " bytes at offset " + std::to_string(offset) +
                        ", " + std::to_string(to - from) + " expected");
  return bytes;
}

// Parts [from, to) of page buffer `buf` (page-relative pairs), bounds-checked, read end
// to end into one buffer with one read_ranges call.
inline shared_bytes read_buffer_parts(std::span<const std::uint64_t> buffer_offsets, std::span<const std::uint64_t> buffer_sizes,
                                      std::size_t buf, std::span<const std::pair<std::uint64_t, std::uint64_t>> parts,
                                      const char* what, const std::string& where,
                                      const structural::read_file_ranges& read_ranges) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  ranges.reserve(parts.size());
  std::uint64_t total = 0;
  for (const auto& [from, to] : parts) {
    ranges.emplace_back(buffer_part_offset(buffer_offsets, buffer_sizes, buf, from, to, what, where), to - from);
    if (to - from > ~std::uint64_t(0) - total) throw corrupt_error(where + ": " + what + " bytes overflow");
    total += to - from;
  }
  if (total == 0) return {};
  auto mem = shared_uninitialised_bytes(static_cast<std::size_t>(total));
  read_ranges(ranges, mem.get());
  const std::uint8_t* data = mem.get();
  return shared_bytes(std::move(mem), data, static_cast<std::size_t>(total));
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// Reads the rows of `runs` of a full-zip page by fetching only their bytes, found by
// full_zip_row_locator (fullzip_reader.hpp): at a fixed stride, or through the page's
// repetition index, of which only the runs' entries are fetched. The runs' bytes, put
// together, are a page of their own of those rows, decoded as one.
// `buffer_offsets` / `buffer_sizes` are the page buffers' absolute file positions.
// Returns nullopt when the page is not full-zip or its rows cannot be located
// without the whole buffer (read_page then reads it, and validates it, as a whole).
inline std::optional<page_slice> read_full_zip_row_runs(const enc21::page_layout& layout,
                                                        std::span<const std::uint64_t> buffer_offsets,
                                                        std::span<const std::uint64_t> buffer_sizes,
                                                        std::uint64_t page_rows, row_runs runs, const std::string& where,
                                                        const read_file_range& read_range,
                                                        const read_file_ranges& read_ranges = {}) {
  const auto* z = std::get_if<enc21::full_zip_layout>(&layout.value);
  if (!z || !read_range || runs.empty() || buffer_sizes.empty() || buffer_offsets.size() != buffer_sizes.size())
    return std::nullopt;
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (runs[r].first >= runs[r].second || runs[r].second > page_rows || (r && runs[r].first < runs[r - 1].second))
      return std::nullopt;
  auto fetch = [&](std::size_t buf, std::uint64_t from, std::uint64_t to, const char* what) {
    return detail::read_buffer_part(buffer_offsets, buffer_sizes, buf, from, to, what, where, read_range);
  };
  // Byte range [pb, pe) of the values of each run.
  const auto loc = full_zip_row_locator::of(*z, buffer_sizes, page_rows, where);
  if (loc.how == full_zip_row_locator::by::none) return std::nullopt;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bytes(runs.size());
  std::uint64_t n = 0;
  for (const auto& [begin, end] : runs) n += end - begin;
  if (loc.how == full_zip_row_locator::by::stride) {
    for (std::size_t r = 0; r < runs.size(); ++r) bytes[r] = loc.stride_bytes(runs[r].first, runs[r].second);
  } else {
    // Entries begin..end of each run (a small part of the page), all runs' in one request
    // when the source can.
    shared_bytes all_entries;
    if (read_ranges && runs.size() > 1) {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> parts;
      parts.reserve(runs.size());
      for (const auto& [begin, end] : runs) parts.push_back(loc.entries_of(begin, end));
      all_entries = detail::read_buffer_parts(buffer_offsets, buffer_sizes, 1, parts, "repetition index", where, read_ranges);
    }
    std::uint64_t entries_at = 0;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const auto [begin, end] = runs[r];
      const auto [from, to] = loc.entries_of(begin, end);
      shared_bytes ri;
      if (all_entries.size()) {
        ri = all_entries.slice(static_cast<std::size_t>(entries_at), static_cast<std::size_t>(to - from));
        entries_at += to - from;
      } else {
        ri = fetch(1, from, to, "repetition index");
      }
      bytes[r] = loc.indexed_bytes(ri, begin, end, buffer_sizes[0], where);
    }
  }
  // The fetched rows are a page of their own: read_page parses and validates them.
  std::vector<shared_bytes> part;
  if (runs.size() == 1) {
    part.push_back(fetch(0, bytes[0].first, bytes[0].second, "full-zip rows"));
  } else if (read_ranges) {
    part.push_back(detail::read_buffer_parts(buffer_offsets, buffer_sizes, 0, bytes, "full-zip rows", where, read_ranges));
  } else {
    std::uint64_t total = 0;
    for (const auto& [pb, pe] : bytes) total += pe - pb;
    aligned_buffer all;
    all.reserve(std::size_t(total));
    for (const auto& [pb, pe] : bytes) {
      const auto b = fetch(0, pb, pe, "full-zip rows");
      all.append(b.data(), b.size());
    }
    part.push_back(shared_bytes(std::move(all)));
  }
  return read_page(layout, part, n, 0, n, where, read_range);
}

// Reads rows [begin, end) of a full-zip page by fetching only their bytes (see
// read_full_zip_row_runs).
inline std::optional<page_slice> read_full_zip_rows(const enc21::page_layout& layout,
                                                    std::span<const std::uint64_t> buffer_offsets,
                                                    std::span<const std::uint64_t> buffer_sizes, std::uint64_t page_rows,
                                                    std::uint64_t begin, std::uint64_t end, const std::string& where,
                                                    const read_file_range& read_range) {
  if (begin >= end) return std::nullopt;
  const std::pair<std::uint64_t, std::uint64_t> run{begin, end};
  return read_full_zip_row_runs(layout, buffer_offsets, buffer_sizes, page_rows, row_runs(&run, 1), where, read_range);
}

// What a read of rows of a mini-block page (without repetition) needs for every run of
// one take: its chunk metadata, parsed, with each chunk's first row, and its dictionary
// (if any), fetched once.
struct mini_block_index {
  shared_bytes meta;
  std::vector<detail::chunk_meta> chunks;
  std::vector<std::uint64_t> first_row;  // chunks.size() + 1: where each chunk's rows begin
  shared_bytes dictionary;
};

// The index of a mini-block page without repetition; nullopt for other pages.
inline std::optional<mini_block_index> index_mini_block(const enc21::page_layout& layout,
                                                        std::span<const std::uint64_t> buffer_offsets,
                                                        std::span<const std::uint64_t> buffer_sizes,
                                                        const std::string& where, const read_file_range& read_range) {
  const auto* m = std::get_if<enc21::mini_block_layout>(&layout.value);
  if (!m || !read_range || m->rep_compression || m->repetition_index_depth > 0 ||
      buffer_offsets.size() != buffer_sizes.size())
    return std::nullopt;
  const level_scheme s(m->layers);
  const std::size_t needed = m->dictionary ? 3 : 2;
  if (s.max_rep > 0 || buffer_sizes.size() < needed) return std::nullopt;
  mini_block_index idx;
  idx.meta = detail::read_buffer_part(buffer_offsets, buffer_sizes, 0, 0, buffer_sizes[0], "chunk metadata", where,
                                      read_range);
  idx.chunks = detail::parse_chunk_meta(idx.meta, buffer_sizes[1], m->has_large_chunk, m->num_items, where);
  idx.first_row.reserve(idx.chunks.size() + 1);
  std::uint64_t at = 0;
  for (const auto& c : idx.chunks) {
    idx.first_row.push_back(at);
    at += c.values;
  }
  idx.first_row.push_back(at);
  if (m->dictionary)
    idx.dictionary = detail::read_buffer_part(buffer_offsets, buffer_sizes, 2, 0, buffer_sizes[2], "dictionary", where,
                                              read_range);
  return idx;
}

// Reads the rows of `runs` (sorted, disjoint) of an indexed mini-block page: the chunks
// that hold them, in one read_ranges request where given, each decoded once however
// many runs it holds, and the runs' rows cut out and put together as one slice.
inline page_slice read_mini_block_row_runs(const enc21::page_layout& layout,
                                           std::span<const std::uint64_t> buffer_offsets,
                                           std::span<const std::uint64_t> buffer_sizes, std::uint64_t page_rows,
                                           row_runs runs, const std::string& where, const read_file_range& read_range,
                                           const read_file_ranges& read_ranges, const mini_block_index& idx) {
  const auto& m = std::get<enc21::mini_block_layout>(layout.value);
  const auto& fr = idx.first_row;
  if (runs.empty() || runs.back().second > page_rows || fr.back() < runs.back().second)
    throw corrupt_error(where + ": chunks hold fewer rows than the page's " + std::to_string(page_rows));
  // Groups of runs whose chunks [c0, c1) touch: each group's chunks are read and
  // decoded together.
  struct group {
    std::size_t c0, c1, run0, run1;
  };
  std::vector<group> groups;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const auto [b, e] = runs[r];
    if (b >= e || (r && b < runs[r - 1].second))
      throw corrupt_error(where + ": row runs are not sorted and disjoint");
    const std::size_t c0 = std::size_t(std::upper_bound(fr.begin(), fr.end(), b) - fr.begin()) - 1;
    const std::size_t c1 = std::size_t(std::lower_bound(fr.begin(), fr.end(), e) - fr.begin());
    if (!groups.empty() && c0 < groups.back().c1) {
      groups.back().c1 = std::max(groups.back().c1, c1);
      groups.back().run1 = r + 1;
    } else {
      groups.push_back({c0, c1, r, r + 1});
    }
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> parts;  // chunk bytes of each group, in buffer 1
  parts.reserve(groups.size());
  for (const auto& g : groups)
    parts.emplace_back(idx.chunks[g.c0].offset, idx.chunks[g.c1 - 1].offset + idx.chunks[g.c1 - 1].bytes);
  shared_bytes all;
  if (read_ranges && groups.size() > 1) all = detail::read_buffer_parts(buffer_offsets, buffer_sizes, 1, parts, "chunk", where, read_ranges);
  const std::size_t w = m.has_large_chunk ? 4 : 2;
  const level_scheme s(m.layers);
  page_slice out;
  std::vector<data_block> values;
  std::uint64_t at = 0;  // in `all`
  enc21::page_layout sub = layout;
  auto& sub_m = std::get<enc21::mini_block_layout>(sub.value);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const auto [from, to] = parts[gi];
    shared_bytes bytes;
    if (all.size()) {
      bytes = all.slice(std::size_t(at), std::size_t(to - from));
      at += to - from;
    } else {
      bytes = detail::read_buffer_part(buffer_offsets, buffer_sizes, 1, from, to, "chunk", where, read_range);
    }
    // The group's chunks are a page of their own (their value count: the rows they hold).
    std::vector<shared_bytes> page{idx.meta.slice(g.c0 * w, (g.c1 - g.c0) * w), std::move(bytes)};
    if (m.dictionary) page.push_back(idx.dictionary);
    const std::uint64_t first = fr[g.c0], n = fr[g.c1] - first;
    sub_m.num_items = n;
    auto whole = read_page(sub, page, n, 0, n, where, read_range);
    if (gi == 0) {
      out.layers = whole.layers;
      out.dictionary = std::move(whole.dictionary);
    }
    for (std::size_t r = g.run0; r < g.run1; ++r) {
      const auto sb = runs[r].first - first, se = runs[r].second - first;
      const auto vb = detail::visible_count(s, whole.def, 0, sb), vc = detail::visible_count(s, whole.def, sb, se);
      if (!whole.def.empty()) out.def.insert(out.def.end(), whole.def.begin() + std::ptrdiff_t(sb), whole.def.begin() + std::ptrdiff_t(se));
      values.push_back(detail::slice_block(whole.values, vb, vc));
      out.num_slots += se - sb;
    }
  }
  out.values = detail::concat_blocks(values);
  return out;
}

}  // namespace lancet::encoding::structural
