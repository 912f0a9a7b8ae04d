// Quantizers (PQ, SQ, RaBitQ): quality on clustered data, code layouts, distance
// tables and estimators against brute force, determinism across thread counts,
// element types, bad input, and byte-level agreement with LanceDB's own indexes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "lancet/index/quantizer/pq/pq.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/index/quantizer/rabitq/rabitq.hpp"
#include "lancet/index/quantizer/sq/sq.hpp"

#include "support/nearest.hpp"

using namespace lancet;
using namespace lancet::index;
using lancet::simd::distance_type;
using lancet::simd::f16;

namespace {

using lancet::testing::recall;

// `clusters` centres uniform in [-1, 1]^d; each row = centre + low-rank variation
// (rank `rank`, scale `spread`) + small isotropic noise: clustered data whose
// neighbourhoods PQ can resolve.
std::vector<float> low_rank_clustered(std::size_t n, std::size_t d, std::size_t clusters, float spread, std::size_t rank,
                             float noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(clusters * d), basis(clusters * rank * d);
  for (auto& c : centres) c = u(rng);
  for (auto& b : basis) b = g(rng) / std::sqrt(float(d));
  std::vector<float> out(n * d);
  std::vector<float> z(rank);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % clusters;
    for (auto& v : z) v = g(rng) * spread;
    for (std::size_t t = 0; t < d; ++t) {
      float v = centres[c * d + t] + noise * g(rng);
      for (std::size_t r = 0; r < rank; ++r) v += z[r] * basis[(c * rank + r) * d + t];
      out[i * d + t] = v;
    }
  }
  return out;
}

std::vector<float> gaussian(std::size_t n, std::size_t d, std::uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  std::vector<float> out(n * d);
  for (auto& v : out) v = g(rng);
  return out;
}

// Indices of the k smallest values (ties: lower index).
std::vector<std::size_t> smallest(const std::vector<float>& v, std::size_t k) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(std::min(k, v.size())), idx.end(),
                    [&](std::size_t a, std::size_t b) { return v[a] < v[b] || (v[a] == v[b] && a < b); });
  idx.resize(std::min(k, v.size()));
  return idx;
}

template <class T>
std::vector<T> convert(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, f16>) out[i] = f16(v[i]);
    else out[i] = static_cast<T>(v[i]);
  }
  return out;
}

double mse_of(const pq::model<float>& m, const std::vector<float>& rows, std::size_t n) {
  std::vector<std::uint8_t> codes(n * m.code_bytes());
  pq::encode(m, rows.data(), n, codes.data());
  std::vector<float> rec(m.dimension);
  double err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    pq::decode(m, codes.data() + i * m.code_bytes(), rec.data());
    for (std::size_t t = 0; t < m.dimension; ++t) {
      const double e = double(rows[i * m.dimension + t]) - rec[t];
      err += e * e;
    }
  }
  return err / double(n);
}

// Rows of `blobs` Gaussian blobs (centres N(0, 1), each blob scaled by 0.5-1.5,
// spread 0.3): the recall sweep's kind of data, where neighbours sit in dense blobs.
std::vector<float> blob_rows(std::size_t n, std::size_t d, std::size_t blobs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<float> centres(blobs * d), scale(blobs), rows(n * d);
  for (auto& c : centres) c = g(rng);
  for (auto& s : scale) s = u(rng);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = rng() % blobs;
    for (std::size_t t = 0; t < d; ++t) rows[i * d + t] = scale[b] * (centres[b * d + t] + 0.3f * g(rng));
  }
  return rows;
}

// n rows and nq held-out queries of the same blob data (blob_rows).
std::pair<std::vector<float>, std::vector<float>> blobs_and_queries(std::size_t n, std::size_t nq, std::size_t d,
                                                                    std::uint64_t seed) {
  const auto data = blob_rows(n + nq, d, 64, seed);
  return {std::vector<float>(data.begin(), data.begin() + std::ptrdiff_t(n * d)),
          std::vector<float>(data.begin() + std::ptrdiff_t(n * d), data.end())};
}

// 4-bit PQ parameters (m sub-vectors, a seed), and the same without the iterate check.
std::pair<pq::params, pq::params> four_bit_params(std::size_t m, std::uint64_t seed) {
  pq::params p;
  p.num_sub_vectors = m;
  p.num_bits = 4;
  p.seed = seed;
  pq::params lance = p;
  lance.choose_iterate = false;
  return {p, lance};
}

// recall@10 of the codebook's asymmetric l2 ranking of `rows` for `queries` (both
// drawn from the same data), against the exact ranking.
double adc_recall(const pq::model<float>& m, const std::vector<float>& rows, const std::vector<float>& queries) {
  const std::size_t d = m.dimension, n = rows.size() / d, nq = queries.size() / d;
  std::vector<std::uint8_t> codes(n * m.code_bytes()), transposed(n * m.code_bytes());
  pq::encode(m, rows.data(), n, codes.data());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t b = 0; b < m.code_bytes(); ++b) transposed[b * n + r] = codes[r * m.code_bytes() + b];
  double sum = 0;
  std::vector<float> exact(n), approx(n);
  for (std::size_t q = 0; q < nq; ++q) {
    const float* x = queries.data() + q * d;
    for (std::size_t r = 0; r < n; ++r) exact[r] = simd::l2(x, rows.data() + r * d, d);
    pq::distance_table(m, x).scan(transposed.data(), n, approx.data());
    sum += recall(smallest(exact, 10), smallest(approx, 10));
  }
  return sum / double(nq);
}

}  // namespace

TEST_SUITE("pq") {

TEST_CASE("recall@10 of 16x8 PQ on well-spread 128-d clusters beats 0.8") {
  // 1000 clusters of 10 rows (sigma 0.6) around centres spread over [-1, 1]^128: a
  // query near a centre has that cluster as its 10 nearest rows.
  const std::size_t clusters = 1000, per = 10, n = clusters * per, d = 128, nq = 100;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, 0.6f);
  std::vector<float> centres(clusters * d), rows(n * d), queries(nq * d);
  for (auto& c : centres) c = u(rng);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) rows[i * d + t] = centres[(i / per) * d + t] + g(rng);
  for (std::size_t q = 0; q < nq; ++q)
    for (std::size_t t = 0; t < d; ++t) queries[q * d + t] = centres[(q * 7 % clusters) * d + t] + g(rng);
  pq::params p;
  p.num_sub_vectors = 16;
  p.max_iters = 25;
  boost::asio::thread_pool pool(2);
  const auto m = pq::train(rows.data(), n, d, p, distance_type::l2, &pool);
  CHECK(m.codebook.size() == 256 * d);
  std::vector<std::uint8_t> codes(n * 16), tcodes(n * 16);
  pq::encode(m, rows.data(), n, codes.data(), &pool);
  transpose_codes(codes.data(), n, 16, tcodes.data());
  double total = 0;
  std::vector<float> exact(n), approx(n);
  for (std::size_t q = 0; q < nq; ++q) {
    const float* qv = queries.data() + q * d;
    for (std::size_t i = 0; i < n; ++i) exact[i] = simd::l2(qv, rows.data() + i * d, d);
    pq::distance_table t(m, qv);
    t.scan(tcodes.data(), n, approx.data());
    total += recall(smallest(exact, 10), smallest(approx, 10));
  }
  MESSAGE("PQ 16x8 recall@10 = " << total / double(nq));
  CHECK(total / double(nq) > 0.8);
}

TEST_CASE("reconstruction error falls with more sub-vectors, 8 and 4 bits") {
  const std::size_t n = 3000, d = 32;
  const auto rows = gaussian(n, d, 7);
  for (std::uint32_t bits : {8u, 4u}) {
    double prev = std::numeric_limits<double>::infinity();
    for (std::size_t m : {2u, 4u, 8u, 16u}) {
      pq::params p;
      p.num_sub_vectors = m;
      p.num_bits = bits;
      p.max_iters = 15;
      p.choose_iterate = false;  // the converged codebooks, whose error this compares
      const auto model = pq::train(rows.data(), n, d, p);
      const double e = mse_of(model, rows, n);
      MESSAGE("bits " << bits << " m " << m << " mse " << e);
      CHECK(e < prev);
      prev = e;
    }
  }
}

TEST_CASE("4-bit codes pack the even sub-vector in the low nibble; storage transposes") {
  // A hand-made codebook: centroid j of sub-vector s is the constant 10 * j + s.
  pq::model<float> m;
  m.dimension = 8;
  m.num_sub_vectors = 4;
  m.num_bits = 4;
  m.codebook.resize(16 * 8);
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t j = 0; j < 16; ++j)
      for (std::size_t t = 0; t < 2; ++t) m.codebook[(s * 16 + j) * 2 + t] = float(10 * j + s);
  // Row r chooses centroid (r + 3 s) % 16 for sub-vector s.
  const std::size_t n = 5;
  std::vector<float> rows(n * 8);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < 4; ++s)
      for (std::size_t t = 0; t < 2; ++t) rows[r * 8 + s * 2 + t] = float(10 * ((r + 3 * s) % 16) + s) + 0.1f;
  std::vector<std::uint8_t> codes(n * 2), tr(n * 2), back(n * 2);
  pq::encode(m, rows.data(), n, codes.data());
  for (std::size_t r = 0; r < n; ++r) {
    auto c = [&](std::size_t s) { return std::uint8_t((r + 3 * s) % 16); };
    CHECK(codes[r * 2 + 0] == std::uint8_t(c(1) << 4 | c(0)));
    CHECK(codes[r * 2 + 1] == std::uint8_t(c(3) << 4 | c(2)));
    for (std::size_t s = 0; s < 4; ++s) CHECK(pq::code_of(codes.data() + r * 2, 4, s) == c(s));
  }
  transpose_codes(codes.data(), n, 2, tr.data());
  for (std::size_t r = 0; r < n; ++r) {
    CHECK(tr[0 * n + r] == codes[r * 2 + 0]);
    CHECK(tr[1 * n + r] == codes[r * 2 + 1]);
  }
  untranspose_codes(tr.data(), n, 2, back.data());
  CHECK(back == codes);
  // 8 bits: one byte per sub-vector, in order.
  m.num_bits = 8;
  m.codebook.assign(256 * 8, 1000.0f);
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t j = 0; j < 16; ++j)
      for (std::size_t t = 0; t < 2; ++t) m.codebook[(s * 256 + j) * 2 + t] = float(10 * j + s);
  std::vector<std::uint8_t> c8(n * 4);
  pq::encode(m, rows.data(), n, c8.data());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < 4; ++s) CHECK(c8[r * 4 + s] == (r + 3 * s) % 16);
}

