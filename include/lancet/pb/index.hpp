// lance.index.pb messages that vector indexes store: the IVF model and tensors (in
// global buffers of index.idx / auxiliary.idx), the legacy PQ message, and the
// VectorIndexDetails that Lance 12 records in the manifest's IndexMetadata.index_details.
//
// Field numbers of IVF, Tensor and PQ follow protos/index.proto. VectorIndexDetails is
// empty in the 1.0-beta protos; its fields here are the ones Lance 12 writes, read off
// the manifests LanceDB 0.39 committed (docs/lance12-indexes.md, section 5).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/file2.hpp"  // pack_any / unpack_any, from_bytes / to_bytes
#include "lancet/pb/wire.hpp"

namespace lancet::pb::index {

namespace detail {

template <class T>
T decode_sub(const reader& r, const field_view& f, std::string_view what) {
  return T::decode(r.sub(f, what));
}

}  // namespace detail

// A dense array: element type, shape (row-major) and the little-endian values.
struct tensor {
  enum class data_type : std::uint8_t { bfloat16 = 0, float16 = 1, float32 = 2, float64 = 3,
                                        uint8 = 4, uint16 = 5, uint32 = 6, uint64 = 7 };
  static constexpr std::string_view message_name = "Tensor";
  static constexpr std::uint32_t f_data_type = 1, f_shape = 2, f_data = 3;

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

  void encode(writer& w) const {
    w.uint32_opt(f_data_type, std::uint32_t(type));
    w.packed_varint(f_shape, shape);
    w.string_opt(f_data, data);
  }
  static tensor decode(reader r) {
    tensor t;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_data_type: {
          const auto v = r.varint(f, "Tensor.data_type");
          if (v > 7) throw corrupt_error("Tensor: unknown data type " + std::to_string(v));
          t.type = data_type(v);
          break;
        }
        case f_shape: r.repeated_varint(f, t.shape); break;
        case f_data: t.data = r.string(f, "Tensor.data"); break;
        default: break;
      }
    }
    return t;
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

