// Running a kernel: the program is decoded once, workgroups are handed to host threads, and the
// waves of a workgroup run round-robin from barrier to barrier.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "float_mode.h"
#include "isa_fields.h"
#include "sdwa.h"
#include "sanitizer.h"
#include "semantics.h"
#include "weft/emulator/mfma.h"
#include "wave.h"
#include "weft/dsl/error.h"

namespace weft::emu {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const SemanticsTable& semantics() {
  static const SemanticsTable table = [] {
    SemanticsTable t;
    register_scalar_semantics(t);
    register_vector_semantics(t);
    register_memory_semantics(t);
    register_half_semantics(t);
    register_float_special_semantics(t);
    register_fp8_semantics(t);
    register_transpose_semantics(t);
    register_typed_buffer_semantics(t);
    register_mode_semantics(t);
    return t;
  }();
  return table;
}

}  // namespace

Handler handler_for(std::string_view mnemonic) {
  const auto& t = semantics();
  const auto it = t.find(std::string(mnemonic));
  return it == t.end() ? nullptr : it->second;
}

bool executes(std::string_view mnemonic) { return handler_for(mnemonic) != nullptr; }

// ---- global memory ----

uint64_t GlobalMemory::allocate(uint64_t bytes, std::string name) {
  const uint64_t address = next_;
  next_ += (bytes + 0xffff) / 0x10000 * 0x10000 + 0x10000;  // 64 KiB of unmapped guard after each buffer
  Buffer& b = buffers_[address];
  b.name = std::move(name);
  b.address = address;
  b.bytes.assign(bytes, 0);
  return address;
}

void GlobalMemory::free(uint64_t address) {
  const auto it = buffers_.find(address);
  if (it == buffers_.end()) {
    const auto old = freed_.find(address);
    if (old != freed_.end()) throw Error("free of " + hex(address) + ": buffer '" + old->second.name + "' there was freed already");
    throw Error("free of " + hex(address) + ", which is not the start of a buffer; " + describe_nearest(address));
  }
  // Keep the last few thousand frees for messages about stale addresses; older ones are forgotten.
  constexpr size_t kFreedRecords = 4096;
  if (freed_order_.size() == kFreedRecords) {
    freed_.erase(freed_order_.front());
    freed_order_.pop_front();
  }
  freed_[address] = {std::move(it->second.name), it->second.bytes.size()};
  freed_order_.push_back(address);
  buffers_.erase(it);
}

const GlobalMemory::Freed* GlobalMemory::freed_at(uint64_t address) const {
  auto it = freed_.upper_bound(address);
  if (it == freed_.begin()) return nullptr;
  --it;
  return address < it->first + std::max<uint64_t>(it->second.bytes, 1) ? &it->second : nullptr;
}

uint8_t* GlobalMemory::data(uint64_t address) {
  const auto it = buffers_.find(address);
  if (it == buffers_.end()) throw Error("no buffer at " + hex(address));
  return it->second.bytes.data();
}

uint64_t GlobalMemory::size(uint64_t address) const {
  const auto it = buffers_.find(address);
  return it == buffers_.end() ? 0 : it->second.bytes.size();
}

GlobalMemory::Buffer* GlobalMemory::find(uint64_t address, uint64_t n) {
  auto it = buffers_.upper_bound(address);
  if (it == buffers_.begin()) return nullptr;
  --it;
  Buffer& b = it->second;
  if (address >= b.address && address + n <= b.address + b.bytes.size()) return &b;
  return nullptr;
}

std::string GlobalMemory::describe_nearest(uint64_t address) const {
  if (const Freed* f = freed_at(address)) {
    const uint64_t start = std::prev(freed_.upper_bound(address))->first;
    return "the address lies in buffer '" + f->name + "' [" + hex(start) + ", " + hex(start + f->bytes) + "), which was freed";
  }
  const Buffer* best = nullptr;
  uint64_t best_distance = ~0ull;
  for (const auto& [start, b] : buffers_) {
    const uint64_t end = start + b.bytes.size();
    const uint64_t d = address < start ? start - address : address >= end ? address - end + 1 : 0;
    if (d < best_distance) {
      best_distance = d;
      best = &b;
    }
  }
  if (!best) return "no buffers are allocated";
  const uint64_t end = best->address + best->bytes.size();
  const std::string where = address < best->address ? std::to_string(best->address - address) + " bytes before its start"
                                                    : "at offset " + std::to_string(address - best->address);
  return "nearest buffer '" + best->name + "' [" + hex(best->address) + ", " + hex(end) + ") (" + std::to_string(best->bytes.size()) +
         " bytes), the access is " + where;
}

// ---- program ----

int Program::index_of(uint64_t offset) const {
  if (offset % 4 || offset / 4 >= step_at.size() || step_at[offset / 4] < 0)
    throw Error("kernel " + kernel + ": branch to " + hex(offset) + ", which is not the start of an instruction");
  return step_at[offset / 4];
}

