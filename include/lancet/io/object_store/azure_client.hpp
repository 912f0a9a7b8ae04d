// The Azure Blob operations Lance's files and commits need, authorized with Shared Key
// (x-ms-version 2023-11-03, as object_store sends) or a SAS token: Put Blob (and Put
// Blob If-None-Match: * for a manifest), ranged Get Blob, Get Blob Properties, List
// Blobs over every page, Delete Blob, and large blobs as Put Block + Put Block List.
// Errors name the blob's URI and the HTTP status with Azure's error code:
// not_found_error for 404, io_error otherwise; a lost conditional put is `false` from
// put_if_absent (409 BlobAlreadyExists, or 412), never an error.
//
//   object_store::azure_client az(object_store::read_azure_options(options), "container");
//   az.put("db/data/0.lance", bytes);
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/io/object_store/azure_shared_key.hpp"
#include "lancet/io/object_store/http.hpp"
#include "lancet/io/object_store/listing.hpp"
#include "lancet/io/object_store/options.hpp"
#include "lancet/io/object_store/xml.hpp"
#include "lancet/json/base64.hpp"

namespace lancet::io::object_store {

// "Sun, 06 Dec 2026 15:21:43 GMT" (RFC 1123, UTC).
inline std::string http_date(std::chrono::system_clock::time_point t) {
  static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

// Block n's id within a blob: the same length for every block, as Azure requires.
inline std::string block_id(std::uint32_t n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "block-%08u", n);
  return json::base64_encode(buf);
}

class azure_client {
 public:
  azure_client(azure_options o, std::string container)
      : o_(std::move(o)), container_(std::move(container)), http_(endpoint_of(o_, container_), o_.client) {
    std::string_view sas = o_.sas_token;
    if (!sas.empty() && sas.front() == '?') sas.remove_prefix(1);
    while (!sas.empty()) {
      const auto amp = sas.find('&');
      const auto pair = sas.substr(0, amp);
      const auto eq = pair.find('=');
      sas_.emplace_back(std::string(pair.substr(0, eq)), eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
      sas = amp == std::string_view::npos ? std::string_view() : sas.substr(amp + 1);
    }
  }

  const std::string& container() const noexcept { return container_; }
  std::string uri(std::string_view key) const { return "az://" + container_ + "/" + std::string(key); }
  unsigned retries() const noexcept { return retries_; }

  std::string put(const std::string& key, std::string_view body) {
    auto r = call("PUT", key, {}, {{"x-ms-blob-type", "BlockBlob"}}, body);
    check(r, "Put Blob", key);
    return r.header("etag");
  }

  bool put_if_absent(const std::string& key, std::string_view body) {
    const unsigned before = retries_;
    auto r = call("PUT", key, {}, {{"x-ms-blob-type", "BlockBlob"}, {"If-None-Match", "*"}}, body);
    // A retried put may be refused by its own first attempt, whose answer was lost: the
    // blob then holds our bytes (two writers' manifests never match byte for byte).
    if (r.status == 409 || r.status == 412) return retries_ != before && get(key) == body;
    check(r, "Put Blob (If-None-Match: *)", key);
    return true;
  }

  std::string get(const std::string& key, byte_span range = std::nullopt) {
    header_list h;
    if (range) {
      if (range->second <= range->first) return {};
      h.emplace_back("Range", range_header(*range));
    }
    auto r = call("GET", key, {}, h, {});
    check(r, "Get Blob", key);
    check_range_body(r, range, uri(key) + ": Get Blob");
    return std::move(r.body);
  }

  // The bytes [begin, end) of `key` into out (end - begin bytes), read off the socket
  // into place.
  void get_into(const std::string& key, std::pair<std::uint64_t, std::uint64_t> range, std::uint8_t* out) {
    if (range.second <= range.first) return;
    const std::size_t n = std::size_t(range.second - range.first);
    auto r = call("GET", key, {}, {{"Range", range_header(range)}}, {}, {out, n});
    check(r, "Get Blob", key);
    place_range_body(r, range, out, uri(key) + ": Get Blob");
  }

  std::optional<std::uint64_t> size(const std::string& key) {
    auto r = call("HEAD", key, {}, {}, {});
    if (r.status == 404) return std::nullopt;
    check(r, "Get Blob Properties", key);
    const auto n = r.header("content-length");
    return std::stoull(n.empty() ? "0" : n);
  }

  // Every blob whose name starts with `prefix`, in name order, over all pages (of at
  // most page_size blobs when given; Azure's pages hold up to 5,000).
  std::vector<listed_object> list(const std::string& prefix, std::uint32_t page_size = 0) {
    std::vector<listed_object> out;
    std::string marker;
    for (;;) {
      header_list q = {{"restype", "container"}, {"comp", "list"}, {"prefix", prefix}};
      if (!marker.empty()) q.emplace_back("marker", marker);
      if (page_size) q.emplace_back("maxresults", std::to_string(page_size));
      auto r = call("GET", std::nullopt, q, {}, {});
      check(r, "List Blobs", prefix);
      for (const auto b : detail::xml_elements(r.body, "Blob")) {
        listed_object o;
        o.key = detail::xml_first(b, "Name");
        const auto n = detail::xml_first(b, "Content-Length");
        o.size = n.empty() ? 0 : std::stoull(n);
        o.last_modified = parse_rfc1123(detail::xml_first(b, "Last-Modified"));
        out.push_back(std::move(o));
      }
      marker = detail::xml_first(r.body, "NextMarker");
      if (marker.empty()) return out;
    }
  }

  void remove(const std::string& key) {
    auto r = call("DELETE", key, {}, {}, {});
    if (r.status == 404) return;
    check(r, "Delete Blob", key);
  }

  // Large blobs as blocks: start_upload has nothing to start (""), parts are staged as
  // blocks by index (0, 1, ...) and committed in order by complete_upload; abort_upload
  // leaves the staged blocks to Azure, which discards uncommitted blocks (after a week,
  // or when the blob is next written).
  std::string start_upload(const std::string&) { return {}; }
  std::string upload_part(const std::string& key, const std::string&, std::uint32_t index, std::string_view body) {
    if (index >= 50000) throw invalid_input_error(uri(key) + ": Azure blobs have at most 50,000 blocks");
    const auto id = block_id(index);
    auto r = call("PUT", key, {{"comp", "block"}, {"blockid", id}}, {}, body);
    check(r, "Put Block " + std::to_string(index), key);
    return id;
  }
  // if_absent: only when no blob has the key (If-None-Match: *); false when one has.
  bool complete_upload(const std::string& key, const std::string&, const std::vector<std::string>& blocks,
                       bool if_absent = false) {
    std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
    for (const auto& id : blocks) xml += "<Latest>" + detail::xml_escaped(id) + "</Latest>";
    xml += "</BlockList>";
    header_list h = {{"Content-Type", "application/xml"}};
    if (if_absent) h.emplace_back("If-None-Match", "*");
    auto r = call("PUT", key, {{"comp", "blocklist"}}, h, xml);
    if (if_absent && (r.status == 409 || r.status == 412)) return false;
    check(r, "Put Block List", key);
    return true;
  }
  void abort_upload(const std::string&, const std::string&) {}

 private:
  // The endpoint, once the options name an account and credentials.
  static http_endpoint endpoint_of(const azure_options& o, const std::string& container) {
    if (o.account_name.empty())
      throw invalid_input_error("az://" + container + ": no storage account (azure_storage_account_name)");
    if (o.account_key.empty() && o.sas_token.empty())
      throw invalid_input_error("az://" + container +
                                ": no credentials (azure_storage_account_key or azure_storage_sas_token)");
    return parse_endpoint(o.endpoint.empty() ? "https://" + o.account_name + ".blob.core.windows.net" : o.endpoint,
                          o.client.allow_http);
  }

  // key: a blob; nullopt: the container itself.
  http_response call(std::string_view method, const std::optional<std::string>& key, const header_list& query,
                     const header_list& headers, std::string_view body, std::span<std::uint8_t> into = {}) {
    std::string path = http_.endpoint().path + "/" + uri_encode(container_, false);
    if (key) path += "/" + uri_encode(*key, true);
    std::string target = path + query_string(query);
    if (o_.account_key.empty())  // SAS: its parameters (already encoded) instead of Authorization
      for (const auto& [k, v] : sas_) target += (target.size() == path.size() ? "?" : "&") + k + "=" + v;
    return send_with_retries(http_, method, target, body, uri(key.value_or("")), retries_, [&] {
      header_list h = headers;
      h.emplace_back("x-ms-version", "2023-11-03");
      h.emplace_back("x-ms-date", http_date(std::chrono::system_clock::now()));
      if (!o_.account_key.empty()) {
        const azure_request ar{std::string(method), path, query, h, body.size()};
        h.emplace_back("Authorization", shared_key_authorization(ar, o_.account_name, o_.account_key));
      }
      return h;
    }, into);
  }

  void check(const http_response& r, const std::string& what, const std::string& key) const {
    if (r.status < 200 || r.status >= 300) throw_http_error(r, uri(key) + ": " + what);
  }

  azure_options o_;
  std::string container_;
  http_connection http_;
  header_list sas_;
  unsigned retries_ = 0;
};

}  // namespace lancet::io::object_store
