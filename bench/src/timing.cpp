#include "weft/bench/timing.h"

#include <algorithm>
#include <chrono>

namespace weft::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double hold_for(double enqueue_seconds) { return std::clamp(kHoldFactor * enqueue_seconds, kMinHold, kMaxHold); }

Timing time_on(rt::Device& device, const std::function<void()>& launch, const Options& options) {
  double enqueue = 0;  // the host's time to make the last warm-up call (its launches, not their run)
  for (int i = 0; i < options.warmup; ++i) {
    device.synchronize();
    const auto start = std::chrono::steady_clock::now();
    launch();
    enqueue = seconds_since(start);
  }
  device.synchronize();
  Timing t;
  const double hold = hold_for(enqueue);
  for (int i = 0; i < options.repetitions; ++i) {
    // The host's time from before the hold's launch to the call's last launch (the GPU starts
    // spinning a little later, so a call counted here as fitting its hold did).
    const auto began = std::chrono::steady_clock::now();
    const bool held = options.hold && device.hold(hold);
    double enqueued = 0;
    t.seconds.push_back(rt::time_on_device(device, [&] {
      launch();
      enqueued = seconds_since(began);
    }));
    if (held) {
      t.hold_s = hold;
      if (enqueued > hold) ++t.holds_outlasted;
    }
  }
  return t;
}

Timing time_on_host(const std::function<void()>& work, const Options& options) {
  for (int i = 0; i < options.warmup; ++i) work();
  Timing t;
  for (int i = 0; i < options.repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    t.seconds.push_back(seconds_since(start));
  }
  return t;
}

}  // namespace weft::bench
