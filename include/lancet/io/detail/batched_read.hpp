// Many small reads of one file in one system call: io_uring (Linux 5.6+), one ring per
// thread, made on first use and reused. Random takes read one small range per row (a
// 128-d f32 vector: ~520 bytes), and on a VM a system call costs ~1.5 us, so the
// system calls, not the bytes, are the cost: 100 reads of 520 bytes at random offsets
// took 148 us as a pread loop and 22 us as one ring submission (bench_take in
// bench/RESULTS.md measures the takes). Where io_uring is missing or refused (old kernels,
// container seccomp profiles, non-Linux), or for a single or large range, each range
// is one pread.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <unistd.h>

#if defined(__linux__) && __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#endif
// IORING_OP_READ and IORING_FEAT_SINGLE_MMAP need Linux 5.6's headers (IORING_FEAT_RW_CUR_POS is 5.6's).
#if defined(__linux__) && defined(IORING_FEAT_RW_CUR_POS)
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <thread>
#define LANCET_IO_URING 1
#endif

#include "lancet/core/error.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/source.hpp"

namespace lancet::io::detail {

// One range's read: length bytes at offset into dst; `done` bytes are in.
struct read_op {
  std::uint64_t offset = 0;
  std::size_t length = 0;
  std::uint8_t* dst = nullptr;
  std::size_t done = 0;
};

// Completes ops[i] from op.done on with pread; a file that ends early is an io_error.
inline void finish_with_pread(int fd, read_op& op, std::string_view path) {
  const std::size_t rest = op.length - op.done;
  const std::size_t got = pread_full(fd, op.dst + op.done, rest, op.offset + op.done, path);
  if (got != rest)
    throw io_error("cannot read '" + std::string(path) + "': file ended after " + std::to_string(op.done + got) +
                   " of " + std::to_string(op.length) + " bytes at offset " + std::to_string(op.offset));
  op.done = op.length;
}

#ifdef LANCET_IO_URING

class uring {
 public:
  static constexpr unsigned depth = 64;
  // Larger ranges gain nothing from batching (the copy dominates): one pread each.
  static constexpr std::size_t max_op_bytes = std::size_t(1) << 20;

  // The calling thread's ring, or null where io_uring cannot be used.
  static uring* of_this_thread() {
    if (unavailable().load(std::memory_order_relaxed)) return nullptr;
    static const bool fork_hook = [] {
      // A forked child shares its parent's rings: each process makes its own.
      ::pthread_atfork(nullptr, nullptr, [] { fork_generation().fetch_add(1, std::memory_order_relaxed); });
      return true;
    }();
    (void)fork_hook;
    thread_local std::unique_ptr<uring> ring;
    thread_local unsigned generation = 0;
    thread_local bool failed_here = false;  // setup failed for this thread (e.g. out of fds)
    const unsigned now = fork_generation().load(std::memory_order_relaxed);
    if (generation != now) {
      ring.reset();
      failed_here = false;
      generation = now;
    }
    if (ring && !ring->broken_) return ring.get();
    ring.reset();
    if (failed_here) return nullptr;
    ring = make();
    failed_here = !ring;
    return ring.get();
  }

