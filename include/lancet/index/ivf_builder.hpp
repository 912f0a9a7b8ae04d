// Builds an IVF vector index over a dataset column the way Lance 12 does, stage by
// stage, and registers it in a new manifest version:
//
//   index::build_options o;  o.column = "vector";  o.type = index::ivf_index_type::ivf_pq;
//   auto r = index::build_ivf_index("/data/ds", o);   // r.index: the IndexMetadata committed
//
// Stages (reported through build_options::on_progress):
//   train_ivf        k-means on sample_rate x num_partitions rows (cosine: normalised,
//                    trained as l2; hamming: k-modes over uint8 codes);
//   train_quantizer  PQ (residuals for l2/cosine, as Lance), SQ bounds, RaBitQ rotation;
//   shuffle          every row assigned to its nearest centroid and encoded;
//   merge_partitions rows grouped by partition and written as auxiliary.idx + index.idx.
// Null vectors, vectors with a non-finite value, and (cosine) zero vectors are not
// indexed. The whole column is held in memory (no spilling to disk).
// The dataset is only changed by the final commit: any error before it leaves it as it
// was (a half-written index directory is removed).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/index_files.hpp"
#include "lancet/index/ivf_model.hpp"
#include "lancet/index/kmeans.hpp"
#include "lancet/index/quantizer/flat.hpp"
#include "lancet/index/quantizer/pq.hpp"
#include "lancet/index/quantizer/rabitq.hpp"
#include "lancet/index/quantizer/sq.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/search.hpp"
#include "lancet/index/vector_index.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::index {

enum class ivf_index_type : std::uint8_t { ivf_flat, ivf_pq, ivf_sq, ivf_rq };

inline std::string_view ivf_index_type_name(ivf_index_type t) noexcept {
  switch (t) {
    case ivf_index_type::ivf_flat: return "IVF_FLAT";
    case ivf_index_type::ivf_pq: return "IVF_PQ";
    case ivf_index_type::ivf_sq: return "IVF_SQ";
    case ivf_index_type::ivf_rq: return "IVF_RQ";
  }
  return "?";
}

inline ivf_index_type parse_ivf_index_type(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (l == "ivf_flat") return ivf_index_type::ivf_flat;
  if (l == "ivf_pq") return ivf_index_type::ivf_pq;
  if (l == "ivf_sq") return ivf_index_type::ivf_sq;
  if (l == "ivf_rq") return ivf_index_type::ivf_rq;
  throw invalid_input_error("unknown index type '" + std::string(s) + "' (expected ivf_flat, ivf_pq, ivf_sq or ivf_rq)");
}

// Lance's target partition size per index type (IndexType::target_partition_size).
inline std::size_t default_target_partition_size(ivf_index_type t) noexcept {
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
  boost::asio::thread_pool* pool = nullptr;
  std::function<void(const build_progress&)> on_progress;
};

struct build_result {
  pb::index_metadata index;       // as committed
  std::uint64_t version = 0;      // the dataset version that has the index
  std::size_t num_partitions = 0;
  std::uint64_t rows_indexed = 0;
  std::uint64_t rows_skipped = 0;  // null / non-finite / zero (cosine) vectors
  std::string directory;           // _indices/<uuid>
};

namespace builder_detail {

// The column's usable rows, contiguous, with their row ids.
template <class T>
struct vectors {
  std::vector<T> values;
  std::vector<std::uint64_t> ids;
  std::size_t dim = 0;
  std::uint64_t skipped = 0;
  std::size_t rows() const noexcept { return ids.size(); }
};

template <class T>
inline bool usable(const T* row, std::size_t d, simd::distance_type metric) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    (void)row, (void)d, (void)metric;
    return true;
  } else {
    double nsq = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double v = double(static_cast<float>(row[i]));
      if constexpr (std::is_same_v<T, double>) {
        if (!std::isfinite(row[i])) return false;
        nsq += row[i] * row[i];
        continue;
      }
      if (!std::isfinite(v)) return false;
      nsq += v * v;
    }
    return metric != simd::distance_type::cosine || nsq > 0;
  }
}

template <class T>
inline void gather(const arrow::record_batch& b, std::size_t dim, simd::distance_type metric, vectors<T>& out) {
  const auto& col = *b.columns[0];
  const auto& ids = *b.columns[1];
  const T* base = col.children[0]->template values<T>() + std::size_t(col.offset) * dim;
  const std::uint64_t* id = ids.values<std::uint64_t>();
  for (std::int64_t r = 0; r < col.length; ++r) {
    const T* row = base + std::size_t(r) * dim;
    if (col.is_null(r) || !usable(row, dim, metric)) {
      ++out.skipped;
      continue;
    }
    out.values.insert(out.values.end(), row, row + dim);
    out.ids.push_back(id[r]);
  }
}

