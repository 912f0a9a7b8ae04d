// The rows of one Lance file as a query gives them: some columns (all when none are
// named), the rows a SQL filter keeps, then offset / limit over those rows, one batch
// at a time (a file larger than memory streams).
//
//   file::file_reader<io::file_source> reader{io::file_source("part.lance")};
//   query::file_rows rows(reader, {.columns = {"id"}, .filter = "price < 10", .offset = 5, .limit = 20});
//   while (auto b = rows.next()) use(*b);
//
// The first next() always gives a batch, empty when no row is left (its schema still
// tells the columns). Errors: invalid_input_error naming an unknown column, a batch size
// of 0, or (expr::invalid_filter / unsupported_filter) a bad filter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/error.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/file/reader.hpp"

namespace lancet::query {

struct file_request {
  std::vector<std::string> columns;  // in this order; empty: every column
  std::string filter;                // SQL (expr/filter.hpp); empty: every row
  std::uint64_t offset = 0;          // matching rows skipped
  std::optional<std::uint64_t> limit;
  std::uint64_t batch_size = 8192;   // rows read at a time
};

template <class Source>
class file_rows {
 public:
  file_rows(const file::file_reader<Source>& reader, file_request r)
      : reader_(&reader), r_(std::move(r)), left_(r_.limit.value_or(std::numeric_limits<std::uint64_t>::max())),
        skip_(r_.offset) {
    if (r_.batch_size == 0) throw invalid_input_error("file_rows: the batch size must be at least 1");
    read_ = r_.columns;
    if (!r_.filter.empty()) {
      filter_.emplace(expr::filter::compile(r_.filter, reader.arrow_schema()));
      if (!read_.empty())
        for (const auto& c : filter_->columns())
          if (std::find(read_.begin(), read_.end(), c) == read_.end()) read_.push_back(c);
    }
    end_ = rows_of(read_);
    if (!filter_) {
      // No filter: offset and limit are a range of rows.
      at_ = std::min(skip_, end_);
      end_ = std::min(end_, at_ + std::min(left_, end_ - at_));
    }
  }

  std::optional<arrow::record_batch> next() {
    while (at_ < end_ && left_ > 0) {
      const auto to = std::min(end_, at_ + r_.batch_size);
      auto b = reader_->read({read_, std::pair{at_, to}, std::nullopt});
      at_ = to;
      if (!filter_) {
        given_ = true;
        return b;
      }
      auto kept = filter_->apply(b);
      const auto n = std::uint64_t(kept.num_rows());
      const auto from = std::min(skip_, n), take = std::min(left_, n - from);
      skip_ -= from;
      left_ -= take;
      if (take == 0) continue;
      given_ = true;
      return project(kept, from, take);
    }
    if (given_) return std::nullopt;
    given_ = true;
    auto empty = reader_->read({read_, std::pair{std::uint64_t(0), std::uint64_t(0)}, std::nullopt});
    return filter_ ? project(empty, 0, 0) : empty;
  }

 private:
  // The rows of the named columns (Lance's rule on columns of unequal length: the
  // longest); of the file when none are named.
  std::uint64_t rows_of(const std::vector<std::string>& names) const {
    if (names.empty()) return reader_->num_rows();
    const auto& fields = reader_->schema().fields;
    std::uint64_t total = 0;
    for (const auto& n : names) {
      std::size_t i = 0;
      while (i < fields.size() && fields[i].name != n) ++i;
      if (i == fields.size()) throw invalid_input_error("the file has no column '" + n + "'");
      total = std::max(total, reader_->field_length(i));
    }
    return total;
  }

  // Rows [from, from + n) of the requested columns of b.
  arrow::record_batch project(const arrow::record_batch& b, std::uint64_t from, std::uint64_t n) const {
    arrow::record_batch out;
    auto schema = std::make_shared<arrow::schema>();
    schema->metadata = b.schema->metadata;
    for (std::size_t c = 0; c < b.columns.size(); ++c) {
      const auto& f = b.schema->fields[c];
      if (!r_.columns.empty() && std::find(r_.columns.begin(), r_.columns.end(), f.name) == r_.columns.end()) continue;
      schema->fields.push_back(f);
      out.columns.push_back(arrow::slice(b.columns[c], std::int64_t(from), std::int64_t(n)));
    }
    out.schema = std::move(schema);
    return out;
  }

  const file::file_reader<Source>* reader_;
  file_request r_;
  std::vector<std::string> read_;  // the columns read: the requested ones and the filter's
  std::optional<expr::filter> filter_;
  std::uint64_t at_ = 0, end_ = 0, left_, skip_;
  bool given_ = false;
};

template <class Source>
file_rows(const file::file_reader<Source>&, file_request) -> file_rows<Source>;

}  // namespace lancet::query
