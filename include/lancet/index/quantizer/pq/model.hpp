// Product quantization's model (quantizer/pq/pq.hpp says how it follows Lance): params,
// the codebook model, decoding codes, and the model to / from the stored pq_params.
// Encoding is in encode.hpp, scanning codes in scan.hpp, training in
// train.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/kmeans/params.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/common.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index::pq {

using simd::distance_type;

struct params {
  std::size_t num_sub_vectors = 16;
  std::uint32_t num_bits = 8;        // 8, or 4 (two codes per byte)
  std::uint32_t max_iters = 50;      // k-means iterations per sub-vector
  std::size_t kmeans_redos = 1;
  std::size_t sample_rate = 256;     // training rows: sample_rate * 2^num_bits
  // At most this many training rows (0: no limit beyond Lance's sample). The IVF
  // builder sets it when its memory budget cannot hold Lance's sample: fewer rows
  // than Lance trains on, a lancet deviation (at least 2^num_bits rows).
  std::size_t max_sample_rows = 0;
  // Initial centroids of each sub-vector's k-means: k distinct random rows (random,
  // Lance's) or k-means++ seeding. Unset: k-means++ for dot-product codebooks with
  // 8-bit codes and sub-vectors of 2 values, or of 4 values when there are at most 8
  // sub-vectors (raw vectors, whose top dot products sit in the tails that D^2
  // seeding covers: recall +0.04-0.09 at width 2 for 16-768 dimensions, +0.03-0.04
  // at width 4 for 16-32; bench/RESULTS.md, pq_recall_sweep); random rows
  // otherwise (on l2 residuals, 4-bit codes, wider or more sub-vectors k-means++
  // lowers the distortion, not the recall).
  std::optional<kmeans_init> init;
  std::uint64_t seed = 42;
  // The draw of the training sample; unset: seed. The IVF builder draws it apart from
  // its k-means sample, as Lance samples the quantizer's rows independently of the
  // IVF's: with one draw, whenever both samples are the same size (k = 2^num_bits
  // partitions) PQ would train on the residuals of exactly the rows the centroids were
  // fitted to, which are smaller than the other rows' residuals.
  std::optional<std::uint64_t> sample_seed;
  // Lance's codebook is where each sub-vector's k-means run ends. Where a codebook of
  // the same runs stopped earlier (after 1, 3 or 10 iterations) ranks the training
  // sample's own nearest neighbours clearly better, lancet keeps that one instead
  // (iterate.hpp says how it is checked): converged code words minimise squared
  // error, not ranking error, and on data whose neighbours sit in dense regions they
  // spread away from them (4-bit codes: recall +0.01 to +0.04; bench_ivf's 8-bit
  // codes +0.018; bench/RESULTS.md "PQ codebooks: the iterate that ranks best" and
  // "... ranked within partitions"). false: always the ends, as Lance.
  bool choose_iterate = true;
  // Called after each sub-vector's codebook is trained (one call at a time, from the
  // thread that trained it) with the sub-vectors done so far and in all; return
  // false to cancel (training then throws lancet::cancelled_error).
  std::function<bool(std::size_t done, std::size_t total)> on_progress;

  std::uint64_t sample_draw() const noexcept { return sample_seed.value_or(seed); }

  std::size_t sample_size() const noexcept {
    const std::size_t lance = sample_rate << num_bits;
    return max_sample_rows ? std::min(lance, max_sample_rows) : lance;
  }
};

// Lance quantizes residuals for l2 and cosine, raw vectors for dot.
inline bool uses_residual(distance_type t) noexcept {
  return t == distance_type::l2 || t == distance_type::cosine;
}

// A trained product quantizer. The codebook has the element type of the vectors it
// was trained on (Lance stores an f16 codebook for f16 vectors).
template <class C>
struct model {
  std::size_t dimension = 0;
  std::size_t num_sub_vectors = 0;
  std::uint32_t num_bits = 8;
  // How distance tables are built: l2 or dot. Cosine indexes are l2 over normalised
  // vectors (Lance turns cosine into l2 when it loads a PQ index).
  distance_type distance = distance_type::l2;
  std::vector<C> codebook;  // [num_sub_vectors][2^num_bits][dimension / num_sub_vectors]
  // When training kept an earlier iterate (params::choose_iterate): its k-means
  // iterations; 0 for the end of the runs (Lance's codebook) or a given codebook.
  std::uint32_t iterate = 0;

