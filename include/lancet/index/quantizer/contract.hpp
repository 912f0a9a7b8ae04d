// What every quantizer provides (quantizer_traits<P>, P its parameters), so that the
// IVF build, optimize, distributed segments, the index files and HNSW are written once
// for all of them. Each quantizer lives in its own folder (flat/, pq/, sq/, rabitq/):
// `params.hpp` (P), `codec.hpp` (training and encoding) and `traits.hpp`
// (quantizer_traits<P>); quantizer/params.hpp lists it in quantizer_params and
// quantizer/traits.hpp includes its traits. The concept ivf_quantizer checks the
// members below; traits.hpp asserts it for every registered quantizer.
//
// How it is stored in an IVF index's auxiliary.idx, as Lance 12 does it:
//   type             its ivf_index_type (index_type.hpp)
//   name             Lance's index type without "IVF_" / "IVF_HNSW_" ("PQ", ...)
//   code_column      auxiliary.idx's column after _rowid that identifies it
//   index_version    Lance's IndexMetadata index_version for it
//   has_factors      whether rows carry RaBitQ's add / scale / error factors
//   validate         the checks that the parameters are storable
//   metadata_json    its `storage_metadata` JSON (`buffer`: its global buffer)
//   read_metadata    P read back from that JSON and auxiliary.idx's columns and
//                    global buffers (stored_quantizer)
//   add_columns      auxiliary.idx's code (and factor) columns after _rowid
//   global_buffer    the tensor stored in a global buffer (PQ codebook, RaBitQ
//                    rotation matrix), if any
//   compression      its case of VectorIndexDetails' compression (the manifest's),
//                    of type compression_type
//   store_codes      row-major codes [n][w] -> the stored layout (code_layout.hpp)
//   load_codes       the stored layout -> row-major; `lance_layout` false for files
//                    of older Lance versions, which store the codes row-major
//   row_order        the order auxiliary.idx stores a partition's n rows in (empty:
//                    as given; PQ: Lance's scan order, pq/row_order.hpp)
//   decode_rows      n stored rows (row-major codes) -> n x dim f32 (HNSW graphs
//                    link these: flat as stored, SQ dequantized, PQ the codebook
//                    entries; RaBitQ has no HNSW sub-index and throws)
//   graph_distance   the distance HNSW graphs measure between two stored rows under
//                    the index's metric (cosine rows quantized after normalising: l2)
//   graph_code_scale when set, the graph distance of two rows is the l2 of their codes
//                    (as bytes) times it: graphs are built on the codes, no decoded copy
//   binary           whether the rows are bit vectors measured by hamming distance
//   supports_hamming whether any of its parameters make binary rows
//   runtime_hints    its build parameters Lance records in the index details
//                    (build_hints), as (key, value) pairs
//   put_model        its fields in a lancet model file (model_file.hpp), after the
//   get_model        quantizer's index in quantizer_params; read back
// How it is searched: scanner, set up from P and scan_setup (its dimension checked):
//     exact                  its distances are exact (no refine needed)
//     supports_graphs        HNSW graphs may link its rows
//     adaptive_probes()      Lance's adaptive probe counts apply (IVF_FLAT over f32)
//     query prepare(scan_query)                          per-query state
//     partition prepare_partition(p, contents)           per-partition state (checked)
//     distances(q, state, p, dist_q_c, contents, part, out)   every row's distance
//     scan_filtered(q, state, p, dist_q_c, contents, part, bound, push) -> bool
//                    the rows that may beat bound() only, pushed as push(row, d);
//                    false when it has no such scan (distances() then)
//     with_row_distance(q, state, p, contents, part, f)   f(distance of row i)
// How it is built (from a build's options, build_options):
//   check_build      the options' checks for it (num_bits, num_sub_vectors, ...)
//   trained          false when its parameters follow from the column alone (flat):
//                    precomputed shuffle buffers then need no given quantizer
//   codes_need_centroids  whether its codes depend on the IVF centroids (residuals,
//                    rotations about them): a given quantizer then needs them too
//   training_rows    rows its training wants (0: it needs none)
//   record_hints     its build options into the build_hints Lance records
//   rebuild_options  the options that build another index of P's shape
//   codec<T>         the trained quantizer, ready to encode rows of element type T
//                    (float, double, f16; uint8 for hamming, flat only):
//     codec::train(options, dim, rows, n, centroids, k)   trained on n rows (row-major;
//                    writable rows may be used as scratch), under the IVF centroids
//     codec::of(params, dim, metric, column)              from stored parameters
//     codec.params()                                      what the index stores
//     codec.encode(rows, wide, n, centroids, k, partitions, codes, factors, pool)
//                    n rows assigned to `partitions` -> codes (row-major, code_bytes
//                    per row) and, for quantizers with factors, factors appended;
//                    `wide`: the same rows as float64 when the column holds them
//                    (else nullptr), for storage that keeps float64
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/json/value.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

