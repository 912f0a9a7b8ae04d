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
