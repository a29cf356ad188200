#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "emulator/toolchain.h"
#include "weft/dsl/error.h"
#include "weft/emulator/code_object.h"

using namespace weft;
using namespace weft::emu;

namespace {

const char* kAddOne = R"(
define amdgpu_kernel void @add_one(ptr addrspace(1) %out, ptr addrspace(1) %in, i32 %n) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr float, ptr addrspace(1) %in, i32 %id
  %v = load float, ptr addrspace(1) %p
  %w = fadd float %v, 1.0
  %q = getelementptr float, ptr addrspace(1) %out, i32 %id
  store float %w, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @lds_user(ptr addrspace(1) %out) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %l = getelementptr [256 x i32], ptr addrspace(3) @tile, i32 0, i32 %id
  store i32 %id, ptr addrspace(3) %l
  %v = load i32, ptr addrspace(3) %l
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %id
  store i32 %v, ptr addrspace(1) %q
  ret void
}
@tile = internal addrspace(3) global [256 x i32] poison
declare i32 @llvm.amdgcn.workitem.id.x()
)";

const std::vector<uint8_t>& add_one_gfx950() {
  static const std::vector<uint8_t> bytes = testing::compile_ll(kAddOne, "gfx950");
  return bytes;
}

}  // namespace

TEST_CASE("loads the kernels, descriptors and metadata LLVM 22 writes") {
  for (const char* mcpu : {"gfx942", "gfx950"}) {
    CAPTURE(mcpu);
    CodeObject co = CodeObject::load(testing::compile_ll(kAddOne, mcpu));
    CHECK(std::string(arch_name(co.arch())) == mcpu);
    REQUIRE(co.kernels().size() == 2);
    const Kernel& k = co.kernel("add_one");
    REQUIRE(k.args.size() >= 3);
    CHECK(k.args[0].name == "out");
    CHECK(k.args[0].offset == 0);
    CHECK(k.args[0].size == 8);
    CHECK(k.args[0].value_kind == "global_buffer");
    CHECK(k.args[0].address_space == "global");
    CHECK(k.args[1].offset == 8);
    CHECK(k.args[2].name == "n");
    CHECK(k.args[2].offset == 16);
    CHECK(k.args[2].size == 4);
    CHECK(k.args[2].value_kind == "by_value");
    // Code object v5/v6: hidden arguments (block counts, group sizes, ...) follow the explicit ones.
    CHECK(std::any_of(k.args.begin(), k.args.end(), [](const KernelArg& a) { return a.value_kind == "hidden_block_count_x"; }));
    CHECK(k.kernarg_segment_size >= 24);
    CHECK(k.descriptor.kernarg_size == k.kernarg_segment_size);
    CHECK(k.wavefront_size == 64);
    CHECK(k.code_address % 256 == 0);
    CHECK(k.code_size > 0);
    CHECK(k.descriptor.has_kernarg_segment_ptr());
    // Without amdgpu-no-workitem-id-y/z attributes LLVM enables all three work-item ids.
    CHECK(k.descriptor.workitem_id_dims() == 3);
    // The user SGPRs the descriptor enables add up to its USER_SGPR_COUNT.
    const KernelDescriptor& d = k.descriptor;
    int user_sgprs = 4 * d.has_private_segment_buffer() + 2 * d.has_dispatch_ptr() + 2 * d.has_queue_ptr() +
                     2 * d.has_kernarg_segment_ptr() + 2 * d.has_dispatch_id() + 2 * d.has_flat_scratch_init() +
                     d.has_private_segment_size() + d.kernarg_preload_dwords();
    CHECK(user_sgprs == d.user_sgpr_count());
    CHECK(d.workgroup_id_enabled(0));
    CHECK(co.code_at(k.code_address, k.code_size).size() == k.code_size);
    const Kernel& lds = co.kernel("lds_user");
    CHECK(lds.group_segment_fixed_size == 1024);
    CHECK(lds.descriptor.group_segment_fixed_size == 1024);
  }
}

TEST_CASE("clear errors for what is not a code object") {
  CHECK_THROWS_WITH_AS(CodeObject::load({}), doctest::Contains("too short for an ELF header"), Error);
  std::vector<uint8_t> junk(200, 0x41);
  CHECK_THROWS_WITH_AS(CodeObject::load(junk), doctest::Contains("not an ELF file"), Error);
  CHECK_THROWS_WITH_AS(CodeObject::load_file("/nonexistent/k.hsaco"), doctest::Contains("cannot open code object"), Error);
  CodeObject co = CodeObject::load(add_one_gfx950());
  CHECK_THROWS_WITH_AS(co.kernel("nope"), doctest::Contains("no kernel named 'nope' in the code object (it has: add_one, lds_user)"), Error);
  std::vector<uint8_t> other_gpu = add_one_gfx950();
  other_gpu[48] = 0x30;  // e_flags: gfx908
  CHECK_THROWS_WITH_AS(CodeObject::load(other_gpu), doctest::Contains("GPU 0x30 in e_flags is not gfx942 (0x4c) or gfx950 (0x4f)"), Error);
}

TEST_CASE("fuzz: truncated and mutated code objects never crash") {
  const std::vector<uint8_t>& good = add_one_gfx950();
  size_t errors = 0, loaded = 0;
  auto attempt = [&](std::vector<uint8_t> bytes) {
    try {
      CodeObject co = CodeObject::load(std::move(bytes));
      for (const Kernel& k : co.kernels()) (void)co.code_at(k.code_address, k.code_size);
      ++loaded;
    } catch (const Error&) {
      ++errors;  // the one acceptable failure: a weft::Error with a message
    }
  };
  for (size_t n = 0; n < good.size(); ++n) attempt(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
  const char* fixed = std::getenv("WEFT_FUZZ_SEED");
  const uint32_t seed = fixed ? static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
  MESSAGE("code object mutation seed " << seed << " (replay with WEFT_FUZZ_SEED=" << seed << ")");
  std::mt19937 rng(seed);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = good;
    for (int flips = 1 + static_cast<int>(rng() % 8); flips > 0; --flips) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    attempt(std::move(bytes));
  }
  CHECK(errors >= good.size());  // every proper prefix is rejected
  CHECK(loaded > 0);
}
