// The definitions behind ivf_builder.hpp: the build's driver (build_typed runs the
// stages of build/stages.hpp for one element type, run_build checks the column and
// picks it) and the entry points. Included by ivf_builder.hpp in header-only mode; in
// compiled mode the library defines the entry points and a program includes this
// only for the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/build/options.hpp"
#include "lancet/index/build/stages.hpp"
#include "lancet/index/build/ivf_builder.hpp"
#include "lancet/index/registry.hpp"

namespace lancet::index {

namespace detail {

template <class T>
inline build_result build_typed(const std::string& root, const dataset::snapshot& base, const dataset::dataset& ds,
                                 const build_options& o, const std::string& index_name, std::size_t dim,
                                 const std::optional<hnsw::build_params>& graph, ivf_training* train_only = nullptr,
                                 pb::index_metadata* stored = nullptr) {
  constexpr bool is_u8 = std::is_same_v<T, std::uint8_t>;
  const auto metric = o.metric;
  if (is_u8 != (metric == simd::distance_type::hamming))
    throw invalid_input_error(is_u8 ? "column '" + o.column + "' holds uint8 vectors: only ivf_flat with hamming distance"
                                    : "hamming distance needs a column of uint8 vectors ('" + o.column + "' is not)");
  if (is_u8 && !supports_hamming(o.type))
    throw invalid_input_error(std::string(ivf_index_type_name(o.type)) + " does not support hamming distance");
  check_parameters(o, dim);
  const bool given_shuffle = !o.precomputed_shuffle_buffers.empty();
  if (given_shuffle && (!o.ivf_centroids || (!o.quantizer && quantizer_is_trained(o.type))))
    throw invalid_input_error("precomputed shuffle buffers need the IVF centroids and the quantizer they were built with");
  if (o.quantizer && !o.ivf_centroids && codes_need_centroids(o.type))
    throw invalid_input_error("a given " + std::string(ivf_index_type_name(o.type)) +
                              " quantizer needs the IVF centroids it was trained with");

  std::uint64_t live_rows = 0;
  const auto frags = build_fragments(ds, o, live_rows);
  const std::size_t k = o.ivf_centroids ? o.ivf_centroids->rows
                                        : o.num_partitions.value_or(recommended_num_partitions(
                                              live_rows, o.target_partition_size.value_or(
                                                             default_target_partition_size(o.type))));
  if (!o.ivf_centroids && k > live_rows)
    throw invalid_input_error("cannot build " + std::to_string(k) + " partitions from " + std::to_string(live_rows) +
                              " rows of column '" + o.column + "'");

  auto enc = train_stage<T>(ds, o, dim, frags, live_rows, k);
  release_free_memory();
  if (train_only) {
    train_only->centroids = matrix::of(enc.km.centroids, enc.km.k, enc.km.dimension);
    train_only->quantizer = enc.params;
    return {};
  }
  enc.precomputed = o.precomputed_partitions.get();

  const auto uuid = lancet::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  const std::string spill = spill_directory(dir, o.spill_directory, "lancet-shuffle-" + uuid.to_string());
  try {
    double loss = 0;
    std::uint64_t skipped = 0;
    std::vector<pb::index_file> files;
    std::uint64_t rows = 0;
    std::size_t runs = 0;
    {
      shuffler sh(enc.num_partitions(), enc.params, spill, o.memory_budget_bytes, o.pool);
      if (given_shuffle) {
        for (const auto& f : o.precomputed_shuffle_buffers) sh.add_buffer_file(f);
        report_build_progress(o, build_stage::shuffle, sh.rows(), sh.rows());
      } else {
        skipped = shuffle_stage(ds, o, enc, frags, live_rows, sh, loss);
      }
      release_free_memory();
      rows = sh.rows();
      if (rows == 0) throw invalid_input_error("column '" + o.column + "' has no vectors to index");
      files = write_stage(dir, ds.storage_version(), o, enc, loss, sh, graph);
      runs = sh.runs_spilled();
    }
    io::remove_all_quietly(spill);

    index_spec spec;
    spec.column = o.column;
    spec.name = index_name;
    spec.quantizer = enc.params;
    spec.distance = metric;
    spec.hints.ivf_sample_rate = o.sample_rate;
    spec.hints.ivf_max_iters = o.max_iters;
    if (graph) spec.hnsw = pb::index::vector_index_details::hnsw_params{graph->m, graph->ef_construction, graph->max_level};
    record_build_hints(o.type, o, spec.hints);
    if (o.fragment_ids) spec.fragment_ids = frags;
    auto meta = make_index_metadata(base.manifest(), spec, uuid, files);
    // Lance's optimize plans splits and joins around the target the index was built for.
    if (o.target_partition_size) persist_target_partition_size(meta, *o.target_partition_size);

    build_result r;
    r.num_partitions = enc.num_partitions();
    r.rows_indexed = rows;
    r.rows_skipped = skipped;
    r.directory = dir;
    r.shuffle_runs = runs;
    r.version = base.version();
    if (!o.commit) {
      r.index = describe_index(base.manifest(), meta);
      if (stored) *stored = std::move(meta);
      return r;
    }
    // Register on the version built from, rebased as Lance does on what other writers
    // committed meanwhile (rows appended since stay unindexed; a rewrite of indexed
    // fragments or an overwrite is commit_conflict_error).
    commit_index_options co;
    co.replace = o.replace;
    const auto after = commit_index(root, base, meta, co, dataset::default_sink_factory{}, &r.retries);
    const pb::index_metadata* committed = &after.file.indices.back();
    for (const auto& im : after.file.indices)
      if (im.uuid == uuid) committed = &im;
    r.index = describe_index(after.manifest(), *committed);
    if (stored) *stored = *committed;
    r.version = after.version();
    return r;
  } catch (...) {
    io::remove_all_quietly(spill);
    io::remove_all_quietly(dir);
    throw;
  }
}

// `stored`, when given, receives the index's IndexMetadata.
inline build_result run_build(const std::string& root, const build_options& given, ivf_training* train_only,
                              pb::index_metadata* stored = nullptr) {
  // IVF_HNSW_*: trained and stored as the base type, plus the graphs.
  build_options o = given;
  std::optional<hnsw::build_params> graph;
  if (is_hnsw(given.type)) {
    o.type = hnsw_base_type(given.type);
    if (given.metric == simd::distance_type::hamming)
      throw invalid_input_error(std::string(ivf_index_type_name(given.type)) + " does not support hamming distance");
    hnsw::build_params hp;
    hp.m = given.m;
    hp.ef_construction = given.ef_construction;
    hp.max_level = given.max_level;
    hp.seed = given.seed;
    hp.validate("index on column '" + given.column + "'");
    graph = hp;
  }
  if (o.column.empty()) throw invalid_input_error("build_ivf_index: no column given");
  if (o.sample_rate == 0) throw invalid_input_error("sample_rate must be positive");
  const auto base = dataset::load_latest(root);
  if (!base) dataset::throw_no_dataset(root);
  const auto ds = dataset::dataset::open(root, base->version());
  const std::string name = o.name.empty() ? o.column + "_idx" : o.name;
  if (!o.replace && o.commit && !train_only)
    for (const auto& im : base->file.indices)
      if (im.name == name)
        throw invalid_input_error("the dataset already has an index named '" + name +
                                  "' (replace it, or choose another name)");
  // The column: a fixed-size list of f16 / f32 / f64 (or uint8 for hamming).
  column_field_id(base->manifest(), o.column);  // names the columns when missing
  const auto schema = ds.to_batch({.columns = {o.column}, .limit = 0}).schema;
  const arrow::data_type* tp = schema->fields.at(0).type.get();
  if (tp->id == arrow::type_id::list && !tp->children.empty()) {
    // A multivector column: Lance indexes it with cosine distance only.
    if (o.metric != simd::distance_type::cosine)
      throw invalid_input_error("column '" + o.column + "' holds multivectors (" + arrow::to_string(*tp) +
                                "): Lance indexes them with cosine distance only, not " +
                                std::string(simd::distance_name(o.metric)));
    tp = tp->children[0].type.get();
  }
  const auto& t = *tp;
  if (t.id != arrow::type_id::fixed_size_list || t.children.empty())
    throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                              ", not a fixed-size list of vectors");
  const std::size_t dim = std::size_t(t.list_size);
  if (dim == 0) throw invalid_input_error("column '" + o.column + "' has vectors of dimension 0");
  switch (t.children[0].type->id) {
    case arrow::type_id::float16: return build_typed<simd::f16>(root, *base, ds, o, name, dim, graph, train_only, stored);
    case arrow::type_id::float32: return build_typed<float>(root, *base, ds, o, name, dim, graph, train_only, stored);
    case arrow::type_id::float64: return build_typed<double>(root, *base, ds, o, name, dim, graph, train_only, stored);
    case arrow::type_id::uint8: return build_typed<std::uint8_t>(root, *base, ds, o, name, dim, graph, train_only, stored);
    default:
      throw invalid_input_error("column '" + o.column + "' is " + arrow::to_string(t) +
                                ": vectors must be float16, float32, float64 (or uint8 for hamming)");
  }
}


// The IVF centroids and the quantizer build_ivf_index would train, without writing
// anything: what distributed/model_file.hpp's train_model shares with every segment.
inline ivf_training train_ivf_model(const std::string& root, const build_options& o) {
  ivf_training t;
  run_build(root, o, &t);
  return t;
}

}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE std::size_t pq_training_rows(const build_options& o, std::size_t dim, std::size_t element_bytes) {
  detail::check_parameters(o, dim);
  return quantizer_traits<pq_params>::training_rows(o, dim, element_bytes);
}

LANCET_INLINE build_result build_ivf_index(const std::string& root, const build_options& o) {
  return detail::run_build(root, o, nullptr);
}

#endif

}  // namespace lancet::index
