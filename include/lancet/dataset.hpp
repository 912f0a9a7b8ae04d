// lancet's dataset layer: writing (create, append, overwrite), opening, scanning and
// taking rows, deleting and compacting Lance datasets, removing old versions
// (cleanup_old_versions), and blob columns.
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/cleanup.hpp"
#include "lancet/dataset/compact.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/encoding/v2_1/blob.hpp"
#include "lancet/encoding/v2_1/policy.hpp"
#include "lancet/io/any_source.hpp"
