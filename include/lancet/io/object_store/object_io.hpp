// Objects of a store as lancet's sinks and sources (io/sink.hpp, io/source.hpp), over
// any client meeting object_client (s3_client, azure_client):
//   client_pool     clients of one store for many threads (a client holds one
//                   connection; each call borrows an idle one, or makes one)
//   object_source   an object's size (asked once) and ranged reads; thread-safe; many
//                   ranges at once (read_into) cut into pieces or merged where they lie
//                   close, fetched by up to 8 requests at a time, read into place
//   object_sink     bytes appended in memory up to part_size, then uploaded part by part
//                   (multipart on S3, blocks on Azure), up to parts_in_flight parts at
//                   once on threads of their own (memory: at most parts_in_flight + 1
//                   parts); finish() waits for them and completes the upload, or
//                   puts a small object whole, with If-None-Match: * when asked (a
//                   manifest: conflict_error naming the URI when the key exists). A sink
//                   destroyed unfinished aborts its upload: nothing appears at the key.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/object_store/listing.hpp"
#include "lancet/io/source.hpp"

namespace lancet::io::object_store {

template <class C>
concept object_client = requires(C& c, const std::string& key, std::string_view body, std::uint32_t index,
                                 const std::vector<std::string>& parts) {
  { c.uri(key) } -> std::convertible_to<std::string>;
  { c.put(key, body) } -> std::convertible_to<std::string>;
  { c.put_if_absent(key, body) } -> std::same_as<bool>;
  { c.get(key, std::optional<std::pair<std::uint64_t, std::uint64_t>>()) } -> std::same_as<std::string>;
  c.get_into(key, std::pair<std::uint64_t, std::uint64_t>(), static_cast<std::uint8_t*>(nullptr));
  { c.size(key) } -> std::same_as<std::optional<std::uint64_t>>;
  { c.list(key) } -> std::same_as<std::vector<listed_object>>;
  c.remove(key);
  { c.start_upload(key) } -> std::same_as<std::string>;
  { c.upload_part(key, key, index, body) } -> std::same_as<std::string>;
  { c.complete_upload(key, key, parts, true) } -> std::same_as<bool>;
  c.abort_upload(key, key);
};

// f(0), ..., f(n - 1), at most `threads` at a time: the caller and up to threads - 1
// threads of its own each take the next index until none is left or one call failed;
// the first failure is thrown once all have stopped.
template <class F>
void for_each_concurrently(std::size_t n, std::size_t threads, F&& f) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  const auto work = [&] {
    for (std::size_t k; !stop && (k = next.fetch_add(1)) < n;) try {
        f(k);
      } catch (...) {
        stop = true;
        throw;
      }
  };
  std::vector<std::future<void>> helpers;
  for (std::size_t t = 1; t < std::min(threads, n); ++t) helpers.push_back(std::async(std::launch::async, work));
  std::exception_ptr failed;
  try {
    work();
  } catch (...) {
    failed = std::current_exception();
  }
  for (auto& h : helpers) try {
      h.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  if (failed) std::rethrow_exception(failed);
}

template <object_client Client>
class client_pool {
 public:
  explicit client_pool(std::function<std::unique_ptr<Client>()> make) : make_(std::move(make)) {}

  // f(client) on a client no other thread uses meanwhile.
  template <class F>
  decltype(auto) with(F&& f) {
    std::unique_ptr<Client> c;
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!c) c = make_();
    struct give_back {
      client_pool* pool;
      std::unique_ptr<Client>* c;
      ~give_back() {
        std::lock_guard lock(pool->mu_);
        pool->idle_.push_back(std::move(*c));
      }
    } back{this, &c};
    return f(*c);
  }

 private:
  std::function<std::unique_ptr<Client>()> make_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Client>> idle_;
};

template <object_client Client>
class object_source {
 public:
  object_source(std::shared_ptr<client_pool<Client>> pool, std::string key) : pool_(std::move(pool)), key_(std::move(key)) {
    pool_->with([&](Client& c) {
      name_ = c.uri(key_);
      const auto n = c.size(key_);
      if (!n) throw not_found_error(name_ + ": no such object");
      size_ = *n;
    });
  }

