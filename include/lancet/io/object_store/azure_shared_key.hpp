// Azure Blob Storage's Shared Key authorization (service versions 2015-02-21 and
// later), as Azure documents it and Azurite checks it: the string to sign is the verb,
// eleven standard headers in a fixed order (Content-Length empty when 0; If-None-Match
// signed in its slot), every x-ms-* header (lowercase, sorted, "name:value\n"), then the
// canonicalized resource "/<account><path>" followed by each query parameter
// ("\n<lowercase name>:<decoded values, sorted, comma-joined>"). The signature is
// base64(HMAC-SHA256(base64-decoded account key, string to sign)).
//
//   object_store::azure_request r{"PUT", "/devstoreaccount1/lance/db/_versions/1.manifest", {},
//                                 {{"x-ms-version", "2023-11-03"}, {"x-ms-date", date}, {"If-None-Match", "*"}}};
//   set("Authorization", object_store::shared_key_authorization(r, account, key));
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/object_store/crypto.hpp"
#include "lancet/io/object_store/sigv4.hpp"
#include "lancet/json/base64.hpp"

namespace lancet::io::object_store {

struct azure_request {
  std::string method;
  std::string path;     // as sent, percent-encoded ("/container/a%20b"; with Azurite "/devstoreaccount1/container/...")
  header_list query;    // decoded names and values
  header_list headers;  // every header sent, Content-Length included when the body is not empty
  std::uint64_t content_length = 0;
};

inline std::string shared_key_string_to_sign(const azure_request& r, std::string_view account) {
  std::map<std::string, std::string> h;
  for (const auto& [k, v] : r.headers) {
    const std::string name = ascii_lower(k);
    if (!h.emplace(name, v).second) throw invalid_input_error("Shared Key: header '" + name + "' given twice");
  }
  const auto get = [&](const char* name) {
    const auto it = h.find(name);
    return it == h.end() ? std::string() : it->second;
  };
  std::string s = r.method + "\n";
  for (const char* name : {"content-encoding", "content-language"}) s += get(name) + "\n";
  s += (r.content_length == 0 ? std::string() : std::to_string(r.content_length)) + "\n";
  for (const char* name : {"content-md5", "content-type", "date", "if-modified-since", "if-match", "if-none-match",
                           "if-unmodified-since", "range"})
    s += get(name) + "\n";
  for (const auto& [k, v] : h)
    if (k.rfind("x-ms-", 0) == 0) s += k + ":" + detail::trim_collapse(v) + "\n";
  s += "/" + std::string(account) + r.path;
  std::map<std::string, std::vector<std::string>> q;
  for (const auto& [k, v] : r.query) {
    q[ascii_lower(k)].push_back(v);
  }
  for (auto& [k, values] : q) {
    std::sort(values.begin(), values.end());
    s += "\n" + k + ":";
    for (std::size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + values[i];
  }
  return s;
}

// "SharedKey <account>:<signature>"; `account_key` as Azure shows it (base64).
inline std::string shared_key_authorization(const azure_request& r, std::string_view account,
                                            std::string_view account_key) {
  std::string key;
  if (const auto bad = json::base64_decode(account_key, key))
    throw invalid_input_error("azure_storage_account_key is not base64: " + *bad);
  const auto mac = hmac_sha256(key, shared_key_string_to_sign(r, account));
  return "SharedKey " + std::string(account) + ":" + json::base64_encode(as_chars(mac));
}

}  // namespace lancet::io::object_store
