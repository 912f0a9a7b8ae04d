// The manifest file of one dataset version (_versions/*.manifest), read and written.
//
// Layout, as Lance 12 writes it (verified byte for byte against LanceDB 0.39):
//
//   [u32 len][IndexSection]      only when the version has indices; manifest field 6
//   [u32 len][Transaction]       the transaction that made this version; field 21
//   [u32 len][Manifest]          <- manifest position
//   i64 manifest position, i16 major = 0, i16 minor = 2, "LANC"
//
// Section positions point at their u32 length prefix and are absolute file offsets.
// Lance requires the manifest message to end exactly where the 16-byte footer
// begins. The same Transaction message (no length prefix) is also written to
// _transactions/{read_version}-{uuid}.txn and named by manifest field 12.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/roaring.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/sink.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/pb/wire.hpp"

namespace lancet::dataset {

inline constexpr std::string_view manifest_magic = "LANC";
// The footer numbers Lance 12 writes into manifests (lance-file's 0.2, not the 0.1 its
// table crate also declares).
inline constexpr std::uint16_t manifest_footer_major = 0;
inline constexpr std::uint16_t manifest_footer_minor = 2;
inline constexpr std::size_t manifest_footer_size = 16;

// What lancet records as Manifest.writer_version.library. Lance assumes libraries
// other than "lance" are free of its old fragment-bitmap bug; a missing writer
// version would make Lance distrust physical_rows and fragment bitmaps.
inline constexpr std::string_view writer_library = "lancet";
inline constexpr std::string_view writer_library_version = "0.1.0";

inline pb::manifest::writer_version_info lancet_writer_version() {
  return {std::string(writer_library), std::string(writer_library_version), std::nullopt, std::nullopt};
}

// Manifest.reader_feature_flags / writer_feature_flags bits.
namespace feature_flags {
inline constexpr std::uint64_t deletion_files = 1;
inline constexpr std::uint64_t stable_row_ids = 2;
inline constexpr std::uint64_t use_v2_format_deprecated = 4;
inline constexpr std::uint64_t table_config = 8;
inline constexpr std::uint64_t base_paths = 16;
inline constexpr std::uint64_t disable_transaction_file = 32;
inline constexpr std::uint64_t first_unknown = 64;  // this flag and above: not understood
}  // namespace feature_flags

inline bool can_read_dataset(std::uint64_t reader_flags) noexcept { return reader_flags < feature_flags::first_unknown; }
inline bool can_write_dataset(std::uint64_t writer_flags) noexcept { return writer_flags < feature_flags::first_unknown; }

// Recomputes both flag words from the manifest's content, as Lance does on commit.
// Row ids must be on all fragments or none (invalid_input_error otherwise).
inline void apply_feature_flags(pb::manifest& m, bool stable_row_ids = false, bool disable_transaction_file = false) {
  std::uint64_t rf = 0, wf = 0;
  bool any_deletions = false, any_row_ids = false, all_row_ids = true;
  for (const auto& f : m.fragments) {
    any_deletions |= f.deletion_file.has_value();
    const bool has = !std::holds_alternative<std::monostate>(f.row_id_sequence);
    any_row_ids |= has;
    all_row_ids &= has;
  }
  if (any_deletions) rf |= feature_flags::deletion_files, wf |= feature_flags::deletion_files;
  if (any_row_ids || stable_row_ids) {
    if (!all_row_ids) throw invalid_input_error("manifest: stable row ids need a row-id sequence on every fragment");
    rf |= feature_flags::stable_row_ids, wf |= feature_flags::stable_row_ids;
  }
  if (!m.config.empty()) wf |= feature_flags::table_config;
  if (!m.base_paths.empty()) rf |= feature_flags::base_paths, wf |= feature_flags::base_paths;
  if (disable_transaction_file) wf |= feature_flags::disable_transaction_file;
  m.reader_feature_flags = rf;
  m.writer_feature_flags = wf;
}

// Raises max_fragment_id to the highest fragment id present (never lowers it; left
// unset while there are no fragments), as Lance does on commit.
inline void update_max_fragment_id(pb::manifest& m) {
  if (m.fragments.empty()) return;
  std::uint64_t hi = 0;
  for (const auto& f : m.fragments) hi = std::max(hi, f.id);
  if (hi > 0xFFFFFFFFull) throw invalid_input_error("manifest: fragment id " + std::to_string(hi) + " exceeds u32");
  if (!m.max_fragment_id || *m.max_fragment_id < hi) m.max_fragment_id = std::uint32_t(hi);
}

// Live rows of the version, when every fragment knows its count.
inline std::optional<std::uint64_t> manifest_row_count(const pb::manifest& m) {
  std::uint64_t n = 0;
  for (const auto& f : m.fragments) {
    auto r = f.num_rows();
    if (!r) return std::nullopt;
    n += *r;
  }
  return n;
}

// The fragment ids an index covers (empty bitmap when the field is absent).
inline roaring_bitmap index_fragment_bitmap(const pb::index_metadata& idx) {
  if (idx.fragment_bitmap.empty()) return {};
  try {
    return roaring_bitmap::deserialize(std::string_view(idx.fragment_bitmap));
  } catch (const corrupt_error& e) {
    throw corrupt_error("index '" + idx.name + "' fragment bitmap: " + e.message());
  }
}
inline void set_index_fragment_bitmap(pb::index_metadata& idx, const roaring_bitmap& fragments) {
  idx.fragment_bitmap = fragments.serialize();
}

// The manifest's schema fields decoded with a lance.file.Field message type (one that
// pb::encode / pb::decode take, such as the one pb/file.hpp provides, or a type with
// its own `static Field decode(pb::reader)` and `void encode(pb::writer&) const`). The manifest keeps them encoded so that fields this
// library does not model survive a rewrite untouched.
template <class Field>
std::vector<Field> manifest_fields(const pb::manifest& m) {
  std::vector<Field> out;
  out.reserve(m.fields_raw.size());
  for (const auto& raw : m.fields_raw) out.push_back(pb::decode<Field>(pb::reader(std::string_view(raw), 0, "Manifest.fields")));
  return out;
}
template <class Field>
void set_manifest_fields(pb::manifest& m, const std::vector<Field>& fields) {
  m.fields_raw.clear();
  for (const auto& f : fields) m.fields_raw.push_back(pb::encode(f));
}

// ---------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------

namespace detail {

inline void append_u32(std::string& out, std::uint32_t v) {
  char b[4];
  le::store(b, v);
  out.append(b, 4);
}

template <class Msg>
std::string length_prefixed(const Msg& m, std::string_view what) {
  std::string body = pb::encode(m);
  if (body.size() > 0xFFFFFFFFull) throw invalid_input_error(std::string(what) + " is larger than 4 GiB");
  std::string out;
  out.reserve(4 + body.size());
  append_u32(out, std::uint32_t(body.size()));
  out += body;
  return out;
}

inline std::string footer(std::uint64_t manifest_position) {
  std::string out(manifest_footer_size, '\0');
  le::store(out.data(), std::int64_t(manifest_position));
  le::store(out.data() + 8, std::int16_t(manifest_footer_major));
  le::store(out.data() + 10, std::int16_t(manifest_footer_minor));
  out.replace(12, 4, manifest_magic);
  return out;
}

inline bytes_view view(std::string_view s) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace detail

// Writes a manifest file to a sink (whose position is the file offset: use a fresh
// sink). Sets m.index_section and m.transaction_section to where the sections land
// (or clears them). The index section is written only when there are indices. Does
// not call sink.finish(): publishing is the committer's business. Returns the bytes
// written.
template <io::sink Sink>
std::uint64_t write_manifest_file(Sink& sink, pb::manifest& m, std::span<const pb::index_metadata> indices = {},
                                  const pb::transaction* txn = nullptr) {
  const std::uint64_t start = std::uint64_t(sink.position());
  m.index_section.reset();
  m.transaction_section.reset();
  if (!indices.empty()) {
    pb::index_section sec;
    sec.indices.assign(indices.begin(), indices.end());
    m.index_section = std::uint64_t(sink.position());
    sink.write(detail::view(detail::length_prefixed(sec, "index section")));
  }
  if (txn) {
    m.transaction_section = std::uint64_t(sink.position());
    sink.write(detail::view(detail::length_prefixed(*txn, "transaction section")));
  }
  const std::uint64_t manifest_pos = std::uint64_t(sink.position());
  sink.write(detail::view(detail::length_prefixed(m, "manifest")));
  sink.write(detail::view(detail::footer(manifest_pos)));
  return std::uint64_t(sink.position()) - start;
}

// The manifest file as bytes (same layout as write_manifest_file at offset 0).
inline std::string encode_manifest_file(pb::manifest& m, std::span<const pb::index_metadata> indices = {},
                                        const pb::transaction* txn = nullptr) {
  struct string_sink {
    std::string out;
    void write(bytes_view b) { out.append(reinterpret_cast<const char*>(b.data()), b.size()); }
    std::uint64_t position() const { return out.size(); }
    void finish() {}
  } s;
  write_manifest_file(s, m, indices, txn);
  return std::move(s.out);
}

// ---------------------------------------------------------------------------------
// Reading (every offset and length is checked against the file)
// ---------------------------------------------------------------------------------

struct manifest_footer {
  std::uint64_t manifest_position = 0;
  std::uint16_t major = 0, minor = 0;
};

struct manifest_file {
  pb::manifest manifest;
  std::vector<pb::index_metadata> indices;     // empty without an index section
  std::optional<pb::transaction> transaction;  // the inline transaction section, if any
  manifest_footer footer;
};

inline manifest_footer read_manifest_footer(bytes_view file) {
  if (file.size() < manifest_footer_size + 4)
    throw corrupt_error("manifest: file of " + std::to_string(file.size()) + " bytes is too small");
  const std::uint8_t* f = file.data() + file.size() - manifest_footer_size;
  if (std::string_view(reinterpret_cast<const char*>(f + 12), 4) != manifest_magic)
    throw corrupt_error("manifest: missing LANC magic at byte " + std::to_string(file.size() - 4));
  const auto pos = le::load<std::int64_t>(f);
  manifest_footer out;
  out.major = std::uint16_t(le::load<std::int16_t>(f + 8));
  out.minor = std::uint16_t(le::load<std::int16_t>(f + 10));
  if (out.major != 0)
    throw unsupported_error("manifest: footer version " + std::to_string(out.major) + "." + std::to_string(out.minor) +
                            " (expected 0.x)");
  const std::uint64_t limit = file.size() - manifest_footer_size - 4;
  if (pos < 0 || std::uint64_t(pos) > limit)
    throw corrupt_error("manifest: manifest position " + std::to_string(pos) + " outside the file (" +
                        std::to_string(file.size()) + " bytes)");
  out.manifest_position = std::uint64_t(pos);
  return out;
}

// The manifest message alone (sections are not read).
inline pb::manifest read_manifest(bytes_view file) {
  const auto ft = read_manifest_footer(file);
  const std::uint64_t pos = ft.manifest_position;
  const std::uint32_t len = le::load<std::uint32_t>(file.data() + pos);
  const std::uint64_t expected = file.size() - manifest_footer_size - pos - 4;
  if (len != expected)
    throw corrupt_error("manifest: message at " + std::to_string(pos) + " records " + std::to_string(len) +
                        " bytes but " + std::to_string(expected) + " lie before the footer");
  return pb::decode<pb::manifest>(file.subspan(std::size_t(pos + 4), len));
}

namespace detail {

// A u32-length-prefixed section that must lie before the manifest message.
inline bytes_view section(bytes_view file, std::uint64_t pos, std::string_view what) {
  const auto ft = read_manifest_footer(file);
  if (pos > ft.manifest_position || ft.manifest_position - pos < 4)
    throw corrupt_error("manifest: " + std::string(what) + " position " + std::to_string(pos) +
                        " is not before the manifest message at " + std::to_string(ft.manifest_position));
  const std::uint32_t len = le::load<std::uint32_t>(file.data() + pos);
  if (len > ft.manifest_position - pos - 4)
    throw corrupt_error("manifest: " + std::string(what) + " at " + std::to_string(pos) + " of " + std::to_string(len) +
                        " bytes runs into the manifest message at " + std::to_string(ft.manifest_position));
  return file.subspan(std::size_t(pos + 4), len);
}

}  // namespace detail

inline std::vector<pb::index_metadata> read_index_section(bytes_view file, const pb::manifest& m) {
  if (!m.index_section) return {};
  auto b = detail::section(file, *m.index_section, "index section");
  return pb::decode<pb::index_section>(b).indices;
}

inline std::optional<pb::transaction> read_transaction_section(bytes_view file, const pb::manifest& m) {
  if (!m.transaction_section) return std::nullopt;
  auto b = detail::section(file, *m.transaction_section, "transaction section");
  return pb::decode<pb::transaction>(b);
}

inline manifest_file read_manifest_file(bytes_view file) {
  manifest_file out;
  out.footer = read_manifest_footer(file);
  out.manifest = read_manifest(file);
  out.indices = read_index_section(file, out.manifest);
  out.transaction = read_transaction_section(file, out.manifest);
  return out;
}
inline manifest_file read_manifest_file(std::string_view bytes) { return read_manifest_file(detail::view(bytes)); }

// Whole small file into memory (manifests, transaction files).
inline std::string read_small_file(const std::string& path, std::uint64_t max_bytes = std::uint64_t(1) << 31) {
  io::unique_fd fd = io::open_fd(path, O_RDONLY);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) io::throw_errno("cannot stat", path, errno);
  if (std::uint64_t(st.st_size) > max_bytes)
    throw unsupported_error("'" + path + "' is " + std::to_string(st.st_size) + " bytes, more than " +
                            std::to_string(max_bytes));
  std::string out(std::size_t(st.st_size), '\0');
  const std::size_t got = io::pread_full(fd.get(), out.data(), out.size(), 0, path);
  out.resize(got);
  return out;
}

namespace detail {
// Parses the bytes of the manifest file at `path`; errors name the path.
inline manifest_file parse_at(const std::string& path, const std::string& bytes) {
  try {
    return read_manifest_file(std::string_view(bytes));
  } catch (const corrupt_error& e) {
    throw corrupt_error("'" + path + "': " + e.message());
  }
}
}  // namespace detail

// Reads and parses a manifest file; errors name the path.
inline manifest_file read_manifest_file_at(const std::string& path) {
  return detail::parse_at(path, read_small_file(path));
}

// ---------------------------------------------------------------------------------
// Sources: where dataset reads get their bytes
// ---------------------------------------------------------------------------------

// Opens, as sources, the files a dataset read needs: manifests, data files, deletion
// files, external row-id sequences and blob files (the read-side counterpart of the
// sink factory a write takes). By default local files through io::file_source, with
// the given io::file_source_options; any callable taking the path and returning a
// source (a type satisfying io::source, or an io::any_source) can take its place:
//
//   dataset::source_factory mine = [&cache](const std::string& path) { return cache.open(path); };
//   auto ds = dataset::dataset::open(root, std::nullopt, mine);
//
// Paths are the root joined with the relative paths the manifest records. The default
// opens local paths (and file:// URIs) as io::file_source and other URIs through the
// storage mounted for them (io::storage_for). The sources are held type-erased
// (io::any_source), so every factory shares one file_reader instantiation. Dataset reads
// call the factory from every thread that reads: it must be safe to call concurrently.
// Finding versions (listing _versions/) goes through io::storage_for(root); only file
// contents come from the factory.
class source_factory {
 public:
  source_factory(io::file_source_options local = {}) : local_(local) {}  // NOLINT: options convert
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, source_factory> &&
             !std::same_as<std::remove_cvref_t<F>, io::file_source_options> &&
             std::invocable<const std::remove_cvref_t<F>&, const std::string&> &&
             io::source<std::remove_cvref_t<std::invoke_result_t<const std::remove_cvref_t<F>&, const std::string&>>>)
  source_factory(F&& open)  // NOLINT: callables convert
      : open_([f = std::forward<F>(open)](const std::string& path) { return io::any_source(f(path)); }) {}

