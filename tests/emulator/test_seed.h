// The random generator of an emulator test file: a fresh seed per run, printed, and replayed by
// WEFT_TEST_SEED (as the kernel tests do, tests/kernels/kernel_harness.h).
#pragma once

#include <cstdlib>
#include <iostream>
#include <random>

namespace weft::testing {

inline std::mt19937_64 seeded_rng(const char* suite) {
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cerr << suite << ": random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
  return std::mt19937_64(seed);
}

}  // namespace weft::testing
