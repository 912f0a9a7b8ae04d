// Builds an IVF vector index over a dataset column the way Lance 12 does, stage by
// stage, and registers it in a new manifest version:
//
//   index::build_options o;  o.column = "vector";  o.type = index::ivf_index_type::ivf_pq;
//   auto r = index::build_ivf_index("/data/ds", o);   // r.index: the IndexMetadata committed
//
// Stages (reported through build_options::on_progress), each a reusable function of
// detail (index optimisation calls them too):
//   train_ivf        k-means (cosine: normalised, trained as l2; hamming: k-modes) on
//                    the whole column when its decoded rows fit memory_budget_bytes
//                    (as before: same centroids, same codes), else on a random sample
//                    of max(sample_rate x num_partitions, the quantizer's sample) rows
//                    read in one streaming pass; skipped with given ivf_centroids;
//   train_quantizer  PQ (residuals for l2/cosine, as Lance, taken in place on the
//                    training rows), SQ bounds, RaBitQ rotation, on the same rows;
//                    skipped with a given quantizer;
//   shuffle          the column streamed in batches: each assigned (SIMD kernels, or
//                    precomputed_partitions) and encoded by ivf_encoder, and handed to
//                    the shuffler (shuffler.hpp), which spills rows grouped by
//                    partition to temporary Lance files beyond a quarter of the budget;
//                    precomputed_shuffle_buffers replace this stage;
//   merge_partitions the spilled runs merged partition by partition, in partition
//                    order (windows read in parallel on the pool), into auxiliary.idx;
//                    then index.idx (IVF_HNSW_*: the partitions' graphs, built in
//                    windows that fit three quarters of the budget, written as done).
// Null vectors, vectors with a non-finite value, and (cosine) zero vectors are not
// indexed. A multivector column (a list of fixed-size-list vectors per row) indexes
// every vector under its row's id, with cosine distance only (Lance's rule).
// Distributed builds (a model trained once, segments built apart and committed as one
// index) are distributed/model_file.hpp and distributed/segments.hpp; they build each
// segment with build_options::fragment_ids and commit = false.
// The dataset is only changed by the final commit: any error before it leaves it as it
// was (a half-written index directory and the spilled runs are removed).
// Its options are in build/options.hpp, its stages in build/stages.hpp. This header
// declares the entry points; ivf_builder_impl.hpp runs the stages (build_typed,
// run_build), commits, and defines the entry points: included here in header-only
// mode, compiled into the library in compiled mode (core/config.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/index/build/options.hpp"

namespace lancet::index {

// How many rows PQ trains on for o (IVF_PQ) over vectors of dimension `dim` whose
// elements take `element_bytes`: Lance's sample when memory_budget_bytes holds its
// training, else what the budget holds (at least the 2^num_bits a codebook needs).
LANCET_INLINE std::size_t pq_training_rows(const build_options& o, std::size_t dim, std::size_t element_bytes);

// Builds the index over the latest version of the dataset at `root` and commits it as
// the next version. Errors: invalid_input_error (bad column / parameters / name taken
// without replace), conflict_error (the dataset changed meanwhile), io/corrupt errors
// of the dataset; in every case the dataset is left unchanged.
LANCET_INLINE build_result build_ivf_index(const std::string& root, const build_options& o);

}  // namespace lancet::index

#if LANCET_HEADER_ONLY
#include "lancet/index/build/ivf_builder_impl.hpp"
#endif