TEST_CASE("distance tables equal brute force over decoded vectors (l2, dot; 8 and 4 bits; any n)") {
  const std::size_t d = 24;
  const auto rows = gaussian(700, d, 3);
  for (std::uint32_t bits : {8u, 4u}) {
    for (auto dist : {distance_type::l2, distance_type::dot}) {
      pq::params p;
      p.num_sub_vectors = 6;
      p.num_bits = bits;
      p.max_iters = 5;
      const auto m = pq::train(rows.data(), 700, d, p, dist);
      CHECK(m.distance == dist);
      const auto q = gaussian(1, d, 11);
      for (std::size_t n : {0u, 1u, 31u, 64u, 65u, 200u, 700u}) {
        std::vector<std::uint8_t> codes(n * m.code_bytes()), tr(n * m.code_bytes());
        pq::encode(m, rows.data(), n, codes.data());
        transpose_codes(codes.data(), n, m.code_bytes(), tr.data());
        pq::distance_table t(m, q.data());
        CHECK(t.table().size() == 6 * m.num_centroids());
        std::vector<float> got(n), got_rows(n);
        t.scan(tr.data(), n, got.data());
        t.scan_rows(codes.data(), n, got_rows.data());
        std::vector<float> rec(d);
        for (std::size_t i = 0; i < n; ++i) {
          pq::decode(m, codes.data() + i * m.code_bytes(), rec.data());
          const float want = dist == distance_type::l2 ? simd::l2(q.data(), rec.data(), d)
                                                       : 1.0f - simd::dot(q.data(), rec.data(), d);
          CHECK(got[i] == doctest::Approx(want).epsilon(1e-4));
          CHECK(got_rows[i] == doctest::Approx(got[i]).epsilon(1e-6));
        }
      }
    }
  }
}

TEST_CASE("residual tables from precomputed query and partition terms equal direct tables") {
  const std::size_t d = 32;
  const auto rows = gaussian(1000, d, 41);
  for (std::uint32_t bits : {8u, 4u}) {
    pq::params p;
    p.num_sub_vectors = 8;
    p.num_bits = bits;
    p.max_iters = 5;
    const auto m = pq::train(rows.data(), 1000, d, p);
    auto q = gaussian(1, d, 42), c = gaussian(1, d, 43);
    for (auto& v : q) v += 5.0f;  // large |q| and |c| next to a small residual
    for (std::size_t i = 0; i < d; ++i) c[i] = q[i] - 0.01f * c[i];
    std::vector<float> r(d);
    for (std::size_t i = 0; i < d; ++i) r[i] = q[i] - c[i];
    const pq::distance_table direct(m, r.data());
    const auto fast = pq::residual_table(m, pq::query_term(m, q.data()), pq::partition_term(m, c.data()), q.data(),
                                         c.data());
    REQUIRE(fast.table().size() == direct.table().size());
    for (std::size_t i = 0; i < fast.table().size(); ++i)
      CHECK(fast.table()[i] == doctest::Approx(direct.table()[i]).epsilon(1e-5).scale(1e-6));
  }
  CHECK_THROWS_AS(pq::distance_table(3, 4, std::vector<float>(48), 0.0f), invalid_input_error);  // odd m, 4 bits
}

TEST_CASE("residual_lut and query_term_plan give residual_table's tables exactly (8 and 4 bits)") {
  const std::size_t d = 32;
  const auto rows = gaussian(1000, d, 44);
  for (std::uint32_t bits : {8u, 4u}) {
    pq::params p;
    p.num_sub_vectors = 8;
    p.num_bits = bits;
    p.max_iters = 5;
    const auto m = pq::train(rows.data(), 1000, d, p);
    const auto q = gaussian(1, d, 45), c = gaussian(1, d, 46);
    const auto qt = pq::query_term(m, q.data()), pt = pq::partition_term(m, c.data());
    const auto t = pq::residual_table(m, qt, pt, q.data(), c.data());
    std::vector<float> lut(m.code_bytes() * 256, -1.0f);
    pq::residual_lut(m, qt.data(), pt.data(), q.data(), c.data(), lut.data());
    CHECK(lut == t.lut());
    // The prepared query term (searcher's per-query step) equals query_term exactly.
    std::vector<double> planned(qt.size());
    pq::query_term_plan(m).compute(q.data(), planned.data());
    CHECK(planned == qt);
  }
}

// The filtered scan (u8-quantized tables as a lower bound, exact f32 distances for the
// rows that pass) must give a top-k equal to the full scan's, with the same distances,
// whatever the tables' scale, sign, the code count or k. Where AVX-512 VBMI is missing
// it emits every row, which passes trivially.
TEST_CASE("lut_scan_filtered: the same top-k and exact distances as the full scan") {
  std::mt19937 rng(7);
  std::size_t emitted_total = 0, rows_total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t nb = 1 + std::size_t(trial) % 24, n = std::size_t(rng() % 3000);
    const float scale = trial % 3 == 0 ? 1000.0f : trial % 3 == 1 ? 1.0f : 1e-3f;
    const float shift = trial % 4 == 0 ? -0.5f : 0.0f;  // dot tables go negative
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> lut(nb * 256);
    for (auto& x : lut) x = (u(rng) + shift) * scale;
    if (trial % 7 == 0)  // many equal entries: ties broken by row id
      for (auto& x : lut) x = std::round(x * 4 / scale) * scale / 4;
    std::vector<std::uint8_t> codes(nb * n);
    for (auto& c : codes) c = std::uint8_t(rng());
    std::vector<float> full(n);
    pq::lut_scan(lut.data(), nb, codes.data(), n, full.data());
    const std::size_t k = 1 + std::size_t(trial) % 40;
    index::topk want(k), got(k);
    std::vector<std::uint64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = 1000 + i;
    want.push_all(full.data(), ids.data(), n, nullptr);
    std::vector<std::uint8_t> qs(nb * 256);
    std::size_t emitted = 0, inexact = 0;
    pq::lut_scan_filtered(
        lut.data(), nb, codes.data(), n, qs.data(),
        [&] { return got.full() ? got.worst().distance : std::numeric_limits<float>::infinity(); },
        [&](std::size_t r, float dist) {
          ++emitted;
          inexact += dist != full[r];
          got.push(dist, ids[r]);
        });
    INFO("trial " << trial << " n " << n << " bytes " << nb << " k " << k);
    CHECK(inexact == 0);
    CHECK(got.sorted() == want.sorted());
    emitted_total += emitted;
    rows_total += n;
  }
  MESSAGE("filtered scan: " << emitted_total << " of " << rows_total << " rows given exact distances");
  if (pq::has_filtered_lut_scan) CHECK(emitted_total * 4 < rows_total);  // it does filter
}

// A range of the rows (any ends, not only multiples of 64) with tables quantized once:
// the same top-k as a full scan of that range, no row outside it emitted.
TEST_CASE("scan_quantized: a range of rows gives the full scan's top-k of that range") {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t nb = 1 + std::size_t(trial) % 20, n = 1 + std::size_t(rng() % 2000);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> lut(nb * 256);
    for (auto& x : lut) x = u(rng);
    std::vector<std::uint8_t> codes(nb * n);
    for (auto& c : codes) c = std::uint8_t(rng());
    std::vector<float> full(n);
    pq::lut_scan(lut.data(), nb, codes.data(), n, full.data());
    std::size_t begin = rng() % n, end = rng() % (n + 1);
    if (begin > end) std::swap(begin, end);
    const std::size_t k = 1 + std::size_t(trial) % 20;
    index::topk want(k), got(k);
    std::vector<std::uint64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = i;
    want.push_all(full.data() + begin, ids.data() + begin, end - begin, nullptr);
    std::vector<std::uint8_t> qs(nb * 256);
    const auto ql = pq::quantize_for_scan(lut.data(), nb, qs.data());
    std::size_t outside = 0, inexact = 0;
    pq::scan_quantized(
        ql, qs.data(), lut.data(), nb, codes.data(), n, begin, end,
        [&] { return got.full() ? got.worst().distance : std::numeric_limits<float>::infinity(); },
        [&](std::size_t r, float dist) {
          outside += r < begin || r >= end;
          inexact += dist != full[r];
          got.push(dist, ids[r]);
        });
    INFO("trial " << trial << " n " << n << " [" << begin << ", " << end << ") bytes " << nb << " k " << k);
    CHECK(outside == 0);
    CHECK(inexact == 0);
    CHECK(got.sorted() == want.sorted());
  }
}

// The SQ estimator's integer sums (SIMD where AVX-512 BW exists) against the scalar
// formula: dimensions around the 32-value step, the extreme codes, l2 and Lance's dot.
TEST_CASE("SQ: integer l2 / dot distances equal the scalar formula for any dimension") {
  std::mt19937 rng(11);
  for (std::size_t d : {1u, 7u, 31u, 32u, 33u, 64u, 100u, 128u, 300u, 1030u}) {
    sq::model m;
    m.dimension = d;
    m.lower = -1.5;
    m.upper = 2.0;
    std::vector<float> q(d);
    std::uniform_real_distribution<float> u(-2.0f, 2.5f);  // some outside the bounds
    for (auto& x : q) x = u(rng);
    const std::size_t n = 50;
    std::vector<std::uint8_t> codes(n * d);
    for (auto& c : codes) c = std::uint8_t(rng());
    for (std::size_t t = 0; t < d; ++t) {  // rows of extremes
      codes[t] = 0;
      codes[d + t] = 255;
    }
    for (auto t : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
      CAPTURE(d);
      CAPTURE(simd::distance_name(t));
      const auto de = t == distance_type::dot ? sq::dot_estimate::lance : sq::dot_estimate::dequantized;
      const sq::distance_estimator est(m, q.data(), t, de);
      const auto& qc = est.query_code();
      const float range = static_cast<float>(m.upper - m.lower), range_sq = range * range;
      std::vector<float> scanned(n);
      est.scan(codes.data(), n, scanned.data());
      for (std::size_t r = 0; r < n; ++r) {
        std::uint32_t v = 0;
        for (std::size_t i = 0; i < d; ++i) {
          const std::int32_t c = codes[r * d + i], qq = qc[i];
          v += t == distance_type::dot ? std::uint32_t(c) * std::uint32_t(qq) : std::uint32_t((c - qq) * (c - qq));
        }
        const float want = (t == distance_type::dot ? 1.0f - static_cast<float>(v) : static_cast<float>(v)) * range_sq / 65025.0f;
        CHECK(est.distance(codes.data() + r * d) == want);
        CHECK(scanned[r] == want);
      }
    }
  }
}

