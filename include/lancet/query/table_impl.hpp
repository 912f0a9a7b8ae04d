// The definitions behind table.hpp: a table's shared state (the dataset version, its
// opened index segments), resolving output columns, the vector search plan (the index
// part with Lance's masks and probing, the exact part over unindexed fragments, the
// merge) and filtered scans. Included by table.hpp in header-only programs; compiled
// into the library in compiled mode.
#pragma once

#include <algorithm>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lancet/arrow/builder.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/core/config.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/row_set.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/index/registry.hpp"
#include "lancet/index/scalar/bitmap_search.hpp"
#include "lancet/index/scalar/btree_search.hpp"
#include "lancet/index/search/vector_index.hpp"
#include "lancet/query/flat_search.hpp"
#include "lancet/query/table.hpp"
#include "lancet/query/vector_column.hpp"

namespace lancet::query {

namespace detail {

// Index segments opened once, by uuid: shared by a table and the tables of its later
// versions (a segment's files never change), with their cached partitions.
struct segment_cache {
  std::mutex mu;
  std::map<std::string, index::index_segment> opened;
};

// The rows of the given fragments where the filter is true (live rows only).
inline std::shared_ptr<const dataset::row_set> rows_matching(const dataset::dataset& ds, const expr::filter& f,
                                                             const std::vector<std::uint64_t>& fragments) {
  auto out = std::make_shared<dataset::row_set>();
  if (fragments.empty()) return out;
  if (f.columns().empty()) {  // a constant
    std::uint8_t all = 0;
    f.evaluate({}, 0, 1, &all);
    if (!all) return out;
  }
  dataset::scan_options so;
  so.columns = f.columns();
  if (so.columns.empty()) so.columns = {ds.schema().fields.at(0).name};
  so.with_row_id = true;
  so.fragment_ids = fragments;
  std::vector<std::uint8_t> mask;
  for (auto sc = ds.scan(so); auto b = sc.next();) {
    const auto n = std::size_t(b->num_rows());
    mask.assign(n, 1);
    if (!f.columns().empty())
      f.evaluate(std::span<const arrow::array_ptr>(b->columns.data(), f.columns().size()), 0, n, mask.data());
    const auto* ids = b->columns.back()->values<std::uint64_t>();
    for (std::size_t r = 0; r < n; ++r)
      if (mask[r]) out->insert(ids[r]);
  }
  return out;
}

// One vector index of a version, ready to search.
struct vector_index_handle {
  std::string name;
  std::string index_type;  // the newest segment's
  simd::distance_type metric = simd::distance_type::l2;
  std::size_t num_segments = 0;
  std::unique_ptr<index::segmented_searcher> searcher;
  std::vector<std::uint64_t> covered;    // fragments of the version some segment covers
  std::vector<std::uint64_t> unindexed;  // fragments of the version none covers
  bool needs_mask = false;  // covered fragments have deleted rows, or segments name fragments the version lacks
  // The rows the index may answer with when needs_mask: the live rows, or with stable
  // row ids those of the covered fragments (a moved row's id stays in the index, whose
  // entry then holds the old values, unless its new fragment is covered).
  std::shared_ptr<const dataset::row_set> mask;
};

// The live row ids of `fragments` (stable row ids).
inline std::shared_ptr<const dataset::row_set> live_ids_of(const dataset::dataset& ds,
                                                           const std::vector<std::uint64_t>& fragments) {
  auto out = std::make_shared<dataset::row_set>();
  for (auto f : fragments) {
    const auto ids = ds.fragment_row_ids(f);
    const auto dv = ds.deleted_rows(f);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (!dv.contains(i)) out->insert(ids[i]);
  }
  return out;
}

// A scalar index of the version (a BTREE, BITMAP or LABEL_LIST), its lookup read, and
// the fragments it covers.
struct scalar_index_handle {
  std::string name, column, type;  // type: "BTREE", "BITMAP" or "LABEL_LIST"
  std::optional<index::btree_lookup> btree;
  std::optional<index::bitmap_lookup> bitmap;
  std::vector<std::uint64_t> covered;

  // The row ids whose value `part` (a filter over this column alone) keeps, in no
  // particular order; nullopt when answering would read more than `max_rows` rows
  // (pages of a BTREE, the answer of a BITMAP or LABEL_LIST) or the index cannot answer
  // it (a LABEL_LIST answers one array_has_any / array_has_all / array_has).
  std::optional<std::vector<std::uint64_t>> rows_where(const expr::filter& part, std::uint64_t max_rows,
                                                       const dataset::dataset& ds) const {
    if (btree) {
      auto a = index::btree_rows_where(*btree, part, std::max(max_rows, 2 * btree->batch_size));
      if (!a) return std::nullopt;
      return std::move(a->row_ids);
    }
    const auto rows_of = [&](std::uint32_t f) { return ds.physical_rows(f); };
    if (type != "LABEL_LIST") {
      auto a = index::bitmap_rows_where(*bitmap, part, max_rows, rows_of);
      if (!a) return std::nullopt;
      return std::move(a->row_ids);
    }
    const auto test = part.list_test();
    if (!test || test->items.empty()) return std::nullopt;  // array_has_all(x, []): every non-NULL list
    // Any: the rows of the kept labels. Every: those holding a label of each set.
    std::vector<std::uint64_t> rows;
    for (std::size_t k = 0; k < test->items.size(); ++k) {
      auto a = index::bitmap_rows_where(*bitmap, test->items[k], test->every ? std::numeric_limits<std::uint64_t>::max() : max_rows, rows_of);
      if (!a) return std::nullopt;
      auto ids = std::move(a->row_ids);
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());  // a row may hold several kept labels
      if (k == 0) {
        rows = std::move(ids);
        continue;
      }
      std::vector<std::uint64_t> both;
      std::set_intersection(rows.begin(), rows.end(), ids.begin(), ids.end(), std::back_inserter(both));
      rows = std::move(both);
    }
    if (rows.size() > max_rows) return std::nullopt;
    return rows;
  }
};

struct table_state {
  table_state(dataset::dataset d, table_options o)
      : ds(std::move(d)), options(o), segments(std::make_shared<segment_cache>()) {}

