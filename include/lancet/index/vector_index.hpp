// Opens a dataset's IVF vector index (one built by lancet or by LanceDB) for search:
// centroids from index.idx, partitions read from auxiliary.idx on demand.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "lancet/core/error.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/index/index_files.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/search.hpp"

namespace lancet::index {

// A searcher over one IVF index of a dataset version (ours or one LanceDB built):
// centroids from index.idx, partitions read from auxiliary.idx on demand.
struct opened_index {
  vector_index_info info;
  index_file_info index_file;
  std::shared_ptr<storage_reader<io::file_source>> storage;
  std::unique_ptr<ivf_searcher> searcher;
};

// The index on `column` (or named `name` when given) of snapshot s; invalid_input_error
// naming the indexes there are when none matches.
inline opened_index open_vector_index(const dataset::snapshot& s, const std::string& column,
                                      const std::string& name = {}) {
  const auto all = list_indices(s);
  std::string names;
  for (const auto& i : all) {
    names += (names.empty() ? "" : ", ") + i.name;
    const bool match = name.empty() ? (!i.columns.empty() && i.columns[0] == column && !i.index_type.empty())
                                    : i.name == name;
    if (!match) continue;
    if (i.index_type.rfind("IVF_", 0) != 0 || i.index_type.find("HNSW") != std::string::npos)
      throw unsupported_error("index '" + i.name + "' is " + (i.index_type.empty() ? "not a vector index" : i.index_type) +
                              "; lancet searches IVF_FLAT, IVF_PQ, IVF_SQ and IVF_RQ");
    opened_index o;
    o.info = i;
    const std::string dir = index_directory(s.root, i.uuid);
    o.index_file = read_index_file(dir + "/" + std::string(index_file_name));
    o.storage = std::make_shared<storage_reader<io::file_source>>(open_storage(dir + "/" + std::string(auxiliary_file_name)));
    if (!o.index_file.ivf.centroids) throw corrupt_error("index '" + i.name + "': index.idx has no centroids");
    auto st = o.storage;
    auto mu = std::make_shared<std::mutex>();
    o.searcher = std::make_unique<ivf_searcher>(o.index_file.distance, *o.index_file.ivf.centroids, st->quantizer(),
                                                [st, mu](std::size_t p) {
                                                  std::lock_guard<std::mutex> lock(*mu);
                                                  return std::make_shared<const partition_contents>(st->read_partition(p));
                                                });
    return o;
  }
  throw invalid_input_error((name.empty() ? "no vector index on column '" + column + "'" : "no index named '" + name + "'") +
                            " (indexes: " + (names.empty() ? std::string("none") : names) + ")");
}

}  // namespace lancet::index
