// The one interface per quantizer (quantizer_traits), and with it how each quantizer
// is stored in an IVF index's auxiliary.idx, as Lance 12 does it: its index type and
// Lance's name for it, the checks that its parameters are storable, its Arrow
// columns, its code layout, its rows decoded to f32, its fields in a lancet model
// file, and its `storage_metadata` JSON, written and read back (the PQ codebook and
// the RaBitQ rotation matrix live in global buffers that the JSON names). The file
// itself is written by storage_writer.hpp and read by storage_reader.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/pq_train.hpp"
#include "lancet/index/quantizer/sq.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/json/access.hpp"
#include "lancet/json/write.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index {

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

// ---- one interface per quantizer ------------------------------------------------
// quantizer_traits<P> says everything about how quantizer P is stored, so that the
// places handling any quantizer visit quantizer_params once and ask its traits:
//   type             its ivf_index_type (index_type.hpp)
//   name             Lance's index type without "IVF_" / "IVF_HNSW_" ("PQ", ...)
//   index_version    Lance's IndexMetadata index_version for it
//   has_factors      whether rows carry RaBitQ's add / scale / error factors
//   validate         the checks that the parameters are storable
//   metadata_json    its `storage_metadata` JSON (`buffer`: its global buffer)
//   add_columns      auxiliary.idx's code (and factor) columns after _rowid
//   global_buffer    the tensor stored in a global buffer (PQ codebook, RaBitQ
//                    rotation matrix), if any
//   compression      its case of VectorIndexDetails' compression (the manifest's),
//                    of type compression_type
//   store_codes      row-major codes [n][w] -> the stored layout (code_layout.hpp)
//   load_codes       the stored layout -> row-major; `lance_layout` false for files
//                    of older Lance versions, which store the codes row-major
//   decode_rows      n stored rows (row-major codes) -> n x dim f32 (HNSW graphs
//                    link these: flat as stored, SQ dequantized, PQ the codebook
//                    entries; RaBitQ has no HNSW sub-index and throws)
//   put_model        its fields in a lancet model file (model_file.hpp), after the
//   get_model        quantizer's index in quantizer_params; read back
template <class P>
struct quantizer_traits;

template <class Q>
using traits_of = quantizer_traits<std::remove_cvref_t<Q>>;

namespace detail {
// What flat and SQ storage share: version-1 indexes, no factors, no global buffer,
// row-major codes stored as they are.
struct plain_storage {
  static constexpr std::int32_t index_version = 1;
  static constexpr bool has_factors = false;
  template <class P>
  static std::optional<pb::index::tensor> global_buffer(const P&) {
    return std::nullopt;
  }
  static void store_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
    std::memcpy(out, in, n * w);
  }
  static void load_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out, bool) {
    std::memcpy(out, in, n * w);
  }
};
}  // namespace detail

// IVF_FLAT: the vectors themselves in column `flat`.
template <>
struct quantizer_traits<flat_params> : detail::plain_storage {
  static constexpr ivf_index_type type = ivf_index_type::ivf_flat;
  static constexpr std::string_view name = "FLAT";
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
};

// IVF_PQ: codes transposed ([code byte][row]); the codebook in a global buffer.
template <>
struct quantizer_traits<pq_params> {
  static constexpr ivf_index_type type = ivf_index_type::ivf_pq;
  static constexpr std::string_view name = "PQ";
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
};

// IVF_SQ: one byte per dimension, row-major.
template <>
struct quantizer_traits<sq_params> : detail::plain_storage {
  static constexpr ivf_index_type type = ivf_index_type::ivf_sq;
  static constexpr std::string_view name = "SQ";
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
};

// IVF_RQ (RaBitQ): codes packed in blocks of 32 rows, per-row factors; a matrix
// rotation in a global buffer. Lance 12 gives IVF_RQ indexes index_version 2.
template <>
struct quantizer_traits<rq_params> {
  static constexpr ivf_index_type type = ivf_index_type::ivf_rq;
  static constexpr std::string_view name = "RQ";
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
};

// Calls f.template operator()<P>() for each quantizer P of quantizer_params, in order.
template <class F>
inline void for_each_quantizer(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::variant_alternative_t<I, quantizer_params>>(), ...);
  }(std::make_index_sequence<std::variant_size_v<quantizer_params>>{});
}

// Calls f.template operator()<P>() for quantizer_params' alternative number `kind`
// (its index in the variant); false when there is none.
template <class F>
inline bool visit_quantizer_kind(std::size_t kind, F&& f) {
  bool found = false;
  std::size_t i = 0;
  for_each_quantizer([&]<class P>() {
    if (i++ == kind) {
      found = true;
      f.template operator()<P>();
    }
  });
  return found;
}

