// dataset::write_json_lines: JSON Lines rows (one object per line, as json::rows_reader
// reads them) into a dataset. The library entry behind `lancet write`: the same options
// and encoding policies as dataset::write, and the same errors (a bad line stops the
// write, naming the line and the field, and the dataset stays as it was).
//
// Declared here with the default encoding policy and local files; the definition, and
// the template over another encoding policy, are in write_json_lines_impl.hpp
// (included here in header-only programs; a compiled-mode program passing its own
// policy includes it).
#pragma once

#include <istream>
#include <string>

#include "lancet/arrow/type.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/json/rows_reader.hpp"

namespace lancet::dataset {

LANCET_INLINE write_result write_json_lines(const std::string& root, const arrow::schema& schema, std::istream& in,
                                            const write_options& options = {},
                                            const json::read_options& rows_options = {});

}  // namespace lancet::dataset

#if LANCET_HEADER_ONLY
#include "lancet/dataset/write_json_lines_impl.hpp"
#endif
