// SIMD kernels against the scalar reference (tests/support/simd_reference.hpp).
//
// Error bounds (eps = machine epsilon of the accumulation type, float for float32,
// float16 and uint8, double for float64; S = sum of |terms| of the sum computed):
//   one-to-one / one-to-many l2, dot:  |got - ref| <= (d + 4) * eps * S
//   cosine:                             |got - ref| <= (d + 8) * eps * (1 + S / (|x||y|))
//   tiled l2 (norm expansion):          |got - ref| <= (d + 8) * eps * (|x|^2 + |c|^2)
// NaN / Inf inputs must give NaN / Inf exactly where the reference does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/parallel.hpp"
#include "lancet/simd/distance.hpp"
#include "lancet/simd/f16.hpp"
#include "support/simd_reference.hpp"
#include "lancet/simd/tiled.hpp"
#include "lancet/simd/topk.hpp"

using namespace lancet;
using namespace lancet::simd;

namespace {

template <class T>
std::vector<T> random_vec(std::mt19937_64& rng, std::size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    std::uniform_int_distribution<int> u(0, 255);
    for (auto& x : v) x = static_cast<std::uint8_t>(u(rng));
  } else {
    std::normal_distribution<double> g(0.0, 1.0);
    for (auto& x : v) {
      if constexpr (std::is_same_v<T, f16>) x = f16(static_cast<float>(g(rng)));
      else x = static_cast<T>(g(rng));
    }
  }
  return v;
}

template <class T>
double eps_of() {
  return std::is_same_v<T, double> ? std::numeric_limits<double>::epsilon()
                                   : static_cast<double>(std::numeric_limits<float>::epsilon());
}

template <class T>
double abs_sum(distance_type t, const T* a, const T* b, std::size_t d) {
  double s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    const double x = reference::as_double(a[i]), y = reference::as_double(b[i]);
    s += t == distance_type::l2 ? (x - y) * (x - y) : std::fabs(x * y);
  }
  return s;
}

// Tolerance for a one-to-one / one-to-many result.
template <class T>
double tolerance(distance_type t, const T* a, const T* b, std::size_t d) {
  const double e = eps_of<T>();
  const double s = abs_sum(t, a, b, d);
  if (t == distance_type::cosine) {
    const double nx = std::sqrt(reference::dot(a, a, d)), ny = std::sqrt(reference::dot(b, b, d));
    return (static_cast<double>(d) + 8) * e * (1 + s / (nx * ny));
  }
  if (t == distance_type::dot) return (static_cast<double>(d) + 4) * e * (s + 1);
  return (static_cast<double>(d) + 4) * e * s + 1e-300;
}

void check_close(double got, double ref, double tol) {
  if (std::isnan(ref)) {
    CHECK(std::isnan(got));
  } else if (std::isinf(ref)) {
    CHECK(got == ref);
  } else {
    CHECK(std::fabs(got - ref) <= tol);
  }
}

template <class T>
void kernels_vs_reference() {
  std::mt19937_64 rng(7);
  const distance_type types[] = {distance_type::l2, distance_type::dot, distance_type::cosine};
  for (std::size_t d = 1; d <= 300; ++d) {
    const std::size_t n = 1 + d % 7;
    auto q = random_vec<T>(rng, d);
    auto block = random_vec<T>(rng, n * d);
    for (auto t : types) {
      std::vector<distance_t<T>> many(n);
      distances_to_many(t, q.data(), block.data(), n, d, many.data());
      for (std::size_t r = 0; r < n; ++r) {
        const T* y = block.data() + r * d;
        const double ref = reference::distance(t, q.data(), y, d);
        const double tol = tolerance(t, q.data(), y, d);
        INFO("type " << distance_name(t) << " d=" << d << " row " << r);
        check_close(static_cast<double>(distance(t, q.data(), y, d)), ref, tol);
        check_close(static_cast<double>(many[r]), ref, tol);
      }
    }
  }
}

}  // namespace

