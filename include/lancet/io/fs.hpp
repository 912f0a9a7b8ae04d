// Small POSIX file-system helpers shared by the file sink, the file source and the
// dataset commit path: an owning descriptor, EINTR-safe full reads and writes, unique
// temporary names, directory fsync, and atomic publication by rename.
//
// Crash-safe publication is: write to a unique temporary name in the target's
// directory, fsync the file, rename it onto the final name, fsync the directory.
// Every failure throws lancet::io_error naming the path and the errno text.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/random.hpp"

namespace lancet::io {

namespace detail {

inline std::string errno_text(int err) {
  // strerror_r has two signatures; the GNU one returns the message pointer.
  char buf[256];
  auto r = ::strerror_r(err, buf, sizeof buf);
  if constexpr (std::is_same_v<decltype(r), char*>) {
    return r;
  } else {
    return r == 0 ? std::string(buf) : "errno " + std::to_string(err);
  }
}

}  // namespace detail

// Throws io_error "<what> '<path>'<note>: <strerror(err)>". The note adds context
// such as the temporary file a sink is writing.
[[noreturn]] inline void throw_errno(std::string_view what, std::string_view path, int err,
                                     std::string_view note = {}) {
  std::string msg(what);
  msg += " '";
  msg += path;
  msg += "'";
  msg += note;
  msg += ": ";
  msg += detail::errno_text(err);
  if (err == ENOENT) throw not_found_error(msg);
  throw io_error(msg);
}

// Owns one file descriptor; closes it on destruction (errors ignored there, use
// close() to see them).
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    // close() must not be retried on EINTR on Linux: the descriptor is gone either way.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes and reports failure (NFS and some file systems report write errors here).
  void close(std::string_view path, std::string_view note = {}) {
    if (fd_ < 0) return;
    int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) throw_errno("cannot close", path, errno, note);
  }

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC, retried on EINTR.
inline unique_fd open_fd(const std::string& path, int flags, mode_t mode = 0666) {
  for (;;) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd >= 0) return unique_fd(fd);
    if (errno != EINTR) throw_errno("cannot open", path, errno);
  }
}

// Writes all bytes, resuming after short writes and EINTR.
inline void write_all(int fd, bytes_view bytes, std::string_view path, std::string_view note = {}) {
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path, errno, note);
    }
    if (n == 0) throw_errno("cannot write", path, EIO, note);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Writes a then b with as few system calls as possible (writev), resuming after short
// writes and EINTR. Used to flush a sink's buffer together with a large write.
inline void write_all(int fd, bytes_view a, bytes_view b, std::string_view path,
                      std::string_view note = {}) {
  iovec iov[2];
  iov[0] = {const_cast<std::uint8_t*>(a.data()), a.size()};
  iov[1] = {const_cast<std::uint8_t*>(b.data()), b.size()};
  int first = 0;
  while (first < 2) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    ssize_t n = ::writev(fd, iov + first, 2 - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path, errno, note);
    }
    if (n == 0) throw_errno("cannot write", path, EIO, note);
    auto done = static_cast<std::size_t>(n);
    while (first < 2 && done >= iov[first].iov_len) {
      done -= iov[first].iov_len;
      iov[first].iov_len = 0;
      ++first;
    }
    if (first < 2) {
      iov[first].iov_base = static_cast<std::uint8_t*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
}

// Reads up to n bytes at offset, resuming after short reads and EINTR; returns the
// number read, which is less than n only at end of file.
inline std::size_t pread_full(int fd, void* out, std::size_t n, std::uint64_t offset,
                              std::string_view path) {
  auto* p = static_cast<std::uint8_t*>(out);
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path, errno);
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

inline void fsync_fd(int fd, std::string_view path, std::string_view note = {}) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR) throw_errno("cannot fsync", path, errno, note);
  }
}

