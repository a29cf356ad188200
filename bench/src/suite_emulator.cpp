// The emulator suite: how fast weft's CDNA emulator runs the kernels users validate on it.
// hk_gemm on emu:gfx950 and emu:gfx942 (or the emulator --device names), each launch checked
// against Eigen. No peer runs here: tinygrad's emulator, the nearest one, is a Python program
// outside this process (issue 13 quotes it at 380-640 ms for the seed's 512^3 kernel; quoted, so
// no ratio is drawn).
#include "suite_common.h"
#include "weft/dsl/error.h"

namespace weft::bench {

namespace {

std::vector<Result> run_emulator(const Options& o) {
  if (!o.kernel.empty() && o.kernel != "hk_gemm") throw Error("weft bench emulator: it runs hk_gemm, not " + o.kernel);
  const std::vector<std::string> devices = o.device.empty() ? std::vector<std::string>{"emu:gfx950", "emu:gfx942"} : std::vector<std::string>{o.device};
  std::vector<Result> out;
  for (const std::string& name : devices) {
    if (!name.starts_with("emu:")) throw Error("weft bench emulator: --device must be an emulator (emu:gfx950, emu:gfx942), not " + name);
    Options one = o;
    one.device = name;
    auto device = open(one, name);
    for (const auto& s : sizes_or(o, {{512, 512, 512}})) {
      tell(o, "emulator hk_gemm " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]) + " on " + name);
      Result r = hk_gemm_line(*device, s[0], s[1], s[2], o, false);
      r.suite = "emulator";
      r.unit_scale = 1e9;
      r.unit = "GFLOP/s emulated";
      if (name == "emu:gfx950" && s == std::vector<int64_t>{512, 512, 512}) r.details.push_back({"issue 13's target, ms per launch", 10});
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

Suite emulator_suite() {
  return {"emulator", "the CDNA emulator's own speed: hk_gemm per launch on emu:gfx950 and emu:gfx942", {"hk_gemm"}, run_emulator};
}

}  // namespace weft::bench
