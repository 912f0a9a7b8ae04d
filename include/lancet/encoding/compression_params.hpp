// Compression parameters for 2.1+ files, as Lance takes them:
//   - per-column rules matched by name patterns ("*_id", "log_*", "a*b", exact names),
//     the first matching pattern applying (an exact name wins over patterns);
//   - per-type rules keyed by the Arrow type's name ("int32", "utf8", ...);
//   - Lance's field-metadata keys, which override both:
//       lance-encoding:compression        none | fsst | lz4 | zstd
//       lance-encoding:compression-level  integer (zstd: 1..22, or 0 for the default)
//       lance-encoding:rle-threshold      number in [0, 1]: RLE when runs < threshold * values
//       lance-encoding:bss                off | on | auto (byte-stream split for 32/64-bit values)
//       lance-encoding:minichunk-size     target bytes of a mini-block chunk (power of two, 512..65536)
// Field metadata overrides column rules, which override type rules, which override
// the defaults. Invalid values fail with invalid_input_error naming the column and key.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding {

inline constexpr std::string_view compression_key = "lance-encoding:compression";
inline constexpr std::string_view compression_level_key = "lance-encoding:compression-level";
inline constexpr std::string_view rle_threshold_key = "lance-encoding:rle-threshold";
inline constexpr std::string_view bss_key = "lance-encoding:bss";
inline constexpr std::string_view minichunk_size_key = "lance-encoding:minichunk-size";
inline constexpr std::string_view structural_encoding_key = "lance-encoding:structural-encoding";
inline constexpr std::string_view dict_size_ratio_key = "lance-encoding:dict-size-ratio";
inline constexpr std::string_view packed_key = "lance-encoding:packed";
inline constexpr std::string_view blob_key = "lance-encoding:blob";

enum class bss_mode : std::uint8_t { off, on, automatic };

struct field_compression {
  std::optional<std::string> compression;  // none, fsst, lz4, zstd
  std::optional<std::int32_t> level;
  std::optional<double> rle_threshold;
  std::optional<bss_mode> bss;
  std::optional<std::uint32_t> minichunk_size;

  // Later values override earlier ones.
  void merge(const field_compression& o) {
    if (o.compression) compression = o.compression;
    if (o.level) level = o.level;
    if (o.rle_threshold) rle_threshold = o.rle_threshold;
    if (o.bss) bss = o.bss;
    if (o.minichunk_size) minichunk_size = o.minichunk_size;
  }
  bool empty() const noexcept { return !compression && !level && !rle_threshold && !bss && !minichunk_size; }
};

