// A batch of `id: int64` (first_id, first_id + 1, ...) and `vector:
// fixed_size_list<float32, dim>` over row-major values: the table the index tests,
// scenarios and benchmarks write.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <lancet/arrow/array.hpp>
#include <lancet/arrow/type.hpp>
#include <lancet/index/index_files.hpp>

namespace lancet::testing {

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

}  // namespace lancet::testing
