// Where a dataset's files live: one small value type (cheap to copy, thread-safe) over a
// backend of seven operations, so that the layers above open, create, list and remove
// files the same way on a local disk and on an object store.
//
//   io::storage st = io::storage_for("/data/items");        // or a mounted "s3://bucket/db"
//   io::any_sink s = st.create_sink("/data/items/_versions/3.manifest", {.if_absent = true});
//   auto names = st.list("/data/items/_versions");          // sorted, relative, files only
//
// Paths are whole: a local path or a URI under the storage's location, joined with '/'.
// list() gives files only (an object store has no directories), with names relative to
// the listed directory; a missing directory lists as empty. create_sink with if_absent
// is a commit point: finish() throws conflict_error when the path exists (locally a
// no-replace rename, remotely a conditional PUT).
//
// storage_for(root) resolves a root once: a plain path or file:// is local; a URI takes
// the storage mounted for the longest prefix of it (io::mount, e.g. with
// object_store::open_storage from the opt-in io/object_store/object_storage.hpp, which
// keeps OpenSSL out of this header); any other URI is unsupported_error naming it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/fs.hpp"

namespace lancet::io {

// One file of a listing.
struct stored_file {
  std::string path;  // relative to the listed directory, '/'-separated
  std::uint64_t size = 0;
  std::optional<std::chrono::system_clock::time_point> modified;  // when the store says
  friend bool operator==(const stored_file&, const stored_file&) = default;
};

// An upload begun and never finished (an S3 multipart upload whose writer was killed):
// list() does not show it, yet the store keeps its parts until it is aborted.
struct unfinished_upload {
  std::string path;  // relative to the listed directory, '/'-separated
  std::string id;    // the store's upload id
  std::optional<std::chrono::system_clock::time_point> started;
};

// What a writer asks of a new file.
struct storage_sink_options {
  bool if_absent = false;  // finish() throws conflict_error when the path exists
  bool durable = true;     // local: fsync the file and its directory (remote writes always are)
};

class storage {
 public:
  // The operations a store implements (paths as the storage's callers give them).
  struct backend {
    virtual ~backend() = default;
    virtual bool is_local() const noexcept = 0;
    virtual const std::string& name() const noexcept = 0;
    virtual any_source open_source(const std::string& path, std::optional<std::uint64_t> size) const = 0;
    virtual any_sink create_sink(const std::string& path, const storage_sink_options& o) const = 0;
    virtual std::optional<std::uint64_t> size(const std::string& path) const = 0;
    virtual std::vector<stored_file> list(const std::string& dir, bool recursive) const = 0;
    virtual void remove(std::span<const std::string> paths) const = 0;
    virtual void remove_all(const std::string& dir) const = 0;
    // Stores without unfinished uploads (local files: a killed writer's temporary file
    // is listed) keep these.
    virtual std::vector<unfinished_upload> list_unfinished_uploads(const std::string&) const { return {}; }
    virtual void abort_upload(const std::string&, const unfinished_upload&) const {}
  };

  explicit storage(std::shared_ptr<const backend> b) : b_(std::move(b)) {
    if (!b_) throw invalid_input_error("storage: no backend");
  }

  // The local file system; `read` applies to every source it opens.
  static storage local(file_source_options read = {});

  bool is_local() const noexcept { return b_->is_local(); }
  // For messages: "local files" or the store's location ("s3://bucket/prefix").
  const std::string& name() const noexcept { return b_->name(); }

