// Repetition and definition levels (Lance 2.1+), both directions.
//
// A top-level field is shredded into one column per leaf (struct and list fields have
// no column). Each leaf column describes its path root -> leaf with one layer per node,
// stored innermost first:
//   item / struct : ALL_VALID_ITEM, or NULLABLE_ITEM when the page has nulls there
//   list          : ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST or NULL_AND_EMPTY_LIST
// Definition level 0 means "present and valid down to the leaf"; counting outwards,
// each layer that can be null or empty adds its levels (null before empty). Repetition
// level r > 0 starts a new element at every list whose (1-based, innermost = 1) depth
// is <= r; the top-level list's number, max_rep, starts a new row. A level slot exists
// for every leaf value and for every null or empty list (which has no value); a null
// struct keeps its children's slots down to the first list below it.
//
// Decoding ("unravelling") turns levels back into, per node, element validity and,
// for lists, offsets.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lancet/core/ascii.hpp"
#include "lancet/arrow/array.hpp"
#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/arrow/concat.hpp"
#include "lancet/encoding/structural/data_block.hpp"
#include "lancet/pb/encodings_v2_1.hpp"

namespace lancet::encoding::structural {

using layer = pb::enc21::rep_def_layer;

inline bool is_list_layer(layer l) noexcept {
  return l == layer::all_valid_list || l == layer::nullable_list || l == layer::emptyable_list ||
         l == layer::null_and_empty_list;
}
inline std::uint16_t def_levels_of(layer l) noexcept {
  switch (l) {
    case layer::nullable_item: case layer::nullable_list: case layer::emptyable_list: return 1;
    case layer::null_and_empty_list: return 2;
    default: return 0;
  }
}
inline bool layer_nullable(layer l) noexcept {
  return l == layer::nullable_item || l == layer::nullable_list || l == layer::null_and_empty_list;
}

// Level numbers derived from a layer stack (innermost first).
struct level_scheme {
  std::vector<layer> layers;
  std::vector<std::uint16_t> def_base;   // per layer: levels used by the layers inside it
  std::vector<std::uint16_t> rep_threshold;  // per layer: list layers at or inside it (T(k))
  std::uint16_t max_def = 0;
  std::uint16_t max_rep = 0;
  std::uint16_t max_visible_def = 0;     // slots with def <= this carry a leaf value

  explicit level_scheme(std::vector<layer> ls) : layers(std::move(ls)) {
    std::uint32_t d = 0, r = 0;
    for (const auto l : layers) {
      if (l == layer::unspecified || std::int32_t(l) > 6)
        throw corrupt_error("unknown repetition/definition layer " + std::to_string(std::int32_t(l)));
      def_base.push_back(std::uint16_t(d));
      d += def_levels_of(l);
      if (is_list_layer(l)) ++r;
      rep_threshold.push_back(std::uint16_t(r));
      if (d > 0x7FFF || r > 0x7FFF) throw corrupt_error("too many repetition/definition layers");
    }
    max_def = std::uint16_t(d);
    max_rep = std::uint16_t(r);
    max_visible_def = max_def;
    for (std::size_t k = 0; k < layers.size(); ++k)
      if (is_list_layer(layers[k])) {
        max_visible_def = def_base[k];
        break;
      }
  }
  std::uint16_t null_level(std::size_t k) const noexcept { return std::uint16_t(def_base[k] + 1); }
  std::uint16_t empty_level(std::size_t k) const noexcept {
    return std::uint16_t(def_base[k] + (layer_nullable(layers[k]) ? 2 : 1));
  }
  // Largest def value of a slot that is present at node k (has an element there).
  std::uint16_t present_limit(std::size_t k) const noexcept {
    for (std::size_t j = k + 1; j < layers.size(); ++j)
      if (is_list_layer(layers[j])) return def_base[j];
    return max_def;
  }
};

// ======================================================================================
// Encoding: shredding Arrow arrays
// ======================================================================================

// One node on the path from a top-level field to a leaf.
struct path_node {
  arrow::type_id id;
  std::size_t child = 0;  // struct: which child leads to the leaf
  std::string name;
};

// A struct stored as one column of packed rows (Lance's "lance-encoding:packed" field
// metadata, or the legacy "packed" = "true").
inline bool is_packed_struct(const arrow::field& f) {
  if (f.type->id != arrow::type_id::struct_ || f.type->children.empty()) return false;
  for (const auto& [k, v] : f.metadata) {
    if (k != "lance-encoding:packed" && k != "packed") continue;
    const std::string s = ascii_lower(v);
    if (s == "true" || s == "1" || s == "yes") return true;
  }
  return false;
}

// The path of each leaf column of a field, in column order (depth-first). Structs and
// lists are inner nodes; everything else (fixed-size lists included) is a leaf; a
// struct without children, or a packed struct, is a leaf too.
inline void leaf_paths(const arrow::field& f, std::vector<path_node>& prefix, std::vector<std::vector<path_node>>& out) {
  const auto id = f.type->id;
  if (id == arrow::type_id::struct_ && !f.type->children.empty() && !is_packed_struct(f)) {
    for (std::size_t i = 0; i < f.type->children.size(); ++i) {
      prefix.push_back({id, i, f.name});
      leaf_paths(f.type->children[i], prefix, out);
      prefix.pop_back();
    }
    return;
  }
  if (arrow::is_list_like(id)) {
    prefix.push_back({id, 0, f.name});
    leaf_paths(f.type->children.at(0), prefix, out);
    prefix.pop_back();
    return;
  }
  auto p = prefix;
  p.push_back({id, 0, f.name});
  out.push_back(std::move(p));
}
inline std::vector<std::vector<path_node>> leaf_paths(const arrow::field& f) {
  std::vector<path_node> prefix;
  std::vector<std::vector<path_node>> out;
  leaf_paths(f, prefix, out);
  return out;
}

// What a leaf column contributes to one page.
struct shredded_leaf {
  std::vector<layer> layers;
  std::vector<std::uint16_t> rep;  // empty when there is no list
  std::vector<std::uint16_t> def;  // empty when nothing can be null or empty
  std::uint64_t num_rows = 0;
  // Visible leaf values, as (array, first, count) runs in order.
  struct run {
    arrow::array_ptr array;
    std::int64_t begin = 0, count = 0;
  };
  std::vector<run> values;
  std::uint64_t num_values = 0;
  std::uint64_t leaf_nulls = 0;  // visible slots whose value is null (def != 0)
  std::uint64_t num_levels() const noexcept { return std::max(rep.size(), def.size()); }
};

}  // namespace lancet::encoding::structural

