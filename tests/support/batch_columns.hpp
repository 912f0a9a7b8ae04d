// A record batch's columns by name, for checking answers: the column itself, and an
// int64 column's values.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <lancet/arrow/array.hpp>

namespace lancet::testing {

inline const arrow::array_data& column_of(const arrow::record_batch& b, const std::string& name) {
  for (std::size_t c = 0; c < b.schema->fields.size(); ++c)
    if (b.schema->fields[c].name == name) return *b.columns[c];
  throw std::runtime_error("the batch has no column '" + name + "'");
}

inline std::vector<std::int64_t> int64_values(const arrow::record_batch& b, const std::string& name = "id") {
  const auto& c = column_of(b, name);
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < b.num_rows(); ++i) out.push_back(c.value<std::int64_t>(i));
  return out;
}

}  // namespace lancet::testing
