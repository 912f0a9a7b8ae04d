// Decoding Lance 2.0 pages back into Arrow arrays. Every size, index and offset read
// from the file is checked; anything inconsistent is a corrupt_error naming where.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/pb/encodings_v2_0.hpp"

namespace lancet::encoding::legacy {

namespace enc20 = pb::enc20;

// Decoded list offsets of one page: n end offsets with nulls folded in.
struct list_page {
  std::vector<std::uint64_t> ends;
  std::uint64_t null_adjustment = 0;
  std::uint64_t num_items = 0;
  bool is_null(std::size_t i) const noexcept { return ends[i] >= null_adjustment; }
  std::uint64_t end(std::size_t i) const noexcept { return is_null(i) ? ends[i] - null_adjustment : ends[i]; }
};

// The values of a 2.0 Nullable page with its validity bitmap put in front (a null
// type keeps no bitmap). Shared by the page decoder and the row-wise take.
inline arrow::array_ptr with_validity(const arrow::array_data& values, shared_bytes validity,
                                      const arrow::type_ptr& type) {
  auto out = std::make_shared<arrow::array_data>(values);
  if (type->id != arrow::type_id::null) {
    if (out->buffers.empty()) out->buffers.resize(1);
    out->buffers[0] = std::move(validity);
    out->offset = 0;
    out->null_count = -1;
  }
  return out;
}

// A binary/string array of n rows from its built buffers (no validity buffer when
// nothing is null). Shared by the page decoder and the row-wise take.
inline arrow::array_ptr binary_array(const arrow::type_ptr& type, std::uint64_t n, std::int64_t nulls,
                                     aligned_buffer validity, aligned_buffer offsets, shared_bytes bytes) {
  auto out = std::make_shared<arrow::array_data>();
  out->type = type;
  out->length = std::int64_t(n);
  out->null_count = nulls;
  out->buffers = {nulls ? shared_bytes(std::move(validity)) : shared_bytes(), shared_bytes(std::move(offsets)),
                  std::move(bytes)};
  return out;
}

class page_decoder {
 public:
  page_decoder(const std::vector<shared_bytes>& buffers, std::string where)
      : buffers_(buffers), where_(std::move(where)) {}

  // Set for the pages of a dictionary field (logical type "dict:..."): Lance writes
  // those with 0-based indices of the field's index width, nulls as null items.
  bool dictionary_field = false;

  arrow::array_ptr decode(const enc20::array_encoding& e, std::uint64_t n, const arrow::type_ptr& type) {
    return std::visit([&](const auto& m) { return decode_one(m, n, type); }, e.value);
  }