TEST_CASE("f16 conversion is exact and rounds to nearest even") {
  // Every half survives half -> float -> half (NaNs stay NaN).
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = f16::from_bits(static_cast<std::uint16_t>(b));
    const float f = h.to_float();
    const f16 back(f);
    if (std::isnan(f)) {
      CHECK((back.bits & 0x7c00u) == 0x7c00u);
      CHECK((back.bits & 0x3ffu) != 0);
    } else {
      CHECK(back.bits == h.bits);
    }
  }
  // Positive finite halves are increasing in their bit pattern: a reference rounding
  // by binary search over all of them.
  std::vector<double> pos;
  for (std::uint32_t b = 0; b <= 0x7bffu; ++b) pos.push_back(f16::from_bits(static_cast<std::uint16_t>(b)).to_float());
  auto ref_round = [&](float f) -> std::uint16_t {
    const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(f));
    if (a >= 65520.0) return sign | 0x7c00;
    auto it = std::lower_bound(pos.begin(), pos.end(), a);
    std::size_t hi = static_cast<std::size_t>(it - pos.begin());
    if (hi < pos.size() && pos[hi] == a) return static_cast<std::uint16_t>(sign | hi);
    const std::size_t lo = hi - 1;
    const double dl = a - pos[lo], dh = pos[hi] - a;
    std::size_t pick = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return static_cast<std::uint16_t>(sign | pick);
  };
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; ++i) {
    float f = std::bit_cast<float>(bits(rng));
    if (i % 2) f = std::ldexp(static_cast<float>(i % 1000) / 999.0f, -(i % 30)) * ((i % 4) < 2 ? 1 : -1);
    if (std::isnan(f)) continue;
    INFO("f = " << f);
    CHECK(f16(f).bits == ref_round(f));
  }
  // Halfway cases and limits.
  CHECK(f16(65504.0f).bits == 0x7bff);
  CHECK(f16(65519.0f).bits == 0x7bff);
  CHECK(f16(65520.0f).bits == 0x7c00);
  CHECK(f16(std::ldexp(1.0f, -25)).bits == 0);                          // tie -> even (0)
  CHECK(f16(std::ldexp(1.5f, -25)).bits == 1);
  CHECK(f16(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);              // tie -> even
  CHECK(f16(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02);          // tie -> even (up)
  CHECK(f16(-std::numeric_limits<float>::infinity()).bits == 0xfc00);
  // Bulk conversions agree with the scalar ones.
  std::vector<float> fs(1000);
  std::normal_distribution<float> g(0, 100);
  for (auto& f : fs) f = g(rng);
  std::vector<f16> hs(fs.size());
  f32_to_f16(fs.data(), hs.data(), fs.size());
  std::vector<float> back(fs.size());
  f16_to_f32(hs.data(), back.data(), hs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CHECK(hs[i].bits == f16(fs[i]).bits);
    CHECK(back[i] == hs[i].to_float());
  }
}

TEST_CASE("one-to-one and one-to-many kernels match the reference, d = 1..300") {
  SUBCASE("float32") { kernels_vs_reference<float>(); }
  SUBCASE("float64") { kernels_vs_reference<double>(); }
  SUBCASE("float16") { kernels_vs_reference<f16>(); }
  SUBCASE("uint8") { kernels_vs_reference<std::uint8_t>(); }
}

TEST_CASE("known values follow Lance's conventions") {
  const float a[] = {1, 2, 3}, b[] = {4, 6, 8};
  CHECK(l2(a, b, 3) == 9 + 16 + 25);
  CHECK(dot(a, b, 3) == 4 + 12 + 24);
  CHECK(dot_distance(a, b, 3) == 1 - 40.0f);
  CHECK(cosine(a, b, 3) == doctest::Approx(1 - 40 / (std::sqrt(14.0) * std::sqrt(116.0))));
  const std::uint8_t u[] = {0, 255, 7}, v[] = {255, 0, 7};
  CHECK(l2(u, v, 3) == 2 * 255.0f * 255.0f);
  CHECK(dot(u, v, 3) == 49.0f);
  const std::uint8_t c1[] = {0xff, 0x0f, 0x00, 0x01, 0x80, 0, 0, 0, 0xaa}, c2[] = {0x00, 0x0f, 0xff, 0x00, 0x80, 0, 0, 0, 0x55};
  CHECK(hamming(c1, c2, 9) == 8 + 0 + 8 + 1 + 8);
  // A zero vector has no cosine: NaN, as in Lance.
  const float z[] = {0, 0, 0};
  CHECK(std::isnan(cosine(z, b, 3)));
  CHECK(parse_distance_type("Euclidean") == distance_type::l2);
  CHECK(parse_distance_type("COSINE") == distance_type::cosine);
  CHECK_THROWS_AS(parse_distance_type("manhattan"), invalid_input_error);
  CHECK_THROWS_AS(distance(distance_type::hamming, a, b, 3), invalid_input_error);
}

// The u8 l2 kernel sums in 32-bit lanes per block of lancet::simd::detail::u8_block
// values: totals beyond 2^32 and lengths across block boundaries stay exact.
TEST_CASE("uint8 l2 is exact beyond 2^32 and across blocks") {
  for (const std::size_t d : {std::size_t(32768), std::size_t(32769), std::size_t(70001)}) {
    CAPTURE(d);
    const std::vector<std::uint8_t> zeros(d, 0), full(d, 255);
    CHECK(simd::detail::l2_u8(zeros.data(), full.data(), d) == std::uint64_t(d) * 255 * 255);
    std::mt19937 rng{std::uint32_t(d)};
    std::vector<std::uint8_t> x(d), y(d);
    for (auto& v : x) v = std::uint8_t(rng());
    for (auto& v : y) v = std::uint8_t(rng());
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < d; ++i) want += std::uint64_t((int(x[i]) - int(y[i])) * (int(x[i]) - int(y[i])));
    CHECK(simd::detail::l2_u8(x.data(), y.data(), d) == want);
  }
}

