// Lance's table-level protobuf messages (table.proto, rowids.proto and the parts of
// transaction.proto a writer needs), by hand. These describe a dataset version: the
// manifest, its fragments and data files, deletion files, row-id sequences, index
// metadata and the transaction that produced the version.
//
// Field numbers follow Lance 12.0.0 (LanceDB 0.39), which adds to the 1.0 protos:
// IndexMetadata.files (10: repeated {path = 1, size_bytes = 2}). Everything is encoded
// in ascending field-number order, as prost does, so that re-encoding a manifest that
// Lance wrote reproduces its bytes.
//
// `lance.file.Field` messages (manifest schema, Overwrite/Merge/Project schemas) are
// kept as their encoded bytes here: pb/file.hpp decodes them.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::pb {

namespace table_detail {

inline bytes_view as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

template <class T>
T decode_sub(const reader& r, const field_view& f, std::string_view what) {
  return T::decode(r.sub(f, what));
}

template <class T>
void message_list(writer& w, std::uint32_t field, const std::vector<T>& items) {
  for (const auto& m : items) w.message(field, m);
}

// map<string, string|bytes>, written in key order (std::map) for deterministic bytes.
inline void read_map_entry(const reader& r, const field_view& f, std::string_view what,
                           std::map<std::string, std::string>& out) {
  auto kv = r.map_entry(f, what);
  out[std::move(kv.first)] = std::move(kv.second);
}

// repeated bytes / string
inline void write_strings(writer& w, std::uint32_t field, const std::vector<std::string>& v) {
  for (const auto& s : v) w.bytes(field, std::string_view(s));
}

template <class T>
std::string encode_to_string(const T& m) {
  writer w;
  m.encode(w);
  return w.take();
}

[[noreturn]] inline void unknown_variant(std::string_view message, std::uint32_t field) {
  throw corrupt_error(std::string(message) + ": unknown oneof variant (field " + std::to_string(field) + ")");
}

}  // namespace table_detail

// ---------------------------------------------------------------------------------
// Small shared messages
// ---------------------------------------------------------------------------------

// lance.table.UUID: 16 raw bytes. Also a value type: v4 generation and the canonical
// lowercase hyphenated text form Lance uses in file names.
struct uuid {
  std::array<std::uint8_t, 16> bytes{};
  static constexpr std::uint32_t f_uuid = 1;

  // Random (version 4, RFC 4122 variant) UUID from std::random_device.
  static uuid generate_v4() {
    thread_local std::random_device rd;
    uuid u;
    for (std::size_t i = 0; i < 16; i += 4) {
      std::uint32_t x = rd();
      for (std::size_t k = 0; k < 4; ++k) u.bytes[i + k] = std::uint8_t(x >> (8 * k));
    }
    u.bytes[6] = std::uint8_t((u.bytes[6] & 0x0F) | 0x40);
    u.bytes[8] = std::uint8_t((u.bytes[8] & 0x3F) | 0x80);
    return u;
  }
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase.
  std::string to_string() const {
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (std::size_t i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
      s.push_back(hex[bytes[i] >> 4]);
      s.push_back(hex[bytes[i] & 0xF]);
    }
    return s;
  }
  // Accepts the hyphenated form (either case) or 32 bare hex digits.
  static uuid parse(std::string_view text) {
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const bool hyphenated = text.size() == 36;
    if (!hyphenated && text.size() != 32)
      throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
    uuid u;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < 16; ++i) {
      if (hyphenated && (i == 4 || i == 6 || i == 8 || i == 10)) {
        if (text[pos] != '-') throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
        ++pos;
      }
      int hi = nibble(text[pos]), lo = nibble(text[pos + 1]);
      if (hi < 0 || lo < 0) throw invalid_input_error("not a UUID: '" + std::string(text) + "'");
      u.bytes[i] = std::uint8_t(hi << 4 | lo);
      pos += 2;
    }
    return u;
  }

  void encode(writer& w) const {
    w.bytes(f_uuid, bytes_view(bytes.data(), bytes.size()));
  }
  static uuid decode(reader r) {
    uuid u;
    bool seen = false;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_uuid) {
        r.expect(f, wire_type::len, "UUID.uuid");
        if (f.data.size() != 16)
          throw corrupt_error("UUID: " + std::to_string(f.data.size()) + " bytes, expected 16");
        std::copy(f.data.begin(), f.data.end(), u.bytes.begin());
        seen = true;
      }
    }
    if (!seen) throw corrupt_error("UUID: missing uuid bytes");
    return u;
  }
  friend bool operator==(const uuid&, const uuid&) = default;
};

// google.protobuf.Timestamp
struct timestamp {
  std::int64_t seconds = 0;
  std::int32_t nanos = 0;
  static constexpr std::uint32_t f_seconds = 1, f_nanos = 2;

  static timestamp from_unix_nanos(std::int64_t ns) {
    timestamp t;
    t.seconds = ns / 1'000'000'000;
    t.nanos = std::int32_t(ns % 1'000'000'000);
    if (t.nanos < 0) {
      t.nanos += 1'000'000'000;
      t.seconds -= 1;
    }
    return t;
  }
  static timestamp now() {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    return from_unix_nanos(std::int64_t(ns));
  }
  std::int64_t unix_nanos() const noexcept { return seconds * 1'000'000'000 + nanos; }

  void encode(writer& w) const {
    w.int64_opt(f_seconds, seconds);
    w.int32_opt(f_nanos, nanos);
  }
  static timestamp decode(reader r) {
    timestamp t;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_seconds) t.seconds = std::int64_t(r.varint(f, "Timestamp.seconds"));
      else if (f.number == f_nanos) t.nanos = std::int32_t(std::int64_t(r.varint(f, "Timestamp.nanos")));
    }
    if (t.nanos < 0 || t.nanos >= 1'000'000'000)
      throw corrupt_error("Timestamp: nanos " + std::to_string(t.nanos) + " out of range");
    return t;
  }
  friend bool operator==(const timestamp&, const timestamp&) = default;
};

// A byte range of a file relative to the table root (large row-id / version
// sequences are stored out of line this way).
struct external_file {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  static constexpr std::uint32_t f_path = 1, f_offset = 2, f_size = 3;

  void encode(writer& w) const {
    w.string_opt(f_path, path);
    w.uint64_opt(f_offset, offset);
    w.uint64_opt(f_size, size);
  }
  static external_file decode(reader r) {
    external_file e;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_path: e.path = r.string(f, "ExternalFile.path"); break;
        case f_offset: e.offset = r.varint(f, "ExternalFile.offset"); break;
        case f_size: e.size = r.varint(f, "ExternalFile.size"); break;
        default: break;
      }
    }
    return e;
  }
  friend bool operator==(const external_file&, const external_file&) = default;
};

// An extra root for data files (shallow clones, imported files).
struct base_path {
  std::uint32_t id = 0;
  std::optional<std::string> name;
  bool is_dataset_root = false;
  std::string path;
  static constexpr std::uint32_t f_id = 1, f_name = 2, f_is_dataset_root = 3, f_path = 4;

  void encode(writer& w) const {
    w.uint32_opt(f_id, id);
    if (name) w.string(f_name, *name);
    w.boolean_opt(f_is_dataset_root, is_dataset_root);
    w.string_opt(f_path, path);
  }
  static base_path decode(reader r) {
    base_path b;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_id: b.id = std::uint32_t(r.varint(f, "BasePath.id")); break;
        case f_name: b.name = r.string(f, "BasePath.name"); break;
        case f_is_dataset_root: b.is_dataset_root = r.varint(f, "BasePath.is_dataset_root") != 0; break;
        case f_path: b.path = r.string(f, "BasePath.path"); break;
        default: break;
      }
    }
    return b;
  }
  friend bool operator==(const base_path&, const base_path&) = default;
};

// ---------------------------------------------------------------------------------
// rowids.proto: row-id sequences and row version sequences (stable row ids)
// ---------------------------------------------------------------------------------

