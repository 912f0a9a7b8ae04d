// Crash tests: run an operation in a forked child and SIGKILL it after a delay.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace lancet::testing {

// The child's wait status (WIFEXITED: it finished first, with exit status 0 when `op`
// returned and 3 when it threw; otherwise it was killed). The child leaves by _exit,
// never running the test framework's teardown. When the child finishes before the
// delay, *finished_after (if given) is how long it took.
template <class Op>
int run_killed_after(std::chrono::duration<double> delay, Op&& op, double* finished_after = nullptr) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      op();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  // Wait for the child to finish or the delay to pass, whichever comes first.
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    if (w == pid) {
      if (finished_after) *finished_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// How long `op` takes in a forked child, as the parent sees it (the child's first
// touches of copied pages, exit): the span a kill delay must cover. Throws when the
// child fails or has not finished after `limit` (then it is killed: a child forked
// from a threaded process must not hang the suite).
template <class Op>
double child_seconds(Op&& op, std::chrono::duration<double> limit = std::chrono::seconds(300)) {
  double took = 0;
  const int status = run_killed_after(limit, std::forward<Op>(op), &took);
  if (!WIFEXITED(status)) throw std::runtime_error("the probe child did not finish within the limit; killed");
  if (WEXITSTATUS(status) != 0) throw std::runtime_error("the probe child failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")");
  return took;
}

}  // namespace lancet::testing
