// What the command-line tools share (`lancet`, examples/lancet_cli.cpp, and `lancet-mpi`,
// examples/lancet_mpi.cpp): the argument parser, numbers with range checks naming the
// flag and the value, usage_error (exit status 2), the index build flags turned into
// index::build_options, and the worker pool of --threads.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <lancet/index/build/options.hpp>
#include <lancet/index/distributed/model_file.hpp>
#include <lancet/index/index_type.hpp>
#include <lancet/index/ivf/model.hpp>

namespace lancet_tools {

// A bad command line: the tools print it with the usage and exit with status 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline bool is_help(std::string_view a) { return a == "--help" || a == "-h"; }

// Edit distance, for "did you mean" suggestions.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// What a command takes: options ("--name value" or "--name=value"), flags ("--name",
// no value) and whether files may follow the dataset.
struct arg_spec {
  std::string_view command;  // "cat", "index create": names the command in errors
  std::vector<std::string_view> options;
  std::vector<std::string_view> flags;
  bool more_files = false;
};

// A command's arguments: one positional (the dataset or file), then files when the
// command takes them, and options in any order; after "--" everything is positional.
// --help or -h where an option or the dataset may stand asks for the command's help.
struct args {
  std::string command;
  std::string path;
  std::vector<std::string> files;  // after the path (arg_spec::more_files)
  std::map<std::string, std::string> options;              // the last value of each option
  std::map<std::string, std::vector<std::string>> repeated;  // every value, in order
  // --storage-option KEY=VALUE (any command, repeatable): the dataset's object store.
  std::vector<std::string> storage_options;
  bool help = false;

  static args parse(const arg_spec& spec, const std::vector<std::string>& argv) {
    args a;
    a.command = std::string(spec.command);
    const std::string& cmd = a.command;
    std::vector<std::string> positional;
    bool options_done = false;
    auto known = [](const std::vector<std::string_view>& v, const std::string& k) {
      return std::find(v.begin(), v.end(), k) != v.end();
    };
    for (std::size_t i = 0; i < argv.size(); ++i) {
      std::string k = argv[i];
      if (options_done || k.size() < 2 || k[0] != '-') {
        positional.push_back(k);
        continue;
      }
      if (k == "--") {
        options_done = true;
        continue;
      }
      if (is_help(k)) {
        a.help = true;
        return a;
      }
      if (k.rfind("--", 0) != 0) throw usage_error(cmd + ": unknown flag '" + k + "'");
      std::optional<std::string> inline_value;
      if (const auto eq = k.find('='); eq != std::string::npos) {
        inline_value = k.substr(eq + 1);
        k.resize(eq);
      }
      const std::string name = k.substr(2);
      if (name == "storage-option") {
        if (!inline_value && i + 1 >= argv.size()) throw usage_error(cmd + ": option '" + k + "' needs a value");
        a.storage_options.push_back(inline_value ? *inline_value : argv[++i]);
        continue;
      }
      if (known(spec.flags, name)) {
        if (inline_value) throw usage_error(cmd + ": flag '" + k + "' takes no value");
        a.options[name] = "1";
        continue;
      }
      if (!known(spec.options, name)) {
        std::string msg = cmd + ": unknown flag '" + k + "'";
        std::string best;
        std::size_t best_d = 3;
        for (const auto* list : {&spec.options, &spec.flags})
          for (auto o : *list)
            if (const auto d = edit_distance(name, o); d < best_d) best_d = d, best = std::string(o);
        if (!best.empty()) msg += " (did you mean '--" + best + "'?)";
        throw usage_error(msg);
      }
      if (inline_value) {
        a.options[name] = *inline_value;
      } else {
        if (i + 1 >= argv.size()) throw usage_error(cmd + ": option '" + k + "' needs a value");
        a.options[name] = argv[++i];
      }
      a.repeated[name].push_back(a.options[name]);
    }
    if (positional.empty()) throw usage_error(cmd + ": missing the DATASET argument");
    if (positional.size() > 1 && !spec.more_files)
      throw usage_error(cmd + ": unexpected argument '" + positional[1] + "'");
    a.path = positional[0];
    a.files.assign(positional.begin() + 1, positional.end());
    return a;
  }

