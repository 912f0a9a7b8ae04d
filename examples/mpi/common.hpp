// What every lancet-mpi subcommand shares: the subcommand table entry, option parsing,
// and the all-or-nothing step that turns one rank's failure into every rank's.
//
// Every rank runs the same command line, so usage errors happen on all ranks at once
// (rank 0 prints them). Anything else that can fail runs inside step(): each rank
// catches its own exception, the outcomes are gathered on rank 0 (which prints every
// failing rank's message) and broadcast, and if any rank failed every rank throws
// step_failed: no rank is left waiting in a collective, and the caller undoes what its
// rank wrote before exiting non-zero. A rank that dies outright (a signal) is handled
// by mpirun, which then ends the job: nothing is committed, since only rank 0 commits
// and only after every rank's step succeeded.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

namespace lancet_mpi {

namespace mpi = boost::mpi;

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Some rank failed a step; every failure has been reported by rank 0.
struct step_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One subcommand: "write", "index create".
struct subcommand {
  std::string_view name;
  std::string_view usage;
  std::string_view help;
  int (*run)(const mpi::communicator& world, const std::vector<std::string>& args);
};

// Runs f on every rank; if it throws on any rank, rank 0 prints each failing rank's
// message ("lancet-mpi: rank 2: ...") and every rank throws step_failed.
template <class F>
void step(const mpi::communicator& world, std::string_view what, F&& f) {
  std::string failure;  // empty: this rank succeeded
  try {
    f();
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "failed";
  } catch (...) {
    failure = "failed (unknown exception)";
  }
  std::vector<std::string> all;
  mpi::gather(world, failure, all, 0);
  int failed = 0;
  if (world.rank() == 0) {
    for (std::size_t r = 0; r < all.size(); ++r)
      if (!all[r].empty()) {
        std::cerr << "lancet-mpi: rank " << r << ": " << all[r] << "\n";
        ++failed;
      }
  }
  mpi::broadcast(world, failed, 0);
  if (failed)
    throw step_failed(std::string(what) + " failed on " + std::to_string(failed) + " of " +
                      std::to_string(world.size()) + " ranks");
}

// Command-line options: one positional (the dataset), "--name value" or "--name=value".
struct options {
  std::string path;
  std::map<std::string, std::string> values;

  static options parse(std::string_view cmd, const std::vector<std::string>& argv,
                       const std::vector<std::string_view>& known) {
    options o;
    std::vector<std::string> positional;
    for (std::size_t i = 0; i < argv.size(); ++i) {
      std::string k = argv[i];
      if (k.size() < 2 || k.rfind("--", 0) != 0) {
        if (!k.empty() && k[0] == '-' && k.size() > 1) throw usage_error(std::string(cmd) + ": unknown flag '" + k + "'");
        positional.push_back(k);
        continue;
      }
      std::optional<std::string> inline_value;
      if (const auto eq = k.find('='); eq != std::string::npos) {
        inline_value = k.substr(eq + 1);
        k.resize(eq);
      }
      const std::string name = k.substr(2);
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (auto n : known) list += (list.empty() ? "--" : ", --") + std::string(n);
        throw usage_error(std::string(cmd) + ": unknown flag '" + k + "' (it takes " + list + ")");
      }
      if (inline_value) o.values[name] = *inline_value;
      else if (i + 1 < argv.size()) o.values[name] = argv[++i];
      else throw usage_error(std::string(cmd) + ": option '" + k + "' needs a value");
    }
    if (positional.empty()) throw usage_error(std::string(cmd) + ": missing the DATASET argument");
    if (positional.size() > 1) throw usage_error(std::string(cmd) + ": unexpected argument '" + positional[1] + "'");
    o.path = positional[0];
    return o;
  }
  std::optional<std::string> get(const std::string& k) const {
    auto it = values.find(k);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::uint64_t> number(const std::string& k) const {
    auto v = get(k);
    if (!v) return std::nullopt;
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size())
      throw usage_error("--" + k + " needs a non-negative integer, got '" + *v + "'");
    return n;
  }
};

}  // namespace lancet_mpi
