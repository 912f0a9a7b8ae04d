// A fuzz target's entry point. Built alone, a target file defines libFuzzer's
// LLVMFuzzerTestOneInput; tests/fuzz/all_targets.cpp builds every target into one
// binary (the library's code compiled once instead of once per target) and defines
// LANCET_FUZZ_ALL, which turns each entry point into a function named after its target.
//   LANCET_FUZZ_TARGET(fuzz_page)(const std::uint8_t* data, std::size_t size) { ... }
#pragma once

#ifdef LANCET_FUZZ_ALL
#define LANCET_FUZZ_TARGET(name) int name##_one_input
#else
#define LANCET_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput
#endif
