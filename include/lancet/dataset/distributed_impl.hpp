// The definitions of dataset/distributed.hpp: writing fragments (over any batch
// generator, sink factory and encoding policy) and checking and committing them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/distributed.hpp"
#include "lancet/dataset/fragment_json.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/io/file_source.hpp"
#include "lancet/io/storage.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

// Writes the batches `next()` yields into data files under root/data/ and returns their
// fragment metadata, committing nothing (Lance's write_fragments). o.mode picks the
// schema: append (the default for a dataset that exists: create refuses one) follows
// the dataset's schema and storage version; overwrite, and any mode on a dataset that
// does not exist yet, takes o.schema (or the first batch's), with field ids assigned
// as Lance assigns them (depth first from 0). On failure the files written are removed.
template <batch_generator Next, class SinkFactory, encoding::structural::structural_policy Policy = encoding::structural::default_policy>
fragments_written write_fragments(const std::string& root, Next&& next, const write_options& o, SinkFactory&& make_sink,
                                  const Policy& policy = {}) {
  if (root.empty()) throw invalid_input_error("dataset path is empty");
  detail::check_file_limits(o);
  const std::string context = "cannot write fragments for dataset '" + root + "'";
  const auto previous = load_latest(root);
  fragments_written out;
  std::optional<arrow::record_batch> first = next();
  if (previous) {
    const auto& m = previous->manifest();
    out.read_version = m.version;
    if (o.mode == write_mode::create)
      throw invalid_input_error(context + ": it already exists (version " + std::to_string(m.version) +
                                "); write fragments to append to it or to overwrite it");
    if (!can_write_dataset(m.writer_feature_flags) || !can_read_dataset(m.reader_feature_flags))
      throw unsupported_error(context + ": it uses Lance features lancet does not know (feature flags " +
                              std::to_string(m.writer_feature_flags) + ")");
  }
  if (previous && o.mode == write_mode::append) {
    out.schema = manifest_schema(previous->manifest());
    out.storage_version = manifest_storage_version(previous->manifest());
    if (o.storage_version && *o.storage_version != out.storage_version)
      throw invalid_input_error(context + ": it stores Lance " + std::string(file::to_string(out.storage_version)) +
                                " files; cannot write " + std::string(file::to_string(*o.storage_version)) + " files for it");
  } else {
    detail::choose_new_schema(o, first, previous, context, out.schema, out.storage_version);
  }
  auto written =
      detail::write_data_files(root, std::move(first), next, out.schema, out.storage_version, o, make_sink, policy, context);
  out.fragments.reserve(written.fragments.size());
  for (auto& f : written.fragments) out.fragments.push_back(detail::fragment_access::make(std::move(f)));
  out.rows_written = written.rows;
  return out;
}

