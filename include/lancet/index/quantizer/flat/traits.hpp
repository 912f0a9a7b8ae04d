// IVF_FLAT's quantizer_traits (quantizer/contract.hpp): the vectors stored as they are.
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
#include "lancet/index/quantizer/flat/codec.hpp"
#include "lancet/index/quantizer/flat/scanner.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"

namespace lancet::index {

// IVF_FLAT: the vectors themselves in column `flat`.
template <>
struct quantizer_traits<flat_params> : detail::plain_storage {
  static constexpr ivf_index_type type = ivf_index_type::ivf_flat;
  static constexpr std::string_view name = "FLAT";
  static constexpr bool trained = false;
  static constexpr bool codes_need_centroids = false;
  static constexpr bool supports_hamming = true;
  using compression_type = pb::index::vector_index_details::flat_compression;
  static void validate(const flat_params& f) {
    if (f.dimension == 0) throw invalid_input_error("IVF_FLAT: the dimension must be positive");
  }
  static std::string metadata_json(const flat_params& f, std::uint32_t) {
    return "{\"dim\":" + std::to_string(f.dimension) + "}";
  }
  static void add_columns(const flat_params& f, arrow::schema& s) {
    // Float vectors are declared non-nullable, binary (hamming) ones nullable, as Lance 12 does.
    s.fields.push_back(detail::fsl_field(detail::flat_column, detail::element_arrow_type(f.element), f.dimension,
                                         f.element == element_type::u8));
  }
  static compression_type compression(const flat_params&) { return {}; }
  static void decode_rows(const flat_params& f, const std::uint8_t* b, std::size_t n, std::size_t dim, float* out) {
    for (std::size_t i = 0; i < n * dim; ++i) switch (f.element) {
        case element_type::f32: out[i] = reinterpret_cast<const float*>(b)[i]; break;
        case element_type::f64: out[i] = float(reinterpret_cast<const double*>(b)[i]); break;
        case element_type::f16: out[i] = reinterpret_cast<const simd::f16*>(b)[i].to_float(); break;
        case element_type::u8: out[i] = float(b[i]); break;
      }
  }
  static simd::distance_type graph_distance(simd::distance_type d) { return d; }
  static std::optional<float> graph_code_scale(const flat_params&, simd::distance_type) { return std::nullopt; }
  static bool binary(const flat_params& f) { return f.element == element_type::u8; }
  template <class Out>
  static void put_model(Out& o, const flat_params& f) {
    o.template put<std::uint32_t>(f.dimension);
    o.template put<std::uint8_t>(std::uint8_t(f.element));
  }
  template <class In>
  static flat_params get_model(In& i) {
    flat_params f;
    f.dimension = i.template get<std::uint32_t>();
    const auto e = i.template get<std::uint8_t>();
    if (e > std::uint8_t(element_type::u8)) i.fail("unknown flat element type " + std::to_string(e));
    f.element = element_type(e);
    return f;
  }
  static constexpr std::string_view code_column = detail::flat_column;
  template <class FileReader>
  static stored_quantizer read_metadata(const FileReader& file, const json::value& v, const std::string& file_what) {
    const std::string what = file_what + " storage_metadata";
    [[maybe_unused]] bool lance_layout = true;
    const auto& col = file.schema().fields.at(1);
    flat_params f;
    f.dimension = json::as_u32(json::member(v, "dim", what), "dim", what);
    const auto af = schema::to_arrow(col);
    if (af.type->id != arrow::type_id::fixed_size_list)
      throw corrupt_error(file_what + ": the flat column is not a fixed-size list");
    switch (af.type->children.at(0).type->id) {
      case arrow::type_id::float16: f.element = element_type::f16; break;
      case arrow::type_id::float32: f.element = element_type::f32; break;
      case arrow::type_id::float64: f.element = element_type::f64; break;
      case arrow::type_id::uint8: f.element = element_type::u8; break;
      default: throw unsupported_error(file_what + ": flat vectors of type " + col.logical_type + " are not supported");
    }
    if (std::uint32_t(af.type->list_size) != f.dimension)
      throw corrupt_error(file_what + ": storage_metadata says dim " + std::to_string(f.dimension) +
                          " but the flat column holds " + std::to_string(af.type->list_size));
    return {std::move(f), lance_layout};
  }
  static void check_build(const build_options& o, std::size_t) {
    if (o.num_sub_vectors || o.num_bits) throw invalid_input_error("IVF_FLAT takes no num_sub_vectors / num_bits");
  }
  static std::size_t training_rows(const build_options&, std::size_t, std::size_t) { return 0; }
  static void record_hints(const build_options&, build_hints&) {}
  static std::vector<std::pair<std::string, std::uint64_t>> runtime_hints(const build_hints&) {
    return {};
  }
  static std::vector<std::uint32_t> row_order(const flat_params&, simd::distance_type, bytes_view, std::size_t) {
    return {};
  }
  static void rebuild_options(const flat_params&, build_options&) {}
  template <class T>
  using codec = flat::codec<T>;
  using scanner = flat::scanner;
};

}  // namespace lancet::index