  dataset::dataset ds;
  table_options options;
  std::shared_ptr<segment_cache> segments;
  mutable std::mutex mu;
  mutable std::map<std::pair<std::string, std::string>, std::shared_ptr<const vector_index_handle>> indexes;
  // The rows each filter keeps (a version's answer never changes), most recent first.
  mutable std::list<std::pair<std::string, std::shared_ptr<const dataset::row_set>>> filters;
  // Vectors of the rows searched exactly (the unindexed fragments'), by column and fragments.
  mutable std::map<std::string, std::shared_ptr<const vector_rows>> vectors;
  mutable std::uint64_t vector_bytes = 0;
  // Refine's vectors per vector index (nullptr: they do not fit the budget), decided by
  // the first refine on the index (one at a time) so later searches cost one lookup.
  mutable std::mutex refine_mu;
  mutable std::map<const vector_index_handle*, std::shared_ptr<const vector_rows>> refine_rows;

  // The scalar index on a column, opened once (a BTREE before a BITMAP, as LanceDB's
  // planner picks, then the first by name); nullptr: none.
  mutable std::map<std::string, std::shared_ptr<const scalar_index_handle>> scalar_indexes;
  mutable bool scalar_indexes_listed = false;

  std::shared_ptr<const scalar_index_handle> scalar_index_on(const std::string& column) const {
    std::lock_guard lock(mu);
    if (!scalar_indexes_listed) {
      scalar_indexes_listed = true;
      std::set<std::uint64_t> present;
      for (const auto& f : ds.manifest().fragments) present.insert(f.id);
      std::vector<index::vector_index_info> found;
      for (const auto& i : index::list_indices(ds.lance_schema(), ds.indices()))
        if ((i.index_type == "BTREE" || i.index_type == "BITMAP" || i.index_type == "LABEL_LIST") && i.columns.size() == 1)
          found.push_back(i);
      std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return std::pair(a.index_type != "BTREE", a.name) < std::pair(b.index_type != "BTREE", b.name);
      });
      for (const auto& i : found) {
        if (scalar_indexes.count(i.columns[0])) continue;
        auto h = std::make_shared<scalar_index_handle>();
        h->name = i.name;
        h->column = i.columns[0];
        h->type = i.index_type;
        const auto dir = index::index_directory(ds.path(), i.uuid);
        if (i.index_type == "BTREE") h->btree = index::read_btree_lookup(dir);
        else h->bitmap = index::read_bitmap_lookup(dir);
        // Its values must be the column's (a LABEL_LIST's: the items'), as filters typed
        // against the column run over them.
        const arrow::data_type* want = nullptr;
        for (const auto& f : ds.schema().fields)
          if (f.name == h->column) want = f.type.get();
        if (want && h->type == "LABEL_LIST") want = want->children.size() == 1 ? want->children[0].type.get() : nullptr;
        const auto held = arrow::to_string(h->btree ? *h->btree->min->type : *h->bitmap->keys->type);
        if (!want || held != arrow::to_string(*want))
          throw corrupt_error("index '" + h->name + "' on '" + h->column + "' holds values of type " + held + ", not " +
                              (want ? arrow::to_string(*want) : std::string("those of a column it can index")));
        for (auto id : present)
          if (!i.fragment_bitmap_present || std::find(i.fragment_ids.begin(), i.fragment_ids.end(), id) != i.fragment_ids.end())
            h->covered.push_back(id);
        scalar_indexes.emplace(h->column, std::move(h));
      }
    }
    auto it = scalar_indexes.find(column);
    return it == scalar_indexes.end() ? nullptr : it->second;
  }

  // The conjuncts of f (expr::filter::column_conjuncts) a scalar index answers, with
  // their indexes.
  std::vector<std::pair<std::shared_ptr<const scalar_index_handle>, expr::filter>> indexed_conjuncts(
      std::vector<std::pair<std::string, expr::filter>> conjuncts) const {
    std::vector<std::pair<std::shared_ptr<const scalar_index_handle>, expr::filter>> out;
    for (auto& [column, part] : conjuncts)
      if (auto h = scalar_index_on(column)) out.emplace_back(std::move(h), std::move(part));
    return out;
  }
  std::vector<std::pair<std::shared_ptr<const scalar_index_handle>, expr::filter>> indexed_conjuncts(
      const expr::filter& f) const {
    return indexed_conjuncts(f.column_conjuncts());
  }

  // The live rows of `fragments` where f is true, when scalar indexes answer parts of it
  // (nullopt when none does, or the scan is cheaper): the rows those parts keep in the
  // fragments every such index covers, checked against the rest of the filter, and the
  // other fragments scanned. `rows_only`: the caller wants the row set alone (a
  // prefilter), not the rows' values.
  std::optional<std::shared_ptr<const dataset::row_set>> indexed_rows(const expr::filter& f,
                                                                      const std::vector<std::uint64_t>& fragments,
                                                                      bool rows_only = false) const {
    auto conjuncts = f.column_conjuncts();
    const std::size_t conjunct_count = conjuncts.size();
    const auto used = indexed_conjuncts(std::move(conjuncts));
    if (used.empty()) return std::nullopt;
    std::set<std::uint64_t> covered(fragments.begin(), fragments.end());
    for (const auto& [h, part] : used) {
      std::set<std::uint64_t> c;
      for (auto id : h->covered)
        if (covered.count(id)) c.insert(id);
      covered = std::move(c);
    }
    // Taking a row costs about what scanning a few hundred to a thousand does
    // (bench_btree; strings cost most): when the indexes answer the whole filter the
    // rows are taken once (the output), and the scan is faster beyond one row in 256;
    // when the rest of the filter needs the rows' values too, beyond one in 1,024. An
    // index part keeping over one row in 128 is not read further. A prefilter answered
    // whole takes no row: reading an index entry costs a few scanned rows, so up to one
    // row in 4 comes from the indexes.
    std::uint64_t covered_rows = 0;
    for (auto id : covered) covered_rows += ds.physical_rows(id);
    std::vector<std::uint64_t> candidates;
    std::size_t answered = 0;
    for (std::size_t k = 0; k < used.size(); ++k) {
      auto answer = used[k].first->rows_where(used[k].second, covered_rows / (rows_only ? 4 : 128), ds);
      if (!answer) continue;
      auto ids = std::move(*answer);
      std::sort(ids.begin(), ids.end());
      if (answered++ == 0) {
        candidates = std::move(ids);
        continue;
      }
      std::vector<std::uint64_t> both;
      std::set_intersection(candidates.begin(), candidates.end(), ids.begin(), ids.end(), std::back_inserter(both));
      candidates = std::move(both);
    }
    // Parts the indexes answered are exact; the rest of the filter is checked on the rows.
    const bool whole = answered == conjunct_count && f.covers_only_conjuncts();
    const std::uint64_t share = whole ? (rows_only ? 4 : 256) : 1024;
    if (answered == 0 || candidates.size() * share > covered_rows) return std::nullopt;
    // Rows deleted since the index was built leave, and so do rows whose live copy is
    // in a fragment the indexes do not cover (with stable row ids, a moved row's entry
    // holds its old values).
    const auto live = ds.live_rows();
    std::erase_if(candidates, [&](std::uint64_t id) { return !live->contains(id); });
    const auto addrs = ds.row_addresses(candidates);
    std::size_t n = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (covered.count(addrs[i] >> 32)) candidates[n++] = candidates[i];
    candidates.resize(n);
    auto out = std::make_shared<dataset::row_set>();
    if (!candidates.empty() && whole) {
      for (auto id : candidates) out->insert(id);
    } else if (!candidates.empty()) {
      const auto b = ds.take(candidates, f.columns());
      const auto keep = f.evaluate(b.columns);
      for (std::size_t i = 0; i < keep.size(); ++i)
        if (keep[i]) out->insert(candidates[i]);
    }
    std::vector<std::uint64_t> rest;
    for (auto id : fragments)
      if (!covered.count(id)) rest.push_back(id);
    if (!rest.empty())
      for (auto id : rows_matching(ds, f, rest)->to_vector()) out->insert(id);
    return out;
  }

  // The live rows of `fragments` where filter f is true.
  std::shared_ptr<const dataset::row_set> rows_where(const expr::filter& f, const std::vector<std::uint64_t>& fragments) const {
    std::string key = f.text();
    key += '\0';
    for (auto id : fragments) key += std::to_string(id) + ",";
    {
      std::lock_guard lock(mu);
      for (auto it = filters.begin(); it != filters.end(); ++it)
        if (it->first == key) {
          filters.splice(filters.begin(), filters, it);
          return it->second;
        }
    }
    auto indexed = indexed_rows(f, fragments, true);
    auto rows = indexed ? std::move(*indexed) : rows_matching(ds, f, fragments);
    std::lock_guard lock(mu);
    if (options.filter_cache_entries == 0) return rows;
    filters.emplace_front(std::move(key), rows);
    while (filters.size() > options.filter_cache_entries) filters.pop_back();
    return rows;
  }

  // The vectors of `fragments`' rows, held while they fit the table's budget; nullptr
  // when they do not (the search then reads them). With bounds for an exact search
  // under `distance`, or without (nullopt: for refine).
  std::shared_ptr<const vector_rows> rows_of(const std::string& column, const std::vector<std::uint64_t>& fragments,
                                             std::optional<simd::distance_type> distance) const {
    // Bounds differ for cosine (normalised rows) and l2 / dot (raw rows).
    std::string key = column + (!distance                                  ? "/refine"
                                : *distance == simd::distance_type::cosine ? "/cosine"
                                                                           : "/raw");
    for (auto f : fragments) key += "," + std::to_string(f);
    {
      std::lock_guard lock(mu);
      auto it = vectors.find(key);
      if (it != vectors.end()) return it->second;
    }
    const auto vt = column_vector_type(ds, column);
    std::uint64_t rows = 0;
    for (auto f : fragments) rows += ds.physical_rows(f);
    const std::uint64_t estimate = rows * (vt.dimension * element_bytes(vt.element) + sizeof(std::uint64_t));
    {
      std::lock_guard lock(mu);
      if (vector_bytes + estimate > options.vector_cache_bytes) return nullptr;
      vector_bytes += estimate;  // reserved while loading
    }
    std::shared_ptr<const vector_rows> loaded;
    try {
      auto rows = load_vector_rows(ds, column, fragments);
      if (distance) rows.bounds = build_bounds(rows, *distance);
      loaded = std::make_shared<const vector_rows>(std::move(rows));
    } catch (...) {
      std::lock_guard lock(mu);
      vector_bytes -= estimate;
      throw;
    }
    std::lock_guard lock(mu);
    vector_bytes = vector_bytes - estimate + loaded->bytes();
    return vectors.emplace(key, std::move(loaded)).first->second;
  }

  // The vectors refine re-ranks with for index h on `column`: the rows of the fragments
  // it covers, held while they fit the budget (nullptr when they do not).
  std::shared_ptr<const vector_rows> refine_vectors(const std::string& column, const vector_index_handle& h) const {
    std::lock_guard lock(refine_mu);
    const auto it = refine_rows.find(&h);
    if (it != refine_rows.end()) return it->second;
    auto rows = rows_of(column, h.covered, std::nullopt);
    return refine_rows.emplace(&h, std::move(rows)).first->second;
  }

  // The vector index on `column` (or named `name`); nullptr when the column has none.
  std::shared_ptr<const vector_index_handle> vector_index(const std::string& column, const std::string& name) const {
    const auto key = std::make_pair(column, name);
    {
      std::lock_guard lock(mu);
      auto it = indexes.find(key);
      if (it != indexes.end()) return it->second;
    }
    auto h = open_index(column, name);
    std::lock_guard lock(mu);
    return indexes.emplace(key, std::move(h)).first->second;
  }

 private:
  std::shared_ptr<const vector_index_handle> open_index(const std::string& column, const std::string& name) const {
    const auto all = index::list_indices(ds);
    std::string chosen, names;
    for (const auto& i : all) {
      names += (names.empty() ? "" : ", ") + i.name;
      const bool match = name.empty() ? (!i.columns.empty() && i.columns[0] == column && i.index_type.rfind("IVF_", 0) == 0)
                                      : i.name == name;
      if (match && chosen.empty()) chosen = i.name;
    }
    if (chosen.empty()) {
      if (name.empty()) return nullptr;
      throw invalid_input_error("dataset '" + ds.path() + "' has no index named '" + name +
                                "' (indexes: " + (names.empty() ? std::string("none") : names) + ")");
    }
    auto h = std::make_shared<vector_index_handle>();
    h->name = chosen;
    std::vector<std::shared_ptr<index::ivf_searcher>> searchers;
    std::vector<std::vector<std::uint64_t>> frags;
    std::set<std::uint64_t> covered;
    bool all_covered = false;
    for (const auto& i : all) {
      if (i.name != chosen) continue;
      if (!name.empty() && (i.columns.empty() || i.columns[0] != column))
        throw invalid_input_error("index '" + name + "' is on column '" + (i.columns.empty() ? "" : i.columns[0]) +
                                  "', not '" + column + "'");
      const auto uuid = i.uuid.to_string();
      index::index_segment seg;
      {
        std::lock_guard lock(segments->mu);
        auto it = segments->opened.find(uuid);
        if (it != segments->opened.end()) seg = it->second;
      }
      if (!seg.searcher) {
        seg = index::open_index_segment(ds.path(), i);
        std::lock_guard lock(segments->mu);
        seg = segments->opened.emplace(uuid, seg).first->second;
      }
      h->index_type = i.index_type;
      h->metric = seg.index_file.distance;
      searchers.push_back(seg.searcher);
      frags.push_back(i.fragment_ids);
      if (!i.fragment_bitmap_present) all_covered = true;  // Lance: such a segment covers every fragment
      covered.insert(i.fragment_ids.begin(), i.fragment_ids.end());
    }
    h->num_segments = searchers.size();
    const bool addresses = searchers.size() > 1 && !ds.stable_row_ids();
    h->searcher = std::make_unique<index::segmented_searcher>(std::move(searchers), std::move(frags), addresses);
    std::set<std::uint64_t> present;
    for (const auto& f : ds.manifest().fragments) {
      present.insert(f.id);
      if (all_covered || covered.count(f.id)) {
        h->covered.push_back(f.id);
        if (f.deletion_file && ds.deleted_rows(f.id).size() > 0) h->needs_mask = true;
      } else {
        h->unindexed.push_back(f.id);
      }
    }
    for (auto id : covered)
      if (!present.count(id)) h->needs_mask = true;
    if (h->needs_mask) h->mask = ds.stable_row_ids() ? live_ids_of(ds, h->covered) : ds.live_rows();
    return h;
  }
};

