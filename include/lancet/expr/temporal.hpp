// Dates and timestamps as SQL filters write them ('2024-01-31', '2024-01-31 10:00:00.5',
// '2024-01-31T10:00:00Z', '...+02:00'), to days or nanoseconds since 1970-01-01 UTC.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lancet/arrow/decimal.hpp"

namespace lancet::expr {

// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar.
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

namespace detail {

struct text_cursor {
  std::string_view s;
  std::size_t i = 0;
  bool done() const noexcept { return i >= s.size(); }
  bool eat(char c) noexcept {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // Exactly `count` digits (count 0: one or more).
  std::optional<std::int64_t> digits(std::size_t count) noexcept {
    std::int64_t v = 0;
    std::size_t got = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && (count == 0 || got < count) && got < 18) {
      v = v * 10 + (s[i] - '0');
      ++i;
      ++got;
    }
    if (got == 0 || (count != 0 && got != count)) return std::nullopt;
    return v;
  }
};

inline bool valid_day(std::int64_t y, std::int64_t m, std::int64_t d) noexcept {
  if (m < 1 || m > 12 || d < 1) return false;
  static constexpr int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= len[m - 1] + (m == 2 && leap);
}

inline constexpr std::int64_t min_year = -262144, max_year = 262143;

inline std::optional<std::int64_t> parse_day(text_cursor& c) noexcept {
  const bool neg = c.eat('-');
  auto y = c.digits(0);
  if (!y || !c.eat('-')) return std::nullopt;
  auto m = c.digits(0);  // one or two digits, as Arrow's date parser takes them
  if (!m || *m > 99 || !c.eat('-')) return std::nullopt;
  auto d = c.digits(0);
  if (d && *d > 99) return std::nullopt;
  const std::int64_t year = neg ? -*y : *y;
  // Arrow's parser takes the years chrono's dates hold; beyond them there is no such day.
  if (year < min_year || year > max_year) return std::nullopt;
  if (!d || !valid_day(year, *m, *d)) return std::nullopt;
  return days_from_civil(year, unsigned(*m), unsigned(*d));
}

}  // namespace detail

// 'YYYY-MM-DD' as days since 1970-01-01; nullopt when malformed or no such day.
inline std::optional<std::int64_t> parse_date(std::string_view s) noexcept {
  detail::text_cursor c{s};
  auto d = detail::parse_day(c);
  if (!d || !c.done()) return std::nullopt;
  return d;
}

// 'YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]][Z|(+|-)HH[:MM]]' as nanoseconds since the
// epoch (UTC when an offset is given; a time without one is taken as it is).
inline std::optional<std::int64_t> parse_timestamp(std::string_view s) noexcept {
  detail::text_cursor c{s};
  auto day = detail::parse_day(c);
  if (!day) return std::nullopt;
  arrow::int128_t ns = static_cast<arrow::int128_t>(*day) * 86400 * 1000000000;
  if (!c.done()) {
    if (!c.eat(' ') && !c.eat('T')) return std::nullopt;
    auto h = c.digits(2);
    if (!h || *h > 23 || !c.eat(':')) return std::nullopt;
    auto mi = c.digits(2);
    if (!mi || *mi > 59) return std::nullopt;
    std::int64_t sec = 0, frac = 0;
    if (c.eat(':')) {
      auto se = c.digits(2);
      if (!se || *se > 59) return std::nullopt;
      sec = *se;
      if (c.eat('.')) {
        std::size_t got = 0;
        while (!c.done() && c.s[c.i] >= '0' && c.s[c.i] <= '9') {
          if (got < 9) frac = frac * 10 + (c.s[c.i] - '0');
          ++got;
          ++c.i;
        }
        if (got == 0) return std::nullopt;
        for (std::size_t k = got; k < 9; ++k) frac *= 10;
      }
    }
    ns += (static_cast<arrow::int128_t>(*h) * 3600 + *mi * 60 + sec) * 1000000000 + frac;
    if (c.eat('Z') || c.eat('z')) {
    } else if (!c.done() && (c.s[c.i] == '+' || c.s[c.i] == '-')) {
      const bool minus = c.s[c.i] == '-';
      ++c.i;
      auto oh = c.digits(2);
      if (!oh || *oh > 23) return std::nullopt;
      std::int64_t om = 0;
      if (c.eat(':')) {
        auto m2 = c.digits(2);
        if (!m2 || *m2 > 59) return std::nullopt;
        om = *m2;
      } else if (auto m2 = c.digits(2)) {
        if (*m2 > 59) return std::nullopt;
        om = *m2;
      }
      const arrow::int128_t off = (static_cast<arrow::int128_t>(*oh) * 3600 + om * 60) * 1000000000;
      ns += minus ? off : -off;  // local time minus its offset is UTC
    }
    if (!c.done()) return std::nullopt;
  }
  if (ns > INT64_MAX || ns < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(ns);
}

}  // namespace lancet::expr
