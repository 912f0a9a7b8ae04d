// Exact number text <-> binary conversions for the JSON layer: decimal literals
// scaled without rounding (integers and decimals), 256-bit two's complement for
// decimal256, floats in their shortest round-trip form laid out as JavaScript
// prints numbers (so that our output matches LanceDB's canonical JSON text) or as
// serde_json prints an f64 (index metadata), and double -> float16 with a single
// rounding.
#pragma once

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "lancet/arrow/decimal.hpp"
#include "lancet/arrow/half.hpp"

namespace lancet::json::detail {

// ---- decimal literals ---------------------------------------------------------

// A decimal literal as sign, significant digits and a power of ten:
// value = (negative ? -1 : 1) * digits * 10^exponent. `digits` has no leading
// zeros; it is empty for zero.
struct decimal_literal {
  bool negative = false;
  std::string digits;
  std::int64_t exponent = 0;
};

// Parses [+-]? digits [. digits]? ([eE] [+-]? digits)? (also ".5" and "5.").
inline std::optional<decimal_literal> parse_decimal_literal(std::string_view s) {
  decimal_literal d;
  std::size_t p = 0;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) d.negative = s[p++] == '-';
  std::size_t mantissa_digits = 0;
  std::int64_t fraction_digits = 0;
  bool in_fraction = false;
  for (; p < s.size(); ++p) {
    const char c = s[p];
    if (c >= '0' && c <= '9') {
      ++mantissa_digits;
      if (!(d.digits.empty() && c == '0')) d.digits.push_back(c);
      if (in_fraction) ++fraction_digits;
    } else if (c == '.' && !in_fraction) {
      in_fraction = true;
    } else {
      break;
    }
  }
  if (mantissa_digits == 0) return std::nullopt;
  std::int64_t exp = 0;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    bool exp_negative = false;
    if (p < s.size() && (s[p] == '-' || s[p] == '+')) exp_negative = s[p++] == '-';
    const std::size_t start = p;
    for (; p < s.size() && s[p] >= '0' && s[p] <= '9'; ++p)
      if (exp < 1'000'000'000'000LL) exp = exp * 10 + (s[p] - '0');  // saturates far out of any range
    if (p == start) return std::nullopt;
    if (exp_negative) exp = -exp;
  }
  if (p != s.size()) return std::nullopt;
  d.exponent = exp - fraction_digits;
  // Trailing zeros move into the exponent, so that `digits` counts significant digits.
  while (!d.digits.empty() && d.digits.back() == '0') {
    d.digits.pop_back();
    ++d.exponent;
  }
  if (d.digits.empty()) d.exponent = 0;
  return d;
}

// The digits of value * 10^shift when that is an integer, without leading zeros
// ("" for zero); nullopt when a fractional part remains. `max_digits` bounds the
// work: longer results come back as a string of max_digits + 1 nines (the caller
// only needs to see that it is too long).
inline std::optional<std::string> scaled_integer_digits(const decimal_literal& d, std::int64_t shift,
                                                        std::size_t max_digits) {
  if (d.digits.empty()) return std::string();
  const std::int64_t e = d.exponent + shift;  // exponent is >= the position of the last nonzero digit
  if (e < 0) return std::nullopt;             // digits has no trailing zeros: a fraction remains
  if (std::int64_t(d.digits.size()) + e > std::int64_t(max_digits)) return std::string(max_digits + 1, '9');
  return d.digits + std::string(std::size_t(e), '0');
}

// ---- 256-bit two's complement ---------------------------------------------------

struct u256 {
  std::array<std::uint64_t, 4> w{};  // little-endian limbs

  bool is_zero() const noexcept { return (w[0] | w[1] | w[2] | w[3]) == 0; }
  bool sign_bit() const noexcept { return (w[3] >> 63) != 0; }
  void negate() noexcept {
    std::uint64_t carry = 1;
    for (auto& x : w) {
      x = ~x + carry;
      carry = (carry && x == 0) ? 1 : 0;
    }
  }
  // this = this * 10 + digit; returns false on overflow of 256 bits.
  bool mul10_add(unsigned digit) noexcept {
    arrow::uint128_t carry = digit;
    for (auto& x : w) {
      const arrow::uint128_t t = static_cast<arrow::uint128_t>(x) * 10u + carry;
      x = std::uint64_t(t);
      carry = t >> 64;
    }
    return carry == 0;
  }
  // this /= 10; returns the remainder.
  unsigned divmod10() noexcept {
    arrow::uint128_t rem = 0;
    for (int i = 3; i >= 0; --i) {
      const arrow::uint128_t cur = (rem << 64) | w[std::size_t(i)];
      w[std::size_t(i)] = std::uint64_t(cur / 10u);
      rem = cur % 10u;
    }
    return unsigned(rem);
  }
  static u256 from_bytes(const std::uint8_t* p, int width) noexcept {
    u256 v;
    const bool neg = (p[width - 1] & 0x80) != 0;
    for (int i = 0; i < 32; ++i) {
      const std::uint64_t byte = i < width ? p[i] : (neg ? 0xFF : 0x00);
      v.w[std::size_t(i / 8)] |= byte << (8 * (i % 8));
    }
    return v;
  }
  void to_bytes(std::uint8_t* out, int width) const noexcept {
    for (int i = 0; i < width; ++i) out[i] = std::uint8_t(w[std::size_t(i / 8)] >> (8 * (i % 8)));
  }
};

