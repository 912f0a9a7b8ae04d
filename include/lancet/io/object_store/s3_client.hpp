// The S3 operations Lance's files and commits need, signed with SigV4 (signed payload
// hashes, as object_store sends them), path-style unless virtual-hosted requests are
// asked for: PUT (and PUT If-None-Match: * for a manifest), ranged GET, HEAD,
// ListObjectsV2 over every page, DELETE, and multipart uploads (start, parts, complete,
// abort, and the listing of unfinished ones). Errors name the object's URI and the HTTP status with S3's error code:
// not_found_error for 404, io_error otherwise; a lost conditional PUT is `false` from
// put_if_absent, never an error.
//
//   object_store::s3_client s3(object_store::read_s3_options(options), "bucket");
//   s3.put("db/data/0.lance", bytes);
//   auto head = s3.get("db/data/0.lance", std::pair{0, 64});
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/io/object_store/crypto.hpp"
#include "lancet/io/object_store/http.hpp"
#include "lancet/io/object_store/listing.hpp"
#include "lancet/io/object_store/options.hpp"
#include "lancet/io/object_store/sigv4.hpp"
#include "lancet/io/object_store/xml.hpp"
#include "lancet/json/base64.hpp"

namespace lancet::io::object_store {

class s3_client {
 public:
  s3_client(s3_options o, std::string bucket)
      : o_(std::move(o)), bucket_(std::move(bucket)),
        http_(endpoint_of(o_, bucket_), o_.client) {
    if (o_.region.empty()) o_.region = "us-east-1";
  }

  const std::string& bucket() const noexcept { return bucket_; }
  std::string uri(std::string_view key) const { return "s3://" + bucket_ + "/" + std::string(key); }
  // Requests retried so far (transient answers and dropped connections).
  unsigned retries() const noexcept { return retries_; }

  // Stores `body` at `key`; returns the ETag.
  std::string put(const std::string& key, std::string_view body) {
    auto r = call("PUT", key, {}, {}, body);
    check(r, "PUT", key);
    return r.header("etag");
  }

  // Stores `body` at `key` unless something is there already (Lance's manifest
  // commit): false when it is (412, or 409 ConditionalRequestConflict).
  bool put_if_absent(const std::string& key, std::string_view body) {
    const unsigned before = retries_;
    auto r = call("PUT", key, {}, {{"if-none-match", "*"}}, body);
    // A retried put may be refused by its own first attempt, whose answer was lost: the
    // key then holds our bytes (two writers' manifests never match byte for byte).
    if (r.status == 412 || r.status == 409) return retries_ != before && get(key) == body;
    check(r, "PUT (If-None-Match: *)", key);
    return true;
  }

  // The bytes [begin, end) of `key`, or all of it.
  std::string get(const std::string& key, byte_span range = std::nullopt) {
    header_list h;
    if (range) {
      if (range->second <= range->first) return {};
      h.emplace_back("range", range_header(*range));
    }
    auto r = call("GET", key, {}, h, {});
    check(r, "GET", key);
    check_range_body(r, range, uri(key) + ": GET");
    return std::move(r.body);
  }

  // The bytes [begin, end) of `key` into out (end - begin bytes), read off the socket
  // into place.
  void get_into(const std::string& key, std::pair<std::uint64_t, std::uint64_t> range, std::uint8_t* out) {
    if (range.second <= range.first) return;
    const std::size_t n = std::size_t(range.second - range.first);
    auto r = call("GET", key, {}, {{"range", range_header(range)}}, {}, {out, n});
    check(r, "GET", key);
    place_range_body(r, range, out, uri(key) + ": GET");
  }

  // The size of `key`, or nullopt when there is no such object.
  std::optional<std::uint64_t> size(const std::string& key) {
    auto r = call("HEAD", key, {}, {}, {});
    if (r.status == 404) return std::nullopt;
    check(r, "HEAD", key);
    return std::stoull(r.header("content-length").empty() ? "0" : r.header("content-length"));
  }

