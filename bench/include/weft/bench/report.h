// `weft bench`'s outputs: the table it prints, the JSON file (--json) and the SVG chart
// (--plot). The JSON format is documented in docs/PERF.md ("weft bench").
#pragma once

#include <string>
#include <vector>

#include "weft/bench/result.h"

namespace weft::bench {

struct RunInfo {
  std::string command;  // the command line
  std::string date;     // UTC, ISO 8601
  std::string host;     // the machine
  std::string weft_version;
};

// kernel, size, device, weft, peer, ratio, ceiling, check: one line per result.
std::string table(const std::vector<Result>& results);
std::string json(const RunInfo& info, const std::vector<Result>& results);
// Two panels: weft's speed over the peer's per line (1 marked), and each line's throughput as
// a fraction of its ceiling (weft and peer), for lines that have them. Plain SVG, no dependencies.
std::string plot_svg(const RunInfo& info, const std::vector<Result>& results);

}  // namespace weft::bench
