// How each quantizer is stored in an IVF index's auxiliary.idx, as Lance 12 does it:
// its Lance index type name, the checks that its parameters are storable, its
// Arrow columns, and its `storage_metadata` JSON, written and read back (the PQ
// codebook and the RaBitQ rotation matrix live in global buffers that the JSON
// names). The file itself is written by storage_writer.hpp and read by
// storage_reader.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/ivf_model.hpp"
#include "lancet/index/quantizer_storage.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::index {

// Lance's index type names.
inline std::string index_type_name(const quantizer_params& q) {
  if (std::holds_alternative<flat_params>(q)) return "IVF_FLAT";
  if (std::holds_alternative<pq_params>(q)) return "IVF_PQ";
  if (std::holds_alternative<sq_params>(q)) return "IVF_SQ";
  return "IVF_RQ";
}

// The same with an HNSW sub-index ("IVF_HNSW_SQ", ...).
inline std::string hnsw_index_type_name(const quantizer_params& q) {
  return "IVF_HNSW_" + index_type_name(q).substr(4);
}

// Checks that the parameters describe something Lance can store.
inline void validate(const quantizer_params& q) {
  if (const auto* f = std::get_if<flat_params>(&q)) {
    if (f->dimension == 0) throw invalid_input_error("IVF_FLAT: the dimension must be positive");
  } else if (const auto* p = std::get_if<pq_params>(&q)) {
    if (p->num_bits != 8 && p->num_bits != 4)
      throw invalid_input_error("IVF_PQ: num_bits must be 8 or 4, got " + std::to_string(p->num_bits));
    if (p->num_sub_vectors == 0 || p->dimension == 0 || p->dimension % p->num_sub_vectors)
      throw invalid_input_error("IVF_PQ: dimension " + std::to_string(p->dimension) +
                                " is not divisible by num_sub_vectors " + std::to_string(p->num_sub_vectors));
    if (p->num_bits == 4 && p->num_sub_vectors % 2)
      throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " +
                                std::to_string(p->num_sub_vectors));
    const std::size_t rows = std::size_t(p->num_sub_vectors) << p->num_bits;
    const std::size_t cols = p->dimension / p->num_sub_vectors;
    if (p->codebook.rows != rows || p->codebook.cols != cols)
      throw invalid_input_error("IVF_PQ: the codebook must be " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " ([num_sub_vectors][2^num_bits][dimension / num_sub_vectors]), got " +
                                std::to_string(p->codebook.rows) + " x " + std::to_string(p->codebook.cols));
    if (p->codebook.type == element_type::u8) throw invalid_input_error("IVF_PQ: the codebook must hold floats");
  } else if (const auto* s = std::get_if<sq_params>(&q)) {
    if (s->dimension == 0) throw invalid_input_error("IVF_SQ: the dimension must be positive");
    if (s->num_bits != 8) throw invalid_input_error("IVF_SQ: num_bits must be 8, got " + std::to_string(s->num_bits));
    if (!(s->lower <= s->upper))
      throw invalid_input_error("IVF_SQ: the bounds [" + std::to_string(s->lower) + ", " + std::to_string(s->upper) +
                                "] are empty or not numbers");
  } else {
    const auto& r = std::get<rq_params>(q);
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
}

