// The state the executor keeps: one wave64 (scalar and vector registers, EXEC, VCC, SCC, M0),
// its workgroup (LDS, barrier), the decoded program, and the context an instruction runs in.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "weft/emulator/emulator.h"
#include "vector_operands.h"
#include "weft/emulator/isa.h"

namespace weft::emu {

struct MfmaOp;
class Sanitizer;

constexpr int kLanes = 64;
constexpr uint32_t kVcc = 106, kM0 = 124, kExec = 126;

struct Wave;
struct Exec;
using Handler = void (*)(Exec&, const Inst&);

// One instruction of the program with its handler, decoded once before the kernel runs.
// What an instruction's result depends on in MODE's float fields (float_mode.h).
struct FloatModeUse {
  enum Precision : uint8_t { None, F16, F32, F64 };
  Precision dest = None;    // the precision of the float result written to VGPRs (None: a mask, an integer, no float)
  Precision source = None;  // the precision of its float inputs
  bool refused = false;     // computed in software that ignores MODE (MFMA, bf16, fp8, dot products): default mode only
  uint8_t dest_registers = 0;  // the VGPRs of each lane's float result: 1, or 2 for f64 and packed f32
  bool uses_mode() const { return refused || dest != None || source != None; }
};

struct Step {
  Inst inst;
  Handler handler = nullptr;  // never null once built: unsupported and invalid steps fail when run
  Handler inner = nullptr;    // the operation an encoding wrapper (SDWA) runs
  uint32_t offset = 0;        // byte offset from the kernel's entry
  VectorOperands vop;         // VALU operand fields (VOP1/2/C/3/3P)
  const MfmaOp* mfma = nullptr;        // the MFMA's shape and types, for v_mfma_*
};

// A step of a program that may leave the default float mode: its own handler, which the step's
// handler (float_mode.cpp's wrapper) runs with the host in the wave's mode.
struct FloatStep {
  Handler unmoded = nullptr;
  FloatModeUse use;
  uint8_t flushed_sources = 0;  // bit i: source i is flushed in its register (a float the handler reads bit by bit)
  uint8_t integer_sources = 0;  // bit i: source i is an integer (ldexp's exponent, a class mask): never flushed
  uint8_t dest_vgprs = 0;       // the VGPR rows it writes from vdst (put back never)
  uint32_t sgpr_written[3] = {kNoSgpr, kNoSgpr, kNoSgpr};  // SGPR codes it may write (a compare's mask, VOP3b's sdst), pairs by their first
  static constexpr uint32_t kNoSgpr = ~0u;
};

struct Program {
  std::string kernel;
  Arch arch{};
  std::vector<Step> steps;
  std::vector<int32_t> step_at;  // byte offset / 4 -> step index, -1 inside an instruction
  std::vector<FloatStep> float_steps;  // parallel to steps where they are wrapped for float modes, else empty
  int index_of(uint64_t offset) const;
};

struct FreeRegisters {
  void operator()(uint32_t* p) const { std::free(p); }
};
inline std::unique_ptr<uint32_t[], FreeRegisters> zeroed_registers(size_t count) {
  auto* p = static_cast<uint32_t*>(std::calloc(count, sizeof(uint32_t)));
  if (!p) throw std::bad_alloc();
  return std::unique_ptr<uint32_t[], FreeRegisters>(p);
}

struct Wave {
  uint32_t s[128] = {};  // SGPRs and the special registers at their operand codes (vcc 106, m0 124, exec 126)
  // 512 registers x 64 lanes: v[reg * 64 + lane]; AGPRs are 256..511; then SDWA scratch rows.
  // Zero-filled by calloc, whose fresh pages are mapped when first touched: a kernel touches the
  // rows it uses (init_wave clears those), not all 132 KiB of every wave.
  std::unique_ptr<uint32_t[], FreeRegisters> v = zeroed_registers(516 * kLanes);  // sdwa.h's kVgprRows
  bool scc = false;
  int pc = 0;  // step index
  bool ended = false, at_barrier = false;
  bool slept = false;  // it ran s_sleep: its turn ends (LaunchOptions::cooperative)
  uint64_t stores = 0;  // global stores and atomics it ran: a cooperative launch's sign of progress
  int id = 0;  // wave index within the workgroup
  uint32_t mode = 0;      // the MODE hardware register (semantics_mode.cpp)
  uint64_t executed = 0;  // instructions executed, against LaunchOptions::max_wave_instructions
  std::vector<uint8_t> scratch;  // private memory, lane-major: lane * private_size + offset
  uint32_t private_size = 0;

