// Where a dataset lives, from the URI LanceDB users write: a local path (or file://),
// s3://bucket/path, az://container/path, or abfs[s]://container@account.dfs.core.windows.net/path.
// Errors name the URI: invalid_input_error for a malformed one, unsupported_error for a
// scheme lancet does not store to (gs://, ...).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"

namespace lancet::io::object_store {

enum class store_kind { local, s3, azure };

struct location {
  store_kind kind = store_kind::local;
  std::string bucket;   // S3 bucket or Azure container
  std::string account;  // Azure account when the URI names it (abfs), else empty
  std::string path;     // local: the path; else the key prefix, no leading or trailing '/'
};

}  // namespace lancet::io::object_store

namespace lancet::io::detail {

inline std::string trimmed_key(std::string_view p) {
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  return std::string(p);
}

// S3's bucket naming rules (3-63 characters of a-z 0-9 . -, starting and ending with a
// letter or digit); Azure containers follow a stricter subset of the same.
inline bool valid_bucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (const char c : b)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-'))
      return false;
  return std::isalnum(static_cast<unsigned char>(b.front())) && std::isalnum(static_cast<unsigned char>(b.back()));
}

}  // namespace lancet::io::detail

namespace lancet::io::object_store {

inline location parse_location(std::string_view uri) {
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return {store_kind::local, {}, {}, std::string(uri)};
  const std::string scheme = ascii_lower(uri.substr(0, scheme_end));
  const std::string_view rest = uri.substr(scheme_end + 3);
  const auto bad = [&](const std::string& why) {
    return invalid_input_error("storage URI '" + std::string(uri) + "': " + why);
  };
  if (scheme == "file") return {store_kind::local, {}, {}, std::string(rest)};
  location l;
  const auto slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  l.path = detail::trimmed_key(slash == std::string_view::npos ? std::string_view() : rest.substr(slash));
  if (scheme == "s3" || scheme == "s3a") {
    l.kind = store_kind::s3;
    l.bucket = std::string(host);
  } else if (scheme == "az" || scheme == "azure") {
    l.kind = store_kind::azure;
    l.bucket = std::string(host);
  } else if (scheme == "abfs" || scheme == "abfss") {
    l.kind = store_kind::azure;
    const auto at = host.find('@');
    if (at == std::string_view::npos) throw bad("expected abfs://container@account.dfs.core.windows.net/path");
    l.bucket = std::string(host.substr(0, at));
    const auto account_host = host.substr(at + 1);
    l.account = std::string(account_host.substr(0, account_host.find('.')));
    if (l.account.empty()) throw bad("no storage account after '@'");
  } else {
    throw unsupported_error("storage URI '" + std::string(uri) + "': scheme '" + scheme +
                            "' is not supported (local paths, file://, s3://, az://, abfs://)");
  }
  if (l.bucket.empty()) throw bad(std::string(l.kind == store_kind::s3 ? "no bucket" : "no container"));
  if (!detail::valid_bucket(l.bucket))
    throw bad(std::string(l.kind == store_kind::s3 ? "bucket" : "container") + " '" + l.bucket +
              "' is not a valid name (3-63 characters of a-z, 0-9, '.', '-')");
  return l;
}

}  // namespace lancet::io::object_store