// scan_filtered emits every row whose distance may enter the top-k, with the distance
// scan() computes: a top-k over the emitted rows equals one over scan()'s output,
// whatever the factors' signs, ties, k or the row count. Non-finite factors are
// emitted (their exact distance decides). Without AVX-512 VBMI every row is emitted.
TEST_CASE("RaBitQ scan_filtered: the same top-k and distances as scan (l2, dot, cosine; ties; signs)") {
  std::mt19937 rng(5);
  std::size_t emitted_total = 0, rows_total = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const std::size_t d = 8 * (1 + std::size_t(trial) % 32), n = std::size_t(rng() % 2500);
    const distance_type t = trial % 3 == 0 ? distance_type::l2 : trial % 3 == 1 ? distance_type::dot : distance_type::cosine;
    const auto m = rabitq::make(d);
    const auto q = gaussian(1, d, 100 + std::uint64_t(trial), trial % 5 == 0 ? 100.0f : 1.0f);
    const rabitq::query_estimator est(m, q.data(), t);
    const std::size_t cb = m.code_bytes();
    std::vector<std::uint8_t> codes(n * cb);
    for (auto& c : codes) c = std::uint8_t(rng());
    std::vector<float> add(n), scale(n);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      add[i] = 2.0f + g(rng);
      scale[i] = trial % 4 == 0 ? -std::fabs(g(rng)) : g(rng);  // both signs, or negative only
      if (trial % 6 == 0 && i % 3 == 0) scale[i] = 0.0f;
    }
    if (trial % 7 == 0)  // ties: repeated code rows and factors
      for (std::size_t i = 1; i < n; i += 2) {
        for (std::size_t b = 0; b < cb; ++b) codes[i * cb + b] = codes[(i - 1) * cb + b];
        add[i] = add[i - 1];
        scale[i] = scale[i - 1];
      }
    if (trial % 11 == 0 && n > 10) {
      scale[3] = std::numeric_limits<float>::infinity();
      add[7] = std::numeric_limits<float>::quiet_NaN();
      add[9] = -std::numeric_limits<float>::infinity();
    }
    std::vector<std::uint8_t> tr(n * cb);
    transpose_codes(codes.data(), n, cb, tr.data());
    const float qf = 0.25f * g(rng);
    std::vector<float> full(n);
    est.scan(tr.data(), n, add.data(), scale.data(), qf, full.data());
    const std::size_t k = 1 + std::size_t(trial) % 40;
    index::topk want(k), got(k);
    std::vector<std::uint64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = 7 + i;
    for (std::size_t i = 0; i < n; ++i) want.push(full[i], ids[i]);
    std::vector<std::uint8_t> qs(cb * 256);
    std::size_t emitted = 0, inexact = 0;
    est.scan_filtered(
        tr.data(), n, add.data(), scale.data(), qf, qs.data(),
        [&] { return got.full() ? got.worst().distance : std::numeric_limits<float>::infinity(); },
        [&](std::size_t r, float dist) {
          ++emitted;
          inexact += !(dist == full[r] || (std::isnan(dist) && std::isnan(full[r])));
          got.push(dist, ids[r]);
        });
    INFO("trial " << trial << " n " << n << " d " << d << " k " << k);
    CHECK(inexact == 0);
    CHECK(got.sorted() == want.sorted());
    emitted_total += emitted;
    rows_total += n;
  }
  MESSAGE("RaBitQ filtered scan: " << emitted_total << " of " << rows_total << " rows given exact distances");
  if (pq::has_filtered_lut_scan) CHECK(emitted_total * 2 < rows_total);  // it does filter
}

TEST_CASE("cosine trains l2 tables (Lance searches cosine PQ as l2 over normalised vectors)") {
  const auto rows = gaussian(600, 16, 5);
  pq::params p;
  p.num_sub_vectors = 4;
  p.max_iters = 3;
  CHECK(pq::train(rows.data(), 600, 16, p, distance_type::cosine).distance == distance_type::l2);
}

TEST_CASE("training and encoding are identical for any thread count") {
  const std::size_t n = 4000, d = 32;
  const auto rows = low_rank_clustered(n, d, 10, 1.0f, 4, 0.05f, 4);
  pq::params p;
  p.num_sub_vectors = 8;
  p.max_iters = 10;
  p.seed = 1234;
  const auto a = pq::train(rows.data(), n, d, p);
  boost::asio::thread_pool one(1), three(3);
  const auto b = pq::train(rows.data(), n, d, p, distance_type::l2, &one);
  const auto c = pq::train(rows.data(), n, d, p, distance_type::l2, &three);
  CHECK(a.codebook == b.codebook);
  CHECK(a.codebook == c.codebook);
  std::vector<std::uint8_t> ca(n * 8), cc(n * 8);
  pq::encode(a, rows.data(), n, ca.data());
  pq::encode(a, rows.data(), n, cc.data(), &three);
  CHECK(ca == cc);
  p.seed = 1235;
  CHECK(pq::train(rows.data(), n, d, p).codebook != a.codebook);
}

TEST_CASE("f16 and f64 vectors: codebook in the element type, same quality") {
  const std::size_t n = 2000, d = 16;
  const auto rows = low_rank_clustered(n, d, 8, 1.0f, 3, 0.05f, 9);
  pq::params p;
  p.num_sub_vectors = 4;
  p.max_iters = 10;
  const auto mf = pq::train(rows.data(), n, d, p);
  const auto h = convert<f16>(rows);
  const auto mh = pq::train(h.data(), n, d, p);
  static_assert(std::is_same_v<decltype(mh), const pq::model<f16>>);
  const auto dd = convert<double>(rows);
  const auto md = pq::train(dd.data(), n, d, p);
  static_assert(std::is_same_v<decltype(md), const pq::model<double>>);
  std::vector<std::uint8_t> ch(n * 4), cd(n * 4);
  pq::encode(mh, h.data(), n, ch.data());
  pq::encode(md, dd.data(), n, cd.data());
  // Reconstruction error in the same ballpark as float.
  auto mse = [&](const auto& m, const std::vector<std::uint8_t>& codes) {
    std::vector<float> rec(d);
    double e = 0;
    for (std::size_t i = 0; i < n; ++i) {
      pq::decode(m, codes.data() + i * 4, rec.data());
      for (std::size_t t = 0; t < d; ++t) e += std::pow(double(rows[i * d + t]) - rec[t], 2);
    }
    return e / double(n);
  };
  const double ef = mse_of(mf, rows, n);
  CHECK(mse(mh, ch) < ef * 1.5 + 1e-3);
  CHECK(mse(md, cd) < ef * 1.5 + 1e-3);
  // Queries of another float type work against any codebook.
  pq::distance_table t(mh, rows.data());
  std::vector<float> out(n);
  std::vector<std::uint8_t> tr(n * 4);
  transpose_codes(ch.data(), n, 4, tr.data());
  t.scan(tr.data(), n, out.data());
  std::vector<float> rec(d);
  pq::decode(mh, ch.data(), rec.data());
  CHECK(out[0] == doctest::Approx(simd::l2(rows.data(), rec.data(), d)).epsilon(1e-3));
}

TEST_CASE("train_for_ivf trains on residuals for l2 / cosine, raw vectors for dot") {
  const std::size_t n = 3000, d = 16, k = 4;
  // Four far-apart clusters; the residuals are small, the raw vectors are not.
  auto rows = gaussian(n, d, 21, 0.1f);
  std::vector<float> cents(k * d);
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t t = 0; t < d; ++t) cents[c * d + t] = float(10 * (c + 1)) * (t % 2 ? 1.0f : -1.0f);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) rows[i * d + t] += cents[(i % k) * d + t];
  pq::params p;
  p.num_sub_vectors = 4;
  p.max_iters = 10;
  p.choose_iterate = false;  // what is trained on, not which iterate is kept
  auto max_abs = [](const std::vector<float>& v) {
    float m = 0;
    for (float x : v) m = std::max(m, std::fabs(x));
    return m;
  };
  const auto res = pq::train_for_ivf(rows.data(), n, d, cents.data(), k, distance_type::l2, p);
  CHECK(max_abs(res.codebook) < 1.0f);
  const auto raw = pq::train_for_ivf(rows.data(), n, d, cents.data(), k, distance_type::dot, p);
  CHECK(max_abs(raw.codebook) > 5.0f);
  CHECK(raw.distance == distance_type::dot);
  // encode_for_ivf == encode of the residuals.
  std::vector<std::uint32_t> part(n);
  for (std::size_t i = 0; i < n; ++i) part[i] = std::uint32_t(i % k);
  std::vector<float> resid(rows);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) resid[i * d + t] -= cents[(i % k) * d + t];
  std::vector<std::uint8_t> a(n * 4), b(n * 4);
  pq::encode_for_ivf(res, rows.data(), n, distance_type::l2, cents.data(), k, part.data(), a.data());
  pq::encode(res, resid.data(), n, b.data());
  CHECK(a == b);
  // Dot encodes the raw vectors (no partitions needed).
  pq::encode_for_ivf(raw, rows.data(), n, distance_type::dot, static_cast<const float*>(nullptr), 0, nullptr, a.data());
  pq::encode(raw, rows.data(), n, b.data());
  CHECK(a == b);
  // Cosine: normalise, then residual.
  std::vector<float> normed(rows);
  for (std::size_t i = 0; i < n; ++i) {
    float s = 0;
    for (std::size_t t = 0; t < d; ++t) s += normed[i * d + t] * normed[i * d + t];
    for (std::size_t t = 0; t < d; ++t) normed[i * d + t] /= std::sqrt(s);
  }
  std::vector<float> ncents(cents);
  for (std::size_t c = 0; c < k; ++c) {
    float s = 0;
    for (std::size_t t = 0; t < d; ++t) s += ncents[c * d + t] * ncents[c * d + t];
    for (std::size_t t = 0; t < d; ++t) ncents[c * d + t] /= std::sqrt(s);
  }
  const auto cm = pq::train_for_ivf(rows.data(), n, d, ncents.data(), k, distance_type::cosine, p);
  CHECK(cm.distance == distance_type::l2);
  std::vector<float> nres(normed);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) nres[i * d + t] -= ncents[(i % k) * d + t];
  pq::encode_for_ivf(cm, rows.data(), n, distance_type::cosine, ncents.data(), k, part.data(), a.data());
  pq::encode(cm, nres.data(), n, b.data());
  std::size_t diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
  CHECK(diff <= a.size() / 1000);  // rounding of the normalisation may flip a near tie
}

// 8-bit dot-product codebooks of short sub-vectors (2 values; 4 when there are at
// most 8) start from k-means++ seeding (their top dot products sit in the tails of the data, which random
// rows leave to few centroids); everything else from random rows, as Lance. Data like the recall sweep's: 32 blobs
// with N(0, 1) centres, spread 0.3, a scale 0.5-1.5 per blob; sub-vectors of width 2.
TEST_CASE("PQ init: k-means++ for 8-bit dot codebooks of short sub-vectors, random rows otherwise") {
  const std::size_t n = 3000, d = 8;
  const auto rows = blob_rows(n, d, 32, 14);
  pq::params p;
  p.num_sub_vectors = 4;
  p.max_iters = 20;
  p.choose_iterate = false;  // the runs' starts and ends, not the iterate check
  pq::params pp = p, pr = p;
  pp.init = kmeans_init::kmeans_plus_plus;
  pr.init = kmeans_init::random;
  const auto dot_auto = pq::train(rows.data(), n, d, p, distance_type::dot);
  const auto dot_pp = pq::train(rows.data(), n, d, pp, distance_type::dot);
  const auto dot_random = pq::train(rows.data(), n, d, pr, distance_type::dot);
  CHECK(dot_auto.codebook == dot_pp.codebook);
  CHECK(dot_pp.codebook != dot_random.codebook);
  const double e_pp = mse_of(dot_pp, rows, n), e_random = mse_of(dot_random, rows, n);
  MESSAGE("dot 8-bit reconstruction error: k-means++ " << e_pp << ", random rows " << e_random);
  CHECK(e_pp < 0.95 * e_random);
  // Whether the default init (p, changed by `change`) trains the codebook that `init` does.
  const auto default_is = [&](kmeans_init init, const std::vector<float>& data, std::size_t dim,
                              distance_type metric, auto change) {
    pq::params def = p;
    change(def);
    pq::params fixed = def;
    fixed.init = init;
    return pq::train(data.data(), n, dim, def, metric).codebook == pq::train(data.data(), n, dim, fixed, metric).codebook;
  };
  // l2, 4-bit dot and dot sub-vectors of 8 values keep Lance's random rows.
  CHECK(default_is(kmeans_init::random, rows, d, distance_type::l2, [](pq::params&) {}));
  CHECK(default_is(kmeans_init::random, rows, d, distance_type::dot, [](pq::params& q) { q.num_bits = 4; }));
  CHECK(default_is(kmeans_init::random, rows, d, distance_type::dot, [](pq::params& q) { q.num_sub_vectors = 1; }));
  // Width 4: k-means++ with at most 8 sub-vectors, random rows with more.
  CHECK(default_is(kmeans_init::kmeans_plus_plus, rows, d, distance_type::dot,
                   [](pq::params& q) { q.num_sub_vectors = 2; }));
  const auto wide = gaussian(n, 36, 15);
  CHECK(default_is(kmeans_init::random, wide, 36, distance_type::dot, [](pq::params& q) { q.num_sub_vectors = 9; }));
  pq::params bad = p;
  bad.init = kmeans_init::given;
  CHECK_THROWS_AS(pq::train(rows.data(), n, d, bad, distance_type::dot), invalid_input_error);
}

