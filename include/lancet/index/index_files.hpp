// The two files of an IVF vector index directory (_indices/{uuid}/), written and read
// exactly as Lance 12 lays them out (docs/lance12-indexes.md):
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
//   index::storage_writer<file::v2_0, io::file_sink> aux(io::file_sink(dir + "/auxiliary.idx"),
//                                                         index::pq_params{...}, distance_type::l2);
//   for (p : partitions) aux.write_partition({row_ids, codes});   // row-major codes
//   aux.finish();
//   index::write_index_file<file::v2_0>(io::file_sink(dir + "/index.idx"), ivf, "IVF_PQ", distance_type::l2);
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
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
#include "lancet/file/versions.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/index/ivf_model.hpp"
#include "lancet/index/quantizer_storage.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/sink.hpp"
#include "lancet/pb/index.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"
#include "lancet/simd/distance.hpp"

namespace lancet::index {

inline constexpr std::string_view index_file_name = "index.idx";
inline constexpr std::string_view auxiliary_file_name = "auxiliary.idx";

// Schema metadata keys.
inline constexpr std::string_view index_metadata_key = "lance:index";
inline constexpr std::string_view ivf_metadata_key = "lance:ivf";
inline constexpr std::string_view flat_metadata_key = "lance:flat";
inline constexpr std::string_view storage_metadata_key = "storage_metadata";
inline constexpr std::string_view distance_type_key = "distance_type";

// Column names.
inline constexpr std::string_view row_id_column = "_rowid";
inline constexpr std::string_view flat_marker_column = "__flat_marker";
inline constexpr std::string_view flat_column = "flat";
inline constexpr std::string_view pq_code_column = "__pq_code";
inline constexpr std::string_view sq_code_column = "__sq_code";
inline constexpr std::string_view rabit_code_column = "_rabit_codes";
inline constexpr std::string_view add_factors_column = "__add_factors";
inline constexpr std::string_view scale_factors_column = "__scale_factors";
inline constexpr std::string_view error_factors_column = "__error_factors";
inline constexpr std::string_view blocked_ex_codes_column = "__blocked_ex_codes";
inline constexpr std::string_view add_factors_ex_column = "__add_factors_ex";
inline constexpr std::string_view scale_factors_ex_column = "__scale_factors_ex";

// RaBitQ codes are packed in blocks of this many rows.
inline constexpr std::size_t rabit_block_rows = 32;

// Lance's index type names.
inline std::string index_type_name(const quantizer_params& q) {
  if (std::holds_alternative<flat_params>(q)) return "IVF_FLAT";
  if (std::holds_alternative<pq_params>(q)) return "IVF_PQ";
  if (std::holds_alternative<sq_params>(q)) return "IVF_SQ";
  return "IVF_RQ";
}

// The same with an HNSW sub-index ("IVF_HNSW_SQ", ...).
inline std::string hnsw_index_type_name(const quantizer_params& q) {
  return "IVF_HNSW_" + index_type_name(q).substr(4);
}

// Calls f.template operator()<Policy>() for the file version index files of a
// dataset with that storage version use: the storage version itself.
template <class F>
decltype(auto) with_index_file_version(file::format_version v, F&& f) {
  return file::with_version(v, std::forward<F>(f));
}

// ---------------------------------------------------------------------------------
// JSON as serde_json writes it (compact, struct fields in declaration order), and a
// small reader for the metadata strings.
// ---------------------------------------------------------------------------------

namespace json_detail {

inline void append_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

inline std::string quote(std::string_view s) {
  std::string out;
  append_string(out, s);
  return out;
}

// An f64 the way serde_json (ryu) prints it: shortest round-trip digits, decimal
// notation with ".0" for integers when the exponent allows, else "1.5e-7" / "1e30".
// Non-finite values are null.
inline std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, std::size_t(res.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const auto e_at = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_at))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::from_chars(sci.data() + e_at + (sci[e_at + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
  const int length = int(digits.size());
  const int kk = exp10 + 1;  // 10^(kk-1) <= |v| < 10^kk
  const int k = kk - length;
  if (k >= 0 && kk <= 16) {
    out += digits;
    out.append(std::size_t(k), '0');
    out += ".0";
  } else if (kk > 0 && kk <= 16) {
    out += digits.substr(0, std::size_t(kk));
    out += '.';
    out += digits.substr(std::size_t(kk));
  } else if (kk > -5 && kk <= 0) {
    out += "0.";
    out.append(std::size_t(-kk), '0');
    out += digits;
  } else {
    out += digits[0];
    if (length > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += std::to_string(kk - 1);
  }
  return out;
}

// A parsed JSON value; numbers keep their text.
struct value {
  enum class kind : std::uint8_t { null, boolean, number, string, array, object };
  kind k = kind::null;
  bool b = false;
  std::string text;
  std::vector<value> items;
  std::vector<std::pair<std::string, value>> members;

  // Declared here, the destructor defined after the class: clang (14) with libstdc++
  // needs value complete before destroying a vector of pair<string, value>.
  value() = default;
  value(const value&) = default;
  value(value&&) noexcept = default;
  value& operator=(const value&) = default;
  value& operator=(value&&) noexcept = default;
  ~value();

  const value* get(std::string_view key) const noexcept {
    for (const auto& [name, v] : members)
      if (name == key) return &v;
    return nullptr;
  }
};
inline value::~value() = default;

class parser {
 public:
  parser(std::string_view text, std::string what) : s_(text), what_(std::move(what)) {}

  value parse() {
    value v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw corrupt_error(what_ + ": invalid JSON at character " + std::to_string(pos_) + ": " + msg);
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view w) {
    if (s_.substr(pos_, w.size()) == w) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  std::uint32_t hex4() {
    if (s_.size() - pos_ < 4) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= std::uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= std::uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= std::uint32_t(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  std::string parse_string() {
    // the opening quote is consumed
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!literal("\\u")) fail("lone high surrogate");
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
  }
  value parse_value(int depth) {
    if (depth > 64) fail("nested too deeply");
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end");
    value v;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.k = value::kind::object;
      if (eat('}')) return v;
      do {
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name");
        ++pos_;
        std::string name = parse_string();
        expect(':');
        v.members.emplace_back(std::move(name), parse_value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      v.k = value::kind::array;
      if (eat(']')) return v;
      do v.items.push_back(parse_value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      ++pos_;
      v.k = value::kind::string;
      v.text = parse_string();
    } else if (literal("null")) {
      v.k = value::kind::null;
    } else if (literal("true")) {
      v.k = value::kind::boolean;
      v.b = true;
    } else if (literal("false")) {
      v.k = value::kind::boolean;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const std::size_t start = pos_;
      if (s_[pos_] == '-') ++pos_;
      while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                  s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-'))
        ++pos_;
      v.k = value::kind::number;
      v.text = std::string(s_.substr(start, pos_ - start));
      double d;
      auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), d);
      if (r.ec != std::errc() || r.ptr != v.text.data() + v.text.size()) fail("malformed number '" + v.text + "'");
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string what_;
};

inline value parse(std::string_view text, std::string what) { return parser(text, std::move(what)).parse(); }

// Typed member access; errors name the metadata and the member.
inline const value& member(const value& obj, std::string_view key, const std::string& what) {
  if (obj.k != value::kind::object) throw corrupt_error(what + ": expected a JSON object");
  const value* v = obj.get(key);
  if (!v) throw corrupt_error(what + ": missing \"" + std::string(key) + "\"");
  return *v;
}
inline std::uint64_t as_u64(const value& v, std::string_view key, const std::string& what) {
  std::uint64_t out = 0;
  if (v.k == value::kind::number) {
    auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
    if (r.ec == std::errc() && r.ptr == v.text.data() + v.text.size()) return out;
  }
  throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a non-negative integer");
}
inline std::uint32_t as_u32(const value& v, std::string_view key, const std::string& what) {
  const auto x = as_u64(v, key, what);
  if (x > UINT32_MAX) throw corrupt_error(what + ": \"" + std::string(key) + "\" = " + std::to_string(x) + " is too large");
  return std::uint32_t(x);
}
inline double as_f64(const value& v, std::string_view key, const std::string& what) {
  double out = 0;
  if (v.k == value::kind::number) {
    std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
    return out;
  }
  throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a number");
}
inline bool as_bool(const value& v, std::string_view key, const std::string& what) {
  if (v.k != value::kind::boolean) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a boolean");
  return v.b;
}
inline const std::string& as_string(const value& v, std::string_view key, const std::string& what) {
  if (v.k != value::kind::string) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not a string");
  return v.text;
}
inline std::vector<std::uint8_t> as_bytes(const value& v, std::string_view key, const std::string& what) {
  std::vector<std::uint8_t> out;
  if (v.k == value::kind::null) return out;
  if (v.k != value::kind::array) throw corrupt_error(what + ": \"" + std::string(key) + "\" is not an array");
  for (const auto& item : v.items) {
    const auto b = as_u64(item, key, what);
    if (b > 255) throw corrupt_error(what + ": \"" + std::string(key) + "\" holds " + std::to_string(b) + ", not a byte");
    out.push_back(std::uint8_t(b));
  }
  return out;
}

// A JSON array of strings (lance:flat, storage_metadata).
inline std::string string_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    append_string(out, items[i]);
  }
  return out + "]";
}
inline std::vector<std::string> parse_string_list(std::string_view text, const std::string& what) {
  const auto v = parse(text, what);
  if (v.k != value::kind::array) throw corrupt_error(what + ": expected a JSON array of strings");
  std::vector<std::string> out;
  for (const auto& item : v.items) {
    if (item.k != value::kind::string) throw corrupt_error(what + ": expected a JSON array of strings");
    out.push_back(item.text);
  }
  return out;
}

}  // namespace json_detail

// `lance:index`: {"type":"IVF_PQ","distance_type":"l2"}.
inline std::string index_metadata_json(std::string_view index_type, simd::distance_type d) {
  return "{\"type\":" + json_detail::quote(index_type) + ",\"distance_type\":" + json_detail::quote(distance_type_name(d)) +
         "}";
}

// The quantizer's JSON in storage_metadata. `buffer` is the global buffer holding
// the PQ codebook or the RaBitQ rotation matrix (ignored otherwise).
inline std::string quantizer_metadata_json(const quantizer_params& q, std::uint32_t buffer) {
  using json_detail::number;
  using json_detail::quote;
  if (const auto* f = std::get_if<flat_params>(&q)) return "{\"dim\":" + std::to_string(f->dimension) + "}";
  if (const auto* p = std::get_if<pq_params>(&q))
    return "{\"codebook_position\":" + std::to_string(buffer) + ",\"nbits\":" + std::to_string(p->num_bits) +
           ",\"num_sub_vectors\":" + std::to_string(p->num_sub_vectors) + ",\"dimension\":" +
           std::to_string(p->dimension) + ",\"codebook_tensor\":[],\"transposed\":true}";
  if (const auto* s = std::get_if<sq_params>(&q))
    return "{\"dim\":" + std::to_string(s->dimension) + ",\"num_bits\":" + std::to_string(s->num_bits) +
           ",\"bounds\":{\"start\":" + number(s->lower) + ",\"end\":" + number(s->upper) + "}}";
  const auto& r = std::get<rq_params>(q);
  std::string signs = "null";
  if (r.rotation_type == rq_params::rotation::fast) {
    signs = "[";
    for (std::size_t i = 0; i < r.fast_rotation_signs.size(); ++i)
      signs += (i ? "," : "") + std::to_string(r.fast_rotation_signs[i]);
    signs += "]";
  }
  return "{\"rotate_mat_position\":" +
         (r.rotation_type == rq_params::rotation::matrix ? std::to_string(buffer) : std::string("null")) +
         ",\"fast_rotation_signs\":" + signs + ",\"rotation_type\":" +
         quote(r.rotation_type == rq_params::rotation::fast ? "fast" : "matrix") + ",\"code_dim\":" +
         std::to_string(r.code_dim) + ",\"num_bits\":" + std::to_string(r.num_bits) +
         ",\"packed\":true,\"query_estimator\":" + quote(r.query_estimator) + "}";
}

// Checks that the parameters describe something Lance can store.
inline void validate(const quantizer_params& q) {
  if (const auto* f = std::get_if<flat_params>(&q)) {
    if (f->dimension == 0) throw invalid_input_error("IVF_FLAT: the dimension must be positive");
  } else if (const auto* p = std::get_if<pq_params>(&q)) {
    if (p->num_bits != 8 && p->num_bits != 4)
      throw invalid_input_error("IVF_PQ: num_bits must be 8 or 4, got " + std::to_string(p->num_bits));
    if (p->num_sub_vectors == 0 || p->dimension == 0 || p->dimension % p->num_sub_vectors)
      throw invalid_input_error("IVF_PQ: dimension " + std::to_string(p->dimension) +
                                " is not divisible by num_sub_vectors " + std::to_string(p->num_sub_vectors));
    if (p->num_bits == 4 && p->num_sub_vectors % 2)
      throw invalid_input_error("IVF_PQ: 4-bit codes need an even num_sub_vectors, got " +
                                std::to_string(p->num_sub_vectors));
    const std::size_t rows = std::size_t(p->num_sub_vectors) << p->num_bits;
    const std::size_t cols = p->dimension / p->num_sub_vectors;
    if (p->codebook.rows != rows || p->codebook.cols != cols)
      throw invalid_input_error("IVF_PQ: the codebook must be " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " ([num_sub_vectors][2^num_bits][dimension / num_sub_vectors]), got " +
                                std::to_string(p->codebook.rows) + " x " + std::to_string(p->codebook.cols));
    if (p->codebook.type == element_type::u8) throw invalid_input_error("IVF_PQ: the codebook must hold floats");
  } else if (const auto* s = std::get_if<sq_params>(&q)) {
    if (s->dimension == 0) throw invalid_input_error("IVF_SQ: the dimension must be positive");
    if (s->num_bits != 8) throw invalid_input_error("IVF_SQ: num_bits must be 8, got " + std::to_string(s->num_bits));
    if (!(s->lower <= s->upper))
      throw invalid_input_error("IVF_SQ: the bounds [" + std::to_string(s->lower) + ", " + std::to_string(s->upper) +
                                "] are empty or not numbers");
  } else {
    const auto& r = std::get<rq_params>(q);
    if (r.code_dim == 0 || r.code_dim % 8)
      throw invalid_input_error("IVF_RQ: code_dim must be a positive multiple of 8, got " + std::to_string(r.code_dim));
    if (r.num_bits == 0 || r.num_bits > 8)
      throw invalid_input_error("IVF_RQ: num_bits must be 1 to 8, got " + std::to_string(r.num_bits));
    if (r.num_bits > 1 && r.ex_code_bytes == 0)
      throw invalid_input_error("IVF_RQ: " + std::to_string(r.num_bits) + "-bit codes need ex_code_bytes");
    if (r.rotation_type == rq_params::rotation::matrix && !r.rotate_mat)
      throw invalid_input_error("IVF_RQ: a matrix rotation needs rotate_mat");
    if (r.rotation_type == rq_params::rotation::fast && r.fast_rotation_signs.empty())
      throw invalid_input_error("IVF_RQ: a fast rotation needs fast_rotation_signs");
  }
}

// ---------------------------------------------------------------------------------
// Code layouts
// ---------------------------------------------------------------------------------

// [n][w] -> [w][n] (Lance's transposed PQ codes; also the tail of packed RaBitQ codes).
inline void transpose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < w; ++c) out[c * n + r] = in[r * w + c];
}
inline void untranspose_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  for (std::size_t c = 0; c < w; ++c)
    for (std::size_t r = 0; r < n; ++r) out[r * w + c] = in[c * n + r];
}

namespace detail {
// Row order inside the 16 nibble pairs of a packed block (the SIMD shuffle layout).
inline constexpr std::size_t rabit_perm[16] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
}  // namespace detail

// RaBitQ codes of one partition ([n][w] row-major) to Lance's packed layout: each
// full block of 32 rows becomes w groups of 32 bytes; group i holds byte i of the 32
// rows as nibbles: byte j < 16 = low nibbles of rows perm[j] (low half) and
// perm[j] + 16 (high half); byte 16 + j = the same for the high nibbles. Rows after
// the last full block are transposed ([w][rest]).
inline void pack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t blocks = n / rabit_block_rows;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* rows = in + b * rabit_block_rows * w;
    std::uint8_t* dst = out + b * rabit_block_rows * w;
    for (std::size_t i = 0; i < w; ++i) {
      std::uint8_t* g = dst + i * rabit_block_rows;
      for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t a = rows[detail::rabit_perm[j] * w + i];
        const std::uint8_t c = rows[(detail::rabit_perm[j] + 16) * w + i];
        g[j] = std::uint8_t((a & 0x0F) | ((c & 0x0F) << 4));
        g[j + 16] = std::uint8_t((a >> 4) | (c & 0xF0));
      }
    }
  }
  const std::size_t done = blocks * rabit_block_rows;
  transpose_codes(in + done * w, n - done, w, out + done * w);
}
inline void unpack_rabit_codes(const std::uint8_t* in, std::size_t n, std::size_t w, std::uint8_t* out) {
  const std::size_t blocks = n / rabit_block_rows;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* src = in + b * rabit_block_rows * w;
    std::uint8_t* rows = out + b * rabit_block_rows * w;
    for (std::size_t i = 0; i < w; ++i) {
      const std::uint8_t* g = src + i * rabit_block_rows;
      for (std::size_t j = 0; j < 16; ++j) {
        const std::uint8_t lo = g[j], hi = g[j + 16];
        rows[detail::rabit_perm[j] * w + i] = std::uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
        rows[(detail::rabit_perm[j] + 16) * w + i] = std::uint8_t((lo >> 4) | (hi & 0xF0));
      }
    }
  }
  const std::size_t done = blocks * rabit_block_rows;
  untranspose_codes(in + done * w, n - done, w, out + done * w);
}