// u64 values stored compactly: offsets from a base (u16 / u32, little-endian bytes)
// or plain u64 values.
struct encoded_u64_array {
  enum class kind : std::uint8_t { u16 = 1, u32 = 2, u64 = 3 };
  kind type = kind::u64;
  std::uint64_t base = 0;     // u16 / u32 only
  std::string data;           // little-endian offsets (u16/u32) or values (u64)
  static constexpr std::uint32_t f_u16_array = 1, f_u32_array = 2, f_u64_array = 3;
  static constexpr std::uint32_t f_base = 1, f_offsets = 2, f_values = 2;

  // Chooses the narrowest representation, as Lance does.
  static encoded_u64_array from_values(const std::vector<std::uint64_t>& vs) {
    encoded_u64_array a;
    if (vs.empty()) return a;
    std::uint64_t lo = vs[0], hi = vs[0];
    for (auto v : vs) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const std::uint64_t range = hi - lo;
    const std::size_t width = range <= 0xFFFF ? 2 : range <= 0xFFFFFFFFull ? 4 : 8;
    a.type = width == 2 ? kind::u16 : width == 4 ? kind::u32 : kind::u64;
    a.base = width == 8 ? 0 : lo;
    a.data.resize(vs.size() * width);
    for (std::size_t i = 0; i < vs.size(); ++i) {
      char* p = a.data.data() + i * width;
      if (width == 2) le::store(p, std::uint16_t(vs[i] - lo));
      else if (width == 4) le::store(p, std::uint32_t(vs[i] - lo));
      else le::store(p, vs[i]);
    }
    return a;
  }
  std::size_t width() const noexcept { return type == kind::u16 ? 2 : type == kind::u32 ? 4 : 8; }
  std::size_t size() const noexcept { return data.size() / width(); }
  std::vector<std::uint64_t> values() const {
    std::vector<std::uint64_t> out(size());
    const std::size_t w = width();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const char* p = data.data() + i * w;
      if (w == 2) out[i] = base + le::load<std::uint16_t>(p);
      else if (w == 4) out[i] = base + le::load<std::uint32_t>(p);
      else out[i] = le::load<std::uint64_t>(p);
    }
    return out;
  }

  void encode(writer& w) const {
    writer inner;
    if (type != kind::u64) inner.uint64_opt(f_base, base);
    inner.string_opt(type == kind::u64 ? f_values : f_offsets, data);
    w.bytes(std::uint32_t(type), inner.bytes());
  }
  static encoded_u64_array decode(reader r) {
    encoded_u64_array a;
    bool seen = false;
    while (!r.done()) {
      auto f = r.next();
      if (f.number < f_u16_array || f.number > f_u64_array) table_detail::unknown_variant("EncodedU64Array", f.number);
      a = encoded_u64_array{};
      a.type = kind(f.number);
      seen = true;
      reader s = r.sub(f, "EncodedU64Array");
      while (!s.done()) {
        auto g = s.next();
        if (g.number == f_base && a.type != kind::u64) a.base = s.varint(g, "EncodedU64Array.base");
        else if (g.number == f_offsets) a.data = s.string(g, "EncodedU64Array.offsets");
      }
      if (a.data.size() % a.width())
        throw corrupt_error("EncodedU64Array: " + std::to_string(a.data.size()) +
                            " bytes is not a multiple of " + std::to_string(a.width()));
    }
    if (!seen) throw corrupt_error("EncodedU64Array: no array variant");
    return a;
  }
  friend bool operator==(const encoded_u64_array&, const encoded_u64_array&) = default;
};

// The shapes of a u64 segment (namespace scope so that they are complete, and default
// constructible, inside u64_segment's variant).
struct u64_range {
  std::uint64_t start = 0, end = 0;
  friend bool operator==(const u64_range&, const u64_range&) = default;
};
struct u64_range_with_holes {
  std::uint64_t start = 0, end = 0;
  encoded_u64_array holes;  // absolute values missing from [start, end)
  friend bool operator==(const u64_range_with_holes&, const u64_range_with_holes&) = default;
};
struct u64_range_with_bitmap {
  std::uint64_t start = 0, end = 0;
  std::string bitmap;  // bit i (LSB first) set: start + i is present
  friend bool operator==(const u64_range_with_bitmap&, const u64_range_with_bitmap&) = default;
};
struct u64_sorted_array {
  encoded_u64_array values;
  friend bool operator==(const u64_sorted_array&, const u64_sorted_array&) = default;
};
struct u64_array {
  encoded_u64_array values;
  friend bool operator==(const u64_array&, const u64_array&) = default;
};

// One run of a u64 sequence.
struct u64_segment {
  using range = u64_range;
  using range_with_holes = u64_range_with_holes;
  using range_with_bitmap = u64_range_with_bitmap;
  using sorted_array = u64_sorted_array;
  using array = u64_array;

  std::variant<range, range_with_holes, range_with_bitmap, sorted_array, array> segment;
  static constexpr std::uint32_t f_range = 1, f_range_with_holes = 2, f_range_with_bitmap = 3,
                                 f_sorted_array = 4, f_array = 5;

  static u64_segment make_range(std::uint64_t start, std::uint64_t end) {
    if (end < start) throw invalid_input_error("u64 range [" + std::to_string(start) + ", " + std::to_string(end) + ") is reversed");
    return u64_segment{range{start, end}};
  }

  // Number of values (holes and cleared bits excluded).
  std::uint64_t size() const {
    struct {
      std::uint64_t operator()(const range& r) const { return r.end - r.start; }
      std::uint64_t operator()(const range_with_holes& r) const { return r.end - r.start - r.holes.size(); }
      std::uint64_t operator()(const range_with_bitmap& r) const {
        std::uint64_t n = 0;
        for (std::uint64_t i = 0; i < r.end - r.start && i / 8 < r.bitmap.size(); ++i)
          n += (std::uint8_t(r.bitmap[i / 8]) >> (i % 8)) & 1;
        return n;
      }
      std::uint64_t operator()(const sorted_array& a) const { return a.values.size(); }
      std::uint64_t operator()(const array& a) const { return a.values.size(); }
    } visitor;
    return std::visit(visitor, segment);
  }
  // Materialises the values in order.
  std::vector<std::uint64_t> values() const {
    std::vector<std::uint64_t> out;
    if (auto* r = std::get_if<range>(&segment)) {
      for (auto v = r->start; v < r->end; ++v) out.push_back(v);
    } else if (auto* h = std::get_if<range_with_holes>(&segment)) {
      auto holes = h->holes.values();
      std::sort(holes.begin(), holes.end());
      for (auto v = h->start; v < h->end; ++v)
        if (!std::binary_search(holes.begin(), holes.end(), v)) out.push_back(v);
    } else if (auto* b = std::get_if<range_with_bitmap>(&segment)) {
      for (std::uint64_t i = 0; i < b->end - b->start && i / 8 < b->bitmap.size(); ++i)
        if ((std::uint8_t(b->bitmap[i / 8]) >> (i % 8)) & 1) out.push_back(b->start + i);
    } else if (auto* s = std::get_if<sorted_array>(&segment)) {
      out = s->values.values();
    } else {
      out = std::get<array>(segment).values.values();
    }
    return out;
  }

