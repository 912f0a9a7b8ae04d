// index.idx of an IVF_HNSW_* index, as LanceDB 0.39 (Lance 12) writes it:
// - columns __vector_id (uint32), __neighbors (list<uint32>), _distance (list<float>),
//   all nullable; per partition the rows of level 0 (every node, in node order), then
//   level 1, ...; partitions back to back; neighbours in the builder's order;
// - global buffer 1: the IVF protobuf with the centroids, the loss, and each
//   partition's first row / row count in this file;
// - schema metadata lance:index {"type","distance_type"}, lance:hnsw (a JSON list of
//   one JSON string per partition: {"entry_point","params":{"max_level","m",
//   "ef_construction","prefetch_distance"},"level_offsets"} with cumulative
//   level_offsets of max_level + 1 entries; "" for an empty partition) and lance:ivf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/hnsw/graph.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/ivf/storage_writer.hpp"

namespace lancet::index::hnsw {

inline arrow::schema index_schema() {
  arrow::schema s;
  s.fields.push_back({std::string(detail::hnsw_vector_id_column), arrow::uint32(), true, {}});
  s.fields.push_back({std::string(detail::hnsw_neighbors_column), arrow::list(arrow::uint32()), true, {}});
  s.fields.push_back({std::string(detail::hnsw_distance_column), arrow::list(arrow::float32()), true, {}});
  return s;
}

// One partition's lance:hnsw entry ("" when it has no nodes).
inline std::string metadata_json(const graph& g) {
  if (g.size() == 0) return {};
  std::string s = "{\"entry_point\":" + std::to_string(g.entry_point) + ",\"params\":{\"max_level\":" +
                  std::to_string(g.params.max_level) + ",\"m\":" + std::to_string(g.params.m) +
                  ",\"ef_construction\":" + std::to_string(g.params.ef_construction) +
                  ",\"prefetch_distance\":" + std::to_string(g.params.prefetch_distance) + "},\"level_offsets\":[";
  const auto off = g.level_offsets();
  for (std::size_t i = 0; i < off.size(); ++i) s += (i ? "," : "") + std::to_string(off[i]);
  return s + "]}";
}

}  // namespace lancet::index::hnsw

// Internals of the HNSW builder live in the index module's one detail namespace.
namespace lancet::index::detail {

template <class T>
inline arrow::array_ptr list_array(const arrow::type_ptr& t, const std::vector<std::int32_t>& offsets,
                                   const std::vector<T>& items) {
  auto a = std::make_shared<arrow::array_data>();
  a->type = t;
  a->length = std::int64_t(offsets.size() - 1);
  a->null_count = 0;
  aligned_buffer ob;
  ob.append(offsets.data(), offsets.size() * sizeof(std::int32_t));
  a->buffers = {shared_bytes(), shared_bytes(std::move(ob))};
  aligned_buffer ib;
  ib.append(items.data(), items.size() * sizeof(T));
  a->children.push_back(detail::primitive_array(t->children.at(0).type, std::move(ib), items.size()));
  return a;
}

}  // namespace lancet::index::detail

namespace lancet::index::hnsw {

// Writes index.idx one partition's graph at a time, in partition order (the graphs
// need not all be held at once): add() each of ivf's partitions, then finish().
template <file::version_policy Version, class Sink>
class index_file_writer {
 public:
  // wo.data_cache_bytes bounds the column data buffered before a page is cut (default
  // 8 MiB per column: the whole index.idx of a small index).
  index_file_writer(Sink&& sink, const ivf_model& ivf, std::string_view index_type, simd::distance_type distance,
                    file::writer_options wo = {})
      : schema_(index_schema()),
        w_(std::forward<Sink>(sink), schema::from_arrow(schema_), std::move(wo)),
        sub_(ivf.centroids ? ivf_model::with_centroids(*ivf.centroids, ivf.loss)
                           : throw invalid_input_error("index.idx needs the IVF centroids")),
        partitions_(ivf.num_partitions()),
        index_type_(index_type),
        distance_(distance) {}

