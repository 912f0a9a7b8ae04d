// The IVF index types lancet builds (ivf_index_type), and how Lance names them:
// "IVF_" or "IVF_HNSW_", then the quantizer's name ("FLAT", "PQ", "SQ", "RQ").
// index_type_name below is the one place that composes a name; the quantizer's part
// comes from its quantizer_traits (quantizer/traits.hpp: ivf_index_type_name,
// index_type_name of a quantizer or of a manifest's VectorIndexDetails, and
// parse_ivf_index_type).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>


namespace lancet::index {

// The IVF_HNSW_* types are an HNSW graph per partition over flat / SQ / PQ storage;
// the builder trains and stores them as their base type (hnsw_base_type). A quantizer
// registered by a program (docs/quantizers.md) takes a value of its own from 64 up.
enum class ivf_index_type : std::uint8_t { ivf_flat, ivf_pq, ivf_sq, ivf_rq, ivf_hnsw_flat, ivf_hnsw_sq, ivf_hnsw_pq };

inline bool is_hnsw(ivf_index_type t) noexcept {
  switch (t) {
    case ivf_index_type::ivf_hnsw_flat:
    case ivf_index_type::ivf_hnsw_sq:
    case ivf_index_type::ivf_hnsw_pq: return true;
    default: return false;
  }
}
inline ivf_index_type hnsw_base_type(ivf_index_type t) noexcept {
  switch (t) {
    case ivf_index_type::ivf_hnsw_flat: return ivf_index_type::ivf_flat;
    case ivf_index_type::ivf_hnsw_sq: return ivf_index_type::ivf_sq;
    case ivf_index_type::ivf_hnsw_pq: return ivf_index_type::ivf_pq;
    default: return t;
  }
}

// The IVF_HNSW_* type over a base type's storage (IVF_RQ has none: it stays IVF_RQ).
inline ivf_index_type with_hnsw(ivf_index_type base) noexcept {
  switch (base) {
    case ivf_index_type::ivf_flat: return ivf_index_type::ivf_hnsw_flat;
    case ivf_index_type::ivf_sq: return ivf_index_type::ivf_hnsw_sq;
    case ivf_index_type::ivf_pq: return ivf_index_type::ivf_hnsw_pq;
    default: return base;
  }
}

// Lance's index type name from the quantizer's name ("PQ") and whether partitions
// carry HNSW graphs: "IVF_PQ" or "IVF_HNSW_PQ".
inline std::string index_type_name(std::string_view quantizer, bool hnsw) {
  return (hnsw ? "IVF_HNSW_" : "IVF_") + std::string(quantizer);
}


}  // namespace lancet::index
