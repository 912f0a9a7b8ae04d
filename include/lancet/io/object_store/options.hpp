// Storage options as LanceDB's `storageOptions` name them (object_store's keys and
// aliases, case-insensitive), read into one configuration per store. Keys not given
// fall back to the environment variables LanceDB reads (AWS_*, AZURE_STORAGE_*), then to
// ~/.aws/credentials for S3 keys. An unknown key, or a value that is not a boolean or a
// number where one is expected, is an invalid_input_error naming it.
#pragma once

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/core/error.hpp"

namespace lancet::io::object_store {

using storage_options = std::map<std::string, std::string>;
// Reads an environment variable (std::getenv by default; tests pass their own).
using environment = std::function<std::optional<std::string>(const std::string&)>;

inline std::optional<std::string> process_environment(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// What every store takes.
struct client_options {
  bool allow_http = false;                              // an http:// endpoint is refused unless set
  bool allow_invalid_certificates = false;              // https without verifying the server
  std::chrono::milliseconds timeout{30000};             // one request, start to end
  std::chrono::milliseconds connect_timeout{5000};
  unsigned max_retries = 10;                            // on 5xx, 429 and dropped connections
};

struct s3_options {
  std::string access_key_id, secret_access_key, session_token;
  std::string region;    // empty: us-east-1
  std::string endpoint;  // empty: https://s3.<region>.amazonaws.com
  bool virtual_hosted_style = false;
  client_options client;
};

struct azure_options {
  std::string account_name, account_key, sas_token;
  std::string endpoint;  // empty: https://<account>.blob.core.windows.net (the emulator's with use_emulator)
  bool use_emulator = false;
  client_options client;
};

// Azurite's well-known development account.
inline constexpr std::string_view emulator_account = "devstoreaccount1";
inline constexpr std::string_view emulator_key =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

}  // namespace lancet::io::object_store

namespace lancet::io::detail {

inline bool parse_bool(const std::string& key, const std::string& v) {
  const auto l = ascii_lower(v);
  if (l == "true" || l == "1" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "no") return false;
  throw invalid_input_error("storage option '" + key + "': '" + v + "' is not a boolean (true / false)");
}

// "30s", "500ms", "2m" or plain seconds ("30").
inline std::chrono::milliseconds parse_duration(const std::string& key, const std::string& v) {
  std::size_t end = 0;
  double n = 0;
  try {
    n = std::stod(v, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = ascii_lower(std::string_view(v).substr(end));
  const double ms = unit == "ms" ? n : unit == "" || unit == "s" ? n * 1000 : unit == "m" ? n * 60000 : -1;
  if (end == 0 || !(ms >= 0) || ms > 1e12)
    throw invalid_input_error("storage option '" + key + "': '" + v + "' is not a duration (e.g. 30s, 500ms)");
  return std::chrono::milliseconds(std::int64_t(ms));
}

inline unsigned parse_count(const std::string& key, const std::string& v) {
  std::size_t end = 0;
  unsigned long n = 0;
  try {
    n = std::stoul(v, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0 || end != v.size() || n > 1000)
    throw invalid_input_error("storage option '" + key + "': '" + v + "' is not a count (0-1000)");
  return unsigned(n);
}

// Each option's canonical name from its accepted spellings.
using key_aliases = std::vector<std::pair<std::string_view, std::vector<std::string_view>>>;

inline const key_aliases& client_keys() {
  static const key_aliases k = {{"allow_http", {"allow_http", "aws_allow_http", "azure_allow_http"}},
                                {"allow_invalid_certificates", {"allow_invalid_certificates"}},
                                {"timeout", {"timeout", "request_timeout"}},
                                {"connect_timeout", {"connect_timeout"}},
                                {"client_max_retries", {"client_max_retries", "max_retries"}}};
  return k;
}

// The options by canonical name (later spellings of one key are an error), with every
// key checked against `keys` and the client keys.
inline std::map<std::string, std::string> canonical_options(const object_store::storage_options& o, const key_aliases& keys,
                                                            std::string_view store) {
  std::map<std::string, std::string> out;
  for (const auto& [given, value] : o) {
    const auto k = ascii_lower(given);
    std::string_view name;
    for (const auto* table : {&keys, &client_keys()})
      for (const auto& [canonical, spellings] : *table)
        for (const auto s : spellings)
          if (s == k) name = canonical;
    if (name.empty()) {
      std::string known;
      for (const auto* table : {&keys, &client_keys()})
        for (const auto& [canonical, spellings] : *table) known += (known.empty() ? "" : ", ") + std::string(canonical);
      throw invalid_input_error("unknown " + std::string(store) + " storage option '" + given + "' (known: " + known + ")");
    }
    if (!out.emplace(std::string(name), value).second)
      throw invalid_input_error("storage option '" + given + "' is given twice (as another spelling of '" +
                                std::string(name) + "')");
  }
  return out;
}

// The option `key`, else the first of the environment variables that is set, else "".
inline std::string option_or_environment(const std::map<std::string, std::string>& o, const char* key,
                                         std::initializer_list<const char*> vars, const object_store::environment& env) {
  if (const auto it = o.find(key); it != o.end()) return it->second;
  for (const char* v : vars)
    if (auto e = env(v)) return *e;
  return {};
}

inline object_store::client_options read_client(const std::map<std::string, std::string>& o,
                                                const object_store::environment& env,
                                  std::initializer_list<const char*> allow_http_env) {
  object_store::client_options c;
  const auto get = [&](const char* k) -> std::optional<std::string> {
    const auto it = o.find(k);
    return it == o.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  if (auto v = get("allow_http")) c.allow_http = parse_bool("allow_http", *v);
  else
    for (const char* e : allow_http_env)
      if (auto v = env(e)) c.allow_http = c.allow_http || parse_bool(e, *v);
  if (auto v = get("allow_invalid_certificates"))
    c.allow_invalid_certificates = parse_bool("allow_invalid_certificates", *v);
  if (auto v = get("timeout")) c.timeout = parse_duration("timeout", *v);
  if (auto v = get("connect_timeout")) c.connect_timeout = parse_duration("connect_timeout", *v);
  if (auto v = get("client_max_retries")) c.max_retries = parse_count("client_max_retries", *v);
  return c;
}

// [profile] section values of an AWS credentials file ("key = value" lines).
inline std::map<std::string, std::string> aws_credentials_file(const std::string& path, const std::string& profile) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line, section;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#' || line[b] == ';') continue;
    const auto e = line.find_last_not_of(" \t\r");
    const std::string t = line.substr(b, e - b + 1);
    if (t.front() == '[') {
      section = t.size() > 2 && t.back() == ']' ? t.substr(1, t.size() - 2) : std::string();
      continue;
    }
    const auto eq = t.find('=');
    if (section != profile || eq == std::string::npos) continue;
    auto k = t.substr(0, eq), v = t.substr(eq + 1);
    k.erase(k.find_last_not_of(" \t") + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    out[ascii_lower(k)] = v;
  }
  return out;
}

}  // namespace lancet::io::detail

namespace lancet::io::object_store {

inline s3_options read_s3_options(const storage_options& given, const environment& env = process_environment) {
  static const detail::key_aliases keys = {
      {"aws_access_key_id", {"aws_access_key_id", "access_key_id"}},
      {"aws_secret_access_key", {"aws_secret_access_key", "secret_access_key"}},
      {"aws_session_token", {"aws_session_token", "aws_token", "session_token", "token"}},
      {"aws_region", {"aws_region", "region", "aws_default_region", "default_region"}},
      {"aws_endpoint", {"aws_endpoint", "aws_endpoint_url", "endpoint_url", "endpoint", "aws_endpoint_url_s3"}},
      {"aws_virtual_hosted_style_request", {"aws_virtual_hosted_style_request", "virtual_hosted_style_request"}}};
  const auto o = detail::canonical_options(given, keys, "S3");
  const auto pick = [&](const char* key, std::initializer_list<const char*> vars) {
    return detail::option_or_environment(o, key, vars, env);
  };
  s3_options s;
  s.access_key_id = pick("aws_access_key_id", {"AWS_ACCESS_KEY_ID"});
  s.secret_access_key = pick("aws_secret_access_key", {"AWS_SECRET_ACCESS_KEY"});
  s.session_token = pick("aws_session_token", {"AWS_SESSION_TOKEN"});
  s.region = pick("aws_region", {"AWS_REGION", "AWS_DEFAULT_REGION"});
  s.endpoint = pick("aws_endpoint", {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"});
  const auto vh = pick("aws_virtual_hosted_style_request", {"AWS_VIRTUAL_HOSTED_STYLE_REQUEST"});
  s.virtual_hosted_style = !vh.empty() && detail::parse_bool("aws_virtual_hosted_style_request", vh);
  if (s.access_key_id.empty() && s.secret_access_key.empty()) {
    // ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE), profile AWS_PROFILE or "default".
    auto file = env("AWS_SHARED_CREDENTIALS_FILE");
    if (!file)
      if (auto home = env("HOME")) file = *home + "/.aws/credentials";
    if (file) {
      const auto c = detail::aws_credentials_file(*file, env("AWS_PROFILE").value_or("default"));
      const auto get = [&](const char* k) {
        const auto it = c.find(k);
        return it == c.end() ? std::string() : it->second;
      };
      s.access_key_id = get("aws_access_key_id");
      s.secret_access_key = get("aws_secret_access_key");
      if (s.session_token.empty()) s.session_token = get("aws_session_token");
    }
  }
  s.client = detail::read_client(o, env, {"AWS_ALLOW_HTTP"});
  return s;
}

inline azure_options read_azure_options(const storage_options& given, const environment& env = process_environment) {
  static const detail::key_aliases keys = {
      {"azure_storage_account_name", {"azure_storage_account_name", "account_name"}},
      {"azure_storage_account_key",
       {"azure_storage_account_key", "azure_storage_access_key", "azure_storage_master_key", "master_key", "account_key",
        "access_key"}},
      {"azure_storage_sas_token", {"azure_storage_sas_token", "azure_storage_sas_key", "sas_token", "sas_key"}},
      {"azure_storage_endpoint", {"azure_storage_endpoint", "azure_endpoint", "endpoint"}},
      {"azure_storage_use_emulator", {"azure_storage_use_emulator", "use_emulator"}}};
  const auto o = detail::canonical_options(given, keys, "Azure");
  const auto pick = [&](const char* key, std::initializer_list<const char*> vars) {
    return detail::option_or_environment(o, key, vars, env);
  };
  azure_options a;
  a.account_name = pick("azure_storage_account_name", {"AZURE_STORAGE_ACCOUNT_NAME"});
  a.account_key = pick("azure_storage_account_key", {"AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"});
  a.sas_token = pick("azure_storage_sas_token", {"AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"});
  a.endpoint = pick("azure_storage_endpoint", {"AZURE_STORAGE_ENDPOINT"});
  const auto emu = pick("azure_storage_use_emulator", {"AZURE_STORAGE_USE_EMULATOR"});
  a.use_emulator = !emu.empty() && detail::parse_bool("azure_storage_use_emulator", emu);
  a.client = detail::read_client(o, env, {"AZURE_STORAGE_ALLOW_HTTP", "AZURE_STORAGE_USE_HTTP"});
  if (a.use_emulator) {
    // As object_store: the emulator's account and key unless given, its address from
    // AZURITE_BLOB_STORAGE_URL (the endpoint option is not used), http allowed.
    if (a.account_name.empty()) a.account_name = std::string(emulator_account);
    if (a.account_key.empty() && a.sas_token.empty()) a.account_key = std::string(emulator_key);
    a.endpoint = env("AZURITE_BLOB_STORAGE_URL").value_or("http://127.0.0.1:10000");
    while (!a.endpoint.empty() && a.endpoint.back() == '/') a.endpoint.pop_back();
    a.endpoint += "/" + a.account_name;
    a.client.allow_http = true;
  }
  return a;
}

}  // namespace lancet::io::object_store