// ---- output columns ----

struct output_column {
  enum class kind : std::uint8_t { field, distance, row_id, row_address } k = kind::field;
  std::string name;                   // as the result names it
  std::size_t top = 0;                // top-level field
  std::vector<std::size_t> members;   // struct members below it (a.b.c)
  arrow::field field;                 // the result's field
};

inline std::string valid_columns(const arrow::schema& s) {
  std::string out;
  for (const auto& f : s.fields) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

// The result's columns for a request (Lance's order: the selected columns, `_distance`
// after them unless selected, `_rowid` last when with_row_id).
inline std::vector<output_column> output_columns(const dataset::dataset& ds, const request& r) {
  const auto& s = ds.schema();
  std::vector<std::string> names = r.columns;
  if (names.empty())
    for (const auto& f : s.fields) names.push_back(f.name);
  const bool vector = r.nearest.has_value();
  if (vector && std::find(names.begin(), names.end(), "_distance") == names.end()) names.push_back("_distance");
  if (r.with_row_id) {
    names.erase(std::remove(names.begin(), names.end(), std::string(dataset::row_id_column)), names.end());
    names.push_back(std::string(dataset::row_id_column));
  }
  std::vector<output_column> out;
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (!seen.insert(n).second) throw invalid_input_error("column '" + n + "' is selected twice");
    output_column c;
    c.name = n;
    if (n == "_distance") {
      if (!vector) throw invalid_input_error("'_distance' exists only in a vector search (nearest)");
      c.k = output_column::kind::distance;
      c.field = arrow::field{n, arrow::float32(), true, {}};
      out.push_back(std::move(c));
      continue;
    }
    if (n == dataset::row_id_column || n == dataset::row_address_column) {
      c.k = n == dataset::row_id_column ? output_column::kind::row_id : output_column::kind::row_address;
      c.field = arrow::field{n, arrow::uint64(), true, {}};
      out.push_back(std::move(c));
      continue;
    }
    // A top-level column by its whole name, else a path of struct fields.
    std::size_t top = 0;
    while (top < s.fields.size() && s.fields[top].name != n) ++top;
    if (top < s.fields.size()) {
      c.top = top;
      c.field = s.fields[top];
      out.push_back(std::move(c));
      continue;
    }
    std::vector<std::string> path;
    for (std::size_t b = 0;;) {
      const auto e = n.find('.', b);
      path.push_back(n.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    top = 0;
    while (top < s.fields.size() && s.fields[top].name != path[0]) ++top;
    if (path.size() < 2 || top == s.fields.size())
      throw invalid_input_error("dataset '" + ds.path() + "' has no column '" + n + "' (columns: " + valid_columns(s) + ")");
    c.top = top;
    arrow::field f = s.fields[top];
    for (std::size_t k = 1; k < path.size(); ++k) {
      std::size_t m = 0;
      while (f.type->id == arrow::type_id::struct_ && m < f.type->children.size() && f.type->children[m].name != path[k])
        ++m;
      if (f.type->id != arrow::type_id::struct_ || m == f.type->children.size())
        throw invalid_input_error("dataset '" + ds.path() + "' has no column '" + n + "' ('" + f.name +
                                  "' has no field '" + path[k] + "')");
      c.members.push_back(m);
      const bool nullable = f.nullable;
      f = f.type->children[m];
      f.nullable = f.nullable || nullable;
    }
    f.name = n;
    c.field = std::move(f);
    out.push_back(std::move(c));
  }
  return out;
}

// The top-level fields the output columns read, in schema order.
inline std::vector<std::string> fields_read(const dataset::dataset& ds, const std::vector<output_column>& cols,
                                            const expr::filter* filter) {
  std::set<std::size_t> tops;
  for (const auto& c : cols)
    if (c.k == output_column::kind::field) tops.insert(c.top);
  const auto& s = ds.schema();
  if (filter)
    for (const auto& n : filter->columns())
      for (std::size_t i = 0; i < s.fields.size(); ++i)
        if (s.fields[i].name == n) tops.insert(i);
  std::vector<std::string> out;
  for (auto i : tops) out.push_back(s.fields[i].name);
  return out;
}

// A struct's field as its own array: rows where a struct above it is NULL are NULL.
inline arrow::array_ptr member_array(const arrow::array_ptr& top, const std::vector<std::size_t>& members,
                                     const arrow::type_ptr& type) {
  if (members.empty()) return top;
  const std::int64_t n = top->length;
  std::vector<std::uint8_t> valid(std::size_t(n), 1);
  bool nulls = false;
  const arrow::array_data* a = top.get();
  std::int64_t at = 0;  // logical row of `a` for row 0
  const auto and_valid = [&](const arrow::array_data& x, std::int64_t from) {
    if (x.validity() == nullptr || x.null_count == 0) return;
    for (std::int64_t r = 0; r < n; ++r)
      if (!x.is_valid(from + r)) {
        valid[std::size_t(r)] = 0;
        nulls = true;
      }
  };
  arrow::array_ptr leaf;
  for (std::size_t k = 0; k < members.size(); ++k) {
    and_valid(*a, at);
    at += a->offset;
    leaf = a->children.at(members[k]);
    a = leaf.get();
  }
  auto sliced = arrow::slice(leaf, at, n);
  if (!nulls) return sliced;
  // Copied (offset 0), then NULL where an enclosing struct is.
  auto copy = arrow::take_runs(sliced, {{0, n}}, type);
  auto out = std::make_shared<arrow::array_data>(*copy);
  aligned_buffer bits;
  bits.resize(std::size_t((n + 7) / 8));
  std::int64_t null_count = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    const bool ok = valid[std::size_t(r)] && copy->is_valid(r);
    arrow::set_bit(bits.data(), r, ok);
    null_count += !ok;
  }
  if (out->buffers.empty()) out->buffers.emplace_back();
  out->buffers[0] = shared_bytes(std::move(bits));
  out->null_count = null_count;
  return out;
}

inline std::shared_ptr<const arrow::schema> output_schema(const dataset::dataset& ds,
                                                          const std::vector<output_column>& cols) {
  auto s = std::make_shared<arrow::schema>();
  for (const auto& c : cols) s->fields.push_back(c.field);
  s->metadata = ds.schema().metadata;
  return s;
}

// The output batch of rows whose top-level fields are in `read` (named as in `names`),
// with their row ids, addresses and distances.
inline arrow::record_batch assemble(const std::shared_ptr<const arrow::schema>& schema,
                                    const std::vector<output_column>& cols, const arrow::record_batch& read,
                                    const std::vector<std::string>& names, const dataset::dataset& ds,
                                    const arrow::array_ptr& row_ids, const arrow::array_ptr& row_addresses,
                                    const arrow::array_ptr& distances) {
  arrow::record_batch out;
  out.schema = schema;
  for (const auto& c : cols) {
    switch (c.k) {
      case output_column::kind::distance: out.columns.push_back(distances); break;
      case output_column::kind::row_id: out.columns.push_back(row_ids); break;
      case output_column::kind::row_address: out.columns.push_back(row_addresses); break;
      case output_column::kind::field: {
        const auto& top = ds.schema().fields[c.top].name;
        const auto at = std::size_t(std::find(names.begin(), names.end(), top) - names.begin());
        out.columns.push_back(member_array(read.columns.at(at), c.members, c.field.type));
        break;
      }
    }
  }
  return out;
}

// ---- filtered scans ----

}  // namespace detail

