// The page table of a file being written: each column's Page messages, kept in memory
// or, with a spill path, moved to a sidecar file once a column's share of a small
// memory budget fills. The column metadata assembled at finish is byte-identical
// either way (pages are stored as their encoded `pages` field records).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/file2.hpp"

namespace lancet::file {

// Lance's spill budget: 256 KiB split across columns, at least 64 bytes each.
inline constexpr std::uint64_t page_spill_budget = 256 * 1024;
inline constexpr std::uint64_t page_spill_floor = 64;

class page_table {
 public:
  page_table() = default;
  page_table(const page_table&) = delete;
  page_table& operator=(const page_table&) = delete;
  ~page_table() { close_spill(); }

  // `spill_path`: where to spill (created, truncated, removed at destruction).
  void reset(std::uint32_t num_columns, std::optional<std::string> spill_path) {
    close_spill();
    columns_.assign(num_columns, column_pages{});
    if (spill_path) {
      spill_path_ = *spill_path;
      fd_ = ::open(spill_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd_ < 0) throw io_error("cannot create page metadata spill file '" + spill_path_ + "': " + std::strerror(errno));
      budget_per_column_ = num_columns ? std::max(page_spill_floor, page_spill_budget / num_columns) : page_spill_budget;
    }
  }

  void add(std::uint32_t column, const pb::file2::column_metadata::page& p) {
    auto& c = columns_.at(column);
    pb::writer w;
    w.bytes(pb::file2::column_metadata::f_pages, pb::encode(p));
    c.pending += w.bytes();
    ++c.num_pages;
    if (fd_ >= 0 && c.pending.size() > budget_per_column_) spill(c);
  }

  std::size_t num_pages(std::uint32_t column) const { return columns_.at(column).num_pages; }

  // The encoded `pages` records of a column, in order (reading back what was spilled).
  std::string take_pages(std::uint32_t index) {
    auto& c = columns_.at(index);
    std::string out;
    for (const auto& [pos, len] : c.spilled) {
      const auto at = out.size();
      out.resize(at + len);
      std::size_t done = 0;
      while (done < len) {
        const auto r = ::pread(fd_, out.data() + at + done, len - done, off_t(pos + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
          throw io_error("cannot read back page metadata from '" + spill_path_ + "' at offset " +
                         std::to_string(pos + done) + ": " + (r < 0 ? std::strerror(errno) : "unexpected end"));
        done += std::size_t(r);
      }
    }
    out += c.pending;
    c = column_pages{};
    return out;
  }

 private:
  struct column_pages {
    std::string pending;  // encoded records not yet spilled
    std::vector<std::pair<std::uint64_t, std::size_t>> spilled;
    std::size_t num_pages = 0;
  };

  void spill(column_pages& c) {
    std::size_t done = 0;
    while (done < c.pending.size()) {
      const auto r = ::pwrite(fd_, c.pending.data() + done, c.pending.size() - done, off_t(spill_end_ + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw io_error("cannot spill page metadata to '" + spill_path_ + "': " + std::strerror(errno));
      done += std::size_t(r);
    }
    c.spilled.emplace_back(spill_end_, c.pending.size());
    spill_end_ += c.pending.size();
    c.pending.clear();
  }

  void close_spill() noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(spill_path_.c_str());
      fd_ = -1;
    }
  }

  std::vector<column_pages> columns_;
  std::string spill_path_;
  int fd_ = -1;
  std::uint64_t budget_per_column_ = 0;
  std::uint64_t spill_end_ = 0;
};

}  // namespace lancet::file