TEST_CASE("PQ codebook: an earlier k-means iterate where it ranks the sample clearly better, Lance's ends where not") {
  const std::size_t d = 32, n = 10000, nq = 200;
  // 4-bit codes of 4 values on blob data: converged code words spread away from the
  // dense blobs; an earlier iterate ranks better (bench/RESULTS.md: +0.01-0.02 recall).
  {
    double gain = 0;
    int kept_earlier = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto [rows, queries] = blobs_and_queries(n, nq, d, 100 + seed);
      const auto [p, lance] = four_bit_params(8, seed);
      const auto chosen = pq::train(rows.data(), n, d, p);
      const auto ends = pq::train(rows.data(), n, d, lance);
      CHECK(ends.iterate == 0);
      if (chosen.iterate == 0) {
        CHECK(chosen.codebook == ends.codebook);
      } else {
        ++kept_earlier;
        CHECK((chosen.iterate == 1 || chosen.iterate == 3 || chosen.iterate == 10));
        CHECK(chosen.codebook != ends.codebook);
        // The kept iterate is the same runs stopped early: training with that many
        // iterations and no check gives the same codebook.
        pq::params stopped = lance;
        stopped.max_iters = chosen.iterate;
        CHECK(pq::train(rows.data(), n, d, stopped).codebook == chosen.codebook);
      }
      const double a = adc_recall(chosen, rows, queries), b = adc_recall(ends, rows, queries);
      MESSAGE("4-bit blobs, seed " << seed << ": iterate " << chosen.iterate << " recall@10 " << a
                                   << ", the runs' ends " << b);
      gain += (a - b) / 3;
      if (seed == 1) {
        boost::asio::thread_pool three(3);
        const auto c3 = pq::train(rows.data(), n, d, p, distance_type::l2, &three);
        CHECK(c3.codebook == chosen.codebook);
        CHECK(c3.iterate == chosen.iterate);
      }
    }
    CHECK(kept_earlier >= 2);
    CHECK(gain > 0.005);
  }
  // Inside an IVF index (residuals, l2): queries rank the rows of their own
  // partition. 4-bit codes of 8 values on 16 partitions of blob data: an earlier
  // iterate is kept and ranks held-out queries better; the same on 2 threads and in
  // place; and no check where partitions are too small to rank in (500 of them on
  // 10,000 rows).
  {
    const std::size_t parts = 16;
    double gain = 0;
    int kept_earlier = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto [rows, queries] = blobs_and_queries(n, nq, d, 200 + seed);
      kmeans_params kp;
      kp.seed = seed;
      const auto ivf = train_kmeans(rows.data(), n, d, parts, kp);
      const auto [p, lance] = four_bit_params(4, seed);
      const auto chosen = pq::train_for_ivf(rows.data(), n, d, ivf.centroids.data(), parts, distance_type::l2, p);
      const auto ends = pq::train_for_ivf(rows.data(), n, d, ivf.centroids.data(), parts, distance_type::l2, lance);
      if (chosen.iterate != 0) {
        ++kept_earlier;
        pq::params stopped = lance;
        stopped.max_iters = chosen.iterate;
        CHECK(pq::train_for_ivf(rows.data(), n, d, ivf.centroids.data(), parts, distance_type::l2, stopped).codebook ==
              chosen.codebook);
      } else {
        CHECK(chosen.codebook == ends.codebook);
      }
      // Recall@10 of held-out queries by asymmetric distances to every row's code
      // (residual to its partition's centroid), against exact l2 neighbours.
      std::vector<std::uint32_t> part(n);
      simd::assign_nearest(distance_type::l2, rows.data(), n, ivf.centroids.data(), parts, d, part.data(),
                           static_cast<float*>(nullptr));
      // Exact neighbours once; a codebook's ranking is by distance to each row's
      // reconstruction (its partition's centroid plus the decoded residual), which
      // is the asymmetric distance a search sums from its tables.
      auto nearest = [&](const float* qv, const std::vector<float>& base) {
        std::vector<std::pair<float, std::size_t>> all(n);
        for (std::size_t r = 0; r < n; ++r) all[r] = {simd::l2(qv, base.data() + r * d, d), r};
        std::partial_sort(all.begin(), all.begin() + 10, all.end());
        std::vector<std::size_t> ids;
        for (std::size_t i = 0; i < 10; ++i) ids.push_back(all[i].second);
        std::sort(ids.begin(), ids.end());
        return ids;
      };
      std::vector<std::vector<std::size_t>> exact(nq);
      for (std::size_t q = 0; q < nq; ++q) exact[q] = nearest(queries.data() + q * d, rows);
      auto recall = [&](const pq::model<float>& m) {
        std::vector<std::uint8_t> codes(n * m.code_bytes());
        pq::encode_for_ivf(m, rows.data(), n, distance_type::l2, ivf.centroids.data(), parts, part.data(), codes.data());
        std::vector<float> rebuilt(n * d);
        for (std::size_t r = 0; r < n; ++r) {
          pq::decode(m, codes.data() + r * m.code_bytes(), rebuilt.data() + r * d);
          for (std::size_t t = 0; t < d; ++t) rebuilt[r * d + t] += ivf.centroids[part[r] * d + t];
        }
        double hits = 0;
        for (std::size_t q = 0; q < nq; ++q) {
          const auto got = nearest(queries.data() + q * d, rebuilt);
          std::vector<std::size_t> both;
          std::set_intersection(got.begin(), got.end(), exact[q].begin(), exact[q].end(), std::back_inserter(both));
          hits += double(both.size());
        }
        return hits / double(nq * 10);
      };
      const double a = recall(chosen), b = recall(ends);
      MESSAGE("4-bit blobs in 16 partitions, seed " << seed << ": iterate " << chosen.iterate << " recall@10 " << a
                                                    << ", the runs' ends " << b);
      gain += (a - b) / 3;
      if (seed == 1) {
        boost::asio::thread_pool two(2);
        const auto c2 =
            pq::train_for_ivf(rows.data(), n, d, ivf.centroids.data(), parts, distance_type::l2, p, &two);
        CHECK(c2.codebook == chosen.codebook);
        // The IVF builder trains in place: the same partitions reach the check.
        auto work = rows;
        CHECK(pq::train_for_ivf_in_place(work.data(), n, d, ivf.centroids.data(), parts, distance_type::l2, p, &two)
                  .codebook == chosen.codebook);
        kmeans_params few = kp;
        few.max_iters = 2;
        const auto many = train_kmeans(rows.data(), n, d, 500, few, &two);
        CHECK(pq::train_for_ivf(rows.data(), n, d, many.centroids.data(), 500, distance_type::l2, p, &two).codebook ==
              pq::train_for_ivf(rows.data(), n, d, many.centroids.data(), 500, distance_type::l2, lance, &two)
                  .codebook);
      }
    }
    CHECK(kept_earlier >= 2);
    CHECK(gain > 0.005);
  }
  // 8-bit codes of 4 values on the same kind of data: the converged codebook ranks
  // as well or better, and it is kept.
  {
    const auto rows = blob_rows(n, d, 64, 7);
    pq::params p;
    p.num_sub_vectors = 8;
    p.max_iters = 20;
    pq::params lance = p;
    lance.choose_iterate = false;
    const auto chosen = pq::train(rows.data(), n, d, p);
    CHECK(chosen.iterate == 0);
    CHECK(chosen.codebook == pq::train(rows.data(), n, d, lance).codebook);
  }
  // No check below 1,024 sample rows, nor when max_iters leaves nothing earlier.
  {
    const auto rows = blob_rows(1000, d, 64, 8);
    pq::params p;
    p.num_sub_vectors = 4;
    p.num_bits = 4;
    pq::params lance = p;
    lance.choose_iterate = false;
    CHECK(pq::train(rows.data(), 1000, d, p).codebook == pq::train(rows.data(), 1000, d, lance).codebook);
    const auto more = blob_rows(n, d, 64, 9);
    p.max_iters = lance.max_iters = 1;
    const auto one = pq::train(more.data(), n, d, p);
    CHECK(one.iterate == 0);
    CHECK(one.codebook == pq::train(more.data(), n, d, lance).codebook);
  }
}

TEST_CASE("PQ iterate check: exact neighbours, distance tables and verdicts") {
  // The exact neighbours of queries among the checked rows (a tiled product with the
  // queries packed): brute force's, with each query's own row left out.
  for (const distance_type t : {distance_type::l2, distance_type::dot}) {
    const std::size_t p = 3000, d = 24;
    const auto rows = gaussian(p, d, 61);
    const std::vector<std::size_t> qpos = {2999, 0, 17, 1500, 2048, 4};
    const auto truth = index::detail::exact_neighbors(t, rows.data(), p, d, qpos, 1, qpos.size(), nullptr);
    boost::asio::thread_pool two(2);
    CHECK(index::detail::exact_neighbors(t, rows.data(), p, d, qpos, 1, qpos.size(), &two) == truth);
    REQUIRE(truth.size() == qpos.size() - 1);
    for (std::size_t j = 1; j < qpos.size(); ++j) {
      std::vector<std::pair<double, std::uint64_t>> all;
      for (std::size_t r = 0; r < p; ++r) {
        if (r == qpos[j]) continue;
        double dot = 0, l2 = 0;
        for (std::size_t k = 0; k < d; ++k) {
          dot += double(rows[qpos[j] * d + k]) * rows[r * d + k];
          l2 += (double(rows[qpos[j] * d + k]) - rows[r * d + k]) * (double(rows[qpos[j] * d + k]) - rows[r * d + k]);
        }
        all.emplace_back(t == distance_type::l2 ? l2 : 1 - dot, r);
      }
      std::partial_sort(all.begin(), all.begin() + 10, all.end());
      std::vector<std::uint64_t> want;
      for (std::size_t i = 0; i < 10; ++i) want.push_back(all[i].second);
      std::sort(want.begin(), want.end());
      CHECK(truth[j - 1] == want);
    }
  }
  // The check's batched tables hold distance_table's values (8- and 4-bit, l2 and dot).
  for (const std::uint32_t bits : {8u, 4u})
    for (const distance_type t : {distance_type::l2, distance_type::dot}) {
      const auto rows = gaussian(2000, 16, 62);
      pq::params pp;
      pp.num_sub_vectors = 4;
      pp.num_bits = bits;
      pp.max_iters = 5;
      pp.choose_iterate = false;
      const auto m = pq::train(rows.data(), 2000, 16, pp, t);
      const index::detail::pq_table_maker<float> maker(m);
      for (std::size_t i = 0; i < 5; ++i) {
        const float* q = rows.data() + i * 16;
        const pq::distance_table want(m, q), got = maker.make(q);
        CHECK(got.offset() == want.offset());
        REQUIRE(got.table().size() == want.table().size());
        for (std::size_t j = 0; j < want.table().size(); ++j)
          CHECK(got.table()[j] == doctest::Approx(want.table()[j]).epsilon(1e-5));
      }
    }
  // Paired gains and the verdicts of the rounds.
  {
    const std::vector<std::uint8_t> ends = {3, 4, 5, 6}, better = {4, 5, 6, 7}, mixed = {4, 3, 5, 6};
    const auto all = index::detail::iterate_gain_of(better, ends, 4);
    CHECK(all.mean == 1.0);
    CHECK(std::isinf(all.z));  // every query gained alike
    const auto some = index::detail::iterate_gain_of(mixed, ends, 4);
    CHECK(some.mean == 0.0);
    using index::detail::iterate_verdict;
    CHECK(index::detail::iterate_verdict_of(all, 4, 4000) == iterate_verdict::won);
    CHECK(index::detail::iterate_verdict_of(some, 4, 4000) == iterate_verdict::lost);
    CHECK(index::detail::iterate_verdict_of({0.05, 3.0}, 500, 4000) == iterate_verdict::won);
    CHECK(index::detail::iterate_verdict_of({0.05, 1.2}, 500, 4000) == iterate_verdict::open);    // 1.2 x sqrt(8) = 3.4
    CHECK(index::detail::iterate_verdict_of({0.05, 0.6}, 500, 4000) == iterate_verdict::lost);    // 0.6 x sqrt(8) = 1.7
    CHECK(index::detail::iterate_verdict_of({0.05, 2.9}, 4000, 4000) == iterate_verdict::lost);   // no queries left
    CHECK(index::detail::iterate_verdict_of({-0.01, 0.0}, 500, 4000) == iterate_verdict::lost);
  }
}

