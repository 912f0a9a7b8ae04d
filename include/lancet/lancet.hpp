// lancet: write and read Lance files and datasets, build Lance-compatible IVF indexes.
// One include for everything public: the sum of the per-layer umbrellas.
#pragma once

#include "lancet/dataset.hpp"
#include "lancet/file.hpp"
#include "lancet/index.hpp"
#include "lancet/query.hpp"