// Unsigned magnitude from decimal digits (at most 77 digits fit; the caller bounds it).
inline u256 u256_from_digits(std::string_view digits) noexcept {
  u256 v;
  for (char c : digits) v.mul10_add(unsigned(c - '0'));
  return v;
}

// Decimal text of a decimal128/256 value stored as `width` little-endian bytes,
// with exactly `scale` fractional digits (negative scales append zeros).
inline std::string decimal_text(const std::uint8_t* p, int width, std::int32_t scale) {
  u256 v = u256::from_bytes(p, width);
  const bool neg = v.sign_bit();
  if (neg) v.negate();  // |INT256_MIN| is not representable, but decimals stay far below it
  std::string digits;
  do {
    digits.push_back(char('0' + v.divmod10()));
  } while (!v.is_zero());
  std::string s(digits.rbegin(), digits.rend());
  if (scale < 0) {
    s.append(std::size_t(-std::int64_t(scale)), '0');  // as LanceDB's canonical form: 0 -> "000"
  } else if (scale > 0) {
    if (s.size() <= std::size_t(scale)) s.insert(0, std::size_t(scale) + 1 - s.size(), '0');
    s.insert(s.size() - std::size_t(scale), ".");
  }
  return neg ? "-" + s : s;
}

// ---- floats ----------------------------------------------------------------------

// double -> float16 bits with one rounding (to nearest, ties to even): the double is
// first narrowed to a float rounded to odd, which float_to_half then rounds exactly.
inline std::uint16_t double_to_half(double d) noexcept {
  float f = static_cast<float>(d);
  if (std::isfinite(d) && static_cast<double>(f) != d) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
  }
  return arrow::float_to_half(f);
}

// How shortest significant digits d1d2... and a decimal exponent n (value =
// 0.d1d2... * 10^n) are laid out: plain while n <= max_int_digits (integers get
// `integer_suffix`), plain with leading zeros while n >= min_n, else exponent
// notation ("1.5e-7", with '+' for positive exponents when `exponent_plus`).
struct number_layout {
  int max_int_digits;
  int min_n;
  std::string_view integer_suffix;
  bool exponent_plus;
};
// ECMAScript's Number::toString (LanceDB's canonical row JSON): up to 21 integer
// digits, down to 1e-6, "1e+21".
inline constexpr number_layout ecma_layout{21, -5, "", true};
// ryu's format64 (serde_json's f64, Lance's index metadata): up to 16 integer digits
// with ".0", down to 1e-5, "1e16".
inline constexpr number_layout serde_layout{16, -4, ".0", false};

inline void append_layout(std::string& out, std::string_view digits, int n, const number_layout& layout) {
  const int k = int(digits.size());
  if (k <= n && n <= layout.max_int_digits) {
    out.append(digits);
    out.append(std::size_t(n - k), '0');
    out.append(layout.integer_suffix);
  } else if (0 < n && n <= layout.max_int_digits) {
    out.append(digits.substr(0, std::size_t(n)));
    out.push_back('.');
    out.append(digits.substr(std::size_t(n)));
  } else if (layout.min_n <= n && n <= 0) {
    out += "0.";
    out.append(std::size_t(-n), '0');
    out.append(digits);
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits.substr(1));
    }
    out.push_back('e');
    if (n - 1 < 0) out.push_back('-');
    else if (layout.exponent_plus) out.push_back('+');
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
}

// A finite non-zero number as its significant digits and n: |v| = 0.d1d2... * 10^n.
struct digits_and_exponent {
  bool negative = false;
  std::string digits;
  int n = 0;
};

// Splits to_chars scientific output "-d.ddde+XX" (see above).
inline digits_and_exponent split_scientific(std::string_view sci) {
  digits_and_exponent d;
  if (!sci.empty() && sci[0] == '-') {
    d.negative = true;
    sci.remove_prefix(1);
  }
  const auto e = sci.find('e');
  for (char c : sci.substr(0, e))
    if (c != '.') d.digits.push_back(c);
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp10);
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  d.n = exp10 + 1;
  return d;
}

inline void append_from_scientific(std::string& out, std::string_view sci) {
  const auto d = split_scientific(sci);
  if (d.negative) out.push_back('-');
  append_layout(out, d.digits, d.n, ecma_layout);
}

// Shortest round-trip text of a double (finite, non-zero): what JavaScript's
// String(x) prints.
inline void append_shortest(std::string& out, double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  append_from_scientific(out, std::string_view(buf, std::size_t(r.ptr - buf)));
}

