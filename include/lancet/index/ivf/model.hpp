// The IVF model of a vector index: centroids, and for each partition where its rows
// start (offset) and how many there are (length) in the file that stores them, plus
// the k-means loss. Converts to and from the lance.index.pb.IVF message Lance keeps in
// a global buffer of index.idx (centroids + loss) and auxiliary.idx (offsets and
// lengths of the stored rows).
//
//   auto ivf = index::ivf_model::from_kmeans(km);   // centroids and loss
//   ivf.add_partition(120);                          // offsets follow from lengths
//   std::string bytes = pb::encode(ivf.to_pb());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/index/kmeans/params.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/simd/distance_type.hpp"

namespace lancet::index {

// matrix <-> lance.index.pb.Tensor (shape [rows, cols]).
inline pb::index::tensor to_tensor(const matrix& m) {
  pb::index::tensor t;
  switch (m.type) {
    case element_type::f16: t.type = pb::index::tensor::data_type::float16; break;
    case element_type::f32: t.type = pb::index::tensor::data_type::float32; break;
    case element_type::f64: t.type = pb::index::tensor::data_type::float64; break;
    case element_type::u8: t.type = pb::index::tensor::data_type::uint8; break;
  }
  if (m.rows > UINT32_MAX || m.cols > UINT32_MAX)
    throw invalid_input_error("a tensor dimension exceeds 2^32: " + std::to_string(m.rows) + " x " +
                              std::to_string(m.cols));
  t.shape = {std::uint32_t(m.rows), std::uint32_t(m.cols)};
  t.data.assign(reinterpret_cast<const char*>(m.data.data()), m.data.size());
  return t;
}

// A 2-D tensor as a matrix; `what` names it in errors.
inline matrix from_tensor(const pb::index::tensor& t, const std::string& what) {
  using dt = pb::index::tensor::data_type;
  matrix m;
  switch (t.type) {
    case dt::float16: m.type = element_type::f16; break;
    case dt::float32: m.type = element_type::f32; break;
    case dt::float64: m.type = element_type::f64; break;
    case dt::uint8: m.type = element_type::u8; break;
    default:
      throw unsupported_error(what + ": tensors of data type " + std::to_string(int(t.type)) +
                              " are not supported (float16, float32, float64 and uint8 are)");
  }
  if (t.shape.size() != 2)
    throw corrupt_error(what + ": expected a 2-D tensor, found " + std::to_string(t.shape.size()) + " dimensions");
  m.rows = t.shape[0];
  m.cols = t.shape[1];
  const std::uint64_t need = std::uint64_t(m.rows) * m.cols * element_size(m.type);
  if (t.data.size() != need)
    throw corrupt_error(what + ": a " + std::to_string(m.rows) + " x " + std::to_string(m.cols) + " tensor needs " +
                        std::to_string(need) + " bytes, found " + std::to_string(t.data.size()));
  m.data.append(t.data);
  return m;
}

struct ivf_model {
  std::optional<matrix> centroids;  // num_partitions x dimension
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> lengths;
  std::optional<double> loss;

  // A model with centroids and no partitions yet.
  static ivf_model with_centroids(matrix c, std::optional<double> loss = std::nullopt) {
    if (c.rows == 0 || c.cols == 0) throw invalid_input_error("IVF centroids must be a non-empty matrix");
    ivf_model m;
    m.centroids = std::move(c);
    m.loss = loss;
    return m;
  }
  template <class C>
  static ivf_model from_kmeans(const kmeans_result<C>& km) {
    return with_centroids(matrix::of(km.centroids, km.k, km.dimension), km.loss);
  }

  // Partitions: the centroids' rows, or (a storage model without centroids) the
  // partitions recorded so far.
  std::size_t num_partitions() const noexcept { return centroids ? centroids->rows : lengths.size(); }
  std::size_t dimension() const noexcept { return centroids ? centroids->cols : 0; }
  std::uint64_t num_rows() const noexcept {
    std::uint64_t n = 0;
    for (auto l : lengths) n += l;
    return n;
  }

  // Records the next partition; it starts where the previous one ends.
  void add_partition(std::uint32_t length) {
    const std::uint64_t at = offsets.empty() ? 0 : offsets.back() + lengths.back();
    offsets.push_back(at);
    lengths.push_back(length);
  }
  // Rows [begin, end) of partition p in the storage file.
  std::pair<std::uint64_t, std::uint64_t> row_range(std::size_t p) const {
    if (p >= lengths.size())
      throw invalid_input_error("partition " + std::to_string(p) + " does not exist (the model has " +
                                std::to_string(lengths.size()) + ")");
    return {offsets[p], offsets[p] + lengths[p]};
  }

  pb::index::ivf to_pb() const {
    pb::index::ivf m;
    m.offsets = offsets;
    m.lengths = lengths;
    if (centroids) m.centroids_tensor = to_tensor(*centroids);
    m.loss = loss;
    return m;
  }

  // Lance's reading rules: centroids from the tensor, else from the deprecated
  // float list (f32, dimension = values / partitions); offsets from lengths when
  // absent. Counts that disagree are corrupt_error.
  static ivf_model from_pb(const pb::index::ivf& p) {
    ivf_model m;
    m.lengths = p.lengths;
    m.loss = p.loss;
    if (p.centroids_tensor) {
      m.centroids = from_tensor(*p.centroids_tensor, "IVF centroids");
    } else if (!p.centroids.empty()) {
      if (p.lengths.empty() || p.centroids.size() % p.lengths.size())
        throw corrupt_error("IVF: " + std::to_string(p.centroids.size()) + " legacy centroid values do not split into " +
                            std::to_string(p.lengths.size()) + " partitions");
      m.centroids = matrix::of(p.centroids, p.lengths.size(), p.centroids.size() / p.lengths.size());
    }
    if (p.offsets.empty()) {
      std::uint64_t at = 0;
      for (auto l : p.lengths) {
        m.offsets.push_back(at);
        at += l;
      }
    } else {
      if (p.offsets.size() != p.lengths.size())
        throw corrupt_error("IVF: " + std::to_string(p.offsets.size()) + " partition offsets but " +
                            std::to_string(p.lengths.size()) + " lengths");
      m.offsets = p.offsets;
    }
    if (m.centroids && !m.lengths.empty() && m.centroids->rows != m.lengths.size())
      throw corrupt_error("IVF: " + std::to_string(m.centroids->rows) + " centroids but " +
                          std::to_string(m.lengths.size()) + " partitions");
    return m;
  }

  friend bool operator==(const ivf_model&, const ivf_model&) = default;
};

// Distance names as Lance writes them ("l2", "cosine", "dot", "hamming").
inline std::string_view distance_type_name(simd::distance_type d) noexcept { return simd::distance_name(d); }

inline simd::distance_type parse_distance(std::string_view s) {
  if (s == "l2" || s == "euclidean") return simd::distance_type::l2;
  if (s == "cosine") return simd::distance_type::cosine;
  if (s == "dot") return simd::distance_type::dot;
  if (s == "hamming") return simd::distance_type::hamming;
  throw invalid_input_error("unknown distance type '" + std::string(s) + "' (expected l2, cosine, dot or hamming)");
}

}  // namespace lancet::index