  // Every object whose key starts with `prefix`, in S3's order, over all pages.
  std::vector<listed_object> list(const std::string& prefix) {
    std::vector<listed_object> out;
    std::string token;
    for (;;) {
      header_list q = {{"list-type", "2"}, {"prefix", prefix}};
      if (!token.empty()) q.emplace_back("continuation-token", token);
      auto r = call("GET", "", q, {}, {});
      check(r, "LIST", prefix);
      for (const auto c : detail::xml_elements(r.body, "Contents")) {
        listed_object o;
        o.key = detail::xml_first(c, "Key");
        const auto size = detail::xml_first(c, "Size");
        o.size = size.empty() ? 0 : std::stoull(size);
        o.last_modified = parse_iso8601_utc(detail::xml_first(c, "LastModified"));
        out.push_back(std::move(o));
      }
      if (detail::xml_first(r.body, "IsTruncated") != "true") return out;
      token = detail::xml_first(r.body, "NextContinuationToken");
      if (token.empty()) throw io_error(uri(prefix) + ": a truncated listing without NextContinuationToken");
    }
  }

  // Deletes `key` (no error when it does not exist).
  void remove(const std::string& key) {
    auto r = call("DELETE", key, {}, {}, {});
    if (r.status == 404) return;
    check(r, "DELETE", key);
  }

  // Deletes up to 1,000 keys in one request (DeleteObjects); keys that do not exist are
  // fine. An io_error names the first key S3 could not delete, with its error code.
  void remove_many(std::span<const std::string> keys) {
    if (keys.empty()) return;
    if (keys.size() > 1000) throw invalid_input_error(uri("") + ": DeleteObjects takes at most 1,000 keys");
    std::string xml = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
    for (const auto& k : keys) xml += "<Object><Key>" + detail::xml_escaped(k) + "</Key></Object>";
    xml += "</Delete>";
    const auto digest = md5(xml);
    const header_list h = {
        {"content-type", "application/xml"},
        {"content-md5", json::base64_encode({reinterpret_cast<const char*>(digest.data()), digest.size()})}};
    auto r = call("POST", "", {{"delete", ""}}, h, xml);
    check(r, "DeleteObjects", "");
    for (const auto e : detail::xml_elements(r.body, "Error")) {
      const auto code = detail::xml_first(e, "Code");
      if (code == "NoSuchKey") continue;
      throw io_error(uri(detail::xml_first(e, "Key")) + ": DeleteObjects answered " + code + " (" +
                     detail::xml_first(e, "Message") + ")");
    }
  }

