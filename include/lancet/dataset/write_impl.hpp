// The definitions of dataset::write (write.hpp): conforming batches to the schema,
// cutting them into data files, the commit and its retries, and the templates over
// batch generators, sink factories and encoding policies. Header-only programs get them
// through write.hpp; in compiled mode (core/config.hpp) the entry points of write.hpp
// come from the library, and a program that needs the templates includes this header.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/core/error.hpp"
#include "lancet/core/config.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/conflict.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/fragment_reader.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/dataset/versions.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/structural/blob.hpp"
#include "lancet/file/with_version.hpp"
#include "lancet/file/writer.hpp"
#include "lancet/io/file_sink.hpp"
#include "lancet/io/fs.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

// Whether lancet can write data files of a version.
inline bool can_write_storage_version(file::format_version v) {
  try {
    file::with_version(v, []<class V>() {});
    return true;
  } catch (const unsupported_error&) {
    return false;
  }
}

// 2.2, Lance 12's default, when lancet writes it; else the newest version it writes.
inline file::format_version default_storage_version() {
  for (auto v : {file::format_version::v2_2, file::format_version::v2_1})
    if (can_write_storage_version(v)) return v;
  return file::format_version::v2_0;
}

// A Lance-style data file name (without ".lance"): the first 3 bytes of a v4 UUID
// as 24 binary digits, the other 13 as hex.
inline std::string random_data_file_stem() {
  const auto u = lancet::uuid::generate_v4();
  std::string out;
  out.reserve(50);
  for (std::size_t i = 0; i < 3; ++i)
    for (int bit = 7; bit >= 0; --bit) out.push_back((u.bytes[i] >> bit) & 1 ? '1' : '0');
  static constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 3; i < 16; ++i) {
    out.push_back(hex[u.bytes[i] >> 4]);
    out.push_back(hex[u.bytes[i] & 0xF]);
  }
  return out;
}

