// Typed errors. Every error lancet raises derives from lancet::error and carries a
// message naming the offending column, value or offset.
#pragma once

#include <stdexcept>
#include <string>

namespace lancet {

enum class errc {
  invalid_input,  // the caller passed something lancet cannot accept
  io,             // the operating system or a sink/source failed
  corrupt,        // bytes read back do not form a valid Lance structure
  unsupported,    // valid, but not something lancet (or this format version) supports
  conflict,       // a concurrent writer committed first
  cancelled,      // a progress callback asked to stop
  internal,       // an invariant of lancet's own code does not hold (a bug: please report it)
};

inline const char* errc_name(errc c) noexcept {
  switch (c) {
    case errc::invalid_input: return "invalid input";
    case errc::io: return "I/O error";
    case errc::corrupt: return "corrupt";
    case errc::unsupported: return "unsupported";
    case errc::conflict: return "conflict";
    case errc::cancelled: return "cancelled";
    case errc::internal: return "internal error";
  }
  return "error";
}

class error : public std::runtime_error {
 public:
  error(errc code, const std::string& what)
      : std::runtime_error(std::string(errc_name(code)) + ": " + what), code_(code) {}
  errc code() const noexcept { return code_; }
  // The message without its "category: " prefix, for re-wrapping with more context.
  std::string message() const { return std::string(what()).substr(std::string(errc_name(code_)).size() + 2); }

 private:
  errc code_;
};

// One type per category so that callers (and tests) can catch precisely.
struct invalid_input_error : error {
  explicit invalid_input_error(const std::string& w) : error(errc::invalid_input, w) {}
};
struct io_error : error {
  explicit io_error(const std::string& w) : error(errc::io, w) {}
};
struct corrupt_error : error {
  explicit corrupt_error(const std::string& w) : error(errc::corrupt, w) {}
};
struct unsupported_error : error {
  explicit unsupported_error(const std::string& w) : error(errc::unsupported, w) {}
};
struct conflict_error : error {
  explicit conflict_error(const std::string& w) : error(errc::conflict, w) {}
};
struct cancelled_error : error {
  explicit cancelled_error(const std::string& w) : error(errc::cancelled, w) {}
};
// A broken invariant inside lancet, never the caller's input: distinct from the other
// kinds so that callers do not mistake a bug for bad data.
struct internal_error : error {
  explicit internal_error(const std::string& w) : error(errc::internal, w) {}
};

}  // namespace lancet
