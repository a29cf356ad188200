// The emulator device's options, from C++ (open_device(spec, EmulatorOptions)) and from the
// environment (WEFT_EMU_MAX_INSTRUCTIONS, WEFT_EMU_CHECKS, WEFT_EMU_SCHEDULE_SEED, WEFT_EMU_TIMELINE):
// the per-wave instruction budget, the check for reads of LDS never written, hazard mode and the
// timeline each launch writes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "skip.h"
#include "weft/dsl/builder.h"
#include "weft/runtime/kernel.h"

using namespace weft;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Sets an environment variable for one scope.
// Sets an environment variable for a scope and puts back what it was (the suite runs with
// WEFT_EMU_CHECKS=hazards, tests/CMakeLists.txt).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

#ifdef WEFT_HAVE_LLVM
// out[l] = the sum over r < repeat of in[(l + r) % 64]: a long loop of real work.
UOp long_loop(int64_t repeat) {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL), r = range(repeat, 1, AxisType::REDUCE);
  return sink({"long_loop"}, {out[l].store(in[(l + r) % 64].load().reduce(Op::ADD, {r})).end({l})});
}

// Each lane stores shared[l] of a 128-element tile and reads shared[64 + l], which no lane wrote.
UOp unwritten_lds_read() {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp shared = alloc_shared({128}, dtypes::float32, 0);
  UOp st = shared[l].store(in[l].load());
  return sink({"unwritten_lds"}, {out[l].store(shared.after({st})[l + 64].load()).end({l})});
}

std::string run(rt::Device& dev, const UOp& kernel) {
  return error_of([&] {
    const auto k = rt::CompiledKernel::compile(dev, kernel);
    const rt::OwnedArray in(dev, rt::upload(dev, dtypes::float32, std::vector<uint8_t>(256, 0), "in"));
    const rt::OwnedArray out(dev, rt::upload(dev, dtypes::float32, std::vector<uint8_t>(256, 0xCD), "out"));
    const rt::DeviceArray args[] = {out, in};
    k.launch(dev, args);
  });
}
#endif

}  // namespace

TEST_CASE("the emulator device's instruction budget: from C++, from WEFT_EMU_MAX_INSTRUCTIONS, and lifted with 0") {
#ifndef WEFT_HAVE_LLVM
  WEFT_SKIP("built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators");
#else
  const UOp kernel = long_loop(20000);
  rt::EmulatorOptions small;
  small.max_wave_instructions = 5000;
  auto limited = rt::open_device("emu:gfx950", small);
  const std::string e = run(*limited, kernel);
  INFO(e);
  CHECK(e.find("kernel long_loop, PC 0x") != std::string::npos);
  CHECK(e.find("workgroup (0,0,0), wave 0") != std::string::npos);
  CHECK(e.find("reached its budget of 5000 instructions") != std::string::npos);
  CHECK(run(*rt::open_device("emu:gfx950"), kernel).empty());  // the default budget is far above it
  {
    const ScopedEnv env("WEFT_EMU_MAX_INSTRUCTIONS", "4000");
    CHECK(run(*rt::open_device("emu:gfx942"), kernel).find("reached its budget of 4000 instructions") != std::string::npos);
  }
  {
    const ScopedEnv env("WEFT_EMU_MAX_INSTRUCTIONS", "0");  // no limit
    CHECK(run(*rt::open_device("emu:gfx942"), kernel).empty());
  }
  {
    const ScopedEnv env("WEFT_EMU_MAX_INSTRUCTIONS", "lots");
    CHECK(error_of([] { rt::open_device("emu:gfx950"); }).find("WEFT_EMU_MAX_INSTRUCTIONS='lots' is not a number") != std::string::npos);
  }
#endif
}

