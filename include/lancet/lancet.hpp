// lancet: write and read Lance files and datasets, build Lance-compatible IVF indexes.
// One include for everything public.
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/index/ivf_builder.hpp"
#include "lancet/index/vector_index.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/io/source.hpp"
#include "lancet/schema/lance_schema.hpp"
