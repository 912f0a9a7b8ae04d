// Writing legacy blob columns (format 2.1), as Lance 12 does for a binary or
// large_binary field whose metadata has `lance-encoding:blob`: each non-empty value is
// written to the file on its own (64-byte aligned) when its rows arrive, and the column
// holds one (position u64, size u64) description per row, a packed struct encoded like
// any other, its pages wrapped in a BlobLayout with the field's layers. An empty value
// is (0, 0); a null one (def << 16 | rep, 0), def being 1 for a nullable field.
// The file writer provides the out-of-line write (encoding_options::write_out_of_line).
// Reading: page_decoder.hpp; blob v2 (2.2) and its reading: blob.hpp.
//
// Blob v2 columns (format 2.2+; struct<data, uri> with the Arrow extension name
// lance.blob.v2): blob_v2_encoder hands each value to the file writer's placement
// (blob_files.hpp: inline in the data file, kind 0, or packed / dedicated in a blob
// file, kinds 1 and 2), a row whose data is null but whose uri is set becomes an
// external description (kind 3), and the column holds
// one description row per value, struct<kind: uint8, position: uint64, size: uint64,
// blob_id: uint32, blob_uri: utf8>, as Lance 12 stores it: a full-zip page of
// variable-width packed struct rows (kind, position, size, blob_id, u32 length + uri).
// A null value is a null row.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/structural/page_plan.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

// True when the field is marked as a (legacy) blob column.
inline bool is_legacy_blob_field(const arrow::field& f) {
  for (const auto& [k, v] : f.metadata)
    if (k == blob_key) return true;
  return false;
}

// The packed struct<position: uint64, size: uint64> a legacy blob column stores.
inline arrow::field legacy_blob_descriptor_field(const arrow::field& f) {
  return arrow::field{f.name,
                      arrow::struct_({arrow::field{"position", arrow::uint64(), false, {}},
                                      arrow::field{"size", arrow::uint64(), false, {}}}),
                      f.nullable,
                      {{std::string(packed_key), "true"}}};
}

// The layout rewrite of a legacy blob column's pages (strategy -> layout_rewrite): the
// descriptor pages become BlobLayout pages with the field's layers (buffers unchanged).
inline layout_rewrite legacy_blob_layout_rewrite(const arrow::field& f) {
  const auto layer = f.nullable ? pb::enc21::rep_def_layer::nullable_item : pb::enc21::rep_def_layer::all_valid_item;
  return [layer](pb::enc21::page_layout& layout) {
    pb::enc21::blob_layout b;
    b.inner_layout = std::move(layout);
    b.layers = {layer};
    layout = pb::enc21::page_layout{std::move(b)};
  };
}

// What both blob encoders share: the field, the structural encoder of the column they
// hand their descriptions to (flush / finish / columns are its), and the out-of-line writer.
class blob_encoder_base : public field_encoder {
 public:
  using out_of_line_writer = std::function<std::uint64_t(bytes_view)>;

  std::vector<encode_task> flush() override { return inner_->flush(); }
  std::vector<encoded_column> finish() override { return inner_->finish(); }
  std::uint32_t num_columns() const override { return inner_->num_columns(); }

 protected:
  blob_encoder_base(const arrow::field& f, field_encoder_ptr inner, out_of_line_writer write)
      : name_(f.name), nullable_(f.nullable), inner_(std::move(inner)), write_(std::move(write)) {}

  std::string name_;
  bool nullable_;
  field_encoder_ptr inner_;
  out_of_line_writer write_;
};

class legacy_blob_encoder final : public blob_encoder_base {
 public:

  // `inner` encodes legacy_blob_descriptor_field(f) into the field's one column, its
  // pages' layouts rewritten by legacy_blob_layout_rewrite(f).
  legacy_blob_encoder(const arrow::field& f, field_encoder_ptr inner, out_of_line_writer write)
      : blob_encoder_base(f, std::move(inner), std::move(write)) {
    const auto id = f.type->id;
    if (id != arrow::type_id::binary && id != arrow::type_id::large_binary)
      throw unsupported_error("field '" + f.name + "' is a blob column (" + std::string(blob_key) + ") of type " +
                              arrow::to_string(*f.type) + "; blob columns are binary or large_binary");
    if (!write_)
      throw unsupported_error("field '" + f.name + "' is a blob column: its values need a file writer to hold them");
  }

