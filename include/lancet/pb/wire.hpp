// The protobuf wire format, by hand: a writer that appends fields to a byte string,
// and a defensive reader that never reads out of bounds. Messages are declared with
// pb/message.hpp's field descriptors (a nested message is written as bytes:
// w.bytes(field, pb::encode(m))).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"

namespace lancet::pb {

enum class wire_type : std::uint8_t { varint = 0, fixed64 = 1, len = 2, fixed32 = 5 };

// Messages nested deeper than this are refused as corrupt (stack safety).
inline constexpr int max_depth = 64;

inline constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
  return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63);
}
inline constexpr std::int64_t unzigzag(std::uint64_t v) noexcept {
  return std::int64_t(v >> 1) ^ -std::int64_t(v & 1);
}

class writer {
 public:
  std::string& bytes() noexcept { return out_; }
  const std::string& bytes() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

  void raw_varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(char(std::uint8_t(v) | 0x80));
      v >>= 7;
    }
    out_.push_back(char(v));
  }
  void tag(std::uint32_t field, wire_type wt) { raw_varint((std::uint64_t(field) << 3) | std::uint8_t(wt)); }

  // Scalars are written always: pb/message.hpp's field descriptors skip proto3 defaults
  // (implicit presence); a hand-written codec may use int32_opt / string_opt below.
  void uint64(std::uint32_t f, std::uint64_t v) { tag(f, wire_type::varint); raw_varint(v); }
  // int32/int64 negative values are sign-extended to 10 bytes, as protobuf does.
  void int64(std::uint32_t f, std::int64_t v) { uint64(f, std::uint64_t(v)); }
  void int32(std::uint32_t f, std::int32_t v) { uint64(f, std::uint64_t(std::int64_t(v))); }
  void uint32(std::uint32_t f, std::uint32_t v) { uint64(f, v); }
  void sint64(std::uint32_t f, std::int64_t v) { uint64(f, zigzag(v)); }
  void boolean(std::uint32_t f, bool v) { uint64(f, v ? 1 : 0); }
  void fixed64(std::uint32_t f, std::uint64_t v) {
    tag(f, wire_type::fixed64);
    char b[8];
    le::store(b, v);
    out_.append(b, 8);
  }
  void fixed32(std::uint32_t f, std::uint32_t v) {
    tag(f, wire_type::fixed32);
    char b[4];
    le::store(b, v);
    out_.append(b, 4);
  }
  void float64(std::uint32_t f, double v) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    fixed64(f, u);
  }
  void float32(std::uint32_t f, float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    fixed32(f, u);
  }
  void bytes(std::uint32_t f, std::string_view s) {
    tag(f, wire_type::len);
    raw_varint(s.size());
    out_.append(s);
  }
  void bytes(std::uint32_t f, bytes_view s) {
    bytes(f, std::string_view(reinterpret_cast<const char*>(s.data()), s.size()));
  }
  void string(std::uint32_t f, std::string_view s) { bytes(f, s); }

  // proto3 implicit presence: zero / empty values are not written.
  void int32_opt(std::uint32_t f, std::int32_t v) { if (v) int32(f, v); }
  void string_opt(std::uint32_t f, std::string_view s) { if (!s.empty()) bytes(f, s); }

  // Packed repeated varints (proto3 default for repeated scalars).
  template <class Int>
  void packed_varint(std::uint32_t f, const std::vector<Int>& vs) {
    if (vs.empty()) return;
    writer inner;
    for (auto v : vs) inner.raw_varint(std::uint64_t(v));
    bytes(f, inner.bytes());
  }
  void packed_float32(std::uint32_t f, const std::vector<float>& vs) {
    if (vs.empty()) return;
    std::string b(vs.size() * 4, '\0');
    std::memcpy(b.data(), vs.data(), b.size());
    bytes(f, b);
  }

  // A nested message built by body(writer&) (hand-built bytes; a message struct is
  // written with w.bytes(f, pb::encode(m))).
  template <class Body>
  void message_fn(std::uint32_t f, Body&& body) {
    writer inner;
    body(inner);
    bytes(f, inner.bytes());
  }
  // map<string, bytes|string> entries: key = 1, value = 2.
  template <class Map>
  void string_map(std::uint32_t f, const Map& m) {
    for (const auto& [k, v] : m) {
      writer e;
      e.bytes(1, std::string_view(k));
      e.bytes(2, std::string_view(v));
      bytes(f, e.bytes());
    }
  }

 private:
  std::string out_;
};

// One field read from a message.
struct field_view {
  std::uint32_t number = 0;
  wire_type type = wire_type::varint;
  std::uint64_t scalar = 0;  // varint, fixed32, fixed64
  bytes_view data;           // len-delimited payload

