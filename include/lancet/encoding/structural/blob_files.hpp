// Where blob v2 values are written (format 2.2+), as Lance 12 places them by size:
//   size <= 64 KiB           inline: in the data file (64-byte aligned), kind 0;
//   64 KiB < size <= 4 MiB   packed: appended to the open pack file, kind 1, at its offset;
//   size > 4 MiB             dedicated: a blob file of its own, kind 2, position 0.
// Blob files are numbered from 1 per data file in the order they are opened and hold
// the raw bytes, nothing else; a pack file takes values until the next one would take
// it past 1 GiB. Their paths are blob_file_path(data file, id) (blob.hpp); the manifest
// does not list them. Without a blob_file_opener (a file written into memory) every
// value stays inline, which Lance reads alike.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/field_encoder.hpp"

namespace lancet::encoding::structural {

inline constexpr std::uint64_t blob_inline_max_bytes = 64 * 1024;
inline constexpr std::uint64_t blob_packed_max_bytes = 4 * 1024 * 1024;
inline constexpr std::uint64_t blob_pack_file_max_bytes = std::uint64_t(1) << 30;

// One blob file being written: append, then finish (publishes it) once.
struct blob_file_sink {
  std::function<void(bytes_view)> write;
  std::function<void()> finish;
};

// Opens blob file `blob_id` of the data file being written.
using blob_file_opener = std::function<blob_file_sink(std::uint32_t blob_id)>;

class blob_placer {
 public:
  using inline_writer = std::function<std::uint64_t(bytes_view)>;

  // `open` may be empty: every value then goes inline through `write_inline`.
  blob_placer(blob_file_opener open, inline_writer write_inline)
      : open_(std::move(open)), write_inline_(std::move(write_inline)) {}

  blob_location place(bytes_view v) {
    const std::uint64_t n = v.size();
    if (!open_ || n <= blob_inline_max_bytes) return {0, write_inline_(v), 0};
    if (n > blob_packed_max_bytes) {
      const auto id = next_id();
      auto f = open_(id);
      f.write(v);
      f.finish();
      return {2, 0, id};
    }
    if (!pack_ || pack_size_ + n > blob_pack_file_max_bytes) {
      finish();
      pack_id_ = next_id();
      pack_ = open_(pack_id_);
    }
    const auto at = pack_size_;
    pack_->write(v);
    pack_size_ += n;
    return {1, at, pack_id_};
  }

  // Publishes the open pack file (before the data file that points into it).
  void finish() {
    if (pack_) {
      auto f = std::move(*pack_);
      pack_.reset();
      pack_size_ = 0;
      f.finish();
    }
  }

 private:
  std::uint32_t next_id() {
    if (last_id_ == UINT32_MAX) throw invalid_input_error("blob v2: more than 2^32 - 1 blob files for one data file");
    return ++last_id_;
  }

  blob_file_opener open_;
  inline_writer write_inline_;
  std::uint32_t last_id_ = 0;
  std::optional<blob_file_sink> pack_;
  std::uint32_t pack_id_ = 0;
  std::uint64_t pack_size_ = 0;
};

}  // namespace lancet::encoding::structural
