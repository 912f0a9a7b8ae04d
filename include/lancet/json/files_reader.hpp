// The JSON Lines rows of several files, one file after another, as one stream of
// record batches (a batch never spans two files): what a writer of many input files
// hands dataset::write or write_fragments. Errors name the file:
//   input 'part-3.jsonl': line 7, field 'tags[2]': null for a non-nullable field
//   cannot open input 'part-4.jsonl'                                        (io_error)
//
//   json::files_reader rows(schema, {"a.jsonl", "b.jsonl"});
//   while (auto batch = rows.next()) use(*batch);      // or rows() as a batch source
#pragma once

#include <cstddef>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/error.hpp"
#include "lancet/json/rows_reader.hpp"

namespace lancet::json {

class files_reader {
 public:
  files_reader(std::shared_ptr<const arrow::schema> schema, std::vector<std::string> files, read_options o = {})
      : schema_(std::move(schema)), files_(std::move(files)), options_(o) {}

  std::optional<arrow::record_batch> next() {
    for (;;) {
      if (!reader_) {
        if (next_ >= files_.size()) return std::nullopt;
        in_ = std::make_unique<std::ifstream>(files_[next_], std::ios::binary);
        if (!*in_) throw io_error("cannot open input '" + files_[next_] + "'");
        reader_ = std::make_unique<rows_reader>(schema_, *in_, options_);
        ++next_;
      }
      try {
        if (auto b = reader_->next()) return b;
      } catch (const error& e) {
        throw invalid_input_error("input '" + files_[next_ - 1] + "': " + e.message());
      }
      reader_.reset();
      in_.reset();
    }
  }
  std::optional<arrow::record_batch> operator()() { return next(); }

 private:
  std::shared_ptr<const arrow::schema> schema_;
  std::vector<std::string> files_;
  read_options options_;
  std::size_t next_ = 0;
  std::unique_ptr<std::ifstream> in_;
  std::unique_ptr<rows_reader> reader_;
};

}  // namespace lancet::json
