// HTTP/1.1 requests to an object store, over Boost.Beast: one keep-alive connection per
// http_connection, every step (resolve, connect, write, read) under a deadline. What an
// object store may answer transiently (5xx, 429, a dropped or timed-out connection) the
// clients retry, signing each attempt anew, after backoff_delay.
//
//   object_store::http_connection c(object_store::parse_endpoint("http://127.0.0.1:4568", true), client);
//   auto r = c.send("GET", "/bucket/key", {{"range", "bytes=0-99"}}, {});
//
// https goes through OpenSSL (a program that includes this header links -lssl
// -lcrypto): the peer's certificate is verified against the system's trust store
// (SSL_CERT_FILE / SSL_CERT_DIR name others) and the endpoint's host name or address,
// unless allow_invalid_certificates. An http:// endpoint needs allow_http, as in LanceDB.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/random.hpp"
#include "lancet/io/object_store/options.hpp"
#include "lancet/io/object_store/sigv4.hpp"
#include "lancet/io/object_store/xml.hpp"

namespace lancet::io::object_store {

struct http_endpoint {
  std::string url;   // as given, for messages
  bool tls = false;
  std::string host;  // name or address
  std::string port;  // "80", "443", or as given
  std::string path;  // a base path ("/devstoreaccount1"), no trailing '/'; may be empty

  // The Host header: the port only when it is not the scheme's default.
  std::string host_header() const {
    return (tls ? port == "443" : port == "80") ? host : host + ":" + port;
  }
};

inline http_endpoint parse_endpoint(std::string_view url, bool allow_http) {
  http_endpoint e;
  e.url = std::string(url);
  const auto bad = [&](const std::string& why) { return invalid_input_error("endpoint '" + e.url + "': " + why); };
  std::string_view rest;
  if (url.starts_with("https://")) {
    e.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    if (!allow_http) throw bad("http is not allowed (set the storage option allow_http=true)");
    rest = url.substr(7);
  } else {
    throw bad("expected http:// or https://");
  }
  const auto slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  e.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!e.path.empty() && e.path.back() == '/') e.path.pop_back();
  const auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    e.host = std::string(authority.substr(0, colon));
    e.port = std::string(authority.substr(colon + 1));
    if (e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos || e.port.size() > 5)
      throw bad("port '" + e.port + "' is not a number");
  } else {
    e.host = std::string(authority);
    e.port = e.tls ? "443" : "80";
  }
  if (e.host.empty()) throw bad("no host");
  return e;
}

struct http_response {
  unsigned status = 0;
  header_list headers;  // names lowercase
  std::string body;
  bool body_in_place = false;  // the body went to the caller's buffer (send's `into`), not to `body`

  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return {};
  }
};

// A transport failure (connection refused or dropped, a deadline passed): retried.
struct transport_error : io_error {
  explicit transport_error(const std::string& w) : io_error(w) {}
};

class http_connection {
 public:
  http_connection(http_endpoint ep, client_options o) : ep_(std::move(ep)), o_(o) {
    if (ep_.tls) {
      namespace ssl = boost::asio::ssl;
      tls_context_ = std::make_unique<ssl::context>(ssl::context::tls_client);
      boost::system::error_code ec;
      tls_context_->set_default_verify_paths(ec);
      if (ec) throw io_error(ep_.url + ": cannot load the system's trusted certificates: " + ec.message());
      tls_context_->set_verify_mode(o_.allow_invalid_certificates ? ssl::verify_none : ssl::verify_peer);
    }
  }

  const http_endpoint& endpoint() const noexcept { return ep_; }
  const client_options& options() const noexcept { return o_; }

