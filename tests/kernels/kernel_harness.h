// Helpers for kernel tests on the emulator devices and NVIDIA GPUs: fresh random inputs (the
// seed is printed and WEFT_TEST_SEED replays it), outputs poisoned with 0xCD bytes before each
// launch, and one test case per device family (WEFT_DEVICE_TEST_CASE), skipped where the family
// is absent.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "skip.h"
#include "weft/dsl/float_formats.h"
#include "weft/runtime/kernel.h"
#include "weft/runtime/mesh.h"

namespace weft::testing {

// A kernel lowered as for an NVIDIA target (32-lane waves), for tests of its CUDA source.
inline lower::LoweredKernel lowered_for_cuda(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return lower::lower(kernel, options);
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 gen = [] {
    uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::cerr << "kernel tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
    return std::mt19937_64(seed);
  }();
  return gen;
}

inline std::vector<float> random_floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng());
  return v;
}

// n random bfloat16 values in [lo, hi) as their bits, and `values` as the doubles they are.
inline std::vector<uint16_t> random_bf16(size_t n, float lo, float hi, std::vector<double>& values) {
  const std::vector<float> f = random_floats(n, lo, hi);
  std::vector<uint16_t> bits(n);
  values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = float_to_bf16(f[i]);
    values[i] = bf16_to_float(bits[i]);
  }
  return bits;
}

inline std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(rng());
  return v;
}

template <class T>
rt::DeviceArray put(rt::Device& dev, DType dtype, const std::vector<T>& values, const std::string& label = "input") {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return rt::upload(dev, dtype, bytes, label);
}

inline rt::DeviceArray poisoned(rt::Device& dev, DType dtype, size_t elements, const std::string& label = "output") {
  std::vector<uint8_t> bytes(elements * static_cast<size_t>(dtype.itemsize()), 0xCD);
  return rt::upload(dev, dtype, bytes, label);
}

template <class T>
std::vector<T> get(rt::Device& dev, const rt::DeviceArray& a) {
  std::vector<uint8_t> bytes = rt::download(dev, a);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// A kernel's C = A * B^T (m x n, row-major) against the double-precision product of a (m x k)
// and b (n x k), the values its inputs hold, plus `initial` (C's starting values) where given:
// bit for bit where `exact`, otherwise within 1e-5 of the sum of the terms' magnitudes (plus
// 1e-6). Reports the first five elements that differ.
inline void check_product_abt(const std::vector<float>& got, const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t n, int64_t k,
                              bool exact, const std::vector<double>& initial = {}) {
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = initial.empty() ? 0.0 : initial[static_cast<size_t>(i * n + j)], mag = std::fabs(ref);
      for (int64_t kk = 0; kk < k; ++kk) {
        ref += a[i * k + kk] * b[j * k + kk];
        mag += std::fabs(a[i * k + kk] * b[j * k + kk]);
      }
      const double g = got[i * n + j];
      const bool ok = exact ? g == ref : std::fabs(g - ref) <= 1e-5 * mag + 1e-6;
      if (!ok && bad++ < 5) FAIL_CHECK("C[" << i << "][" << j << "] = " << g << ", expected " << ref);
    }
  CHECK(bad == 0);
}

// Launches `k` with a float32 output in slot 0 (`out_elements`, poisoned first) and the float32
// input `x` in slot 1, and returns the output.
inline std::vector<float> run_float_kernel(rt::Device& dev, const rt::CompiledKernel& k, const std::vector<float>& x,
                                           size_t out_elements) {
  const rt::DeviceArray args[] = {poisoned(dev, dtypes::float32, out_elements), put(dev, dtypes::float32, x)};
  k.launch(dev, args);
  return get<float>(dev, args[0]);
}

// The emulated AMD targets (for AMD-only kernels: MFMA, LDS DMA); empty without LLVM.
inline std::vector<std::string> emulators() {
#ifdef WEFT_HAVE_LLVM
  return {"emu:gfx950", "emu:gfx942"};
#else
  return {};
#endif
}

// Why no NVIDIA GPU can be opened here; empty when one can (asked once). WEFT_TEST_SKIP_CUDA=1
// skips the NVIDIA runs on purpose (and tests/cli/skip_reporting.cmake checks how a skip is
// reported).
inline const std::string& cuda_missing() {
  static const std::string reason = [] {
    if (const char* s = std::getenv("WEFT_TEST_SKIP_CUDA"); s && std::string(s) == "1")
      return std::string("the NVIDIA runs were turned off (WEFT_TEST_SKIP_CUDA=1)");
    try {
      auto d = rt::open_device("cuda");
      std::cerr << "kernel tests: NVIDIA runs on " << d->name() << "\n";
      return std::string();
    } catch (const std::exception& e) {
      return std::string("no NVIDIA GPU: ") + e.what();
    }
  }();
  return reason;
}
inline bool cuda_present() { return cuda_missing().empty(); }

// Every NVIDIA GPU here, as a 1-D mesh ("cuda x N" for the largest N of 8, 4, 2 that opens).
inline rt::Mesh all_gpus() {
  for (const char* spec : {"cuda x 8", "cuda x 4", "cuda x 2"}) try {
      return rt::Mesh::open(spec);
    } catch (const Error&) {
    }
  return rt::Mesh::open("cuda");
}

// The device families a target-independent kernel test runs on, one test case each.
enum class Family { Emulators, Cuda };

inline std::string family_missing(Family f) {
  if (f == Family::Cuda) return cuda_missing();
  return emulators().empty() ? "built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators" : "";
}

inline const Family*& current_family() {
  static thread_local const Family* family = nullptr;
  return family;
}

// The devices of the family the running WEFT_DEVICE_TEST_CASE runs on.
inline std::vector<std::string> devices() {
  const Family* f = current_family();
  if (!f) throw std::logic_error("weft::testing::devices() is for the body of a WEFT_DEVICE_TEST_CASE");
  return *f == Family::Emulators ? emulators() : std::vector<std::string>{"cuda"};
}

// Runs a WEFT_DEVICE_TEST_CASE body for one family, or reports the case skipped.
inline void run_on(Family family, void (*body)()) {
  if (const std::string why = family_missing(family); !why.empty()) WEFT_SKIP(why);
  struct Scope {
    explicit Scope(const Family* f) { current_family() = f; }
    ~Scope() { current_family() = nullptr; }
  } scope(&family);
  body();
}

}  // namespace weft::testing

// A kernel test that runs on every device family: one doctest case "NAME [emulator]" for
// emu:gfx950 and emu:gfx942, one "NAME [cuda]" for an NVIDIA GPU; in the body, devices() lists
// the family's devices. A family that is absent here is reported as a skip of its own case, so
// the emulator runs count as passed even where no GPU is.
#define WEFT_DEVICE_TEST_CASE(name) WEFT_DEVICE_TEST_CASE_(name, DOCTEST_ANONYMOUS(weft_device_case_))
#define WEFT_DEVICE_TEST_CASE_(name, body)                                                           \
  static void body();                                                                                \
  TEST_CASE(name " [emulator]") { ::weft::testing::run_on(::weft::testing::Family::Emulators, body); } \
  TEST_CASE(name " [cuda]") { ::weft::testing::run_on(::weft::testing::Family::Cuda, body); }         \
  static void body()

// For a test case that needs an NVIDIA GPU.
#define WEFT_REQUIRE_CUDA()                                                                          \
  do {                                                                                               \
    if (!::weft::testing::cuda_present()) WEFT_SKIP(::weft::testing::cuda_missing());                \
  } while (0)
