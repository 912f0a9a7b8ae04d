// A sink writing a POSIX file: buffered, fsync on finish, and by default published by
// rename so that a reader never sees a half-written file at the final path.
//
// Publish by rename (the default): bytes go to a unique temporary file in the final
// path's directory (".<name>.<pid>-<n>-<hex>.tmp"); finish() flushes, fsyncs, closes,
// renames it onto the final path and fsyncs the directory. A sink destroyed or aborted
// before finish() removes the temporary file, leaving nothing at the final path.
//
// Exclusive: finish() fails with conflict_error when the final path already exists
// (checked early at construction too, to save writing a doomed file; the check that
// counts is the atomic one at publication: renameat2(RENAME_NOREPLACE), or link(2) on
// file systems without it). Without publish by rename, exclusive means
// open(O_CREAT|O_EXCL) on the final path.
//
// Every failure throws io_error naming the path and the errno text; after a failed
// write or finish the sink refuses further use and cleans up on destruction.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/abortable_sink.hpp"
#include "lancet/io/fs.hpp"

namespace lancet::io {

struct file_sink_options {
  // Writes are gathered into this much memory; a write at least this large goes
  // straight to the file. 0 disables buffering.
  std::size_t buffer_bytes = std::size_t(1) << 20;
  // Write to a temporary name and rename onto the final path at finish().
  bool publish_by_rename = true;
  // Fail (conflict_error) if the final path already exists.
  bool exclusive = false;
  // fsync the file (and its directory) at finish(). Off only for scratch files.
  bool sync = true;
  // With sync: start the kernel's writeback of every this many bytes written
  // (sync_file_range, asynchronous), so that the fsync at finish() finds little left to
  // write instead of the whole file (it took 0.15 s of a 0.35 s 528 MB write). 0: off.
  std::size_t writeback_bytes = std::size_t(8) << 20;
  // Create missing parent directories of the final path.
  bool create_directories = false;
  // Permission bits for the new file (the process umask applies).
  mode_t mode = 0666;
};

class file_sink {
 public:
  explicit file_sink(std::string path, file_sink_options options = {})
      : path_(std::move(path)), opts_(options) {
    if (path_.empty()) throw invalid_input_error("file_sink: empty path");
    if (path_.back() == '/') throw invalid_input_error("file_sink: '" + path_ + "' names a directory");
    if (opts_.buffer_bytes > 0) buf_.reserve(opts_.buffer_bytes);
    if (opts_.create_directories) make_directories(parent_directory(path_));
    if (opts_.publish_by_rename) {
      if (opts_.exclusive && path_exists(path_)) throw conflict_error("'" + path_ + "' already exists");
      fd_ = create_temp_file(path_, temp_path_, opts_.mode);
      note_ = " (temporary file '" + temp_path_ + "')";
    } else {
      int flags = O_WRONLY | O_CREAT | (opts_.exclusive ? O_EXCL : O_TRUNC);
      for (;;) {
        int fd = ::open(path_.c_str(), flags | O_CLOEXEC, opts_.mode);
        if (fd >= 0) {
          fd_ = unique_fd(fd);
          break;
        }
        if (errno == EINTR) continue;
        if (errno == EEXIST && opts_.exclusive) throw conflict_error("'" + path_ + "' already exists");
        throw_errno("cannot create", path_, errno);
      }
    }
    if (!opts_.publish_by_rename) {
      // Writing straight to a device or pipe (/dev/stdout): never unlink it on abort,
      // and skip fsync, which such files refuse.
      struct stat st;
      regular_ = ::fstat(fd_.get(), &st) != 0 || S_ISREG(st.st_mode);
    }
    state_ = state::open;
    live_ = regular_;
  }

  file_sink(file_sink&& o) noexcept
      : path_(std::move(o.path_)), temp_path_(std::move(o.temp_path_)), note_(std::move(o.note_)),
        opts_(o.opts_),
        fd_(std::move(o.fd_)), buf_(std::move(o.buf_)), pos_(std::exchange(o.pos_, 0)),
        written_back_(std::exchange(o.written_back_, 0)),
        state_(std::exchange(o.state_, state::moved_from)), live_(std::exchange(o.live_, false)),
        regular_(o.regular_) {}
  file_sink& operator=(file_sink&& o) noexcept {
    if (this != &o) {
      abort();
      path_ = std::move(o.path_);
      temp_path_ = std::move(o.temp_path_);
      note_ = std::move(o.note_);
      opts_ = o.opts_;
      fd_ = std::move(o.fd_);
      buf_ = std::move(o.buf_);
      pos_ = std::exchange(o.pos_, 0);
      written_back_ = std::exchange(o.written_back_, 0);
      state_ = std::exchange(o.state_, state::moved_from);
      live_ = std::exchange(o.live_, false);
      regular_ = o.regular_;
    }
    return *this;
  }
  file_sink(const file_sink&) = delete;
  file_sink& operator=(const file_sink&) = delete;
  ~file_sink() { abort(); }