namespace {

std::string bytes_text(const Inst& in) {
  std::string s;
  char buf[12];
  for (int i = 0; i < in.size / 4; ++i) {
    std::snprintf(buf, sizeof buf, "%s%08X", i ? " " : "", in.word[i]);
    s += buf;
  }
  return s;
}

void invalid_encoding(Exec& e, const Inst&) { e.fail("invalid instruction encoding"); }
void cannot_execute(Exec& e, const Inst& in) {
  e.fail("the emulator cannot execute " + std::string(in.info->mnemonic) + " (" + family_name(in.family) + ")");
}
void ran_past_end(Exec& e, const Inst&) { e.fail("the wave ran past the end of the kernel without s_endpgm"); }

// The machine code a kernel's program is decoded from.
std::span<const uint8_t> kernel_code(const CodeObject& code, const Kernel& k) {
  uint64_t size = k.code_size;
  if (size == 0) size = code.text_address() + code.text().size() - k.code_address;
  return code.code_at(k.code_address, size);
}

// Whether a wave of the kernel can run in a float mode other than the default: its descriptor
// starts in one, or its code writes MODE. Only such programs pay for float_mode.cpp's wrapper.
bool starts_in_default_float_mode(const Kernel& k) { return (initial_mode(k.descriptor.rsrc1) & 0xFF) == kDefaultFloatMode; }
bool may_leave_default_float_mode(const Program& prog, const Kernel& k) {
  return !starts_in_default_float_mode(k) || std::ranges::any_of(prog.steps, [](const Step& s) {
           return s.inst.info && std::string_view(s.inst.info->mnemonic).starts_with("s_setreg");
         });
}

Program build_program(const CodeObject& code, const Kernel& k) {
  Program prog;
  prog.kernel = k.name;
  prog.arch = code.arch();
  const std::span<const uint8_t> bytes = kernel_code(code, k);
  prog.step_at.assign(bytes.size() / 4 + 1, -1);
  prog.steps.reserve(bytes.size() / 4 + 1);
  // What depends only on the opcode, looked up once per opcode: a kernel has a few dozen.
  struct OpcodeSemantics {
    Handler handler;
    const MfmaOp* mfma;
  };
  std::unordered_map<const OpcodeInfo*, OpcodeSemantics> by_opcode;
  const auto semantics_of = [&](const Inst& inst) {
    const auto [it, fresh] = by_opcode.try_emplace(inst.info);
    if (fresh) {
      it->second.handler = handler_for(inst.info->mnemonic);
      it->second.mfma = inst.family == Family::VOP3P ? find_mfma(inst.info->mnemonic, prog.arch) : nullptr;
    }
    return it->second;
  };
  for (size_t off = 0; off < bytes.size();) {
    const std::optional<Inst> inst = decode(bytes.subspan(off), prog.arch);
    if (!inst) {
      // Not necessarily reached (padding, data): an error only when executed.
      uint32_t w = 0;
      std::memcpy(&w, bytes.data() + off, std::min<size_t>(4, bytes.size() - off));
      Step s;
      s.handler = invalid_encoding;
      s.inst.size = 4;
      s.inst.word[0] = w;
      s.offset = static_cast<uint32_t>(off);
      prog.step_at[off / 4] = static_cast<int32_t>(prog.steps.size());
      prog.steps.push_back(s);
      off += 4;
      continue;
    }
    Step s;
    s.inst = *inst;
    const OpcodeSemantics semantics = semantics_of(*inst);
    s.handler = semantics.handler ? semantics.handler : cannot_execute;
    s.vop = vector_operands(*inst);
    if (inst->sdwa && s.handler != cannot_execute) prepare_sdwa(s);
    if (inst->dpp && s.handler != cannot_execute) prepare_dpp(s);
    s.mfma = semantics.mfma;
    s.offset = static_cast<uint32_t>(off);
    prog.step_at[off / 4] = static_cast<int32_t>(prog.steps.size());
    prog.steps.push_back(s);
    off += inst->size;
  }
  Step sentinel;
  sentinel.handler = ran_past_end;
  sentinel.offset = static_cast<uint32_t>(bytes.size());
  prog.steps.push_back(sentinel);
  if (may_leave_default_float_mode(prog, k)) prepare_float_modes(prog);
  return prog;
}

// Programs decoded by earlier launches, for the next launch of the same code: a benchmark or a
// test launches one kernel many times, and decoding hk_gemm's 1539 instructions costs about as
// much as running one of its workgroups' waves to the first barrier. A program depends only on
// the target, the kernel's name, its code bytes and whether its descriptor starts in the default
// float mode, so those are the key, compared in full (a
// new code object at the address of a freed one must not find the old program). A few recent
// programs are kept, the least recently used is dropped.
class ProgramCache {
 public:
  std::shared_ptr<const Program> get(const CodeObject& code, const Kernel& k) {
    const std::span<const uint8_t> bytes = kernel_code(code, k);
    {
      std::lock_guard lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->arch == code.arch() && it->program->kernel == k.name && it->default_float_mode == starts_in_default_float_mode(k) &&
            std::ranges::equal(it->code, bytes)) {
          entries_.splice(entries_.begin(), entries_, it);  // most recently used first
          return entries_.front().program;
        }
      }
    }
    auto program = std::make_shared<const Program>(build_program(code, k));  // outside the lock: it may throw
    std::lock_guard lock(mutex_);
    entries_.push_front({code.arch(), starts_in_default_float_mode(k), std::vector<uint8_t>(bytes.begin(), bytes.end()), program});
    if (entries_.size() > kEntries) entries_.pop_back();
    return program;
  }

 private:
  static constexpr size_t kEntries = 16;
  struct Entry {
    Arch arch;
    bool default_float_mode;  // the descriptor's, which decides whether float steps are wrapped
    std::vector<uint8_t> code;
    std::shared_ptr<const Program> program;
  };
  std::mutex mutex_;
  std::list<Entry> entries_;
};

