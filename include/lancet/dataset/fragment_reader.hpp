// Reads the rows of one fragment: the data files that hold its columns (one file
// per column group: columns added later live in later files), projected onto the
// dataset's fields, over physical row ranges or row offsets. Deleted rows are the
// caller's business (see deletion.hpp); offsets here are physical.
//
// How a dataset field finds its data: DataFile.fields lists the field ids a file
// holds (2.0 files list every field, 2.1+ files only leaves; -2 marks a field
// dropped from that file); the last file of the fragment that holds the field or one
// of its descendants wins. Inside the file the field is found by id, so renamed
// columns read correctly. A field no file holds (added after this fragment was
// written) reads as nulls.
//
// Every file is opened through the dataset's source_factory (manifest.hpp): local
// files by default, or whatever sources the caller supplies. All of them are read
// through one file::file_reader<io::any_source>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/compare.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/deletion.hpp"
#include "lancet/encoding/structural/blob.hpp"
#include "lancet/file/reader.hpp"
#include "lancet/dataset/manifest.hpp"
#include "lancet/io/any_source.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

inline constexpr std::string_view data_dir_name = "data";

namespace detail {

// What a column missing from a fragment reads as.
using arrow::null_array_of;

inline void subtree_ids(const schema::field& f, std::unordered_set<std::int32_t>& out) {
  out.insert(f.id);
  for (const auto& c : f.children) subtree_ids(c, out);
}

// Whether a file's field reads as the dataset's field (type `want`) by matching struct
// members by field id: members renamed or dropped since the file was written, or added
// (none in the file: NULL); every other part the same type.
inline bool members_by_id(const schema::field& file, const schema::field& ds, const arrow::data_type& want) {
  if (file.logical_type != "struct" || ds.logical_type != "struct")
    return arrow::equals(*schema::to_arrow(file).type, want);
  for (std::size_t i = 0; i < ds.children.size(); ++i) {
    const auto& c = ds.children[i];
    for (const auto& fc : file.children)
      if (fc.id == c.id && !members_by_id(fc, c, *want.children.at(i).type)) return false;
  }
  return true;
}

// A column read from a file (its field `file`) as the dataset's (members_by_id).
inline arrow::array_ptr struct_by_id(const arrow::array_ptr& col, const schema::field& file, const schema::field& ds,
                                     const arrow::type_ptr& want) {
  if (file.logical_type != "struct" || ds.logical_type != "struct") return col;
  auto out = std::make_shared<arrow::array_data>(*col);
  out->type = want;
  out->children.clear();
  for (std::size_t i = 0; i < ds.children.size(); ++i) {
    const auto& c = ds.children[i];
    const auto& type = want->children.at(i).type;
    std::size_t k = 0;
    while (k < file.children.size() && file.children[k].id != c.id) ++k;
    // Members are indexed like their struct (its offset included).
    out->children.push_back(k < file.children.size()
                                ? struct_by_id(col->children.at(k), file.children[k], c, type)
                                : null_array_of(type, col->offset + col->length));
  }
  return out;
}

}  // namespace detail

// The absolute path of a data file of a fragment.
inline std::string data_file_path(const std::string& root, const pb::manifest& m, const pb::data_file& f) {
  return (std::filesystem::path(resolve_base(root, m, f.base_id, data_dir_name)) / f.path).string();
}

