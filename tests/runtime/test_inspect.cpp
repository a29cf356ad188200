// Seeing your own kernel: rt::inspect gives every stage of any graph (the IR after each pass,
// the linear program, LLVM IR before and after O3, the disassembly, the CUDA C++), the same
// ones CompiledKernel compiles; WEFT_DUMP prints the back end's stages of every compiled kernel.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "kernels/kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/inspect.h"

using namespace weft;

namespace {

// A kernel of the test's own: out[i] = in[i] * 3 + 1 through a shared tile read reversed.
UOp own_kernel() {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp tile = alloc_shared({64}, dtypes::float32);
  UOp st = tile[l].store(in[l].load() * 3.0);
  return sink({"own_kernel"}, {out[l].store(tile.after({st})[63 - l].load() + 1.0).end({l})});
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// What the process writes to stderr (fd 2) while the object lives.
class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/weft-stderr-XXXXXX";
    fd_ = mkstemp(path);
    REQUIRE(fd_ >= 0);
    path_ = path;
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    REQUIRE(dup2(fd_, STDERR_FILENO) >= 0);
  }
  ~StderrCapture() { restore(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  std::string text() {
    restore();
    std::ifstream in(path_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::cerr.flush();
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    close(fd_);
    saved_ = -1;
  }
  int fd_ = -1, saved_ = -1;
  std::string path_;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("inspect: the IR after every pass and the linear program of a kernel of one's own") {
  const UOp kernel = own_kernel();
  const rt::KernelStages st = rt::inspect(kernel, "gfx950", rt::InspectDepth::Lowering);
  CHECK(st.kernel == "own_kernel");
  CHECK(st.built == graph_string(lower::canonical_allocations(kernel)));
  REQUIRE(st.passes.size() == lower::passes().size());
  for (size_t i = 0; i < st.passes.size(); ++i) CHECK(st.passes[i].first == lower::passes()[i].name);
  // The same IR lower() hands its observer, pass by pass, and the same program.
  std::vector<std::string> seen;
  lower::LowerOptions o;
  o.after_pass = [&](std::string_view, const UOp& g) { seen.push_back(graph_string(g)); };
  const lower::LoweredKernel lowered = lower::lower(lower::canonical_allocations(kernel), o);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(st.passes[i].second == seen[i]);
  CHECK(st.program == lower::program_string(lowered));
  CHECK(st.after("insert_barriers") == st.passes[lower::passes().size() - 2].second);
  CHECK(contains(st.after("insert_barriers"), "BARRIER"));
  CHECK(st.after("linearize") == st.program);
  CHECK(error_of([&] { (void)st.after("bogus"); }).find("no pass named 'bogus'") != std::string::npos);
  CHECK(st.llvm_ir.empty());
  CHECK(st.code_object.empty());
}

TEST_CASE("inspect: the CUDA C++ of a kernel for an NVIDIA target, as the renderer writes it") {
  const rt::KernelStages st = rt::inspect(own_kernel(), "sm_90");
  lower::LowerOptions warps;
  warps.wave_size = 32;  // lowered for 32-lane warps, as CompiledKernel::compile does for a CUDA device
  CHECK(st.cuda_source == cuda::render_cuda(lower::lower(lower::canonical_allocations(own_kernel()), warps), 90));
  CHECK(contains(st.cuda_source, "own_kernel"));
  CHECK(st.llvm_ir.empty());
  CHECK(st.assembly.empty());
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("inspect: LLVM IR before and after O3, the code object and its disassembly, as compile() makes them") {
  for (const char* target : {"gfx950", "gfx942"}) {
    CAPTURE(target);
    const rt::KernelStages st = rt::inspect(own_kernel(), target);
    CHECK(contains(st.llvm_ir, "define amdgpu_kernel void @own_kernel"));
    CHECK(contains(st.llvm_ir_optimized, "define amdgpu_kernel void @own_kernel"));
    CHECK(st.llvm_ir != st.llvm_ir_optimized);
    CHECK(contains(st.assembly, "ds_write"));  // the shared tile
    CHECK(contains(st.assembly, "ds_read"));
    CHECK(contains(st.assembly, "s_endpgm"));
    CHECK(st.assembly == rt::disassemble(st.code_object));
    auto dev = rt::open_device(std::string("emu:") + target);
    CHECK(rt::CompiledKernel::compile(*dev, own_kernel()).code_object() == st.code_object);  // what runs
  }
}

TEST_CASE("WEFT_DUMP=asm and =llvm print the back end's stages of every compiled kernel, cache hits included") {
  auto dev = rt::open_device("emu:gfx950");
  const rt::KernelStages st = rt::inspect(own_kernel(), "gfx950");
  {
    const ScopedEnv env("WEFT_DUMP", "asm");
    StderrCapture err;
    rt::CompiledKernel::compile(*dev, own_kernel());
    const std::string text = err.text();
    CHECK(text == "# own_kernel: gfx950 code object\n" + st.assembly);
  }
  {
    const ScopedEnv env("WEFT_DUMP", "llvm");
    rt::CompileCache cache(std::nullopt);
    for (int i = 0; i < 2; ++i) {  // a compile, then a cache hit
      CAPTURE(i);
      StderrCapture err;
      CHECK(rt::CompiledKernel::compile(*dev, own_kernel(), &cache).times().cached == (i == 1));
      const std::string text = err.text();
      CHECK(text == "# own_kernel: LLVM IR as rendered\n" + st.llvm_ir + (st.llvm_ir.ends_with('\n') ? "" : "\n") +
                        "# own_kernel: LLVM IR after O3\n" + st.llvm_ir_optimized + (st.llvm_ir_optimized.ends_with('\n') ? "" : "\n"));
    }
  }
  {
    const ScopedEnv env("WEFT_DUMP", "all");
    StderrCapture err;
    rt::CompiledKernel::compile(*dev, own_kernel());
    const std::string text = err.text();
    CHECK(contains(text, "# own_kernel after insert_barriers\n" + st.after("insert_barriers")));
    CHECK(contains(text, "# own_kernel after linearize\n" + st.program));
    CHECK(contains(text, "# own_kernel: LLVM IR after O3\n"));
    CHECK(contains(text, "# own_kernel: gfx950 code object\n" + st.assembly));
  }
  {
    const ScopedEnv env("WEFT_DUMP", "insert_barriers");  // a pass: lower() prints it, nothing else
    StderrCapture err;
    rt::CompiledKernel::compile(*dev, own_kernel());
    CHECK(err.text() == "# own_kernel after insert_barriers\n" + st.after("insert_barriers"));
  }
}
#endif

TEST_CASE("WEFT_DUMP=cuda prints the CUDA C++ of every kernel compiled for an NVIDIA GPU") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const rt::KernelStages st = rt::inspect(own_kernel(), dev->arch());
  const ScopedEnv env("WEFT_DUMP", "cuda");
  rt::CompileCache cache(std::nullopt);
  for (int i = 0; i < 2; ++i) {
    StderrCapture err;
    rt::CompiledKernel::compile(*dev, own_kernel(), &cache);
    CHECK(err.text() == "# own_kernel: CUDA C++ for " + dev->arch() + "\n" + st.cuda_source +
                            (st.cuda_source.ends_with('\n') ? "" : "\n"));
  }
}
