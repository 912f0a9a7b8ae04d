// A small Arrow IPC reader (file "ARROW1" or stream format) for flat columns of
// fixed-width integers: what Lance 12 writes as an Arrow deletion file (one non-null
// `row_id: uint32` column, ZSTD body compression, one batch). Nested, variable-width
// and dictionary columns are refused with unsupported_error.
//
// Format facts used (Arrow columnar format spec, checked on files LanceDB 0.39 wrote):
//  * file = "ARROW1" + 2 padding bytes, the stream, the footer flatbuffer, its i32
//    length and "ARROW1"; the stream ends with the end-of-stream marker
//    (0xFFFFFFFF, 0) before the footer.
//  * message = [0xFFFFFFFF][i32 metadata length][Message flatbuffer, padded to 8]
//    [body of Message.bodyLength bytes]; pre-1.0 writers omit the 0xFFFFFFFF.
//  * with BodyCompression every non-empty buffer is [i64 uncompressed length][bytes];
//    a length of -1 means the bytes are stored uncompressed (Lance's 5-row files).
//
// The flatbuffer reader below checks every offset against its buffer: a corrupt file
// gives corrupt_error, never a crash.
#pragma once

#include <lz4frame.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::dataset::detail {

// Read-only access to one flatbuffer (a table-and-vtable tree of little-endian data).
class ipc_flatbuffer {
 public:
  ipc_flatbuffer(bytes_view bytes, std::string what) : b_(bytes), what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw corrupt_error(what_ + ": " + msg); }

  void need(std::uint64_t pos, std::uint64_t n) const {
    if (pos > b_.size() || n > b_.size() - pos)
      fail("offset " + std::to_string(pos) + " (+" + std::to_string(n) + " bytes) is outside the " +
           std::to_string(b_.size()) + "-byte flatbuffer");
  }
  template <class T>
  T load(std::uint64_t pos) const {
    need(pos, sizeof(T));
    return le::load<T>(b_.data() + pos);
  }

  // A table: its position and its vtable's.
  struct table {
    std::uint64_t pos = 0, vtable = 0;
    std::uint16_t vtable_size = 0;
  };

  table root() const { return table_at(load<std::uint32_t>(0)); }

  table table_at(std::uint64_t pos) const {
    const auto soff = load<std::int32_t>(pos);
    const std::int64_t vt = std::int64_t(pos) - soff;
    if (vt < 0) fail("a vtable offset points before the buffer");
    table t{pos, std::uint64_t(vt), load<std::uint16_t>(std::uint64_t(vt))};
    if (t.vtable_size < 4 || t.vtable_size % 2) fail("vtable of " + std::to_string(t.vtable_size) + " bytes");
    need(t.vtable, t.vtable_size);
    return t;
  }

  // Position of field `index`, or 0 when absent.
  std::uint64_t field(const table& t, std::uint32_t index) const {
    const std::uint64_t slot = 4 + 2ull * index;
    if (slot + 2 > t.vtable_size) return 0;
    const auto off = load<std::uint16_t>(t.vtable + slot);
    return off ? t.pos + off : 0;
  }

  template <class T>
  T scalar(const table& t, std::uint32_t index, T dflt) const {
    const auto p = field(t, index);
    return p ? load<T>(p) : dflt;
  }

  // Follows a uoffset field (table, vector or string); 0 when absent.
  std::uint64_t deref(const table& t, std::uint32_t index) const {
    const auto p = field(t, index);
    if (!p) return 0;
    return p + load<std::uint32_t>(p);
  }
  std::optional<table> sub_table(const table& t, std::uint32_t index) const {
    const auto p = deref(t, index);
    if (!p) return std::nullopt;
    return table_at(p);
  }

  // A vector: element count and the position of element 0 (elements of elem_size bytes).
  struct vec {
    std::uint64_t count = 0, data = 0;
  };
  vec vector(const table& t, std::uint32_t index, std::uint64_t elem_size) const {
    const auto p = deref(t, index);
    if (!p) return {};
    vec v{load<std::uint32_t>(p), p + 4};
    if (elem_size && v.count > (b_.size() / elem_size) + 1) fail("vector of " + std::to_string(v.count) + " elements");
    need(v.data, v.count * elem_size);
    return v;
  }
  // Element i of a vector of tables.
  table vector_table(const vec& v, std::uint64_t i) const {
    const auto p = v.data + 4 * i;
    return table_at(p + load<std::uint32_t>(p));
  }
  std::string string(const table& t, std::uint32_t index) const {
    auto v = vector(t, index, 1);
    return std::string(reinterpret_cast<const char*>(b_.data() + v.data), std::size_t(v.count));
  }

 private:
  bytes_view b_;
  std::string what_;
};

