// IVF search: top-k order and ties, prefilters, IVF_FLAT against brute force, recall
// of IVF_PQ / IVF_SQ / IVF_RQ with and without refine, determinism across thread
// counts, element types, hamming, bad input, and LanceDB's own search on its index.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "lancet/index/kmeans/kmeans.hpp"
#include "lancet/index/search/ivf_searcher.hpp"
#include "lancet/index/search/vector_index.hpp"

#include "support/nearest.hpp"
#include "support/vector_batch.hpp"

using namespace lancet;
using namespace lancet::index;
using lancet::simd::distance_type;
using lancet::simd::f16;

namespace {

using lancet::testing::recall;

// `clusters` groups of `per` rows (sigma around centres uniform in [-1, 1]^d), rows
// in cluster order, and one query per cluster near its centre: the 10 nearest rows of
// a query are (mostly) its cluster, a recall test with an answer.
struct grouped {
  std::vector<float> rows, queries;
};
grouped small_clusters(std::size_t clusters, std::size_t per, std::size_t d, float sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, sigma);
  grouped out;
  out.rows.resize(clusters * per * d);
  out.queries.resize(clusters * d);
  for (std::size_t c = 0; c < clusters; ++c) {
    std::vector<float> centre(d);
    for (auto& v : centre) v = u(rng);
    for (std::size_t i = 0; i < per; ++i)
      for (std::size_t t = 0; t < d; ++t) out.rows[(c * per + i) * d + t] = centre[t] + g(rng);
    for (std::size_t t = 0; t < d; ++t) out.queries[c * d + t] = centre[t] + g(rng) * 0.5f;
  }
  return out;
}

enum class kind { flat, pq, sq, rq };

// An IVF index built in memory from the quantizers: k-means centroids, rows grouped
// by partition (row id = row number), codes and factors per partition.
struct built {
  matrix centroids;
  quantizer_params q;
  std::vector<partition_contents> parts;
};

built build(kind kd, distance_type dist, const std::vector<float>& rows, std::size_t d, std::size_t k,
            std::size_t m = 8, std::uint32_t pq_bits = 8) {
  const std::size_t n = rows.size() / d;
  kmeans_params kp;
  kp.distance = dist;
  kp.max_iters = 20;
  const auto km = train_kmeans(rows.data(), n, d, k, kp);
  std::vector<std::uint32_t> part(n);
  assign_partitions(km, rows.data(), n, part.data());
  built b;
  b.centroids = matrix::of(km.centroids, k, d);
  std::vector<std::uint8_t> codes;
  std::size_t cb = 0;
  rabitq::encoded_rows enc;
  switch (kd) {
    case kind::flat: {
      std::vector<float> stored(rows);
      if (dist == distance_type::cosine)
        for (std::size_t i = 0; i < n; ++i) quantizer::normalise_row(stored.data() + i * d, d);
      cb = d * 4;
      codes.resize(n * cb);
      std::memcpy(codes.data(), stored.data(), codes.size());
      b.q = flat::to_params<float>(d);
      break;
    }
    case kind::pq: {
      pq::params p;
      p.num_sub_vectors = m;
      p.num_bits = pq_bits;
      p.max_iters = 15;
      p.choose_iterate = false;  // searches Lance's codebook: the iterate check is test_quantizer's
      const auto model = pq::train_for_ivf(rows.data(), n, d, km.centroids.data(), k, dist, p);
      cb = model.code_bytes();
      codes.resize(n * cb);
      pq::encode_for_ivf(model, rows.data(), n, dist, km.centroids.data(), k, part.data(), codes.data());
      b.q = pq::to_params(model);
      break;
    }
    case kind::sq: {
      const auto model = sq::train(rows.data(), n, d, {}, dist);
      cb = d;
      codes.resize(n * cb);
      sq::encode_for_ivf(model, rows.data(), n, dist, codes.data());
      b.q = sq::to_params(model);
      break;
    }
    case kind::rq: {
      const auto model = rabitq::make(d);
      cb = model.code_bytes();
      rabitq::encode_for_ivf(model, rows.data(), n, dist, km.centroids.data(), k, part.data(), enc);
      codes = enc.codes;
      b.q = rabitq::to_params(model);
      break;
    }
  }
  b.parts.resize(k);
  for (std::size_t i = 0; i < n; ++i) {
    auto& pc = b.parts[part[i]];
    pc.row_ids.push_back(i);
    pc.codes.append(codes.data() + i * cb, cb);
    if (kd == kind::rq) {
      pc.add_factors.push_back(enc.add_factors[i]);
      pc.scale_factors.push_back(enc.scale_factors[i]);
      pc.error_factors.push_back(enc.error_factors[i]);
    }
  }
  return b;
}

ivf_searcher searcher_of(const built& b, distance_type dist) { return ivf_searcher(dist, b.centroids, b.q, b.parts); }

vector_fetch fetch_from(const std::vector<float>& rows, std::size_t d) {
  return [&rows, d](std::span<const std::uint64_t> ids, double* out) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::size_t t = 0; t < d; ++t) out[i * d + t] = rows[ids[i] * d + t];
  };
}

}  // namespace

TEST_CASE("topk: smallest first, lowest row id wins ties, NaN never enters") {
  index::topk t(3);
  t.push(2.0f, 10);
  t.push(1.0f, 7);
  t.push(std::numeric_limits<float>::quiet_NaN(), 1);
  t.push(1.0f, 5);
  t.push(1.0f, 6);
  t.push(0.5f, 99);
  const auto s = t.sorted();
  REQUIRE(s.size() == 3);
  CHECK(s[0] == neighbor{99, 0.5f});
  CHECK(s[1] == neighbor{5, 1.0f});
  CHECK(s[2] == neighbor{6, 1.0f});
  index::topk u(3);
  u.push(1.0f, 4);
  u.push(std::numeric_limits<float>::infinity(), 0);
  t.merge(u);
  const auto m = t.sorted();
  CHECK(m[1] == neighbor{4, 1.0f});
  CHECK(m[2] == neighbor{5, 1.0f});
  index::topk none(0);
  none.push(1.0f, 1);
  CHECK(none.sorted().empty());
}

