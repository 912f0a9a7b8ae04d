// An object store as an io::storage (io/storage.hpp): the S3 bucket or Azure container
// a URI names, reached with LanceDB's storage options.
//
//   io::mount("s3://bucket/db", io::object_store::open_storage("s3://bucket/db", {{"aws_region", "eu-west-1"}}));
//
// Paths are URIs inside the storage's location (same scheme family, bucket or container,
// under its prefix); any other path is invalid_input_error naming it. Files are objects:
// a sink is an object_sink (parts of 5 MiB uploaded while the writer goes on; with
// if_absent one PUT with If-None-Match: *, conflict_error when the key exists); a source
// is an object_source (ranged GETs; no HEAD when the size is known); list is a prefix
// listing of "dir/" (recursive by nature: non-recursive drops names with a '/');
// remove deletes object by object; remove_all lists the prefix and deletes what it finds.
// Opt-in: it brings Boost.Beast and OpenSSL (link libssl and libcrypto).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/io/object_store/azure_client.hpp"
#include "lancet/io/object_store/location.hpp"
#include "lancet/io/object_store/object_io.hpp"
#include "lancet/io/object_store/options.hpp"
#include "lancet/io/object_store/s3_client.hpp"
#include "lancet/io/storage.hpp"

namespace lancet::io::object_store {

template <object_client Client>
class object_backend final : public storage::backend {
 public:
  object_backend(location where, std::string name, std::shared_ptr<client_pool<Client>> pool, object_sink_options sink)
      : where_(std::move(where)), name_(std::move(name)), pool_(std::move(pool)), sink_(sink) {}

  bool is_local() const noexcept override { return false; }
  const std::string& name() const noexcept override { return name_; }

  any_source open_source(const std::string& path, std::optional<std::uint64_t> size) const override {
    auto key = key_of(path);
    if (size) return any_source(object_source<Client>(pool_, std::move(key), *size));
    return any_source(object_source<Client>(pool_, std::move(key)));
  }
  any_sink create_sink(const std::string& path, const storage_sink_options& o) const override {
    auto so = sink_;
    so.if_absent = o.if_absent;
    return any_sink(object_sink<Client>(pool_, key_of(path), so));
  }
  std::optional<std::uint64_t> size(const std::string& path) const override {
    const auto key = key_of(path);
    return pool_->with([&](Client& c) { return c.size(key); });
  }
  std::vector<stored_file> list(const std::string& dir, bool recursive) const override {
    const auto prefix = prefix_of(dir);
    const auto listed = pool_->with([&](Client& c) { return c.list(prefix); });
    std::vector<stored_file> out;
    for (const auto& o : listed) {
      if (!o.key.starts_with(prefix) || o.key.size() == prefix.size()) continue;
      std::string rel = o.key.substr(prefix.size());
      if (!recursive && rel.find('/') != std::string::npos) continue;
      out.push_back({std::move(rel), o.size, o.last_modified});
    }
    std::sort(out.begin(), out.end(), [](const stored_file& a, const stored_file& b) { return a.path < b.path; });
    return out;
  }
  void remove(std::span<const std::string> paths) const override {
    std::vector<std::string> keys;
    keys.reserve(paths.size());
    for (const auto& p : paths) keys.push_back(key_of(p));
    remove_keys(keys);
  }
  void remove_all(const std::string& dir) const override {
    std::vector<std::string> keys;
    for (auto& o : pool_->with([&](Client& c) { return c.list(prefix_of(dir)); })) keys.push_back(std::move(o.key));
    remove_keys(keys);
  }
  // S3's multipart uploads. Azure has no such listing: the service discards blocks
  // never committed after a week.
  std::vector<unfinished_upload> list_unfinished_uploads(const std::string& dir) const override {
    std::vector<unfinished_upload> out;
    if constexpr (requires(Client& c, const std::string& p) { c.list_uploads(p); }) {
      const auto prefix = prefix_of(dir);
      for (auto& u : pool_->with([&](Client& c) { return c.list_uploads(prefix); }))
        if (u.key.starts_with(prefix) && u.key.size() > prefix.size())
          out.push_back({u.key.substr(prefix.size()), std::move(u.upload_id), u.initiated});
    }
    return out;
  }
  void abort_upload(const std::string& dir, const unfinished_upload& u) const override {
    if constexpr (requires(Client& c, const std::string& p) { c.list_uploads(p); }) {
      const auto key = prefix_of(dir) + u.path;
      pool_->with([&](Client& c) { c.abort_upload(key, u.id); });
    }
  }

