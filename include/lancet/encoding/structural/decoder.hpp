// Decoding a top-level field of a 2.1+ file into an Arrow array.
//
// A field occupies column_count(field) consecutive columns (one per leaf; see
// repdef.hpp). decode_field reads rows [begin, end) of each of them (only the pages,
// and within mini-block pages only the chunks, that cover those rows), unravels each
// leaf's levels into per-node validity and offsets, and assembles the Arrow array:
// a struct's validity and a list's offsets come from the first leaf column below it.
//
//   std::vector<column_pages> cols = ...;          // metadata + page start rows per column
//   auto arr = structural::decode_field(field, cols, first_column, begin, end,
//                                 [&](std::uint32_t col, std::size_t page) { return buffers...; });
//
// Declarations here; definitions in decoder_impl.hpp (included here in header-only
// programs; in compiled mode, core/config.hpp, the library defines them, so a reader's
// translation unit does not parse the decoders).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/config.hpp"
#include "lancet/encoding/structural/read_callbacks.hpp"
#include "lancet/pb/file2.hpp"

namespace lancet::pb::enc21 {
struct page_layout;
}

namespace lancet::encoding::structural {

namespace enc21 = pb::enc21;

// The decoded layouts (PageLayout protobufs) of one column's pages, each decoded on
// first use and kept: a reader that serves many small reads (takes) decodes them once.
// Safe to share between threads.
class page_layout_cache {
 public:
  using layout_ptr = std::shared_ptr<const enc21::page_layout>;
  layout_ptr find(std::size_t page) const {
    std::lock_guard lock(mu_);
    return page < layouts_.size() ? layouts_[page] : nullptr;
  }
  layout_ptr keep(std::size_t page, layout_ptr l) {
    std::lock_guard lock(mu_);
    if (layouts_.size() <= page) layouts_.resize(page + 1);
    if (!layouts_[page]) layouts_[page] = std::move(l);
    return layouts_[page];
  }

 private:
  mutable std::mutex mu_;
  std::vector<layout_ptr> layouts_;
};

// One column of a file as the decoder needs it.
struct column_pages {
  const pb::file2::column_metadata* metadata = nullptr;
  std::span<const std::uint64_t> page_starts;  // first row of each page, then the column's length
  page_layout_cache* layouts = nullptr;        // optional: keeps the decoded page layouts
};

// Returns the buffers of page `page` of file column `column`, in buffer order.
using fetch_page_buffers = std::function<std::vector<shared_bytes>(std::uint32_t column, std::size_t page)>;

// Columns a field takes in a 2.1+ file (one per leaf).
LANCET_INLINE std::uint32_t column_count(const arrow::field& f);


// Decodes the rows of `runs` (ascending, disjoint [begin, end) pairs) of a top-level
// field, in order. `columns` are the field's columns (column_count(f) of them, in
// order); `first_column` is the file column index of the first (for fetch and error
// messages). `read_range` reads bytes of the file: it lets small parts of pages be
// fetched alone, and blob columns (legacy blobs of 2.1) need it, as their values live
// outside the pages. `read_ranges`, optional, reads many small parts at once (the rows
// of a take scattered over a page). `rows_in_place`: the source copies every read (an
// object store), so plain fixed-width rows are read with read_ranges straight into the
// result however many of a page's rows are wanted, rather than as whole pages copied
// together again.
LANCET_INLINE arrow::array_ptr decode_field_runs(const arrow::field& f, std::span<const column_pages> columns,
                                                 std::uint32_t first_column, row_runs runs,
                                                 const fetch_page_buffers& fetch, const read_file_range& read_range = {},
                                                 const read_file_ranges& read_ranges = {}, bool rows_in_place = false);

// Decodes rows [begin, end) of a top-level field (see decode_field_runs).
LANCET_INLINE arrow::array_ptr decode_field(const arrow::field& f, std::span<const column_pages> columns,
                                            std::uint32_t first_column, std::uint64_t begin, std::uint64_t end,
                                            const fetch_page_buffers& fetch, const read_file_range& read_range = {});

}  // namespace lancet::encoding::structural

#if LANCET_HEADER_ONLY
#include "lancet/encoding/structural/decoder_impl.hpp"
#endif
