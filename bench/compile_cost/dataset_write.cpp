// Compile-cost TU: write (create) a Lance dataset from one batch, including what such a
// program needs: dataset/write.hpp and the array builders. (umbrella.cpp measures
// lancet.hpp, which includes the readers, compaction and the index layer too.)
#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/write.hpp>

#include <cstdint>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string path = argv[1];
  auto batch = lancet::arrow::make_batch({{"id", lancet::arrow::make_array<std::int64_t>({1, 2, 3})}});
  lancet::dataset::write(path, batch, {.mode = lancet::dataset::write_mode::create});
  return 0;
}