// Message.header union variants.
inline constexpr std::uint8_t ipc_header_schema = 1, ipc_header_dictionary_batch = 2, ipc_header_record_batch = 3;
// Type union variants used here.
inline constexpr std::uint8_t ipc_type_int = 2;
// BodyCompression.codec
inline constexpr std::int8_t ipc_codec_lz4_frame = 0, ipc_codec_zstd = 1;

// The most one decompressed buffer may claim (lengths come from the file).
inline constexpr std::int64_t ipc_max_buffer_bytes = std::int64_t(1) << 32;

inline shared_bytes decompress_ipc_buffer(std::int8_t codec, bytes_view in, const std::string& what) {
  if (in.size() < 8) throw corrupt_error(what + ": compressed buffer of " + std::to_string(in.size()) + " bytes has no length prefix");
  const auto n = le::load<std::int64_t>(in.data());
  const auto body = in.subspan(8);
  if (n == -1) return shared_bytes::copy_of(body);
  if (n < 0 || n > ipc_max_buffer_bytes)
    throw corrupt_error(what + ": compressed buffer claims " + std::to_string(n) + " bytes");
  // The output grows as bytes come out, never past the claimed size plus one byte (a
  // longer buffer is corrupt): a length prefix alone cannot make the reader allocate.
  const std::size_t limit = static_cast<std::size_t>(n) + 1;
  aligned_buffer out;
  std::size_t at = 0;
  const auto grow = [&] {
    out.resize(std::min(limit, std::max({out.size() * 2, body.size() * 4, std::size_t(4096)})));
  };
  bool ok = true;
  grow();
  if (codec == ipc_codec_zstd) {
    ZSTD_DStream* ds = ZSTD_createDStream();
    if (!ds) throw io_error("cannot create a zstd context");
    ZSTD_inBuffer ib{body.data(), body.size(), 0};
    for (;;) {
      if (at == out.size()) {
        if (out.size() == limit) break;
        grow();
      }
      ZSTD_outBuffer ob{out.data(), out.size(), at};
      const std::size_t before = ib.pos;
      const std::size_t r = ZSTD_decompressStream(ds, &ob, &ib);
      const bool progress = ob.pos != at || ib.pos != before;
      at = ob.pos;
      if (ZSTD_isError(r)) { ok = false; break; }
      if (r == 0 && ib.pos == ib.size) break;  // every frame complete
      if (at < out.size() && (ib.pos == ib.size || !progress)) { ok = false; break; }  // truncated
    }
    ZSTD_freeDStream(ds);
    if (!ok || at != static_cast<std::size_t>(n))
      throw corrupt_error(what + ": zstd buffer does not decompress to its " + std::to_string(n) + " bytes");
  } else if (codec == ipc_codec_lz4_frame) {
    LZ4F_dctx* ctx = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) throw io_error("cannot create an LZ4 context");
    std::size_t src = 0;
    while (ok && src < body.size()) {
      if (at == out.size()) {
        if (out.size() == limit) break;
        grow();
      }
      std::size_t dst_n = out.size() - at, src_n = body.size() - src;
      const std::size_t r = LZ4F_decompress(ctx, out.data() + at, &dst_n, body.data() + src, &src_n, nullptr);
      if (LZ4F_isError(r)) ok = false;
      at += dst_n;
      src += src_n;
      if (r == 0) break;
      if (dst_n == 0 && src_n == 0) ok = false;
    }
    LZ4F_freeDecompressionContext(ctx);
    if (!ok || at != static_cast<std::size_t>(n))
      throw corrupt_error(what + ": LZ4 frame does not decompress to its " + std::to_string(n) + " bytes");
  } else {
    throw unsupported_error(what + ": unknown Arrow IPC compression codec " + std::to_string(codec));
  }
  out.resize(at);
  return shared_bytes(std::move(out));
}

