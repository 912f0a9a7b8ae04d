// file_writer<Version, Sink, Encoding>: writes one Lance v2 file.
//
//   [page buffers, 64-byte aligned][global buffers][file descriptor (global buffer 0)]
//   [column metadata...][column metadata offsets][global buffer offsets][footer]
//
// Arrays go to per-field encoders chosen by the strategy; the pages they produce are
// written in order as they become ready; finish() flushes, writes what only the end
// can know, and the footer. Any failure aborts the sink (nothing is published) and
// leaves the writer unusable.
//
// One piece on purpose: this is one class (file_writer_impl, with the thin typed
// file_writer over it). Its members are defined out of the class, below it, so that
// compiled mode's explicit instantiations (the end of this header) keep them out of user
// translation units; splitting them from the class would not separate a concern.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <future>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/arrow/dictionary.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/executor.hpp"
#include "lancet/core/warning.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/structural/blob_files.hpp"
#include "lancet/file/footer.hpp"
#include "lancet/file/page_table.hpp"
#include "lancet/file/version.hpp"
#include "lancet/io/abortable_sink.hpp"
#include "lancet/io/sink.hpp"
#include "lancet/pb/file2.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::file {

inline constexpr std::uint64_t default_max_page_bytes = 32ull << 20;
inline constexpr std::uint64_t default_cache_bytes_per_column = 8ull << 20;
inline constexpr const char* max_page_bytes_env = "LANCE_FILE_WRITER_MAX_PAGE_BYTES";
// Lance pads between buffers with this byte.
inline constexpr std::uint8_t pad_byte = 0x48;

struct writer_options {
  // Buffered column data before a page is cut, split evenly across top-level fields
  // (default: 8 MiB per field).
  std::optional<std::uint64_t> data_cache_bytes;
  // Largest page (a hint: a single value is never split). Default 32 MiB, or the
  // LANCE_FILE_WRITER_MAX_PAGE_BYTES environment variable when set.
  std::optional<std::uint64_t> max_page_bytes;
  // Keep references to buffered arrays instead of copying them.
  bool keep_original_array = false;
  // Spill page metadata to this sidecar file instead of keeping it in memory.
  std::optional<std::string> page_metadata_spill_path;
  // Encode pages on this pool (pages are still written in order); inline when null.
  // Takes e.g. a boost::asio::thread_pool* (see core/executor.hpp).
  executor_ref pool;
  // 2.1+: size pages as if each array came this many rows at a time (dataset::write
  // uses Lance's row-group size, 1,024): a large batch then closes a page at every
  // ~data_cache_bytes of a column instead of becoming one page, and without being
  // copied. 0: an array counts whole, as Lance's file writer counts it.
  std::uint64_t rows_per_group = 0;
  // Pages encoded on the pool ahead of the one being written (bounds the memory of
  // encoded pages waiting for their turn).
  std::size_t max_pages_in_flight = 4;
  // 2.2+: opens the blob files blob v2 values over 64 KiB go to (packed or dedicated, as
  // Lance 12 places them; encoding/structural/blob_files.hpp). Unset: every value inline.
  encoding::structural::blob_file_opener blob_files;
};

struct finish_result {
  std::uint64_t rows = 0;
  std::uint64_t file_size = 0;
};

namespace detail {

inline std::uint64_t resolve_max_page_bytes(const writer_options& o) {
  if (o.max_page_bytes) return *o.max_page_bytes;
  if (const char* env = std::getenv(max_page_bytes_env)) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (errno == 0 && end && *end == '\0' && end != env && env[0] != '-') return v;
    warn(std::string("cannot parse ") + max_page_bytes_env + "='" + env + "', using the default of " +
         std::to_string(default_max_page_bytes) + " bytes");
  }
  return default_max_page_bytes;
}