inline void report(const build_options& o, build_stage s, std::uint64_t done, std::uint64_t total) {
  if (o.on_progress) o.on_progress({s, done, total});
}

// What the quantizer stage produces for every row (row-major), before grouping.
struct encoded {
  quantizer_params params;
  std::size_t width = 0;  // code bytes per row
  std::vector<std::uint8_t> codes;
  std::vector<float> add, scale, error;  // RQ
};

template <class T>
inline void normalise_rows(std::vector<T>& v, std::size_t d) {
  for (std::size_t r = 0; r < v.size() / d; ++r) {
    T* row = v.data() + r * d;
    double s = 0;
    for (std::size_t i = 0; i < d; ++i) s += double(static_cast<float>(row[i])) * double(static_cast<float>(row[i]));
    if constexpr (std::is_same_v<T, double>) {
      s = 0;
      for (std::size_t i = 0; i < d; ++i) s += row[i] * row[i];
    }
    const double n = std::sqrt(s);
    for (std::size_t i = 0; i < d; ++i) {
      if constexpr (std::is_same_v<T, double>) row[i] /= n;
      else row[i] = T(float(double(static_cast<float>(row[i])) / n));
    }
  }
}

template <class T>
inline build_result build_typed(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                 const build_options& o, const std::string& index_name, std::size_t dim) {
  constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  const auto metric = o.metric;
  if (is_u8 != (metric == simd::distance_type::hamming))
    throw invalid_input_error(is_u8 ? "column '" + o.column + "' holds uint8 vectors: only ivf_flat with hamming distance"
                                    : "hamming distance needs a column of uint8 vectors ('" + o.column + "' is not)");
  if (is_u8 && o.type != ivf_index_type::ivf_flat)
    throw invalid_input_error(std::string(ivf_index_type_name(o.type)) + " does not support hamming distance");

  // Parameters checked before any work.
  std::size_t m_sub = 0;
  std::uint32_t bits = 0;
  if (o.type == ivf_index_type::ivf_pq) {
    m_sub = o.num_sub_vectors.value_or(dim % 16 == 0 ? dim / 16 : dim % 8 == 0 ? dim / 8 : 1);
    bits = o.num_bits.value_or(8);
    if (m_sub == 0 || dim % m_sub != 0)
      throw invalid_input_error("IVF_PQ: num_sub_vectors " + std::to_string(m_sub) + " does not divide dimension " +
                                std::to_string(dim) + " of column '" + o.column + "'");
    if (bits != 8 && bits != 4)
      throw invalid_input_error("IVF_PQ: num_bits " + std::to_string(bits) + " is not supported (4 or 8)");
    if (bits == 4 && m_sub % 2)
      throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " + std::to_string(m_sub));
  } else if (o.type == ivf_index_type::ivf_sq) {
    bits = o.num_bits.value_or(8);
    if (bits != 8) throw invalid_input_error("IVF_SQ: num_bits " + std::to_string(bits) + " is not supported (8)");
  } else if (o.type == ivf_index_type::ivf_rq) {
    bits = o.num_bits.value_or(1);
    if (bits != 1) throw invalid_input_error("IVF_RQ: lancet builds 1-bit codes, not " + std::to_string(bits));
    if (dim % 8) throw invalid_input_error("IVF_RQ: dimension " + std::to_string(dim) + " is not a multiple of 8");
  } else if (o.num_sub_vectors || o.num_bits) {
    throw invalid_input_error("IVF_FLAT takes no num_sub_vectors / num_bits");
  }
  if (o.num_partitions && o.target_partition_size)
    throw invalid_input_error("give num_partitions or target_partition_size, not both");
  if (o.num_partitions && *o.num_partitions == 0) throw invalid_input_error("num_partitions must be positive");

  // Read the column with row ids (row addresses when the dataset has no stable ids).
  vectors<T> vs;
  vs.dim = dim;
  std::uint64_t total_rows = 0;  // live rows, as Lance's count_rows
  {
    auto b = ds.to_batch({.columns = {o.column}, .with_row_id = true});
    total_rows = std::uint64_t(b.num_rows());
    vs.values.reserve(std::size_t(b.num_rows()) * dim);
    gather(b, dim, metric, vs);
  }
  const std::size_t n = vs.rows();
  const std::size_t k = o.num_partitions.value_or(
      recommended_num_partitions(total_rows, o.target_partition_size.value_or(default_target_partition_size(o.type))));
  if (n == 0) throw invalid_input_error("column '" + o.column + "' has no vectors to index");
  if (k > n)
    throw invalid_input_error("cannot build " + std::to_string(k) + " partitions from " + std::to_string(n) +
                              " indexable vectors of column '" + o.column + "'");

  // Stage 1: IVF.
  kmeans_params kp;
  kp.max_iters = o.max_iters;
  kp.distance = metric;
  kp.seed = o.seed;
  kp.sample_rate = o.sample_rate;
  kp.on_progress = [&](const kmeans_progress& p) {
    report(o, build_stage::train_ivf, p.iteration, p.max_iters);
    return true;
  };
  using C = centroid_t<T>;
  kmeans_result<std::conditional_t<is_u8, std::uint8_t, C>> km;
  if constexpr (is_u8) km = train_kmodes(vs.values.data(), n, dim, k, kp, o.pool);
  else km = train_kmeans(vs.values.data(), n, dim, k, kp, o.pool);

  // Stage 3 part 1 (needed by residual PQ): assignment of every row.
  std::vector<std::uint32_t> part(n);
  using W = simd::work_t<T, std::conditional_t<is_u8, std::uint8_t, C>>;
  std::vector<W> dist(n);
  assign_partitions(km, vs.values.data(), n, part.data(), dist.data(), o.pool);

  // Stage 2: quantizer.
  report(o, build_stage::train_quantizer, 0, 1);
  encoded enc;
  const auto* cents = km.centroids.data();
  std::optional<pq::model<T>> pqm;
  std::optional<sq::model> sqm;
  std::optional<rabitq::model> rqm;
  if constexpr (!is_u8) {
    if (o.type == ivf_index_type::ivf_pq) {
      pq::params pp;
      pp.num_sub_vectors = m_sub;
      pp.num_bits = bits;
      pp.max_iters = o.max_iters;
      pp.sample_rate = o.sample_rate;
      pp.seed = o.seed;
      pqm = pq::train_for_ivf(vs.values.data(), n, dim, cents, k, metric, pp, o.pool);
      enc.params = pq::to_params(*pqm);
    } else if (o.type == ivf_index_type::ivf_sq) {
      sq::params sp;
      sp.num_bits = bits;
      sp.sample_rate = o.sample_rate;
      sp.seed = o.seed;
      sqm = sq::train(vs.values.data(), n, dim, sp, metric, o.pool);
      enc.params = sq::to_params(*sqm);
    } else if (o.type == ivf_index_type::ivf_rq) {
      rabitq::params rp;
      rp.seed = o.seed;
      rqm = rabitq::make<T>(dim, rp);
      enc.params = rabitq::to_params(*rqm);
    }
  }
  if (o.type == ivf_index_type::ivf_flat) enc.params = flat::to_params<T>(dim);
  enc.width = code_bytes(enc.params);
  report(o, build_stage::train_quantizer, 1, 1);

  // Stage 3: encode every row (assigned above).
  report(o, build_stage::shuffle, 0, n);
  double loss = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (part[i] != simd::no_index) loss += double(dist[i]);
  enc.codes.resize(n * enc.width);
  if (o.type == ivf_index_type::ivf_flat) {
    if constexpr (!is_u8) {
      if (metric == simd::distance_type::cosine) normalise_rows(vs.values, dim);
    }
    std::memcpy(enc.codes.data(), vs.values.data(), enc.codes.size());
  } else if constexpr (!is_u8) {
    if (pqm) {
      pq::encode_for_ivf(*pqm, vs.values.data(), n, metric, cents, k, part.data(), enc.codes.data(), o.pool);
    } else if (sqm) {
      sq::encode_for_ivf(*sqm, vs.values.data(), n, metric, enc.codes.data(), o.pool);
    } else if (rqm) {
      rabitq::encoded_rows er;
      rabitq::encode_for_ivf(*rqm, vs.values.data(), n, metric, cents, k, part.data(), er, o.pool);
      enc.codes = std::move(er.codes);
      enc.add = std::move(er.add_factors);
      enc.scale = std::move(er.scale_factors);
      enc.error = std::move(er.error_factors);
    }
  }
  report(o, build_stage::shuffle, n, n);

  // Group rows by partition (stable: rows keep their scan order within a partition).
  std::vector<std::size_t> start(k + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (part[i] < k) ++start[part[i] + 1];
  for (std::size_t p = 0; p < k; ++p) start[p + 1] += start[p];
  std::vector<std::size_t> order(start[k]);
  {
    auto at = start;
    for (std::size_t i = 0; i < n; ++i)
      if (part[i] < k) order[at[part[i]]++] = i;
  }

  // Stage 4: write the files.
  const auto uuid = pb::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const auto remove_dir = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  std::vector<pb::index_file> files;
  try {
    auto model = ivf_model::with_centroids(matrix::of(km.centroids, km.k, km.dimension), loss);
    files = write_index_directory(dir, ds.storage_version(), model, enc.params, metric, [&](auto& aux) {
      std::vector<std::uint64_t> ids;
      std::vector<std::uint8_t> codes;
      std::vector<float> add, scale, error;
      for (std::size_t p = 0; p < k; ++p) {
        const std::size_t b = start[p], e = start[p + 1], cnt = e - b;
        ids.resize(cnt);
        codes.resize(cnt * enc.width);
        const bool rq = !enc.add.empty();
        add.resize(rq ? cnt : 0), scale.resize(rq ? cnt : 0), error.resize(rq ? cnt : 0);
        for (std::size_t j = 0; j < cnt; ++j) {
          const std::size_t r = order[b + j];
          ids[j] = vs.ids[r];
          std::memcpy(codes.data() + j * enc.width, enc.codes.data() + r * enc.width, enc.width);
          if (rq) add[j] = enc.add[r], scale[j] = enc.scale[r], error[j] = enc.error[r];
        }
        partition_data pd{ids, bytes_view(codes.data(), codes.size()), add, scale, error, {}, {}, {}};
        aux.write_partition(pd);
        report(o, build_stage::merge_partitions, p + 1, k);
      }
    });

    // Register: only if nobody committed since the build began.
    const auto latest = dataset::load_latest(root);
    if (!latest || latest->version() != base.version())
      throw conflict_error("dataset '" + root + "' changed while the index was built (version " +
                           std::to_string(base.version()) + " -> " +
                           (latest ? std::to_string(latest->version()) : std::string("none")) + "); nothing committed");
    index_spec spec;
    spec.column = o.column;
    spec.name = index_name;
    spec.quantizer = enc.params;
    spec.distance = metric;
    spec.hints.ivf_sample_rate = o.sample_rate;
    spec.hints.ivf_max_iters = o.max_iters;
    if (o.type == ivf_index_type::ivf_pq) spec.hints.pq_sample_rate = o.sample_rate, spec.hints.pq_max_iters = o.max_iters;
    if (o.type == ivf_index_type::ivf_sq) spec.hints.sq_sample_rate = o.sample_rate;
    auto meta = make_index_metadata(base.manifest(), spec, uuid, files);
    commit_index_options co;
    co.replace = o.replace;
    const auto after = commit_index(root, base, meta, co);
    build_result r;
    r.index = after.file.indices.back();
    for (const auto& im : after.file.indices)
      if (im.uuid == uuid) r.index = im;
    r.version = after.version();
    r.num_partitions = k;
    r.rows_indexed = start[k];
    r.rows_skipped = vs.skipped + (n - start[k]);
    r.directory = dir;
    return r;
  } catch (...) {
    remove_dir();
    throw;
  }
}

}  // namespace builder_detail

