// The definitions behind remap.hpp: rewriting an index directory with its row ids
// remapped (and its HNSW graphs kept or rebuilt: write_hnsw_index_file, which index
// optimisation uses too). Included by remap.hpp in header-only mode; in compiled mode
// the library defines the functions remap.hpp declares.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/parallel.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/hnsw/index_file.hpp"
#include "lancet/index/hnsw/partition_graphs.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/optimize/remap.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/ivf/storage_writer.hpp"
#include "lancet/index/scalar/bitmap_files.hpp"
#include "lancet/index/scalar/btree_files.hpp"
#include "lancet/index/scalar/scalar_index.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::index {

namespace detail {

inline bool is_vector_details(const pb::index_metadata& im) {
  return im.index_details && im.index_details->type_url == pb::index::vector_index_details::type_url;
}

}  // namespace detail

// Writes dir/index.idx of an IVF_HNSW_* index over dir/auxiliary.idx (written
// already, in file version v): partition p's graph is kept[p] when given, else built
// from its stored rows with `params` (seed + p, as the builder does), partitions in
// parallel on the pool. Returns the file's size.
inline std::uint64_t write_hnsw_index_file(const std::string& dir, file::format_version v, const ivf_model& model,
                                           simd::distance_type metric, const hnsw::build_params& params,
                                           std::vector<std::optional<hnsw::graph>> kept,
                                           boost::asio::thread_pool* pool = nullptr) {
  if (!model.centroids) throw invalid_input_error("an IVF_HNSW index needs its centroids");
  const auto storage = open_storage(dir + "/" + std::string(detail::auxiliary_file_name));
  const std::size_t k = storage.num_partitions();
  if (k != model.num_partitions())
    throw invalid_input_error("auxiliary.idx has " + std::to_string(k) + " partitions, the IVF model " +
                              std::to_string(model.num_partitions()));
  kept.resize(k);
  std::vector<hnsw::graph> graphs(k);
  std::mutex mu;  // the reader is not shared between threads
  const std::size_t dim = model.centroids->cols;
  parallel_for(pool, k, [&](std::size_t part) {
    if (kept[part]) {
      graphs[part] = std::move(*kept[part]);
      return;
    }
    partition_contents pc;
    {
      std::lock_guard<std::mutex> lock(mu);
      pc = storage.read_partition(part);
    }
    hnsw::build_params pp = params;
    pp.seed = params.seed + part;
    graphs[part] = hnsw::build_partition(storage.quantizer(), metric, pc, dim, pp);
  });
  std::uint64_t size = 0;
  with_index_file_version(v, [&]<class V>() {
    const std::string path = dir + "/" + std::string(detail::index_file_name);
    size = hnsw::write_index_file<V>(io::storage_for(path).create_sink(path), model,
                                     hnsw_index_type_name(storage.quantizer()), metric, graphs)
               .file_size;
  });
  return size;
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE hnsw::build_params recorded_hnsw_params(const index_file_info& info, const std::string& who) {
  hnsw::build_params p;
  if (info.sub_index_key != detail::hnsw_metadata_key) throw corrupt_error(who + ": index.idx has no lance:hnsw entries");
  using namespace json;
  for (const auto& text : info.sub_index_metadata) {
    if (text.empty()) continue;
    const auto v = parse(text, who + " lance:hnsw");
    const auto& pv = member(v, "params", who);
    p.m = as_u32(member(pv, "m", who), "m", who);
    p.ef_construction = as_u32(member(pv, "ef_construction", who), "ef_construction", who);
    p.max_level = std::uint16_t(as_u32(member(pv, "max_level", who), "max_level", who));
    if (const auto* pd = pv.find("prefetch_distance"); pd && pd->k != value::kind::null)
      p.prefetch_distance = as_u32(*pd, "prefetch_distance", who);
    p.validate(who);
    break;
  }
  return p;
}

LANCET_INLINE std::optional<std::string> remap_unsupported_reason(const std::string& root, const pb::index_metadata& im) {
  const std::string who = "index '" + im.name + "' (" + im.uuid.to_string() + ")";
  if (im.fields.size() != 1) return who + " covers " + std::to_string(im.fields.size()) + " fields; only single-column indexes are remapped";
  if (const auto kind = detail::scalar_kind(im)) {
    try {
      if (*kind == detail::scalar_index_kind::btree) (void)read_btree_lookup(index_directory(root, im.uuid));
      else (void)read_bitmap_lookup(index_directory(root, im.uuid));
    } catch (const error& e) {
      return who + ": " + e.what();
    }
    return std::nullopt;
  }
  if (!detail::is_vector_details(im))
    return who + " is not a vector or scalar index (" + (im.index_details ? im.index_details->type_url : std::string("no details")) +
           "); lancet remaps IVF vector indexes, BTREEs, BITMAPs and LABEL_LISTs";
  const auto details = pb::unpack_any<pb::index::vector_index_details>(*im.index_details);
  const std::string dir = index_directory(root, im.uuid);
  try {
    const auto info = read_index_file(dir + "/" + std::string(detail::index_file_name));
    const bool graphs = info.sub_index_key == detail::hnsw_metadata_key;
    if (info.sub_index_key != detail::flat_metadata_key && !graphs)
      return who + " has the sub-index '" + info.sub_index_key + "'; lancet remaps the flat and HNSW sub-indexes only";
    if (graphs != details.hnsw.has_value())
      return who + " is " + index_type_name(details) + " but index.idx holds the sub-index '" + info.sub_index_key + "'";
    if (!info.ivf.centroids) return who + ": index.idx has no centroids";
    if (graphs) recorded_hnsw_params(info, who);
  } catch (const error& e) {
    return who + ": " + e.what();
  }
  return std::nullopt;
}

LANCET_INLINE remapped_index remap_index_files(const std::string& root, const pb::index_metadata& im,
                                               const row_address_map& m, std::optional<lancet::uuid> new_uuid) {
  if (auto why = remap_unsupported_reason(root, im)) throw unsupported_error("cannot remap " + *why);
  remapped_index out;
  out.old_uuid = im.uuid;
  out.new_uuid = new_uuid ? *new_uuid : lancet::uuid::generate_v4();
  if (out.new_uuid == out.old_uuid)
    throw invalid_input_error("cannot remap index '" + im.name + "' onto its own uuid " + im.uuid.to_string());
  const std::string old_dir = index_directory(root, im.uuid);
  const std::string new_dir = index_directory(root, out.new_uuid);
  out.directory = new_dir;
  if (!io::storage_for(new_dir).list(new_dir, true).empty())
    throw invalid_input_error("cannot remap index '" + im.name + "': '" + new_dir + "' exists already");
  if (const auto kind = detail::scalar_kind(im)) {  // Lance records the type and its version
    out.transaction_details = pb::any{im.index_details->type_url, {}};
    out.transaction_index_version = *kind == detail::scalar_index_kind::label_list ? 1 : 0;
    try {
      out.files = *kind == detail::scalar_index_kind::btree ? remap_btree_files(old_dir, new_dir, m, out.stats)
                                                             : remap_bitmap_files(old_dir, new_dir, m, out.stats);
    } catch (...) {
      io::remove_all_quietly(new_dir);
      throw;
    }
    return out;
  }
  out.transaction_details = pb::any{std::string(pb::index::vector_index_details::type_url), {}};
  out.transaction_index_version = 1;
  const auto info = read_index_file(old_dir + "/" + std::string(detail::index_file_name));
  auto storage = open_storage(old_dir + "/" + std::string(detail::auxiliary_file_name));
  if (storage.num_partitions() != info.ivf.num_partitions())
    throw corrupt_error("index '" + im.name + "': auxiliary.idx has " + std::to_string(storage.num_partitions()) +
                        " partitions but index.idx " + std::to_string(info.ivf.num_partitions()));
  if (storage.distance() != info.distance)
    throw corrupt_error("index '" + im.name + "': index.idx and auxiliary.idx disagree on the distance type");
  // index.idx keeps the centroids and the loss; write_index_directory derives the
  // rest (sub-index offsets) from the partition count.
  const ivf_model model = ivf_model::with_centroids(*info.ivf.centroids, info.ivf.loss);
  const bool graphs = info.sub_index_key == detail::hnsw_metadata_key;
  std::vector<bool> lost_rows(storage.num_partitions(), false);  // HNSW: the graphs to rebuild
  try {
    out.files = write_index_directory(new_dir, storage.version(), model, storage.quantizer(), storage.distance(),
                                      [&](auto& aux) {
      const auto& q = storage.quantizer();
      const std::size_t w = code_bytes(q);
      const bool factors = has_factors(q);
      const std::size_t exw = ex_code_bytes(q);
      for (std::size_t p = 0; p < storage.num_partitions(); ++p) {
        const partition_contents in = storage.read_partition(p);
        out.stats.rows_before += in.size();
        partition_contents kept;
        kept.codes.resize(in.size() * w);
        if (exw) kept.ex_codes.resize(in.size() * exw);
        std::size_t n = 0;
        for (std::size_t i = 0; i < in.size(); ++i) {
          std::uint64_t id = in.row_ids[i];
          if (auto it = m.find(id); it != m.end()) {
            if (!it->second) {
              ++out.stats.rows_dropped;
              lost_rows[p] = true;
              continue;
            }
            if (*it->second != id) ++out.stats.rows_moved;
            id = *it->second;
          }
          kept.row_ids.push_back(id);
          if (w) std::memcpy(kept.codes.data() + n * w, in.codes.data() + i * w, w);
          if (factors) {
            kept.add_factors.push_back(in.add_factors.at(i));
            kept.scale_factors.push_back(in.scale_factors.at(i));
            kept.error_factors.push_back(in.error_factors.at(i));
            if (exw) {
              std::memcpy(kept.ex_codes.data() + n * exw, in.ex_codes.data() + i * exw, exw);
              kept.add_factors_ex.push_back(in.add_factors_ex.at(i));
              kept.scale_factors_ex.push_back(in.scale_factors_ex.at(i));
            }
          }
          ++n;
        }
        kept.codes.resize(n * w);
        if (exw) kept.ex_codes.resize(n * exw);
        out.stats.rows_after += n;
        aux.write_partition(kept.view());
      }
    });
    if (graphs) {
      // Graphs of partitions that lost no row still link the same positions.
      const std::string idx_path = old_dir + "/" + std::string(detail::index_file_name);
      const file::file_reader<io::any_source> reader{io::storage_for(idx_path).open_source(idx_path)};
      std::vector<std::optional<hnsw::graph>> kept(storage.num_partitions());
      for (std::size_t p = 0; p < kept.size(); ++p)
        if (!lost_rows[p]) kept[p] = hnsw::read_graph(reader, info, p, "index '" + im.name + "' " + idx_path);
      const auto params = recorded_hnsw_params(info, "index '" + im.name + "'");
      const auto size = write_hnsw_index_file(new_dir, storage.version(), model, storage.distance(), params, std::move(kept));
      for (auto& f : out.files)
        if (f.path == detail::index_file_name) f.size_bytes = size;
    }
  } catch (...) {
    io::remove_all_quietly(new_dir);
    throw;
  }
  out.num_partitions = info.ivf.num_partitions();
  return out;
}

#endif

}  // namespace lancet::index
