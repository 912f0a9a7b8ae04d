// dataset::write_json_lines: JSON Lines rows (one object per line, as json::rows_reader
// reads them) into a dataset. The library entry behind `lancet write`: the same options
// and encoding policies as dataset::write, and the same errors (a bad line stops the
// write, naming the line and the field, and the dataset stays as it was).
#pragma once

#include <istream>
#include <string>

#include "lancet/arrow/array.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/json/rows_reader.hpp"

namespace lancet::dataset {

template <encoding::structural::structural_policy Policy = encoding::structural::default_policy>
write_result write_json_lines(const std::string& root, const arrow::schema& schema, std::istream& in,
                              write_options options = {}, const Policy& policy = {},
                              json::read_options rows_options = {}) {
  options.schema = schema;
  json::rows_reader rows(schema, in, rows_options);
  return write(root, [&] { return rows.next(); }, options, default_sink_factory{}, policy);
}

}  // namespace lancet::dataset
