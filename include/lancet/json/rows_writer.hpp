// Arrow record batches -> JSON Lines: one object per row, keys in schema order,
// every field present. The value forms are those rows_reader reads back, and the
// same text as LanceDB's canonical JSON (tests/interop/README.md) except where
// noted:
//   null (any type)        null
//   bool                   true / false
//   int8..uint64           numbers, exact (int64/uint64 as "..." strings with
//                          write_options::int64_as_string, as the canonical form does)
//   float16/32/64          shortest decimal that reads back as the same value at the
//                          column's width (float32 0.1f -> 0.1), laid out as
//                          JavaScript prints numbers (1e+300, 1e-7, 100000000000000000000);
//                          -0 for negative zero; "NaN", "Infinity", "-Infinity"
//   date32 / date64        days / milliseconds since the epoch
//   time, timestamp, duration   integers in the type's unit
//   decimal128/256         strings with exactly `scale` fractional digits ("-12.3400")
//   utf8                   strings (JSON.stringify escapes)
//   binary, fixed_size_binary   base64 strings (standard alphabet, padded)
//   list, fixed_size_list  arrays;   struct: objects, members in field order
// The batch must be valid (arrow::validate); utf8 values that are not UTF-8 are
// refused with invalid_input_error naming the row and field.
#pragma once

#include <charconv>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/error.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/json/numbers.hpp"
#include "lancet/json/value.hpp"
#include "lancet/json/value_path.hpp"
#include "lancet/json/write.hpp"

namespace lancet::json {

struct write_options {
  // Write int64 and uint64 values as decimal strings, as LanceDB's canonical form
  // (and JavaScript readers that would round them through a double) expect.
  bool int64_as_string = false;

  // The canonical form of tests/interop/README.md.
  static write_options canonical() {
    write_options o;
    o.int64_as_string = true;
    return o;
  }
};

namespace detail {

template <class T>
void append_int(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, std::size_t(r.ptr - buf));
}

inline void append_key(std::string& out, std::string_view name, std::int64_t row, const value_path& at) {
  if (!arrow::is_valid_utf8(name))
    throw invalid_input_error("JSON rows: row " + std::to_string(row) + ", field '" + at.render() +
                              "': the field name is not valid UTF-8");
  append_quoted(out, name);
  out.push_back(':');
}

inline void append_value(std::string& out, const arrow::array_data& a, std::int64_t i, std::int64_t row,
                         const value_path& at, const write_options& o) {
  using arrow::type_id;
  if (a.is_null(i)) {
    out += "null";
    return;
  }
  const auto& t = *a.type;
  switch (t.id) {
    case type_id::null: out += "null"; return;
    case type_id::boolean: out += a.bool_value(i) ? "true" : "false"; return;
    case type_id::int8: return append_int(out, a.value<std::int8_t>(i));
    case type_id::int16: return append_int(out, a.value<std::int16_t>(i));
    case type_id::int32: case type_id::date32: case type_id::time32: return append_int(out, a.value<std::int32_t>(i));
    case type_id::uint8: return append_int(out, a.value<std::uint8_t>(i));
    case type_id::uint16: return append_int(out, a.value<std::uint16_t>(i));
    case type_id::uint32: return append_int(out, a.value<std::uint32_t>(i));
    case type_id::int64:
    case type_id::uint64:
      if (o.int64_as_string) out.push_back('"');
      if (t.id == type_id::int64) append_int(out, a.value<std::int64_t>(i));
      else append_int(out, a.value<std::uint64_t>(i));
      if (o.int64_as_string) out.push_back('"');
      return;
    case type_id::date64: case type_id::time64: case type_id::timestamp: case type_id::duration:
      return append_int(out, a.value<std::int64_t>(i));
    case type_id::float16: return append_half(out, a.value<std::uint16_t>(i));
    case type_id::float32: return append_float(out, a.value<float>(i));
    case type_id::float64: return append_float(out, a.value<double>(i));
    case type_id::decimal128:
    case type_id::decimal256: {
      const int w = t.id == type_id::decimal128 ? 16 : 32;
      out.push_back('"');
      out += decimal_text(a.buffers[1].data() + (a.offset + i) * w, w, t.scale);
      out.push_back('"');
      return;
    }
    case type_id::utf8:
    case type_id::large_utf8: {
      const auto s = a.string_value(i);
      if (!arrow::is_valid_utf8(s))
        throw invalid_input_error("JSON rows: row " + std::to_string(row) + ", field '" + at.render() +
                                  "': the utf8 value is not valid UTF-8");
      return append_quoted(out, s);
    }
    case type_id::binary:
    case type_id::large_binary:
      out.push_back('"');
      append_base64(out, a.string_value(i));
      out.push_back('"');
      return;
    case type_id::fixed_size_binary:
      out.push_back('"');
      append_base64(out, a.fixed_binary_value(i));
      out.push_back('"');
      return;
    case type_id::dictionary:  // JSON has no dictionaries: the value
      return append_value(out, *a.children[0], a.dictionary_index(i), row, at, o);
    case type_id::list:
    case type_id::large_list:
    case type_id::map: {  // a map: an array of {"key": ..., "value": ...} entries
      const auto b = a.value_offset(i), e = a.value_offset(i + 1);
      out.push_back('[');
      for (auto k = b; k < e; ++k) {
        if (k > b) out.push_back(',');
        append_value(out, *a.children[0], k, row, value_path{&at, {}, k - b}, o);
      }
      out.push_back(']');
      return;
    }
    case type_id::fixed_size_list: {
      const std::int64_t n = t.list_size;
      out.push_back('[');
      for (std::int64_t k = 0; k < n; ++k) {
        if (k) out.push_back(',');
        append_value(out, *a.children[0], (a.offset + i) * n + k, row, value_path{&at, {}, k}, o);
      }
      out.push_back(']');
      return;
    }
    case type_id::struct_: {
      out.push_back('{');
      for (std::size_t c = 0; c < t.children.size(); ++c) {
        if (c) out.push_back(',');
        const value_path sub{&at, t.children[c].name, -1};
        append_key(out, t.children[c].name, row, sub);
        append_value(out, *a.children[c], a.offset + i, row, sub, o);
      }
      out.push_back('}');
      return;
    }
  }
}

inline void check_batch_shape(const arrow::record_batch& rb) {
  if (!rb.schema) throw invalid_input_error("JSON rows: the record batch has no schema");
  if (rb.schema->fields.size() != rb.columns.size())
    throw invalid_input_error("JSON rows: the schema has " + std::to_string(rb.schema->fields.size()) +
                              " fields but the batch has " + std::to_string(rb.columns.size()) + " columns");
  for (std::size_t c = 0; c < rb.columns.size(); ++c) {
    const auto& name = rb.schema->fields[c].name;
    if (!rb.columns[c]) throw invalid_input_error("JSON rows: column '" + name + "' is null");
    if (rb.columns[c]->length != rb.num_rows())
      throw invalid_input_error("JSON rows: column '" + name + "' has " + std::to_string(rb.columns[c]->length) +
                                " rows, expected " + std::to_string(rb.num_rows()));
  }
}

inline void append_row_unchecked(std::string& out, const arrow::record_batch& rb, std::int64_t row,
                                 const write_options& o) {
  out.push_back('{');
  for (std::size_t c = 0; c < rb.columns.size(); ++c) {
    if (c) out.push_back(',');
    const auto& name = rb.schema->fields[c].name;
    const value_path at{nullptr, name, -1};
    append_key(out, name, row, at);
    append_value(out, *rb.columns[c], row, row, at, o);
  }
  out.push_back('}');
}

}  // namespace detail

