// Lance 2.1+ field encoders and the default strategy.
//
// One structural_field_encoder per top-level field: arrays accumulate until about
// cache_bytes_per_column per leaf column are buffered (a batch larger than that is a
// page of its own: 2.1+ pages are not split at write time), then every leaf column is
// shredded into levels and values and encoded as one page, each in its own task.
//
// default_strategy<Minor> (Minor = 1, 2 or 3 for files 2.1, 2.2, 2.3) makes Lance 12's
// choices; plan_page is virtual so a user strategy can force a layout or codec:
//
//   struct my_strategy : v2_1::default_strategy<2> {
//     std::shared_ptr<const default_strategy<2>> clone() const override { return std::make_shared<my_strategy>(*this); }
//     page_plan plan_page(const leaf_info& l, const data_block& v, const page_facts& f) const override {
//       auto p = default_strategy<2>::plan_page(l, v, f);
//       if (l.column == "id") p.codec = value_codec::rle;
//       return p;
//     }
//   };
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/encoding/detail/gather.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/v2_0/field_encoders.hpp"
#include "lancet/encoding/v2_1/blob_encoder.hpp"
#include "lancet/encoding/v2_1/compression/fsst.hpp"
#include "lancet/encoding/v2_1/page_encoder.hpp"
#include "lancet/encoding/v2_1/repdef.hpp"
#include "lancet/encoding/v2_1/values.hpp"