// The directory part of a path ("." when there is none; "/" for files in the root).
inline std::string parent_directory(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// The last component of a path.
inline std::string base_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// Makes a directory's entries (created, renamed, removed files) durable.
inline void fsync_directory(const std::string& dir) {
  unique_fd fd = open_fd(dir, O_RDONLY | O_DIRECTORY);
  fsync_fd(fd.get(), dir);
  fd.close(dir);
}

inline bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// unlink(2); a missing file is not an error. Returns whether a file was removed.
inline bool remove_file(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw_errno("cannot remove", path, errno);
}

// Creates dir and any missing parents (mode 0777 & ~umask); each directory created is
// made durable by fsyncing its parent. An existing non-directory is an error.
inline void make_directories(const std::string& dir) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw_errno("cannot create directory", path, ENOTDIR);
    return;
  }
  std::string parent = parent_directory(path);
  if (parent != path) make_directories(parent);
  if (::mkdir(path.c_str(), 0777) != 0) {
    if (errno == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
    throw_errno("cannot create directory", path, errno);
  }
  fsync_directory(parent);
}

// A name for a temporary file next to final_path (same directory, so a rename onto
// final_path stays within one file system and is atomic): ".<base>.<pid>-<n>-<hex>.tmp".
// Hidden and suffixed so that listings (e.g. Lance's *.manifest scan) ignore it.
inline std::string unique_temp_name(std::string_view final_path) {
  static std::atomic<std::uint64_t> counter{0};
  char tail[64];
  std::snprintf(tail, sizeof tail, ".%ld-%llu-%016llx.tmp", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1, std::memory_order_relaxed)),
                static_cast<unsigned long long>(random_u64()));
  std::string dir = parent_directory(final_path);
  std::string out;
  // Keep "a/b" relative paths relative; a bare name stays in the working directory.
  if (final_path.find('/') != std::string_view::npos) out = dir == "/" ? "/" : dir + "/";
  out += '.';
  out += base_name(final_path);
  out += tail;
  return out;
}

// Creates and opens a new file under a unique temporary name next to final_path
// (O_CREAT|O_EXCL, retried on the improbable name collision). Returns the descriptor
// and sets temp_path.
inline unique_fd create_temp_file(std::string_view final_path, std::string& temp_path,
                                  mode_t mode = 0666) {
  for (int attempt = 0;; ++attempt) {
    temp_path = unique_temp_name(final_path);
    int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) return unique_fd(fd);
    int err = errno;
    if (err == EINTR || (err == EEXIST && attempt < 100)) continue;
    throw_errno("cannot create", final_path, err, " (temporary file '" + temp_path + "')");
  }
}

// Atomically replaces `to` with `from` (rename(2)). Does not fsync the directory.
inline void rename_replace(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    int err = errno;
    throw_errno("cannot rename '" + from + "' to", to, err);
  }
}

// Atomically moves `from` to `to` only if `to` does not exist; returns false (and
// leaves `from` in place) when it does. This is the primitive of optimistic commits:
// of two writers publishing the same name, exactly one wins.
//
// Uses renameat2(RENAME_NOREPLACE). On file systems that refuse that flag (EINVAL,
// ENOSYS, ENOTSUP: some network and FUSE file systems) it falls back to link(2), which
// also fails with EEXIST atomically, followed by unlink(from). Does not fsync the
// directory.
inline bool rename_noreplace(const std::string& from, const std::string& to) {
#if defined(RENAME_NOREPLACE)
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  int err = errno;
  if (err == EEXIST) return false;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP && err != EOPNOTSUPP) {
    throw_errno("cannot rename '" + from + "' to", to, err);
  }
#endif
  if (::link(from.c_str(), to.c_str()) != 0) {
    int e = errno;
    if (e == EEXIST) return false;
    throw_errno("cannot link '" + from + "' to", to, e);
  }
  // The final name is published; the temporary name is now only an extra link.
  if (::unlink(from.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove", from, errno);
  return true;
}

// Publishes a finished temporary file under its final name and makes the new
// directory entry durable (sync). exclusive: fail with conflict_error if `to` exists
// (the temporary file is left for the caller to remove).
inline void publish(const std::string& from, const std::string& to, bool exclusive,
                    bool sync = true) {
  if (exclusive) {
    if (!rename_noreplace(from, to)) throw conflict_error("'" + to + "' already exists");
  } else {
    rename_replace(from, to);
  }
  if (sync) fsync_directory(parent_directory(to));
}

}  // namespace lancet::io