std::shared_ptr<const Program> program_for(const CodeObject& code, const Kernel& k) {
  static ProgramCache cache;
  return cache.get(code, k);
}

}  // namespace

// ---- what handlers use ----

std::string Exec::context() const {
  const std::string text = step->inst.info ? std::string(step->inst.info->mnemonic) : ".long";
  return "kernel " + prog.kernel + ", PC " + hex(step->offset) + " (" + text + ", bytes " + bytes_text(step->inst) + "), workgroup (" +
         std::to_string(wg.id[0]) + "," + std::to_string(wg.id[1]) + "," + std::to_string(wg.id[2]) + "), wave " + std::to_string(w.id) +
         ": ";
}

void Exec::fail(const std::string& what) const { throw Error(context() + what); }
void Exec::fail_out_of_bounds(const std::string& what) const { throw OutOfBoundsError(context() + what); }

uint32_t Exec::special_scalar(uint32_t code) const {
  if (const std::optional<uint32_t> constant = fields::inline_constant32(code)) return *constant;
  switch (code) {
    case 251: return (w.vcc() & w.exec()) == 0;
    case 252: return w.exec() == 0;
    case 253: return w.scc;
    case 255: return step->inst.literal;
    // As 32-bit operands the apertures read as their high halves (what LLVM uses of them).
    case 235: case 236: return kSharedApertureHi;
    case 237: case 238: return kPrivateApertureHi;
    default: fail("operand code " + std::to_string(code) + " cannot be read");
  }
}

uint64_t Exec::special_scalar64(uint32_t code) const {
  if (code >= 235 && code <= 238) {  // an aperture's base (low half 0) or limit (low half all ones)
    const uint64_t hi = uint64_t{code <= 236 ? kSharedApertureHi : kPrivateApertureHi} << 32;
    return code == 235 || code == 237 ? hi : hi | 0xffffffffu;
  }
  const uint32_t lo = scalar(code);
  if (code >= 128 && code <= 208) return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(lo)));
  if (code >= 240 && code <= 248) {  // the same constants as doubles
    static const double d[] = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 0.15915494309189532};
    return std::bit_cast<uint64_t>(d[code - 240]);
  }
  return lo;
}

uint8_t* Exec::find_global(uint64_t address, uint32_t bytes, int lane) const {
  GlobalMemory::Buffer* b = mem.find(address, bytes);
  if (!b) {
    fail_out_of_bounds("out-of-bounds global access: lane " + std::to_string(lane) + ", address " + hex(address) + ", " + std::to_string(bytes) +
         " bytes; " + mem.describe_nearest(address));
  }
  last_buffer = b;
  return b->bytes.data() + (address - b->address);
}

namespace {

void check_lds_range(const Exec& e, uint64_t address, uint32_t bytes, int lane) {
  if (address > e.wg.lds.size() || bytes > e.wg.lds.size() - address)
    e.fail_out_of_bounds("out-of-bounds LDS access: lane " + std::to_string(lane) + ", address " + hex(address) + ", " + std::to_string(bytes) +
           " bytes; the kernel allocates " + std::to_string(e.wg.lds.size()) + " bytes of LDS (group segment)");
}

}  // namespace

const uint8_t* Exec::checked_lds_read(uint64_t address, uint32_t bytes, int lane) const {
  check_lds_range(*this, address, bytes, lane);
  if (!wg.lds_written.empty()) {
    if (const void* unwritten = std::memchr(&wg.lds_written[address], 0, bytes)) {
      const uint64_t at = static_cast<uint64_t>(static_cast<const uint8_t*>(unwritten) - wg.lds_written.data());
      fail("read of LDS this workgroup never wrote: lane " + std::to_string(lane) + ", address " + hex(at) + " (a " +
           std::to_string(bytes) + "-byte read at " + hex(address) + ")");
    }
  }
  if (wg.sanitizer) wg.sanitizer->lds_access(*this, address, bytes, LaneOf(lane), false);  // which checks unwritten bytes too
  return wg.lds.data() + address;
}

uint8_t* Exec::checked_lds_write(uint64_t address, uint32_t bytes, int lane) const {
  check_lds_range(*this, address, bytes, lane);
  if (!wg.lds_written.empty()) std::memset(&wg.lds_written[address], 1, bytes);
  if (wg.sanitizer) wg.sanitizer->lds_access(*this, address, bytes, LaneOf(lane), true);
  return wg.lds.data() + address;
}

uint8_t* Exec::sanitized_lds_lanes(const uint32_t* addr, std::span<const uint32_t> offsets, uint32_t size, bool write) const {
  if (!wg.sanitizer || !wg.lds_written.empty() || size % 4) return nullptr;
  return wg.sanitizer->lds_lanes(*this, LaneOf(addr, offsets, size, w.exec()), wg.lds.size(), write) ? wg.lds.data() : nullptr;
}

void Exec::branch_to(uint64_t byte_offset) { w.pc = prog.index_of(byte_offset); }

// ---- launch ----

