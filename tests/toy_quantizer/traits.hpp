// The toy quantizer's quantizer_traits (quantizer/contract.hpp). Its index type
// "IVF_Q4" is lancet's alone: Lance cannot open it. auxiliary.idx stores the codes in
// column `__q4_code` and the ranges in storage_metadata; the manifest records it as
// 4-bit scalar quantization, the nearest case Lance's VectorIndexDetails has.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <lancet/core/error.hpp>
#include <lancet/index/quantizer/contract.hpp>
#include <lancet/json/access.hpp>
#include <lancet/json/write.hpp>
#include <lancet/schema/lance_schema.hpp>

#include "toy_quantizer/codec.hpp"
#include "toy_quantizer/params.hpp"
#include "toy_quantizer/scanner.hpp"

namespace lancet::index {

template <>
struct quantizer_traits<toy_q4::q4_params> {
  using P = toy_q4::q4_params;
  static constexpr ivf_index_type type = ivf_index_type{64};
  static constexpr std::string_view name = "Q4";
  static constexpr std::string_view code_column = "__q4_code";
  static constexpr std::int32_t index_version = 1;
  static constexpr bool has_factors = false;
  static constexpr bool trained = true;
  static constexpr bool codes_need_centroids = false;
  static constexpr bool supports_hamming = false;
  using compression_type = pb::index::vector_index_details::sq_compression;

  static void validate(const P& p) {
    if (p.dimension == 0) throw invalid_input_error("IVF_Q4: the dimension must be positive");
    if (p.lower.size() != p.dimension || p.upper.size() != p.dimension)
      throw invalid_input_error("IVF_Q4: " + std::to_string(p.lower.size()) + " lower and " +
                                std::to_string(p.upper.size()) + " upper bounds for dimension " +
                                std::to_string(p.dimension));
    for (std::size_t d = 0; d < p.dimension; ++d)
      if (!(p.lower[d] <= p.upper[d]) || !std::isfinite(p.upper[d]) || !std::isfinite(p.lower[d]))
        throw invalid_input_error("IVF_Q4: the range of dimension " + std::to_string(d) + " is empty or not finite");
  }
  static std::string metadata_json(const P& p, std::uint32_t) {
    const auto list = [](const std::vector<float>& v) {
      std::vector<std::string> items;
      for (float x : v) items.push_back(json::serde_number(x));
      return json::raw_list(items);
    };
    return "{\"dim\":" + std::to_string(p.dimension) + ",\"lower\":" + list(p.lower) + ",\"upper\":" + list(p.upper) +
           "}";
  }
  template <class FileReader>
  static stored_quantizer read_metadata(const FileReader& file, const json::value& v, const std::string& file_what) {
    const std::string what = file_what + " storage_metadata";
    P p;
    p.dimension = json::as_u32(json::member(v, "dim", what), "dim", what);
    const auto floats = [&](std::string_view key) {
      const auto& a = json::member(v, key, what);
      if (a.k != json::value::kind::array) throw corrupt_error(what + ": '" + std::string(key) + "' is not a list");
      std::vector<float> out;
      for (const auto& x : a.items) out.push_back(float(json::as_f64(x, key, what)));
      return out;
    };
    p.lower = floats("lower");
    p.upper = floats("upper");
    const auto col = schema::to_arrow(file.schema().fields.at(1));
    if (col.type->id != arrow::type_id::fixed_size_list || std::uint32_t(col.type->list_size) != p.code_bytes())
      throw corrupt_error(file_what + ": the Q4 code column does not hold " + std::to_string(p.code_bytes()) +
                          " bytes per row");
    return {std::move(p), true};
  }
  static void add_columns(const P& p, arrow::schema& s) {
    s.fields.push_back(arrow::field{std::string(code_column),
                                    arrow::fixed_size_list(arrow::uint8(), std::int32_t(p.code_bytes())), true, {}});
  }
  static std::optional<pb::index::tensor> global_buffer(const P&) { return std::nullopt; }
  static compression_type compression(const P&) { return {4}; }
  static void store_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
    std::memcpy(out, in, n * w);
  }
  static void load_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out, bool) {
    std::memcpy(out, in, n * w);
  }
  static void decode_rows(const P& p, const std::uint8_t* codes, std::size_t n, std::size_t dim, float* out) {
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t d = 0; d < dim; ++d)
        out[r * dim + d] = toy_q4::level(p, d, toy_q4::code_at(codes + r * p.code_bytes(), d));
  }
  static simd::distance_type graph_distance(simd::distance_type d) {
    return d == simd::distance_type::cosine ? simd::distance_type::l2 : d;
  }
  static std::optional<float> graph_code_scale(const P&, simd::distance_type) { return std::nullopt; }
  static bool binary(const P&) { return false; }

  template <class Out>
  static void put_model(Out& o, const P& p) {
    o.template put<std::uint32_t>(p.dimension);
    for (float x : p.lower) o.template put<float>(x);
    for (float x : p.upper) o.template put<float>(x);
  }
  template <class In>
  static P get_model(In& i) {
    P p;
    p.dimension = i.template get<std::uint32_t>();
    for (auto* v : {&p.lower, &p.upper})
      for (std::uint32_t d = 0; d < p.dimension; ++d) v->push_back(i.template get<float>());
    return p;
  }

  static void check_build(const build_options& o, std::size_t) {
    if (o.num_sub_vectors) throw invalid_input_error("IVF_Q4 takes no num_sub_vectors");
    if (o.num_bits.value_or(4) != 4)
      throw invalid_input_error("IVF_Q4: num_bits " + std::to_string(*o.num_bits) + " is not supported (4)");
  }
  static std::size_t training_rows(const build_options& o, std::size_t, std::size_t) { return o.sample_rate * 16; }
  static void record_hints(const build_options&, build_hints&) {}
  static std::vector<std::pair<std::string, std::uint64_t>> runtime_hints(const build_hints&) { return {}; }
  static std::vector<std::uint32_t> row_order(const P&, simd::distance_type, bytes_view, std::size_t) { return {}; }
  static void rebuild_options(const P&, build_options&) {}

  template <class T>
  using codec = toy_q4::codec<T>;
  using scanner = toy_q4::scanner;
};

}  // namespace lancet::index