inline arrow::type_ptr ipc_int_type(int bits, bool is_signed, const std::string& where) {
  switch (bits) {
    case 8: return is_signed ? arrow::int8() : arrow::uint8();
    case 16: return is_signed ? arrow::int16() : arrow::uint16();
    case 32: return is_signed ? arrow::int32() : arrow::uint32();
    case 64: return is_signed ? arrow::int64() : arrow::uint64();
    default: throw corrupt_error(where + ": integer of " + std::to_string(bits) + " bits");
  }
}

inline arrow::schema parse_ipc_schema(const ipc_flatbuffer& fb, const ipc_flatbuffer::table& sch,
                                      const std::string& where) {
  arrow::schema out;
  if (fb.scalar<std::int16_t>(sch, 0, 0) != 0) throw unsupported_error(where + ": big-endian Arrow data is not supported");
  const auto fields = fb.vector(sch, 1, 4);
  for (std::uint64_t i = 0; i < fields.count; ++i) {
    const auto f = fb.vector_table(fields, i);
    arrow::field af;
    af.name = fb.string(f, 0);
    af.nullable = fb.scalar<std::uint8_t>(f, 1, 0) != 0;
    const auto tt = fb.scalar<std::uint8_t>(f, 2, 0);
    if (fb.field(f, 4)) throw unsupported_error(where + ": dictionary-encoded column '" + af.name + "'");
    if (fb.vector(f, 5, 4).count) throw unsupported_error(where + ": nested column '" + af.name + "'");
    if (tt != ipc_type_int)
      throw unsupported_error(where + ": column '" + af.name + "' has Arrow type id " + std::to_string(tt) +
                              "; only integer columns are read");
    const auto t = fb.sub_table(f, 3);
    if (!t) fb.fail("column '" + af.name + "' has no type table");
    af.type = ipc_int_type(fb.scalar<std::int32_t>(*t, 0, 0), fb.scalar<std::uint8_t>(*t, 1, 0) != 0, where);
    out.fields.push_back(std::move(af));
  }
  return out;
}

inline arrow::record_batch parse_ipc_batch(const ipc_flatbuffer& fb, const ipc_flatbuffer::table& header,
                                           bytes_view body, const arrow::schema& schema, const std::string& where) {
  const auto length = fb.scalar<std::int64_t>(header, 0, 0);
  if (length < 0) fb.fail("negative batch length");
  const auto nodes = fb.vector(header, 1, 16);
  const auto bufs = fb.vector(header, 2, 16);
  std::optional<std::int8_t> codec;
  if (auto c = fb.sub_table(header, 3)) codec = fb.scalar<std::int8_t>(*c, 0, 0);
  if (nodes.count != schema.fields.size() || bufs.count != 2 * nodes.count)
    fb.fail(std::to_string(nodes.count) + " nodes and " + std::to_string(bufs.count) + " buffers for " +
            std::to_string(schema.fields.size()) + " integer columns");
  arrow::record_batch rb;
  rb.schema = std::make_shared<arrow::schema>(schema);
  for (std::uint64_t c = 0; c < nodes.count; ++c) {
    const auto& f = schema.fields[c];
    const auto n = fb.load<std::int64_t>(nodes.data + 16 * c);
    const auto nulls = fb.load<std::int64_t>(nodes.data + 16 * c + 8);
    if (n != length || nulls < 0 || nulls > n)
      fb.fail("column '" + f.name + "' has " + std::to_string(n) + " rows and " + std::to_string(nulls) +
              " nulls in a batch of " + std::to_string(length));
    std::vector<shared_bytes> buffers;
    for (int k = 0; k < 2; ++k) {
      const auto b = 2 * c + std::uint64_t(k);
      const auto off = fb.load<std::int64_t>(bufs.data + 16 * b);
      const auto blen = fb.load<std::int64_t>(bufs.data + 16 * b + 8);
      if (off < 0 || blen < 0 || std::uint64_t(off) > body.size() || std::uint64_t(blen) > body.size() - std::uint64_t(off))
        fb.fail("buffer " + std::to_string(b) + " [" + std::to_string(off) + ", +" + std::to_string(blen) +
                ") is outside the " + std::to_string(body.size()) + "-byte body");
      auto raw = body.subspan(std::size_t(off), std::size_t(blen));
      if (raw.empty()) buffers.emplace_back();
      else if (codec) buffers.push_back(decompress_ipc_buffer(*codec, raw, where + " column '" + f.name + "'"));
      else buffers.push_back(shared_bytes::copy_of(raw));
    }
    const auto width = std::uint64_t(arrow::bit_width(*f.type) / 8);
    if (buffers[1].size() < std::uint64_t(n) * width)
      fb.fail("column '" + f.name + "' has " + std::to_string(buffers[1].size()) + " value bytes for " +
              std::to_string(n) + " values");
    if (nulls > 0 && buffers[0].size() < std::uint64_t((n + 7) / 8))
      fb.fail("column '" + f.name + "' has nulls but a validity buffer of " + std::to_string(buffers[0].size()) +
              " bytes");
    if (nulls == 0) buffers[0] = shared_bytes();
    auto a = std::make_shared<arrow::array_data>();
    a->type = f.type;
    a->length = n;
    a->null_count = nulls;
    a->buffers = std::move(buffers);
    rb.columns.push_back(std::move(a));
  }
  return rb;
}

