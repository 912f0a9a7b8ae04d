// The definitions behind filter.hpp: compiling (parse + bind) and evaluating in blocks.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/concat.hpp"
#include "lancet/core/config.hpp"
#include "lancet/expr/bind.hpp"
#include "lancet/expr/evaluate.hpp"
#include "lancet/expr/filter.hpp"
#include "lancet/expr/parse.hpp"

namespace lancet::expr {

#if LANCET_HEADER_ONLY  // in compiled mode, the library defines these

LANCET_INLINE filter filter::compile(std::string_view sql, const arrow::schema& schema) {
  filter f;
  f.text_ = std::string(sql);
  f.bound_ = std::make_shared<const bound_filter>(bind(parse(sql), schema));
  return f;
}

LANCET_INLINE const std::vector<std::string>& filter::columns() const noexcept { return bound_->columns; }

LANCET_INLINE void filter::evaluate(std::span<const arrow::array_ptr> inputs, std::int64_t begin, std::size_t n,
                                    std::uint8_t* mask) const {
  if (inputs.size() != bound_->columns.size())
    throw invalid_input_error("filter '" + text_ + "' reads " + std::to_string(bound_->columns.size()) +
                              " columns, given " + std::to_string(inputs.size()));
  for (std::size_t c = 0; c < inputs.size(); ++c)
    if (!inputs[c] || inputs[c]->length < begin + std::int64_t(n))
      throw invalid_input_error("filter '" + text_ + "': column '" + bound_->columns[c] + "' has " +
                                std::to_string(inputs[c] ? inputs[c]->length : 0) + " rows, " +
                                std::to_string(begin + std::int64_t(n)) + " needed");
  // Blocks small enough that every node's values stay in cache.
  constexpr std::size_t block = 4096;
  for (std::size_t at = 0; at < n; at += block) {
    const std::size_t m = std::min(block, n - at);
    expr::evaluate(*bound_, inputs, begin + std::int64_t(at), m, mask + at);
  }
}

LANCET_INLINE std::vector<std::uint8_t> filter::evaluate(std::span<const arrow::array_ptr> inputs) const {
  const std::size_t n = inputs.empty() ? 0 : std::size_t(inputs[0]->length);
  std::vector<std::uint8_t> mask(n);
  if (inputs.empty()) return mask;
  evaluate(inputs, 0, n, mask.data());
  return mask;
}

LANCET_INLINE arrow::record_batch filter::apply(const arrow::record_batch& batch) const {
  std::vector<arrow::array_ptr> inputs;
  for (const auto& name : bound_->columns) {
    std::size_t c = 0;
    while (c < batch.schema->fields.size() && batch.schema->fields[c].name != name) ++c;
    if (c == batch.schema->fields.size())
      throw invalid_input_error("filter '" + text_ + "' reads column '" + name + "', which the batch does not have");
    inputs.push_back(batch.columns[c]);
  }
  std::vector<std::uint8_t> mask(std::size_t(batch.num_rows()));
  evaluate(inputs, 0, mask.size(), mask.data());
  return select_rows(batch, mask);
}

namespace detail {

// The top-level column every column node of `n` reads (nullopt: none, several, or a
// struct member).
inline bool single_column(const bound_node& n, std::optional<std::size_t>& input) {
  if (n.kind == node_kind::column) {
    if (!n.column.members.empty() || (input && *input != n.column.input)) return false;
    input = n.column.input;
    return true;
  }
  for (const auto& a : n.args)
    if (!single_column(a, input)) return false;
  return true;
}

inline void read_input_zero(bound_node& n) {
  if (n.kind == node_kind::column) n.column.input = 0;
  for (auto& a : n.args) read_input_zero(a);
}

inline bound_node boolean_node(node_kind k, std::vector<bound_node> args = {}) {
  bound_node b;
  b.kind = k;
  b.type = simple_type(sql_type::kind::boolean);
  b.args = std::move(args);
  return b;
}

inline bound_node true_node() {
  bound_node b = boolean_node(node_kind::constant);
  b.b = true;
  return b;
}

// The page's first (min) or last (max) value in place of column node `c`.
inline bound_node page_end(const bound_node& c, bool last) {
  bound_node e = c;
  e.column.input = last ? 1 : 0;
  e.column.name = last ? "max" : "min";
  return e;
}

inline bound_node is_null_node(bound_node x, bool negated) {
  bound_node b = boolean_node(node_kind::is_null, {std::move(x)});
  b.negated = negated;
  return b;
}

// `cmp` over (page end, constant): a copy of comparison `like` (its domain, -0 rule).
inline bound_node end_compare(const bound_node& like, compare_op op, bound_node end, bound_node k) {
  bound_node b = like;
  b.cmp = op;
  b.args = {std::move(end), std::move(k)};
  return b;
}

// The pages that may hold a value v with `v op k` (op with the column on the left).
inline bound_node page_compare(const bound_node& cmp, const bound_node& col, const bound_node& k, compare_op op) {
  const auto lo = page_end(col, false), hi = page_end(col, true);
  // The first value bounds the page from below unless the page starts with NULLs.
  const auto lo_is = [&](compare_op o) {
    return boolean_node(node_kind::or_, {is_null_node(lo, false), end_compare(cmp, o, lo, k)});
  };
  switch (op) {
    case compare_op::eq: return boolean_node(node_kind::and_, {lo_is(compare_op::le), end_compare(cmp, compare_op::ge, hi, k)});
    case compare_op::lt:
    case compare_op::le: return boolean_node(node_kind::and_, {is_null_node(hi, true), lo_is(op)});
    case compare_op::gt:
    case compare_op::ge: return end_compare(cmp, op, hi, k);
    case compare_op::ne: {
      // Not a page of k alone: some value other than k (a NULL start holds none).
      bound_node only_k = boolean_node(node_kind::and_, {is_null_node(lo, true), end_compare(cmp, compare_op::eq, lo, k),
                                                         end_compare(cmp, compare_op::eq, hi, k)});
      return boolean_node(node_kind::and_, {is_null_node(hi, true), boolean_node(node_kind::not_, {std::move(only_k)})});
    }
  }
  return true_node();
}

inline compare_op flipped(compare_op op) {
  switch (op) {
    case compare_op::lt: return compare_op::gt;
    case compare_op::le: return compare_op::ge;
    case compare_op::gt: return compare_op::lt;
    case compare_op::ge: return compare_op::le;
    default: return op;
  }
}

// The constant `i`-th member of an IN list's set, as a node of the list's domain.
inline std::vector<bound_node> set_constants(const bound_node& in) {
  std::vector<bound_node> out;
  const auto make = [&](auto set_value) {
    bound_node k;
    k.kind = node_kind::constant;
    k.type = in.domain;
    set_value(k);
    out.push_back(std::move(k));
  };
  for (auto v : in.set_i) make([&](bound_node& k) { k.i = v; });
  for (auto v : in.set_u) make([&](bound_node& k) { k.u = v; });
  for (auto v : in.set_w) make([&](bound_node& k) { k.w = v; });
  for (auto v : in.set_f) make([&](bound_node& k) { k.f = v; });
  for (const auto& v : in.set_s) make([&](bound_node& k) { k.s = v; });
  return out;
}

inline bool plain_column(const bound_node& n) { return n.kind == node_kind::column && n.column.members.empty(); }
inline bool value_constant(const bound_node& n) {
  return n.kind == node_kind::constant && !n.is_null_constant && n.type.k != sql_type::kind::null;
}

// The page test of a node of a one-column filter (true where it cannot tell).
inline bound_node page_test(const bound_node& n) {
  switch (n.kind) {
    case node_kind::and_:
    case node_kind::or_: {
      std::vector<bound_node> args;
      for (const auto& a : n.args) args.push_back(page_test(a));
      return boolean_node(n.kind, std::move(args));
    }
    case node_kind::compare: {
      if (plain_column(n.args[0]) && value_constant(n.args[1])) return page_compare(n, n.args[0], n.args[1], n.cmp);
      if (plain_column(n.args[1]) && value_constant(n.args[0]))
        return page_compare(n, n.args[1], n.args[0], flipped(n.cmp));
      return true_node();
    }
    case node_kind::in_list: {
      if (n.negated || !plain_column(n.args[0]) || n.args.size() != 1) return true_node();
      bound_node cmp = boolean_node(node_kind::compare);
      cmp.domain = n.domain;
      std::vector<bound_node> any;
      for (auto& k : set_constants(n)) {
        cmp.zero_equal = n.domain.k == sql_type::kind::floating && k.f == 0.0;
        any.push_back(page_compare(cmp, n.args[0], k, compare_op::eq));
      }
      if (any.empty()) return boolean_node(node_kind::constant);  // IN (NULL): no row
      if (any.size() == 1) return std::move(any[0]);
      return boolean_node(node_kind::or_, std::move(any));
    }
    case node_kind::is_null:
      if (!plain_column(n.args[0])) return true_node();
      return n.negated ? is_null_node(page_end(n.args[0], true), true) : is_null_node(page_end(n.args[0], false), false);
    default: return true_node();
  }
}

}  // namespace detail

LANCET_INLINE std::vector<std::pair<std::string, filter>> filter::column_conjuncts() const {
  const auto& root = bound_->root;
  const std::vector<bound_node> single{root};
  const auto& parts = root.kind == node_kind::and_ ? root.args : single;
  // The conjuncts over each column, ANDed (BETWEEN binds as two comparisons).
  std::vector<std::pair<std::size_t, std::vector<bound_node>>> by_column;
  for (const auto& p : parts) {
    std::optional<std::size_t> input;
    if (!detail::single_column(p, input) || !input) continue;
    auto it = std::find_if(by_column.begin(), by_column.end(), [&](const auto& c) { return c.first == *input; });
    if (it == by_column.end()) it = by_column.insert(by_column.end(), {*input, {}});
    it->second.push_back(p);
  }
  std::vector<std::pair<std::string, filter>> out;
  for (auto& [input, nodes] : by_column) {
    bound_filter b;
    b.columns = {bound_->columns.at(input)};
    b.root = nodes.size() == 1 ? std::move(nodes[0]) : detail::boolean_node(node_kind::and_, std::move(nodes));
    detail::read_input_zero(b.root);
    filter f;
    f.text_ = text_ + " [over " + b.columns[0] + "]";
    f.bound_ = std::make_shared<const bound_filter>(std::move(b));
    out.emplace_back(bound_->columns[input], std::move(f));
  }
  return out;
}

LANCET_INLINE bool filter::covers_only_conjuncts() const {
  const auto& root = bound_->root;
  const std::vector<bound_node> single{root};
  const auto& parts = root.kind == node_kind::and_ ? root.args : single;
  for (const auto& p : parts) {
    std::optional<std::size_t> input;
    if (!detail::single_column(p, input) || !input) return false;
  }
  return true;
}

LANCET_INLINE filter filter::page_filter() const {
  if (bound_->columns.size() != 1)
    throw invalid_input_error("filter '" + text_ + "' reads " + std::to_string(bound_->columns.size()) +
                              " columns; a page filter needs one");
  bound_filter b;
  b.columns = {"min", "max"};
  b.root = detail::page_test(bound_->root);
  filter f;
  f.text_ = text_ + " [pages]";
  f.bound_ = std::make_shared<const bound_filter>(std::move(b));
  return f;
}

LANCET_INLINE std::optional<filter::list_membership> filter::list_test() const {
  const auto& root = bound_->root;
  if (root.kind != node_kind::list_has || bound_->columns.size() != 1) return std::nullopt;
  list_membership out;
  out.every = root.every;
  for (std::size_t s = 1; s < root.args.size(); ++s) {
    // The set over the item column (input 0, no struct path: the values are the items);
    // a NULL value keeps the NULL items.
    bound_node set = root.args[s];
    set.args[0].column.members.clear();
    set.args[0].column.input = 0;
    bound_filter b;
    b.columns = bound_->columns;
    if (set.set_has_null) {
      bound_node is_null = detail::boolean_node(node_kind::is_null, {set.args[0]});
      b.root = detail::boolean_node(node_kind::or_, {std::move(set), std::move(is_null)});
    } else {
      b.root = std::move(set);
    }
    filter f;
    f.text_ = text_ + " [items " + std::to_string(s) + "]";
    f.bound_ = std::make_shared<const bound_filter>(std::move(b));
    out.items.push_back(std::move(f));
  }
  return out;
}

LANCET_INLINE arrow::record_batch select_rows(const arrow::record_batch& batch, std::span<const std::uint8_t> mask) {
  if (mask.size() != std::size_t(batch.num_rows()))
    throw invalid_input_error("select_rows: a mask of " + std::to_string(mask.size()) + " rows for a batch of " +
                              std::to_string(batch.num_rows()));
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  std::int64_t kept = 0;
  for (std::size_t r = 0; r < mask.size();) {
    if (!mask[r]) {
      ++r;
      continue;
    }
    std::size_t e = r;
    while (e < mask.size() && mask[e]) ++e;
    runs.emplace_back(std::int64_t(r), std::int64_t(e - r));
    kept += std::int64_t(e - r);
    r = e;
  }
  if (kept == batch.num_rows()) return batch;
  arrow::record_batch out;
  out.schema = batch.schema;
  for (std::size_t c = 0; c < batch.columns.size(); ++c)
    out.columns.push_back(arrow::take_runs(batch.columns[c], runs, batch.schema->fields[c].type));
  return out;
}

#endif

}  // namespace lancet::expr
