// MODE's float fields executed through the host's own float mode (float_mode.h says how).
//
// MODE (CDNA3/CDNA4 ISA guides, "Hardware Registers"): FP_ROUND [3:0] (f32 [1:0], f16/f64 [3:2]:
// 0 nearest even, 1 toward +infinity, 2 toward -infinity, 3 toward zero), FP_DENORM [7:4] (f32
// [5:4], f16/f64 [7:6]: 0 flush inputs and outputs, 1 flush outputs, 2 flush inputs, 3 keep; LLVM's
// AMDGPUUsage FLOAT_DENORM_MODE_FLUSH_SRC_DST/_DST/_SRC/_NONE). Flushing keeps the sign.
#include "float_mode.h"

#include "weft/emulator/emulator.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define WEFT_HOST_MXCSR 1
#endif

namespace weft::emu {

namespace {

using Precision = FloatModeUse::Precision;

// ---- which precision an instruction works in, from its mnemonic ----

// Mnemonics whose results the emulator computes in software that does not follow MODE: the
// matrix cores (whether they apply MODE at all the ISA guides do not say), dot products, mixed
// f16/f32 FMAs, bf16 and the 8-, 6- and 4-bit formats, fixed-rounding and scaled conversions.
constexpr std::string_view kSoftwareMarks[] = {"mfma", "smfmac", "dot", "mix", "bf16", "fp8", "bf8", "fp6", "bf6",
                                               "fp4", "f8f6f4", "scalef32", "ld_scale", "_sr_", "pkrtz", "pknorm", "legacy"};

std::vector<std::string_view> tokens(std::string_view m) {
  std::vector<std::string_view> out;
  for (size_t at = 0; at <= m.size();) {
    const size_t end = std::min(m.find('_', at), m.size());
    out.push_back(m.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// A type token's float precision; integer and bit types (i32, u16, b64, ...) are no float.
bool is_type(std::string_view t) {
  return t.size() >= 2 && (t[0] == 'f' || t[0] == 'i' || t[0] == 'u' || t[0] == 'b') &&
         std::all_of(t.begin() + 1, t.end(), [](char c) { return c >= '0' && c <= '9'; });
}
Precision precision_of(std::string_view t) {
  if (t == "f16") return Precision::F16;
  if (t == "f32") return Precision::F32;
  if (t == "f64") return Precision::F64;
  return Precision::None;
}

// ---- the host's float mode ----

uint32_t round_field(uint32_t mode, Precision p) { return p == Precision::F32 ? mode & 3 : (mode >> 2) & 3; }
uint32_t denorm_field(uint32_t mode, Precision p) { return p == Precision::F32 ? (mode >> 4) & 3 : (mode >> 6) & 3; }
bool flushes_inputs(uint32_t denorm) { return denorm == 0 || denorm == 2; }
bool flushes_outputs(uint32_t denorm) { return denorm == 0 || denorm == 1; }

struct HostMode {
  uint32_t csr = 0;
  bool flush_input = false, flush_output = false;
};

#ifdef WEFT_HOST_MXCSR
constexpr uint32_t kDaz = 1u << 6, kFtz = 1u << 15, kRoundShift = 13;
constexpr uint32_t kAllExceptionsMasked = 0x1F80;
// MODE's rounding encoding to MXCSR's RC (0 nearest, 1 down, 2 up, 3 toward zero).
constexpr uint32_t kHostRounding[4] = {0, 2, 1, 3};

HostMode host_mode(uint32_t mode, const FloatModeUse& use) {
  HostMode h;
  h.csr = kAllExceptionsMasked;
  const Precision rounded = use.dest != Precision::None ? use.dest : use.source;
  if (rounded != Precision::None) h.csr |= kHostRounding[round_field(mode, rounded)] << kRoundShift;
  if (use.source != Precision::None && flushes_inputs(denorm_field(mode, use.source))) {
    h.csr |= kDaz;
    h.flush_input = use.source != Precision::F16;
  }
  if (use.dest != Precision::None && flushes_outputs(denorm_field(mode, use.dest))) {
    h.csr |= kFtz;
    h.flush_output = true;
  }
  return h;
}

// The host thread's MXCSR for one instruction, restored however the instruction ends.
class HostFloatModeScope {
 public:
  explicit HostFloatModeScope(uint32_t csr) : saved_(_mm_getcsr()) { _mm_setcsr(csr); }
  ~HostFloatModeScope() { _mm_setcsr(saved_); }
  HostFloatModeScope(const HostFloatModeScope&) = delete;
  HostFloatModeScope& operator=(const HostFloatModeScope&) = delete;

 private:
  uint32_t saved_;
};
#endif

// ---- flushing what the host's DAZ and FTZ do not reach ----

template <class Bits>
Bits flushed(Bits v) {
  constexpr int kWidth = 8 * sizeof(Bits);
  constexpr int kMantissa = kWidth == 64 ? 52 : 23;
  constexpr Bits kSign = Bits{1} << (kWidth - 1);
  constexpr Bits kExponent = ((Bits{1} << (kWidth - 1 - kMantissa)) - 1) << kMantissa;
  return (v & kExponent) == 0 ? v & kSign : v;
}

// Flushes lanes of a register row (or pair, for f64) where `flush_lane` says so.
template <class Lanes>
void flush_row(uint32_t* lo, uint32_t* hi, Lanes&& flush_lane) {
  for (int l = 0; l < kLanes; ++l) {
    if (!flush_lane(l)) continue;
    if (!hi) {
      lo[l] = flushed(lo[l]);
      continue;
    }
    const uint64_t v = flushed(lo[l] | uint64_t{hi[l]} << 32);
    lo[l] = static_cast<uint32_t>(v);
    hi[l] = static_cast<uint32_t>(v >> 32);
  }
}

// Results the host's FTZ does not flush (computed bit by bit: frexp, ldexp, div_fixup; a max
// returning its denormal operand), flushed in the destination's active lanes after the
// instruction. (For a DPP or SDWA step this runs around its operation, on the lanes and the
// result row the encoding hands it, before the encoding places the result.)
void flush_outputs(Exec& e, const Step& s, const FloatModeUse& use) {
  const uint64_t exec = e.w.exec();
  const bool wide = use.dest == Precision::F64;
  for (int r = 0; r < use.dest_registers; r += wide ? 2 : 1)
    flush_row(e.w.vreg(s.vop.vdst + r), wide ? e.w.vreg(s.vop.vdst + r + 1) : nullptr, [&](int l) { return ((exec >> l) & 1) != 0; });
}

// Sources the host's DAZ does not reach, for the handlers that read a float's bits themselves
// (FloatStep::flushed_sources: ldexp, frexp, class, the division steps, min/max/med3, which
// return an operand's bits): their f32 or f64 denormals are flushed in their registers (VGPRs
// in the active lanes, SGPRs s0..s101) for the instruction and put back after it, however it
// ends, except where it wrote (its destination rows and SGPRs).
class FlushedSources {
 public:
  FlushedSources(Exec& e, const Step& s, const FloatStep& f) : e_(e), f_(f), exec_(e.w.exec()), dest_lo_(s.vop.vdst), dest_hi_(s.vop.vdst + f.dest_vgprs) {
    const bool wide = f.use.source == Precision::F64;
    for (int i = 0; i < 3; ++i)  // before anything is flushed: a throwing constructor puts nothing back
      if (((f.flushed_sources >> i) & 1) && s.vop.is_constant[i]) check_literal(e, s.vop.constant[i], wide);
    for (int i = 0; i < 3; ++i) {
      const uint32_t code = s.vop.src[i];
      if (!((f.flushed_sources >> i) & 1) || s.vop.is_constant[i]) continue;
      if (names_integer_source(s, f, code)) continue;  // v_ldexp_f32 v0, v1, v1: the exponent's bits stay
      if (code >= 256) flush_vgprs(code - 256, wide);
      else if (code < kLastSgpr) flush_sgprs(wide ? code & ~1u : code, wide);  // a 64-bit SGPR operand is an even pair
    }
  }
  // Puts back what was flushed, in the lanes active before the instruction (a v_cmpx changes EXEC).
  ~FlushedSources() {
    for (const Row& r : rows_) {
      if (r.reg >= dest_lo_ && r.reg < dest_hi_) continue;  // the instruction's result
      uint32_t* row = e_.w.vreg(r.reg);
      for (int l = 0; l < kLanes; ++l)
        if ((exec_ >> l) & 1) row[l] = r.before[l];
    }
    for (const Sgpr& g : sgprs_) {
      const bool written = std::any_of(std::begin(f_.sgpr_written), std::end(f_.sgpr_written),
                                       [&](uint32_t d) { return d != FloatStep::kNoSgpr && (g.code == d || g.code == d + 1); });
      if (!written) e_.w.s[g.code] = g.before;
    }
  }
  FlushedSources(const FlushedSources&) = delete;
  FlushedSources& operator=(const FlushedSources&) = delete;

 private:
  static constexpr uint32_t kLastSgpr = 102;  // s0..s101; above them flat_scratch, xnack, vcc, m0, exec

  static bool names_integer_source(const Step& s, const FloatStep& f, uint32_t code) {
    for (int j = 0; j < 3; ++j)
      if (((f.integer_sources >> j) & 1) && s.vop.src[j] == code) return true;
    return false;
  }
  // A literal cannot be flushed in place (the step is shared); a denormal one stops the run.
  static void check_literal(const Exec& e, uint32_t literal, bool wide) {
    const uint64_t bits = wide ? uint64_t{literal} << 32 : literal;  // an f64 literal is the high half
    if ((wide ? flushed(bits) : uint64_t{flushed(literal)}) == bits) return;
    e.fail("a denormal literal source with MODE flushing inputs is not emulated for this instruction (its handler reads the bits)");
  }

  void flush_vgprs(uint32_t reg, bool wide) {
    if (std::any_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.reg == reg; })) return;
    for (uint32_t k = 0; k < (wide ? 2u : 1u); ++k) {
      rows_.push_back({reg + k, {}});
      std::memcpy(rows_.back().before, e_.w.vreg(reg + k), sizeof rows_.back().before);
    }
    flush_row(e_.w.vreg(reg), wide ? e_.w.vreg(reg + 1) : nullptr, [&](int l) { return ((exec_ >> l) & 1) != 0; });
  }
  void flush_sgprs(uint32_t code, bool wide) {
    if (std::any_of(sgprs_.begin(), sgprs_.end(), [&](const Sgpr& g) { return g.code == code; })) return;
    sgprs_.push_back({code, e_.w.s[code]});
    if (!wide) {
      e_.w.s[code] = flushed(e_.w.s[code]);
      return;
    }
    sgprs_.push_back({code + 1, e_.w.s[code + 1]});
    const uint64_t v = flushed(e_.w.s[code] | uint64_t{e_.w.s[code + 1]} << 32);
    e_.w.s[code] = static_cast<uint32_t>(v);
    e_.w.s[code + 1] = static_cast<uint32_t>(v >> 32);
  }

  struct Row {
    uint32_t reg;
    uint32_t before[kLanes];
  };
  struct Sgpr {
    uint32_t code, before;
  };
  Exec& e_;
  const FloatStep& f_;
  const uint64_t exec_;
  const uint32_t dest_lo_, dest_hi_;
  std::vector<Row> rows_;
  std::vector<Sgpr> sgprs_;
};

// A float step of a program that may leave the default mode.
void run_in_float_mode(Exec& e, const Inst& in) {
  const Step& s = *e.step;
  const FloatStep& f = e.prog.float_steps[static_cast<size_t>(&s - e.prog.steps.data())];
  const uint32_t mode = e.w.mode & 0xFF;
  if (mode == kDefaultFloatMode) return f.unmoded(e, in);
  if (const std::string why = float_mode_refusal(mode, f.use); !why.empty())
    e.fail(std::string(in.info->mnemonic) + " with MODE's " + describe_float_mode(mode) + ": " + why);
#ifdef WEFT_HOST_MXCSR
  const HostMode host = host_mode(mode, f.use);
  {
    std::optional<FlushedSources> sources;
    if (host.flush_input && f.flushed_sources) sources.emplace(e, s, f);
    const HostFloatModeScope scope(host.csr);
    f.unmoded(e, in);
  }
  if (host.flush_output) flush_outputs(e, s, f.use);
#endif
}

const char* round_name(uint32_t r) {
  static const char* const names[4] = {"to nearest even", "toward +infinity", "toward -infinity", "toward zero"};
  return names[r & 3];
}
const char* denorm_name(uint32_t d) {
  static const char* const names[4] = {"flushed on input and output", "flushed on output", "flushed on input", "kept"};
  return names[d & 3];
}

}  // namespace

FloatModeUse float_mode_use(std::string_view m) {
  FloatModeUse use;
  if (!m.starts_with("v_")) return use;
  std::vector<std::string_view> types;
  for (std::string_view t : tokens(m.substr(2)))
    if (is_type(t)) types.push_back(t);
  if (types.empty() || std::none_of(types.begin(), types.end(), [](std::string_view t) { return precision_of(t) != Precision::None; }))
    return use;
  use.refused = std::any_of(std::begin(kSoftwareMarks), std::end(kSoftwareMarks), [&](std::string_view mark) { return m.find(mark) != m.npos; });
  const bool conversion = m.starts_with("v_cvt_") || m.starts_with("v_frexp_exp_");
  use.dest = precision_of(types.front());
  use.source = conversion ? precision_of(types.back()) : use.dest;
  if (m.starts_with("v_cmp")) use.dest = Precision::None;  // a lane mask in an SGPR pair, VCC or EXEC
  if (use.dest == Precision::F64 || (use.dest == Precision::F32 && m.starts_with("v_pk_"))) use.dest_registers = 2;
  else if (use.dest != Precision::None) use.dest_registers = 1;
  return use;
}

namespace {

// The handlers that read a float operand's bits themselves (or return an operand's bits), past
// the host's DAZ: their float sources are flushed in place (FlushedSources).
bool reads_float_bits(std::string_view m) {
  // (v_log: glibc's log2 normalizes a denormal by a multiply that DAZ turns into zero.)
  for (std::string_view p : {"v_ldexp_", "v_frexp_", "v_cmp_class_", "v_cmpx_class_", "v_div_scale_", "v_div_fixup_", "v_div_fmas_",
                             "v_min_", "v_max_", "v_min3_", "v_max3_", "v_med3_", "v_log_"})
    if (m.starts_with(p)) return true;
  return false;
}

// Which sources are flushed in place, which VGPR rows and SGPRs the step writes, from its operand
// list: a flushed source is put back unless the step wrote over it.
void describe_operands(const Step& step, FloatStep& f) {
  const std::string_view m = step.inst.info->mnemonic;
  const bool in_place = reads_float_bits(m);
  const bool integer_second = m.starts_with("v_ldexp") || m.find("_class_") != m.npos;  // an exponent, a class mask
  int written = 0;
  for (const OperandSpec& op : operand_specs(*step.inst.info)) {
    switch (op.field) {
      case Field::Src0: f.flushed_sources |= in_place ? 1 : 0; break;
      case Field::Src1:
        f.flushed_sources |= in_place && !integer_second ? 2 : 0;
        f.integer_sources |= integer_second ? 2 : 0;
        break;
      case Field::Src2: f.flushed_sources |= in_place ? 4 : 0; break;
      case Field::Dst:
        if (op.kind == 's') f.sgpr_written[written++] = step.vop.vdst;
        if (op.kind == 'v') f.dest_vgprs = op.width;
        break;
      case Field::SDst:
        if (op.kind == 's') f.sgpr_written[written++] = step.vop.sdst;
        break;
      default: break;
    }
  }
}

}  // namespace

void prepare_float_modes(Program& prog) {
  prog.float_steps.assign(prog.steps.size(), FloatStep{});
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    Step& step = prog.steps[i];
    if (!step.inst.info || !executes(step.inst.info->mnemonic)) continue;  // not executed in any mode: its own error
    FloatStep& f = prog.float_steps[i];
    f.use = float_mode_use(step.inst.info->mnemonic);
    if (!f.use.uses_mode()) continue;
    describe_operands(step, f);
    // A DPP or SDWA step: around its operation (`inner`), which sees the lanes and rows the
    // encoding prepared, before the encoding places the result.
    Handler& operation = step.inner ? step.inner : step.handler;
    f.unmoded = operation;
    operation = run_in_float_mode;
  }
}

std::string float_mode_refusal(uint32_t mode, const FloatModeUse& use) {
  if ((mode & 0xFF) == kDefaultFloatMode) return "";
  if (use.refused)
    return "the emulator computes this instruction in software that rounds to nearest even and keeps denormals, and executes it in "
           "no other mode";
  const bool f16 = use.dest == Precision::F16 || use.source == Precision::F16;
  if (f16 && denorm_field(mode, Precision::F16) != 3)
    return "flushing f16 denormals is not executed (the emulator rounds f16 results through the host's f16 conversions, which keep "
           "them)";
#ifndef WEFT_HOST_MXCSR
  return "this host has no MXCSR: the emulator executes float modes other than round-to-nearest-even with denormals kept only on "
         "x86-64 hosts";
#else
  return "";
#endif
}

std::string describe_float_mode(uint32_t mode) {
  std::string s;
  for (const Precision p : {Precision::F32, Precision::F64}) {
    const char* name = p == Precision::F32 ? "f32" : "f16/f64";
    if (!s.empty()) s += ", ";
    s += std::string(name) + " rounding " + round_name(round_field(mode, p)) + ", " + name + " denormals " + denorm_name(denorm_field(mode, p));
  }
  return s;
}

}  // namespace weft::emu
