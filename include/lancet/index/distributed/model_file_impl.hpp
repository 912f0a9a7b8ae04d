// Definitions of model_file.hpp (see there).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/index/build/ivf_builder_impl.hpp"
#include "lancet/index/distributed/model_file.hpp"
#include "lancet/index/quantizer/params.hpp"
#include "lancet/index/quantizer/traits.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

namespace detail {

inline constexpr char model_magic[8] = {'L', 'N', 'C', 'T', 'I', 'V', 'F', 'M'};
inline constexpr std::uint32_t model_format_version = 1;

inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

struct model_out {
  std::string b;
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.append(raw, sizeof(T));
  }
  void str(std::string_view s) {
    put<std::uint64_t>(s.size());
    b.append(s);
  }
  void mat(const matrix& m) {
    put<std::uint8_t>(std::uint8_t(m.type));
    put<std::uint64_t>(m.rows);
    put<std::uint64_t>(m.cols);
    b.append(reinterpret_cast<const char*>(m.data.data()), m.byte_size());
  }
};

struct model_in {
  std::string_view b;
  std::size_t at = 0;
  const std::string& what;
  [[noreturn]] void fail(const std::string& why) const {
    throw corrupt_error(what + ": " + why + " (at byte " + std::to_string(at) + " of the model)");
  }
  std::string_view take(std::uint64_t n) {
    if (n > b.size() - at) fail("truncated: " + std::to_string(n) + " more bytes needed, " + std::to_string(b.size() - at) + " left");
    const auto s = b.substr(at, std::size_t(n));
    at += std::size_t(n);
    return s;
  }
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
  std::string str() { return std::string(take(get<std::uint64_t>())); }
  matrix mat() {
    matrix m;
    const auto t = get<std::uint8_t>();
    if (t > std::uint8_t(element_type::u8)) fail("unknown element type " + std::to_string(t));
    m.type = element_type(t);
    m.rows = get<std::uint64_t>();
    m.cols = get<std::uint64_t>();
    if (m.cols && m.rows > (b.size() - at) / m.cols) fail("a " + std::to_string(m.rows) + " x " + std::to_string(m.cols) + " matrix does not fit");
    const auto raw = take(m.byte_size());
    m.data.append(raw.data(), raw.size());
    return m;
  }
};

// The quantizer, every field (fingerprints hash this too).
inline void put_quantizer(model_out& o, const quantizer_params& q) {
  o.put<std::uint8_t>(std::uint8_t(q.index()));
  std::visit([&o](const auto& p) { traits_of<decltype(p)>::put_model(o, p); }, q);
}

inline quantizer_params get_quantizer(model_in& i) {
  std::optional<quantizer_params> q;
  if (!visit_quantizer_kind(i.get<std::uint8_t>(), [&]<class P>() { q = quantizer_traits<P>::get_model(i); }))
    i.fail("unknown quantizer kind");
  return std::move(*q);
}

inline std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[std::size_t(i)] = digits[v & 15];
  return s;
}

}  // namespace detail


LANCET_INLINE std::string model_fingerprint(simd::distance_type metric, const matrix& centroids, const quantizer_params& q) {
  detail::model_out o;
  o.put<std::uint8_t>(std::uint8_t(metric));
  o.mat(centroids);
  detail::put_quantizer(o, q);
  return detail::hex64(detail::fnv1a(o.b));
}

LANCET_INLINE std::string model_fingerprint(const trained_model& m) {
  return model_fingerprint(m.metric, m.ivf.centroids, m.ivf.quantizer);
}

