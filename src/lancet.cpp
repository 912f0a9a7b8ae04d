// lancet's compiled mode (core/config.hpp): the one translation unit that holds the
// definitions a program in compiled mode links to instead of compiling them in every
// translation unit: the default encoding policies and strategies, file writers of the
// common configurations (the end of file/writer.hpp), dataset::write's entry points (the
// storage version chosen at run time becomes a writer type here, once per program), the
// non-template functions and members the public dataset headers declare (opening,
// scanning and taking, deleting, compacting, changing columns, distributed writes and commits), the 2.1+
// field decoders file readers call, and the index layer's entry points (building,
// opening, optimising, remapping: each instantiates the stages for every element type
// and quantizer).
#define LANCET_BUILDING_LIBRARY 1

#include "lancet/core/config.hpp"
#include "lancet/dataset/compact.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/delete.hpp"
#include "lancet/dataset/distributed.hpp"
#include "lancet/dataset/schema_change.hpp"
#include "lancet/dataset/update.hpp"
#include "lancet/dataset/merge_insert.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_json_lines.hpp"
#include "lancet/encoding/legacy/field_encoders.hpp"
#include "lancet/encoding/structural/decoder.hpp"
#include "lancet/encoding/structural/field_encoders.hpp"
#include "lancet/encoding/structural/policy_impl.hpp"
#include "lancet/encoding/structural/strategy.hpp"
#include "lancet/file/legacy.hpp"
#include "lancet/file/structural.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/memory_sink.hpp"
#include "lancet/index.hpp"
#include "lancet/query.hpp"
#include "lancet/pb/file.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/pb/table.hpp"

// The instruction set this library was built for (core/config.hpp): compiled-mode
// programs built for another one fail to link.
extern "C" const int LANCET_ARCH_SYMBOL = 1;

// The protobuf codecs programs declare extern (pb/message.hpp).
LANCET_PB_TABLE_CODECS(LANCET_PB_DEFINE_CODEC)
LANCET_PB_FILE_CODECS(LANCET_PB_DEFINE_CODEC)
LANCET_PB_FILE2_CODECS(LANCET_PB_DEFINE_CODEC)

namespace lancet {
#define LANCET_INSTANTIATE_FILE_WRITER(V, S) template class file::file_writer<file::V, S>;
LANCET_FILE_WRITER_INSTANCES(LANCET_INSTANTIATE_FILE_WRITER)
#undef LANCET_INSTANTIATE_FILE_WRITER
#define LANCET_INSTANTIATE_FILE_WRITER_IMPL(St, S) template class file::detail::file_writer_impl<S, St>;
LANCET_FILE_WRITER_IMPL_INSTANCES(LANCET_INSTANTIATE_FILE_WRITER_IMPL)
#undef LANCET_INSTANTIATE_FILE_WRITER_IMPL
template class encoding::structural::structural_encodings<encoding::structural::default_policy>;
template class encoding::structural::structural_strategy<1, encoding::structural::default_policy>;
template class encoding::structural::structural_strategy<2, encoding::structural::default_policy>;
template class encoding::structural::structural_strategy<3, encoding::structural::default_policy>;
// Searches for every query type (index/search/ivf_searcher.hpp, index/search/vector_index.hpp).
#define LANCET_INSTANTIATE_SEARCH_IN(S, Q)                                                                      \
  template std::vector<std::pair<std::uint32_t, float>> index::S::probe<Q>(const Q*, std::size_t, std::size_t) \
      const;                                                                                                    \
  template std::vector<index::neighbor> index::S::search<Q>(const Q*, std::size_t, const index::search_params&) \
      const;                                                                                                    \
  template std::vector<std::vector<index::neighbor>> index::S::search_many<Q>(                                  \
      const Q*, std::size_t, std::size_t, const index::search_params&) const;
#define LANCET_INSTANTIATE_SEARCH(Q) \
  LANCET_INSTANTIATE_SEARCH_IN(ivf_searcher, Q) LANCET_INSTANTIATE_SEARCH_IN(segmented_searcher, Q)
LANCET_SEARCH_QUERY_TYPES(LANCET_INSTANTIATE_SEARCH)
#undef LANCET_INSTANTIATE_SEARCH
#undef LANCET_INSTANTIATE_SEARCH_IN
}  // namespace lancet