TEST_CASE("non-finite rows are dropped from training and code to 0") {
  const std::size_t n = 600, d = 8;
  auto rows = gaussian(n, d, 2);
  rows[5 * d + 3] = std::numeric_limits<float>::quiet_NaN();
  rows[9 * d] = std::numeric_limits<float>::infinity();
  pq::params p;
  p.num_sub_vectors = 2;
  p.max_iters = 5;
  const auto m = pq::train(rows.data(), n, d, p);
  for (float v : m.codebook) CHECK(std::isfinite(v));
  std::vector<std::uint8_t> codes(n * 2);
  pq::encode(m, rows.data(), n, codes.data());
  CHECK(codes[5 * 2 + 0] == 0);  // the NaN sub-vector
  CHECK(codes[9 * 2 + 0] == 0);  // the infinite one
}

TEST_CASE("PQ encode: every code is a nearest centroid, short and long sub-vectors; non-finite ones code to 0") {
  // Short sub-vectors (<= 16 values) are assigned column-major, long ones by the tiled
  // kernel from rows; 1,100 rows span a full encoding block and a partial one.
  for (const auto& [d, m] : std::vector<std::pair<std::size_t, std::size_t>>{{32, 8}, {40, 2}, {96, 2}}) {
    CAPTURE(d);
    const std::size_t n = 1100, sd = d / m;
    auto rows = gaussian(n, d, 11 + d);
    pq::params p;
    p.num_sub_vectors = m;
    p.max_iters = 3;
    p.choose_iterate = false;
    const auto model = pq::train(rows.data(), n, d, p);
    const std::size_t k = model.num_centroids();
    // Squared distance of sub-vector x (sd values) to centroid j of sub-vector s, and
    // whether centroid j is a nearest one (float ranking by |c|^2 - 2 x.c: a near tie
    // may go either way).
    auto dist = [&](const float* x, std::size_t s, std::size_t j) {
      double e = 0;
      for (std::size_t t = 0; t < sd; ++t) {
        const double v = double(x[t]) - double(model.centroids(s)[j * sd + t]);
        e += v * v;
      }
      return e;
    };
    auto nearest = [&](const float* x, std::size_t s, std::size_t j) {
      double best = dist(x, s, 0);
      for (std::size_t i = 1; i < k; ++i) best = std::min(best, dist(x, s, i));
      return dist(x, s, j) <= best + 1e-4 * (1 + best);
    };
    // -infinity where centroid 0's value is positive and another's negative: ranked
    // alone, -inf would favour that other centroid, so code 0 shows the non-finite rule.
    std::size_t inf_at = sd;
    for (std::size_t t = 0; t < sd && inf_at == sd; ++t)
      if (model.centroids(0)[t] > 0)
        for (std::size_t j = 1; j < k; ++j)
          if (model.centroids(0)[j * sd + t] < 0) {
            inf_at = t;
            break;
          }
    REQUIRE(inf_at < sd);
    rows[7 * d + sd + 2] = std::numeric_limits<float>::quiet_NaN();     // row 7, sub-vector 1
    rows[1050 * d + inf_at] = -std::numeric_limits<float>::infinity();  // row 1050, sub-vector 0
    std::vector<std::uint8_t> codes(n * m);
    pq::encode(model, rows.data(), n, codes.data());
    CHECK(codes[7 * m + 1] == 0);
    CHECK(codes[1050 * m + 0] == 0);
    std::size_t off = 0;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t s = 0; s < m; ++s)
        if (!((r == 7 && s == 1) || (r == 1050 && s == 0))) off += !nearest(rows.data() + r * d + s * sd, s, codes[r * m + s]);
    CHECK(off == 0);

    // nearest_centroid::assign_rows (the tiled kernel, or a column-major copy for
    // short sub-vectors) against brute force, over sub-vector 0 of the finite rows.
    const index::detail::subvector_nearest_centroid<float> near(model.centroids(0), k, sd);
    CHECK(near.prefers_rows() == (sd > 16));
    std::vector<float> sub(n * sd);
    for (std::size_t r = 0; r < n; ++r) std::copy_n(rows.data() + r * d, sd, sub.data() + r * sd);
    std::vector<std::uint32_t> member(n);
    near.assign_rows(sub.data(), n, member.data());
    off = 0;
    for (std::size_t r = 0; r < n; ++r)
      if (r != 1050) off += !nearest(sub.data() + r * sd, 0, member[r]);
    CHECK(off == 0);
  }
}

TEST_CASE("PQ sub-vector k-means: row-major and column-major values train the same codebook") {
  // Long sub-vectors are trained row-major (the tiled kernel reads rows), short ones
  // column-major; either layout must give the same centroids, loss and iterates.
  for (const std::size_t sd : {std::size_t(8), std::size_t(48)}) {
    CAPTURE(sd);
    const std::size_t n = 3000, k = 64;
    const auto vals = gaussian(n, sd, 5 + sd);
    index::detail::subvector_kmeans<float> by_cols, by_rows;
    for (auto* km : {&by_cols, &by_rows}) {
      km->n = n;
      km->d = sd;
      km->k = k;
    }
    by_rows.rows = vals;
    by_cols.cols.resize(n * sd);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t t = 0; t < sd; ++t) by_cols.cols[t * n + r] = vals[r * sd + t];
    CHECK(by_cols.at(17, 3) == by_rows.at(17, 3));
    index::detail::rng64 g1(9), g2(9);
    const auto seeds = by_cols.plus_plus_rows(g1);
    CHECK(seeds == by_rows.plus_plus_rows(g2));
    std::vector<float> c1(k * sd), c2;
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t t = 0; t < sd; ++t) c1[j * sd + t] = vals[seeds[j] * sd + t];
    c2 = c1;
    std::vector<std::vector<float>> it1, it2;
    const double l1 = by_cols.run(c1, 12, 1e-4, {1, 3}, &it1);
    const double l2 = by_rows.run(c2, 12, 1e-4, {1, 3}, &it2);
    CHECK(l1 == l2);
    CHECK(c1 == c2);
    CHECK(it1 == it2);
    CHECK(it1.size() == 2);
  }
}

TEST_CASE("progress is reported per sub-vector; returning false cancels") {
  const auto rows = gaussian(600, 16, 3);
  pq::params p;
  p.num_sub_vectors = 4;
  p.max_iters = 3;
  std::vector<std::size_t> seen;
  p.on_progress = [&](std::size_t done, std::size_t total) {
    CHECK(total == 4);
    seen.push_back(done);
    return true;
  };
  boost::asio::thread_pool pool(2);
  pq::train(rows.data(), 600, 16, p, distance_type::l2, &pool);
  CHECK(seen == std::vector<std::size_t>{1, 2, 3, 4});
  p.on_progress = [](std::size_t done, std::size_t) { return done < 2; };
  CHECK_THROWS_WITH_AS(pq::train(rows.data(), 600, 16, p), doctest::Contains("after 2 of 4 sub-vectors"),
                       cancelled_error);
}

TEST_CASE("bad input is refused with clear errors") {
  const auto rows = gaussian(300, 10, 1);
  pq::params p;
  p.num_sub_vectors = 4;
  CHECK_THROWS_WITH_AS(pq::train(rows.data(), 300, 10, p), doctest::Contains("must divide vector dimension 10"),
                       invalid_input_error);
  p.num_sub_vectors = 5;
  p.num_bits = 6;
  CHECK_THROWS_WITH_AS(pq::train(rows.data(), 300, 10, p), doctest::Contains("num_bits 6"), invalid_input_error);
  p.num_bits = 4;
  CHECK_THROWS_WITH_AS(pq::train(rows.data(), 300, 10, p), doctest::Contains("divisible by 2 for num_bits=4"),
                       invalid_input_error);
  p.num_bits = 8;
  CHECK_THROWS_WITH_AS(pq::train(rows.data(), 200, 10, p), doctest::Contains("Requires 256 rows but only 200"),
                       invalid_input_error);
  CHECK_THROWS_AS(pq::train(rows.data(), 300, 10, p, distance_type::hamming), invalid_input_error);
  CHECK_THROWS_AS(pq::train_for_ivf(rows.data(), 300, 10, static_cast<const float*>(nullptr), 0,
                                    distance_type::l2, p),
                  invalid_input_error);
  pq::model<float> bad;
  bad.dimension = 10;
  bad.num_sub_vectors = 5;
  bad.codebook.resize(7);
  CHECK_THROWS_WITH_AS(pq::distance_table(bad, rows.data()), doctest::Contains("codebook has 7 values"),
                       invalid_input_error);
}

}  // TEST_SUITE("pq")

