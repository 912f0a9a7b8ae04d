// The sink concept: where a writer's bytes go. Append-only with a position; the
// writer never seeks. Errors are reported by throwing lancet::io_error.
#pragma once

#include <concepts>
#include <cstdint>

#include "lancet/core/buffer.hpp"

namespace lancet::io {

template <class S>
concept sink = requires(S& s, bytes_view bytes) {
  // Appends bytes at the current position.
  { s.write(bytes) } -> std::same_as<void>;
  // Bytes appended so far (the offset the next write lands at).
  { s.position() } -> std::convertible_to<std::uint64_t>;
  // Makes everything durable and visible (flush, fsync, publish); called once, last.
  { s.finish() } -> std::same_as<void>;
};

}  // namespace lancet::io
