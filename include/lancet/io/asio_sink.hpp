// A sink over a Boost.Asio stream (socket, pipe, serial port, TLS stream...): a writer
// can stream a Lance file straight to a peer. Writes are gathered into a buffer (the
// writer emits many small pieces) and sent with boost::asio::write.
//
// Streams that also model SyncWriteStream (sockets, posix::stream_descriptor) are
// written synchronously on the calling thread. A stream that is only an
// AsyncWriteStream is driven through async_write + use_future: its executor must be run
// by another thread (calling from that executor's own thread would deadlock and is
// refused with invalid_input_error when detectable).
//
// The sink does not own the stream: finish() sends everything buffered, and closing
// or shutting down the stream (to signal end of data) is the caller's business.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/abortable_sink.hpp"

namespace lancet::io {

namespace detail {
template <class S>
concept asio_sync_write_stream = requires(S& s, boost::asio::const_buffer b, boost::system::error_code& ec) {
  { s.write_some(b, ec) } -> std::convertible_to<std::size_t>;
};
}  // namespace detail

template <class AsyncWriteStream>
class asio_sink {
 public:
  // name appears in error messages ("asio sink 'name': ...").
  explicit asio_sink(AsyncWriteStream& stream, std::string name = "stream",
                     std::size_t buffer_bytes = std::size_t(64) << 10)
      : stream_(&stream), name_(std::move(name)), cap_(buffer_bytes) {
    if (cap_ > 0) buf_.reserve(cap_);
  }
  asio_sink(asio_sink&&) noexcept = default;
  asio_sink& operator=(asio_sink&&) noexcept = default;

  void write(bytes_view bytes) {
    require_open("write");
    if (bytes.empty()) return;
    if (buf_.size() + bytes.size() <= cap_) {
      buf_.append(bytes);
    } else if (bytes.size() >= cap_) {
      // Buffered bytes and the large write go out in one gathered write.
      std::array<boost::asio::const_buffer, 2> bufs{boost::asio::buffer(buf_.data(), buf_.size()),
                                                    boost::asio::buffer(bytes.data(), bytes.size())};
      send(bufs, buf_.size() + bytes.size());
      buf_.clear();
    } else {
      flush_buffer();
      buf_.append(bytes);
    }
    pos_ += bytes.size();
  }

  std::uint64_t position() const noexcept { return pos_; }

  // Sends whatever is buffered.
  void flush() {
    require_open("flush");
    flush_buffer();
  }

  void finish() {
    require_open("finish");
    flush_buffer();
    state_ = state::finished;
    buf_ = aligned_buffer();
  }

  // Drops buffered bytes (what was already sent cannot be recalled; the peer sees a
  // truncated stream, which the caller should close).
  void abort() noexcept {
    if (state_ == state::open || state_ == state::failed) {
      buf_ = aligned_buffer();
      if (state_ == state::open) state_ = state::aborted;
    }
  }

  // Bytes handed to the stream so far (position() minus what is still buffered).
  std::uint64_t bytes_sent() const noexcept { return sent_; }
  bool finished() const noexcept { return state_ == state::finished; }
  AsyncWriteStream& stream() noexcept { return *stream_; }

 private:
  enum class state { open, finished, failed, aborted };

  void require_open(const char* op) const {
    if (state_ == state::open) return;
    std::string what = std::string("asio sink '") + name_ + "': " + op;
    if (state_ == state::failed) throw io_error(what + " after an earlier failure");
    throw invalid_input_error(what + (state_ == state::finished ? " after finish()" : " after abort()"));
  }

  void flush_buffer() {
    if (buf_.empty()) return;
    send(boost::asio::buffer(buf_.data(), buf_.size()), buf_.size());
    buf_.clear();
  }

  template <class ConstBufferSequence>
  void send(const ConstBufferSequence& bufs, std::size_t total) {
    boost::system::error_code ec;
    std::size_t n = 0;
    if constexpr (detail::asio_sync_write_stream<AsyncWriteStream>) {
      n = boost::asio::write(*stream_, bufs, ec);
    } else {
      auto ex = stream_->get_executor();
      if constexpr (requires { ex.running_in_this_thread(); }) {
        if (ex.running_in_this_thread()) {
          throw invalid_input_error("asio sink '" + name_ +
                                    "': a write from the stream's own executor thread would deadlock");
        }
      }
      try {
        n = boost::asio::async_write(*stream_, bufs, boost::asio::use_future).get();
      } catch (const boost::system::system_error& e) {
        ec = e.code();
      }
    }
    if (!ec && n != total) ec = boost::asio::error::make_error_code(boost::asio::error::eof);
    if (ec) {
      state_ = state::failed;
      throw io_error("asio sink '" + name_ + "': cannot write " + std::to_string(total) +
                     " bytes at offset " + std::to_string(sent_) + ": " + ec.message());
    }
    sent_ += n;
  }

  AsyncWriteStream* stream_;
  std::string name_;
  std::size_t cap_;
  aligned_buffer buf_;
  std::uint64_t pos_ = 0;
  std::uint64_t sent_ = 0;
  state state_ = state::open;
};

}  // namespace lancet::io