namespace lancet::encoding::v2_1 {

using v2_0::field_id_cursor;

template <unsigned Minor>
class default_strategy;

namespace detail {

inline std::uint64_t run_count(const data_block& b) {
  return rle::count_runs(b.data.data(), std::size_t(b.num_values), std::size_t(b.bits_per_value / 8));
}

// Bytes of inline bit-packing (1024-value chunks, each with its width word).
inline std::uint64_t bitpacked_size(const data_block& b) {
  std::uint64_t packed = 0;
  v2_1::detail::by_width(b.bits_per_value, [&](auto t) {
    using T = decltype(t);
    const T* v = reinterpret_cast<const T*>(b.data.data());
    for (std::uint64_t at = 0; at < b.num_values; at += 1024) {
      const auto w = bitpack::needed_width(v + at, std::size_t(std::min<std::uint64_t>(1024, b.num_values - at)));
      packed += (1 + bitpack::packed_words<T>(w)) * sizeof(T);
    }
    return 0;
  });
  return packed;
}

// Average Shannon entropy (bits) per byte position over the first 64 values (Lance's BSS test).
inline double byte_position_entropy(const data_block& b) {
  const std::size_t w = std::size_t(b.bits_per_value / 8);
  const std::size_t n = std::size_t(std::min<std::uint64_t>(b.num_values, 64));
  if (n == 0) return 8.0;
  double sum = 0;
  for (std::size_t pos = 0; pos < w; ++pos) {
    unsigned counts[256] = {};
    for (std::size_t i = 0; i < n; ++i) ++counts[b.data.data()[i * w + pos]];
    double e = 0;
    for (unsigned c : counts)
      if (c) {
        const double p = double(c) / double(n);
        e -= p * std::log2(p);
      }
    sum += std::floor(e * 1000.0) / 1000.0;
  }
  return sum / double(w);
}

inline std::uint64_t max_value_length(const data_block& b) {
  if (b.k == data_block::kind::variable) {
    std::uint64_t m = 0;
    for (std::uint64_t i = 0; i < b.num_values; ++i) m = std::max(m, b.offset(i + 1) - b.offset(i));
    return m;
  }
  if (b.k == data_block::kind::fixed) return b.bits_per_value / 8;
  if (b.k == data_block::kind::fixed_size_list) {
    std::uint64_t cum = 1, v = 0;
    for (const auto& l : b.fsl) {
      cum *= l.dimension;
      if (l.has_validity) v += (cum + 7) / 8;
    }
    return v + cum * b.bits_per_value / 8;
  }
  return 0;
}

// Lance's dictionary test: at least 100 values and an estimated dictionary-encoded size
// below `ratio` of the plain size.
// Fixed-width values qualify from 128 bits in 2.1 and from 64 bits in 2.2+ (i32 indices
// cannot make narrower values smaller).
inline bool should_dictionary(const data_block& b, double ratio, unsigned minor) {
  if (b.num_values < 100) return false;
  const bool var = b.k == data_block::kind::variable;
  const std::uint64_t min_bits = minor >= 2 ? 64 : 128;
  if (!var && !(b.k == data_block::kind::fixed && b.bits_per_value >= min_bits && b.bits_per_value % 8 == 0 &&
                b.bits_per_value <= 256))
    return false;
  const std::uint64_t data_size = b.data_size();
  if (data_size == 0) return false;
  // Cardinality, giving up once it alone rules the dictionary out.
  const double limit = ratio * double(data_size);
  const std::uint64_t w = var ? b.bits_per_offset / 8 : b.bits_per_value / 8;
  const double avg = double(data_size / b.num_values);
  auto estimate = [&](std::uint64_t card) {
    return var ? double(card) * avg + double(card * w) + double(b.num_values * w) : double(card * w + b.num_values * 4);
  };
  // The most distinct values a dictionary may have.
  const double per = var ? avg + double(w) : double(w);
  const double fixed_part = var ? double(b.num_values * w) : double(b.num_values * 4);
  if (limit <= fixed_part) return false;
  const auto max_card = std::uint64_t((limit - fixed_part) / per);
  auto key = [&](std::uint64_t i) {
    return var ? std::string_view(reinterpret_cast<const char*>(b.data.data() + b.offset(i)),
                                  std::size_t(b.offset(i + 1) - b.offset(i)))
               : std::string_view(reinterpret_cast<const char*>(b.data.data() + i * w), std::size_t(w));
  };
  // A sample first: high-cardinality data shows itself early (distinct values in the
  // first few thousand far beyond the share a dictionary could afford).
  const std::uint64_t sample = std::min<std::uint64_t>(b.num_values, 4096);
  std::unordered_set<std::string_view> seen;
  seen.reserve(std::size_t(std::min<std::uint64_t>(max_card + 1, sample)));
  for (std::uint64_t i = 0; i < sample; ++i) seen.insert(key(i));
  if (b.num_values > sample && double(seen.size()) > 2.0 * double(max_card) / double(b.num_values) * double(sample) &&
      seen.size() > 64)
    return false;
  for (std::uint64_t i = sample; i < b.num_values; ++i) {
    seen.insert(key(i));
    if (seen.size() > max_card) return false;
  }
  return estimate(seen.size()) < limit;
}

inline std::optional<enc21::compression_scheme> general_of(const field_compression& p) {
  if (!p.compression) return std::nullopt;
  if (*p.compression == "lz4") return enc21::compression_scheme::lz4;
  if (*p.compression == "zstd") return enc21::compression_scheme::zstd;
  return std::nullopt;
}

inline std::optional<std::string_view> meta(const arrow::metadata& md, std::string_view key) {
  for (const auto& [k, v] : md)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

}  // namespace detail

// The encoder of one top-level field: one column per leaf.
template <unsigned Minor>
class structural_field_encoder final : public field_encoder {
 public:
  structural_field_encoder(arrow::field f, std::vector<std::vector<path_node>> paths, std::vector<leaf_info> leaves,
                           std::vector<std::uint32_t> columns, std::shared_ptr<const default_strategy<Minor>> strategy,
                           const encoding_options& o)
      : field_(std::move(f)), paths_(std::move(paths)), leaves_(std::move(leaves)), columns_(std::move(columns)),
        strategy_(std::move(strategy)), keep_original_(o.keep_original_array),
        cache_bytes_(o.cache_bytes_per_column * std::max<std::size_t>(1, paths_.size())), group_rows_(o.group_rows) {}

  std::vector<encode_task> maybe_encode(const arrow::array_ptr& a, std::uint64_t row_number, std::uint64_t) override {
    if (group_rows_ > 0) return maybe_encode_groups(a, row_number);
    if (arrays_.empty()) first_row_ = row_number;
    bytes_ += encoding::detail::buffer_memory_size(*a);
    if (bytes_ > cache_bytes_) {
      arrays_.push_back(a);
      return take();
    }
    arrays_.push_back(keep_original_ ? a : encoding::detail::deep_copy(*a));
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
      bytes_ += encoding::detail::compact_size(*arrow::slice(a, at, n));
      at += n;
      if (bytes_ > cache_bytes_) {
        arrays_.push_back(run == 0 && at == a->length ? a : arrow::slice(a, run, at - run));
        run = at;
        for (auto& t : take()) tasks.push_back(std::move(t));
      }
    }
    if (run < a->length) {
      auto rest = run == 0 ? a : arrow::slice(a, run, a->length - run);
      arrays_.push_back(keep_original_ ? rest : encoding::detail::deep_copy(*rest));
    }
    return tasks;
  }

