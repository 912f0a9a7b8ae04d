// default_sink_factory: the sinks a dataset writes through (data files, deletion files,
// transaction files, manifests) unless a program passes its own factory: each on the
// storage of its path (io::storage_for: local files, or the object store mounted for a
// URI), all behind one sink type so that the writers are compiled once.
#pragma once

#include <string>

#include "lancet/io/any_sink.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/storage.hpp"

namespace lancet::dataset {

// Makes the sinks a commit writes through. Tests substitute sinks that fail on purpose.
// A local path gets a file_sink with exactly the options given; on an object store,
// `exclusive` becomes a conditional create and `sync` is what every upload is.
struct default_sink_factory {
  io::any_sink operator()(const std::string& path, const io::file_sink_options& options) const {
    const auto st = io::storage_for(path);
    if (st.is_local()) return io::any_sink(io::file_sink(io::local_path(path), options));
    return st.create_sink(path, {.if_absent = options.exclusive, .durable = options.sync});
  }
};

}  // namespace lancet::dataset