TEST_CASE("row_filter: allow-lists and predicates") {
  const auto a = row_filter::allow({5, 3, 3, 9});
  CHECK(a.ids() == std::vector<std::uint64_t>{3, 5, 9});
  CHECK(a.contains(5));
  CHECK_FALSE(a.contains(4));
  const auto w = row_filter::where([](std::uint64_t id) { return id % 2 == 0; });
  CHECK(w.contains(8));
  CHECK_FALSE(w.contains(7));
  CHECK_THROWS_AS(row_filter::where(nullptr), invalid_input_error);
}

TEST_CASE("IVF_FLAT with every partition probed equals brute force (l2, cosine, dot), ties by row id") {
  const std::size_t d = 16, n = 2000, k = 8;
  auto rows = testing::clustered<std::mt19937_64>(n, d, 10, 0.2f, 3);
  // Duplicates: rows 100..104 repeat row 7, so equal distances must order by row id.
  for (std::size_t r = 100; r < 105; ++r) std::copy(rows.begin() + 7 * d, rows.begin() + 8 * d, rows.begin() + std::ptrdiff_t(r * d));
  for (auto dist : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
    const std::string label = simd::distance_name(dist);
    CAPTURE(label);
    const auto b = build(kind::flat, dist, rows, d, k);
    const auto s = searcher_of(b, dist);
    search_params sp;
    sp.k = 12;
    sp.nprobes = k;
    for (std::size_t qi : {7u, 42u, 1500u}) {
      std::vector<float> q(rows.begin() + std::ptrdiff_t(qi * d), rows.begin() + std::ptrdiff_t((qi + 1) * d));
      q[0] += 0.01f;
      const auto got = s.search(q.data(), d, sp);
      const auto want = brute_force(dist, q.data(), rows.data(), n, d, sp.k);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].row_id == want[i].row_id);
        CHECK(got[i].distance == doctest::Approx(want[i].distance).epsilon(1e-4).scale(1.0));
      }
      if (qi == 7 && dist != distance_type::dot) {  // the duplicates come out in row-id order
        std::vector<std::uint64_t> ids;
        for (const auto& nb : got) ids.push_back(nb.row_id);
        const auto at = std::find(ids.begin(), ids.end(), 7u);
        REQUIRE(at + 5 < ids.end());
        CHECK(std::vector<std::uint64_t>(at, at + 6) == std::vector<std::uint64_t>{7, 100, 101, 102, 103, 104});
      }
    }
  }
}

TEST_CASE("nprobes: partitions nearest the query first; fewer probes search fewer rows") {
  const std::size_t d = 8, n = 1000, k = 10;
  const auto rows = testing::clustered<std::mt19937_64>(n, d, 10, 0.05f, 9);
  const auto b = build(kind::flat, distance_type::l2, rows, d, k);
  const auto s = searcher_of(b, distance_type::l2);
  const auto pr = s.probe(rows.data(), d, 3);
  REQUIRE(pr.size() == 3);
  CHECK(pr[0].second <= pr[1].second);
  CHECK(pr[1].second <= pr[2].second);
  CHECK(s.probe(rows.data(), d, 1000).size() == k);  // clamped
  search_params sp;
  sp.k = 2000;
  sp.nprobes = 1;
  const auto one = s.search(rows.data(), d, sp);
  CHECK(one.size() == b.parts[pr[0].first].size());
  sp.nprobes = 0;
  CHECK_THROWS_WITH_AS(s.search(rows.data(), d, sp), doctest::Contains("nprobes must be positive"),
                       invalid_input_error);
}

TEST_CASE("prefilter: only allowed rows come back, and all the nearest allowed ones") {
  const std::size_t d = 16, n = 3000, k = 6;
  const auto rows = testing::clustered<std::mt19937_64>(n, d, 6, 0.3f, 4);
  const auto b = build(kind::flat, distance_type::l2, rows, d, k);
  const auto s = searcher_of(b, distance_type::l2);
  std::vector<std::uint64_t> allowed;
  for (std::uint64_t i = 0; i < n; i += 7) allowed.push_back(i);
  const auto f = row_filter::allow(allowed);
  search_params sp;
  sp.k = 20;
  sp.nprobes = k;
  sp.filter = &f;
  const auto got = s.search(rows.data() + 3 * d, d, sp);
  const auto want = brute_force(distance_type::l2, rows.data() + 3 * d, rows.data(), n, d, 20, nullptr, &f);
  REQUIRE(got.size() == 20);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].row_id % 7 == 0);
    CHECK(got[i].row_id == want[i].row_id);
  }
  // A filter that allows nothing returns nothing; a predicate works the same.
  const auto nothing = row_filter::allow({});
  sp.filter = &nothing;
  CHECK(s.search(rows.data(), d, sp).empty());
  const auto odd = row_filter::where([](std::uint64_t id) { return id % 2 == 1; });
  sp.filter = &odd;
  for (const auto& nb : s.search(rows.data(), d, sp)) CHECK(nb.row_id % 2 == 1);
}