  std::size_t sub_dimension() const noexcept { return num_sub_vectors ? dimension / num_sub_vectors : 0; }
  std::size_t num_centroids() const noexcept { return std::size_t(1) << num_bits; }
  // Bytes of one row's code: m for 8 bits, m / 2 for 4 bits.
  std::size_t code_bytes() const noexcept { return num_bits == 4 ? num_sub_vectors / 2 : num_sub_vectors; }
  // The 2^num_bits centroids of sub-vector s, [2^num_bits][sub_dimension].
  const C* centroids(std::size_t s) const noexcept { return codebook.data() + s * num_centroids() * sub_dimension(); }

  // Throws invalid_input_error when the shape is inconsistent.
  void validate() const {
    if (num_bits != 4 && num_bits != 8)
      throw invalid_input_error("PQ: num_bits " + std::to_string(num_bits) + " is not supported (4 or 8)");
    if (num_sub_vectors == 0) throw invalid_input_error("PQ: num_sub_vectors must be positive");
    if (dimension == 0 || dimension % num_sub_vectors != 0)
      throw invalid_input_error("PQ: num_sub_vectors must divide vector dimension " + std::to_string(dimension) +
                                ", but got " + std::to_string(num_sub_vectors));
    if (num_bits == 4 && num_sub_vectors % 2 != 0)
      throw invalid_input_error("PQ: num_sub_vectors must be divisible by 2 for num_bits=4, but got " +
                                std::to_string(num_sub_vectors));
    if (distance != distance_type::l2 && distance != distance_type::dot)
      throw invalid_input_error(std::string("PQ: distance tables are l2 or dot, not ") +
                                simd::distance_name(distance));
    if (codebook.size() != num_centroids() * dimension)
      throw invalid_input_error("PQ: codebook has " + std::to_string(codebook.size()) + " values, expected " +
                                std::to_string(num_centroids() * dimension) + " (2^num_bits * dimension)");
  }
};

// Reconstructs a vector from its code row (the centroids it names), into out[dim].
template <class C, class O>
inline void decode(const model<C>& pq, const std::uint8_t* code_row, O* out) {
  const std::size_t sd = pq.sub_dimension();
  for (std::size_t s = 0; s < pq.num_sub_vectors; ++s) {
    const C* c = pq.centroids(s) + std::size_t(code_of(code_row, pq.num_bits, s)) * sd;
    for (std::size_t i = 0; i < sd; ++i) out[s * sd + i] = quantizer::from_work<O>(quantizer::to_work<double>(c[i]));
  }
}

// ---- the shared storage description (quantizer/params.hpp) ----------------------

// What the index files record about the quantizer.
template <class C>
inline pq_params to_params(const model<C>& m) {
  m.validate();
  pq_params p;
  p.num_sub_vectors = static_cast<std::uint32_t>(m.num_sub_vectors);
  p.num_bits = m.num_bits;
  p.dimension = static_cast<std::uint32_t>(m.dimension);
  p.codebook = matrix::of(m.codebook, m.num_sub_vectors * m.num_centroids(), m.sub_dimension());
  return p;
}

// A model from what an index records, with the codebook converted to C (exactly,
// for C at least as wide as the stored type). index_distance is the index's
// distance type: dot builds dot tables, l2 and cosine l2 tables (Lance's rule).
template <class C = float>
inline model<C> from_params(const pq_params& p, distance_type index_distance) {
  model<C> m;
  m.dimension = p.dimension;
  m.num_sub_vectors = p.num_sub_vectors;
  m.num_bits = p.num_bits;
  m.distance = index_distance == distance_type::dot ? distance_type::dot : distance_type::l2;
  if (p.codebook.size() != (std::size_t(1) << p.num_bits) * std::size_t(p.dimension))
    throw invalid_input_error("PQ: codebook has " + std::to_string(p.codebook.size()) + " values, expected " +
                              std::to_string((std::size_t(1) << p.num_bits) * std::size_t(p.dimension)));
  if (p.codebook.type == element_type::u8) throw invalid_input_error("PQ: a uint8 codebook is not supported");
  m.codebook.resize(p.codebook.size());
  for (std::size_t i = 0; i < m.codebook.size(); ++i)
    m.codebook[i] = quantizer::from_work<C>(p.codebook.at(i / p.codebook.cols, i % p.codebook.cols));
  m.validate();
  return m;
}

}  // namespace lancet::index::pq