namespace {

uint32_t lds_size(Arch a) { return a == Arch::Gfx950 ? 160 * 1024 : 64 * 1024; }

// The dispatch packet (hsa_kernel_dispatch_packet_t) and the hidden kernel arguments.
struct DispatchState {
  uint64_t packet = 0, kernarg = 0, queue = 0;
};

// The buffers one launch allocates (kernarg segment, dispatch packet, queue), freed when the
// launch ends, however it ends.
class LaunchBuffers {
 public:
  explicit LaunchBuffers(GlobalMemory& memory) : memory_(memory) {}
  ~LaunchBuffers() {
    for (uint64_t a : addresses_) {
      try {
        memory_.free(a);
      } catch (const Error&) {  // cannot happen: nothing else frees them
      }
    }
  }
  LaunchBuffers(const LaunchBuffers&) = delete;
  LaunchBuffers& operator=(const LaunchBuffers&) = delete;
  uint64_t allocate(uint64_t bytes, const char* name) {
    addresses_.push_back(memory_.allocate(bytes, name));
    return addresses_.back();
  }

 private:
  GlobalMemory& memory_;
  std::vector<uint64_t> addresses_;
};

void fill_hidden_args(const Kernel& k, const LaunchOptions& o, std::vector<uint8_t>& kernarg) {
  auto put = [&](const KernelArg& a, uint64_t v) {
    if (a.offset + a.size <= kernarg.size()) std::memcpy(kernarg.data() + a.offset, &v, std::min<uint32_t>(a.size, 8));
  };
  const uint32_t grid[3] = {o.grid.x, o.grid.y, o.grid.z}, block[3] = {o.block.x, o.block.y, o.block.z};
  for (const KernelArg& a : k.args) {
    const std::string& kind = a.value_kind;
    for (int d = 0; d < 3; ++d) {
      const char axis = static_cast<char>('x' + d);
      if (kind == std::string("hidden_block_count_") + axis) put(a, grid[d]);
      if (kind == std::string("hidden_group_size_") + axis) put(a, block[d]);
      if (kind == std::string("hidden_remainder_") + axis) put(a, 0);
      if (kind == std::string("hidden_global_offset_") + axis) put(a, 0);
    }
    if (kind == "hidden_grid_dims") put(a, o.grid.z > 1 || o.block.z > 1 ? 3 : o.grid.y > 1 || o.block.y > 1 ? 2 : 1);
  }
}

// Puts a (possibly reused) wave into the state the hardware starts a wave in. Registers the
// kernel does not use keep whatever they held: no correct program reads them.
void init_wave(Wave& w, const Kernel& k, const DispatchState& d, const Workgroup& wg, const LaunchOptions& o, int wave_id,
               const std::vector<uint8_t>& kernarg_bytes) {
  const KernelDescriptor& kd = k.descriptor;
  std::memset(w.s, 0, sizeof w.s);
  std::memset(w.vreg(0), 0, static_cast<size_t>(std::min<uint32_t>(k.vgpr_count, 256)) * kLanes * 4);
  std::memset(w.vreg(256), 0, static_cast<size_t>(std::min<uint32_t>(k.agpr_count, 256)) * kLanes * 4);
  w.scc = false;
  w.pc = 0;
  w.ended = w.at_barrier = w.slept = false;
  w.id = wave_id;
  w.executed = 0;
  w.mode = initial_mode(kd.rsrc1);
  int s = 0;
  auto put64 = [&](uint64_t v) {
    w.s[s++] = static_cast<uint32_t>(v);
    w.s[s++] = static_cast<uint32_t>(v >> 32);
  };
  if (kd.has_private_segment_buffer()) s += 4;
  if (kd.has_dispatch_ptr()) put64(d.packet);
  if (kd.has_queue_ptr()) put64(d.queue);
  if (kd.has_kernarg_segment_ptr()) put64(d.kernarg);
  if (kd.has_dispatch_id()) put64(0);
  if (kd.has_flat_scratch_init()) put64(0);
  if (kd.has_private_segment_size()) w.s[s++] = k.private_segment_fixed_size;
  for (int i = 0; i < kd.kernarg_preload_dwords(); ++i) {
    const size_t at = static_cast<size_t>(kd.kernarg_preload_offset() + i) * 4;
    uint32_t v = 0;
    if (at + 4 <= kernarg_bytes.size()) std::memcpy(&v, kernarg_bytes.data() + at, 4);
    w.s[s++] = v;
  }
  s = std::max(s, kd.user_sgpr_count());
  for (int dim = 0; dim < 3; ++dim)
    if (kd.workgroup_id_enabled(dim)) w.s[s++] = wg.id[dim];
  if (kd.workgroup_info_enabled()) w.s[s++] = 0;
  // Work-item ids packed in v0 (X 9:0, Y 19:10, Z 29:20); lanes past the block are inactive.
  const uint64_t threads = o.block.count();
  uint64_t exec = 0;
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t t = static_cast<uint64_t>(wave_id) * kLanes + static_cast<uint64_t>(l);
    if (t >= threads) continue;
    exec |= 1ull << l;
    const uint32_t x = static_cast<uint32_t>(t % o.block.x), y = static_cast<uint32_t>(t / o.block.x % o.block.y),
                   z = static_cast<uint32_t>(t / (uint64_t{o.block.x} * o.block.y));
    w.vreg(0)[l] = x | (y << 10) | (z << 20);
  }
  w.set_exec(exec);
  w.private_size = k.private_segment_fixed_size;
  w.scratch.assign(static_cast<size_t>(w.private_size) * kLanes, 0);
}