TEST_CASE("IVF_PQ / IVF_SQ / IVF_RQ: recall@10 against exact search at nprobes 8 of 16; refine re-ranks exactly") {
  const std::size_t d = 64, k = 16, nq = 40;
  const auto data = small_clusters(600, 10, d, 0.6f, 5);
  const auto& rows = data.rows;
  const std::size_t n = rows.size() / d;
  std::vector<float> queries(data.queries.begin(), data.queries.begin() + std::ptrdiff_t(nq * d));
  for (auto kd : {kind::pq, kind::sq, kind::rq}) {
    for (auto dist : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
      const std::string label = std::string(kd == kind::pq ? "pq" : kd == kind::sq ? "sq" : "rq") + "/" +
                                simd::distance_name(dist);
      CAPTURE(label);
      const auto b = build(kd, dist, rows, d, k);
      const auto s = searcher_of(b, dist);
      search_params sp;
      sp.k = 10;
      sp.nprobes = 8;
      double r0 = 0, r1 = 0;
      for (std::size_t qi = 0; qi < nq; ++qi) {
        const float* q = queries.data() + qi * d;
        const auto truth = brute_force(dist, q, rows.data(), n, d, 10);
        sp.refine_factor = 0;
        r0 += recall(truth, s.search(q, d, sp));
        sp.refine_factor = 5;
        sp.fetch = fetch_from(rows, d);
        const auto refined = s.search(q, d, sp);
        r1 += recall(truth, refined);
        // Refined distances are exact.
        for (const auto& nb : refined) {
          std::vector<double> qd(q, q + d), v(rows.begin() + std::ptrdiff_t(nb.row_id * d),
                                              rows.begin() + std::ptrdiff_t((nb.row_id + 1) * d));
          CHECK(nb.distance == doctest::Approx(exact_distance(dist, qd.data(), v.data(), d)).epsilon(1e-5));
        }
        sp.fetch = nullptr;
      }
      r0 /= double(nq);
      r1 /= double(nq);
      MESSAGE(label << ": recall@10 " << r0 << ", with refine 5: " << r1);
      CHECK(r0 > (kd == kind::rq ? 0.65 : 0.75));
      CHECK(r1 > 0.85);
      CHECK(r1 >= r0 - 0.02);
    }
  }
}

TEST_CASE("results are identical for any thread count; search_many equals one by one") {
  const std::size_t d = 16, n = 4000, k = 12;
  const auto rows = testing::clustered<std::mt19937_64>(n, d, 12, 0.3f, 8);
  for (auto kd : {kind::flat, kind::pq, kind::rq}) {
    const auto b = build(kd, distance_type::l2, rows, d, k);
    const auto s = searcher_of(b, distance_type::l2);
    boost::asio::thread_pool pool(3);
    search_params sp;
    sp.k = 15;
    sp.nprobes = 6;
    const auto a = s.search(rows.data() + 11 * d, d, sp);
    sp.pool = &pool;
    // The automatic split (default cutoff: these partitions are small, no split),
    // always, and at a cutoff inside the probed bytes: the same as one thread.
    for (std::size_t cutoff : {search_params::default_split_min_bytes, std::size_t(0), std::size_t(300) * code_bytes(b.q),
                               std::numeric_limits<std::size_t>::max()}) {
      sp.split_min_bytes = cutoff;
      CHECK(s.search(rows.data() + 11 * d, d, sp) == a);
    }
    const auto many = s.search_many(rows.data(), 20, d, sp);
    sp.pool = nullptr;
    for (std::size_t i = 0; i < 20; ++i) CHECK(many[i] == s.search(rows.data() + i * d, d, sp));
    // A searcher of several segments (vector_index.hpp) batches the same way.
    const auto s2 = std::make_shared<ivf_searcher>(distance_type::l2, b.centroids, b.q, b.parts);
    using frag_lists = std::vector<std::vector<std::uint64_t>>;
    const segmented_searcher one_seg(std::vector<std::shared_ptr<ivf_searcher>>{s2}, frag_lists(1, {0}), false);
    const segmented_searcher two_segs(std::vector<std::shared_ptr<ivf_searcher>>{s2, s2}, frag_lists(2, {0}), false);
    for (const auto* seg : {&one_seg, &two_segs}) {
      sp.pool = &pool;
      const auto seg_many = seg->search_many(rows.data(), 37, d, sp);
      sp.pool = nullptr;
      REQUIRE(seg_many.size() == 37);
      for (std::size_t i = 0; i < 37; ++i) CHECK(seg_many[i] == seg->search(rows.data() + i * d, d, sp));
    }
  }
}

