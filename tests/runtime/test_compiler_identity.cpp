// The compile cache's key holds the compiler's identity: weft's version, the build identity (a
// hash of the compiler's sources), the pass list, the back end's version and options. A code
// object cached by any other compiler is not loaded.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "weft/dsl/builder.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/compiler_identity.h"
#include "weft/runtime/kernel.h"
#include "weft/runtime/nvrtc.h"
#include "weft/version.h"

using namespace weft;
using namespace weft::rt;

namespace {

UOp add_one() {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp i = range(64, 0, AxisType::LOCAL);
  return sink({"add_one"}, {out[i].store(in[i].load() + 1.0).end({i})});
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const lower::Pass& p : lower::passes()) names.push_back(p.name);
  names.push_back("linearize");
  return names;
}

}  // namespace

TEST_CASE("the compiler identity names weft's version, build, passes, back end and options") {
  const std::string id = build_id();
  CHECK(id.size() == 64);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);

  const CompilerIdentity nvidia = compiler_identity("sm_90");
  CHECK(nvidia.weft_version == WEFT_VERSION);
  CHECK(nvidia.build_id == id);
  CHECK(nvidia.passes == pass_names());
  CHECK(nvidia.backend == (nvrtc_available() ? nvrtc_version() : std::string("NVRTC not found")));
  CHECK(nvidia.options.find("--gpu-architecture=sm_90") != std::string::npos);
  CHECK(nvidia.options.find("--fmad=false") != std::string::npos);
  if (nvrtc_available()) CHECK(nvrtc_version().starts_with("NVRTC 1"));
#ifdef WEFT_HAVE_LLVM
  const CompilerIdentity amd = compiler_identity("gfx950");
  CHECK(amd.backend.starts_with("LLVM 22."));
  CHECK(amd.options.find("O3") != std::string::npos);
  CHECK(amd.options.find("-shared") != std::string::npos);
  CHECK(amd.passes == pass_names());
#endif
}

TEST_CASE("the cache key changes with every part of the compiler's identity and with the kernel") {
  const UOp kernel = lower::canonical_allocations(add_one());
  const CompilerIdentity base = compiler_identity("sm_90");
  const std::string key = kernel_cache_key(kernel, base);
  CHECK(kernel_cache_key(kernel, compiler_identity("sm_90")) == key);  // deterministic
  CHECK(kernel_cache_key(kernel, compiler_identity("sm_80")) != key);  // options name the arch
  auto changed = [&](auto&& edit) {
    CompilerIdentity id = base;
    edit(id);
    return kernel_cache_key(kernel, id) != key;
  };
  CHECK(changed([](CompilerIdentity& id) { id.weft_version += ".1"; }));
  CHECK(changed([](CompilerIdentity& id) { id.build_id[0] = id.build_id[0] == '0' ? '1' : '0'; }));
  CHECK(changed([](CompilerIdentity& id) { id.passes.pop_back(); }));
  CHECK(changed([](CompilerIdentity& id) { std::swap(id.passes[1], id.passes[2]); }));
  CHECK(changed([](CompilerIdentity& id) { id.backend += "1"; }));
  CHECK(changed([](CompilerIdentity& id) { id.options += " -O0"; }));
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp i = range(64, 0, AxisType::LOCAL);
  const UOp other = sink({"add_one"}, {out[i].store(in[i].load() + 2.0).end({i})});
  CHECK(kernel_cache_key(other, base) != key);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("CompiledKernel caches under the compiler's identity, and another compiler's entry is not used") {
  const auto dir = std::filesystem::temp_directory_path() / ("weft-identity-test-" + std::to_string(std::random_device{}()));
  auto device = open_device("emu:gfx950");
  const UOp kernel = add_one();
  std::vector<uint8_t> code;
  {
    CompileCache cache(dir);
    code = CompiledKernel::compile(*device, kernel, &cache).code_object();
    CHECK(cache.stats().compiles == 1);
  }
  const UOp canonical = lower::canonical_allocations(kernel);
  const CompilerIdentity id = compiler_identity("gfx950");
  CompileCache later(dir);
  // The entry is found under this compiler's key, without compiling...
  CHECK(later.get(kernel_cache_key(canonical, id), "gfx950", [] {
    FAIL("compiled again");
    return std::vector<uint8_t>{};
  }) == code);
  // ...and a compiler that differs in any part (here: its sources) finds nothing.
  CompilerIdentity edited = id;
  edited.build_id[5] = edited.build_id[5] == 'a' ? 'b' : 'a';
  bool compiled = false;
  later.get(kernel_cache_key(canonical, edited), "gfx950", [&] {
    compiled = true;
    return std::vector<uint8_t>{1};
  });
  CHECK(compiled);
  // A second compile() in a new process hits the disk entry.
  CompileCache again(dir);
  CHECK(CompiledKernel::compile(*device, kernel, &again).times().cached);
  CHECK(again.stats().disk_hits == 1);
  std::filesystem::remove_all(dir);
}
#endif