  // A file to read; `size`, when known (from a listing or a manifest), saves asking.
  // not_found_error when it does not exist.
  any_source open_source(const std::string& path, std::optional<std::uint64_t> size = std::nullopt) const {
    return b_->open_source(path, size);
  }
  // A new file (missing parent directories are created where there are any).
  any_sink create_sink(const std::string& path, const storage_sink_options& o = {}) const {
    return b_->create_sink(path, o);
  }
  // The size of a file; nullopt when there is none.
  std::optional<std::uint64_t> size(const std::string& path) const { return b_->size(path); }
  bool exists(const std::string& path) const { return size(path).has_value(); }
  // The files under `dir` (directly, or at any depth), sorted by path.
  std::vector<stored_file> list(const std::string& dir, bool recursive = false) const { return b_->list(dir, recursive); }
  // Removes files; paths that do not exist are fine.
  void remove(std::span<const std::string> paths) const { b_->remove(paths); }
  void remove(const std::string& path) const { b_->remove(std::span<const std::string>(&path, 1)); }
  // Removes everything under `dir`.
  void remove_all(const std::string& dir) const { b_->remove_all(dir); }
  // The unfinished uploads under a directory (every depth); abort one of them.
  std::vector<unfinished_upload> list_unfinished_uploads(const std::string& dir) const {
    return b_->list_unfinished_uploads(dir);
  }
  void abort_upload(const std::string& dir, const unfinished_upload& u) const { b_->abort_upload(dir, u); }

  // A whole file written at once.
  void put(const std::string& path, bytes_view bytes, const storage_sink_options& o = {}) const {
    auto s = create_sink(path, o);
    s.write(bytes);
    s.finish();
  }
  // A whole file read at once; invalid_input_error naming it when larger than `max_bytes`.
  std::string read_all(const std::string& path, std::uint64_t max_bytes = std::uint64_t(1) << 30) const {
    const auto src = open_source(path);
    const auto n = src.size();
    if (n > max_bytes)
      throw invalid_input_error(src.name() + ": " + std::to_string(n) + " bytes, more than the " +
                                std::to_string(max_bytes) + " expected");
    const auto b = src.read(0, n);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }

 private:
  std::shared_ptr<const backend> b_;
};

// A local path given as itself or as a file:// URI ("file:///x" -> "/x").
inline std::string local_path(std::string_view path) {
  if (path.starts_with("file://")) path.remove_prefix(7);
  return std::string(path);
}

namespace detail {

// The local backend: file_sink / file_source and the POSIX helpers of fs.hpp.
class local_backend final : public storage::backend {
 public:
  explicit local_backend(file_source_options read) : read_(read) {}

  bool is_local() const noexcept override { return true; }
  const std::string& name() const noexcept override { return name_; }

  any_source open_source(const std::string& path, std::optional<std::uint64_t>) const override {
    return any_source(file_source(local_path(path), read_));
  }
  any_sink create_sink(const std::string& path, const storage_sink_options& o) const override {
    file_sink_options fo;
    fo.exclusive = o.if_absent;
    fo.sync = o.durable;
    fo.create_directories = true;
    return any_sink(file_sink(local_path(path), fo));
  }
  std::optional<std::uint64_t> size(const std::string& given) const override {
    const auto path = local_path(given);
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::is_regular_file(st)) {
      if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
        throw io_error("cannot stat '" + path + "': " + ec.message());
      return std::nullopt;
    }
    const auto n = std::filesystem::file_size(path, ec);
    if (ec) throw io_error("cannot stat '" + path + "': " + ec.message());
    return std::uint64_t(n);
  }
  std::vector<stored_file> list(const std::string& given, bool recursive) const override {
    namespace fs = std::filesystem;
    const auto dir = local_path(given);
    std::vector<stored_file> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
        throw io_error("cannot access '" + dir + "': " + ec.message());
      return out;
    }
    const fs::path base(dir);
    // A file removed or renamed between the directory read and its stat (a concurrent
    // writer's temporary file) is left out, as a listing a moment later would.
    auto add = [&](const fs::directory_entry& e) {
      std::error_code fec;
      if (!e.is_regular_file(fec)) return;
      stored_file f;
      f.path = e.path().lexically_relative(base).generic_string();
      f.size = std::uint64_t(e.file_size(fec));
      if (fec == std::errc::no_such_file_or_directory) return;
      if (fec) throw io_error("cannot stat '" + e.path().string() + "': " + fec.message());
      const auto t = e.last_write_time(fec);
      if (!fec) f.modified = std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(t));
      out.push_back(std::move(f));
    };
    if (recursive) {
      for (fs::recursive_directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) add(*it);
    } else {
      for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) add(*it);
    }
    if (ec) throw io_error("cannot list '" + dir + "': " + ec.message());
    std::sort(out.begin(), out.end(), [](const stored_file& a, const stored_file& b) { return a.path < b.path; });
    return out;
  }
  void remove(std::span<const std::string> paths) const override {
    for (const auto& p : paths) remove_file(local_path(p));
  }
  void remove_all(const std::string& given) const override {
    const auto dir = local_path(given);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) throw io_error("cannot remove '" + dir + "': " + ec.message());
  }

 private:
  file_source_options read_;
  std::string name_ = "local files";
};

