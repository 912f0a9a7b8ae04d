// Objects of a store as lancet's sinks and sources (io/sink.hpp, io/source.hpp), over
// any client meeting object_client (s3_client, azure_client):
//   client_pool     clients of one store for many threads (a client holds one
//                   connection; each call borrows an idle one, or makes one)
//   object_source   an object's size (asked once) and ranged reads; thread-safe; many
//                   ranges at once (read_into) merged where they lie close and fetched
//                   by up to 8 requests at a time
//   object_sink     bytes appended in memory up to part_size, then uploaded part by part
//                   (multipart on S3, blocks on Azure), up to parts_in_flight parts at
//                   once on threads of their own (memory: at most parts_in_flight + 1
//                   parts); finish() waits for them and completes the upload, or
//                   puts a small object whole, with If-None-Match: * when asked (a
//                   manifest: conflict_error naming the URI when the key exists). A sink
//                   destroyed unfinished aborts its upload: nothing appears at the key.
#pragma once

#include <algorithm>
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
  { c.size(key) } -> std::same_as<std::optional<std::uint64_t>>;
  { c.list(key) } -> std::same_as<std::vector<listed_object>>;
  c.remove(key);
  { c.start_upload(key) } -> std::same_as<std::string>;
  { c.upload_part(key, key, index, body) } -> std::same_as<std::string>;
  { c.complete_upload(key, key, parts, true) } -> std::same_as<bool>;
  c.abort_upload(key, key);
};

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
    aligned_buffer out;
    out.resize(std::size_t(length));
    if (length == 0) return shared_bytes(std::move(out));
    const auto bytes = pool_->with([&](Client& c) { return c.get(key_, std::pair{offset, offset + length}); });
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return shared_bytes(std::move(out));
  }

  // io::read_into's member: every range checked first, then ranges less than 1 MiB
  // apart fetched together (one request of at most 16 MiB), up to 8 requests at a time.
  void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const {
    for (const auto& r : ranges) check_range(r.offset, r.length, size_, name_);
    std::vector<std::uint64_t> at(ranges.size());  // where each range goes in `out`
    std::vector<std::size_t> order;
    for (std::uint64_t i = 0, pos = 0; i < ranges.size(); pos += ranges[i].length, ++i) {
      at[i] = pos;
      if (ranges[i].length) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ranges[a].offset < ranges[b].offset; });
    struct request {
      std::uint64_t begin = 0, end = 0;
      std::vector<std::size_t> ranges;
    };
    std::vector<request> requests;
    constexpr std::uint64_t gap = std::uint64_t(1) << 20, most = std::uint64_t(16) << 20;
    for (const auto i : order) {
      const auto& r = ranges[i];
      if (requests.empty() || r.offset > requests.back().end + gap ||
          std::max(requests.back().end, r.end()) - requests.back().begin > most)
        requests.push_back({r.offset, r.end(), {}});
      auto& q = requests.back();
      q.end = std::max(q.end, r.end());
      q.ranges.push_back(i);
    }
    const auto fetch = [&](const request& q) {
      const auto bytes = pool_->with([&](Client& c) { return c.get(key_, std::pair{q.begin, q.end}); });
      for (const auto i : q.ranges)
        std::memcpy(out + at[i], bytes.data() + (ranges[i].offset - q.begin), std::size_t(ranges[i].length));
    };
    constexpr std::size_t concurrent = 8;
    for (std::size_t first = 0; first < requests.size(); first += concurrent) {
      std::vector<std::future<void>> running;
      const auto last = std::min(requests.size(), first + concurrent);
      for (std::size_t k = first + 1; k < last; ++k) running.push_back(std::async(std::launch::async, fetch, std::cref(requests[k])));
      std::exception_ptr failed;
      try {
        fetch(requests[first]);
      } catch (...) {
        failed = std::current_exception();
      }
      for (auto& f : running) try {
          f.get();
        } catch (...) {
          if (!failed) failed = std::current_exception();
        }
      if (failed) std::rethrow_exception(failed);
    }
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