// A blob_store (encoding/structural/blob.hpp) for the blob v2 values of one data file, read
// through a source factory: inline blobs from the data file's own source, packed and
// dedicated blobs from its blob files (opened on first use, then kept). A range past
// the end of its file is corrupt_error naming the file, offset and size.
inline encoding::structural::blob_store source_blob_store(const std::string& data_path, io::any_source data,
                                                    source_factory sources) {
  struct files {
    std::string data_path;
    io::any_source data;
    source_factory sources;
    std::mutex mu;
    std::map<std::uint32_t, std::pair<std::string, io::any_source>> blobs;
    files(std::string p, io::any_source d, source_factory s)
        : data_path(std::move(p)), data(std::move(d)), sources(std::move(s)) {}
  };
  auto st = std::make_shared<files>(data_path, std::move(data), std::move(sources));
  auto checked = [](const io::any_source& f, const std::string& path, std::uint64_t pos, std::uint64_t size,
                    const std::string& what) {
    if (pos > f.size() || size > f.size() - pos)
      throw corrupt_error(what + ": blob bytes [" + std::to_string(pos) + ", +" + std::to_string(size) +
                          ") lie past the end of '" + path + "' (" + std::to_string(f.size()) + " bytes)");
    return detail::naming_path(path, [&] { return f.read(pos, size); });
  };
  encoding::structural::blob_store s;
  s.read_data_file = [st, checked](std::uint64_t pos, std::uint64_t size) {
    return checked(st->data, st->data_path, pos, size, "inline blob");
  };
  s.read_blob_file = [st, checked](std::uint32_t id, std::uint64_t pos, std::uint64_t size) {
    std::unique_lock lock(st->mu);
    auto it = st->blobs.find(id);
    if (it == st->blobs.end()) {
      const auto p = encoding::structural::blob_file_path(st->data_path, id).string();
      auto src = detail::naming_path(p, [&] { return st->sources(p); });
      it = st->blobs.emplace(id, std::pair{p, std::move(src)}).first;
    }
    const auto& [path, f] = it->second;
    lock.unlock();
    return checked(f, path, pos, size, "blob file " + std::to_string(id));
  };
  return s;
}

class fragment_reader {
 public:
  using reader_type = file::file_reader<io::any_source>;
  // Opens (or hands out an already open) reader of the data file at a path with the
  // fragment reader's reader_options (a dataset's takes keep their readers open).
  using reader_opener = std::function<std::shared_ptr<const reader_type>(const std::string& path)>;

  // `fields`: indices of the dataset's top-level fields to read, in output order.
  // `sources` opens the data and blob files (local files by default); `opener`, when
  // set, supplies the data files' readers instead.
  fragment_reader(std::string root, std::shared_ptr<const pb::manifest> manifest,
                  std::shared_ptr<const schema::schema> schema, std::shared_ptr<const arrow::schema> arrow_schema,
                  const pb::data_fragment& fragment, std::vector<std::size_t> fields,
                  source_factory sources = {}, file::reader_options reader_options = {}, reader_opener opener = {})
      : root_(std::move(root)), manifest_(std::move(manifest)), schema_(std::move(schema)),
        arrow_schema_(std::move(arrow_schema)), fragment_(fragment), fields_(std::move(fields)),
        sources_(std::move(sources)), reader_options_(reader_options), opener_(std::move(opener)) {
    plan();
  }

  std::uint64_t id() const noexcept { return fragment_.id; }
  // Rows in the fragment, deleted ones included.
  std::uint64_t physical_rows() const {
    if (fragment_.physical_rows) return fragment_.physical_rows;
    // Legacy fragments do not record their rows: the first data file knows.
    if (fragment_.files.empty()) return 0;
    return open(0).num_rows();
  }

  // Empties the page caches of the data files' readers (readers kept open between
  // reads keep no page buffers).
  void drop_page_caches() const noexcept {
    for (const auto& [file, r] : readers_) r->drop_page_cache();
  }

  // The projected columns over physical rows [begin, end).
  std::vector<arrow::array_ptr> read_range(std::uint64_t begin, std::uint64_t end) const {
    return read_impl(file::read_request{{}, std::pair{begin, end}, std::nullopt}, end - begin);
  }
  // The projected columns at the given physical offsets (ascending).
  std::vector<arrow::array_ptr> read_offsets(const std::vector<std::uint64_t>& offsets) const {
    return read_impl(file::read_request{{}, std::nullopt, offsets}, offsets.size());
  }

