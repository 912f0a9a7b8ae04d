// lancet's file layer: arrays (and the Arrow C Data Interface), Lance files written and
// read (every version, and one batch encoded in memory), sinks, sources, encoding
// policies, and JSON: rows as JSON Lines and schema files. io/asio_sink.hpp (a sink
// over Boost.Asio) is for programs that include it: no other header brings Boost.Asio.
// A program that writes one version may include less: file/writer.hpp,
// file/structural.hpp (2.1-2.3) or file/legacy.hpp (2.0), one sink.
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/c_data.hpp"
#include "lancet/arrow/c_format.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/executor.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/file/encoded_batch.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/io/source.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/json/files_reader.hpp"
#include "lancet/json/row_columns.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/json/rows_writer.hpp"
#include "lancet/json/schema_json.hpp"
#include "lancet/json/value_path.hpp"
#include "lancet/schema/lance_schema.hpp"
