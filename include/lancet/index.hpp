// lancet's index layer: building IVF vector indexes (flat, PQ, SQ, RaBitQ) over a
// dataset's column, opening and searching them, optimising them after appends and
// remapping them after compaction; distributed builds (a trained model file, segments
// built apart and committed as one index).
#pragma once

#include "lancet/index/ivf_builder.hpp"
#include "lancet/index/model_file.hpp"
#include "lancet/index/optimize.hpp"
#include "lancet/index/remap.hpp"
#include "lancet/index/segments.hpp"
#include "lancet/index/vector_index.hpp"