  std::vector<encode_task> flush() override {
    if (arrays_.empty()) return {};
    return take();
  }
  std::vector<encoded_column> finish() override {
    std::vector<encoded_column> out(paths_.size());
    for (auto& c : out) c.encoding = v2_0::serialize_any(pb::pack_any(pb::enc20::column_encoding::values()));
    return out;
  }
  std::uint32_t num_columns() const override { return std::uint32_t(paths_.size()); }

 private:
  std::vector<encode_task> take() {
    auto arrays = std::make_shared<const std::vector<arrow::array_ptr>>(std::exchange(arrays_, {}));
    bytes_ = 0;
    std::vector<encode_task> tasks;
    for (std::size_t i = 0; i < paths_.size(); ++i) {
      tasks.push_back([arrays, path = paths_[i], leaf = leaves_[i], column = columns_[i], strategy = strategy_,
                       row = first_row_]() {
        auto page = strategy->encode_page(path, leaf, *arrays);
        page.column_index = column;
        page.priority = row;
        return page;
      });
    }
    return tasks;
  }

  arrow::field field_;
  std::vector<std::vector<path_node>> paths_;
  std::vector<leaf_info> leaves_;
  std::vector<std::uint32_t> columns_;
  std::shared_ptr<const default_strategy<Minor>> strategy_;
  bool keep_original_;
  std::uint64_t cache_bytes_;
  std::uint64_t group_rows_;
  std::uint64_t bytes_ = 0;
  std::uint64_t first_row_ = 0;
  std::vector<arrow::array_ptr> arrays_;
};

// Lance 12's choices for files 2.<Minor>.
template <unsigned Minor>
class default_strategy {
 public:
  static_assert(Minor >= 1 && Minor <= 3, "structural strategies exist for files 2.1, 2.2 and 2.3");
  static constexpr unsigned minor = Minor;

  default_strategy() = default;
  explicit default_strategy(compression_params params) : params_(std::move(params)) {}
  default_strategy(const default_strategy&) = default;
  default_strategy& operator=(const default_strategy&) = default;
  virtual ~default_strategy() = default;

  const compression_params& params() const noexcept { return params_; }

  // A copy of the strategy (of the most derived type) that encode tasks share.
  virtual std::shared_ptr<const default_strategy> clone() const { return std::make_shared<default_strategy>(*this); }

  // Checks a batch's column before anything is encoded.
  void validate(const arrow::field& f, const arrow::array_data& a) const {
    check_type(f, f.name);
    (void)a;
  }

  field_encoder_ptr make_field_encoder(const arrow::field& f, field_id_cursor& ids, column_index_sequence& columns,
                                       const encoding_options& o) const {
    check_type(f, f.name);
    if (is_legacy_blob_field(f)) {
      // One column of (position, size) descriptions under the blob field's own id.
      const auto id = ids.next(f.name);
      const std::int32_t desc_ids[] = {id, id, id};
      field_id_cursor desc_cursor(desc_ids);
      auto inner = make_field_encoder(legacy_blob_descriptor_field(f), desc_cursor, columns, o);
      return std::make_unique<legacy_blob_encoder>(f, std::move(inner), o.write_out_of_line);
    }
    auto paths = leaf_paths(f);
    std::vector<leaf_info> leaves;
    std::vector<std::uint32_t> cols;
    assign(f, f.name, ids, columns, cols, leaves);
    if (cols.size() != paths.size()) throw invalid_input_error("internal: leaf count mismatch for field '" + f.name + "'");
    return std::make_unique<structural_field_encoder<Minor>>(f, std::move(paths), std::move(leaves), std::move(cols),
                                                             clone(), o);
  }

  // Shreds the field's arrays into one leaf's page and encodes it.
  encoded_page encode_page(const std::vector<path_node>& path, const leaf_info& leaf,
                           const std::vector<arrow::array_ptr>& arrays) const {
    auto shredded = shred(path, arrays);
    const level_scheme s(shredded.layers);
    auto values = gather_values(*leaf.type, shredded);
    page_facts facts;
    facts.num_rows = shredded.num_rows;
    facts.num_values = shredded.num_values;
    facts.leaf_nulls = shredded.leaf_nulls;
    facts.has_rep = s.max_rep > 0;
    facts.has_def = s.max_def > 0;
    facts.num_layers = s.layers.size();
    auto plan = plan_page(leaf, values, facts);
    if (plan.packed_struct) {
      plan.packed_widths.clear();
      for (const auto& c : leaf.type->children) plan.packed_widths.push_back(std::uint64_t(arrow::bit_width(*c.type)));
      if (plan.layout != page_plan::layout_kind::miniblock && plan.layout != page_plan::layout_kind::all_null)
        throw unsupported_error("column '" + leaf.column + "': packed structs are written as mini-blocks only");
      if (plan.dictionary || plan.codec != value_codec::flat)
        throw unsupported_error("column '" + leaf.column + "': packed struct rows are stored uncompressed");
    }
    auto page = encode_leaf_page(s, shredded.rep, shredded.def, values, plan, shredded.num_rows, Minor);
    return page;
  }

