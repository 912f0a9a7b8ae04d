// A sink that fails on demand, wrapping another sink: it lets tests drive every
// writer error path (a disk filling up after N bytes, a failed flush at finish) and
// check that the error is a typed io_error and nothing is published.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/abortable_sink.hpp"

namespace lancet::testing {


struct failure_plan {
  // The first fail_after_bytes bytes reach the inner sink; the write that would cross
  // that mark forwards the bytes up to it, then throws (like a full disk), and so does
  // every later non-empty write. The default never fails.
  std::uint64_t fail_after_bytes = std::numeric_limits<std::uint64_t>::max();
  // finish() throws instead of finishing the inner sink.
  bool fail_on_finish = false;
};

// Inner may be a sink type (held by value) or an lvalue reference to one.
template <class Inner>
  requires io::sink<std::remove_reference_t<Inner>>
class failing_sink {
 public:
  using inner_type = std::remove_reference_t<Inner>;

  explicit failing_sink(Inner inner, failure_plan plan = {})
      : inner_(std::forward<Inner>(inner)), plan_(plan) {}

  void write(bytes_view bytes) {
    if (bytes.empty()) return;
    const std::uint64_t limit = plan_.fail_after_bytes;
    if (pos_ >= limit || bytes.size() > limit - pos_) {
      auto room = static_cast<std::size_t>(pos_ >= limit ? 0 : limit - pos_);
      if (room > 0) {
        inner_.write(bytes.first(room));
        pos_ += room;
      }
      ++failures_;
      throw io_error("failing_sink: injected write failure at byte " + std::to_string(limit) +
                     " (writing " + std::to_string(bytes.size()) + " bytes at offset " +
                     std::to_string(pos_ - room) + ")");
    }
    inner_.write(bytes);
    pos_ += bytes.size();
  }

  std::uint64_t position() const noexcept { return pos_; }

  void finish() {
    if (plan_.fail_on_finish) {
      ++failures_;
      throw io_error("failing_sink: injected failure in finish() after " + std::to_string(pos_) +
                     " bytes");
    }
    inner_.finish();
  }

  void abort() noexcept {
    ++aborts_;
    io::abort_sink(inner_);
  }

  // Change the plan mid-stream (e.g. fail only once the header is written).
  void set_plan(failure_plan plan) noexcept { plan_ = plan; }
  const failure_plan& plan() const noexcept { return plan_; }
  // How many injected failures were thrown, and how often abort() was called.
  int failures() const noexcept { return failures_; }
  int aborts() const noexcept { return aborts_; }

  inner_type& inner() noexcept { return inner_; }
  const inner_type& inner() const noexcept { return inner_; }

 private:
  Inner inner_;
  failure_plan plan_;
  std::uint64_t pos_ = 0;
  int failures_ = 0;
  int aborts_ = 0;
};

template <class Inner>
failing_sink(Inner&&, failure_plan) -> failing_sink<Inner>;
template <class Inner>
failing_sink(Inner&&) -> failing_sink<Inner>;

}  // namespace lancet::testing