TEST_SUITE("sq") {

TEST_CASE("Lance's examples: 0..15 code to 17 i; NaN codes to 0; one global bound pair") {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[std::size_t(i)] = float(i);
  const auto m = sq::train(v.data(), 1, 16);
  CHECK(m.lower == 0.0);
  CHECK(m.upper == 15.0);
  std::vector<std::uint8_t> c(16);
  sq::encode(m, v.data(), 1, c.data());
  for (int i = 0; i < 16; ++i) CHECK(c[std::size_t(i)] == i * 17);
  // f16 and f64 the same.
  const auto h = convert<f16>(v);
  sq::encode(sq::train(h.data(), 1, 16), h.data(), 1, c.data());
  for (int i = 0; i < 16; ++i) CHECK(c[std::size_t(i)] == i * 17);
  const auto dd = convert<double>(v);
  sq::encode(sq::train(dd.data(), 1, 16), dd.data(), 1, c.data());
  for (int i = 0; i < 16; ++i) CHECK(c[std::size_t(i)] == i * 17);

  sq::model b;
  b.dimension = 5;
  b.lower = 0;
  b.upper = 3;
  const double w[5] = {0, 1, 2, 3, std::numeric_limits<double>::quiet_NaN()};
  std::vector<std::uint8_t> cw(5);
  sq::encode(b, w, 1, cw.data());
  CHECK(cw == std::vector<std::uint8_t>{0, 85, 170, 255, 0});

  // Bounds are global: dimension 0 spans [-1, 1], dimension 1 spans [5, 9].
  const float rows[6] = {-1, 5, 1, 9, 0, 7};
  const auto g = sq::train(rows, 3, 2);
  CHECK(g.lower == -1.0);
  CHECK(g.upper == 9.0);
}

TEST_CASE("encode / decode error bounds, saturation, flat bounds") {
  const std::size_t n = 500, d = 12;
  const auto rows = gaussian(n, d, 17, 3.0f);
  const auto m = sq::train(rows.data(), n, d);
  const double range = m.upper - m.lower;
  std::vector<std::uint8_t> codes(n * d);
  sq::encode(m, rows.data(), n, codes.data());
  std::vector<float> back(n * d);
  sq::decode(m, codes.data(), n, back.data());
  double worst = 0;
  for (std::size_t i = 0; i < n * d; ++i) worst = std::max(worst, std::fabs(double(rows[i]) - back[i]));
  CHECK(worst <= range / 510.0 * (1 + 1e-6) + 1e-6);
  CHECK(worst > range / 510.0 * 0.5);  // and the bound is not vacuous
  // Outside the bounds: saturate.
  const float out_of_range[2] = {float(m.lower - 10), float(m.upper + 10)};
  std::uint8_t oc[2];
  sq::model m2 = m;
  m2.dimension = 2;
  sq::encode(m2, out_of_range, 1, oc);
  CHECK(oc[0] == 0);
  CHECK(oc[1] == 255);
  // lower == upper: every code is 0.
  const float same[4] = {2, 2, 2, 2};
  const auto flat = sq::train(same, 2, 2);
  std::uint8_t fc[4] = {9, 9, 9, 9};
  sq::encode(flat, same, 2, fc);
  for (auto c : fc) CHECK(c == 0);
}

TEST_CASE("distance estimates: Lance's integer formula, close to exact distances") {
  const std::size_t n = 300, d = 32;
  const auto rows = gaussian(n, d, 8);
  const auto q = gaussian(1, d, 9);
  const auto m = sq::train(rows.data(), n, d);
  std::vector<std::uint8_t> codes(n * d);
  sq::encode(m, rows.data(), n, codes.data());
  const float range = float(m.upper - m.lower);
  for (auto t : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
    sq::distance_estimator est(m, q.data(), t, sq::dot_estimate::lance);
    std::vector<float> got(n);
    est.scan(codes.data(), n, got.data());
    std::vector<std::uint8_t> qc(d);
    sq::encode(m, q.data(), 1, qc.data());
    CHECK(est.query_code() == qc);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t l2 = 0, dot = 0;
      for (std::size_t k = 0; k < d; ++k) {
        const int diff = int(codes[i * d + k]) - int(qc[k]);
        l2 += std::uint32_t(diff * diff);
        dot += std::uint32_t(codes[i * d + k]) * qc[k];
      }
      const float raw = t == distance_type::dot ? 1.0f - float(dot) : float(l2);
      CHECK(got[i] == raw * (range * range) / 65025.0f);
      CHECK(est.distance(codes.data() + i * d) == got[i]);
      if (t == distance_type::l2) {
        const float exact = simd::l2(q.data(), rows.data() + i * d, d);
        CHECK(std::fabs(got[i] - exact) < 0.05f * exact + 0.5f);
      }
    }
  }
}

TEST_CASE("dot: the default estimate is 1 - q . decode(code); Lance's code product ranks poorly") {
  const std::size_t n = 400, d = 16;
  const auto rows = gaussian(n, d, 61);
  const auto q = gaussian(1, d, 62);
  const auto m = sq::train(rows.data(), n, d);
  std::vector<std::uint8_t> codes(n * d);
  sq::encode(m, rows.data(), n, codes.data());
  std::vector<float> dec(n * d);
  sq::decode(m, codes.data(), n, dec.data());
  sq::distance_estimator est(m, q.data(), distance_type::dot);
  sq::distance_estimator lance(m, q.data(), distance_type::dot, sq::dot_estimate::lance);
  std::vector<float> exact(n), ours(n), theirs(n);
  for (std::size_t i = 0; i < n; ++i) {
    exact[i] = 1.0f - simd::dot(q.data(), rows.data() + i * d, d);
    ours[i] = est.distance(codes.data() + i * d);
    theirs[i] = lance.distance(codes.data() + i * d);
    CHECK(ours[i] == doctest::Approx(1.0f - simd::dot(q.data(), dec.data() + i * d, d)).epsilon(1e-4));
  }
  const double ours_recall = recall(smallest(exact, 10), smallest(ours, 10));
  const double lance_recall = recall(smallest(exact, 10), smallest(theirs, 10));
  MESSAGE("SQ dot recall@10: dequantized " << ours_recall << ", Lance's formula " << lance_recall);
  CHECK(ours_recall >= 0.8);
}

TEST_CASE("training: sample, non-finite rows dropped, cosine normalises, thread counts agree") {
  const std::size_t n = 2000, d = 8;
  auto rows = gaussian(n, d, 30);
  rows[3] = 1e30f;  // a finite outlier widens the bounds...
  rows[11] = std::numeric_limits<float>::infinity();  // ...a non-finite row is dropped
  sq::params p;
  p.sample_rate = 1000;  // sample everything
  const auto m = sq::train(rows.data(), n, d, p);
  CHECK(m.upper == doctest::Approx(1e30));
  boost::asio::thread_pool pool(3);
  const auto m3 = sq::train(rows.data(), n, d, p, distance_type::l2, &pool);
  CHECK(m3.lower == m.lower);
  CHECK(m3.upper == m.upper);
  rows[3] = 0.5f;
  const auto c = sq::train(rows.data(), n, d, p, distance_type::cosine);
  CHECK(c.lower >= -1.0);
  CHECK(c.upper <= 1.0);
  CHECK(c.upper > 0.5);
  // A small sample draws sample_rate * 256 rows only.
  p.sample_rate = 1;
  const auto s = sq::train(rows.data(), n, d, p);
  CHECK(s.upper <= m3.upper);
  // encode_for_ivf normalises under cosine.
  std::vector<std::uint8_t> a(n * d), b(n * d);
  std::vector<float> normed(rows);
  for (std::size_t i = 0; i < n; ++i) {
    double s2 = 0;
    for (std::size_t t = 0; t < d; ++t) s2 += double(normed[i * d + t]) * normed[i * d + t];
    for (std::size_t t = 0; t < d; ++t) normed[i * d + t] = float(normed[i * d + t] / std::sqrt(s2));
  }
  rows[11] = 1.0f;
  normed[11] = 0;  // that row is recomputed below
  sq::encode_for_ivf(c, rows.data(), n, distance_type::cosine, a.data(), &pool);
  sq::encode(c, normed.data(), n, b.data());
  std::size_t diff = 0;
  for (std::size_t i = d * 2; i < n * d; ++i) diff += a[i] != b[i];
  CHECK(diff < n * d / 500);
}

TEST_CASE("SQ bad input") {
  const float rows[4] = {1, 2, 3, 4};
  sq::params p;
  p.num_bits = 4;
  CHECK_THROWS_WITH_AS(sq::train(rows, 2, 2, p), doctest::Contains("num_bits 4"), invalid_input_error);
  const float nan[2] = {std::numeric_limits<float>::quiet_NaN(), 1};
  CHECK_THROWS_WITH_AS(sq::train(nan, 1, 2), doctest::Contains("no finite training vectors"), invalid_input_error);
  sq::model none;
  none.dimension = 2;
  std::uint8_t c[2];
  CHECK_THROWS_WITH_AS(sq::encode(none, rows, 1, c), doctest::Contains("no bounds"), invalid_input_error);
  CHECK_THROWS_AS(sq::train(rows, 2, 0), invalid_input_error);
}

}  // TEST_SUITE("sq")