namespace {

// The k nearest rows of every partition by the quantizers' reference scans (full
// f32 table sums, scalar SQ formula, RaBitQ's unfiltered scan): what the searcher's
// kernels (u8-filtered PQ / RaBitQ scans, SIMD SQ sums, threads) must reproduce
// exactly, distances included.
std::vector<neighbor> reference_search(kind kd, distance_type dist, const built& b, const ivf_searcher& s,
                                       const float* query, std::size_t d, std::size_t kk) {
  std::vector<double> raw(query, query + d), used(raw);
  if (dist == distance_type::cosine) quantizer::normalise_row(used.data(), d);
  const std::size_t np = b.parts.size();
  const auto probes = s.probe(query, d, np);
  std::vector<float> cents(np * d);
  for (std::size_t i = 0; i < cents.size(); ++i) cents[i] = static_cast<float>(b.centroids.at(i / d, i % d));
  index::topk best(kk);
  for (const auto& [p, dist_q_c] : probes) {
    const auto& pc = b.parts[p];
    const std::size_t n = pc.size();
    if (n == 0) continue;
    std::vector<float> out(n);
    const float* cent = cents.data() + std::size_t(p) * d;
    switch (kd) {
      case kind::flat:
        flat::distances(dist, used.data(), reinterpret_cast<const float*>(pc.codes.data()), n, d, out.data());
        break;
      case kind::pq: {
        const auto model = pq::from_params<float>(std::get<pq_params>(b.q), dist);
        if (pq::uses_residual(dist)) {
          const auto table = pq::residual_table(model, pq::query_term(model, used.data()), pq::partition_term(model, cent),
                                                used.data(), cent);
          table.scan_rows(pc.codes.data(), n, out.data());
        } else {
          pq::distance_table(model, used.data()).scan_rows(pc.codes.data(), n, out.data());
        }
        break;
      }
      case kind::sq: {
        const auto model = sq::from_params(std::get<sq_params>(b.q));
        const sq::distance_estimator est(model, used.data(), dist);
        const float range = static_cast<float>(model.upper - model.lower), range_sq = range * range;
        for (std::size_t r = 0; r < n; ++r) {
          if (dist == distance_type::dot) {  // the dequantized estimate: unchanged scalar path
            out[r] = est.distance(pc.codes.data() + r * d);
            continue;
          }
          std::uint32_t v = 0;
          for (std::size_t i = 0; i < d; ++i) {
            const std::int32_t t = std::int32_t(pc.codes[r * d + i]) - std::int32_t(est.query_code()[i]);
            v += std::uint32_t(t * t);
          }
          out[r] = static_cast<float>(v) * range_sq / 65025.0f;
        }
        break;
      }
      case kind::rq: {
        const auto model = rabitq::from_params(std::get<rq_params>(b.q));
        const rabitq::query_estimator est(model, raw.data(), dist);
        std::vector<float> rc(d);
        model.rotate(cent, rc.data());
        std::vector<std::uint8_t> tr(pc.codes.size());
        transpose_codes(pc.codes.data(), n, model.code_bytes(), tr.data());
        est.scan(tr.data(), n, pc.add_factors.data(), pc.scale_factors.data(), est.query_factor(dist_q_c, rc.data()),
                 out.data());
        break;
      }
    }
    for (std::size_t r = 0; r < n; ++r) best.push(out[r], pc.row_ids[r]);
  }
  return best.sorted();
}

}  // namespace

TEST_CASE("scan kernels equal the reference scans (PQ 8 / 4 bits, SQ, RQ, flat; l2, cosine, dot), 1 and 2 threads, batched") {
  const std::size_t d = 32, k = 5;
  auto rows = testing::clustered<std::mt19937_64>(2400, d, 8, 0.4f, 21);
  // Ties: 300 rows repeated three times (same codes, same distances: row id decides).
  for (std::size_t r = 0; r < 300; ++r)
    for (int rep = 0; rep < 2; ++rep) rows.insert(rows.end(), rows.begin() + std::ptrdiff_t(r * d), rows.begin() + std::ptrdiff_t((r + 1) * d));
  const std::size_t n = rows.size() / d;
  const auto queries = testing::clustered<std::mt19937_64>(6, d, 3, 0.5f, 22);
  boost::asio::thread_pool pool(2), pool1(1);
  struct variant {
    kind kd;
    std::uint32_t bits;
    const char* name;
  };
  for (const variant v : {variant{kind::pq, 8, "pq8"}, variant{kind::pq, 4, "pq4"}, variant{kind::sq, 8, "sq"},
                          variant{kind::rq, 1, "rq"}, variant{kind::flat, 0, "flat"}}) {
    for (auto dist : {distance_type::l2, distance_type::cosine, distance_type::dot}) {
      auto b = build(v.kd, dist, rows, d, k, 8, v.kd == kind::pq ? v.bits : 8);
      // Two empty partitions, centroids far away (probed last).
      std::vector<float> cents(b.centroids.rows * d + 2 * d);
      for (std::size_t i = 0; i < b.centroids.rows * d; ++i) cents[i] = static_cast<float>(b.centroids.at(i / d, i % d));
      for (std::size_t i = b.centroids.rows * d; i < cents.size(); ++i) cents[i] = 40.0f + float(i % 3);
      b.centroids = matrix::of(cents, k + 2, d);
      b.parts.resize(k + 2);
      const auto s = searcher_of(b, dist);
      for (std::size_t kk : {std::size_t(1), std::size_t(10), std::size_t(100), n + 7}) {
        for (std::size_t qi = 0; qi < 6; ++qi) {
          // Queries near the data, and rows themselves (exact duplicates tie).
          const float* q = qi < 3 ? queries.data() + qi * d : rows.data() + (qi * 50) * d;
          CAPTURE(v.name);
          CAPTURE(simd::distance_name(dist));
          CAPTURE(kk);
          CAPTURE(qi);
          const auto want = reference_search(v.kd, dist, b, s, q, d, kk);
          CHECK(want.size() == std::min(kk, n));
          search_params sp;
          sp.k = kk;
          sp.nprobes = k + 2;
          const auto one = s.search(q, d, sp);
          CHECK(one == want);
          sp.pool = &pool;
          sp.split_min_bytes = 0;  // always split (these partitions are far below the default)
          CHECK(s.search(q, d, sp) == want);
          sp.nprobes = 3;  // some partitions: 1 and 2 threads agree
          const auto two = s.search(q, d, sp);
          sp.pool = nullptr;
          CHECK(two == s.search(q, d, sp));
        }
      }
      // Batched on 1 and 2 threads equals one by one: no query, one (k > rows), and
      // several (l2: 67, two queries a chunk, the last chunk short; the chunking does
      // not depend on the metric, so the others take 12, one a chunk).
      search_params sp;
      sp.k = 10;
      sp.nprobes = 4;
      const std::size_t nq = dist == distance_type::l2 ? 67 : 12;
      std::vector<std::vector<neighbor>> one_by_one;
      std::vector<float> many_q;
      for (std::size_t i = 0; i < nq; ++i) {
        const float* r = rows.data() + i * 13 * d;
        one_by_one.push_back(s.search(r, d, sp));
        many_q.insert(many_q.end(), r, r + d);
      }
      for (auto* pl : {&pool1, &pool}) {
        search_params bp = sp;
        bp.pool = pl;
        CHECK(s.search_many(many_q.data(), 0, d, bp).empty());
        CHECK(s.search_many(many_q.data(), nq, d, bp) == one_by_one);
        bp.k = n + 7;
        sp.k = n + 7;
        const auto big = s.search_many(many_q.data(), 1, d, bp);
        REQUIRE(big.size() == 1);
        CHECK(big[0] == s.search(many_q.data(), d, sp));
        sp.k = 10;
      }
    }
  }
}