// ---------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------

namespace detail {

inline arrow::type_ptr element_arrow_type(element_type t) {
  switch (t) {
    case element_type::f16: return arrow::float16();
    case element_type::f32: return arrow::float32();
    case element_type::f64: return arrow::float64();
    case element_type::u8: return arrow::uint8();
  }
  return arrow::float32();
}

inline arrow::field fsl_field(std::string_view name, arrow::type_ptr item, std::size_t width, bool nullable) {
  return arrow::field{std::string(name), arrow::fixed_size_list(std::move(item), std::int32_t(width)), nullable, {}};
}

inline arrow::field plain_field(std::string_view name, arrow::type_ptr t, bool nullable) {
  return arrow::field{std::string(name), std::move(t), nullable, {}};
}

}  // namespace detail

// auxiliary.idx's columns, as Lance 12 declares them.
inline arrow::schema storage_schema(const quantizer_params& q) {
  arrow::schema s;
  s.fields.push_back(detail::plain_field(row_id_column, arrow::uint64(), true));
  if (const auto* f = std::get_if<flat_params>(&q)) {
    // Float vectors are declared non-nullable, binary (hamming) ones nullable, as Lance 12 does.
    s.fields.push_back(detail::fsl_field(flat_column, detail::element_arrow_type(f->element), f->dimension,
                                         f->element == element_type::u8));
  } else if (const auto* p = std::get_if<pq_params>(&q)) {
    s.fields.push_back(detail::fsl_field(pq_code_column, arrow::uint8(), p->code_bytes(), true));
  } else if (const auto* sq = std::get_if<sq_params>(&q)) {
    s.fields.push_back(detail::fsl_field(sq_code_column, arrow::uint8(), sq->dimension, true));
  } else {
    const auto& r = std::get<rq_params>(q);
    s.fields.push_back(detail::fsl_field(rabit_code_column, arrow::uint8(), r.code_bytes(), true));
    s.fields.push_back(detail::plain_field(add_factors_column, arrow::float32(), true));
    s.fields.push_back(detail::plain_field(scale_factors_column, arrow::float32(), true));
    s.fields.push_back(detail::plain_field(error_factors_column, arrow::float32(), true));
    if (r.num_bits > 1) {
      s.fields.push_back(detail::fsl_field(blocked_ex_codes_column, arrow::uint8(), r.ex_code_bytes, true));
      s.fields.push_back(detail::plain_field(add_factors_ex_column, arrow::float32(), true));
      s.fields.push_back(detail::plain_field(scale_factors_ex_column, arrow::float32(), true));
    }
  }
  return s;
}

