// The one timing method of `weft bench`: warm-up launches, then each repetition timed alone,
// with the device's events for device work (GPU events on CUDA and HIP; the host clock around
// the emulator's launches, which run to completion) and the host clock for host peers.
#pragma once

#include <functional>

#include "weft/bench/result.h"
#include "weft/bench/suites.h"
#include "weft/runtime/device.h"

namespace weft::bench {

Timing time_on(rt::Device& device, const std::function<void()>& launch, const Options& options);
Timing time_on_host(const std::function<void()>& work, const Options& options);

}  // namespace weft::bench
