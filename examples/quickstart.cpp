// Quickstart: write a small Lance dataset (format 2.2, as Lance 12 writes by default)
// and read it back.
//   quickstart DATASET_DIR
#include <iostream>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/lancet.hpp>

int main(int argc, char** argv) {
  using namespace lancet;
  const std::string path = argc > 1 ? argv[1] : "quickstart.lance";
  try {
    // 1000 rows: ids, names (every 7th null) and 8-d vectors around two centres.
    std::vector<std::int64_t> ids;
    std::vector<std::optional<std::string>> names;
    std::vector<float> vec;
    for (int i = 0; i < 1000; ++i) {
      ids.push_back(i);
      names.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>("row-" + std::to_string(i)));
      for (int d = 0; d < 8; ++d) vec.push_back(float((i % 2) * 10 + (i * 31 + d * 17) % 13) / 13.0f);
    }
    auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                                    {"name", arrow::string_array(names)},
                                    {"vector", arrow::make_fixed_size_list(arrow::make_array<float>(vec), 8)}});
    dataset::write_options options;
    options.mode = dataset::write_mode::overwrite;
    const auto written = dataset::write(path, batch, options);
    std::cout << "lancet wrote " << written.rows_written << " rows to " << path << " (version " << written.version
              << ", Lance format " << file::to_string(written.storage_version) << ")\n";

    auto ds = dataset::dataset::open(path);
    auto back = ds.to_batch({.columns = {"id", "name"}, .limit = 3});
    std::cout << "lancet reads back " << ds.count_rows() << " rows; the first: ";
    for (std::int64_t i = 0; i < back.num_rows(); ++i)
      std::cout << back.columns[0]->value<std::int64_t>(i) << "=" << back.columns[1]->string_value(i) << " ";
    std::cout << "\n";
    return ds.count_rows() == 1000 ? 0 : 1;
  } catch (const lancet::error& e) {
    std::cerr << "quickstart: " << e.what() << "\n";
    return 1;
  }
}