TEST_SUITE("rabitq") {

TEST_CASE("fast rotation is orthogonal (power-of-two and Kac dimensions); matrix rotation too") {
  for (std::size_t d : {8u, 32u, 128u, 24u, 40u, 96u, 200u}) {
    CAPTURE(d);
    for (auto rot : {rabitq::rotation_type::fast, rabitq::rotation_type::matrix}) {
      rabitq::params p;
      p.rotation = rot;
      p.seed = d;
      const auto m = rabitq::make(d, p);
      if (rot == rabitq::rotation_type::fast) CHECK(m.fast_rotation_signs.size() == d / 2);
      else CHECK(m.rotate_mat.size() == d * d);
      const auto a = gaussian(1, d, 100 + d), b = gaussian(1, d, 200 + d);
      std::vector<float> ra(d), rb(d);
      m.rotate(a.data(), ra.data());
      m.rotate(b.data(), rb.data());
      CHECK(simd::norm_sq(ra.data(), d) == doctest::Approx(simd::norm_sq(a.data(), d)).epsilon(1e-4));
      CHECK(simd::dot(ra.data(), rb.data(), d) ==
            doctest::Approx(simd::dot(a.data(), b.data(), d)).epsilon(1e-3).scale(double(d)));
      // Not the identity.
      double moved = 0;
      for (std::size_t i = 0; i < d; ++i) moved += std::fabs(ra[i] - a[i]);
      CHECK(moved > 0.1);
    }
  }
  // A matrix made for f16 holds f16-representable values.
  rabitq::params p;
  p.rotation = rabitq::rotation_type::matrix;
  const auto h = rabitq::make<f16>(16, p);
  for (double v : h.rotate_mat) CHECK(double(f16(float(v)).to_float()) == v);
}

TEST_CASE("the raw-query estimator is unbiased and tracks exact distances (l2, dot, cosine)") {
  const std::size_t d = 128, n = 3000, k = 4;
  const auto rows = low_rank_clustered(n, d, k, 1.0f, 8, 0.3f, 77);
  // Centroids: the cluster means, rows assigned to the nearest.
  const auto km = train_kmeans(rows.data(), n, d, k);
  for (auto dist : {distance_type::l2, distance_type::dot, distance_type::cosine}) {
    const std::string label = simd::distance_name(dist);
    CAPTURE(label);
    std::vector<float> cents = km.centroids;
    if (dist == distance_type::cosine) {
      std::vector<float> normed(rows);
      for (std::size_t i = 0; i < n; ++i) quantizer::normalise_row(normed.data() + i * d, d);
      cents = train_kmeans(normed.data(), n, d, k).centroids;
    }
    std::vector<std::uint32_t> part(n);
    std::vector<float> unit(rows);
    if (dist == distance_type::cosine)
      for (std::size_t i = 0; i < n; ++i) quantizer::normalise_row(unit.data() + i * d, d);
    simd::assign_nearest(dist == distance_type::dot ? distance_type::dot : distance_type::l2, unit.data(), n,
                         cents.data(), k, d, part.data());
    double sum_err = 0, sum_sq_err = 0, sum_exact = 0, sum_sq_exact = 0;
    std::size_t count = 0, outside = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      rabitq::params p;
      p.seed = seed;
      const auto m = rabitq::make(d, p);
      rabitq::encoded_rows enc;
      rabitq::encode_for_ivf(m, rows.data(), n, dist, cents.data(), k, part.data(), enc);
      const auto q = low_rank_clustered(1, d, k, 1.0f, 8, 0.3f, 500 + seed);
      std::vector<float> qn(q);
      quantizer::normalise_row(qn.data(), d);
      rabitq::query_estimator est(m, q.data(), dist);
      std::vector<float> rc(k * d);
      for (std::size_t c = 0; c < k; ++c) m.rotate(cents.data() + c * d, rc.data() + c * d);
      for (std::size_t i = 0; i < n; ++i) {
        const float* c = cents.data() + part[i] * d;
        float exact, dqc;
        if (dist == distance_type::l2) {
          exact = simd::l2(q.data(), rows.data() + i * d, d);
          dqc = simd::l2(q.data(), c, d);
        } else if (dist == distance_type::dot) {
          exact = 1.0f - simd::dot(q.data(), rows.data() + i * d, d);
          dqc = 1.0f - simd::dot(q.data(), c, d);
        } else {
          exact = simd::l2(qn.data(), unit.data() + i * d, d) - 1.0f;  // Lance: l2 of unit vectors, minus 1
          dqc = simd::l2(qn.data(), c, d);
        }
        const float qf = est.query_factor(dqc, rc.data() + part[i] * d);
        const float got = est.distance(est.binary_ip(enc.codes.data() + i * m.code_bytes()), enc.add_factors[i],
                                       enc.scale_factors[i], qf);
        // Lance's error bound: |estimate - exact| <= error factor * |q - c|.
        const float q_err = dist == distance_type::dot ? std::sqrt(simd::l2(q.data(), c, d))
                                                        : std::sqrt(std::max(dqc, 0.0f));
        outside += std::fabs(got - exact) > enc.error_factors[i] * q_err;
        sum_err += got - exact;
        sum_sq_err += double(got - exact) * (got - exact);
        sum_exact += exact;
        sum_sq_exact += double(exact) * exact;
        ++count;
      }
    }
    const double mean = sum_exact / double(count);
    const double spread = std::sqrt(std::max(0.0, sum_sq_exact / double(count) - mean * mean));
    const double bias = sum_err / double(count), rmse = std::sqrt(sum_sq_err / double(count));
    MESSAGE(std::string(simd::distance_name(dist)) << ": bias " << bias << ", rmse " << rmse
                                                   << ", spread of exact distances " << spread
                                                   << ", outside the error bound " << outside << " of " << count);
    // Unbiased: the mean error is within the noise of its own estimate.
    CHECK(std::fabs(bias) < 4.0 * rmse / std::sqrt(double(count)));
    // Informative: the error is smaller than how much distances vary, and the
    // stored error factors bound it for almost every row.
    CHECK(rmse < 0.7 * spread);
    CHECK(outside < count / 10);  // epsilon 1.9: a ~95% bound
  }
}

TEST_CASE("scan over transposed codes equals per-row estimates; pack / unpack round trips") {
  const std::size_t d = 64, k = 2;
  for (std::size_t n : {0u, 1u, 10u, 32u, 50u, 64u, 100u, 129u}) {
    CAPTURE(n);
    const auto rows = gaussian(n, d, 40 + n);
    std::vector<float> cents(k * d, 0.0f);
    for (std::size_t t = 0; t < d; ++t) cents[d + t] = 1.0f;
    std::vector<std::uint32_t> part(n);
    for (std::size_t i = 0; i < n; ++i) part[i] = std::uint32_t(i % 2);
    const auto m = rabitq::make(d);
    rabitq::encoded_rows enc;
    rabitq::encode_for_ivf(m, rows.data(), n, distance_type::l2, cents.data(), k, part.data(), enc);
    const std::size_t cb = m.code_bytes();
    std::vector<std::uint8_t> packed(n * cb), back(n * cb), tr(n * cb), tr2(n * cb);
    pack_rabit_codes(enc.codes.data(), n, cb, packed.data());
    unpack_rabit_codes(packed.data(), n, cb, back.data());
    CHECK(back == enc.codes);
    rabitq::packed_to_transposed(packed.data(), n, cb, tr.data());
    transpose_codes(enc.codes.data(), n, cb, tr2.data());
    CHECK(tr == tr2);
    const auto q = gaussian(1, d, 3);
    rabitq::query_estimator est(m, q.data(), distance_type::l2);
    std::vector<float> out(n);
    est.scan(tr.data(), n, enc.add_factors.data(), enc.scale_factors.data(), 0.5f, out.data());
    for (std::size_t i = 0; i < n; ++i)
      CHECK(out[i] == doctest::Approx(est.distance(est.binary_ip(enc.codes.data() + i * cb), enc.add_factors[i],
                                                   enc.scale_factors[i], 0.5f))
                          .epsilon(1e-5));
  }
  // The packed layout itself: block byte j holds rows PERM0[j] (low nibble) and
  // PERM0[j] + 16 (high nibble) of the code byte's low nibbles, byte 16 + j their
  // high nibbles.
  std::vector<std::uint8_t> codes(32);
  for (std::size_t r = 0; r < 32; ++r) codes[r] = std::uint8_t(r * 7 + 3);
  std::vector<std::uint8_t> packed(32);
  pack_rabit_codes(codes.data(), 32, 1, packed.data());
  for (std::size_t j = 0; j < 16; ++j) {
    const std::uint8_t a = codes[rabit_perm[j]], b = codes[rabit_perm[j] + 16];
    CHECK(packed[j] == std::uint8_t((a & 15) | ((b & 15) << 4)));
    CHECK(packed[16 + j] == std::uint8_t((a >> 4) | (b & 0xf0)));
  }
}

TEST_CASE("RaBitQ: deterministic per seed and thread count; residual-query factors; bad input") {
  const std::size_t d = 32, n = 1500;
  const auto rows = gaussian(n, d, 12);
  const std::vector<float> cents(d, 0.1f);
  const std::vector<std::uint32_t> part(n, 0);
  const auto a = rabitq::make(d), b = rabitq::make(d);
  CHECK(a.fast_rotation_signs == b.fast_rotation_signs);
  rabitq::params p;
  p.seed = 43;
  CHECK(rabitq::make(d, p).fast_rotation_signs != a.fast_rotation_signs);
  rabitq::encoded_rows e1, e3;
  boost::asio::thread_pool three(3);
  rabitq::encode_for_ivf(a, rows.data(), n, distance_type::l2, cents.data(), 1, part.data(), e1);
  rabitq::encode_for_ivf(a, rows.data(), n, distance_type::l2, cents.data(), 1, part.data(), e3, &three);
  CHECK(e1.codes == e3.codes);
  CHECK(e1.add_factors == e3.add_factors);
  CHECK(e1.scale_factors == e3.scale_factors);
  CHECK(e1.error_factors == e3.error_factors);
  // Residual-query factors (older LanceDB indexes): add = |r|^2; the estimator on the
  // residual query tracks exact distances.
  rabitq::model old = a;
  old.estimator = rabitq::estimator_type::residual_query;
  rabitq::encoded_rows eo;
  rabitq::encode_for_ivf(old, rows.data(), n, distance_type::l2, cents.data(), 1, part.data(), eo);
  CHECK(eo.error_factors.empty());
  const auto q = gaussian(1, d, 99);
  std::vector<float> qr(q);
  for (std::size_t t = 0; t < d; ++t) qr[t] -= cents[t];
  rabitq::query_estimator est(old, qr.data(), distance_type::l2);
  double se = 0, sx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<float> r(rows.begin() + std::ptrdiff_t(i * d), rows.begin() + std::ptrdiff_t((i + 1) * d));
    for (std::size_t t = 0; t < d; ++t) r[t] -= cents[t];
    CHECK(eo.add_factors[i] == doctest::Approx(simd::norm_sq(r.data(), d)).epsilon(1e-4));
    const float exact = simd::l2(q.data(), rows.data() + i * d, d);
    const float got = est.distance(est.binary_ip(eo.codes.data() + i * 4), eo.add_factors[i], eo.scale_factors[i],
                                   simd::l2(q.data(), cents.data(), d));
    se += double(got - exact) * (got - exact);
    sx += exact;
  }
  CHECK(std::sqrt(se / double(n)) < 0.3 * sx / double(n));
  CHECK_THROWS_WITH_AS(rabitq::make(20), doctest::Contains("divisible by 8"), invalid_input_error);
  p.num_bits = 2;
  CHECK_THROWS_AS(rabitq::make(32, p), unsupported_error);
  const std::vector<std::uint32_t> wrong(n, 5);
  CHECK_THROWS_WITH_AS(
      rabitq::encode_for_ivf(a, rows.data(), n, distance_type::l2, cents.data(), 1, wrong.data(), e1),
      doctest::Contains("row 0 has partition 5 of 1"), invalid_input_error);
  rabitq::model broken = a;
  broken.fast_rotation_signs.pop_back();
  CHECK_THROWS_WITH_AS(broken.validate(), doctest::Contains("fast_rotation_signs has 15 bytes, expected 16"),
                       invalid_input_error);
}

}  // TEST_SUITE("rabitq")

