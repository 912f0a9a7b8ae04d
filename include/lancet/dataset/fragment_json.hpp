// Fragment metadata in Lance's JSON form: what pylance's FragmentMetadata.to_json()
// writes and FragmentMetadata.from_json() (and Rust's Fragment::from_json, serde) read.
// Workers of a distributed write hand these to the coordinator that commits them.
//
//   {"id": 0,
//    "files": [{"path": "1011...c3.lance", "fields": [0, 1], "column_indices": [0, 1],
//               "file_major_version": 2, "file_minor_version": 2,
//               "file_size_bytes": 1234, "base_id": null}],
//    "physical_rows": 100,
//    "deletion_file": null, "row_id_meta": null,
//    "created_at_version_meta": null, "last_updated_at_version_meta": null}
//
// Keys and their order are pylance's to_json (python/python/lance/fragment.py); every
// key is always written, null when absent, so both pylance (which reads `id`, `files`,
// `physical_rows` with [] and passes each file's keys to DataFile(**f)) and serde
// (Option fields accept null) take it. Written at their defaults by a fresh write:
//   id 0                  ids are assigned when the fragments are committed
//   base_id null          the files are under the dataset's own data/ directory
//   deletion_file null    nothing deleted yet
//   row_id_meta, created_at_version_meta, last_updated_at_version_meta null: stable
//                         row ids and their version sequences are assigned at commit
// file_size_bytes 0 (unknown) is written as null, as serde's CachedFileSize does.
// deletion_file is {read_version, id, file_type: "array"|"bitmap", num_deleted_rows,
// base_id} (pylance's DeletionFile.asdict); row_id_meta and the version metas are
// serde's externally tagged {"Inline": [bytes]} or {"External": {path, offset, size}}.
//
// Reading is as strict as pylance: `id`, `files` and `physical_rows` are required, a
// file needs `path` and `fields` and may carry no other keys than the seven above;
// unknown top-level keys are ignored (pylance ignores them). Errors name the key path
// ("files[0].fields[2]") and, for malformed text, the line and column.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/json/parse.hpp"
#include "lancet/json/value.hpp"
#include "lancet/dataset/fragment_metadata.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset {

namespace detail {

inline void put_key(std::string& out, std::string_view k) {
  json::append_quoted(out, k);
  out.push_back(':');
}

template <class T>
void put_ints(std::string& out, const std::vector<T>& v) {
  out.push_back('[');
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(v[i]);
  }
  out.push_back(']');
}

inline void put_sequence(std::string& out, const pb::inline_or_external& s) {
  if (const auto* b = std::get_if<std::string>(&s)) {
    out += "{\"Inline\":[";
    for (std::size_t i = 0; i < b->size(); ++i) {
      if (i) out.push_back(',');
      out += std::to_string(static_cast<unsigned char>((*b)[i]));
    }
    out += "]}";
  } else if (const auto* e = std::get_if<pb::external_file>(&s)) {
    out += "{\"External\":{\"path\":";
    json::append_quoted(out, e->path);
    out += ",\"offset\":" + std::to_string(e->offset) + ",\"size\":" + std::to_string(e->size) + "}}";
  } else {
    out += "null";
  }
}

inline void put_optional_u32(std::string& out, const std::optional<std::uint32_t>& v) {
  out += v ? std::to_string(*v) : std::string("null");
}

// Reading: each accessor names the key path in its error.
class reader {
 public:
  explicit reader(std::string context) : context_(std::move(context)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw invalid_input_error(context_ + ": " + (path.empty() ? what : "key '" + path + "': " + what));
  }