TEST_CASE("the emulator device's LDS read check: off by default, on from C++ or WEFT_EMU_CHECKS=lds-reads") {
#ifndef WEFT_HAVE_LLVM
  WEFT_SKIP("built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators");
#else
  const UOp kernel = unwritten_lds_read();
  {
    const ScopedEnv plain("WEFT_EMU_CHECKS", "");  // no checks asked for
    CHECK(run(*rt::open_device("emu:gfx950"), kernel).empty());
  }
  rt::EmulatorOptions checked;
  checked.check_lds_reads = true;
  const std::string e = run(*rt::open_device("emu:gfx950", checked), kernel);
  INFO(e);
  CHECK(e.find("kernel unwritten_lds") != std::string::npos);
  CHECK(e.find("read of LDS this workgroup never wrote") != std::string::npos);
  {
    const ScopedEnv env("WEFT_EMU_CHECKS", "lds-reads");
    CHECK(run(*rt::open_device("emu:gfx942"), kernel).find("read of LDS this workgroup never wrote") != std::string::npos);
  }
  {
    const ScopedEnv env("WEFT_EMU_CHECKS", "lds-reads,races");
    CHECK(error_of([] { rt::open_device("emu:gfx950"); }).find("unknown check 'races'") != std::string::npos);
  }
#endif
}

TEST_CASE("the emulator device's hazard mode: off by default, on from C++ or WEFT_EMU_CHECKS=hazards, its seed from WEFT_EMU_SCHEDULE_SEED") {
  {
    const ScopedEnv checks("WEFT_EMU_CHECKS", "none");
    CHECK_FALSE(rt::EmulatorOptions::from_environment().sanitize);
  }
  {
    const ScopedEnv checks("WEFT_EMU_CHECKS", "hazards,lds-reads");
    const ScopedEnv seed("WEFT_EMU_SCHEDULE_SEED", "12345");
    const rt::EmulatorOptions o = rt::EmulatorOptions::from_environment();
    CHECK(o.sanitize);
    CHECK(o.check_lds_reads);
    CHECK(o.schedule_seed == 12345);
  }
  {
    const ScopedEnv seed("WEFT_EMU_SCHEDULE_SEED", "soon");
    CHECK(error_of([] { rt::EmulatorOptions::from_environment(); }).find("WEFT_EMU_SCHEDULE_SEED='soon' is not a number") != std::string::npos);
  }
#ifdef WEFT_HAVE_LLVM
  // The unwritten read is a hazard report, not a plain error, when the device runs in hazard mode.
  rt::EmulatorOptions hazards;
  hazards.sanitize = true;
  const std::string e = run(*rt::open_device("emu:gfx950", hazards), unwritten_lds_read());
  INFO(e);
  CHECK(e.find("hazard mode found") != std::string::npos);
  CHECK(e.find("uninitialized read: kernel unwritten_lds") != std::string::npos);
#endif
}

TEST_CASE("the emulator device's timeline: each launch writes its first workgroup's, as a trace, a picture or a table") {
  {
    const ScopedEnv env("WEFT_EMU_TIMELINE", "/tmp/t.json");
    CHECK(rt::EmulatorOptions::from_environment().timeline_path == "/tmp/t.json");
  }
  CHECK(rt::EmulatorOptions::from_environment().timeline_path.empty());
#ifdef WEFT_HAVE_LLVM
  char dir_template[] = "/tmp/weft-timeline-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  for (const char* suffix : {".json", ".svg", ".txt"}) {
    rt::EmulatorOptions o;
    o.timeline_path = dir + "/launch{launch}" + suffix;
    auto dev = rt::open_device("emu:gfx950", o);
    CHECK(run(*dev, long_loop(8)).empty());
    CHECK(run(*dev, long_loop(8)).empty());
    const std::string first = read(dir + "/launch0" + suffix), second = read(dir + "/launch1" + suffix);
    INFO(suffix);
    CHECK(!second.empty());
    if (std::string(suffix) == ".json") CHECK(first.find("\"traceEvents\"") != std::string::npos);
    if (std::string(suffix) == ".svg") CHECK(first.starts_with("<svg"));
    if (std::string(suffix) == ".txt") CHECK(first.find("MFMA busy") != std::string::npos);
  }
  rt::EmulatorOptions nowhere;
  nowhere.timeline_path = dir + "/no/such/dir/t.json";
  CHECK(run(*rt::open_device("emu:gfx950", nowhere), long_loop(8)).find("cannot write the timeline") != std::string::npos);
  std::filesystem::remove_all(dir);
#endif
}