// Throws naming the first non-nullable field (at any depth) that holds nulls.
inline void check_nullability(const schema::field& f, const arrow::array_data& a, const std::string& path) {
  const std::string name = path.empty() ? f.name : path + "." + f.name;
  if (!f.nullable && a.count_nulls() > 0)
    throw invalid_input_error("the field '" + name + "' contains " + std::to_string(a.count_nulls()) +
                              " null value(s) even though it is marked non-nullable in the schema");
  const auto id = a.type->id;
  if (id == arrow::type_id::struct_) {
    for (std::size_t i = 0; i < f.children.size() && i < a.children.size(); ++i)
      check_nullability(f.children[i], *arrow::slice(a.children[i], a.offset, a.length), name);
  } else if (arrow::is_list_like(id) && !f.children.empty()) {
    check_nullability(f.children[0], *arrow::list_items(a), name);
  }
}

inline bool is_blob_v2(const schema::field& f) {
  auto ext = f.extension_name();
  return ext && *ext == "lance.blob.v2" && f.logical_type == "struct";
}

// Global buffer 0. A blob v2 field is stored, as Lance 12 stores it in data files, as
// the struct of its descriptions (lance-encoding:blob and :packed metadata) followed by
// the five description members with id -1 and parent -1 (the manifest keeps the field
// as declared, struct<data, uri>).
inline std::string file_descriptor_bytes(const schema::schema& s, std::uint64_t rows) {
  bool blob = false;
  for (const auto& f : s.fields) blob |= is_blob_v2(f);
  if (!blob) return schema::encode_file_descriptor(s, rows);
  schema::validate(s);
  pb::file::file_descriptor d;
  d.schema.emplace();
  d.schema->metadata = s.metadata;
  for (const auto& f : s.fields) {
    schema::schema one;
    one.fields.push_back(f);
    auto pfs = schema::to_pb_fields(one);
    if (!is_blob_v2(f)) {
      for (auto& p : pfs) d.schema->fields.push_back(std::move(p));
      continue;
    }
    auto p = std::move(pfs.at(0));
    p.extension_name.clear();
    p.encoding = pb::file::field_encoding::none;
    p.metadata = {{"lance-encoding:blob", "true"}, {"lance-encoding:packed", "true"}};
    d.schema->fields.push_back(std::move(p));
    static constexpr std::pair<const char*, const char*> members[] = {
        {"kind", "uint8"}, {"position", "uint64"}, {"size", "uint64"}, {"blob_id", "uint32"}, {"blob_uri", "string"}};
    for (const auto& [name, lt] : members) {
      pb::file::field m;
      m.name = name;
      m.id = -1;
      m.parent_id = -1;
      m.logical_type = lt;
      m.nullable = false;
      m.encoding = std::string_view(lt) == "string" ? pb::file::field_encoding::var_binary : pb::file::field_encoding::plain;
      d.schema->fields.push_back(std::move(m));
    }
  }
  d.length = rows;
  return pb::encode(d);
}

// The strategy a writer uses for its third template argument: a strategy as is (it
// makes field encoders), otherwise an encoding policy wrapped in the version's strategy.
template <class Version, class Encoding>
struct strategy_of {
  using type = typename Version::template policy_strategy<Encoding>;
};
template <class Version, class Encoding>
  requires requires(const Encoding& e, const arrow::field& f, encoding::field_id_cursor& ids,
                    encoding::column_index_sequence& cols, const encoding::encoding_options& o) {
    e.make_field_encoder(f, ids, cols, o);
  }
struct strategy_of<Version, Encoding> {
  using type = Encoding;
};

// The type a writer keeps its strategy as: the strategy's `shared_type` when it has one
// (the structural strategies of 2.1-2.3 are one class with the version fixed, so their
// writers share one file_writer_impl), else the strategy itself.
template <class Strategy>
struct shared_strategy {
  using type = Strategy;
};
template <class Strategy>
  requires requires { typename Strategy::shared_type; }
struct shared_strategy<Strategy> {
  using type = typename Strategy::shared_type;
};

// What a writer needs of its version policy, at run time.
struct version_numbers {
  format_version value;
  std::uint16_t footer_major, footer_minor;
  bool unstable;
};
template <class Version>
constexpr version_numbers numbers_of() {
  return {Version::value, Version::footer_major, Version::footer_minor, Version::unstable};
}

