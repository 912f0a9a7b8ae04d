// Registering vector indexes in a dataset's manifest, and listing them.
//
//   auto snap = *dataset::load_latest(root);                        // the version built from
//   auto files = index::write_ivf_index_files(...) / your own writers into
//                index::index_directory(root, uuid)
//   auto meta = index::make_index_metadata(snap.manifest(), {.column = "vector", ...}, uuid, sizes);
//   index::commit_index(root, snap, meta);                          // a new version, atomically
//
// What Lance 12 records for a vector index (IndexMetadata, docs/lance12-indexes.md §5):
// uuid, fields = [field id of the column], name (default "{column}_idx"),
// dataset_version = the version the index was built from, fragment_bitmap = the
// fragments whose rows it holds (32-bit roaring, portable format), index_details =
// Any(/lance.index.pb.VectorIndexDetails: metric, compression, runtime hints),
// index_version (1; 2 for IVF_RQ), created_at (ms since the epoch), files =
// [auxiliary.idx, index.idx] with their sizes. The commit is Lance's CreateIndex
// transaction (new_indices, and the replaced index in removed_indices).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/index_info.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {


// {root}/_indices/{uuid}: a path, or a URI under the dataset's storage.
inline std::string index_directory(const std::string& root, const lancet::uuid& uuid) {
  return (std::filesystem::path(root) / detail::indices_dir_name / uuid.to_string()).string();
}

inline pb::index::metric_type metric_of(simd::distance_type d) {
  switch (d) {
    case simd::distance_type::l2: return pb::index::metric_type::l2;
    case simd::distance_type::cosine: return pb::index::metric_type::cosine;
    case simd::distance_type::dot: return pb::index::metric_type::dot;
    case simd::distance_type::hamming: return pb::index::metric_type::hamming;
  }
  return pb::index::metric_type::l2;
}
inline simd::distance_type distance_of(pb::index::metric_type m) {
  switch (m) {
    case pb::index::metric_type::l2: return simd::distance_type::l2;
    case pb::index::metric_type::cosine: return simd::distance_type::cosine;
    case pb::index::metric_type::dot: return simd::distance_type::dot;
    case pb::index::metric_type::hamming: return simd::distance_type::hamming;
  }
  return simd::distance_type::l2;
}

// The VectorIndexDetails Lance 12 records for an IVF index with the flat sub-index.
inline pb::index::vector_index_details make_vector_index_details(
    const quantizer_params& q, simd::distance_type d, const build_hints& h = {},
    const std::optional<pb::index::vector_index_details::hnsw_params>& hnsw = std::nullopt) {
  using D = pb::index::vector_index_details;
  D out;
  out.metric = metric_of(d);
  out.hnsw = hnsw;
  std::visit([&out](const auto& p) { out.compression = traits_of<decltype(p)>::compression(p); }, q);
  auto hint = [&](std::string k, std::uint64_t v) { out.runtime_hints.emplace_back(std::move(k), std::to_string(v)); };
  hint("lance.ivf.max_iters", h.ivf_max_iters);
  hint("lance.ivf.sample_rate", h.ivf_sample_rate);
  hint("lance.ivf.shuffle_partition_batches", h.shuffle_partition_batches);
  hint("lance.ivf.shuffle_partition_concurrency", h.shuffle_partition_concurrency);
  if (hnsw) hint("lance.hnsw.prefetch_distance", 2);
  std::visit([&](const auto& p) {
    for (auto& [k, v] : traits_of<decltype(p)>::runtime_hints(h)) hint(std::move(k), v);
  }, q);
  out.runtime_hints.emplace_back("lance.skip_transpose", "false");
  return out;
}

// Lance's index_version for a quantizer (IVF_RQ indexes are version 2).
inline std::int32_t index_version_of(const quantizer_params& q) noexcept {
  return std::visit([](const auto& p) { return traits_of<decltype(p)>::index_version; }, q);
}

