// A batch of `id: int64` (first_id, first_id + 1, ...) and `vector:
// fixed_size_list<float32, dim>` over row-major values: the table the index tests,
// scenarios and benchmarks write.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <lancet/arrow/array.hpp>
#include <lancet/arrow/type.hpp>
#include <lancet/core/buffer.hpp>
#include <lancet/index/storage_writer.hpp>

namespace lancet::testing {

// n row-major vectors of `dim` floats around `clusters` centres drawn in [-1, 1)^dim,
// with Gaussian spread: the clustered data the index tests build on.
inline std::vector<float> clustered(std::size_t n, std::size_t dim, std::size_t clusters, float spread, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, spread);
  std::vector<float> centres(clusters * dim);
  for (auto& c : centres) c = u(rng);
  std::vector<float> out(n * dim);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % clusters;
    for (std::size_t j = 0; j < dim; ++j) out[i * dim + j] = centres[c * dim + j] + g(rng);
  }
  return out;
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
