// Small messages the table-level protos share (lance.table, google.protobuf): UUID,
// Timestamp, ExternalFile (a byte range of another file) and BasePath (an extra data
// root). UUID and Timestamp are also value types: v4 generation and the text form
// Lance puts in file names; now and Unix nanoseconds.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"

namespace lancet::pb {

// lance.table.UUID: 16 raw bytes.
struct uuid {
  static constexpr std::string_view message_name = "UUID";
  static constexpr std::uint32_t f_uuid = 1;
  std::array<std::uint8_t, 16> bytes{};

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

  static constexpr auto proto_fields() { return pb::fields(pb::required(f_uuid, &uuid::bytes, "UUID.uuid")); }
  friend bool operator==(const uuid&, const uuid&) = default;
};

// google.protobuf.Timestamp
struct timestamp {
  static constexpr std::string_view message_name = "Timestamp";
  static constexpr std::uint32_t f_seconds = 1, f_nanos = 2;
  std::int64_t seconds = 0;
  std::int32_t nanos = 0;

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

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_seconds, &timestamp::seconds, "Timestamp.seconds"),
                      pb::field(f_nanos, &timestamp::nanos, "Timestamp.nanos"));
  }
  void check_decoded() const {
    if (nanos < 0 || nanos >= 1'000'000'000)
      throw corrupt_error("Timestamp: nanos " + std::to_string(nanos) + " out of range");
  }
  friend bool operator==(const timestamp&, const timestamp&) = default;
};

// A byte range of a file relative to the table root (large row-id / version
// sequences are stored out of line this way).
struct external_file {
  static constexpr std::string_view message_name = "ExternalFile";
  static constexpr std::uint32_t f_path = 1, f_offset = 2, f_size = 3;
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_path, &external_file::path, "ExternalFile.path"),
                      pb::field(f_offset, &external_file::offset, "ExternalFile.offset"),
                      pb::field(f_size, &external_file::size, "ExternalFile.size"));
  }
  friend bool operator==(const external_file&, const external_file&) = default;
};

// An extra root for data files (shallow clones, imported files).
struct base_path {
  static constexpr std::string_view message_name = "BasePath";
  static constexpr std::uint32_t f_id = 1, f_name = 2, f_is_dataset_root = 3, f_path = 4;
  std::uint32_t id = 0;
  std::optional<std::string> name;
  bool is_dataset_root = false;
  std::string path;

  static constexpr auto proto_fields() {
    return pb::fields(pb::field(f_id, &base_path::id, "BasePath.id"),
                      pb::field(f_name, &base_path::name, "BasePath.name"),
                      pb::field(f_is_dataset_root, &base_path::is_dataset_root, "BasePath.is_dataset_root"),
                      pb::field(f_path, &base_path::path, "BasePath.path"));
  }
  friend bool operator==(const base_path&, const base_path&) = default;
};

}  // namespace lancet::pb
