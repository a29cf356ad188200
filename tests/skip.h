// Tests that cannot run here (no GPU, no NVRTC, a build without LLVM) say so to ctest instead of
// passing: WEFT_SKIP(reason) prints "WEFT-SKIPPED: <reason>" and returns from the test case.
// Every doctest case is registered with SKIP_REGULAR_EXPRESSION "WEFT-SKIPPED:" (tests/CMakeLists.txt),
// so ctest counts it as skipped; under ctest the reason is also recorded in $WEFT_TEST_SKIP_DIR
// and listed, grouped by reason, after the run (tests/skip_summary.cmake).
//
// A skip covers a whole test case: a case whose first half ran must not be reported skipped
// because its second half could not run. Split such cases (WEFT_DEVICE_TEST_CASE in
// kernels/kernel_harness.h makes one case per device family).
#pragma once

#include <string>

namespace weft::testing {

// The running doctest case's name (kept by a listener in test_environment.cpp).
const std::string& current_test_case();

// Prints the marker and, under ctest, records the reason.
void report_skip(const std::string& reason);

}  // namespace weft::testing

#define WEFT_SKIP(reason)                   \
  do {                                      \
    ::weft::testing::report_skip(reason);   \
    return;                                 \
  } while (0)