struct Counters {
  std::atomic<uint64_t> instructions{0};
  std::mutex stats_mutex;
  std::map<std::string, uint64_t> per_opcode;
};

// What watches the steps of a workgroup besides the handlers: the per-opcode counts of --stats
// and the recording of the timeline's workgroup.
struct Observers {
  std::map<std::string, uint64_t>* stats = nullptr;
  WorkgroupRecording* recording = nullptr;
  bool any(const LaunchOptions& o) const { return o.print_instructions || stats || recording; }
};

// Appends the wave's next step to its stream (start_recording made one per wave).
void record(WorkgroupRecording& r, const Wave& w) {
  auto& stream = r.waves[static_cast<size_t>(w.id)];
  if (stream.size() >= WorkgroupRecording::kMaxIssuesPerWave)
    throw Error("the timeline records at most " + std::to_string(WorkgroupRecording::kMaxIssuesPerWave) +
                " instructions per wave; wave " + std::to_string(w.id) + " runs longer (model a smaller problem)");
  stream.push_back({static_cast<uint32_t>(w.pc), static_cast<uint8_t>(std::popcount(w.exec()))});
}

void observe(const Step& s, const Wave& w, const Workgroup& wg, const Program& prog, const LaunchOptions& o, const Observers& obs) {
  const char* name = s.inst.info ? s.inst.info->mnemonic : ".long";
  if (o.print_instructions) {
    const auto text = s.inst.info ? disassemble(s.inst, prog.arch) : std::nullopt;
    std::fprintf(stderr, "wg(%u,%u,%u) wave %d  %04x: %s\n", wg.id[0], wg.id[1], wg.id[2], w.id, s.offset,
                 text ? text->c_str() : name);
  }
  if (obs.stats) ++(*obs.stats)[name];
  if (obs.recording) record(*obs.recording, w);
}

[[noreturn]] void fail_budget(Exec& e, const LaunchOptions& o) {
  e.fail("the wave reached its budget of " + std::to_string(o.max_wave_instructions) +
         " instructions without ending (a loop that never exits?); raise or lift it with LaunchOptions::max_wave_instructions, "
         "weft-emu --max-instructions N or WEFT_EMU_MAX_INSTRUCTIONS (0: no limit)");
}

// The instructions a wave may still execute under LaunchOptions::max_wave_instructions.
uint64_t budget_left(const Wave& w, const LaunchOptions& o) {
  return o.max_wave_instructions ? o.max_wave_instructions - std::min(w.executed, o.max_wave_instructions) : ~0ull;
}

// Runs one wave until it ends, reaches a barrier or sleeps (s_sleep). The loop is the emulator's
// hot path: every step has a handler (errors included) and the program ends in a sentinel, so
// there is nothing to check but the wave's state; tracing and statistics are compiled in only
// where asked for.
template <bool Observed>
uint64_t run_wave(Wave& w, Workgroup& wg, GlobalMemory& mem, const Program& prog, const LaunchOptions& o, const Observers& obs) {
  uint64_t n = 0;
  Exec e{w, wg, mem, prog};
  const Step* steps = prog.steps.data();
  const uint64_t allowed = budget_left(w, o);  // one compare per step enforces the budget
  w.slept = false;
  while (!w.ended && !w.at_barrier && !w.slept) {
    const Step& s = steps[w.pc];
    e.step = &s;
    if (n == allowed) {
      w.executed += n;
      fail_budget(e, o);
    }
    if constexpr (Observed) observe(s, w, wg, prog, o, obs);
    ++w.pc;  // a branch overwrites it
    s.handler(e, s.inst);
    ++n;
  }
  w.executed += n;
  return n;
}

// What a workgroup's turn did: `done` once every wave has ended; `idle` where nothing another
// workgroup could see or wait for happened (no global store or atomic, no barrier released, no
// wave ended): its waves only waited.
struct Turn {
  uint64_t instructions = 0;
  bool done = false, idle = true;
};

// The global stores and atomics a workgroup's waves have run, plus the waves that have ended.
uint64_t progress(const std::vector<Wave>& ws) {
  uint64_t p = 0;
  for (const Wave& w : ws) p += w.stores + (w.ended ? 1 : 0);
  return p;
}

// Runs a workgroup's waves, releasing each barrier once every live wave has reached it, until all
// have ended. In a cooperative launch the turn ends where a wave sleeps (its next call resumes
// it); otherwise s_sleep does not stop the wave.
Turn run_workgroup(Workgroup& wg, std::vector<Wave>& ws, const Program& prog, GlobalMemory& mem, const LaunchOptions& o,
                   const Observers& obs) {
  Turn t;
  const uint64_t before = progress(ws);
  for (;;) {
    bool any_waiting = false, any_slept = false;
    for (Wave& w : ws) {
      if (w.ended) continue;
      do {
        t.instructions += obs.any(o) ? run_wave<true>(w, wg, mem, prog, o, obs) : run_wave<false>(w, wg, mem, prog, o, obs);
      } while (w.slept && !o.cooperative);
      any_waiting |= w.at_barrier;
      any_slept |= w.slept;
    }
    if (any_slept) break;
    if (!any_waiting) {
      t.done = true;
      break;
    }
    for (Wave& w : ws) w.at_barrier = false;  // every live wave has arrived: release the barrier
    t.idle = false;
  }
  t.idle = t.idle && progress(ws) == before;
  return t;
}