// index.idx's column for the flat sub-index.
inline arrow::schema flat_index_schema() {
  arrow::schema s;
  s.fields.push_back(detail::plain_field(flat_marker_column, arrow::uint64(), false));
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

inline std::string_view as_text(const shared_bytes& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

}  // namespace detail

// ---------------------------------------------------------------------------------
// Writers
// ---------------------------------------------------------------------------------

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
  w.add_schema_metadata(std::string(flat_metadata_key), json_detail::string_list(std::vector<std::string>(k)));
  w.add_schema_metadata(std::string(index_metadata_key), index_metadata_json(index_type, distance));
  w.add_schema_metadata(std::string(ivf_metadata_key), std::to_string(buffer));
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
    if (const auto* f = std::get_if<flat_params>(&q_))
      if ((f->element == element_type::u8) != (distance == simd::distance_type::hamming))
        throw invalid_input_error(f->element == element_type::u8
                                      ? "IVF_FLAT over uint8 vectors needs hamming distance"
                                      : "hamming distance needs uint8 vectors");
    if (!std::holds_alternative<flat_params>(q_) && distance == simd::distance_type::hamming)
      throw invalid_input_error(index_type_name(q_) + " does not support hamming distance");
  }

  const quantizer_params& quantizer() const noexcept { return q_; }
  std::size_t partitions_written() const noexcept { return ivf_.lengths.size(); }
  std::uint64_t rows_written() const noexcept { return ivf_.num_rows(); }

  // The next partition's rows (codes row-major; see quantizer_storage.hpp).
  void write_partition(const partition_data& rows) {
    const std::size_t n = rows.size();
    const std::size_t p = ivf_.lengths.size();
    if (n > UINT32_MAX)
      throw invalid_input_error("partition " + std::to_string(p) + " has " + std::to_string(n) +
                                " rows; Lance records at most 2^32 - 1 per partition");
    const std::size_t w = code_bytes(q_);
    detail::check_count(rows.codes.size(), n, w, "codes (bytes)", p);
    const auto* rq = std::get_if<rq_params>(&q_);
    if (rq) {
      detail::check_count(rows.add_factors.size(), n, 1, "add_factors", p);
      detail::check_count(rows.scale_factors.size(), n, 1, "scale_factors", p);
      detail::check_count(rows.error_factors.size(), n, 1, "error_factors", p);
      if (rq->num_bits > 1) {
        detail::check_count(rows.ex_codes.size(), n, rq->ex_code_bytes, "ex_codes (bytes)", p);
        detail::check_count(rows.add_factors_ex.size(), n, 1, "add_factors_ex", p);
        detail::check_count(rows.scale_factors_ex.size(), n, 1, "scale_factors_ex", p);
      }
    }
    if (n == 0) {
      ivf_.add_partition(0);
      return;
    }
    std::vector<arrow::array_ptr> cols;
    cols.push_back(detail::primitive_array(arrow::uint64(), detail::copy_span(rows.row_ids), n));
    aligned_buffer codes;
    codes.resize(rows.codes.size());
    if (std::holds_alternative<pq_params>(q_)) transpose_codes(rows.codes.data(), n, w, codes.data());
    else if (rq) pack_rabit_codes(rows.codes.data(), n, w, codes.data());
    else std::memcpy(codes.data(), rows.codes.data(), rows.codes.size());
    cols.push_back(detail::fsl_array(schema_.fields[1], std::move(codes), n));
    if (rq) {
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.add_factors), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.scale_factors), n));
      cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.error_factors), n));
      if (rq->num_bits > 1) {
        aligned_buffer ex;
        ex.append(rows.ex_codes);
        cols.push_back(detail::fsl_array(schema_.fields[5], std::move(ex), n));
        cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.add_factors_ex), n));
        cols.push_back(detail::primitive_array(arrow::float32(), detail::copy_span(rows.scale_factors_ex), n));
      }
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
    if (const auto* p = std::get_if<pq_params>(&q_)) {
      // Lance's tensor of the codebook has shape [2^bits, dimension].
      pb::index::tensor t = to_tensor(p->codebook);
      t.shape = {std::uint32_t(1) << p->num_bits, p->dimension};
      q_buffer = w_.add_global_buffer(as_view(pb::encode(t)));
    } else if (const auto* r = std::get_if<rq_params>(&q_); r && r->rotation_type == rq_params::rotation::matrix) {
      q_buffer = w_.add_global_buffer(as_view(pb::encode(to_tensor(*r->rotate_mat))));
    }
    w_.add_schema_metadata(std::string(distance_type_key), std::string(distance_type_name(distance_)));
    w_.add_schema_metadata(std::string(ivf_metadata_key), std::to_string(ivf_buffer));
    w_.add_schema_metadata(std::string(storage_metadata_key),
                           json_detail::string_list({quantizer_metadata_json(q_, q_buffer)}));
    return w_.finish();
  }

  // The partitions' offsets and lengths so far.
  const ivf_model& storage_ivf() const noexcept { return ivf_; }

 private:
  static bytes_view as_view(const std::string& s) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
  }
  quantizer_params q_;
  simd::distance_type distance_;
  arrow::schema schema_;
  file::file_writer<Version, Sink> w_;
  ivf_model ivf_;
};

