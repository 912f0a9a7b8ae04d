// Blob columns: large binary values Lance stores outside the column's pages.
//
// Two generations, both written by Lance 12:
//  - Legacy blobs (format 2.1; field metadata `lance-encoding:blob` = "true" on a
//    binary / large_binary field): a BlobLayout page of (position, size) rows, the
//    bytes elsewhere in the same data file. lancet's page decoder resolves these
//    itself: reading the column yields the values (page_decoder.hpp).
//  - Blob v2 (format 2.2+; a struct<data: large_binary, uri: utf8> field whose Arrow
//    extension name is "lance.blob.v2"): the data file holds one column of description
//    rows, a packed struct
//        struct<kind: uint8, position: uint64, size: uint64, blob_id: uint32, blob_uri: utf8>
//    (field metadata lance-encoding:blob and lance-encoding:packed), and each
//    description says where the bytes are:
//        kind 0 inline     : [position, position + size) of the data file itself
//        kind 1 packed     : [position, position + size) of blob file `blob_id`, shared
//                            by several values (Lance packs values of 64 KiB + 1 up to
//                            about 4 MiB)
//        kind 2 dedicated  : blob file `blob_id` holds this value alone (larger values)
//        kind 3 external   : an object outside the dataset, named by blob_uri
//    Blob files sit next to the data file: "<data file without .lance>/<name>.blob",
//    the name being blob_id's 32 bits, least significant first, as '0'/'1' characters.
//    A null value is a null description; an empty one is inline with size 0.
//
// What users get: reading a blob v2 column through file_reader yields the
// descriptions (what LanceDB's own scan returns for the column). materialize_blobs
// turns descriptions into the values (a large_binary array), and blob_v2_values into
// the struct<data, uri> the dataset declares (what was written); the dataset reader
// does the latter, so a dataset scan returns the bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/type.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/file_source.hpp"

