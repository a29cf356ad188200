// weft: the command-line tool. Subcommands print example kernels' IR; later ones lower, run
// and benchmark them. Exit status: 0 success, 1 a failure while working, 2 a usage error.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench_command.h"
#include "commands.h"
#include "example_kernels.h"
#include "layout_command.h"
#include "weft/dsl/print.h"
#include "weft/dsl/verify.h"
#include "weft/lowering/symbolic.h"

namespace {

constexpr const char* kUsage = R"(usage: weft <command> [options]

weft is a C++ kernel-authoring DSL and tile framework for AMD CDNA and NVIDIA GPUs.

commands:
  run KERNEL [--device SPEC] [--size M,N,K] [--dtype float32|float16] [--seed N]
            [--schedule ping-pong|pipelined|cooperative|cooperative-64b|ping-pong-wide]
            [--input bfloat16|fp8|float8_e4m3fn]
            [--epilogue bias,relu|gelu,scale=tensor|scale=row] [--mask causal|none]
                                      lower, compile and run a kernel on a device (emu:gfx950,
                                      the default; emu:gfx942, hip[:N], cuda[:N]), check it
                                      against a host reference and print each stage's time
                                      (--schedule: hk_gemm's K loop, the 8-wave ping-pong by
                                      default or the 2-stage pipeline; hopper_gemm's consumer
                                      schedule, cooperative by default; --input: hk_gemm's and
                                      hopper_gemm's A and B dtype, fp8 being the target's;
                                      --epilogue: hopper_gemm's fused epilogue;
                                      flash_attention's --size is BH,SQ,SK[,D] and --mask
                                      causal masks keys after each query);
                                      moe_layer also runs over a mesh, --device "emu:gfx950 x 4":
                                      expert-parallel, checked bit for bit against one device
  dump KERNEL --after=PASS|all|llvm|asm|cuda [--target gfx950|gfx942|sm_90]
                                      print the IR after a pass (or every pass, the linear
                                      program, the LLVM IR and the disassembly: all; the
                                      CUDA C++ for NVRTC: cuda)
  stats KERNEL [--target gfx950|gfx942] [--size M,N,K] [--input fp8] [--json]
                                      compile a kernel (default gfx950) and print what its code
                                      object says: VGPRs, AGPRs, SGPRs, LDS and scratch bytes,
                                      spills, occupancy (waves per SIMD and what limits it) and
                                      the static instruction counts by mnemonic (--input fp8:
                                      hk_gemm on the target's fp8); --json for scripts
  bench SUITE|KERNEL [--device SPEC] [--sizes N|MxNxK,...] [--repetitions N] [--warmup N]
        [--seed N] [--json FILE] [--plot FILE.svg] [--no-framework-peers] [--no-hold]
                                      time weft's kernels against their peers in this process
                                      (gemm: cuBLAS on cuda, Eigen on the host for emu devices;
                                      emulator: the emulator's own speed; compile: compile
                                      latency per stage), check weft's output against the
                                      peer's, print a table; --json and --plot write the run;
                                      --no-framework-peers skips the PyTorch and Triton lines
                                      (python3 children, about a minute on a GPU machine);
                                      on a GPU each timed call waits behind a short spin while
                                      the host enqueues it, so the host's launch latency is left
                                      out; --no-hold times calls on an idle GPU, latency inside
  ir KERNEL [--simplified | --both]   print a kernel's IR (as built, simplified, or both)
  kernels                             list the example kernels
  layout [NAME [--svg FILE]]          list the layout catalog, or print a layout as a table
                                      (one line per lane or row) and draw it as an SVG picture
  version                             print weft's version, its build identity and the
                                      compilers it uses (the compile cache's key holds them)
  help                                print this help

options:
  -h, --help                          print this help
  --version                           print weft's version

environment:
  WEFT_DUMP=PASS|all|llvm|asm|cuda    print that stage of every kernel compiled (the IR after
                                      a pass; all: every pass, the linear program, the LLVM IR
                                      and the disassembly or the CUDA C++) to stderr
  WEFT_CACHE_DIR                      where compiled code objects are kept (default
                                      $XDG_CACHE_HOME/weft or ~/.cache/weft)
  WEFT_EMU_MAX_INSTRUCTIONS=N         on emu devices, fail a wave after N instructions (a kernel
                                      that never ends; default 2^28, 0: no limit)
  WEFT_EMU_CHECKS=lds-reads           on emu devices, also report reads of LDS never written
  WEFT_EMU_CHECKS=hazards             on emu devices, hazard mode (LDS races, reads before
                                      s_waitcnt, uninitialized reads; docs/emulator.md)
  WEFT_EMU_TIMELINE=PATH              on emu devices, write each launch's timeline on the model
                                      of one CU: a Chrome trace (.json), a picture (.svg) or a
                                      table (.txt); {launch} in PATH numbers the launches

exit status: 0 on success, 1 if the work failed, 2 on a usage error.
)";

int usage_error(const std::string& message) {
  std::cerr << "weft: " << message << "\n" << "Try 'weft --help'.\n";
  return 2;
}

int list_kernels() {
  for (const auto& e : weft::examples::all()) std::cout << e.name << "\t" << e.summary << "\n";
  return 0;
}

int print_ir(const std::vector<std::string>& args) {
  std::string kernel;
  bool before = true, after = false;
  for (const std::string& a : args) {
    if (a == "--simplified") before = false, after = true;
    else if (a == "--both") before = true, after = true;
    else if (a.starts_with("-")) return usage_error("ir: unknown option '" + a + "'");
    else if (kernel.empty()) kernel = a;
    else return usage_error("ir: more than one kernel given ('" + kernel + "' and '" + a + "')");
  }
  if (kernel.empty()) return usage_error("ir: which kernel? (see 'weft kernels')");
  const auto* example = weft::examples::find(kernel);
  if (!example) return usage_error("ir: no kernel named '" + kernel + "' (see 'weft kernels')");
  weft::UOp graph = example->build("gfx950");
  weft::verify(graph);
  if (before) std::cout << "# " << kernel << ": as built\n" << weft::graph_string(graph);
  if (after) {
    weft::UOp simple = weft::simplify(graph);
    weft::verify(simple);
    std::cout << (before ? "\n" : "") << "# " << kernel << ": simplified\n" << weft::graph_string(simple);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage_error("no command given");
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      return weft::cli::print_version();
    }
    if (cmd == "kernels") return list_kernels();
    if (cmd == "ir") return print_ir(rest);
    if (cmd == "run") return weft::cli::run_kernel(rest);
    if (cmd == "dump") return weft::cli::dump_kernel(rest);
    if (cmd == "layout") return weft::cli::layout_command(rest);
    if (cmd == "stats") return weft::cli::print_stats(rest);
    if (cmd == "bench") return weft::cli::bench_command(rest);
    return usage_error("unknown command '" + cmd + "'");
  } catch (const weft::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "weft: error: " << e.what() << "\n";
    return 1;
  }
}
