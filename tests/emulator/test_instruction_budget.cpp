// The per-wave instruction budget: a kernel that never ends fails with an error naming the
// kernel, workgroup, wave and PC instead of hanging the emulator, also when its loop crosses
// barriers; a kernel that ends within the budget runs; 0 lifts the limit; it is on by default.
#include <doctest/doctest.h>

#include <random>

#include "kernel_io.h"
#include "toolchain.h"
#include "weft/dsl/error.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"

using namespace weft::emu;

using weft::testing::error_of;

namespace {

// i = 0, 2, 4, ... until i == n: an odd n never ends. `spin_barrier` waits at a barrier in
// every iteration (its waves return to the scheduler each time).
const char* kSpin = R"(
target triple = "amdgcn-amd-amdhsa"
declare void @llvm.amdgcn.s.barrier()
define amdgpu_kernel void @spin(ptr addrspace(1) %out, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%next, %loop]
  %next = add i32 %i, 2
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  store i32 %next, ptr addrspace(1) %out
  ret void
}
define amdgpu_kernel void @spin_barrier(ptr addrspace(1) %out, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%next, %loop]
  call void @llvm.amdgcn.s.barrier()
  %next = add i32 %i, 2
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  store i32 %next, ptr addrspace(1) %out
  ret void
}
)";

std::mt19937_64& rng() {
  static std::mt19937_64 gen(std::random_device{}());
  return gen;
}

LaunchOptions launch(const CodeObject& code, const std::string& kernel, uint64_t out, int32_t n, uint32_t block) {
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {block, 1, 1};
  o.host_threads = 1;
  const ArgValue args[] = {ArgValue::pointer(out), ArgValue::i32(n)};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  return o;
}

}  // namespace

TEST_CASE("a kernel that never ends fails at its wave's instruction budget, naming kernel, workgroup, wave and PC") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kSpin, arch));
    for (const char* kernel : {"spin", "spin_barrier"}) {
      CAPTURE(kernel);
      GlobalMemory mem;
      const uint64_t out = mem.allocate(4, "out");
      const uint64_t budget = std::uniform_int_distribution<uint64_t>(1000, 50000)(rng());
      CAPTURE(budget);
      LaunchOptions o = launch(code, kernel, out, 7, 128);  // two waves
      o.max_wave_instructions = budget;
      const std::string e = error_of([&] { run_kernel(code, kernel, mem, o); });
      INFO(e);
      CHECK(e.find("kernel " + std::string(kernel) + ", PC 0x") != std::string::npos);
      CHECK(e.find("workgroup (0,0,0), wave ") != std::string::npos);
      CHECK(e.find("reached its budget of " + std::to_string(budget) + " instructions") != std::string::npos);
      CHECK(mem.live_buffers() == 1);  // the launch's own buffers are freed
    }
  }
}

TEST_CASE("a kernel that ends within the budget runs, 0 is no limit, and the default is on") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kSpin, "gfx950"));
  GlobalMemory mem;
  const uint64_t out = mem.allocate(4, "out");
  const int32_t n = 2 * std::uniform_int_distribution<int32_t>(500, 1500)(rng());  // n/2 iterations
  CAPTURE(n);
  LaunchOptions o = launch(code, "spin", out, n, 64);
  o.max_wave_instructions = 100;
  CHECK(error_of([&] { run_kernel(code, "spin", mem, o); }).find("reached its budget of 100 instructions") != std::string::npos);
  o.max_wave_instructions = 0;
  const RunReport r = run_kernel(code, "spin", mem, o);
  CHECK(weft::testing::download<int32_t>(mem, out, 1)[0] == n);
  // Exactly the instructions the run took are enough; one fewer is not.
  o.max_wave_instructions = r.instructions;
  CHECK_NOTHROW(run_kernel(code, "spin", mem, o));
  o.max_wave_instructions = r.instructions - 1;
  CHECK_THROWS_AS(run_kernel(code, "spin", mem, o), weft::Error);
  CHECK(LaunchOptions{}.max_wave_instructions == LaunchOptions::kDefaultMaxWaveInstructions);
  CHECK(LaunchOptions::kDefaultMaxWaveInstructions >= uint64_t{1} << 28);
}
