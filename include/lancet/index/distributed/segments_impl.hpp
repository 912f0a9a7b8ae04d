// Definitions of segments.hpp (see there).
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/index/build/ivf_builder_impl.hpp"
#include "lancet/index/distributed/model_file.hpp"
#include "lancet/index/distributed/segments.hpp"
#include "lancet/index/ivf/storage_reader.hpp"
#include "lancet/index/ivf/storage_writer.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

namespace detail {
inline constexpr std::uint32_t segment_json_version = 1;
}  // namespace detail


LANCET_INLINE std::vector<std::uint64_t> segment_metadata::fragment_ids() const {
  std::vector<std::uint64_t> out;
  for (auto f : dataset::index_fragment_bitmap(index_).to_vector()) out.push_back(f);
  return out;
}

LANCET_INLINE std::string segment_to_json(const segment_metadata& s) {
  using json::quote;
  const auto& im = detail::segment_access::stored(s);
  std::string j = "{\"lancet_segment\":" + std::to_string(detail::segment_json_version);
  j += ",\"uuid\":" + quote(im.uuid.to_string());
  j += ",\"name\":" + quote(im.name);
  j += ",\"column\":" + quote(s.column);
  j += ",\"fields\":[";
  for (std::size_t i = 0; i < im.fields.size(); ++i) j += (i ? "," : "") + std::to_string(im.fields[i]);
  j += "],\"fragment_ids\":[";
  const auto frags = s.fragment_ids();
  for (std::size_t i = 0; i < frags.size(); ++i) j += (i ? "," : "") + std::to_string(frags[i]);
  j += "],\"dataset_version\":" + std::to_string(im.dataset_version);
  j += ",\"index_type\":" + quote(s.index_type);
  j += ",\"distance_type\":" + quote(simd::distance_name(s.metric));
  if (im.index_version) j += ",\"index_version\":" + std::to_string(*im.index_version);
  if (im.created_at) j += ",\"created_at\":" + std::to_string(*im.created_at);
  j += ",\"files\":[";
  for (std::size_t i = 0; i < im.files.size(); ++i)
    j += std::string(i ? "," : "") + "{\"path\":" + quote(im.files[i].path) +
         ",\"size_bytes\":" + std::to_string(im.files[i].size_bytes) + "}";
  j += "]";
  if (im.index_details)
    j += ",\"index_details\":{\"type_url\":" + quote(im.index_details->type_url) +
         ",\"value\":" + quote(json::base64_encode(im.index_details->value)) + "}";
  j += ",\"model\":" + quote(s.model);
  j += ",\"rows_indexed\":" + std::to_string(s.rows_indexed);
  j += ",\"num_partitions\":" + std::to_string(s.num_partitions);
  return j + "}";
}

LANCET_INLINE segment_metadata segment_from_json(std::string_view text, const std::string& what) {
  using namespace json;
  const auto v = parse(text, what);
  if (v.k != value::kind::object || !v.find("lancet_segment"))
    throw invalid_input_error(what + ": not a lancet index segment (no \"lancet_segment\")");
  const auto ver = as_u32(member(v, "lancet_segment", what), "lancet_segment", what);
  if (ver != detail::segment_json_version)
    throw invalid_input_error(what + ": segment format " + std::to_string(ver) + ", this lancet reads " +
                              std::to_string(detail::segment_json_version));
  segment_metadata s;
  auto& im = detail::segment_access::stored(s);
  try {
    im.uuid = lancet::uuid::parse(as_string(member(v, "uuid", what), "uuid", what));
  } catch (const error& e) {
    throw corrupt_error(what + ": \"uuid\": " + e.what());
  }
  im.name = as_string(member(v, "name", what), "name", what);
  s.column = as_string(member(v, "column", what), "column", what);
  const auto& fields = member(v, "fields", what);
  if (fields.k != value::kind::array || fields.items.empty()) throw corrupt_error(what + ": \"fields\" is not a non-empty array");
  for (const auto& f : fields.items) im.fields.push_back(std::int32_t(as_u32(f, "fields", what)));
  const auto& frags = member(v, "fragment_ids", what);
  if (frags.k != value::kind::array) throw corrupt_error(what + ": \"fragment_ids\" is not an array");
  std::vector<std::uint32_t> ids;
  for (const auto& f : frags.items) ids.push_back(as_u32(f, "fragment_ids", what));
  dataset::set_index_fragment_bitmap(im, dataset::roaring_bitmap::from_values(ids));
  im.dataset_version = as_u64(member(v, "dataset_version", what), "dataset_version", what);
  s.index_type = as_string(member(v, "index_type", what), "index_type", what);
  s.metric = parse_distance(as_string(member(v, "distance_type", what), "distance_type", what));
  if (const auto* x = v.find("index_version")) im.index_version = std::int32_t(as_u32(*x, "index_version", what));
  if (const auto* x = v.find("created_at")) im.created_at = as_u64(*x, "created_at", what);
  const auto& files = member(v, "files", what);
  if (files.k != value::kind::array) throw corrupt_error(what + ": \"files\" is not an array");
  for (const auto& f : files.items)
    im.files.push_back({as_string(member(f, "path", what), "path", what), as_u64(member(f, "size_bytes", what), "size_bytes", what)});
  if (const auto* d = v.find("index_details")) {
    pb::any a;
    a.type_url = as_string(member(*d, "type_url", what), "type_url", what);
    if (const auto bad = json::base64_decode(as_string(member(*d, "value", what), "value", what), a.value))
      throw corrupt_error(what + ": \"index_details\" value: " + *bad);
    im.index_details = std::move(a);
  }
  s.model = as_string(member(v, "model", what), "model", what);
  s.rows_indexed = as_u64(member(v, "rows_indexed", what), "rows_indexed", what);
  s.num_partitions = std::size_t(as_u64(member(v, "num_partitions", what), "num_partitions", what));
  return s;
}