// One encapsulated message at `pos` (within [0, end)); returns false at end of stream.
struct ipc_message {
  std::uint64_t meta_pos = 0, meta_len = 0, body_pos = 0, body_len = 0;
};
inline bool read_ipc_message(bytes_view bytes, std::uint64_t& pos, std::uint64_t end, ipc_message& out,
                             const std::string& what) {
  if (end - pos < 4) throw corrupt_error(what + ": truncated message at byte " + std::to_string(pos));
  std::int32_t len = le::load<std::int32_t>(bytes.data() + pos);
  pos += 4;
  if (len == -1) {
    if (end - pos < 4) throw corrupt_error(what + ": truncated message length at byte " + std::to_string(pos));
    len = le::load<std::int32_t>(bytes.data() + pos);
    pos += 4;
  }
  if (len == 0) return false;
  if (len < 0 || std::uint64_t(len) > end - pos)
    throw corrupt_error(what + ": message of " + std::to_string(len) + " bytes at byte " + std::to_string(pos) +
                        " runs past the data");
  out.meta_pos = pos;
  out.meta_len = std::uint64_t(len);
  pos += out.meta_len;
  ipc_flatbuffer fb(bytes.subspan(std::size_t(out.meta_pos), std::size_t(out.meta_len)), what);
  const auto body_len = fb.scalar<std::int64_t>(fb.root(), 3, 0);
  if (body_len < 0 || std::uint64_t(body_len) > end - pos)
    throw corrupt_error(what + ": message body of " + std::to_string(body_len) + " bytes at byte " +
                        std::to_string(pos) + " runs past the data");
  out.body_pos = pos;
  out.body_len = std::uint64_t(body_len);
  pos += out.body_len;
  return true;
}

}  // namespace lancet::dataset::detail