  void encode(writer& w) const {
    if (auto* r = std::get_if<range>(&segment)) {
      w.message_fn(f_range, [&](writer& m) { m.uint64_opt(1, r->start); m.uint64_opt(2, r->end); });
    } else if (auto* h = std::get_if<range_with_holes>(&segment)) {
      w.message_fn(f_range_with_holes, [&](writer& m) {
        m.uint64_opt(1, h->start);
        m.uint64_opt(2, h->end);
        m.message(3, h->holes);
      });
    } else if (auto* b = std::get_if<range_with_bitmap>(&segment)) {
      w.message_fn(f_range_with_bitmap, [&](writer& m) {
        m.uint64_opt(1, b->start);
        m.uint64_opt(2, b->end);
        m.string_opt(3, b->bitmap);
      });
    } else if (auto* s = std::get_if<sorted_array>(&segment)) {
      w.message(f_sorted_array, s->values);
    } else {
      w.message(f_array, std::get<array>(segment).values);
    }
  }
  static u64_segment decode(reader r) {
    std::optional<u64_segment> out;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_range:
        case f_range_with_holes:
        case f_range_with_bitmap: {
          reader s = r.sub(f, "U64Segment range");
          std::uint64_t start = 0, end = 0;
          std::optional<encoded_u64_array> holes;
          std::string bitmap;
          while (!s.done()) {
            auto g = s.next();
            if (g.number == 1) start = s.varint(g, "U64Segment.start");
            else if (g.number == 2) end = s.varint(g, "U64Segment.end");
            else if (g.number == 3 && f.number == f_range_with_holes) holes = table_detail::decode_sub<encoded_u64_array>(s, g, "RangeWithHoles.holes");
            else if (g.number == 3 && f.number == f_range_with_bitmap) bitmap = s.string(g, "RangeWithBitmap.bitmap");
          }
          if (end < start)
            throw corrupt_error("U64Segment: range end " + std::to_string(end) + " before start " + std::to_string(start));
          // A segment describes rows of one fragment, which has fewer than 2^32 rows.
          if (end - start > (std::uint64_t(1) << 32))
            throw corrupt_error("U64Segment: range [" + std::to_string(start) + ", " + std::to_string(end) +
                                ") spans more than 2^32 rows");
          if (f.number == f_range) {
            out = u64_segment{range{start, end}};
          } else if (f.number == f_range_with_holes) {
            if (!holes) throw corrupt_error("U64Segment.RangeWithHoles: missing holes");
            if (holes->size() > end - start)
              throw corrupt_error("U64Segment.RangeWithHoles: " + std::to_string(holes->size()) + " holes in a range of " +
                                  std::to_string(end - start));
            out = u64_segment{range_with_holes{start, end, std::move(*holes)}};
          } else {
            if (bitmap.size() < (end - start + 7) / 8)
              throw corrupt_error("U64Segment.RangeWithBitmap: bitmap of " + std::to_string(bitmap.size()) +
                                  " bytes is too short for " + std::to_string(end - start) + " values");
            out = u64_segment{range_with_bitmap{start, end, std::move(bitmap)}};
          }
          break;
        }
        case f_sorted_array:
          out = u64_segment{sorted_array{table_detail::decode_sub<encoded_u64_array>(r, f, "U64Segment.sorted_array")}};
          break;
        case f_array:
          out = u64_segment{array{table_detail::decode_sub<encoded_u64_array>(r, f, "U64Segment.array")}};
          break;
        default: table_detail::unknown_variant("U64Segment", f.number);
      }
    }
    if (!out) throw corrupt_error("U64Segment: no segment variant");
    return std::move(*out);
  }
  friend bool operator==(const u64_segment&, const u64_segment&) = default;
};

// The row ids of a fragment's rows, in row order (stable row ids feature).
struct row_id_sequence {
  std::vector<u64_segment> segments;
  static constexpr std::uint32_t f_segments = 1;

  // Row ids [start, start + count): what a freshly written fragment gets.
  static row_id_sequence make_range(std::uint64_t start, std::uint64_t count) {
    return row_id_sequence{{u64_segment::make_range(start, start + count)}};
  }
  std::uint64_t size() const {
    std::uint64_t n = 0;
    for (const auto& s : segments) n += s.size();
    return n;
  }
  std::vector<std::uint64_t> values() const {
    std::vector<std::uint64_t> out;
    for (const auto& s : segments) {
      auto v = s.values();
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }

  void encode(writer& w) const { table_detail::message_list(w, f_segments, segments); }
  static row_id_sequence decode(reader r) {
    row_id_sequence s;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_segments) s.segments.push_back(table_detail::decode_sub<u64_segment>(r, f, "RowIdSequence.segments"));
    }
    return s;
  }
  std::string to_bytes() const { return table_detail::encode_to_string(*this); }
  static row_id_sequence from_bytes(std::string_view b) { return decode(reader(b, 0, "RowIdSequence")); }
  friend bool operator==(const row_id_sequence&, const row_id_sequence&) = default;
};

// A run of rows (by offset within the fragment) that share a dataset version.
struct row_dataset_version_run {
  u64_segment span;
  std::uint64_t version = 0;
  static constexpr std::uint32_t f_span = 1, f_version = 2;

  void encode(writer& w) const {
    w.message(f_span, span);
    w.uint64_opt(f_version, version);
  }
  static row_dataset_version_run decode(reader r) {
    row_dataset_version_run run;
    bool has_span = false;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_span) {
        run.span = table_detail::decode_sub<u64_segment>(r, f, "RowDatasetVersionRun.span");
        has_span = true;
      } else if (f.number == f_version) {
        run.version = r.varint(f, "RowDatasetVersionRun.version");
      }
    }
    if (!has_span) throw corrupt_error("RowDatasetVersionRun: missing span");
    return run;
  }
  friend bool operator==(const row_dataset_version_run&, const row_dataset_version_run&) = default;
};

// Per-row created-at / last-updated-at dataset versions of a fragment.
struct row_dataset_version_sequence {
  std::vector<row_dataset_version_run> runs;
  static constexpr std::uint32_t f_runs = 1;

  // Every one of `rows` rows carries `version` (what a new fragment gets).
  static row_dataset_version_sequence uniform(std::uint64_t rows, std::uint64_t version) {
    row_dataset_version_sequence s;
    if (rows) s.runs.push_back({u64_segment::make_range(0, rows), version});
    return s;
  }
  void encode(writer& w) const { table_detail::message_list(w, f_runs, runs); }
  static row_dataset_version_sequence decode(reader r) {
    row_dataset_version_sequence s;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_runs) s.runs.push_back(table_detail::decode_sub<row_dataset_version_run>(r, f, "RowDatasetVersionSequence.runs"));
    }
    return s;
  }
  std::string to_bytes() const { return table_detail::encode_to_string(*this); }
  static row_dataset_version_sequence from_bytes(std::string_view b) {
    return decode(reader(b, 0, "RowDatasetVersionSequence"));
  }
  friend bool operator==(const row_dataset_version_sequence&, const row_dataset_version_sequence&) = default;
};

// ---------------------------------------------------------------------------------
// Fragments
// ---------------------------------------------------------------------------------

// One Lance file holding some of a fragment's columns.
struct data_file {
  std::string path;  // relative to {root}/data
  std::vector<std::int32_t> fields;          // field ids; -2 = tombstoned
  std::vector<std::int32_t> column_indices;  // top-level column per field, -1 if none
  std::uint32_t file_major_version = 0;
  std::uint32_t file_minor_version = 0;
  std::uint64_t file_size_bytes = 0;  // 0 = unknown
  std::optional<std::uint32_t> base_id;
  static constexpr std::uint32_t f_path = 1, f_fields = 2, f_column_indices = 3, f_file_major_version = 4,
                                 f_file_minor_version = 5, f_file_size_bytes = 6, f_base_id = 7;

  void encode(writer& w) const {
    w.string_opt(f_path, path);
    w.packed_varint(f_fields, fields);
    w.packed_varint(f_column_indices, column_indices);
    w.uint32_opt(f_file_major_version, file_major_version);
    w.uint32_opt(f_file_minor_version, file_minor_version);
    w.uint64_opt(f_file_size_bytes, file_size_bytes);
    if (base_id) w.uint32(f_base_id, *base_id);
  }
  static data_file decode(reader r) {
    data_file d;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_path: d.path = r.string(f, "DataFile.path"); break;
        case f_fields: r.repeated_varint(f, d.fields); break;
        case f_column_indices: r.repeated_varint(f, d.column_indices); break;
        case f_file_major_version: d.file_major_version = std::uint32_t(r.varint(f, "DataFile.file_major_version")); break;
        case f_file_minor_version: d.file_minor_version = std::uint32_t(r.varint(f, "DataFile.file_minor_version")); break;
        case f_file_size_bytes: d.file_size_bytes = r.varint(f, "DataFile.file_size_bytes"); break;
        case f_base_id: d.base_id = std::uint32_t(r.varint(f, "DataFile.base_id")); break;
        default: break;
      }
    }
    return d;
  }
  friend bool operator==(const data_file&, const data_file&) = default;
};

// Marks deleted rows of a fragment. File: {root}/_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}
struct deletion_file {
  enum class type : std::uint32_t { arrow_array = 0, bitmap = 1 };
  type file_type = type::arrow_array;
  std::uint64_t read_version = 0;
  std::uint64_t id = 0;
  std::uint64_t num_deleted_rows = 0;  // 0 = unknown
  std::optional<std::uint32_t> base_id;
  static constexpr std::uint32_t f_file_type = 1, f_read_version = 2, f_id = 3, f_num_deleted_rows = 4, f_base_id = 7;