// The quantizer's JSON in storage_metadata. `buffer` is the global buffer holding
// the PQ codebook or the RaBitQ rotation matrix (ignored otherwise).
inline std::string quantizer_metadata_json(const quantizer_params& q, std::uint32_t buffer) {
  using json::quote;
  if (const auto* f = std::get_if<flat_params>(&q)) return "{\"dim\":" + std::to_string(f->dimension) + "}";
  if (const auto* p = std::get_if<pq_params>(&q))
    return "{\"codebook_position\":" + std::to_string(buffer) + ",\"nbits\":" + std::to_string(p->num_bits) +
           ",\"num_sub_vectors\":" + std::to_string(p->num_sub_vectors) + ",\"dimension\":" +
           std::to_string(p->dimension) + ",\"codebook_tensor\":[],\"transposed\":true}";
  if (const auto* s = std::get_if<sq_params>(&q))
    return "{\"dim\":" + std::to_string(s->dimension) + ",\"num_bits\":" + std::to_string(s->num_bits) +
           ",\"bounds\":{\"start\":" + json::serde_number(s->lower) + ",\"end\":" + json::serde_number(s->upper) + "}}";
  const auto& r = std::get<rq_params>(q);
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

namespace detail {

inline arrow::type_ptr element_arrow_type(element_type t) {
  switch (t) {
    case element_type::f16: return arrow::float16();
    case element_type::f32: return arrow::float32();
    case element_type::f64: return arrow::float64();
    case element_type::u8: return arrow::uint8();
  }
  return arrow::float32();
}

inline arrow::field fsl_field(std::string_view name, arrow::type_ptr item, std::size_t width, bool nullable) {
  return arrow::field{std::string(name), arrow::fixed_size_list(std::move(item), std::int32_t(width)), nullable, {}};
}

inline arrow::field plain_field(std::string_view name, arrow::type_ptr t, bool nullable) {
  return arrow::field{std::string(name), std::move(t), nullable, {}};
}

}  // namespace detail

// auxiliary.idx's columns, as Lance 12 declares them.
inline arrow::schema storage_schema(const quantizer_params& q) {
  arrow::schema s;
  s.fields.push_back(detail::plain_field(detail::row_id_column, arrow::uint64(), true));
  if (const auto* f = std::get_if<flat_params>(&q)) {
    // Float vectors are declared non-nullable, binary (hamming) ones nullable, as Lance 12 does.
    s.fields.push_back(detail::fsl_field(detail::flat_column, detail::element_arrow_type(f->element), f->dimension,
                                         f->element == element_type::u8));
  } else if (const auto* p = std::get_if<pq_params>(&q)) {
    s.fields.push_back(detail::fsl_field(detail::pq_code_column, arrow::uint8(), p->code_bytes(), true));
  } else if (const auto* sq = std::get_if<sq_params>(&q)) {
    s.fields.push_back(detail::fsl_field(detail::sq_code_column, arrow::uint8(), sq->dimension, true));
  } else {
    const auto& r = std::get<rq_params>(q);
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
  return s;
}

// The quantizer read back from storage_metadata, and how its codes lie: files from
// older Lance versions store PQ codes untransposed ("transposed": false) and RaBitQ
// codes unpacked ("packed": false).
struct stored_quantizer {
  quantizer_params params;
  bool pq_transposed = true;
  bool rq_packed = true;
};

// Reads the quantizer from `text` (the first storage_metadata entry) and the
// columns and global buffers of `file` (auxiliary.idx's file_reader, named
// `file_what` in errors).
template <class FileReader>
stored_quantizer read_quantizer_metadata(const FileReader& file, const std::string& text, const std::string& file_what) {
  const std::string what = file_what + " storage_metadata";
  bool pq_transposed = true, rq_packed = true;
  const auto v = json::parse(text, what);
  const auto code_field = [&](std::size_t i) -> const schema::field& {
    if (file.schema().fields.size() <= i) throw corrupt_error(file_what + ": too few columns for its quantizer");
    return file.schema().fields[i];
  };
  const auto& col = code_field(1);
  if (col.name == detail::flat_column) {
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
    return {std::move(f), pq_transposed, rq_packed};
  }
  if (col.name == detail::pq_code_column) {
    pq_params p;
    p.num_bits = json::as_u32(json::member(v, "nbits", what), "nbits", what);
    p.num_sub_vectors = json::as_u32(json::member(v, "num_sub_vectors", what), "num_sub_vectors", what);
    p.dimension = json::as_u32(json::member(v, "dimension", what), "dimension", what);
    if (const auto* t = v.find("transposed")) pq_transposed = json::as_bool(*t, "transposed", what);
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
    return {std::move(p), pq_transposed, rq_packed};
  }
  if (col.name == detail::sq_code_column) {
    sq_params s;
    s.dimension = json::as_u32(json::member(v, "dim", what), "dim", what);
    s.num_bits = json::as_u32(json::member(v, "num_bits", what), "num_bits", what);
    const auto& b = json::member(v, "bounds", what);
    s.lower = json::as_f64(json::member(b, "start", what), "start", what);
    s.upper = json::as_f64(json::member(b, "end", what), "end", what);
    return {std::move(s), pq_transposed, rq_packed};
  }
  if (col.name == detail::rabit_code_column) {
    rq_params r;
    r.code_dim = json::as_u32(json::member(v, "code_dim", what), "code_dim", what);
    r.num_bits = json::as_u32(json::member(v, "num_bits", what), "num_bits", what);
    if (const auto* pk = v.find("packed")) rq_packed = json::as_bool(*pk, "packed", what);
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
    return {std::move(r), pq_transposed, rq_packed};
  }
  throw unsupported_error(file_what + ": unknown quantizer storage column '" + col.name + "'");
}

}  // namespace lancet::index