LANCET_INLINE std::string serialize_model(const trained_model& m) {
  validate(m.ivf.quantizer);
  detail::model_out p;
  p.str(m.column);
  p.put<std::uint8_t>(std::uint8_t(m.type));
  p.put<std::uint8_t>(std::uint8_t(m.metric));
  p.mat(m.ivf.centroids);
  detail::put_quantizer(p, m.ivf.quantizer);
  detail::model_out o;
  o.b.append(detail::model_magic, sizeof detail::model_magic);
  o.put<std::uint32_t>(detail::model_format_version);
  o.put<std::uint64_t>(p.b.size());
  o.b += p.b;
  o.put<std::uint64_t>(detail::fnv1a(p.b));
  return std::move(o.b);
}

LANCET_INLINE trained_model parse_model(std::string_view bytes, const std::string& what) {
  using namespace detail;
  if (bytes.size() < sizeof model_magic || std::memcmp(bytes.data(), model_magic, sizeof model_magic) != 0)
    throw corrupt_error(what + ": not a lancet IVF model (no 'LNCTIVFM' header)");
  model_in h{bytes, sizeof model_magic, what};
  const auto version = h.get<std::uint32_t>();
  if (version != model_format_version)
    throw corrupt_error(what + ": model format version " + std::to_string(version) + ", this lancet reads " +
                        std::to_string(model_format_version));
  const auto n = h.get<std::uint64_t>();
  if (n > bytes.size() - h.at || bytes.size() - h.at - n != 8)
    throw corrupt_error(what + ": the model says " + std::to_string(n) + " payload bytes but holds " +
                        std::to_string(bytes.size() - h.at) + " after its header (truncated or extended)");
  const auto payload = bytes.substr(h.at, std::size_t(n));
  h.at += std::size_t(n);
  if (h.get<std::uint64_t>() != fnv1a(payload)) throw corrupt_error(what + ": checksum mismatch (the model is damaged)");
  model_in i{payload, 0, what};
  trained_model m;
  m.column = i.str();
  const auto t = i.get<std::uint8_t>();
  m.type = ivf_index_type(t);
  if (is_hnsw(m.type) || !visit_quantizer_type(m.type, []<class P>() {})) i.fail("unknown index type " + std::to_string(t));
  const auto d = i.get<std::uint8_t>();
  if (d > std::uint8_t(simd::distance_type::hamming)) i.fail("unknown distance type " + std::to_string(d));
  m.metric = simd::distance_type(d);
  m.ivf.centroids = i.mat();
  m.ivf.quantizer = get_quantizer(i);
  if (i.at != payload.size()) i.fail("trailing bytes");
  if (m.ivf.centroids.rows == 0 || m.ivf.centroids.cols == 0) throw corrupt_error(what + ": the model has no centroids");
  try {
    validate(m.ivf.quantizer);
  } catch (const error& e) {
    throw corrupt_error(what + ": " + e.what());
  }
  if (index_type_name(m.ivf.quantizer) != ivf_index_type_name(m.type))
    throw corrupt_error(what + ": an " + std::string(ivf_index_type_name(m.type)) + " model holds an " +
                        index_type_name(m.ivf.quantizer) + " quantizer");
  return m;
}