  std::string_view extension() const noexcept { return file_type == type::bitmap ? "bin" : "arrow"; }
  // Path relative to the dataset root.
  std::string relative_path(std::uint64_t fragment_id) const {
    return "_deletions/" + std::to_string(fragment_id) + "-" + std::to_string(read_version) + "-" +
           std::to_string(id) + "." + std::string(extension());
  }

  void encode(writer& w) const {
    w.uint32_opt(f_file_type, std::uint32_t(file_type));
    w.uint64_opt(f_read_version, read_version);
    w.uint64_opt(f_id, id);
    w.uint64_opt(f_num_deleted_rows, num_deleted_rows);
    if (base_id) w.uint32(f_base_id, *base_id);
  }
  static deletion_file decode(reader r) {
    deletion_file d;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_file_type: {
          auto t = r.varint(f, "DeletionFile.file_type");
          if (t > 1) throw unsupported_error("DeletionFile: unknown file type " + std::to_string(t));
          d.file_type = type(t);
          break;
        }
        case f_read_version: d.read_version = r.varint(f, "DeletionFile.read_version"); break;
        case f_id: d.id = r.varint(f, "DeletionFile.id"); break;
        case f_num_deleted_rows: d.num_deleted_rows = r.varint(f, "DeletionFile.num_deleted_rows"); break;
        case f_base_id: d.base_id = std::uint32_t(r.varint(f, "DeletionFile.base_id")); break;
        default: break;
      }
    }
    return d;
  }
  friend bool operator==(const deletion_file&, const deletion_file&) = default;
};

// Inline bytes (< ~200 KB) or a range of an external file: how fragments carry their
// row-id and row-version sequences.
using inline_or_external = std::variant<std::monostate, std::string, external_file>;

// A set of files holding the same rows (one per column group).
struct data_fragment {
  std::uint64_t id = 0;
  std::vector<data_file> files;
  std::optional<pb::deletion_file> deletion_file;
  std::uint64_t physical_rows = 0;  // rows including deleted ones; 0 = unknown (legacy)
  inline_or_external row_id_sequence;                    // encoded pb::row_id_sequence
  inline_or_external last_updated_at_version_sequence;  // encoded row_dataset_version_sequence
  inline_or_external created_at_version_sequence;       // encoded row_dataset_version_sequence
  static constexpr std::uint32_t f_id = 1, f_files = 2, f_deletion_file = 3, f_physical_rows = 4,
                                 f_inline_row_ids = 5, f_external_row_ids = 6,
                                 f_inline_last_updated_at_versions = 7, f_external_last_updated_at_versions = 8,
                                 f_inline_created_at_versions = 9, f_external_created_at_versions = 10;

  // Live rows: physical rows minus deleted ones (when both are known).
  std::optional<std::uint64_t> num_rows() const {
    if (physical_rows == 0) return std::nullopt;
    if (!deletion_file) return physical_rows;
    if (deletion_file->num_deleted_rows == 0 || deletion_file->num_deleted_rows > physical_rows) return std::nullopt;
    return physical_rows - deletion_file->num_deleted_rows;
  }

  void encode(writer& w) const {
    w.uint64_opt(f_id, id);
    table_detail::message_list(w, f_files, files);
    if (deletion_file) w.message(f_deletion_file, *deletion_file);
    w.uint64_opt(f_physical_rows, physical_rows);
    write_sequence(w, row_id_sequence, f_inline_row_ids, f_external_row_ids);
    write_sequence(w, last_updated_at_version_sequence, f_inline_last_updated_at_versions,
                   f_external_last_updated_at_versions);
    write_sequence(w, created_at_version_sequence, f_inline_created_at_versions, f_external_created_at_versions);
  }
  static data_fragment decode(reader r) {
    data_fragment d;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_id: d.id = r.varint(f, "DataFragment.id"); break;
        case f_files: d.files.push_back(table_detail::decode_sub<data_file>(r, f, "DataFragment.files")); break;
        case f_deletion_file: d.deletion_file = table_detail::decode_sub<pb::deletion_file>(r, f, "DataFragment.deletion_file"); break;
        case f_physical_rows: d.physical_rows = r.varint(f, "DataFragment.physical_rows"); break;
        case f_inline_row_ids: d.row_id_sequence = r.string(f, "DataFragment.inline_row_ids"); break;
        case f_external_row_ids: d.row_id_sequence = table_detail::decode_sub<external_file>(r, f, "DataFragment.external_row_ids"); break;
        case f_inline_last_updated_at_versions:
          d.last_updated_at_version_sequence = r.string(f, "DataFragment.inline_last_updated_at_versions");
          break;
        case f_external_last_updated_at_versions:
          d.last_updated_at_version_sequence = table_detail::decode_sub<external_file>(r, f, "DataFragment.external_last_updated_at_versions");
          break;
        case f_inline_created_at_versions:
          d.created_at_version_sequence = r.string(f, "DataFragment.inline_created_at_versions");
          break;
        case f_external_created_at_versions:
          d.created_at_version_sequence = table_detail::decode_sub<external_file>(r, f, "DataFragment.external_created_at_versions");
          break;
        default: break;
      }
    }
    return d;
  }
  friend bool operator==(const data_fragment&, const data_fragment&) = default;

 private:
  static void write_sequence(writer& w, const inline_or_external& s, std::uint32_t inline_field,
                             std::uint32_t external_field) {
    if (auto* b = std::get_if<std::string>(&s)) w.bytes(inline_field, std::string_view(*b));
    else if (auto* e = std::get_if<external_file>(&s)) w.message(external_field, *e);
  }
};

// ---------------------------------------------------------------------------------
// Indices
// ---------------------------------------------------------------------------------

// One file of an index directory ({root}/_indices/{uuid}/{path}) and its size
// (Lance 12: IndexMetadata field 10).
struct index_file {
  std::string path;
  std::uint64_t size_bytes = 0;
  static constexpr std::uint32_t f_path = 1, f_size_bytes = 2;

  void encode(writer& w) const {
    w.string_opt(f_path, path);
    w.uint64_opt(f_size_bytes, size_bytes);
  }
  static index_file decode(reader r) {
    index_file f;
    while (!r.done()) {
      auto x = r.next();
      if (x.number == f_path) f.path = r.string(x, "IndexFile.path");
      else if (x.number == f_size_bytes) f.size_bytes = r.varint(x, "IndexFile.size_bytes");
    }
    return f;
  }
  friend bool operator==(const index_file&, const index_file&) = default;
};

struct index_metadata {
  pb::uuid uuid;
  std::vector<std::int32_t> fields;  // field ids the index covers
  std::string name;
  std::uint64_t dataset_version = 0;  // version the index was built from
  std::string fragment_bitmap;        // 32-bit roaring bitmap (portable format) of covered fragment ids
  std::optional<any> index_details;   // e.g. /lance.index.pb.VectorIndexDetails
  std::optional<std::int32_t> index_version;
  std::optional<std::uint64_t> created_at;  // milliseconds since the epoch, UTC
  std::optional<std::uint32_t> base_id;
  std::vector<index_file> files;
  static constexpr std::uint32_t f_uuid = 1, f_fields = 2, f_name = 3, f_dataset_version = 4,
                                 f_fragment_bitmap = 5, f_index_details = 6, f_index_version = 7,
                                 f_created_at = 8, f_base_id = 9, f_files = 10;