namespace detail {

[[noreturn]] inline void bad_param(std::string_view column, std::string_view key, const std::string& why) {
  throw invalid_input_error("column '" + std::string(column) + "': " + std::string(key) + " " + why);
}

inline void check(const field_compression& p, std::string_view column) {
  if (p.compression && *p.compression != "none" && *p.compression != "fsst" && *p.compression != "lz4" &&
      *p.compression != "zstd")
    bad_param(column, compression_key, "'" + *p.compression + "' is not a compression scheme (none, fsst, lz4, zstd)");
  if (p.level) {
    const bool zstd = p.compression && *p.compression == "zstd";
    if (zstd ? (*p.level < -7 || *p.level > 22) : (*p.level < 0 || *p.level > 22))
      bad_param(column, compression_level_key, std::to_string(*p.level) + " is out of range (" +
                                                   (zstd ? std::string("-7..22") : std::string("0..22")) + ")");
  }
  if (p.rle_threshold && !(*p.rle_threshold >= 0.0 && *p.rle_threshold <= 1.0))
    bad_param(column, rle_threshold_key, std::to_string(*p.rle_threshold) + " is outside 0..1");
  if (p.minichunk_size) {
    const auto v = *p.minichunk_size;
    if (v < 512 || v > 65536 || (v & (v - 1)) != 0)
      bad_param(column, minichunk_size_key, std::to_string(v) + " is not a power of two in 512..65536");
  }
}

inline std::optional<bss_mode> parse_bss(std::string_view v) {
  const std::string s = ascii_lower(v);
  if (s == "off") return bss_mode::off;
  if (s == "on") return bss_mode::on;
  if (s == "auto") return bss_mode::automatic;
  return std::nullopt;
}

template <class T>
inline T parse_number(std::string_view column, std::string_view key, std::string_view v) {
  T out{};
  const char* b = v.data();
  const char* e = v.data() + v.size();
  if constexpr (std::is_floating_point_v<T>) {
    try {
      std::size_t used = 0;
      const std::string s(v);
      out = T(std::stod(s, &used));
      if (used != s.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      bad_param(column, key, "'" + std::string(v) + "' is not a number");
    }
  } else {
    auto [p, ec] = std::from_chars(b, e, out);
    if (ec != std::errc() || p != e) bad_param(column, key, "'" + std::string(v) + "' is not an integer");
  }
  return out;
}

}  // namespace detail

// Does `name` match `pattern`? '*' matches any run of characters (one star, as Lance
// supports: prefix*, *suffix, pre*suf, or * alone); no star means an exact match.
inline bool glob_match(std::string_view name, std::string_view pattern) {
  const auto star = pattern.find('*');
  if (star == std::string_view::npos) return name == pattern;
  const auto prefix = pattern.substr(0, star), suffix = pattern.substr(star + 1);
  if (suffix.find('*') != std::string_view::npos) {
    // Several stars: match greedily segment by segment.
    if (name.substr(0, prefix.size()) != prefix) return false;
    std::string_view rest = name.substr(prefix.size());
    std::string_view pat = suffix;
    while (true) {
      const auto next = pat.find('*');
      const auto seg = pat.substr(0, next);
      if (next == std::string_view::npos) return rest.size() >= seg.size() && rest.substr(rest.size() - seg.size()) == seg;
      const auto at = rest.find(seg);
      if (at == std::string_view::npos) return false;
      rest = rest.substr(at + seg.size());
      pat = pat.substr(next + 1);
    }
  }
  return name.size() >= prefix.size() + suffix.size() && name.substr(0, prefix.size()) == prefix &&
         name.substr(name.size() - suffix.size()) == suffix;
}

// Lance's parameters found in a field's metadata (validated).
inline field_compression from_field_metadata(const arrow::metadata& md, std::string_view column) {
  field_compression p;
  for (const auto& [k, v] : md) {
    if (k == compression_key) {
      p.compression = ascii_lower(v);
    } else if (k == compression_level_key) {
      p.level = detail::parse_number<std::int32_t>(column, k, v);
    } else if (k == rle_threshold_key) {
      p.rle_threshold = detail::parse_number<double>(column, k, v);
    } else if (k == bss_key) {
      p.bss = detail::parse_bss(v);
      if (!p.bss) detail::bad_param(column, k, "'" + v + "' is not off, on or auto");
    } else if (k == minichunk_size_key) {
      const auto n = detail::parse_number<std::int64_t>(column, k, v);
      if (n <= 0 || n > (1 << 30)) detail::bad_param(column, k, std::to_string(n) + " is not a positive size");
      p.minichunk_size = std::uint32_t(n);
    }
  }
  detail::check(p, column);
  return p;
}

class compression_params {
 public:
  compression_params() = default;

  // Parameters for columns whose name matches `pattern` (checked here).
  compression_params& column(std::string pattern, field_compression p) {
    detail::check(p, pattern);
    columns_.emplace_back(std::move(pattern), std::move(p));
    return *this;
  }
  // Parameters for columns of an Arrow type, by its name ("int32", "utf8", ...).
  compression_params& type(std::string type_name, field_compression p) {
    detail::check(p, "type " + type_name);
    types_.emplace_back(std::move(type_name), std::move(p));
    return *this;
  }
  bool empty() const noexcept { return columns_.empty() && types_.empty(); }

  // The effective parameters of a column: type rules, then the column rule (exact
  // name first, else the first matching pattern), then the field's metadata.
  field_compression resolve(std::string_view column_name, const arrow::data_type& t,
                            const arrow::metadata& field_metadata) const {
    field_compression p;
    const auto tn = arrow::to_string(t);
    for (const auto& [name, tp] : types_)
      if (name == tn) p.merge(tp);
    const field_compression* col = nullptr;
    for (const auto& [pat, cp] : columns_)
      if (pat == column_name) { col = &cp; break; }
    if (!col)
      for (const auto& [pat, cp] : columns_)
        if (glob_match(column_name, pat)) { col = &cp; break; }
    if (col) p.merge(*col);
    p.merge(from_field_metadata(field_metadata, column_name));
    detail::check(p, column_name);
    return p;
  }

 private:
  std::vector<std::pair<std::string, field_compression>> columns_;
  std::vector<std::pair<std::string, field_compression>> types_;
};

}  // namespace lancet::encoding
