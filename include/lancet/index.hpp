// lancet's index layer: building IVF vector indexes (flat, PQ, SQ, RaBitQ) over a
// dataset's column, opening and searching them, optimising them after appends and
// remapping them after compaction; distributed builds (a trained model file, segments
// built apart and committed as one index).
#pragma once

#include "lancet/index/build/ivf_builder.hpp"
#include "lancet/index/distributed/model_file.hpp"
#include "lancet/index/distributed/segments.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/optimize/optimize_indices.hpp"
#include "lancet/index/optimize/remap.hpp"
#include "lancet/index/scalar/scalar_index.hpp"
#include "lancet/index/search/vector_index.hpp"
