// Byte buffers: an owned, 64-byte aligned, growable buffer, and a shared immutable
// view of bytes that keeps its owner alive (the building block of zero-copy arrays).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/mman.h>

namespace lancet {

using bytes_view = std::span<const std::uint8_t>;

inline constexpr std::size_t buffer_alignment = 64;

constexpr std::uint64_t pad_to(std::uint64_t n, std::uint64_t align) noexcept {
  return (n + align - 1) / align * align;
}

// Buffers of at least this many bytes are large blocks (see below: huge-page mappings,
// freed blocks reused); smaller ones come from operator new.
inline constexpr std::size_t large_alloc_threshold = std::size_t(8) << 20;

namespace detail {

// Large blocks (page reads, decoded pages, growing buffers) bypass malloc. glibc maps
// a block above its mmap threshold afresh each time (the threshold moves with the
// largest block freed, up to 32 MiB, and trimming hands freed heap back), and filling
// fresh memory costs a page fault per 4 KiB: on a VM that dominated reading large
// pages (a 100 MB Lance page: ~290 ms of CPU to scan; ~9 ms when malloc happened to
// reuse memory; a scan of 8-25 MB pages 313 against 40 ms in one process's state).
// Here a block of at least large_alloc_threshold bytes is an anonymous mapping, 2 MiB
// aligned with transparent huge pages requested (MADV_HUGEPAGE; "madvise" is a common
// kernel default), and freed blocks wait in a small cache for the next block of about
// their size (no new faults, no zeroing). release_free_memory() empties the cache.
inline constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;
constexpr std::size_t pad_to_huge(std::size_t n) noexcept {
  return (n + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
}

// A mapping's length sits in a header before the bytes handed out (which stay
// 64-byte aligned): a block from the cache may be larger than the size asked for.
inline constexpr std::size_t large_block_header = buffer_alignment;

class large_block_cache {
 public:
  static constexpr std::size_t max_blocks = 4;
  static constexpr std::size_t max_bytes = std::size_t(128) << 20;

  static large_block_cache& instance() {
    static auto* c = new large_block_cache;  // never destroyed: blocks may be freed during static destruction
    return *c;
  }
  // A cached mapping of len bytes with need <= len <= 2 * need (the smallest), or null.
  std::uint8_t* take(std::size_t need, std::size_t& len) {
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t best = kept_.size();
    for (std::size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i].len >= need && kept_[i].len <= 2 * need && (best == kept_.size() || kept_[i].len < kept_[best].len))
        best = i;
    if (best == kept_.size()) return nullptr;
    const block b = kept_[best];
    kept_.erase(kept_.begin() + std::ptrdiff_t(best));
    bytes_ -= b.len;
    len = b.len;
    return b.base;
  }
  void give(std::uint8_t* base, std::size_t len) noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_.size() < max_blocks && bytes_ + len <= max_bytes) {
        kept_.push_back({base, len});
        bytes_ += len;
        return;
      }
    }
    ::munmap(base, len);
  }
  void clear() noexcept {
    std::vector<block> gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone.swap(kept_);
      bytes_ = 0;
    }
    for (const auto& b : gone) ::munmap(b.base, b.len);
  }
  std::size_t kept_blocks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.size();
  }

 private:
  struct block {
    std::uint8_t* base;
    std::size_t len;
  };
  mutable std::mutex mu_;
  std::vector<block> kept_;
  std::size_t bytes_ = 0;
};

// A new mapping of len bytes (a multiple of 2 MiB), 2 MiB aligned.
inline std::uint8_t* map_huge(std::size_t len) {
  // Over-map by one huge page, then unmap the unaligned head and the tail.
  void* raw = ::mmap(nullptr, len + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::uint8_t*>(raw);
  const std::size_t head = (huge_page_bytes - reinterpret_cast<std::uintptr_t>(base) % huge_page_bytes) % huge_page_bytes;
  if (head) ::munmap(base, head);
  if (huge_page_bytes - head) ::munmap(base + head + len, huge_page_bytes - head);
  ::madvise(base + head, len, MADV_HUGEPAGE);  // advisory: ignored where THP is off
  return base + head;
}

// Uninitialised bytes for a buffer of capacity n, 64-byte aligned; release with
// free_bytes(p, n) and the same n.
inline std::uint8_t* allocate_bytes(std::size_t n) {
  if (n < large_alloc_threshold) return static_cast<std::uint8_t*>(::operator new(n, std::align_val_t{buffer_alignment}));
  const std::size_t need = n + large_block_header;
  std::size_t len = 0;
  std::uint8_t* base = large_block_cache::instance().take(need, len);
  if (!base) {
    len = pad_to_huge(need);
    base = map_huge(len);
  }
  std::memcpy(base, &len, sizeof len);
  return base + large_block_header;
}
inline void free_bytes(std::uint8_t* p, std::size_t n) noexcept {
  if (!p) return;
  if (n < large_alloc_threshold) {
    ::operator delete(p, std::align_val_t{buffer_alignment});
    return;
  }
  std::uint8_t* base = p - large_block_header;
  std::size_t len = 0;
  std::memcpy(&len, base, sizeof len);
  large_block_cache::instance().give(base, len);
}

}  // namespace detail

