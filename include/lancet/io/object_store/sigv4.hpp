// AWS Signature Version 4 for S3 requests, as object_store (the Rust crate Lance 12
// talks to S3 through) signs them: the headers it signs are host, x-amz-content-sha256,
// x-amz-date, x-amz-security-token (with a session token) and any others the request
// carries (if-none-match on a manifest PUT, content-type, ...), never authorization,
// content-length or user-agent. The path is signed as sent (percent-encoded once for
// s3, twice for other services); query keys and values with RFC 3986's unreserved set.
//
//   object_store::signed_request r{"PUT", "127.0.0.1:4568", "/bucket/_versions/1.manifest", {}, {{"if-none-match", "*"}}};
//   for (auto& [k, v] : object_store::sign_v4(r, creds, "us-east-1", "s3", amz_date(now), sha256_hex(body))) set(k, v);
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/object_store/crypto.hpp"

namespace lancet::io::object_store {

struct aws_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none
};

using header_list = std::vector<std::pair<std::string, std::string>>;

// What SigV4 signs of a request.
struct signed_request {
  std::string method;  // "GET", "PUT", ...
  std::string host;    // with ":port" when the port is not the scheme's default
  std::string path;    // as sent: percent-encoded once ("/bucket/a%20b")
  header_list query;   // decoded keys and values (a key without value: "")
  header_list headers; // the request's other headers to sign (names in any case)
};

// The payload hash of a request without body, and the one that signs no payload.
inline constexpr std::string_view empty_payload_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";

// RFC 3986 percent-encoding: all but A-Z a-z 0-9 - _ . ~ (and '/' when kept).
inline std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += char(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

// "20220809T130525Z" for a time point (UTC).
inline std::string amz_date(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[17];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace lancet::io::object_store

namespace lancet::io::detail {

inline std::string trim_collapse(std::string_view v) {
  std::string out;
  bool space = false;
  for (const char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

inline object_store::header_list lowercase_sorted(object_store::header_list h) {
  for (auto& [k, v] : h) {
    k = ascii_lower(k);
    v = trim_collapse(v);
  }
  std::sort(h.begin(), h.end());
  return h;
}

}  // namespace lancet::io::detail

namespace lancet::io::object_store {

// The canonical request, and the headers it signs (every header the request must send
// besides authorization: x-amz-date, x-amz-content-sha256 and the token are added).
struct canonical_form {
  std::string request;
  std::string signed_headers;  // "host;x-amz-content-sha256;x-amz-date"
  header_list headers;         // the signed headers, lowercase, sorted (host included)
};

inline canonical_form canonical_request(const signed_request& r, const aws_credentials& c, std::string_view service,
                                        std::string_view date, std::string_view payload_hash) {
  header_list h = r.headers;
  h.emplace_back("host", r.host);
  h.emplace_back("x-amz-date", std::string(date));
  h.emplace_back("x-amz-content-sha256", std::string(payload_hash));
  if (!c.session_token.empty()) h.emplace_back("x-amz-security-token", c.session_token);
  canonical_form f;
  f.headers = detail::lowercase_sorted(std::move(h));
  for (std::size_t i = 1; i < f.headers.size(); ++i)
    if (f.headers[i].first == f.headers[i - 1].first)
      throw invalid_input_error("SigV4: header '" + f.headers[i].first + "' given twice");
  header_list q;
  for (const auto& [k, v] : r.query) q.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + k + "=" + v;
  std::string headers;
  for (const auto& [k, v] : f.headers) {
    headers += k + ":" + v + "\n";
    f.signed_headers += (f.signed_headers.empty() ? "" : ";") + k;
  }
  const std::string path = service == "s3" ? r.path : uri_encode(r.path, true);
  f.request = r.method + "\n" + (path.empty() ? "/" : path) + "\n" + query + "\n" + headers + "\n" + f.signed_headers +
              "\n" + std::string(payload_hash);
  return f;
}

// The headers to send with the request: the signed ones other than host, then
// authorization. `date` as amz_date gives it.
inline header_list sign_v4(const signed_request& r, const aws_credentials& c, std::string_view region,
                           std::string_view service, std::string_view date, std::string_view payload_hash) {
  if (date.size() != 16) throw invalid_input_error("SigV4: the date '" + std::string(date) + "' is not YYYYMMDDTHHMMSSZ");
  const auto f = canonical_request(r, c, service, date, payload_hash);
  const std::string day(date.substr(0, 8));
  const std::string scope = day + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(date) + "\n" + scope + "\n" + to_hex(sha256(f.request));
  auto key = hmac_sha256("AWS4" + c.secret_access_key, day);
  for (const std::string_view part : {region, service, std::string_view("aws4_request")}) key = hmac_sha256(as_chars(key), part);
  const std::string signature = to_hex(hmac_sha256(as_chars(key), to_sign));
  header_list out;
  for (const auto& kv : f.headers)
    if (kv.first != "host") out.push_back(kv);
  out.emplace_back("authorization", "AWS4-HMAC-SHA256 Credential=" + c.access_key_id + "/" + scope +
                                        ", SignedHeaders=" + f.signed_headers + ", Signature=" + signature);
  return out;
}

}  // namespace lancet::io::object_store