  void encode(writer& w) const {
    w.message(f_uuid, uuid);
    w.packed_varint(f_fields, fields);
    w.string_opt(f_name, name);
    w.uint64_opt(f_dataset_version, dataset_version);
    w.string_opt(f_fragment_bitmap, fragment_bitmap);
    if (index_details) w.message(f_index_details, *index_details);
    if (index_version) w.int32(f_index_version, *index_version);
    if (created_at) w.uint64(f_created_at, *created_at);
    if (base_id) w.uint32(f_base_id, *base_id);
    table_detail::message_list(w, f_files, files);
  }
  static index_metadata decode(reader r) {
    index_metadata m;
    bool has_uuid = false;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_uuid: m.uuid = table_detail::decode_sub<pb::uuid>(r, f, "IndexMetadata.uuid"); has_uuid = true; break;
        case f_fields: r.repeated_varint(f, m.fields); break;
        case f_name: m.name = r.string(f, "IndexMetadata.name"); break;
        case f_dataset_version: m.dataset_version = r.varint(f, "IndexMetadata.dataset_version"); break;
        case f_fragment_bitmap: m.fragment_bitmap = r.string(f, "IndexMetadata.fragment_bitmap"); break;
        case f_index_details: m.index_details = table_detail::decode_sub<any>(r, f, "IndexMetadata.index_details"); break;
        case f_index_version: m.index_version = std::int32_t(std::int64_t(r.varint(f, "IndexMetadata.index_version"))); break;
        case f_created_at: m.created_at = r.varint(f, "IndexMetadata.created_at"); break;
        case f_base_id: m.base_id = std::uint32_t(r.varint(f, "IndexMetadata.base_id")); break;
        case f_files: m.files.push_back(table_detail::decode_sub<index_file>(r, f, "IndexMetadata.files")); break;
        default: break;
      }
    }
    // Lance refuses index metadata without a UUID.
    if (!has_uuid) throw corrupt_error("IndexMetadata '" + m.name + "': missing uuid");
    return m;
  }
};

inline bool operator==(const index_metadata& a, const index_metadata& b) {
  auto details_eq = [](const std::optional<any>& x, const std::optional<any>& y) {
    if (x.has_value() != y.has_value()) return false;
    return !x || (x->type_url == y->type_url && x->value == y->value);
  };
  return a.uuid == b.uuid && a.fields == b.fields && a.name == b.name && a.dataset_version == b.dataset_version &&
         a.fragment_bitmap == b.fragment_bitmap && details_eq(a.index_details, b.index_details) &&
         a.index_version == b.index_version && a.created_at == b.created_at && a.base_id == b.base_id &&
         a.files == b.files;
}

struct index_section {
  std::vector<index_metadata> indices;
  static constexpr std::uint32_t f_indices = 1;

  void encode(writer& w) const { table_detail::message_list(w, f_indices, indices); }
  static index_section decode(reader r) {
    index_section s;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_indices) s.indices.push_back(table_detail::decode_sub<index_metadata>(r, f, "IndexSection.indices"));
    }
    return s;
  }
  std::string to_bytes() const { return table_detail::encode_to_string(*this); }
  static index_section from_bytes(std::string_view b) { return decode(reader(b, 0, "IndexSection")); }
  friend bool operator==(const index_section&, const index_section&) = default;
};

// ---------------------------------------------------------------------------------
// Manifest
// ---------------------------------------------------------------------------------

struct manifest {
  struct writer_version_info {
    std::string library;  // "lance" for Lance itself
    std::string version;  // core semver, e.g. "12.0.0"
    std::optional<std::string> prerelease;
    std::optional<std::string> build_metadata;
    static constexpr std::uint32_t f_library = 1, f_version = 2, f_prerelease = 3, f_build_metadata = 4;

    void encode(writer& w) const {
      w.string_opt(f_library, library);
      w.string_opt(f_version, version);
      if (prerelease) w.string(f_prerelease, *prerelease);
      if (build_metadata) w.string(f_build_metadata, *build_metadata);
    }
    static writer_version_info decode(reader r) {
      writer_version_info v;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case f_library: v.library = r.string(f, "WriterVersion.library"); break;
          case f_version: v.version = r.string(f, "WriterVersion.version"); break;
          case f_prerelease: v.prerelease = r.string(f, "WriterVersion.prerelease"); break;
          case f_build_metadata: v.build_metadata = r.string(f, "WriterVersion.build_metadata"); break;
          default: break;
        }
      }
      return v;
    }
    friend bool operator==(const writer_version_info&, const writer_version_info&) = default;
  };

  struct data_storage_format {
    std::string file_format;  // "lance"
    std::string version;      // "2.0", "2.1", "2.2", ... ("0.1" = legacy)
    static constexpr std::uint32_t f_file_format = 1, f_version = 2;

    void encode(writer& w) const {
      w.string_opt(f_file_format, file_format);
      w.string_opt(f_version, version);
    }
    static data_storage_format decode(reader r) {
      data_storage_format d;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == f_file_format) d.file_format = r.string(f, "DataStorageFormat.file_format");
        else if (f.number == f_version) d.version = r.string(f, "DataStorageFormat.version");
      }
      return d;
    }
    friend bool operator==(const data_storage_format&, const data_storage_format&) = default;
  };

  std::vector<std::string> fields_raw;  // encoded lance.file.Field messages, in schema order
  std::map<std::string, std::string> schema_metadata;
  std::vector<data_fragment> fragments;  // sorted by id
  std::uint64_t version = 0;
  std::uint64_t version_aux_data = 0;
  std::optional<std::uint64_t> index_section;  // file offset of the index section
  std::optional<pb::timestamp> timestamp;
  std::string tag;
  std::uint64_t reader_feature_flags = 0;
  std::uint64_t writer_feature_flags = 0;
  std::optional<std::uint32_t> max_fragment_id;
  std::string transaction_file;  // relative to {root}/_transactions
  std::optional<writer_version_info> writer_version;
  std::uint64_t next_row_id = 0;
  std::optional<data_storage_format> data_format;
  std::map<std::string, std::string> config;
  std::vector<base_path> base_paths;
  std::map<std::string, std::string> table_metadata;
  std::optional<std::string> branch;
  std::optional<std::uint64_t> transaction_section;  // file offset of the inline transaction

  static constexpr std::uint32_t f_fields = 1, f_fragments = 2, f_version = 3, f_version_aux_data = 4,
                                 f_schema_metadata = 5, f_index_section = 6, f_timestamp = 7, f_tag = 8,
                                 f_reader_feature_flags = 9, f_writer_feature_flags = 10, f_max_fragment_id = 11,
                                 f_transaction_file = 12, f_writer_version = 13, f_next_row_id = 14,
                                 f_data_format = 15, f_config = 16, f_blob_dataset_version = 17 /* reserved */,
                                 f_base_paths = 18, f_table_metadata = 19, f_branch = 20,
                                 f_transaction_section = 21;

  void encode(writer& w) const {
    table_detail::write_strings(w, f_fields, fields_raw);
    table_detail::message_list(w, f_fragments, fragments);
    w.uint64_opt(f_version, version);
    w.uint64_opt(f_version_aux_data, version_aux_data);
    w.string_map(f_schema_metadata, schema_metadata);
    if (index_section) w.uint64(f_index_section, *index_section);
    if (timestamp) w.message(f_timestamp, *timestamp);
    w.string_opt(f_tag, tag);
    w.uint64_opt(f_reader_feature_flags, reader_feature_flags);
    w.uint64_opt(f_writer_feature_flags, writer_feature_flags);
    if (max_fragment_id) w.uint32(f_max_fragment_id, *max_fragment_id);
    w.string_opt(f_transaction_file, transaction_file);
    if (writer_version) w.message(f_writer_version, *writer_version);
    w.uint64_opt(f_next_row_id, next_row_id);
    if (data_format) w.message(f_data_format, *data_format);
    w.string_map(f_config, config);
    table_detail::message_list(w, f_base_paths, base_paths);
    w.string_map(f_table_metadata, table_metadata);
    if (branch) w.string(f_branch, *branch);
    if (transaction_section) w.uint64(f_transaction_section, *transaction_section);
  }
  static manifest decode(reader r) {
    manifest m;
    while (!r.done()) {
      auto f = r.next();
      switch (f.number) {
        case f_fields: m.fields_raw.push_back(r.string(f, "Manifest.fields")); break;
        case f_fragments: m.fragments.push_back(table_detail::decode_sub<data_fragment>(r, f, "Manifest.fragments")); break;
        case f_version: m.version = r.varint(f, "Manifest.version"); break;
        case f_version_aux_data: m.version_aux_data = r.varint(f, "Manifest.version_aux_data"); break;
        case f_schema_metadata: table_detail::read_map_entry(r, f, "Manifest.schema_metadata", m.schema_metadata); break;
        case f_index_section: m.index_section = r.varint(f, "Manifest.index_section"); break;
        case f_timestamp: m.timestamp = table_detail::decode_sub<pb::timestamp>(r, f, "Manifest.timestamp"); break;
        case f_tag: m.tag = r.string(f, "Manifest.tag"); break;
        case f_reader_feature_flags: m.reader_feature_flags = r.varint(f, "Manifest.reader_feature_flags"); break;
        case f_writer_feature_flags: m.writer_feature_flags = r.varint(f, "Manifest.writer_feature_flags"); break;
        case f_max_fragment_id: m.max_fragment_id = std::uint32_t(r.varint(f, "Manifest.max_fragment_id")); break;
        case f_transaction_file: m.transaction_file = r.string(f, "Manifest.transaction_file"); break;
        case f_writer_version: m.writer_version = table_detail::decode_sub<writer_version_info>(r, f, "Manifest.writer_version"); break;
        case f_next_row_id: m.next_row_id = r.varint(f, "Manifest.next_row_id"); break;
        case f_data_format: m.data_format = table_detail::decode_sub<data_storage_format>(r, f, "Manifest.data_format"); break;
        case f_config: table_detail::read_map_entry(r, f, "Manifest.config", m.config); break;
        case f_base_paths: m.base_paths.push_back(table_detail::decode_sub<base_path>(r, f, "Manifest.base_paths")); break;
        case f_table_metadata: table_detail::read_map_entry(r, f, "Manifest.table_metadata", m.table_metadata); break;
        case f_branch: m.branch = r.string(f, "Manifest.branch"); break;
        case f_transaction_section: m.transaction_section = r.varint(f, "Manifest.transaction_section"); break;
        default: break;
      }
    }
    return m;
  }
  std::string to_bytes() const { return table_detail::encode_to_string(*this); }
  static manifest from_bytes(std::string_view b) { return decode(reader(b, 0, "Manifest")); }
  friend bool operator==(const manifest&, const manifest&) = default;
};