template <batch_generator Next>
fragments_written write_fragments(const std::string& root, Next&& next, const write_options& o = {}) {
  default_sink_factory f;
  return write_fragments(root, std::forward<Next>(next), o, f);
}
namespace detail {

inline std::string where(std::size_t i, const pb::data_fragment& f) {
  std::string s = "fragment " + std::to_string(i);
  if (!f.files.empty()) s += " (data file '" + f.files[0].path + "')";
  return s;
}

// Checks `fragments` against the dataset at `root` with schema `s` and data files of
// `storage` (nullopt: any one version shared by all files, which is returned).
inline file::format_version check_fragments(const std::string& root, const schema::schema& s,
                                            std::optional<file::format_version> storage,
                                            const std::vector<pb::data_fragment>& fragments, const std::string& context) {
  std::map<std::string, std::size_t> seen;  // data file -> fragment
  std::optional<std::pair<std::uint32_t, std::uint32_t>> version;
  if (storage) version = detail::data_file_version(*storage);
  for (std::size_t i = 0; i < fragments.size(); ++i) {
    const auto& f = fragments[i];
    const std::string name = where(i, f);
    if (f.files.empty()) throw invalid_input_error(context + ": " + name + " has no data files");
    if (f.physical_rows == 0)
      throw invalid_input_error(context + ": " + name + " has no physical_rows (an empty or legacy fragment)");
    if (f.deletion_file)
      throw invalid_input_error(context + ": " + name + " has a deletion file; new fragments have none");
    if (!std::holds_alternative<std::monostate>(f.row_id_sequence) ||
        !std::holds_alternative<std::monostate>(f.created_at_version_sequence) ||
        !std::holds_alternative<std::monostate>(f.last_updated_at_version_sequence))
      throw invalid_input_error(context + ": " + name +
                                " carries row ids or row versions; the commit assigns them (set them to null)");
    std::set<std::int32_t> covered;
    for (const auto& d : f.files) {
      const std::string file_name = "data file '" + d.path + "' of fragment " + std::to_string(i);
      if (auto [it, fresh] = seen.emplace(d.path, i); !fresh)
        throw invalid_input_error(context + ": " + file_name + " is also in fragment " + std::to_string(it->second) +
                                  " (the same fragment given twice?)");
      if (d.base_id)
        throw invalid_input_error(context + ": " + file_name + " lives outside the dataset (base_id " +
                                  std::to_string(*d.base_id) + "); lancet commits data files under data/ only");
      if (d.path.empty() || d.path.find('/') != std::string::npos || d.path.find('\\') != std::string::npos ||
          d.path == "." || d.path == "..")
        throw invalid_input_error(context + ": " + file_name + ": a data file is a plain file name under data/");
      const std::pair<std::uint32_t, std::uint32_t> fv{d.file_major_version, d.file_minor_version};
      if (!version) version = fv;
      if (fv != *version)
        throw invalid_input_error(context + ": " + file_name + " is a Lance " + std::to_string(fv.first) + "." +
                                  std::to_string(fv.second) + " file; " +
                                  (storage ? "the dataset stores " : "other fragments of this commit are ") +
                                  std::to_string(version->first) + "." + std::to_string(version->second) + " files");
      const std::string path = (std::filesystem::path(root) / data_dir_name / d.path).string();
      const auto stored = io::storage_for(path).size(path);
      if (!stored)
        throw invalid_input_error(context + ": " + file_name + " does not exist under '" +
                                  (std::filesystem::path(root) / data_dir_name).string() +
                                  "' (was the fragment written for another dataset?)");
      const std::uint64_t size = *stored;
      if (d.file_size_bytes && d.file_size_bytes != size)
        throw invalid_input_error(context + ": " + file_name + " has " + std::to_string(size) +
                                  " bytes, the metadata says " + std::to_string(d.file_size_bytes));
      if (d.fields.size() != d.column_indices.size())
        throw invalid_input_error(context + ": " + file_name + " lists " + std::to_string(d.fields.size()) +
                                  " fields but " + std::to_string(d.column_indices.size()) + " column indices");
      std::optional<file::file_reader<io::any_source>> opened;
      try {
        opened.emplace(source_factory{}(path));
      } catch (const error& e) {
        throw invalid_input_error(context + ": " + file_name + " is not a readable Lance file: " + e.what());
      }
      const auto& r = *opened;
      if (r.num_rows() != f.physical_rows)
        throw invalid_input_error(context + ": " + file_name + " holds " + std::to_string(r.num_rows()) +
                                  " rows, the metadata says physical_rows " + std::to_string(f.physical_rows));
      for (const auto id : d.fields) {
        const auto* want = s.field_by_id(id);
        if (!want)
          throw invalid_input_error(context + ": " + file_name + " has field id " + std::to_string(id) +
                                    ", which the dataset's schema does not have");
        const auto* have = r.schema().field_by_id(id);
        if (!have || have->name != want->name || have->logical_type != want->logical_type)
          throw invalid_input_error(
              context + ": " + file_name + " stores field id " + std::to_string(id) + " as " +
              (have ? "'" + have->name + "' (" + have->logical_type + ")" : std::string("nothing")) +
              ", the dataset's schema has '" + schema::field_path(s, id) + "' (" + want->logical_type + ")");
        covered.insert(id);
      }
    }
    // A struct owns no column of its own: its members' columns hold its data.
    const auto has_data = [&](const auto& self, const schema::field& fld) -> bool {
      if (covered.count(fld.id)) return true;
      for (const auto& c : fld.children)
        if (self(self, c)) return true;
      return false;
    };
    for (const auto& top : s.fields)
      if (!has_data(has_data, top))
        throw invalid_input_error(context + ": " + name + " has no data for field '" + top.name + "' (id " +
                                  std::to_string(top.id) + ")");
  }
  if (!version) return storage.value_or(default_storage_version());
  return file::parse_format_version(std::to_string(version->first) + "." + std::to_string(version->second));
}

// Refuses fragments whose data files `base` already references.
inline void check_not_committed(const snapshot& base, const std::vector<pb::data_fragment>& fragments,
                                const std::string& context) {
  std::map<std::string_view, std::uint64_t> have;
  for (const auto& f : base.manifest().fragments)
    for (const auto& d : f.files) have.emplace(d.path, f.id);
  for (const auto& f : fragments)
    for (const auto& d : f.files)
      if (auto it = have.find(d.path); it != have.end())
        throw invalid_input_error(context + ": data file '" + d.path + "' is already part of version " +
                                  std::to_string(base.version()) + " (fragment " + std::to_string(it->second) +
                                  "): these fragments were committed before");
}

}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE fragments_written write_fragments(const std::string& root, std::span<const arrow::record_batch> batches,
                                         const write_options& o) {
  return write_fragments(root, detail::span_source(batches), o);
}
LANCET_INLINE fragments_written write_fragments(const std::string& root, const std::vector<arrow::record_batch>& batches,
                                         const write_options& o) {
  return write_fragments(root, std::span<const arrow::record_batch>(batches), o);
}
LANCET_INLINE fragments_written write_fragments(const std::string& root, const arrow::record_batch& batch,
                                         const write_options& o) {
  return write_fragments(root, std::span<const arrow::record_batch>(&batch, 1), o);
}