// The mount table storage_for looks URIs up in: prefix -> storage.
struct mounts {
  std::mutex mu;
  std::map<std::string, storage, std::less<>> table;
  static mounts& get() {
    static mounts m;
    return m;
  }
};

inline std::string_view without_trailing_slashes(std::string_view s) {
  while (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
  return s;
}

}  // namespace detail

inline storage storage::local(file_source_options read) {
  return storage(std::make_shared<const detail::local_backend>(read));
}

// Whether `root` is a URI (has a scheme other than file://).
inline bool is_uri(std::string_view root) {
  const auto colon = root.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  for (char c : root.substr(0, colon))
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
      return false;
  return true;
}

// Makes `s` the storage of every root under `prefix` (a URI such as "s3://bucket" or
// "az://container/db"), replacing one mounted there before.
inline void mount(std::string_view prefix, storage s) {
  const auto p = detail::without_trailing_slashes(prefix);
  if (!is_uri(p)) throw invalid_input_error("mount: '" + std::string(prefix) + "' is not a URI (scheme://...)");
  auto& m = detail::mounts::get();
  std::lock_guard lock(m.mu);
  m.table.insert_or_assign(std::string(p), std::move(s));
}

// Removes the storage mounted at exactly `prefix`; whether there was one.
inline bool unmount(std::string_view prefix) {
  auto& m = detail::mounts::get();
  std::lock_guard lock(m.mu);
  return m.table.erase(std::string(detail::without_trailing_slashes(prefix))) > 0;
}

// The storage of a dataset root (see the top of this file).
inline storage storage_for(std::string_view root) {
  if (!is_uri(root) || root.starts_with("file://")) return storage::local();
  auto& m = detail::mounts::get();
  std::lock_guard lock(m.mu);
  const storage* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [prefix, st] : m.table) {
    if (!root.starts_with(prefix)) continue;
    if (root.size() != prefix.size() && root[prefix.size()] != '/') continue;  // "s3://b/db" is not under "s3://b/d"
    if (prefix.size() >= best_len) {
      best = &st;
      best_len = prefix.size();
    }
  }
  if (best) return *best;
  throw unsupported_error("no storage for '" + std::string(root) +
                          "': include lancet/io/object_store/object_storage.hpp and mount one "
                          "(io::mount(prefix, object_store::open_storage(uri, options)))");
}


// Creates a directory and its parents when it is on local storage, where a sink from
// a user's factory may expect them; nothing on an object store, which has none.
inline void make_directories_if_local(const std::string& dir) {
  if (storage_for(dir).is_local()) make_directories(local_path(dir));
}

// Removes the file at a path (local, or under a mounted storage) and ignores every
// error: the clean-up of a write that is failing already.
inline void remove_quietly(const std::string& path) noexcept {
  try {
    storage_for(path).remove(path);
  } catch (...) {
  }
}

// Removes everything under a directory or key prefix (local, or under a mounted
// storage) and ignores every error, as remove_quietly.
inline void remove_all_quietly(const std::string& dir) noexcept {
  try {
    storage_for(dir).remove_all(dir);
  } catch (...) {
  }
}

}  // namespace lancet::io