  // Lance 12's plan for a page; override to force layouts or codecs.
  virtual page_plan plan_page(const leaf_info& leaf, const data_block& values, const page_facts& f) const {
    page_plan p;
    const auto& params = leaf.params;
    if (params.minichunk_size) p.minichunk_bytes = *params.minichunk_size;
    // Nothing to store but levels.
    if (values.k == data_block::kind::empty || f.num_values == 0 || f.leaf_nulls == f.num_values) {
      p.layout = page_plan::layout_kind::all_null;
      return p;
    }
    if (leaf.type->id == arrow::type_id::struct_) {
      p.layout = page_plan::layout_kind::miniblock;
      p.codec = value_codec::flat;
      p.packed_struct = true;
      return p;
    }
    // 2.2+: one value repeated (no nulls, no lists) is a constant page.
    if (Minor >= 2 && !f.has_rep && !f.has_def && values.k != data_block::kind::fixed_size_list &&
        !(params.compression && *params.compression == "none") && detail::constant_value(values)) {
      if (values.k == data_block::kind::variable || values.bits_per_value <= 256) {
        p.layout = page_plan::layout_kind::constant;
        return p;
      }
    }
    // Dictionary (strings and 128-bit values of low cardinality).
    double ratio = 0.8;
    if (auto r = detail::meta(leaf.metadata, dict_size_ratio_key)) {
      try {
        ratio = std::stod(std::string(*r));
      } catch (const std::exception&) {
        throw invalid_input_error("column '" + leaf.column + "': " + std::string(dict_size_ratio_key) + " '" +
                                  std::string(*r) + "' is not a number");
      }
      if (!(ratio > 0 && ratio <= 1))
        throw invalid_input_error("column '" + leaf.column + "': " + std::string(dict_size_ratio_key) + " " +
                                  std::string(*r) + " is not in (0, 1]");
    }
    const bool none = params.compression && *params.compression == "none";
    // Lance compresses strings with FSST, never binaries (unless asked to).
    const bool text = leaf.type->id == arrow::type_id::utf8 || leaf.type->id == arrow::type_id::large_utf8;
    const bool fsst_asked = params.compression && *params.compression == "fsst";
    if (!none && detail::should_dictionary(values, ratio, Minor)) {
      p.dictionary = true;
      p.layout = page_plan::layout_kind::miniblock;
      // The indices are i32 values like any other (RLE, bit-packing, BSS + general).
      const auto indices = detail::dictionary_encode(values).first;
      p.codec = choose_fixed(indices, params);
      p.general = detail::general_of(params);
      p.general_level = params.level;
      return p;
    }
    // Layout: mini-block for values under 256 bytes, unless the field says otherwise.
    const auto max_len = detail::max_value_length(values);
    bool miniblock = max_len < 256;
    if (auto s = detail::meta(leaf.metadata, structural_encoding_key)) {
      std::string v(*s);
      for (auto& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (v == "miniblock") miniblock = true;
      else if (v == "fullzip") miniblock = false;
      else
        throw invalid_input_error("column '" + leaf.column + "': " + std::string(structural_encoding_key) + " '" +
                                  std::string(*s) + "' is not miniblock or fullzip");
    }
    if (!miniblock) {
      p.layout = page_plan::layout_kind::fullzip;
      if (values.k == data_block::kind::variable && !none) {
        const auto data_size = values.value_bytes();
        const bool per_value_general = params.compression && *params.compression != "fsst";
        if ((max_len > 32 * 1024 || per_value_general) && data_size >= fsst::least_input_size) {
          p.per_value.k = per_value_codec::kind::general;
          // Lance's default: zstd at level 0 (written explicitly).
          p.per_value.scheme = detail::general_of(params).value_or(enc21::compression_scheme::zstd);
          p.per_value.level = detail::general_of(params) ? params.level : std::optional<std::int32_t>(0);
        } else if (fsst_asked || (text && max_len >= fsst::least_max_length && data_size >= fsst::least_input_size)) {
          p.per_value.k = per_value_codec::kind::fsst;
        }
      }
      return p;
    }
    p.layout = page_plan::layout_kind::miniblock;
    if (values.k == data_block::kind::variable) {
      const auto data_size = values.data_size();
      if (none) p.codec = value_codec::variable;
      else if (fsst_asked || (text && max_len >= fsst::least_max_length && data_size >= fsst::least_input_size))
        p.codec = value_codec::fsst;
      else p.codec = value_codec::variable;
      if (!none) p.general = detail::general_of(params), p.general_level = params.level;
      return p;
    }
    if (values.k == data_block::kind::fixed_size_list || leaf.type->id == arrow::type_id::struct_) {
      p.codec = value_codec::flat;  // fixed-size lists and packed structs are stored as they are
      p.packed_struct = leaf.type->id == arrow::type_id::struct_;
      return p;
    }
    p.codec = choose_fixed(values, params);
    if (!none) p.general = detail::general_of(params), p.general_level = params.level;
    return p;
  }

 protected:
  // Lance 12's choice for fixed-width mini-block values: BSS when a general compression
  // is asked for and the bytes look like floats; otherwise the smallest of plain, RLE
  // (when runs are below the field's threshold, if it sets one) and inline bit-packing.
  value_codec choose_fixed(const data_block& b, const field_compression& params) const {
    if (params.compression && *params.compression == "none") return value_codec::flat;
    const auto bits = b.bits_per_value;
    const bool word = bits == 8 || bits == 16 || bits == 32 || bits == 64;
    if (!word) return value_codec::flat;
    if (detail::general_of(params) && (bits == 32 || bits == 64)) {
      const auto mode = params.bss.value_or(bss_mode::automatic);
      if (mode == bss_mode::on || (mode == bss_mode::automatic && detail::byte_position_entropy(b) < 4.0))
        return value_codec::bss;
    }
    const std::size_t w = std::size_t(bits / 8);
    const std::uint64_t flat = b.num_values * w;
    std::uint64_t best = flat;
    value_codec pick = value_codec::flat;
    const auto packed = detail::bitpacked_size(b);
    if (packed < best) { best = packed; pick = value_codec::bitpack; }
    const bool gate = !params.rle_threshold ||
                      double(detail::run_count(b)) < double(b.num_values) * *params.rle_threshold;
    if (gate) {
      const auto r = rle::encoded_size(b.data.data(), std::size_t(b.num_values), w);
      if (r < best) { best = r; pick = value_codec::rle; }
    }
    return pick;
  }

 private:
  // Refuses what the structural encodings cannot hold, naming the field.
  static void check_type(const arrow::field& f, const std::string& path) {
    const auto& t = *f.type;
    // Blob columns keep their values outside the pages: legacy blobs (2.1) are written
    // by legacy_blob_encoder (blob_encoder.hpp); Lance 12 refuses them from 2.2 on, and
    // lancet cannot write blob v2 columns (reading them: blob.hpp).
    for (const auto& [k, v] : f.metadata) {
      if (k == blob_key && (Minor >= 2 || path != f.name))
        throw unsupported_error("field '" + path + "' is a legacy blob column (" + k + "), which " +
                                (Minor >= 2 ? "Lance 12 refuses from file version 2.2 on (blob v2 columns replace them)"
                                            : "must be a top-level field"));
      if (k == "ARROW:extension:name" && v == "lance.blob.v2")
        throw unsupported_error("field '" + path + "' is a blob v2 column (" + v +
                                "); lancet reads blob v2 columns but cannot write them");
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

  // Field ids in pre-order, a column per leaf.
  void assign(const arrow::field& f, const std::string& path, field_id_cursor& ids, column_index_sequence& columns,
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
    l.params = params_.resolve(path, *f.type, f.metadata);
    l.minor = Minor;
    leaves.push_back(std::move(l));
  }

  static void skip_ids(const arrow::field& f, field_id_cursor& ids) {
    ids.next(f.name);
    if (f.type->id == arrow::type_id::struct_ || arrow::is_list_like(f.type->id))
      for (const auto& c : f.type->children) skip_ids(c, ids);
  }

  compression_params params_;
};

}  // namespace lancet::encoding::v2_1
