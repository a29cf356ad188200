// weft bench --plot: a chart of a run as plain SVG text (no plotting stack needed on the GPU
// machines). Up to three panels of horizontal bars, one bar group per result line:
//   - speed over the peer (peer time / weft time), a rule at 1;
//   - throughput as a percentage of the line's ceiling, weft and peer side by side;
//   - weft's median time per launch.
// A panel with nothing to show (no peers, no ceilings) is left out.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "weft/bench/report.h"

namespace weft::bench {

namespace {

constexpr int kWidth = 900, kLabel = 300, kBar = 18, kGap = 8, kPanelTitle = 34;
constexpr const char* kWeftColor = "#3b6fb6";
constexpr const char* kPeerColor = "#c8833a";

std::string escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string num(double v, const char* fmt = "%.3g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

struct Bar {
  double value;
  const char* color;
  std::string text;
};

struct Panel {
  std::string title;
  double rule = -1;  // a vertical rule at this value (ratio 1), or none
  std::vector<std::pair<std::string, std::vector<Bar>>> groups;  // label, bars
};

// Draws `p` from y, returns the y below it.
int draw(std::ostringstream& svg, const Panel& p, int y) {
  double top = p.rule > 0 ? p.rule : 0;
  for (const auto& [label, bars] : p.groups)
    for (const Bar& b : bars) top = std::max(top, b.value);
  top = top > 0 ? top * 1.15 : 1;
  const double scale = (kWidth - kLabel - 20) / top;
  svg << "<text x=\"10\" y=\"" << y + 20 << "\" font-size=\"15\" font-weight=\"bold\">" << escaped(p.title) << "</text>\n";
  y += kPanelTitle;
  const int first = y;
  for (const auto& [label, bars] : p.groups) {
    svg << "<text x=\"" << kLabel - 8 << "\" y=\"" << y + kBar * static_cast<int>(bars.size()) / 2 + 5
        << "\" font-size=\"12\" text-anchor=\"end\">" << escaped(label) << "</text>\n";
    for (const Bar& b : bars) {
      const int w = std::max(1, static_cast<int>(b.value * scale));
      svg << "<rect x=\"" << kLabel << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << kBar - 2 << "\" fill=\"" << b.color << "\"/>\n";
      svg << "<text x=\"" << kLabel + w + 4 << "\" y=\"" << y + kBar - 5 << "\" font-size=\"11\">" << escaped(b.text) << "</text>\n";
      y += kBar;
    }
    y += kGap;
  }
  if (p.rule > 0) {
    const int x = kLabel + static_cast<int>(p.rule * scale);
    svg << "<line x1=\"" << x << "\" y1=\"" << first - 4 << "\" x2=\"" << x << "\" y2=\"" << y << "\" stroke=\"#444\" stroke-dasharray=\"4,3\"/>\n";
  }
  return y + 10;
}

std::string label(const Result& r) { return r.kernel + " " + r.size + " (" + r.device + ")"; }

}  // namespace

std::string plot_svg(const RunInfo& info, const std::vector<Result>& results) {
  Panel ratio{"weft's speed over the peer (peer time / weft time; the dashed rule is 1)", 1, {}};
  Panel ceiling{"throughput as % of the ceiling (blue: weft, orange: the peer)", -1, {}};
  Panel time{"weft, median time (ms)", -1, {}};
  for (const Result& r : results) {
    if (!r.not_run.empty()) continue;
    if (r.has_peer()) ratio.groups.push_back({label(r), {{r.ratio(), kWeftColor, num(r.ratio(), "%.2fx") + " vs " + r.peer}}});
    if (r.ceiling > 0) {
      std::vector<Bar> bars = {{100 * r.throughput(r.weft) / r.ceiling, kWeftColor, num(100 * r.throughput(r.weft) / r.ceiling, "%.1f%%") + " weft"}};
      if (r.has_peer())
        bars.push_back({100 * r.throughput(r.peer_timing) / r.ceiling, kPeerColor, num(100 * r.throughput(r.peer_timing) / r.ceiling, "%.1f%%") + " " + r.peer});
      ceiling.groups.push_back({label(r), bars});
    }
    time.groups.push_back({label(r), {{r.weft.median() * 1e3, kWeftColor, num(r.weft.median() * 1e3) + " ms"}}});
  }
  std::ostringstream body;
  int y = 50;
  for (const Panel* p : {&ratio, &ceiling, &time})
    if (!p->groups.empty()) y = draw(body, *p, y);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << y + 10 << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"22\" font-size=\"16\">" << escaped("weft bench: " + info.command) << "</text>\n"
      << "<text x=\"10\" y=\"40\" font-size=\"11\" fill=\"#555\">" << escaped(info.date + ", " + info.host + ", weft " + info.weft_version) << "</text>\n"
      << body.str() << "</svg>\n";
  return svg.str();
}

}  // namespace weft::bench