  // Whether reading ahead pays: some data file of the projection is on a source where
  // every read is a request (an object store), whose requests can run while the rows
  // before are decoded and used.
  bool worth_reading_ahead() const {
    for (const auto& s : field_sources_)
      if (s.file >= 0 && open(std::size_t(s.file)).copies_every_read()) return true;
    return false;
  }
  // Starts reading physical rows [begin, end) on a thread of its own (replacing any read
  // ahead not taken). Until take_ahead, the caller calls nothing else on this reader.
  void read_ahead(std::uint64_t begin, std::uint64_t end) {
    ahead_ = {};
    ahead_range_ = {begin, end};
    ahead_ = std::async(std::launch::async, [this, begin, end] { return read_range(begin, end); });
  }
  struct rows_read {
    std::uint64_t begin = 0, end = 0;
    std::vector<arrow::array_ptr> columns;
  };
  // The rows read ahead (waiting for them; their read's error is thrown here), or
  // nullopt when none were asked for.
  std::optional<rows_read> take_ahead() {
    if (!ahead_.valid()) return std::nullopt;
    auto f = std::move(ahead_);
    return rows_read{ahead_range_.first, ahead_range_.second, f.get()};
  }

 private:
  struct source_of_field {
    int file = -1;          // index into fragment_.files; -1: no file holds it (nulls)
    std::string file_name;  // the field's name inside that file
    bool blob_v2 = false;   // the file holds blob v2 descriptions; the values are read through them
    // Set where the file's struct members differ from the dataset's (renamed, dropped or
    // added since): its columns are matched to the dataset's by field id.
    std::optional<schema::field> file_field;
  };

  void plan() {
    const auto& ds = *schema_;
    for (auto fi : fields_) {
      if (fi >= ds.fields.size()) throw invalid_input_error("field index " + std::to_string(fi) + " out of range");
      const auto& f = ds.fields[fi];
      std::unordered_set<std::int32_t> ids;
      detail::subtree_ids(f, ids);
      source_of_field s;
      for (std::size_t k = fragment_.files.size(); k-- > 0;) {
        const auto& df = fragment_.files[k];
        if (std::any_of(df.fields.begin(), df.fields.end(), [&](std::int32_t id) { return ids.count(id) > 0; })) {
          s.file = int(k);
          break;
        }
      }
      if (s.file < 0 && !f.nullable)
        throw corrupt_error("fragment " + std::to_string(fragment_.id) + " has no data file holding the non-nullable field '" +
                            f.name + "'");
      field_sources_.push_back(std::move(s));
    }
  }

  const reader_type& open(std::size_t file) const {
    auto it = readers_.find(file);
    if (it != readers_.end()) return *it->second;
    const auto& df = fragment_.files.at(file);
    const std::string path = data_file_path(root_, *manifest_, df);
    auto r = detail::naming_path(path, [&]() -> std::shared_ptr<const reader_type> {
      if (opener_) return opener_(path);
      // file_reader asks the source whether to split large reads (prefers_whole_reads).
      const auto size = df.file_size_bytes ? std::optional(df.file_size_bytes) : std::nullopt;
      return std::make_shared<reader_type>(sources_(path, size), reader_options_);
    });
    if (fragment_.physical_rows && r->num_rows() != fragment_.physical_rows)
      throw corrupt_error("data file '" + path + "' has " + std::to_string(r->num_rows()) + " rows but fragment " +
                          std::to_string(fragment_.id) + " records " + std::to_string(fragment_.physical_rows));
    readers_.emplace(file, r);
    return *r;
  }

  // Resolves, for the fields read from `file`, their names inside it, checking types.
  void resolve_names(std::size_t file, const reader_type& r) const {
    if (resolved_.count(file)) return;
    const auto path = data_file_path(root_, *manifest_, fragment_.files[file]);
    for (std::size_t k = 0; k < fields_.size(); ++k) {
      auto& s = field_sources_[k];
      if (s.file != int(file)) continue;
      const auto& f = schema_->fields[fields_[k]];
      const schema::field* in_file = nullptr;
      for (const auto& ff : r.schema().fields)
        if (ff.id == f.id) in_file = &ff;
      if (!in_file)
        throw corrupt_error("data file '" + path + "' is listed as holding field '" + f.name + "' (id " +
                            std::to_string(f.id) + ") but its schema has no top-level field with that id");
      const auto file_type = schema::to_arrow(*in_file).type;
      const auto& want = arrow_schema_->fields[fields_[k]].type;
      s.blob_v2 = encoding::structural::is_blob_v2_field(arrow_schema_->fields[fields_[k]]) &&
                  encoding::structural::is_blob_v2_descriptions(*file_type);
      if (!s.blob_v2 && !arrow::equals(*file_type, *want)) {
        if (!detail::members_by_id(*in_file, f, *want)) {
          auto d = arrow::type_difference(*file_type, *want, {}, f.name);
          throw unsupported_error("field '" + f.name + "' in data file '" + path + "' does not have the dataset's type (" +
                                  d.value_or("nested fields differ") + "); lancet cannot read schema changes of this kind");
        }
        s.file_field = *in_file;
      }
      s.file_name = in_file->name;
    }
    resolved_.insert(file);
  }