namespace detail {

// The array with `target` as its type, checking that the data fits it: same types
// (list item names aside), and no nulls where the target allows none in a
// fixed-size list's items (Lance fields' nullability is checked by the file writer).
inline arrow::array_ptr retype(const arrow::array_ptr& a, const arrow::type_ptr& target, const std::string& path) {
  using arrow::type_id;
  if (a->type.get() == target.get()) return a;
  if (!arrow::equals(*a->type, *target)) {
    // Nested nullability may differ where the data respects the target; compare shapes only.
    arrow::compare_options o;
    o.check_nested_nullability = false;
    if (auto d = arrow::type_difference(*a->type, *target, o, path))
      throw invalid_input_error("field '" + path + "': the data is " + arrow::to_string(*a->type) +
                                ", the dataset has " + arrow::to_string(*target));
  }
  auto out = std::make_shared<arrow::array_data>(*a);
  out->type = target;
  const auto id = target->id;
  if (id == type_id::struct_) {
    for (std::size_t i = 0; i < a->children.size(); ++i)
      out->children[i] = retype(a->children[i], target->children[i].type, path + "." + target->children[i].name);
  } else if (arrow::is_list_like(id)) {
    out->children[0] = retype(a->children[0], target->children[0].type, path + "." + target->children[0].name);
  } else if (id == type_id::fixed_size_list) {
    const auto& item = target->children[0];
    if (!item.nullable) {
      auto items = arrow::fsl_child(*a);
      if (items->count_nulls() > 0)
        throw invalid_input_error("field '" + path + "' has null items but the dataset's items are not nullable");
    }
    out->children[0] = retype(a->children[0], item.type, path + "." + item.name);
  }
  return out;
}

// The batch with the target's columns, in its order and with its types. Throws
// invalid_input_error naming the first field that differs.
inline arrow::record_batch conform(const arrow::record_batch& b, const std::shared_ptr<const arrow::schema>& target,
                                   const std::string& context) {
  if (!b.schema) throw invalid_input_error(context + ": a batch has no schema");
  if (b.schema->fields.size() != b.columns.size())
    throw invalid_input_error(context + ": a batch has " + std::to_string(b.columns.size()) + " columns but its schema " +
                              std::to_string(b.schema->fields.size()) + " fields");
  for (std::size_t i = 1; i < b.columns.size(); ++i)
    if (b.columns[i]->length != b.columns[0]->length)
      throw invalid_input_error(context + ": column '" + b.schema->fields[i].name + "' has " +
                                std::to_string(b.columns[i]->length) + " rows, column '" + b.schema->fields[0].name +
                                "' has " + std::to_string(b.columns[0]->length));
  arrow::record_batch out;
  out.schema = target;
  for (const auto& f : target->fields) {
    std::size_t i = 0;
    while (i < b.schema->fields.size() && b.schema->fields[i].name != f.name) ++i;
    if (i == b.schema->fields.size())
      throw invalid_input_error(context + ": the schemas differ at field '" + f.name +
                                "': the dataset has it, the data does not");
    try {
      out.columns.push_back(retype(b.columns[i], f.type, f.name));
    } catch (const invalid_input_error& e) {
      throw invalid_input_error(context + ": the schemas differ at " + e.message());
    }
  }
  for (const auto& f : b.schema->fields) {
    bool known = false;
    for (const auto& t : target->fields) known |= t.name == f.name;
    if (!known)
      throw invalid_input_error(context + ": the schemas differ at field '" + f.name +
                                "': the data has it, the dataset does not");
  }
  return out;
}

// Bytes a slice of an array takes in memory (what a data file of it will roughly take).
inline std::uint64_t slice_bytes(const arrow::array_data& a, std::int64_t off, std::int64_t len) {
  using arrow::type_id;
  if (len <= 0) return 0;
  const auto id = a.type->id;
  std::uint64_t n = a.validity() ? std::uint64_t((len + 7) / 8) : 0;
  if (arrow::is_fixed_width(*a.type)) return n + std::uint64_t((len * arrow::bit_width(*a.type) + 7) / 8);
  if (arrow::is_binary_like(id) || arrow::is_list_like(id)) {
    const bool large = id == type_id::large_utf8 || id == type_id::large_binary || id == type_id::large_list;
    n += std::uint64_t(len) * (large ? 8 : 4);
    const auto b = a.value_offset(off), e = a.value_offset(off + len);
    if (arrow::is_binary_like(id)) return n + std::uint64_t(e - b);
    return n + slice_bytes(*a.children[0], b, e - b);
  }
  if (id == type_id::fixed_size_list) {
    const std::int64_t d = a.type->list_size;
    return n + slice_bytes(*a.children[0], (a.offset + off) * d, len * d);
  }
  if (id == type_id::struct_) {
    for (const auto& c : a.children) n += slice_bytes(*c, a.offset + off, len);
    return n;
  }
  return n;
}

inline std::pair<std::uint32_t, std::uint32_t> data_file_version(file::format_version v) {
  switch (v) {
    case file::format_version::v2_0: return {2, 0};
    case file::format_version::v2_1: return {2, 1};
    case file::format_version::v2_2: return {2, 2};
    case file::format_version::v2_3: return {2, 3};
  }
  return {2, 0};
}

// A slice of b with buffers of its own (2.0 files): the file writer measures an array by
// its buffers (as Lance does), so a zero-copy slice of a large batch would count as the
// whole batch and close a page per slice. 2.1+ writers measure groups themselves
// (writer_options::rows_per_group) and get zero-copy slices.
inline arrow::record_batch compact_slice(const arrow::record_batch& b, std::int64_t off, std::int64_t len) {
  arrow::record_batch out;
  out.schema = b.schema;
  for (const auto& c : b.columns) out.columns.push_back(arrow::deep_copy(*arrow::slice(c, off, len)));
  return out;
}

inline arrow::record_batch zero_copy_slice(const arrow::record_batch& b, std::int64_t off, std::int64_t len) {
  arrow::record_batch out;
  out.schema = b.schema;
  for (const auto& c : b.columns) out.columns.push_back(arrow::slice(c, off, len));
  return out;
}

// Removes data files written by a failed write, and their blob files, if any.
inline void remove_data_files(const std::vector<std::string>& paths) noexcept {
  for (const auto& p : paths) {
    io::remove_quietly(p);
    try {
      const auto blobs = std::filesystem::path(p).replace_extension().string();
      io::storage_for(blobs).remove_all(blobs);
    } catch (...) {
    }
  }
}

// Writes batches (already conformed to the schema) into data files of at most
// max_rows / about max_bytes each; one fragment per file.
template <class Version, class SinkFactory, class Strategy = typename Version::default_strategy>
class fragment_writer {
 public:
  using sink_type = std::decay_t<std::invoke_result_t<SinkFactory&, const std::string&, const io::file_sink_options&>>;
  using writer_type = file::file_writer<Version, sink_type, Strategy>;