// The writer of file_writer, over a sink and a strategy, with the version a run-time
// value: every version with the same strategy class (2.1, 2.2, 2.3) shares its code.
template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
class file_writer_impl {
 public:
  using strategy_type = Strategy;

  // A writer whose schema comes from the first batch.
  file_writer_impl(version_numbers version, Sink sink, writer_options options, Strategy strategy)
      : version_(version), sink_(std::forward<Sink>(sink)), options_(std::move(options)),
        strategy_(std::move(strategy)) {
    if (version_.unstable) warn_unstable();
  }
  // A writer with an explicit schema.
  file_writer_impl(version_numbers version, Sink sink, schema::schema s, writer_options options, Strategy strategy)
      : file_writer_impl(version, std::forward<Sink>(sink), std::move(options), std::move(strategy)) {
    guarded([&] { initialize(std::move(s)); });
  }
  file_writer_impl(const file_writer_impl&) = delete;
  file_writer_impl& operator=(const file_writer_impl&) = delete;
  ~file_writer_impl() {
    if (state_ != state::finished) io::abort_sink(sink_ref());
  }

  // Writes a batch; its columns are matched to the schema by name.
  void write_batch(const arrow::record_batch& batch);

  // Writes rows of one top-level field; fields may so reach different lengths.
  void write_column(std::size_t index, const arrow::array_ptr& array);

  // Appends pages encoded elsewhere (e.g. read from another Lance file of the same
  // version) to a column: their buffers are copied as bytes, their encodings kept.
  // Columns fed this way are finished with `set_column_encoding`'s metadata (default:
  // the plain column encoding) instead of an encoder's; their field's rows count
  // from the pages of its first column.
  void write_encoded_pages(std::uint32_t column, std::span<const encoding::encoded_page> pages);
  // The column-level buffers and ColumnEncoding (serialized Any) of a pre-encoded column.
  void set_column_encoding(std::uint32_t column, std::vector<shared_bytes> column_buffers, std::string encoding);

  // Writes a global buffer now; returns its index (1, 2, ...; 0 is the descriptor).
  std::uint32_t add_global_buffer(bytes_view bytes);

  // Sets (or replaces) a schema metadata entry; allowed until finish.
  void add_schema_metadata(std::string key, std::string value) {
    require_open("add_schema_metadata");
    for (auto& [k, v] : extra_metadata_)
      if (k == key) { v = std::move(value); return; }
    extra_metadata_.emplace_back(std::move(key), std::move(value));
  }

  std::uint64_t tell() const { return std::uint64_t(sink_ref().position()); }
  std::uint64_t rows_written() const noexcept { return rows_written_; }
  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& field_id_to_column_indices() const noexcept {
    return field_columns_;
  }
  const schema::schema* schema() const noexcept { return schema_ ? &*schema_ : nullptr; }
  std::remove_reference_t<Sink>& sink() noexcept { return sink_; }

  finish_result finish();

 private:
  enum class state { open, failed, finished };

