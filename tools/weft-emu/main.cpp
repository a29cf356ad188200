// weft-emu: disassemble and run gfx942 / gfx950 code objects on weft's CDNA emulator.
// Exit status: 0 success, 1 a failure while working (bad file, emulator error), 2 a usage error.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "weft/dsl/error.h"
#include "weft/emulator/listing.h"
#include "weft/emulator/code_object.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/isa.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/timeline.h"
#include "weft/version.h"

namespace {

using namespace weft::emu;

constexpr const char* kUsage = R"(usage: weft-emu <command> [options]

Runs AMD CDNA3 (gfx942) and CDNA4 (gfx950) code objects without AMD hardware.

commands:
  disasm FILE            print every kernel's instructions as `<offset in .text>: <text>`,
                         the text as llvm-objdump-22 -d prints it
  run FILE --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--arg ARG]... [options]
                         run a kernel; arguments in kernel order:
                           in:PATH               a global buffer holding the file's bytes
                           out:BYTES:PATH        a global buffer of BYTES bytes, filled with 0xCD,
                                                 written to PATH after the run
                           inout:PATH:OUTPATH    a buffer from PATH, written to OUTPATH
                           i32:V u32:V i64:V u64:V f32:V   scalars
  version                print weft's version
  help                   print this help

run options:
  --stats                print waves, instructions, wall time, instructions per second, the
                         most executed opcodes, and the timeline model's table: the modelled
                         MFMA-busy fraction per SIMD and each wave's stalled cycles by reason
  --trace FILE.json      write the timeline of one workgroup as a Chrome/Perfetto trace (open it
                         in ui.perfetto.dev or chrome://tracing): a track per wave, a slice per
                         instruction, on a model of one CU (a model, not cycle-accurate hardware;
                         docs/emulator.md, "Timeline")
  --timeline-svg FILE    write the same timeline as an SVG picture
  --timeline-workgroup N the workgroup the timeline models (linear index, x fastest; default 0)
  --print-instructions   print every executed instruction of every wave (stderr)
  --threads N            host threads running workgroups (default: all)
  --check-lds            report reads of LDS the workgroup has not written
  --sanitize             hazard mode: report LDS races between waves, reads of a load's
                         destination before the s_waitcnt that covers it, reads of VGPRs or LDS
                         never written, and accesses out of bounds (exit status 3); the waves of
                         a workgroup interleave at instruction granularity
  --schedule-seed N      the seed of hazard mode's interleaving (default 1)
  --max-instructions N   fail when one wave has executed N instructions without ending (a kernel
                         that never ends); 0: no limit. Default @MAX_INSTRUCTIONS@

exit status: 0 on success, 1 if loading or running failed, 2 on a usage error, 3 when
--sanitize found hazards (each printed on stderr; output files are still written).
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw weft::Error("cannot open '" + path + "'");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const uint8_t* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n)))
    throw weft::Error("cannot write '" + path + "'");
}

int disasm(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("disasm: give exactly one code object");
  weft::emu::write_listing(CodeObject::load_file(args[0]), std::cout);
  return 0;
}

template <typename T>
T parse_number(const std::string& s, const std::string& what) {
  T v{};
  const char* end = s.data() + s.size();
  int base = 10;
  const char* begin = s.data();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) begin += 2, base = 16;
  const auto r = std::from_chars(begin, end, v, base);
  if (r.ec != std::errc() || r.ptr != end) throw UsageError(what + ": '" + s + "' is not a valid number");
  return v;
}

Dim3 parse_dims(const std::string& s, const char* option) {
  uint32_t d[3] = {1, 1, 1};
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t comma = s.find(',', start);
    d[i] = parse_number<uint32_t>(s.substr(start, comma - start), option);
    if (d[i] == 0) throw UsageError(std::string(option) + ": dimensions must be at least 1");
    if (comma == std::string::npos) break;
    if (i == 2) throw UsageError(std::string(option) + ": at most three dimensions");
    start = comma + 1;
  }
  return {d[0], d[1], d[2]};
}

