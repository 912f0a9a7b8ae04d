// IVF_RQ's quantizer_traits (quantizer/contract.hpp): RaBitQ codes packed in blocks, per-row factors.
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
#include "lancet/index/quantizer/rabitq/codec.hpp"
#include "lancet/index/quantizer/rabitq/scanner.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"

namespace lancet::index {

// IVF_RQ (RaBitQ): codes packed in blocks of 32 rows, per-row factors; a matrix
// rotation in a global buffer. Lance 12 gives IVF_RQ indexes index_version 2.
template <>
struct quantizer_traits<rq_params> {
  static constexpr ivf_index_type type = ivf_index_type::ivf_rq;
  static constexpr std::string_view name = "RQ";
  static constexpr bool trained = true;
  static constexpr bool codes_need_centroids = true;  // rotated residuals
  using compression_type = pb::index::vector_index_details::rq_compression;
  static constexpr std::int32_t index_version = 2;
  static constexpr bool has_factors = true;
  static void validate(const rq_params& r) {
    if (r.code_dim == 0 || r.code_dim % 8)
      throw invalid_input_error("IVF_RQ: code_dim must be a positive multiple of 8, got " + std::to_string(r.code_dim));
    if (r.num_bits == 0 || r.num_bits > 8)
      throw invalid_input_error("IVF_RQ: num_bits must be 1 to 8, got " + std::to_string(r.num_bits));
    if (r.num_bits > 1 && r.ex_code_bytes == 0)
      throw invalid_input_error("IVF_RQ: " + std::to_string(r.num_bits) + "-bit codes need ex_code_bytes");
    if (r.rotation_type == rq_params::rotation::matrix && !r.rotate_mat)
      throw invalid_input_error("IVF_RQ: a matrix rotation needs rotate_mat");
    if (r.rotation_type == rq_params::rotation::fast && r.fast_rotation_signs.empty())
      throw invalid_input_error("IVF_RQ: a fast rotation needs fast_rotation_signs");
  }
  static std::string metadata_json(const rq_params& r, std::uint32_t buffer) {
    using json::quote;
    std::string signs = "null";
    if (r.rotation_type == rq_params::rotation::fast) {
      signs = "[";
      for (std::size_t i = 0; i < r.fast_rotation_signs.size(); ++i)
        signs += (i ? "," : "") + std::to_string(r.fast_rotation_signs[i]);
      signs += "]";
    }
    return "{\"rotate_mat_position\":" +
           (r.rotation_type == rq_params::rotation::matrix ? std::to_string(buffer) : std::string("null")) +
           ",\"fast_rotation_signs\":" + signs + ",\"rotation_type\":" +
           quote(r.rotation_type == rq_params::rotation::fast ? "fast" : "matrix") + ",\"code_dim\":" +
           std::to_string(r.code_dim) + ",\"num_bits\":" + std::to_string(r.num_bits) +
           ",\"packed\":true,\"query_estimator\":" + quote(r.query_estimator) + "}";
  }
  static void add_columns(const rq_params& r, arrow::schema& s) {
    s.fields.push_back(detail::fsl_field(detail::rabit_code_column, arrow::uint8(), r.code_bytes(), true));
    s.fields.push_back(detail::plain_field(detail::add_factors_column, arrow::float32(), true));
    s.fields.push_back(detail::plain_field(detail::scale_factors_column, arrow::float32(), true));
    s.fields.push_back(detail::plain_field(detail::error_factors_column, arrow::float32(), true));
    if (r.num_bits > 1) {
      s.fields.push_back(detail::fsl_field(detail::blocked_ex_codes_column, arrow::uint8(), r.ex_code_bytes, true));
      s.fields.push_back(detail::plain_field(detail::add_factors_ex_column, arrow::float32(), true));
      s.fields.push_back(detail::plain_field(detail::scale_factors_ex_column, arrow::float32(), true));
    }
  }
  static std::optional<pb::index::tensor> global_buffer(const rq_params& r) {
    if (r.rotation_type != rq_params::rotation::matrix) return std::nullopt;
    return to_tensor(*r.rotate_mat);
  }
  static compression_type compression(const rq_params& r) { return {r.num_bits}; }
  static void store_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
    pack_rabit_codes(in, n, w, out);
  }
  static void load_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out, bool lance_layout) {
    if (lance_layout) unpack_rabit_codes(in, n, w, out);
    else std::memcpy(out, in, n * w);
  }
  [[noreturn]] static void decode_rows(const rq_params&, const std::uint8_t*, std::size_t, std::size_t, float*) {
    throw unsupported_error("HNSW over RaBitQ storage is not supported (Lance 12 has no IVF_HNSW_RQ)");
  }
  // Cosine rows were normalised before quantizing: l2 ranks them alike.
  static simd::distance_type graph_distance(simd::distance_type d) {
    return d == simd::distance_type::cosine ? simd::distance_type::l2 : d;
  }
  static std::optional<float> graph_code_scale(const rq_params&, simd::distance_type) { return std::nullopt; }
  static bool binary(const rq_params&) { return false; }
  static constexpr bool supports_hamming = false;
  template <class Out>
  static void put_model(Out& o, const rq_params& r) {
    o.template put<std::uint32_t>(r.code_dim);
    o.template put<std::uint32_t>(r.num_bits);
    o.template put<std::uint8_t>(std::uint8_t(r.rotation_type));
    o.str(std::string_view(reinterpret_cast<const char*>(r.fast_rotation_signs.data()), r.fast_rotation_signs.size()));
    o.template put<std::uint8_t>(r.rotate_mat ? 1 : 0);
    if (r.rotate_mat) o.mat(*r.rotate_mat);
    o.str(r.query_estimator);
    o.template put<std::uint32_t>(r.ex_code_bytes);
  }
  template <class In>
  static rq_params get_model(In& i) {
    rq_params r;
    r.code_dim = i.template get<std::uint32_t>();
    r.num_bits = i.template get<std::uint32_t>();
    const auto rot = i.template get<std::uint8_t>();
    if (rot > 1) i.fail("unknown RaBitQ rotation " + std::to_string(rot));
    r.rotation_type = rq_params::rotation(rot);
    const auto signs = i.str();
    r.fast_rotation_signs.assign(signs.begin(), signs.end());
    if (i.template get<std::uint8_t>()) r.rotate_mat = i.mat();
    r.query_estimator = i.str();
    r.ex_code_bytes = i.template get<std::uint32_t>();
    return r;
  }
  static constexpr std::string_view code_column = detail::rabit_code_column;
  template <class FileReader>
  static stored_quantizer read_metadata(const FileReader& file, const json::value& v, const std::string& file_what) {
    const std::string what = file_what + " storage_metadata";
    [[maybe_unused]] bool lance_layout = true;
    rq_params r;
    r.code_dim = json::as_u32(json::member(v, "code_dim", what), "code_dim", what);
    r.num_bits = json::as_u32(json::member(v, "num_bits", what), "num_bits", what);
    if (const auto* pk = v.find("packed")) lance_layout = json::as_bool(*pk, "packed", what);
    if (const auto* q = v.find("query_estimator")) r.query_estimator = json::as_string(*q, "query_estimator", what);
    const std::string rot = v.find("rotation_type") ? json::as_string(*v.find("rotation_type"), "rotation_type", what)
                                                    : std::string("matrix");
    if (rot == "fast") {
      r.rotation_type = rq_params::rotation::fast;
      r.fast_rotation_signs = json::as_bytes(json::member(v, "fast_rotation_signs", what), "fast_rotation_signs", what);
    } else {
      r.rotation_type = rq_params::rotation::matrix;
      const auto pos = json::as_u64(json::member(v, "rotate_mat_position", what), "rotate_mat_position", what);
      if (pos == 0 || pos >= file.num_global_buffers())
        throw corrupt_error(what + ": rotate_mat_position " + std::to_string(pos) + " is not a global buffer");
      r.rotate_mat = from_tensor(pb::decode<pb::index::tensor>(file.global_buffer(std::size_t(pos)).view()),
                                 file_what + " rotation matrix");
    }
    if (r.num_bits > 1) {
      const auto* ex = file.schema().field_by_name(detail::blocked_ex_codes_column);
      if (!ex) throw corrupt_error(file_what + ": " + std::to_string(r.num_bits) + "-bit RaBitQ codes without " +
                                   std::string(detail::blocked_ex_codes_column));
      r.ex_code_bytes = std::uint32_t(schema::to_arrow(*ex).type->list_size);
    }
    return {std::move(r), lance_layout};
  }
  static void check_build(const build_options& o, std::size_t dim) {
    const auto bits = o.num_bits.value_or(1);
    if (bits != 1) throw invalid_input_error("IVF_RQ: lancet builds 1-bit codes, not " + std::to_string(bits));
    if (dim % 8) throw invalid_input_error("IVF_RQ: dimension " + std::to_string(dim) + " is not a multiple of 8");
  }
  // A random rotation: nothing to train.
  static std::size_t training_rows(const build_options&, std::size_t, std::size_t) { return 0; }
  static void record_hints(const build_options&, build_hints&) {}
  static std::vector<std::pair<std::string, std::uint64_t>> runtime_hints(const build_hints&) {
    return {};
  }
  static std::vector<std::uint32_t> row_order(const rq_params&, simd::distance_type, bytes_view, std::size_t) {
    return {};
  }
  static void rebuild_options(const rq_params&, build_options&) {}
  template <class T>
  using codec = rabitq::codec<T>;
  using scanner = rabitq::scanner;
};

}  // namespace lancet::index
