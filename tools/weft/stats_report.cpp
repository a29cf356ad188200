#include "stats_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace weft::cli {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Mnemonics by count, most frequent first (ties by name).
std::vector<std::pair<std::string, uint64_t>> by_frequency(const emu::KernelStats& s) {
  std::vector<std::pair<std::string, uint64_t>> v(s.instructions.begin(), s.instructions.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

}  // namespace

void write_stats_table(const emu::KernelStats& s, std::ostream& out) {
  const emu::Occupancy& o = s.occupancy;
  char line[256];
  auto row = [&](const char* what, const std::string& text) {
    std::snprintf(line, sizeof line, "  %-12s %s\n", what, text.c_str());
    out << line;
  };
  out << s.kernel << " on " << emu::arch_name(s.arch) << "\n";
  row("VGPRs", std::to_string(s.vgprs) + " (" + std::to_string(s.arch_vgprs) + " architectural + " + std::to_string(s.agprs) +
                   " AGPRs; " + std::to_string(s.allocated_vgprs) + " allocated of 512)");
  row("SGPRs", std::to_string(s.sgprs));
  row("LDS", std::to_string(s.lds_bytes) + " bytes per workgroup (" + std::to_string(o.lds_bytes_per_cu / 1024) + " KiB per CU)");
  row("scratch", std::to_string(s.scratch_bytes) + " bytes per work-item");
  row("spills", std::to_string(s.vgpr_spills) + " VGPRs, " + std::to_string(s.sgpr_spills) + " SGPRs");
  row("workgroup", "up to " + std::to_string(s.max_flat_workgroup_size) + " work-items (" + std::to_string(o.waves_per_workgroup) +
                       " waves of " + std::to_string(s.wavefront_size) + ")");
  std::string limited_by = o.limited_by;
  for (size_t at; (at = limited_by.find(',')) != std::string::npos;) limited_by.replace(at, 1, " and ");
  row("occupancy", std::to_string(o.waves_per_simd) + (o.waves_per_simd == 1 ? " wave" : " waves") + " per SIMD of " + std::to_string(o.max_waves_per_simd) +
                       (o.limited_by == "none" ? std::string(" (no limit reached)") : ", limited by " + limited_by));
  row("", "limits: VGPRs " + std::to_string(o.by_vgprs) + ", SGPRs " + std::to_string(o.by_sgprs) + ", LDS " + std::to_string(o.by_lds) +
              ", workgroup " + std::to_string(o.by_workgroup));
  row("code", std::to_string(s.code_bytes) + " bytes, " + std::to_string(s.instruction_total) + " instructions");
  out << "instructions by mnemonic:\n";
  for (const auto& [mnemonic, n] : by_frequency(s)) {
    std::snprintf(line, sizeof line, "  %6llu  %s\n", static_cast<unsigned long long>(n), mnemonic.c_str());
    out << line;
  }
}

void write_stats_json(const emu::KernelStats& s, std::ostream& out) {
  const emu::Occupancy& o = s.occupancy;
  auto field = [&](const char* name, uint64_t v, bool comma = true) { out << "  " << json_string(name) << ": " << v << (comma ? ",\n" : "\n"); };
  out << "{\n  \"kernel\": " << json_string(s.kernel) << ",\n  \"target\": " << json_string(emu::arch_name(s.arch)) << ",\n";
  field("vgprs", s.vgprs);
  field("arch_vgprs", s.arch_vgprs);
  field("agprs", s.agprs);
  field("allocated_vgprs", s.allocated_vgprs);
  field("sgprs", s.sgprs);
  field("lds_bytes", s.lds_bytes);
  field("scratch_bytes", s.scratch_bytes);
  field("vgpr_spills", s.vgpr_spills);
  field("sgpr_spills", s.sgpr_spills);
  field("wavefront_size", s.wavefront_size);
  field("max_flat_workgroup_size", s.max_flat_workgroup_size);
  field("code_bytes", s.code_bytes);
  field("instruction_total", s.instruction_total);
  out << "  \"occupancy\": {\"waves_per_simd\": " << o.waves_per_simd << ", \"max_waves_per_simd\": " << o.max_waves_per_simd
      << ", \"limited_by\": " << json_string(o.limited_by) << ", \"by_vgprs\": " << o.by_vgprs << ", \"by_sgprs\": " << o.by_sgprs
      << ", \"by_lds\": " << o.by_lds << ", \"by_workgroup\": " << o.by_workgroup << ", \"lds_bytes_per_cu\": " << o.lds_bytes_per_cu
      << ", \"waves_per_workgroup\": " << o.waves_per_workgroup << "},\n";
  out << "  \"instructions\": {";
  bool first = true;
  for (const auto& [mnemonic, n] : s.instructions) {
    out << (first ? "\n    " : ",\n    ") << json_string(mnemonic) << ": " << n;
    first = false;
  }
  out << (first ? "}\n" : "\n  }\n") << "}\n";
}

}  // namespace weft::cli
