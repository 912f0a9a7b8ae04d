// Writing the two files of an IVF vector index directory (_indices/{uuid}/) exactly
// as Lance 12 lays them out (docs/lance12-indexes.md; storage_reader.hpp reads them):
//
//   index.idx       the sub-index: for IVF with the flat sub-index, zero rows of one
//                   `__flat_marker: uint64` column; global buffer 1 = the IVF
//                   protobuf (centroids tensor, loss, offsets/lengths of the sub-index
//                   rows: all zero); metadata `lance:index` = {"type":"IVF_PQ",
//                   "distance_type":"l2"}, `lance:ivf` = "1", `lance:flat` = one ""
//                   per partition.
//   auxiliary.idx   the quantized storage: `_rowid` + the code column(s), rows grouped
//                   by partition in partition order; global buffer 1 = the IVF
//                   protobuf with the partitions' offsets/lengths; further global
//                   buffers for the quantizer (PQ codebook tensor, RaBitQ rotation
//                   matrix); metadata `distance_type`, `lance:ivf` = "1" and
//                   `storage_metadata` = a JSON list holding the quantizer's JSON.
//
// Both files use the dataset's data storage version (2.0 datasets get 2.0 files,
// 2.2 datasets 2.2 files). Lance keeps schema metadata in a hash map, so its key order
// varies from file to file; lancet writes keys sorted.
//
//   index::storage_writer<file::v2_0, io::any_sink> aux(storage.create_sink(dir + "/auxiliary.idx"),
//                                                         index::pq_params{...}, distance_type::l2);
//   for (p : partitions) aux.write_partition({row_ids, codes});   // row-major codes
//   aux.finish();
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <type_traits>
#include <variant>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/sink.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/json/write.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

// Calls f.template operator()<Policy>() for the file version index files of a
// dataset with that storage version use: the storage version itself.
template <class F>
decltype(auto) with_index_file_version(file::format_version v, F&& f) {
  return file::with_version(v, std::forward<F>(f));
}

// `lance:index`: {"type":"IVF_PQ","distance_type":"l2"}.
inline std::string index_metadata_json(std::string_view index_type, simd::distance_type d) {
  return "{\"type\":" + json::quote(index_type) + ",\"distance_type\":" + json::quote(distance_type_name(d)) + "}";
}

// index.idx's column for the flat sub-index.
inline arrow::schema flat_index_schema() {
  arrow::schema s;
  s.fields.push_back(detail::plain_field(detail::flat_marker_column, arrow::uint64(), false));
  return s;
}

namespace detail {

inline arrow::array_ptr primitive_array(arrow::type_ptr t, aligned_buffer&& values, std::size_t n) {
  auto a = std::make_shared<arrow::array_data>();
  a->type = std::move(t);
  a->length = std::int64_t(n);
  a->null_count = 0;
  a->buffers = {shared_bytes(), shared_bytes(std::move(values))};
  return a;
}

inline arrow::array_ptr fsl_array(const arrow::field& f, aligned_buffer&& values, std::size_t n) {
  const auto& item = f.type->children.at(0);
  const std::size_t w = std::size_t(f.type->list_size);
  auto a = std::make_shared<arrow::array_data>();
  a->type = f.type;
  a->length = std::int64_t(n);
  a->null_count = 0;
  a->buffers = {shared_bytes()};
  a->children.push_back(primitive_array(item.type, std::move(values), n * w));
  return a;
}

template <class T>
inline aligned_buffer copy_span(std::span<const T> s) {
  aligned_buffer b;
  b.append(s.data(), s.size_bytes());
  return b;
}

// `what` holds `got` entries where `rows` rows of `per_row` entries are needed.
inline void check_count(std::size_t got, std::size_t rows, std::size_t per_row, std::string_view what,
                        std::size_t partition) {
  if (got != rows * per_row)
    throw invalid_input_error("partition " + std::to_string(partition) + ": " + std::string(what) + " has " +
                              std::to_string(got) + " entries; " + std::to_string(rows) + " rows need " +
                              std::to_string(rows * per_row));
}

}  // namespace detail

