// weft bench's library: the statistics, the comparison, the table, the JSON and the SVG from
// made-up results, and a real gemm line on the emulator (its check must pass, and a wrong peer
// must make it fail).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <regex>

#include "occurrences.h"
#include "weft/bench/report.h"
#include "weft/bench/suites.h"
#include "weft/bench/timing.h"
#include "weft/dsl/error.h"
#include "weft/runtime/nvrtc.h"

using weft::testing::occurrences;

using namespace weft;
using namespace weft::bench;

namespace {

// One quick repetition of a suite on `device` (no warm-up), its inputs drawn from `seed`. (Only
// the emulator's cases use it, which need LLVM: [[maybe_unused]] keeps -Werror quiet without.)
[[maybe_unused]] Options one_run(const std::string& device, uint64_t seed) {
  Options o;
  o.device = device;
  o.repetitions = 1;
  o.warmup = 0;
  o.seed = seed;
  return o;
}

Result made_up(bool with_peer) {
  Result r;
  r.suite = "gemm";
  r.kernel = "k\"1";
  r.size = "64x64x64";
  r.device = "emu:gfx950";
  r.weft.seconds = {3e-3, 1e-3, 2e-3};
  if (with_peer) {
    r.peer = "Peer <lib>";
    r.peer_device = "host CPU";
    r.peer_timing.seconds = {4e-3, 4e-3};
  }
  r.work = 2e9;
  r.unit_scale = 1e12;
  r.unit = "TFLOP/s";
  r.ceiling = 10;
  r.ceiling_source = "a datasheet";
  r.check = {true, 1e-6, 1e-3, "Peer"};
  return r;
}

// A device that runs nothing: it records the order of what it is asked to do ("hold", "event",
// "launch", "sync") and the holds' lengths; its events are one millisecond apart.
class RecordingDevice : public rt::Device {
 public:
  explicit RecordingDevice(bool can_hold) : can_hold_(can_hold) {}
  std::string name() const override { return "recording"; }
  std::string arch() const override { return "sm_90"; }
  rt::Buffer allocate(size_t bytes, std::string) override { return {1 << 20, bytes}; }
  void free(const rt::Buffer&) override {}
  void copy_to_device(const rt::Buffer&, std::span<const uint8_t>) override {}
  void copy_from_device(std::span<uint8_t>, const rt::Buffer&) override {}
  void copy_on_device(const rt::Buffer&, const rt::Buffer&, size_t) override {}
  std::shared_ptr<rt::Module> load(std::vector<uint8_t>) override { throw Error("not used"); }
  void launch(rt::Module&, const std::string&, rt::Dim3, rt::Dim3, std::span<const rt::Arg>, rt::LaunchMode) override {}
  void synchronize() override { log.push_back("sync"); }
  std::shared_ptr<rt::Event> record_event() override {
    log.push_back("event");
    return std::make_shared<rt::Event>();
  }
  double elapsed_seconds(const rt::Event&, const rt::Event&) override { return 1e-3; }
  bool hold(double seconds) override {
    if (!can_hold_) return false;
    log.push_back("hold");
    holds.push_back(seconds);
    return true;
  }
  // What a benchmarked call does: one launch that takes the host `enqueue` seconds.
  void call(double enqueue) {
    log.push_back("launch");
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(enqueue);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  std::vector<std::string> log;
  std::vector<double> holds;

 private:
  bool can_hold_;
};

}  // namespace

TEST_CASE("bench: each timed call starts behind a hold of four times the host's enqueue time, in [20 us, 10 ms]") {
  Options o;
  o.warmup = 2;
  o.repetitions = 3;
  for (const double enqueue : {0.0, 1e-3, 5e-3}) {
    CAPTURE(enqueue);
    RecordingDevice d(true);
    const Timing t = time_on(d, [&] { d.call(enqueue); }, o);
    const std::vector<std::string> want = {"sync", "launch", "sync", "launch", "sync",  // warm-up, each call's enqueue timed alone
                                           "hold", "event", "launch", "event", "hold", "event", "launch", "event", "hold", "event", "launch", "event"};
    CHECK(d.log == want);
    REQUIRE(d.holds.size() == 3);
    // (The host may take longer than the enqueue asked for, never less.)
    CHECK(d.holds[0] >= std::clamp(4 * enqueue, 20e-6, 10e-3));
    CHECK(d.holds[0] <= 10e-3);
    if (enqueue == 5e-3) CHECK(d.holds[0] == 10e-3);
    CHECK(d.holds[1] == d.holds[0]);
    CHECK(t.hold_s == d.holds[0]);
    CHECK(t.seconds == std::vector<double>{1e-3, 1e-3, 1e-3});
  }
}

TEST_CASE("bench: a timed call the host takes longer to enqueue than its hold is counted") {
  Options o;
  o.warmup = 1;
  o.repetitions = 3;
  RecordingDevice d(true);
  int calls = 0;
  // The second timed call takes 20 ms to enqueue, longer than any hold (10 ms at most); the
  // others take none, though a busy host may stretch them past their short hold too.
  const Timing t = time_on(d, [&] { d.call(calls++ == 2 ? 20e-3 : 0.0); }, o);
  CHECK(t.hold_s > 0);
  CHECK(t.holds_outlasted >= 1);
  CHECK(t.holds_outlasted <= 3);
  Result r = made_up(false);
  r.weft.holds_outlasted = 2;
  CHECK(occurrences(json({"weft bench", "d", "h", "0.1.0"}, {r}), "\"holds_outlasted\": 2,") == 1);
  r.weft.seconds = {20e-6, 17.5e-6, 30e-6};  // and the table says so, in microseconds
  const std::string line = table({r});
  CHECK(line.find("20.0 us, ") != std::string::npos);
  CHECK(line.find(" (2 of 3 calls outlasted the hold)") != std::string::npos);
}

TEST_CASE("bench: --no-hold, and a device that cannot hold, time calls on an idle device with hold_s 0") {
  Options o;
  o.warmup = 1;
  o.repetitions = 2;
  RecordingDevice cannot(false);
  CHECK(time_on(cannot, [&] { cannot.call(0); }, o).hold_s == 0);
  o.hold = false;
  RecordingDevice can(true);
  CHECK(time_on(can, [&] { can.call(0); }, o).hold_s == 0);
  CHECK(can.holds.empty());
  Result r = made_up(true);
  r.weft.hold_s = 2.5e-5;
  const std::string j = json({"weft bench", "d", "h", "0.1.0"}, {r});
  CHECK(occurrences(j, "\"hold_s\": 2.5e-05") == 1);
  CHECK(occurrences(j, "\"hold_s\": 0,") == 1);  // the peer's
}

TEST_CASE("bench: median and min over repetitions and the ratio is peer time over weft time") {
  const Result r = made_up(true);
  CHECK(r.weft.median() == 2e-3);
  CHECK(r.weft.min() == 1e-3);
  CHECK(r.peer_timing.median() == 4e-3);  // even count: the mean of the middle two
  CHECK(r.ratio() == doctest::Approx(2.0));
  CHECK(r.throughput(r.weft) == doctest::Approx(1.0));  // 2e9 flops in 2 ms = 1 TFLOP/s
  CHECK(made_up(false).ratio() == 0);
}

TEST_CASE("bench: the table has one line per result and says when a check failed") {
  Result bad = made_up(true);
  bad.check = {false, 0.5, 1e-3, "Peer"};
  const std::string t = table({made_up(true), made_up(false), bad});
  CHECK(occurrences(t, "gemm/k\"1") == 3);
  CHECK(t.find("2.00x") != std::string::npos);
  CHECK(t.find("(weft 10%)") != std::string::npos);  // 1 TFLOP/s of a 10 TFLOP/s ceiling
  CHECK(t.find("FAILED 5.0e-01 > 1e-03 vs Peer") != std::string::npos);
}

TEST_CASE("bench: the JSON escapes strings and writes null where there is no peer") {
  const std::string j = json({"weft bench \"x\"", "2026-12-03T00:00:00Z", "host", "0.1.0"}, {made_up(true), made_up(false)});
  CHECK(j.find("\"format\": \"weft-bench-1\"") != std::string::npos);
  CHECK(j.find("\"command\": \"weft bench \\\"x\\\"\"") != std::string::npos);
  CHECK(j.find("\"kernel\": \"k\\\"1\"") != std::string::npos);
  CHECK(occurrences(j, "\"peer\": null") == 1);
  CHECK(occurrences(j, "\"ratio\": 2,") == 1);
  CHECK(occurrences(j, "\"median_s\": 0.002") == 2);
}

TEST_CASE("bench: the SVG draws a ratio bar per peer line and escapes text") {
  const std::string svg = plot_svg({"weft bench gemm", "d", "h", "0.1.0"}, {made_up(true), made_up(false)});
  CHECK(svg.starts_with("<svg "));
  CHECK(svg.find("Peer &lt;lib&gt;") != std::string::npos);
  CHECK(svg.find("Peer <lib>") == std::string::npos);
  // background + ratio (1) + ceiling (weft and peer, then weft) + time (2)
  CHECK(occurrences(svg, "<rect") == 1 + 1 + 3 + 2);
}

TEST_CASE("bench: an unknown suite or kernel is an error listing what exists") {
  try {
    run("nope", {});
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("no suite or kernel named 'nope'") != std::string::npos);
    CHECK(m.find("gemm: hk_gemm hopper_gemm hopper_gemm_64b hopper_gemm_ping_pong hopper_gemm_ping_pong_wide hopper_gemm_direct hopper_gemm_cluster "
                 "hopper_gemm_budgets hopper_gemm_fp8 hopper_gemm_fp8_64b hopper_gemm_fp8_ping_pong hopper_gemm_fp8_ping_pong_wide "
                 "hopper_gemm_fp8_budgets mma_gemm") != std::string::npos);
  }
  Options zero;
  zero.repetitions = 0;
  CHECK_THROWS_WITH_AS(run("gemm", zero), doctest::Contains("repetitions >= 1"), Error);
}