  static bytes_view as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
  }
  std::remove_reference_t<Sink>& sink_ref() noexcept { return sink_; }
  const std::remove_reference_t<Sink>& sink_ref() const noexcept { return sink_; }

  static void warn_unstable() {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      warn("you have requested an unstable format version; files written with it may not be readable in the "
           "future");
    }
  }

  // Runs one public operation. Bad input refused before any state changed leaves the
  // writer usable; any other failure aborts the sink and the writer.
  template <class F>
  void guarded(F&& f) {
    mutating_ = false;
    try {
      f();
    } catch (const invalid_input_error&) {
      if (mutating_) {
        state_ = state::failed;
        io::abort_sink(sink_ref());
      }
      throw;
    } catch (...) {
      state_ = state::failed;
      io::abort_sink(sink_ref());
      throw;
    }
  }

  void require_open(const char* what) const {
    if (state_ == state::finished) throw invalid_input_error(std::string(what) + ": the file is already finished");
    if (state_ == state::failed)
      throw invalid_input_error(std::string(what) + ": an earlier error aborted this writer");
  }

  void require_column(std::uint32_t column) const {
    if (!schema_) throw invalid_input_error("writing encoded pages needs a writer created with a schema");
    if (column >= num_columns_)
      throw invalid_input_error("column " + std::to_string(column) + " is out of range: the file has " +
                                std::to_string(num_columns_) + " columns");
  }

  // A field whose first column is pre-encoded is as long as that column's pages.
  void refresh_external_rows();

  static void checked_add(std::uint64_t& counter, std::uint64_t n) {
    if (counter > std::numeric_limits<std::uint64_t>::max() - n)
      throw invalid_input_error("cannot write " + std::to_string(n) + " more rows after " + std::to_string(counter) +
                                ": a Lance file holds at most 2^64 rows");
    counter += n;
  }

  void check_column(std::size_t i, const arrow::array_data& a, std::uint64_t n) const;

  void initialize(schema::schema s);

  void write_raw(bytes_view b) { sink_ref().write(b); }
  void write_padded(bytes_view b) {
    write_raw(b);
    static const std::array<std::uint8_t, 64> pad = [] {
      std::array<std::uint8_t, 64> p{};
      p.fill(pad_byte);
      return p;
    }();
    const auto rem = b.size() % 64;
    if (rem) write_raw({pad.data(), 64 - rem});
  }

  void write_page(const encoding::encoded_page& p);
  // Encodes the tasks (in parallel on the pool, if any) and writes their pages in task
  // order: while one page is written the next max_pages_in_flight are being encoded.
  // In-flight memory is bounded by what the tasks hold (at most the column caches, or
  // the caller's batch) plus that many encoded pages.
  void write_pages(std::vector<encoding::encode_task>& tasks);

  void finish_columns();

  // ColumnMetadata bytes: encoding (1), pages (2), buffer offsets (3) and sizes (4).
  std::string column_metadata_bytes(std::uint32_t c);

  version_numbers version_;
  Sink sink_;
  writer_options options_;
  Strategy strategy_;
  state state_ = state::open;
  bool mutating_ = false;
  std::optional<schema::schema> schema_;
  std::vector<arrow::field> arrow_fields_;
  std::vector<encoding::field_encoder_ptr> encoders_;
  std::optional<encoding::structural::blob_placer> blob_placer_;
  std::uint32_t num_columns_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> field_columns_;
  std::vector<std::uint64_t> column_rows_;
  std::uint64_t rows_written_ = 0;
  std::vector<region> global_buffers_;
  arrow::metadata extra_metadata_;
  page_table page_table_;
  std::vector<std::string> column_encodings_;
  std::vector<std::vector<region>> column_buffers_;
  std::vector<bool> external_;  // columns fed with pre-encoded pages
  std::vector<std::uint64_t> external_rows_;
  std::vector<std::optional<encoding::encoded_column>> external_columns_;
};

}  // namespace detail

// Writes one Lance file of version `Version` (file::v2_0 .. v2_3, from
// lancet/file/legacy.hpp or structural.hpp) to `Sink` (the io::sink concept).
// `Encoding` is an encoding policy (encoding/structural/policy.hpp) or a whole strategy;
// by default the version's, which makes Lance 12's choices. (The members are
// detail::file_writer_impl's, shared by the versions whose strategies share a class.)
template <version_policy Version, class Sink, class Encoding = typename Version::default_strategy>
  requires io::sink<std::remove_reference_t<Sink>>
class file_writer
    : public detail::file_writer_impl<
          Sink, typename detail::shared_strategy<typename detail::strategy_of<Version, Encoding>::type>::type> {
  using impl = detail::file_writer_impl<
      Sink, typename detail::shared_strategy<typename detail::strategy_of<Version, Encoding>::type>::type>;

 public:
  using version = Version;
  using strategy_type = typename detail::strategy_of<Version, Encoding>::type;

  // A writer whose schema comes from the first batch.
  explicit file_writer(Sink sink, writer_options options = {}, strategy_type strategy = {})
      : impl(detail::numbers_of<Version>(), std::forward<Sink>(sink), std::move(options), std::move(strategy)) {}
  // A writer with an explicit schema.
  file_writer(Sink sink, schema::schema s, writer_options options = {}, strategy_type strategy = {})
      : impl(detail::numbers_of<Version>(), std::forward<Sink>(sink), std::move(s), std::move(options),
             std::move(strategy)) {}
};