  void add(const graph& g) {
    if (meta_.size() >= partitions_)
      throw invalid_input_error("HNSW index.idx: more graphs than the " + std::to_string(partitions_) + " partitions");
    std::vector<std::uint32_t> ids, nbrs;
    std::vector<float> dists;
    std::vector<std::int32_t> off{0};
    for (std::size_t level = 0; level < g.params.max_level; ++level)
      for (std::size_t n = 0; n < g.size(); ++n) {
        if (g.levels[n].size() <= level) continue;
        ids.push_back(std::uint32_t(n));
        for (const auto& e : g.levels[n][level]) nbrs.push_back(e.id), dists.push_back(e.distance);
        if (nbrs.size() > std::size_t(INT32_MAX)) throw invalid_input_error("HNSW graph of a partition is too large");
        off.push_back(std::int32_t(nbrs.size()));
      }
    sub_.add_partition(std::uint32_t(ids.size()));
    meta_.push_back(metadata_json(g));
    if (ids.empty()) return;
    arrow::record_batch b;
    b.schema = std::make_shared<arrow::schema>(schema_);
    aligned_buffer idb;
    idb.append(ids.data(), ids.size() * sizeof(std::uint32_t));
    b.columns.push_back(detail::primitive_array(arrow::uint32(), std::move(idb), ids.size()));
    b.columns.push_back(detail::list_array(schema_.fields[1].type, off, nbrs));
    b.columns.push_back(detail::list_array(schema_.fields[2].type, off, dists));
    w_.write_batch(b);
  }

  file::finish_result finish() {
    if (meta_.size() != partitions_)
      throw invalid_input_error("HNSW index.idx: " + std::to_string(meta_.size()) + " graphs for " +
                                std::to_string(partitions_) + " partitions");
    const std::string pb = pb::encode(sub_.to_pb());
    const auto buffer = w_.add_global_buffer({reinterpret_cast<const std::uint8_t*>(pb.data()), pb.size()});
    w_.add_schema_metadata(std::string(index::detail::index_metadata_key), index_metadata_json(index_type_, distance_));
    w_.add_schema_metadata(std::string(detail::hnsw_metadata_key), json::string_list(meta_));
    w_.add_schema_metadata(std::string(index::detail::ivf_metadata_key), std::to_string(buffer));
    return w_.finish();
  }

