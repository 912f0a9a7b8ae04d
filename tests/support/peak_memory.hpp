// Peak resident memory of a piece of work, measured in a forked child so that the
// test process's own heap does not count: the child returns the heap it inherited to
// the system (malloc_trim), resets its peak (clear_refs 5), notes VmRSS, runs f, and
// reports VmHWM minus that baseline through a pipe. Linux only (/proc).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <doctest/doctest.h>

namespace lancet::testing {

// A /proc/self/status value in KiB ("VmRSS", "VmHWM"); -1 when absent.
inline long status_kib(const std::string& key) {
  std::ifstream st("/proc/self/status");
  const std::string k = key + ":";
  for (std::string l; std::getline(st, l);)
    if (l.rfind(k, 0) == 0) return std::stol(l.substr(k.size()));
  return -1;
}

// How far (KiB) the child's peak resident memory rose above what it held when f
// started; -1 when the child could not reset its peak or f threw (its message goes to
// stderr).
inline long peak_growth_kib_in_child(const std::function<void()>& f) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    long out = -1;
    try {
#if defined(__GLIBC__)
      malloc_trim(0);
#endif
      std::ofstream("/proc/self/clear_refs") << "5";
      const long base = status_kib("VmRSS");
      if (status_kib("VmHWM") <= base + 1024) {  // the peak was reset
        f();
        out = status_kib("VmHWM") - base;
        std::printf("  baseline %ld KiB, peak %ld KiB\n", base, status_kib("VmHWM"));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child failed: %s\n", e.what());
    }
    std::fflush(nullptr);
    const ssize_t w = ::write(fds[1], &out, sizeof out);
    ::_exit(w == ssize_t(sizeof out) ? 0 : 4);
  }
  ::close(fds[1]);
  REQUIRE(pid > 0);
  long got = -1;
  const ssize_t r = ::read(fds[0], &got, sizeof got);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(r == ssize_t(sizeof got));
  return got;
}

}  // namespace lancet::testing