  // `size`, when the caller knows it (a manifest's data file sizes, a listing), spares
  // a store the request that would ask; a user's factory does not get it.
  io::any_source operator()(const std::string& path, std::optional<std::uint64_t> size = std::nullopt) const {
    if (open_) return open_(path);
    if (!io::is_uri(path)) return io::any_source(io::file_source(path, local_));
    const auto st = io::storage_for(path);
    if (st.is_local()) return io::any_source(io::file_source(io::local_path(path), local_));
    return st.open_source(path, size);
  }
  // Whether this is the default: local files through io::file_source, URIs through
  // their mounted storage.
  bool is_local() const noexcept { return !open_; }

 private:
  std::function<io::any_source(const std::string&)> open_;
  io::file_source_options local_;
};

namespace detail {

// Throws an error of e's kind with message `msg`.
[[noreturn]] inline void rethrow_as(const error& e, const std::string& msg) {
  switch (e.code()) {
    case errc::invalid_input: throw invalid_input_error(msg);
    case errc::io: throw io_error(msg);
    case errc::corrupt: throw corrupt_error(msg);
    case errc::unsupported: throw unsupported_error(msg);
    case errc::conflict: throw conflict_error(msg);
    case errc::cancelled: throw cancelled_error(msg);
    default: throw error(e.code(), msg);
  }
}

// Runs f(). A lancet error that does not name `path` (a user's source may not know
// it) is rethrown as the same kind with "'path': " in front; others pass unchanged.
template <class F>
decltype(auto) naming_path(const std::string& path, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const error& e) {
    if (std::string_view(e.what()).find(path) != std::string_view::npos) throw;
    rethrow_as(e, "'" + path + "': " + e.message());
  }
}

}  // namespace detail

