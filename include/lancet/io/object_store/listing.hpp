// One entry of an object store's listing, and the two time formats stores list
// modification times in: S3's ISO 8601 ("2026-12-06T19:45:26.000Z") and Azure's RFC 1123
// ("Sun, 06 Dec 2026 19:45:26 GMT"). A time that does not parse is left unset.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lancet::io::object_store {

struct listed_object {
  std::string key;  // the whole key (bucket- / container-relative)
  std::uint64_t size = 0;
  std::optional<std::chrono::system_clock::time_point> last_modified;
};

// One multipart upload begun and neither completed nor aborted.
struct listed_upload {
  std::string key;
  std::string upload_id;
  std::optional<std::chrono::system_clock::time_point> initiated;
};

}  // namespace lancet::io::object_store

namespace lancet::io::detail {

// The decimal number of text[pos, pos + n), or -1.
inline int digits(std::string_view text, std::size_t pos, std::size_t n) {
  if (pos + n > text.size()) return -1;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

inline std::optional<std::chrono::system_clock::time_point> utc_time(int y, int mo, int d, int h, int mi, int s) {
  using namespace std::chrono;
  if (y < 1970 || mo < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return std::nullopt;
  const year_month_day ymd{year(y), month(unsigned(mo)), day(unsigned(d < 0 ? 0 : d))};
  if (!ymd.ok()) return std::nullopt;
  return sys_days(ymd) + hours(h) + minutes(mi) + seconds(s);
}

}  // namespace lancet::io::detail

namespace lancet::io::object_store {

// "YYYY-MM-DDTHH:MM:SS[.fff]Z" (fractions dropped).
inline std::optional<std::chrono::system_clock::time_point> parse_iso8601_utc(std::string_view t) {
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t.back() != 'Z')
    return std::nullopt;
  using detail::digits;
  return detail::utc_time(digits(t, 0, 4), digits(t, 5, 2), digits(t, 8, 2), digits(t, 11, 2), digits(t, 14, 2),
                          digits(t, 17, 2));
}

// "Www, DD Mon YYYY HH:MM:SS GMT".
inline std::optional<std::chrono::system_clock::time_point> parse_rfc1123(std::string_view t) {
  if (t.size() != 29 || t[3] != ',' || t[4] != ' ' || t[7] != ' ' || t[11] != ' ' || t[16] != ' ' || t[19] != ':' ||
      t[22] != ':' || t.substr(25) != " GMT")
    return std::nullopt;
  static constexpr std::string_view months = "JanFebMarAprMayJunJulAugSepOctNovDec";
  const auto m = months.find(t.substr(8, 3));
  if (m == std::string_view::npos || m % 3 != 0) return std::nullopt;
  using detail::digits;
  return detail::utc_time(digits(t, 12, 4), int(m / 3) + 1, digits(t, 5, 2), digits(t, 17, 2), digits(t, 20, 2),
                          digits(t, 23, 2));
}

}  // namespace lancet::io::object_store
