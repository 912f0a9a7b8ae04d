// One record batch encoded in memory (Lance's `encode_batch`), and its two serialised
// forms: "self-described" (a Lance file with the schema in global buffer 0) and
// "mini" (no global buffers: the reader must be given the schema). Buffers are packed
// without padding; the footer carries the in-memory version numbers (2.0 for 2.0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/file/version.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::file {

struct encoded_batch {
  std::string data;  // every page and column buffer, back to back
  std::vector<pb::file2::column_metadata> columns;  // offsets relative to `data`
  schema::schema schema;
  std::uint64_t num_rows = 0;
  std::uint16_t major = 0, minor = 0;  // in-memory version numbers

  std::string to_self_described() const { return serialise(true); }
  std::string to_mini() const { return serialise(false); }

 private:
  std::string serialise(bool with_schema) const {
    std::string out = data;
    std::vector<region> globals;
    if (with_schema) {
      const auto desc = schema::encode_file_descriptor(schema, num_rows);
      globals.push_back({out.size(), desc.size()});
      out += desc;
    }
    footer f;
    f.column_meta_start = out.size();
    std::vector<region> metas;
    for (const auto& c : columns) {
      const auto bytes = pb::encode(c);
      metas.push_back({out.size(), bytes.size()});
      out += bytes;
    }
    f.column_meta_offsets = out.size();
    out += encode_offset_table(metas);
    f.global_buff_offsets = out.size();
    out += encode_offset_table(globals);
    f.num_global_buffers = std::uint32_t(globals.size());
    f.num_columns = std::uint32_t(columns.size());
    f.major = major;
    f.minor = minor;
    char tail[footer_size];
    f.encode(reinterpret_cast<std::uint8_t*>(tail));
    out.append(tail, footer_size);
    return out;
  }
};

// Encodes one batch in memory with a version's (or a given) strategy.
template <version_policy Version, class Strategy = typename Version::default_strategy>
encoded_batch encode_batch(const arrow::record_batch& batch, Strategy strategy = {},
                           encoding::encoding_options options = {}) {
  encoded_batch out;
  out.schema = schema::from_arrow(*batch.schema);
  out.num_rows = std::uint64_t(batch.num_rows());
  out.major = Version::memory_major;
  out.minor = Version::memory_minor;
  options.keep_original_array = true;
  const auto arrow_schema = schema::to_arrow(out.schema);
  const auto ids = schema::preorder_ids(out.schema);
  encoding::field_id_cursor cursor(ids);
  encoding::column_index_sequence sequence;
  auto put = [&](const shared_bytes& b) {
    const std::uint64_t at = out.data.size();
    out.data.append(reinterpret_cast<const char*>(b.data()), b.size());
    return region{at, b.size()};
  };
  auto page_of = [&](const encoding::encoded_page& p) {
    pb::file2::column_metadata::page page;
    for (const auto& b : p.buffers) {
      const auto r = put(b);
      page.buffer_offsets.push_back(r.position);
      page.buffer_sizes.push_back(r.size);
    }
    page.length = p.num_rows;
    page.encoding = pb::file2::encoding{pb::file2::direct_encoding{p.encoding}};
    page.priority = p.priority;
    return page;
  };
  for (std::size_t i = 0; i < arrow_schema.fields.size(); ++i) {
    const auto& f = arrow_schema.fields[i];
    if constexpr (requires { strategy.validate(f, *batch.columns[i]); }) strategy.validate(f, *batch.columns[i]);
    auto enc = strategy.make_field_encoder(f, cursor, sequence, options);
    const auto first_column = out.columns.size();
    out.columns.resize(first_column + enc->num_columns());
    auto tasks = enc->maybe_encode(batch.columns[i], 0, out.num_rows);
    for (auto& t : enc->flush()) tasks.push_back(std::move(t));
    std::map<std::uint32_t, std::vector<pb::file2::column_metadata::page>> pages;
    for (auto& t : tasks) {
      auto p = t();
      pages[p.column_index].push_back(page_of(p));
    }
    auto columns = enc->finish();
    for (std::size_t c = 0; c < columns.size(); ++c) {
      auto& meta = out.columns[first_column + c];
      for (const auto& b : columns[c].column_buffers) {
        const auto r = put(b);
        meta.buffer_offsets.push_back(r.position);
        meta.buffer_sizes.push_back(r.size);
      }
      for (const auto& p : columns[c].final_pages) pages[p.column_index].push_back(page_of(p));
      meta.encoding = pb::file2::encoding{pb::file2::direct_encoding{columns[c].encoding}};
      meta.pages = std::move(pages[std::uint32_t(first_column + c)]);
    }
  }
  return out;
}

}  // namespace lancet::file
