// A user-written sink: every file a dataset write produces goes through it.
//
//   user_sink DATASET_DIR
//
// lancet writes through "sinks": anything with write(bytes), position() and finish()
// (the io::sink concept, lancet/io/sink.hpp). dataset::write takes a *sink factory*,
// called once per file it creates (data files, the transaction file, the manifest),
// so a program can put its own sink under a dataset write: to upload to an object
// store, to throttle, to encrypt, or, as here, to checksum what is written.
//
// checksum_sink wraps io::file_sink (which does the real work: a temporary file,
// fsync, publication by rename) and computes the FNV-1a 64 hash of every byte that
// passes through it. After the write, the program prints one line per file:
//
//   <fnv1a64 in hex> <bytes> <path>
//
// The test (tests/examples/run.sh) recomputes the hash over each file on disk, and
// has LanceDB read the dataset.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/io/abortable_sink.hpp>
#include <lancet/io/file_sink.hpp>

using namespace lancet;

// FNV-1a, 64 bits: tiny, dependency-free, and enough to notice a changed byte.
class fnv1a64 {
 public:
  void update(const std::uint8_t* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;  // the 64-bit FNV prime
    }
  }
  std::uint64_t value() const noexcept { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;  // the 64-bit FNV offset basis
};

// What the sinks report once their file is published. Shared by every sink the
// factory makes; a write may finish files from several threads, hence the mutex.
struct checksum_log {
  struct entry {
    std::string path;
    std::uint64_t bytes;
    std::uint64_t fnv1a64;
  };
  std::mutex mu;
  std::vector<entry> files;
  void add(entry e) {
    std::lock_guard lock(mu);
    files.push_back(std::move(e));
  }
};

// The sink. The contract (io/sink.hpp, io/abortable_sink.hpp):
//   write(bytes)  append; throw lancet::io_error on failure
//   position()    bytes appended so far
//   finish()      make the file durable and visible; called once, last
//   abort()       optional, noexcept: the writer gave up, discard what was written;
//                 a sink destroyed without finish() must discard it too
// Sinks are moved around (the file writer owns its sink), so this one is move-only,
// like the file_sink it holds.
class checksum_sink {
 public:
  checksum_sink(io::file_sink inner, std::string path, checksum_log& log)
      : inner_(std::move(inner)), path_(std::move(path)), log_(&log) {}

  void write(bytes_view bytes) {
    inner_.write(bytes);  // first the file: a failed write must not count
    hash_.update(bytes.data(), bytes.size());
  }

  std::uint64_t position() const noexcept { return inner_.position(); }

  void finish() {
    inner_.finish();  // fsync + rename: from here on the file exists at path_
    log_->add({path_, inner_.position(), hash_.value()});
  }

  // Discards the file: file_sink removes its temporary file, so nothing half-written
  // is ever published under path_. Never throws; safe to call more than once.
  void abort() noexcept { inner_.abort(); }

 private:
  io::file_sink inner_;
  std::string path_;
  checksum_log* log_;
  fnv1a64 hash_;
};

static_assert(io::abortable_sink<checksum_sink>);

// The table every example writes: 1000 rows, id = i, name = "name-i" (null when
// i % 7 == 3).
arrow::record_batch example_table() {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  for (std::int64_t i = 0; i < 1000; ++i) {
    ids.push_back(i);
    names.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>("name-" + std::to_string(i)));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)}, {"name", arrow::string_array(names)}});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: user_sink DATASET_DIR\n";
    return 2;
  }
  const std::string root = argv[1];
  try {
    checksum_log log;
    // The sink factory: called with the final path of each file and the options the
    // write wants for it (exclusive creation, fsync, ...); returns a sink.
    auto factory = [&log](const std::string& path, const io::file_sink_options& options) {
      return checksum_sink(io::file_sink(path, options), path, log);
    };

    dataset::write_options options;
    options.mode = dataset::write_mode::overwrite;
    const auto result = dataset::write(root, example_table(), options, factory);

    std::cout << "wrote " << result.rows_written << " rows, version " << result.version << "; files:\n";
    for (const auto& f : log.files) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.fnv1a64));
      std::cout << hex << " " << f.bytes << " " << f.path << "\n";
    }
    return 0;
  } catch (const lancet::error& e) {
    std::cerr << "user_sink: " << e.what() << "\n";
    return 1;
  }
}
