// Every fuzz target in one binary, so that the library's code is compiled once (one
// clang -fsanitize=fuzzer,address,undefined compile instead of one per target). The
// binary runs the target it is named after (tests/fuzz/run.sh links fuzz_page,
// fuzz_file, ... to it), or the one LANCET_FUZZ_TARGET names.
// Each target file is included in a namespace of its own, after every header it uses,
// so that the helpers in its anonymous namespace do not collide.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/encoding/structural/decoder.hpp"
#include "lancet/encoding/structural/field_encoders.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/scalar/bitmap_search.hpp"
#include "lancet/index/scalar/btree_search.hpp"
#include "lancet/io/source.hpp"
#include "lancet/json/rows_reader.hpp"
#include "lancet/json/schema_json.hpp"
#include "lancet/pb/table.hpp"
#include "../support/mem_columns.hpp"
#include "../support/random_data.hpp"

#define LANCET_FUZZ_ALL
#include "fuzz_target.hpp"

// clang-format off
namespace target_file {
#include "fuzz_file.cpp"
}
namespace target_page {
#include "fuzz_page.cpp"
}
namespace target_manifest {
#include "fuzz_manifest.cpp"
}
namespace target_index {
#include "fuzz_index.cpp"
}
namespace target_deletion {
#include "fuzz_deletion.cpp"
}
namespace target_json {
#include "fuzz_json.cpp"
}
namespace target_filter {
#include "fuzz_filter.cpp"
}
namespace target_scalar_index {
#include "fuzz_scalar_index.cpp"
}
// clang-format on

namespace {

using entry = int (*)(const std::uint8_t*, std::size_t);
struct named_target {
  const char* name;
  entry run;
};
constexpr named_target targets[] = {
    {"fuzz_file", target_file::fuzz_file_one_input},
    {"fuzz_page", target_page::fuzz_page_one_input},
    {"fuzz_manifest", target_manifest::fuzz_manifest_one_input},
    {"fuzz_index", target_index::fuzz_index_one_input},
    {"fuzz_deletion", target_deletion::fuzz_deletion_one_input},
    {"fuzz_json", target_json::fuzz_json_one_input},
    {"fuzz_filter", target_filter::fuzz_filter_one_input},
    {"fuzz_scalar_index", target_scalar_index::fuzz_scalar_index_one_input},
};
entry chosen = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* name = std::getenv("LANCET_FUZZ_TARGET");
  if (name == nullptr && *argc > 0) {
    name = (*argv)[0];
    if (const char* slash = std::strrchr(name, '/')) name = slash + 1;
  }
  for (const auto& t : targets)
    if (name != nullptr && std::strcmp(name, t.name) == 0) chosen = t.run;
  if (chosen == nullptr) {
    std::fprintf(stderr, "fuzz: no target named '%s' (name the binary or set LANCET_FUZZ_TARGET to one of:",
                 name ? name : "");
    for (const auto& t : targets) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, ")\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return chosen(data, size); }