// n uninitialised bytes, 64-byte aligned (a large block from large_alloc_threshold on),
// owned by a shared pointer that frees them: for buffers written in full right away (a
// read, a gather), which need no zero-fill.
inline std::shared_ptr<std::uint8_t> shared_uninitialised_bytes(std::size_t n) {
  return std::shared_ptr<std::uint8_t>(detail::allocate_bytes(n), [n](std::uint8_t* p) { detail::free_bytes(p, n); });
}

// Growable byte buffer whose storage is 64-byte aligned (SIMD-friendly, and the
// alignment Lance uses on disk).
class aligned_buffer {
 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t n) { resize(n); }
  aligned_buffer(const aligned_buffer& o) { append(o.data(), o.size()); }
  aligned_buffer& operator=(const aligned_buffer& o) {
    if (this != &o) { clear(); append(o.data(), o.size()); }
    return *this;
  }
  aligned_buffer(aligned_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)) {}
  aligned_buffer& operator=(aligned_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }
  ~aligned_buffer() { release(); }

  std::uint8_t* data() noexcept { return data_; }
  const std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  bytes_view view() const noexcept { return {data_, size_}; }
  std::uint8_t& operator[](std::size_t i) noexcept { return data_[i]; }
  std::uint8_t operator[](std::size_t i) const noexcept { return data_[i]; }

  void clear() noexcept { size_ = 0; }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    std::size_t cap = std::max<std::size_t>(n, capacity_ + capacity_ / 2);
    cap = pad_to(cap, buffer_alignment);
    auto* p = detail::allocate_bytes(cap);
    if (size_) std::memcpy(p, data_, size_);
    release_storage();
    data_ = p;
    capacity_ = cap;
  }
  // New bytes are zeroed: padding written from a buffer is deterministic.
  void resize(std::size_t n) {
    reserve(n);
    if (n > size_) std::memset(data_ + size_, 0, n - size_);
    size_ = n;
  }
  void append(const void* p, std::size_t n) {
    if (n == 0) return;
    reserve(size_ + n);
    std::memcpy(data_ + size_, p, n);
    size_ += n;
  }
  void append(bytes_view v) { append(v.data(), v.size()); }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void push_back(std::uint8_t b) {
    reserve(size_ + 1);
    data_[size_++] = b;
  }
  void append_zeros(std::size_t n) { resize(size_ + n); }

 private:
  void release_storage() noexcept {
    detail::free_bytes(data_, capacity_);
  }
  void release() noexcept {
    release_storage();
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// An immutable run of bytes with shared ownership of whatever holds them (an
// aligned_buffer, an imported Arrow array, a mapped file...). Copies are cheap.
class shared_bytes {
 public:
  shared_bytes() = default;
  shared_bytes(std::shared_ptr<const void> owner, const std::uint8_t* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  // Takes ownership of an aligned buffer.
  explicit shared_bytes(aligned_buffer&& buf) {
    auto holder = std::make_shared<aligned_buffer>(std::move(buf));
    data_ = holder->data();
    size_ = holder->size();
    owner_ = std::move(holder);
  }
  static shared_bytes copy_of(bytes_view v) {
    aligned_buffer b;
    b.append(v);
    return shared_bytes(std::move(b));
  }

  const std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  explicit operator bool() const noexcept { return data_ != nullptr || size_ != 0; }
  bytes_view view() const noexcept { return {data_, size_}; }
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }
  shared_bytes slice(std::size_t off, std::size_t n) const noexcept {
    return shared_bytes(owner_, data_ + off, n);
  }
  template <class T>
  const T* as() const noexcept { return reinterpret_cast<const T*>(data_); }

 private:
  std::shared_ptr<const void> owner_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace lancet
