// Lance 2.1+ field encoders and strategies.
//
// One structural_field_encoder per top-level field: arrays accumulate until about
// cache_bytes_per_column per leaf column are buffered (a batch larger than that is a
// page of its own: 2.1+ pages are not split at write time), then every leaf column is
// shredded into levels and values and encoded as one page, each in its own task.
//
// structural_strategy<Minor, Policy> is what a file writer of version 2.<Minor> uses:
// the version's machinery (field ids, columns, what the version can hold) around an
// encoding policy (policy.hpp) that decides how pages are encoded. default_strategy<Minor>
// is it with Lance 12's policy.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/structural/blob_encoder.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/page_encoder.hpp"
#include "lancet/encoding/structural/policy.hpp"
#include "lancet/encoding/structural/strategy.hpp"
#include "lancet/encoding/structural/repdef.hpp"
#include "lancet/encoding/structural/values.hpp"

namespace lancet::encoding::structural {

// Plans and encodes one page of one leaf with a policy. A policy's own lancet::error
// passes through; any other exception it throws becomes invalid_input_error naming the
// column, and so does a plan the page cannot be encoded with.
}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// `values` with each null slot (of the leaf's visible values) holding the first valid value.
inline structural::data_block fill_null_slots(const structural::data_block& values,
                                              const structural::shredded_leaf& sh) {
  std::vector<bool> valid;
  valid.reserve(std::size_t(sh.num_values));
  for (const auto& r : sh.values)
    for (std::int64_t k = 0; k < r.count; ++k) valid.push_back(r.array->is_valid(r.begin + k));
  std::uint64_t first = 0;
  while (first < valid.size() && !valid[std::size_t(first)]) ++first;
  if (first == valid.size() || valid.size() != values.num_values) return values;
  if (values.k == structural::data_block::kind::fixed && values.bits_per_value % 8 == 0) {
    const std::size_t w = std::size_t(values.bits_per_value / 8);
    aligned_buffer out;
    out.append(values.data.data(), std::size_t(values.num_values) * w);
    for (std::size_t i = 0; i < valid.size(); ++i)
      if (!valid[i]) std::memcpy(out.data() + i * w, values.data.data() + first * w, w);
    return structural::data_block::fixed(values.num_values, values.bits_per_value, shared_bytes(std::move(out)));
  }
  if (values.k == structural::data_block::kind::variable) {
    const std::uint64_t w = values.bits_per_offset / 8;
    const auto fb = values.offset(first), fe = values.offset(first + 1);
    aligned_buffer offs, bytes;
    offs.resize(std::size_t((values.num_values + 1) * w));
    for (std::uint64_t i = 0; i < values.num_values; ++i) {
      const auto b = valid[std::size_t(i)] ? values.offset(i) : fb;
      const auto e = valid[std::size_t(i)] ? values.offset(i + 1) : fe;
      bytes.append(values.data.data() + b, std::size_t(e - b));
      if (w == 8) le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
      else le::store<std::uint32_t>(offs.data() + 4 * (i + 1), std::uint32_t(bytes.size()));
    }
    return structural::data_block::variable(values.num_values, values.bits_per_offset, shared_bytes(std::move(offs)),
                                            shared_bytes(std::move(bytes)));
  }
  return values;
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

template <structural_policy Policy>
encoded_page encode_page_with(const Policy& policy, const std::vector<path_node>& path, const leaf_info& leaf,
                              const std::vector<arrow::array_ptr>& arrays, unsigned minor,
                              const layout_rewrite& rewrite = {}) {
  auto shredded = shred(path, arrays);
  const level_scheme s(shredded.layers);
  auto values = gather_values(*leaf.type, shredded);
  // A dictionary field: null slots take index 0, as Lance 12 writes them (their value
  // is the page's first valid value, so the dictionary gains no entry for them).
  if (leaf.dictionary_index && shredded.leaf_nulls > 0 && shredded.leaf_nulls < shredded.num_values)
    values = detail::fill_null_slots(values, shredded);
  page_facts facts;
  facts.num_rows = shredded.num_rows;
  facts.num_values = shredded.num_values;
  facts.leaf_nulls = shredded.leaf_nulls;
  facts.has_rep = s.max_rep > 0;
  facts.has_def = s.max_def > 0;
  facts.num_layers = s.layers.size();
  page_plan plan;
  try {
    plan = policy.plan_page(leaf, values, facts);
  } catch (const lancet::error&) {
    throw;
  } catch (const std::exception& e) {
    throw invalid_input_error("column '" + leaf.column + "': the encoding policy failed: " + e.what());
  }
  if (leaf.type->id == arrow::type_id::struct_ && !plan.packed_struct && plan.layout != page_plan::layout_kind::all_null)
    throw invalid_input_error("column '" + leaf.column + "': a packed struct column must be planned as packed_struct");
  if (plan.packed_struct) {
    plan.packed_widths.clear();
    for (const auto& c : leaf.type->children) plan.packed_widths.push_back(std::uint64_t(arrow::bit_width(*c.type)));
    if (plan.layout != page_plan::layout_kind::miniblock && plan.layout != page_plan::layout_kind::all_null)
      throw unsupported_error("column '" + leaf.column + "': packed structs are written as mini-blocks only");
    if (plan.dictionary || plan.codec != value_codec::flat)
      throw unsupported_error("column '" + leaf.column + "': packed struct rows are stored uncompressed");
  }
  if (plan.layout == page_plan::layout_kind::constant && !detail::constant_value(values))
    throw invalid_input_error("column '" + leaf.column + "': the page was planned as constant but its values differ");
  if (plan.layout == page_plan::layout_kind::all_null && facts.leaf_nulls != facts.num_values &&
      values.k != data_block::kind::empty)
    throw invalid_input_error("column '" + leaf.column + "': the page was planned as all-null but holds " +
                              std::to_string(facts.num_values - facts.leaf_nulls) + " non-null value(s)");
  return encode_leaf_page(s, shredded.rep, shredded.def, values, plan, shredded.num_rows, minor, rewrite);
}


// The encoder of one top-level field: one column per leaf.
template <structural_policy Policy>
class structural_field_encoder final : public field_encoder {
 public:
  structural_field_encoder(unsigned minor, arrow::field f, std::vector<std::vector<path_node>> paths,
                           std::vector<leaf_info> leaves, std::vector<std::uint32_t> columns,
                           std::shared_ptr<const Policy> policy, const page_sizing& sizing, const encoding_options& o,
                           layout_rewrite rewrite = {})
      : minor_(minor), field_(std::move(f)), paths_(std::move(paths)), leaves_(std::move(leaves)), columns_(std::move(columns)),
        policy_(std::move(policy)), rewrite_(std::move(rewrite)), keep_original_(o.keep_original_array),
        cache_bytes_(sizing.cache_bytes_per_column * std::max<std::size_t>(1, paths_.size())),
        group_rows_(sizing.group_rows) {}

  std::vector<encode_task> maybe_encode(const arrow::array_ptr& a, std::uint64_t row_number, std::uint64_t) override {
    if (group_rows_ > 0) return maybe_encode_groups(a, row_number);
    if (arrays_.empty()) first_row_ = row_number;
    bytes_ += arrow::buffer_memory_size(*a);
    if (bytes_ > cache_bytes_) {
      arrays_.push_back(a);
      return take();
    }
    arrays_.push_back(keep_original_ ? a : arrow::deep_copy(*a));
    return {};
  }
  // Group mode (encoding_options::group_rows): the array is taken group_rows rows at a
  // time, each group measured by its compacted size, exactly as if the caller had
  // written compacted slices of it one by one; but a page's rows are handed to the
  // encode task as one zero-copy slice, and only rows still buffered when the call
  // returns are copied (so that they do not pin the caller's batch).
  std::vector<encode_task> maybe_encode_groups(const arrow::array_ptr& a, std::uint64_t row_number) {
    std::vector<encode_task> tasks;
    const auto group = std::int64_t(std::min<std::uint64_t>(group_rows_, std::uint64_t(std::numeric_limits<std::int64_t>::max())));
    std::int64_t run = 0;  // first row of `a` not yet handed to arrays_
    for (std::int64_t at = 0; at < a->length;) {
      if (at == run && arrays_.empty()) first_row_ = row_number + std::uint64_t(at);
      const auto n = std::min(group, a->length - at);
      bytes_ += arrow::compact_size(*arrow::slice(a, at, n));
      at += n;
      if (bytes_ > cache_bytes_) {
        arrays_.push_back(run == 0 && at == a->length ? a : arrow::slice(a, run, at - run));
        run = at;
        for (auto& t : take()) tasks.push_back(std::move(t));
      }
    }
    if (run < a->length) {
      auto rest = run == 0 ? a : arrow::slice(a, run, a->length - run);
      arrays_.push_back(keep_original_ ? rest : arrow::deep_copy(*rest));
    }
    return tasks;
  }

  std::vector<encode_task> flush() override {
    if (arrays_.empty()) return {};
    return take();
  }
  std::vector<encoded_column> finish() override {
    std::vector<encoded_column> out(paths_.size());
    for (auto& c : out) c.encoding = plain_column_encoding();
    return out;
  }
  std::uint32_t num_columns() const override { return std::uint32_t(paths_.size()); }

 private:
  std::vector<encode_task> take() {
    auto arrays = std::make_shared<const std::vector<arrow::array_ptr>>(std::exchange(arrays_, {}));
    bytes_ = 0;
    std::vector<encode_task> tasks;
    for (std::size_t i = 0; i < paths_.size(); ++i) {
      tasks.push_back([arrays, path = paths_[i], leaf = leaves_[i], column = columns_[i], policy = policy_,
                       rewrite = rewrite_, row = first_row_, minor = minor_]() {
        auto page = encode_page_with(*policy, path, leaf, *arrays, minor, rewrite);
        page.column_index = column;
        page.priority = row;
        return page;
      });
    }
    return tasks;
  }

  unsigned minor_;
  arrow::field field_;
  std::vector<std::vector<path_node>> paths_;
  std::vector<leaf_info> leaves_;
  std::vector<std::uint32_t> columns_;
  std::shared_ptr<const Policy> policy_;
  layout_rewrite rewrite_;
  bool keep_original_;
  std::uint64_t cache_bytes_;
  std::uint64_t group_rows_;
  std::uint64_t bytes_ = 0;
  std::uint64_t first_row_ = 0;
  std::vector<arrow::array_ptr> arrays_;
};

// structural_strategy (strategy.hpp): what each version can hold, field ids and
// columns, and the field encoders.

template <structural_policy Policy>
void structural_encodings<Policy>::validate(const arrow::field& f, const arrow::array_data& a) const {
  check_type(f, f.name);
  (void)a;
}

template <structural_policy Policy>
field_encoder_ptr structural_encodings<Policy>::make_field_encoder(const arrow::field& f, field_id_cursor& ids, column_index_sequence& columns,
                                     const encoding_options& o) const {
  return make_encoder(f, ids, columns, o, {});
}

template <structural_policy Policy>
field_encoder_ptr structural_encodings<Policy>::make_encoder(const arrow::field& f, field_id_cursor& ids,
                                                                   column_index_sequence& columns,
                                                                   const encoding_options& o,
                                                                   layout_rewrite rewrite) const {
  check_type(f, f.name);
  if (is_blob_v2_field_to_write(f)) {
    // One column of descriptions under the blob field's own id (data and uri take theirs).
    const auto id = ids.next(f.name);
    for (const auto& c : f.type->children) ids.next(c.name);
    const std::int32_t desc_ids[] = {id};
    field_id_cursor desc_cursor(desc_ids);
    auto inner = make_encoder(blob_v2_rows_field(f), desc_cursor, columns, o, blob_v2_layout_rewrite());
    return std::make_unique<blob_v2_encoder>(f, std::move(inner), o.write_out_of_line, o.place_blob_v2);
  }
  if (is_legacy_blob_field(f)) {
    // One column of (position, size) descriptions under the blob field's own id.
    const auto id = ids.next(f.name);
    const std::int32_t desc_ids[] = {id, id, id};
    field_id_cursor desc_cursor(desc_ids);
    auto inner = make_encoder(legacy_blob_descriptor_field(f), desc_cursor, columns, o, legacy_blob_layout_rewrite(f));
    return std::make_unique<legacy_blob_encoder>(f, std::move(inner), o.write_out_of_line);
  }
  auto paths = leaf_paths(f);
  std::vector<leaf_info> leaves;
  std::vector<std::uint32_t> cols;
  assign(f, f.name, ids, columns, cols, leaves);
  if (cols.size() != paths.size())
    throw internal_error("field '" + f.name + "' has " + std::to_string(paths.size()) + " leaf paths but " +
                         std::to_string(cols.size()) + " columns");
  page_sizing sizing;
  sizing.cache_bytes_per_column = o.cache_bytes_per_column;
  sizing.group_rows = o.group_rows;
  try {
    sizing = policy_->size_pages(f, sizing);
  } catch (const lancet::error&) {
    throw;
  } catch (const std::exception& e) {
    throw invalid_input_error("field '" + f.name + "': the encoding policy failed: " + e.what());
  }
  if (sizing.cache_bytes_per_column == 0)
    throw invalid_input_error("field '" + f.name + "': the encoding policy sized pages at 0 bytes per column");
  return std::make_unique<structural_field_encoder<Policy>>(minor_, f, std::move(paths), std::move(leaves),
                                                            std::move(cols), policy_, sizing, o, std::move(rewrite));
}

template <structural_policy Policy>
void structural_encodings<Policy>::check_type(const arrow::field& f, const std::string& path) const {
  const auto& t = *f.type;
  // Blob columns keep their values outside the pages: legacy blobs (2.1) are written
  // by legacy_blob_encoder (blob_encoder.hpp); Lance 12 refuses them from 2.2 on, and
  // lancet cannot write blob v2 columns (reading them: blob.hpp).
  for (const auto& [k, v] : f.metadata) {
    if (k == blob_key && (minor_ >= 2 || path != f.name))
      throw unsupported_error("field '" + path + "' is a legacy blob column (" + k + "), which " +
                              (minor_ >= 2 ? "Lance 12 refuses from file version 2.2 on (blob v2 columns replace them)"
                                          : "must be a top-level field"));
    if (k == "ARROW:extension:name" && v == "lance.blob.v2") {
      if (minor_ < 2)
        throw unsupported_error("field '" + path + "' is a blob v2 column (" + v +
                                "), which needs file version 2.2 or later (2.1 has legacy blob columns)");
      if (path != f.name) throw unsupported_error("field '" + path + "': blob v2 columns must be top-level fields");
      return;
    }
  }
  if (is_packed_struct(f)) {
    for (const auto& c : t.children) {
      const auto w = arrow::bit_width(*c.type);
      if (w <= 0 || w % 8 || c.type->id == arrow::type_id::boolean)
        throw unsupported_error("field '" + path + "': packed struct member '" + c.name + "' is " +
                                arrow::to_string(*c.type) + "; packed structs hold byte-aligned fixed-width members only");
    }
    return;
  }
  if (t.id == arrow::type_id::struct_ || arrow::is_list_like(t.id)) {
    for (const auto& c : t.children) check_type(c, path + "." + c.name);
    return;
  }
  if (t.id == arrow::type_id::fixed_size_list) {
    const arrow::data_type* cur = &t;
    while (cur->id == arrow::type_id::fixed_size_list) cur = cur->children.at(0).type.get();
    if (!(cur->id == arrow::type_id::boolean || arrow::is_fixed_width(*cur)))
      throw unsupported_error("field '" + path + "': fixed-size lists of " + arrow::to_string(*cur) +
                              " are not supported by lancet's 2.1+ writer (items must be fixed-width)");
  }
}

template <structural_policy Policy>
void structural_encodings<Policy>::assign(const arrow::field& f, const std::string& path, field_id_cursor& ids, column_index_sequence& columns,
            std::vector<std::uint32_t>& cols, std::vector<leaf_info>& leaves) const {
  const auto id = ids.next(f.name);
  const auto tid = f.type->id;
  if (is_packed_struct(f)) {
    // One column for the struct; its members still take field ids.
    for (const auto& c : f.type->children) skip_ids(c, ids);
  } else if ((tid == arrow::type_id::struct_ && !f.type->children.empty()) || arrow::is_list_like(tid)) {
    for (const auto& c : f.type->children)
      assign(c, arrow::is_list_like(tid) ? path : path + "." + c.name, ids, columns, cols, leaves);
    return;
  }
  cols.push_back(columns.next(id));
  leaf_info l;
  l.column = path;
  l.type = f.type;
  l.metadata = f.metadata;
  // A dictionary field (arrow::physical_field marks it): pages keep a dictionary.
  for (auto it = l.metadata.begin(); it != l.metadata.end(); ++it) {
    if (it->first == arrow::dictionary_index_key) {
      l.dictionary_index = arrow::index_type_named(it->second);
      l.metadata.erase(it);
      break;
    }
  }
  if constexpr (requires { policy_->resolve(path, *f.type, f.metadata); })
    l.params = policy_->resolve(path, *f.type, l.metadata);
  else
    l.params = compression_params().resolve(path, *f.type, l.metadata);
  l.minor = minor_;
  leaves.push_back(std::move(l));
}

template <structural_policy Policy>
void structural_encodings<Policy>::skip_ids(const arrow::field& f, field_id_cursor& ids) {
  ids.next(f.name);
  if (f.type->id == arrow::type_id::struct_ || arrow::is_list_like(f.type->id))
    for (const auto& c : f.type->children) skip_ids(c, ids);
}


}  // namespace lancet::encoding::structural
