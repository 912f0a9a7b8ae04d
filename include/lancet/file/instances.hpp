// The configurations compiled mode (core/config.hpp) compiles once, into the library:
// a file_writer of every version to io::file_sink and to io::memory_sink with the
// version's default strategy, and those strategies. Programs in compiled mode see
// `extern template` declarations of them; src/lancet.cpp instantiates them.
#pragma once

#include "lancet/core/config.hpp"
#include "lancet/encoding/structural/strategy.hpp"
#include "lancet/file/legacy.hpp"
#include "lancet/file/structural.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/memory_sink.hpp"

// X(version, sink) for each precompiled file_writer.
#define LANCET_FILE_WRITER_INSTANCES(X) \
  X(v2_0, io::file_sink)                \
  X(v2_1, io::file_sink)                \
  X(v2_2, io::file_sink)                \
  X(v2_3, io::file_sink)                \
  X(v2_0, io::memory_sink)              \
  X(v2_1, io::memory_sink)              \
  X(v2_2, io::memory_sink)              \
  X(v2_3, io::memory_sink)

// X(strategy, sink) for each precompiled detail::file_writer_impl (what those writers
// share: one per strategy class, 2.1-2.3 having one).
#define LANCET_FILE_WRITER_IMPL_INSTANCES(X)                                         \
  X(encoding::legacy::default_strategy, io::file_sink)                                 \
  X(encoding::structural::structural_encodings<encoding::structural::default_policy>, io::file_sink) \
  X(encoding::legacy::default_strategy, io::memory_sink)                               \
  X(encoding::structural::structural_encodings<encoding::structural::default_policy>, io::memory_sink)

#if !LANCET_HEADER_ONLY
namespace lancet {
#define LANCET_EXTERN_FILE_WRITER(V, S) extern template class file::file_writer<file::V, S>;
LANCET_FILE_WRITER_INSTANCES(LANCET_EXTERN_FILE_WRITER)
#undef LANCET_EXTERN_FILE_WRITER
#define LANCET_EXTERN_FILE_WRITER_IMPL(St, S) extern template class file::detail::file_writer_impl<S, St>;
LANCET_FILE_WRITER_IMPL_INSTANCES(LANCET_EXTERN_FILE_WRITER_IMPL)
#undef LANCET_EXTERN_FILE_WRITER_IMPL
extern template class encoding::structural::structural_encodings<encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<1, encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<2, encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<3, encoding::structural::default_policy>;
}  // namespace lancet
#endif