  // One attempt. Throws transport_error when no answer came; an HTTP error status is
  // an answer (the caller decides). A 2xx answer whose body is exactly into.size()
  // bytes is read straight into `into` (body_in_place): a ranged GET lands where its
  // bytes are wanted, with no copy.
  http_response send(std::string_view method, const std::string& target, const header_list& headers,
                     std::string_view body, std::span<std::uint8_t> into = {}) {
    namespace http = boost::beast::http;
    try {
      if (!connected()) connect();
      http::request<http::span_body<const char>> req;  // the caller's bytes, not a copy
      req.method_string(boost::beast::string_view(method.data(), method.size()));
      req.target(target);
      req.version(11);
      req.set(http::field::host, ep_.host_header());
      req.set(http::field::user_agent, "lancet");
      for (const auto& [k, v] : headers) req.set(k, v);
      req.body() = boost::beast::span<const char>(body.data(), body.size());
      req.prepare_payload();
      tcp().expires_after(o_.timeout);
      boost::beast::error_code ec;
      with_stream([&](auto& s) { http::async_write(s, req, [&](boost::beast::error_code e, std::size_t) { ec = e; }); });
      run();
      if (ec) fail("sending " + std::string(method) + " " + target, ec);
      http::response_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t(1) << 40);
      if (method == "HEAD") parser.skip(true);
      buffer_.clear();
      const std::string what = "reading the answer to " + std::string(method) + " " + target;
      with_stream([&](auto& s) {
        http::async_read_header(s, buffer_, parser, [&](boost::beast::error_code e, std::size_t) { ec = e; });
      });
      run();
      if (ec) fail(what, ec);
      http_response out;
      const bool fits = !into.empty() && parser.get().result_int() / 100 == 2 && parser.content_length() &&
                        *parser.content_length() == into.size();
      if (!parser.is_done() && parser.content_length() && !parser.chunked()) {
        if (fits) {
          read_body(into, what);
          out.body_in_place = true;
        } else {
          if (*parser.content_length() > (std::uint64_t(1) << 40))
            throw io_error(ep_.url + ": " + what + ": a body of " + std::to_string(*parser.content_length()) + " bytes");
          out.body.resize(std::size_t(*parser.content_length()));
          read_body({reinterpret_cast<std::uint8_t*>(out.body.data()), out.body.size()}, what);
        }
      } else {
        with_stream(
            [&](auto& s) { http::async_read(s, buffer_, parser, [&](boost::beast::error_code e, std::size_t) { ec = e; }); });
        run();
        if (ec) fail(what, ec);
        out.body = std::move(parser.get().body());
      }
      const auto& res = parser.get();
      out.status = res.result_int();
      for (const auto& f : res) {
        const auto name = f.name_string();
        out.headers.emplace_back(ascii_lower(std::string_view(name.data(), name.size())), std::string(f.value()));
      }
      if (!res.keep_alive()) close();
      return out;
    } catch (const transport_error&) {
      close();
      throw;
    }
  }

  // Answers an object store may give transiently: retried by the clients.
  static bool transient(unsigned status) noexcept { return status >= 500 || status == 429 || status == 408; }

 private:
  void connect() {
    boost::asio::ip::tcp::resolver resolver(ioc_);
    boost::beast::error_code ec;
    boost::asio::ip::tcp::resolver::results_type found;
    resolver.async_resolve(ep_.host, ep_.port, [&](boost::beast::error_code e, auto results) {
      ec = e;
      found = std::move(results);
    });
    run();
    if (ec) fail("resolving " + ep_.host, ec);
    if (ep_.tls) {
      tls_.emplace(ioc_, *tls_context_);
      boost::system::error_code not_ip;
      boost::asio::ip::make_address(ep_.host, not_ip);
      // SNI names hosts, not addresses.
      if (not_ip && !SSL_set_tlsext_host_name(tls_->native_handle(), ep_.host.c_str()))
        throw transport_error(ep_.url + ": cannot set the TLS server name");
      if (!o_.allow_invalid_certificates) tls_->set_verify_callback(boost::asio::ssl::host_name_verification(ep_.host));
    } else {
      plain_.emplace(ioc_);
    }
    tcp().expires_after(o_.connect_timeout);
    tcp().async_connect(found, [&](boost::beast::error_code e, const auto&) { ec = e; });
    run();
    if (ec) fail("connecting to " + ep_.host_header(), ec);
    if (tls_) {
      tcp().expires_after(o_.connect_timeout);
      tls_->async_handshake(boost::asio::ssl::stream_base::client, [&](boost::beast::error_code e) { ec = e; });
      run();
      if (ec) fail("TLS handshake with " + ep_.host_header(), ec);
    }
  }

  // A body of known length, straight into `body`: what the header read took past the
  // header first, then reads as large as the socket gives (Beast's parser would take
  // it 64 KiB at a time through buffer_ and copy it again).
  void read_body(std::span<std::uint8_t> body, const std::string& what) {
    const auto early = std::min<std::size_t>(buffer_.size(), body.size());
    boost::asio::buffer_copy(boost::asio::buffer(body.data(), early), buffer_.data());
    buffer_.consume(buffer_.size());
    boost::beast::error_code ec;
    if (early < body.size()) {
      with_stream([&](auto& s) {
        boost::asio::async_read(s, boost::asio::buffer(body.data() + early, body.size() - early),
                                [&](boost::beast::error_code e, std::size_t) { ec = e; });
      });
      run();
      if (ec) fail(what, ec);
    }
  }

  bool connected() const noexcept { return plain_.has_value() || tls_.has_value(); }
  boost::beast::tcp_stream& tcp() { return tls_ ? boost::beast::get_lowest_layer(*tls_) : *plain_; }
  template <class F>
  void with_stream(F&& f) {
    if (tls_) f(*tls_);
    else f(*plain_);
  }

  void run() {
    ioc_.restart();
    ioc_.run();
  }

  void close() noexcept {
    if (connected()) {
      boost::beast::error_code ignored;
      tcp().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    }
    tls_.reset();
    plain_.reset();
  }

  [[noreturn]] void fail(const std::string& what, const boost::beast::error_code& ec) {
    const bool timed_out = ec == boost::beast::error::timeout;
    throw transport_error(ep_.url + ": " + what + ": " + (timed_out ? "timed out" : ec.message()));
  }

  http_endpoint ep_;
  client_options o_;
  boost::asio::io_context ioc_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
};

