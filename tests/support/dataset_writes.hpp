// Dataset writes in tests: write options in one call, deletes by id, and a sink factory
// through which a rival writer commits just before the writer under test publishes its
// manifest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/io/file_sink.hpp>

namespace lancet::testing {

inline dataset::write_options opts(dataset::write_mode mode,
                                   std::uint64_t max_rows_per_file = dataset::default_max_rows_per_file) {
  dataset::write_options o;
  o.mode = mode;
  o.max_rows_per_file = max_rows_per_file;
  return o;
}

// Deletes the rows whose `id` (an int64 column) satisfies `pred`.
template <class Pred>
void delete_where(const std::string& root, Pred pred) {
  auto d = dataset::dataset::open(root);
  auto b = d.to_batch({.columns = {"id"}, .with_row_id = true});
  const auto* ids = b.columns[0]->values<std::int64_t>();
  const auto* rid = b.columns[1]->values<std::uint64_t>();
  std::vector<std::uint64_t> del;
  for (std::int64_t i = 0; i < b.columns[0]->length; ++i)
    if (pred(ids[i])) del.push_back(rid[i]);
  dataset::delete_rows(root, del);
}

// The sink factory of a write: `rival` runs once, when the writer opens its first
// manifest (under _versions/), so another commit lands first.
struct racing_factory {
  std::function<void()> rival;
  bool done = false;
  int data_files = 0;  // data files opened through it (an operation run again opens more)
  io::file_sink operator()(const std::string& path, const io::file_sink_options& o) {
    data_files += path.find("/data/") != std::string::npos;
    if (!done && path.find("/_versions/") != std::string::npos) {
      done = true;
      rival();
    }
    return io::file_sink(path, o);
  }
};

}  // namespace lancet::testing
