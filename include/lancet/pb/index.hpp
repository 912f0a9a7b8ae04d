// lance.index.pb messages that vector indexes store: the IVF model and tensors (in
// global buffers of index.idx / auxiliary.idx), the legacy PQ message, and the
// VectorIndexDetails that Lance 12 records in the manifest's IndexMetadata.index_details.
//
// Field numbers of IVF, Tensor and PQ follow protos/index.proto. VectorIndexDetails is
// empty in the 1.0-beta protos; its fields here are the ones Lance 12 writes, read off
// the manifests LanceDB 0.39 committed (docs/lance12-indexes.md, section 5).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"

namespace lancet::pb::index {

// A dense array: element type, shape (row-major) and the little-endian values.
struct tensor {
  static constexpr std::string_view message_name = "Tensor";
  static constexpr std::uint32_t f_data_type = 1, f_shape = 2, f_data = 3;
  enum class data_type : std::uint8_t { bfloat16 = 0, float16 = 1, float32 = 2, float64 = 3,
                                        uint8 = 4, uint16 = 5, uint32 = 6, uint64 = 7 };

  data_type type = data_type::bfloat16;
  std::vector<std::uint32_t> shape;
  std::string data;

  static std::size_t element_size(data_type t) {
    switch (t) {
      case data_type::bfloat16:
      case data_type::float16:
      case data_type::uint16: return 2;
      case data_type::float32:
      case data_type::uint32: return 4;
      case data_type::float64:
      case data_type::uint64: return 8;
      case data_type::uint8: return 1;
    }
    return 0;
  }
  // Elements the shape describes (1 for an empty shape, as a scalar).
  std::uint64_t num_elements() const noexcept {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_data_type, &tensor::type, "Tensor.data_type"),
                      pb::field(f_shape, &tensor::shape, "Tensor.shape"),
                      pb::field(f_data, &tensor::data, "Tensor.data"));
  }
  void check_decoded() const {
    if (type > data_type::uint64) throw corrupt_error("Tensor: unknown data type " + std::to_string(int(type)));
  }
  friend bool operator==(const tensor&, const tensor&) = default;
};

// The IVF model: centroids (a [partitions, dimension] tensor), and per partition the
// first row (offsets) and row count (lengths) in the file that stores it; the k-means
// loss when it is known.
struct ivf {
  static constexpr std::string_view message_name = "IVF";
  static constexpr std::uint32_t f_centroids = 1, f_offsets = 2, f_lengths = 3, f_centroids_tensor = 4,
                                 f_loss = 5;

  std::vector<float> centroids;  // deprecated (index format v1): flat f32 centroids
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> lengths;
  std::optional<tensor> centroids_tensor;
  std::optional<double> loss;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_centroids, &ivf::centroids, "IVF.centroids"),
                      pb::field(f_offsets, &ivf::offsets, "IVF.offsets"),
                      pb::field(f_lengths, &ivf::lengths, "IVF.lengths"),
                      pb::field(f_centroids_tensor, &ivf::centroids_tensor, "IVF.centroids_tensor"),
                      pb::field(f_loss, &ivf::loss, "IVF.loss"));
  }
  friend bool operator==(const ivf&, const ivf&) = default;
};

// The legacy (v1 index format) PQ message; v3 indexes keep PQ parameters in JSON.
struct pq {
  static constexpr std::string_view message_name = "PQ";
  static constexpr std::uint32_t f_num_bits = 1, f_num_sub_vectors = 2, f_dimension = 3, f_codebook = 4,
                                 f_codebook_tensor = 5;
  std::uint32_t num_bits = 0;
  std::uint32_t num_sub_vectors = 0;
  std::uint32_t dimension = 0;
  std::vector<float> codebook;
  std::optional<tensor> codebook_tensor;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_num_bits, &pq::num_bits, "PQ.num_bits"),
                      pb::field(f_num_sub_vectors, &pq::num_sub_vectors, "PQ.num_sub_vectors"),
                      pb::field(f_dimension, &pq::dimension, "PQ.dimension"),
                      pb::field(f_codebook, &pq::codebook, "PQ.codebook"),
                      pb::field(f_codebook_tensor, &pq::codebook_tensor, "PQ.codebook_tensor"));
  }
  friend bool operator==(const pq&, const pq&) = default;
};

// VectorMetricType of index.proto (also VectorIndexDetails.metric_type).
enum class metric_type : std::uint8_t { l2 = 0, cosine = 1, dot = 2, hamming = 3 };