  void encode(writer& w) const {
    w.packed_float32(f_centroids, centroids);
    w.packed_varint(f_offsets, offsets);
    w.packed_varint(f_lengths, lengths);
    if (centroids_tensor) w.message(f_centroids_tensor, *centroids_tensor);
    if (loss) w.float64(f_loss, *loss);
  }
  static ivf decode(reader r) {
    ivf m;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_centroids:
          if (f.type == wire_type::fixed32) {
            m.centroids.push_back(f.as_float());
          } else {
            r.expect(f, wire_type::len, "IVF.centroids");
            if (f.data.size() % 4) throw corrupt_error("IVF.centroids: packed floats of " + std::to_string(f.data.size()) + " bytes");
            for (std::size_t i = 0; i < f.data.size(); i += 4) {
              float x;
              std::memcpy(&x, f.data.data() + i, 4);
              m.centroids.push_back(x);
            }
          }
          break;
        case f_offsets: r.repeated_varint(f, m.offsets); break;
        case f_lengths: r.repeated_varint(f, m.lengths); break;
        case f_centroids_tensor: m.centroids_tensor = detail::decode_sub<tensor>(r, f, "IVF.centroids_tensor"); break;
        case f_loss:
          r.expect(f, wire_type::fixed64, "IVF.loss");
          m.loss = f.as_double();
          break;
        default: break;
      }
    }
    return m;
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

  void encode(writer& w) const {
    w.uint32_opt(f_num_bits, num_bits);
    w.uint32_opt(f_num_sub_vectors, num_sub_vectors);
    w.uint32_opt(f_dimension, dimension);
    w.packed_float32(f_codebook, codebook);
    if (codebook_tensor) w.message(f_codebook_tensor, *codebook_tensor);
  }
  static pq decode(reader r) {
    pq m;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_num_bits: m.num_bits = std::uint32_t(r.varint(f, "PQ.num_bits")); break;
        case f_num_sub_vectors: m.num_sub_vectors = std::uint32_t(r.varint(f, "PQ.num_sub_vectors")); break;
        case f_dimension: m.dimension = std::uint32_t(r.varint(f, "PQ.dimension")); break;
        case f_codebook: {
          r.expect(f, wire_type::len, "PQ.codebook");
          if (f.data.size() % 4) throw corrupt_error("PQ.codebook: packed floats of " + std::to_string(f.data.size()) + " bytes");
          for (std::size_t i = 0; i < f.data.size(); i += 4) {
            float x;
            std::memcpy(&x, f.data.data() + i, 4);
            m.codebook.push_back(x);
          }
          break;
        }
        case f_codebook_tensor: m.codebook_tensor = detail::decode_sub<tensor>(r, f, "PQ.codebook_tensor"); break;
        default: break;
      }
    }
    return m;
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
    std::uint32_t max_connections = 0;  // m
    std::uint32_t construction_ef = 0;
    std::uint32_t max_level = 0;
    friend bool operator==(const hnsw_params&, const hnsw_params&) = default;
  };
  struct pq_compression {
    std::uint32_t num_bits = 0;
    std::uint32_t num_sub_vectors = 0;
    friend bool operator==(const pq_compression&, const pq_compression&) = default;
  };
  struct sq_compression {
    std::uint32_t num_bits = 0;
    friend bool operator==(const sq_compression&, const sq_compression&) = default;
  };
  struct rq_compression {
    std::uint32_t num_bits = 0;
    friend bool operator==(const rq_compression&, const rq_compression&) = default;
  };
  struct flat_compression {
    friend bool operator==(const flat_compression&, const flat_compression&) = default;
  };
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

  void encode(writer& w) const {
    w.uint32_opt(f_metric_type, std::uint32_t(metric));
    if (hnsw)
      w.message_fn(f_hnsw, [&](writer& s) {
        s.uint32_opt(1, hnsw->max_connections);
        s.uint32_opt(2, hnsw->construction_ef);
        s.uint32_opt(3, hnsw->max_level);
      });
    if (const auto* p = std::get_if<pq_compression>(&compression))
      w.message_fn(f_pq, [&](writer& s) {
        s.uint32_opt(1, p->num_bits);
        s.uint32_opt(2, p->num_sub_vectors);
      });
    else if (const auto* q = std::get_if<sq_compression>(&compression))
      w.message_fn(f_sq, [&](writer& s) { s.uint32_opt(1, q->num_bits); });
    else if (const auto* b = std::get_if<rq_compression>(&compression))
      w.message_fn(f_rq, [&](writer& s) { s.uint32_opt(1, b->num_bits); });
    else if (std::holds_alternative<flat_compression>(compression))
      w.message_fn(f_flat, [](writer&) {});
    w.string_map(f_runtime_hints, runtime_hints);
  }

  static vector_index_details decode(reader r) {
    vector_index_details d;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_metric_type: {
          const auto v = r.varint(f, "VectorIndexDetails.metric_type");
          if (v > 3) throw corrupt_error("VectorIndexDetails: unknown metric type " + std::to_string(v));
          d.metric = metric_type(v);
          break;
        }
        case f_hnsw: {
          auto s = r.sub(f, "VectorIndexDetails.hnsw");
          hnsw_params h;
          while (!s.done()) {
            auto g = s.next();
            if (g.number == 1) h.max_connections = std::uint32_t(s.varint(g, "HnswParams.max_connections"));
            else if (g.number == 2) h.construction_ef = std::uint32_t(s.varint(g, "HnswParams.construction_ef"));
            else if (g.number == 3) h.max_level = std::uint32_t(s.varint(g, "HnswParams.max_level"));
          }
          d.hnsw = h;
          break;
        }
        case f_pq: {
          auto s = r.sub(f, "VectorIndexDetails.pq");
          pq_compression p;
          while (!s.done()) {
            auto g = s.next();
            if (g.number == 1) p.num_bits = std::uint32_t(s.varint(g, "PqCompression.num_bits"));
            else if (g.number == 2) p.num_sub_vectors = std::uint32_t(s.varint(g, "PqCompression.num_sub_vectors"));
          }
          d.compression = p;
          break;
        }
        case f_sq:
        case f_rq: {
          auto s = r.sub(f, "VectorIndexDetails.compression");
          std::uint32_t bits = 0;
          while (!s.done()) {
            auto g = s.next();
            if (g.number == 1) bits = std::uint32_t(s.varint(g, "Compression.num_bits"));
          }
          if (f.number == f_sq) d.compression = sq_compression{bits};
          else d.compression = rq_compression{bits};
          break;
        }
        case f_flat:
          r.expect(f, wire_type::len, "VectorIndexDetails.flat");
          d.compression = flat_compression{};
          break;
        case f_runtime_hints: d.runtime_hints.push_back(r.map_entry(f, "VectorIndexDetails.runtime_hints")); break;
        default: break;
      }
    }
    return d;
  }
  friend bool operator==(const vector_index_details&, const vector_index_details&) = default;
};

}  // namespace lancet::pb::index
