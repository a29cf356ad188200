// lld runs in this process; its output goes to a file in a private temporary directory, never
// to the process's stdout. So a thread that prints while kernels link loses no output, and no
// printed byte lands in a code object.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "weft/emulator/code_object.h"
#include "weft/lowering/amdgpu_codegen.h"

namespace {

const char* kScale = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @scale(ptr addrspace(1) %x, float %a) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr float, ptr addrspace(1) %x, i32 %i
  %v = load float, ptr addrspace(1) %p
  %r = fmul float %v, %a
  store float %r, ptr addrspace(1) %p
  ret void
}
)";

// Points fd 1 at a temporary file for the life of the object, then back.
class StdoutToFile {
 public:
  StdoutToFile() {
    char path[] = "/tmp/weft-stdout-XXXXXX";
    fd_ = mkstemp(path);
    REQUIRE(fd_ >= 0);
    path_ = path;
    std::fflush(stdout);
    saved_ = dup(STDOUT_FILENO);
    REQUIRE(dup2(fd_, STDOUT_FILENO) >= 0);
  }
  ~StdoutToFile() {
    std::fflush(stdout);
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
    close(fd_);
    std::remove(path_.c_str());
  }
  StdoutToFile(const StdoutToFile&) = delete;
  StdoutToFile& operator=(const StdoutToFile&) = delete;
  off_t size() const { return lseek(fd_, 0, SEEK_END); }

 private:
  int fd_ = -1, saved_ = -1;
  std::string path_;
};

}  // namespace

TEST_CASE("linking while another thread writes to stdout: every line reaches stdout, every code object is intact") {
  const std::vector<uint8_t> reference = weft::amdgpu::compile_ir(kScale, "gfx950");
  REQUIRE(weft::emu::CodeObject::load(reference).kernels().size() == 1);
  constexpr char kLine[] = "a line printed while kernels link\n";
  constexpr size_t kLineBytes = sizeof kLine - 1;
  std::vector<std::vector<uint8_t>> linked;
  uint64_t lines = 0;
  off_t written = 0;
  {
    const StdoutToFile capture;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> printed{0};
    std::thread printer([&] {
      while (!stop) {
        if (write(STDOUT_FILENO, kLine, kLineBytes) == static_cast<ssize_t>(kLineBytes)) ++printed;
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // tens of lines in each link's few milliseconds
      }
    });
    for (int i = 0; i < 16; ++i) linked.push_back(weft::amdgpu::compile_ir(kScale, "gfx950"));
    stop = true;
    printer.join();
    lines = printed;
    written = capture.size();
  }
  CAPTURE(lines);
  CHECK(lines > 0);
  CHECK(static_cast<uint64_t>(written) == lines * kLineBytes);  // nothing went into a code object
  for (const auto& code : linked) CHECK(code == reference);
}
