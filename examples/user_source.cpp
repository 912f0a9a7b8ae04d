// A user-written source: every file a dataset read opens comes through it.
//
//   user_source DATASET_DIR
//
// lancet reads through "sources": anything with size() and read(offset, length)
// returning shared_bytes (the io::source concept, lancet/io/source.hpp). Opening a
// dataset takes a *source factory*, called with the path of each file the read needs
// (manifests, data files, deletion files), so a program can serve a dataset's bytes
// from wherever it likes: an object store, a database, a cache.
//
// Here the source serves files from an in-memory cache: the first open of a path
// loads the whole file, later opens (another scan, another dataset object) reuse it,
// and every read is a zero-copy slice of the cached bytes. The cache counts what it
// loads and what it serves.
//
// When DATASET_DIR holds no dataset, the program first writes the example table
// (1000 rows: id = i, name = "name-i", null when i % 7 == 3) with lancet; the test
// (tests/examples/run.sh) has LanceDB write it instead. Either way the program then
// reads it through the cache, checks every value, and prints the cache's counters.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/io/source.hpp>

using namespace lancet;

// Whole files kept in memory, by path. Thread-safe: a dataset may open files from
// several threads at once.
class file_cache {
 public:
  // The bytes of `path`, loaded on first use.
  shared_bytes get(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it != files_.end()) return it->second;
    // A real cache would fetch from its backing store here; this one reads the local
    // file once (lancet's own file source does the reading).
    shared_bytes bytes = io::file_source(path).read_all();
    files_loaded += 1;
    bytes_loaded += bytes.size();
    return files_.emplace(path, std::move(bytes)).first->second;
  }

  // Counters (atomic: sources read from several threads).
  std::atomic<std::uint64_t> files_loaded{0}, bytes_loaded{0};  // fetched into the cache
  std::atomic<std::uint64_t> opens{0}, reads{0}, bytes_served{0};  // asked of it

 private:
  std::mutex mu_;
  std::map<std::string, shared_bytes> files_;
};

// The source: one cached file. What lancet needs is size() and read(); name() is
// optional (errors use it) and so is is_zero_copy() (true tells the reader that
// slices cost nothing, so it need not merge nearby ranges or split large ones), and
// read_into(ranges, out), for a source that reads many small ranges at once cheaper
// than one by one (io/source.hpp; without it, each range is one read()).
class cached_source {
 public:
  cached_source(std::string path, file_cache& cache)
      : path_(std::move(path)), bytes_(cache.get(path_)), cache_(&cache) {
    cache.opens += 1;
  }

  std::uint64_t size() const noexcept { return bytes_.size(); }

  // Bytes [offset, offset + length). A range past the end must be a corrupt_error
  // (the file's metadata points outside it); io::check_range throws exactly that.
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const {
    io::check_range(offset, length, size(), path_);
    cache_->reads += 1;
    cache_->bytes_served += length;
    return bytes_.slice(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
  }

  bool is_zero_copy() const noexcept { return true; }
  const std::string& name() const noexcept { return path_; }

 private:
  std::string path_;
  shared_bytes bytes_;
  file_cache* cache_;
};

static_assert(io::source<cached_source>);

// Writes the example table with lancet.
void write_example_table(const std::string& root) {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  for (std::int64_t i = 0; i < 1000; ++i) {
    ids.push_back(i);
    names.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>("name-" + std::to_string(i)));
  }
  dataset::write(root, arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                                          {"name", arrow::string_array(names)}}));
}

// Checks one row; returns an error message, or "" when it is right.
std::string check_row(std::int64_t id, bool has_name, const std::string& name) {
  if (id < 0 || id >= 1000) return "unexpected id " + std::to_string(id);
  const bool want_null = id % 7 == 3;
  if (want_null && has_name) return "id " + std::to_string(id) + ": name should be null, is '" + name + "'";
  if (!want_null && (!has_name || name != "name-" + std::to_string(id)))
    return "id " + std::to_string(id) + ": name is " + (has_name ? "'" + name + "'" : "null") + ", expected 'name-" +
           std::to_string(id) + "'";
  return "";
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: user_source DATASET_DIR\n";
    return 2;
  }
  const std::string root = argv[1];
  try {
    if (!std::filesystem::exists(std::filesystem::path(root) / "_versions")) {
      write_example_table(root);
      std::cout << "wrote the example table to " << root << " with lancet\n";
    }

    file_cache cache;
    // The source factory: path in, source out. Any callable returning a type that
    // satisfies io::source will do; lancet holds the sources type-erased.
    auto from_cache = [&cache](const std::string& path) { return cached_source(path, cache); };

    // Every file of this dataset (manifest, data files, deletion files) is read
    // through from_cache; so are scans, takes, checkout() and latest() of it.
    auto ds = dataset::dataset::open(root, std::nullopt, from_cache);

    // Scan both columns, checking each row and that every id comes exactly once.
    std::vector<int> seen(1000, 0);
    std::uint64_t rows = 0;
    for (auto scan = ds.scan({.columns = {"id", "name"}, .batch_size = 256}); auto batch = scan.next();) {
      const auto& id = *batch->columns[0];
      const auto& name = *batch->columns[1];
      for (std::int64_t r = 0; r < batch->num_rows(); ++r, ++rows) {
        const auto i = id.value<std::int64_t>(r);
        const bool valid = name.is_valid(r);
        const auto problem = check_row(i, valid, valid ? std::string(name.string_value(r)) : std::string());
        if (!problem.empty()) {
          std::cerr << "user_source: " << problem << "\n";
          return 1;
        }
        seen[std::size_t(i)] += 1;
      }
    }
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] != 1) {
        std::cerr << "user_source: id " << i << " was read " << seen[i] << " times\n";
        return 1;
      }

    // A second dataset object over the same cache: nothing is loaded again.
    const auto loaded = cache.files_loaded.load();
    const auto again = dataset::dataset::open(root, std::nullopt, from_cache);
    const auto rows_again = again.count_rows();

    std::cout << "read " << rows << " rows through the cache (count_rows " << rows_again << ")\n"
              << "files loaded " << cache.files_loaded << ", bytes loaded " << cache.bytes_loaded << ", opens "
              << cache.opens << ", reads " << cache.reads << ", bytes served " << cache.bytes_served << "\n";
    if (rows != 1000 || rows_again != 1000 || cache.bytes_served == 0 || cache.files_loaded != loaded) {
      std::cerr << "user_source: unexpected counts\n";
      return 1;
    }
    std::cout << "ok 1000\n";
    return 0;
  } catch (const lancet::error& e) {
    std::cerr << "user_source: " << e.what() << "\n";
    return 1;
  }
}