// What Lance 12 records about a vector index in IndexMetadata.index_details
// (type URL "/lance.index.pb.VectorIndexDetails"):
//   1 metric_type, 3 HNSW build parameters, one compression (4 PQ, 5 SQ, 6 RQ,
//   8 none/flat), 9 runtime hints (the build parameters as strings, e.g.
//   "lance.ivf.max_iters" = "50"; Lance writes them in hash-map order).
struct vector_index_details {
  static constexpr std::string_view message_name = "VectorIndexDetails";
  static constexpr std::string_view type_url = "/lance.index.pb.VectorIndexDetails";
  static constexpr std::uint32_t f_metric_type = 1, f_hnsw = 3, f_pq = 4, f_sq = 5, f_rq = 6, f_flat = 8,
                                 f_runtime_hints = 9;

  struct hnsw_params {
    static constexpr std::string_view message_name = "HnswParams";
    static constexpr std::uint32_t f_max_connections = 1, f_construction_ef = 2, f_max_level = 3;
    std::uint32_t max_connections = 0;  // m
    std::uint32_t construction_ef = 0;
    std::uint32_t max_level = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_max_connections, &hnsw_params::max_connections, "HnswParams.max_connections"),
                        pb::field(f_construction_ef, &hnsw_params::construction_ef, "HnswParams.construction_ef"),
                        pb::field(f_max_level, &hnsw_params::max_level, "HnswParams.max_level"));
    }
    friend bool operator==(const hnsw_params&, const hnsw_params&) = default;
  };
  struct pq_compression {
    static constexpr std::string_view message_name = "PqCompression";
    static constexpr std::uint32_t f_num_bits = 1, f_num_sub_vectors = 2;
    std::uint32_t num_bits = 0;
    std::uint32_t num_sub_vectors = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_num_bits, &pq_compression::num_bits, "PqCompression.num_bits"),
                        pb::field(f_num_sub_vectors, &pq_compression::num_sub_vectors, "PqCompression.num_sub_vectors"));
    }
    friend bool operator==(const pq_compression&, const pq_compression&) = default;
  };
  struct sq_compression {
    static constexpr std::string_view message_name = "SqCompression";
    static constexpr std::uint32_t f_num_bits = 1;
    std::uint32_t num_bits = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_num_bits, &sq_compression::num_bits, "SqCompression.num_bits"));
    }
    friend bool operator==(const sq_compression&, const sq_compression&) = default;
  };
  struct rq_compression {
    static constexpr std::string_view message_name = "RqCompression";
    static constexpr std::uint32_t f_num_bits = 1;
    std::uint32_t num_bits = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_num_bits, &rq_compression::num_bits, "RqCompression.num_bits"));
    }
    friend bool operator==(const rq_compression&, const rq_compression&) = default;
  };
  struct flat_compression {
    static constexpr std::string_view message_name = "FlatCompression";
    static constexpr auto proto_fields() { return pb::fields(); }  // no fields: its presence is the information
    friend bool operator==(const flat_compression&, const flat_compression&) = default;
  };
  // Cases in this order; their field numbers are f_flat, f_pq, f_sq, f_rq.
  using compression_t = std::variant<std::monostate, flat_compression, pq_compression, sq_compression, rq_compression>;

  metric_type metric = metric_type::l2;
  std::optional<hnsw_params> hnsw;
  compression_t compression;
  std::vector<std::pair<std::string, std::string>> runtime_hints;  // in write order

  std::optional<std::string_view> hint(std::string_view key) const noexcept {
    for (const auto& [k, v] : runtime_hints)
      if (k == key) return std::string_view(v);
    return std::nullopt;
  }

  static constexpr auto proto_fields() {
    return pb::fields(
        pb::field(f_metric_type, &vector_index_details::metric, "VectorIndexDetails.metric_type"),
        pb::field(f_hnsw, &vector_index_details::hnsw, "VectorIndexDetails.hnsw"),
        pb::oneof(&vector_index_details::compression, "VectorIndexDetails.compression", {f_flat, f_pq, f_sq, f_rq}),
        pb::field(f_runtime_hints, &vector_index_details::runtime_hints, "VectorIndexDetails.runtime_hints"));
  }
  void check_decoded() const {
    if (metric > metric_type::hamming)
      throw corrupt_error("VectorIndexDetails: unknown metric type " + std::to_string(int(metric)));
  }
  friend bool operator==(const vector_index_details&, const vector_index_details&) = default;
};

}  // namespace lancet::pb::index
