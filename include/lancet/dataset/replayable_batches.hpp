// A stream of record batches that can be read again from its start: the batches the
// first reading pulls are kept in memory while they fit a budget, the rest go to a
// scratch Lance file on local disk. Merge insert reads its source twice (updated rows,
// then inserted ones) and again when a concurrent commit makes it run once more, as
// Lance spills a merge source to replay it on retries.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/core/error.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset::detail {

class replayable_batches {
 public:
  using pull_fn = std::function<std::optional<arrow::record_batch>()>;

  // `pull` yields the stream (nullopt at its end); `memory_budget`: the bytes of batches
  // held in memory; `spill_dir`: where the rest is written (default: the system's
  // temporary directory).
  replayable_batches(pull_fn pull, std::uint64_t memory_budget, std::string spill_dir)
      : pull_(std::move(pull)), budget_(memory_budget), spill_dir_(std::move(spill_dir)) {
    if (spill_dir_.empty()) spill_dir_ = std::filesystem::temp_directory_path().string();
  }
  replayable_batches(const replayable_batches&) = delete;
  replayable_batches& operator=(const replayable_batches&) = delete;
  ~replayable_batches() {
    writer_.reset();
    reader_.reset();
    if (!spill_path_.empty()) io::remove_quietly(spill_path_);
  }

  // The next batch from the start (or the last rewind).
  std::optional<arrow::record_batch> next() {
    if (at_ < held_.size()) return held_[at_++];
    if (!pulled_all_) return pull_and_keep();
    return read_spilled();
  }

  // Back to the first batch; what the stream still holds is pulled (and kept) first.
  void rewind() {
    while (!pulled_all_) pull_and_keep();
    at_ = 0;
    spill_at_ = 0;
  }

  // The stream's rows: known once it was read to its end, or as expect_rows() says.
  std::optional<std::uint64_t> rows() const noexcept {
    return pulled_all_ ? std::optional<std::uint64_t>(pulled_rows_) : expected_rows_;
  }
  void expect_rows(std::uint64_t n) noexcept { expected_rows_ = n; }

  // Rows written to the scratch file (0: the stream fitted the memory budget).
  std::uint64_t spilled_rows() const noexcept { return spilled_rows_; }

 private:
  std::optional<arrow::record_batch> pull_and_keep() {
    auto b = pull_();
    if (!b) {
      pulled_all_ = true;
      spill_at_ = spilled_rows_;  // this reading wrote the scratch file: nothing left in it
      finish_spill();
      return std::nullopt;
    }
    pulled_rows_ += std::uint64_t(b->num_rows());
    std::uint64_t bytes = 0;
    for (const auto& c : b->columns) bytes += arrow::compact_size(*c);  // a slice holds part of its buffers
    if (!writer_ && held_bytes_ + bytes <= budget_) {
      held_.push_back(*b);
      held_bytes_ += bytes;
      at_ = held_.size();
    } else {
      spill(*b);
    }
    return b;
  }

  void spill(const arrow::record_batch& b) {
    if (!writer_) {
      static std::atomic<unsigned> serial{0};
      io::make_directories(spill_dir_);
      spill_path_ = spill_dir_ + "/lancet-source-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) +
                    ".lance";
      io::file_sink_options so;  // scratch: no fsync, no rename
      so.publish_by_rename = false;
      so.sync = false;
      file::writer_options wo;  // page buffers within a quarter of the budget
      wo.data_cache_bytes = std::clamp<std::uint64_t>(budget_ / 4, 1 << 20, std::uint64_t(8) << 20);
      writer_ = std::make_unique<file::file_writer<file::v2_0, io::file_sink>>(
          io::file_sink(spill_path_, so), schema::from_arrow(*b.schema), wo);
      batch_rows_ = std::max<std::uint64_t>(1, std::uint64_t(b.num_rows()));
    }
    writer_->write_batch(b);
    spilled_rows_ += std::uint64_t(b.num_rows());
  }

  void finish_spill() {
    if (!writer_) return;
    writer_->finish();
    writer_.reset();
    reader_ = std::make_unique<file::file_reader<io::file_source>>(io::file_source(spill_path_));
  }

  std::optional<arrow::record_batch> read_spilled() {
    if (!reader_ || spill_at_ >= spilled_rows_) return std::nullopt;
    const auto end = std::min(spilled_rows_, spill_at_ + batch_rows_);
    auto b = reader_->read({{}, std::pair{spill_at_, end}, std::nullopt});
    spill_at_ = end;
    return b;
  }

  pull_fn pull_;
  std::uint64_t budget_;
  std::string spill_dir_;
  std::vector<arrow::record_batch> held_;
  std::uint64_t held_bytes_ = 0;
  std::size_t at_ = 0;  // the next held batch
  bool pulled_all_ = false;
  std::string spill_path_;
  std::unique_ptr<file::file_writer<file::v2_0, io::file_sink>> writer_;
  std::unique_ptr<file::file_reader<io::file_source>> reader_;
  std::uint64_t spilled_rows_ = 0, spill_at_ = 0, batch_rows_ = 1, pulled_rows_ = 0;
  std::optional<std::uint64_t> expected_rows_;
};

}  // namespace lancet::dataset::detail
