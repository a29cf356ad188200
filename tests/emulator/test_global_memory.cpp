// The emulator's global memory over many launches: a launch frees what it allocates (kernarg
// segment, dispatch packet, queue) however it ends, a freed buffer's address is never reused and
// an access to it is an out-of-bounds error naming the freed buffer, and bad frees are errors.
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

const char* kCopy = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @copy(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %body, label %done
body:
  %pi = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %i
  %v = load i32, ptr addrspace(1) %pi
  store i32 %v, ptr addrspace(1) %po
  br label %done
done:
  ret void
}
)";

LaunchOptions copy_launch(const CodeObject& code, uint64_t in, uint64_t out, int32_t n) {
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(in), ArgValue::pointer(out), ArgValue::i32(n)};
  o.kernarg = pack_kernel_args(code.kernel("copy"), args);
  return o;
}

}  // namespace

TEST_CASE("launches free what they allocate, whether they finish or fail") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kCopy, "gfx950"));
  std::mt19937 rng(std::random_device{}());
  std::vector<int32_t> values(64);
  for (auto& v : values) v = static_cast<int32_t>(rng());
  GlobalMemory mem;
  const uint64_t in = weft::testing::upload(mem, values, "in");
  const uint64_t out = weft::testing::upload(mem, std::vector<int32_t>(64, -1), "out");
  REQUIRE(mem.live_buffers() == 2);
  for (int i = 0; i < 100; ++i) run_kernel(code, "copy", mem, copy_launch(code, in, out, 64));
  CHECK(mem.live_buffers() == 2);
  CHECK(weft::testing::download<int32_t>(mem, out, 64) == values);
  // A launch that fails (reads past `in`) frees its buffers too.
  CHECK(error_of([&] { run_kernel(code, "copy", mem, copy_launch(code, in + 128, out, 64)); }).find("out-of-bounds") != std::string::npos);
  CHECK(mem.live_buffers() == 2);
}

TEST_CASE("a freed buffer: its address is not reused and an access to it names it") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kCopy, "gfx942"));
  GlobalMemory mem;
  const uint64_t in = mem.allocate(256, "in"), out = mem.allocate(256, "out");
  mem.free(in);
  CHECK_FALSE(mem.live(in));
  CHECK(mem.size(in) == 0);
  const uint64_t again = mem.allocate(256, "again");
  CHECK(again != in);
  const std::string e = error_of([&] { run_kernel(code, "copy", mem, copy_launch(code, in, out, 64)); });
  INFO(e);
  CHECK(e.find("out-of-bounds global access") != std::string::npos);
  CHECK(e.find("buffer 'in'") != std::string::npos);
  CHECK(e.find("which was freed") != std::string::npos);
  CHECK_THROWS_AS(mem.data(in), weft::Error);
}

TEST_CASE("freeing twice, or an address inside a buffer, is an error naming it") {
  GlobalMemory mem;
  const uint64_t a = mem.allocate(100, "a");
  CHECK(error_of([&] { mem.free(a + 4); }).find("not the start of a buffer") != std::string::npos);
  mem.free(a);
  CHECK(error_of([&] { mem.free(a); }).find("buffer 'a' there was freed already") != std::string::npos);
  CHECK(error_of([&] { mem.free(0x1234); }).find("not the start of a buffer") != std::string::npos);
}