  std::uint64_t as_uint64() const { return scalar; }
  std::int64_t as_int64() const { return std::int64_t(scalar); }
  std::int32_t as_int32() const { return std::int32_t(std::int64_t(scalar)); }
  std::uint32_t as_uint32() const { return std::uint32_t(scalar); }
  bool as_bool() const { return scalar != 0; }
  double as_double() const { double d; std::memcpy(&d, &scalar, 8); return d; }
  float as_float() const { std::uint32_t u = std::uint32_t(scalar); float x; std::memcpy(&x, &u, 4); return x; }
  std::string as_string() const { return std::string(reinterpret_cast<const char*>(data.data()), data.size()); }
};

class reader {
 public:
  explicit reader(bytes_view data, int depth = 0, std::string_view what = "protobuf message")
      : data_(data), depth_(depth), what_(what) {
    if (depth_ > max_depth)
      throw corrupt_error(std::string(what_) + ": nesting deeper than " + std::to_string(max_depth));
  }
  reader(std::string_view s, int depth = 0, std::string_view what = "protobuf message")
      : reader(bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()), depth, what) {}
  // A reader views its bytes; a temporary string would dangle before the first next().
  reader(std::string&&, int = 0, std::string_view = {}) = delete;

  bool done() const noexcept { return pos_ >= data_.size(); }
  int depth() const noexcept { return depth_; }
  std::size_t position() const noexcept { return pos_; }

  // Reads the next field. Unknown fields are the caller's to skip (by ignoring them).
  field_view next() {
    field_view f;
    const std::size_t at = pos_;
    std::uint64_t key = raw_varint();
    f.number = std::uint32_t(key >> 3);
    if (f.number == 0 || (key >> 3) > 0x1FFFFFFF) fail(at, "invalid field number");
    switch (key & 7) {
      case 0: f.type = wire_type::varint; f.scalar = raw_varint(); break;
      case 1: f.type = wire_type::fixed64; f.scalar = raw_fixed<std::uint64_t>(at); break;
      case 2: {
        f.type = wire_type::len;
        std::uint64_t n = raw_varint();
        if (n > data_.size() - pos_) fail(at, "length " + std::to_string(n) + " runs past the end");
        f.data = data_.subspan(pos_, std::size_t(n));
        pos_ += std::size_t(n);
        break;
      }
      case 5: f.type = wire_type::fixed32; f.scalar = raw_fixed<std::uint32_t>(at); break;
      default: fail(at, "unsupported wire type " + std::to_string(key & 7));
    }
    return f;
  }

  // A reader over a nested message field (checks wire type and depth).
  reader sub(const field_view& f, std::string_view what) const {
    expect(f, wire_type::len, what);
    return reader(f.data, depth_ + 1, what);
  }
  void expect(const field_view& f, wire_type wt, std::string_view what) const {
    if (f.type != wt)
      throw corrupt_error(std::string(what_) + ": field " + std::to_string(f.number) + " (" +
                          std::string(what) + ") has wire type " + std::to_string(int(f.type)) +
                          ", expected " + std::to_string(int(wt)));
  }

  // Packed or unpacked repeated varints: appends to out.
  template <class Int>
  void repeated_varint(const field_view& f, std::vector<Int>& out) const {
    if (f.type == wire_type::varint) { out.push_back(Int(f.scalar)); return; }
    expect(f, wire_type::len, "packed varints");
    reader r(f.data, depth_ + 1, what_);
    while (!r.done()) out.push_back(Int(r.raw_varint()));
  }
  // Scalar accessors that check the wire type.
  std::uint64_t varint(const field_view& f, std::string_view what) const {
    expect(f, wire_type::varint, what);
    return f.scalar;
  }
  std::string string(const field_view& f, std::string_view what) const {
    expect(f, wire_type::len, what);
    return f.as_string();
  }
  std::pair<std::string, std::string> map_entry(const field_view& f, std::string_view what) const {
    reader r = sub(f, what);
    std::pair<std::string, std::string> kv;
    while (!r.done()) {
      auto e = r.next();
      if (e.number == 1) kv.first = r.string(e, "map key");
      else if (e.number == 2) kv.second = r.string(e, "map value");
    }
    return kv;
  }

  std::uint64_t raw_varint() {
    std::uint64_t v = 0;
    const std::size_t at = pos_;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail(at, "truncated varint");
      std::uint8_t b = data_[pos_++];
      if (shift == 63 && (b & 0x7E)) fail(at, "varint overflows 64 bits");
      v |= std::uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail(at, "varint longer than 10 bytes");
  }

 private:
  // A little-endian fixed32 / fixed64 value.
  template <class T>
  std::uint64_t raw_fixed(std::size_t at) {
    need(sizeof(T), at);
    const std::uint64_t v = le::load<T>(data_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  void need(std::size_t n, std::size_t at) const {
    if (data_.size() - pos_ < n) fail(at, "truncated fixed-width field");
  }
  [[noreturn]] void fail(std::size_t at, const std::string& msg) const {
    throw corrupt_error(std::string(what_) + " at byte " + std::to_string(at) + ": " + msg);
  }

  bytes_view data_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::string_view what_;
};

}  // namespace lancet::pb
