// Reading the two files of an IVF vector index directory (their layout:
// storage_writer.hpp): index.idx's index type, distance, IVF model and per-partition
// sub-index metadata, and auxiliary.idx's quantizer and partitions, with the codes
// back in row-major order. Anything that is not what Lance 12 writes is a
// corrupt_error naming the file.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/index/detail/storage_names.hpp"
#include "lancet/index/index_info.hpp"
#include "lancet/index/ivf/model.hpp"
#include "lancet/index/quantizer/code_layout.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/io/source.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/json/access.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

namespace detail {

inline std::string metadata_value(const arrow::metadata& md, std::string_view key, const std::string& what) {
  for (const auto& [k, v] : md)
    if (k == key) return v;
  throw corrupt_error(what + ": the schema metadata has no '" + std::string(key) + "'");
}

template <io::source Source>
ivf_model read_ivf(const file::file_reader<Source>& r, const std::string& what) {
  const auto text = metadata_value(r.schema().metadata, detail::ivf_metadata_key, what);
  std::uint64_t index = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), index);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size())
    throw corrupt_error(what + ": lance:ivf = '" + text + "' is not a global buffer index");
  if (index == 0 || index >= r.num_global_buffers())
    throw corrupt_error(what + ": lance:ivf names global buffer " + text + " but the file has " +
                        std::to_string(r.num_global_buffers()));
  const auto bytes = r.global_buffer(std::size_t(index));
  return ivf_model::from_pb(pb::decode<pb::index::ivf>(bytes.view()));
}

}  // namespace detail

template <io::source Source>
index_file_info read_index_file(Source source, const std::string& what = "index.idx") {
  file::file_reader<Source> r(std::move(source));
  index_file_info info;
  info.version = r.version();
  const auto& md = r.schema().metadata;
  const auto meta = json::parse(detail::metadata_value(md, detail::index_metadata_key, what), what + " lance:index");
  info.index_type = json::as_string(json::member(meta, "type", what), "type", what);
  info.distance = parse_distance(
      json::as_string(json::member(meta, "distance_type", what), "distance_type", what));
  info.ivf = detail::read_ivf(r, what);
  for (const auto& [k, v] : md) {
    if (k == detail::index_metadata_key || k == detail::ivf_metadata_key) continue;
    if (k.rfind("lance:", 0) == 0) {
      info.sub_index_key = k;
      info.sub_index_metadata = json::parse_string_list(v, what + " " + k);
    }
  }
  return info;
}
// index.idx at a path or URI, through its storage.
inline index_file_info read_index_file(const std::string& path) {
  return read_index_file(io::storage_for(path).open_source(path), "'" + path + "'");
}

// Reads auxiliary.idx: the quantizer, the partitions' offsets/lengths, and the rows
// of any partition (codes row-major again).
template <io::source Source>
class storage_reader {
 public:
  explicit storage_reader(Source source, std::string what = "auxiliary.idx")
      : r_(std::move(source)), what_(std::move(what)) {
    const auto& md = r_.schema().metadata;
    distance_ = parse_distance(detail::metadata_value(md, detail::distance_type_key, what_));
    ivf_ = detail::read_ivf(r_, what_);
    const auto list = json::parse_string_list(detail::metadata_value(md, detail::storage_metadata_key, what_),
                                                     what_ + " storage_metadata");
    if (list.empty()) throw corrupt_error(what_ + ": storage_metadata is an empty list");
    auto stored = read_quantizer_metadata(r_, list[0], what_);
    q_ = std::move(stored.params);
    lance_layout_ = stored.lance_layout;
    if (ivf_.num_rows() != r_.num_rows())
      throw corrupt_error(what_ + ": the IVF partitions hold " + std::to_string(ivf_.num_rows()) +
                          " rows but the file has " + std::to_string(r_.num_rows()));
  }