// The field id of a column (a top-level name, or a dotted path to a nested field).
inline std::int32_t column_field_id(const pb::manifest& m, const std::string& column) {
  const auto s = dataset::manifest_schema(m);
  if (const auto* f = s.field_by_name(column)) return f->id;
  std::vector<std::string> path;
  std::size_t at = 0;
  for (;;) {
    const auto dot = column.find('.', at);
    path.push_back(column.substr(at, dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (const auto* f = s.field_by_path(path)) return f->id;
  std::string names;
  for (const auto& f : s.fields) names += (names.empty() ? "" : ", ") + f.name;
  throw invalid_input_error("the dataset has no column '" + column + "' (its columns: " + names + ")");
}

// The dotted name of a field id ("" when the schema has none).
inline std::string column_name_of(const schema::schema& s, std::int32_t id) { return schema::field_path(s, id); }

// The index's files and their sizes, as Lance lists them.
inline std::vector<pb::index_file> index_files_of(std::uint64_t auxiliary_bytes, std::uint64_t index_bytes) {
  return {{std::string(detail::auxiliary_file_name), auxiliary_bytes}, {std::string(detail::index_file_name), index_bytes}};
}
// The same, measured in the index directory's storage.
inline std::vector<pb::index_file> index_files_in(const std::string& index_dir) {
  const auto storage = io::storage_for(index_dir);
  const auto size_of = [&](std::string_view name) {
    const std::string path = index_dir + "/" + std::string(name);
    const auto n = storage.size(path);
    if (!n) throw not_found_error("index file '" + path + "' does not exist");
    return *n;
  };
  return index_files_of(size_of(detail::auxiliary_file_name), size_of(detail::index_file_name));
}

struct index_spec {
  std::string column;
  std::string name;  // default "{column}_idx"
  quantizer_params quantizer;
  simd::distance_type distance = simd::distance_type::l2;
  build_hints hints;
  // Fragments whose rows the index holds; default: every fragment of the manifest.
  std::optional<std::vector<std::uint64_t>> fragment_ids;
  // An IVF_HNSW_* index: its graph parameters (VectorIndexDetails field 3).
  std::optional<pb::index::vector_index_details::hnsw_params> hnsw;
};

namespace detail {

// Milliseconds since the epoch: IndexMetadata.created_at.
inline std::uint64_t now_ms() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
}

// The IndexMetadata of a new index named `name` on `column` over `m` (the manifest it
// was built from), covering `fragment_ids` (default: every fragment of `m`), created
// now; the caller sets its details and version.
inline pb::index_metadata new_index_metadata(const pb::manifest& m, const std::string& column, const std::string& name,
                                             const lancet::uuid& uuid,
                                             const std::optional<std::vector<std::uint64_t>>& fragment_ids,
                                             std::vector<pb::index_file> files) {
  pb::index_metadata out;
  out.uuid = uuid;
  out.fields = {column_field_id(m, column)};
  out.name = name;
  out.dataset_version = m.version;
  std::vector<std::uint64_t> frags;
  if (fragment_ids) {
    for (auto id : *fragment_ids) {
      const bool present =
          std::any_of(m.fragments.begin(), m.fragments.end(), [&](const pb::data_fragment& f) { return f.id == id; });
      if (!present)
        throw invalid_input_error("index '" + out.name + "': fragment " + std::to_string(id) +
                                  " is not in version " + std::to_string(m.version));
      frags.push_back(id);
    }
  } else {
    for (const auto& f : m.fragments) frags.push_back(f.id);
  }
  for (auto id : frags)
    if (id > UINT32_MAX) throw invalid_input_error("fragment id " + std::to_string(id) + " exceeds 32 bits");
  dataset::set_index_fragment_bitmap(out, dataset::roaring_bitmap::from_values(frags));
  out.created_at = now_ms();
  out.files = std::move(files);
  return out;
}

}  // namespace detail

// The IndexMetadata of a new index over `m` (the manifest it was built from).
inline pb::index_metadata make_index_metadata(const pb::manifest& m, const index_spec& spec, const lancet::uuid& uuid,
                                              std::vector<pb::index_file> files) {
  validate(spec.quantizer);
  auto out = detail::new_index_metadata(m, spec.column, spec.name.empty() ? spec.column + "_idx" : spec.name, uuid,
                                        spec.fragment_ids, std::move(files));
  out.index_details = pb::pack_any(make_vector_index_details(spec.quantizer, spec.distance, spec.hints, spec.hnsw));
  out.index_version = index_version_of(spec.quantizer);
  return out;
}

// ---------------------------------------------------------------------------------
// The target partition size an index was built for
// ---------------------------------------------------------------------------------

// VectorIndexDetails field 2 (uint64) holds it; Lance 12's optimize plans with it
// (verified: LanceDB 0.39's optimize() splits partitions of 240 rows of an index
// whose details say 4, and joins them under the default when the field is absent).
namespace detail {
inline constexpr std::uint32_t details_target_partition_size_field = 2;
}  // namespace detail

// The persisted target partition size (nullopt when absent or 0).
inline std::optional<std::uint64_t> persisted_target_partition_size(const pb::index_metadata& im) {
  if (!im.index_details || im.index_details->type_url != pb::index::vector_index_details::type_url)
    return std::nullopt;
  const std::string_view bytes(im.index_details->value);
  pb::reader r(bytes, 0, "VectorIndexDetails");
  std::optional<std::uint64_t> out;
  while (!r.done()) {
    const auto f = r.next();
    if (f.number == detail::details_target_partition_size_field && f.type == pb::wire_type::varint)
      out = f.scalar ? std::optional<std::uint64_t>(f.scalar) : std::nullopt;  // the last one wins
  }
  return out;
}

// Records `target` in a vector index's details (appended: protobuf's last value wins).
inline void persist_target_partition_size(pb::index_metadata& im, std::uint64_t target) {
  if (!im.index_details || im.index_details->type_url != pb::index::vector_index_details::type_url)
    throw invalid_input_error("index '" + im.name + "' has no vector index details to record a target partition size in");
  if (target == 0) throw invalid_input_error("target_partition_size must be positive");
  if (persisted_target_partition_size(im) == target) return;
  pb::writer w;
  w.uint64(detail::details_target_partition_size_field, target);
  im.index_details->value += w.bytes();
}

struct commit_index_options {
  // Replace an index of the same name (else a name clash is invalid_input_error).
  bool replace = false;
  dataset::publish_options publish;
  // Rebase on compatible commits of other writers (appends, deletes, other indexes) as
  // Lance does, up to this many times; the index keeps the fragments it was built on.
  unsigned max_retries = dataset::default_max_retries;
};

// Publishes Lance's CreateIndex operation built on `base`: its indexes are `kept`
// followed by `added`; the transaction records `added` and `removed`. When other
// writers committed since, their transactions are checked as Lance does (a Rewrite of
// fragments the new index covers, an Overwrite: commit_conflict_error) and the change
// is rebased on the newest version: its indexes minus `removed`, plus `added`.
template <class SinkFactory>
inline dataset::snapshot publish_index_change(const std::string& root, const dataset::snapshot& base,
                                              std::vector<pb::index_metadata> kept,
                                              std::vector<pb::index_metadata> added,
                                              const std::vector<pb::index_metadata>& removed,
                                              dataset::publish_options opts, SinkFactory& make_sink,
                                              unsigned max_retries = dataset::default_max_retries,
                                              unsigned* retries = nullptr) {
  if (auto s = dataset::dataset_naming_scheme(root)) opts.scheme = *s;
  auto build = [&](const dataset::snapshot& b, const pb::transaction& t) {
    const auto& p = b.manifest();
    dataset::pending_commit c;
    c.transaction = t;
    c.manifest = p;
    c.manifest.version = p.version + 1;
    if (b.version() == base.version()) {
      c.indices = kept;
    } else {
      for (const auto& im : b.file.indices) {
        const auto is = [&](const pb::index_metadata& x) { return x.uuid == im.uuid; };
        if (std::any_of(removed.begin(), removed.end(), is)) continue;
        // An index of the same name committed meanwhile: the names would clash.
        if (std::none_of(base.file.indices.begin(), base.file.indices.end(), is) &&
            std::any_of(added.begin(), added.end(), [&](const pb::index_metadata& a) { return a.name == im.name; }))
          throw dataset::commit_conflict_error("cannot commit index '" + im.name + "' on dataset '" + root +
                                                   "': another writer committed an index of that name (version " +
                                                   std::to_string(b.version()) + " or earlier); nothing was committed",
                                               b.version(), "CreateIndex", false);
        c.indices.push_back(im);
      }
    }
    for (const auto& n : added) c.indices.push_back(n);
    const bool stable = dataset::uses_stable_row_ids(p);
    dataset::finish_manifest(c.manifest, stable,
                                            stable ? std::optional<std::uint64_t>(p.next_row_id) : std::nullopt,
                                            c.transaction);
    return c;
  };
  dataset::commit_options co;
  co.publish = opts;
  co.max_retries = max_retries;
  auto out = dataset::commit_transaction(
      root, base, dataset::make_transaction(base.version(), pb::transaction::create_index{added, removed}), build, co,
      make_sink);
  if (retries) *retries = out.retries;
  return dataset::load_version(root, out.commit.manifest.version);
}

// Lance's CreateIndex commit on top of `base` (the version the index was built from):
// version base + 1 gets the new index (and loses a replaced one). Another writer
// having committed since is conflict_error, and nothing is changed: the index was
// built from rows that may no longer be the dataset's. The index files (written
// beforehand into index_directory(root, uuid)) are left in place on failure, for the
// caller to retry with or remove; Lance's cleanup also removes unreferenced ones.
// `retries`, when given, receives how many commits were lost to other writers (the
// version taken by the time of the exclusive rename, then rebased) before this one won.
// Commits made before the first attempt are rebased on without a retry.
template <class SinkFactory = dataset::default_sink_factory>
inline dataset::snapshot commit_index(const std::string& root, const dataset::snapshot& base,
                                      std::vector<pb::index_metadata> new_indices, const commit_index_options& o = {},
                                      SinkFactory make_sink = {}, unsigned* retries = nullptr) {
  const auto& p = base.manifest();
  if (new_indices.empty()) throw invalid_input_error("commit_index: no index to add");
  std::vector<pb::index_metadata> removed;
  std::vector<pb::index_metadata> kept = base.file.indices;
  for (const auto& n : new_indices) {
    if (std::count_if(new_indices.begin(), new_indices.end(),
                      [&](const pb::index_metadata& x) { return x.name == n.name; }) > 1) {
      // Several segments of one index share its name (Lance commits them together).
      if (std::any_of(new_indices.begin(), new_indices.end(),
                      [&](const pb::index_metadata& x) { return x.name == n.name && x.fields != n.fields; }))
        throw invalid_input_error("index segments named '" + n.name + "' cover different columns");
    }
    if (n.dataset_version > p.version)
      throw invalid_input_error("index '" + n.name + "' was built from version " + std::to_string(n.dataset_version) +
                                ", newer than " + std::to_string(p.version));
    if (n.fields.empty()) throw invalid_input_error("index '" + n.name + "' names no field");
    const auto s = dataset::manifest_schema(p);
    for (auto id : n.fields)
      if (!s.field_by_id(id))
        throw invalid_input_error("index '" + n.name + "' covers field id " + std::to_string(id) +
                                  ", which version " + std::to_string(p.version) + " does not have");
    for (auto frag : dataset::index_fragment_bitmap(n).to_vector())
      if (std::none_of(p.fragments.begin(), p.fragments.end(),
                       [&](const pb::data_fragment& f) { return f.id == frag; }))
        throw invalid_input_error("index '" + n.name + "' covers fragment " + std::to_string(frag) +
                                  ", which version " + std::to_string(p.version) + " does not have");
    for (auto it = kept.begin(); it != kept.end();) {
      if (it->name == n.name) {
        if (!o.replace)
          throw invalid_input_error("the dataset already has an index named '" + n.name +
                                    "' (replace it, or choose another name)");
        removed.push_back(*it);
        it = kept.erase(it);
      } else {
        ++it;
      }
    }
  }
  return publish_index_change(root, base, std::move(kept), std::move(new_indices), removed, o.publish, make_sink,
                              o.max_retries, retries);
}

template <class SinkFactory = dataset::default_sink_factory>
inline dataset::snapshot commit_index(const std::string& root, const dataset::snapshot& base, pb::index_metadata index,
                                      const commit_index_options& o = {}, SinkFactory make_sink = {},
                                      unsigned* retries = nullptr) {
  std::vector<pb::index_metadata> v;
  v.push_back(std::move(index));
  return commit_index(root, base, std::move(v), o, std::move(make_sink), retries);
}

// ---------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------

// An index of a version whose Lance schema is `s` (its columns are named from it).
inline vector_index_info describe_index(const schema::schema& s, const pb::index_metadata& im) {
  vector_index_info info;
  info.name = im.name;
  info.uuid = im.uuid;
  info.fields = im.fields;
  for (auto f : im.fields) info.columns.push_back(column_name_of(s, f));
  if (im.index_details && im.index_details->type_url == pb::index::vector_index_details::type_url) {
    const auto d = pb::unpack_any<pb::index::vector_index_details>(*im.index_details);
    info.index_type = index_type_name(d);
    info.distance = distance_of(d.metric);
    if (d.hnsw) info.hnsw = vector_index_info::hnsw_graph{d.hnsw->max_connections, d.hnsw->construction_ef, d.hnsw->max_level};
    std::visit(  // whichever compression case the quantizer records
        [&](const auto& c) {
          if constexpr (requires { c.num_bits; }) info.num_bits = c.num_bits;
          if constexpr (requires { c.num_sub_vectors; }) info.num_sub_vectors = c.num_sub_vectors;
        },
        d.compression);
    info.runtime_hints = d.runtime_hints;
    info.target_partition_size = persisted_target_partition_size(im);
  } else if (im.index_details) {
    const auto& url = im.index_details->type_url;
    if (url == detail::btree_details_type_url) info.index_type = "BTREE";
    else if (url == detail::bitmap_details_type_url) info.index_type = "BITMAP";
    else if (url == detail::label_list_details_type_url) info.index_type = "LABEL_LIST";
  }
  info.dataset_version = im.dataset_version;
  for (auto id : dataset::index_fragment_bitmap(im).to_vector()) info.fragment_ids.push_back(id);
  info.fragment_bitmap_present = !im.fragment_bitmap.empty();
  info.index_version = im.index_version;
  info.created_at = im.created_at;
  for (const auto& f : im.files) info.files.push_back({f.path, f.size_bytes});
  return info;
}

inline vector_index_info describe_index(const pb::manifest& m, const pb::index_metadata& im) {
  return describe_index(dataset::manifest_schema(m), im);
}

// Every index of a dataset version (vector indices with their type and metric).
inline std::vector<vector_index_info> list_indices(const schema::schema& s, const std::vector<pb::index_metadata>& indices) {
  std::vector<vector_index_info> out;
  for (const auto& im : indices) out.push_back(describe_index(s, im));
  return out;
}
inline std::vector<vector_index_info> list_indices(const dataset::snapshot& s) {
  return list_indices(dataset::manifest_schema(s.manifest()), s.file.indices);
}

}  // namespace lancet::index
