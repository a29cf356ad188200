// The timeline's three outputs: a Chrome trace-event document, an SVG picture and a text table.
#include <algorithm>
#include <array>
#include <map>
#include <utility>
#include <vector>
#include <cstdio>
#include <ostream>
#include <string>

#include "weft/emulator/timeline.h"

namespace weft::emu {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

std::string instruction_text(const WorkgroupRecording& r, uint32_t index) {
  const Inst& in = r.instructions[index];
  if (!in.info) return ".long";
  const auto text = disassemble(in, r.arch);
  return text ? *text : in.info->mnemonic;
}

const char* kind_name(IssueKind k) {
  switch (k) {
    case IssueKind::Valu: return "valu";
    case IssueKind::Mfma: return "mfma";
    case IssueKind::Salu: return "salu";
    case IssueKind::ScalarMemory: return "smem";
    case IssueKind::VectorMemory: return "vmem";
    case IssueKind::Lds: return "lds";
    case IssueKind::Control: return "control";
  }
  return "?";
}

std::string workgroup_name(const Timeline& t) {
  return "workgroup (" + std::to_string(t.workgroup[0]) + "," + std::to_string(t.workgroup[1]) + "," +
         std::to_string(t.workgroup[2]) + ")";
}

constexpr int kMatrixTrackBase = 1000;  // tids of the matrix-core tracks

}  // namespace

void write_chrome_trace(const Timeline& t, const WorkgroupRecording& r, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":"
      << json_string(std::string("weft timeline model of one ") + arch_name(t.model.arch) +
                     " compute unit (a model, not cycle-accurate: docs/emulator.md, Timeline); 1 us on the axis = 1 cycle")
      << ",\"cycles\":" << t.cycles << "},\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":" << json_string("CU model, " + workgroup_name(t))
      << "}}";
  for (const WaveTimeline& w : t.waves)
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << w.wave << ",\"args\":{\"name\":"
        << json_string("wave " + std::to_string(w.wave) + " (SIMD " + std::to_string(w.simd) + ")") << "}}";
  for (size_t s = 0; s < t.simds.size(); ++s)
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << kMatrixTrackBase + s << ",\"args\":{\"name\":"
        << json_string("SIMD " + std::to_string(s) + " matrix core") << "}}";
  const auto slice = [&](const std::string& name, const char* cat, uint64_t start, uint64_t end, size_t tid, const std::string& args) {
    out << ",\n{\"name\":" << json_string(name) << ",\"cat\":\"" << cat << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << tid
        << ",\"ts\":" << start << ",\"dur\":" << end - start << ",\"args\":{" << args << "}}";
  };
  for (const WaveTimeline& w : t.waves) {
    for (const TimelineSlice& s : w.issued)
      slice(r.instructions[s.index].info ? r.instructions[s.index].info->mnemonic : ".long", kind_name(s.kind), s.start, s.end,
            static_cast<size_t>(w.wave),
            "\"pc\":\"" + hex(r.offsets[s.index]) + "\",\"text\":" + json_string(instruction_text(r, s.index)));
    for (const StallSpan& s : w.stalls) slice(std::string("stall: ") + stall_name(s.why), "stall", s.start, s.end, static_cast<size_t>(w.wave), "");
  }
  for (size_t simd = 0; simd < t.simds.size(); ++simd)
    for (const TimelineSlice& s : t.simds[simd].mfma)
      slice(r.instructions[s.index].info->mnemonic, "mfma", s.start, s.end, kMatrixTrackBase + simd,
            "\"pc\":\"" + hex(r.offsets[s.index]) + "\"");
  out << "\n]}\n";
}

