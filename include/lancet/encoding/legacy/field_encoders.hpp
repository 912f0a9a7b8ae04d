// Lance 2.0 field encoders: how fields become columns and when pages are cut.
//   primitive (incl. fixed-size list, utf8, binary): one column; arrays accumulate
//     until more than cache_bytes_per_column are buffered, then become one page (or
//     several, when a single array exceeds max_page_bytes).
//   list / large list: a column of u64 offsets (nulls folded in), then the items' columns.
//   struct: a header column (one SimpleStruct page written at finish), then children.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/legacy/array_encoders.hpp"
#include "lancet/encoding/legacy/strategy.hpp"
#include "lancet/core/config.hpp"

namespace lancet::encoding::legacy {

using encoding::field_id_cursor;

// The column encoding every 2.x column carries.
inline encoded_column plain_column() {
  encoded_column c;
  c.encoding = pb::encode(pb::pack_any(enc20::column_encoding::values()));
  return c;
}

}  // namespace lancet::encoding::legacy

namespace lancet::encoding::detail {

// Arrays waiting to become a page. Lance's accumulation queue: flushes when the
// buffered bytes exceed the cache; copies what it keeps unless told not to.
class accumulation_queue {
 public:
  accumulation_queue(std::uint64_t cache_bytes, bool keep_original)
      : cache_bytes_(cache_bytes), keep_original_(keep_original) {}

  std::optional<std::vector<arrow::array_ptr>> insert(const arrow::array_ptr& a) {
    bytes_ += arrow::buffer_memory_size(*a);
    if (bytes_ > cache_bytes_) {
      arrays_.push_back(a);
      return take();
    }
    arrays_.push_back(keep_original_ ? a : arrow::deep_copy(*a));
    return std::nullopt;
  }
  std::optional<std::vector<arrow::array_ptr>> flush() {
    if (arrays_.empty()) return std::nullopt;
    return take();
  }

