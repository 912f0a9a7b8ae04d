// A source reading a local file with pread (thread-safe, no shared file offset), or,
// optionally, through a read-only memory mapping whose reads are zero-copy: the
// returned shared_bytes keep the mapping alive even after the file_source is gone.
//
// Mapping caveat: if another process truncates a mapped file, touching the lost pages
// raises SIGBUS; pread (the default) reports a typed io_error instead.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <new>
#include <string>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/detail/batched_read.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/source.hpp"

namespace lancet::io {

struct file_source_options {
  // Map the file and hand out zero-copy views instead of reading into new buffers.
  // Random takes gain most: a dataset keeps its data files' readers (and so their
  // mappings) open between takes, and a mapped read costs no system call. A take of 100
  // random 128-d vectors from a 200,000-row file: ~30-40 us mapped; ~200 us with one
  // pread per row, ~80 us with the rows' reads batched (read_into; bench_take in
  // bench/RESULTS.md). Not the default because of the SIGBUS caveat above.
  bool use_mmap = false;
};

class file_source {
 public:
  explicit file_source(std::string path, file_source_options options = {}) {
    auto st = std::make_shared<state>();
    st->path = std::move(path);
    if (st->path.empty()) throw invalid_input_error("file_source: empty path");
    st->fd = open_fd(st->path, O_RDONLY);
    struct stat info;
    if (::fstat(st->fd.get(), &info) != 0) throw_errno("cannot stat", st->path, errno);
    if (!S_ISREG(info.st_mode)) throw io_error("cannot read '" + st->path + "': not a regular file");
    st->size = static_cast<std::uint64_t>(info.st_size);
    if (options.use_mmap && st->size > 0) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(st->size), PROT_READ, MAP_SHARED, st->fd.get(), 0);
      if (p == MAP_FAILED) throw_errno("cannot map", st->path, errno);
      st->map = static_cast<const std::uint8_t*>(p);
    }
    st->mapped = options.use_mmap;
    state_ = std::move(st);
  }

  std::uint64_t size() const noexcept { return state_->size; }

  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    check_range(offset, length, state_->size, state_->path);
    if (length == 0) return {};
    auto n = static_cast<std::size_t>(length);
    if (state_->map) return shared_bytes(state_, state_->map + offset, n);
    // Uninitialised aligned storage: pread fills it entirely or we throw.
    auto mem = shared_uninitialised_bytes(n);
    std::size_t got = pread_full(state_->fd.get(), mem.get(), n, offset, state_->path);
    if (got != n) {
      throw io_error("cannot read '" + state_->path + "': file ended after " + std::to_string(got) + " of " +
                     std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                     " (it was " + std::to_string(state_->size) + " bytes when opened)");
    }
    const std::uint8_t* data = mem.get();
    return shared_bytes(std::move(mem), data, n);
  }

  shared_bytes read_all() const { return read(0, size()); }

  // The ranges' bytes, end to end, into out (io::read_into): copied from the mapping,
  // or up to 64 small ranges per system call (io/detail/batched_read.hpp).
  void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const {
    for (const auto& r : ranges) check_range(r.offset, r.length, state_->size, state_->path);
    if (state_->map) {
      for (const auto& r : ranges) {
        if (r.length) std::memcpy(out, state_->map + r.offset, static_cast<std::size_t>(r.length));
        out += r.length;
      }
      return;
    }
    detail::read_ranges_into(state_->fd.get(), ranges, out, state_->path);
  }

  bool is_zero_copy() const noexcept { return state_->mapped; }
  // One pread of any size is one request: readers need not split large reads.
  bool prefers_whole_reads() const noexcept { return true; }
  const std::string& path() const noexcept { return state_->path; }
  const std::string& name() const noexcept { return state_->path; }

 private:
  struct state {
    std::string path;
    unique_fd fd;
    std::uint64_t size = 0;
    const std::uint8_t* map = nullptr;
    bool mapped = false;
    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (map) ::munmap(const_cast<std::uint8_t*>(map), static_cast<std::size_t>(size));
    }
  };
  std::shared_ptr<const state> state_;
};

static_assert(source<file_source>);

}  // namespace lancet::io