// Writes index.idx for an IVF index with the flat sub-index (the only sub-index of
// IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ): `ivf` supplies the centroids and the loss.
template <file::version_policy Version, class Sink>
file::finish_result write_index_file(Sink&& sink, const ivf_model& ivf, std::string_view index_type,
                                     simd::distance_type distance) {
  if (!ivf.centroids) throw invalid_input_error("index.idx needs the IVF centroids");
  if (ivf.centroids->type == element_type::u8 && distance != simd::distance_type::hamming)
    throw invalid_input_error("uint8 centroids are only used with hamming distance");
  const std::size_t k = ivf.num_partitions();
  file::file_writer<Version, Sink> w(std::forward<Sink>(sink), schema::from_arrow(flat_index_schema()));
  // The sub-index rows (none for the flat sub-index) start at 0 in every partition.
  ivf_model sub = ivf_model::with_centroids(*ivf.centroids, ivf.loss);
  for (std::size_t p = 0; p < k; ++p) sub.add_partition(0);
  const std::string pb = pb::encode(sub.to_pb());
  const auto buffer = w.add_global_buffer({reinterpret_cast<const std::uint8_t*>(pb.data()), pb.size()});
  w.add_schema_metadata(std::string(detail::flat_metadata_key), json::string_list(std::vector<std::string>(k)));
  w.add_schema_metadata(std::string(detail::index_metadata_key), index_metadata_json(index_type, distance));
  w.add_schema_metadata(std::string(detail::ivf_metadata_key), std::to_string(buffer));
  return w.finish();
}

// Writes auxiliary.idx: partitions in order (empty ones included), then finish().
// Global buffers and metadata are added at finish, after the rows, as Lance does.
template <file::version_policy Version, class Sink>
class storage_writer {
 public:
  storage_writer(Sink sink, quantizer_params q, simd::distance_type distance, file::writer_options options = {})
      : q_((validate(q), std::move(q))),
        distance_(distance),
        schema_(storage_schema(q_)),
        w_(std::forward<Sink>(sink), schema::from_arrow(schema_), std::move(options)) {
    // Hamming distance: flat uint8 vectors only.
    const bool hamming = distance == simd::distance_type::hamming;
    if (binary_rows(q_) != hamming) {
      const auto type = ivf_index_type_of(q_);
      throw invalid_input_error(!hamming               ? index_type_name(q_) + " over uint8 vectors needs hamming distance"
                                : supports_hamming(type) ? "hamming distance needs uint8 vectors"
                                                         : index_type_name(q_) + " does not support hamming distance");
    }
  }

  const quantizer_params& quantizer() const noexcept { return q_; }
  std::size_t partitions_written() const noexcept { return ivf_.lengths.size(); }
  std::uint64_t rows_written() const noexcept { return ivf_.num_rows(); }

  // From now on, stores the rows of each 4-bit l2 / cosine PQ partition nearest to
  // its centroid first, for Lance's 4-bit scan (quantizer/pq/row_order.hpp says why).
  // Other indexes keep the given order; without this call every partition does (a
  // file read and written again is then byte-identical). The builder calls it; a
  // rewrite of existing partitions (remap, optimize, segment merge) does not, since an
  // HNSW graph it keeps names rows by their position.
  void store_nearest_first() noexcept { nearest_first_ = true; }

