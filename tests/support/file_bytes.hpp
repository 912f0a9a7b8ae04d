// A Lance file written in memory: its bytes, for tests that read them back.
#pragma once

#include <utility>
#include <vector>

#include <lancet/arrow/array.hpp>
#include <lancet/core/buffer.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/memory_sink.hpp>

namespace lancet::testing {

// The bytes of a file of version `Version` holding `batches`, written with `o` and
// the encoding `Strategy` (the version's own by default).
template <class Version, class Strategy = typename Version::default_strategy>
shared_bytes write_file(const std::vector<arrow::record_batch>& batches, file::writer_options o = {},
                        Strategy strategy = {}) {
  file::file_writer<Version, io::memory_sink, Strategy> w(io::memory_sink{}, o, std::move(strategy));
  for (const auto& b : batches) w.write_batch(b);
  w.finish();
  return w.sink().take_shared();
}

}  // namespace lancet::testing
