// The one timing method of `weft bench`: warm-up launches, then each repetition timed alone,
// with the device's events for device work (GPU events on CUDA and HIP; the host clock around
// the emulator's launches, which run to completion) and the host clock for host peers.
//
// On a GPU each timed call starts behind a hold (rt::Device::hold, Options::hold): the device
// spins while the host enqueues the start event, the call's launches and the end event, so the
// events time the device's work alone, launches back to back, as NVBench's blocking kernel and
// Triton's do_bench (behind its cache flush) do. Without it the GPU idles at the start event
// until the host has made the first launch, and a call of a few microseconds is timed with the
// host's launch latency inside. The hold lasts hold_for(the last warm-up call's enqueue time on
// the host); a timed call whose enqueue outlasts it is timed with the excess inside (never less
// than the device's time), as is one that waits for the GPU on the host partway through (a hold
// cannot cover that). The PyTorch and Triton peers (framework_peer.cpp) are timed the same way,
// behind torch.cuda._sleep, with the same rule.
#pragma once

#include <functional>

#include "weft/bench/result.h"
#include "weft/bench/suites.h"
#include "weft/runtime/device.h"

namespace weft::bench {

// The hold's rule: kHoldFactor times the host's enqueue time, within [kMinHold, kMaxHold] seconds.
inline constexpr double kHoldFactor = 4, kMinHold = 20e-6, kMaxHold = 10e-3;
double hold_for(double enqueue_seconds);

Timing time_on(rt::Device& device, const std::function<void()>& launch, const Options& options);
Timing time_on_host(const std::function<void()>& work, const Options& options);

}  // namespace weft::bench