#ifdef WEFT_HAVE_LLVM
// The named-only hopper_gemm schedules (and hopper_gemm itself) need an sm_90 device.
TEST_CASE("bench: a hopper_gemm schedule on a device that is not sm_90 is an error naming both") {
  for (const char* kernel : {"hopper_gemm_64b", "hopper_gemm_ping_pong", "hopper_gemm_fp8_ping_pong_wide", "hopper_gemm"}) {
    CAPTURE(kernel);
    const std::string message = std::string(kernel) + " does not run on emu:gfx950";
    CHECK_THROWS_WITH_AS(run(kernel, one_run("emu:gfx950", 1)), doctest::Contains(message.c_str()), Error);
  }
}

TEST_CASE("bench: the gemm line on the emulator matches its peer on a ragged shape") {
  Options o = one_run("emu:gfx950", 12345);
  o.sizes = {{72, 40, 24}};
  const std::vector<Result> results = run("hk_gemm", o);
  REQUIRE(results.size() == 1);
  const Result& r = results[0];
  CHECK(r.kernel == "hk_gemm");
  CHECK(r.size == "72x40x24");
  CHECK(r.has_peer());
  CHECK(r.check.ok);
  CHECK(r.check.max_error <= 1e-3);
  CHECK(r.weft.seconds.size() == 1);
}
#endif