  fragment_writer(std::string root, schema::schema s, const write_options& o, SinkFactory& make_sink,
                  Strategy strategy = {})
      : root_(std::move(root)), schema_(std::move(s)), o_(o), make_sink_(make_sink), strategy_(std::move(strategy)) {}

  void write(const arrow::record_batch& b) {
    const auto n = b.num_rows();
    if (n == 0) return;
    std::uint64_t total = 0;
    for (const auto& c : b.columns) total += slice_bytes(*c, 0, n);
    const double per_row = double(total) / double(n);
    std::int64_t at = 0;
    while (at < n) {
      if (!current_) open_file();
      // 2.1+ encoders take the rows max_rows_per_group at a time themselves (without
      // copying them); 2.0 files get compacted groups.
      std::uint64_t take = std::min<std::uint64_t>({std::uint64_t(n - at), o_.max_rows_per_file - rows_,
                                                    Version::structural ? std::numeric_limits<std::uint64_t>::max()
                                                                        : o_.max_rows_per_group});
      if (per_row > 0) {
        const std::uint64_t room = o_.max_bytes_per_file > bytes_ ? o_.max_bytes_per_file - bytes_ : 0;
        take = std::max<std::uint64_t>(1, std::min<std::uint64_t>(take, std::uint64_t(double(room) / per_row)));
      }
      if (at == 0 && take == std::uint64_t(n)) current_->write_batch(b);
      else if (Version::structural) current_->write_batch(zero_copy_slice(b, at, std::int64_t(take)));
      else current_->write_batch(compact_slice(b, at, std::int64_t(take)));
      at += std::int64_t(take);
      rows_ += take;
      bytes_ += std::uint64_t(per_row * double(take));
      if (rows_ >= o_.max_rows_per_file || bytes_ >= o_.max_bytes_per_file || current_->tell() >= o_.max_bytes_per_file)
        close_file();
    }
  }

  // Closes the last file; returns the fragments written (ids unassigned).
  std::vector<pb::data_fragment> finish() {
    if (current_) close_file();
    return fragments_;
  }

  // Removes every data file this writer created (after a failure).
  void remove_files() noexcept {
    current_.reset();  // aborts an unfinished file
    remove_data_files(paths_);
  }

  // The data files written (full paths).
  const std::vector<std::string>& paths() const noexcept { return paths_; }

  std::uint64_t rows_written() const noexcept { return total_rows_; }

 private:
  void open_file() {
    name_ = random_data_file_stem() + ".lance";
    const std::string path = (std::filesystem::path(root_) / data_dir_name / name_).string();
    paths_.push_back(path);
    io::file_sink_options so;
    so.exclusive = true;
    so.sync = o_.sync_data_files;
    auto fo = o_.file_options;
    if (Version::structural && fo.rows_per_group == 0) fo.rows_per_group = o_.max_rows_per_group;
    if (Version::value >= file::format_version::v2_2 && !fo.blob_files) {
      // Large blob v2 values go to blob files in a directory named after the data file.
      fo.blob_files = [this, path, so](std::uint32_t id) {
        auto bo = so;
        bo.create_directories = true;
        const auto blob_path = encoding::structural::blob_file_path(path, id).string();
        auto sink = std::make_shared<sink_type>(make_sink_(blob_path, bo));
        return encoding::structural::blob_file_sink{[sink](bytes_view b) { sink->write(b); }, [sink] { sink->finish(); }};
      };
    }
    current_ = std::make_unique<writer_type>(make_sink_(path, so), schema_, std::move(fo), strategy_);
    rows_ = bytes_ = 0;
  }

