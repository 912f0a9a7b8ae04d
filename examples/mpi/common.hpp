// What every lancet-mpi subcommand shares: the subcommand table entry (option parsing
// is examples/tool_args.hpp, shared with the lancet CLI), and the all-or-nothing step that turns one rank's failure into every rank's.
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

#include <cstdint>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include "../storage_args.hpp"
#include "../tool_args.hpp"

namespace lancet_mpi {

namespace mpi = boost::mpi;

using lancet_tools::usage_error;

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

// Command-line parsing is the tools' shared parser (examples/tool_args.hpp).
using lancet_tools::args;
using lancet_tools::arg_spec;

}  // namespace lancet_mpi
