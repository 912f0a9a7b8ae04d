// Lance's table-level protobuf messages, by family as lance-table's format module has
// them: common (UUID, Timestamp, ExternalFile, BasePath), row ids, fragments, indices,
// the manifest and the transaction. Including this header includes them all.
#pragma once

#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/fragment.hpp"
#include "lancet/pb/table/index.hpp"
#include "lancet/pb/table/manifest.hpp"
#include "lancet/pb/table/row_ids.hpp"
#include "lancet/pb/table/transaction.hpp"

// The messages whose codecs compiled mode's library instantiates (pb/message.hpp):
// the manifest, the transaction and what dataset code encodes or decodes on its own.
#define LANCET_PB_TABLE_CODECS(X)                                                          \
  X(lancet::pb::manifest) X(lancet::pb::transaction) X(lancet::pb::index_section)          \
  X(lancet::pb::index_metadata) X(lancet::pb::data_fragment) X(lancet::pb::row_id_sequence) \
  X(lancet::pb::row_dataset_version_sequence)
LANCET_PB_TABLE_CODECS(LANCET_PB_EXTERN_CODEC)
