// The definitions of dataset/schema_change.hpp: the new schema, checked as Lance 12
// checks it, committed as a Project transaction.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lancet/arrow/cast.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/commit.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/schema_change.hpp"
#include "lancet/dataset/write.hpp"
#include "lancet/dataset/write_impl.hpp"
#include "lancet/expr/expression.hpp"
#include "lancet/pb/table.hpp"
#include "lancet/schema/lance_schema.hpp"

namespace lancet::dataset {

namespace detail {

// Whether alter_columns casts `from` to `to`, as Lance 12 does: numbers to numbers of
// their kind (integers, floats), strings and binary between their offset widths, lists
// (of one list kind; fixed-size lists of one size) whose items cast so.
inline bool castable(const arrow::data_type& from, const arrow::data_type& to) {
  using arrow::type_id;
  const auto kind = [](const arrow::data_type& t) {
    if (arrow::is_integer(t.id)) return 1;
    if (arrow::is_floating(t.id)) return 2;
    if (t.id == type_id::utf8 || t.id == type_id::large_utf8) return 3;
    if (t.id == type_id::binary || t.id == type_id::large_binary) return 4;
    return 0;
  };
  if (from.id == type_id::list || from.id == type_id::large_list || from.id == type_id::fixed_size_list)
    return to.id == from.id && to.list_size == from.list_size && from.children.size() == 1 && to.children.size() == 1 &&
           castable(*from.children[0].type, *to.children[0].type);
  return kind(from) != 0 && kind(from) == kind(to);
}

// The fields from the top down to `path` ("a" or "s.a"), as positions among their
// siblings; empty when no such column (only struct members are reached through '.').
inline std::vector<std::size_t> column_positions(const schema::schema& s, const std::string& path) {
  std::vector<std::size_t> out;
  const std::vector<schema::field>* level = &s.fields;
  std::size_t from = 0;
  for (;;) {
    const auto dot = path.find('.', from);
    const std::string name = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    std::size_t i = 0;
    while (i < level->size() && (*level)[i].name != name) ++i;
    if (i == level->size()) return {};
    out.push_back(i);
    if (dot == std::string::npos) return out;
    const auto& f = (*level)[i];
    if (f.logical_type != "struct") return {};
    level = &f.children;
    from = dot + 1;
  }
}

inline schema::field& field_at(schema::schema& s, const std::vector<std::size_t>& pos) {
  schema::field* f = &s.fields.at(pos[0]);
  for (std::size_t k = 1; k < pos.size(); ++k) f = &f->children.at(pos[k]);
  return *f;
}

inline void collect_ids(const std::vector<schema::field>& fs, std::set<std::int32_t>& out) {
  for (const auto& f : fs) {
    out.insert(f.id);
    collect_ids(f.children, out);
  }
}

[[noreturn]] inline void no_column(const std::string& root, const std::string& path) {
  throw invalid_input_error("column '" + path + "' does not exist in dataset '" + root + "'");
}

// Whether a live row holds NULL in the column at `pos` (NULL where a struct above it is).
inline bool column_has_nulls(const dataset& d, const std::vector<std::size_t>& pos) {
  scan_options so;
  so.columns = {d.schema().fields.at(pos[0]).name};
  for (auto sc = d.scan(so); auto b = sc.next();) {
    const arrow::array_data& top = *b->columns.at(0);
    for (std::int64_t r = 0; r < top.length; ++r) {
      const arrow::array_data* a = &top;
      std::int64_t at = r;
      for (std::size_t k = 1; k < pos.size() && a; ++k) {
        if (!a->is_valid(at)) return true;
        at += a->offset;
        a = a->children.at(pos[k]).get();
      }
      if (!a->is_valid(at)) return true;
    }
  }
  return false;
}

// Data files holding no field of c's schema leave their fragments; indexes on a field no
// longer there go (system indexes stay), as Lance's build_manifest and
// retain_relevant_indices (after a Project or a Merge).
inline void drop_unreferenced(pending_commit& c) {
  std::set<std::int32_t> ids;
  collect_ids(manifest_schema(c.manifest).fields, ids);
  for (auto& f : c.manifest.fragments)
    std::erase_if(f.files, [&](const pb::data_file& file) {
      return std::none_of(file.fields.begin(), file.fields.end(), [&](std::int32_t id) { return ids.count(id) > 0; });
    });
  std::erase_if(c.indices, [&](const pb::index_metadata& im) {
    if (im.name.starts_with("__lance_")) return false;
    return std::any_of(im.fields.begin(), im.fields.end(), [&](std::int32_t id) { return ids.count(id) == 0; });
  });
}

// A Project's or Merge's manifest finished: drop_unreferenced, then stamped.
inline pending_commit finish_schema_change(const snapshot& base, pending_commit c) {
  drop_unreferenced(c);
  const auto& p = base.manifest();
  const bool stable = uses_stable_row_ids(p);
  finish_manifest(c.manifest, stable, stable ? std::optional<std::uint64_t>(p.next_row_id) : std::nullopt,
                  c.transaction);
  return c;
}

// Project's manifest on `base`: the transaction's schema (drop_unreferenced).
inline pending_commit build_project(const snapshot& base, const pb::transaction& txn) {
  const auto& op = std::get<pb::transaction::project>(txn.operation);
  pending_commit c = commit_after(base, txn);
  c.manifest.fields_raw = op.schema_raw;
  return finish_schema_change(base, std::move(c));
}

// Merge's manifest on `base`: the transaction's fragments (every fragment, some with a
// new data file) and schema (drop_unreferenced: a cast column's old files and indexes).
inline pending_commit build_merge(const snapshot& base, const pb::transaction& txn) {
  const auto& op = std::get<pb::transaction::merge>(txn.operation);
  pending_commit c = commit_after(base, txn);
  c.manifest.fields_raw = op.schema_raw;
  c.manifest.fragments = op.fragments;
  return finish_schema_change(base, std::move(c));
}

// The largest field id the dataset's version ever used: its schema's and its data
// files' (a dropped field's id stays taken while a file holds it), as Lance counts.
inline std::int32_t max_field_id(const pb::manifest& m, const schema::schema& s) {
  std::int32_t hi = s.max_field_id();
  for (const auto& f : m.fragments)
    for (const auto& file : f.files)
      for (auto id : file.fields) hi = std::max(hi, id);
  return hi;
}

// The schema with `added` (Arrow fields) after its fields, ids assigned.
inline schema::schema with_new_fields(const std::string& root, const pb::manifest& m, schema::schema s,
                                      const std::vector<arrow::field>& added, std::vector<schema::field>* out) {
  const auto max_id = max_field_id(m, s);
  const std::size_t first = s.fields.size();
  for (const auto& f : added) {
    for (const auto& g : s.fields)
      if (g.name == f.name)
        throw invalid_input_error("column '" + f.name + "' already exists in dataset '" + root + "'");
    s.fields.push_back(schema::from_arrow(f));
  }
  schema::assign_field_ids(s, max_id);
  if (out) out->assign(s.fields.begin() + std::ptrdiff_t(first), s.fields.end());
  return s;
}

// Commits a Merge of `fragments` with schema `s` after snap; the data files in
// `written` are removed when nothing is committed.
template <class SinkFactory>
schema_change_result commit_merge(const std::string& root, const snapshot& snap, const schema::schema& s,
                                  std::vector<pb::data_fragment> fragments, const std::vector<std::string>& written,
                                  const schema_change_options& o, SinkFactory& make_sink,
                                  bool preserves_nullability = true) {
  try {
    schema::validate(s);
    const auto co = commit_options_for(snap, o.max_retries, o.write_version_hint);
    pb::transaction::merge op;
    op.fragments = std::move(fragments);
    op.schema_raw = encoded_schema_fields(s);
    op.preserves_nullability = preserves_nullability;
    auto out = commit_transaction(root, snap, make_transaction(snap.version(), std::move(op)), build_merge, co, make_sink);
    return {out.commit.manifest.version, out.retries};
  } catch (const committed_io_error&) {
    throw;
  } catch (...) {
    remove_data_files(written);
    throw;
  }
}

// Commits `s` as the schema of the version after snap's.
template <class SinkFactory>
schema_change_result commit_schema(const std::string& root, const snapshot& snap, const schema::schema& s,
                                   bool preserves_nullability, const schema_change_options& o, SinkFactory& make_sink) {
  schema::validate(s);
  const auto co = commit_options_for(snap, o.max_retries, o.write_version_hint);
  auto txn = make_transaction(snap.version(),
                              pb::transaction::project{encoded_schema_fields(s), preserves_nullability});
  auto out = commit_transaction(root, snap, std::move(txn), build_project, co, make_sink);
  return {out.commit.manifest.version, out.retries};
}

}  // namespace detail

// drop_columns (schema_change.hpp), over any sink factory.
template <class SinkFactory>
schema_change_result drop_columns(const std::string& root, const std::vector<std::string>& paths,
                                  const schema_change_options& o, SinkFactory&& make_sink) {
  if (paths.empty()) throw invalid_input_error("drop_columns on dataset '" + root + "': no column named");
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  auto s = manifest_schema(snap.manifest());
  for (const auto& path : paths) {
    auto pos = detail::column_positions(s, path);
    if (pos.empty()) detail::no_column(root, path);
    // The field, then each struct above it that is left without members.
    for (;;) {
      std::vector<schema::field>& siblings =
          pos.size() == 1 ? s.fields : detail::field_at(s, {pos.begin(), pos.end() - 1}).children;
      siblings.erase(siblings.begin() + std::ptrdiff_t(pos.back()));
      if (!siblings.empty() || pos.size() == 1) break;
      pos.pop_back();
    }
  }
  if (s.fields.empty()) throw invalid_input_error("cannot drop every column of dataset '" + root + "'");
  return detail::commit_schema(root, snap, s, true, o, make_sink);
}

// add_null_columns (schema_change.hpp), over any sink factory.
template <class SinkFactory>
schema_change_result add_null_columns(const std::string& root, const std::vector<arrow::field>& fields,
                                      const schema_change_options& o, SinkFactory&& make_sink) {
  if (fields.empty()) throw invalid_input_error("add_null_columns on dataset '" + root + "': no column given");
  for (const auto& f : fields)
    if (!f.nullable)
      throw invalid_input_error("column '" + f.name + "' must be nullable to be added with only NULL values");
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  const auto s = detail::with_new_fields(root, snap.manifest(), manifest_schema(snap.manifest()), fields, nullptr);
  return detail::commit_merge(root, snap, s, snap.manifest().fragments, {}, o, make_sink);
}

namespace detail {

// add_columns of `batches` on version d (snap) of the dataset.
// `s` is the new schema, `new_fields` its fields the batches hold (ids assigned).
template <class SinkFactory>
schema_change_result add_rows(const std::string& root, const dataset& d, const snapshot& snap,
                              std::span<const arrow::record_batch> batches, const schema::schema& s,
                              const std::vector<schema::field>& new_fields, const schema_change_options& o,
                              SinkFactory& make_sink, bool preserves_nullability = true) {
  if (batches.empty() || batches[0].schema == nullptr || batches[0].schema->fields.empty())
    throw invalid_input_error("add_columns on dataset '" + root + "': no column given");
  const auto& added = batches[0].schema->fields;
  const auto same_schema = [&](const arrow::schema& x) {
    if (x.fields.size() != added.size()) return false;
    for (std::size_t c = 0; c < added.size(); ++c)
      if (!arrow::equals(x.fields[c], added[c])) return false;
    return true;
  };
  for (std::size_t i = 1; i < batches.size(); ++i)
    if (!batches[i].schema || !same_schema(*batches[i].schema))
      throw invalid_input_error("add_columns on dataset '" + root + "': batch " + std::to_string(i) +
                                " has another schema than batch 0");
  const auto& m = snap.manifest();
  std::uint64_t given = 0, live = 0;
  for (const auto& b : batches) given += std::uint64_t(b.num_rows());
  for (const auto& f : m.fragments) live += d.physical_rows(f.id) - d.deleted_rows(f.id).size();
  if (given != live)
    throw invalid_input_error("add_columns on dataset '" + root + "' version " + std::to_string(m.version) +
                              ": the batches hold " + std::to_string(given) + " rows, the dataset has " +
                              std::to_string(live) + " live rows");
  schema::schema target;
  target.fields = new_fields;
  // Each data file is one fragment's rows, whatever their size.
  write_options wo;
  wo.max_rows_per_file = std::numeric_limits<std::uint64_t>::max();
  wo.max_bytes_per_file = std::numeric_limits<std::uint64_t>::max();
  const auto storage = manifest_storage_version(m);
  std::vector<pb::data_fragment> fragments = m.fragments;
  std::vector<std::string> written;
  std::size_t batch = 0;
  std::int64_t at = 0;  // the next row of batches[batch]
  try {
    for (auto& frag : fragments) {
      // This fragment's live rows from the batches, then one row per physical row
      // (a deleted row repeats the live row before it, or the first).
      std::vector<arrow::record_batch> parts;
      const auto phys = d.physical_rows(frag.id);
      const auto deleted = d.deleted_rows(frag.id);
      std::int64_t need = std::int64_t(phys - deleted.size());
      while (need > 0) {
        const auto& b = batches[batch];
        const std::int64_t take = std::min(need, b.num_rows() - at);
        if (take > 0) parts.push_back(zero_copy_slice(b, at, take));
        at += take;
        need -= take;
        if (at == b.num_rows()) ++batch, at = 0;
      }
      std::vector<std::int64_t> rows(phys);
      std::int64_t next = 0;
      for (std::uint64_t p = 0; p < phys; ++p)
        rows[p] = deleted.contains(std::uint32_t(p)) ? std::max<std::int64_t>(next - 1, 0) : next++;
      arrow::record_batch physical;
      physical.schema = batches[0].schema;
      for (std::size_t c = 0; c < added.size(); ++c) {
        std::vector<arrow::array_ptr> cs;
        for (const auto& p : parts) cs.push_back(p.columns[c]);
        const auto all = cs.size() == 1 ? cs[0] : arrow::concat(cs, added[c].type);
        physical.columns.push_back(arrow::take_rows(all, rows, added[c].type));
      }
      auto none = [] { return std::optional<arrow::record_batch>(); };
      auto files = write_data_files(root, std::optional<arrow::record_batch>(std::move(physical)), none,
                                            target, storage, wo, make_sink, encoding::structural::default_policy{},
                                            "add_columns on dataset '" + root + "'");
      written.insert(written.end(), files.paths.begin(), files.paths.end());
      if (files.fragments.size() != 1 || files.fragments[0].physical_rows != phys)
        throw internal_error("add_columns wrote " + std::to_string(files.fragments.size()) + " files for fragment " +
                             std::to_string(frag.id));
      frag.files.push_back(files.fragments[0].files.at(0));
    }
  } catch (...) {
    remove_data_files(written);
    throw;
  }
  return commit_merge(root, snap, s, std::move(fragments), written, o, make_sink, preserves_nullability);
}

}  // namespace detail

// add_columns of batches (schema_change.hpp), over any sink factory.
template <class SinkFactory>
schema_change_result add_columns(const std::string& root, std::span<const arrow::record_batch> batches,
                                 const schema_change_options& o, SinkFactory&& make_sink) {
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  if (batches.empty() || !batches[0].schema) throw invalid_input_error("add_columns on dataset '" + root + "': no column given");
  std::vector<schema::field> new_fields;
  const auto s = detail::with_new_fields(root, snap.manifest(), manifest_schema(snap.manifest()),
                                         batches[0].schema->fields, &new_fields);
  return detail::add_rows(root, d, snap, batches, s, new_fields, o, make_sink);
}

// add_columns of SQL expressions (schema_change.hpp), over any sink factory.
template <class SinkFactory>
schema_change_result add_columns(const std::string& root,
                                 const std::vector<std::pair<std::string, std::string>>& sql_columns,
                                 const schema_change_options& o, SinkFactory&& make_sink) {
  if (sql_columns.empty()) throw invalid_input_error("add_columns on dataset '" + root + "': no column given");
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  std::vector<expr::expression> exprs;
  auto out_schema = std::make_shared<arrow::schema>();
  std::vector<std::string> read;  // the columns the expressions read, in schema order
  for (const auto& [name, sql] : sql_columns) {
    exprs.push_back(expr::expression::compile(sql, d.schema()));
    out_schema->fields.push_back(arrow::field{name, exprs.back().type(), exprs.back().nullable(), {}});
  }
  for (const auto& f : d.schema().fields)
    for (const auto& e : exprs)
      if (std::find(e.columns().begin(), e.columns().end(), f.name) != e.columns().end() &&
          std::find(read.begin(), read.end(), f.name) == read.end())
        read.push_back(f.name);
  scan_options so;
  so.columns = read.empty() ? std::vector<std::string>{d.schema().fields.at(0).name} : read;
  std::vector<arrow::record_batch> batches;
  for (auto sc = d.scan(so); auto b = sc.next();) {
    arrow::record_batch nb;
    nb.schema = out_schema;
    for (const auto& e : exprs) {
      std::vector<arrow::array_ptr> inputs;
      for (const auto& c : e.columns())
        inputs.push_back(b->columns.at(std::size_t(std::find(so.columns.begin(), so.columns.end(), c) - so.columns.begin())));
      nb.columns.push_back(e.evaluate(inputs, b->num_rows()));
      if (!e.nullable() && nb.columns.back()->count_nulls() > 0)
        throw invalid_input_error("add_columns on dataset '" + root + "': the expression '" + e.text() +
                                  "' gives NULL (a division by zero) where its column cannot hold NULL");
    }
    batches.push_back(std::move(nb));
  }
  if (batches.empty()) {  // no live rows: the columns alone
    arrow::record_batch nb;
    nb.schema = out_schema;
    for (const auto& f : out_schema->fields) nb.columns.push_back(arrow::null_array_of(f.type, 0));
    batches.push_back(std::move(nb));
  }
  std::vector<schema::field> new_fields;
  const auto s = detail::with_new_fields(root, snap.manifest(), manifest_schema(snap.manifest()), out_schema->fields,
                                         &new_fields);
  return detail::add_rows(root, d, snap, batches, s, new_fields, o, make_sink);
}

// alter_columns (schema_change.hpp), over any sink factory.
template <class SinkFactory>
schema_change_result alter_columns(const std::string& root, const std::vector<column_alteration>& changes,
                                   const schema_change_options& o, SinkFactory&& make_sink) {
  const auto d = dataset::open(root);
  const auto snap = load_version(root, d.version());
  auto s = manifest_schema(snap.manifest());
  const auto max_id = detail::max_field_id(snap.manifest(), s);
  bool preserves_nullability = true, any = false;
  std::vector<std::pair<std::size_t, arrow::type_ptr>> casts;  // top-level position, new type
  for (const auto& c : changes) {
    const auto pos = detail::column_positions(s, c.path);
    if (pos.empty()) detail::no_column(root, c.path);
    auto& f = detail::field_at(s, pos);
    if (c.cast) {
      any = true;
      const auto& from = d.schema().fields.at(pos[0]).type;
      if (pos.size() != 1)
        throw invalid_input_error("column '" + c.path + "': only top-level columns are cast (cast its struct)");
      if (!detail::castable(*from, *c.cast))
        throw invalid_input_error("cannot cast column '" + c.path + "' of dataset '" + root + "' from " +
                                  arrow::to_string(*from) + " to " + arrow::to_string(*c.cast));
      if (!arrow::equals(*from, *c.cast)) casts.emplace_back(pos[0], c.cast);
    }
    if (c.nullable) {
      any = true;
      if (!*c.nullable) {
        preserves_nullability = false;
        if (f.nullable && detail::column_has_nulls(d, pos))
          throw invalid_input_error("column '" + c.path + "' of dataset '" + root +
                                    "' contains NULL values and cannot be made non-nullable");
      }
      f.nullable = *c.nullable;
    }
    if (c.rename) {
      any = true;
      const auto& to = *c.rename;
      if (to.empty()) throw invalid_input_error("column '" + c.path + "' cannot be renamed to an empty name");
      if (pos.size() == 1 && to.find('.') != std::string::npos)
        throw invalid_input_error("column '" + c.path + "' cannot be renamed to '" + to +
                                  "': a top-level name cannot contain '.'");
      const auto& siblings = pos.size() == 1 ? s.fields : detail::field_at(s, {pos.begin(), pos.end() - 1}).children;
      for (std::size_t i = 0; i < siblings.size(); ++i)
        if (i != pos.back() && siblings[i].name == to)
          throw invalid_input_error("column '" + c.path + "' cannot be renamed to '" + to + "': dataset '" + root +
                                    "' has a column of that name");
      f.name = to;
    }
  }
  if (!any) throw invalid_input_error("alter_columns on dataset '" + root + "': no change asked");
  if (casts.empty()) return detail::commit_schema(root, snap, s, preserves_nullability, o, make_sink);
  // Cast columns: new fields (new ids) in place of the old, their values in new files.
  auto out_schema = std::make_shared<arrow::schema>();
  scan_options so;
  for (const auto& [at, type] : casts) {
    auto& f = s.fields[at];
    auto nf = schema::from_arrow(arrow::field{f.name, type, f.nullable, f.metadata});
    f = std::move(nf);
    out_schema->fields.push_back(arrow::field{f.name, type, f.nullable, {}});
    so.columns.push_back(d.schema().fields[at].name);
  }
  schema::assign_field_ids(s, max_id);
  std::vector<schema::field> new_fields;
  for (const auto& [at, type] : casts) new_fields.push_back(s.fields[at]);
  std::vector<arrow::record_batch> batches;
  for (auto sc = d.scan(so); auto b = sc.next();) {
    arrow::record_batch nb;
    nb.schema = out_schema;
    for (std::size_t k = 0; k < casts.size(); ++k)
      nb.columns.push_back(arrow::cast(b->columns[k], casts[k].second, out_schema->fields[k].name));
    batches.push_back(std::move(nb));
  }
  if (batches.empty()) {
    arrow::record_batch nb;
    nb.schema = out_schema;
    for (const auto& f : out_schema->fields) nb.columns.push_back(arrow::null_array_of(f.type, 0));
    batches.push_back(std::move(nb));
  }
  return detail::add_rows(root, d, snap, batches, s, new_fields, o, make_sink, preserves_nullability);
}

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these
LANCET_INLINE schema_change_result drop_columns(const std::string& root, const std::vector<std::string>& paths,
                                                const schema_change_options& o) {
  default_sink_factory f;
  return drop_columns(root, paths, o, f);
}
LANCET_INLINE schema_change_result alter_columns(const std::string& root, const std::vector<column_alteration>& changes,
                                                 const schema_change_options& o) {
  default_sink_factory f;
  return alter_columns(root, changes, o, f);
}
LANCET_INLINE schema_change_result add_null_columns(const std::string& root, const std::vector<arrow::field>& fields,
                                                    const schema_change_options& o) {
  default_sink_factory f;
  return add_null_columns(root, fields, o, f);
}
LANCET_INLINE schema_change_result add_columns(const std::string& root, std::span<const arrow::record_batch> batches,
                                               const schema_change_options& o) {
  default_sink_factory f;
  return add_columns(root, batches, o, f);
}
LANCET_INLINE schema_change_result add_columns(const std::string& root,
                                               const std::vector<std::pair<std::string, std::string>>& sql_columns,
                                               const schema_change_options& o) {
  default_sink_factory f;
  return add_columns(root, sql_columns, o, f);
}
#endif

}  // namespace lancet::dataset
