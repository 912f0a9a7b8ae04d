// Every registered quantizer's traits (quantizer/contract.hpp says what they hold),
// checked against the contract, and what the rest of the index asks of whichever
// quantizer an index has: for_each_quantizer / visit_quantizer_kind over the
// registered ones; index type names; rows decoded; validation; storage_metadata JSON
// written and read back (read_quantizer_metadata); auxiliary.idx's columns; factors;
// the codec variant (quantizer_codec<T>) a build or optimize encodes with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/quantizer/contract.hpp"
#include "lancet/index/quantizer/flat/traits.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/quantizer/pq/traits.hpp"
#include "lancet/index/quantizer/rabitq/traits.hpp"
#include "lancet/index/quantizer/sq/traits.hpp"
#ifdef LANCET_EXTENSION_QUANTIZER_TRAITS
#include LANCET_EXTENSION_QUANTIZER_TRAITS
#endif
#include "lancet/json/parse.hpp"
#include "lancet/pb/index.hpp"

namespace lancet::index {

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

// Calls f.template operator()<P>() for the quantizer P that index type t stores (an
// IVF_HNSW_* type: its base type's); false when no quantizer has that type.
template <class F>
inline bool visit_quantizer_type(ivf_index_type t, F&& f) {
  const ivf_index_type base = hnsw_base_type(t);
  bool found = false;
  for_each_quantizer([&]<class P>() {
    if (!found && quantizer_traits<P>::type == base) {
      found = true;
      f.template operator()<P>();
    }
  });
  return found;
}

namespace detail {
template <class V>
struct all_quantizers;
template <class... P>
struct all_quantizers<std::variant<P...>> {
  static constexpr bool value = (ivf_quantizer<P> && ...);
};
template <class T, class V>
struct codecs_of;
template <class T, class... P>
struct codecs_of<T, std::variant<P...>> {
  using type = std::variant<typename quantizer_traits<P>::template codec<T>...>;
};
template <class V>
struct scanners_of;
template <class... P>
struct scanners_of<std::variant<P...>> {
  using type = std::variant<typename quantizer_traits<P>::scanner...>;
};
}  // namespace detail
static_assert(detail::all_quantizers<quantizer_params>::value,
              "every quantizer of quantizer_params meets the contract of quantizer/contract.hpp");

// The partition scanner of any quantizer, and the one for stored parameters q.
using quantizer_scanner = typename detail::scanners_of<quantizer_params>::type;
inline quantizer_scanner make_scanner(const quantizer_params& q, const scan_setup& s) {
  return std::visit(
      [&](const auto& p) -> quantizer_scanner { return typename traits_of<decltype(p)>::scanner(p, s); }, q);
}

// Whether quantizer q's distances are exact (IVF_FLAT: a refine has nothing to add).
inline bool exact_distances(const quantizer_params& q) {
  return std::visit([](const auto& p) { return traits_of<decltype(p)>::scanner::exact; }, q);
}

// The order auxiliary.idx stores a partition's rows in (quantizer_traits::row_order;
// empty: as given).
inline std::vector<std::uint32_t> stored_row_order(const quantizer_params& q, simd::distance_type d, bytes_view codes,
                                                   std::size_t n) {
  return std::visit([&](const auto& p) { return traits_of<decltype(p)>::row_order(p, d, codes, n); }, q);
}

// Build options that give another index of quantizer q's shape (rebuild_options).
inline void rebuild_options(const quantizer_params& q, build_options& o) {
  std::visit([&](const auto& p) { traits_of<decltype(p)>::rebuild_options(p, o); }, q);
}

// One trained quantizer of any kind, encoding rows of element type T.
template <class T>
using quantizer_codec = typename detail::codecs_of<T, quantizer_params>::type;

// The codec for stored parameters q (quantizer_traits::codec::of).
template <class T>
inline quantizer_codec<T> make_codec(const quantizer_params& q, std::size_t dim, simd::distance_type metric,
                                     std::string_view column) {
  return std::visit(
      [&](const auto& p) -> quantizer_codec<T> { return traits_of<decltype(p)>::template codec<T>::of(p, dim, metric, column); },
      q);
}

// The parameters a codec stores.
template <class T>
inline quantizer_params codec_params(const quantizer_codec<T>& c) {
  return std::visit([](const auto& x) -> quantizer_params { return x.params(); }, c);
}

// The build options' checks for the quantizer of index type t, and the rows its
// training wants (0: none).
inline void check_quantizer_build(ivf_index_type t, const build_options& o, std::size_t dim) {
  visit_quantizer_type(t, [&]<class P>() { quantizer_traits<P>::check_build(o, dim); });
}
inline std::size_t quantizer_training_rows(ivf_index_type t, const build_options& o, std::size_t dim,
                                           std::size_t element_bytes) {
  std::size_t rows = 0;
  visit_quantizer_type(t, [&]<class P>() { rows = quantizer_traits<P>::training_rows(o, dim, element_bytes); });
  return rows;
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
  std::string_view q;
  visit_quantizer_type(t, [&]<class P>() { q = quantizer_traits<P>::name; });
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

// The distance HNSW graphs measure between two rows of quantizer q under metric d,
// and, when set, the factor that makes it the l2 of two rows' codes
// (quantizer_traits::graph_distance, graph_code_scale).
inline simd::distance_type graph_distance(const quantizer_params& q, simd::distance_type d) {
  return std::visit([d](const auto& p) { return traits_of<decltype(p)>::graph_distance(d); }, q);
}
inline std::optional<float> graph_code_scale(const quantizer_params& q, simd::distance_type graph_d) {
  return std::visit([graph_d](const auto& p) { return traits_of<decltype(p)>::graph_code_scale(p, graph_d); }, q);
}

// Whether quantizer q's rows are bit vectors (hamming distance), and whether any
// quantizer of index type t has such rows.
inline bool binary_rows(const quantizer_params& q) {
  return std::visit([](const auto& p) { return traits_of<decltype(p)>::binary(p); }, q);
}
inline bool supports_hamming(ivf_index_type t) {
  bool yes = false;
  visit_quantizer_type(t, [&]<class P>() { yes = quantizer_traits<P>::supports_hamming; });
  return yes;
}

// Whether the quantizer of index type t is trained (not given by the column alone),
// and whether its codes depend on the IVF centroids.
inline bool quantizer_is_trained(ivf_index_type t) {
  bool yes = false;
  visit_quantizer_type(t, [&]<class P>() { yes = quantizer_traits<P>::trained; });
  return yes;
}
inline bool codes_need_centroids(ivf_index_type t) {
  bool yes = false;
  visit_quantizer_type(t, [&]<class P>() { yes = quantizer_traits<P>::codes_need_centroids; });
  return yes;
}

// Build options of an index of type t into the hints Lance records.
inline void record_build_hints(ivf_index_type t, const build_options& o, build_hints& h) {
  visit_quantizer_type(t, [&]<class P>() { quantizer_traits<P>::record_hints(o, h); });
}

// An index type from Lance's name ("IVF_PQ", "ivf_hnsw_sq", ...): "IVF_" or, for a
// quantizer whose rows graphs may link, "IVF_HNSW_", then a registered quantizer's name.
inline ivf_index_type parse_ivf_index_type(std::string_view s) {
  const std::string want = ascii_lower(s);
  std::optional<ivf_index_type> found;
  std::string names;
  for_each_quantizer([&]<class P>() {
    using traits = quantizer_traits<P>;
    const auto consider = [&](bool hnsw, ivf_index_type t) {
      const std::string name = ascii_lower(index_type_name(traits::name, hnsw));
      if (name == want) found = t;
      names += (names.empty() ? "" : ", ") + name;
    };
    consider(false, traits::type);
    if (traits::scanner::supports_graphs) consider(true, with_hnsw(traits::type));
  });
  if (!found) throw invalid_input_error("unknown index type '" + std::string(s) + "' (expected one of " + names + ")");
  return *found;
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

template <class FileReader>
stored_quantizer read_quantizer_metadata(const FileReader& file, const std::string& text, const std::string& file_what) {
  const std::string what = file_what + " storage_metadata";
  const auto v = json::parse(text, what);
  const auto code_field = [&](std::size_t i) -> const schema::field& {
    if (file.schema().fields.size() <= i) throw corrupt_error(file_what + ": too few columns for its quantizer");
    return file.schema().fields[i];
  };
  const auto& col = code_field(1);
  std::optional<stored_quantizer> out;
  for_each_quantizer([&]<class P>() {
    if (!out && col.name == quantizer_traits<P>::code_column) out = quantizer_traits<P>::read_metadata(file, v, file_what);
  });
  if (out) return std::move(*out);
  throw unsupported_error(file_what + ": unknown quantizer storage column '" + col.name + "'");
}

}  // namespace lancet::index