// Hazard mode: one wave's turn, each step checked by the sanitizer around it, until the wave
// has issued `burst` memory operations (or waits at a barrier, or ends). Only memory operations
// touch what other waves see; the steps between them touch the wave's own registers, so where a
// turn ends among those changes nothing, and ending it only at the memory operations keeps every
// interleaving that matters while switching waves far less often (a switch costs as much as
// dozens of steps: mispredicted branches).
uint64_t run_wave_checked(Wave& w, Workgroup& wg, GlobalMemory& mem, const Program& prog, const LaunchOptions& o,
                          const Observers& obs, Sanitizer& sanitizer, uint64_t burst) {
  uint64_t n = 0, operations = 0;
  Exec e{w, wg, mem, prog};
  const uint64_t allowed = budget_left(w, o);
  w.slept = false;
  while (!w.ended && !w.at_barrier && !w.slept && operations < burst) {
    const int index = w.pc;
    const Step& s = prog.steps[static_cast<size_t>(index)];
    e.step = &s;
    if (n == allowed) {
      w.executed += n;
      fail_budget(e, o);
    }
    if (obs.any(o)) observe(s, w, wg, prog, o, obs);
    const Sanitizer::Checked checked = sanitizer.before(e, index);
    operations += checked.memory_operation();
    ++w.pc;
    try {
      s.handler(e, s.inst);
    } catch (const OutOfBoundsError& ex) {
      sanitizer.report_out_of_bounds(e, ex.what());  // the launch cannot go on: reported, then ended
      throw;
    }
    sanitizer.after(checked);
    ++n;
  }
  w.executed += n;
  if (w.ended) sanitizer.wave_ended(w);
  return n;
}

// Hazard mode's schedule: the waves interleave a few instructions at a time, the next wave and
// the length of its turn drawn from the schedule seed, the workgroup and the turn, so that a
// kernel that relies on one wave running ahead of another (instead of on a barrier) shows it,
// replayably. A turn runs until every wave has ended or, in a cooperative launch, until every
// live wave waits at a barrier or has slept in it (run_workgroup's turns).
Turn run_turn_checked(Workgroup& wg, std::vector<Wave>& ws, const Program& prog, GlobalMemory& mem, const LaunchOptions& o, const Observers& obs,
                      Sanitizer& sanitizer, uint64_t linear_id, uint64_t turn) {
  // SplitMix64: a draw costs a few multiplies, where a library engine and a modulo would cost
  // as much as the instructions of a turn.
  uint64_t state = o.schedule_seed * 0x9E3779B97F4A7C15ull + linear_id + turn * 0xD1B54A32D192ED03ull;
  const auto draw = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<Wave*> ready;
  std::vector<char> ran(ws.size(), 0);
  const uint64_t before = progress(ws);
  Turn t;
  for (;;) {
    ready.clear();
    bool any_waiting = false, any_slept = false;
    for (Wave& w : ws) {
      if (w.ended) continue;
      if (w.at_barrier) any_waiting = true;
      else if (w.slept && o.cooperative && ran[static_cast<size_t>(w.id)]) any_slept = true;  // slept in this turn: the turn ends
      else ready.push_back(&w);
    }
    if (ready.empty()) {
      if (any_slept) break;
      if (!any_waiting) {
        t.done = true;
        break;
      }
      for (Wave& w : ws) w.at_barrier = false;
      sanitizer.barrier_released();
      t.idle = false;
      continue;
    }
    const uint64_t r = draw();
    Wave& w = *ready[static_cast<size_t>(((r & 0xffffffffu) * ready.size()) >> 32)];
    ran[static_cast<size_t>(w.id)] = 1;
    t.instructions += run_wave_checked(w, wg, mem, prog, o, obs, sanitizer, 1 + ((r >> 32) & 15));  // a turn of 1 to 16 memory operations
  }
  t.idle = t.idle && progress(ws) == before;
  return t;
}

// A workgroup in hazard mode, from its start to its end (run_turn_checked).
uint64_t run_workgroup_checked(Workgroup& wg, std::vector<Wave>& ws, const Program& prog, GlobalMemory& mem, const LaunchOptions& o,
                               const Observers& obs, Sanitizer& sanitizer, uint64_t linear_id) {
  sanitizer.start_workgroup(wg, ws);
  return run_turn_checked(wg, ws, prog, mem, o, obs, sanitizer, linear_id, 0).instructions;
}

WorkgroupRecording start_recording(const Program& prog, const Workgroup& wg, size_t waves) {
  WorkgroupRecording r;
  r.arch = prog.arch;
  r.waves.resize(waves);
  std::copy(std::begin(wg.id), std::end(wg.id), r.workgroup);
  for (const Step& s : prog.steps) {
    r.instructions.push_back(s.inst);
    r.offsets.push_back(s.offset);
  }
  return r;
}