// The text LanceDB's canonical form gives a float32 or float16 (finite, non-zero):
// the value rounded to p = 1, 2, ... significant digits, halves rounded away from
// zero as JavaScript's toPrecision does, until the text reads back (with one
// correct rounding) as the same value. This is shortest but, on exact ties, can
// pick the other neighbour than std::to_chars would.
// `v` is positive; `exact_digits` bounds the significant digits of its exact
// decimal expansion (float32: 112, float16: 24).
template <class ReadsBack>
void append_precision_search(std::string& out, double v, int exact_digits, ReadsBack reads_back) {
  char exact[160];
  auto r = std::to_chars(exact, exact + sizeof exact, v, std::chars_format::scientific, exact_digits);
  const std::string_view e(exact, std::size_t(r.ptr - exact));
  const auto epos = e.find('e');
  std::string all;
  for (char c : e.substr(0, epos))
    if (c != '.') all.push_back(c);
  int exp10 = 0;
  std::from_chars(e.data() + epos + 1 + (e[epos + 1] == '+'), e.data() + e.size(), exp10);
  for (std::size_t p = 1; p < all.size(); ++p) {
    std::string digits = all.substr(0, p);
    int n = exp10 + 1;
    if (all[p] >= '5') {  // round half up
      std::size_t k = p;
      while (k > 0 && digits[k - 1] == '9') digits[--k] = '0';
      if (k == 0) {
        digits.insert(digits.begin(), '1');
        digits.pop_back();
        ++n;
      } else {
        ++digits[k - 1];
      }
    }
    std::string text = digits + "e" + std::to_string(n - int(p));
    if (reads_back(text)) {
      while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
      append_layout(out, digits, n, ecma_layout);
      return;
    }
  }
  append_shortest(out, v);
}

inline void append_nonfinite_or_zero(std::string& out, double v) {
  if (std::isnan(v)) out += "\"NaN\"";
  else if (std::isinf(v)) out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  else out += std::signbit(v) ? "-0" : "0";
}

// JSON text of a float64: shortest round-trip digits, "-0" for negative zero, and
// the strings "NaN", "Infinity", "-Infinity".
inline void append_float(std::string& out, double v) {
  if (!std::isfinite(v) || v == 0) return append_nonfinite_or_zero(out, v);
  append_shortest(out, v);
}

// serde_json's text of an f64: shortest round-trip digits in ryu's layout, "0.0" /
// "-0.0" for zeros and null for NaN and infinities.
inline void append_serde_f64(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const auto d = split_scientific(std::string_view(buf, std::size_t(r.ptr - buf)));
  if (d.negative) out.push_back('-');
  append_layout(out, d.digits, d.n, serde_layout);
}

// float32: the fewest digits that read back as the same float.
inline void append_float(std::string& out, float v) {
  if (!std::isfinite(v) || v == 0) return append_nonfinite_or_zero(out, v);
  if (v < 0) {
    out.push_back('-');
    v = -v;
  }
  // Fast path: when the shortest round-trip digits (std::to_chars) are also the
  // correctly rounded value at that length and no tie was involved, the search
  // below would stop at the same digits.
  char s[64], p[64], t[64];
  const auto sn = std::size_t(std::to_chars(s, s + sizeof s, v, std::chars_format::scientific).ptr - s);
  const std::string_view shortest(s, sn);
  const auto epos = shortest.find('e');
  const int digits = int(epos) - (epos > 1 ? 1 : 0);  // "d.ddd" or "d"
  const auto pn = std::size_t(std::to_chars(p, p + sizeof p, double(v), std::chars_format::scientific, digits - 1).ptr - p);
  if (std::string_view(p, pn) == shortest) {
    const auto tn = std::size_t(std::to_chars(t, t + sizeof t, double(v), std::chars_format::scientific, digits).ptr - t);
    const std::string_view longer(t, tn);
    double back = 0;
    const bool tie = longer[longer.find('e') - 1] == '5' &&
                     std::from_chars(t, t + tn, back).ec == std::errc() && back == double(v);
    if (!tie) return append_from_scientific(out, shortest);
  }
  append_precision_search(out, double(v), 120, [v](const std::string& text) {
    float back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    return back == v;
  });
}

// float16 (given as its bits): the fewest digits that read back as the same half.
inline void append_half(std::string& out, std::uint16_t bits) {
  const float f = arrow::half_to_float(bits);
  if (!std::isfinite(f) || f == 0) return append_nonfinite_or_zero(out, f);
  const std::uint16_t magnitude = bits & 0x7FFFu;
  if (f < 0) out.push_back('-');
  append_precision_search(out, std::fabs(double(f)), 24, [magnitude](const std::string& t) {
    double back = 0;
    std::from_chars(t.data(), t.data() + t.size(), back);
    return double_to_half(back) == magnitude;
  });
}

}  // namespace lancet::json::detail