  // Reads ops (each at most max_op_bytes, at most depth of them) and waits for every
  // read it submitted: none is left writing into the caller's memory when it returns
  // or throws. Short reads, and reads the ring did not take, are finished with pread.
  // Throws io_error for a failed read, naming the file, offset and length.
  void read(int fd, std::span<read_op> ops, std::string_view path) {
    const unsigned n = unsigned(ops.size());
    const unsigned tail = sq_tail_->load(std::memory_order_relaxed);
    // Every earlier read was taken and reaped; otherwise this ring is not to be trusted.
    if (sq_head_->load(std::memory_order_acquire) != tail ||
        cq_head_->load(std::memory_order_relaxed) != cq_tail_->load(std::memory_order_acquire)) {
      broken_ = true;
      for (auto& op : ops) finish_with_pread(fd, op, path);
      return;
    }
    for (unsigned i = 0; i < n; ++i) {
      const unsigned idx = (tail + i) & sq_mask_;
      io_uring_sqe& e = sqes_[idx];
      std::memset(&e, 0, sizeof e);
      e.opcode = IORING_OP_READ;
      e.fd = fd;
      e.addr = reinterpret_cast<std::uint64_t>(ops[i].dst + ops[i].done);
      e.len = static_cast<std::uint32_t>(ops[i].length - ops[i].done);
      e.off = ops[i].offset + ops[i].done;
      e.user_data = i;
      sq_array_[idx] = idx;
    }
    sq_tail_->store(tail + n, std::memory_order_release);

    unsigned submitted = 0, reaped = 0;
    int first_error = 0;
    std::size_t error_op = 0;
    auto reap = [&] {
      unsigned head = cq_head_->load(std::memory_order_relaxed);
      const unsigned cq_tail = cq_tail_->load(std::memory_order_acquire);
      for (; head != cq_tail; ++head) {
        const io_uring_cqe& c = cqes_[head & cq_mask_];
        if (c.user_data >= n) {  // not one of ours: the ring is not to be trusted
          broken_ = true;
          continue;
        }
        ++reaped;
        read_op& op = ops[std::size_t(c.user_data)];
        if (c.res > 0) op.done += std::size_t(c.res);
        else if (c.res < 0 && c.res != -EAGAIN && c.res != -EINTR && first_error == 0) {
          first_error = -c.res;
          error_op = std::size_t(c.user_data);
        }
      }
      cq_head_->store(head, std::memory_order_release);
    };
    // Submit (waiting only for reads already in flight: a submission the kernel takes
    // in part must not wait for reads it never took).
    int busy_retries = 0;
    while (submitted < n) {
      const int r = enter(n - submitted, 0);
      if (r > 0) {
        submitted += std::min(unsigned(r), n - submitted);
        reap();
        continue;
      }
      const int err = r == 0 ? EAGAIN : errno;
      if (err == EINTR) continue;
      if ((err == EAGAIN || err == EBUSY) && ++busy_retries < 100) {  // out of kernel resources for now
        reap();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      // The ring takes no more: take back what it did not consume, wait for what it
      // did, and read the rest with pread; batching stays off in this process.
      sq_tail_->store(tail + submitted, std::memory_order_release);
      broken_ = true;
      unavailable().store(true, std::memory_order_relaxed);
      break;
    }
    // Wait for every submitted read. Completions reach the ring whatever the system
    // call says, so when waiting fails, poll it.
    while (reaped < submitted) {
      reap();
      if (reaped >= submitted) break;
      if (enter(0, submitted - reaped) < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (first_error == EINVAL || first_error == EOPNOTSUPP) {
      // A kernel without IORING_OP_READ: reads go through pread from now on.
      unavailable().store(true, std::memory_order_relaxed);
      first_error = 0;
    }
    if (first_error)
      throw_errno("cannot read", path, first_error,
                  " (" + std::to_string(ops[error_op].length) + " bytes at offset " + std::to_string(ops[error_op].offset) + ")");
    for (auto& op : ops)
      if (op.done < op.length) finish_with_pread(fd, op, path);
  }

  uring(const uring&) = delete;
  uring& operator=(const uring&) = delete;
  ~uring() {
    if (sqes_) ::munmap(sqes_, sqes_bytes_);
    if (cq_ring_ && cq_ring_ != sq_ring_) ::munmap(cq_ring_, cq_bytes_);
    if (sq_ring_) ::munmap(sq_ring_, sq_bytes_);
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  uring() = default;

  static std::atomic<bool>& unavailable() {
    static std::atomic<bool> flag{false};
    return flag;
  }
  static std::atomic<unsigned>& fork_generation() {
    static std::atomic<unsigned> g{0};
    return g;
  }

  static std::unique_ptr<uring> make() {
    std::unique_ptr<uring> u(new uring);
    io_uring_params p;
    std::memset(&p, 0, sizeof p);
    u->fd_ = int(::syscall(__NR_io_uring_setup, depth, &p));
    if (u->fd_ < 0) {
      // Not in this kernel, or refused (seccomp): never again in this process. Other
      // failures (out of fds or locked memory) leave this thread without a ring.
      if (errno == ENOSYS || errno == EPERM) unavailable().store(true, std::memory_order_relaxed);
      return nullptr;
    }
    if (!u->map(p)) return nullptr;
    return u;
  }

  bool map(const io_uring_params& p) {
    sq_bytes_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    cq_bytes_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
    const bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single) sq_bytes_ = cq_bytes_ = std::max(sq_bytes_, cq_bytes_);
    auto ring_map = [&](std::size_t bytes, std::uint64_t what) -> std::uint8_t* {
      void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, off_t(what));
      return m == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(m);
    };
    sq_ring_ = ring_map(sq_bytes_, IORING_OFF_SQ_RING);
    if (!sq_ring_) return false;
    cq_ring_ = single ? sq_ring_ : ring_map(cq_bytes_, IORING_OFF_CQ_RING);
    if (!cq_ring_) return false;
    sqes_bytes_ = p.sq_entries * sizeof(io_uring_sqe);
    sqes_ = reinterpret_cast<io_uring_sqe*>(ring_map(sqes_bytes_, IORING_OFF_SQES));
    if (!sqes_) return false;
    sq_head_ = reinterpret_cast<std::atomic<unsigned>*>(sq_ring_ + p.sq_off.head);
    sq_tail_ = reinterpret_cast<std::atomic<unsigned>*>(sq_ring_ + p.sq_off.tail);
    sq_mask_ = *reinterpret_cast<const unsigned*>(sq_ring_ + p.sq_off.ring_mask);
    sq_array_ = reinterpret_cast<unsigned*>(sq_ring_ + p.sq_off.array);
    cq_head_ = reinterpret_cast<std::atomic<unsigned>*>(cq_ring_ + p.cq_off.head);
    cq_tail_ = reinterpret_cast<std::atomic<unsigned>*>(cq_ring_ + p.cq_off.tail);
    cq_mask_ = *reinterpret_cast<const unsigned*>(cq_ring_ + p.cq_off.ring_mask);
    cqes_ = reinterpret_cast<io_uring_cqe*>(cq_ring_ + p.cq_off.cqes);
    return p.sq_entries >= depth && p.cq_entries >= depth;
  }

  // Submits to_submit entries, then (min_complete > 0) waits until that many completions are in the ring.
  int enter(unsigned to_submit, unsigned min_complete) {
    return int(::syscall(__NR_io_uring_enter, fd_, to_submit, min_complete, min_complete ? IORING_ENTER_GETEVENTS : 0u,
                         nullptr, 0));
  }

  int fd_ = -1;
  std::uint8_t* sq_ring_ = nullptr;
  std::uint8_t* cq_ring_ = nullptr;
  std::size_t sq_bytes_ = 0, cq_bytes_ = 0, sqes_bytes_ = 0;
  io_uring_sqe* sqes_ = nullptr;
  std::atomic<unsigned>* sq_head_ = nullptr;
  std::atomic<unsigned>* sq_tail_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned* sq_array_ = nullptr;
  std::atomic<unsigned>* cq_head_ = nullptr;
  std::atomic<unsigned>* cq_tail_ = nullptr;
  unsigned cq_mask_ = 0;
  io_uring_cqe* cqes_ = nullptr;
  bool broken_ = false;  // not to be used again: the thread makes a new ring
  // The ring's head and tail words are shared with the kernel: read and written as atomics.
  static_assert(std::atomic<unsigned>::is_always_lock_free && sizeof(std::atomic<unsigned>) == sizeof(unsigned));
};

#endif  // LANCET_IO_URING

// Reads every range of fd, end to end, into out (which holds the sum of their
// lengths). The ranges lie within the file as it was opened (checked by the caller).
inline void read_ranges_into(int fd, std::span<const byte_range> ranges, std::uint8_t* out, std::string_view path) {
  constexpr std::size_t batch_size = 64;
#ifdef LANCET_IO_URING
  static_assert(batch_size <= uring::depth);
#endif
  read_op batch[batch_size];
  std::size_t in_batch = 0;
  auto flush = [&] {
    if (in_batch == 0) return;
    std::span<read_op> ops(batch, in_batch);
    in_batch = 0;
#ifdef LANCET_IO_URING
    if (ops.size() > 1)
      if (auto* ring = uring::of_this_thread()) {
        ring->read(fd, ops, path);
        return;
      }
#endif
    for (auto& op : ops) finish_with_pread(fd, op, path);
  };
  std::uint8_t* at = out;
  for (const auto& r : ranges) {
    const auto n = static_cast<std::size_t>(r.length);
    if (n == 0) continue;
#ifdef LANCET_IO_URING
    if (n > uring::max_op_bytes) {
      read_op big{r.offset, n, at, 0};
      finish_with_pread(fd, big, path);
      at += n;
      continue;
    }
#endif
    batch[in_batch++] = read_op{r.offset, n, at, 0};
    at += n;
    if (in_batch == batch_size) flush();
  }
  flush();
}

}  // namespace lancet::io::detail