// Writes both files of an IVF index into `dir` (created when missing; use
// registry.hpp's index_directory) in file version `v`. `write_partitions(aux)` is
// called with the storage_writer and must write all ivf.num_partitions() partitions
// in order (take it as `auto&`: its type depends on v). Files are published by
// rename, so a failure leaves no partial index file. Returns the files with their
// sizes, as IndexMetadata lists them.
template <class WritePartitions>
std::vector<pb::index_file> write_index_directory(const std::string& dir, file::format_version v, const ivf_model& ivf,
                                                  const quantizer_params& q, simd::distance_type distance,
                                                  WritePartitions&& write_partitions) {
  if (!ivf.centroids) throw invalid_input_error("an IVF index needs its centroids");
  io::make_directories(dir);
  const std::string aux_path = dir + "/" + std::string(auxiliary_file_name);
  const std::string idx_path = dir + "/" + std::string(index_file_name);
  std::uint64_t aux_size = 0, idx_size = 0;
  with_index_file_version(v, [&]<class V>() {
    storage_writer<V, io::file_sink> aux(io::file_sink(aux_path), q, distance);
    write_partitions(aux);
    if (aux.partitions_written() != ivf.num_partitions())
      throw invalid_input_error("wrote " + std::to_string(aux.partitions_written()) + " partitions, the IVF model has " +
                                std::to_string(ivf.num_partitions()));
    aux_size = aux.finish().file_size;
    idx_size = write_index_file<V>(io::file_sink(idx_path), ivf, index_type_name(q), distance).file_size;
  });
  return {{std::string(auxiliary_file_name), aux_size}, {std::string(index_file_name), idx_size}};
}