namespace lancet::encoding::detail {

// Arrays covering each node of the path (per input batch), for computing layer kinds.
inline bool node_has_nulls(const arrow::array_data& a) { return a.count_nulls() > 0; }

class shredder {
 public:
  shredder(const std::vector<structural::path_node>& path, const structural::level_scheme& scheme,
           structural::shredded_leaf& out)
      : path_(path), s_(scheme), out_(out), depth_(path.size() - 1) {}

  void row(const arrow::array_ptr& a, std::int64_t i) { walk(0, a, i, s_.max_rep, 0); }

 private:
  void emit(std::uint16_t rep, std::uint16_t def) {
    if (!out_.rep.empty() || s_.max_rep) out_.rep.push_back(rep);
    if (s_.max_def) out_.def.push_back(def);
  }
  void value(const arrow::array_ptr& a, std::int64_t i) {
    auto& v = out_.values;
    if (!v.empty() && v.back().array.get() == a.get() && v.back().begin + v.back().count == i) ++v.back().count;
    else v.push_back({a, i, 1});
    ++out_.num_values;
  }
  void walk(std::size_t d, const arrow::array_ptr& a, std::int64_t i, std::uint16_t rep, std::uint16_t def) {
    const std::size_t k = depth_ - d;
    const auto& n = path_[d];
    if (d == depth_) {
      if (def == 0 && s_.max_def && structural::layer_nullable(s_.layers[0]) && a->is_null(i)) def = s_.null_level(0);
      if (def) ++out_.leaf_nulls;
      emit(rep, def);
      value(a, i);
      return;
    }
    if (arrow::is_list_like(n.id)) {
      if (def) return emit(rep, def);
      if (a->is_null(i)) return emit(rep, s_.null_level(k));
      const auto b = a->value_offset(i), e = a->value_offset(i + 1);
      if (b == e) return emit(rep, s_.empty_level(k));
      const auto& child = a->children[0];
      const std::uint16_t inner = s_.rep_threshold[k - 1];
      for (auto j = b; j < e; ++j) walk(d + 1, child, j, j == b ? rep : inner, 0);
      return;
    }
    // struct
    if (def == 0 && structural::layer_nullable(s_.layers[k]) && a->is_null(i)) def = s_.null_level(k);
    walk(d + 1, a->children[n.child], a->offset + i, rep, def);
  }

  const std::vector<structural::path_node>& path_;
  const structural::level_scheme& s_;
  structural::shredded_leaf& out_;
  std::size_t depth_;
};

// Which nodes of a path hold a null or an empty list, seen the way Lance sees them: a
// struct's nulls are pushed down into its children (through nested structs, into a list
// child's validity), and the items of null lists are garbage that is never looked at.
// So a node below a nullable struct is nullable itself, and items under a null (or
// masked) list count for nothing. Lance's reader depends on this: a null struct above a
// list layer that is all-valid would be taken for a visible item.
class layer_scan {
 public:
  layer_scan(const std::vector<structural::path_node>& path, std::vector<bool>& nulls, std::vector<bool>& empties)
      : path_(path), nulls_(nulls), empties_(empties), last_(path.size() - 1) {}