template <class P>
struct quantizer_traits;

template <class Q>
using traits_of = quantizer_traits<std::remove_cvref_t<Q>>;

// The quantizer read back from storage_metadata, and how its codes lie: files from
// older Lance versions store PQ codes untransposed ("transposed": false) and RaBitQ
// codes unpacked ("packed": false), i.e. row-major (quantizer_traits::load_codes).
struct stored_quantizer {
  quantizer_params params;
  bool lance_layout = true;
};

// Build parameters Lance records as runtime hints (its defaults here).
struct build_hints {
  std::uint32_t ivf_max_iters = 50;
  std::uint32_t ivf_sample_rate = 256;
  std::uint32_t pq_max_iters = 50;
  std::uint32_t pq_sample_rate = 256;
  std::uint32_t pq_kmeans_redos = 1;
  std::uint32_t sq_sample_rate = 256;
  // Lance's shuffle settings; recorded so that Lance's own optimize reuses them.
  std::uint32_t shuffle_partition_batches = 10240;
  std::uint32_t shuffle_partition_concurrency = 2;
};

// A query as every scanner sees it: widened to double, normalised under cosine, and
// as bytes for hamming.
struct scan_query {
  std::vector<double> raw;          // as given
  std::vector<double> used;         // normalised under cosine, else raw
  std::vector<std::uint8_t> bytes;  // hamming
};

// What a scanner is set up with: the index's metric and its IVF centroids (widened
// to float; empty for hamming indexes).
struct scan_setup {
  simd::distance_type distance = simd::distance_type::l2;
  const float* centroids = nullptr;
  std::size_t num_partitions = 0;
  std::size_t dim = 0;
};

// Per-row factors an encoding appends (RaBitQ's add / scale / error).
struct row_factors {
  std::vector<float>* add = nullptr;
  std::vector<float>* scale = nullptr;
  std::vector<float>* error = nullptr;
};

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

// A stand-in for auxiliary.idx's reader in the concept's check.
struct concept_file_reader {
  const schema::schema& schema() const;
  std::size_t num_global_buffers() const;
  struct buffer {
    bytes_view view() const;
  };
  buffer global_buffer(std::size_t) const;
};

// A stand-in for a model file's writer and reader in the concept's check.
struct concept_model_io {
  template <class V>
  void put(V);
  template <class V>
  V get();
  void mat(const matrix&);
  matrix mat();
  void str(std::string_view);
  std::string str();
  [[noreturn]] void fail(const std::string&);
};

}  // namespace detail

