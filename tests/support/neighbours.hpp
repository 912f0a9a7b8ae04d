// The k nearest neighbours that searches answer, side by side: our search over a
// dataset's vector index, LanceDB's (through tests/interop/search.mjs and
// ivf_acceptance.mjs), and how closely two answers agree.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <lancet/dataset/dataset.hpp>
#include <lancet/index/search/vector_index.hpp>
#include <lancet/simd/distance_type.hpp>

#include "interop.hpp"
#include "nearest.hpp"
#include "node_json.hpp"

namespace lancet::testing {

// One list per query: the row ids (addresses) found, best first, and their distances.
struct neighbour_lists {
  id_lists ids;
  std::vector<std::vector<double>> distances;
};

// Our search of each query (row-major, `dim` floats each) through the vector index on
// column "vector" of the newest version of `root`.
inline neighbour_lists our_search(const std::filesystem::path& root, const std::vector<float>& queries, std::size_t dim,
                                  std::size_t k, std::size_t nprobes, std::optional<std::size_t> ef = std::nullopt) {
  const auto s = *dataset::load_latest(root.string());
  auto ix = index::open_vector_index(s, "vector");
  index::search_params sp;
  sp.k = k;
  sp.nprobes = nprobes;
  sp.ef = ef;
  neighbour_lists out;
  for (std::size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<std::uint64_t> ids;
    std::vector<double> d;
    for (const auto& h : ix.searcher->search(queries.data() + q * dim, dim, sp)) {
      ids.push_back(h.row_id);
      d.push_back(h.distance);
    }
    out.ids.push_back(std::move(ids));
    out.distances.push_back(std::move(d));
  }
  return out;
}

// LanceDB's search of each query in `queries` (a write_f32 file) over `ds`, through
// search.mjs: `extra` are more of its options (--nprobes N, --bypass, --metric M, ...);
// with `plan`, the explain plan of the first query is stored there.
inline neighbour_lists lancedb_search(const std::filesystem::path& ds, const std::filesystem::path& queries,
                                      std::size_t dim, std::size_t k, const std::vector<std::string>& extra = {},
                                      std::string* plan = nullptr) {
  std::vector<std::string> args = {ds.string(), "--queries", queries.string(), "--dim", std::to_string(dim), "--k",
                                   std::to_string(k)};
  args.insert(args.end(), extra.begin(), extra.end());
  if (plan) args.push_back("--explain");
  std::istringstream lines(node("search.mjs", args));
  neighbour_lists out;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("plan")) {
      if (plan) *plan = j["plan"].get<std::string>();
      continue;
    }
    std::vector<std::uint64_t> ids;
    std::vector<double> d;
    for (const auto& id : j["rowids"]) ids.push_back(std::stoull(id.get<std::string>()));
    for (const auto& x : j["distances"]) d.push_back(x.get<double>());
    out.ids.push_back(std::move(ids));
    out.distances.push_back(std::move(d));
  }
  return out;
}

// LanceDB's answers through `ivf_acceptance.mjs search` (k 10), and with `plan` its
// explainPlan and analyzePlan of the first query.
struct acceptance_answers : neighbour_lists {
  std::string explain, analyze;
};

// nprobes: LanceDB's nprobes(n), or none to search exactly (bypassVectorIndex); ef:
// the HNSW beam width when given. A distance LanceDB returns as null is NaN.
inline acceptance_answers acceptance_search(const std::filesystem::path& ds, const std::filesystem::path& queries,
                                            std::size_t dim, simd::distance_type metric,
                                            std::optional<std::size_t> nprobes, std::optional<std::size_t> ef = std::nullopt,
                                            bool plan = false) {
  std::vector<std::string> args = {"search", ds.string(), "--queries", queries.string(), "--dim", std::to_string(dim),
                                   "--k", "10", "--metric", std::string(simd::distance_name(metric))};
  if (nprobes) args.insert(args.end(), {"--nprobes", std::to_string(*nprobes)});
  else args.push_back("--bypass");
  if (ef) args.insert(args.end(), {"--ef", std::to_string(*ef)});
  if (plan) args.push_back("--plan");
  acceptance_answers out;
  for (const auto& j : node_json("ivf_acceptance.mjs", args)) {
    if (j.contains("explain")) {
      out.explain = j["explain"].get<std::string>();
      out.analyze = j["analyze"].get<std::string>();
    } else if (j.contains("rowids")) {
      std::vector<std::uint64_t> ids;
      for (const auto& id : j["rowids"]) ids.push_back(std::stoull(id.get<std::string>()));
      out.ids.push_back(std::move(ids));
      std::vector<double> d;
      for (const auto& x : j["distances"]) d.push_back(x.is_number() ? x.get<double>() : NAN);
      out.distances.push_back(std::move(d));
    }
  }
  return out;
}

// Queries whose neighbours (row ids, in order) are the same in both answers. A query
// also counts when the ids differ only where the distances at every rank agree within
// `tie` (relative): LanceDB sums in f32, we in double, so rows a float ulp apart can
// tie in one and not in the other. The first few that differ are shown with both
// distance lists.
inline std::size_t same_neighbours(const neighbour_lists& ours, const neighbour_lists& lance, double tie = 1e-6) {
  std::size_t same = 0, shown = 0, exact = 0;
  for (std::size_t q = 0; q < ours.ids.size(); ++q) {
    if (ours.ids[q] == lance.ids[q]) {
      ++same;
      ++exact;
      continue;
    }
    bool close = ours.ids[q].size() == lance.ids[q].size();
    for (std::size_t i = 0; close && i < ours.ids[q].size(); ++i) {
      const double a = ours.distances[q][i], b = lance.distances[q][i];
      close = std::abs(a - b) <= tie * std::max({std::abs(a), std::abs(b), 1e-3});
    }
    if (close) {
      ++same;
      continue;
    }
    if (shown++ >= 3) continue;
    std::ostringstream m;
    m.precision(9);
    m << "query " << q << " differs:";
    for (std::size_t i = 0; i < ours.ids[q].size() || i < lance.ids[q].size(); ++i) {
      m << "\n  ";
      if (i < ours.ids[q].size()) m << "ours " << ours.ids[q][i] << " " << ours.distances[q][i];
      if (i < lance.ids[q].size()) m << "   lance " << lance.ids[q][i] << " " << lance.distances[q][i];
    }
    MESSAGE(m.str());
  }
  if (exact < same) MESSAGE((same - exact) << " of " << ours.ids.size() << " queries differ only by ties within float rounding");
  return same;
}

}  // namespace lancet::testing