#ifdef WEFT_HAVE_LLVM
TEST_CASE("bench: the moe suite's route+align, dispatch, combine and grouped GEMM lines on the emulator, checked against the host reference") {
  Options o = one_run("emu:gfx942", 777);
  const std::vector<Result> results = run("moe", o);
  REQUIRE(results.size() == 5);
  CHECK(results[0].kernel == "route+align");
  CHECK(results[0].size == "T=256 E=64 k=8");
  CHECK(results[1].kernel == "route+align");
  CHECK(results[1].size == "T=256 E=64 k=8 sigmoid G=8/4");
  CHECK(results[2].kernel == "dispatch");
  CHECK(results[3].kernel == "combine");
  CHECK(results[4].kernel == "grouped_gemm");
  CHECK(results[4].unit == "TFLOP/s");
  CHECK(results[4].size == "small T=256 E=8 k=2 N=64 K=64");
  for (const Result& r : results) {
    CAPTURE(r.kernel);
    CHECK(r.check.ok);
    CHECK(!r.has_peer());  // no framework peer on the emulator
  }
  for (const Result& r : {results[2], results[3]}) {
    CHECK(r.unit == "TB/s");
    CHECK(r.work > 0);
  }
  CHECK(results[2].check.max_error == 0);  // a copy: bit for bit
  o.sizes = {{4}};
  CHECK_THROWS_WITH_AS(run("moe", o), doctest::Contains("--sizes is not taken"), Error);
}
#endif

