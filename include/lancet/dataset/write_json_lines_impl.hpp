// Definitions of write_json_lines.hpp (see there), and the template over an encoding
// policy.
#pragma once

#include <istream>
#include <string>

#include "lancet/arrow/type.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/dataset/write_json_lines.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/json/rows_reader.hpp"

namespace lancet::dataset {

template <encoding::structural::structural_policy Policy>
write_result write_json_lines(const std::string& root, const arrow::schema& schema, std::istream& in,
                              write_options options, const Policy& policy, const json::read_options& rows_options = {}) {
  options.schema = schema;
  json::rows_reader rows(schema, in, rows_options);
  return write(root, [&] { return rows.next(); }, options, default_sink_factory{}, policy);
}

LANCET_INLINE write_result write_json_lines(const std::string& root, const arrow::schema& schema, std::istream& in,
                                            const write_options& options, const json::read_options& rows_options) {
  return write_json_lines(root, schema, in, options, encoding::structural::default_policy{}, rows_options);
}

}  // namespace lancet::dataset
