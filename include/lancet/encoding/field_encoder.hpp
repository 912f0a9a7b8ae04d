// The encoder side's moving parts, shared by every format version: encoded pages and
// columns, the options a strategy gets, the column-index sequence, and the runtime
// interface of a field encoder (one per top-level field; nested fields own children).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"

namespace lancet::encoding {

// One page of one column, ready to be written: its buffers and the serialized
// google.protobuf.Any that describes how they decode.
struct encoded_page {
  std::vector<shared_bytes> buffers;
  std::string encoding;
  std::uint64_t num_rows = 0;
  std::uint32_t column_index = 0;
  std::uint64_t priority = 0;  // first row of the page (structural encodings); 0 in 2.0
};

// Encoding is deferred into tasks so a writer may run them on a thread pool; the
// writer always writes the resulting pages in task order.
using encode_task = std::function<encoded_page()>;

// What a column contributes at finish: pages that can only be written last, column-
// level buffers, and the serialized Any of its ColumnEncoding.
struct encoded_column {
  std::vector<encoded_page> final_pages;
  std::vector<shared_bytes> column_buffers;
  std::string encoding;
};

// Where a blob v2 value was written: kind (0 inline in the data file, 1 packed, 2
// dedicated blob file), its offset there, and the blob file's id (0 when inline).
struct blob_location {
  std::uint8_t kind = 0;
  std::uint64_t position = 0;
  std::uint32_t blob_id = 0;
};

struct encoding_options {
  std::uint64_t cache_bytes_per_column = 8ull << 20;
  std::uint64_t max_page_bytes = 32ull << 20;
  bool keep_original_array = false;
  std::uint64_t buffer_alignment = 64;
  // 2.1+: take arrays this many rows at a time when sizing pages (0: whole arrays).
  std::uint64_t group_rows = 0;
  // Writes bytes into the file at once and returns their offset: blob values, which
  // live outside the pages (set by the file writer; called on the writing thread).
  std::function<std::uint64_t(bytes_view)> write_out_of_line;
  // Places a blob v2 value inline or in a blob file (structural/blob_files.hpp; set by the
  // file writer when it has blob files; unset: inline through write_out_of_line).
  std::function<blob_location(bytes_view)> place_blob_v2;
};

// Hands out column indices in schema order and remembers which field owns each.
class column_index_sequence {
 public:
  std::uint32_t next(std::int32_t field_id) {
    const auto idx = std::uint32_t(mapping_.size());
    mapping_.emplace_back(std::uint32_t(field_id), idx);
    return idx;
  }
  std::uint32_t size() const noexcept { return std::uint32_t(mapping_.size()); }
  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& mapping() const noexcept { return mapping_; }

 private:
  std::vector<std::pair<std::uint32_t, std::uint32_t>> mapping_;
};

// Field ids in schema pre-order (parents before children), consumed as encoders are built.
class field_id_cursor {
 public:
  explicit field_id_cursor(std::span<const std::int32_t> ids) : ids_(ids) {}
  std::int32_t next(const std::string& name) {
    if (pos_ >= ids_.size()) throw invalid_input_error("no field id left for field '" + name + "'");
    return ids_[pos_++];
  }

 private:
  std::span<const std::int32_t> ids_;
  std::size_t pos_ = 0;
};

class field_encoder {
 public:
  virtual ~field_encoder() = default;
  // Accepts the next rows of this field; returns the pages that became ready.
  virtual std::vector<encode_task> maybe_encode(const arrow::array_ptr& array, std::uint64_t row_number,
                                                std::uint64_t num_rows) = 0;
  // Encodes whatever is buffered.
  virtual std::vector<encode_task> flush() = 0;
  // Called once after the final flush; one entry per column, in column order.
  virtual std::vector<encoded_column> finish() = 0;
  virtual std::uint32_t num_columns() const = 0;
};

using field_encoder_ptr = std::unique_ptr<field_encoder>;

// The serialized Any of `ColumnEncoding { values: {} }`, which every column Lance 12
// writes carries (2.0 through 2.3) unless it is a blob or zone-indexed column. Spelt
// out here so that the structural encoders and the writer need no 2.0 messages;
// test_pb_messages checks it against the descriptor-encoded message.
inline std::string plain_column_encoding() {
  static constexpr std::string_view url = "/lance.encodings.ColumnEncoding";
  std::string out;
  out += char(0x0A);  // Any.type_url (field 1, length-delimited)
  out += char(url.size());
  out += url;
  out += char(0x12);  // Any.value (field 2, length-delimited)
  out += char(2);
  out += char(0x0A);  // ColumnEncoding.values (field 1), an empty message
  out += char(0);
  return out;
}

// Runs tasks in order on the calling thread.
inline std::vector<encoded_page> run_inline(std::vector<encode_task>& tasks) {
  std::vector<encoded_page> pages;
  pages.reserve(tasks.size());
  for (auto& t : tasks) pages.push_back(t());
  return pages;
}

}  // namespace lancet::encoding