namespace lancet::encoding::structural {

inline constexpr std::string_view blob_v2_extension_name = "lance.blob.v2";

enum class blob_kind : std::uint8_t { inline_data = 0, packed = 1, dedicated = 2, external = 3 };

struct blob_description {
  blob_kind kind = blob_kind::inline_data;
  std::uint64_t position = 0;
  std::uint64_t size = 0;
  std::uint32_t blob_id = 0;
  std::string uri;
  bool operator==(const blob_description&) const = default;
};

// True for the description struct Lance 12 writes for blob v2 columns.
inline bool is_blob_v2_descriptions(const arrow::data_type& t) {
  using arrow::type_id;
  if (t.id != type_id::struct_ || t.children.size() != 5) return false;
  static constexpr std::pair<std::string_view, type_id> members[] = {{"kind", type_id::uint8},
                                                                     {"position", type_id::uint64},
                                                                     {"size", type_id::uint64},
                                                                     {"blob_id", type_id::uint32},
                                                                     {"blob_uri", type_id::utf8}};
  for (std::size_t i = 0; i < 5; ++i)
    if (t.children[i].name != members[i].first || t.children[i].type->id != members[i].second) return false;
  return true;
}

// True for a dataset field declared as a blob v2 column (struct<data, uri> + extension).
inline bool is_blob_v2_field(const arrow::field& f) {
  if (f.type->id != arrow::type_id::struct_) return false;
  for (const auto& [k, v] : f.metadata)
    if (k == "ARROW:extension:name" && v == blob_v2_extension_name) return true;
  return false;
}

// The struct<data: large_binary, uri: utf8> a blob v2 field holds.
inline arrow::type_ptr blob_v2_type() {
  return arrow::struct_({arrow::field{"data", arrow::large_binary(), true, {}}, arrow::field{"uri", arrow::utf8(), true, {}}});
}

// "<32 bits of blob_id, least significant first>.blob".
inline std::string blob_file_name(std::uint32_t blob_id) {
  std::string s(32, '0');
  for (unsigned i = 0; i < 32; ++i)
    if (blob_id >> i & 1u) s[i] = '1';
  return s + ".blob";
}

// Where blob file `blob_id` of a data file lives.
inline std::filesystem::path blob_file_path(const std::filesystem::path& data_file, std::uint32_t blob_id) {
  auto dir = data_file;
  dir.replace_extension();
  return dir / blob_file_name(blob_id);
}

// The descriptions of rows [0, length) of a description array (nullopt: a null value).
inline std::vector<std::optional<blob_description>> blob_descriptions(const arrow::array_data& d, const std::string& column) {
  if (!is_blob_v2_descriptions(*d.type))
    throw invalid_input_error("column '" + column + "' is " + arrow::to_string(*d.type) + ", not blob v2 descriptions");
  if (d.children.size() != 5) throw corrupt_error("column '" + column + "': blob descriptions without their 5 members");
  std::vector<std::optional<blob_description>> out;
  out.reserve(std::size_t(d.length));
  const auto& c = d.children;
  for (std::int64_t i = 0; i < d.length; ++i) {
    if (!d.is_valid(i)) {
      out.emplace_back();
      continue;
    }
    // Members may be sliced or carry validity of their own: read through their offsets.
    auto fixed = [&](std::size_t m, std::size_t w) -> const std::uint8_t* {
      const auto& a = *c[m];
      if (!a.is_valid(i + d.offset))
        throw corrupt_error("column '" + column + "' row " + std::to_string(i) + ": blob description member '" +
                            d.type->children[m].name + "' is null");
      return a.buffers.at(1).data() + std::size_t(a.offset + d.offset + i) * w;
    };
    blob_description b;
    const auto kind = *fixed(0, 1);
    if (kind > 3)
      throw corrupt_error("column '" + column + "' row " + std::to_string(i) + ": unknown blob kind " + std::to_string(kind));
    b.kind = blob_kind(kind);
    b.position = le::load<std::uint64_t>(fixed(1, 8));
    b.size = le::load<std::uint64_t>(fixed(2, 8));
    b.blob_id = le::load<std::uint32_t>(fixed(3, 4));
    const auto& u = *c[4];
    if (u.is_valid(i + d.offset)) {
      const auto j = std::size_t(u.offset + d.offset + i);
      const auto* offs = u.buffers.at(1).data();
      const auto o0 = le::load<std::int32_t>(offs + 4 * j), o1 = le::load<std::int32_t>(offs + 4 * j + 4);
      b.uri.assign(reinterpret_cast<const char*>(u.buffers.at(2).data()) + o0, std::size_t(o1 - o0));
    }
    out.push_back(std::move(b));
  }
  return out;
}

// Where a description's bytes are read from. Each function returns exactly `size`
// bytes or throws; read_external may be empty (external blobs are then refused).
struct blob_store {
  std::function<shared_bytes(std::uint64_t position, std::uint64_t size)> read_data_file;
  std::function<shared_bytes(std::uint32_t blob_id, std::uint64_t position, std::uint64_t size)> read_blob_file;
  std::function<shared_bytes(const std::string& uri, std::uint64_t position, std::uint64_t size)> read_external;
};

// A blob_store over a local data file and its blob files (opened on first use, kept
// open). Every range is checked against the file it is read from: a description
// pointing past the end is corrupt_error naming the file, offset and size.
inline blob_store local_blob_store(const std::filesystem::path& data_file, io::file_source_options options = {}) {
  struct files {
    std::filesystem::path data_file;
    io::file_source_options options;
    std::mutex mu;
    std::optional<io::file_source> data;
    std::map<std::uint32_t, io::file_source> blobs;
  };
  auto st = std::make_shared<files>();
  st->data_file = data_file;
  st->options = options;
  auto checked = [](const io::file_source& f, std::uint64_t pos, std::uint64_t size, const std::string& what) {
    if (pos > f.size() || size > f.size() - pos)
      throw corrupt_error(what + ": blob bytes [" + std::to_string(pos) + ", +" + std::to_string(size) + ") lie past the end of '" +
                          f.path() + "' (" + std::to_string(f.size()) + " bytes)");
    return f.read(pos, size);
  };
  blob_store s;
  s.read_data_file = [st, checked](std::uint64_t pos, std::uint64_t size) {
    std::unique_lock lock(st->mu);
    if (!st->data) st->data.emplace(st->data_file.string(), st->options);
    const auto& f = *st->data;
    lock.unlock();
    return checked(f, pos, size, "inline blob");
  };
  s.read_blob_file = [st, checked](std::uint32_t id, std::uint64_t pos, std::uint64_t size) {
    std::unique_lock lock(st->mu);
    auto it = st->blobs.find(id);
    if (it == st->blobs.end()) {
      const auto p = blob_file_path(st->data_file, id);
      if (!std::filesystem::exists(p))
        throw corrupt_error("blob file " + std::to_string(id) + " of '" + st->data_file.string() + "' is missing (" + p.string() + ")");
      it = st->blobs.emplace(id, io::file_source(p.string(), st->options)).first;
    }
    const auto& f = it->second;
    lock.unlock();
    return checked(f, pos, size, "blob file " + std::to_string(id));
  };
  return s;
}

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

inline shared_bytes read_blob(const structural::blob_description& b, const structural::blob_store& store, const std::string& where) {
  shared_bytes v;
  switch (b.kind) {
    case structural::blob_kind::inline_data:
      if (b.size == 0) return {};
      if (!store.read_data_file) throw unsupported_error(where + ": no reader for the data file's inline blobs");
      v = store.read_data_file(b.position, b.size);
      break;
    case structural::blob_kind::packed:
    case structural::blob_kind::dedicated:
      if (b.blob_id == 0) throw corrupt_error(where + ": blob id 0 is reserved");
      if (!store.read_blob_file) throw unsupported_error(where + ": no reader for blob files");
      v = store.read_blob_file(b.blob_id, b.position, b.size);
      break;
    case structural::blob_kind::external:
      if (b.uri.empty()) throw corrupt_error(where + ": external blob without a URI");
      if (!store.read_external)
        throw unsupported_error(where + ": external blob '" + b.uri + "' (pass blob_store::read_external to read it)");
      v = store.read_external(b.uri, b.position, b.size);
      break;
  }
  if (v.size() != b.size)
    throw corrupt_error(where + ": blob of " + std::to_string(b.size) + " bytes read back as " + std::to_string(v.size()));
  return v;
}

inline arrow::array_ptr large_binary_of(const std::vector<std::optional<shared_bytes>>& vals) {
  aligned_buffer offs, bytes, validity;
  const auto n = vals.size();
  std::uint64_t total = 0;
  for (const auto& v : vals)
    if (v) total += v->size();
  offs.resize((n + 1) * 8);
  bytes.reserve(std::size_t(total));
  validity.resize((n + 7) / 8);
  std::int64_t nulls = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (vals[i]) {
      validity.data()[i / 8] |= std::uint8_t(1u << (i % 8));
      bytes.append(vals[i]->view());
    } else {
      ++nulls;
    }
    le::store<std::uint64_t>(offs.data() + 8 * (i + 1), bytes.size());
  }
  auto a = std::make_shared<arrow::array_data>();
  a->type = arrow::large_binary();
  a->length = std::int64_t(n);
  a->null_count = nulls;
  a->buffers = {nulls ? shared_bytes(std::move(validity)) : shared_bytes(), shared_bytes(std::move(offs)), shared_bytes(std::move(bytes))};
  return a;
}

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// The values of blob v2 descriptions: a large_binary array, null where the description
// is null. External blobs need store.read_external.
inline arrow::array_ptr materialize_blobs(const arrow::array_data& descriptions, const blob_store& store,
                                          const std::string& column = "blob") {
  const auto ds = blob_descriptions(descriptions, column);
  std::vector<std::optional<shared_bytes>> vals(ds.size());
  for (std::size_t i = 0; i < ds.size(); ++i)
    if (ds[i]) vals[i] = detail::read_blob(*ds[i], store, "column '" + column + "' row " + std::to_string(i));
  return detail::large_binary_of(vals);
}

