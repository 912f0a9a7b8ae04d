// The subproject consumer: writes one file at the path given on the command line,
// reads it back, and prints "wrote <bytes> bytes to <path>" for run.sh to check.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <lancet/lancet.hpp>

namespace {

// Writes a small Lance file and returns its size; reading it back checks the rows.
std::uint64_t write_output(const std::string& path) {
  using namespace lancet;
  auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>({1, 2, 3})},
                                  {"name", arrow::string_array({"a", std::nullopt, "c"})}});
  file::file_writer<file::v2_0, io::file_sink> writer{io::file_sink(path, {.create_directories = true})};
  writer.write_batch(batch);
  const auto size = writer.finish().file_size;
  file::file_reader<io::file_source> reader{io::file_source(path)};
  if (reader.num_rows() != 3 || !arrow::array_equals(*reader.read().columns[1], *batch.columns[1]))
    throw lancet::corrupt_error("the file read back differs from what was written");
  return size;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_PATH\n", argv[0]);
    return 2;
  }
  try {
    const std::string path = argv[1];
    const std::uint64_t written = write_output(path);
    const lancet::io::file_source back(path);
    if (back.size() != written) {
      std::fprintf(stderr, "size mismatch: wrote %llu, file has %llu\n",
                   static_cast<unsigned long long>(written), static_cast<unsigned long long>(back.size()));
      return 1;
    }
    std::printf("wrote %llu bytes to %s\n", static_cast<unsigned long long>(written), path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer failed: %s\n", e.what());
    return 1;
  }
}