// "?k=v&..." with keys and values percent-encoded (empty when there are none).
inline std::string query_string(const header_list& query) {
  std::string q;
  for (std::size_t i = 0; i < query.size(); ++i)
    q += (i ? "&" : "?") + uri_encode(query[i].first, false) + "=" + uri_encode(query[i].second, false);
  return q;
}

// The error an object store's answer means, naming `what` ("s3://b/k: GET"), the HTTP
// status and the store's error code and message (both stores answer <Error><Code>,
// <Message>): not_found_error for 404, io_error otherwise.
[[noreturn]] inline void throw_http_error(const http_response& r, const std::string& what) {
  const auto code = detail::xml_first(r.body, "Code"), message = detail::xml_first(r.body, "Message");
  std::string m = what + " answered HTTP " + std::to_string(r.status) + (code.empty() ? "" : " " + code);
  if (!message.empty()) m += " (" + message.substr(0, message.find('\n')) + ")";
  if (r.status == 404) throw not_found_error(m);
  throw io_error(m);
}

// The pause before retry number attempt + 1: 100 ms x 2^attempt, at most 5 s, jittered
// down to half so that clients that failed together do not retry together.
inline std::chrono::milliseconds backoff_delay(unsigned attempt) {
  const auto base = std::min<std::int64_t>(5000, std::int64_t(100) << std::min(attempt, 6u));
  return std::chrono::milliseconds(std::int64_t(random_between(std::uint64_t(base / 2), std::uint64_t(base))));
}

using byte_span = std::optional<std::pair<std::uint64_t, std::uint64_t>>;  // [begin, end); none: all

// The Range header's value for bytes [begin, end) (HTTP ranges are inclusive).
inline std::string range_header(const std::pair<std::uint64_t, std::uint64_t>& r) {
  return "bytes=" + std::to_string(r.first) + "-" + std::to_string(r.second - 1);
}

// A ranged read's body checked to hold exactly the range.
inline void check_range_body(const http_response& r, const byte_span& range, const std::string& what) {
  if (range && r.body.size() != range->second - range->first)
    throw io_error(what + " of bytes [" + std::to_string(range->first) + ", " + std::to_string(range->second) +
                   ") returned " + std::to_string(r.body.size()) + " bytes");
}

// The body of a ranged GET sent with `into` (range.second - range.first bytes at out):
// read there already, or copied there once checked to hold exactly the range.
inline void place_range_body(const http_response& r, const std::pair<std::uint64_t, std::uint64_t>& range,
                             std::uint8_t* out, const std::string& what) {
  if (r.body_in_place) return;
  check_range_body(r, range, what);
  std::memcpy(out, r.body.data(), r.body.size());
}

// One request, sent until its answer is not transient or 1 + max_retries attempts were
// made (then the last answer is returned, or an io_error naming `uri` thrown when no
// attempt was answered). `headers()` gives each attempt's headers (signed anew: the
// signing date moves); `retries` counts the attempts after the first.
template <class Headers>
http_response send_with_retries(http_connection& c, std::string_view method, const std::string& target,
                                std::string_view body, const std::string& uri, unsigned& retries, Headers&& headers,
                                std::span<std::uint8_t> into = {}) {
  for (unsigned attempt = 0;; ++attempt) {
    try {
      auto r = c.send(method, target, headers(), body, into);
      if (!http_connection::transient(r.status) || attempt >= c.options().max_retries) return r;
    } catch (const transport_error& e) {
      if (attempt >= c.options().max_retries)
        throw io_error(uri + ": " + e.message() + " (after " + std::to_string(attempt + 1) + " attempts)");
    }
    ++retries;
    std::this_thread::sleep_for(backoff_delay(attempt));
  }
}

}  // namespace lancet::io::object_store