// Appends row `row` of the batch as one JSON object (no newline).
inline void append_row(std::string& out, const arrow::record_batch& rb, std::int64_t row,
                       const write_options& o = {}) {
  detail::check_batch_shape(rb);
  if (row < 0 || row >= rb.num_rows())
    throw invalid_input_error("JSON rows: row " + std::to_string(row) + " is outside a batch of " +
                              std::to_string(rb.num_rows()) + " rows");
  detail::append_row_unchecked(out, rb, row, o);
}

// All rows of the batch as JSON Lines text (each line ends with '\n').
inline std::string rows_to_json(const arrow::record_batch& rb, const write_options& o = {}) {
  detail::check_batch_shape(rb);
  std::string out;
  for (std::int64_t r = 0; r < rb.num_rows(); ++r) {
    detail::append_row_unchecked(out, rb, r, o);
    out.push_back('\n');
  }
  return out;
}

// Writes the batch's rows to `os` as JSON Lines. Nothing of a row is written when
// it is refused; a failing stream raises io_error.
inline void write_rows(std::ostream& os, const arrow::record_batch& rb, const write_options& o = {}) {
  detail::check_batch_shape(rb);
  std::string buf;
  auto flush = [&] {
    os.write(buf.data(), std::streamsize(buf.size()));
    if (!os) throw io_error("JSON rows: writing to the output stream failed");
    buf.clear();
  };
  for (std::int64_t r = 0; r < rb.num_rows(); ++r) {
    const auto mark = buf.size();
    try {
      detail::append_row_unchecked(buf, rb, r, o);
    } catch (...) {
      buf.resize(mark);
      flush();  // the rows before the refused one are complete
      throw;
    }
    buf.push_back('\n');
    if (buf.size() >= (1u << 20)) flush();
  }
  flush();
}

}  // namespace lancet::json
