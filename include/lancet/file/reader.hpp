// file_reader<Source>: opens a Lance v2 file (ours or Lance's), exposes its schema,
// columns and pages, and decodes projections over row ranges or row indices.
//
// Columns of one file may differ in length (see file_writer::write_column). As Lance
// does: a full scan over columns of different lengths is refused, naming each length;
// a bounded read is fine when every projected column covers it; a projection whose
// columns share a length scans that length.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/legacy/decoder.hpp"
#include "lancet/encoding/legacy/take.hpp"
#include "lancet/encoding/structural/decoder.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/file/reader_options.hpp"
#include "lancet/file/version.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/source.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::file {

// One column's pages with their first rows (prefix sums of page lengths).
struct column_info {
  pb::file2::column_metadata metadata;
  std::vector<std::uint64_t> page_starts;  // page_starts[i] = first row of page i; last = total
  std::uint64_t length() const noexcept { return page_starts.back(); }
};

template <io::source Source>
class file_reader {
 public:
  explicit file_reader(Source source, reader_options o = {}) : source_(std::move(source)), options_(o) {
    check_options();
    open(std::nullopt);
  }
  // For "mini" files (encoded_batch::to_mini) that carry no schema.
  file_reader(Source source, schema::schema s, reader_options o = {}) : source_(std::move(source)), options_(o) {
    check_options();
    open(std::move(s));
  }

  format_version version() const noexcept { return version_; }
  std::uint16_t major() const noexcept { return footer_.major; }
  std::uint16_t minor() const noexcept { return footer_.minor; }
  const schema::schema& schema() const noexcept { return schema_; }
  const arrow::schema& arrow_schema() const noexcept { return arrow_schema_; }
  std::uint64_t num_rows() const noexcept { return num_rows_; }
  std::size_t num_columns() const noexcept { return columns_.size(); }
  const column_info& column(std::size_t i) const { return columns_.at(i); }
  std::size_t num_global_buffers() const noexcept { return global_buffers_.size(); }
  shared_bytes global_buffer(std::size_t i) const {
    const auto& r = global_buffers_.at(i);
    return source_.read(r.position, r.size);
  }
  // The first column of each top-level field (its length is the field's length).
  std::uint32_t field_column(std::size_t field) const { return field_columns_.at(field); }
  std::uint64_t field_length(std::size_t field) const { return columns_.at(field_columns_.at(field)).length(); }
  const Source& source() const noexcept { return source_; }
  // Whether every read costs a copy and a request of its own (an object store), rather
  // than mapping the file or reading any size in one request (a local file: pieces
  // would only be copied together again, e.g. every 8.9 MiB page of 128-d vectors).
  bool copies_every_read() const {
    if constexpr (requires { source_.is_zero_copy(); })
      if (source_.is_zero_copy()) return false;
    if constexpr (requires { source_.prefers_whole_reads(); })
      if (source_.prefers_whole_reads()) return false;
    return true;
  }
  const reader_options& options() const noexcept { return options_; }

  // Drops the page buffers the reader keeps (reader_options::page_cache_bytes); later
  // reads fetch them again. Safe while other threads read.
  void drop_page_cache() const noexcept {
    std::lock_guard lock(cache_->mu);
    for (auto& e : cache_->pages) e = cached_pages{};
    cache_->bytes = 0;
  }

  // Reads the requested rows as one batch.
  arrow::record_batch read(const read_request& req = {}) const {
    const auto fields = projection(req.columns);
    auto out_schema = std::make_shared<arrow::schema>();
    for (auto f : fields) out_schema->fields.push_back(arrow_schema_.fields[f]);
    out_schema->metadata = arrow_schema_.metadata;
    arrow::record_batch batch;
    batch.schema = out_schema;
    if (req.indices) {
      check_indices(*req.indices, fields);
      for (auto f : fields) batch.columns.push_back(with_dictionaries(f, take_field(f, *req.indices)));
      return batch;
    }
    const auto [begin, end] = resolve_range(req.range, fields);
    for (auto f : fields) batch.columns.push_back(with_dictionaries(f, read_field(f, begin, end)));
    return batch;
  }