TEST_CASE("hamming matches the reference for every length 1..300") {
  std::mt19937_64 rng(3);
  for (std::size_t d = 1; d <= 300; ++d) {
    auto a = random_vec<std::uint8_t>(rng, d);
    auto blk = random_vec<std::uint8_t>(rng, 3 * d);
    std::vector<float> out(3);
    distances_to_many(distance_type::hamming, a.data(), blk.data(), 3, d, out.data());
    for (std::size_t r = 0; r < 3; ++r) {
      CHECK(out[r] == reference::hamming(a.data(), blk.data() + r * d, d));
      CHECK(hamming(a.data(), blk.data() + r * d, d) == out[r]);
    }
  }
}

TEST_CASE("NaN and Inf inputs propagate like the reference") {
  std::mt19937_64 rng(11);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (std::size_t d = 1; d <= 300; d += 7) {
    for (float bad : {nan, inf, -inf}) {
      auto a = random_vec<float>(rng, d);
      auto b = random_vec<float>(rng, 2 * d);
      a[d / 2] = bad;
      if (d > 3) b[d + d / 3] = -bad;  // second row: opposite sign elsewhere
      for (auto t : {distance_type::l2, distance_type::dot, distance_type::cosine}) {
        std::vector<float> many(2);
        distances_to_many(t, a.data(), b.data(), 2, d, many.data());
        for (std::size_t r = 0; r < 2; ++r) {
          const double ref = reference::distance(t, a.data(), b.data() + r * d, d);
          const float one = distance(t, a.data(), b.data() + r * d, d);
          INFO(distance_name(t) << " d=" << d << " bad=" << bad << " row " << r);
          CHECK(std::isnan(one) == std::isnan(ref));
          CHECK(std::isnan(many[r]) == std::isnan(ref));
          if (std::isinf(ref)) {
            CHECK(one == ref);
            CHECK(many[r] == ref);
          }
        }
      }
      // f16 with the same values
      std::vector<f16> ah(d), bh(2 * d);
      for (std::size_t i = 0; i < d; ++i) ah[i] = f16(a[i]);
      for (std::size_t i = 0; i < 2 * d; ++i) bh[i] = f16(b[i]);
      for (std::size_t r = 0; r < 2; ++r) {
        const double ref = reference::l2(ah.data(), bh.data() + r * d, d);
        const float got = l2(ah.data(), bh.data() + r * d, d);
        CHECK(std::isnan(got) == std::isnan(ref));
      }
    }
  }
}

