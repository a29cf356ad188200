// `weft bench`'s suites: each measures weft's kernels against their peers on one device and
// returns one Result per (kernel, size). A suite is a name, what it measures, the kernels it
// covers, and a function; run() picks them by suite name or by kernel name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/bench/result.h"

namespace weft::bench {

struct Options {
  std::string device;                        // "cuda", "emu:gfx950", ...; empty: the suite's default
  std::vector<std::vector<int64_t>> sizes;   // each M,N,K (one number n: n,n,n); empty: the suite's
  std::string kernel;                        // only this kernel's lines; empty: all
  int warmup = 2;                            // launches before timing
  int repetitions = 10;                      // timed launches (the median is reported)
  uint64_t seed = 1;                         // inputs
  bool framework_peers = true;               // PyTorch and Triton peers in python3 children; false: those lines are not run
  bool hold = true;                          // each timed call starts behind a hold of the device (timing.h); false: on an idle device
  std::function<void(const std::string&)> progress;  // told what runs next; may be empty
};

struct Suite {
  std::string name;
  std::string summary;
  std::vector<std::string> kernels;
  std::function<std::vector<Result>(const Options&)> run;
};

// gemm, attention, moe, emulator, compile.
const std::vector<Suite>& suites();

// The suite named `what`, or every suite that has a kernel named `what` restricted to it.
// Throws weft::Error listing the suites and kernels when `what` is neither.
std::vector<Result> run(const std::string& what, Options options);

}  // namespace weft::bench