  // Every element of `a` (a node at depth d), none of them masked from above.
  void all(std::size_t d, const arrow::array_ptr& a) {
    for (std::int64_t i = 0; i < a->length; ++i) one(d, a, i, false);
  }

 private:
  void one(std::size_t d, const arrow::array_ptr& a, std::int64_t i, bool masked) {
    const bool null = masked || a->is_null(i);
    if (null) nulls_[d] = true;
    if (d == last_) return;
    const auto& n = path_[d];
    if (arrow::is_list_like(n.id)) {
      if (null) return;  // garbage items (Lance filters them out)
      const auto b = a->value_offset(i), e = a->value_offset(i + 1);
      if (b == e) {
        empties_[d] = true;
        return;
      }
      const auto& child = a->children[0];
      if (d + 1 == last_) {
        // Leaf items: a null among them is all that matters.
        if (!nulls_[d + 1])
          for (auto j = b; j < e; ++j)
            if (child->is_null(j)) {
              nulls_[d + 1] = true;
              break;
            }
        return;
      }
      for (auto j = b; j < e; ++j) one(d + 1, child, j, false);
      return;
    }
    one(d + 1, a->children[n.child], a->offset + i, null);
  }

  const std::vector<structural::path_node>& path_;
  std::vector<bool>& nulls_;
  std::vector<bool>& empties_;
  std::size_t last_;
};

}  // namespace lancet::encoding::detail

