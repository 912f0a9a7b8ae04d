// The trained model of a distributed IVF build as bytes: what a coordinator trains
// once (train_model) and hands to every worker (a file, or an MPI broadcast), so that
// all segments share one set of IVF centroids and one quantizer, as Lance requires.
//
//   auto m = index::train_model(root, o);                 // k-means + PQ / SQ / RQ
//   index::write_model_file("model.lancet", m);           // or serialize_model(m)
//   auto back = index::read_model_file("model.lancet");   // checked, versioned
//
// Layout (little-endian): "LNCTIVFM", u32 format version (1), u64 payload bytes,
// the payload, u64 FNV-1a of the payload. A truncated, extended or altered file, or
// one of another format, is corrupt_error naming it.
// The fingerprint (16 hex digits) hashes what decides the codes (metric, centroids,
// quantizer): segments built with one model carry the same one, whatever wrote them.
// Declarations here; definitions in model_file_impl.hpp (included here in header-only
// programs; compiled into the library in compiled mode, core/config.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::dataset {
class dataset;  // dataset/dataset.hpp
}  // namespace lancet::dataset

namespace lancet::index {

// A model of a distributed build: the column and index type it is for, its metric,
// the centroids and the quantizer.
struct trained_model {
  std::string column;
  ivf_index_type type = ivf_index_type::ivf_pq;
  simd::distance_type metric = simd::distance_type::l2;
  ivf_training ivf;
};

// What decides a segment's codes: metric, centroids, quantizer (16 hex digits).
LANCET_INLINE std::string model_fingerprint(simd::distance_type metric, const matrix& centroids, const quantizer_params& q);

LANCET_INLINE std::string model_fingerprint(const trained_model& m);

LANCET_INLINE std::string serialize_model(const trained_model& m);

// `what` names the bytes in errors (a file name, "the model broadcast by rank 0").
LANCET_INLINE trained_model parse_model(std::string_view bytes, const std::string& what = "model");

LANCET_INLINE void write_model_file(const std::string& path, const trained_model& m);

LANCET_INLINE trained_model read_model_file(const std::string& path);

// Distributed builds cover IVF_FLAT / PQ / SQ / RQ: segments of IVF_HNSW_* indexes
// would need their graphs merged too, which lancet does not do.
LANCET_INLINE void refuse_distributed_hnsw(ivf_index_type t);

// Trains the model of a distributed build (o.column, o.type, o.metric and the
// training options; over o.fragment_ids when given) without writing anything.
LANCET_INLINE trained_model train_model(const std::string& root, const build_options& o);

// ---------------------------------------------------------------------------------
// Training on a sample gathered from workers (each samples its own fragments)
// ---------------------------------------------------------------------------------

// The partitions a build over `total_rows` live rows gets (o.num_partitions, else
// rows / target partition size).
LANCET_INLINE std::size_t partitions_for(const build_options& o, std::uint64_t total_rows);

// How many rows a sampled training reads for a build over `total_rows` rows of
// dimension `dim` (the builder's rule: max(sample_rate x partitions, the quantizer's)).
LANCET_INLINE std::size_t training_sample_rows(const build_options& o, std::size_t dim, std::uint64_t total_rows);

// The dimension of o.column, a fixed-size list of float32 (what distributed training
// gathers; other element types are refused here).
LANCET_INLINE std::size_t float_vector_dimension(const dataset::dataset& ds, const std::string& column);

// A random sample of about `count` usable vectors (row-major float32) of o.column
// over `fragment_ids` of version `version`: a worker's share of the training rows.
LANCET_INLINE std::vector<float> sample_vectors(const std::string& root, std::uint64_t version, const build_options& o,
                                                std::vector<std::uint64_t> fragment_ids, std::size_t count, std::uint64_t seed);

// Trains a model (o.column, o.type, o.metric, the training options) on sampled
// float32 rows of dimension `dim`, for a build over `total_rows` rows.
LANCET_INLINE trained_model train_model_from_rows(const build_options& o, std::size_t dim, std::span<const float> rows,
                                                  std::uint64_t total_rows);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/distributed/model_file_impl.hpp"
#endif