  // The requested rows in batches of at most batch_size rows.
  std::vector<arrow::record_batch> read_batches(const read_request& req, std::uint64_t batch_size) const {
    if (batch_size == 0) throw invalid_input_error("batch size must be at least 1");
    std::vector<arrow::record_batch> out;
    const auto fields = projection(req.columns);
    if (req.indices) {
      for (std::size_t i = 0; i < req.indices->size(); i += batch_size) {
        read_request r{req.columns, std::nullopt, std::vector<std::uint64_t>(
            req.indices->begin() + std::ptrdiff_t(i),
            req.indices->begin() + std::ptrdiff_t(std::min<std::size_t>(req.indices->size(), i + batch_size)))};
        out.push_back(read(r));
      }
      return out;
    }
    const auto [begin, end] = resolve_range(req.range, fields);
    for (auto at = begin; at < end; at += batch_size)
      out.push_back(read({req.columns, std::pair{at, std::min(end, at + batch_size)}, std::nullopt}));
    if (out.empty()) out.push_back(read({req.columns, std::pair{begin, begin}, std::nullopt}));
    return out;
  }

 private:
  void check_options() const {
    if (options_.read_chunk_size == 0) throw invalid_input_error("reader_options: read_chunk_size must be at least 1 byte");
  }

  // Bytes [offset, offset + size), in reads of at most read_chunk_size bytes.
  shared_bytes read_split(std::uint64_t offset, std::uint64_t size) const {
    if (size <= options_.read_chunk_size || !copies_every_read()) return source_.read(offset, size);
    io::check_range(offset, size, source_.size(), io::source_name(source_));
    const auto chunk = options_.read_chunk_size;
    const std::uint64_t pieces = (size + chunk - 1) / chunk;
    const std::uint64_t piece = size / pieces;
    std::vector<io::byte_range> ranges(static_cast<std::size_t>(pieces));
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const auto b = i * piece, e = i + 1 == pieces ? size : b + piece;
      ranges[std::size_t(i)] = {offset + b, e - b};
    }
    // All pieces at once: a source with its own read_into (an object store) fetches
    // them concurrently; others read them one by one.
    auto out = shared_uninitialised_bytes(std::size_t(size));
    io::read_into(source_, ranges, out.get());
    const std::uint8_t* data = out.get();
    return shared_bytes(std::move(out), data, std::size_t(size));
  }

  void open(std::optional<schema::schema> given) {
    const auto size = source_.size();
    if (size < footer_size) throw corrupt_error("file of " + std::to_string(size) + " bytes has no Lance footer");
    footer_ = footer::decode(source_.read(size - footer_size, footer_size).view(), size);
    const auto v = version_from_footer(footer_.major, footer_.minor);
    if (!v)
      throw unsupported_error("Lance file version " + std::to_string(footer_.major) + "." +
                              std::to_string(footer_.minor) + " is not supported");
    version_ = *v;
    global_buffers_ = decode_offset_table(
        source_.read(footer_.global_buff_offsets, std::uint64_t(footer_.num_global_buffers) * 16).view(),
        footer_.num_global_buffers, size, "global buffer");
    auto metas = decode_offset_table(
        source_.read(footer_.column_meta_offsets, std::uint64_t(footer_.num_columns) * 16).view(),
        footer_.num_columns, size, "column metadata");
    if (given) {
      schema_ = std::move(*given);
    } else {
      if (global_buffers_.empty()) throw corrupt_error("the file has no global buffer 0 (file descriptor)");
      auto desc = source_.read(global_buffers_[0].position, global_buffers_[0].size);
      auto fd = schema::decode_file_descriptor(desc.view());
      schema_ = std::move(fd.first);
      num_rows_ = fd.second;
    }
    arrow_schema_ = schema::to_arrow(schema_);
    // Pages hold a dictionary field's values: decode as the value types, then encode.
    physical_fields_ = arrow_schema_.fields;
    for (auto& f : physical_fields_) f.type = arrow::without_dictionaries(f.type);
    columns_.reserve(metas.size());
    for (std::size_t i = 0; i < metas.size(); ++i) {
      auto bytes = source_.read(metas[i].position, metas[i].size);
      column_info c;
      c.metadata = pb::decode<pb::file2::column_metadata>(bytes.view());
      c.page_starts.reserve(c.metadata.pages.size() + 1);
      std::uint64_t at = 0;
      c.page_starts.push_back(0);
      for (const auto& p : c.metadata.pages) {
        if (p.length > std::numeric_limits<std::uint64_t>::max() - at)
          throw corrupt_error("column " + std::to_string(i) + ": page lengths overflow");
        at += p.length;
        c.page_starts.push_back(at);
        for (std::size_t b = 0; b < p.buffer_offsets.size(); ++b)
          if (p.buffer_offsets[b] > size || p.buffer_sizes[b] > size - p.buffer_offsets[b])
            throw corrupt_error("column " + std::to_string(i) + ": a page buffer at " +
                                std::to_string(p.buffer_offsets[b]) + " (+" + std::to_string(p.buffer_sizes[b]) +
                                " bytes) lies outside the file");
      }
      columns_.push_back(std::move(c));
    }
    layouts_ = std::make_shared<std::vector<encoding::structural::page_layout_cache>>(columns_.size());
    // Map fields to columns: 2.0 gives every Lance field (struct and list included) a
    // column, in pre-order; 2.1+ one column per leaf.
    std::uint32_t next = 0;
    for (std::size_t f = 0; f < schema_.fields.size(); ++f) {
      field_columns_.push_back(next);
      next += structural() ? encoding::structural::column_count(physical_fields_[f]) : count_columns(schema_.fields[f]);
    }
    if (next != columns_.size())
      throw corrupt_error("the schema needs " + std::to_string(next) + " columns but the file has " +
                          std::to_string(columns_.size()));
    if (given)
      for (std::size_t f = 0; f < schema_.fields.size(); ++f) num_rows_ = std::max(num_rows_, field_length(f));
  }

  bool structural() const noexcept { return version_ != format_version::v2_0; }

  std::uint32_t count_columns(const schema::field& f) const {
    std::uint32_t n = 1;
    for (const auto& c : f.children) n += count_columns(c);
    return n;
  }

  std::vector<std::size_t> projection(const std::vector<std::string>& names) const {
    std::vector<std::size_t> out;
    if (names.empty()) {
      for (std::size_t i = 0; i < schema_.fields.size(); ++i) out.push_back(i);
      return out;
    }
    for (const auto& n : names) {
      std::size_t i = 0;
      while (i < schema_.fields.size() && schema_.fields[i].name != n) ++i;
      if (i == schema_.fields.size()) throw invalid_input_error("the file has no column '" + n + "'");
      out.push_back(i);
    }
    return out;
  }

  std::pair<std::uint64_t, std::uint64_t> resolve_range(
      const std::optional<std::pair<std::uint64_t, std::uint64_t>>& range, const std::vector<std::size_t>& fields) const {
    if (range) {
      if (range->first > range->second)
        throw invalid_input_error("row range [" + std::to_string(range->first) + ", " + std::to_string(range->second) +
                                  ") is reversed");
      for (auto f : fields)
        if (field_length(f) < range->second)
          throw invalid_input_error("row range [" + std::to_string(range->first) + ", " +
                                    std::to_string(range->second) + ") is past the end of column '" +
                                    schema_.fields[f].name + "' (" + std::to_string(field_length(f)) + " rows)");
      return *range;
    }
    if (fields.empty()) return {0, num_rows_};
    const auto len = field_length(fields[0]);
    bool equal = true;
    for (auto f : fields) equal &= field_length(f) == len;
    if (!equal) {
      std::string msg = "cannot scan columns of different lengths:";
      for (auto f : fields)
        msg += " '" + schema_.fields[f].name + "' has " + std::to_string(field_length(f)) + " rows;";
      msg.back() = '.';
      throw invalid_input_error(msg + " read a row range or a projection of equal-length columns");
    }
    return {0, len};
  }

  void check_indices(const std::vector<std::uint64_t>& idx, const std::vector<std::size_t>& fields) const {
    for (std::size_t i = 1; i < idx.size(); ++i)
      if (idx[i] < idx[i - 1]) throw invalid_input_error("row indices must be sorted ascending (index " + std::to_string(i) + ")");
    if (!idx.empty())
      for (auto f : fields)
        if (idx.back() >= field_length(f))
          throw invalid_input_error("row index " + std::to_string(idx.back()) + " is past the end of column '" +
                                    schema_.fields[f].name + "' (" + std::to_string(field_length(f)) + " rows)");
  }

  arrow::array_ptr take_field(std::size_t f, const std::vector<std::uint64_t>& idx) const {
    if (!structural()) {
      std::uint32_t col = field_columns_[f];
      return take_field_v2_0(schema_.fields[f], physical_fields_[f], col, idx);
    }
    // Runs of consecutive indices, decoded together (the rows of one page in one
    // decode), then picked (repeated indices) and copied into one array.
    if (idx.empty()) return arrow::concat({}, physical_fields_[f].type);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
    bool repeats = false;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      if (i && idx[i] == idx[i - 1]) repeats = true;
      else if (!runs.empty() && runs.back().second == idx[i]) ++runs.back().second;
      else runs.emplace_back(idx[i], idx[i] + 1);
    }
    auto rows = read_field_runs(f, runs);
    if (!repeats) return arrow::concat({rows}, physical_fields_[f].type);
    std::vector<arrow::array_ptr> parts;
    std::int64_t at = -1;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      if (!i || idx[i] != idx[i - 1]) ++at;
      parts.push_back(arrow::slice(rows, at, 1));
    }
    return arrow::concat(parts, physical_fields_[f].type);
  }

  // The decoded values of field f in the field's own type (dictionaries re-encoded).
  arrow::array_ptr with_dictionaries(std::size_t f, arrow::array_ptr a) const {
    if (physical_fields_[f].type == arrow_schema_.fields[f].type) return a;
    return arrow::encode_dictionaries(a, arrow_schema_.fields[f].type);
  }

  // Rows of the runs (ascending, disjoint [begin, end) pairs) of a 2.1+ field; a range
  // read (`range_read`) may fetch the pages it will want next together.
  arrow::array_ptr read_field_runs(std::size_t f, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& runs,
                                   bool range_read = false) const {
    const std::uint32_t col = field_columns_[f];
    const auto n = encoding::structural::column_count(physical_fields_[f]);
    std::vector<encoding::structural::column_pages> cols;
    for (std::uint32_t c = col; c < col + n; ++c)
      cols.push_back({&columns_.at(c).metadata, columns_.at(c).page_starts, &layouts_->at(c)});
    return encoding::structural::decode_field_runs(
        physical_fields_[f], cols, col, runs,
        [this, wanted_end = range_read && !runs.empty() ? runs.back().second : 0](std::uint32_t c, std::size_t p) {
          return cached_page_buffers(c, p, wanted_end);
        },
        [this](std::uint64_t offset, std::uint64_t size) { return read_split(offset, size); },
        [this](std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges, std::uint8_t* out) {
          read_ranges_into(ranges, out);
        },
        copies_every_read());
  }

  // Scattered ranges ({offset, size}) of the file, end to end into out: one request
  // for many where the source can (io::read_into), for the rows of a take.
  // Where every read is a request, none is longer than read_chunk_size (as Lance).
  void read_ranges_into(std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges, std::uint8_t* out) const {
    const auto most = copies_every_read() ? options_.read_chunk_size : std::numeric_limits<std::uint64_t>::max();
    std::vector<io::byte_range> rs;
    rs.reserve(ranges.size());
    for (const auto& [offset, size] : ranges) {
      if (size == 0) rs.push_back({offset, 0});
      for (std::uint64_t b = 0; b < size; b += most) rs.push_back({offset + b, std::min(most, size - b)});
    }
    io::read_into(source_, rs, out);
  }

  arrow::array_ptr read_field(std::size_t f, std::uint64_t begin, std::uint64_t end) const {
    if (structural()) return read_field_runs(f, {{begin, end}}, true);
    std::uint32_t col = field_columns_[f];
    return decode_field(schema_.fields[f], physical_fields_[f], col, begin, end);
  }

  // The buffers of page p of column c, through the page cache (which keeps the last
  // pages read of each column). Where every read is a request, the following pages of
  // the column that start before row `wanted_end` (a scan's range) are fetched with it
  // in one read_into, as far as they are small (up to read_chunk_size each, 8 of that
  // together): files with a page per column every few thousand rows (as LanceDB writes
  // them) would otherwise cost a request per page, one after another.
  std::vector<shared_bytes> cached_page_buffers(std::uint32_t c, std::size_t p, std::uint64_t wanted_end = 0) const {
    const auto& column = columns_.at(c);
    const auto& pages = column.metadata.pages;
    const auto page_bytes = [&](std::size_t q) {
      std::uint64_t n = 0;
      for (auto s : pages.at(q).buffer_sizes) n += s;
      return n;
    };
    const auto budget = options_.page_cache_bytes;
    std::uint64_t bytes = page_bytes(p);
    if (budget == 0 || bytes > budget) return page_buffers(pages.at(p));
    auto& cache = *cache_;
    {
      std::lock_guard lock(cache.mu);
      if (cache.pages.size() != columns_.size()) cache.pages.resize(columns_.size());
      const auto& e = cache.pages[c];
      if (p >= e.first && p - e.first < e.buffers.size()) return e.buffers[p - e.first];
    }
    std::size_t last = p + 1;
    if (copies_every_read() && bytes <= options_.read_chunk_size)
      while (last < pages.size() && last + 1 < column.page_starts.size() && column.page_starts[last] < wanted_end) {
        const auto more = page_bytes(last);
        if (more > options_.read_chunk_size || bytes + more > std::min(budget, 8 * options_.read_chunk_size)) break;
        bytes += more;
        ++last;
      }
    cached_pages fetched{p, {}, bytes};
    if (last == p + 1) {
      fetched.buffers.push_back(page_buffers(pages[p]));
    } else {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
      for (auto q = p; q < last; ++q)
        for (std::size_t b = 0; b < pages[q].buffer_offsets.size(); ++b) ranges.emplace_back(pages[q].buffer_offsets[b], pages[q].buffer_sizes[b]);
      auto mem = shared_uninitialised_bytes(std::size_t(bytes));
      read_ranges_into(ranges, mem.get());
      const shared_bytes all(std::shared_ptr<const void>(mem), mem.get(), std::size_t(bytes));
      std::size_t at = 0;
      for (auto q = p; q < last; ++q) {
        auto& bufs = fetched.buffers.emplace_back();
        for (auto n : pages[q].buffer_sizes) {
          bufs.push_back(all.slice(at, std::size_t(n)));
          at += std::size_t(n);
        }
      }
    }
    std::lock_guard lock(cache.mu);
    auto drop = [&](cached_pages& e) {
      cache.bytes -= e.bytes;
      e = cached_pages{};
    };
    drop(cache.pages[c]);
    for (std::size_t i = 0; i < cache.pages.size() && cache.bytes + bytes > budget; ++i) drop(cache.pages[i]);
    cache.pages[c] = std::move(fetched);
    cache.bytes += bytes;
    return cache.pages[c].buffers[0];
  }

  std::vector<shared_bytes> page_buffers(const pb::file2::column_metadata::page& p) const {
    std::vector<shared_bytes> out;
    out.reserve(p.buffer_offsets.size());
    for (std::size_t b = 0; b < p.buffer_offsets.size(); ++b)
      out.push_back(read_split(p.buffer_offsets[b], p.buffer_sizes[b]));
    return out;
  }

  template <class Msg>
  Msg page_encoding(const column_info& c, std::size_t page, std::uint32_t col) const {
    const auto& p = c.metadata.pages[page];
    if (!p.encoding) throw corrupt_error("column " + std::to_string(col) + " page " + std::to_string(page) + " has no encoding");
    return p.encoding->template unwrap<Msg>();
  }

  static std::string where(std::uint32_t col, std::size_t page) {
    return "column " + std::to_string(col) + " page " + std::to_string(page);
  }

  // Decodes rows [begin, end) of a field whose first column is `col`; advances `col`
  // past the field's columns.
  arrow::array_ptr decode_field(const schema::field& lf, const arrow::field& af, std::uint32_t& col,
                                std::uint64_t begin, std::uint64_t end) const {
    const auto& c = columns_.at(col);
    const std::uint32_t my_col = col++;
    const auto id = af.type->id;
    if (c.length() < end)
      throw corrupt_error("column " + std::to_string(my_col) + " (field '" + lf.name + "') has " +
                          std::to_string(c.length()) + " rows, " + std::to_string(end) + " needed");
    if (id == arrow::type_id::struct_) {
      auto out = std::make_shared<arrow::array_data>();
      out->type = af.type;
      out->length = std::int64_t(end - begin);
      out->null_count = 0;
      out->buffers = {shared_bytes()};
      for (std::size_t i = 0; i < lf.children.size(); ++i)
        out->children.push_back(decode_field(lf.children[i], af.type->children[i], col, begin, end));
      return out;
    }
    if (arrow::is_list_like(id)) return decode_list(lf, af, col, my_col, begin, end);
    return decode_primitive(c, my_col, af.type, begin, end, lf.logical_type.starts_with("dict:"));
  }

  // Pages overlapping [begin, end): (page index, first row in page, row count).
  static std::vector<std::tuple<std::size_t, std::uint64_t, std::uint64_t>> overlapping(const column_info& c,
                                                                                        std::uint64_t begin,
                                                                                        std::uint64_t end) {
    std::vector<std::tuple<std::size_t, std::uint64_t, std::uint64_t>> out;
    if (begin >= end) return out;
    auto it = std::upper_bound(c.page_starts.begin(), c.page_starts.end(), begin);
    for (std::size_t p = std::size_t(it - c.page_starts.begin()) - 1; p + 1 < c.page_starts.size(); ++p) {
      const auto ps = c.page_starts[p], pe = c.page_starts[p + 1];
      if (ps >= end) break;
      if (pe <= begin) continue;
      const auto b = std::max(begin, ps), e = std::min(end, pe);
      out.emplace_back(p, b - ps, e - b);
    }
    return out;
  }

  // Rows idx (ascending) of a 2.0 field whose first column is `col`; advances `col`
  // past the field's columns. Pages whose rows sit at known positions are read row by
  // row (encoding/legacy/take.hpp); other pages are decoded whole, once per take.
  arrow::array_ptr take_field_v2_0(const schema::field& lf, const arrow::field& af, std::uint32_t& col,
                                   const std::vector<std::uint64_t>& idx) const {
    const auto& c = columns_.at(col);
    const std::uint32_t my_col = col++;
    const auto id = af.type->id;
    if (!idx.empty() && c.length() <= idx.back())
      throw corrupt_error("column " + std::to_string(my_col) + " (field '" + lf.name + "') has " +
                          std::to_string(c.length()) + " rows, row " + std::to_string(idx.back()) + " needed");
    if (id == arrow::type_id::struct_) {
      auto out = std::make_shared<arrow::array_data>();
      out->type = af.type;
      out->length = std::int64_t(idx.size());
      out->null_count = 0;
      out->buffers = {shared_bytes()};
      for (std::size_t i = 0; i < lf.children.size(); ++i)
        out->children.push_back(take_field_v2_0(lf.children[i], af.type->children[i], col, idx));
      return out;
    }
    if (arrow::is_list_like(id)) {
      // Lists: runs of consecutive rows through the range decoder (pages cached).
      std::vector<arrow::array_ptr> parts;
      std::size_t i = 0;
      while (i < idx.size()) {
        std::size_t j = i + 1;
        while (j < idx.size() && idx[j] <= idx[j - 1] + 1) ++j;
        std::uint32_t at = my_col;
        auto run = decode_field(lf, af, at, idx[i], idx[j - 1] + 1);
        for (std::size_t k = i; k < j; ++k) parts.push_back(arrow::slice(run, std::int64_t(idx[k] - idx[i]), 1));
        i = j;
      }
      col = my_col + count_columns(lf);
      return arrow::concat(parts, af.type);
    }
    return take_primitive(c, my_col, af.type, idx, lf.logical_type.starts_with("dict:"));
  }

  arrow::array_ptr take_primitive(const column_info& c, std::uint32_t col, const arrow::type_ptr& type,
                                  const std::vector<std::uint64_t>& idx, bool dictionary_field) const {
    std::vector<arrow::array_ptr> parts;
    const encoding::legacy::byte_reader read = [this](std::uint64_t offset, std::uint64_t size) {
      return read_split(offset, size);
    };
    const encoding::legacy::byte_ranges_reader read_ranges =
        [this](std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges, std::uint8_t* out) {
          read_ranges_into(ranges, out);
        };
    std::size_t i = 0;
    while (i < idx.size()) {
      const auto it = std::upper_bound(c.page_starts.begin(), c.page_starts.end(), idx[i]);
      const auto p = std::size_t(it - c.page_starts.begin()) - 1;
      const auto ps = c.page_starts[p], pe = c.page_starts[p + 1];
      std::vector<std::uint64_t> rows;
      std::size_t j = i;
      for (; j < idx.size() && idx[j] < pe; ++j) rows.push_back(idx[j] - ps);
      const auto& page = c.metadata.pages[p];
      const auto enc = page_encoding<pb::enc20::array_encoding>(c, p, col);
      if (!dictionary_field && encoding::legacy::rows_addressable(enc, type)) {
        parts.push_back(encoding::legacy::take_page_rows(enc, type, page.buffer_offsets, page.buffer_sizes, page.length,
                                                       rows, read, where(col, p), read_ranges));
      } else {
        const auto bufs = cached_page_buffers(col, p);
        encoding::legacy::page_decoder d(bufs, where(col, p));
        d.dictionary_field = dictionary_field;
        const auto whole = d.decode(enc, page.length, type);
        std::size_t k = 0;
        while (k < rows.size()) {
          std::size_t m = k + 1;
          while (m < rows.size() && rows[m] == rows[m - 1] + 1) ++m;
          parts.push_back(arrow::slice(whole, std::int64_t(rows[k]), std::int64_t(m - k)));
          k = m;
        }
      }
      i = j;
    }
    if (parts.size() == 1) return parts[0];
    return arrow::concat(parts, type);
  }

  arrow::array_ptr decode_primitive(const column_info& c, std::uint32_t col, const arrow::type_ptr& type,
                                    std::uint64_t begin, std::uint64_t end, bool dictionary_field = false) const {
    std::vector<arrow::array_ptr> parts;
    for (auto [p, off, n] : overlapping(c, begin, end)) {
      const auto& page = c.metadata.pages[p];
      const auto enc = page_encoding<pb::enc20::array_encoding>(c, p, col);
      // A small part of a page (a list's items in a take): only its bytes, when the
      // encoding allows.
      if (n < page.length / 8 && !dictionary_field && encoding::legacy::rows_addressable(enc, type)) {
        std::vector<std::uint64_t> rows(static_cast<std::size_t>(n));
        for (std::uint64_t i = 0; i < n; ++i) rows[std::size_t(i)] = off + i;
        parts.push_back(encoding::legacy::take_page_rows(
            enc, type, page.buffer_offsets, page.buffer_sizes, page.length, rows,
            [this](std::uint64_t offset, std::uint64_t size) { return read_split(offset, size); }, where(col, p)));
        continue;
      }
      // Cached: a scan reads a large page range by range.
      auto bufs = cached_page_buffers(col, p);
      encoding::legacy::page_decoder d(bufs, where(col, p));
      d.dictionary_field = dictionary_field;
      auto whole = d.decode(enc, page.length, type);
      parts.push_back(arrow::slice(whole, std::int64_t(off), std::int64_t(n)));
    }
    if (parts.size() == 1) return parts[0];
    return arrow::concat(parts, type);
  }

  arrow::array_ptr decode_list(const schema::field& lf, const arrow::field& af, std::uint32_t& col,
                               std::uint32_t my_col, std::uint64_t begin, std::uint64_t end) const {
    const auto& c = columns_[my_col];
    const bool large = af.type->id == arrow::type_id::large_list;
    const std::uint64_t n = end - begin;
    aligned_buffer offs, validity;
    offs.resize(std::size_t(n + 1) * (large ? 8 : 4));
    validity.resize(std::size_t((n + 7) / 8));
    std::int64_t nulls = 0;
    // Items before a page start at the sum of the earlier pages' item counts.
    std::uint64_t item_base = 0, first_item = 0, row = 0;
    std::size_t next_page = 0;
    bool first = true;
    for (auto [p, off, cnt] : overlapping(c, begin, end)) {
      for (; next_page < p; ++next_page) item_base += list_items_of(c, my_col, next_page);
      auto bufs = cached_page_buffers(my_col, p);
      encoding::legacy::page_decoder d(bufs, where(my_col, p));
      auto lp = d.decode_list(page_encoding<pb::enc20::array_encoding>(c, p, my_col), c.metadata.pages[p].length);
      const std::uint64_t start_in_page = off == 0 ? 0 : lp.end(std::size_t(off - 1));
      if (first) {
        first_item = item_base + start_in_page;
        first = false;
      }
      for (std::uint64_t i = off; i < off + cnt; ++i, ++row) {
        const std::uint64_t e = item_base + lp.end(std::size_t(i)) - first_item;
        if (lp.is_null(std::size_t(i))) ++nulls;
        else arrow::set_bit(validity.data(), std::int64_t(row), true);
        if (large) le::store<std::int64_t>(offs.data() + 8 * (row + 1), std::int64_t(e));
        else {
          if (e > std::uint64_t(std::numeric_limits<std::int32_t>::max()))
            throw unsupported_error("list field '" + lf.name + "' needs more than 2^31 items in one read");
          le::store<std::int32_t>(offs.data() + 4 * (row + 1), std::int32_t(e));
        }
      }
      item_base += lp.num_items;
      next_page = p + 1;
    }
    const std::uint64_t last = n == 0 ? 0 : (large ? std::uint64_t(le::load<std::int64_t>(offs.data() + 8 * n))
                                                   : std::uint64_t(le::load<std::int32_t>(offs.data() + 4 * n)));
    auto out = std::make_shared<arrow::array_data>();
    out->type = af.type;
    out->length = std::int64_t(n);
    out->null_count = nulls;
    out->buffers = {nulls ? shared_bytes(std::move(validity)) : shared_bytes(), shared_bytes(std::move(offs))};
    out->children.push_back(
        decode_field(lf.children.at(0), af.type->children.at(0), col, first_item, first_item + last));
    return out;
  }

  // Number of items a list page covers (its List.num_items).
  std::uint64_t list_items_of(const column_info& c, std::uint32_t col, std::size_t page) const {
    auto enc = page_encoding<pb::enc20::array_encoding>(c, page, col);
    const auto* l = std::get_if<pb::enc20::list>(&enc.value);
    if (!l) throw corrupt_error(where(col, page) + ": a list column page does not hold a List encoding");
    return l->num_items;
  }

  // Pages first, first + 1, ... of a column, each as its buffers.
  struct cached_pages {
    std::size_t first = 0;
    std::vector<std::vector<shared_bytes>> buffers;
    std::uint64_t bytes = 0;
  };

  struct page_cache {
    std::mutex mu;
    std::vector<cached_pages> pages;  // by column
    std::uint64_t bytes = 0;         // sum of the cached pages' sizes
  };

  Source source_;
  reader_options options_;
  // Shared by copies of the reader (same file, same pages); keeps the reader movable.
  std::shared_ptr<page_cache> cache_ = std::make_shared<page_cache>();
  // 2.1+: each column's decoded page layouts (shared by copies, like the page cache).
  std::shared_ptr<std::vector<encoding::structural::page_layout_cache>> layouts_;
  footer footer_;
  format_version version_ = format_version::v2_0;
  std::vector<region> global_buffers_;
  std::vector<column_info> columns_;
  std::vector<std::uint32_t> field_columns_;
  schema::schema schema_;
  arrow::schema arrow_schema_;
  std::vector<arrow::field> physical_fields_;  // arrow_schema_'s fields without dictionary types
  std::uint64_t num_rows_ = 0;
};

}  // namespace lancet::file
