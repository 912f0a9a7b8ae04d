// Writing legacy blob columns (format 2.1), as Lance 12 does for a binary or
// large_binary field whose metadata has `lance-encoding:blob`: each non-empty value is
// written to the file on its own (64-byte aligned) when its rows arrive, and the column
// holds one (position u64, size u64) description per row, a packed struct encoded like
// any other, its pages wrapped in a BlobLayout with the field's layers. An empty value
// is (0, 0); a null one (def << 16 | rep, 0), def being 1 for a nullable field.
// The file writer provides the out-of-line write (encoding_options::write_out_of_line).
// Reading: page_decoder.hpp; blob v2 (2.2) and its reading: blob.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
#include "lancet/pb/encodings_v2_1.hpp"
#include "lancet/pb/message.hpp"

namespace lancet::encoding::v2_1 {

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

class legacy_blob_encoder final : public field_encoder {
 public:
  using out_of_line_writer = std::function<std::uint64_t(bytes_view)>;

  // `inner` encodes legacy_blob_descriptor_field(f) into the field's one column.
  legacy_blob_encoder(const arrow::field& f, field_encoder_ptr inner, out_of_line_writer write)
      : name_(f.name), inner_(std::move(inner)), write_(std::move(write)) {
    const auto id = f.type->id;
    if (id != arrow::type_id::binary && id != arrow::type_id::large_binary)
      throw unsupported_error("field '" + f.name + "' is a blob column (" + std::string(blob_key) + ") of type " +
                              arrow::to_string(*f.type) + "; blob columns are binary or large_binary");
    if (!write_)
      throw unsupported_error("field '" + f.name + "' is a blob column: its values need a file writer to hold them");
    layers_ = {f.nullable ? pb::enc21::rep_def_layer::nullable_item : pb::enc21::rep_def_layer::all_valid_item};
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
        if (layers_[0] == pb::enc21::rep_def_layer::all_valid_item)
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
    return wrap(inner_->maybe_encode(desc, row_number, num_rows));
  }
  std::vector<encode_task> flush() override { return wrap(inner_->flush()); }
  std::vector<encoded_column> finish() override { return inner_->finish(); }
  std::uint32_t num_columns() const override { return inner_->num_columns(); }

 private:
  // The descriptor pages become BlobLayout pages (their buffers unchanged).
  std::vector<encode_task> wrap(std::vector<encode_task> tasks) const {
    for (auto& t : tasks) {
      t = [inner = std::move(t), layers = layers_, name = name_] {
        auto p = inner();
        const auto any = pb::any::decode(pb::reader(p.encoding));
        pb::enc21::blob_layout b;
        b.inner_layout = pb::unpack_any<pb::enc21::page_layout>(any);
        b.layers = layers;
        pb::writer w;
        pb::pack_any(pb::enc21::page_layout{std::move(b)}).encode(w);
        p.encoding = w.take();
        return p;
      };
    }
    return tasks;
  }

  std::string name_;
  field_encoder_ptr inner_;
  out_of_line_writer write_;
  std::vector<pb::enc21::rep_def_layer> layers_;
};

}  // namespace lancet::encoding::v2_1
