// The subproject consumer: writes one file at the path given on the command line,
// reads it back, and prints "wrote <bytes> bytes to <path>" for run.sh to check.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <lancet/io/file_sink.hpp>
#include <lancet/io/file_source.hpp>

namespace {

// Writes the consumer's file and returns its size. For now a few bytes through
// lancet's file sink; once the file writer exists this becomes a real Lance file.
std::uint64_t write_output(const std::string& path) {
  lancet::io::file_sink sink(path, {.create_directories = true});
  constexpr std::string_view payload = "hello from a lancet consumer\n";
  sink.write({reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()});
  sink.finish();
  return sink.position();
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