  void close_file() {
    const auto r = current_->finish();
    pb::data_file df;
    df.path = name_;
    for (const auto& [field, column] : current_->field_id_to_column_indices()) {
      df.fields.push_back(std::int32_t(field));
      df.column_indices.push_back(std::int32_t(column));
    }
    std::tie(df.file_major_version, df.file_minor_version) = data_file_version(Version::value);
    df.file_size_bytes = r.file_size;
    pb::data_fragment f;
    f.files.push_back(std::move(df));
    f.physical_rows = r.rows;
    fragments_.push_back(std::move(f));
    total_rows_ += r.rows;
    current_.reset();
  }

  std::string root_;
  schema::schema schema_;
  const write_options& o_;
  SinkFactory& make_sink_;
  Strategy strategy_;
  std::unique_ptr<writer_type> current_;
  std::string name_;
  std::uint64_t rows_ = 0, bytes_ = 0, total_rows_ = 0;
  std::vector<std::string> paths_;
  std::vector<pb::data_fragment> fragments_;
};

// The strategy files of version V are written with under a policy; void for a 2.0
// dataset given a policy other than the default.
template <class V, class Policy>
auto strategy_of() {
  if constexpr (V::structural) return std::type_identity<typename V::template policy_strategy<Policy>>{};
  else if constexpr (std::is_same_v<Policy, encoding::structural::default_policy>)
    return std::type_identity<typename V::default_strategy>{};
  else return std::type_identity<void>{};
}
template <class V, class Policy>
using strategy_for = typename decltype(strategy_of<V, Policy>())::type;

inline const char* mode_name(write_mode m) {
  switch (m) {
    case write_mode::create: return "create";
    case write_mode::append: return "append";
    case write_mode::overwrite: return "overwrite";
  }
  return "?";
}

// The limits on write_options that every write path checks before it writes a byte.
inline void check_file_limits(const write_options& o) {
  if (o.max_rows_per_file == 0 || o.max_rows_per_file > (std::uint64_t(1) << 32))
    throw invalid_input_error("max_rows_per_file must be between 1 and 2^32 (row addresses hold a 32-bit offset), not " +
                              std::to_string(o.max_rows_per_file));
  if (o.max_bytes_per_file == 0) throw invalid_input_error("max_bytes_per_file must be at least 1");
  if (o.max_rows_per_group == 0) throw invalid_input_error("max_rows_per_group must be at least 1");
}

// The schema and storage version of a new (or overwritten) dataset: o.schema, else
// the first batch's; o.storage_version, else the previous version's, else the default.
inline void choose_new_schema(const write_options& o, const std::optional<arrow::record_batch>& first,
                              const std::optional<snapshot>& previous, const std::string& context,
                              schema::schema& target, file::format_version& storage) {
  if (o.schema) target = schema::from_arrow(*o.schema);
  else if (first) target = schema::from_arrow(*first->schema);
  else throw invalid_input_error(context + ": no data and no schema (set write_options::schema)");
  if (o.storage_version) storage = *o.storage_version;
  else if (previous) storage = manifest_storage_version(previous->manifest());
  else storage = default_storage_version();
}

// The data files a write produced, before any commit.
struct data_files_written {
  std::vector<pb::data_fragment> fragments;
  std::vector<std::string> paths;
  std::uint64_t rows = 0;
};

// Writes `first` and then what `next()` yields (until nullopt) into data files of
// `storage` version under root/data/, each batch conformed to `target`. The one part of
// a write that depends on the storage version (the writer type), shared by write and
// write_fragments; on failure the files written are removed before the error goes on.
template <class Next, class SinkFactory, class Policy>
data_files_written write_data_files(const std::string& root, std::optional<arrow::record_batch> first, Next& next,
                                    const schema::schema& target, file::format_version storage,
                                    const write_options& o, SinkFactory& make_sink, const Policy& policy,
                                    const std::string& context) {
  const auto arrow_target = std::make_shared<const arrow::schema>(schema::to_arrow(target));
  io::make_directories_if_local((std::filesystem::path(root) / data_dir_name).string());
  data_files_written out;
  file::with_version(storage, [&]<class V>() {
    using strategy = strategy_for<V, Policy>;
    if constexpr (std::is_same_v<strategy, void>) {
      throw unsupported_error(context + ": it stores Lance 2.0 files, whose legacy encodings take no encoding "
                              "policy (policies customise storage versions 2.1 and later)");
    } else {
      auto make_strategy = [&] {
        if constexpr (V::structural) return strategy(policy);
        else return strategy{};
      };
      fragment_writer<V, SinkFactory, strategy> fw(root, target, o, make_sink, make_strategy());
      try {
        std::optional<arrow::record_batch> b = std::move(first);
        while (b) {
          fw.write(conform(*b, arrow_target, context));
          b = next();
        }
        out.fragments = fw.finish();
        out.paths = fw.paths();
        out.rows = fw.rows_written();
      } catch (...) {
        fw.remove_files();
        throw;
      }
    }
  });
  return out;
}

// Commits newly written fragments as one version: an Append on `read`, or an Overwrite
// with `target` (a create when `read` is empty). An append refuses a base that stores
// another file version than `storage` (the fragments were written in it);
// `check_base(base)` runs on every committed version the commit is built on.
// Shared by write and commit(fragments).
template <class SinkFactory, class CheckBase>
commit_outcome commit_new_fragments(const std::string& root, const std::optional<snapshot>& read, bool append,
                                    const schema::schema& target, const std::vector<pb::data_fragment>& fragments,
                                    file::format_version storage, bool enable_stable_row_ids,
                                    const commit_options& co, SinkFactory& make_sink, const std::string& context,
                                    std::string_view written_by, CheckBase&& check_base) {
  const pb::transaction txn = append ? make_transaction(read->version(), pb::transaction::append{fragments})
                                     : overwrite_transaction(read, target, fragments);
  auto build = [&](const snapshot& base, const pb::transaction& t) -> pending_commit {
    if (!base.entry.path.empty()) check_base(base);
    if (append) {
      if (manifest_storage_version(base.manifest()) != storage)
        throw commit_conflict_error(context + ": version " + std::to_string(base.version()) +
                                        " stores another Lance file version than " + std::string(written_by),
                                    base.version(), "", false);
      return build_append(base, t);
    }
    return build_overwrite(base.entry.path.empty() ? std::optional<snapshot>() : std::optional<snapshot>(base), t,
                           storage, enable_stable_row_ids);
  };
  const snapshot start = read ? *read : snapshot{root, {}, {}};
  return commit_transaction(root, start, txn, build, co, make_sink);
}

}  // namespace detail