TEST_CASE("argmin: lowest index wins ties, NaN and +inf never win") {
  std::mt19937_64 rng(5);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::uniform_int_distribution<int> small(0, 9);
  for (std::size_t n = 0; n <= 200; ++n) {
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<float> v(n);
      for (auto& x : v) {
        const int r = small(rng);
        x = r == 0 ? nan : r == 1 ? inf : r == 2 ? -inf : static_cast<float>(small(rng) % 4);
        if (rep == 4) x = r < 5 ? nan : inf;  // nothing qualifies except -inf never drawn
      }
      const auto got = argmin(v.data(), n);
      const auto ref = reference::argmin(v.data(), n);
      REQUIRE(got.has_value() == ref.has_value());
      if (got) {
        CHECK(got->index == ref->first);
        CHECK(got->value == ref->second);
      }
      std::vector<double> vd(v.begin(), v.end());
      const auto gd = argmin(vd.data(), n);
      REQUIRE(gd.has_value() == ref.has_value());
      if (gd) CHECK(gd->index == ref->first);
    }
  }
  std::vector<float> all_nan(40, nan);
  CHECK_FALSE(argmin(all_nan.data(), all_nan.size()).has_value());
  std::vector<float> ties(100, 3.0f);
  ties[70] = 1.0f;
  ties[35] = 1.0f;
  ties[99] = 1.0f;
  CHECK(argmin(ties.data(), ties.size())->index == 35);
}

TEST_CASE("topk: ascending, ties by index, NaN excluded") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> small(0, 12);
  for (std::size_t n = 0; n <= 120; n += 3) {
    std::vector<float> v(n);
    for (auto& x : v) {
      const int r = small(rng);
      x = r == 0 ? std::numeric_limits<float>::quiet_NaN() : r == 1 ? std::numeric_limits<float>::infinity()
                                                                    : static_cast<float>(r % 5);
    }
    for (std::size_t k : {std::size_t(0), std::size_t(1), std::size_t(5), n, n + 3}) {
      std::vector<std::uint32_t> idx(k);
      std::vector<float> val(k);
      const std::size_t got = topk(v.data(), n, k, idx.data(), val.data());
      const auto ref = reference::topk(v.data(), n, k);
      REQUIRE(got == ref.size());
      for (std::size_t j = 0; j < got; ++j) {
        CHECK(idx[j] == ref[j]);
        CHECK(val[j] == v[ref[j]]);
      }
    }
  }
}

namespace {

template <class T, class C>
void tiled_vs_reference(std::size_t seed) {
  using W = work_t<T, C>;
  std::mt19937_64 rng(seed);
  const double e = eps_of<W>();
  const std::size_t ks[] = {1, 3, 16, 17, 33, 64, 65, 130};
  std::size_t case_no = 0;
  for (std::size_t d = 1; d <= 300; d += (d < 20 ? 1 : 13)) {
    const std::size_t k = ks[case_no++ % 8];
    const std::size_t n = 1 + (d * 7) % 29;
    auto x = random_vec<T>(rng, n * d);
    auto c = random_vec<C>(rng, k * d);
    for (auto t : {distance_type::l2, distance_type::dot, distance_type::cosine}) {
      std::vector<W> out(n * k);
      distances_many_to_many(t, x.data(), n, c.data(), k, d, out.data());
      std::vector<std::uint32_t> idx(n);
      std::vector<W> dist(n);
      assign_nearest(t, x.data(), n, c.data(), k, d, idx.data(), dist.data());
      for (std::size_t r = 0; r < n; ++r) {
        std::vector<double> ref(k);
        std::vector<double> tol(k);
        for (std::size_t j = 0; j < k; ++j) {
          double xy = 0, xx = 0, cc = 0, sabs = 0;
          for (std::size_t i = 0; i < d; ++i) {
            const double xv = reference::as_double(x[r * d + i]), cv = reference::as_double(c[j * d + i]);
            xy += xv * cv;
            xx += xv * xv;
            cc += cv * cv;
            sabs += std::fabs(xv * cv);
          }
          const double dd = static_cast<double>(d);
          if (t == distance_type::l2) {
            double s = 0;
            for (std::size_t i = 0; i < d; ++i) {
              const double df = reference::as_double(x[r * d + i]) - reference::as_double(c[j * d + i]);
              s += df * df;
            }
            ref[j] = s;
            tol[j] = (dd + 8) * e * (xx + cc);
          } else if (t == distance_type::dot) {
            ref[j] = 1 - xy;
            tol[j] = (dd + 8) * e * (sabs + 1);
          } else {
            ref[j] = 1 - xy / (std::sqrt(xx) * std::sqrt(cc));
            tol[j] = (dd + 8) * e * (1 + sabs / (std::sqrt(xx) * std::sqrt(cc)));
          }
          INFO(distance_name(t) << " d=" << d << " k=" << k << " r=" << r << " j=" << j);
          CHECK(std::fabs(static_cast<double>(out[r * k + j]) - ref[j]) <= tol[j]);
        }
        // The assigned centroid is a true minimum up to the bound, and its reported
        // distance is the exact one.
        std::size_t best = 0;
        for (std::size_t j = 1; j < k; ++j)
          if (ref[j] < ref[best]) best = j;
        REQUIRE(idx[r] < k);
        INFO(distance_name(t) << " d=" << d << " k=" << k << " r=" << r);
        CHECK(ref[idx[r]] <= ref[best] + tol[best] + tol[idx[r]]);
        CHECK(std::fabs(static_cast<double>(dist[r]) - ref[idx[r]]) <=
              tolerance(t, x.data() + r * d, x.data() + r * d, d) + tol[idx[r]]);
      }
    }
  }
}

}  // namespace