namespace detail {

// Out of the class so that an explicit instantiation declaration (compiled mode,
// the end of this header) keeps them out of the user's translation units.

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::write_batch(const arrow::record_batch& batch) {
  guarded([&] {
    require_open("write_batch");
    if (!schema_) initialize(schema::from_arrow(*batch.schema));
    const auto& fields = schema_->fields;
    std::vector<arrow::array_ptr> columns;
    columns.reserve(fields.size());
    for (const auto& f : fields) {
      const arrow::array_ptr* found = nullptr;
      for (std::size_t i = 0; i < batch.schema->fields.size() && i < batch.columns.size(); ++i)
        if (batch.schema->fields[i].name == f.name) { found = &batch.columns[i]; break; }
      if (!found) throw invalid_input_error("cannot write batch: it is missing the column '" + f.name + "'");
      columns.push_back(*found);
    }
    const auto n = std::uint64_t(batch.num_rows());
    for (std::size_t i = 0; i < columns.size(); ++i) check_column(i, *columns[i], n);
    if (n == 0) return;
    for (auto& c : columns) c = arrow::decode_dictionaries(c);  // pages hold the values
    if (n > std::numeric_limits<std::uint32_t>::max())
      throw invalid_input_error("cannot write a batch of " + std::to_string(n) +
                                " rows: Lance files take at most 2^32 rows per batch");
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (column_rows_[i] > std::numeric_limits<std::uint64_t>::max() - n)
        throw invalid_input_error("cannot write " + std::to_string(n) + " more rows after " +
                                  std::to_string(column_rows_[i]) + ": a Lance file holds at most 2^64 rows");
    mutating_ = true;
    for (std::size_t i = 0; i < columns.size(); ++i) checked_add(column_rows_[i], n);
    std::vector<encoding::encode_task> tasks;
    for (std::size_t i = 0; i < columns.size(); ++i)
      for (auto& t : encoders_[i]->maybe_encode(columns[i], rows_written_, n)) tasks.push_back(std::move(t));
    rows_written_ = *std::max_element(column_rows_.begin(), column_rows_.end());
    write_pages(tasks);
  });
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::write_column(std::size_t index, const arrow::array_ptr& array) {
  guarded([&] {
    require_open("write_column");
    if (!schema_) throw invalid_input_error("write_column needs a writer created with a schema");
    if (index >= schema_->fields.size())
      throw invalid_input_error("column index " + std::to_string(index) + " is out of range: the schema has " +
                                std::to_string(schema_->fields.size()) + " fields");
    const auto n = std::uint64_t(array->length);
    check_column(index, *array, n);
    if (n == 0) return;
    if (n > std::numeric_limits<std::uint32_t>::max())
      throw invalid_input_error("cannot write " + std::to_string(n) + " rows to field '" +
                                schema_->fields[index].name + "' at once: at most 2^32 rows per call");
    const auto row = column_rows_[index];
    checked_add(column_rows_[index], n);
    mutating_ = true;
    auto tasks = encoders_[index]->maybe_encode(arrow::decode_dictionaries(array), row, n);
    rows_written_ = std::max(rows_written_, column_rows_[index]);
    write_pages(tasks);
  });
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::write_encoded_pages(std::uint32_t column, std::span<const encoding::encoded_page> pages) {
  guarded([&] {
    require_open("write_encoded_pages");
    require_column(column);
    mutating_ = true;
    external_[column] = true;
    for (const auto& p : pages) {
      auto copy = p;
      copy.column_index = column;
      write_page(copy);
      external_rows_[column] += p.num_rows;
    }
    refresh_external_rows();
  });
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::set_column_encoding(std::uint32_t column, std::vector<shared_bytes> column_buffers, std::string encoding) {
  guarded([&] {
    require_open("set_column_encoding");
    require_column(column);
    external_[column] = true;
    external_columns_[column] = encoding::encoded_column{{}, std::move(column_buffers), std::move(encoding)};
  });
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
std::uint32_t file_writer_impl<Sink, Strategy>::add_global_buffer(bytes_view bytes) {
  std::uint32_t index = 0;
  guarded([&] {
    require_open("add_global_buffer");
    const auto pos = tell();
    write_padded(bytes);
    global_buffers_.push_back({pos, bytes.size()});
    index = std::uint32_t(global_buffers_.size());
  });
  return index;
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
finish_result file_writer_impl<Sink, Strategy>::finish() {
  finish_result r;
  guarded([&] {
    require_open("finish");
    if (!schema_)
      throw invalid_input_error("cannot finish: no schema was given and no data was written, so the file's "
                                "schema is unknown");
    mutating_ = true;
    std::vector<encoding::encode_task> tasks;
    for (auto& e : encoders_)
      for (auto& t : e->flush()) tasks.push_back(std::move(t));
    write_pages(tasks);
    finish_columns();
    if (blob_placer_) blob_placer_->finish();  // blob files are published before the data file
    // Global buffer 0: the file descriptor (schema with its metadata, and the row count).
    auto full = *schema_;
    for (const auto& kv : extra_metadata_) {
      bool replaced = false;
      for (auto& [k, v] : full.metadata)
        if (k == kv.first) { v = kv.second; replaced = true; }
      if (!replaced) full.metadata.push_back(kv);
    }
    const std::string descriptor = detail::file_descriptor_bytes(full, rows_written_);
    std::vector<region> globals;
    globals.push_back({tell(), descriptor.size()});
    write_raw(as_bytes(descriptor));
    globals.insert(globals.end(), global_buffers_.begin(), global_buffers_.end());
    // Column metadata, then the two offset tables and the footer.
    footer ft;
    ft.column_meta_start = tell();
    std::vector<region> metas;
    for (std::uint32_t c = 0; c < num_columns_; ++c) {
      const std::string meta = column_metadata_bytes(c);
      metas.push_back({tell(), meta.size()});
      write_raw(as_bytes(meta));
    }
    ft.column_meta_offsets = tell();
    write_raw(as_bytes(encode_offset_table(metas)));
    ft.global_buff_offsets = tell();
    write_raw(as_bytes(encode_offset_table(globals)));
    ft.num_global_buffers = std::uint32_t(globals.size());
    ft.num_columns = num_columns_;
    ft.major = version_.footer_major;
    ft.minor = version_.footer_minor;
    std::uint8_t tail[footer_size];
    ft.encode(tail);
    write_raw({tail, footer_size});
    r.rows = rows_written_;
    r.file_size = tell();
    sink_ref().finish();
    state_ = state::finished;
  });
  return r;
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::refresh_external_rows() {
  std::uint32_t first = 0;
  for (std::size_t f = 0; f < encoders_.size(); ++f) {
    if (external_[first]) {
      column_rows_[f] = std::max(column_rows_[f], external_rows_[first]);
      rows_written_ = std::max(rows_written_, column_rows_[f]);
    }
    first += encoders_[f]->num_columns();
  }
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::check_column(std::size_t i, const arrow::array_data& a, std::uint64_t n) const {
  const auto& f = schema_->fields[i];
  if (std::uint64_t(a.length) != n)
    throw invalid_input_error("column '" + f.name + "' has " + std::to_string(a.length) + " rows, expected " +
                              std::to_string(n));
  // Nested nullability is not compared: a schema read back from a Lance file has lost
  // a fixed-size list item's nullability (nulls are checked against the schema below).
  arrow::compare_options types_only;
  types_only.check_nested_nullability = false;
  if (auto d = arrow::type_difference(*a.type, *arrow_fields_[i].type, types_only, ""))
    throw invalid_input_error("column '" + f.name + "' does not match the schema: " + *d);
  detail::check_nullability(f, a, "");
  if constexpr (requires { strategy_.validate(arrow_fields_[i], a); }) strategy_.validate(arrow_fields_[i], a);
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::initialize(schema::schema s) {
  const auto arrow_schema = schema::to_arrow(s);
  arrow_fields_ = arrow_schema.fields;
  if (version_.value < format_version::v2_2) {
    // As Lance 12: "Map data type is not enabled by the selected file format".
    struct finder {
      bool operator()(const arrow::data_type& t) const {
        if (t.id == arrow::type_id::map) return true;
        for (const auto& c : t.children)
          if (c.type && (*this)(*c.type)) return true;
        return false;
      }
    };
    for (const auto& f : arrow_fields_)
      if (finder{}(*f.type))
        throw unsupported_error("field '" + f.name + "': map columns need file version 2.2 or later (Lance 12: " +
                                "\"Map data type is not enabled by the selected file format\" at " +
                                std::string(to_string(version_.value)) + ")");
  }
  const std::uint64_t per_column =
      options_.data_cache_bytes ? *options_.data_cache_bytes / std::max<std::size_t>(1, s.fields.size())
                                : default_cache_bytes_per_column;
  encoding::encoding_options eo;
  eo.cache_bytes_per_column = per_column;
  eo.max_page_bytes = detail::resolve_max_page_bytes(options_);
  eo.keep_original_array = options_.keep_original_array;
  eo.group_rows = options_.rows_per_group;
  eo.write_out_of_line = [this](bytes_view b) {
    const auto pos = tell();
    write_padded(b);
    return pos;
  };
  if (version_.value >= format_version::v2_2) {
    if (options_.blob_files) {
      blob_placer_.emplace(options_.blob_files, eo.write_out_of_line);
      eo.place_blob_v2 = [this](bytes_view b) { return blob_placer_->place(b); };
    }
  }
  const auto ids = schema::preorder_ids(s);
  encoding::field_id_cursor cursor(ids);
  encoding::column_index_sequence columns;
  for (const auto& f : arrow_fields_) {
    auto physical = arrow::physical_field(f);  // a dictionary field's pages hold its values
    encoders_.push_back(strategy_.make_field_encoder(physical, cursor, columns, eo));
  }
  num_columns_ = columns.size();
  field_columns_ = columns.mapping();
  column_rows_.assign(s.fields.size(), 0);
  page_table_.reset(num_columns_, options_.page_metadata_spill_path);
  column_encodings_.assign(num_columns_, std::string());
  column_buffers_.assign(num_columns_, {});
  external_.assign(num_columns_, false);
  external_rows_.assign(num_columns_, 0);
  external_columns_.assign(num_columns_, std::nullopt);
  schema_ = std::move(s);
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::write_page(const encoding::encoded_page& p) {
  pb::file2::column_metadata::page page;
  for (const auto& b : p.buffers) {
    page.buffer_offsets.push_back(tell());
    page.buffer_sizes.push_back(b.size());
    write_padded(b.view());
  }
  page.length = p.num_rows;
  page.encoding = pb::file2::encoding{pb::file2::direct_encoding{p.encoding}};
  page.priority = p.priority;
  page_table_.add(p.column_index, page);
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::write_pages(std::vector<encoding::encode_task>& tasks) {
  if (!options_.pool || tasks.size() < 2) {
    for (auto& t : tasks) write_page(t());
    return;
  }
  const std::size_t window = std::max<std::size_t>(1, options_.max_pages_in_flight);
  std::vector<std::future<encoding::encoded_page>> pages(tasks.size());
  std::size_t posted = 0;
  auto post_next = [&] {
    auto job = std::make_shared<std::packaged_task<encoding::encoded_page()>>(std::move(tasks[posted]));
    pages[posted++] = job->get_future();
    options_.pool.post([job] { (*job)(); });
  };
  std::exception_ptr failure;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    while (!failure && posted < tasks.size() && posted < i + window) post_next();
    if (!pages[i].valid()) break;  // not posted: an earlier page failed
    try {
      auto p = pages[i].get();
      if (!failure) write_page(p);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
void file_writer_impl<Sink, Strategy>::finish_columns() {
  std::uint32_t c = 0;
  for (auto& e : encoders_) {
    for (auto& col : e->finish()) {
      if (external_[c]) col = external_columns_[c].value_or(encoding::encoded_column{{}, {}, encoding::plain_column_encoding()});
      for (const auto& p : col.final_pages) write_page(p);
      for (const auto& b : col.column_buffers) {
        column_buffers_[c].push_back({tell(), b.size()});
        write_padded(b.view());
      }
      column_encodings_[c] = std::move(col.encoding);
      ++c;
    }
  }
  if (c != num_columns_)
    throw corrupt_error("encoders produced " + std::to_string(c) + " columns, expected " +
                        std::to_string(num_columns_));
}

template <class Sink, class Strategy>
  requires io::sink<std::remove_reference_t<Sink>>
std::string file_writer_impl<Sink, Strategy>::column_metadata_bytes(std::uint32_t c) {
  pb::writer w;
  w.bytes(pb::file2::column_metadata::f_encoding,
          pb::encode(pb::file2::encoding{pb::file2::direct_encoding{column_encodings_[c]}}));
  w.bytes() += page_table_.take_pages(c);
  std::vector<std::uint64_t> offs, sizes;
  for (const auto& r : column_buffers_[c]) {
    offs.push_back(r.position);
    sizes.push_back(r.size);
  }
  w.packed_varint(pb::file2::column_metadata::f_buffer_offsets, offs);
  w.packed_varint(pb::file2::column_metadata::f_buffer_sizes, sizes);
  return w.take();
}

}  // namespace detail

}  // namespace lancet::file

// The configurations compiled mode (core/config.hpp) compiles once, into the library
// (src/lancet.cpp instantiates them): a file_writer of every version to io::file_sink,
// io::any_sink (what datasets write through) and io::memory_sink with the version's
// default strategy, and those strategies.
// Programs in compiled mode see the `extern template` declarations below.
#if !LANCET_HEADER_ONLY
#include "lancet/encoding/structural/strategy.hpp"
#include "lancet/file/legacy.hpp"
#include "lancet/file/structural.hpp"
#include "lancet/io/any_sink.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/memory_sink.hpp"
#endif

// X(version, sink) for each precompiled file_writer.
#define LANCET_FILE_WRITER_INSTANCES(X) \
  X(v2_0, io::file_sink)                \
  X(v2_1, io::file_sink)                \
  X(v2_2, io::file_sink)                \
  X(v2_3, io::file_sink)                \
  X(v2_0, io::any_sink)                 \
  X(v2_1, io::any_sink)                 \
  X(v2_2, io::any_sink)                 \
  X(v2_3, io::any_sink)                 \
  X(v2_0, io::memory_sink)              \
  X(v2_1, io::memory_sink)              \
  X(v2_2, io::memory_sink)              \
  X(v2_3, io::memory_sink)

// X(strategy, sink) for each precompiled detail::file_writer_impl (what those writers
// share: one per strategy class, 2.1-2.3 having one).
#define LANCET_FILE_WRITER_IMPL_INSTANCES(X)                                         \
  X(encoding::legacy::default_strategy, io::file_sink)                                 \
  X(encoding::structural::structural_encodings<encoding::structural::default_policy>, io::file_sink) \
  X(encoding::legacy::default_strategy, io::any_sink)                                  \
  X(encoding::structural::structural_encodings<encoding::structural::default_policy>, io::any_sink) \
  X(encoding::legacy::default_strategy, io::memory_sink)                               \
  X(encoding::structural::structural_encodings<encoding::structural::default_policy>, io::memory_sink)

#if !LANCET_HEADER_ONLY
namespace lancet {
#define LANCET_EXTERN_FILE_WRITER(V, S) extern template class file::file_writer<file::V, S>;
LANCET_FILE_WRITER_INSTANCES(LANCET_EXTERN_FILE_WRITER)
#undef LANCET_EXTERN_FILE_WRITER
#define LANCET_EXTERN_FILE_WRITER_IMPL(St, S) extern template class file::detail::file_writer_impl<S, St>;
LANCET_FILE_WRITER_IMPL_INSTANCES(LANCET_EXTERN_FILE_WRITER_IMPL)
#undef LANCET_EXTERN_FILE_WRITER_IMPL
extern template class encoding::structural::structural_encodings<encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<1, encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<2, encoding::structural::default_policy>;
extern template class encoding::structural::structural_strategy<3, encoding::structural::default_policy>;
}  // namespace lancet
#endif