  // An object whose size is known (from a listing or a manifest): no request to open it.
  object_source(std::shared_ptr<client_pool<Client>> pool, std::string key, std::uint64_t size)
      : pool_(std::move(pool)), key_(std::move(key)), size_(size) {
    name_ = pool_->with([&](Client& c) { return c.uri(key_); });
  }

  std::uint64_t size() const noexcept { return size_; }
  const std::string& name() const noexcept { return name_; }

  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    check_range(offset, length, size_, name_);
    if (length == 0) return shared_bytes();
    auto mem = shared_uninitialised_bytes(std::size_t(length));
    const byte_range r{offset, length};
    read_into(std::span(&r, 1), mem.get());
    const std::uint8_t* data = mem.get();
    return shared_bytes(std::move(mem), data, std::size_t(length));
  }

  // io::read_into's member: every range checked first; ranges cut into pieces of at
  // most 8 MiB; pieces less than 1 MiB apart fetched together (one request of at most
  // 8 MiB); up to 8 requests at a time. A request of bytes that lie end to end in the
  // object and in `out` is read off the socket into place; others through a buffer.
  void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const {
    for (const auto& r : ranges) check_range(r.offset, r.length, size_, name_);
    constexpr std::uint64_t piece = std::uint64_t(8) << 20, gap = std::uint64_t(1) << 20;
    struct part {
      std::uint64_t offset, length, at;  // at: where it goes in `out`
    };
    std::vector<part> parts;
    for (std::uint64_t i = 0, pos = 0; i < ranges.size(); pos += ranges[i].length, ++i)
      for (std::uint64_t b = 0; b < ranges[i].length; b += piece)
        parts.push_back({ranges[i].offset + b, std::min(piece, ranges[i].length - b), pos + b});
    std::sort(parts.begin(), parts.end(), [](const part& a, const part& b) { return a.offset < b.offset; });
    struct request {
      std::uint64_t begin = 0, end = 0;
      std::size_t first = 0, last = 0;  // parts[first, last)
      bool in_place = true;
    };
    std::vector<request> requests;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& p = parts[i];
      if (requests.empty() || p.offset > requests.back().end + gap ||
          std::max(requests.back().end, p.offset + p.length) - requests.back().begin > piece) {
        requests.push_back({p.offset, p.offset + p.length, i, i + 1, true});
        continue;
      }
      auto& q = requests.back();
      const auto& prev = parts[i - 1];
      q.in_place = q.in_place && p.offset == prev.offset + prev.length && p.at == prev.at + prev.length;
      q.end = std::max(q.end, p.offset + p.length);
      q.last = i + 1;
    }
    const auto fetch = [&](const request& q) {
      if (q.in_place) {
        pool_->with([&](Client& c) { c.get_into(key_, std::pair{q.begin, q.end}, out + parts[q.first].at); });
        return;
      }
      const auto bytes = pool_->with([&](Client& c) { return c.get(key_, std::pair{q.begin, q.end}); });
      for (auto i = q.first; i < q.last; ++i)
        std::memcpy(out + parts[i].at, bytes.data() + (parts[i].offset - q.begin), std::size_t(parts[i].length));
    };
    for_each_concurrently(requests.size(), 8, [&](std::size_t k) { fetch(requests[k]); });
  }

 private:
  std::shared_ptr<client_pool<Client>> pool_;
  std::string key_, name_;
  std::uint64_t size_ = 0;
};

struct object_sink_options {
  // Bytes buffered before a part is uploaded; S3 needs at least 5 MiB for every part but
  // the last (Lance uploads 5 MiB parts).
  std::uint64_t part_size = std::uint64_t(5) << 20;
  // Parts uploading at once (as Lance: 10); 1 uploads each part before the writer goes on.
  std::uint32_t parts_in_flight = 10;
  // Put the object only if its key is free (Lance's manifest commit): one conditional
  // PUT when it fits in a part, else the upload completed on that condition.
  bool if_absent = false;
};

