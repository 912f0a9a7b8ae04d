// Random 64-bit values for file names and retry jitter: a per-thread generator seeded
// from the system's entropy, and seeded again in a process fork() made. A child that
// kept its parent's generator would draw the parent's "random" deletion file names, and
// two such children writing to one dataset would overwrite each other's files.
#pragma once

#include <cstdint>
#include <random>
#include <sys/types.h>
#include <unistd.h>

namespace lancet {

inline std::uint64_t random_u64() {
  thread_local std::mt19937_64 rng;
  thread_local pid_t seeded_in = 0;
  if (const pid_t pid = ::getpid(); pid != seeded_in) {
    std::random_device rd;
    rng.seed((std::uint64_t(rd()) << 32) ^ rd());
    seeded_in = pid;
  }
  return rng();
}

// A value in [lo, hi] (hi >= lo), for jitter (a small modulo bias does not matter there).
inline std::uint64_t random_between(std::uint64_t lo, std::uint64_t hi) {
  return lo + random_u64() % (hi - lo + 1);
}

}  // namespace lancet
