// IVF_SQ's quantizer_traits (quantizer/contract.hpp): one byte per dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/sq/codec.hpp"
#include "lancet/index/quantizer/sq/scanner.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"

namespace lancet::index {

// IVF_SQ: one byte per dimension, row-major.
template <>
struct quantizer_traits<sq_params> : detail::plain_storage {
  static constexpr ivf_index_type type = ivf_index_type::ivf_sq;
  static constexpr std::string_view name = "SQ";
  static constexpr bool trained = true;
  static constexpr bool codes_need_centroids = false;  // one global range, no residuals
  using compression_type = pb::index::vector_index_details::sq_compression;
  static void validate(const sq_params& s) {
    if (s.dimension == 0) throw invalid_input_error("IVF_SQ: the dimension must be positive");
    if (s.num_bits != 8) throw invalid_input_error("IVF_SQ: num_bits must be 8, got " + std::to_string(s.num_bits));
    if (!(s.lower <= s.upper))
      throw invalid_input_error("IVF_SQ: the bounds [" + std::to_string(s.lower) + ", " + std::to_string(s.upper) +
                                "] are empty or not numbers");
  }
  static std::string metadata_json(const sq_params& s, std::uint32_t) {
    return "{\"dim\":" + std::to_string(s.dimension) + ",\"num_bits\":" + std::to_string(s.num_bits) +
           ",\"bounds\":{\"start\":" + json::serde_number(s.lower) + ",\"end\":" + json::serde_number(s.upper) + "}}";
  }
  static void add_columns(const sq_params& s, arrow::schema& out) {
    out.fields.push_back(detail::fsl_field(detail::sq_code_column, arrow::uint8(), s.dimension, true));
  }
  static compression_type compression(const sq_params& s) { return {s.num_bits}; }
  static void decode_rows(const sq_params& s, const std::uint8_t* codes, std::size_t n, std::size_t, float* out) {
    sq::decode(sq::from_params(s), codes, n, out);
  }
  // Cosine rows were normalised before quantizing: l2 ranks them alike.
  static simd::distance_type graph_distance(simd::distance_type d) {
    return d == simd::distance_type::cosine ? simd::distance_type::l2 : d;
  }
  // One pair of bounds makes the l2 of two dequantized rows the integer l2 of their
  // codes times a constant, as Lance's SQ storage measures it.
  static std::optional<float> graph_code_scale(const sq_params& s, simd::distance_type d) {
    if (d != simd::distance_type::l2) return std::nullopt;
    const auto m = sq::from_params(s);
    m.validate();
    const double step = (m.upper - m.lower) / 255.0;
    return float(step * step);
  }
  static bool binary(const sq_params&) { return false; }
  static constexpr bool supports_hamming = false;
  template <class Out>
  static void put_model(Out& o, const sq_params& s) {
    o.template put<std::uint32_t>(s.dimension);
    o.template put<std::uint32_t>(s.num_bits);
    o.template put<double>(s.lower);
    o.template put<double>(s.upper);
  }
  template <class In>
  static sq_params get_model(In& i) {
    sq_params s;
    s.dimension = i.template get<std::uint32_t>();
    s.num_bits = i.template get<std::uint32_t>();
    s.lower = i.template get<double>();
    s.upper = i.template get<double>();
    return s;
  }
  static constexpr std::string_view code_column = detail::sq_code_column;
  template <class FileReader>
  static stored_quantizer read_metadata(const FileReader&, const json::value& v, const std::string& file_what) {
    const std::string what = file_what + " storage_metadata";
    [[maybe_unused]] bool lance_layout = true;
    sq_params s;
    s.dimension = json::as_u32(json::member(v, "dim", what), "dim", what);
    s.num_bits = json::as_u32(json::member(v, "num_bits", what), "num_bits", what);
    const auto& b = json::member(v, "bounds", what);
    s.lower = json::as_f64(json::member(b, "start", what), "start", what);
    s.upper = json::as_f64(json::member(b, "end", what), "end", what);
    return {std::move(s), lance_layout};
  }
  static void check_build(const build_options& o, std::size_t) {
    const auto bits = o.num_bits.value_or(8);
    if (bits != 8) throw invalid_input_error("IVF_SQ: num_bits " + std::to_string(bits) + " is not supported (8)");
  }
  // Lance's SQ sample: sample_rate x 2^bits rows.
  static std::size_t training_rows(const build_options& o, std::size_t, std::size_t) {
    return o.sample_rate << o.num_bits.value_or(8);
  }
  static void record_hints(const build_options& o, build_hints& h) { h.sq_sample_rate = o.sample_rate; }
  static std::vector<std::pair<std::string, std::uint64_t>> runtime_hints(const build_hints& h) {
    return {{"lance.sq.sample_rate", h.sq_sample_rate}};
  }
  static std::vector<std::uint32_t> row_order(const sq_params&, simd::distance_type, bytes_view, std::size_t) {
    return {};
  }
  static void rebuild_options(const sq_params&, build_options&) {}
  template <class T>
  using codec = sq::codec<T>;
  using scanner = sq::scanner;
};

}  // namespace lancet::index
