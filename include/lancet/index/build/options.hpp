// What an IVF index build takes and gives (ivf_builder.hpp): build_options, the
// progress it reports, a trained model shared by distributed segments
// (ivf_training), build_result, and Lance's defaults for the partition count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/core/thread_pool_fwd.hpp"
#include "lancet/index/index_type.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/index_info.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

// Lance's target partition size per index type (IndexType::target_partition_size).
inline std::size_t default_target_partition_size(ivf_index_type t) noexcept {
  t = hnsw_base_type(t);
  return t == ivf_index_type::ivf_flat ? 4096 : 8192;
}

// Lance's recommended_num_partitions: rows / target, clamped to [1, 4096].
inline std::size_t recommended_num_partitions(std::uint64_t rows, std::size_t target) {
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  return std::size_t(std::clamp<std::uint64_t>(rows / target, 1, 4096));
}

enum class build_stage : std::uint8_t { train_ivf, train_quantizer, shuffle, merge_partitions };

inline std::string_view build_stage_name(build_stage s) noexcept {
  switch (s) {
    case build_stage::train_ivf: return "train_ivf";
    case build_stage::train_quantizer: return "train_quantizer";
    case build_stage::shuffle: return "shuffle";
    case build_stage::merge_partitions: return "merge_partitions";
  }
  return "?";
}

struct build_progress {
  build_stage stage;
  std::uint64_t done = 0;   // iterations (train_ivf), rows (shuffle), partitions (merge)
  std::uint64_t total = 0;
};

struct build_options {
  std::string column;
  ivf_index_type type = ivf_index_type::ivf_pq;
  std::optional<std::size_t> num_partitions;         // else rows / target_partition_size
  std::optional<std::size_t> target_partition_size;  // else Lance's default for the type
  std::optional<std::size_t> num_sub_vectors;        // PQ; default dim / 16 (or / 8, or 1)
  std::optional<std::uint32_t> num_bits;             // PQ 8 (or 4), SQ 8, RQ 1
  simd::distance_type metric = simd::distance_type::l2;
  std::string name;  // default "{column}_idx"
  bool replace = false;
  std::size_t sample_rate = 256;
  std::uint32_t max_iters = 50;
  std::uint64_t seed = 42;
  // PQ: keep an earlier iterate of the codebook's k-means runs where it ranks the
  // training sample's neighbours clearly better than the runs' ends (pq::params::
  // choose_iterate, quantizer/pq/iterate.hpp); false: always the ends, as Lance.
  bool pq_choose_iterate = true;
  // IVF_HNSW_* graphs (Lance's HnswBuildParams; its defaults).
  std::uint32_t m = 20;
  std::uint32_t ef_construction = 150;
  std::uint16_t max_level = 7;
  boost::asio::thread_pool* pool = nullptr;
  std::function<void(const build_progress&)> on_progress;

  // Decoded rows held at once (the IVF k-means sample aside): scan read-ahead,
  // buffered encoded rows (spilled to temporary Lance files beyond a quarter of it),
  // merge reads, HNSW graphs, and PQ training (its rows and sub-vector k-means).
  // A column that fits is trained on whole, as today; a larger one on a sample.
  // PQ trains on Lance's sample (sample_rate x 2^num_bits rows) whenever the budget
  // holds it (512 MiB does for f32 vectors of up to about 1,900 dimensions, f16 of
  // 3,800, on a few cores); when it cannot, on as many rows as fit (at least
  // 2^num_bits): a deviation from Lance (a codebook from fewer rows), reported
  // through lancet::warn (core/warning.hpp).
  std::uint64_t memory_budget_bytes = std::uint64_t(512) << 20;
  std::string spill_directory;  // where runs are spilled; default: the index directory (for a dataset on an object store: the system's temporary directory)

  // A given model (Lance's ivf_centroids / precomputed codebook): no training. The
  // quantizer of PQ / RQ needs the centroids it was trained with.
  std::optional<matrix> ivf_centroids;          // num_partitions x dimension
  std::optional<quantizer_params> quantizer;    // of the index type
  // Row id -> partition (Lance's precomputed_partitions); other rows are assigned.
  std::shared_ptr<const std::unordered_map<std::uint64_t, std::uint32_t>> precomputed_partitions;
  // Already shuffled files (shuffler.hpp's run format, rows sorted by partition):
  // the column is not read. Needs ivf_centroids and quantizer.
  std::vector<std::string> precomputed_shuffle_buffers;

  // Distributed building: index only these fragments (a segment), and commit=false
  // to write the segment's files without committing (distributed/segments.hpp's
  // build_segment sets both; commit_segments commits the segments).
  std::optional<std::vector<std::uint64_t>> fragment_ids;
  bool commit = true;
};

// The IVF centroids and the quantizer shared by the segments of a distributed build
// (distributed/model_file.hpp's trained_model holds one).
struct ivf_training {
  matrix centroids;
  quantizer_params quantizer;
};

struct build_result {
  vector_index_info index;        // as committed
  std::uint64_t version = 0;      // the dataset version that has the index
  std::size_t num_partitions = 0;
  std::uint64_t rows_indexed = 0;
  std::uint64_t rows_skipped = 0;  // null / non-finite / zero (cosine) vectors
  std::string directory;           // _indices/<uuid>
  std::size_t shuffle_runs = 0;    // temporary files spilled under the memory budget
  unsigned retries = 0;            // commits lost to other writers before this one won
  // With build_options::commit = false: index describes the uncommitted index, and
  // version is the dataset version it was built from.
};

}  // namespace lancet::index
