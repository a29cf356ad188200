#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "weft/bench/report.h"

namespace weft::bench {

namespace {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Microseconds below a millisecond (a routing call's 17.5 us, not 0.018 ms), else milliseconds.
// ("us": the table pads cells by bytes, and a UTF-8 µ would shift the row.)
std::string duration(double seconds) {
  if (seconds < 1e-3) return format("%.1f us", seconds * 1e6);
  return format(seconds * 1e3 < 10 ? "%.3f ms" : "%.1f ms", seconds * 1e3);
}

std::string speed(const Result& r, const Timing& t) {
  std::string s = duration(t.median());
  if (const double tp = r.throughput(t); tp > 0) s += ", " + format(tp < 10 ? "%.2f " : "%.1f ", tp) + r.unit;
  // Calls the host took longer to make than their hold lasted hold some host latency (timing.h).
  if (t.holds_outlasted > 0) s += " (" + std::to_string(t.holds_outlasted) + " of " + std::to_string(t.seconds.size()) + " calls outlasted the hold)";
  return s;
}

std::string ceiling_text(const Result& r) {
  if (r.ceiling <= 0) return "-";
  return format(r.ceiling < 10 ? "%.2f " : "%.0f ", r.ceiling) + r.unit + format(" (weft %.0f%%)", 100 * r.throughput(r.weft) / r.ceiling);
}

std::string check_text(const Check& c) {
  if (c.against.empty()) return "-";
  return (c.ok ? "ok " : "FAILED ") + format("%.1e", c.max_error) + (c.ok ? "" : format(" > %.0e", c.tolerance)) + " vs " + c.against;
}

std::vector<std::string> row(const Result& r) {
  if (!r.not_run.empty()) return {r.suite + "/" + r.kernel, r.size, r.device, "not run: " + r.not_run, "-", "-", "-", "-"};
  return {r.suite + "/" + r.kernel, r.size, r.device, speed(r, r.weft), r.has_peer() ? r.peer + ": " + speed(r, r.peer_timing) : "-",
          r.has_peer() ? format("%.2fx", r.ratio()) : "-", ceiling_text(r), check_text(r.check)};
}

// JSON strings: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    }
    else out += c;
  }
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? format("%.9g", v) : "null"; }

std::string timing_json(const Timing& t) {
  std::string s = "{\"median_s\": " + number(t.median()) + ", \"min_s\": " + number(t.min()) + ", \"hold_s\": " + number(t.hold_s) +
                  ", \"holds_outlasted\": " + std::to_string(t.holds_outlasted) + ", \"seconds\": [";
  for (size_t i = 0; i < t.seconds.size(); ++i) s += (i ? ", " : "") + number(t.seconds[i]);
  return s + "]}";
}

}  // namespace

std::string table(const std::vector<Result>& results) {
  std::vector<std::vector<std::string>> rows = {{"kernel", "size", "device", "weft", "peer", "ratio", "ceiling", "check"}};
  for (const Result& r : results) rows.push_back(row(r));
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& cells : rows)
    for (size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], cells[c].size());
  std::ostringstream out;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < rows[i].size(); ++c) {
      out << rows[i][c];
      if (c + 1 < rows[i].size()) out << std::string(width[c] - rows[i][c].size() + 2, ' ');
    }
    out << "\n";
    if (i == 0 || results[i - 1].details.empty()) continue;
    out << "    ";
    for (const auto& [name, value] : results[i - 1].details) out << name << " " << format("%.3g", value) << "   ";
    out << "\n";
  }
  out << "ratio: the peer's time over weft's (above 1, weft is faster); check: max |weft - reference| / max |reference|\n";
  return out.str();
}

std::string json(const RunInfo& info, const std::vector<Result>& results) {
  std::ostringstream o;
  o << "{\n  \"format\": \"weft-bench-1\",\n  \"command\": " << quoted(info.command) << ",\n  \"date\": " << quoted(info.date)
    << ",\n  \"host\": " << quoted(info.host) << ",\n  \"weft_version\": " << quoted(info.weft_version) << ",\n  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    o << (i ? "," : "") << "\n    {\"suite\": " << quoted(r.suite) << ", \"kernel\": " << quoted(r.kernel) << ", \"size\": " << quoted(r.size)
      << ", \"device\": " << quoted(r.device) << ",\n     \"weft\": " << timing_json(r.weft) << ",\n     \"peer\": ";
    if (r.has_peer()) o << "{\"name\": " << quoted(r.peer) << ", \"device\": " << quoted(r.peer_device) << ", \"timing\": " << timing_json(r.peer_timing) << "}";
    else o << "null";
    o << ",\n     \"ratio\": " << (r.has_peer() ? number(r.ratio()) : "null") << ", \"work\": " << number(r.work)
      << ", \"unit\": " << quoted(r.unit) << ", \"unit_scale\": " << number(r.unit_scale)
      << ", \"weft_throughput\": " << (r.work > 0 ? number(r.throughput(r.weft)) : "null")
      << ", \"peer_throughput\": " << (r.work > 0 && r.has_peer() ? number(r.throughput(r.peer_timing)) : "null")
      << ",\n     \"ceiling\": " << (r.ceiling > 0 ? number(r.ceiling) : "null") << ", \"ceiling_source\": " << quoted(r.ceiling_source)
      << ",\n     \"check\": ";
    if (r.check.against.empty()) o << "null";
    else
      o << "{\"ok\": " << (r.check.ok ? "true" : "false") << ", \"max_error\": " << number(r.check.max_error) << ", \"tolerance\": "
        << number(r.check.tolerance) << ", \"against\": " << quoted(r.check.against) << "}";
    o << ",\n     \"not_run\": " << (r.not_run.empty() ? "null" : quoted(r.not_run));
    o << ",\n     \"details\": {";
    for (size_t d = 0; d < r.details.size(); ++d) o << (d ? ", " : "") << quoted(r.details[d].first) << ": " << number(r.details[d].second);
    o << "}}";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

}  // namespace weft::bench