  std::vector<encode_task> maybe_encode(const arrow::array_ptr& a, std::uint64_t row_number,
                                        std::uint64_t num_rows) override {
    const auto& d = *a;
    const bool large = d.type->id == arrow::type_id::large_binary;
    if (d.type->id != arrow::type_id::binary && !large)
      throw invalid_input_error("blob field '" + name_ + "' takes binary or large_binary values, not " + arrow::to_string(*d.type));
    const auto n = std::size_t(d.length);
    aligned_buffer pos, size;
    pos.resize(n * 8);
    size.resize(n * 8);
    const auto* offs = d.buffers.at(1).data();
    const auto* data = d.buffers.size() > 2 ? d.buffers[2].data() : nullptr;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t p = 0, s = 0;
      if (!d.is_valid(std::int64_t(i))) {
        if (!nullable_)
          throw invalid_input_error("blob field '" + name_ + "' is not nullable but row " + std::to_string(row_number + i) +
                                    " is null");
        p = std::uint64_t(1) << 16;  // def 1 (null item), rep 0
      } else {
        const auto j = std::size_t(d.offset) + i;
        const std::uint64_t b = large ? std::uint64_t(le::load<std::int64_t>(offs + 8 * j))
                                      : std::uint64_t(le::load<std::int32_t>(offs + 4 * j));
        const std::uint64_t e = large ? std::uint64_t(le::load<std::int64_t>(offs + 8 * j + 8))
                                      : std::uint64_t(le::load<std::int32_t>(offs + 4 * j + 4));
        if (e > b) {
          p = write_(bytes_view(data + b, std::size_t(e - b)));
          s = e - b;
        }
      }
      le::store<std::uint64_t>(pos.data() + 8 * i, p);
      le::store<std::uint64_t>(size.data() + 8 * i, s);
    }
    auto child = [&](aligned_buffer&& b) {
      auto c = std::make_shared<arrow::array_data>();
      c->type = arrow::uint64();
      c->length = std::int64_t(n);
      c->null_count = 0;
      c->buffers = {shared_bytes(), shared_bytes(std::move(b))};
      return c;
    };
    auto desc = std::make_shared<arrow::array_data>();
    desc->type = arrow::struct_({arrow::field{"position", arrow::uint64(), false, {}}, arrow::field{"size", arrow::uint64(), false, {}}});
    desc->length = std::int64_t(n);
    desc->null_count = 0;
    desc->buffers = {shared_bytes()};
    desc->children = {child(std::move(pos)), child(std::move(size))};
    return inner_->maybe_encode(desc, row_number, num_rows);
  }
};

// True for a blob v2 field (Arrow extension name lance.blob.v2).
inline bool is_blob_v2_field_to_write(const arrow::field& f) {
  for (const auto& [k, v] : f.metadata)
    if (k == "ARROW:extension:name" && v == "lance.blob.v2") return true;
  return false;
}

// The binary field whose rows blob_v2_encoder hands to the structural encoder: full-zip,
// uncompressed (the page encoding is then rewritten to the packed struct it holds).
inline arrow::field blob_v2_rows_field(const arrow::field& f) {
  return arrow::field{f.name, arrow::binary(), f.nullable,
                      {{"lance-encoding:structural-encoding", "fullzip"}, {"lance-encoding:compression", "none"}}};
}

// The layout rewrite of a blob v2 column's pages: its full-zip pages of binary rows
// become pages of variable-width packed struct rows (kind u8, position u64, size u64,
// blob_id u32, u32 length + uri; buffers unchanged).
inline layout_rewrite blob_v2_layout_rewrite() {
  return [](pb::enc21::page_layout& layout) {
    auto* z = std::get_if<pb::enc21::full_zip_layout>(&layout.value);
    if (!z) return;
    using fe = pb::enc21::variable_packed_struct::field_encoding;
    auto flat = [](std::uint64_t bits) { return pb::enc21::compressive_encoding{pb::enc21::flat{bits, std::nullopt}}; };
    pb::enc21::variable_packed_struct vp;
    for (std::uint64_t bits : {8u, 64u, 64u, 32u}) {
      fe f;
      f.value = flat(bits);
      f.bits_per_value = bits;
      vp.fields.push_back(std::move(f));
    }
    fe u;
    pb::enc21::variable v;
    v.offsets = flat(32);
    u.value = pb::enc21::compressive_encoding{std::move(v)};
    u.bits_per_length = 32;
    vp.fields.push_back(std::move(u));
    z->value_compression = pb::enc21::compressive_encoding{std::move(vp)};
  };
}