// ---------------------------------------------------------------------------------
// Readers
// ---------------------------------------------------------------------------------

// What index.idx says.
struct index_file_info {
  file::format_version version = file::format_version::v2_0;
  std::string index_type;  // "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_SQ", ...
  simd::distance_type distance = simd::distance_type::l2;
  ivf_model ivf;                              // centroids, loss, sub-index offsets/lengths
  std::string sub_index_key;                  // "lance:flat" (or "lance:hnsw")
  std::vector<std::string> sub_index_metadata;  // one entry per partition
};

namespace detail {

inline std::string metadata_value(const arrow::metadata& md, std::string_view key, const std::string& what) {
  for (const auto& [k, v] : md)
    if (k == key) return v;
  throw corrupt_error(what + ": the schema metadata has no '" + std::string(key) + "'");
}

template <io::source Source>
ivf_model read_ivf(const file::file_reader<Source>& r, const std::string& what) {
  const auto text = metadata_value(r.schema().metadata, ivf_metadata_key, what);
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
  const auto meta = json_detail::parse(detail::metadata_value(md, index_metadata_key, what), what + " lance:index");
  info.index_type = json_detail::as_string(json_detail::member(meta, "type", what), "type", what);
  info.distance = parse_distance(
      json_detail::as_string(json_detail::member(meta, "distance_type", what), "distance_type", what));
  info.ivf = detail::read_ivf(r, what);
  for (const auto& [k, v] : md) {
    if (k == index_metadata_key || k == ivf_metadata_key) continue;
    if (k.rfind("lance:", 0) == 0) {
      info.sub_index_key = k;
      info.sub_index_metadata = json_detail::parse_string_list(v, what + " " + k);
    }
  }
  return info;
}
inline index_file_info read_index_file(const std::string& path) {
  return read_index_file(io::file_source(path), "'" + path + "'");
}

// Reads auxiliary.idx: the quantizer, the partitions' offsets/lengths, and the rows
// of any partition (codes row-major again).
template <io::source Source>
class storage_reader {
 public:
  explicit storage_reader(Source source, std::string what = "auxiliary.idx")
      : r_(std::move(source)), what_(std::move(what)) {
    const auto& md = r_.schema().metadata;
    distance_ = parse_distance(detail::metadata_value(md, distance_type_key, what_));
    ivf_ = detail::read_ivf(r_, what_);
    const auto list = json_detail::parse_string_list(detail::metadata_value(md, storage_metadata_key, what_),
                                                     what_ + " storage_metadata");
    if (list.empty()) throw corrupt_error(what_ + ": storage_metadata is an empty list");
    q_ = parse_quantizer(list[0]);
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
    if (const auto* pq = std::get_if<pq_params>(&q_)) {
      if (pq_transposed_) untranspose_codes(stored.data(), n, w, out.codes.data());
      else std::memcpy(out.codes.data(), stored.data(), n * w);
    } else if (std::holds_alternative<rq_params>(q_)) {
      if (rq_packed_) unpack_rabit_codes(stored.data(), n, w, out.codes.data());
      else std::memcpy(out.codes.data(), stored.data(), n * w);
    } else {
      std::memcpy(out.codes.data(), stored.data(), n * w);
    }
    if (const auto* rq = std::get_if<rq_params>(&q_)) {
      out.add_factors = f32_values(*batch.columns[2], names[2]);
      out.scale_factors = f32_values(*batch.columns[3], names[3]);
      out.error_factors = f32_values(*batch.columns[4], names[4]);
      if (rq->num_bits > 1) {
        out.ex_codes = fsl_bytes(*batch.columns[5], rq->ex_code_bytes, names[5]);
        out.add_factors_ex = f32_values(*batch.columns[6], names[6]);
        out.scale_factors_ex = f32_values(*batch.columns[7], names[7]);
      }
    }
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

  quantizer_params parse_quantizer(const std::string& text) {
    const std::string what = what_ + " storage_metadata";
    const auto v = json_detail::parse(text, what);
    using namespace json_detail;
    const auto code_field = [&](std::size_t i) -> const schema::field& {
      if (r_.schema().fields.size() <= i) throw corrupt_error(what_ + ": too few columns for its quantizer");
      return r_.schema().fields[i];
    };
    const auto& col = code_field(1);
    if (col.name == flat_column) {
      flat_params f;
      f.dimension = as_u32(member(v, "dim", what), "dim", what);
      const auto af = schema::to_arrow(col);
      if (af.type->id != arrow::type_id::fixed_size_list)
        throw corrupt_error(what_ + ": the flat column is not a fixed-size list");
      switch (af.type->children.at(0).type->id) {
        case arrow::type_id::float16: f.element = element_type::f16; break;
        case arrow::type_id::float32: f.element = element_type::f32; break;
        case arrow::type_id::float64: f.element = element_type::f64; break;
        case arrow::type_id::uint8: f.element = element_type::u8; break;
        default: throw unsupported_error(what_ + ": flat vectors of type " + col.logical_type + " are not supported");
      }
      if (std::uint32_t(af.type->list_size) != f.dimension)
        throw corrupt_error(what_ + ": storage_metadata says dim " + std::to_string(f.dimension) +
                            " but the flat column holds " + std::to_string(af.type->list_size));
      return f;
    }
    if (col.name == pq_code_column) {
      pq_params p;
      p.num_bits = as_u32(member(v, "nbits", what), "nbits", what);
      p.num_sub_vectors = as_u32(member(v, "num_sub_vectors", what), "num_sub_vectors", what);
      p.dimension = as_u32(member(v, "dimension", what), "dimension", what);
      if (const auto* t = v.get("transposed")) pq_transposed_ = as_bool(*t, "transposed", what);
      pb::index::tensor tensor;
      const auto inline_bytes = v.get("codebook_tensor") ? as_bytes(*v.get("codebook_tensor"), "codebook_tensor", what)
                                                         : std::vector<std::uint8_t>{};
      if (!inline_bytes.empty()) {
        tensor = pb::decode<pb::index::tensor>(bytes_view(inline_bytes.data(), inline_bytes.size()));
      } else {
        const auto pos = as_u64(member(v, "codebook_position", what), "codebook_position", what);
        if (pos == 0 || pos >= r_.num_global_buffers())
          throw corrupt_error(what + ": codebook_position " + std::to_string(pos) + " is not a global buffer (the file has " +
                              std::to_string(r_.num_global_buffers()) + ")");
        tensor = pb::decode<pb::index::tensor>(r_.global_buffer(std::size_t(pos)).view());
      }
      if (p.num_sub_vectors == 0 || p.dimension % p.num_sub_vectors || (p.num_bits != 4 && p.num_bits != 8))
        throw corrupt_error(what + ": nbits " + std::to_string(p.num_bits) + ", num_sub_vectors " +
                            std::to_string(p.num_sub_vectors) + ", dimension " + std::to_string(p.dimension) +
                            " do not describe a product quantizer");
      // Lance's codebook tensor is [2^bits, dimension]; its values are
      // [m][2^bits][dimension / m].
      matrix cb = from_tensor(tensor, what_ + " PQ codebook");
      if (cb.size() != (std::size_t(1) << p.num_bits) * p.dimension)
        throw corrupt_error(what + ": the codebook holds " + std::to_string(cb.size()) + " values, expected " +
                            std::to_string((std::size_t(1) << p.num_bits) * p.dimension));
      cb.rows = std::size_t(p.num_sub_vectors) << p.num_bits;
      cb.cols = p.dimension / p.num_sub_vectors;
      p.codebook = std::move(cb);
      return p;
    }
    if (col.name == sq_code_column) {
      sq_params s;
      s.dimension = as_u32(member(v, "dim", what), "dim", what);
      s.num_bits = as_u32(member(v, "num_bits", what), "num_bits", what);
      const auto& b = member(v, "bounds", what);
      s.lower = as_f64(member(b, "start", what), "start", what);
      s.upper = as_f64(member(b, "end", what), "end", what);
      return s;
    }
    if (col.name == rabit_code_column) {
      rq_params r;
      r.code_dim = as_u32(member(v, "code_dim", what), "code_dim", what);
      r.num_bits = as_u32(member(v, "num_bits", what), "num_bits", what);
      if (const auto* pk = v.get("packed")) rq_packed_ = as_bool(*pk, "packed", what);
      if (const auto* q = v.get("query_estimator")) r.query_estimator = as_string(*q, "query_estimator", what);
      const std::string rot = v.get("rotation_type") ? as_string(*v.get("rotation_type"), "rotation_type", what)
                                                      : std::string("matrix");
      if (rot == "fast") {
        r.rotation_type = rq_params::rotation::fast;
        r.fast_rotation_signs = as_bytes(member(v, "fast_rotation_signs", what), "fast_rotation_signs", what);
      } else {
        r.rotation_type = rq_params::rotation::matrix;
        const auto pos = as_u64(member(v, "rotate_mat_position", what), "rotate_mat_position", what);
        if (pos == 0 || pos >= r_.num_global_buffers())
          throw corrupt_error(what + ": rotate_mat_position " + std::to_string(pos) + " is not a global buffer");
        r.rotate_mat = from_tensor(pb::decode<pb::index::tensor>(r_.global_buffer(std::size_t(pos)).view()),
                                   what_ + " rotation matrix");
      }
      if (r.num_bits > 1) {
        const auto* ex = r_.schema().field_by_name(blocked_ex_codes_column);
        if (!ex) throw corrupt_error(what_ + ": " + std::to_string(r.num_bits) + "-bit RaBitQ codes without " +
                                     std::string(blocked_ex_codes_column));
        r.ex_code_bytes = std::uint32_t(schema::to_arrow(*ex).type->list_size);
      }
      return r;
    }
    throw unsupported_error(what_ + ": unknown quantizer storage column '" + col.name + "'");
  }

  file::file_reader<Source> r_;
  std::string what_;
  simd::distance_type distance_ = simd::distance_type::l2;
  ivf_model ivf_;
  quantizer_params q_;
  bool pq_transposed_ = true;
  bool rq_packed_ = true;
};

inline storage_reader<io::file_source> open_storage(const std::string& path) {
  return storage_reader<io::file_source>(io::file_source(path), "'" + path + "'");
}

}  // namespace lancet::index
