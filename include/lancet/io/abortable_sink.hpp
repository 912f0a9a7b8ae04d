// A sink that can be told to discard what it has received: the writer calls abort()
// when it gives up (an encoding error, a failed write, a cancelled job), so nothing
// half-written is published. A sink destroyed without finish() must behave the same
// way; abort() just makes the moment explicit and lets the caller release resources
// early. abort() never throws and may be called at any time, more than once.
#pragma once

#include "lancet/io/sink.hpp"

namespace lancet::io {

template <class S>
concept abortable_sink = sink<S> && requires(S& s) {
  { s.abort() } noexcept;
};

// Calls s.abort() when the sink has one; a no-op for plain sinks.
template <sink S>
void abort_sink(S& s) noexcept {
  if constexpr (abortable_sink<S>) s.abort();
}

}  // namespace lancet::io
