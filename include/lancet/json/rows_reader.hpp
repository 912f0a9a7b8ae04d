// JSON Lines -> Arrow record batches, against a given schema.
//
//   auto schema = std::make_shared<const arrow::schema>(json::parse_schema(text));
//   json::rows_reader reader(schema, std::cin, {.batch_size = 8192});
//   while (auto batch = reader.next()) use(*batch);
//
// One JSON object per line; blank lines are skipped. A top-level field or struct
// member that is absent is null. Values by type (README.md, "Schema files"):
//   ints               integral JSON numbers in range (1, -5, 1e3, 2.0); 64-bit integer
//                      types (int64, uint64, date64, time64, timestamp, duration) also
//                      take decimal strings ("-9120165001150960357")
//   date/time/timestamp/duration   integers in the type's unit
//   float16/32/64      numbers, read with a single correct rounding to the width, or
//                      the strings "NaN", "Infinity", "-Infinity"; finite values
//                      beyond the width's range are errors
//   bool               true / false
//   utf8               strings;   binary, fixed_size_binary: base64 strings
//   decimal128/256     decimal strings ("123.4500") or numbers, scaled exactly (no
//                      rounding) and checked against the precision
//   list, large_list   arrays;    fixed_size_list: arrays of exactly `size` items
//   struct             objects (absent member = null)
//   map                arrays of {"key": ..., "value": ...} objects (keys must not be null)
//   dictionary         the values, as for the value type
//   null               null only
// Every error is an invalid_input_error naming the line (1-based) and field path:
//   line 3, field 's.a': expected an integer, got "x"
//   line 7, field 'tags[2]': null for a non-nullable field
// Rows are checked completely before anything is appended, so a rejected line
// leaves the batch being built exactly as it was.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/json/parse.hpp"
#include "lancet/json/row_columns.hpp"
#include "lancet/json/value.hpp"
#include "lancet/json/value_path.hpp"