// The struct<data: large_binary, uri: utf8> of a blob v2 field (its declared type, as
// written): data holds the bytes, uri the external URI (its data stays null unless
// store.read_external is given). Null descriptions are null structs.
inline arrow::array_ptr blob_v2_values(const arrow::array_data& descriptions, const blob_store& store,
                                       const std::string& column = "blob", arrow::type_ptr type = blob_v2_type()) {
  const auto ds = blob_descriptions(descriptions, column);
  const auto n = ds.size();
  std::vector<std::optional<shared_bytes>> data(n);
  aligned_buffer uri_offs, uri_bytes, uri_valid, valid;
  uri_offs.resize((n + 1) * 4);
  uri_valid.resize((n + 7) / 8);
  valid.resize((n + 7) / 8);
  std::int64_t nulls = 0, uri_nulls = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& d = ds[i];
    if (!d) ++nulls;
    else valid.data()[i / 8] |= std::uint8_t(1u << (i % 8));
    if (d && d->kind == blob_kind::external) {
      uri_valid.data()[i / 8] |= std::uint8_t(1u << (i % 8));
      uri_bytes.append(reinterpret_cast<const std::uint8_t*>(d->uri.data()), d->uri.size());
      if (uri_bytes.size() > 0x7FFFFFFFu) throw unsupported_error("column '" + column + "': blob URIs exceed 2 GiB");
      if (store.read_external) data[i] = detail::read_blob(*d, store, "column '" + column + "' row " + std::to_string(i));
    } else {
      ++uri_nulls;
      if (d) data[i] = detail::read_blob(*d, store, "column '" + column + "' row " + std::to_string(i));
    }
    le::store<std::int32_t>(uri_offs.data() + 4 * (i + 1), std::int32_t(uri_bytes.size()));
  }
  auto uri = std::make_shared<arrow::array_data>();
  uri->type = arrow::utf8();
  uri->length = std::int64_t(n);
  uri->null_count = uri_nulls;
  uri->buffers = {shared_bytes(std::move(uri_valid)), shared_bytes(std::move(uri_offs)), shared_bytes(std::move(uri_bytes))};
  if (type->id != arrow::type_id::struct_ || type->children.size() != 2 || type->children[0].type->id != arrow::type_id::large_binary ||
      type->children[1].type->id != arrow::type_id::utf8)
    throw invalid_input_error("column '" + column + "': a blob v2 field is struct<data: large_binary, uri: utf8>, not " +
                              arrow::to_string(*type));
  auto out = std::make_shared<arrow::array_data>();
  out->type = std::move(type);
  out->length = std::int64_t(n);
  out->null_count = nulls;
  out->buffers = {nulls ? shared_bytes(std::move(valid)) : shared_bytes()};
  out->children = {detail::large_binary_of(data), uri};
  return out;
}

// Rows [begin, end) of blob column `column` of a data file, as values. `reader` is a
// file::file_reader over that file (any source); the bytes are read from `data_file`
// and its blob files. Legacy (2.1) blob columns already read as values.
template <class Reader>
arrow::array_ptr read_blob_values(const Reader& reader, const std::filesystem::path& data_file, const std::string& column,
                                  std::uint64_t begin, std::uint64_t end) {
  auto batch = reader.read({{column}, std::pair{begin, end}, std::nullopt});
  const auto& col = batch.columns.at(0);
  if (col->type->id == arrow::type_id::large_binary || col->type->id == arrow::type_id::binary) return col;
  return materialize_blobs(*col, local_blob_store(data_file), column);
}

}  // namespace lancet::encoding::structural