TEST_CASE("tiled many-to-many and assignment match the reference") {
  SUBCASE("float32") { tiled_vs_reference<float, float>(21); }
  SUBCASE("float64") { tiled_vs_reference<double, double>(22); }
  SUBCASE("float16 rows, float16 centroids") { tiled_vs_reference<f16, f16>(23); }
  SUBCASE("float16 rows, float32 centroids") { tiled_vs_reference<f16, float>(24); }
  SUBCASE("uint8 rows, float32 centroids") { tiled_vs_reference<std::uint8_t, float>(25); }
}

TEST_CASE("assignment: ties, NaN rows, zero vectors, hamming, thread pools") {
  std::mt19937_64 rng(31);
  const std::size_t d = 37, k = 70, n = 3001;
  auto c = random_vec<float>(rng, k * d);
  // centroids 40, 55 and 69 are exact copies of centroid 12: a row nearest to any of
  // them must get 12 (lowest index).
  for (std::size_t j : {40, 55, 69}) std::copy(c.begin() + 12 * d, c.begin() + 13 * d, c.begin() + static_cast<long>(j * d));
  auto x = random_vec<float>(rng, n * d);
  for (std::size_t r = 0; r < 50; ++r)  // rows right at centroid 40
    for (std::size_t i = 0; i < d; ++i) x[r * d + i] = c[40 * d + i] + 1e-3f * static_cast<float>(i % 3);
  x[100 * d + 3] = std::numeric_limits<float>::quiet_NaN();
  x[101 * d] = std::numeric_limits<float>::infinity();
  std::vector<std::uint32_t> idx(n);
  std::vector<float> dist(n);
  assign_nearest(distance_type::l2, x.data(), n, c.data(), k, d, idx.data(), dist.data());
  for (std::size_t r = 0; r < 50; ++r) CHECK(idx[r] == 12);
  CHECK(idx[100] == no_index);
  CHECK(std::isnan(dist[100]));
  CHECK(idx[101] == no_index);
  for (std::size_t r = 0; r < n; ++r)
    if (r != 100 && r != 101) CHECK((idx[r] != 40 && idx[r] != 55 && idx[r] != 69));

  // Identical for any thread count.
  for (int threads : {1, 2, 3}) {
    boost::asio::thread_pool pool(static_cast<std::size_t>(threads));
    std::vector<std::uint32_t> idx2(n);
    std::vector<float> dist2(n);
    assign_nearest(distance_type::l2, x.data(), n, c.data(), k, d, idx2.data(), dist2.data(), &pool);
    CHECK(idx2 == idx);
    for (std::size_t r = 0; r < n; ++r)
      if (!std::isnan(dist[r])) CHECK(dist2[r] == dist[r]);
    std::vector<float> m1(n * k), m2(n * k);
    distances_many_to_many(distance_type::cosine, x.data(), n, c.data(), k, d, m1.data());
    distances_many_to_many(distance_type::cosine, x.data(), n, c.data(), k, d, m2.data(), &pool);
    CHECK(std::memcmp(m1.data(), m2.data(), m1.size() * sizeof(float)) == 0);
  }

  // Cosine: a zero row matches nothing, a zero centroid is never chosen.
  std::vector<float> zc(3 * 4, 0.0f), zx(2 * 4, 0.0f);
  zc[4] = 1;
  zc[8 + 1] = 1;  // centroid 0 is zero
  zx[4] = 2;      // row 1 = (2,0,0,0)
  std::uint32_t zi[2];
  assign_nearest(distance_type::cosine, zx.data(), 2, zc.data(), 3, 4, zi);
  CHECK(zi[0] == no_index);
  CHECK(zi[1] == 1);

  // Dot: the largest inner product wins.
  const float dc[] = {1, 0, 0, 5, 0, 2}, dx[] = {1, 1};
  std::uint32_t di;
  float dd;
  assign_nearest(distance_type::dot, dx, 1, dc, 3, 2, &di, &dd);
  CHECK(di == 1);
  CHECK(dd == 1 - 5.0f);

  // Hamming codes.
  const std::uint8_t codes[] = {0x00, 0x00, 0xff, 0xff, 0x0f, 0x00};
  const std::uint8_t q[] = {0x0e, 0x01, 0xff, 0x7f};
  std::uint32_t hi[2];
  float hd[2];
  assign_nearest(distance_type::hamming, q, 2, codes, 3, 2, hi, hd);
  CHECK(hi[0] == 2);
  CHECK(hd[0] == 2);
  CHECK(hi[1] == 1);
  CHECK(hd[1] == 1);
  CHECK_THROWS_AS(assign_nearest(distance_type::hamming, x.data(), 1, c.data(), k, d, idx.data()),
                  invalid_input_error);
  CHECK_THROWS_AS((packed_centroids<float>(distance_type::l2, c.data(), 0, d)), invalid_input_error);
}