LANCET_INLINE void write_model_file(const std::string& path, const trained_model& m) {
  const auto bytes = serialize_model(m);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw io_error("cannot create '" + tmp + "'");
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f.flush()) throw io_error("cannot write '" + tmp + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // a reader never sees half a model
  if (ec) throw io_error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

LANCET_INLINE trained_model read_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw io_error("cannot open the model file '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_model(bytes, "model file '" + path + "'");
}

LANCET_INLINE void refuse_distributed_hnsw(ivf_index_type t) {
  if (is_hnsw(t))
    throw unsupported_error(std::string(ivf_index_type_name(t)) +
                            ": distributed builds (trained models, segments) support ivf_flat, ivf_pq, ivf_sq and "
                            "ivf_rq; build IVF_HNSW_* indexes in one process");
}

LANCET_INLINE trained_model train_model(const std::string& root, const build_options& o) {
  refuse_distributed_hnsw(o.type);
  trained_model m;
  m.column = o.column;
  m.type = o.type;
  m.metric = o.metric;
  m.ivf = detail::train_ivf_model(root, o);
  return m;
}

LANCET_INLINE std::size_t partitions_for(const build_options& o, std::uint64_t total_rows) {
  return o.num_partitions.value_or(recommended_num_partitions(
      total_rows, o.target_partition_size.value_or(default_target_partition_size(o.type))));
}

LANCET_INLINE std::size_t training_sample_rows(const build_options& o, std::size_t dim, std::uint64_t total_rows) {
  detail::check_parameters(o, dim);
  return detail::training_sample_size(o, partitions_for(o, total_rows), dim, sizeof(float));
}

LANCET_INLINE std::size_t float_vector_dimension(const dataset::dataset& ds, const std::string& column) {
  const auto schema = ds.to_batch({.columns = {column}, .limit = 0}).schema;
  const auto& t = *schema->fields.at(0).type;
  if (t.id != arrow::type_id::fixed_size_list || t.children.empty() || t.children[0].type->id != arrow::type_id::float32)
    throw invalid_input_error("column '" + column + "' is " + arrow::to_string(t) +
                              ": distributed training gathers fixed-size lists of float32");
  return std::size_t(t.list_size);
}

LANCET_INLINE std::vector<float> sample_vectors(const std::string& root, std::uint64_t version, const build_options& o,
                                                std::vector<std::uint64_t> fragment_ids, std::size_t count, std::uint64_t seed) {
  const auto ds = dataset::dataset::open(root, version);
  const std::size_t dim = float_vector_dimension(ds, o.column);
  if (fragment_ids.empty() || count == 0) return {};
  build_options so = o;
  so.fragment_ids = std::move(fragment_ids);
  std::uint64_t live = 0;
  const auto frags = detail::build_fragments(ds, so, live);
  detail::rng64 rng(seed ^ 0x5a3c9e1b7d24f681ull);
  const auto picked = detail::sample_indices(std::size_t(live), std::min<std::size_t>(count, std::size_t(live)), rng);
  const std::vector<std::uint64_t> pick(picked.begin(), picked.end());
  detail::vectors<float> vs;
  vs.dim = dim;
  vs.values.reserve(pick.size() * dim);
  auto sc = ds.scan(detail::column_scan<float>(so, frags, dim));
  std::uint64_t seen = 0;
  std::size_t at = 0;
  while (at < pick.size()) {
    auto b = sc.next();
    if (!b) break;
    detail::gather(*b, dim, o.metric, vs, &pick, seen, &at);
    seen += std::uint64_t(b->num_rows());
  }
  return std::move(vs.values);
}

LANCET_INLINE trained_model train_model_from_rows(const build_options& o, std::size_t dim, std::span<const float> rows,
                                                  std::uint64_t total_rows) {
  refuse_distributed_hnsw(o.type);
  if (o.metric == simd::distance_type::hamming) throw invalid_input_error("hamming indexes are trained on uint8 vectors");
  if (dim == 0 || rows.size() % dim) throw invalid_input_error("training rows do not split into vectors of dimension " + std::to_string(dim));
  detail::check_parameters(o, dim);
  const std::size_t n = rows.size() / dim;
  const std::size_t k = partitions_for(o, total_rows);
  if (n == 0) throw invalid_input_error("column '" + o.column + "' has no vectors to index");
  if (k > n)
    throw invalid_input_error("cannot build " + std::to_string(k) + " partitions from " + std::to_string(n) +
                              " sampled vectors of column '" + o.column + "'");
  auto e = detail::train_on_rows<float>(o, dim, rows.data(), n, k);
  trained_model m;
  m.column = o.column;
  m.type = o.type;
  m.metric = o.metric;
  m.ivf.centroids = matrix::of(e.km.centroids, e.km.k, e.km.dimension);
  m.ivf.quantizer = e.params;
  return m;
}

}  // namespace lancet::index
