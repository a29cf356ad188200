// Peers that are frameworks, not libraries: run in the same job as a child python3 process
// (PyTorch is not a C++ dependency of weft). The inputs go to the child as files, it times the
// framework's operation with CUDA events (as weft's launches are timed) and writes its output
// back, so weft's result is checked against it like any other peer's.
//
// A job's script is python run after a prelude that sets `args` (the job's integers), `torch`
// and load(name, dtype, *shape) (dir/NAME.bin onto the GPU); it defines NAME (what is measured,
// after "PyTorch VERSION"; or FULL_NAME, the whole name), step() (the operation, timed with CUDA
// events after warm-up) and result() (the output tensor, written back as float32).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/bench/result.h"
#include "weft/bench/suites.h"

namespace weft::bench {

struct FrameworkRun {
  std::string name;            // "PyTorch 2.x torch.matmul"
  Timing timing;
  std::vector<double> output;  // row-major
};

struct FrameworkJob {
  std::string script;                                              // python: NAME, step(), result()
  std::vector<std::pair<std::string, std::vector<uint8_t>>> inputs;  // written as dir/NAME.bin
  std::vector<int64_t> args;
  size_t outputs = 0;                                              // float32 values in out.bin
};

// Runs `job` in a python3 child. Throws weft::Error with the child's message when python3 or
// PyTorch (with CUDA) is not there, or when its results are incomplete.
FrameworkRun run_framework(const FrameworkJob& job, const Options& options);

// C = A * B (A m x k, B k x n, bf16 bytes), or C = A * B^T with b_transposed (B n x k), by
// torch.matmul in bf16 on the GPU.
FrameworkRun torch_matmul(int64_t m, int64_t n, int64_t k, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const Options& options,
                          bool b_transposed = false);

// C = A * B^T (A m x k, B n x k, bf16 bytes) by a Triton tl.dot kernel (framework_peer.cpp) in
// the same child process setup: Triton as the second framework peer of the bf16 GEMM.
FrameworkRun triton_matmul(int64_t m, int64_t n, int64_t k, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const Options& options);

}  // namespace weft::bench