LANCET_INLINE segment_metadata build_segment(const std::string& root, build_options o, const trained_model& m,
                                             std::vector<std::uint64_t> fragment_ids) {
  refuse_distributed_hnsw(o.type);
  refuse_distributed_hnsw(m.type);
  if (o.column.empty()) o.column = m.column;
  if (o.column != m.column)
    throw invalid_input_error("the model was trained on column '" + m.column + "', not '" + o.column + "'");
  if (o.type != m.type)
    throw invalid_input_error("the model is for " + std::string(ivf_index_type_name(m.type)) + ", not " +
                              std::string(ivf_index_type_name(o.type)));
  if (o.metric != m.metric)
    throw invalid_input_error("the model was trained with " + std::string(simd::distance_name(m.metric)) +
                              " distance, not " + std::string(simd::distance_name(o.metric)));
  if (fragment_ids.empty()) throw invalid_input_error("a segment needs fragments (none given)");
  o.ivf_centroids = m.ivf.centroids;
  o.quantizer = m.ivf.quantizer;
  o.num_partitions.reset();
  o.target_partition_size.reset();
  o.fragment_ids = std::move(fragment_ids);
  o.commit = false;
  segment_metadata s;
  const auto r = detail::run_build(root, o, nullptr, &detail::segment_access::stored(s));
  s.column = o.column;
  s.index_type = std::string(ivf_index_type_name(m.type));
  s.metric = m.metric;
  s.model = model_fingerprint(m);
  s.rows_indexed = r.rows_indexed;
  s.num_partitions = r.num_partitions;
  return s;
}