namespace lancet::json {

namespace detail {

inline std::string_view trim(std::string_view s) noexcept {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace detail

// Builds one record batch from JSON Lines lines appended one at a time.
class row_builder {
 public:
  explicit row_builder(std::shared_ptr<const arrow::schema> schema, read_options o = {})
      : schema_(std::move(schema)), options_(o) {
    if (!schema_) throw invalid_input_error("JSON rows: the schema is null");
    if (options_.max_batch_bytes < 0)
      throw invalid_input_error("JSON rows: max_batch_bytes must not be negative, got " +
                                std::to_string(options_.max_batch_bytes));
    for (const auto& f : schema_->fields) {
      if (!f.type) throw invalid_input_error("JSON rows: field '" + f.name + "' has no type");
      arrow::validate_type(*f.type, f.name);
    }
    root_ = std::make_unique<detail::struct_column>(arrow::field{"", arrow::struct_(schema_->fields), false, {}},
                                                    options_);
  }

  // Appends the row on one line (`line_number` is for messages). Blank lines are
  // skipped. Returns false, changing nothing, when the row does not fit this batch
  // (32-bit offsets, max_batch_bytes): finish() the batch and append the line again.
  // Bad input throws invalid_input_error and changes nothing.
  bool append(std::string_view line, std::int64_t line_number) {
    line = detail::trim(line);
    if (line.empty()) return true;
    const std::string where = "line " + std::to_string(line_number);
    syntax_error err;
    if (!try_parse(line, row_, err)) {
      if (!err.malformed)
        throw invalid_input_error(where + (err.path.empty() ? "" : ", field '" + err.path + "'") + ": " + err.message);
      throw invalid_input_error(where + (err.column ? ", column " + std::to_string(err.column) : std::string()) +
                                ": malformed JSON: " + err.message);
    }
    if (row_.k != value::kind::object) throw invalid_input_error(where + ": expected a JSON object, got " + describe(row_));
    const detail::value_path top{};
    try {
      root_->reset_pending();
      root_->put_value(row_, top, false);
    } catch (const detail::value_error& e) {
      throw invalid_input_error(where + (e.path.empty() ? "" : ", field '" + e.path + "'") + ": " + e.message);
    } catch (const detail::batch_full& e) {
      root_->reset_pending();
      if (rows_ > 0) return false;
      throw invalid_input_error(where + ", field '" + e.path + "': the row alone holds " + e.why);
    }
    root_->put_value(row_, top, true);
    ++rows_;
    return true;
  }

  std::int64_t num_rows() const noexcept { return rows_; }
  const std::shared_ptr<const arrow::schema>& schema() const noexcept { return schema_; }

  // The rows appended so far as a batch; the builder starts over empty.
  arrow::record_batch finish() {
    auto columns = root_->finish_members();
    rows_ = 0;
    return arrow::make_batch(schema_, std::move(columns));
  }

 private:
  std::shared_ptr<const arrow::schema> schema_;
  read_options options_;
  std::unique_ptr<detail::struct_column> root_;
  value row_;
  std::int64_t rows_ = 0;
};

// Reads JSON Lines from a stream in batches of up to options.batch_size rows (fewer
// when a batch reaches max_batch_bytes or the 32-bit offset limits).
// After an error (thrown from next()), the offending line has been consumed and the
// rows before it are kept: calling next() again continues with the following line.
class rows_reader {
 public:
  rows_reader(std::shared_ptr<const arrow::schema> schema, std::istream& in, read_options o = {})
      : builder_(std::move(schema), o), in_(in), batch_size_(o.batch_size) {
    if (batch_size_ < 1) throw invalid_input_error("JSON rows: batch_size must be at least 1, got " + std::to_string(batch_size_));
  }
  rows_reader(const arrow::schema& schema, std::istream& in, read_options o = {})
      : rows_reader(std::make_shared<const arrow::schema>(schema), in, o) {}

  // The next batch, or nullopt once the input is exhausted.
  std::optional<arrow::record_batch> next() {
    while (builder_.num_rows() < batch_size_) {
      if (!held_) {
        if (!std::getline(in_, line_)) {
          if (in_.bad()) throw io_error("JSON rows: reading line " + std::to_string(line_no_ + 1) + " failed");
          break;
        }
        ++line_no_;
        if (line_no_ == 1 && line_.compare(0, 3, "\xEF\xBB\xBF") == 0) line_.erase(0, 3);  // UTF-8 BOM
      }
      held_ = false;
      if (!builder_.append(line_, line_no_)) {
        held_ = true;  // does not fit: it starts the next batch
        break;
      }
    }
    if (builder_.num_rows() == 0) return std::nullopt;
    return builder_.finish();
  }

  // Lines consumed so far (blank lines included).
  std::int64_t lines_read() const noexcept { return line_no_; }
  const std::shared_ptr<const arrow::schema>& schema() const noexcept { return builder_.schema(); }

 private:
  row_builder builder_;
  std::istream& in_;
  std::int64_t batch_size_;
  std::string line_;
  std::int64_t line_no_ = 0;
  bool held_ = false;
};

// All rows of a JSON Lines text as one batch (lines numbered from 1).
inline arrow::record_batch read_rows(std::shared_ptr<const arrow::schema> schema, std::string_view text,
                                     read_options o = {}) {
  row_builder b(std::move(schema), o);
  std::int64_t line_no = 0;
  while (!text.empty() || line_no == 0) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (!b.append(line, line_no))
      throw invalid_input_error("line " + std::to_string(line_no) +
                                ": the rows do not fit one batch (32-bit offsets or max_batch_bytes); use rows_reader");
  }
  return b.finish();
}
inline arrow::record_batch read_rows(const arrow::schema& schema, std::string_view text, read_options o = {}) {
  return read_rows(std::make_shared<const arrow::schema>(schema), text, o);
}
// One line per string (line i of the vector is line i + 1 in messages).
inline arrow::record_batch read_rows(std::shared_ptr<const arrow::schema> schema, const std::vector<std::string>& lines,
                                     read_options o = {}) {
  row_builder b(std::move(schema), o);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!b.append(lines[i], std::int64_t(i + 1)))
      throw invalid_input_error("line " + std::to_string(i + 1) +
                                ": the rows do not fit one batch (32-bit offsets or max_batch_bytes); use rows_reader");
  return b.finish();
}

}  // namespace lancet::json
