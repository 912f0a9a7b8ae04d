// The definitions behind filter.hpp: compiling (parse + bind) and evaluating in blocks.
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/config.hpp"
#include "lancet/expr/bind.hpp"
#include "lancet/expr/evaluate.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/expr/parse.hpp"

namespace lancet::expr {

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE filter filter::compile(std::string_view sql, const arrow::schema& schema) {
  filter f;
  f.text_ = std::string(sql);
  f.bound_ = std::make_shared<const bound_filter>(bind(parse(sql), schema));
  return f;
}

LANCET_INLINE const std::vector<std::string>& filter::columns() const noexcept { return bound_->columns; }

LANCET_INLINE void filter::evaluate(std::span<const arrow::array_ptr> inputs, std::int64_t begin, std::size_t n,
                                    std::uint8_t* mask) const {
  if (inputs.size() != bound_->columns.size())
    throw invalid_input_error("filter '" + text_ + "' reads " + std::to_string(bound_->columns.size()) +
                              " columns, given " + std::to_string(inputs.size()));
  for (std::size_t c = 0; c < inputs.size(); ++c)
    if (!inputs[c] || inputs[c]->length < begin + std::int64_t(n))
      throw invalid_input_error("filter '" + text_ + "': column '" + bound_->columns[c] + "' has " +
                                std::to_string(inputs[c] ? inputs[c]->length : 0) + " rows, " +
                                std::to_string(begin + std::int64_t(n)) + " needed");
  // Blocks small enough that every node's values stay in cache.
  constexpr std::size_t block = 4096;
  for (std::size_t at = 0; at < n; at += block) {
    const std::size_t m = std::min(block, n - at);
    expr::evaluate(*bound_, inputs, begin + std::int64_t(at), m, mask + at);
  }
}

LANCET_INLINE std::vector<std::uint8_t> filter::evaluate(std::span<const arrow::array_ptr> inputs) const {
  const std::size_t n = inputs.empty() ? 0 : std::size_t(inputs[0]->length);
  std::vector<std::uint8_t> mask(n);
  if (inputs.empty()) return mask;
  evaluate(inputs, 0, n, mask.data());
  return mask;
}

LANCET_INLINE arrow::record_batch filter::apply(const arrow::record_batch& batch) const {
  std::vector<arrow::array_ptr> inputs;
  for (const auto& name : bound_->columns) {
    std::size_t c = 0;
    while (c < batch.schema->fields.size() && batch.schema->fields[c].name != name) ++c;
    if (c == batch.schema->fields.size())
      throw invalid_input_error("filter '" + text_ + "' reads column '" + name + "', which the batch does not have");
    inputs.push_back(batch.columns[c]);
  }
  std::vector<std::uint8_t> mask(std::size_t(batch.num_rows()));
  evaluate(inputs, 0, mask.size(), mask.data());
  return select_rows(batch, mask);
}

LANCET_INLINE arrow::record_batch select_rows(const arrow::record_batch& batch, std::span<const std::uint8_t> mask) {
  if (mask.size() != std::size_t(batch.num_rows()))
    throw invalid_input_error("select_rows: a mask of " + std::to_string(mask.size()) + " rows for a batch of " +
                              std::to_string(batch.num_rows()));
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  std::int64_t kept = 0;
  for (std::size_t r = 0; r < mask.size();) {
    if (!mask[r]) {
      ++r;
      continue;
    }
    std::size_t e = r;
    while (e < mask.size() && mask[e]) ++e;
    runs.emplace_back(std::int64_t(r), std::int64_t(e - r));
    kept += std::int64_t(e - r);
    r = e;
  }
  if (kept == batch.num_rows()) return batch;
  arrow::record_batch out;
  out.schema = batch.schema;
  for (std::size_t c = 0; c < batch.columns.size(); ++c)
    out.columns.push_back(arrow::take_runs(batch.columns[c], runs, batch.schema->fields[c].type));
  return out;
}

#endif

}  // namespace lancet::expr