// The base index type of quantizer q (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ).
inline ivf_index_type ivf_index_type_of(const quantizer_params& q) {
  return std::visit([](const auto& p) { return traits_of<decltype(p)>::type; }, q);
}

// Lance's index type names: of quantizer q ("IVF_PQ", ...), with an HNSW sub-index
// ("IVF_HNSW_SQ", ...), of a type lancet builds, and of an index in a manifest.
inline std::string index_type_name(const quantizer_params& q, bool hnsw = false) {
  return std::visit([hnsw](const auto& p) { return index_type_name(traits_of<decltype(p)>::name, hnsw); }, q);
}
inline std::string hnsw_index_type_name(const quantizer_params& q) { return index_type_name(q, true); }
inline std::string ivf_index_type_name(ivf_index_type t) {
  const ivf_index_type base = hnsw_base_type(t);
  std::string_view q;
  for_each_quantizer([&]<class P>() {
    if (quantizer_traits<P>::type == base) q = quantizer_traits<P>::name;
  });
  return q.empty() ? "?" : index_type_name(q, is_hnsw(t));
}
// Details that record no compression are IVF_FLAT's.
inline std::string index_type_name(const pb::index::vector_index_details& d) {
  std::string_view q = quantizer_traits<flat_params>::name;
  std::visit(
      [&q](const auto& c) {
        using C = std::remove_cvref_t<decltype(c)>;
        for_each_quantizer([&q]<class P>() {
          if constexpr (std::is_same_v<C, typename quantizer_traits<P>::compression_type>) q = quantizer_traits<P>::name;
        });
      },
      d.compression);
  return index_type_name(q, d.hnsw.has_value());
}

// Quantizer q's n stored rows (row-major codes) as n x dim f32 (quantizer_traits::decode_rows).
inline std::vector<float> decode_rows(const quantizer_params& q, const std::uint8_t* codes, std::size_t n,
                                      std::size_t dim) {
  std::vector<float> out(n * dim);
  std::visit([&](const auto& p) { traits_of<decltype(p)>::decode_rows(p, codes, n, dim, out.data()); }, q);
  return out;
}

// Checks that the parameters describe something Lance can store.
inline void validate(const quantizer_params& q) {
  std::visit([](const auto& p) { traits_of<decltype(p)>::validate(p); }, q);
}

// The quantizer's JSON in storage_metadata. `buffer` is the global buffer holding
// the PQ codebook or the RaBitQ rotation matrix (ignored otherwise).
inline std::string quantizer_metadata_json(const quantizer_params& q, std::uint32_t buffer) {
  return std::visit([buffer](const auto& p) { return traits_of<decltype(p)>::metadata_json(p, buffer); }, q);
}

// auxiliary.idx's columns, as Lance 12 declares them.
inline arrow::schema storage_schema(const quantizer_params& q) {
  arrow::schema s;
  s.fields.push_back(detail::plain_field(detail::row_id_column, arrow::uint64(), true));
  std::visit([&s](const auto& p) { traits_of<decltype(p)>::add_columns(p, s); }, q);
  return s;
}

// Whether rows of quantizer q carry RaBitQ's add / scale / error factors.
inline bool has_factors(const quantizer_params& q) {
  return std::visit([](const auto& p) { return traits_of<decltype(p)>::has_factors; }, q);
}

// The quantizer read back from storage_metadata, and how its codes lie: files from
// older Lance versions store PQ codes untransposed ("transposed": false) and RaBitQ
// codes unpacked ("packed": false), i.e. row-major (quantizer_traits::load_codes).
struct stored_quantizer {
  quantizer_params params;
  bool lance_layout = true;
};

// Reads the quantizer from `text` (the first storage_metadata entry) and the
// columns and global buffers of `file` (auxiliary.idx's file_reader, named
// `file_what` in errors).
template <class FileReader>
stored_quantizer read_quantizer_metadata(const FileReader& file, const std::string& text, const std::string& file_what) {
  const std::string what = file_what + " storage_metadata";
  bool lance_layout = true;
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
    return {std::move(f), lance_layout};
  }
  if (col.name == detail::pq_code_column) {
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
  if (col.name == detail::sq_code_column) {
    sq_params s;
    s.dimension = json::as_u32(json::member(v, "dim", what), "dim", what);
    s.num_bits = json::as_u32(json::member(v, "num_bits", what), "num_bits", what);
    const auto& b = json::member(v, "bounds", what);
    s.lower = json::as_f64(json::member(b, "start", what), "start", what);
    s.upper = json::as_f64(json::member(b, "end", what), "end", what);
    return {std::move(s), lance_layout};
  }
  if (col.name == detail::rabit_code_column) {
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
  throw unsupported_error(file_what + ": unknown quantizer storage column '" + col.name + "'");
}

}  // namespace lancet::index
