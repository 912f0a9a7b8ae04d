// Compile-cost TU: write (create) a Lance dataset from one batch, as a user would.
// The per-layer umbrella <lancet/dataset.hpp> is used when it exists (see run.sh).
#if __has_include(<lancet/dataset.hpp>)
#include <lancet/dataset.hpp>
#else
#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/write.hpp>
#endif

#include <cstdint>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string path = argv[1];
  auto batch = lancet::arrow::make_batch({{"id", lancet::arrow::make_array<std::int64_t>({1, 2, 3})}});
  lancet::dataset::write(path, batch, {.mode = lancet::dataset::write_mode::create});
  return 0;
}
