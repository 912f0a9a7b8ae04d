// rowids.proto (package lance.table): the row ids of a fragment's rows (stable row ids)
// and the per-row dataset versions (created at / last updated at), as sequences of u64
// segments: ranges, ranges with holes or a bitmap, and compactly stored arrays.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"

namespace lancet::pb {

namespace detail {

// EncodedU64Array.U16Array and .U32Array: values are base + the little-endian offsets.
struct u64_offsets_wire {
  static constexpr std::string_view message_name = "EncodedU64Array offsets";
  static constexpr std::uint32_t f_base = 1, f_offsets = 2;
  std::uint64_t base = 0;
  std::string offsets;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_base, &u64_offsets_wire::base, "EncodedU64Array.base"),
                      pb::field(f_offsets, &u64_offsets_wire::offsets, "EncodedU64Array.offsets"));
  }
  friend bool operator==(const u64_offsets_wire&, const u64_offsets_wire&) = default;
};
// EncodedU64Array.U64Array: little-endian values.
struct u64_values_wire {
  static constexpr std::string_view message_name = "EncodedU64Array.U64Array";
  static constexpr std::uint32_t f_values = 2;
  std::string values;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_values, &u64_values_wire::values, "EncodedU64Array.values"));
  }
  friend bool operator==(const u64_values_wire&, const u64_values_wire&) = default;
};
// EncodedU64Array as it is on the wire: oneof { U16Array = 1; U32Array = 2; U64Array = 3 }.
struct encoded_u64_array_wire {
  static constexpr std::string_view message_name = "EncodedU64Array";
  using array_type = std::variant<std::monostate, u64_offsets_wire, u64_offsets_wire, u64_values_wire>;
  array_type array;
  static constexpr auto proto_fields() {
    return pb::fields(
        pb::oneof(&encoded_u64_array_wire::array, "EncodedU64Array").refusing(unknown_field::corrupt).require());
  }
};

}  // namespace detail

// u64 values stored compactly: offsets from a base (u16 / u32, little-endian bytes)
// or plain u64 values.
struct encoded_u64_array {
  static constexpr std::string_view message_name = "EncodedU64Array";
  enum class kind : std::uint8_t { u16 = 1, u32 = 2, u64 = 3 };  // the variant's index on the wire
  kind type = kind::u64;
  std::uint64_t base = 0;  // u16 / u32 only
  std::string data;        // little-endian offsets (u16/u32) or values (u64)

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

  // On the wire: a oneof of the three shapes.
  detail::encoded_u64_array_wire to_wire() const {
    detail::encoded_u64_array_wire x;
    if (type == kind::u16) x.array.emplace<1>(detail::u64_offsets_wire{base, data});
    else if (type == kind::u32) x.array.emplace<2>(detail::u64_offsets_wire{base, data});
    else x.array.emplace<3>(detail::u64_values_wire{data});
    return x;
  }
  static encoded_u64_array from_wire(detail::encoded_u64_array_wire x) {
    encoded_u64_array a;
    a.type = kind(x.array.index());
    if (auto* v = std::get_if<3>(&x.array)) {
      a.data = std::move(v->values);
    } else {
      auto& o = x.array.index() == 1 ? std::get<1>(x.array) : std::get<2>(x.array);
      a.base = o.base;
      a.data = std::move(o.offsets);
    }
    if (a.data.size() % a.width())
      throw corrupt_error("EncodedU64Array: " + std::to_string(a.data.size()) + " bytes is not a multiple of " +
                          std::to_string(a.width()));
    return a;
  }
  friend bool operator==(const encoded_u64_array&, const encoded_u64_array&) = default;
};

