// lancet's file layer: arrays, Lance files written and read (every version), sinks,
// sources and encoding policies. A program that writes one version may include less:
// file/writer.hpp, file/structural.hpp (2.1-2.3) or file/legacy.hpp (2.0), one sink.
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/executor.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/versions.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/io/source.hpp"
#include "lancet/schema/lance_schema.hpp"
