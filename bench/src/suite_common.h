// What the suites share: the device a suite runs on, the sizes it measures, progress lines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/bench/suites.h"
#include "weft/runtime/device.h"

namespace weft::bench {

// options.device, or `fallback` when none was given.
std::unique_ptr<rt::Device> open(const Options& options, const std::string& fallback);
// options.sizes (each as M, N, K), or `defaults` when none were given.
std::vector<std::vector<int64_t>> sizes_or(const Options& options, std::vector<std::vector<int64_t>> defaults);
void tell(const Options& options, const std::string& what);
// A progress line about a framework peer (a python3 child): none under --no-framework-peers,
// where those peers do not run.
void tell_framework(const Options& options, const std::string& what);

// hk_gemm (fp32 output) on `device`, checked against Eigen's float GEMM on the host, which is
// also timed as the peer when `with_peer`. The gemm suite's line on AMD devices.
Result hk_gemm_line(rt::Device& device, int64_t m, int64_t n, int64_t k, const Options& options, bool with_peer);

Suite gemm_suite();
Suite emulator_suite();
Suite compile_suite();
Suite moe_suite();
Suite attention_suite();

}  // namespace weft::bench
