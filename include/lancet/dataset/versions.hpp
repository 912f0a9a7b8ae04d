// Dataset versions: where each version's manifest lives in {root}/_versions/.
//
// Two naming schemes exist, and one dataset uses exactly one of them:
//   v1  "{version}.manifest"                    e.g. 3.manifest
//   v2  "{u64::MAX - version:020}.manifest"     e.g. 18446744073709551612.manifest
// v2 (Lance 12's default) sorts the newest version first in a lexical listing. Lance
// tells them apart by length (20 digits + ".manifest" = v2). Detached versions (top
// bit set) are named "d{version}.manifest" and are not part of the history.
//
// Lance 12 also keeps _versions/latest_version_hint.json = {"version":N}. It is only
// a hint: LanceDB opens the newest manifest when the hint is stale or missing.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/io/storage.hpp"

namespace lancet::dataset {

enum class naming_scheme { v1, v2 };

inline constexpr std::string_view versions_dir_name = "_versions";
inline constexpr std::string_view transactions_dir_name = "_transactions";
inline constexpr std::string_view manifest_suffix = ".manifest";
inline constexpr std::string_view version_hint_file_name = "latest_version_hint.json";
inline constexpr std::uint64_t detached_version_mask = std::uint64_t(1) << 63;
inline constexpr std::size_t v2_digits = 20;

inline bool is_detached_version(std::uint64_t v) noexcept { return (v & detached_version_mask) != 0; }

inline std::string_view naming_scheme_name(naming_scheme s) noexcept { return s == naming_scheme::v1 ? "v1" : "v2"; }

// The manifest file name of `version` under a scheme.
inline std::string manifest_file_name(naming_scheme s, std::uint64_t version) {
  if (is_detached_version(version)) return "d" + std::to_string(version) + std::string(manifest_suffix);
  if (s == naming_scheme::v1) return std::to_string(version) + std::string(manifest_suffix);
  std::string digits = std::to_string(~std::uint64_t(0) - version);
  return std::string(v2_digits - digits.size(), '0') + digits + std::string(manifest_suffix);
}

namespace detail {

// Decimal digits only (no sign, no spaces), within u64.
inline std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace detail

// Which scheme a manifest file name follows (nullopt: not a manifest name, e.g. a
// temporary file, the hint file, or a detached version).
inline std::optional<naming_scheme> detect_naming_scheme(std::string_view filename) {
  if (!detail::ends_with(filename, manifest_suffix)) return std::nullopt;
  std::string_view stem = filename.substr(0, filename.size() - manifest_suffix.size());
  if (!detail::parse_u64(stem)) return std::nullopt;
  return stem.size() == v2_digits ? naming_scheme::v2 : naming_scheme::v1;
}

// The version a manifest file name denotes under a scheme.
inline std::optional<std::uint64_t> parse_manifest_version(naming_scheme s, std::string_view filename) {
  if (!detail::ends_with(filename, manifest_suffix)) return std::nullopt;
  std::string_view stem = filename.substr(0, filename.size() - manifest_suffix.size());
  auto n = detail::parse_u64(stem);
  if (!n) return std::nullopt;
  if (s == naming_scheme::v1) return n;
  if (stem.size() != v2_digits) return std::nullopt;
  return ~std::uint64_t(0) - *n;
}

struct manifest_name {
  naming_scheme scheme;
  std::uint64_t version;
};
inline std::optional<manifest_name> parse_manifest_file_name(std::string_view filename) {
  auto s = detect_naming_scheme(filename);
  if (!s) return std::nullopt;
  auto v = parse_manifest_version(*s, filename);
  if (!v) return std::nullopt;
  return manifest_name{*s, *v};
}

// ---------------------------------------------------------------------------------
// Directory listing
// ---------------------------------------------------------------------------------

struct version_entry {
  std::uint64_t version = 0;
  naming_scheme scheme = naming_scheme::v2;
  std::string path;        // full path of the manifest file
  std::uint64_t size = 0;  // bytes
};

inline std::string versions_dir(const std::string& root) {
  return (std::filesystem::path(root) / versions_dir_name).string();
}
inline std::string manifest_path(const std::string& root, naming_scheme s, std::uint64_t version) {
  return (std::filesystem::path(root) / versions_dir_name / manifest_file_name(s, version)).string();
}
inline std::string transaction_path(const std::string& root, std::string_view transaction_file) {
  return (std::filesystem::path(root) / transactions_dir_name / transaction_file).string();
}

// Every version of the dataset at `root` (a local path, or a URI under a mounted
// storage: io::storage_for), oldest first. No _versions directory: no versions. Both
// schemes in one directory: corrupt_error (Lance refuses it too).
inline std::vector<version_entry> list_versions(const std::string& root) {
  const std::string dir = versions_dir(root);
  std::vector<version_entry> out;
  std::optional<naming_scheme> seen;
  for (const auto& f : io::storage_for(root).list(dir)) {
    auto parsed = parse_manifest_file_name(f.path);
    if (!parsed) continue;
    if (seen && *seen != parsed->scheme)
      throw corrupt_error("'" + dir + "' mixes v1 and v2 manifest names (at '" + f.path + "')");
    seen = parsed->scheme;
    out.push_back({parsed->version, parsed->scheme, (std::filesystem::path(dir) / f.path).string(), f.size});
  }
  std::sort(out.begin(), out.end(), [](const version_entry& a, const version_entry& b) { return a.version < b.version; });
  return out;
}

// The error for a path that holds no dataset.
[[noreturn]] inline void throw_no_dataset(const std::string& root) {
  throw not_found_error("'" + root + "' is not a Lance dataset (no versions under _versions/)");
}

// The newest version, if the dataset has any.
inline std::optional<version_entry> latest_version(const std::string& root) {
  auto all = list_versions(root);
  if (all.empty()) return std::nullopt;
  return all.back();
}

// One specific version (nullopt when it does not exist).
inline std::optional<version_entry> find_version(const std::string& root, std::uint64_t version) {
  for (auto& v : list_versions(root))
    if (v.version == version) return v;
  return std::nullopt;
}

// The scheme the dataset at `root` uses (nullopt: no versions yet).
inline std::optional<naming_scheme> dataset_naming_scheme(const std::string& root) {
  auto all = list_versions(root);
  if (all.empty()) return std::nullopt;
  return all.front().scheme;
}

// The scheme to write the next version with: the dataset's own scheme, or `requested`
// (default v2, as Lance 12) for a new dataset. Asking for the other scheme than an
// existing dataset uses is refused: mixing schemes makes the dataset unreadable.
inline naming_scheme naming_scheme_for_write(const std::string& root, std::optional<naming_scheme> requested = std::nullopt) {
  auto existing = dataset_naming_scheme(root);
  if (existing) {
    if (requested && *requested != *existing)
      throw invalid_input_error("dataset '" + root + "' uses " + std::string(naming_scheme_name(*existing)) +
                                " manifest names; refusing to write a " + std::string(naming_scheme_name(*requested)) +
                                " manifest into it");
    return *existing;
  }
  return requested.value_or(naming_scheme::v2);
}

// ---------------------------------------------------------------------------------
// latest_version_hint.json
// ---------------------------------------------------------------------------------

inline std::string encode_version_hint(std::uint64_t version) {
  return "{\"version\":" + std::to_string(version) + "}";
}

// The version in a hint file, or nullopt when it is not of the form {"version": N}.
inline std::optional<std::uint64_t> parse_version_hint(std::string_view json) {
  auto skip_ws = [&](std::size_t& i) {
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r')) ++i;
  };
  std::size_t i = 0;
  skip_ws(i);
  if (i >= json.size() || json[i++] != '{') return std::nullopt;
  skip_ws(i);
  constexpr std::string_view key = "\"version\"";
  if (json.substr(i, key.size()) != key) return std::nullopt;
  i += key.size();
  skip_ws(i);
  if (i >= json.size() || json[i++] != ':') return std::nullopt;
  skip_ws(i);
  std::size_t start = i;
  while (i < json.size() && json[i] >= '0' && json[i] <= '9') ++i;
  auto v = detail::parse_u64(json.substr(start, i - start));
  skip_ws(i);
  if (!v || i >= json.size() || json[i++] != '}') return std::nullopt;
  skip_ws(i);
  if (i != json.size()) return std::nullopt;
  return v;
}

}  // namespace lancet::dataset