template <class F>
concept batch_generator = std::invocable<F&> &&
                          std::convertible_to<std::invoke_result_t<F&>, std::optional<arrow::record_batch>>;

// Writes the batches `next()` yields (until nullopt) with sinks from `make_sink`, and
// pages encoded as `policy` decides (an encoding policy, encoding/structural/policy.hpp:
// structural storage versions only; a 2.0 dataset takes the default policy alone).
template <batch_generator Next, class SinkFactory, encoding::structural::structural_policy Policy = encoding::structural::default_policy>
write_result write(const std::string& root, Next&& next, const write_options& o, SinkFactory&& make_sink,
                   const Policy& policy = {}) {
  if (root.empty()) throw invalid_input_error("dataset path is empty");
  detail::check_file_limits(o);
  const std::string context = std::string("cannot ") + detail::mode_name(o.mode) + " dataset '" + root + "'";

  auto previous = load_latest(root);
  write_mode mode = o.mode;
  if (previous) {
    const auto& m = previous->manifest();
    if (mode == write_mode::create)
      throw invalid_input_error(context + ": it already exists (version " + std::to_string(m.version) +
                                "); append to it or overwrite it");
    if (!can_write_dataset(m.writer_feature_flags) || !can_read_dataset(m.reader_feature_flags))
      throw unsupported_error(context + ": it uses Lance features lancet does not know (feature flags " +
                              std::to_string(m.writer_feature_flags) + ")");
  } else if (mode != write_mode::create) {
    mode = write_mode::create;  // append / overwrite of nothing: create, as Lance does
  }
  const auto scheme = naming_scheme_for_write(root, previous ? std::nullopt : o.naming);

  // The first batch (it may give the schema).
  std::optional<arrow::record_batch> first = next();

  // Schema and storage version.
  schema::schema target;
  file::format_version storage = file::format_version::v2_0;
  if (mode == write_mode::append) {
    target = manifest_schema(previous->manifest());
    storage = manifest_storage_version(previous->manifest());
    if (o.storage_version && *o.storage_version != storage)
      throw invalid_input_error(context + ": it stores Lance " + std::string(file::to_string(storage)) +
                                " files; cannot append " + std::string(file::to_string(*o.storage_version)) + " files");
    if (o.enable_stable_row_ids && !uses_stable_row_ids(previous->manifest()))
      throw unsupported_error(context + ": cannot enable stable row ids on an existing dataset");
  } else {
    detail::choose_new_schema(o, first, previous, context, target, storage);
  }

  write_result result;
  result.storage_version = storage;
  // The data files depend on the storage version (the writer type); the commit below
  // is the same for every version, so it is compiled once.
  auto written = detail::write_data_files(root, std::move(first), next, target, storage, o, make_sink, policy, context);
  std::vector<pb::data_fragment>& fragments = written.fragments;
  const std::vector<std::string>& data_files = written.paths;
  result.rows_written = written.rows;
  try {
    publish_options po;
    po.scheme = scheme;
    po.write_version_hint = o.write_version_hint;
    // Lance's commit: on losing the race, check what was committed meanwhile, rebase
    // and take the next version (a create never rebases: the dataset exists then).
    commit_options co;
    co.publish = po;
    co.max_retries = mode == write_mode::create ? 0 : o.max_retries;
    const bool append = mode == write_mode::append;
    auto out = detail::commit_new_fragments(root, previous, append, target, fragments, storage, o.enable_stable_row_ids,
                                            co, make_sink, context, "this append wrote", [](const snapshot&) {});
    const auto& c = out.commit;
    result.version = c.manifest.version;
    result.retries = out.retries;
    result.fragments = detail::committed_fragments(c.manifest.fragments, append, fragments.size());
  } catch (const committed_io_error&) {
    throw;  // committed: the data files belong to the dataset now
  } catch (...) {
    detail::remove_data_files(data_files);
    throw;
  }
  return result;
}