namespace detail {

// The fingerprint of the model a segment's files hold (index.idx's centroids and
// metric, auxiliary.idx's quantizer): its JSON may say anything.
inline std::string files_fingerprint(const std::string& root, const segment_metadata& s) {
  const std::string dir = index_directory(root, s.uuid());
  const std::string index_file = dir + "/" + std::string(detail::index_file_name);
  if (!io::storage_for(index_file).exists(index_file))
    throw invalid_input_error(s.label() + " (index '" + s.name() + "'): its index file '" + index_file +
                              "' does not exist");
  const auto info = read_index_file(index_file);
  const auto st = open_storage(dir + "/" + std::string(detail::auxiliary_file_name));
  if (!info.ivf.centroids) throw corrupt_error(s.label() + ": index.idx has no centroids");
  return model_fingerprint(info.distance, *info.ivf.centroids, st.quantizer());
}

// Checks what segments of one index must share (name, fields, model, disjoint
// fragments, files that are theirs); returns their fragments.
inline std::set<std::uint64_t> check_group(const std::string& root, const std::vector<segment_metadata>& segs,
                                           const std::string& what) {
  if (segs.empty()) throw invalid_input_error(what + ": no segments given");
  const auto& first = segs.front();
  std::set<std::uint64_t> covered;
  std::set<std::string> uuids;
  for (const auto& s : segs) {
    if (!uuids.insert(s.uuid().to_string()).second) throw invalid_input_error(what + ": " + s.label() + " is given twice");
    if (s.name() != first.name())
      throw invalid_input_error(what + ": " + s.label() + " belongs to index '" + s.name() + "', " + first.label() +
                                " to '" + first.name() + "'");
    if (detail::segment_access::stored(s).fields != detail::segment_access::stored(first).fields || s.column != first.column)
      throw invalid_input_error(what + ": " + s.label() + " indexes column '" + s.column + "', " + first.label() +
                                " column '" + first.column + "'");
    if (s.model != first.model)
      throw invalid_input_error(what + ": " + s.label() + " was built with model " + s.model + ", " + first.label() +
                                " with model " + first.model + " (segments of one index share one trained model)");
    const auto on_disk = files_fingerprint(root, s);
    if (on_disk != s.model)
      throw invalid_input_error(what + ": " + s.label() + "'s files hold model " + on_disk + ", its metadata says " +
                                s.model);
    const auto frags = s.fragment_ids();
    if (frags.empty()) throw invalid_input_error(what + ": " + s.label() + " covers no fragment");
    for (auto f : frags)
      if (!covered.insert(f).second)
        throw invalid_input_error(what + ": fragment " + std::to_string(f) + " is covered by " + s.label() +
                                  " and by another segment (segments must cover disjoint fragments)");
  }
  return covered;
}

inline void append_rows(partition_contents& out, const partition_contents& in) {
  out.row_ids.insert(out.row_ids.end(), in.row_ids.begin(), in.row_ids.end());
  out.codes.append(in.codes.data(), in.codes.size());
  out.add_factors.insert(out.add_factors.end(), in.add_factors.begin(), in.add_factors.end());
  out.scale_factors.insert(out.scale_factors.end(), in.scale_factors.begin(), in.scale_factors.end());
  out.error_factors.insert(out.error_factors.end(), in.error_factors.begin(), in.error_factors.end());
  out.ex_codes.append(in.ex_codes.data(), in.ex_codes.size());
  out.add_factors_ex.insert(out.add_factors_ex.end(), in.add_factors_ex.begin(), in.add_factors_ex.end());
  out.scale_factors_ex.insert(out.scale_factors_ex.end(), in.scale_factors_ex.begin(), in.scale_factors_ex.end());
}

}  // namespace detail


LANCET_INLINE segment_metadata merge_segments(const std::string& root, const std::vector<segment_metadata>& segs) {
  const auto covered = detail::check_group(root, segs, "merge_segments");
  const auto latest = dataset::load_latest(root);
  if (!latest) dataset::throw_no_dataset(root);
  std::vector<storage_reader<io::any_source>> st;
  std::optional<index_file_info> info;
  std::optional<double> loss = 0.0;
  for (const auto& s : segs) {
    if (s.dataset_version() > latest->version())
      throw invalid_input_error("merge_segments: " + s.label() + " was built from version " +
                                std::to_string(s.dataset_version()) + ", newer than the dataset's " +
                                std::to_string(latest->version()));
    const std::string dir = index_directory(root, s.uuid());
    auto i = read_index_file(dir + "/" + std::string(detail::index_file_name));
    if (loss && i.ivf.loss) *loss += *i.ivf.loss;
    else loss.reset();
    if (!info) info = std::move(i);
    st.push_back(open_storage(dir + "/" + std::string(detail::auxiliary_file_name)));
    if (st.back().num_partitions() != info->ivf.num_partitions())
      throw corrupt_error("merge_segments: " + s.label() + " has " + std::to_string(st.back().num_partitions()) +
                          " partitions, the model " + std::to_string(info->ivf.num_partitions()));
  }
  const auto uuid = lancet::uuid::generate_v4();
  const std::string dir = index_directory(root, uuid);
  segment_metadata out = segs.front();
  std::uint64_t rows = 0;
  try {
    const auto model = ivf_model::with_centroids(*info->ivf.centroids, loss);
    const auto files = write_index_directory(dir, st.front().version(), model, st.front().quantizer(), info->distance,
                                             [&](auto& aux) {
                                               for (std::size_t p = 0; p < model.num_partitions(); ++p) {
                                                 partition_contents all;
                                                 for (const auto& r : st) detail::append_rows(all, r.read_partition(p));
                                                 rows += all.size();
                                                 aux.write_partition(all.view());
                                                 detail::release_free_memory();
                                               }
                                             });
    auto& im = detail::segment_access::stored(out);
    im.uuid = uuid;
    im.files = files;
    const std::vector<std::uint64_t> frags(covered.begin(), covered.end());
    dataset::set_index_fragment_bitmap(im, dataset::roaring_bitmap::from_values(frags));
    for (const auto& s : segs) im.dataset_version = std::min(im.dataset_version, s.dataset_version());
    im.created_at = detail::now_ms();
    out.rows_indexed = rows;
    out.num_partitions = model.num_partitions();
  } catch (...) {
    io::remove_all_quietly(dir);
    throw;
  }
  return out;
}