namespace lancet::encoding::structural {

// The layers a leaf column takes for these batches (chosen from the data, as Lance does,
// struct nulls pushed down into children: see detail::layer_scan).
inline std::vector<layer> leaf_layers(const std::vector<path_node>& path, const std::vector<arrow::array_ptr>& batches) {
  const std::size_t n = path.size();
  std::vector<bool> nulls(n, false), empties(n, false);
  bool has_list = false;
  for (std::size_t d = 0; d + 1 < n; ++d) has_list |= arrow::is_list_like(path[d].id);
  if (!has_list) {
    // Structs down to the leaf: a node is nullable when it or a struct above it has nulls.
    std::vector<arrow::array_ptr> level = batches;
    for (std::size_t d = 0; d < n; ++d) {
      for (const auto& a : level)
        if (detail::node_has_nulls(*a)) nulls[d] = true;
      if (d > 0 && nulls[d - 1]) nulls[d] = true;
      if (d + 1 == n) break;
      std::vector<arrow::array_ptr> next;
      for (const auto& a : level) next.push_back(arrow::slice(a->children[path[d].child], a->offset, a->length));
      level = std::move(next);
    }
  } else {
    detail::layer_scan scan(path, nulls, empties);
    for (const auto& a : batches) scan.all(0, a);
  }
  std::vector<layer> out;
  for (std::size_t d = n; d-- > 0;) {
    if (arrow::is_list_like(path[d].id)) {
      out.push_back(nulls[d] ? (empties[d] ? layer::null_and_empty_list : layer::nullable_list)
                             : (empties[d] ? layer::emptyable_list : layer::all_valid_list));
    } else {
      out.push_back(nulls[d] ? layer::nullable_item : layer::all_valid_item);
    }
  }
  return out;
}

// Shreds the batches (top-level arrays of the field) into one leaf column's levels and values.
inline shredded_leaf shred(const std::vector<path_node>& path, const std::vector<arrow::array_ptr>& batches) {
  shredded_leaf out;
  out.layers = leaf_layers(path, batches);
  const level_scheme scheme(out.layers);
  for (const auto& b : batches) out.num_rows += std::uint64_t(b->length);
  if (scheme.max_rep == 0) {
    // No lists: one slot per row; the values are the leaf arrays themselves.
    std::vector<arrow::array_ptr> level = batches;
    std::vector<std::vector<arrow::array_ptr>> per_node;  // per depth
    for (std::size_t d = 0; d < path.size(); ++d) {
      per_node.push_back(level);
      if (d + 1 == path.size()) break;
      std::vector<arrow::array_ptr> next;
      for (const auto& a : level) next.push_back(arrow::slice(a->children[path[d].child], a->offset, a->length));
      level = std::move(next);
    }
    for (const auto& a : per_node.back())
      if (a->length) out.values.push_back({a, 0, a->length});
    out.num_values = out.num_rows;
    if (scheme.max_def) {
      out.def.assign(std::size_t(out.num_rows), 0);
      // Innermost first, so that an outer null overwrites an inner one.
      for (std::size_t k = 0; k < scheme.layers.size(); ++k) {
        if (!layer_nullable(scheme.layers[k])) continue;
        const auto lvl = scheme.null_level(k);
        std::size_t at = 0;
        for (const auto& a : per_node[path.size() - 1 - k]) {
          if (a->type->id == arrow::type_id::null) {
            std::fill(out.def.begin() + std::ptrdiff_t(at), out.def.begin() + std::ptrdiff_t(at + std::size_t(a->length)), lvl);
          } else if (const auto* v = a->validity()) {
            for (std::int64_t i = 0; i < a->length; ++i)
              if (!arrow::get_bit(v->data(), a->offset + i)) out.def[at + std::size_t(i)] = lvl;
          }
          at += std::size_t(a->length);
        }
      }
      for (auto d : out.def) out.leaf_nulls += d != 0;
    }
    return out;
  }
  detail::shredder s(path, scheme, out);
  for (const auto& b : batches)
    for (std::int64_t i = 0; i < b->length; ++i) s.row(b, i);
  return out;
}

// ======================================================================================
// Decoding: unravelling levels
// ======================================================================================

// One node's elements within a decoded range.
struct node_elements {
  std::uint64_t length = 0;
  std::uint64_t null_count = 0;
  aligned_buffer validity;              // bit per element (1 = valid); filled only when null_count > 0
  std::vector<std::uint64_t> offsets;   // lists: length + 1 child offsets (starting at 0)
};

// Unravels n slots of levels (rep/def may be empty = all zero) into per-layer elements,
// index k = layer (0 = leaf). The leaf layer's elements are the visible values.
inline std::vector<node_elements> unravel(const level_scheme& s, const std::uint16_t* rep, const std::uint16_t* def,
                                          std::size_t n, const std::string& where) {
  const std::size_t L = s.layers.size();
  std::vector<node_elements> out(L);
  for (std::size_t i = 0; i < n; ++i) {
    if (rep && rep[i] > s.max_rep)
      throw corrupt_error(where + ": repetition level " + std::to_string(rep[i]) + " above " + std::to_string(s.max_rep));
    if (def && def[i] > s.max_def)
      throw corrupt_error(where + ": definition level " + std::to_string(def[i]) + " above " + std::to_string(s.max_def));
  }
  if (n > 0 && rep && rep[0] != s.max_rep)
    throw corrupt_error(where + ": levels do not start at the beginning of a row");
  for (std::size_t k = 0; k < L; ++k) {
    auto& node = out[k];
    const auto limit = s.present_limit(k);
    const auto threshold = s.rep_threshold[k];
    const bool list = is_list_layer(s.layers[k]);
    const auto base = s.def_base[k];
    const std::uint16_t null_lvl = layer_nullable(s.layers[k]) ? s.null_level(k) : 0;
    // First pass: count elements and nulls.
    std::vector<std::uint8_t> starts;  // per slot: element starts here (1) at this node
    std::uint64_t count = 0, nulls = 0;
    auto is_start = [&](std::size_t i) {
      const std::uint16_t d = def ? def[i] : 0;
      if (d > limit) return false;
      return !rep || threshold == 0 || rep[i] >= threshold;
    };
    auto is_null = [&](std::size_t i) {
      const std::uint16_t d = def ? def[i] : 0;
      if (d <= base) return false;
      if (list && d != null_lvl && d <= base + def_levels_of(s.layers[k])) return false;  // empty list
      return true;
    };
    for (std::size_t i = 0; i < n; ++i)
      if (is_start(i)) {
        ++count;
        nulls += is_null(i);
      }
    node.length = count;
    node.null_count = nulls;
    if (nulls) {
      node.validity.resize(std::size_t((count + 7) / 8));
      std::uint64_t e = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (is_start(i)) {
          if (!is_null(i)) arrow::set_bit(node.validity.data(), std::int64_t(e), true);
          ++e;
        }
    }
    if (list) {
      // Child elements (layer k - 1) between consecutive starts of this node.
      const auto child_limit = s.present_limit(k - 1);
      const auto child_threshold = s.rep_threshold[k - 1];
      node.offsets.reserve(std::size_t(count + 1));
      std::uint64_t children = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (is_start(i)) node.offsets.push_back(children);
        const std::uint16_t d = def ? def[i] : 0;
        if (d <= child_limit && (!rep || child_threshold == 0 || rep[i] >= child_threshold)) ++children;
      }
      node.offsets.push_back(children);
    }
  }
  return out;
}

}  // namespace lancet::encoding::structural