// Whole small file into memory through a source factory; errors name the path.
// `known_size`: as source_factory's.
inline std::string read_small_file(const source_factory& sources, const std::string& path,
                                   std::uint64_t max_bytes = std::uint64_t(1) << 31,
                                   std::optional<std::uint64_t> known_size = std::nullopt) {
  return detail::naming_path(path, [&] {
    const io::any_source src = sources(path, known_size);
    const std::uint64_t size = src.size();
    if (size > max_bytes)
      throw unsupported_error("'" + path + "' is " + std::to_string(size) + " bytes, more than " +
                              std::to_string(max_bytes));
    std::string out;
    if (size == 0) return out;
    const shared_bytes b = src.read(0, size);
    if (b.size() != size)
      throw io_error("'" + path + "': read " + std::to_string(b.size()) + " of " + std::to_string(size) + " bytes");
    out.assign(reinterpret_cast<const char*>(b.data()), b.size());
    return out;
  });
}

// Reads and parses a manifest file through a source factory; errors name the path.
// `listed_size`: its size from a listing (0: unknown).
inline manifest_file read_manifest_file_at(const std::string& path, const source_factory& sources,
                                           std::uint64_t listed_size = 0) {
  if (sources.is_local() && !io::is_uri(path)) return read_manifest_file_at(path);
  return detail::parse_at(path, read_small_file(sources, path, std::uint64_t(1) << 31,
                                                listed_size ? std::optional(listed_size) : std::nullopt));
}

// ---------------------------------------------------------------------------------
// Transaction files: _transactions/{read_version}-{uuid}.txn, the bare message
// ---------------------------------------------------------------------------------

inline std::string encode_transaction_file(const pb::transaction& t) { return pb::encode(t); }
inline pb::transaction decode_transaction_file(std::string_view bytes) { return pb::decode<pb::transaction>(bytes); }

// A new transaction with a fresh v4 UUID.
inline pb::transaction make_transaction(std::uint64_t read_version, pb::transaction::operation_t op) {
  pb::transaction t;
  t.read_version = read_version;
  t.uuid = lancet::uuid::generate_v4().to_string();
  t.operation = std::move(op);
  return t;
}

}  // namespace lancet::dataset