class blob_v2_encoder final : public blob_encoder_base {
 public:
  using placement = std::function<blob_location(bytes_view)>;

  // `inner` encodes blob_v2_rows_field(f) into the field's one column (layouts rewritten
  // by blob_v2_layout_rewrite()); `place` puts a
  // value inline or into a blob file (empty: inline through `write`).
  blob_v2_encoder(const arrow::field& f, field_encoder_ptr inner, out_of_line_writer write, placement place = {})
      : blob_encoder_base(f, std::move(inner), std::move(write)), place_(std::move(place)) {
    const auto& t = *f.type;
    const bool ok = t.id == arrow::type_id::struct_ && t.children.size() == 2 && t.children[0].name == "data" &&
                    (t.children[0].type->id == arrow::type_id::large_binary ||
                     t.children[0].type->id == arrow::type_id::binary) &&
                    t.children[1].name == "uri" && t.children[1].type->id == arrow::type_id::utf8;
    if (!ok)
      throw unsupported_error("field '" + f.name + "' is a blob v2 column of type " + arrow::to_string(t) +
                              "; blob v2 columns are struct<data: large_binary, uri: utf8>");
    if (!write_)
      throw unsupported_error("field '" + f.name + "' is a blob v2 column: its values need a file writer to hold them");
  }

  std::vector<encode_task> maybe_encode(const arrow::array_ptr& a, std::uint64_t row_number,
                                        std::uint64_t num_rows) override {
    const auto& d = *a;
    const auto n = std::size_t(d.length);
    const auto& data = *d.children.at(0);
    const auto& uri = *d.children.at(1);
    aligned_buffer offs, rows, valid;
    offs.resize((n + 1) * 4);
    valid.resize((n + 7) / 8);
    std::int64_t nulls = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = std::int64_t(i);
      const auto j = d.offset + r;  // struct members are indexed through the struct's offset
      const bool has_data = d.is_valid(r) && data.is_valid(j);
      const bool has_uri = d.is_valid(r) && uri.is_valid(j);
      if (!has_data && !has_uri) {
        if (!nullable_)
          throw invalid_input_error("blob field '" + name_ + "' is not nullable but row " + std::to_string(row_number + i) +
                                    " is null");
        ++nulls;
      } else {
        arrow::set_bit(valid.data(), r, true);
        std::uint8_t kind = 0;
        std::uint64_t pos = 0, size = 0;
        std::uint32_t blob_id = 0;
        std::string_view u;
        if (has_data) {
          // Empty values too: Lance 12 gives them the data file's current offset.
          const auto v = data.string_value(j);
          const bytes_view b(reinterpret_cast<const std::uint8_t*>(v.data()), v.size());
          if (place_) {
            const auto at = place_(b);
            kind = at.kind;
            pos = at.position;
            blob_id = at.blob_id;
          } else {
            pos = write_(b);
          }
          size = v.size();
        } else {
          kind = 3;  // external: the uri names it
          u = uri.string_value(j);
        }
        std::uint8_t head[25];
        head[0] = kind;
        le::store<std::uint64_t>(head + 1, pos);
        le::store<std::uint64_t>(head + 9, size);
        le::store<std::uint32_t>(head + 17, blob_id);
        le::store<std::uint32_t>(head + 21, std::uint32_t(u.size()));
        rows.append(head, sizeof head);
        rows.append(reinterpret_cast<const std::uint8_t*>(u.data()), u.size());
      }
      if (rows.size() > 0x7FFFFFFFu) throw invalid_input_error("blob field '" + name_ + "': too many uris in one batch");
      le::store<std::int32_t>(offs.data() + 4 * (i + 1), std::int32_t(rows.size()));
    }
    auto out = std::make_shared<arrow::array_data>();
    out->type = arrow::binary();
    out->length = std::int64_t(n);
    out->null_count = nulls;
    out->buffers = {nulls ? shared_bytes(std::move(valid)) : shared_bytes(), shared_bytes(std::move(offs)),
                    shared_bytes(std::move(rows))};
    return inner_->maybe_encode(out, row_number, num_rows);
  }

 private:
  placement place_;
};

}  // namespace lancet::encoding::structural
