// Quickstart: write a small table to a Lance file, then read it back.
//   quickstart [OUT.lance]
#include <iostream>
#include <lancet/lancet.hpp>

int main(int argc, char** argv) {
  using namespace lancet;
  const std::string path = argc > 1 ? argv[1] : "quickstart.lance";
  try {
    // Three columns: ids, names (with a null) and 4-d vectors.
    auto ids = arrow::make_array<std::int64_t>({1, 2, 3, 4});
    auto names = arrow::string_array({"alpha", "beta", std::nullopt, "delta"});
    auto vectors = arrow::make_fixed_size_list(arrow::make_array<float>(std::vector<float>{
                                                   0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0}),
                                               4);
    auto batch = arrow::make_batch({{"id", ids}, {"name", names}, {"vector", vectors}});

    file::file_writer<file::v2_0, io::file_sink> writer{io::file_sink(path)};
    writer.write_batch(batch);
    const auto result = writer.finish();
    std::cout << "wrote " << result.rows << " rows, " << result.file_size << " bytes to " << path << "\n";

    file::file_reader<io::file_source> reader{io::file_source(path)};
    auto back = reader.read();
    std::cout << "read back " << back.num_rows() << " rows; Lance format "
              << file::to_string(reader.version()) << "\n";
    for (std::int64_t i = 0; i < back.num_rows(); ++i) {
      const auto& name = *back.columns[1];
      std::cout << "  id=" << back.columns[0]->value<std::int64_t>(i)
                << " name=" << (name.is_valid(i) ? std::string(name.string_value(i)) : "null") << "\n";
    }
    return arrow::array_equals(*back.columns[0], *ids) && arrow::array_equals(*back.columns[1], *names) ? 0 : 1;
  } catch (const lancet::error& e) {
    std::cerr << "quickstart: " << e.what() << "\n";
    return 1;
  }
}
