// default_sink_factory: the sinks a dataset writes through (data files, transaction
// files, manifests) unless a program passes its own factory: local files.
#pragma once

#include <string>

#include "lancet/io/file_sink.hpp"

namespace lancet::dataset {

// Makes the sinks a commit writes through: data files, transaction files and
// manifests. Tests substitute sinks that fail on purpose.
struct default_sink_factory {
  io::file_sink operator()(const std::string& path, const io::file_sink_options& options) const {
    return io::file_sink(path, options);
  }
};

}  // namespace lancet::dataset