// Merges one host thread's hazard reports into the launch's: one report per kind and pair of
// PCs, occurrences summed.
void merge_hazards(std::vector<Hazard>& into, std::vector<Hazard> from) {
  for (Hazard& h : from) {
    const auto same = [&](const Hazard& x) { return x.kind == h.kind && x.pc == h.pc && x.other_pc == h.other_pc; };
    if (const auto it = std::find_if(into.begin(), into.end(), same); it != into.end()) it->occurrences += h.occurrences;
    else into.push_back(std::move(h));
  }
}

// A workgroup of a cooperative launch: resident from the launch's start to its end.
struct Resident {
  Workgroup wg;
  std::vector<Wave> waves;
  std::optional<Sanitizer> sanitizer;
  uint64_t turns = 0;
  bool done = false;
};

// LaunchOptions::cooperative: every workgroup resident at once, taking turns on this thread (a
// turn ends where a wave sleeps, waiting for the others: run_workgroup). Returns the instructions
// executed; the first error ends the launch, as the pool's workers do.
uint64_t run_cooperative(const std::string& kernel_name, const Kernel& k, const DispatchState& d, const Program& prog, GlobalMemory& memory, const LaunchOptions& o,
                         const std::vector<uint8_t>& kernarg, uint32_t lds_bytes, std::map<std::string, uint64_t>& stats, std::vector<Hazard>& hazards,
                         std::string& first_error) {
  std::vector<Resident> residents(o.grid.count());
  const size_t waves = static_cast<size_t>((o.block.count() + kLanes - 1) / kLanes);
  uint64_t instructions = 0;
  try {
    for (uint64_t g = 0; g < residents.size(); ++g) {
      Resident& r = residents[g];
      r.wg.id[0] = static_cast<uint32_t>(g % o.grid.x);
      r.wg.id[1] = static_cast<uint32_t>(g / o.grid.x % o.grid.y);
      r.wg.id[2] = static_cast<uint32_t>(g / (uint64_t{o.grid.x} * o.grid.y));
      r.wg.lds.assign(lds_bytes, 0);
      if (o.check_lds_reads && !o.sanitize) r.wg.lds_written.assign(lds_bytes, 0);
      r.wg.checked_lds = o.check_lds_reads || o.sanitize;
      r.waves.resize(waves);
      for (size_t i = 0; i < waves; ++i) init_wave(r.waves[i], k, d, r.wg, o, static_cast<int>(i), kernarg);
      if (o.sanitize) {
        r.wg.sanitizer = &r.sanitizer.emplace(prog);
        r.sanitizer->start_workgroup(r.wg, r.waves);
      }
    }
    const Observers obs{o.stats ? &stats : nullptr, nullptr};
    for (int idle_rounds = 0;;) {
      bool live = false, idle = true;
      for (uint64_t g = 0; g < residents.size(); ++g) {
        Resident& r = residents[g];
        if (r.done) continue;
        live = true;
        const Turn t = r.sanitizer ? run_turn_checked(r.wg, r.waves, prog, memory, o, obs, *r.sanitizer, g, r.turns++)
                                   : run_workgroup(r.wg, r.waves, prog, memory, o, obs);
        instructions += t.instructions;
        r.done = t.done;
        idle = idle && t.idle;
      }
      if (!live) break;
      idle_rounds = idle ? idle_rounds + 1 : 0;
      if (idle_rounds >= LaunchOptions::kMaxIdleRounds)
        throw Error("cooperative launch of " + kernel_name + ": for " + std::to_string(LaunchOptions::kMaxIdleRounds) +
                    " turns in a row every workgroup only waited (s_sleep) for the others: a grid barrier that some workgroup never "
                    "reaches, or a wait whose condition nothing will make true");
    }
  } catch (const OutOfBoundsError& ex) {  // in hazard mode, already a report
    if (!o.sanitize) first_error = ex.what();
  } catch (const std::exception& ex) {
    first_error = ex.what();
  }
  for (Resident& r : residents)
    if (r.sanitizer) merge_hazards(hazards, r.sanitizer->take_reports());
  return instructions;
}

}  // namespace