  // The next partition's rows (codes row-major; see quantizer/params.hpp).
  void write_partition(const partition_data& given) {
    const std::size_t p = ivf_.lengths.size();
    if (given.size() > UINT32_MAX)
      throw invalid_input_error("partition " + std::to_string(p) + " has " + std::to_string(given.size()) +
                                " rows; Lance records at most 2^32 - 1 per partition");
    const std::size_t w = code_bytes(q_);
    detail::check_count(given.codes.size(), given.size(), w, "codes (bytes)", p);
    std::vector<std::uint64_t> ordered_ids;
    aligned_buffer ordered_codes;
    const partition_data rows = scan_ordered(given, ordered_ids, ordered_codes);
    const std::size_t n = rows.size();
    if (has_factors(q_)) {
      detail::check_count(rows.add_factors.size(), n, 1, "add_factors", p);
      detail::check_count(rows.scale_factors.size(), n, 1, "scale_factors", p);
      detail::check_count(rows.error_factors.size(), n, 1, "error_factors", p);
    }
    if (const std::size_t exw = ex_code_bytes(q_)) {
      detail::check_count(rows.ex_codes.size(), n, exw, "ex_codes (bytes)", p);
      detail::check_count(rows.add_factors_ex.size(), n, 1, "add_factors_ex", p);
      detail::check_count(rows.scale_factors_ex.size(), n, 1, "scale_factors_ex", p);
    }
    if (n == 0) {
      ivf_.add_partition(0);
      return;
    }
    std::vector<arrow::array_ptr> cols;
    cols.push_back(detail::primitive_array(arrow::uint64(), detail::copy_span(rows.row_ids), n));
    aligned_buffer codes;
    codes.resize(rows.codes.size());
    std::visit([&](const auto& q) { traits_of<decltype(q)>::store_codes(rows.codes.data(), n, w, codes.data()); }, q_);
    cols.push_back(detail::fsl_array(schema_.fields[1], std::move(codes), n));
    if (has_factors(q_)) {
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.add_factors), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.scale_factors), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.error_factors), n));
    }
    if (ex_code_bytes(q_)) {
      aligned_buffer ex;
      ex.append(rows.ex_codes);
      cols.push_back(detail::fsl_array(schema_.fields[5], std::move(ex), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.add_factors_ex), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.scale_factors_ex), n));
    }
    arrow::record_batch b;
    b.schema = std::make_shared<arrow::schema>(schema_);
    b.columns = std::move(cols);
    w_.write_batch(b);
    ivf_.add_partition(std::uint32_t(n));
  }

  // Adds the IVF protobuf, the quantizer's buffer and the metadata; closes the file.
  file::finish_result finish() {
    const std::string ivf_pb = pb::encode(ivf_.to_pb());
    const auto ivf_buffer = w_.add_global_buffer(as_view(ivf_pb));
    std::uint32_t q_buffer = 0;
    const auto tensor = std::visit([](const auto& q) { return traits_of<decltype(q)>::global_buffer(q); }, q_);
    if (tensor) q_buffer = w_.add_global_buffer(as_view(pb::encode(*tensor)));
    w_.add_schema_metadata(std::string(detail::distance_type_key), std::string(distance_type_name(distance_)));
    w_.add_schema_metadata(std::string(detail::ivf_metadata_key), std::to_string(ivf_buffer));
    w_.add_schema_metadata(std::string(detail::storage_metadata_key),
                           json::string_list({quantizer_metadata_json(q_, q_buffer)}));
    return w_.finish();
  }

  // The partitions' offsets and lengths so far.
  const ivf_model& storage_ivf() const noexcept { return ivf_; }

 private:
  static bytes_view as_view(const std::string& s) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
  }
  // `given` (its codes' size checked) in the order of store_nearest_first, the
  // reordered rows kept in ids and codes; or `given` itself.
  partition_data scan_ordered(const partition_data& given, std::vector<std::uint64_t>& ids,
                              aligned_buffer& codes) const {
    if (!nearest_first_) return given;
    const std::size_t n = given.size(), w = code_bytes(q_);
    const auto order = stored_row_order(q_, distance_, given.codes, n);
    if (order.empty()) return given;
    ids.resize(n);
    codes.resize(n * w);
    for (std::size_t j = 0; j < n; ++j) {
      ids[j] = given.row_ids[order[j]];
      std::memcpy(codes.data() + j * w, given.codes.data() + std::size_t(order[j]) * w, w);
    }
    partition_data out = given;
    out.row_ids = ids;
    out.codes = codes.view();
    return out;
  }

  quantizer_params q_;
  bool nearest_first_ = false;
  simd::distance_type distance_;
  arrow::schema schema_;
  file::file_writer<Version, Sink> w_;
  ivf_model ivf_;
};

// Writes both files of an IVF index into `dir` (a path or URI; use registry.hpp's
// index_directory) in file version `v`, through the directory's storage.
// `write_partitions(aux)` is called with the storage_writer and must write all
// ivf.num_partitions() partitions in order (take it as `auto&`: its type depends on
// v). A file appears only when finished (rename, or the completed upload), so a
// failure leaves no partial index file. Returns the files with their sizes, as
// IndexMetadata lists them.
template <class WritePartitions>
std::vector<pb::index_file> write_index_directory(const std::string& dir, file::format_version v, const ivf_model& ivf,
                                                  const quantizer_params& q, simd::distance_type distance,
                                                  WritePartitions&& write_partitions) {
  if (!ivf.centroids) throw invalid_input_error("an IVF index needs its centroids");
  const auto storage = io::storage_for(dir);
  const std::string aux_path = dir + "/" + std::string(detail::auxiliary_file_name);
  const std::string idx_path = dir + "/" + std::string(detail::index_file_name);
  std::uint64_t aux_size = 0, idx_size = 0;
  with_index_file_version(v, [&]<class V>() {
    storage_writer<V, io::any_sink> aux(storage.create_sink(aux_path), q, distance);
    write_partitions(aux);
    if (aux.partitions_written() != ivf.num_partitions())
      throw invalid_input_error("wrote " + std::to_string(aux.partitions_written()) + " partitions, the IVF model has " +
                                std::to_string(ivf.num_partitions()));
    aux_size = aux.finish().file_size;
    idx_size = write_index_file<V>(storage.create_sink(idx_path), ivf, index_type_name(q), distance).file_size;
  });
  return {{std::string(detail::auxiliary_file_name), aux_size}, {std::string(detail::index_file_name), idx_size}};
}

}  // namespace lancet::index