  std::vector<arrow::array_ptr> read_impl(file::read_request req, std::uint64_t rows) const {
    std::vector<arrow::array_ptr> out(fields_.size());
    std::map<int, std::vector<std::size_t>> by_file;
    for (std::size_t k = 0; k < fields_.size(); ++k) by_file[field_sources_[k].file].push_back(k);
    for (auto& [file, ks] : by_file) {
      if (file < 0) {
        for (auto k : ks) out[k] = detail::null_array_of(arrow_schema_->fields[fields_[k]].type, std::int64_t(rows));
        continue;
      }
      const auto& r = open(std::size_t(file));
      resolve_names(std::size_t(file), r);
      const std::string path = data_file_path(root_, *manifest_, fragment_.files[std::size_t(file)]);
      file::read_request fr = req;
      for (auto k : ks) fr.columns.push_back(field_sources_[k].file_name);
      auto b = detail::naming_path(path, [&] {
        try {
          return r.read(fr);
        } catch (const invalid_input_error& e) {
          // Ranges and offsets come from the manifest; a file that cannot serve them is corrupt.
          throw corrupt_error("fragment " + std::to_string(fragment_.id) + ", data file '" + path +
                              "': " + e.message());
        }
      });
      for (std::size_t j = 0; j < ks.size(); ++j) {
        auto col = b.columns.at(j);
        if (field_sources_[ks[j]].blob_v2) {
          auto it = blob_stores_.find(file);
          if (it == blob_stores_.end())
            it = blob_stores_.emplace(file, source_blob_store(path, r.source(), sources_)).first;
          col = encoding::structural::blob_v2_values(*col, it->second, schema_->fields[fields_[ks[j]]].name,
                                               arrow_schema_->fields[fields_[ks[j]]].type);
        }
        if (const auto& ff = field_sources_[ks[j]].file_field)
          col = detail::struct_by_id(col, *ff, schema_->fields[fields_[ks[j]]], arrow_schema_->fields[fields_[ks[j]]].type);
        // The file may name nested members differently (a renamed list item); the
        // dataset's type is what callers see.
        if (col->type.get() != arrow_schema_->fields[fields_[ks[j]]].type.get()) {
          auto c = std::make_shared<arrow::array_data>(*col);
          c->type = arrow_schema_->fields[fields_[ks[j]]].type;
          col = c;
        }
        out[ks[j]] = std::move(col);
      }
    }
    return out;
  }

  std::string root_;
  std::shared_ptr<const pb::manifest> manifest_;
  std::shared_ptr<const schema::schema> schema_;
  std::shared_ptr<const arrow::schema> arrow_schema_;
  pb::data_fragment fragment_;
  std::vector<std::size_t> fields_;
  source_factory sources_;
  file::reader_options reader_options_;
  reader_opener opener_;
  mutable std::vector<source_of_field> field_sources_;
  mutable std::map<std::size_t, std::shared_ptr<const reader_type>> readers_;
  mutable std::unordered_set<std::size_t> resolved_;
  mutable std::map<int, encoding::structural::blob_store> blob_stores_;  // by file, for blob v2 fields
  // Last, so that it is waited for before the members its read uses are destroyed.
  std::pair<std::uint64_t, std::uint64_t> ahead_range_;
  std::future<std::vector<arrow::array_ptr>> ahead_;
};

}  // namespace lancet::dataset