  list_page decode_list(const enc20::array_encoding& e, std::uint64_t n) {
    const auto* l = std::get_if<enc20::list>(&e.value);
    if (!l) fail("a list column page does not hold a List encoding");
    list_page out;
    out.null_adjustment = l->null_offset_adjustment;
    out.num_items = l->num_items;
    if (!l->offsets) fail("List encoding without offsets");
    out.ends = u64_values(*l->offsets, n, "list offsets");
    std::uint64_t prev = 0;
    for (std::size_t i = 0; i < out.ends.size(); ++i) {
      if (out.null_adjustment == 0) fail("List encoding with a zero null_offset_adjustment");
      const auto e_i = out.end(i);
      if (e_i < prev || e_i > out.num_items)
        fail("list offset " + std::to_string(e_i) + " at row " + std::to_string(i) + " is out of order or past " +
             std::to_string(out.num_items) + " items");
      prev = e_i;
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw corrupt_error(where_ + ": " + msg); }

  const shared_bytes& buffer(const std::optional<enc20::buffer>& b, std::uint64_t need, const char* what) const {
    if (!b) fail(std::string(what) + " has no buffer");
    if (b->type != enc20::buffer::page)
      throw unsupported_error(where_ + ": " + what + " refers to a column or file buffer");
    if (b->buffer_index >= buffers_.size())
      fail(std::string(what) + " refers to buffer " + std::to_string(b->buffer_index) + " but the page has " +
           std::to_string(buffers_.size()));
    const auto& buf = buffers_[b->buffer_index];
    if (buf.size() < need)
      fail(std::string(what) + " buffer " + std::to_string(b->buffer_index) + " holds " + std::to_string(buf.size()) +
           " bytes, " + std::to_string(need) + " needed");
    return buf;
  }

  static std::uint64_t bytes_for(std::uint64_t n, std::uint64_t bits) {
    if (bits != 0 && n > std::numeric_limits<std::uint64_t>::max() / bits)
      throw corrupt_error("value count " + std::to_string(n) + " overflows");
    return (n * bits + 7) / 8;
  }


  shared_bytes flat_buffer(const enc20::array_encoding& e, std::uint64_t n, std::uint64_t bits, const char* what) {
    const enc20::array_encoding* cur = &e;
    if (const auto* nl = std::get_if<enc20::nullable>(&cur->value)) {
      const auto* nn = std::get_if<enc20::nullable::no_null>(&nl->nullability);
      if (!nn || !nn->values) fail(std::string(what) + " must not be nullable");
      cur = &*nn->values;
    }
    const auto* f = std::get_if<enc20::flat>(&cur->value);
    if (!f) fail(std::string(what) + " is not a flat encoding");
    if (f->compression) throw unsupported_error(where_ + ": compressed " + what);
    if (f->bits_per_value != bits)
      fail(std::string(what) + " has " + std::to_string(f->bits_per_value) + " bits per value, expected " +
           std::to_string(bits));
    return buffer(f->buffer, bytes_for(n, bits), what).slice(0, std::size_t(bytes_for(n, bits)));
  }

  std::vector<std::uint64_t> u64_values(const enc20::array_encoding& e, std::uint64_t n, const char* what) {
    auto b = flat_buffer(e, n, 64, what);
    std::vector<std::uint64_t> out(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = le::load<std::uint64_t>(b.data() + 8 * i);
    return out;
  }

  static arrow::array_ptr all_null(std::uint64_t n, const arrow::type_ptr& type);

  arrow::array_ptr decode_one(const std::monostate&, std::uint64_t, const arrow::type_ptr&) {
    fail("page encoding is empty");
  }

  arrow::array_ptr decode_one(const enc20::nullable& m, std::uint64_t n, const arrow::type_ptr& type) {
    if (std::holds_alternative<enc20::nullable::all_null>(m.nullability)) return all_null(n, type);
    if (const auto* nn = std::get_if<enc20::nullable::no_null>(&m.nullability)) {
      if (!nn->values) fail("NoNull without values");
      return decode(*nn->values, n, type);
    }
    if (const auto* sn = std::get_if<enc20::nullable::some_null>(&m.nullability)) {
      if (!sn->validity || !sn->values) fail("SomeNull without validity or values");
      auto validity = flat_buffer(*sn->validity, n, 1, "validity");
      return with_validity(*decode(*sn->values, n, type), std::move(validity), type);
    }
    fail("Nullable without a nullability");
  }

  arrow::array_ptr decode_one(const enc20::flat& m, std::uint64_t n, const arrow::type_ptr& type) {
    const auto bits = type->id == arrow::type_id::boolean ? 1 : arrow::bit_width(*type);
    if (bits <= 0) fail("a flat page for a non fixed-width type");
    if (m.compression) throw unsupported_error(where_ + ": flat values compressed with '" + m.compression->scheme + "'");
    if (m.bits_per_value != std::uint64_t(bits))
      fail("flat page has " + std::to_string(m.bits_per_value) + " bits per value, the type needs " +
           std::to_string(bits));
    const auto need = bytes_for(n, std::uint64_t(bits));
    auto out = std::make_shared<arrow::array_data>();
    out->type = type;
    out->length = std::int64_t(n);
    out->null_count = 0;
    out->buffers = {shared_bytes(), buffer(m.buffer, need, "values").slice(0, std::size_t(need))};
    return out;
  }

  arrow::array_ptr decode_one(const enc20::fixed_size_list& m, std::uint64_t n, const arrow::type_ptr& type) {
    if (type->id != arrow::type_id::fixed_size_list) fail("a fixed-size list page for another type");
    if (m.dimension != std::uint32_t(type->list_size))
      fail("fixed-size list of dimension " + std::to_string(m.dimension) + ", the schema says " +
           std::to_string(type->list_size));
    if (!m.items) fail("FixedSizeList without items");
    auto out = std::make_shared<arrow::array_data>();
    out->type = type;
    out->length = std::int64_t(n);
    out->null_count = 0;
    out->buffers = {shared_bytes()};
    out->children = {decode(*m.items, n * m.dimension, type->children.at(0).type)};
    return out;
  }

  arrow::array_ptr decode_one(const enc20::binary& m, std::uint64_t n, const arrow::type_ptr& type) {
    if (!arrow::is_binary_like(type->id)) fail("a binary page for a non-binary type");
    if (!m.indices || !m.bytes) fail("Binary without indices or bytes");
    auto ends = u64_values(*m.indices, n, "binary offsets");
    const auto* fb = std::get_if<enc20::flat>(&m.bytes->value);
    if (!fb || fb->bits_per_value != 8) fail("binary bytes are not 8-bit flat values");
    if (fb->compression) throw unsupported_error(where_ + ": binary bytes compressed with '" + fb->compression->scheme + "'");
    const bool large = arrow::is_large_binary_like(type->id);
    aligned_buffer offs, validity;
    offs.resize(std::size_t(n + 1) * (large ? 8 : 4));
    validity.resize(std::size_t((n + 7) / 8));
    std::int64_t nulls = 0;
    std::uint64_t prev = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t e = ends[i];
      const bool is_null = m.null_adjustment != 0 && e >= m.null_adjustment;
      if (is_null) { e -= m.null_adjustment; ++nulls; }
      else arrow::set_bit(validity.data(), std::int64_t(i), true);
      if (e < prev) fail("binary offset " + std::to_string(e) + " at row " + std::to_string(i) + " goes backwards");
      if (!large && e > std::uint64_t(std::numeric_limits<std::int32_t>::max()))
        fail("binary value end " + std::to_string(e) + " does not fit 32-bit offsets");
      prev = e;
      if (large) le::store<std::int64_t>(offs.data() + 8 * (i + 1), std::int64_t(e));
      else le::store<std::int32_t>(offs.data() + 4 * (i + 1), std::int32_t(e));
    }
    const auto& bytes = buffer(fb->buffer, prev, "binary bytes");
    return binary_array(type, n, nulls, std::move(validity), std::move(offs), bytes.slice(0, std::size_t(prev)));
  }

  arrow::array_ptr decode_field_dictionary(const enc20::dictionary& m, std::uint64_t n, const arrow::type_ptr& type) {
    if (!m.indices || !m.items) fail("Dictionary without indices or items");
    const enc20::array_encoding* ie = &*m.indices;
    if (const auto* nl = std::get_if<enc20::nullable>(&ie->value))
      if (const auto* nn = std::get_if<enc20::nullable::no_null>(&nl->nullability); nn && nn->values) ie = &*nn->values;
    const auto* f = std::get_if<enc20::flat>(&ie->value);
    if (!f || !(f->bits_per_value == 8 || f->bits_per_value == 16 || f->bits_per_value == 32 || f->bits_per_value == 64))
      fail("dictionary indices are not 8/16/32/64-bit flat values");
    const auto bits = f->bits_per_value;
    auto idx = flat_buffer(*m.indices, n, bits, "dictionary indices");
    auto items = decode(*m.items, m.num_dictionary_items, type);
    std::vector<std::int64_t> take(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto* p = idx.data() + i * (bits / 8);
      std::uint64_t k = 0;
      std::memcpy(&k, p, std::size_t(bits / 8));
      if (k >= std::uint64_t(items->length))
        fail("dictionary index " + std::to_string(k) + " past " + std::to_string(items->length) + " items");
      take[std::size_t(i)] = std::int64_t(k);
    }
    return arrow::take_flat(*items, take);
  }

  arrow::array_ptr decode_one(const enc20::dictionary& m, std::uint64_t n, const arrow::type_ptr& type) {
    if (dictionary_field) return decode_field_dictionary(m, n, type);
    if (!arrow::is_binary_like(type->id)) fail("a dictionary page for a non-string type");
    if (!m.indices || !m.items) fail("Dictionary without indices or items");
    auto idx = flat_buffer(*m.indices, n, 8, "dictionary indices");
    auto items = decode(*m.items, m.num_dictionary_items, type);
    const bool large = arrow::is_large_binary_like(type->id);
    aligned_buffer offs, validity, bytes;
    offs.resize(std::size_t(n + 1) * (large ? 8 : 4));
    validity.resize(std::size_t((n + 7) / 8));
    std::int64_t nulls = 0;
    std::uint64_t at = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint8_t k = idx.data()[i];
      if (k == 0) {
        ++nulls;
      } else {
        if (k > items->length) fail("dictionary index " + std::to_string(k) + " past " + std::to_string(items->length) + " items");
        if (items->is_null(k - 1)) ++nulls;
        else {
          arrow::set_bit(validity.data(), std::int64_t(i), true);
          auto s = items->string_value(k - 1);
          bytes.append(s);
          at += s.size();
        }
      }
      if (large) le::store<std::int64_t>(offs.data() + 8 * (i + 1), std::int64_t(at));
      else le::store<std::int32_t>(offs.data() + 4 * (i + 1), std::int32_t(at));
    }
    return binary_array(type, n, nulls, std::move(validity), std::move(offs), shared_bytes(std::move(bytes)));
  }