namespace detail {

struct scan_state {
  std::shared_ptr<const arrow::schema> schema;
  // A finished answer (a vector search), handed out once.
  std::optional<arrow::record_batch> ready;
  // A scan.
  std::optional<dataset::scanner> sc;
  std::optional<expr::filter> filter;
  const dataset::dataset* ds = nullptr;
  std::shared_ptr<const dataset::dataset> keep;  // keeps ds alive
  std::vector<output_column> cols;
  std::vector<std::string> names;  // the scanned fields, as the scan's batches hold them first
  std::uint64_t skip = 0, left = std::numeric_limits<std::uint64_t>::max();
  bool row_ids = false, row_addresses = false;

  std::optional<arrow::record_batch> next() {
    if (ready) {
      auto b = std::move(*ready);
      ready.reset();
      return b;
    }
    if (!sc) return std::nullopt;
    while (left > 0) {
      auto b = sc->next();
      if (!b) return std::nullopt;
      std::size_t n = std::size_t(b->num_rows());
      arrow::record_batch kept = std::move(*b);
      if (filter) {
        std::vector<arrow::array_ptr> in;
        for (const auto& c : filter->columns())
          in.push_back(kept.columns[std::size_t(std::find(names.begin(), names.end(), c) - names.begin())]);
        std::vector<std::uint8_t> mask(n);
        filter->evaluate(in, 0, n, mask.data());
        kept = expr::select_rows(kept, mask);
        n = std::size_t(kept.num_rows());
      }
      if (skip >= n) {
        skip -= n;
        continue;
      }
      const std::size_t from = std::size_t(skip), take = std::size_t(std::min<std::uint64_t>(left, n - from));
      skip = 0;
      left -= take;
      if (from != 0 || take != n)
        for (auto& c : kept.columns) c = arrow::slice(c, std::int64_t(from), std::int64_t(take));
      const std::size_t extra = std::size_t(row_ids) + std::size_t(row_addresses);
      const std::size_t base = kept.columns.size() - extra;
      const arrow::array_ptr ids = row_ids ? kept.columns[base] : nullptr;
      const arrow::array_ptr addrs = row_addresses ? kept.columns[base + (row_ids ? 1 : 0)] : nullptr;
      return assemble(schema, cols, kept, names, *ds, ids, addrs, nullptr);
    }
    return std::nullopt;
  }
};

// A filtered scan's answer from the rows an index path found: in scan order (fragment
// order, then offset), after `offset`, at most `limit`.
inline arrow::record_batch indexed_scan(const dataset::dataset& ds, const scan_state& st, const dataset::row_set& rows,
                                        std::uint64_t offset, std::optional<std::uint64_t> limit) {
  const auto ids = rows.to_vector();
  const auto addrs = ds.row_addresses(ids);
  std::map<std::uint64_t, std::uint64_t> position;
  for (const auto& f : ds.manifest().fragments) position.emplace(f.id, position.size());
  std::vector<std::size_t> order(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto key = [&](std::size_t i) { return std::pair(position.at(addrs[i] >> 32), addrs[i] & 0xFFFFFFFFull); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  const std::size_t from = std::size_t(std::min<std::uint64_t>(offset, order.size()));
  const std::size_t to = limit ? std::size_t(std::min<std::uint64_t>(order.size(), from + *limit)) : order.size();
  std::vector<std::uint64_t> a, id;
  for (std::size_t k = from; k < to; ++k) {
    a.push_back(addrs[order[k]]);
    id.push_back(ids[order[k]]);
  }
  const auto kept = ds.take_addresses(a, st.names);
  return assemble(st.schema, st.cols, kept, st.names, ds, st.row_ids ? arrow::make_array<std::uint64_t>(id) : nullptr,
                  st.row_addresses ? arrow::make_array<std::uint64_t>(a) : nullptr, nullptr);
}

}  // namespace detail

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE batch_reader::batch_reader(std::unique_ptr<detail::scan_state> st) : st_(std::move(st)) {}
LANCET_INLINE batch_reader::batch_reader(batch_reader&&) noexcept = default;
LANCET_INLINE batch_reader& batch_reader::operator=(batch_reader&&) noexcept = default;
LANCET_INLINE batch_reader::~batch_reader() = default;
LANCET_INLINE const std::shared_ptr<const arrow::schema>& batch_reader::schema() const noexcept { return st_->schema; }
LANCET_INLINE std::optional<arrow::record_batch> batch_reader::next() { return st_->next(); }

LANCET_INLINE table table::open(const std::string& path, std::optional<std::uint64_t> version,
                                dataset::source_factory sources, table_options options) {
  return table(dataset::dataset::open(path, version, std::move(sources)), options);
}

LANCET_INLINE table::table(dataset::dataset ds, table_options options) {
  st_ = std::make_shared<detail::table_state>(std::move(ds), options);
}

LANCET_INLINE const dataset::dataset& table::dataset() const noexcept { return st_->ds; }

LANCET_INLINE table table::latest() const {
  table t(st_->ds.latest(), st_->options);
  t.st_->segments = st_->segments;
  return t;
}

LANCET_INLINE builder table::query() const { return builder(*this); }

LANCET_INLINE dataset::row_finder indexed_row_finder() {
  return [](const dataset::dataset& d, const expr::filter& f) -> std::optional<std::vector<std::uint64_t>> {
    const detail::table_state st(d, table_options{});
    std::vector<std::uint64_t> all;
    for (const auto& frag : d.manifest().fragments) all.push_back(frag.id);
    const auto rows = st.indexed_rows(f, all, true);
    if (!rows) return std::nullopt;
    return (*rows)->to_vector();
  };
}

LANCET_INLINE builder table::search(const std::string& column, std::span<const float> vector) const {
  builder b(*this);
  b.nearest(column, vector);
  return b;
}
LANCET_INLINE builder table::search(const std::string& column, std::span<const double> vector) const {
  builder b(*this);
  b.nearest(column, vector);
  return b;
}

namespace detail {

// Keeps the rows of `hits` where the filter is true (a postfilter), in order.
inline void postfilter(const dataset::dataset& ds, const expr::filter& f, std::vector<index::neighbor>& hits) {
  if (hits.empty()) return;
  std::vector<std::uint8_t> mask(hits.size(), 1);
  if (f.columns().empty()) {
    std::uint8_t all = 0;
    f.evaluate({}, 0, 1, &all);
    if (!all) hits.clear();
    return;
  }
  std::vector<std::uint64_t> ids;
  for (const auto& h : hits) ids.push_back(h.row_id);
  const auto b = ds.take(ids, f.columns());
  f.evaluate(b.columns, 0, hits.size(), mask.data());
  std::size_t w = 0;
  for (std::size_t i = 0; i < hits.size(); ++i)
    if (mask[i]) hits[w++] = hits[i];
  hits.resize(w);
}

struct nearest_plan {
  std::shared_ptr<const vector_index_handle> index;  // null: an exact search
  simd::distance_type metric = simd::distance_type::l2;
  bool flat_part = false;                           // rows no index covers, searched exactly
  std::optional<std::vector<std::uint64_t>> flat_fragments;  // nullopt: every fragment
  std::string why_exact;                            // why the index is not used
  vector_column_type column;
};

// The query's values rounded to the column's element type (f16, f32).
inline std::vector<double> in_element_type(const std::vector<double>& v, vector_element e) {
  std::vector<double> out(v);
  if (e == vector_element::f32)
    for (auto& x : out) x = double(float(x));
  else if (e == vector_element::f16)
    for (auto& x : out) x = double(simd::f16(float(x)).to_float());
  return out;
}

inline nearest_plan plan_nearest(const table_state& t, const request& r) {
  const auto& n = *r.nearest;
  const auto& ds = t.ds;
  nearest_plan p;
  const auto& s = ds.schema();
  std::size_t field = 0;
  while (field < s.fields.size() && s.fields[field].name != n.column) ++field;
  if (field == s.fields.size())
    throw invalid_input_error("dataset '" + ds.path() + "' has no column '" + n.column + "' (columns: " +
                              valid_columns(s) + ")");
  p.column = vector_type_of(*s.fields[field].type, n.column);
  if (n.vector.size() != p.column.dimension)
    throw invalid_input_error("the query vector has " + std::to_string(n.vector.size()) + " values; column '" +
                              n.column + "' holds vectors of " + std::to_string(p.column.dimension));
  if (n.maximum_nprobes && *n.maximum_nprobes < n.minimum_nprobes)
    throw invalid_input_error("minimum_nprobes (" + std::to_string(n.minimum_nprobes) +
                              ") must be less than or equal to maximum_nprobes (" +
                              std::to_string(*n.maximum_nprobes) + ")");
  // fast_search uses the index even when bypass_vector_index is set (as LanceDB).
  if (!n.bypass_vector_index || n.fast_search) p.index = t.vector_index(n.column, n.index_name);
  else p.why_exact = "bypass_vector_index";
  if (p.index && n.distance_type && *n.distance_type != p.index->metric && !n.fast_search) {
    p.why_exact = std::string("the query's distance ") + simd::distance_name(*n.distance_type) + " is not the index's (" +
                  simd::distance_name(p.index->metric) + ")";
    p.index = nullptr;
  }
  if (!p.index && p.why_exact.empty()) p.why_exact = "no vector index on '" + n.column + "'";
  p.metric = p.index ? p.index->metric : n.distance_type.value_or(simd::distance_type::l2);
  if (p.index) {
    p.flat_part = !n.fast_search && !p.index->unindexed.empty();
    if (p.flat_part) p.flat_fragments = p.index->unindexed;
  } else {
    p.flat_part = !n.fast_search;  // fast_search without an index finds nothing (as Lance 12)
  }
  return p;
}

// The output of a vector search for its hits (nearest first).
inline arrow::record_batch output_batch(const dataset::dataset& ds, const std::vector<output_column>& cols,
                                        const std::vector<index::neighbor>& hits, const std::string&) {
  std::vector<std::uint64_t> ids;
  std::vector<float> dist;
  for (const auto& h : hits) {
    ids.push_back(h.row_id);
    dist.push_back(h.distance);
  }
  const auto names = fields_read(ds, cols, nullptr);
  const auto read = names.empty() ? arrow::record_batch{} : ds.take(ids, names);
  arrow::array_ptr addrs;
  for (const auto& c : cols)
    if (c.k == output_column::kind::row_address) {
      if (ds.stable_row_ids())
        throw unsupported_error("'_rowaddr' in a vector search's output needs row addresses; dataset '" + ds.path() +
                                "' uses stable row ids (select '_rowid')");
      addrs = arrow::make_array<std::uint64_t>(ids);
    }
  return assemble(output_schema(ds, cols), cols, read, names, ds, arrow::make_array<std::uint64_t>(ids), addrs,
                  arrow::make_array<float>(dist));
}

inline arrow::record_batch run_nearest(const table_state& t, const request& r) {
  const auto& n = *r.nearest;
  const auto& ds = t.ds;
  const std::size_t limit = r.limit.value_or(10);
  if (limit == 0) throw invalid_input_error("a vector search needs a limit (k) of at least 1");
  const std::size_t k = limit + r.offset;
  std::optional<expr::filter> filter;
  if (!r.filter.empty()) filter = expr::filter::compile(r.filter, ds.schema());
  const auto cols = output_columns(ds, r);
  const auto plan = plan_nearest(t, r);
  // Lance casts the query to the column's element type first.
  const auto cast = in_element_type(n.vector, plan.column.element);
  const double* q = cast.data();
  const bool pre = filter && r.prefilter;

  std::vector<index::neighbor> hits;
  if (plan.index) {
    index::search_params sp;
    sp.k = k;
    sp.nprobes = n.minimum_nprobes;
    sp.maximum_nprobes = n.maximum_nprobes ? *n.maximum_nprobes : 0;
    sp.ef = n.ef;
    sp.refine_factor = n.refine_factor;
    sp.distance_lower = n.distance_lower;
    sp.distance_upper = n.distance_upper;
    sp.pool = r.pool;
    // Refine re-ranks with the original vectors: the user's, else the covered rows'
    // held in memory while they fit the table's budget (as FAISS's IndexRefineFlat),
    // else read from the files.
    std::shared_ptr<const vector_rows> held;
    if (!n.fetch && n.refine_factor > 0) held = t.refine_vectors(n.column, *plan.index);
    if (n.fetch) sp.fetch = n.fetch;
    else sp.fetch = [&](std::span<const std::uint64_t> ids, double* out) {
      if (!held || !fetch_held_vectors(*held, ids, out)) fetch_vectors(ds, n.column, ids, out);
    };
    // A prefilter's rows of the fragments the index covers (as Lance's mask: its size
    // bounds the late search), else the live rows where some are deleted.
    std::optional<index::row_filter> rows;
    if (pre) rows = index::row_filter::in(t.rows_where(*filter, plan.index->covered));
    else if (plan.index->needs_mask) rows = index::row_filter::in(plan.index->mask);
    sp.filter = rows ? &*rows : nullptr;
    if (sp.nprobes == 0) return output_batch(ds, cols, {}, n.column);
    hits = plan.index->searcher->search(q, plan.column.dimension, sp);
  }
  if (plan.flat_part) {
    flat_search_params fp;
    fp.distance = plan.metric;
    fp.k = k;
    fp.distance_lower = n.distance_lower;
    fp.distance_upper = n.distance_upper;
    // Lance unions both parts and computes every candidate's distance exactly: the
    // index's candidates first, their k-th distance bounding the exact search.
    index::topk best(k);
    if (plan.index) {
      std::vector<std::uint64_t> ids;
      for (const auto& h : hits) ids.push_back(h.row_id);
      const auto d = exact_distances(ds, n.column, ids, q, plan.metric);
      for (std::size_t i = 0; i < hits.size(); ++i) {
        const float x = d[i];
        if ((n.distance_lower && !(x >= *n.distance_lower)) || (n.distance_upper && !(x < *n.distance_upper))) continue;
        best.push(x, hits[i].row_id);
      }
      if (best.full()) fp.bound = best.worst().distance;
    }
    std::vector<std::uint64_t> every;
    if (!plan.flat_fragments)
      for (const auto& fr : ds.manifest().fragments) every.push_back(fr.id);
    const auto& searched = plan.flat_fragments ? *plan.flat_fragments : every;
    const auto allowed = pre ? t.rows_where(*filter, searched) : nullptr;
    fp.allowed = allowed.get();
    const auto held = t.rows_of(n.column, searched, plan.metric);
    const auto exact = held ? flat_search(*held, q, fp) : flat_search(ds, n.column, plan.flat_fragments, q, fp);
    // The two parts cover disjoint fragments: a row can come from one of them only.
    std::unordered_set<std::uint64_t> from_index;
    for (const auto& h : hits) from_index.insert(h.row_id);
    for (const auto& e : exact)
      if (!from_index.count(e.row_id)) best.push(e.distance, e.row_id);
    hits = best.sorted();
  }
  if (filter && !r.prefilter) postfilter(ds, *filter, hits);
  if (hits.size() > k) hits.resize(k);
  hits.erase(hits.begin(), hits.begin() + std::ptrdiff_t(std::min(r.offset, hits.size())));
  if (hits.size() > limit) hits.resize(limit);
  return output_batch(ds, cols, hits, n.column);
}

}  // namespace detail

LANCET_INLINE batch_reader table::execute(const request& r) const {
  const auto& ds = st_->ds;
  auto st = std::make_unique<detail::scan_state>();
  st->ds = &st_->ds;
  if (r.nearest) {
    auto b = detail::run_nearest(*st_, r);
    st->schema = b.schema;
    st->ready = std::move(b);
    return batch_reader(std::move(st));
  }
  st->cols = detail::output_columns(ds, r);
  st->schema = detail::output_schema(ds, st->cols);
  if (!r.filter.empty()) st->filter = expr::filter::compile(r.filter, ds.schema());
  st->names = detail::fields_read(ds, st->cols, st->filter ? &*st->filter : nullptr);
  dataset::scan_options so;
  so.columns = st->names;
  if (so.columns.empty()) so.columns = {ds.schema().fields.at(0).name};
  st->names = so.columns;
  for (const auto& c : st->cols) {
    st->row_ids = st->row_ids || c.k == detail::output_column::kind::row_id;
    st->row_addresses = st->row_addresses || c.k == detail::output_column::kind::row_address;
  }
  so.with_row_id = st->row_ids;
  so.with_row_address = st->row_addresses;
  // A table keeps its dataset alive while its reader runs.
  st->keep = std::shared_ptr<const dataset::dataset>(st_, &st_->ds);
  if (st->filter) {  // scalar indexes answering parts of the filter: their rows, checked, in scan order
    std::vector<std::uint64_t> all;
    for (const auto& f : ds.manifest().fragments) all.push_back(f.id);
    if (auto rows = st_->indexed_rows(*st->filter, all)) {
      st->ready = detail::indexed_scan(ds, *st, **rows, r.offset, r.limit);
      return batch_reader(std::move(st));
    }
  }
  if (st->filter) {
    st->skip = r.offset;
    st->left = r.limit.value_or(std::numeric_limits<std::uint64_t>::max());
  } else {
    so.offset = r.offset;
    so.limit = r.limit;
  }
  if (st->left > 0 && (!so.limit || *so.limit > 0)) st->sc.emplace(ds.scan(std::move(so)));
  return batch_reader(std::move(st));
}

LANCET_INLINE arrow::record_batch table::to_batch(const request& r) const {
  auto reader = execute(r);
  std::vector<arrow::record_batch> parts;
  while (auto b = reader.next()) parts.push_back(std::move(*b));
  if (parts.size() == 1) return std::move(parts[0]);
  arrow::record_batch out;
  out.schema = reader.schema();
  for (std::size_t c = 0; c < out.schema->fields.size(); ++c) {
    std::vector<arrow::array_ptr> cols;
    for (const auto& p : parts) cols.push_back(p.columns[c]);
    out.columns.push_back(cols.empty() ? arrow::null_array_of(out.schema->fields[c].type, 0)
                                       : arrow::concat(cols, out.schema->fields[c].type));
  }
  return out;
}

LANCET_INLINE std::string table::explain(const request& r) const {
  const auto& ds = st_->ds;
  std::string out = "dataset '" + ds.path() + "' version " + std::to_string(ds.version()) + "\n";
  if (!r.filter.empty()) (void)expr::filter::compile(r.filter, ds.schema());
  if (!r.nearest) {
    out += "scan of " + std::to_string(ds.manifest().fragments.size()) + " fragments";
    if (!r.filter.empty()) out += ", filter: " + r.filter;
    out += "\n";
    if (!r.filter.empty())
      for (const auto& [h, part] : st_->indexed_conjuncts(expr::filter::compile(r.filter, ds.schema())))
        out += h->type + " '" + h->name + "' on '" + h->column + "' over " + std::to_string(h->covered.size()) +
               " fragments answers part of the filter (when that part keeps under one row in 1,024)\n";
    return out;
  }
  const auto p = detail::plan_nearest(*st_, r);
  const auto& n = *r.nearest;
  if (p.index) {
    out += "index '" + p.index->name + "' (" + p.index->index_type + ", " + simd::distance_name(p.metric) + ", " +
           std::to_string(p.index->num_segments) + (p.index->num_segments == 1 ? " segment" : " segments") + ") over " +
           std::to_string(p.index->covered.size()) + " fragments: nprobes " + std::to_string(n.minimum_nprobes) +
           (n.maximum_nprobes ? ".." + std::to_string(*n.maximum_nprobes) : std::string("..all"));
    if (n.refine_factor) out += ", refine x" + std::to_string(n.refine_factor);
    if (!r.filter.empty() && r.prefilter) out += ", prefilter: " + r.filter;
    else if (p.index->needs_mask) out += ", deleted rows masked";
    out += "\n";
  } else {
    out += "exact search (" + p.why_exact + ")\n";
  }
  if (p.flat_part) {
    if (p.flat_fragments) {
      out += "exact search over " + std::to_string(p.flat_fragments->size()) + " unindexed fragments:";
      for (auto f : *p.flat_fragments) out += " " + std::to_string(f);
      out += "\n";
    } else {
      out += "exact search over every fragment (" + std::string(simd::distance_name(p.metric)) + ")\n";
    }
  } else if (p.index && n.fast_search && !p.index->unindexed.empty()) {
    out += "fast_search: " + std::to_string(p.index->unindexed.size()) + " unindexed fragments not searched\n";
  }
  if (!r.filter.empty() && !r.prefilter) out += "postfilter: " + r.filter + "\n";
  return out;
}

#endif  // LANCET_HEADER_ONLY

}  // namespace lancet::query