  void expect_object(const json::value& v, const std::string& path) const {
    if (v.k != json::value::kind::object) fail(path, "expected an object, got " + json::describe(v));
    for (std::size_t i = 0; i < v.members.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (v.members[i].first == v.members[j].first)
          fail(join(path, v.members[i].first), "appears twice");
  }
  const json::value& required(const json::value& obj, const std::string& path, std::string_view key) const {
    const auto* v = obj.find(key);
    if (!v) fail(join(path, key), "missing");
    return *v;
  }
  std::uint64_t u64(const json::value& v, const std::string& path,
                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    if (v.k != json::value::kind::unsigned_ || v.u > max)
      fail(path, "expected an integer from 0 to " + std::to_string(max) + ", got " + json::describe(v));
    return v.u;
  }
  std::int32_t i32(const json::value& v, const std::string& path) const {
    std::int64_t x = 0;
    if (v.k == json::value::kind::unsigned_ && v.u <= std::uint64_t(std::numeric_limits<std::int32_t>::max()))
      x = std::int64_t(v.u);
    else if (v.k == json::value::kind::integer && v.i >= std::numeric_limits<std::int32_t>::min())
      x = v.i;
    else
      fail(path, "expected a 32-bit integer, got " + json::describe(v));
    return std::int32_t(x);
  }
  std::string string(const json::value& v, const std::string& path) const {
    if (v.k != json::value::kind::string) fail(path, "expected a string, got " + json::describe(v));
    return v.text;
  }
  std::vector<std::int32_t> i32_list(const json::value& v, const std::string& path) const {
    if (v.k != json::value::kind::array) fail(path, "expected an array of integers, got " + json::describe(v));
    std::vector<std::int32_t> out;
    for (std::size_t i = 0; i < v.items.size(); ++i) out.push_back(i32(v.items[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }
  std::optional<std::uint32_t> optional_u32(const json::value* v, const std::string& path) const {
    if (!v || v->is_null()) return std::nullopt;
    return std::uint32_t(u64(*v, path, std::numeric_limits<std::uint32_t>::max()));
  }

  pb::data_file data_file(const json::value& v, const std::string& path) const {
    expect_object(v, path);
    static constexpr std::string_view known[] = {"path", "fields", "column_indices", "file_major_version",
                                                 "file_minor_version", "file_size_bytes", "base_id"};
    for (const auto& [k, _] : v.members)
      if (std::find(std::begin(known), std::end(known), k) == std::end(known))
        fail(join(path, k), "unknown key (a data file has path, fields, column_indices, file_major_version, "
                            "file_minor_version, file_size_bytes, base_id)");
    pb::data_file f;
    f.path = string(required(v, path, "path"), join(path, "path"));
    f.fields = i32_list(required(v, path, "fields"), join(path, "fields"));
    if (const auto* c = v.find("column_indices"); c && !c->is_null())
      f.column_indices = i32_list(*c, join(path, "column_indices"));
    const auto u32max = std::numeric_limits<std::uint32_t>::max();
    if (const auto* m = v.find("file_major_version"); m && !m->is_null())
      f.file_major_version = std::uint32_t(u64(*m, join(path, "file_major_version"), u32max));
    if (const auto* m = v.find("file_minor_version"); m && !m->is_null())
      f.file_minor_version = std::uint32_t(u64(*m, join(path, "file_minor_version"), u32max));
    if (const auto* s = v.find("file_size_bytes"); s && !s->is_null()) f.file_size_bytes = u64(*s, join(path, "file_size_bytes"));
    f.base_id = optional_u32(v.find("base_id"), join(path, "base_id"));
    return f;
  }

  pb::deletion_file deletion_file(const json::value& v, const std::string& path) const {
    expect_object(v, path);
    pb::deletion_file d;
    d.read_version = u64(required(v, path, "read_version"), join(path, "read_version"));
    d.id = u64(required(v, path, "id"), join(path, "id"));
    const auto type = string(required(v, path, "file_type"), join(path, "file_type"));
    if (type == "array") d.file_type = pb::deletion_file::type::arrow_array;
    else if (type == "bitmap") d.file_type = pb::deletion_file::type::bitmap;
    else fail(join(path, "file_type"), "expected \"array\" or \"bitmap\", got " + json::describe(*v.find("file_type")));
    if (const auto* n = v.find("num_deleted_rows"); n && !n->is_null()) d.num_deleted_rows = u64(*n, join(path, "num_deleted_rows"));
    d.base_id = optional_u32(v.find("base_id"), join(path, "base_id"));
    return d;
  }

  pb::inline_or_external sequence(const json::value* v, const std::string& path) const {
    if (!v || v->is_null()) return std::monostate{};
    expect_object(*v, path);
    if (v->members.size() != 1) fail(path, "expected {\"Inline\": [bytes]} or {\"External\": {path, offset, size}}");
    const auto& [tag, body] = v->members[0];
    const std::string p = join(path, tag);
    if (tag == "Inline") {
      if (body.k != json::value::kind::array) fail(p, "expected an array of bytes, got " + json::describe(body));
      std::string bytes;
      for (std::size_t i = 0; i < body.items.size(); ++i)
        bytes.push_back(char(u64(body.items[i], p + "[" + std::to_string(i) + "]", 255)));
      return bytes;
    }
    if (tag == "External") {
      expect_object(body, p);
      pb::external_file e;
      e.path = string(required(body, p, "path"), join(p, "path"));
      e.offset = u64(required(body, p, "offset"), join(p, "offset"));
      e.size = u64(required(body, p, "size"), join(p, "size"));
      return e;
    }
    fail(p, "unknown variant (expected Inline or External)");
  }

  pb::data_fragment fragment(const json::value& v, const std::string& path) const {
    expect_object(v, path);
    pb::data_fragment f;
    f.id = u64(required(v, path, "id"), join(path, "id"));
    const auto& files = required(v, path, "files");
    if (files.k != json::value::kind::array) fail(join(path, "files"), "expected an array, got " + json::describe(files));
    for (std::size_t i = 0; i < files.items.size(); ++i)
      f.files.push_back(data_file(files.items[i], join(path, "files") + "[" + std::to_string(i) + "]"));
    // Rust's Fragment allows null (unknown, legacy); commit refuses it.
    if (const auto& n = required(v, path, "physical_rows"); !n.is_null()) f.physical_rows = u64(n, join(path, "physical_rows"));
    if (const auto* d = v.find("deletion_file"); d && !d->is_null()) f.deletion_file = deletion_file(*d, join(path, "deletion_file"));
    f.row_id_sequence = sequence(v.find("row_id_meta"), join(path, "row_id_meta"));
    f.created_at_version_sequence = sequence(v.find("created_at_version_meta"), join(path, "created_at_version_meta"));
    f.last_updated_at_version_sequence =
        sequence(v.find("last_updated_at_version_meta"), join(path, "last_updated_at_version_meta"));
    return f;
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

 private:
  std::string context_;
};

inline json::value parse(std::string_view text, const std::string& context, std::size_t first_line = 1) {
  json::value v;
  json::syntax_error err;
  if (!json::try_parse(text, v, err)) {
    std::string where;
    if (err.line) where = " at line " + std::to_string(err.line + first_line - 1) + ", column " + std::to_string(err.column);
    if (!err.path.empty()) where += " (key '" + err.path + "')";
    throw invalid_input_error(context + ": not valid JSON" + where + ": " + err.message);
  }
  return v;
}

}  // namespace detail

// One fragment as Lance's FragmentMetadata.to_json() writes it (one line, no spaces).
inline std::string to_json(const fragment_metadata& m) {
  using namespace detail;
  const pb::data_fragment& f = fragment_access::stored(m);
  std::string out = "{\"id\":" + std::to_string(f.id) + ",\"files\":[";
  for (std::size_t i = 0; i < f.files.size(); ++i) {
    const auto& d = f.files[i];
    if (i) out.push_back(',');
    out += "{\"path\":";
    json::append_quoted(out, d.path);
    out += ",\"fields\":";
    put_ints(out, d.fields);
    out += ",\"column_indices\":";
    put_ints(out, d.column_indices);
    out += ",\"file_major_version\":" + std::to_string(d.file_major_version);
    out += ",\"file_minor_version\":" + std::to_string(d.file_minor_version);
    out += ",\"file_size_bytes\":" + (d.file_size_bytes ? std::to_string(d.file_size_bytes) : std::string("null"));
    out += ",\"base_id\":";
    put_optional_u32(out, d.base_id);
    out.push_back('}');
  }
  out += "],\"physical_rows\":" + std::to_string(f.physical_rows) + ",\"deletion_file\":";
  if (const auto& d = f.deletion_file) {
    out += "{\"read_version\":" + std::to_string(d->read_version) + ",\"id\":" + std::to_string(d->id) +
           ",\"file_type\":" + (d->file_type == pb::deletion_file::type::bitmap ? "\"bitmap\"" : "\"array\"") +
           ",\"num_deleted_rows\":" + (d->num_deleted_rows ? std::to_string(d->num_deleted_rows) : std::string("null")) +
           ",\"base_id\":";
    put_optional_u32(out, d->base_id);
    out.push_back('}');
  } else {
    out += "null";
  }
  out += ",\"row_id_meta\":";
  put_sequence(out, f.row_id_sequence);
  out += ",\"created_at_version_meta\":";
  put_sequence(out, f.created_at_version_sequence);
  out += ",\"last_updated_at_version_meta\":";
  put_sequence(out, f.last_updated_at_version_sequence);
  out.push_back('}');
  return out;
}

// One fragment from its JSON object (FragmentMetadata.from_json's input). `context`
// starts error messages (e.g. the file it came from).
inline fragment_metadata fragment_from_json(std::string_view text, const std::string& context = "fragment JSON") {
  using namespace detail;
  return fragment_access::make(reader(context).fragment(parse(text, context), ""));
}

// Fragments from a text holding one fragment object, a JSON array of them, or JSON
// Lines with one object per line (what `lancet write --uncommitted` prints). Blank
// lines are skipped; errors name the line.
inline std::vector<fragment_metadata> fragments_from_json(std::string_view text,
                                                          const std::string& context = "fragment JSON") {
  using namespace detail;
  std::vector<fragment_metadata> out;
  std::size_t start = 0;
  while (start < text.size() && (text[start] == ' ' || text[start] == '\t' || text[start] == '\r' || text[start] == '\n'))
    ++start;
  if (start == text.size()) throw invalid_input_error(context + ": no fragment (the text is empty)");
  if (text[start] == '[') {
    const auto v = parse(text, context);
    reader r(context);
    for (std::size_t i = 0; i < v.items.size(); ++i) out.push_back(fragment_access::make(r.fragment(v.items[i], "[" + std::to_string(i) + "]")));
    if (out.empty()) throw invalid_input_error(context + ": the array holds no fragment");
    return out;
  }
  // One object (possibly spread over lines) or one object per line: JSON Lines when
  // the whole text is not one value but its first line is.
  {
    json::value v;
    json::syntax_error err;
    if (json::try_parse(text, v, err)) {
      out.push_back(fragment_access::make(reader(context).fragment(v, "")));
      return out;
    }
    auto first_end = text.find('\n', start);
    if (first_end == std::string_view::npos) first_end = text.size();
    json::value first;
    json::syntax_error ignored;
    if (!json::try_parse(text.substr(start, first_end - start), first, ignored)) parse(text, context);  // throws
  }
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    const auto line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto v = parse(line, context, line_no);
    out.push_back(fragment_access::make(reader(context + " (line " + std::to_string(line_no) + ")").fragment(v, "")));
  }
  return out;
}

// Fragments as JSON Lines: one to_json object per line.
inline std::string fragments_to_json_lines(const std::vector<fragment_metadata>& fragments) {
  std::string out;
  for (const auto& f : fragments) out += to_json(f) + "\n";
  return out;
}

}  // namespace lancet::dataset
