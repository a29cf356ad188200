#include "weft/bench/suites.h"

#include "suite_common.h"
#include "weft/dsl/error.h"

namespace weft::bench {

std::unique_ptr<rt::Device> open(const Options& options, const std::string& fallback) {
  return rt::open_device(options.device.empty() ? fallback : options.device);
}

std::vector<std::vector<int64_t>> sizes_or(const Options& options, std::vector<std::vector<int64_t>> defaults) {
  if (options.sizes.empty()) return defaults;
  std::vector<std::vector<int64_t>> out;
  for (const auto& s : options.sizes) {
    if (s.size() == 1) out.push_back({s[0], s[0], s[0]});
    else if (s.size() == 3) out.push_back(s);
    else throw Error("weft bench: a size is N or M,N,K, not " + std::to_string(s.size()) + " numbers");
  }
  return out;
}

void tell(const Options& options, const std::string& what) {
  if (options.progress) options.progress(what);
}

void tell_framework(const Options& options, const std::string& what) {
  if (options.framework_peers) tell(options, what);
}

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = {gemm_suite(), attention_suite(), moe_suite(), emulator_suite(), compile_suite()};
  return all;
}

std::vector<Result> run(const std::string& what, Options options) {
  if (options.repetitions < 1 || options.warmup < 0) throw Error("weft bench: repetitions >= 1 and warm-up >= 0");
  for (const Suite& s : suites())
    if (s.name == what) return s.run(options);
  // A kernel: the first suite that measures it against a peer (gemm before emulator/compile).
  for (const Suite& s : suites())
    for (const std::string& k : s.kernels)
      if (k == what) {
        options.kernel = what;
        return s.run(options);
      }
  std::string known;
  for (const Suite& s : suites()) {
    known += "\n  " + s.name + ":";
    for (const std::string& k : s.kernels) known += " " + k;
  }
  throw Error("weft bench: no suite or kernel named '" + what + "'; suites and their kernels:" + known);
}

}  // namespace weft::bench