  void write(bytes_view bytes) {
    require_open("write");
    if (bytes.empty()) return;
    try {
      if (buf_.size() + bytes.size() <= opts_.buffer_bytes) {
        buf_.append(bytes);
      } else if (bytes.size() >= opts_.buffer_bytes) {
        // Large write: one writev of what is buffered plus the caller's bytes.
        write_all(fd_.get(), buf_.view(), bytes, path_, note_);
        buf_.clear();
      } else {
        flush_buffer();
        buf_.append(bytes);
      }
    } catch (...) {
      state_ = state::failed;
      throw;
    }
    pos_ += bytes.size();
    start_writeback();
  }

  std::uint64_t position() const noexcept { return pos_; }

  // Hands buffered bytes to the kernel (no fsync, no publication).
  void flush() {
    require_open("flush");
    try {
      flush_buffer();
    } catch (...) {
      state_ = state::failed;
      throw;
    }
  }

  // Flushes, fsyncs, closes and publishes. On failure the sink cleans up (nothing at
  // the final path in rename mode) and rethrows. One caveat: if the rename succeeded
  // but the directory fsync failed, the file is visible but may not survive a crash.
  void finish() {
    require_open("finish");
    try {
      flush_buffer();
      if (opts_.sync && regular_) fsync_fd(fd_.get(), path_, note_);
      fd_.close(path_, note_);
      if (opts_.publish_by_rename) {
        publish(temp_path_, path_, opts_.exclusive, opts_.sync);
      } else if (opts_.sync && regular_) {
        fsync_directory(parent_directory(path_));
      }
    } catch (...) {
      state_ = state::failed;
      abort();
      throw;
    }
    state_ = state::finished;
    live_ = false;
    buf_ = aligned_buffer();
  }

  // Discards the file: closes it and removes the temporary file (or, without publish
  // by rename, the partial file at the final path). No-op after finish().
  void abort() noexcept {
    if (state_ == state::open) state_ = state::aborted;
    fd_.reset();
    buf_ = aligned_buffer();
    if (!live_) return;  // cleanup happens once: never unlink a name twice
    live_ = false;
    ::unlink(working_path().c_str());
  }

  const std::string& path() const noexcept { return path_; }
  // Where the bytes are going before finish(): the temporary file, or the final path.
  const std::string& working_path() const noexcept {
    return opts_.publish_by_rename ? temp_path_ : path_;
  }
  bool finished() const noexcept { return state_ == state::finished; }
  const file_sink_options& options() const noexcept { return opts_; }

 private:
  enum class state { open, finished, failed, aborted, moved_from };

  void require_open(const char* op) const {
    switch (state_) {
      case state::open: return;
      case state::finished:
        throw invalid_input_error(std::string("file_sink '") + path_ + "': " + op + " after finish()");
      case state::failed:
        throw io_error(std::string("file_sink '") + path_ + "': " + op + " after an earlier failure");
      case state::aborted:
        throw invalid_input_error(std::string("file_sink '") + path_ + "': " + op + " after abort()");
      case state::moved_from:
        throw invalid_input_error(std::string("file_sink: ") + op + " on a moved-from sink");
    }
  }

  void flush_buffer() {
    if (buf_.empty()) return;
    write_all(fd_.get(), buf_.view(), path_, note_);
    buf_.clear();
  }

  // Asks the kernel to start writing out what reached it since the last call, once
  // writeback_bytes have gathered. Advisory: a file system without support is fine,
  // and the fsync at finish() still reports every error.
  void start_writeback() noexcept {
#ifdef SYNC_FILE_RANGE_WRITE
    if (!opts_.sync || !regular_ || opts_.writeback_bytes == 0) return;
    const std::uint64_t handed = pos_ - buf_.size();  // bytes the kernel has
    if (handed - written_back_ < opts_.writeback_bytes) return;
    if (::sync_file_range(fd_.get(), off_t(written_back_), off_t(handed - written_back_), SYNC_FILE_RANGE_WRITE) == 0)
      written_back_ = handed;
    else
      opts_.writeback_bytes = 0;  // unsupported here: stop asking
#endif
  }

  std::string path_;
  std::string temp_path_;
  std::string note_;  // error-message context: the temporary file, if any
  file_sink_options opts_;
  unique_fd fd_;
  aligned_buffer buf_;
  std::uint64_t pos_ = 0;
  std::uint64_t written_back_ = 0;  // bytes whose writeback start_writeback() requested
  state state_ = state::moved_from;
  bool live_ = false;  // a working file exists that must be removed unless published
  bool regular_ = true;  // the working file is a regular file (not a device or pipe)
};

static_assert(abortable_sink<file_sink>);

// Writes bytes to path through a file_sink in one go (crash-safe publication by default).
inline void write_file(const std::string& path, bytes_view bytes, file_sink_options options = {}) {
  file_sink s(path, options);
  s.write(bytes);
  s.finish();
}

}  // namespace lancet::io
