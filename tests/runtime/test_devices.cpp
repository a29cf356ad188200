// The Device interface on the emulator devices (copies, loading, launching, argument checks,
// errors), the HIP device's behaviour where no HIP runtime is installed, and Device::hold (the
// emulator's none, the CUDA device's spin).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "../emulator/toolchain.h"
#include "skip.h"
#include "weft/dsl/error.h"
#include "weft/runtime/device.h"

using namespace weft::rt;

namespace {

const char* kAxpy = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
define amdgpu_kernel void @axpy(ptr addrspace(1) %x, ptr addrspace(1) %y, float %a, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 64
  %i = add i32 %base, %tid
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %body, label %done
body:
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  %vx = load float, ptr addrspace(1) %px
  %vy = load float, ptr addrspace(1) %py
  %m = fmul float %vx, %a
  %r = fadd float %m, %vy
  store float %r, ptr addrspace(1) %py
  br label %done
done:
  ret void
}
)";

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const weft::Error& e) {
    return e.what();
  }
  return "";
}

template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

TEST_CASE("emulator devices copy bit-exactly, load, launch and check their arguments") {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (const char* target : {"gfx942", "gfx950"}) {
    INFO(target);
    auto device = open_device(std::string("emu:") + target);
    CHECK(device->name() == std::string("emu:") + target);
    CHECK(device->arch() == target);
    const int n = 300;
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = dist(rng);
    for (auto& v : y) v = dist(rng);
    const float a = dist(rng);
    Buffer bx = device->allocate(n * 4, "x"), by = device->allocate(n * 4, "y");
    device->copy_to_device(bx, bytes_of(x));
    device->copy_to_device(by, bytes_of(y));
    std::vector<float> back(n);
    device->copy_from_device({reinterpret_cast<uint8_t*>(back.data()), n * 4}, bx);
    CHECK(std::memcmp(back.data(), x.data(), n * 4) == 0);

    auto module = device->load(weft::testing::compile_ll(kAxpy, target));
    CHECK(module->kernels() == std::vector<std::string>{"axpy"});
    const Arg args[] = {Arg::buffer(bx), Arg::buffer(by), Arg::f32(a), Arg::i32(n)};
    device->launch(*module, "axpy", {(n + 63) / 64, 1, 1}, {64, 1, 1}, args, LaunchMode{});
    device->synchronize();
    device->copy_from_device({reinterpret_cast<uint8_t*>(back.data()), n * 4}, by);
    for (int i = 0; i < n; ++i)
      REQUIRE(std::abs(back[static_cast<size_t>(i)] - (static_cast<double>(x[static_cast<size_t>(i)]) * a + y[static_cast<size_t>(i)])) <= 1e-5);

    const Arg wrong[] = {Arg::buffer(bx), Arg::buffer(by), Arg::i64(1), Arg::i32(n)};
    CHECK(error_of([&] { device->launch(*module, "axpy", {1, 1, 1}, {64, 1, 1}, wrong, LaunchMode{}); }).find("argument 3") !=
          std::string::npos);
    const Arg few[] = {Arg::buffer(bx)};
    CHECK(error_of([&] { device->launch(*module, "axpy", {1, 1, 1}, {64, 1, 1}, few, LaunchMode{}); }).find("takes 4 arguments, 1 given") !=
          std::string::npos);
    CHECK(error_of([&] { device->launch(*module, "nope", {1, 1, 1}, {64, 1, 1}, args, LaunchMode{}); }).find("nope") != std::string::npos);
    std::vector<float> big(n + 1);
    CHECK(error_of([&] { device->copy_to_device(bx, bytes_of(big)); }).find("bytes requested") != std::string::npos);
  }
}

TEST_CASE("a code object for another target is refused, naming both") {
  auto device = open_device("emu:gfx942");
  const std::string e = error_of([&] { device->load(weft::testing::compile_ll(kAxpy, "gfx950")); });
  CHECK(e.find("the code object is for gfx950") != std::string::npos);
  CHECK(e.find("emu:gfx942") != std::string::npos);
}

TEST_CASE("device specs that name nothing are clear errors") {
  CHECK(error_of([] { open_device("emu"); }).find("needs a target") != std::string::npos);
  CHECK(error_of([] { open_device("emu:gfx90a"); }).find("not 'gfx90a'") != std::string::npos);
  CHECK(error_of([] { open_device("tpu"); }).find("unknown device 'tpu'") != std::string::npos);
  CHECK(error_of([] { open_device("hip:x"); }).find("GPU index must be a number") != std::string::npos);
}

TEST_CASE("the hip device fails cleanly where there is no HIP runtime or no AMD GPU") {
  const std::string e = error_of([] { open_device("hip"); });
  if (e.empty()) WEFT_SKIP("a HIP runtime and an AMD GPU are present: the failure path cannot be exercised here");
  INFO(e);
  CHECK((e.find("HIP runtime (libamdhip64.so) was not found") != std::string::npos || e.find("HIP:") != std::string::npos ||
         e.find("AMD GPU") != std::string::npos));
}

TEST_CASE("the cuda device fails cleanly where there is no NVIDIA driver or GPU") {
  CHECK(error_of([] { open_device("cuda:one"); }).find("GPU index must be a number (cuda:0, cuda:1, ...)") != std::string::npos);
  const std::string e = error_of([] { open_device("cuda"); });
  if (e.empty()) {
    MESSAGE("an NVIDIA GPU is present: the failure path is not exercised here");
    CHECK(error_of([] { open_device("cuda:999"); }).find("NVIDIA GPU(s)") != std::string::npos);
    return;
  }
  INFO(e);
  CHECK((e.find("no NVIDIA driver was found") != std::string::npos || e.find("CUDA: cuInit") != std::string::npos));
}

TEST_CASE("the emulator cannot hold: Device::hold returns false and the device's clock is not held") {
  auto dev = open_device("emu:gfx950");
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(dev->hold(0.5));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400));
}

TEST_CASE("the cuda device's hold spins the GPU that long, in its order of work [cuda]") {
  if (!error_of([] { open_device("cuda"); }).empty()) WEFT_SKIP("no NVIDIA GPU here: the hold's spin cannot run");
  auto dev = open_device("cuda");
  REQUIRE(dev->hold(0));  // (the driver compiles the spin's PTX at the first hold: not timed below)
  dev->synchronize();
  // Between two events, the hold is timed: at least its length (the timer may tick late, not early).
  const auto before = dev->record_event();
  REQUIRE(dev->hold(300e-6));
  const auto after = dev->record_event();
  const double held = dev->elapsed_seconds(*before, *after);
  CHECK(held >= 299e-6);
  CHECK(held < 50e-3);
  // Events recorded behind a hold wait for it (the same order of work): the first of them comes
  // the hold's length after an event recorded before it, and the pair holds none of it.
  const auto ahead = dev->record_event();
  REQUIRE(dev->hold(2e-3));
  const auto start = dev->record_event(), end = dev->record_event();
  CHECK(dev->elapsed_seconds(*ahead, *start) >= 1.99e-3);
  CHECK(dev->elapsed_seconds(*start, *end) < 1e-3);
}