  template <class Other>
  arrow::array_ptr decode_one(const Other&, std::uint64_t, const arrow::type_ptr&) {
    throw unsupported_error(where_ + ": page encoding '" + std::string(Other::message_name) +
                            "' is not supported in 2.0 pages by lancet");
  }

  const std::vector<shared_bytes>& buffers_;
  std::string where_;
};

// An array of n nulls of any type, with zeroed buffers of the right sizes.
inline arrow::array_ptr page_decoder::all_null(std::uint64_t n, const arrow::type_ptr& type) {
  auto out = std::make_shared<arrow::array_data>();
  out->type = type;
  out->length = std::int64_t(n);
  out->null_count = std::int64_t(n);
  using arrow::type_id;
  if (type->id == type_id::null) return out;
  auto zeros = [](std::uint64_t bytes) {
    aligned_buffer b;
    b.resize(std::size_t(bytes));
    return shared_bytes(std::move(b));
  };
  out->buffers.push_back(zeros((n + 7) / 8));
  const auto id = type->id;
  if (id == type_id::boolean) out->buffers.push_back(zeros((n + 7) / 8));
  else if (arrow::is_fixed_width(*type)) out->buffers.push_back(zeros(n * std::uint64_t(arrow::bit_width(*type) / 8)));
  else if (arrow::is_binary_like(id)) {
    out->buffers.push_back(zeros((n + 1) * (arrow::is_large_binary_like(id) ? 8 : 4)));
    out->buffers.push_back(shared_bytes());
  } else if (arrow::is_list_like(id)) {
    out->buffers.push_back(zeros((n + 1) * (id == type_id::large_list ? 8 : 4)));
    out->children.push_back(all_null(0, type->children.at(0).type));
  } else if (id == type_id::fixed_size_list) {
    out->children.push_back(all_null(n * std::uint64_t(type->list_size), type->children.at(0).type));
  } else if (id == type_id::struct_) {
    for (const auto& c : type->children) out->children.push_back(all_null(n, c.type));
  }
  return out;
}

}  // namespace lancet::encoding::legacy