namespace {

// The picture's colours: what a cycle of a wave's row held.
enum Paint : uint8_t { kMfmaIssue, kValu, kSalu, kVectorMemory, kLds, kControl, kWaitMemory, kWaitLds, kWaitBarrier, kWaitMatrix, kWaitIssue, kWaitNop, kPaints };
constexpr std::array<const char*, kPaints> kColour = {"#d62728", "#ff7f0e", "#7f7f7f", "#2ca02c", "#1f77b4", "#bcbd22",
                                                      "#a6dba0", "#a6cee3", "#9467bd", "#f7b6d2", "#e5e5e5", "#fff2a8"};
constexpr std::array<const char*, kPaints> kLegend = {"MFMA issued", "VALU", "SALU", "vector memory issued", "LDS issued", "control",
                                                      "wait vmcnt", "wait lgkmcnt", "wait barrier", "wait matrix core", "wait issue slot / VALU", "s_nop / s_sleep"};

Paint paint_of(IssueKind k) {
  switch (k) {
    case IssueKind::Mfma: return kMfmaIssue;
    case IssueKind::Valu: return kValu;
    case IssueKind::Salu: case IssueKind::ScalarMemory: return kSalu;
    case IssueKind::VectorMemory: return kVectorMemory;
    case IssueKind::Lds: return kLds;
    case IssueKind::Control: return kControl;
  }
  return kControl;
}

Paint paint_of(Stall s) {
  switch (s) {
    case Stall::Vmcnt: return kWaitMemory;
    case Stall::Lgkmcnt: return kWaitLds;
    case Stall::Barrier: return kWaitBarrier;
    case Stall::MatrixCore: return kWaitMatrix;
    case Stall::Nop: case Stall::Sleep: return kWaitNop;
    case Stall::Issue: case Stall::ValuBusy: return kWaitIssue;
  }
  return kWaitIssue;
}

// Cycles of each paint per column of the picture.
class Columns {
 public:
  Columns(int width, uint64_t cycles) : per_column_(std::max<uint64_t>(1, (cycles + width - 1) / width)), cells_(static_cast<size_t>(width)) {}
  void add(uint64_t start, uint64_t end, Paint p) {
    for (uint64_t c = start; c < end;) {
      const uint64_t col = c / per_column_, col_end = std::min(end, (col + 1) * per_column_);
      if (col < cells_.size()) cells_[col][p] += col_end - c;
      c = col_end;
    }
  }
  // The paint that filled most of column `c`, or kPaints where nothing did.
  int dominant(size_t c) const {
    const auto& cell = cells_[c];
    const auto it = std::max_element(cell.begin(), cell.end());
    return *it == 0 ? kPaints : static_cast<int>(it - cell.begin());
  }
  size_t size() const { return cells_.size(); }

 private:
  uint64_t per_column_;
  std::vector<std::array<uint64_t, kPaints>> cells_;
};

// One row of the picture: runs of equal colour as rectangles.
void draw_row(std::ostream& out, const Columns& cols, int x0, int y, int h) {
  for (size_t c = 0; c < cols.size();) {
    const int p = cols.dominant(c);
    size_t e = c + 1;
    while (e < cols.size() && cols.dominant(e) == p) ++e;
    if (p != kPaints)
      out << "<rect x=\"" << x0 + static_cast<int>(c) << "\" y=\"" << y << "\" width=\"" << e - c << "\" height=\"" << h
          << "\" fill=\"" << kColour[static_cast<size_t>(p)] << "\"/>\n";
    c = e;
  }
}

}  // namespace

void write_timeline_svg(const Timeline& t, const WorkgroupRecording&, std::ostream& out) {
  constexpr int kWidth = 1000, kLabel = 130, kRow = 16, kGap = 4;
  const int rows = static_cast<int>(t.waves.size() + t.simds.size());
  const int legend_y = 40 + rows * (kRow + kGap) + 20;
  const int height = legend_y + (kPaints + 2) / 3 * 18 + 10;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabel + kWidth + 20 << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"10\" y=\"20\" font-size=\"14\">weft timeline model, one " << arch_name(t.model.arch) << " CU, "
      << workgroup_name(t) << ": " << t.cycles << " modelled cycles (a model, not cycle-accurate)</text>\n";
  int y = 40;
  for (const WaveTimeline& w : t.waves) {
    Columns cols(kWidth, t.cycles);
    for (const TimelineSlice& s : w.issued) cols.add(s.start, s.end, paint_of(s.kind));
    for (const StallSpan& s : w.stalls) cols.add(s.start, s.end, paint_of(s.why));
    out << "<text x=\"10\" y=\"" << y + 12 << "\">wave " << w.wave << " (SIMD " << w.simd << ")</text>\n";
    draw_row(out, cols, kLabel, y, kRow);
    y += kRow + kGap;
  }
  for (size_t s = 0; s < t.simds.size(); ++s) {
    Columns cols(kWidth, t.cycles);
    for (const TimelineSlice& m : t.simds[s].mfma) cols.add(m.start, m.end, kMfmaIssue);
    out << "<text x=\"10\" y=\"" << y + 12 << "\">SIMD " << s << " matrix core</text>\n";
    out << "<rect x=\"" << kLabel << "\" y=\"" << y << "\" width=\"" << kWidth << "\" height=\"" << kRow << "\" fill=\"#f4f4f4\"/>\n";
    draw_row(out, cols, kLabel, y, kRow);
    y += kRow + kGap;
  }
  for (int p = 0; p < kPaints; ++p) {
    const int lx = 10 + p % 3 * 330, ly = legend_y + p / 3 * 18;
    out << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"12\" height=\"12\" fill=\"" << kColour[static_cast<size_t>(p)]
        << "\"/><text x=\"" << lx + 18 << "\" y=\"" << ly + 11 << "\">" << kLegend[static_cast<size_t>(p)] << "</text>\n";
  }
  out << "</svg>\n";
}

