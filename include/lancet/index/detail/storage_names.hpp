// Names in an IVF index directory as Lance 12 spells them: the two files, the
// schema metadata keys and the columns of auxiliary.idx / index.idx. Internal to
// index/: callers go through storage_writer.hpp and storage_reader.hpp.
#pragma once

#include <string_view>

namespace lancet::index::detail {

inline constexpr std::string_view index_file_name = "index.idx";
inline constexpr std::string_view auxiliary_file_name = "auxiliary.idx";

// Schema metadata keys.
inline constexpr std::string_view index_metadata_key = "lance:index";
inline constexpr std::string_view ivf_metadata_key = "lance:ivf";
inline constexpr std::string_view flat_metadata_key = "lance:flat";
inline constexpr std::string_view storage_metadata_key = "storage_metadata";
inline constexpr std::string_view distance_type_key = "distance_type";

// Column names.
inline constexpr std::string_view row_id_column = "_rowid";
inline constexpr std::string_view flat_marker_column = "__flat_marker";
inline constexpr std::string_view flat_column = "flat";
inline constexpr std::string_view pq_code_column = "__pq_code";
inline constexpr std::string_view sq_code_column = "__sq_code";
inline constexpr std::string_view rabit_code_column = "_rabit_codes";
inline constexpr std::string_view add_factors_column = "__add_factors";
inline constexpr std::string_view scale_factors_column = "__scale_factors";
inline constexpr std::string_view error_factors_column = "__error_factors";
inline constexpr std::string_view blocked_ex_codes_column = "__blocked_ex_codes";
inline constexpr std::string_view add_factors_ex_column = "__add_factors_ex";
inline constexpr std::string_view scale_factors_ex_column = "__scale_factors_ex";

}  // namespace lancet::index::detail