TEST_CASE("element types: f16 and f64 queries and vectors; hamming over uint8 codes") {
  const std::size_t d = 16, n = 800, k = 4;
  const auto rows = testing::clustered<std::mt19937_64>(n, d, 4, 0.3f, 12);
  // f16 vectors stored flat: the query is cast to f16 as Lance does.
  const auto km = train_kmeans(rows.data(), n, d, k);
  std::vector<std::uint32_t> part(n);
  assign_partitions(km, rows.data(), n, part.data());
  std::vector<partition_contents> parts(k), parts64(k);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<f16> h(d);
    std::vector<double> w(d);
    for (std::size_t t = 0; t < d; ++t) {
      h[t] = f16(rows[i * d + t]);
      w[t] = rows[i * d + t];
    }
    parts[part[i]].row_ids.push_back(i);
    parts[part[i]].codes.append(h.data(), d * 2);
    parts64[part[i]].row_ids.push_back(i);
    parts64[part[i]].codes.append(w.data(), d * 8);
  }
  const auto cm = matrix::of(km.centroids, k, d);
  ivf_searcher sh(distance_type::l2, cm, flat::to_params<f16>(d), parts);
  ivf_searcher sd(distance_type::l2, cm, flat::to_params<double>(d), parts64);
  search_params sp;
  sp.k = 5;
  sp.nprobes = k;
  std::vector<f16> qh(rows.begin(), rows.begin() + d);
  for (std::size_t t = 0; t < d; ++t) qh[t] = f16(rows[t]);
  const auto a = sh.search(qh.data(), d, sp);
  const auto b = sd.search(rows.data(), d, sp);
  REQUIRE(a.size() == 5);
  CHECK(a[0].row_id == 0);
  CHECK(b[0].row_id == 0);
  CHECK(recall(b, a) >= 0.8);

  // Hamming: uint8 codes, uint8 centroids.
  std::mt19937_64 rng(2);
  const std::size_t nb = 8;
  std::vector<std::uint8_t> codes(500 * nb);
  for (auto& c : codes) c = std::uint8_t(rng());
  std::vector<std::uint8_t> cents(codes.begin(), codes.begin() + 2 * nb);
  std::vector<partition_contents> hp(2);
  for (std::size_t i = 0; i < 500; ++i) {
    const auto h0 = simd::hamming(codes.data() + i * nb, cents.data(), nb);
    const auto h1 = simd::hamming(codes.data() + i * nb, cents.data() + nb, nb);
    auto& pc = hp[h1 < h0 ? 1 : 0];
    pc.row_ids.push_back(i);
    pc.codes.append(codes.data() + i * nb, nb);
  }
  ivf_searcher hs(distance_type::hamming, matrix::of(cents, 2, nb), flat::to_params<std::uint8_t>(nb), hp);
  sp.nprobes = 2;
  const auto hh = hs.search(codes.data() + 9 * nb, nb, sp);
  const auto hw = brute_force(distance_type::hamming, codes.data() + 9 * nb, codes.data(), 500, nb, 5);
  CHECK(hh == hw);
  CHECK(hh[0] == neighbor{9, 0.0f});
  const float bad[8] = {1.5f, 0, 0, 0, 0, 0, 0, 0};
  CHECK_THROWS_WITH_AS(hs.search(bad, nb, sp), doctest::Contains("hamming query holds bytes"), invalid_input_error);
}

TEST_CASE("bad input: dimension, refine without vectors, zero cosine query, mismatched parts") {
  const std::size_t d = 8, n = 600, k = 4;
  const auto rows = testing::clustered<std::mt19937_64>(n, d, 4, 0.3f, 1);
  const auto b = build(kind::pq, distance_type::cosine, rows, d, k, 4);
  const auto s = searcher_of(b, distance_type::cosine);
  search_params sp;
  CHECK_THROWS_WITH_AS(s.search(rows.data(), 7, sp), doctest::Contains("the query has 7 values, the index 8"),
                       invalid_input_error);
  sp.refine_factor = 2;
  CHECK_THROWS_WITH_AS(s.search(rows.data(), d, sp), doctest::Contains("refine_factor needs the original vectors"),
                       invalid_input_error);
  sp.refine_factor = 0;
  const std::vector<float> zero(d, 0.0f);
  CHECK_THROWS_WITH_AS(s.search(zero.data(), d, sp), doctest::Contains("non-zero norm"), invalid_input_error);
  sp.k = 0;
  CHECK(s.search(rows.data(), d, sp).empty());
  auto parts = b.parts;
  parts.pop_back();
  CHECK_THROWS_WITH_AS(ivf_searcher(distance_type::cosine, b.centroids, b.q, parts),
                       doctest::Contains("3 partitions for 4 centroids"), invalid_input_error);
  auto broken = b.parts;
  broken[0].codes.resize(broken[0].codes.size() - 1);
  const ivf_searcher sb(distance_type::cosine, b.centroids, b.q, broken);
  sp.k = 10;
  sp.nprobes = k;
  CHECK_THROWS_AS(sb.search(rows.data(), d, sp), corrupt_error);
}