TEST_CASE("parallel_for runs every task once and rethrows the first failure") {
  boost::asio::thread_pool pool(3);
  std::vector<int> hits(1000, 0);
  parallel_for(&pool, hits.size(), [&](std::size_t i) { hits[i] += 1; });
  CHECK(std::count(hits.begin(), hits.end(), 1) == 1000);
  CHECK_THROWS_AS(parallel_for(&pool, 50,
                               [&](std::size_t i) {
                                 if (i == 17) throw corrupt_error("task 17");
                               }),
                  corrupt_error);
  // Nested use from inside the pool does not deadlock.
  std::atomic<int> total{0};
  parallel_for(&pool, 8, [&](std::size_t) { parallel_for(&pool, 8, [&](std::size_t) { total += 1; }); });
  CHECK(total == 64);
  parallel_for(nullptr, 5, [&](std::size_t i) { hits[i] = 7; });
  CHECK(hits[4] == 7);
}

TEST_CASE("many-to-many rows with NaN or Inf give the exact distances") {
  const std::size_t d = 19, k = 40;
  std::mt19937_64 rng(77);
  auto c = random_vec<float>(rng, k * d);
  auto x = random_vec<float>(rng, 3 * d);
  x[2] = std::numeric_limits<float>::infinity();
  x[d + 5] = std::numeric_limits<float>::quiet_NaN();
  for (auto t : {distance_type::l2, distance_type::dot, distance_type::cosine}) {
    std::vector<float> out(3 * k);
    distances_many_to_many(t, x.data(), 3, c.data(), k, d, out.data());
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < k; ++j) {
        const double ref = reference::distance(t, x.data() + r * d, c.data() + j * d, d);
        INFO(distance_name(t) << " r=" << r << " j=" << j);
        CHECK(std::isnan(out[r * k + j]) == std::isnan(ref));
        if (std::isinf(ref)) CHECK(out[r * k + j] == ref);
      }
  }
}
