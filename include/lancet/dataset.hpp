// lancet's dataset layer: writing (create, append, overwrite), opening, scanning and
// taking rows, deleting and compacting Lance datasets, removing old versions
// (cleanup_old_versions), blob columns, and distributed writes (write_fragments on
// workers, commit of their fragment metadata on a coordinator).
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/core/deal.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/cleanup.hpp"
#include "lancet/dataset/compact.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/distributed.hpp"
#include "lancet/dataset/fragment_json.hpp"
#include "lancet/dataset/fragment_metadata.hpp"
#include "lancet/dataset/schema_change.hpp"
#include "lancet/dataset/update.hpp"
#include "lancet/dataset/merge_insert.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_json_lines.hpp"
#include "lancet/encoding/structural/blob.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/io/any_source.hpp"