  std::optional<std::string> get(const std::string& k) const {
    auto it = options.find(k);
    if (it == options.end()) return std::nullopt;
    return it->second;
  }
  bool has(const std::string& k) const { return options.count(k) != 0; }
  // Every value given to --k (for options that may repeat).
  std::vector<std::string> all(const std::string& k) const {
    auto it = repeated.find(k);
    return it == repeated.end() ? std::vector<std::string>{} : it->second;
  }

  // The value of --k as an unsigned integer of type T in [lo, hi]; errors name the flag
  // and the value.
  template <class T = std::uint64_t>
  std::optional<T> number(const std::string& k, T lo = 0, T hi = std::numeric_limits<T>::max()) const {
    auto v = get(k);
    if (!v) return std::nullopt;
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && p == v->data() + v->size() && n > std::uint64_t(hi)))
      throw usage_error("--" + k + " is at most " + std::to_string(hi) + ", got '" + *v + "'");
    if (ec != std::errc() || p != v->data() + v->size())
      throw usage_error("--" + k + " needs a non-negative integer, got '" + *v + "'");
    if (n < std::uint64_t(lo))
      throw usage_error("--" + k + " is at least " + std::to_string(lo) + ", got '" + *v + "'");
    return T(n);
  }
};

// "a,b" -> {"a", "b"} (an empty last item is dropped).
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// "0,1,5" -> {0, 1, 5}: the ids of --flag.
inline std::vector<std::uint64_t> parse_id_list(const std::string& flag, const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const auto& item : split_list(text)) {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      throw usage_error("--" + flag + " needs fragment ids like 0,1,5, got '" + text + "'");
    out.push_back(n);
  }
  if (out.empty()) throw usage_error("--" + flag + " needs at least one fragment id");
  return out;
}

// The index build flags (index create and index train of `lancet`, index create of
// `lancet-mpi`): --column --type --partitions --target-partition-size --sub-vectors
// --bits --metric --m --ef-construction --memory-budget --fragments --seed, those the
// command takes. `model` (when given) supplies what the flags leave out. A --type or
// --metric the library does not know throws its invalid_input_error.
inline lancet::index::build_options build_flags(const args& a, const lancet::index::trained_model* model) {
  namespace ix = lancet::index;
  ix::build_options o;
  o.column = a.get("column").value_or(model ? model->column : "");
  if (o.column.empty()) throw usage_error(a.command + " needs --column COL");
  const auto type = a.get("type");
  if (!type && !model)
    throw usage_error(a.command + " needs --type ivf_flat|ivf_pq|ivf_sq|ivf_rq|ivf_hnsw_flat|ivf_hnsw_sq|ivf_hnsw_pq");
  if (a.get("partitions") && a.get("target-partition-size"))
    throw usage_error("give --partitions or --target-partition-size, not both");
  if (auto v = a.number<std::uint32_t>("m")) o.m = *v;
  if (auto v = a.number<std::uint32_t>("ef-construction")) o.ef_construction = *v;
  if (auto v = a.number<std::size_t>("partitions")) o.num_partitions = *v;
  if (auto v = a.number<std::size_t>("target-partition-size")) o.target_partition_size = *v;
  if (auto v = a.number<std::size_t>("sub-vectors")) o.num_sub_vectors = *v;
  if (auto v = a.number<std::uint32_t>("bits")) o.num_bits = *v;
  if (auto v = a.number("memory-budget")) o.memory_budget_bytes = *v;
  if (auto f = a.get("fragments")) o.fragment_ids = parse_id_list("fragments", *f);
  if (auto v = a.number("seed")) o.seed = *v;
  o.type = type ? ix::parse_ivf_index_type(*type) : model->type;
  if ((a.get("m") || a.get("ef-construction")) && !ix::is_hnsw(o.type))
    throw usage_error("--m and --ef-construction apply to ivf_hnsw_* indexes only");
  if (auto m = a.get("metric")) o.metric = ix::parse_distance(*m);
  else if (model) o.metric = model->metric;
  return o;
}

// A thread pool of --threads workers (default_threads when not given; 0: the number
// of cores); none for one thread. Returns the pool to hand to the library, or nullptr.
inline boost::asio::thread_pool* worker_pool(const args& a, std::optional<boost::asio::thread_pool>& pool,
                                             std::uint64_t default_threads = 0) {
  if (default_threads == 0) default_threads = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = a.number<std::uint32_t>("threads", 1).value_or(std::uint32_t(default_threads));
  if (threads > 1) pool.emplace(std::size_t(threads));
  return pool ? &*pool : nullptr;
}

}  // namespace lancet_tools