 private:
  std::vector<arrow::array_ptr> take() {
    bytes_ = 0;
    return std::exchange(arrays_, {});
  }
  std::uint64_t cache_bytes_;
  bool keep_original_;
  std::uint64_t bytes_ = 0;
  std::vector<arrow::array_ptr> arrays_;
};

inline encode_task page_task(std::vector<arrow::array_ptr> arrays, arrow::type_ptr type, std::uint32_t column,
                             arrow::type_ptr dictionary_index = nullptr, std::string name = {}) {
  return [arrays = std::move(arrays), type = std::move(type), column, dictionary_index = std::move(dictionary_index),
          name = std::move(name)]() {
    legacy::page_buffers page;
    auto enc = dictionary_index ? legacy::encode_field_dictionary(arrays, type, *dictionary_index, page, name)
                                : legacy::encode_array(arrays, *type, page);
    encoded_page p;
    p.buffers = std::move(page.buffers);
    p.encoding = pb::encode(pb::pack_any(enc));
    p.num_rows = std::uint64_t(arrow::total_length(arrays));
    p.column_index = column;
    return p;
  };
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::legacy {

class primitive_encoder final : public field_encoder {
 public:
  primitive_encoder(arrow::type_ptr type, std::uint32_t column, const encoding_options& o,
                    arrow::type_ptr dictionary_index = nullptr, std::string name = {})
      : type_(std::move(type)), column_(column), max_page_bytes_(o.max_page_bytes),
        queue_(o.cache_bytes_per_column, o.keep_original_array), dictionary_index_(std::move(dictionary_index)),
        name_(std::move(name)) {}

  std::vector<encode_task> maybe_encode(const array_ptr& a, std::uint64_t, std::uint64_t) override {
    if (auto arrays = queue_.insert(a)) return pages_of(std::move(*arrays));
    return {};
  }
  std::vector<encode_task> flush() override {
    if (auto arrays = queue_.flush()) return pages_of(std::move(*arrays));
    return {};
  }
  std::vector<encoded_column> finish() override { return {plain_column()}; }
  std::uint32_t num_columns() const override { return 1; }

 private:
  // A single oversized array is cut into equal parts of at most max_page_bytes.
  std::vector<encode_task> pages_of(std::vector<array_ptr> arrays) {
    std::vector<encode_task> tasks;
    if (arrays.size() == 1) {
      const auto& a = arrays[0];
      const std::uint64_t size = arrow::buffer_memory_size(*a);
      const std::uint64_t mpb = std::max<std::uint64_t>(1, max_page_bytes_);
      std::uint64_t parts = std::min<std::uint64_t>((size + mpb - 1) / mpb, std::uint64_t(a->length));
      if (parts > 1) {
        const std::int64_t part = std::int64_t((std::uint64_t(a->length) + parts - 1) / parts);
        for (std::int64_t at = 0; at < a->length; at += part)
          tasks.push_back(detail::page_task({arrow::slice(a, at, std::min(part, a->length - at))}, type_, column_,
                                            dictionary_index_, name_));
        return tasks;
      }
    }
    tasks.push_back(detail::page_task(std::move(arrays), type_, column_, dictionary_index_, name_));
    return tasks;
  }

  arrow::type_ptr type_;
  std::uint32_t column_;
  std::uint64_t max_page_bytes_;
  detail::accumulation_queue queue_;
  arrow::type_ptr dictionary_index_;  // a dictionary field: pages keep a dictionary
  std::string name_;
};

// List offsets: the offsets of each list array rebased so pages stitch together, each
// stored as the end of its row; a null row's end is shifted by total span + 1.
class list_offsets_encoder {
 public:
  list_offsets_encoder(std::uint32_t column, const encoding_options& o)
      : column_(column), queue_(o.cache_bytes_per_column, o.keep_original_array) {}

  std::optional<encode_task> maybe_encode(const array_ptr& list) {
    if (auto arrays = queue_.insert(list)) return task(std::move(*arrays));
    return std::nullopt;
  }
  std::optional<encode_task> flush() {
    if (auto arrays = queue_.flush()) return task(std::move(*arrays));
    return std::nullopt;
  }

 private:
  encode_task task(std::vector<array_ptr> lists) {
    return [lists = std::move(lists), column = column_]() {
      std::uint64_t span = 0;
      std::int64_t rows = 0;
      for (const auto& l : lists) {
        auto [b, e] = arrow::offset_span(*l);
        span += std::uint64_t(e - b);
        rows += l->length;
      }
      const std::uint64_t adjustment = span + 1;
      aligned_buffer ends;
      ends.resize(std::size_t(rows) * 8);
      std::uint64_t base = 0;
      std::size_t row = 0;
      for (const auto& l : lists) {
        const auto start = l->length ? l->value_offset(0) : 0;
        for (std::int64_t i = 0; i < l->length; ++i, ++row) {
          std::uint64_t end = base + std::uint64_t(l->value_offset(i + 1) - start);
          if (!l->is_valid(i)) end += adjustment;
          le::store(ends.data() + 8 * row, end);
        }
        auto [b, e] = arrow::offset_span(*l);
        base += std::uint64_t(e - b);
      }
      page_buffers page;
      const auto buf = page.add(std::move(ends));
      enc20::list lst;
      lst.offsets = enc20::array_encoding{enc20::nullable{enc20::nullable::no_null{flat(64, buf)}}};
      lst.null_offset_adjustment = adjustment;
      lst.num_items = span;
      encoded_page p;
      p.buffers = std::move(page.buffers);
      p.encoding = pb::encode(pb::pack_any(enc20::array_encoding{std::move(lst)}));
      p.num_rows = std::uint64_t(rows);
      p.column_index = column;
      return p;
    };
  }

  std::uint32_t column_;
  detail::accumulation_queue queue_;
};

class list_encoder final : public field_encoder {
 public:
  list_encoder(std::uint32_t column, field_encoder_ptr items, const encoding_options& o)
      : offsets_(column, o), items_(std::move(items)) {}

  std::vector<encode_task> maybe_encode(const array_ptr& a, std::uint64_t row, std::uint64_t n) override {
    std::vector<encode_task> tasks;
    auto off = offsets_.maybe_encode(a);
    auto item_tasks = items_->maybe_encode(arrow::list_items(*a), row, n);
    // When offsets are flushed, the items are flushed too, keeping their pages in step.
    if (off && item_tasks.empty()) item_tasks = items_->flush();
    if (off) tasks.push_back(std::move(*off));
    for (auto& t : item_tasks) tasks.push_back(std::move(t));
    return tasks;
  }
  std::vector<encode_task> flush() override {
    std::vector<encode_task> tasks;
    if (auto off = offsets_.flush()) tasks.push_back(std::move(*off));
    for (auto& t : items_->flush()) tasks.push_back(std::move(t));
    return tasks;
  }
  std::vector<encoded_column> finish() override {
    std::vector<encoded_column> cols{plain_column()};
    for (auto& c : items_->finish()) cols.push_back(std::move(c));
    return cols;
  }
  std::uint32_t num_columns() const override { return 1 + items_->num_columns(); }

 private:
  list_offsets_encoder offsets_;
  field_encoder_ptr items_;
};

class struct_encoder final : public field_encoder {
 public:
  struct_encoder(std::string name, std::uint32_t column, std::vector<field_encoder_ptr> children)
      : name_(std::move(name)), column_(column), children_(std::move(children)) {}

  std::vector<encode_task> maybe_encode(const array_ptr& a, std::uint64_t row, std::uint64_t n) override {
    // 2.0 has no place for struct validity; Lance 12 refuses such data the same way.
    if (const auto nulls = a->count_nulls(); nulls > 0)
      throw invalid_input_error("the struct field '" + name_ + "' contains " + std::to_string(nulls) +
                                " null value(s), but Lance file version 2.0 does not encode struct validity; "
                                "use file version 2.1 or later");
    rows_ += std::uint64_t(a->length);
    std::vector<encode_task> tasks;
    for (std::size_t i = 0; i < children_.size(); ++i)
      for (auto& t : children_[i]->maybe_encode(arrow::slice(a->children[i], a->offset, a->length), row, n))
        tasks.push_back(std::move(t));
    return tasks;
  }
  std::vector<encode_task> flush() override {
    std::vector<encode_task> tasks;
    for (auto& c : children_)
      for (auto& t : c->flush()) tasks.push_back(std::move(t));
    return tasks;
  }
  std::vector<encoded_column> finish() override {
    encoded_column header = plain_column();
    encoded_page p;
    p.encoding = pb::encode(pb::pack_any(enc20::array_encoding{enc20::simple_struct{}}));
    p.num_rows = rows_;
    p.column_index = column_;
    header.final_pages.push_back(std::move(p));
    std::vector<encoded_column> cols;
    cols.push_back(std::move(header));
    for (auto& c : children_)
      for (auto& col : c->finish()) cols.push_back(std::move(col));
    return cols;
  }
  std::uint32_t num_columns() const override {
    std::uint32_t n = 1;
    for (const auto& c : children_) n += c->num_columns();
    return n;
  }

 private:
  std::string name_;
  std::uint32_t column_;
  std::vector<field_encoder_ptr> children_;
  std::uint64_t rows_ = 0;
};

inline void check_encodable(const arrow::field& f, const arrow::array_data& a);

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE void default_strategy::validate(const arrow::field& f, const arrow::array_data& a) const {
  check_encodable(f, a);
}

LANCET_INLINE field_encoder_ptr default_strategy::make_field_encoder(const arrow::field& f, field_id_cursor& ids,
                                                                   column_index_sequence& columns,
                                                                   const encoding_options& o) const {
  const auto id = ids.next(f.name);
  const auto& t = *f.type;
  // Compression parameters belong to the 2.1+ structural encodings.
  for (const auto& [k, v] : f.metadata)
    if (k.rfind("lance-encoding:", 0) == 0 && k != "lance-encoding:packed")
      throw invalid_input_error("field '" + f.name + "': the compression parameter '" + k +
                                "' needs Lance file version 2.1 or later (2.0 has no such parameters)");
  if (arrow::is_list_like(t.id)) {
    const auto col = columns.next(id);
    auto items = make_field_encoder(t.children.at(0), ids, columns, o);
    return std::make_unique<list_encoder>(col, std::move(items), o);
  }
  if (t.id == arrow::type_id::struct_) {
    for (const auto& [k, v] : f.metadata)
      if ((k == "packed" && v == "true") || k == "lance-encoding:packed")
        throw unsupported_error("field '" + f.name + "': packed structs are not supported by lancet's 2.0 writer");
    const auto col = columns.next(id);
    std::vector<field_encoder_ptr> children;
    for (const auto& c : t.children) children.push_back(make_field_encoder(c, ids, columns, o));
    return std::make_unique<struct_encoder>(f.name, col, std::move(children));
  }
  // Every other type is one column (a fixed-size list's item has no field of its own
  // in a Lance schema: its type lives in the list's logical type).
  for (const auto* c = &t; c->id == arrow::type_id::fixed_size_list; c = c->children.at(0).type.get())
    if (c->children.at(0).type->id == arrow::type_id::struct_ || arrow::is_list_like(c->children.at(0).type->id))
      throw unsupported_error("field '" + f.name + "': a fixed-size list of structs or lists cannot be written "
                              "in Lance file version 2.0");
  const auto col = columns.next(id);
  for (const auto& [k, v] : f.metadata)  // a dictionary field (arrow::physical_field marks it)
    if (k == arrow::dictionary_index_key)
      return std::make_unique<primitive_encoder>(f.type, col, o, arrow::index_type_named(v), f.name);
  return std::make_unique<primitive_encoder>(f.type, col, o);
}
#endif

}  // namespace lancet::encoding::legacy

namespace lancet::encoding::legacy {

// Checks a batch's column before anything is encoded: 2.0 cannot store null structs
// (at any depth, list items included), so such data is refused up front, naming the
// struct field, as Lance 12 does.
inline void check_encodable(const arrow::field& f, const arrow::array_data& a) {
  const auto& t = *f.type;
  if (t.id == arrow::type_id::struct_) {
    if (const auto nulls = a.count_nulls(); nulls > 0)
      throw invalid_input_error("the struct field '" + f.name + "' contains " + std::to_string(nulls) +
                                " null value(s), but Lance file version 2.0 does not encode struct validity; "
                                "use file version 2.1 or later");
    for (std::size_t i = 0; i < t.children.size(); ++i)
      check_encodable(t.children[i], *arrow::slice(a.children[i], a.offset, a.length));
  } else if (arrow::is_list_like(t.id)) {
    check_encodable(t.children.at(0), *arrow::list_items(a));
  }
}

}  // namespace lancet::encoding::legacy
