// The shuffle stage of the IVF builder: encoded rows arrive in scan order, each with
// its partition; they are buffered up to a memory budget and spilled, grouped by
// partition, to temporary Lance files ("runs"); at the end the runs are merged
// partition by partition, in partition order, into the index's storage writer.
//
//   index::shuffler sh(k, quantizer, "/tmp/spill", 64 << 20, &pool);
//   sh.add(batch);                      // index::shuffle_batch: partitions, row ids, codes
//   sh.write_partitions(aux);           // aux: index::storage_writer<...>
//
// A run file (also the format of a precomputed shuffle buffer, Lance's
// shuffle-buffers option) holds `_rowid: uint64`, `__ivf_part_id: uint32` and the
// storage columns of the quantizer (codes row-major, RaBitQ factors), rows sorted by
// partition. Within a partition, rows keep the order they were added in (runs are
// merged in the order they were written), so the result does not depend on the
// budget. Merging reads the partitions of a window (bounded by an eighth of the
// budget) in parallel on the pool and writes them in order. One partition larger
// than the budget is still held whole while it is written.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include <boost/asio/thread_pool.hpp>


#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/core/release_memory.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/ivf/storage_writer.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

// Encoded rows (codes row-major), each with its partition. Rows whose partition is
// simd::no_index are dropped by the shuffler.
struct shuffle_batch {
  std::vector<std::uint32_t> partitions;
  std::vector<std::uint64_t> row_ids;
  std::vector<std::uint8_t> codes;
  std::vector<float> add_factors, scale_factors, error_factors;  // IVF_RQ
  double loss = 0;  // sum of the rows' distances to their centroids (the IVF loss)
  std::size_t size() const noexcept { return row_ids.size(); }
};

// Appends n rows assigned to `part` (under k centroids) to out: their partitions, ids
// and codec c's codes (width bytes each) and factors. `wide`: the rows as float64 when
// the column holds them, else nullptr.
template <class T, class C>
inline void append_encoded(shuffle_batch& out, const quantizer_codec<T>& c, std::size_t width, const T* rows,
                           const double* wide, std::size_t n, const C* cents, std::size_t k,
                           const std::uint32_t* part, const std::uint64_t* ids, boost::asio::thread_pool* pool) {
  const std::size_t at = out.size();
  out.partitions.insert(out.partitions.end(), part, part + n);
  out.row_ids.insert(out.row_ids.end(), ids, ids + n);
  out.codes.resize((at + n) * width);
  std::uint8_t* codes = out.codes.data() + at * width;
  std::visit(
      [&](const auto& q) {
        q.encode(rows, wide, n, cents, k, part, codes, row_factors{&out.add_factors, &out.scale_factors,
                                                                   &out.error_factors}, pool);
      },
      c);
}

// The schema of a run / shuffle buffer file for quantizer q.
inline arrow::schema shuffle_schema(const quantizer_params& q) {
  arrow::schema s = storage_schema(q);
  s.metadata.clear();
  s.fields.insert(s.fields.begin() + 1, arrow::field(std::string(detail::partition_id_column), arrow::uint32(), false));
  return s;
}

// Where a build's shuffle runs spill: `spill_root`/`name` when a root is given, else
// `_shuffle` inside the new index directory when that is local, else the system's
// temporary directory: runs are scratch files on local disk, also for a dataset on an
// object store.
inline std::string spill_directory(const std::string& index_dir, const std::string& spill_root,
                                   const std::string& name) {
  if (!spill_root.empty()) return spill_root + "/" + name;
  if (io::storage_for(index_dir).is_local()) return index_dir + "/_shuffle";
  return (std::filesystem::temp_directory_path() / name).string();
}

class shuffler {
 public:
  // spill_dir is created when the first run is spilled; runs are removed by the
  // destructor. memory_budget: what the shuffle may hold in all: buffered rows take
  // a quarter, the merge window an eighth; the rest is left for page reads, encoded
  // batches, the writers' page caches and allocator slack.
  shuffler(std::size_t num_partitions, quantizer_params q, std::string spill_dir, std::uint64_t memory_budget,
           boost::asio::thread_pool* pool = nullptr)
      : k_(num_partitions),
        q_((validate(q), std::move(q))),
        rq_(has_factors(q_)),
        width_(code_bytes(q_)),
        schema_(shuffle_schema(q_)),
        dir_(std::move(spill_dir)),
        budget_(std::max<std::uint64_t>(memory_budget, 1 << 20)),
        pool_(pool) {
    if (k_ == 0) throw invalid_input_error("shuffler: no partitions");
    if (ex_code_bytes(q_))
      throw unsupported_error("shuffler: RaBitQ codes of more than 1 bit are not shuffled");
    cap_rows_ = std::max<std::size_t>(1, std::size_t(budget_ / 4 / row_bytes()));
  }
  shuffler(const shuffler&) = delete;
  shuffler& operator=(const shuffler&) = delete;
  ~shuffler() {
    for (const auto& r : runs_)
      if (r.owned) {
        std::error_code ec;
        std::filesystem::remove(r.path, ec);
      }
  }

