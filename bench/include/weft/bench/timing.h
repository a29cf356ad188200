// The one timing method of `weft bench`: warm-up launches, then each repetition timed alone,
// with the device's events for device work (GPU events on CUDA and HIP; the host clock around
// the emulator's launches, which run to completion) and the host clock for host peers.
//
// On a GPU each timed call starts behind a hold (rt::Device::hold, Options::hold): the device
// spins while the host enqueues the start event, the call's launches and the end event, so the
// events time the device's work alone, launches back to back, as NVBench's blocking kernel and
// Triton's do_bench (behind its cache flush) do. Without it the GPU idles at the start event
// until the host has made the first launch, and a call of a few microseconds is timed with the
// host's launch latency inside. The hold lasts four times the last warm-up call's enqueue time
// on the host, at least 20 µs and at most 10 ms; a timed call whose enqueue outlasts it is timed
// with the excess inside (never less than the device's time). The PyTorch and Triton peers
// (framework_peer.cpp) are timed the same way, behind torch.cuda._sleep.
#pragma once

#include <functional>

#include "weft/bench/result.h"
#include "weft/bench/suites.h"
#include "weft/runtime/device.h"

namespace weft::bench {

Timing time_on(rt::Device& device, const std::function<void()>& launch, const Options& options);
Timing time_on_host(const std::function<void()>& work, const Options& options);

}  // namespace weft::bench