LANCET_INLINE std::size_t remove_uncommitted(const std::string& root, const std::vector<fragment_metadata>& fragments) noexcept {
  std::size_t n = 0;
  for (const auto& m : fragments)
    for (const auto& d : detail::fragment_access::stored(m).files) {
      if (d.base_id) continue;
      const auto path = (std::filesystem::path(root) / data_dir_name / d.path).string();
      try {
        const auto st = io::storage_for(path);
        if (!st.exists(path)) continue;
        st.remove(path);
        ++n;
      } catch (...) {
      }
    }
  return n;
}

LANCET_INLINE fragment_commit_result commit(const std::string& root, const commit_operation& op,
                                     std::vector<fragment_metadata> given, const fragment_commit_options& o) {
  using namespace detail;
  std::vector<pb::data_fragment> fragments;
  fragments.reserve(given.size());
  for (auto& m : given) fragments.push_back(std::move(fragment_access::stored(m)));
  if (root.empty()) throw invalid_input_error("dataset path is empty");
  const bool append = std::holds_alternative<operation::append>(op);
  const std::string context = std::string("cannot commit ") + (append ? "an append" : "an overwrite") + " to dataset '" +
                              root + "'";
  for (auto& f : fragments) f.id = 0;  // assigned at commit

  std::optional<snapshot> read;
  if (o.read_version && *o.read_version == 0) {
    if (append) throw invalid_input_error(context + ": an append needs a read version of an existing dataset, not 0");
    if (latest_version(root))
      throw invalid_input_error(context + ": read version 0 says it does not exist, but it does (version " +
                                std::to_string(latest_version(root)->version) + ")");
  } else if (o.read_version) {
    read = load_version(root, *o.read_version);
  } else {
    read = load_latest(root);
  }
  if (append && !read)
    throw invalid_input_error(context + ": it does not exist; create it with an overwrite (and the schema)");
  if (append && fragments.empty()) throw invalid_input_error(context + ": no fragments to append");
  if (read) {
    const auto& m = read->manifest();
    if (!can_write_dataset(m.writer_feature_flags) || !can_read_dataset(m.reader_feature_flags))
      throw unsupported_error(context + ": it uses Lance features lancet does not know (feature flags " +
                              std::to_string(m.writer_feature_flags) + ")");
  }

  schema::schema target;
  std::optional<file::format_version> storage;
  if (append) {
    target = manifest_schema(read->manifest());
    storage = manifest_storage_version(read->manifest());
  } else {
    const auto& ow = std::get<operation::overwrite>(op);
    if (ow.schema) target = schema::from_arrow(*ow.schema);
    else if (read) target = manifest_schema(read->manifest());
    else throw invalid_input_error(context + ": it does not exist yet, so the overwrite needs a schema");
    storage = o.storage_version;
    if (!storage && fragments.empty() && read) storage = manifest_storage_version(read->manifest());
  }
  const auto files_version = check_fragments(root, target, storage, fragments, context);
  if (!append && !can_write_storage_version(files_version))
    throw unsupported_error(context + ": lancet cannot write Lance " + std::string(file::to_string(files_version)) +
                            " datasets");
  if (read) check_not_committed(*read, fragments, context);

  commit_options co;
  co.max_retries = read ? o.max_retries : 0;  // a create never rebases: the dataset exists then
  co.publish.scheme = naming_scheme_for_write(root, read ? std::nullopt : o.naming);
  co.publish.write_version_hint = o.write_version_hint;
  default_sink_factory sinks;
  auto outcome = commit_new_fragments(root, read, append, target, fragments, files_version, o.enable_stable_row_ids, co,
                                      sinks, context, "these fragments",
                                      [&](const snapshot& base) { check_not_committed(base, fragments, context); });
  fragment_commit_result r;
  r.version = outcome.commit.manifest.version;
  r.read_version = read ? read->version() : 0;
  r.retries = outcome.retries;
  r.fragments = committed_fragments(outcome.commit.manifest.fragments, append, fragments.size());
  for (const auto& f : r.fragments) r.rows += f.physical_rows();
  return r;
}
#endif

}  // namespace lancet::dataset
