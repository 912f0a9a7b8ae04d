// A sink that appends into an aligned in-memory buffer: for in-memory serialisations,
// tests, and callers that ship the bytes themselves.
#pragma once

#include <cstdint>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/abortable_sink.hpp"

namespace lancet::io {

class memory_sink {
 public:
  memory_sink() = default;
  // Pre-sizes the buffer when the caller knows roughly how much is coming.
  explicit memory_sink(std::size_t reserve_bytes) { buf_.reserve(reserve_bytes); }

  void write(bytes_view bytes) {
    if (finished_) throw invalid_input_error("memory_sink: write after finish()");
    buf_.append(bytes);
  }
  std::uint64_t position() const noexcept { return buf_.size(); }
  void finish() {
    if (finished_) throw invalid_input_error("memory_sink: finish() called twice");
    finished_ = true;
  }
  // Discards everything written; the sink can be used again.
  void abort() noexcept {
    buf_ = aligned_buffer();
    finished_ = false;
  }

  bool finished() const noexcept { return finished_; }
  // The bytes written so far (valid until the next write or take()).
  bytes_view view() const noexcept { return buf_.view(); }
  // Moves the bytes out; the sink is then empty and can be used again.
  aligned_buffer take() noexcept {
    finished_ = false;
    return std::exchange(buf_, aligned_buffer());
  }
  // Same as take(), as shared immutable bytes.
  shared_bytes take_shared() { return shared_bytes(take()); }

 private:
  aligned_buffer buf_;
  bool finished_ = false;
};

static_assert(abortable_sink<memory_sink>);

}  // namespace lancet::io