  uint64_t exec() const { return s[kExec] | (uint64_t{s[kExec + 1]} << 32); }
  void set_exec(uint64_t e) { s[kExec] = static_cast<uint32_t>(e); s[kExec + 1] = static_cast<uint32_t>(e >> 32); }
  uint64_t vcc() const { return s[kVcc] | (uint64_t{s[kVcc + 1]} << 32); }
  void set_vcc(uint64_t m) { s[kVcc] = static_cast<uint32_t>(m); s[kVcc + 1] = static_cast<uint32_t>(m >> 32); }
  uint32_t* vreg(uint32_t r) { return &v[r * kLanes]; }
};

struct Workgroup {
  uint32_t id[3] = {};
  std::vector<uint8_t> lds;
  std::vector<uint8_t> lds_written;  // one flag per LDS byte, when reads of unwritten LDS are checked
  Sanitizer* sanitizer = nullptr;    // hazard mode: sees every LDS access (and checks reads of unwritten bytes itself)
  bool checked_lds = false;          // lds_written or a sanitizer: every LDS access takes the checked path
};

// The generic (FLAT) address space: a 64-bit address whose high half is one of these apertures
// points into the workgroup's LDS or the lane's scratch at its low half (what src_shared_base /
// src_private_base return; anything else is a global address). weft's global buffers live far
// below them.
inline constexpr uint32_t kSharedApertureHi = 0x10000, kPrivateApertureHi = 0x20000;

// What an instruction handler sees.
struct Exec {
  Wave& w;
  Workgroup& wg;
  GlobalMemory& mem;
  const Program& prog;
  const Step* step = nullptr;
  // The buffer the last global access landed in: a kernel's lanes mostly touch one or two
  // buffers, so most lookups end here instead of in GlobalMemory's map. Nothing allocates or
  // frees buffers while a kernel runs, so the pointer stays valid for the run.
  mutable GlobalMemory::Buffer* last_buffer = nullptr;

  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_out_of_bounds(const std::string& what) const;  // an OutOfBoundsError
  // "kernel K, PC 0x.. (mnemonic, bytes ...), workgroup (x,y,z), wave W: ", the prefix of every error.
  std::string context() const;
  // Scalar operand of a 9-bit / 8-bit source field: SGPR, special register, constant or literal.
  uint32_t scalar(uint32_t code) const {
    if (code < 128) return w.s[code];
    if (code <= 192) return code - 128;  // the inline integers 0..64 (soffset 0 of buffer accesses)
    return special_scalar(code);
  }
  uint64_t scalar64(uint32_t code) const {
    if (code < 102) code &= ~1u;  // an odd SGPR pair reads the aligned one below it
    if (code < 128) return w.s[code] | (uint64_t{w.s[code + 1]} << 32);
    return special_scalar64(code);
  }
  void set_scalar(uint32_t code, uint32_t v) { w.s[code] = v; }
  void set_scalar64(uint32_t code, uint64_t v) {
    if (code < 102) code &= ~1u;  // as scalar64
    w.s[code] = static_cast<uint32_t>(v);
    w.s[code + 1] = static_cast<uint32_t>(v >> 32);
  }
  // Global memory access with bounds checking; `lane` is for the error report.
  uint8_t* global(uint64_t address, uint32_t bytes, int lane) const {
    if (GlobalMemory::Buffer* b = last_buffer; b && address >= b->address) {
      const uint64_t offset = address - b->address, size = b->bytes.size();
      if (offset <= size && bytes <= size - offset) return b->bytes.data() + offset;
    }
    return find_global(address, bytes, lane);
  }
  // LDS for reading or for writing; with LaunchOptions::check_lds_reads a read of bytes this
  // workgroup never wrote is reported; in hazard mode the sanitizer sees every access.
  const uint8_t* lds_read(uint64_t address, uint32_t bytes, int lane) const {
    if (lds_in_range(address, bytes) && !wg.checked_lds) return wg.lds.data() + address;
    return checked_lds_read(address, bytes, lane);
  }
  uint8_t* lds_write(uint64_t address, uint32_t bytes, int lane) const {
    if (lds_in_range(address, bytes) && !wg.checked_lds) return wg.lds.data() + address;
    return checked_lds_write(address, bytes, lane);
  }
  // LDS as a plain array, for the lane loops of DS instructions: null when every access must take
  // the checked path (lds_read/lds_write: unwritten-read checks, hazard mode), and an access
  // outside `lds_bytes()` must take it too (it reports the error).
  uint8_t* plain_lds() const { return wg.checked_lds ? nullptr : wg.lds.data(); }
  // Hazard mode, for a DS instruction whose active lanes each access `size` bytes at addr[l] +
  // each of `offsets`, all of one kind: checks them at once, as the merged runs of the dwords they
  // touch (broadcasts and neighbouring lanes share their shadow work), and returns LDS as a plain
  // array for the lane loop. nullptr where every access must take the per-lane checked path (a
  // lane outside LDS, whose report that path makes; accesses that are not whole aligned dwords;
  // unwritten-read checks without a sanitizer).
  uint8_t* sanitized_lds_lanes(const uint32_t* addr, std::span<const uint32_t> offsets, uint32_t size, bool write) const;
  uint64_t lds_bytes() const { return wg.lds.size(); }
  void branch_to(uint64_t byte_offset);

 private:
  // The slow paths of the accessors above: the constants and special registers, the buffer
  // lookup (which fails naming the nearest buffer), LDS with its checks and reports.
  uint32_t special_scalar(uint32_t code) const;
  uint64_t special_scalar64(uint32_t code) const;
  uint8_t* find_global(uint64_t address, uint32_t bytes, int lane) const;
  bool lds_in_range(uint64_t address, uint32_t bytes) const { return address <= wg.lds.size() && bytes <= wg.lds.size() - address; }
  const uint8_t* checked_lds_read(uint64_t address, uint32_t bytes, int lane) const;
  uint8_t* checked_lds_write(uint64_t address, uint32_t bytes, int lane) const;
};

// Registers the instruction semantics: the handler for a mnemonic, or nullptr.
Handler handler_for(std::string_view mnemonic);

}  // namespace weft::emu
