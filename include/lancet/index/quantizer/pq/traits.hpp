// IVF_PQ's quantizer_traits (quantizer/contract.hpp): codes transposed, the codebook in a global buffer.
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
#include "lancet/index/quantizer/pq/codec.hpp"
#include "lancet/index/quantizer/pq/row_order.hpp"
#include "lancet/index/quantizer/pq/scanner.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"

namespace lancet::index {

// IVF_PQ: codes transposed ([code byte][row]); the codebook in a global buffer.
template <>
struct quantizer_traits<pq_params> {
  static constexpr ivf_index_type type = ivf_index_type::ivf_pq;
  static constexpr std::string_view name = "PQ";
  static constexpr bool trained = true;
  static constexpr bool codes_need_centroids = true;  // residuals for l2 / cosine
  using compression_type = pb::index::vector_index_details::pq_compression;
  static constexpr std::int32_t index_version = 1;
  static constexpr bool has_factors = false;
  static void validate(const pq_params& p) {
    if (p.num_bits != 8 && p.num_bits != 4)
      throw invalid_input_error("IVF_PQ: num_bits must be 8 or 4, got " + std::to_string(p.num_bits));
    if (p.num_sub_vectors == 0 || p.dimension == 0 || p.dimension % p.num_sub_vectors)
      throw invalid_input_error("IVF_PQ: dimension " + std::to_string(p.dimension) +
                                " is not divisible by num_sub_vectors " + std::to_string(p.num_sub_vectors));
    if (p.num_bits == 4 && p.num_sub_vectors % 2)
      throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " +
                                std::to_string(p.num_sub_vectors));
    const std::size_t rows = std::size_t(p.num_sub_vectors) << p.num_bits;
    const std::size_t cols = p.dimension / p.num_sub_vectors;
    if (p.codebook.rows != rows || p.codebook.cols != cols)
      throw invalid_input_error("IVF_PQ: the codebook must be " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " ([num_sub_vectors][2^num_bits][dimension / num_sub_vectors]), got " +
                                std::to_string(p.codebook.rows) + " x " + std::to_string(p.codebook.cols));
    if (p.codebook.type == element_type::u8) throw invalid_input_error("IVF_PQ: the codebook must hold floats");
  }
  static std::string metadata_json(const pq_params& p, std::uint32_t buffer) {
    return "{\"codebook_position\":" + std::to_string(buffer) + ",\"nbits\":" + std::to_string(p.num_bits) +
           ",\"num_sub_vectors\":" + std::to_string(p.num_sub_vectors) + ",\"dimension\":" +
           std::to_string(p.dimension) + ",\"codebook_tensor\":[],\"transposed\":true}";
  }
  static void add_columns(const pq_params& p, arrow::schema& s) {
    s.fields.push_back(detail::fsl_field(detail::pq_code_column, arrow::uint8(), p.code_bytes(), true));
  }
  // Lance's tensor of the codebook has shape [2^bits, dimension].
  static std::optional<pb::index::tensor> global_buffer(const pq_params& p) {
    pb::index::tensor t = to_tensor(p.codebook);
    t.shape = {std::uint32_t(1) << p.num_bits, p.dimension};
    return t;
  }
  static compression_type compression(const pq_params& p) { return {p.num_bits, p.num_sub_vectors}; }
  static void store_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
    transpose_codes(in, n, w, out);
  }
  static void load_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out, bool lance_layout) {
    if (lance_layout) untranspose_codes(in, n, w, out);
    else std::memcpy(out, in, n * w);
  }
  static void decode_rows(const pq_params& p, const std::uint8_t* codes, std::size_t n, std::size_t dim, float* out) {
    const auto m = pq::from_params<float>(p, simd::distance_type::l2);
    const std::size_t w = m.code_bytes();
    for (std::size_t i = 0; i < n; ++i) pq::decode(m, codes + i * w, out + i * dim);
  }
  // Cosine rows were normalised before quantizing: l2 ranks them alike.
  static simd::distance_type graph_distance(simd::distance_type d) {
    return d == simd::distance_type::cosine ? simd::distance_type::l2 : d;
  }
  static std::optional<float> graph_code_scale(const pq_params&, simd::distance_type) { return std::nullopt; }
  static bool binary(const pq_params&) { return false; }
  static constexpr bool supports_hamming = false;
  template <class Out>
  static void put_model(Out& o, const pq_params& p) {
    o.template put<std::uint32_t>(p.num_sub_vectors);
    o.template put<std::uint32_t>(p.num_bits);
    o.template put<std::uint32_t>(p.dimension);
    o.mat(p.codebook);
  }
  template <class In>
  static pq_params get_model(In& i) {
    pq_params p;
    p.num_sub_vectors = i.template get<std::uint32_t>();
    p.num_bits = i.template get<std::uint32_t>();
    p.dimension = i.template get<std::uint32_t>();
    p.codebook = i.mat();
    return p;
  }
  static constexpr std::string_view code_column = detail::pq_code_column;
  template <class FileReader>
  static stored_quantizer read_metadata(const FileReader& file, const json::value& v, const std::string& file_what) {
    const std::string what = file_what + " storage_metadata";
    [[maybe_unused]] bool lance_layout = true;
    pq_params p;
    p.num_bits = json::as_u32(json::member(v, "nbits", what), "nbits", what);
    p.num_sub_vectors = json::as_u32(json::member(v, "num_sub_vectors", what), "num_sub_vectors", what);
    p.dimension = json::as_u32(json::member(v, "dimension", what), "dimension", what);
    if (const auto* t = v.find("transposed")) lance_layout = json::as_bool(*t, "transposed", what);
    pb::index::tensor tensor;
    const auto inline_bytes = v.find("codebook_tensor") ? json::as_bytes(*v.find("codebook_tensor"), "codebook_tensor", what)
                                                       : std::vector<std::uint8_t>{};
    if (!inline_bytes.empty()) {
      tensor = pb::decode<pb::index::tensor>(bytes_view(inline_bytes.data(), inline_bytes.size()));
    } else {
      const auto pos = json::as_u64(json::member(v, "codebook_position", what), "codebook_position", what);
      if (pos == 0 || pos >= file.num_global_buffers())
        throw corrupt_error(what + ": codebook_position " + std::to_string(pos) + " is not a global buffer (the file has " +
                            std::to_string(file.num_global_buffers()) + ")");
      tensor = pb::decode<pb::index::tensor>(file.global_buffer(std::size_t(pos)).view());
    }
    if (p.num_sub_vectors == 0 || p.dimension % p.num_sub_vectors || (p.num_bits != 4 && p.num_bits != 8))
      throw corrupt_error(what + ": nbits " + std::to_string(p.num_bits) + ", num_sub_vectors " +
                          std::to_string(p.num_sub_vectors) + ", dimension " + std::to_string(p.dimension) +
                          " do not describe a product quantizer");
    // Lance's codebook tensor is [2^bits, dimension]; its values are
    // [m][2^bits][dimension / m].
    matrix cb = from_tensor(tensor, file_what + " PQ codebook");
    if (cb.size() != (std::size_t(1) << p.num_bits) * p.dimension)
      throw corrupt_error(what + ": the codebook holds " + std::to_string(cb.size()) + " values, expected " +
                          std::to_string((std::size_t(1) << p.num_bits) * p.dimension));
    cb.rows = std::size_t(p.num_sub_vectors) << p.num_bits;
    cb.cols = p.dimension / p.num_sub_vectors;
    p.codebook = std::move(cb);
    return {std::move(p), lance_layout};
  }
  static void check_build(const build_options& o, std::size_t dim) { pq::build_choice(o, dim); }
  static std::size_t training_rows(const build_options& o, std::size_t dim, std::size_t element_bytes) {
    return pq::training_rows(o, dim, element_bytes);
  }
  static void record_hints(const build_options& o, build_hints& h) {
    h.pq_sample_rate = o.sample_rate;
    h.pq_max_iters = o.max_iters;
  }
  static std::vector<std::pair<std::string, std::uint64_t>> runtime_hints(const build_hints& h) {
    return {{"lance.pq.kmeans_redos", h.pq_kmeans_redos},
            {"lance.pq.max_iters", h.pq_max_iters},
            {"lance.pq.sample_rate", h.pq_sample_rate}};
  }
  static std::vector<std::uint32_t> row_order(const pq_params& p, simd::distance_type d, bytes_view codes,
                                              std::size_t n) {
    return pq::scan_order(p, d, codes, n);
  }
  static void rebuild_options(const pq_params& p, build_options& o) {
    o.num_sub_vectors = p.num_sub_vectors;
    o.num_bits = p.num_bits;
  }
  template <class T>
  using codec = pq::codec<T>;
  using scanner = pq::scanner;
};

}  // namespace lancet::index
