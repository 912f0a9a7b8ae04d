// Compile-cost TU: write one Lance 2.2 file through a file sink, including what such a
// program needs: the writer, the 2.1-2.3 version policies (file/structural.hpp, when
// the tree has it), a sink and the array builders. (umbrella.cpp measures lancet.hpp.)
#include <lancet/arrow/builder.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/file_sink.hpp>
#if __has_include(<lancet/file/structural.hpp>)
#include <lancet/file/structural.hpp>
#endif

#include <cstdint>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto batch = lancet::arrow::make_batch({{"id", lancet::arrow::make_array<std::int64_t>({1, 2, 3})}});
  // Braces: with parentheses this line would declare a function (most vexing parse).
  lancet::file::file_writer<lancet::file::v2_2, lancet::io::file_sink> w{lancet::io::file_sink(argv[1])};
  w.write_batch(batch);
  w.finish();
  return 0;
}
