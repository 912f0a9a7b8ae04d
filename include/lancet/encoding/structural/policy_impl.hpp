// The definitions of default_policy (policy.hpp): Lance 12's encoding decisions and the
// measurements they are made from. Header-only programs get them through policy.hpp;
// in compiled mode (core/config.hpp) they are compiled once, into the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "lancet/core/ascii.hpp"
#include "lancet/core/config.hpp"
#include "lancet/encoding/structural/compression/fsst.hpp"
#include "lancet/encoding/structural/page_encoder.hpp"
#include "lancet/encoding/structural/policy.hpp"

namespace lancet::encoding::detail {

inline std::uint64_t run_count(const structural::data_block& b) {
  return structural::rle::count_runs(b.data.data(), std::size_t(b.num_values), std::size_t(b.bits_per_value / 8));
}

// Bytes of inline bit-packing (1024-value chunks, each with its width word).
inline std::uint64_t bitpacked_size(const structural::data_block& b) {
  std::uint64_t packed = 0;
  detail::by_width(b.bits_per_value, [&](auto t) {
    using T = decltype(t);
    const T* v = reinterpret_cast<const T*>(b.data.data());
    for (std::uint64_t at = 0; at < b.num_values; at += 1024) {
      const auto w = structural::bitpack::needed_width(v + at, std::size_t(std::min<std::uint64_t>(1024, b.num_values - at)));
      packed += (1 + structural::bitpack::packed_words<T>(w)) * sizeof(T);
    }
    return 0;
  });
  return packed;
}

// Average Shannon entropy (bits) per byte position over the first 64 values (Lance's BSS test).
inline double byte_position_entropy(const structural::data_block& b) {
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

inline std::uint64_t max_value_length(const structural::data_block& b) {
  if (b.k == structural::data_block::kind::variable) {
    std::uint64_t m = 0;
    for (std::uint64_t i = 0; i < b.num_values; ++i) m = std::max(m, b.offset(i + 1) - b.offset(i));
    return m;
  }
  if (b.k == structural::data_block::kind::fixed) return b.bits_per_value / 8;
  if (b.k == structural::data_block::kind::fixed_size_list) {
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
inline bool should_dictionary(const structural::data_block& b, double ratio, unsigned minor) {
  if (b.num_values < 100) return false;
  const bool var = b.k == structural::data_block::kind::variable;
  const std::uint64_t min_bits = minor >= 2 ? 64 : 128;
  if (!var && !(b.k == structural::data_block::kind::fixed && b.bits_per_value >= min_bits && b.bits_per_value % 8 == 0 &&
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

inline std::optional<pb::enc21::compression_scheme> general_of(const field_compression& p) {
  if (!p.compression) return std::nullopt;
  if (*p.compression == "lz4") return pb::enc21::compression_scheme::lz4;
  if (*p.compression == "zstd") return pb::enc21::compression_scheme::zstd;
  return std::nullopt;
}

inline std::optional<std::string_view> meta(const arrow::metadata& md, std::string_view key) {
  for (const auto& [k, v] : md)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE page_plan default_policy::plan_page(const leaf_info& leaf, const data_block& values,
                                             const page_facts& f) const {
  const unsigned minor = leaf.minor;
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
  // A dictionary field: Lance 12 keeps its dictionary (mini-block, indices of the
  // field's index type compressed as any fixed-width values).
  if (leaf.dictionary_index) {
    p.dictionary = true;
    p.field_dictionary = true;
    p.layout = page_plan::layout_kind::miniblock;
    p.dictionary_index_bits = std::uint32_t(arrow::bit_width(*leaf.dictionary_index));
    auto [indices, dict] = detail::dictionary_encode(values, p.dictionary_index_bits);
    const auto id = leaf.dictionary_index->id;
    const bool is_signed = id == arrow::type_id::int8 || id == arrow::type_id::int16 || id == arrow::type_id::int32 ||
                           id == arrow::type_id::int64;
    const std::uint32_t value_bits = p.dictionary_index_bits - (is_signed ? 1 : 0);
    if (value_bits < 63 && dict.num_values > (std::uint64_t(1) << value_bits))
      throw invalid_input_error("column '" + leaf.column + "': a page holds " + std::to_string(dict.num_values) +
                                " distinct values, more than its dictionary index type " +
                                arrow::to_string(*leaf.dictionary_index) + " can index");
    p.codec = choose_fixed(indices, params);
    p.general = detail::general_of(params);
    p.general_level = params.level;
    return p;
  }
  // 2.2+: one value repeated (no nulls, no lists) is a constant page. Not for 64-bit
  // offsets (large_utf8 / large_binary): Lance 12 reads their scalar as another layout.
  if (minor >= 2 && !f.has_rep && !f.has_def && values.k != data_block::kind::fixed_size_list &&
      !(params.compression && *params.compression == "none") && detail::constant_value(values)) {
    if ((values.k == data_block::kind::variable && values.bits_per_offset != 64) ||
        (values.k != data_block::kind::variable && values.bits_per_value <= 256)) {
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
  if (!none && detail::should_dictionary(values, ratio, minor)) {
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
    const std::string v = ascii_lower(*s);
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

LANCET_INLINE value_codec default_policy::choose_fixed(const data_block& b, const field_compression& params) const {
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

#endif

}  // namespace lancet::encoding::structural
