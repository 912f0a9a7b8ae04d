// Recall@k of one dataset's IVF index (lancet's or one LanceDB built), searched by
// lancet with every partition probed: what the index's codes are worth, apart from
// the search kernel that reads them. Used by bench/pq_recall_sweep.sh (--index-recall)
// to compare lancet's and LanceDB's IVF_PQ beside the recall LanceDB's own search gives.
//
//   index_recall DATASET QUERIES.f32 TRUTH.u32 [--k 10] [--column vector] [--rows ROWS.f32]
//                [--kernel-codebook-from DATASET2] [--kernel-order stored|row-id]
//
// QUERIES.f32: the queries, float32 row-major (the index's dimension). TRUTH.u32: k
// exact neighbours (row ids) per query, uint32. Prints one JSON object:
//   {"recall": R}                                 lancet's search (exact f32 ADC for PQ)
//   "lance_4bit_kernel_recall": R                 with --rows, for a 4-bit IVF_PQ dot index
//
// lance_4bit_kernel_recall models how Lance 12 scans 4-bit PQ codes (the scan LanceDB
// 0.39 runs; compared with its searches in bench/RESULTS.md, pq_recall_sweep): in each
// partition the first 200 rows (in stored order) get their exact f32 distance; their
// largest is qmax; every table entry d becomes round((d - qmin) * 255 / (qmax - qmin)),
// qmin the smallest entry of the whole table; every other row's distance is the
// saturating u8 sum of its entries, times (qmax - qmin) / 255, plus qmin (the rows after
// the last full block of 16 keep exact distances). With dot tables the entries are
// negative and the sum saturates for nearly every row past the first 200 once there
// are many sub-vectors, so Lance's recall then depends on which rows a partition stores
// first. The codes are recomputed from ROWS.f32 (the dataset's vectors in row-id
// order) by lancet's encoder, as both libraries compute them: the nearest centroid by
// l2. Two switches take the model apart: --kernel-codebook-from scans DATASET's
// partitions (rows, order) with the codebook of DATASET2's index (another build on
// the same rows); --kernel-order row-id sorts each partition's rows by row id first
// (as lancet stores them) instead of the stored order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "lancet/dataset/dataset.hpp"
#include "lancet/index/search/vector_index.hpp"

namespace {

template <class T>
std::vector<T> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  f.seekg(0, std::ios::end);
  const auto bytes = static_cast<std::size_t>(f.tellg());
  if (bytes % sizeof(T) != 0) throw std::runtime_error(path + ": size is not a multiple of " + std::to_string(sizeof(T)));
  std::vector<T> v(bytes / sizeof(T));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(bytes));
  return v;
}

double hits(const std::uint32_t* truth, std::size_t k, const std::vector<std::uint64_t>& got) {
  const std::set<std::uint64_t> t(truth, truth + k);
  double h = 0;
  for (auto id : got) h += double(t.count(id));
  return h;
}

// Lance 12's 4-bit PQ scan over every partition (see the header), for a dot index.
double lance_4bit_kernel_recall(const lancet::index::opened_index& ix, const lancet::index::opened_index& codebook_of,
                                bool by_row_id, const std::vector<float>& rows, const std::vector<float>& queries,
                                const std::vector<std::uint32_t>& truth, std::size_t k) {
  namespace pq = lancet::index::pq;
  const auto* cb = std::get_if<lancet::index::pq_params>(&codebook_of.searcher->quantizer());
  if (!cb || cb->num_bits != 4 || cb->dimension != ix.searcher->dimension())
    throw std::runtime_error("the codebook's index is not a 4-bit IVF_PQ of the same dimension");
  const auto model = pq::from_params<float>(*cb, lancet::simd::distance_type::dot);
  const std::size_t d = model.dimension, m = model.num_sub_vectors, kc = model.num_centroids(),
                    sd = model.sub_dimension(), n = rows.size() / d, nq = queries.size() / d;
  // lancet's encoder (dot: raw rows), unpacked to one centroid index per sub-vector.
  std::vector<std::uint8_t> packed(n * model.code_bytes()), codes(n * m);
  pq::encode(model, rows.data(), n, packed.data());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < m; ++s)
      codes[r * m + s] = std::uint8_t(pq::code_of(packed.data() + r * model.code_bytes(), model.num_bits, s));
  std::vector<std::vector<std::uint64_t>> parts;
  for (std::size_t p = 0; p < ix.searcher->num_partitions(); ++p) {
    parts.push_back(ix.storage->read_partition(p).row_ids);
    if (by_row_id) std::sort(parts.back().begin(), parts.back().end());
    for (auto id : parts.back())
      if (id >= n) throw std::runtime_error("row id " + std::to_string(id) + " is past ROWS.f32's " + std::to_string(n));
  }
  constexpr std::size_t flat_rows = 200, block = 16;
  double h = 0;
  std::vector<float> table(m * kc);
  std::vector<std::uint8_t> qtable(m * kc);
  for (std::size_t q = 0; q < nq; ++q) {
    const float* qv = queries.data() + q * d;
    float qmin = INFINITY;
    for (std::size_t s = 0; s < m; ++s)
      for (std::size_t j = 0; j < kc; ++j) {
        float e = 0;
        for (std::size_t t = 0; t < sd; ++t) e += qv[s * sd + t] * model.centroids(s)[j * sd + t];
        table[s * kc + j] = -e;
        qmin = std::min(qmin, -e);
      }
    std::vector<std::pair<float, std::uint64_t>> all;
    for (const auto& ids : parts) {
      const std::size_t cnt = ids.size(), flat = std::min(cnt, flat_rows), tail = cnt % block;
      std::vector<float> dist(cnt);
      float qmax = -INFINITY;
      // Exact distances: the first `flat` rows and the rows after the last full block.
      const auto exact = [&](std::size_t i) {
        float e = 0;
        for (std::size_t s = 0; s < m; ++s) e += table[s * kc + codes[ids[i] * m + s]];
        return dist[i] = e;
      };
      for (std::size_t i = 0; i < flat; ++i) qmax = std::max(qmax, exact(i));
      for (std::size_t i = std::max(flat, cnt - tail); i < cnt; ++i) exact(i);
      const float scale = 255.f / (qmax - qmin), range = (qmax - qmin) / 255.f;
      for (std::size_t i = 0; i < m * kc; ++i)
        qtable[i] = std::uint8_t(std::clamp(std::round((table[i] - qmin) * scale), 0.f, 255.f));
      for (std::size_t i = flat; i < cnt - tail; ++i) {
        unsigned sum = 0;
        for (std::size_t s = 0; s < m; ++s) sum = std::min(255u, sum + qtable[s * kc + codes[ids[i] * m + s]]);
        dist[i] = float(sum) * range + qmin;
      }
      for (std::size_t i = 0; i < cnt; ++i) all.emplace_back(dist[i], ids[i]);
    }
    const std::size_t top = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(top), all.end());
    std::vector<std::uint64_t> got;
    for (std::size_t i = 0; i < top; ++i) got.push_back(all[i].second);
    h += hits(truth.data() + q * k, k, got);
  }
  return h / double(k * nq);
}