template <batch_generator Next>
write_result write(const std::string& root, Next&& next, const write_options& o = {}) {
  default_sink_factory f;
  return write(root, std::forward<Next>(next), o, f);
}

namespace detail {
inline auto span_source(std::span<const arrow::record_batch> batches) {
  return [batches, i = std::size_t(0)]() mutable -> std::optional<arrow::record_batch> {
    if (i < batches.size()) return batches[i++];
    return std::nullopt;
  };
}
}  // namespace detail

// Batches held in memory, with sinks from `make_sink` (and an encoding policy).
template <class SinkFactory, encoding::structural::structural_policy Policy = encoding::structural::default_policy>
write_result write(const std::string& root, std::span<const arrow::record_batch> batches, const write_options& o,
                   SinkFactory&& make_sink, const Policy& policy = {}) {
  return write(root, detail::span_source(batches), o, std::forward<SinkFactory>(make_sink), policy);
}
template <class SinkFactory, encoding::structural::structural_policy Policy = encoding::structural::default_policy>
write_result write(const std::string& root, const std::vector<arrow::record_batch>& batches, const write_options& o,
                   SinkFactory&& make_sink, const Policy& policy = {}) {
  return write(root, std::span<const arrow::record_batch>(batches), o, std::forward<SinkFactory>(make_sink), policy);
}
template <class SinkFactory, encoding::structural::structural_policy Policy = encoding::structural::default_policy>
write_result write(const std::string& root, const arrow::record_batch& batch, const write_options& o,
                   SinkFactory&& make_sink, const Policy& policy = {}) {
  return write(root, std::span<const arrow::record_batch>(&batch, 1), o, std::forward<SinkFactory>(make_sink), policy);
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE write_result write(const std::string& root, std::span<const arrow::record_batch> batches,
                                 const write_options& o) {
  return write(root, batches, o, default_sink_factory{});
}
LANCET_INLINE write_result write(const std::string& root, const std::vector<arrow::record_batch>& batches,
                                 const write_options& o) {
  return write(root, std::span<const arrow::record_batch>(batches), o, default_sink_factory{});
}
LANCET_INLINE write_result write(const std::string& root, const arrow::record_batch& batch, const write_options& o) {
  return write(root, std::span<const arrow::record_batch>(&batch, 1), o, default_sink_factory{});
}
#endif

}  // namespace lancet::dataset