// The shapes of a u64 segment (namespace scope so that they are complete, and default
// constructible, inside u64_segment's variant).
struct u64_range {
  static constexpr std::string_view message_name = "U64Segment.Range";
  static constexpr std::uint32_t f_start = 1, f_end = 2;
  std::uint64_t start = 0, end = 0;
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_start, &u64_range::start, "Range.start"),
                      pb::field(f_end, &u64_range::end, "Range.end"));
  }
  friend bool operator==(const u64_range&, const u64_range&) = default;
};
struct u64_range_with_holes {
  static constexpr std::string_view message_name = "U64Segment.RangeWithHoles";
  static constexpr std::uint32_t f_start = 1, f_end = 2, f_holes = 3;
  std::uint64_t start = 0, end = 0;
  encoded_u64_array holes;  // absolute values missing from [start, end)
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_start, &u64_range_with_holes::start, "RangeWithHoles.start"),
                      pb::field(f_end, &u64_range_with_holes::end, "RangeWithHoles.end"),
                      pb::required(f_holes, &u64_range_with_holes::holes, "RangeWithHoles.holes"));
  }
  friend bool operator==(const u64_range_with_holes&, const u64_range_with_holes&) = default;
};
struct u64_range_with_bitmap {
  static constexpr std::string_view message_name = "U64Segment.RangeWithBitmap";
  static constexpr std::uint32_t f_start = 1, f_end = 2, f_bitmap = 3;
  std::uint64_t start = 0, end = 0;
  std::string bitmap;  // bit i (LSB first) set: start + i is present
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_start, &u64_range_with_bitmap::start, "RangeWithBitmap.start"),
                      pb::field(f_end, &u64_range_with_bitmap::end, "RangeWithBitmap.end"),
                      pb::field(f_bitmap, &u64_range_with_bitmap::bitmap, "RangeWithBitmap.bitmap"));
  }
  friend bool operator==(const u64_range_with_bitmap&, const u64_range_with_bitmap&) = default;
};
// Sorted / unsorted arrays: on the wire, the EncodedU64Array itself.
struct u64_sorted_array {
  encoded_u64_array values;
  const encoded_u64_array& to_wire() const { return values; }
  static u64_sorted_array from_wire(encoded_u64_array a) { return {std::move(a)}; }
  friend bool operator==(const u64_sorted_array&, const u64_sorted_array&) = default;
};
struct u64_array {
  encoded_u64_array values;
  const encoded_u64_array& to_wire() const { return values; }
  static u64_array from_wire(encoded_u64_array a) { return {std::move(a)}; }
  friend bool operator==(const u64_array&, const u64_array&) = default;
};

// One run of a u64 sequence: oneof segment { Range = 1; RangeWithHoles = 2;
// RangeWithBitmap = 3; EncodedU64Array sorted_array = 4; EncodedU64Array array = 5; }
struct u64_segment {
  static constexpr std::string_view message_name = "U64Segment";
  using range = u64_range;
  using range_with_holes = u64_range_with_holes;
  using range_with_bitmap = u64_range_with_bitmap;
  using sorted_array = u64_sorted_array;
  using array = u64_array;

  std::variant<range, range_with_holes, range_with_bitmap, sorted_array, array> segment;

  static u64_segment make_range(std::uint64_t start, std::uint64_t end) {
    if (end < start) throw invalid_input_error("u64 range [" + std::to_string(start) + ", " + std::to_string(end) + ") is reversed");
    return u64_segment{range{start, end}};
  }