// ---- LanceDB fixtures ----------------------------------------------------------
// tests/fixtures/quantizer/*.json (make_fixtures.sh): 300 vectors, the IVF
// centroids and the quantizer storage LanceDB 0.39 wrote for them.
namespace {

// A tensor's values as floats (float16 tensors are stored as raw bytes).
std::vector<float> tensor_values(const nlohmann::json& t) {
  if (t.contains("values")) return t["values"].get<std::vector<float>>();
  const auto b = t["bytes"].get<std::vector<std::uint8_t>>();
  std::vector<float> out(b.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = f16::from_bits(std::uint16_t(b[2 * i] | (b[2 * i + 1] << 8))).to_float();
  return out;
}

struct quantizer_fixture {
  nlohmann::json j;
  bool half = false;  // float16 vectors, centroids and codebook
  std::size_t dim = 0;
  std::vector<float> vectors, centroids;
  std::vector<std::uint64_t> row_ids;
  std::vector<std::uint64_t> lengths;
  distance_type distance = distance_type::l2;

  explicit quantizer_fixture(const std::string& name) {
    std::ifstream f(std::string(LANCET_SOURCE_ROOT) + "/tests/fixtures/quantizer/" + name + ".json");
    REQUIRE(f.good());
    j = nlohmann::json::parse(f);
    dim = j["dim"];
    vectors = j["vectors"].get<std::vector<float>>();
    half = j["centroids"]["type"] == 1;
    centroids = tensor_values(j["centroids"]);
    row_ids = j["row_ids"].get<std::vector<std::uint64_t>>();
    lengths = j["partition_lengths"].get<std::vector<std::uint64_t>>();
    distance = simd::parse_distance_type(j["distance_type"].get<std::string>());
  }
  std::vector<std::uint8_t> bytes(const char* column) const { return j["columns"][column].get<std::vector<std::uint8_t>>(); }
  std::vector<float> floats(const char* column) const { return j["columns"][column].get<std::vector<float>>(); }
  // Vectors of file rows [begin, end), in file order.
  std::vector<float> rows(std::size_t begin, std::size_t end) const {
    std::vector<float> out;
    for (std::size_t i = begin; i < end; ++i)
      out.insert(out.end(), vectors.begin() + std::ptrdiff_t(row_ids[i] * dim),
                 vectors.begin() + std::ptrdiff_t((row_ids[i] + 1) * dim));
    return out;
  }
};

bool close(float a, float b, float rel, float abs) { return std::fabs(a - b) <= abs + rel * std::fabs(b); }

}  // namespace

TEST_SUITE("lancedb fixtures") {

TEST_CASE("RaBitQ: our codes, packing and factors equal LanceDB's for its rotation") {
  for (const char* name : {"rq_l2_32", "rq_l2_24", "rq_dot_24", "rq_cos_24", "rq_l2_24_f16", "rq_cos_24_f16"}) {
    const std::string label = name;
    CAPTURE(label);
    const quantizer_fixture fx(name);
    const auto& sm = fx.j["storage_metadata"];
    CHECK(sm["rotation_type"] == "fast");
    CHECK(sm["query_estimator"] == "raw_query");
    CHECK(sm["num_bits"] == 1);
    CHECK(sm["packed"] == true);
    CHECK(sm["code_dim"] == fx.dim);
    rabitq::model m;
    m.dimension = fx.dim;
    m.fast_rotation_signs = sm["fast_rotation_signs"].get<std::vector<std::uint8_t>>();
    CHECK(m.fast_rotation_signs.size() == 4 * fx.dim / 8);
    const auto codes = fx.bytes("_rabit_codes");
    const auto add = fx.floats("__add_factors"), scale = fx.floats("__scale_factors"),
               err = fx.floats("__error_factors");
    const std::size_t cb = fx.dim / 8;
    std::size_t off = 0, bad_bits = 0, bad_add = 0, bad_scale = 0, bad_err = 0;
    for (std::size_t p = 0; p < fx.lengths.size(); ++p) {
      const std::size_t len = fx.lengths[p];
      const auto rows = fx.rows(off, off + len);
      const std::vector<std::uint32_t> parts(len, std::uint32_t(p));
      rabitq::encoded_rows enc;
      if (fx.half) {
        const auto hr = convert<f16>(rows), hc = convert<f16>(fx.centroids);
        rabitq::encode_for_ivf(m, hr.data(), len, fx.distance, hc.data(), fx.lengths.size(), parts.data(), enc);
      } else {
        rabitq::encode_for_ivf(m, rows.data(), len, fx.distance, fx.centroids.data(), fx.lengths.size(),
                               parts.data(), enc);
      }
      std::vector<std::uint8_t> packed(len * cb);
      pack_rabit_codes(enc.codes.data(), len, cb, packed.data());
      std::vector<std::uint8_t> lance_rows(len * cb);
      unpack_rabit_codes(codes.data() + off * cb, len, cb, lance_rows.data());
      for (std::size_t i = 0; i < len * cb; ++i) bad_bits += std::size_t(std::popcount(unsigned(lance_rows[i] ^ enc.codes[i])));
      if (bad_bits == 0) CHECK(std::equal(packed.begin(), packed.end(), codes.begin() + std::ptrdiff_t(off * cb)));
      for (std::size_t i = 0; i < len; ++i) {
        bad_add += !close(enc.add_factors[i], add[off + i], 1e-3f, 1e-4f);
        bad_scale += !close(enc.scale_factors[i], scale[off + i], 1e-3f, 1e-4f);
        bad_err += !close(enc.error_factors[i], err[off + i], 1e-3f, 1e-4f);
      }
      off += len;
    }
    CHECK(off == fx.row_ids.size());
    MESSAGE(std::string(name) << ": differing bits " << bad_bits << ", factors off (add/scale/error) " << bad_add << "/"
                 << bad_scale << "/" << bad_err << " of " << off);
    CHECK(bad_bits <= off * fx.dim / 2000);
    CHECK(bad_add <= off / 100);
    CHECK(bad_scale <= off / 100);
    CHECK(bad_err <= off / 100);
  }
}

TEST_CASE("PQ: our codes equal LanceDB's for its codebook (8 and 4 bits; l2, dot, cosine)") {
  for (const char* name : {"pq_l2_16", "pq_dot_16", "pq_cos_16", "pq4_l2_16", "pq_l2_16_f16", "pq_cos_16_f16"}) {
    const std::string label = name;
    CAPTURE(label);
    const quantizer_fixture fx(name);
    const auto& sm = fx.j["storage_metadata"];
    CHECK(sm["transposed"] == true);
    pq::model<float> m;
    m.dimension = sm["dimension"];
    m.num_sub_vectors = sm["num_sub_vectors"];
    m.num_bits = sm["nbits"];
    m.distance = fx.distance == distance_type::dot ? distance_type::dot : distance_type::l2;
    m.codebook = tensor_values(fx.j["tensor"]);
    CHECK(fx.j["tensor"]["type"] == (fx.half ? 1 : 2));  // the codebook has the vectors' element type
    // Lance's tensor shape is [2^bits, dimension] over the [m][2^bits][d/m] values.
    CHECK(fx.j["tensor"]["shape"] == std::vector<std::size_t>{m.num_centroids(), m.dimension});
    m.validate();
    const auto codes = fx.bytes("__pq_code");
    const std::size_t cb = m.code_bytes();
    std::size_t off = 0, bad = 0;
    for (std::size_t p = 0; p < fx.lengths.size(); ++p) {
      const std::size_t len = fx.lengths[p];
      const auto rows = fx.rows(off, off + len);
      const std::vector<std::uint32_t> parts(len, std::uint32_t(p));
      std::vector<std::uint8_t> ours(len * cb), tr(len * cb);
      if (fx.half) {
        pq::model<f16> mh;
        mh.dimension = m.dimension;
        mh.num_sub_vectors = m.num_sub_vectors;
        mh.num_bits = m.num_bits;
        mh.distance = m.distance;
        mh.codebook = convert<f16>(m.codebook);
        const auto hr = convert<f16>(rows), hc = convert<f16>(fx.centroids);
        pq::encode_for_ivf(mh, hr.data(), len, fx.distance, hc.data(), fx.lengths.size(), parts.data(), ours.data());
      } else {
        pq::encode_for_ivf(m, rows.data(), len, fx.distance, fx.centroids.data(), fx.lengths.size(), parts.data(),
                           ours.data());
      }
      transpose_codes(ours.data(), len, cb, tr.data());
      for (std::size_t i = 0; i < len * cb; ++i) bad += tr[i] != codes[off * cb + i];
      off += len;
    }
    CHECK(off == fx.row_ids.size());
    MESSAGE(std::string(name) << ": differing code bytes " << bad << " of " << off * cb);
    CHECK(bad <= off * cb / 200);
  }
}

TEST_CASE("SQ: our bounds and codes equal LanceDB's") {
  const quantizer_fixture fx("sq_l2_16");
  const auto& sm = fx.j["storage_metadata"];
  const auto m = sq::train(fx.vectors.data(), fx.vectors.size() / fx.dim, fx.dim);
  CHECK(m.lower == sm["bounds"]["start"].get<double>());
  CHECK(m.upper == sm["bounds"]["end"].get<double>());
  const auto codes = fx.bytes("__sq_code");
  const auto rows = fx.rows(0, fx.row_ids.size());
  std::vector<std::uint8_t> ours(rows.size());
  sq::encode(m, rows.data(), fx.row_ids.size(), ours.data());
  CHECK(ours == codes);
}

}  // TEST_SUITE("lancedb fixtures")

TEST_CASE("train_for_ivf_in_place: train_for_ivf's codebook with no copy of the rows; max_sample_rows caps the sample") {
  // The IVF builder trains PQ on its own training rows in place, so that it holds no
  // second full copy of a 65,536-row sample as residuals.
  const std::size_t n = 5000, d = 32, k = 4;
  const auto rows = gaussian(n, d, 31);
  const std::vector<float> cents(rows.begin() + 10 * d, rows.begin() + std::ptrdiff_t((10 + k) * d));
  pq::params p;
  p.num_sub_vectors = 2;  // 16-value sub-vectors; 8 bits
  p.max_iters = 8;
  p.choose_iterate = false;  // in place or copied; the iterate check's own test trains in place too
  const auto same_codebook = [](const auto& a, const auto& b) {
    return a.codebook.size() == b.codebook.size() &&
           std::memcmp(a.codebook.data(), b.codebook.data(), a.codebook.size() * sizeof(a.codebook[0])) == 0;
  };
  for (auto dt : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
    INFO(simd::distance_name(dt));
    const auto a = pq::train_for_ivf(rows.data(), n, d, cents.data(), k, dt, p);
    auto work = rows;
    const auto b = pq::train_for_ivf_in_place(work.data(), n, d, cents.data(), k, dt, p);
    CHECK(same_codebook(a, b));
    const auto h = convert<f16>(rows);
    const auto hc = convert<f16>(cents);
    const auto ah = pq::train_for_ivf(h.data(), n, d, hc.data(), k, dt, p);
    auto hw = h;
    CHECK(same_codebook(ah, pq::train_for_ivf_in_place(hw.data(), n, d, hc.data(), k, dt, p)));
    if (dt == distance_type::l2) {  // every row kept in place, minus its nearest centroid
      for (std::size_t r : {std::size_t(0), std::size_t(777), n - 1}) {
        std::size_t best = 0;
        for (std::size_t c = 1; c < k; ++c)
          if (simd::l2(rows.data() + r * d, cents.data() + c * d, d) < simd::l2(rows.data() + r * d, cents.data() + best * d, d))
            best = c;
        for (std::size_t t = 0; t < d; ++t) CHECK(work[r * d + t] == rows[r * d + t] - cents[best * d + t]);
      }
    }
  }
  // A cap of 300 rows trains exactly on the 300 rows the sampler draws.
  pq::params capped = p;
  capped.max_sample_rows = 300;
  CHECK(capped.sample_size() == 300);
  const auto picked = quantizer::sample_rows(n, 300, p.seed);
  std::vector<float> sub;
  for (auto r : picked) sub.insert(sub.end(), rows.begin() + std::ptrdiff_t(r * d), rows.begin() + std::ptrdiff_t((r + 1) * d));
  const auto c1 = pq::train_for_ivf(rows.data(), n, d, cents.data(), k, distance_type::l2, capped);
  CHECK(same_codebook(c1, pq::train_for_ivf(sub.data(), 300, d, cents.data(), k, distance_type::l2, p)));
  CHECK_FALSE(same_codebook(c1, pq::train_for_ivf(rows.data(), n, d, cents.data(), k, distance_type::l2, p)));
  auto work = rows;
  CHECK(same_codebook(c1, pq::train_for_ivf_in_place(work.data(), n, d, cents.data(), k, distance_type::l2, capped)));
  // Below the 2^bits rows a codebook needs: refused.
  capped.max_sample_rows = 255;
  CHECK_THROWS_WITH_AS(pq::train_for_ivf(rows.data(), n, d, cents.data(), k, distance_type::l2, capped),
                       doctest::Contains("max_sample_rows 255"), invalid_input_error);
}
