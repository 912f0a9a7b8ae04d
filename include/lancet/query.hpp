// lancet's query layer: SQL filters (expr/filter.hpp), queries over a dataset
// version as LanceDB answers them (query/table.hpp: vector search with deletions,
// unindexed rows, filters, projections and refine; filtered scans) and the filtered,
// projected rows of one file (query/file_rows.hpp).
#pragma once

#include "lancet/expr/filter.hpp"
#include "lancet/query/file_rows.hpp"
#include "lancet/query/table.hpp"