// One --arg: a buffer (created in memory now, written back after the run) or a scalar.
struct OutputFile {
  uint64_t address;
  std::string path;
};

ArgValue parse_arg(const std::string& spec, GlobalMemory& mem, std::vector<OutputFile>& outputs, size_t index) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) throw UsageError("--arg '" + spec + "': expected KIND:VALUE (see --help)");
  const std::string kind = spec.substr(0, colon), rest = spec.substr(colon + 1);
  const std::string name = "argument " + std::to_string(index + 1);
  if (kind == "in" || kind == "inout") {
    std::string in_path = rest, out_path;
    if (kind == "inout") {
      const size_t c = rest.find(':');
      if (c == std::string::npos) throw UsageError("--arg '" + spec + "': inout needs PATH:OUTPATH");
      in_path = rest.substr(0, c);
      out_path = rest.substr(c + 1);
    }
    const std::vector<uint8_t> bytes = read_file(in_path);
    const uint64_t a = mem.allocate(bytes.size(), name + " (" + in_path + ")");
    std::memcpy(mem.data(a), bytes.data(), bytes.size());
    if (kind == "inout") outputs.push_back({a, out_path});
    return ArgValue::pointer(a);
  }
  if (kind == "out") {
    const size_t c = rest.find(':');
    if (c == std::string::npos) throw UsageError("--arg '" + spec + "': out needs BYTES:PATH");
    const uint64_t n = parse_number<uint64_t>(rest.substr(0, c), "--arg " + spec);
    const uint64_t a = mem.allocate(n, name + " (" + rest.substr(c + 1) + ")");
    std::memset(mem.data(a), 0xCD, n);
    outputs.push_back({a, rest.substr(c + 1)});
    return ArgValue::pointer(a);
  }
  if (kind == "i32") return ArgValue::i32(parse_number<int32_t>(rest, "--arg " + spec));
  if (kind == "u32") return ArgValue::u32(parse_number<uint32_t>(rest, "--arg " + spec));
  if (kind == "i64") return ArgValue::i64(parse_number<int64_t>(rest, "--arg " + spec));
  if (kind == "u64") return ArgValue::u64(parse_number<uint64_t>(rest, "--arg " + spec));
  if (kind == "f32") {
    try {
      size_t used = 0;
      const float f = std::stof(rest, &used);
      if (used == rest.size()) return ArgValue::f32(f);
    } catch (const std::exception&) {
    }
    throw UsageError("--arg '" + spec + "': '" + rest + "' is not a valid float");
  }
  throw UsageError("--arg '" + spec + "': unknown kind '" + kind + "' (in, out, inout, i32, u32, i64, u64, f32)");
}

void print_stats(const RunReport& r) {
  std::cout << "workgroups: " << r.workgroups << "\nwaves: " << r.waves << "\ninstructions: " << r.instructions
            << " wave-instructions\nwall time: " << r.seconds * 1e3 << " ms\ninstructions per second: "
            << (r.seconds > 0 ? static_cast<double>(r.instructions) / r.seconds : 0) << "\n";
  std::vector<std::pair<uint64_t, std::string>> ops;
  for (const auto& [name, n] : r.per_opcode) ops.emplace_back(n, name);
  std::sort(ops.rbegin(), ops.rend());
  if (!ops.empty()) std::cout << "most executed:\n";
  for (size_t i = 0; i < ops.size() && i < 12; ++i) std::cout << "  " << ops[i].second << " " << ops[i].first << "\n";
}

void write_timeline(const WorkgroupRecording& recording, bool stats, const std::string& trace_path, const std::string& svg_path) {
  const Timeline t = model_timeline(recording, cu_model(recording.arch));
  if (stats) write_timeline_stats(t, recording, std::cout);
  const auto write = [&](const std::string& path, auto writer) {
    if (path.empty()) return;
    std::ofstream out(path);
    writer(t, recording, out);
    if (!out.flush()) throw weft::Error("cannot write '" + path + "'");
  };
  write(trace_path, write_chrome_trace);
  write(svg_path, write_timeline_svg);
}