  // Number of values (holes and cleared bits excluded).
  std::uint64_t size() const {
    if (auto* r = std::get_if<range>(&segment)) return r->end - r->start;
    if (auto* h = std::get_if<range_with_holes>(&segment)) return h->end - h->start - h->holes.size();
    if (auto* b = std::get_if<range_with_bitmap>(&segment)) {
      std::uint64_t n = 0;
      for (std::uint64_t i = 0; i < b->end - b->start && i / 8 < b->bitmap.size(); ++i)
        n += (std::uint8_t(b->bitmap[i / 8]) >> (i % 8)) & 1;
      return n;
    }
    if (auto* s = std::get_if<sorted_array>(&segment)) return s->values.size();
    return std::get<array>(segment).values.size();
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

  static constexpr auto proto_fields() {
    return pb::fields(pb::oneof(&u64_segment::segment, "U64Segment").refusing(unknown_field::corrupt).require());
  }
  void check_decoded() const {
    if (auto* x = std::get_if<range>(&segment)) {
      check_span(x->start, x->end);
    } else if (auto* h = std::get_if<range_with_holes>(&segment)) {
      check_span(h->start, h->end);
      if (h->holes.size() > h->end - h->start)
        throw corrupt_error("U64Segment.RangeWithHoles: " + std::to_string(h->holes.size()) + " holes in a range of " +
                            std::to_string(h->end - h->start));
    } else if (auto* b = std::get_if<range_with_bitmap>(&segment)) {
      check_span(b->start, b->end);
      if (b->bitmap.size() < (b->end - b->start + 7) / 8)
        throw corrupt_error("U64Segment.RangeWithBitmap: bitmap of " + std::to_string(b->bitmap.size()) +
                            " bytes is too short for " + std::to_string(b->end - b->start) + " values");
    }
  }
  friend bool operator==(const u64_segment&, const u64_segment&) = default;

 private:
  static void check_span(std::uint64_t start, std::uint64_t end) {
    if (end < start)
      throw corrupt_error("U64Segment: range end " + std::to_string(end) + " before start " + std::to_string(start));
    // A segment describes rows of one fragment, which has fewer than 2^32 rows.
    if (end - start > (std::uint64_t(1) << 32))
      throw corrupt_error("U64Segment: range [" + std::to_string(start) + ", " + std::to_string(end) +
                          ") spans more than 2^32 rows");
  }
};

// The row ids of a fragment's rows, in row order (stable row ids feature).
struct row_id_sequence {
  static constexpr std::string_view message_name = "RowIdSequence";
  static constexpr std::uint32_t f_segments = 1;
  std::vector<u64_segment> segments;

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

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_segments, &row_id_sequence::segments, "RowIdSequence.segments"));
  }
  friend bool operator==(const row_id_sequence&, const row_id_sequence&) = default;
};

// A run of rows (by offset within the fragment) that share a dataset version.
struct row_dataset_version_run {
  static constexpr std::string_view message_name = "RowDatasetVersionRun";
  static constexpr std::uint32_t f_span = 1, f_version = 2;
  u64_segment span;
  std::uint64_t version = 0;

  static constexpr auto proto_fields() {
    return pb::fields(pb::required(f_span, &row_dataset_version_run::span, "RowDatasetVersionRun.span"),
                      pb::field(f_version, &row_dataset_version_run::version, "RowDatasetVersionRun.version"));
  }
  friend bool operator==(const row_dataset_version_run&, const row_dataset_version_run&) = default;
};

// Per-row created-at / last-updated-at dataset versions of a fragment. Runs follow one
// another: a run covers as many rows as its span holds, after the rows of the runs
// before it (the span's values do not place it: Lance's compaction keeps each source
// fragment's spans as they were).
struct row_dataset_version_sequence {
  static constexpr std::string_view message_name = "RowDatasetVersionSequence";
  static constexpr std::uint32_t f_runs = 1;
  std::vector<row_dataset_version_run> runs;

  // Every one of `rows` rows carries `version` (what a new fragment gets).
  static row_dataset_version_sequence uniform(std::uint64_t rows, std::uint64_t version) {
    row_dataset_version_sequence s;
    if (rows) s.runs.push_back({u64_segment::make_range(0, rows), version});
    return s;
  }
  // The version of each row, in row order.
  std::vector<std::uint64_t> versions() const {
    std::vector<std::uint64_t> out;
    for (const auto& r : runs) out.insert(out.end(), std::size_t(r.span.size()), r.version);
    return out;
  }
  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_runs, &row_dataset_version_sequence::runs, "RowDatasetVersionSequence.runs"));
  }
  friend bool operator==(const row_dataset_version_sequence&, const row_dataset_version_sequence&) = default;
};

}  // namespace lancet::pb