template <class P>
concept ivf_quantizer = requires(const P& p, arrow::schema& s, const std::uint8_t* in, std::uint8_t* out, float* f,
                                 const build_options& o, const detail::concept_file_reader& file,
                                 const json::value& metadata, detail::concept_model_io& io, const float* rows,
                                 const std::uint32_t* parts, row_factors factors, build_options& mutable_options,
                                 build_hints& hints) {
  { quantizer_traits<P>::type } -> std::convertible_to<ivf_index_type>;
  { quantizer_traits<P>::name } -> std::convertible_to<std::string_view>;
  { quantizer_traits<P>::code_column } -> std::convertible_to<std::string_view>;
  { quantizer_traits<P>::index_version } -> std::convertible_to<std::int32_t>;
  { quantizer_traits<P>::has_factors } -> std::convertible_to<bool>;
  quantizer_traits<P>::validate(p);
  { quantizer_traits<P>::metadata_json(p, std::uint32_t(0)) } -> std::same_as<std::string>;
  { quantizer_traits<P>::read_metadata(file, metadata, std::string()) } -> std::same_as<stored_quantizer>;
  quantizer_traits<P>::add_columns(p, s);
  { quantizer_traits<P>::global_buffer(p) } -> std::same_as<std::optional<pb::index::tensor>>;
  { quantizer_traits<P>::compression(p) } -> std::same_as<typename quantizer_traits<P>::compression_type>;
  quantizer_traits<P>::store_codes(in, std::size_t(0), std::size_t(0), out);
  quantizer_traits<P>::load_codes(in, std::size_t(0), std::size_t(0), out, true);
  quantizer_traits<P>::decode_rows(p, in, std::size_t(0), std::size_t(0), f);
  { quantizer_traits<P>::graph_distance(simd::distance_type::l2) } -> std::same_as<simd::distance_type>;
  { quantizer_traits<P>::graph_code_scale(p, simd::distance_type::l2) } -> std::same_as<std::optional<float>>;
  { quantizer_traits<P>::binary(p) } -> std::same_as<bool>;
  { quantizer_traits<P>::supports_hamming } -> std::convertible_to<bool>;
  { quantizer_traits<P>::trained } -> std::convertible_to<bool>;
  { quantizer_traits<P>::codes_need_centroids } -> std::convertible_to<bool>;
  quantizer_traits<P>::record_hints(o, hints);
  quantizer_traits<P>::put_model(io, p);
  { quantizer_traits<P>::runtime_hints(build_hints{}) } -> std::same_as<std::vector<std::pair<std::string, std::uint64_t>>>;
  { quantizer_traits<P>::get_model(io) } -> std::same_as<P>;
  quantizer_traits<P>::check_build(o, std::size_t(0));
  { quantizer_traits<P>::row_order(p, simd::distance_type::l2, bytes_view(), std::size_t(0)) }
      -> std::same_as<std::vector<std::uint32_t>>;
  quantizer_traits<P>::rebuild_options(p, mutable_options);
  { quantizer_traits<P>::training_rows(o, std::size_t(0), std::size_t(0)) } -> std::convertible_to<std::size_t>;
  { quantizer_traits<P>::template codec<float>::of(p, std::size_t(0), simd::distance_type::l2, std::string_view()) };
  { quantizer_traits<P>::template codec<float>::train(o, std::size_t(0), rows, std::size_t(0), rows, std::size_t(0)) };
  requires std::constructible_from<typename quantizer_traits<P>::scanner, const P&, const scan_setup&>;
  { quantizer_traits<P>::scanner::exact } -> std::convertible_to<bool>;
  { quantizer_traits<P>::scanner::supports_graphs } -> std::convertible_to<bool>;
  requires requires(const typename quantizer_traits<P>::scanner& sc, const scan_query& q,
                    const partition_contents& pc) {
    { sc.adaptive_probes() } -> std::convertible_to<bool>;
    { sc.prepare(q) } -> std::same_as<typename quantizer_traits<P>::scanner::query>;
    { sc.prepare_partition(std::uint32_t(0), pc) } -> std::same_as<typename quantizer_traits<P>::scanner::partition>;
    sc.distances(q, sc.prepare(q), std::uint32_t(0), 0.0f, pc, sc.prepare_partition(std::uint32_t(0), pc), f);
  };
  requires requires(const typename quantizer_traits<P>::template codec<float>& c) {
    { c.params() } -> std::convertible_to<const P&>;
    c.encode(rows, static_cast<const double*>(nullptr), std::size_t(0), rows, std::size_t(0), parts, out, factors,
             static_cast<boost::asio::thread_pool*>(nullptr));
  };
};

}  // namespace lancet::index
