#include "weft/bench/result.h"

#include <algorithm>

namespace weft::bench {

double Timing::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const size_t h = s.size() / 2;
  return s.size() % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

double Timing::min() const { return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end()); }

double Result::ratio() const {
  const double w = weft.median();
  return has_peer() && w > 0 ? peer_timing.median() / w : 0;
}

double Result::throughput(const Timing& t) const {
  const double s = t.median();
  return s > 0 && work > 0 ? work / s / unit_scale : 0;
}

}  // namespace weft::bench
