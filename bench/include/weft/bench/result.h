// One line of a `weft bench` report: weft's kernel and its peer on one problem, measured in the
// same process (or job) with the same timing method, weft's output checked against the peer's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::bench {

// A repeated measurement: every repetition's seconds; the median is what tables report.
struct Timing {
  std::vector<double> seconds;
  double hold_s = 0;  // the device hold before each timed call (timing.h); 0: none, the device idle at its start
  int holds_outlasted = 0;  // timed calls the host took longer to enqueue than the hold lasted (their times hold the excess)
  double median() const;
  double min() const;
};

// How weft's output compared with the peer's (or with a host reference where there is no peer).
struct Check {
  bool ok = false;
  double max_error = 0;      // max |weft - reference| / max |reference| over the compared elements
  double tolerance = 0;      // what `ok` allows
  std::string against;       // what was compared with: "cuBLAS", "Eigen (double)", ...
};

struct Result {
  std::string suite;         // gemm, emulator, compile
  std::string kernel;        // weft's kernel: hk_gemm, mma_gemm, ...
  std::string size;          // "4096x4096x4096", "gfx950"
  std::string device;        // where weft's kernel ran: "cuda:0 (sm_90)", "emu:gfx950"
  Timing weft;
  std::string peer;          // "cuBLAS cublasGemmEx" or "" (none measured)
  Timing peer_timing;
  std::string peer_device;   // where the peer ran ("cuda:0", "host CPU")
  // Throughput: `work` units per second, e.g. 2*M*N*K flops shown in TFLOP/s.
  double work = 0;
  double unit_scale = 1;     // divides work/seconds: 1e12 for TFLOP/s
  std::string unit;          // "TFLOP/s", "ms"
  double ceiling = 0;        // in `unit`; 0: none known
  std::string ceiling_source;
  Check check;
  std::vector<std::pair<std::string, double>> details;  // suite-specific numbers (compile stages, ...)
  // Why this line was not measured (its toolchain is absent from this build or machine); the
  // table and the JSON say so in place of numbers.
  std::string not_run;

  bool has_peer() const { return !peer.empty() && !peer_timing.seconds.empty(); }
  // weft's speed over the peer's (peer seconds / weft seconds): above 1, weft is faster.
  double ratio() const;
  double throughput(const Timing& t) const;  // work / median seconds / unit_scale
};

}  // namespace weft::bench
