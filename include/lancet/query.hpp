// lancet's query layer: SQL filters (expr/filter.hpp) and queries over a dataset
// version as LanceDB answers them (query/table.hpp: vector search with deletions,
// unindexed rows, filters, projections and refine; filtered scans).
#pragma once

#include "lancet/expr/filter.hpp"
#include "lancet/query/table.hpp"
