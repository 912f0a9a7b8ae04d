// Names in a dataset's index storage as Lance 12 spells them: the index directory,
// the two files of an IVF index, the schema metadata keys and the columns of
// auxiliary.idx / index.idx (and of the shuffler's spill files). Internal to index/:
// callers go through storage_writer.hpp, storage_reader.hpp and registry.hpp.
#pragma once

#include <string_view>

namespace lancet::index::detail {

// The dataset's directory of index directories (one per index segment, by uuid).
inline constexpr std::string_view indices_dir_name = "_indices";

inline constexpr std::string_view index_file_name = "index.idx";
inline constexpr std::string_view auxiliary_file_name = "auxiliary.idx";

// Schema metadata keys.
inline constexpr std::string_view index_metadata_key = "lance:index";
inline constexpr std::string_view ivf_metadata_key = "lance:ivf";
inline constexpr std::string_view flat_metadata_key = "lance:flat";
inline constexpr std::string_view storage_metadata_key = "storage_metadata";
inline constexpr std::string_view distance_type_key = "distance_type";
inline constexpr std::string_view hnsw_metadata_key = "lance:hnsw";

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

// index.idx of IVF_HNSW_*: one row per node and level.
inline constexpr std::string_view hnsw_vector_id_column = "__vector_id";
inline constexpr std::string_view hnsw_neighbors_column = "__neighbors";
inline constexpr std::string_view hnsw_distance_column = "_distance";

// The shuffler's spill files: each encoded row's partition.
inline constexpr std::string_view partition_id_column = "__ivf_part_id";

// Scalar indexes: IndexMetadata.index_details type URLs (empty messages) and the
// BTREE's files and lookup metadata keys.
inline constexpr std::string_view btree_details_type_url = "/lance.table.BTreeIndexDetails";
inline constexpr std::string_view bitmap_details_type_url = "/lance.table.BitmapIndexDetails";
inline constexpr std::string_view label_list_details_type_url = "/lance.table.LabelListIndexDetails";
inline constexpr std::string_view btree_page_data_file = "page_data.lance";
inline constexpr std::string_view btree_page_lookup_file = "page_lookup.lance";
inline constexpr std::string_view btree_batch_size_key = "batch_size";
inline constexpr std::string_view btree_range_partitioned_key = "range_partitioned";
// BITMAP and LABEL_LIST: one file, its statistics and (LABEL_LIST) the global buffer
// holding the rows whose list is NULL.
inline constexpr std::string_view bitmap_file = "bitmap_page_lookup.lance";
inline constexpr std::string_view bitmap_stats_key = "lance:index_stats";
inline constexpr std::string_view label_list_nulls_key = "lance:label_list_nulls";

}  // namespace lancet::index::detail