RunReport run_kernel(const CodeObject& code, const std::string& kernel_name, GlobalMemory& memory, const LaunchOptions& o) {
  const Kernel& k = code.kernel(kernel_name);
  if (o.grid.count() == 0 || o.block.count() == 0) throw Error("launch of " + kernel_name + ": grid and block must not be empty");
  if (k.max_flat_workgroup_size && o.block.count() > k.max_flat_workgroup_size)
    throw Error("launch of " + kernel_name + ": block of " + std::to_string(o.block.count()) + " work-items exceeds the kernel's maximum of " +
                std::to_string(k.max_flat_workgroup_size));
  if (o.block.x > 1024 || o.block.y > 1024 || o.block.z > 1024) throw Error("launch of " + kernel_name + ": a block dimension exceeds 1024");
  const std::shared_ptr<const Program> program = program_for(code, k);
  const Program& prog = *program;

  std::vector<uint8_t> kernarg = o.kernarg;
  kernarg.resize(std::max<size_t>(kernarg.size(), std::max(k.kernarg_segment_size, k.descriptor.kernarg_size)), 0);
  // The segment is 16-byte aligned and allocated in 16-byte granules, as the HSA runtime does;
  // LLVM relies on it and widens scalar loads of the last arguments up to the granule (three
  // int32 after three pointers: an s_load_dwordx4 of bytes 24..39 of a 36-byte segment).
  kernarg.resize((kernarg.size() + 15) / 16 * 16, 0);
  fill_hidden_args(k, o, kernarg);
  DispatchState d;
  LaunchBuffers launch_buffers(memory);
  d.kernarg = launch_buffers.allocate(kernarg.size(), "kernarg segment");
  std::memcpy(memory.data(d.kernarg), kernarg.data(), kernarg.size());
  d.packet = launch_buffers.allocate(64, "dispatch packet");
  {
    uint8_t* p = memory.data(d.packet);
    const uint16_t sizes[3] = {static_cast<uint16_t>(o.block.x), static_cast<uint16_t>(o.block.y), static_cast<uint16_t>(o.block.z)};
    std::memcpy(p + 4, sizes, 6);
    const uint32_t grid[3] = {o.grid.x * o.block.x, o.grid.y * o.block.y, o.grid.z * o.block.z};
    std::memcpy(p + 12, grid, 12);
    std::memcpy(p + 40, &d.kernarg, 8);
  }
  d.queue = launch_buffers.allocate(256, "queue");

  // LDS: what the kernel allocates; an access beyond it is reported (the target's limit bounds it).
  const uint32_t lds_bytes = std::max(k.group_segment_fixed_size, k.descriptor.group_segment_fixed_size);
  if (lds_bytes > lds_size(prog.arch))
    throw Error("kernel " + kernel_name + " needs " + std::to_string(lds_bytes) + " bytes of LDS; " + arch_name(prog.arch) +
                " has " + std::to_string(lds_size(prog.arch)));
  const uint64_t groups = o.grid.count();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = static_cast<unsigned>(std::min<uint64_t>(groups, o.host_threads > 0 ? static_cast<unsigned>(o.host_threads) : hw));
  std::atomic<uint64_t> next{0}, instructions{0};
  std::mutex error_mutex, stats_mutex;
  std::string first_error;
  std::map<std::string, uint64_t> per_opcode;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Hazard> hazards;
  std::optional<WorkgroupRecording> recorded;
  if (o.cooperative && o.record_workgroup)
    throw Error("launch of " + kernel_name + ": the timeline model cannot record a cooperative launch (a kernel with a grid barrier)");
  auto worker = [&] {
    std::map<std::string, uint64_t> local_stats;
    Workgroup wg;
    std::vector<Wave> waves(static_cast<size_t>((o.block.count() + kLanes - 1) / kLanes));  // reused by every workgroup
    std::optional<Sanitizer> sanitizer;
    if (o.sanitize) {
      sanitizer.emplace(prog);
      wg.sanitizer = &*sanitizer;
    }
    for (uint64_t g; (g = next.fetch_add(1)) < groups;) {
      wg.id[0] = static_cast<uint32_t>(g % o.grid.x);
      wg.id[1] = static_cast<uint32_t>(g / o.grid.x % o.grid.y);
      wg.id[2] = static_cast<uint32_t>(g / (uint64_t{o.grid.x} * o.grid.y));
      wg.lds.assign(lds_bytes, 0);
      if (o.check_lds_reads && !o.sanitize) wg.lds_written.assign(lds_bytes, 0);
      wg.checked_lds = o.check_lds_reads || o.sanitize;
      Observers obs{o.stats ? &local_stats : nullptr, nullptr};
      std::optional<WorkgroupRecording> recording;
      if (o.record_workgroup == g) obs.recording = &recording.emplace(start_recording(prog, wg, waves.size()));
      try {
        for (size_t i = 0; i < waves.size(); ++i) init_wave(waves[i], k, d, wg, o, static_cast<int>(i), kernarg);
        instructions += sanitizer ? run_workgroup_checked(wg, waves, prog, memory, o, obs, *sanitizer, g)
                                  : run_workgroup(wg, waves, prog, memory, o, obs).instructions;
        if (recording) {
          std::lock_guard lock(stats_mutex);
          recorded = std::move(recording);
        }
      } catch (const OutOfBoundsError& ex) {  // in hazard mode, already a report
        std::lock_guard lock(error_mutex);
        if (first_error.empty() && !sanitizer) first_error = ex.what();
        next = groups;  // an access out of bounds ends the launch
      } catch (const std::exception& ex) {
        std::lock_guard lock(error_mutex);
        if (first_error.empty()) first_error = ex.what();
        next = groups;  // stop handing out work
      }
    }
    std::lock_guard lock(stats_mutex);
    for (const auto& [name, n] : local_stats) per_opcode[name] += n;
    if (sanitizer) merge_hazards(hazards, sanitizer->take_reports());
  };
  if (o.cooperative) {
    instructions = run_cooperative(kernel_name, k, d, prog, memory, o, kernarg, lds_bytes, per_opcode, hazards, first_error);
  } else {
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
  }
  if (!first_error.empty()) {
    if (hazards.empty()) throw Error(first_error);
    throw Error(first_error + "\n" + HazardError(std::move(hazards), o.schedule_seed).what());
  }
  if (!hazards.empty()) throw HazardError(std::move(hazards), o.schedule_seed);

  RunReport r;
  r.workgroups = groups;
  r.waves = groups * ((o.block.count() + kLanes - 1) / kLanes);
  r.instructions = instructions;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.per_opcode = std::move(per_opcode);
  r.recording = std::move(recorded);
  return r;
}

}  // namespace weft::emu
