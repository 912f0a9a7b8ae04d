// A user-written encoding policy: every column is encoded as Lance 12 would encode it,
// except "name", whose mini-block pages are compressed with zstd at level 9.
//
//   encoding_policy DIR    writes a 2.2 dataset of 1,000 rows to DIR (id, name)
//
// A policy is a plain class (no virtual functions): derive from default_policy,
// redefine the decisions you want to make and call default_policy's for the rest.
// file_writer takes it as its third template argument; dataset::write as its last.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/encoding/structural/policy.hpp>

namespace structural = lancet::encoding::structural;  // the encodings of 2.1 and later

struct zstd9_names : structural::default_policy {
  structural::page_plan plan_page(const structural::leaf_info& leaf, const structural::data_block& values,
                                  const structural::page_facts& facts) const {
    structural::page_plan plan = default_policy::plan_page(leaf, values, facts);
    if (leaf.column == "name" && plan.layout == structural::page_plan::layout_kind::miniblock) {
      plan.general = structural::compression_scheme::zstd;
      plan.general_level = 9;
    }
    return plan;
  }
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: encoding_policy DIR\n");
    return 2;
  }
  try {
    std::vector<std::optional<std::int64_t>> ids;
    std::vector<std::optional<std::string>> names;
    for (std::int64_t i = 0; i < 1000; ++i) {
      ids.emplace_back(i);
      if (i % 7 == 3) names.emplace_back(std::nullopt);
      else names.emplace_back("name-" + std::to_string(i));
    }
    auto batch = lancet::arrow::make_batch({{"id", lancet::arrow::make_array<std::int64_t>(ids)},
                                            {"name", lancet::arrow::string_array(names)}});
    lancet::dataset::write_options o;
    o.mode = lancet::dataset::write_mode::create;
    o.storage_version = lancet::file::format_version::v2_2;
    auto r = lancet::dataset::write(argv[1], batch, o, lancet::dataset::default_sink_factory{}, zstd9_names{});
    std::printf("wrote %llu rows (version %llu) with zstd level 9 on 'name'\n",
                static_cast<unsigned long long>(r.rows_written), static_cast<unsigned long long>(r.version));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "encoding_policy: %s\n", e.what());
    return 1;
  }
  return 0;
}
