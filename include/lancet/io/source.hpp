// The source concept: random-access bytes the reader pulls from (a file, a buffer).
// read() returns shared_bytes, so a source may hand out zero-copy views (a memory
// buffer, a mapped file) that keep their storage alive. Every read is bounds-checked:
// a range past the end is a corrupt_error naming offset, length and size, because a
// file whose metadata points past its end is a corrupt file.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"

namespace lancet::io {

template <class S>
concept source = requires(const S& s, std::uint64_t offset, std::uint64_t length) {
  // Total size in bytes.
  { s.size() } -> std::convertible_to<std::uint64_t>;
  // Bytes [offset, offset + length); throws corrupt_error past the end, io_error on
  // failure. Safe to call from several threads at once.
  { s.read(offset, length) } -> std::same_as<shared_bytes>;
};

struct byte_range {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t end() const noexcept { return offset + length; }
  friend bool operator==(const byte_range&, const byte_range&) = default;
};

// Throws corrupt_error unless [offset, offset + length) lies within [0, size);
// overflow-safe.
inline void check_range(std::uint64_t offset, std::uint64_t length, std::uint64_t size,
                        std::string_view name) {
  if (offset <= size && length <= size - offset) return;
  std::string msg = "read of " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                    " is past the end of '";
  msg += name;
  msg += "' (size " + std::to_string(size) + ")";
  throw corrupt_error(msg);
}

// A source over bytes already in memory; reads are zero-copy slices.
class memory_source {
 public:
  memory_source() = default;
  explicit memory_source(shared_bytes bytes, std::string name = "memory")
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  explicit memory_source(aligned_buffer&& buf, std::string name = "memory")
      : memory_source(shared_bytes(std::move(buf)), std::move(name)) {}

  std::uint64_t size() const noexcept { return bytes_.size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    check_range(offset, length, size(), name_);
    return bytes_.slice(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
  }
  bool is_zero_copy() const noexcept { return true; }
  const std::string& name() const noexcept { return name_; }
  const shared_bytes& bytes() const noexcept { return bytes_; }

 private:
  shared_bytes bytes_;
  std::string name_ = "memory";
};

static_assert(source<memory_source>);

struct coalesce_options {
  // Ranges separated by at most this many bytes are fetched with one read (the gap
  // is read and dropped): one larger read beats two system calls for small gaps.
  std::uint64_t max_gap = 4096;
  // A merged read grows no larger than this (unless a single range is larger).
  std::uint64_t max_read = std::uint64_t(16) << 20;
};

// A source's name for messages: its name() when it has one, else "source".
template <class S>
std::string source_name(const S& s) {
  if constexpr (requires { s.name(); }) {
    return std::string(s.name());
  } else {
    return "source";
  }
}

// Reads each range, in the order given, into out, end to end (out holds the sum of the
// lengths): the bytes of many scattered rows in one buffer. Every range is
// bounds-checked before anything is read. A source may offer this as a member,
// read_into(ranges, out), checking its ranges as read() does, to read them in fewer
// requests (io::file_source: one system call for up to 64 small ranges); otherwise
// each range is one read() and a copy.
template <source S>
void read_into(const S& src, std::span<const byte_range> ranges, std::uint8_t* out) {
  if constexpr (requires { src.read_into(ranges, out); }) {
    src.read_into(ranges, out);
  } else {
    const std::uint64_t size = src.size();
    for (const auto& r : ranges) check_range(r.offset, r.length, size, io::source_name(src));
    for (const auto& r : ranges) {
      const auto b = src.read(r.offset, r.length);
      if (b.size() != r.length)
        throw corrupt_error("read of " + std::to_string(r.length) + " bytes at offset " + std::to_string(r.offset) +
                            " of '" + io::source_name(src) + "' returned " + std::to_string(b.size()));
      if (r.length) std::memcpy(out, b.data(), static_cast<std::size_t>(r.length));
      out += r.length;
    }
  }
}

// Reads many ranges at once, in the order given (result[i] is ranges[i]). Ranges may
// overlap and come in any order. Adjacent or nearby ranges are merged into one read
// (see coalesce_options) unless the source is zero-copy, where merging gains nothing.
// Every range is bounds-checked before anything is read.
template <source S>
std::vector<shared_bytes> read_ranges(const S& src, std::span<const byte_range> ranges,
                                      coalesce_options opts = {}) {
  const std::uint64_t size = src.size();
  for (const auto& r : ranges) check_range(r.offset, r.length, size, io::source_name(src));
  std::vector<shared_bytes> out(ranges.size());

  bool zero_copy = false;
  if constexpr (requires { src.is_zero_copy(); }) zero_copy = src.is_zero_copy();
  if (zero_copy) {
    for (std::size_t i = 0; i < ranges.size(); ++i) out[i] = src.read(ranges[i].offset, ranges[i].length);
    return out;
  }

  std::vector<std::size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].offset != ranges[b].offset ? ranges[a].offset < ranges[b].offset
                                                : ranges[a].length < ranges[b].length;
  });
  std::size_t i = 0;
  while (i < order.size()) {
    // Grow one group [start, end) over the sorted ranges.
    std::uint64_t start = ranges[order[i]].offset;
    std::uint64_t end = ranges[order[i]].end();
    std::size_t j = i + 1;
    for (; j < order.size(); ++j) {
      const byte_range& r = ranges[order[j]];
      if (r.offset > end && r.offset - end > opts.max_gap) break;
      std::uint64_t new_end = std::max(end, r.end());
      if (new_end - start > opts.max_read && new_end > end) break;
      end = new_end;
    }
    shared_bytes group = end > start ? src.read(start, end - start) : shared_bytes();
    for (std::size_t k = i; k < j; ++k) {
      const byte_range& r = ranges[order[k]];
      if (r.length > 0) {
        out[order[k]] = group.slice(static_cast<std::size_t>(r.offset - start), static_cast<std::size_t>(r.length));
      }
    }
    i = j;
  }
  return out;
}

template <source S>
std::vector<shared_bytes> read_ranges(const S& src, std::initializer_list<byte_range> ranges,
                                      coalesce_options opts = {}) {
  return read_ranges(src, std::span<const byte_range>(ranges.begin(), ranges.size()), opts);
}

}  // namespace lancet::io
