// A vector column as a search reads it: a fixed_size_list of float16, float32,
// float64 or uint8 (binary codes), its dimension, and its rows as typed pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/error.hpp"
#include "lancet/simd/f16.hpp"

namespace lancet::query {

enum class vector_element : std::uint8_t { f16, f32, f64, u8 };

struct vector_column_type {
  vector_element element = vector_element::f32;
  std::size_t dimension = 0;
};

// The element type and dimension of a vector column of type t; invalid_input_error
// naming the column when it is not one.
inline vector_column_type vector_type_of(const arrow::data_type& t, const std::string& column) {
  if (t.id != arrow::type_id::fixed_size_list || t.children.empty() || !t.children[0].type)
    throw invalid_input_error("column '" + column + "' is " + arrow::to_string(t) +
                              ", not a vector column (a fixed_size_list of floats or uint8)");
  vector_column_type v;
  v.dimension = std::size_t(t.list_size);
  switch (t.children[0].type->id) {
    case arrow::type_id::float16: v.element = vector_element::f16; break;
    case arrow::type_id::float32: v.element = vector_element::f32; break;
    case arrow::type_id::float64: v.element = vector_element::f64; break;
    case arrow::type_id::uint8: v.element = vector_element::u8; break;
    default:
      throw invalid_input_error("column '" + column + "' holds " + arrow::to_string(*t.children[0].type) +
                                " vectors; lancet searches float16, float32, float64 and uint8 vectors");
  }
  if (v.dimension == 0) throw invalid_input_error("column '" + column + "' has vectors of dimension 0");
  return v;
}

// Calls f(pointer) with the first value of a fixed_size_list array's row 0, typed
// (const simd::f16*, const float*, const double* or const std::uint8_t*); row r's
// vector starts dimension * r values later.
template <class F>
decltype(auto) with_vector_rows(const arrow::array_data& a, vector_element e, std::size_t dimension, F&& f) {
  const arrow::array_data& items = *a.children.at(0);
  const std::int64_t first = (a.offset) * std::int64_t(dimension);
  switch (e) {
    case vector_element::f16: return f(reinterpret_cast<const simd::f16*>(items.values<std::uint16_t>() + first));
    case vector_element::f32: return f(items.values<float>() + first);
    case vector_element::f64: return f(items.values<double>() + first);
    case vector_element::u8: break;
  }
  return f(items.values<std::uint8_t>() + first);
}

}  // namespace lancet::query