// Builds the index over the latest version of the dataset at `root` and commits it as
// the next version. Errors: invalid_input_error (bad column / parameters / name taken
// without replace), conflict_error (the dataset changed meanwhile), io/corrupt errors
// of the dataset; in every case the dataset is left unchanged.
inline build_result build_ivf_index(const std::string& root, const build_options& o) {
  if (o.column.empty()) throw invalid_input_error("build_ivf_index: no column given");
  if (o.sample_rate == 0) throw invalid_input_error("sample_rate must be positive");
  const auto base = dataset::load_latest(root);
  if (!base) throw invalid_input_error("'" + root + "' is not a Lance dataset (no versions)");
  const auto ds = dataset::dataset::open(root, base->version());
  const std::string name = o.name.empty() ? o.column + "_idx" : o.name;
  if (!o.replace)
    for (const auto& im : base->file.indices)
      if (im.name == name)
        throw invalid_input_error("the dataset already has an index named '" + name +
                                  "' (replace it, or choose another name)");
  // The column: a fixed-size list of f16 / f32 / f64 (or uint8 for hamming).
  column_field_id(base->manifest(), o.column);  // names the columns when missing
  const auto schema = ds.to_batch({.columns = {o.column}, .limit = 0}).schema;
  const auto& t = *schema->fields.at(0).type;
  if (t.id != arrow::type_id::fixed_size_list || t.children.empty())
    throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                              ", not a fixed-size list of vectors");
  const std::size_t dim = std::size_t(t.list_size);
  if (dim == 0) throw invalid_input_error("column '" + o.column + "' has vectors of dimension 0");
  switch (t.children[0].type->id) {
    case arrow::type_id::float16:
      return builder_detail::build_typed<simd::f16>(root, *base, ds, o, name, dim);
    case arrow::type_id::float32: return builder_detail::build_typed<float>(root, *base, ds, o, name, dim);
    case arrow::type_id::float64: return builder_detail::build_typed<double>(root, *base, ds, o, name, dim);
    case arrow::type_id::uint8:
      return builder_detail::build_typed<std::uint8_t>(root, *base, ds, o, name, dim);
    default:
      throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                                ": vectors must be float16, float32, float64 (or uint8 for hamming)");
  }
}

}  // namespace lancet::index
