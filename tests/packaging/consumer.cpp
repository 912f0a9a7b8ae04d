// The packaging consumer: a program built against an *installed* lancet (found with
// pkg-config or CMake's find_package, see run.sh). It writes a small Lance 2.2
// dataset at the path given on the command line, which run.sh then reads with LanceDB.
// It includes the headers it uses, as a user would (the umbrella lancet.hpp costs half
// as much compile time again; the installed CLI, built from it, is checked in run.sh).
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATASET\n", argv[0]);
    return 2;
  }
  try {
    using namespace lancet;
    const std::string root = argv[1];
    auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>({1, 2, 3})},
                                    {"name", arrow::string_array({"alpha", std::nullopt, "gamma"})},
                                    {"score", arrow::make_array<double>({0.5, -1.25, std::nullopt})}});
    dataset::write_options o;
    o.mode = dataset::write_mode::create;
    o.storage_version = file::format_version::v2_2;
    const auto r = dataset::write(root, batch, o);
    // Read back with lancet too: what LanceDB is asked about must be what was written.
    auto ds = dataset::dataset::open(root);
    if (ds.count_rows() != 3) throw corrupt_error("read back " + std::to_string(ds.count_rows()) + " rows, not 3");
    std::printf("wrote %llu rows to %s (version %llu, format %s)\n", static_cast<unsigned long long>(r.rows_written),
                root.c_str(), static_cast<unsigned long long>(r.version),
                std::string(file::to_string(r.storage_version)).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer failed: %s\n", e.what());
    return 1;
  }
}