// ---------------------------------------------------------------------------------
// Transaction (transaction.proto)
// ---------------------------------------------------------------------------------

namespace table_detail {

inline void read_fragments(const reader& r, const field_view& f, std::string_view what, std::vector<data_fragment>& out) {
  out.push_back(decode_sub<data_fragment>(r, f, what));
}

}  // namespace table_detail

struct transaction {
  // Add fragments (ids not yet assigned).
  struct append {
    std::vector<data_fragment> fragments;
    void encode(writer& w) const { table_detail::message_list(w, 1, fragments); }
    static append decode(reader r) {
      append a;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) table_detail::read_fragments(r, f, "Append.fragments", a.fragments);
      }
      return a;
    }
    friend bool operator==(const append&, const append&) = default;
  };
  // Mark rows deleted ("Delete").
  struct delete_rows {
    std::vector<data_fragment> updated_fragments;
    std::vector<std::uint64_t> deleted_fragment_ids;
    std::string predicate;
    void encode(writer& w) const {
      table_detail::message_list(w, 1, updated_fragments);
      w.packed_varint(2, deleted_fragment_ids);
      w.string_opt(3, predicate);
    }
    static delete_rows decode(reader r) {
      delete_rows d;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) table_detail::read_fragments(r, f, "Delete.updated_fragments", d.updated_fragments);
        else if (f.number == 2) r.repeated_varint(f, d.deleted_fragment_ids);
        else if (f.number == 3) d.predicate = r.string(f, "Delete.predicate");
      }
      return d;
    }
    friend bool operator==(const delete_rows&, const delete_rows&) = default;
  };
  // Create or replace the whole dataset.
  struct overwrite {
    std::vector<data_fragment> fragments;
    std::vector<std::string> schema_raw;  // encoded lance.file.Field messages
    std::map<std::string, std::string> schema_metadata;
    std::map<std::string, std::string> config_upsert_values;
    std::vector<base_path> initial_bases;
    void encode(writer& w) const {
      table_detail::message_list(w, 1, fragments);
      table_detail::write_strings(w, 2, schema_raw);
      w.string_map(3, schema_metadata);
      w.string_map(4, config_upsert_values);
      table_detail::message_list(w, 5, initial_bases);
    }
    static overwrite decode(reader r) {
      overwrite o;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case 1: table_detail::read_fragments(r, f, "Overwrite.fragments", o.fragments); break;
          case 2: o.schema_raw.push_back(r.string(f, "Overwrite.schema")); break;
          case 3: table_detail::read_map_entry(r, f, "Overwrite.schema_metadata", o.schema_metadata); break;
          case 4: table_detail::read_map_entry(r, f, "Overwrite.config_upsert_values", o.config_upsert_values); break;
          case 5: o.initial_bases.push_back(table_detail::decode_sub<base_path>(r, f, "Overwrite.initial_bases")); break;
          default: break;
        }
      }
      return o;
    }
    friend bool operator==(const overwrite&, const overwrite&) = default;
  };
  // Add, replace or (with no new ones) drop indices.
  struct create_index {
    std::vector<index_metadata> new_indices;
    std::vector<index_metadata> removed_indices;
    void encode(writer& w) const {
      table_detail::message_list(w, 1, new_indices);
      table_detail::message_list(w, 2, removed_indices);
    }
    static create_index decode(reader r) {
      create_index c;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) c.new_indices.push_back(table_detail::decode_sub<index_metadata>(r, f, "CreateIndex.new_indices"));
        else if (f.number == 2) c.removed_indices.push_back(table_detail::decode_sub<index_metadata>(r, f, "CreateIndex.removed_indices"));
      }
      return c;
    }
    friend bool operator==(const create_index&, const create_index&) = default;
  };
  // Compaction: fragments rewritten without changing data.
  struct rewrite {
    struct rewritten_index {
      pb::uuid old_id, new_id;
      std::optional<any> new_index_details;
      std::uint32_t new_index_version = 0;
      std::vector<index_file> new_index_files;  // field 5 (newer than the 1.0-beta proto): LanceDB 0.39 writes it
      void encode(writer& w) const {
        w.message(1, old_id);
        w.message(2, new_id);
        if (new_index_details) w.message(3, *new_index_details);
        w.uint32_opt(4, new_index_version);
        table_detail::message_list(w, 5, new_index_files);
      }
      static rewritten_index decode(reader r) {
        rewritten_index x;
        while (!r.done()) {
          auto f = r.next();
          switch (f.number) {
            case 1: x.old_id = table_detail::decode_sub<pb::uuid>(r, f, "RewrittenIndex.old_id"); break;
            case 2: x.new_id = table_detail::decode_sub<pb::uuid>(r, f, "RewrittenIndex.new_id"); break;
            case 3: x.new_index_details = table_detail::decode_sub<any>(r, f, "RewrittenIndex.new_index_details"); break;
            case 4: x.new_index_version = std::uint32_t(r.varint(f, "RewrittenIndex.new_index_version")); break;
            case 5: x.new_index_files.push_back(table_detail::decode_sub<index_file>(r, f, "RewrittenIndex.new_index_files")); break;
            default: break;
          }
        }
        return x;
      }
      friend bool operator==(const rewritten_index& a, const rewritten_index& b) {
        bool details = a.new_index_details.has_value() == b.new_index_details.has_value() &&
                       (!a.new_index_details || (a.new_index_details->type_url == b.new_index_details->type_url &&
                                                 a.new_index_details->value == b.new_index_details->value));
        return a.old_id == b.old_id && a.new_id == b.new_id && details && a.new_index_version == b.new_index_version &&
               a.new_index_files == b.new_index_files;
      }
    };
    struct rewrite_group {
      std::vector<data_fragment> old_fragments, new_fragments;
      void encode(writer& w) const {
        table_detail::message_list(w, 1, old_fragments);
        table_detail::message_list(w, 2, new_fragments);
      }
      static rewrite_group decode(reader r) {
        rewrite_group g;
        while (!r.done()) {
          auto f = r.next();
          if (f.number == 1) table_detail::read_fragments(r, f, "RewriteGroup.old_fragments", g.old_fragments);
          else if (f.number == 2) table_detail::read_fragments(r, f, "RewriteGroup.new_fragments", g.new_fragments);
        }
        return g;
      }
      friend bool operator==(const rewrite_group&, const rewrite_group&) = default;
    };
    std::vector<data_fragment> old_fragments, new_fragments;  // deprecated by Lance: use groups
    std::vector<rewrite_group> groups;
    std::vector<rewritten_index> rewritten_indices;
    void encode(writer& w) const {
      table_detail::message_list(w, 1, old_fragments);
      table_detail::message_list(w, 2, new_fragments);
      table_detail::message_list(w, 3, groups);
      table_detail::message_list(w, 4, rewritten_indices);
    }
    static rewrite decode(reader r) {
      rewrite x;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case 1: table_detail::read_fragments(r, f, "Rewrite.old_fragments", x.old_fragments); break;
          case 2: table_detail::read_fragments(r, f, "Rewrite.new_fragments", x.new_fragments); break;
          case 3: x.groups.push_back(table_detail::decode_sub<rewrite_group>(r, f, "Rewrite.groups")); break;
          case 4: x.rewritten_indices.push_back(table_detail::decode_sub<rewritten_index>(r, f, "Rewrite.rewritten_indices")); break;
          default: break;
        }
      }
      return x;
    }
    friend bool operator==(const rewrite&, const rewrite&) = default;
  };
  // Add columns (new schema, updated fragments).
  struct merge {
    std::vector<data_fragment> fragments;
    std::vector<std::string> schema_raw;
    std::map<std::string, std::string> schema_metadata;
    void encode(writer& w) const {
      table_detail::message_list(w, 1, fragments);
      table_detail::write_strings(w, 2, schema_raw);
      w.string_map(3, schema_metadata);
    }
    static merge decode(reader r) {
      merge m;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) table_detail::read_fragments(r, f, "Merge.fragments", m.fragments);
        else if (f.number == 2) m.schema_raw.push_back(r.string(f, "Merge.schema"));
        else if (f.number == 3) table_detail::read_map_entry(r, f, "Merge.schema_metadata", m.schema_metadata);
      }
      return m;
    }
    friend bool operator==(const merge&, const merge&) = default;
  };
  struct restore {
    std::uint64_t version = 0;
    void encode(writer& w) const { w.uint64_opt(1, version); }
    static restore decode(reader r) {
      restore x;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) x.version = r.varint(f, "Restore.version");
      }
      return x;
    }
    friend bool operator==(const restore&, const restore&) = default;
  };
  struct reserve_fragments {
    std::uint32_t num_fragments = 0;
    void encode(writer& w) const { w.uint32_opt(1, num_fragments); }
    static reserve_fragments decode(reader r) {
      reserve_fragments x;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) x.num_fragments = std::uint32_t(r.varint(f, "ReserveFragments.num_fragments"));
      }
      return x;
    }
    friend bool operator==(const reserve_fragments&, const reserve_fragments&) = default;
  };
  struct update {
    enum class mode : std::uint32_t { rewrite_rows = 0, rewrite_columns = 1 };
    std::vector<std::uint64_t> removed_fragment_ids;
    std::vector<data_fragment> updated_fragments;
    std::vector<data_fragment> new_fragments;
    std::vector<std::uint32_t> fields_modified;
    std::optional<std::string> mem_wal_to_merge_raw;  // encoded MemWalIndexDetails.MemWal
    std::vector<std::uint32_t> fields_for_preserving_frag_bitmap;
    mode update_mode = mode::rewrite_rows;
    void encode(writer& w) const {
      w.packed_varint(1, removed_fragment_ids);
      table_detail::message_list(w, 2, updated_fragments);
      table_detail::message_list(w, 3, new_fragments);
      w.packed_varint(4, fields_modified);
      if (mem_wal_to_merge_raw) w.bytes(5, std::string_view(*mem_wal_to_merge_raw));
      w.packed_varint(6, fields_for_preserving_frag_bitmap);
      w.uint32_opt(7, std::uint32_t(update_mode));
    }
    static update decode(reader r) {
      update u;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case 1: r.repeated_varint(f, u.removed_fragment_ids); break;
          case 2: table_detail::read_fragments(r, f, "Update.updated_fragments", u.updated_fragments); break;
          case 3: table_detail::read_fragments(r, f, "Update.new_fragments", u.new_fragments); break;
          case 4: r.repeated_varint(f, u.fields_modified); break;
          case 5: u.mem_wal_to_merge_raw = r.string(f, "Update.mem_wal_to_merge"); break;
          case 6: r.repeated_varint(f, u.fields_for_preserving_frag_bitmap); break;
          case 7: {
            auto m = r.varint(f, "Update.update_mode");
            if (m > 1) throw unsupported_error("Update: unknown update mode " + std::to_string(m));
            u.update_mode = mode(m);
            break;
          }
          default: break;
        }
      }
      return u;
    }
    friend bool operator==(const update&, const update&) = default;
  };
  struct project {
    std::vector<std::string> schema_raw;
    void encode(writer& w) const { table_detail::write_strings(w, 1, schema_raw); }
    static project decode(reader r) {
      project p;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) p.schema_raw.push_back(r.string(f, "Project.schema"));
      }
      return p;
    }
    friend bool operator==(const project&, const project&) = default;
  };
  // Key -> value (absent value: remove the key).
  struct update_map {
    std::vector<std::pair<std::string, std::optional<std::string>>> entries;
    bool replace = false;
    void encode(writer& w) const {
      for (const auto& kv : entries)  // no structured bindings: lambdas capture them only from clang 16
        w.message_fn(1, [&](writer& e) {
          e.string_opt(1, kv.first);
          if (kv.second) e.string(2, *kv.second);
        });
      w.boolean_opt(2, replace);
    }
    static update_map decode(reader r) {
      update_map m;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) {
          reader e = r.sub(f, "UpdateMap.update_entries");
          std::pair<std::string, std::optional<std::string>> kv;
          while (!e.done()) {
            auto g = e.next();
            if (g.number == 1) kv.first = e.string(g, "UpdateMapEntry.key");
            else if (g.number == 2) kv.second = e.string(g, "UpdateMapEntry.value");
          }
          m.entries.push_back(std::move(kv));
        } else if (f.number == 2) {
          m.replace = r.varint(f, "UpdateMap.replace") != 0;
        }
      }
      return m;
    }
    friend bool operator==(const update_map&, const update_map&) = default;
  };
  struct update_config {
    std::optional<update_map> config_updates, table_metadata_updates, schema_metadata_updates;
    std::map<std::int32_t, update_map> field_metadata_updates;
    // Deprecated forms, still read.
    std::map<std::string, std::string> upsert_values;
    std::vector<std::string> delete_keys;
    std::map<std::string, std::string> schema_metadata;
    std::map<std::uint32_t, std::map<std::string, std::string>> field_metadata;
    void encode(writer& w) const {
      w.string_map(1, upsert_values);
      table_detail::write_strings(w, 2, delete_keys);
      w.string_map(3, schema_metadata);
      for (const auto& fm : field_metadata)
        w.message_fn(4, [&](writer& e) {
          e.uint32_opt(1, fm.first);
          e.message_fn(2, [&](writer& v) { v.string_map(5, fm.second); });
        });
      if (config_updates) w.message(6, *config_updates);
      if (table_metadata_updates) w.message(7, *table_metadata_updates);
      if (schema_metadata_updates) w.message(8, *schema_metadata_updates);
      for (const auto& fm : field_metadata_updates)
        w.message_fn(9, [&](writer& e) {
          e.int32_opt(1, fm.first);
          e.message(2, fm.second);
        });
    }
    static update_config decode(reader r) {
      update_config u;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case 1: table_detail::read_map_entry(r, f, "UpdateConfig.upsert_values", u.upsert_values); break;
          case 2: u.delete_keys.push_back(r.string(f, "UpdateConfig.delete_keys")); break;
          case 3: table_detail::read_map_entry(r, f, "UpdateConfig.schema_metadata", u.schema_metadata); break;
          case 4: {
            reader e = r.sub(f, "UpdateConfig.field_metadata");
            std::uint32_t id = 0;
            std::map<std::string, std::string> md;
            while (!e.done()) {
              auto g = e.next();
              if (g.number == 1) id = std::uint32_t(e.varint(g, "field_metadata key"));
              else if (g.number == 2) {
                reader v = e.sub(g, "FieldMetadataUpdate");
                while (!v.done()) {
                  auto h = v.next();
                  if (h.number == 5) table_detail::read_map_entry(v, h, "FieldMetadataUpdate.metadata", md);
                }
              }
            }
            u.field_metadata[id] = std::move(md);
            break;
          }
          case 6: u.config_updates = table_detail::decode_sub<update_map>(r, f, "UpdateConfig.config_updates"); break;
          case 7: u.table_metadata_updates = table_detail::decode_sub<update_map>(r, f, "UpdateConfig.table_metadata_updates"); break;
          case 8: u.schema_metadata_updates = table_detail::decode_sub<update_map>(r, f, "UpdateConfig.schema_metadata_updates"); break;
          case 9: {
            reader e = r.sub(f, "UpdateConfig.field_metadata_updates");
            std::int32_t id = 0;
            update_map m;
            while (!e.done()) {
              auto g = e.next();
              if (g.number == 1) id = std::int32_t(std::int64_t(e.varint(g, "field_metadata_updates key")));
              else if (g.number == 2) m = table_detail::decode_sub<update_map>(e, g, "field_metadata_updates value");
            }
            u.field_metadata_updates[id] = std::move(m);
            break;
          }
          default: break;
        }
      }
      return u;
    }
    friend bool operator==(const update_config&, const update_config&) = default;
  };
  struct data_replacement {
    struct group {
      std::uint64_t fragment_id = 0;
      std::optional<data_file> new_file;
      void encode(writer& w) const {
        w.uint64_opt(1, fragment_id);
        if (new_file) w.message(2, *new_file);
      }
      static group decode(reader r) {
        group g;
        while (!r.done()) {
          auto f = r.next();
          if (f.number == 1) g.fragment_id = r.varint(f, "DataReplacementGroup.fragment_id");
          else if (f.number == 2) g.new_file = table_detail::decode_sub<data_file>(r, f, "DataReplacementGroup.new_file");
        }
        return g;
      }
      friend bool operator==(const group&, const group&) = default;
    };
    std::vector<group> replacements;
    void encode(writer& w) const { table_detail::message_list(w, 1, replacements); }
    static data_replacement decode(reader r) {
      data_replacement d;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) d.replacements.push_back(table_detail::decode_sub<group>(r, f, "DataReplacement.replacements"));
      }
      return d;
    }
    friend bool operator==(const data_replacement&, const data_replacement&) = default;
  };
  // MemWAL states are carried as encoded MemWalIndexDetails.MemWal messages.
  struct update_mem_wal_state {
    std::vector<std::string> added_raw, updated_raw, removed_raw;
    void encode(writer& w) const {
      table_detail::write_strings(w, 1, added_raw);
      table_detail::write_strings(w, 2, updated_raw);
      table_detail::write_strings(w, 3, removed_raw);
    }
    static update_mem_wal_state decode(reader r) {
      update_mem_wal_state u;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) u.added_raw.push_back(r.string(f, "UpdateMemWalState.added"));
        else if (f.number == 2) u.updated_raw.push_back(r.string(f, "UpdateMemWalState.updated"));
        else if (f.number == 3) u.removed_raw.push_back(r.string(f, "UpdateMemWalState.removed"));
      }
      return u;
    }
    friend bool operator==(const update_mem_wal_state&, const update_mem_wal_state&) = default;
  };
  struct clone {
    bool is_shallow = false;
    std::optional<std::string> ref_name;
    std::uint64_t ref_version = 0;
    std::string ref_path;
    std::optional<std::string> branch_name;
    void encode(writer& w) const {
      w.boolean_opt(1, is_shallow);
      if (ref_name) w.string(2, *ref_name);
      w.uint64_opt(3, ref_version);
      w.string_opt(4, ref_path);
      if (branch_name) w.string(5, *branch_name);
    }
    static clone decode(reader r) {
      clone c;
      while (!r.done()) {
        auto f = r.next();
        switch (f.number) {
          case 1: c.is_shallow = r.varint(f, "Clone.is_shallow") != 0; break;
          case 2: c.ref_name = r.string(f, "Clone.ref_name"); break;
          case 3: c.ref_version = r.varint(f, "Clone.ref_version"); break;
          case 4: c.ref_path = r.string(f, "Clone.ref_path"); break;
          case 5: c.branch_name = r.string(f, "Clone.branch_name"); break;
          default: break;
        }
      }
      return c;
    }
    friend bool operator==(const clone&, const clone&) = default;
  };
  struct update_bases {
    std::vector<base_path> new_bases;
    void encode(writer& w) const { table_detail::message_list(w, 1, new_bases); }
    static update_bases decode(reader r) {
      update_bases u;
      while (!r.done()) {
        auto f = r.next();
        if (f.number == 1) u.new_bases.push_back(table_detail::decode_sub<base_path>(r, f, "UpdateBases.new_bases"));
      }
      return u;
    }
    friend bool operator==(const update_bases&, const update_bases&) = default;
  };

  // Variant index i is oneof field 100 + i - 1 (index 0: no operation).
  using operation_t = std::variant<std::monostate, append, delete_rows, overwrite, create_index, rewrite, merge, restore,
                                   reserve_fragments, update, project, update_config, data_replacement,
                                   update_mem_wal_state, clone, update_bases>;

  std::uint64_t read_version = 0;
  std::string uuid;  // hyphenated text form
  std::string tag;
  std::map<std::string, std::string> transaction_properties;
  operation_t operation;

  static constexpr std::uint32_t f_read_version = 1, f_uuid = 2, f_tag = 3, f_transaction_properties = 4;
  static constexpr std::uint32_t f_operation_first = 100;
  static constexpr std::uint32_t f_operation_last = f_operation_first + std::variant_size_v<operation_t> - 2;

  // "{read_version}-{uuid}.txn": its name under {root}/_transactions.
  std::string file_name() const { return std::to_string(read_version) + "-" + uuid + ".txn"; }

  void encode(writer& w) const {
    if (std::holds_alternative<std::monostate>(operation))
      throw invalid_input_error("transaction " + uuid + " has no operation");
    w.uint64_opt(f_read_version, read_version);
    w.string_opt(f_uuid, uuid);
    w.string_opt(f_tag, tag);
    w.string_map(f_transaction_properties, transaction_properties);
    const auto field = std::uint32_t(f_operation_first + operation.index() - 1);
    std::visit(
        [&](const auto& op) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(op)>, std::monostate>) w.message(field, op);
        },
        operation);
  }
  static transaction decode(reader r) {
    transaction t;
    while (!r.done()) {
      auto f = r.next();
      if (f.number == f_read_version) t.read_version = r.varint(f, "Transaction.read_version");
      else if (f.number == f_uuid) t.uuid = r.string(f, "Transaction.uuid");
      else if (f.number == f_tag) t.tag = r.string(f, "Transaction.tag");
      else if (f.number == f_transaction_properties)
        table_detail::read_map_entry(r, f, "Transaction.transaction_properties", t.transaction_properties);
      else if (f.number >= f_operation_first && f.number <= f_operation_last)
        t.operation = decode_operation(r, f, f.number - f_operation_first + 1);
      else if (f.number > f_operation_last && f.number < 200)
        table_detail::unknown_variant("Transaction.operation", f.number);
    }
    // Lance refuses a transaction without an operation.
    if (std::holds_alternative<std::monostate>(t.operation))
      throw corrupt_error("Transaction " + t.uuid + ": no operation");
    return t;
  }
  std::string to_bytes() const { return table_detail::encode_to_string(*this); }
  static transaction from_bytes(std::string_view b) { return decode(reader(b, 0, "Transaction")); }
  friend bool operator==(const transaction&, const transaction&) = default;

 private:
  template <std::size_t I = 1>
  static operation_t decode_operation(const reader& r, const field_view& f, std::size_t index) {
    if constexpr (I < std::variant_size_v<operation_t>) {
      if (index == I) {
        using op = std::variant_alternative_t<I, operation_t>;
        return operation_t(std::in_place_index<I>, table_detail::decode_sub<op>(r, f, "Transaction.operation"));
      }
      return decode_operation<I + 1>(r, f, index);
    } else {
      table_detail::unknown_variant("Transaction.operation", f.number);
    }
  }
};

}  // namespace lancet::pb
