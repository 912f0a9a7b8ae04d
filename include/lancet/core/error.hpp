// Typed errors. Every error lancet raises derives from lancet::error and carries a
// message naming the offending column, value or offset.
#pragma once

#include <stdexcept>
#include <string>

namespace lancet {

enum class errc {
  invalid_input,  // the caller passed something lancet cannot accept
  io,             // the operating system or a sink/source failed
  not_found,      // a file or dataset that does not exist (an I/O error of its own kind)
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
    case errc::not_found: return "not found";
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
template <errc Code>
struct error_of : error {
  explicit error_of(const std::string& w) : error(Code, w) {}

 protected:
  error_of(errc refined, const std::string& w) : error(refined, w) {}  // a kind refining Code
};
using invalid_input_error = error_of<errc::invalid_input>;
using io_error = error_of<errc::io>;
using corrupt_error = error_of<errc::corrupt>;
using unsupported_error = error_of<errc::unsupported>;
using conflict_error = error_of<errc::conflict>;
using cancelled_error = error_of<errc::cancelled>;
// What does not exist (a missing file, a path with no dataset): also an io_error, so
// that code catching I/O errors keeps catching it; code() says not_found.
struct not_found_error : io_error {
  explicit not_found_error(const std::string& w) : io_error(errc::not_found, w) {}
};
// A broken invariant inside lancet, never the caller's input: distinct from the other
// kinds so that callers do not mistake a bug for bad data.
using internal_error = error_of<errc::internal>;

}  // namespace lancet