namespace lancet::dataset::ipc {

struct ipc_data {
  arrow::schema schema;
  std::vector<arrow::record_batch> batches;
};

// Reads an Arrow IPC file (through its footer) or stream of flat integer columns.
// `what` names the source in error messages.
inline ipc_data read_ipc(bytes_view bytes, const std::string& what = "Arrow IPC data") {
  using detail::ipc_flatbuffer;
  ipc_data out;
  constexpr std::string_view magic = "ARROW1";
  auto has_magic_at = [&](std::uint64_t p) {
    return p + magic.size() <= bytes.size() &&
           std::string_view(reinterpret_cast<const char*>(bytes.data() + p), magic.size()) == magic;
  };
  auto decode_message = [&](const detail::ipc_message& msg, bool schema_ok) {
    const std::string where = what + " (message at byte " + std::to_string(msg.meta_pos) + ")";
    ipc_flatbuffer fb(bytes.subspan(std::size_t(msg.meta_pos), std::size_t(msg.meta_len)), where);
    const auto root = fb.root();
    const auto header_type = fb.scalar<std::uint8_t>(root, 1, 0);
    const auto header = fb.sub_table(root, 2);
    if (!header) fb.fail("message without a header");
    const auto body = bytes.subspan(std::size_t(msg.body_pos), std::size_t(msg.body_len));
    if (header_type == detail::ipc_header_schema && schema_ok) {
      out.schema = detail::parse_ipc_schema(fb, *header, where);
      return true;
    }
    if (header_type == detail::ipc_header_record_batch) {
      out.batches.push_back(detail::parse_ipc_batch(fb, *header, body, out.schema, where));
      return false;
    }
    if (header_type == detail::ipc_header_dictionary_batch) throw unsupported_error(where + ": dictionary batches are not supported");
    throw unsupported_error(where + ": unexpected Arrow IPC message type " + std::to_string(header_type));
  };

  if (has_magic_at(0)) {
    // File format: the footer lists the schema and where each batch is.
    if (bytes.size() < 8 + 10 || !has_magic_at(bytes.size() - 6))
      throw corrupt_error(what + ": an Arrow file must end with its footer length and \"ARROW1\"");
    const auto footer_len = le::load<std::int32_t>(bytes.data() + bytes.size() - 10);
    if (footer_len <= 0 || std::uint64_t(footer_len) > bytes.size() - 18)
      throw corrupt_error(what + ": footer length " + std::to_string(footer_len) + " does not fit the file");
    const std::uint64_t footer_pos = bytes.size() - 10 - std::uint64_t(footer_len);
    ipc_flatbuffer fb(bytes.subspan(std::size_t(footer_pos), std::size_t(footer_len)), what + " (footer)");
    const auto footer = fb.root();
    const auto sch = fb.sub_table(footer, 1);
    if (!sch) fb.fail("no schema");
    out.schema = detail::parse_ipc_schema(fb, *sch, what);
    if (fb.vector(footer, 2, 24).count) throw unsupported_error(what + ": dictionary batches are not supported");
    const auto blocks = fb.vector(footer, 3, 24);
    for (std::uint64_t i = 0; i < blocks.count; ++i) {
      const auto off = fb.load<std::int64_t>(blocks.data + 24 * i);
      const auto meta = fb.load<std::int32_t>(blocks.data + 24 * i + 8);
      const auto body = fb.load<std::int64_t>(blocks.data + 24 * i + 16);
      if (off < 8 || meta <= 0 || body < 0 || std::uint64_t(off) > footer_pos ||
          std::uint64_t(meta) > footer_pos - std::uint64_t(off) ||
          std::uint64_t(body) > footer_pos - std::uint64_t(off) - std::uint64_t(meta))
        fb.fail("record batch block " + std::to_string(i) + " [" + std::to_string(off) + ", +" + std::to_string(meta) +
                " +" + std::to_string(body) + ") is outside the file");
      std::uint64_t pos = std::uint64_t(off);
      detail::ipc_message msg;
      if (!detail::read_ipc_message(bytes, pos, std::uint64_t(off) + std::uint64_t(meta) + std::uint64_t(body), msg, what))
        fb.fail("record batch block " + std::to_string(i) + " holds an end-of-stream marker");
      if (decode_message(msg, false)) fb.fail("record batch block " + std::to_string(i) + " holds a schema");
    }
    return out;
  }
  // Stream format: a schema message, then batches until the end-of-stream marker.
  std::uint64_t pos = 0;
  bool have_schema = false;
  detail::ipc_message msg;
  while (pos < bytes.size() && detail::read_ipc_message(bytes, pos, bytes.size(), msg, what)) {
    if (!have_schema) {
      if (!decode_message(msg, true)) throw corrupt_error(what + ": a record batch before the schema");
      have_schema = true;
    } else if (decode_message(msg, false)) {
      throw corrupt_error(what + ": a second schema message");
    }
  }
  if (!have_schema) throw corrupt_error(what + ": no schema message");
  return out;
}

}  // namespace lancet::dataset::ipc
