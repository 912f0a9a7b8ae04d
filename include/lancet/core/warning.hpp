// Warnings: lancet never writes to std::cerr itself. A warning (an unparsable
// environment variable, an unstable format version) goes to the process-wide handler,
// which prints to stderr until the program sets its own.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace lancet {

// Receives each warning's text (without a trailing newline). Called on the thread that
// warns, possibly several at once: a handler must be thread-safe.
using warning_handler = void (*)(std::string_view message, void* context);

namespace detail {
struct warning_sink {
  std::mutex m;
  warning_handler handler = nullptr;  // null: stderr
  void* context = nullptr;
};
inline warning_sink& warnings() {
  static warning_sink s;
  return s;
}
}  // namespace detail

// Sets the handler (null restores the default, stderr); returns the previous one.
inline std::pair<warning_handler, void*> set_warning_handler(warning_handler h, void* context = nullptr) {
  auto& s = detail::warnings();
  std::lock_guard lock(s.m);
  return {std::exchange(s.handler, h), std::exchange(s.context, context)};
}

inline void warn(std::string_view message) {
  auto& s = detail::warnings();
  std::lock_guard lock(s.m);
  if (s.handler) {
    s.handler(message, s.context);
    return;
  }
  std::string line = "lancet: warning: ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace lancet
