// What a query asks, as plain data (query::builder, table.hpp, fills it fluently):
// the columns, the filter, limit / offset, the row id, and for a vector search the
// column, the query vector and the knobs LanceDB's query builder has.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/search/neighbors.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::query {

struct nearest_request {
  std::string column;
  std::vector<double> vector;  // the query (uint8 codes as their values, for hamming)
  // Partitions probed: minimum_nprobes first, then up to maximum_nprobes while fewer
  // than k rows were found (nullopt: every partition). LanceDB's nprobes(n) sets both
  // (default 20).
  std::size_t minimum_nprobes = 20;
  std::optional<std::size_t> maximum_nprobes = 20;
  std::optional<std::size_t> ef;           // IVF_HNSW_*: the beam (default 1.5 x k x refine)
  std::size_t refine_factor = 0;           // > 0: k x refine candidates re-ranked exactly
  std::optional<float> distance_lower;     // only distances in [lower, upper)
  std::optional<float> distance_upper;
  std::optional<simd::distance_type> distance_type;  // must match the index's, else an exact search
  bool fast_search = false;          // the index only: rows it does not cover are not searched
  bool bypass_vector_index = false;  // an exact search over every row
  std::string index_name;            // the index to use (default: the first on the column)
  // Original vectors for refine from elsewhere than the dataset (default: the dataset).
  index::vector_fetch fetch;
};

struct request {
  // Output columns in this order (default: every column); `a.b` names a struct's field.
  std::vector<std::string> columns;
  std::string filter;       // a SQL filter (expr/filter.hpp), "" for none
  bool prefilter = true;    // vector search: filter before the search (LanceDB's default) or after it
  std::optional<std::size_t> limit;  // a vector search returns limit rows (default 10): its k
  std::size_t offset = 0;
  bool with_row_id = false;  // add `_rowid` (uint64) as the last column
  std::optional<nearest_request> nearest;
  boost::asio::thread_pool* pool = nullptr;  // for one query's partitions (index::search_params::pool)
};

}  // namespace lancet::query