template <object_client Client>
class object_sink {
 public:
  object_sink(std::shared_ptr<client_pool<Client>> pool, std::string key, object_sink_options o = {})
      : pool_(std::move(pool)), key_(std::move(key)), o_(o) {
    name_ = pool_->with([&](Client& c) { return c.uri(key_); });
    if (o_.part_size < (std::uint64_t(5) << 20))
      throw invalid_input_error("object_sink: part_size " + std::to_string(o_.part_size) + " is below 5 MiB");
    if (o_.parts_in_flight == 0) throw invalid_input_error("object_sink: parts_in_flight must be at least 1");
  }
  object_sink(object_sink&& o) noexcept
      : pool_(std::move(o.pool_)), key_(std::move(o.key_)), name_(std::move(o.name_)), o_(o.o_), buffer_(std::move(o.buffer_)),
        position_(o.position_), upload_(std::exchange(o.upload_, std::nullopt)), parts_(std::move(o.parts_)),
        in_flight_(std::move(o.in_flight_)), finished_(std::exchange(o.finished_, true)) {}
  object_sink& operator=(object_sink&&) = delete;
  ~object_sink() { abort(); }

  // Gives up: parts on their way are waited for and the upload aborted, so nothing
  // appears at the key. A no-op once finished; never throws.
  void abort() noexcept {
    for (auto& f : in_flight_) f.wait();  // their threads use this sink's key and pool
    in_flight_.clear();
    if (!finished_ && upload_) {
      try {
        pool_->with([&](Client& c) { c.abort_upload(key_, *upload_); });
      } catch (...) {
        // The upload stays incomplete (invisible); the store's lifecycle or cleanup removes it.
      }
    }
    upload_.reset();
    buffer_.clear();
    finished_ = true;
  }

  void write(bytes_view bytes) {
    if (finished_) throw io_error(name_ + ": write after finish");
    buffer_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    position_ += bytes.size();
    while (buffer_.size() >= o_.part_size) {
      upload(buffer_.substr(0, std::size_t(o_.part_size)));
      buffer_.erase(0, std::size_t(o_.part_size));
    }
  }

  std::uint64_t position() const noexcept { return position_; }

  void finish() {
    if (finished_) throw io_error(name_ + ": finished twice");
    pool_->with([&](Client& c) {
      if (!upload_) {
        if (!o_.if_absent) c.put(key_, buffer_);
        else if (!c.put_if_absent(key_, buffer_))
          throw conflict_error(name_ + ": already exists (another writer committed it first)");
      } else {
        if (!buffer_.empty() || parts_.size() + in_flight_.size() == 0) upload(std::string(buffer_));
        while (!in_flight_.empty()) settle_oldest();
        if (!c.complete_upload(key_, *upload_, parts_, o_.if_absent)) {
          try {
            c.abort_upload(key_, *upload_);
          } catch (...) {
          }
          upload_.reset();
          throw conflict_error(name_ + ": already exists (another writer committed it first)");
        }
      }
    });
    buffer_.clear();
    buffer_.shrink_to_fit();
    finished_ = true;
  }

 private:
  // Starts uploading the next part (the upload itself first, on the first part), after
  // waiting for the oldest part when parts_in_flight are on their way.
  void upload(std::string part) {
    if (!upload_) upload_ = pool_->with([&](Client& c) { return c.start_upload(key_); });
    while (in_flight_.size() >= o_.parts_in_flight) settle_oldest();
    const auto index = std::uint32_t(parts_.size() + in_flight_.size());
    in_flight_.push_back(std::async(std::launch::async, [pool = pool_, key = key_, id = *upload_, index,
                                                         body = std::move(part)] {
      return pool->with([&](Client& c) { return c.upload_part(key, id, index, body); });
    }));
  }

  // The oldest part's token; its error, if it failed (the others are waited for first).
  void settle_oldest() {
    try {
      parts_.push_back(in_flight_.front().get());
      in_flight_.erase(in_flight_.begin());
    } catch (...) {
      in_flight_.erase(in_flight_.begin());
      for (auto& f : in_flight_) f.wait();
      in_flight_.clear();
      throw;
    }
  }

  std::shared_ptr<client_pool<Client>> pool_;
  std::string key_, name_;  // name_: the object's URI, for messages
  object_sink_options o_;
  std::string buffer_;
  std::uint64_t position_ = 0;
  std::optional<std::string> upload_;
  std::vector<std::string> parts_;              // tokens of the parts uploaded, in order
  std::vector<std::future<std::string>> in_flight_;  // the parts after them, oldest first
  bool finished_ = false;
};

}  // namespace lancet::io::object_store