LANCET_INLINE commit_segments_result commit_segments(const std::string& root, const std::string& name,
                                                     const std::string& column, const std::vector<segment_metadata>& segs,
                                                     unsigned max_retries) {
  if (name.empty()) throw invalid_input_error("commit_segments: no index name given");
  const auto base = dataset::load_latest(root);
  if (!base) dataset::throw_no_dataset(root);
  const std::int32_t field = column_field_id(base->manifest(), column);
  for (const auto& s : segs) {
    if (s.name() != name)
      throw invalid_input_error("commit_segments: " + s.label() + " was built as index '" + s.name() + "', not '" + name +
                                "'");
    const auto& fields = detail::segment_access::stored(s).fields;
    if (fields != std::vector<std::int32_t>{field})
      throw invalid_input_error("commit_segments: " + s.label() + " indexes column '" + s.column + "' (field " +
                                (fields.empty() ? std::string("none") : std::to_string(fields[0])) + "), not '" + column +
                                "' (field " + std::to_string(field) + ")");
  }
  const auto covered = detail::check_group(root, segs, "commit_segments");
  std::set<std::uint64_t> present;
  for (const auto& f : base->manifest().fragments) present.insert(f.id);
  for (const auto& s : segs) {
    if (s.dataset_version() > base->version())
      throw invalid_input_error("commit_segments: " + s.label() + " was built from version " +
                                std::to_string(s.dataset_version()) + ", newer than the dataset's " +
                                std::to_string(base->version()));
    for (auto f : s.fragment_ids())
      if (!present.count(f))
        throw invalid_input_error("commit_segments: " + s.label() + " covers fragment " + std::to_string(f) +
                                  ", which version " + std::to_string(base->version()) + " of '" + root +
                                  "' does not have (deleted or rewritten since the segment was built)");
  }
  // Existing segments of the name: replaced when covered entirely, kept when disjoint.
  std::vector<pb::index_metadata> kept, removed, added;
  for (const auto& im : base->file.indices) {
    if (im.name != name) {
      kept.push_back(im);
      continue;
    }
    if (im.fields != std::vector<std::int32_t>{field})
      throw invalid_input_error("commit_segments: the dataset has an index '" + name + "' on another column");
    std::vector<std::uint64_t> uncovered, overlap;
    for (auto f : dataset::index_fragment_bitmap(im).to_vector()) {
      if (!present.count(f)) continue;  // a fragment gone since: it orphans nothing
      (covered.count(f) ? overlap : uncovered).push_back(f);
    }
    if (overlap.empty()) {
      kept.push_back(im);
      continue;
    }
    if (!uncovered.empty()) {
      std::string list;
      for (auto f : uncovered) list += (list.empty() ? "" : ", ") + std::to_string(f);
      throw invalid_input_error("commit_segments: the new segments of '" + name + "' would leave fragments " + list +
                                " of existing segment " + im.uuid.to_string() + " unindexed (cover all its fragments)");
    }
    removed.push_back(im);
  }
  for (const auto& s : segs) added.push_back(detail::segment_access::stored(s));
  commit_segments_result r;
  for (const auto& im : removed) r.replaced.push_back(describe_index(base->manifest(), im));
  dataset::default_sink_factory sinks;
  r.version = publish_index_change(root, *base, std::move(kept), std::move(added), removed, {}, sinks, max_retries,
                                   &r.retries)
                  .version();
  return r;
}

LANCET_INLINE bool remove_uncommitted_segment(const std::string& root, const segment_metadata& s) {
  if (root.empty()) throw invalid_input_error("cannot remove " + s.label() + ": the dataset path is empty");
  if (const auto latest = dataset::load_latest(root))
    for (const auto& im : latest->file.indices)
      if (im.uuid == s.uuid())
        throw invalid_input_error("cannot remove " + s.label() + " of index '" + im.name + "': version " +
                                  std::to_string(latest->version()) + " of '" + root + "' references it (committed)");
  const std::string dir = index_directory(root, s.uuid());
  const auto storage = io::storage_for(dir);
  const bool found = !storage.list(dir, true).empty();
  storage.remove_all(dir);
  return found;
}

}  // namespace lancet::index