int run(int argc, char** argv) {
  std::vector<std::string> pos;
  std::size_t k = 10;
  std::string column = "vector", rows_path, codebook_from, order = "stored";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--k") {
      const std::string v = value();
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6)
        throw std::runtime_error("--k needs a positive integer, got '" + v + "'");
      k = std::stoul(v);
    }
    else if (a == "--column") column = value();
    else if (a == "--rows") rows_path = value();
    else if (a == "--kernel-codebook-from") codebook_from = value();
    else if (a == "--kernel-order") order = value();
    else if (a.rfind("--", 0) == 0) throw std::runtime_error("unknown option " + a);
    else pos.push_back(a);
  }
  if (order != "stored" && order != "row-id") throw std::runtime_error("--kernel-order is stored or row-id, not " + order);
  if (pos.size() != 3 || k == 0) {
    std::cerr << "usage: index_recall DATASET QUERIES.f32 TRUTH.u32 [--k 10] [--column vector] [--rows ROWS.f32]\n"
                 "                    [--kernel-codebook-from DATASET2] [--kernel-order stored|row-id]\n";
    return 2;
  }
  const auto ix = lancet::index::open_vector_index(lancet::dataset::dataset::open(pos[0]), column);
  const std::size_t dim = ix.searcher->dimension();
  const auto queries = read_all<float>(pos[1]);
  const auto truth = read_all<std::uint32_t>(pos[2]);
  if (queries.size() % dim != 0) throw std::runtime_error(pos[1] + " does not hold " + std::to_string(dim) + "-d vectors");
  const std::size_t nq = queries.size() / dim;
  if (truth.size() != nq * k)
    throw std::runtime_error(pos[2] + " holds " + std::to_string(truth.size()) + " ids, expected " +
                             std::to_string(nq * k) + " (k per query)");
  const auto* p = std::get_if<lancet::index::pq_params>(&ix.searcher->quantizer());
  const bool kernel = !rows_path.empty() && p && p->num_bits == 4 && ix.searcher->distance() == lancet::simd::distance_type::dot;
  if (!kernel && (!codebook_from.empty() || order != "stored"))
    throw std::runtime_error("--kernel-codebook-from / --kernel-order apply to a 4-bit IVF_PQ dot index with --rows");
  if (kernel && ix.segments.size() != 1)
    throw std::runtime_error("the Lance 4-bit scan model reads one index segment; '" + pos[0] + "' has " +
                             std::to_string(ix.segments.size()));
  lancet::index::search_params sp;
  sp.k = k;
  sp.nprobes = ix.searcher->num_partitions();
  double h = 0;
  for (std::size_t q = 0; q < nq; ++q) {
    std::vector<std::uint64_t> got;
    for (const auto& nb : ix.searcher->search(queries.data() + q * dim, dim, sp)) got.push_back(nb.row_id);
    h += hits(truth.data() + q * k, k, got);
  }
  // Everything computed before anything is printed: an error leaves stdout empty.
  std::optional<double> kernel_recall;
  if (kernel) {
    const auto rows = read_all<float>(rows_path);
    if (rows.size() % dim != 0) throw std::runtime_error(rows_path + " does not hold " + std::to_string(dim) + "-d vectors");
    std::optional<lancet::index::opened_index> other;
    if (!codebook_from.empty()) {
      other.emplace(lancet::index::open_vector_index(lancet::dataset::dataset::open(codebook_from), column));
    }
    kernel_recall = lance_4bit_kernel_recall(ix, other ? *other : ix, order == "row-id", rows, queries, truth, k);
  }
  std::printf("{\"recall\": %.6f", h / double(k * nq));
  if (kernel_recall) std::printf(", \"lance_4bit_kernel_recall\": %.6f", *kernel_recall);
  std::printf("}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "index_recall: " << e.what() << "\n";
    return 1;
  }
}
