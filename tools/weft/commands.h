// The `weft` subcommands that lower, compile and run kernels.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace weft::cli {

// A mistake in the command line: reported with a hint and exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// weft run KERNEL [--device SPEC] [--size M,N,K] [--dtype float32|float16] [--seed N]
int run_kernel(const std::vector<std::string>& args);
// weft version: the version, the build identity (a hash of the compiler's sources) and the
// back ends' versions.
int print_version();
// weft dump KERNEL --after=PASS|all|llvm|asm|cuda [--target gfx950|gfx942|sm_90] (through rt::inspect)
int dump_kernel(const std::vector<std::string>& args);

// weft stats KERNEL [--target gfx950|gfx942] [--size M,N,K] [--json]: registers, LDS, scratch,
// spills, occupancy and static instruction counts of the kernel's code object (emu::kernel_stats).
int print_stats(const std::vector<std::string>& args);

}  // namespace weft::cli