  // Multipart uploads: an upload of `key` started (its upload id), parts uploaded by
  // index (0, 1, ...: S3's part numbers 1, 2, ...; each but the last at least 5 MiB),
  // completed with the parts' ETags in order, or aborted.
  std::string start_upload(const std::string& key) {
    auto r = call("POST", key, {{"uploads", ""}}, {}, {});
    check(r, "POST ?uploads", key);
    auto id = detail::xml_first(r.body, "UploadId");
    if (id.empty()) throw io_error(uri(key) + ": starting a multipart upload returned no UploadId");
    return id;
  }
  std::string upload_part(const std::string& key, const std::string& upload_id, std::uint32_t index,
                          std::string_view body) {
    if (index >= 10000) throw invalid_input_error(uri(key) + ": S3 uploads have at most 10,000 parts");
    auto r = call("PUT", key, {{"partNumber", std::to_string(index + 1)}, {"uploadId", upload_id}}, {}, body);
    check(r, "PUT part " + std::to_string(index + 1), key);
    return r.header("etag");
  }
  // if_absent: only when no object has the key (If-None-Match: *); false when one has.
  bool complete_upload(const std::string& key, const std::string& upload_id, const std::vector<std::string>& etags,
                       bool if_absent = false) {
    std::string xml = "<CompleteMultipartUpload>";
    for (std::size_t i = 0; i < etags.size(); ++i)
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + detail::xml_escaped(etags[i]) +
             "</ETag></Part>";
    xml += "</CompleteMultipartUpload>";
    header_list h = {{"content-type", "application/xml"}};
    if (if_absent) h.emplace_back("if-none-match", "*");
    auto r = call("POST", key, {{"uploadId", upload_id}}, h, xml);
    if (if_absent && r.status == 412) return false;
    check(r, "POST ?uploadId (complete)", key);
    // S3 may answer 200 with an error document when completing fails late.
    if (r.body.find("<Error>") != std::string::npos) throw_http_error(r, uri(key) + ": POST ?uploadId (complete)");
    return true;
  }
  // The multipart uploads under `prefix` neither completed nor aborted
  // (ListMultipartUploads, every page). A store that does not implement the listing
  // (HTTP 501) has none to show: empty.
  std::vector<listed_upload> list_uploads(const std::string& prefix) {
    std::vector<listed_upload> out;
    std::string key_marker, id_marker;
    for (;;) {
      header_list q = {{"uploads", ""}, {"prefix", prefix}};
      if (!key_marker.empty()) q.emplace_back("key-marker", key_marker);
      if (!id_marker.empty()) q.emplace_back("upload-id-marker", id_marker);
      auto r = call("GET", "", q, {}, {});
      if (r.status == 501) return out;
      check(r, "LIST ?uploads", prefix);
      for (const auto u : detail::xml_elements(r.body, "Upload"))
        out.push_back({detail::xml_first(u, "Key"), detail::xml_first(u, "UploadId"),
                       parse_iso8601_utc(detail::xml_first(u, "Initiated"))});
      if (detail::xml_first(r.body, "IsTruncated") != "true") return out;
      key_marker = detail::xml_first(r.body, "NextKeyMarker");
      id_marker = detail::xml_first(r.body, "NextUploadIdMarker");
      if (key_marker.empty() && id_marker.empty())
        throw io_error(uri(prefix) + ": a truncated upload listing without NextKeyMarker");
    }
  }
  void abort_upload(const std::string& key, const std::string& upload_id) {
    auto r = call("DELETE", key, {{"uploadId", upload_id}}, {}, {});
    if (r.status == 404) return;
    check(r, "DELETE ?uploadId (abort)", key);
  }

 private:
  static http_endpoint endpoint_of(const s3_options& o, const std::string& bucket) {
    const std::string region = o.region.empty() ? "us-east-1" : o.region;
    auto e = parse_endpoint(o.endpoint.empty() ? "https://s3." + region + ".amazonaws.com" : o.endpoint,
                            o.client.allow_http);
    if (o.virtual_hosted_style) e.host = bucket + "." + e.host;
    return e;
  }

  // The request path of `key` (the bucket's when empty), encoded once.
  std::string path_of(const std::string& key) const {
    std::string p = http_.endpoint().path;
    if (!o_.virtual_hosted_style) p += "/" + uri_encode(bucket_, false);
    return p + "/" + uri_encode(key, true);
  }

  http_response call(std::string_view method, const std::string& key, const header_list& query,
                     const header_list& headers, std::string_view body, std::span<std::uint8_t> into = {}) {
    const std::string path = path_of(key);
    const std::string payload = to_hex(sha256(body));
    const aws_credentials c{o_.access_key_id, o_.secret_access_key, o_.session_token};
    return send_with_retries(http_, method, path + query_string(query), body, uri(key), retries_, [&] {
      signed_request sr{std::string(method), http_.endpoint().host_header(), path, query, headers};
      auto h = headers;
      for (auto& kv : sign_v4(sr, c, o_.region, "s3", amz_date(std::chrono::system_clock::now()), payload))
        h.push_back(std::move(kv));
      return h;
    }, into);
  }

  void check(const http_response& r, const std::string& what, const std::string& key) const {
    if (r.status < 200 || r.status >= 300) throw_http_error(r, uri(key) + ": " + what);
  }

  s3_options o_;
  std::string bucket_;
  http_connection http_;
  unsigned retries_ = 0;
};

}  // namespace lancet::io::object_store
