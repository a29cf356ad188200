// Helpers for kernel tests on the emulator devices: fresh random inputs (the seed is printed
// and WEFT_TEST_SEED replays it), outputs poisoned with 0xCD bytes before each launch.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "weft/dsl/float_formats.h"
#include "weft/runtime/kernel.h"

namespace weft::testing {

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

// Launches `k` with a float32 output in slot 0 (`out_elements`, poisoned first) and the float32
// input `x` in slot 1, and returns the output.
inline std::vector<float> run_float_kernel(rt::Device& dev, const rt::CompiledKernel& k, const std::vector<float>& x,
                                           size_t out_elements) {
  const rt::DeviceArray args[] = {poisoned(dev, dtypes::float32, out_elements), put(dev, dtypes::float32, x)};
  k.launch(dev, args);
  return get<float>(dev, args[0]);
}

// The emulated AMD targets (for AMD-only kernels: MFMA, LDS DMA).
inline std::vector<std::string> emulators() {
#ifdef WEFT_HAVE_LLVM
  return {"emu:gfx950", "emu:gfx942"};
#else
  static const bool said = (std::cerr << "kernel tests: built without LLVM; the emulator runs are skipped\n", true);
  (void)said;
  return {};
#endif
}

// Whether an NVIDIA GPU can be opened here (asked once; the reason is printed when not).
inline bool cuda_present() {
  static const bool present = [] {
    try {
      auto d = rt::open_device("cuda");
      std::cerr << "kernel tests: also running on " << d->name() << "\n";
      return true;
    } catch (const std::exception& e) {
      std::cerr << "kernel tests: CUDA runs skipped: " << e.what() << "\n";
      return false;
    }
  }();
  return present;
}

// The devices every target-independent kernel test runs on.
inline std::vector<std::string> devices() {
  std::vector<std::string> out = emulators();
  if (cuda_present()) out.push_back("cuda");
  return out;
}

}  // namespace weft::testing