#ifdef WEFT_HAVE_LLVM
TEST_CASE("bench: the attention suite's flash_attention lines on the emulator, causal and not, checked against the host softmax") {
  Options o = one_run("emu:gfx950", 4242);
  const std::vector<Result> results = run("attention", o);
  REQUIRE(results.size() == 2);
  CHECK(results[0].size == "BH=2 S=128 d=64");
  CHECK(results[1].size == "BH=2 S=128 d=64 causal");
  CHECK(results[1].work == doctest::Approx(results[0].work / 2));  // causal: half the products
  for (const Result& r : results) {
    CAPTURE(r.size);
    CHECK(r.kernel == "flash_attention");
    CHECK(r.unit == "TFLOP/s");
    CHECK(r.check.ok);
    CHECK(r.check.max_error > 0);  // bf16: a real comparison, not a copy
    CHECK(!r.has_peer());          // no framework peer on the emulator
  }
  o.kernel = "other";
  CHECK_THROWS_WITH_AS(run("attention", o), doctest::Contains("no kernel other (flash_attention)"), Error);
}
#endif

TEST_CASE("bench: a line that could not run says why in the table and the JSON and is left out of the chart") {
  Result skipped;
  skipped.suite = "compile";
  skipped.kernel = "mma_gemm";
  skipped.device = "host CPU";
  skipped.not_run = "NVRTC was not found";
  const std::string t = table({skipped});
  CHECK(t.find("not run: NVRTC was not found") != std::string::npos);
  CHECK(json({"c", "d", "h", "v"}, {skipped}).find("\"not_run\": \"NVRTC was not found\"") != std::string::npos);
  CHECK(occurrences(plot_svg({"c", "d", "h", "v"}, {skipped}), "<rect") == 1);  // the background only
}

TEST_CASE("bench: the compile suite measures every stage of the kernels this build can compile") {
  Options o;
  o.repetitions = 1;
  o.warmup = 0;
  const std::vector<Result> results = run("compile", o);
  REQUIRE(results.size() == 4);
  for (const Result& r : results) {
    CAPTURE(r.kernel);
    const bool nvidia = r.kernel == "mma_gemm" || r.kernel == "hopper_gemm";
#ifdef WEFT_HAVE_LLVM
    const bool can = nvidia ? weft::rt::nvrtc_available() : true;
#else
    const bool can = nvidia && weft::rt::nvrtc_available();
#endif
    if (!can) {
      CHECK(!r.not_run.empty());
      continue;
    }
    CHECK(r.not_run.empty());
    CHECK(r.weft.median() > 0);
    CHECK(r.details.size() == (nvidia ? 3u : 6u));
  }
}