// ---- LanceDB's own search over its own index ---------------------------------------
// tests/fixtures/quantizer/*.json: the index LanceDB 0.39 built over 300 vectors and
// the 10 nearest rows LanceDB's vectorSearch returned for six queries with every
// partition probed. Our searcher reads the same index data and must agree.
namespace {

std::vector<float> values_of(const nlohmann::json& t) {
  if (t.contains("values")) return t["values"].get<std::vector<float>>();
  const auto b = t["bytes"].get<std::vector<std::uint8_t>>();  // float16
  std::vector<float> out(b.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = f16::from_bits(std::uint16_t(b[2 * i] | (b[2 * i + 1] << 8))).to_float();
  return out;
}

template <class T>
matrix matrix_of(const std::vector<float>& v, std::size_t rows, std::size_t cols, bool half) {
  if (!half) return matrix::of(v, rows, cols);
  std::vector<f16> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = f16(v[i]);
  return matrix::of(h, rows, cols);
}

struct lance_index {
  nlohmann::json j;
  bool half = false;
  std::size_t dim = 0;
  distance_type distance = distance_type::l2;
  std::unique_ptr<ivf_searcher> searcher;
  std::string type;
  std::map<std::uint64_t, std::size_t> position;  // row id -> row number within its partition

  explicit lance_index(const std::string& name) {
    std::ifstream f(std::string(LANCET_SOURCE_ROOT) + "/tests/fixtures/quantizer/" + name + ".json");
    REQUIRE(f.good());
    j = nlohmann::json::parse(f);
    dim = j["dim"];
    distance = simd::parse_distance_type(j["distance_type"].get<std::string>());
    half = j["centroids"]["type"] == 1;
    const auto cents = values_of(j["centroids"]);
    const auto lengths = j["partition_lengths"].get<std::vector<std::size_t>>();
    const auto ids = j["row_ids"].get<std::vector<std::uint64_t>>();
    const auto& sm = j["storage_metadata"];
    const auto& cols = j["columns"];
    quantizer_params q;
    std::vector<std::uint8_t> codes;
    std::size_t cb = 0;
    if (cols.contains("flat")) {
      type = "flat";
      q = flat::to_params<float>(dim);
      codes = cols["flat"].get<std::vector<std::uint8_t>>();
      cb = dim * 4;
    } else if (cols.contains("__pq_code")) {
      type = "pq";
      pq_params p;
      p.num_sub_vectors = sm["num_sub_vectors"];
      p.num_bits = sm["nbits"];
      p.dimension = sm["dimension"];
      const auto cbk = values_of(j["tensor"]);
      p.codebook = matrix_of<float>(cbk, cbk.size() / (dim / p.num_sub_vectors), dim / p.num_sub_vectors, half);
      cb = p.code_bytes();
      q = p;
      codes = cols["__pq_code"].get<std::vector<std::uint8_t>>();
    } else if (cols.contains("__sq_code")) {
      type = "sq";
      q = sq_params{std::uint32_t(dim), 8, sm["bounds"]["start"].get<double>(), sm["bounds"]["end"].get<double>()};
      codes = cols["__sq_code"].get<std::vector<std::uint8_t>>();
      cb = dim;
    } else {
      type = "rq";
      rq_params p;
      p.code_dim = sm["code_dim"];
      p.fast_rotation_signs = sm["fast_rotation_signs"].get<std::vector<std::uint8_t>>();
      p.query_estimator = sm["query_estimator"];
      q = p;
      codes = cols["_rabit_codes"].get<std::vector<std::uint8_t>>();
      cb = dim / 8;
    }
    std::vector<partition_contents> parts(lengths.size());
    std::size_t off = 0;
    for (std::size_t p = 0; p < lengths.size(); ++p) {
      const std::size_t len = lengths[p];
      auto& pc = parts[p];
      pc.row_ids.assign(ids.begin() + std::ptrdiff_t(off), ids.begin() + std::ptrdiff_t(off + len));
      for (std::size_t i = 0; i < len; ++i) position[ids[off + i]] = i;
      std::vector<std::uint8_t> rows(len * cb);
      const std::uint8_t* src = codes.data() + off * cb;
      if (type == "pq") untranspose_codes(src, len, cb, rows.data());  // Lance stores [code_bytes][n]
      else if (type == "rq") unpack_rabit_codes(src, len, cb, rows.data());  // fast-scan blocks
      else std::copy(src, src + len * cb, rows.begin());
      pc.codes.append(rows.data(), rows.size());
      if (type == "rq") {
        for (const char* c : {"__add_factors", "__scale_factors", "__error_factors"}) {
          const auto v = cols[c].get<std::vector<float>>();
          auto& dst = std::string(c) == "__add_factors" ? pc.add_factors
                      : std::string(c) == "__scale_factors" ? pc.scale_factors : pc.error_factors;
          dst.assign(v.begin() + std::ptrdiff_t(off), v.begin() + std::ptrdiff_t(off + len));
        }
      }
      off += len;
    }
    searcher = std::make_unique<ivf_searcher>(distance, matrix_of<float>(cents, lengths.size(), dim, half), q,
                                              std::move(parts));
  }
};

}  // namespace

TEST_CASE("our search over LanceDB's indexes returns LanceDB's neighbours") {
  for (const char* name : {"flat_l2_16", "flat_cos_16", "flat_dot_16", "pq_l2_16", "pq_dot_16", "pq_cos_16",
                           "pq4_l2_16", "sq_l2_16", "rq_l2_32", "rq_l2_24", "rq_dot_24", "rq_cos_24",
                           "pq_l2_16_f16", "pq_cos_16_f16", "rq_l2_24_f16", "rq_cos_24_f16"}) {
    const std::string label = name;
    CAPTURE(label);
    const lance_index li(name);
    const auto& s = li.j["search"];
    search_params sp;
    sp.k = 10;
    sp.nprobes = li.searcher->num_partitions();
    double overlap = 0;
    std::size_t same_order = 0, total = 0;
    for (std::size_t qi = 0; qi < s["queries"].size(); ++qi) {
      const auto q = s["queries"][qi].get<std::vector<float>>();
      const auto got = li.searcher->search(q.data(), li.dim, sp);
      std::vector<neighbor> want;
      for (const auto& r : s["results"][qi]) want.push_back({r["id"].get<std::uint64_t>(), r["distance"].get<float>()});
      REQUIRE(got.size() == want.size());
      overlap += recall(want, got);
      std::map<std::uint64_t, float> ours;
      for (const auto& nb : got) ours[nb.row_id] = nb.distance;
      for (std::size_t i = 0; i < want.size(); ++i) {
        ++total;
        same_order += got[i].row_id == want[i].row_id;
        // Distances of the rows both return: equal for exact and table-lookup scans
        // (LanceDB's 4-bit PQ scan quantizes distances past the first 200 rows of a
        // partition; lancet sums them exactly).
        const bool lance_exact = li.type != "rq" && (label.rfind("pq4", 0) != 0 || li.position.at(want[i].row_id) < 200);
        // (float16 indexes: LanceDB computes in half precision.)
        if (lance_exact && ours.count(want[i].row_id))
          CHECK(ours[want[i].row_id] ==
                doctest::Approx(want[i].distance).epsilon(li.half ? 1e-2 : 1e-4).scale(li.half ? 1e-2 : 1e-4));
      }
    }
    overlap /= double(s["queries"].size());
    MESSAGE(label << ": overlap with LanceDB's top 10 " << overlap << ", same rank " << same_order << "/" << total);
    if (li.type == "flat" || (label.rfind("pq_", 0) == 0 && !li.half)) CHECK(overlap == 1.0);
    else if (li.type == "pq" && li.half) CHECK(overlap >= 0.9);  // half-precision rounding reorders near ties
    else if (li.type == "pq") CHECK(overlap >= 0.8);  // LanceDB's 4-bit scan quantizes distances
    else if (li.type == "sq") CHECK(overlap >= 0.9);  // LanceDB searched it with HNSW
    else CHECK(overlap >= 0.7);                         // LanceDB scans a u8-quantized table
  }
}

// ---- LanceDB's index files, read with storage_reader.hpp ------------------------------
// tests/fixtures/indexes/* (datasets LanceDB 0.39 wrote, one fragment each): the
// searcher over the files' centroids and partitions against brute force over the
// dataset's own vectors.
#include <filesystem>

#include "lancet/file/reader.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/io/file_source.hpp"

namespace {

// The vectors of a one-fragment fixture dataset, widened to float (row i = offset i).
std::vector<float> dataset_vectors(const std::string& dir, std::size_t& dim) {
  std::string data;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/data")) data = e.path().string();
  REQUIRE(!data.empty());
  file::file_reader<io::file_source> r{io::file_source(data)};
  const auto batch = r.read({{"vector"}, std::nullopt, std::nullopt});
  const auto& fsl = *batch.columns[0];
  const auto& child = *fsl.children[0];
  dim = std::size_t(fsl.type->list_size);
  std::vector<float> out(std::size_t(fsl.length) * dim);
  const std::size_t first = std::size_t(child.offset + fsl.offset * fsl.type->list_size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (child.type->id == arrow::type_id::float32) out[i] = child.values<float>()[first + i];
    else if (child.type->id == arrow::type_id::float16)
      out[i] = f16::from_bits(child.values<std::uint16_t>()[first + i]).to_float();
    else out[i] = float(child.values<std::uint8_t>()[first + i]);
  }
  return out;
}

}  // namespace

TEST_CASE("LanceDB's own index files: our search against exact search over the dataset") {
  for (const char* name : {"ivf_flat_2.0", "ivf_flat_hamming_2.0", "ivf_pq_2.0", "ivf_pq_2.2", "ivf_pq_f16_dot_2.0",
                           "ivf_pq4_cosine_2.0", "ivf_rq_dot_2.0", "ivf_rq2_2.0"}) {
    const std::string label = name;
    CAPTURE(label);
    const std::string dir = std::string(LANCET_SOURCE_ROOT) + "/tests/fixtures/indexes/" + name;
    std::string idx_dir;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/_indices")) idx_dir = e.path().string();
    const auto info = read_index_file(idx_dir + "/index.idx");
    auto storage = std::make_shared<storage_reader<io::any_source>>(open_storage(idx_dir + "/auxiliary.idx"));
    REQUIRE(info.ivf.centroids);
    const ivf_searcher s(info.distance, *info.ivf.centroids, storage->quantizer(), [storage](std::size_t p) {
      return std::make_shared<const partition_contents>(storage->read_partition(p));
    });
    std::size_t dim = 0;
    const auto vectors = dataset_vectors(dir, dim);
    const std::size_t n = vectors.size() / dim;
    REQUIRE(dim == s.dimension());
    search_params sp;
    sp.k = 10;
    sp.nprobes = s.num_partitions();
    double r = 0;
    const std::size_t nq = 10;
    for (std::size_t qi = 0; qi < nq; ++qi) {
      const float* q = vectors.data() + ((qi * 97) % n) * dim;
      const auto got = s.search(q, dim, sp);
      for (const auto& nb : got) CHECK((nb.row_id >> 32) == 0);  // one fragment: row address = offset
      const auto want = brute_force(info.distance, q, vectors.data(), n, dim, 10);
      r += recall(want, got);
      if (std::holds_alternative<flat_params>(storage->quantizer())) {
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].distance == doctest::Approx(want[i].distance).epsilon(1e-5));
      }
    }
    r /= double(nq);
    MESSAGE(label << " (" << info.index_type << ", " << std::string(simd::distance_name(info.distance))
                  << "): recall@10 " << r);
    if (std::holds_alternative<flat_params>(storage->quantizer())) CHECK(r == 1.0);
    else if (std::holds_alternative<pq_params>(storage->quantizer())) CHECK(r >= 0.5);
    else CHECK(r >= 0.2);  // 16 sign bits per row
    if (const auto* rq = std::get_if<rq_params>(&storage->quantizer())) {
      // The sign codes and their factors (of a 2-bit index too) are what we encode.
      const auto m = rabitq::from_params(*rq);
      CHECK(m.stored_bits == rq->num_bits);
      const auto cents = info.ivf.centroids->values<float>();
      std::size_t bad = 0;
      for (std::size_t p = 0; p < storage->num_partitions(); ++p) {
        const auto pc = storage->read_partition(p);
        std::vector<float> rows;
        for (auto id : pc.row_ids) rows.insert(rows.end(), vectors.begin() + std::ptrdiff_t(id * dim),
                                               vectors.begin() + std::ptrdiff_t((id + 1) * dim));
        const std::vector<std::uint32_t> parts(pc.size(), std::uint32_t(p));
        rabitq::encoded_rows enc;
        rabitq::encode_for_ivf(m, rows.data(), pc.size(), info.distance, cents.data(), storage->num_partitions(),
                               parts.data(), enc);
        for (std::size_t i = 0; i < pc.codes.size(); ++i) bad += enc.codes[i] != pc.codes.data()[i];
        for (std::size_t i = 0; i < pc.size(); ++i) {
          CHECK(enc.add_factors[i] == doctest::Approx(pc.add_factors[i]).epsilon(1e-3).scale(1e-3));
          CHECK(enc.scale_factors[i] == doctest::Approx(pc.scale_factors[i]).epsilon(1e-3).scale(1e-3));
          CHECK(enc.error_factors[i] == doctest::Approx(pc.error_factors[i]).epsilon(1e-3).scale(1e-3));
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("probing as Lance 12: fixed nprobes, the adaptive floor of IVF_FLAT, the legacy rule, the late search") {
  // 20 partitions with centroids at (p, 0); the query sits on centroid 0. Partition p
  // holds 10 rows near its centroid (ids p * 1000 + i), except that row 5000 (in
  // partition 5) sits on the query itself: only a search that scans partition 5 finds it.
  const std::size_t parts = 20, d = 2;
  std::vector<float> cents;
  std::vector<partition_contents> contents(parts);
  for (std::size_t p = 0; p < parts; ++p) {
    cents.insert(cents.end(), {float(p), 0.0f});
    std::vector<float> v;
    for (std::size_t i = 0; i < 10; ++i) {
      contents[p].row_ids.push_back(p * 1000 + i);
      const bool on_query = p == 5 && i == 0;
      v.insert(v.end(), {on_query ? 0.0f : float(p) + 0.01f * float(i + 1), on_query ? 0.0f : 0.5f});
    }
    contents[p].codes.append(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(float));
  }
  ivf_searcher s(distance_type::l2, matrix::of(cents, parts, d), flat::to_params<float>(d), contents);
  const float q[2] = {0, 0};
  const auto found = [&](search_params sp) {
    std::set<std::uint64_t> ids;
    for (const auto& n : s.search(q, d, sp)) ids.insert(n.row_id);
    return ids.count(5000) == 1;
  };
  search_params sp;
  sp.k = 5;
  sp.nprobes = 5;
  CHECK_FALSE(found(sp));  // fixed: partitions 0..4
  sp.nprobes = 6;
  CHECK(found(sp));
  // No maximum, k <= 10, l2: at least Lance's floor of 6 partitions.
  sp.nprobes = 1;
  sp.maximum_nprobes = 0;
  CHECK(found(sp));
  // A maximum: the legacy rule (within 7x the nearest distance, 0 here: one partition);
  // no late search, 10 rows found.
  sp.maximum_nprobes = 20;
  CHECK_FALSE(found(sp));
  // A filter keeping one row per partition: the late search probes until k = 5 are found.
  std::vector<std::uint64_t> firsts;
  for (std::size_t p = 0; p < parts; ++p) firsts.push_back(p * 1000 + 1);
  const auto one_each = row_filter::allow(firsts);
  sp.filter = &one_each;
  sp.maximum_nprobes = 20;
  CHECK(s.search(q, d, sp).size() == 5);
  sp.maximum_nprobes = std::nullopt;  // fixed: one partition, one row
  CHECK(s.search(q, d, sp).size() == 1);
  // Fewer rows pass than k: the unfound ones at +inf (Lance's shortcut), or the search
  // goes on when the shortcut is off.
  const auto three = row_filter::allow({1, 10001, 19001});
  sp.filter = &three;
  sp.maximum_nprobes = 0;
  const auto hits = s.search(q, d, sp);
  REQUIRE(hits.size() == 3);
  CHECK(hits[0].row_id == 1);
  CHECK(std::isinf(hits[1].distance));
  CHECK(std::isinf(hits[2].distance));
  sp.add_unfound_rows = false;
  const auto scanned = s.search(q, d, sp);
  REQUIRE(scanned.size() == 3);
  CHECK(std::isfinite(scanned[2].distance));
  // distance_range keeps [lower, upper).
  sp = {};
  sp.k = 10;
  sp.nprobes = 20;
  sp.distance_lower = 0.0f;
  sp.distance_upper = 0.2505f;  // rows 0 and 1 of partition 0: 0.2501 and 0.2504
  const auto ranged = s.search(q, d, sp);
  REQUIRE(ranged.size() == 3);
  CHECK(ranged[0].row_id == 5000);
  CHECK(ranged[1].row_id == 0);
  CHECK(ranged[2].row_id == 1);
}
