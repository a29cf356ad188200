#include "timing.h"

#include <chrono>

namespace weft::bench {

Timing time_on(rt::Device& device, const std::function<void()>& launch, const Options& options) {
  for (int i = 0; i < options.warmup; ++i) launch();
  device.synchronize();
  Timing t;
  for (int i = 0; i < options.repetitions; ++i) t.seconds.push_back(rt::time_on_device(device, launch));
  return t;
}

Timing time_on_host(const std::function<void()>& work, const Options& options) {
  for (int i = 0; i < options.warmup; ++i) work();
  Timing t;
  for (int i = 0; i < options.repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    t.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return t;
}

}  // namespace weft::bench
