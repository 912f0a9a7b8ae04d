// A batch of `id: int64` (first_id, first_id + 1, ...) and `vector:
// fixed_size_list<float32, dim>` over row-major values: the table the index tests,
// scenarios and benchmarks write, and the vectors they fill it with.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <lancet/arrow/array.hpp>
#include <lancet/arrow/type.hpp>
#include <lancet/core/buffer.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/index/ivf/storage_writer.hpp>

namespace lancet::testing {

// Row-major vectors of `dim` floats around `clusters` centres drawn in [-1, 1)^dim,
// with Gaussian spread: the clustered data the index tests build on. Each draw goes on
// from the one before (rows, then queries near the same centres). Rng: the engine,
// seeded with `seed` (std::mt19937, or std::mt19937_64 where a suite's data was drawn
// with it).
template <class Rng = std::mt19937>
class cluster_draws {
 public:
  cluster_draws(std::size_t dim, std::size_t clusters, float spread, std::uint64_t seed)
      : rng_(typename Rng::result_type(seed)), g_(0, spread), dim_(dim), clusters_(clusters), centres_(clusters * dim) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& c : centres_) c = u(rng_);
  }
  // `n` vectors, each around a centre drawn at random.
  std::vector<float> draw(std::size_t n) {
    std::vector<float> out(n * dim_);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = rng_() % clusters_;
      for (std::size_t j = 0; j < dim_; ++j) out[i * dim_ + j] = centres_[c * dim_ + j] + g_(rng_);
    }
    return out;
  }

 private:
  Rng rng_;
  std::normal_distribution<float> g_;
  std::size_t dim_, clusters_;
  std::vector<float> centres_;
};

// n such vectors (the first draw).
template <class Rng = std::mt19937>
std::vector<float> clustered(std::size_t n, std::size_t dim, std::size_t clusters, float spread, std::uint64_t seed) {
  return cluster_draws<Rng>(dim, clusters, spread, seed).draw(n);
}

// n vectors of `dim` floats, each component `at` + uniform [0, spread) noise: one tight
// cluster where the test puts it.
inline std::vector<float> cluster_at(std::size_t n, float at, unsigned seed, float spread = 0.1f, std::size_t dim = 4) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, spread);
  std::vector<float> v(n * dim);
  for (auto& x : v) x = at + u(rng);
  return v;
}

inline arrow::record_batch id_vector_batch(const std::vector<float>& values, std::size_t dim, std::int64_t first_id) {
  const std::size_t n = values.size() / dim;
  arrow::field vf("vector", arrow::fixed_size_list(arrow::float32(), std::int32_t(dim)), true);
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = first_id + std::int64_t(i);
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(arrow::schema{{arrow::field("id", arrow::int64(), false), vf}, {}});
  b.columns = {index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(ids)), n),
               index::detail::fsl_array(vf, index::detail::copy_span(std::span<const float>(values)), n)};
  return b;
}

// a's vectors, then b's.
inline std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Appends the id_vector_batch of `values` to the dataset at `root`.
inline void append_id_vectors(const std::string& root, const std::vector<float>& values, std::size_t dim,
                              std::int64_t first_id) {
  dataset::write_options wo;
  wo.mode = dataset::write_mode::append;
  dataset::write(root, id_vector_batch(values, dim, first_id), wo);
}

// The dimension of three_cluster_rows' vectors.
inline constexpr std::size_t three_cluster_dim = 4;

// Rows [first, first + n) of an id_vector_batch in three clusters (deterministic): row
// i's vector is a point of cluster i % 3, whose centre is 10 * (i % 3) on every axis.
inline arrow::record_batch three_cluster_rows(std::int64_t first, std::size_t n) {
  constexpr std::size_t dim = three_cluster_dim;
  std::vector<float> v(n * dim);
  for (std::size_t r = 0; r < n; ++r) {
    const auto i = first + std::int64_t(r);
    const float c = float(i % 3) * 10.0f;
    for (std::size_t j = 0; j < dim; ++j) v[r * dim + j] = c + float((i * 7 + std::int64_t(j) * 13) % 17) * 0.05f;
  }
  return id_vector_batch(v, dim, first);
}

// `id` (first_id, first_id + 1, ...) + `vector: list<fixed_size_list<float32, dim>>`:
// row r holds rows[r] (row-major dim-d vectors; empty: a null row).
inline arrow::record_batch id_multivector_batch(const std::vector<std::vector<float>>& rows, std::size_t dim,
                                                std::int64_t first_id) {
  std::vector<std::int32_t> offs = {0};
  std::vector<float> vals;
  aligned_buffer valid;
  valid.resize((rows.size() + 7) / 8);
  std::memset(valid.data(), 0, valid.size());
  std::int64_t nulls = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    vals.insert(vals.end(), rows[r].begin(), rows[r].end());
    offs.push_back(offs.back() + std::int32_t(rows[r].size() / dim));
    if (rows[r].empty()) ++nulls;
    else valid.data()[r / 8] = std::uint8_t(valid.data()[r / 8] | (1u << (r % 8)));
  }
  const std::size_t nv = std::size_t(offs.back()), n = rows.size();
  arrow::field item("item", arrow::fixed_size_list(arrow::float32(), std::int32_t(dim)), true);
  auto col = std::make_shared<arrow::array_data>();
  col->type = arrow::list(item);
  col->length = std::int64_t(n);
  col->null_count = nulls;
  col->buffers = {shared_bytes(std::move(valid)), shared_bytes(index::detail::copy_span(std::span<const std::int32_t>(offs)))};
  col->children = {std::const_pointer_cast<arrow::array_data>(
      index::detail::fsl_array(item, index::detail::copy_span(std::span<const float>(vals)), nv))};
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = first_id + std::int64_t(i);
  arrow::record_batch b;
  b.schema = std::make_shared<arrow::schema>(
      arrow::schema{{arrow::field("id", arrow::int64(), false), arrow::field("vector", col->type, true)}, {}});
  b.columns = {index::detail::primitive_array(arrow::int64(), index::detail::copy_span(std::span<const std::int64_t>(ids)), n),
               col};
  return b;
}

}  // namespace lancet::testing
