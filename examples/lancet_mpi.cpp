// lancet-mpi: lancet's distributed operations driven by MPI (Boost.MPI over Open MPI).
//
//   mpirun -np N lancet-mpi write DATASET --schema S --input 'rows-*.jsonl' [--operation append|overwrite]
//   mpirun -np N lancet-mpi index create DATASET --column COL --type ivf_pq|ivf_flat|ivf_sq|ivf_rq [--merge] ...
//   lancet-mpi help [COMMAND]
//
// Every rank runs the same command line. A subcommand is one entry of the table below,
// implemented in examples/mpi/<name>.hpp on top of the shared step() (mpi/common.hpp):
// a rank that fails makes every rank exit non-zero, and nothing is committed. Exit
// status: 0 success, 1 failure, 2 bad usage.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "mpi/common.hpp"
#include "mpi/index_create.hpp"
#include "mpi/write.hpp"

namespace {

using namespace lancet_mpi;

const std::vector<subcommand>& subcommands() {
  static const std::vector<subcommand> all = {
      {"write", write_usage, write_help, &run_write},
      {"index create", index_create_usage, index_create_help, &run_index_create},
  };
  return all;
}

void print_usage(std::ostream& out) {
  out << "usage:\n";
  for (const auto& c : subcommands()) out << "  mpirun -np N " << c.usage << "\n";
  out << "  lancet-mpi help [COMMAND]\n";
}

// The subcommand named by the leading words of args ("write", "index create"), and
// how many words it took.
std::pair<const subcommand*, std::size_t> find(const std::vector<std::string>& args) {
  std::string name;
  for (std::size_t w = 0; w < args.size() && w < 2; ++w) {
    name += (w ? " " : "") + args[w];
    for (const auto& c : subcommands())
      if (c.name == name) return {&c, w + 1};
  }
  return {nullptr, 0};
}

}  // namespace

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  const bool speaker = world.rank() == 0;  // usage and help are printed once
  const std::vector<std::string> args(argv + 1, argv + argc);
  const subcommand* current = nullptr;
  try {
    if (args.empty()) throw usage_error("missing command");
    if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      if (args.size() == 1) {
        if (speaker) print_usage(std::cout);
        return 0;
      }
      auto [c, words] = find({args.begin() + 1, args.end()});
      if (!c || words + 1 != args.size()) throw usage_error("help: unknown command '" + args[1] + "'");
      if (speaker) std::cout << "usage: mpirun -np N " << c->usage << "\n\n" << c->help;
      return 0;
    }
    auto [c, words] = find(args);
    if (!c) throw usage_error("unknown command '" + args[0] + "'");
    current = c;
    const std::vector<std::string> rest(args.begin() + std::ptrdiff_t(words), args.end());
    for (const auto& a : rest)
      if (a == "--help" || a == "-h") {
        if (speaker) std::cout << "usage: mpirun -np N " << c->usage << "\n\n" << c->help;
        return 0;
      }
    return c->run(world, rest);
  } catch (const usage_error& e) {
    if (speaker) {
      std::cerr << "lancet-mpi: " << e.what() << "\n";
      if (current) std::cerr << "usage: mpirun -np N " << current->usage << "\n";
      else print_usage(std::cerr);
    }
    return 2;
  } catch (const step_failed& e) {
    if (speaker) std::cerr << "lancet-mpi: " << e.what() << "; nothing was committed\n";
    return 1;
  } catch (const std::exception& e) {
    // Outside a step (a bug, or MPI itself failing): this rank cannot agree with the
    // others, so it takes the whole job down rather than leave them waiting.
    std::cerr << "lancet-mpi: rank " << world.rank() << ": " << e.what() << "\n";
    env.abort(1);
    return 1;
  }
}
