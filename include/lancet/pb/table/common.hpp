// Small messages the table-level protos share (lance.table, google.protobuf): UUID
// (core's uuid on the wire), Timestamp (also a value type: now and Unix nanoseconds),
// ExternalFile (a byte range of another file) and BasePath (an extra data root).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lancet/core/error.hpp"
#include "lancet/core/uuid.hpp"
#include "lancet/pb/message.hpp"

namespace lancet::pb {

// lance.table.UUID: 16 raw bytes (core's uuid).
template <>
struct message_traits<lancet::uuid> {
  static constexpr std::string_view message_name = "UUID";
  static constexpr auto proto_fields() { return pb::fields(pb::required(1, &lancet::uuid::bytes, "UUID.uuid")); }
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
