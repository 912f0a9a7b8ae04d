// json::write_rows: JSON Lines rows (one object per line, as json::rows_reader reads
// them) into a dataset. The library entry behind `lancet write`: the same options and
// encoding policies as dataset::write, and the same errors (a bad line stops the write,
// naming the line and the field, and the dataset stays as it was).
#pragma once

#include <istream>
#include <string>

#include "lancet/arrow/array.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/json/rows_reader.hpp"

namespace lancet::json {

template <encoding::structural::structural_policy Policy = encoding::structural::default_policy>
dataset::write_result write_rows(const std::string& root, const arrow::schema& schema, std::istream& in,
                                 dataset::write_options options = {}, const Policy& policy = {},
                                 read_options rows_options = {}) {
  options.schema = schema;
  rows_reader rows(schema, in, rows_options);
  return dataset::write(root, [&] { return rows.next(); }, options, dataset::default_sink_factory{}, policy);
}

}  // namespace lancet::json