int run(const std::vector<std::string>& args) {
  std::string file, kernel;
  std::vector<std::string> arg_specs;
  std::string trace_path, svg_path;
  uint64_t timeline_workgroup = 0;
  LaunchOptions o;
  bool have_grid = false, have_block = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError("run: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--kernel") kernel = value();
    else if (a == "--grid") o.grid = parse_dims(value(), "--grid"), have_grid = true;
    else if (a == "--block") o.block = parse_dims(value(), "--block"), have_block = true;
    else if (a == "--arg") arg_specs.push_back(value());
    else if (a == "--stats") o.stats = true;
    else if (a == "--trace") trace_path = value();
    else if (a == "--timeline-svg") svg_path = value();
    else if (a == "--timeline-workgroup") timeline_workgroup = parse_number<uint64_t>(value(), "--timeline-workgroup");
    else if (a == "--print-instructions") o.print_instructions = true;
    else if (a == "--check-lds") o.check_lds_reads = true;
    else if (a == "--sanitize") o.sanitize = true;
    else if (a == "--schedule-seed") o.schedule_seed = parse_number<uint64_t>(value(), "--schedule-seed");
    else if (a == "--threads") o.host_threads = parse_number<int>(value(), "--threads");
    else if (a == "--max-instructions") o.max_wave_instructions = parse_number<uint64_t>(value(), "--max-instructions");
    else if (a.starts_with("-")) throw UsageError("run: unknown option '" + a + "'");
    else if (file.empty()) file = a;
    else throw UsageError("run: more than one file given ('" + file + "' and '" + a + "')");
  }
  if (file.empty()) throw UsageError("run: which code object?");
  if (kernel.empty()) throw UsageError("run: --kernel NAME is required");
  if (!have_grid || !have_block) throw UsageError("run: --grid and --block are required");
  if (timeline_workgroup >= o.grid.count())
    throw UsageError("--timeline-workgroup " + std::to_string(timeline_workgroup) + ": the grid has " + std::to_string(o.grid.count()) +
                     " workgroups");
  if (o.stats || !trace_path.empty() || !svg_path.empty()) o.record_workgroup = timeline_workgroup;
  const CodeObject code = CodeObject::load_file(file);
  const Kernel& k = code.kernel(kernel);
  GlobalMemory mem;
  std::vector<OutputFile> outputs;
  std::vector<ArgValue> values;
  for (size_t i = 0; i < arg_specs.size(); ++i) values.push_back(parse_arg(arg_specs[i], mem, outputs, i));
  o.kernarg = pack_kernel_args(k, values);
  RunReport r;
  try {
    r = run_kernel(code, kernel, mem, o);
  } catch (const HazardError& e) {
    for (const OutputFile& out : outputs) write_file(out.path, mem.data(out.address), mem.size(out.address));
    std::cerr << "weft-emu: " << e.what() << "\n";
    return 3;
  }
  for (const OutputFile& out : outputs) write_file(out.path, mem.data(out.address), mem.size(out.address));
  if (o.stats) print_stats(r);
  if (r.recording) write_timeline(*r.recording, o.stats, trace_path, svg_path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty()) throw UsageError("no command given");
    const std::string& cmd = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::string usage = kUsage;
      const std::string placeholder = "@MAX_INSTRUCTIONS@";
      usage.replace(usage.find(placeholder), placeholder.size(), std::to_string(LaunchOptions::kDefaultMaxWaveInstructions));
      std::cout << usage;
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      std::cout << "weft-emu " << WEFT_VERSION << "\n";
      return 0;
    }
    if (cmd == "disasm") return disasm(rest);
    if (cmd == "run") return run(rest);
    throw UsageError("unknown command '" + cmd + "'");
  } catch (const UsageError& e) {
    std::cerr << "weft-emu: " << e.what() << "\nTry 'weft-emu --help'.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "weft-emu: error: " << e.what() << "\n";
    return 1;
  }
}