 private:
  arrow::schema schema_;
  file::file_writer<Version, Sink> w_;
  ivf_model sub_;
  std::size_t partitions_;
  std::string index_type_;
  simd::distance_type distance_;
  std::vector<std::string> meta_;
};

// Writes index.idx for graphs[p] of every partition p of `ivf` (centroids + loss).
template <file::version_policy Version, class Sink>
file::finish_result write_index_file(Sink&& sink, const ivf_model& ivf, std::string_view index_type,
                                     simd::distance_type distance, const std::vector<graph>& graphs) {
  if (!ivf.centroids) throw invalid_input_error("index.idx needs the IVF centroids");
  if (graphs.size() != ivf.num_partitions())
    throw invalid_input_error("HNSW index.idx: " + std::to_string(graphs.size()) + " graphs for " +
                              std::to_string(ivf.num_partitions()) + " partitions");
  index_file_writer<Version, Sink> w(std::forward<Sink>(sink), ivf, index_type, distance);
  for (const auto& g : graphs) w.add(g);
  return w.finish();
}

// Reads partition p's graph from index.idx (info: what read_index_file returned).
template <io::source Source>
graph read_graph(const file::file_reader<Source>& r, const index_file_info& info, std::size_t p,
                 const std::string& what = "index.idx") {
  const std::string who = what + " partition " + std::to_string(p);
  if (info.sub_index_key != detail::hnsw_metadata_key || p >= info.sub_index_metadata.size())
    throw corrupt_error(who + ": no lance:hnsw entry");
  graph g;
  const auto& text = info.sub_index_metadata[p];
  const auto [begin, end] = info.ivf.row_range(p);
  if (text.empty() || end == begin) return g;
  using namespace json;
  const auto v = parse(text, who + " lance:hnsw");
  g.entry_point = as_u32(member(v, "entry_point", who), "entry_point", who);
  const auto& pv = member(v, "params", who);
  g.params.max_level = std::uint16_t(as_u32(member(pv, "max_level", who), "max_level", who));
  g.params.m = as_u32(member(pv, "m", who), "m", who);
  g.params.ef_construction = as_u32(member(pv, "ef_construction", who), "ef_construction", who);
  if (const auto* pd = pv.find("prefetch_distance"); pd && pd->k != json::value::kind::null)
    g.params.prefetch_distance = as_u32(*pd, "prefetch_distance", who);
  const auto& lo = member(v, "level_offsets", who);
  std::vector<std::uint64_t> offsets;
  for (const auto& x : lo.items) offsets.push_back(as_u64(x, "level_offsets", who));
  if (offsets.size() < 2 || offsets.back() != end - begin)
    throw corrupt_error(who + ": level_offsets end at " + (offsets.empty() ? "nothing" : std::to_string(offsets.back())) +
                        " but the partition has " + std::to_string(end - begin) + " rows");
  const auto batch = r.read({{std::string(detail::hnsw_vector_id_column), std::string(detail::hnsw_neighbors_column), std::string(detail::hnsw_distance_column)},
                             std::pair{begin, end}, std::nullopt});
  const arrow::array_data& idc = *batch.columns[0];
  const arrow::array_data& nc = *batch.columns[1];
  const arrow::array_data& dc = *batch.columns[2];
  if (idc.type->id != arrow::type_id::uint32 || nc.type->id != arrow::type_id::list ||
      dc.type->id != arrow::type_id::list)
    throw corrupt_error(who + ": the graph columns are not uint32, list<uint32>, list<float>");
  const auto* ids = idc.values<std::uint32_t>();
  const auto* no = nc.buffers.at(1).as<std::int32_t>() + nc.offset;
  const auto* doff = dc.buffers.at(1).as<std::int32_t>() + dc.offset;
  const arrow::array_data& ni = *nc.children.at(0);
  const arrow::array_data& di = *dc.children.at(0);
  const auto* nv = ni.values<std::uint32_t>();
  const auto* dv = di.values<float>();
  const std::size_t level0 = std::size_t(offsets[1] - offsets[0]);
  g.levels.resize(level0);
  for (std::size_t level = 0; level + 1 < offsets.size(); ++level)
    for (std::uint64_t row = offsets[level]; row < offsets[level + 1]; ++row) {
      const std::uint32_t node = ids[row];
      if (node >= level0) throw corrupt_error(who + ": node " + std::to_string(node) + " beyond level 0's " +
                                              std::to_string(level0));
      auto& lv = g.levels[node];
      if (lv.size() != level) throw corrupt_error(who + ": node " + std::to_string(node) + " skips a level");
      auto& out = lv.emplace_back();
      const auto nb = no[row], ne = no[row + 1];
      if (doff[row + 1] - doff[row] != ne - nb)
        throw corrupt_error(who + ": node " + std::to_string(node) + " has neighbours and distances of different lengths");
      for (auto i = nb; i < ne; ++i) {
        const std::uint32_t id = nv[i];
        if (id >= level0) throw corrupt_error(who + ": neighbour " + std::to_string(id) + " is not a node");
        out.push_back(edge{id, dv[doff[row] + (i - nb)]});
      }
    }
  for (std::size_t n = 0; n < level0; ++n)
    if (g.levels[n].empty()) throw corrupt_error(who + ": node " + std::to_string(n) + " is missing from level 0");
  if (g.entry_point >= level0) throw corrupt_error(who + ": entry point " + std::to_string(g.entry_point) + " is not a node");
  return g;
}

}  // namespace lancet::index::hnsw
