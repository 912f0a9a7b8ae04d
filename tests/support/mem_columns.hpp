// One field's pages encoded into memory by a 2.1+ strategy and decoded like a file's
// columns: the page-level round trips of test_structural and the fuzz_page target.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <lancet/encoding/structural/decoder.hpp>
#include <lancet/encoding/structural/field_encoders.hpp>

namespace lancet::testing {

// Pages of one field held in memory, decodable like a file's columns.
struct mem_columns {
  std::vector<pb::file2::column_metadata> meta;
  std::vector<std::vector<std::vector<shared_bytes>>> buffers;  // [column][page]
  std::vector<std::vector<std::uint64_t>> starts;

  encoding::structural::fetch_page_buffers fetch() const {
    return [this](std::uint32_t c, std::size_t p) { return buffers.at(c).at(p); };
  }
  arrow::array_ptr read(const arrow::field& f, std::uint64_t b, std::uint64_t e) const {
    std::vector<encoding::structural::column_pages> cols;
    for (std::size_t c = 0; c < meta.size(); ++c) cols.push_back({&meta[c], starts[c]});
    return encoding::structural::decode_field(f, cols, 0, b, e, fetch());
  }
};

// `batches` of field f encoded in order by `strategy` (validated first), then flushed.
template <class Strategy>
mem_columns encode_field(const arrow::field& f, const std::vector<arrow::array_ptr>& batches, const Strategy& strategy,
                         encoding::encoding_options o = {}) {
  std::vector<std::int32_t> ids(256);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t(i);
  encoding::field_id_cursor cursor(ids);
  encoding::column_index_sequence seq;
  auto enc = strategy.make_field_encoder(f, cursor, seq, o);
  mem_columns m;
  m.meta.resize(enc->num_columns());
  m.buffers.resize(enc->num_columns());
  m.starts.assign(enc->num_columns(), {0});
  auto add = [&](std::vector<encoding::encode_task> tasks) {
    for (auto& page : encoding::run_inline(tasks)) {
      pb::file2::column_metadata::page pg;
      pg.length = page.num_rows;
      pg.encoding = pb::file2::encoding::direct_of(pb::decode<pb::any>(pb::reader(std::string_view(page.encoding), 0, "Any")));
      const auto c = page.column_index;
      m.meta[c].pages.push_back(pg);
      m.buffers[c].push_back(page.buffers);
      m.starts[c].push_back(m.starts[c].back() + page.num_rows);
    }
  };
  std::uint64_t row = 0;
  for (const auto& b : batches) {
    strategy.validate(f, *b);
    add(enc->maybe_encode(b, row, std::uint64_t(b->length)));
    row += std::uint64_t(b->length);
  }
  add(enc->flush());
  return m;
}

}  // namespace lancet::testing