  // Bytes one buffered row takes.
  std::size_t row_bytes() const noexcept { return 8 + 4 + width_ + (rq_ ? 12 : 0); }
  // Rows buffered before a spill (a quarter of the budget); set lower to spill earlier.
  std::size_t buffer_rows() const noexcept { return cap_rows_; }
  void set_buffer_rows(std::size_t rows) noexcept { cap_rows_ = std::max<std::size_t>(1, rows); }

  std::uint64_t rows() const noexcept { return rows_; }
  std::size_t runs() const noexcept { return runs_.size(); }
  std::size_t runs_spilled() const noexcept { return spilled_; }
  std::size_t num_partitions() const noexcept { return k_; }

  void add(const shuffle_batch& b) {
    const std::size_t n = b.size();
    if (b.partitions.size() != n || b.codes.size() != n * width_ ||
        (rq_ && (b.add_factors.size() != n || b.scale_factors.size() != n || b.error_factors.size() != n)))
      throw invalid_input_error("shuffler: a batch of " + std::to_string(n) + " rows has columns of other lengths");
    reserve();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t p = b.partitions[i];
      if (p == simd::no_index) continue;
      if (p >= k_)
        throw invalid_input_error("row " + std::to_string(b.row_ids[i]) + " is assigned partition " +
                                  std::to_string(p) + ", the index has " + std::to_string(k_));
      if (ids_.size() >= cap_rows_) spill();
      part_.push_back(p);
      ids_.push_back(b.row_ids[i]);
      codes_.insert(codes_.end(), b.codes.begin() + std::ptrdiff_t(i * width_),
                    b.codes.begin() + std::ptrdiff_t((i + 1) * width_));
      if (rq_) {
        add_.push_back(b.add_factors[i]);
        scale_.push_back(b.scale_factors[i]);
        error_.push_back(b.error_factors[i]);
      }
      ++rows_;
    }
  }

  // A precomputed shuffle buffer (a file in shuffle_schema(q), rows sorted by
  // partition): merged like a run, after the runs added before it. Not removed.
  void add_buffer_file(const std::string& path) {
    if (!ids_.empty()) spill();  // keep the order rows arrived in
    file::file_reader<io::file_source> r{io::file_source(path)};
    const std::string what = "shuffle buffer '" + path + "'";
    for (const auto& f : schema_.fields) {
      const auto& have = r.arrow_schema().fields;
      const auto got = std::find_if(have.begin(), have.end(), [&](const arrow::field& x) { return x.name == f.name; });
      if (got == have.end()) throw invalid_input_error(what + " has no column '" + f.name + "'");
      if (!arrow::equals(*got->type, *f.type))
        throw invalid_input_error(what + ": column '" + f.name + "' is " + arrow::to_string(*got->type) + ", expected " +
                                  arrow::to_string(*f.type));
    }
    run rn{path, std::vector<std::uint64_t>(k_ + 1, 0), false};
    const std::uint64_t n = r.num_rows();
    const std::uint64_t step = std::max<std::uint64_t>(1, budget_ / 16 / 4);
    std::uint32_t last = 0;
    for (std::uint64_t b = 0; b < n; b += step) {
      const auto e = std::min(n, b + step);
      const auto batch = r.read({{std::string(detail::partition_id_column)}, std::pair{b, e}, std::nullopt});
      const auto* v = batch.columns[0]->values<std::uint32_t>();
      for (std::uint64_t i = 0; i < e - b; ++i) {
        if (v[i] >= k_)
          throw invalid_input_error(what + ": row " + std::to_string(b + i) + " is in partition " +
                                    std::to_string(v[i]) + ", the index has " + std::to_string(k_));
        if (v[i] < last)
          throw invalid_input_error(what + ": rows are not sorted by partition (row " + std::to_string(b + i) +
                                    " is in partition " + std::to_string(v[i]) + " after " + std::to_string(last) + ")");
        last = v[i];
        ++rn.offsets[v[i] + 1];
      }
    }
    for (std::size_t p = 0; p < k_; ++p) rn.offsets[p + 1] += rn.offsets[p];
    rows_ += n;
    runs_.push_back(std::move(rn));
  }

  // Writes the buffered rows as a run file sorted by partition.
  void spill() {
    const std::size_t n = ids_.size();
    if (n == 0) return;
    std::filesystem::create_directories(dir_);
    const auto order = sorted_order();
    run rn{dir_ + "/run-" + std::to_string(runs_.size()) + ".lance", counts_prefix(), true};
    {
      file::writer_options wo;
      const std::uint64_t chunk_bytes = std::max<std::uint64_t>(budget_ / 16, 64 << 10);
      wo.data_cache_bytes = chunk_bytes;
      io::file_sink_options so;  // scratch: no fsync, no rename
      so.publish_by_rename = false;
      so.sync = false;
      so.buffer_bytes = std::size_t(std::min<std::uint64_t>(chunk_bytes, 1 << 20));
      file::file_writer<file::v2_0, io::file_sink> w(io::file_sink(rn.path, so), schema::from_arrow(schema_), wo);
      runs_.push_back(rn);  // removed by the destructor even if writing fails
      const std::size_t chunk = std::max<std::size_t>(1, std::size_t(chunk_bytes / row_bytes()));
      for (std::size_t b = 0; b < n; b += chunk) {
        const std::size_t e = std::min(n, b + chunk), m = e - b;
        aligned_buffer ids, parts, codes, add, scale, error;
        ids.resize(m * 8), parts.resize(m * 4), codes.resize(m * width_);
        if (rq_) add.resize(m * 4), scale.resize(m * 4), error.resize(m * 4);
        for (std::size_t j = 0; j < m; ++j) {
          const std::size_t r = order[b + j];
          std::memcpy(ids.data() + j * 8, &ids_[r], 8);
          std::memcpy(parts.data() + j * 4, &part_[r], 4);
          std::memcpy(codes.data() + j * width_, codes_.data() + r * width_, width_);
          if (rq_) {
            std::memcpy(add.data() + j * 4, &add_[r], 4);
            std::memcpy(scale.data() + j * 4, &scale_[r], 4);
            std::memcpy(error.data() + j * 4, &error_[r], 4);
          }
        }
        arrow::record_batch rb;
        rb.schema = std::make_shared<arrow::schema>(schema_);
        rb.columns.push_back(detail::primitive_array(arrow::uint64(), std::move(ids), m));
        rb.columns.push_back(detail::primitive_array(arrow::uint32(), std::move(parts), m));
        rb.columns.push_back(detail::fsl_array(schema_.fields[2], std::move(codes), m));
        if (rq_) {
          rb.columns.push_back(detail::primitive_array(arrow::float32(), std::move(add), m));
          rb.columns.push_back(detail::primitive_array(arrow::float32(), std::move(scale), m));
          rb.columns.push_back(detail::primitive_array(arrow::float32(), std::move(error), m));
        }
        w.write_batch(rb);
      }
      w.finish();
    }
    ++spilled_;
    clear_buffer();
  }

  // Writes every partition, in order, through aux.write_partition (a
  // storage_writer). progress(done, total) after each partition.
  template <class Writer>
  void write_partitions(Writer& aux, const std::function<void(std::size_t, std::size_t)>& progress = {}) {
    if (!runs_.empty() && !ids_.empty()) {
      // Spill the rest too and free the buffer: the merge window then has the budget.
      spill();
      std::vector<std::uint32_t>().swap(part_);
      std::vector<std::uint64_t>().swap(ids_);
      std::vector<std::uint8_t>().swap(codes_);
      std::vector<float>().swap(add_), std::vector<float>().swap(scale_), std::vector<float>().swap(error_);
      release_free_memory();  // the buffer's pages back to the system before the merge
    }
    const auto order = sorted_order();
    const auto mem = counts_prefix();
    std::vector<std::unique_ptr<file::file_reader<io::file_source>>> readers;
    // No page cache: one is kept per reader, and with a reader open per run the cached
    // pages would add up outside the budget (each partition range is read once anyway).
    file::reader_options ro;
    ro.page_cache_bytes = 0;
    for (const auto& r : runs_)
      readers.push_back(std::make_unique<file::file_reader<io::file_source>>(io::file_source(r.path), ro));
    std::vector<std::string> names;
    for (const auto& f : schema_.fields)
      if (f.name != detail::partition_id_column) names.push_back(f.name);
    const std::uint64_t window_bytes = std::max<std::uint64_t>(budget_ / 8, 1);
    std::size_t p0 = 0;
    while (p0 < k_) {
      // Partitions [p0, p1): at least one, at most window_bytes of rows.
      std::size_t p1 = p0;
      std::uint64_t bytes = 0;
      while (p1 < k_) {
        const std::uint64_t b = rows_of(p1, mem) * row_bytes();
        if (p1 > p0 && bytes + b > window_bytes) break;
        bytes += b;
        ++p1;
      }
      std::vector<partition_contents> parts(p1 - p0);
      parallel_for(pool_, p1 - p0, [&](std::size_t i) { parts[i] = gather(p0 + i, mem, order, readers, names); });
      for (std::size_t i = 0; i < parts.size(); ++i) {
        auto& c = parts[i];
        const std::size_t cnt = c.row_ids.size();
        partition_data pd{c.row_ids, bytes_view(c.codes.data(), cnt * width_), c.add_factors, c.scale_factors,
                          c.error_factors, {}, {}, {}};
        aux.write_partition(pd);
        c = partition_contents{};
        if (progress) progress(p0 + i + 1, k_);
      }
      release_free_memory();  // freed reads back to the system
      p0 = p1;
    }
  }

 private:
  struct run {
    std::string path;
    std::vector<std::uint64_t> offsets;  // k + 1
    bool owned = false;
  };

  void reserve() {
    if (reserved_) return;
    reserved_ = true;
    part_.reserve(cap_rows_);
    ids_.reserve(cap_rows_);
    codes_.reserve(cap_rows_ * width_);
    if (rq_) add_.reserve(cap_rows_), scale_.reserve(cap_rows_), error_.reserve(cap_rows_);
  }
  void clear_buffer() {
    part_.clear(), ids_.clear(), codes_.clear(), add_.clear(), scale_.clear(), error_.clear();
  }
  // Prefix sums of the buffered rows per partition (k + 1 values).
  std::vector<std::uint64_t> counts_prefix() const {
    std::vector<std::uint64_t> c(k_ + 1, 0);
    for (auto p : part_) ++c[p + 1];
    for (std::size_t p = 0; p < k_; ++p) c[p + 1] += c[p];
    return c;
  }
  // Buffered rows by partition, stable.
  std::vector<std::uint32_t> sorted_order() const {
    auto at = counts_prefix();
    std::vector<std::uint32_t> order(part_.size());
    for (std::size_t i = 0; i < part_.size(); ++i) order[at[part_[i]]++] = std::uint32_t(i);
    return order;
  }
  std::uint64_t rows_of(std::size_t p, const std::vector<std::uint64_t>& mem) const {
    std::uint64_t n = mem[p + 1] - mem[p];
    for (const auto& r : runs_) n += r.offsets[p + 1] - r.offsets[p];
    return n;
  }

  partition_contents gather(std::size_t p, const std::vector<std::uint64_t>& mem, const std::vector<std::uint32_t>& order,
                            const std::vector<std::unique_ptr<file::file_reader<io::file_source>>>& readers,
                            const std::vector<std::string>& names) const {
    partition_contents c;
    const std::size_t total = std::size_t(rows_of(p, mem));
    c.row_ids.reserve(total);
    c.codes.resize(total * width_);
    std::size_t at = 0;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      const std::uint64_t b = runs_[r].offsets[p], e = runs_[r].offsets[p + 1];
      if (b == e) continue;
      const auto batch = readers[r]->read({names, std::pair{b, e}, std::nullopt});
      const std::size_t m = std::size_t(e - b);
      const auto* ids = batch.columns[0]->values<std::uint64_t>();
      c.row_ids.insert(c.row_ids.end(), ids, ids + m);
      const auto& fsl = *batch.columns[1];
      const auto& item = *fsl.children.at(0);
      const std::size_t esize = std::size_t(arrow::bit_width(*item.type) / 8);
      const std::uint8_t* src =
          item.buffers.at(1).data() + std::size_t(item.offset + fsl.offset * fsl.type->list_size) * esize;
      std::memcpy(c.codes.data() + at * width_, src, m * width_);
      if (rq_) {
        for (int f = 0; f < 3; ++f) {
          const auto* v = batch.columns[std::size_t(2 + f)]->values<float>();
          auto& dst = f == 0 ? c.add_factors : f == 1 ? c.scale_factors : c.error_factors;
          dst.insert(dst.end(), v, v + m);
        }
      }
      at += m;
    }
    for (std::uint64_t j = mem[p]; j < mem[p + 1]; ++j) {
      const std::size_t r = order[j];
      c.row_ids.push_back(ids_[r]);
      std::memcpy(c.codes.data() + at * width_, codes_.data() + r * width_, width_);
      if (rq_) {
        c.add_factors.push_back(add_[r]);
        c.scale_factors.push_back(scale_[r]);
        c.error_factors.push_back(error_[r]);
      }
      ++at;
    }
    return c;
  }

  std::size_t k_;
  quantizer_params q_;
  bool rq_;  // rows carry RaBitQ's factors
  std::size_t width_;
  arrow::schema schema_;
  std::string dir_;
  std::uint64_t budget_;
  boost::asio::thread_pool* pool_;
  std::size_t cap_rows_ = 1;
  bool reserved_ = false;
  std::uint64_t rows_ = 0;
  std::size_t spilled_ = 0;
  std::vector<run> runs_;
  std::vector<std::uint32_t> part_;
  std::vector<std::uint64_t> ids_;
  std::vector<std::uint8_t> codes_;
  std::vector<float> add_, scale_, error_;
};

}  // namespace lancet::index
