// Crash tests: run an operation in a forked child and SIGKILL it after a delay.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace lancet::testing {

// The child's wait status (WIFEXITED: it finished first, with exit status 0 when `op`
// returned and 3 when it threw; otherwise it was killed). The child leaves by _exit,
// never running the test framework's teardown.
template <class Op>
int run_killed_after(std::chrono::duration<double> delay, Op&& op) {
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
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace lancet::testing