namespace {

// The instructions charged with the most stall cycles, over all waves, by reason.
void write_costliest_stalls(const Timeline& t, const WorkgroupRecording& r, std::ostream& out) {
  constexpr size_t kShown = 10;
  std::map<std::pair<uint32_t, Stall>, uint64_t> cycles;
  for (const WaveTimeline& w : t.waves)
    for (const StallSpan& s : w.stalls) cycles[{s.index, s.why}] += s.end - s.start;
  std::vector<std::pair<uint64_t, std::pair<uint32_t, Stall>>> ranked;
  for (const auto& [key, n] : cycles) ranked.push_back({n, key});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  out << "most stalled instructions (cycles over all waves):\n";
  char line[64];
  for (size_t i = 0; i < ranked.size() && i < kShown; ++i) {
    const auto& [n, key] = ranked[i];
    std::snprintf(line, sizeof line, "  %10llu  %-12s %6s  ", static_cast<unsigned long long>(n), stall_name(key.second),
                  hex(r.offsets[key.first]).c_str());
    out << line << instruction_text(r, key.first) << "\n";
  }
}

}  // namespace

void write_timeline_stats(const Timeline& t, const WorkgroupRecording& r, std::ostream& out) {
  char line[256];
  out << "timeline model of one " << arch_name(t.model.arch) << " CU (a model, not cycle-accurate; docs/emulator.md, Timeline), "
      << workgroup_name(t) << "\n";
  std::snprintf(line, sizeof line, "modelled cycles: %llu (%.2f us at %.1f GHz)\n", static_cast<unsigned long long>(t.cycles),
                t.model.clock_ghz > 0 ? static_cast<double>(t.cycles) / (t.model.clock_ghz * 1e3) : 0.0, t.model.clock_ghz);
  out << line << "SIMD  waves        MFMA busy\n";
  for (size_t s = 0; s < t.simds.size(); ++s) {
    std::string waves;
    for (const int w : t.simds[s].waves) waves += (waves.empty() ? "" : ",") + std::to_string(w);
    std::snprintf(line, sizeof line, "%-5zu %-12s %5.1f%%\n", s, waves.c_str(),
                  t.cycles ? 100.0 * static_cast<double>(t.simds[s].mfma_busy) / static_cast<double>(t.cycles) : 0.0);
    out << line;
  }
  out << "stalled cycles per wave, by reason:\nwave  SIMD  instructions";
  for (int k = 0; k < kStallKinds; ++k) {
    std::snprintf(line, sizeof line, " %12s", stall_name(static_cast<Stall>(k)));
    out << line;
  }
  out << "\n";
  for (const WaveTimeline& w : t.waves) {
    std::snprintf(line, sizeof line, "%-5d %-5d %12zu", w.wave, w.simd, w.issued.size());
    out << line;
    for (int k = 0; k < kStallKinds; ++k) {
      std::snprintf(line, sizeof line, " %12llu", static_cast<unsigned long long>(w.stalled[static_cast<size_t>(k)]));
      out << line;
    }
    out << "\n";
  }
  write_costliest_stalls(t, r, out);
}

}  // namespace weft::emu