  file::format_version version() const noexcept { return r_.version(); }
  simd::distance_type distance() const noexcept { return distance_; }
  const quantizer_params& quantizer() const noexcept { return q_; }
  const ivf_model& ivf() const noexcept { return ivf_; }
  std::size_t num_partitions() const noexcept { return ivf_.lengths.size(); }
  std::uint64_t num_rows() const noexcept { return r_.num_rows(); }
  const file::file_reader<Source>& file() const noexcept { return r_; }

  partition_contents read_partition(std::size_t p) const {
    const auto [begin, end] = ivf_.row_range(p);
    const std::size_t n = std::size_t(end - begin);
    partition_contents out;
    if (n == 0) return out;
    const auto names = column_names();
    auto batch = r_.read({names, std::pair{begin, end}, std::nullopt});
    out.row_ids = u64_values(*batch.columns[0]);
    const std::size_t w = code_bytes(q_);
    const aligned_buffer stored = fsl_bytes(*batch.columns[1], w, names[1]);
    out.codes.resize(n * w);
    std::visit(
        [&](const auto& q) {
          using traits = traits_of<decltype(q)>;
          traits::load_codes(stored.data(), n, w, out.codes.data(), lance_layout_);
          if constexpr (traits::has_factors) {
            out.add_factors = f32_values(*batch.columns[2], names[2]);
            out.scale_factors = f32_values(*batch.columns[3], names[3]);
            out.error_factors = f32_values(*batch.columns[4], names[4]);
            if (q.num_bits > 1) {
              out.ex_codes = fsl_bytes(*batch.columns[5], q.ex_code_bytes, names[5]);
              out.add_factors_ex = f32_values(*batch.columns[6], names[6]);
              out.scale_factors_ex = f32_values(*batch.columns[7], names[7]);
            }
          }
        },
        q_);
    return out;
  }

 private:
  std::vector<std::string> column_names() const {
    std::vector<std::string> names;
    for (const auto& f : storage_schema(q_).fields) names.push_back(f.name);
    for (const auto& n : names)
      if (!r_.schema().field_by_name(n)) throw corrupt_error(what_ + ": missing the column '" + n + "'");
    return names;
  }

  static std::vector<std::uint64_t> u64_values(const arrow::array_data& a) {
    if (a.type->id != arrow::type_id::uint64) throw corrupt_error("the _rowid column is not uint64");
    const auto* v = a.values<std::uint64_t>();
    return std::vector<std::uint64_t>(v, v + a.length);
  }
  std::vector<float> f32_values(const arrow::array_data& a, const std::string& name) const {
    if (a.type->id != arrow::type_id::float32) throw corrupt_error(what_ + ": column '" + name + "' is not float32");
    const auto* v = a.values<float>();
    return std::vector<float>(v, v + a.length);
  }
  aligned_buffer fsl_bytes(const arrow::array_data& a, std::size_t w, const std::string& name) const {
    if (a.type->id != arrow::type_id::fixed_size_list || a.children.empty())
      throw corrupt_error(what_ + ": column '" + name + "' is not a fixed-size list");
    const auto& item = *a.children[0];
    const std::size_t esize = std::size_t(arrow::bit_width(*item.type) / 8);
    if (esize == 0 || std::size_t(a.type->list_size) * esize != w)
      throw corrupt_error(what_ + ": column '" + name + "' holds " + std::to_string(a.type->list_size) +
                          " values per row, expected " + std::to_string(w) + " bytes");
    aligned_buffer out;
    out.append(item.buffers.at(1).data() + (item.offset + a.offset * a.type->list_size) * std::int64_t(esize),
               std::size_t(a.length) * w);
    return out;
  }


  file::file_reader<Source> r_;
  std::string what_;
  simd::distance_type distance_ = simd::distance_type::l2;
  ivf_model ivf_;
  quantizer_params q_;
  bool lance_layout_ = true;  // codes as Lance 12 stores them (see stored_quantizer)
};

// auxiliary.idx at a path or URI, through its storage.
inline storage_reader<io::any_source> open_storage(const std::string& path) {
  return storage_reader<io::any_source>(io::storage_for(path).open_source(path), "'" + path + "'");
}

}  // namespace lancet::index