 private:
  void remove_keys(const std::vector<std::string>& keys) const {
    if constexpr (requires(Client& c, std::span<const std::string> ks) { c.remove_many(ks); }) {
      constexpr std::size_t most = 1000;  // S3's limit per DeleteObjects
      for_each_concurrently((keys.size() + most - 1) / most, 4, [&](std::size_t b) {
        const auto from = b * most;
        const std::span<const std::string> batch(keys.data() + from, std::min(most, keys.size() - from));
        pool_->with([&](Client& c) { c.remove_many(batch); });
      });
    } else {
      for_each_concurrently(keys.size(), 8, [&](std::size_t k) { pool_->with([&](Client& c) { c.remove(keys[k]); }); });
    }
  }

  // The key of a path inside this storage's location.
  std::string key_of(const std::string& path) const {
    const auto l = parse_location(path);
    const bool same_store = l.kind == where_.kind && l.bucket == where_.bucket &&
                            (l.account.empty() || where_.account.empty() || l.account == where_.account);
    const bool under = where_.path.empty() || l.path == where_.path || l.path.starts_with(where_.path + "/");
    if (!same_store || !under) throw invalid_input_error("'" + path + "' is not inside the storage " + name_);
    return l.path;
  }
  // The key prefix of everything under a directory ("" for the bucket's root).
  std::string prefix_of(const std::string& dir) const {
    const auto key = key_of(dir);
    return key.empty() ? key : key + "/";
  }

  location where_;
  std::string name_;
  std::shared_ptr<client_pool<Client>> pool_;
  object_sink_options sink_;
};

// The storage of the bucket or container `uri` names (s3://, s3a://, az://, azure://,
// abfs[s]://), configured by LanceDB's storage options (and the environment variables
// LanceDB reads; options.hpp). `sink` sets the part size and parts in flight of uploads.
inline storage open_storage(std::string_view uri, const storage_options& options = {},
                            const environment& env = process_environment, object_sink_options sink = {}) {
  auto where = parse_location(uri);
  std::string name(uri);
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  switch (where.kind) {
    case store_kind::s3: {
      const auto o = read_s3_options(options, env);
      auto pool = std::make_shared<client_pool<s3_client>>(
          [o, bucket = where.bucket] { return std::make_unique<s3_client>(o, bucket); });
      return storage(std::make_shared<const object_backend<s3_client>>(std::move(where), std::move(name), pool, sink));
    }
    case store_kind::azure: {
      auto o = read_azure_options(options, env);
      if (!where.account.empty()) {
        if (o.account_name.empty()) o.account_name = where.account;
        else if (o.account_name != where.account)
          throw invalid_input_error("storage URI '" + std::string(uri) + "' names account '" + where.account +
                                    "', the options '" + o.account_name + "'");
      }
      auto pool = std::make_shared<client_pool<azure_client>>(
          [o, container = where.bucket] { return std::make_unique<azure_client>(o, container); });
      return storage(std::make_shared<const object_backend<azure_client>>(std::move(where), std::move(name), pool, sink));
    }
    case store_kind::local:
      break;
  }
  throw invalid_input_error("open_storage: '" + std::string(uri) + "' is a local path, not an object store URI "
                            "(io::storage::local() is its storage)");
}

}  // namespace lancet::io::object_store
