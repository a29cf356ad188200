// Vector memory: GLOBAL / FLAT / SCRATCH loads, stores and atomics, LDS (DS), buffer loads and
// stores and atomics through a V# (MUBUF) including the direct-to-LDS form; ds_permute/bpermute. Memory
// completes at issue, so s_waitcnt has nothing to wait for. Every access is bounds-checked against
// the allocated buffers; buffer instructions first apply the resource's range check (num_records).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "buffer_access.h"
#include "isa_fields.h"
#include "semantics.h"

namespace weft::emu {

using namespace fields;

namespace {

enum class Ext { Zero, Sign, None };

// Reads `Bytes` loaded bytes as the registers receive them: sub-dword loads zero- or
// sign-extended into one dword, dword loads as they are. `out` has room for 4 dwords.
template <uint32_t Bytes, Ext X>
void extend_loaded(const uint8_t* p, uint32_t* out) {
  if constexpr (Bytes >= 4) {
    std::memcpy(out, p, Bytes);
  } else {
    uint32_t v = 0;
    std::memcpy(&v, p, Bytes);
    if (X == Ext::Sign) v = Bytes == 1 ? static_cast<uint32_t>(static_cast<int8_t>(v)) : static_cast<uint32_t>(static_cast<int16_t>(v));
    out[0] = v;
  }
}

// Writes a loaded value to lane l of consecutive registers from `dst`.
template <uint32_t Bytes, Ext X>
void load_into_registers(Wave& w, uint32_t dst, int l, const uint8_t* p) {
  uint32_t v[4];
  extend_loaded<Bytes, X>(p, v);
  for (uint32_t d = 0; d < (Bytes + 3) / 4; ++d) w.vreg(dst + d)[l] = v[d];
}

// Where lane l of a GLOBAL/FLAT/SCRATCH instruction points.
uint64_t flat_address(const Exec& e, const Inst& in, int l) {
  const uint32_t raw = flat_offset_bits(in);
  const int64_t off = in.family == Family::FLAT ? static_cast<int64_t>(raw) : static_cast<int32_t>(raw << 19) >> 19;
  const uint32_t saddr = flat_saddr(in);
  const uint32_t* lo = e.w.vreg(flat_addr(in));
  if (in.family == Family::GLOBAL && saddr != 0x7f)
    return e.scalar64(saddr) + lo[l] + static_cast<uint64_t>(off);
  const uint32_t* hi = e.w.vreg(flat_addr(in) + 1);
  return (lo[l] | (uint64_t{hi[l]} << 32)) + static_cast<uint64_t>(off);
}

// Scratch: the lane's private segment offset.
uint64_t scratch_offset(const Exec& e, const Inst& in, int l) {
  const int64_t off = static_cast<int32_t>(flat_offset_bits(in) << 19) >> 19;
  const uint32_t saddr = flat_saddr(in);
  uint64_t a = static_cast<uint64_t>(off);
  if (saddr != 0x7f && saddr != 0x7d) a += e.scalar(saddr);
  if (flat_lds(in)) a += e.w.vreg(flat_addr(in))[l];  // SVE: vaddr used
  return a;
}

uint8_t* scratch_at(const Exec& e, uint64_t offset, uint32_t bytes, int lane) {
  if (offset + bytes > e.w.private_size)
    e.fail_out_of_bounds("scratch access out of bounds: lane " + std::to_string(lane) + " offset " + std::to_string(offset) + " + " +
           std::to_string(bytes) + " bytes, private segment is " + std::to_string(e.w.private_size) + " bytes per lane");
  return e.w.scratch.data() + static_cast<size_t>(lane) * e.w.private_size + offset;
}

// Whether an access reads memory (a load) or writes it (a store or an atomic); LDS tracks writes.
enum class Access { Read, Write };

// The bytes lane l of a SCRATCH or FLAT instruction accesses. A FLAT address in the shared or
// private aperture reaches the workgroup's LDS or the lane's scratch.
uint8_t* segment_memory(const Exec& e, const Inst& in, int l, uint32_t bytes, Access access) {
  if (in.family == Family::SCRATCH) return scratch_at(e, scratch_offset(e, in, l), bytes, l);
  const uint64_t address = flat_address(e, in, l);
  const uint32_t aperture = static_cast<uint32_t>(address >> 32), offset = static_cast<uint32_t>(address);
  if (aperture == kSharedApertureHi)
    return access == Access::Read ? const_cast<uint8_t*>(e.lds_read(offset, bytes, l)) : e.lds_write(offset, bytes, l);
  if (aperture == kPrivateApertureHi) return scratch_at(e, offset, bytes, l);
  return e.global(address, bytes, l);
}

// The bytes lane l of a vector memory instruction accesses; GLOBAL instructions, the common
// case, take the inline path.
inline uint8_t* lane_memory(const Exec& e, const Inst& in, int l, uint32_t bytes, Access access) {
  if (in.family == Family::GLOBAL) return e.global(flat_address(e, in, l), bytes, l);
  return segment_memory(e, in, l, bytes, access);
}

// The host bytes each active lane of a vector memory instruction accesses, found and checked for
// every lane before any lane's data moves. The first pass only computes addresses and asks the
// host to fetch their cache lines, so the lanes' misses (a GEMM's tiles do not fit this host's
// caches next to the waves' registers) overlap instead of each lane waiting for its own. Checks
// run in lane order, so the lane reported for a bad access is the one the one-pass loop
// reported; a failing instruction stops the launch before any lane's data moves.
struct LanePointers {
  int count = 0;
  uint8_t lane[kLanes];
  uint8_t* at[kLanes];
  void add(int l, uint8_t* p, Access access) {
    if (access == Access::Read) __builtin_prefetch(p, 0);
    else __builtin_prefetch(p, 1);
    lane[count] = static_cast<uint8_t>(l);
    at[count++] = p;
  }
};

template <class Find>
void find_lanes(const Exec& e, LanePointers& out, Access access, Find find) {
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    out.add(l, find(l), access);
  }
}

// Loads `Bytes` per lane into consecutive VGPRs (or AGPRs), extending sub-dword loads.
template <uint32_t Bytes, Ext X>
void flat_load(Exec& e, const Inst& in) {
  const uint32_t dst = flat_vdst(in) + (flat_acc(in) ? 256 : 0);
  LanePointers lanes;
  find_lanes(e, lanes, Access::Read, [&](int l) { return lane_memory(e, in, l, Bytes, Access::Read); });
  for (int i = 0; i < lanes.count; ++i) load_into_registers<Bytes, X>(e.w, dst, lanes.lane[i], lanes.at[i]);
}

// The direct-to-LDS loads' destinations, lane l's `size` bytes at first + l * size: in hazard mode
// checked for all active lanes at once (Exec::sanitized_lds_lanes), returning LDS as a plain
// array; nullptr where each lane must take the checked path.
uint8_t* lds_dma_destination(const Exec& e, uint32_t first, uint32_t size) {
  if (e.plain_lds()) return nullptr;  // the plain mode: lds_write is the unchecked path already
  uint32_t addr[kLanes];
  for (int l = 0; l < kLanes; ++l) addr[l] = first + static_cast<uint32_t>(l) * size;
  const uint32_t no_offset = 0;
  return e.sanitized_lds_lanes(addr, {&no_offset, 1}, size, true);
}

// global_load_lds_*: the loaded bytes go to LDS at M0 + instruction offset + lane * size.
template <uint32_t Bytes, Ext X>
void global_load_lds(Exec& e, const Inst& in) {
  const uint32_t size = std::max(Bytes, 4u);
  const int32_t inst_offset = static_cast<int32_t>(flat_offset_bits(in) << 19) >> 19;
  const uint32_t first = (e.w.s[kM0] & 0x3ffff) + static_cast<uint32_t>(inst_offset);
  uint8_t* const lds = lds_dma_destination(e, first, size);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint32_t value[4];
    extend_loaded<Bytes, X>(lane_memory(e, in, l, Bytes, Access::Read), value);
    const uint64_t lds_address = (e.w.s[kM0] & 0x3ffff) + static_cast<uint64_t>(static_cast<int64_t>(inst_offset)) + static_cast<uint64_t>(l) * size;
    std::memcpy(lds ? lds + lds_address : e.lds_write(lds_address, size, l), value, size);
  }
}

template <uint32_t Bytes, uint32_t FromByte = 0>
void flat_store(Exec& e, const Inst& in) {
  ++e.w.stores;
  const uint32_t src = flat_data(in) + (flat_acc(in) ? 256 : 0);
  LanePointers lanes;
  find_lanes(e, lanes, Access::Write, [&](int l) { return lane_memory(e, in, l, Bytes, Access::Write); });
  for (int i = 0; i < lanes.count; ++i) {
    const int l = lanes.lane[i];
    uint8_t* p = lanes.at[i];
    if constexpr (Bytes >= 4) {
      for (uint32_t d = 0; d < Bytes / 4; ++d) std::memcpy(p + 4 * d, &e.w.vreg(src + d)[l], 4);
    } else {  // a byte or a short from the low half, or from the high half (the *_d16_hi stores)
      std::memcpy(p, reinterpret_cast<const uint8_t*>(&e.w.vreg(src)[l]) + FromByte, Bytes);
    }
  }
}

// Atomics on global memory (32 and 64 bits): atomic across the host threads running
// workgroups. Packed f16/bf16 adds treat a dword as two halves, each rounded to nearest even.
enum class Atomic { Add, Sub, SMin, UMin, SMax, UMax, And, Or, Xor, Swap, CmpSwap, AddF32, Inc, Dec, PkAddF16, PkAddBF16 };

uint32_t bf16_add(uint32_t a, uint32_t b) {
  const float sum = std::bit_cast<float>(a << 16) + std::bit_cast<float>(b << 16);
  const uint32_t bits = std::bit_cast<uint32_t>(sum);
  if (std::isnan(sum)) return (bits >> 16) | 0x40;  // quiet
  return (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
}

uint32_t f16_add(uint32_t a, uint32_t b) {
  const float sum = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(a))) +
                    static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(b)));
  return std::bit_cast<uint16_t>(static_cast<_Float16>(sum));
}

template <class T>
T atomic_apply(Atomic op, T old, T v, T cmp) {
  using S = std::make_signed_t<T>;
  switch (op) {
    case Atomic::Add: return old + v;
    case Atomic::Sub: return old - v;
    case Atomic::SMin: return static_cast<S>(v) < static_cast<S>(old) ? v : old;
    case Atomic::UMin: return v < old ? v : old;
    case Atomic::SMax: return static_cast<S>(v) > static_cast<S>(old) ? v : old;
    case Atomic::UMax: return v > old ? v : old;
    case Atomic::And: return old & v;
    case Atomic::Or: return old | v;
    case Atomic::Xor: return old ^ v;
    case Atomic::Swap: return v;
    case Atomic::CmpSwap: return old == cmp ? v : old;
    case Atomic::Inc: return old >= v ? 0 : old + 1;
    case Atomic::Dec: return (old == 0 || old > v) ? v : old - 1;
    default: break;
  }
  if constexpr (sizeof(T) == 4) {
    switch (op) {
      case Atomic::AddF32: return std::bit_cast<uint32_t>(std::bit_cast<float>(old) + std::bit_cast<float>(v));
      case Atomic::PkAddF16: return f16_add(old & 0xffff, v & 0xffff) | f16_add(old >> 16, v >> 16) << 16;
      case Atomic::PkAddBF16: return bf16_add(old & 0xffff, v & 0xffff) | bf16_add(old >> 16, v >> 16) << 16;
      default: break;
    }
  }
  return old;
}

// A T-sized value from consecutive registers from `r`, lane l (and back).
template <class T>
T lane_value(Wave& w, uint32_t r, int l) {
  if constexpr (sizeof(T) == 8) return w.vreg(r)[l] | (uint64_t{w.vreg(r + 1)[l]} << 32);
  else return w.vreg(r)[l];
}
template <class T>
void set_lane_value(Wave& w, uint32_t r, int l, T v) {
  w.vreg(r)[l] = static_cast<uint32_t>(v);
  if constexpr (sizeof(T) == 8) w.vreg(r + 1)[l] = static_cast<uint32_t>(v >> 32);
}

// data = {value} or, for cmpswap, {value, comparand}, each T wide.
template <Atomic Op, class T = uint32_t>
void flat_atomic(Exec& e, const Inst& in) {
  ++e.w.stores;
  constexpr uint32_t words = sizeof(T) / 4;
  const uint32_t data = flat_data(in), dst = flat_vdst(in);
  const bool returns = flat_sc0(in);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint8_t* p = lane_memory(e, in, l, sizeof(T), Access::Write);
    if (reinterpret_cast<uintptr_t>(p) % sizeof(T)) e.fail("misaligned atomic at lane " + std::to_string(l));
    std::atomic_ref<T> cell(*reinterpret_cast<T*>(p));
    const T v = lane_value<T>(e.w, data, l);
    const T cmp = Op == Atomic::CmpSwap ? lane_value<T>(e.w, data + words, l) : 0;
    T old = cell.load();
    while (!cell.compare_exchange_weak(old, atomic_apply<T>(Op, old, v, cmp))) {
    }
    if (returns) set_lane_value<T>(e.w, dst, l, old);
  }
}

// DS: address = vaddr + offset (offset0 | offset1 << 8), or two addresses for read2/write2.
uint32_t ds_address(const Exec& e, const Inst& in, int l) { return e.w.vreg(ds_addr(in))[l] + (ds_offset0(in) | (ds_offset1(in) << 8)); }

// The LDS bytes a DS lane loop reads or writes at `address`: the plain array where no check is
// on and the access is in range, else the checked accessors (which report what is wrong). The
// loops keep the array, its size and the register rows in locals: through Exec they would be
// reloaded for every lane, since the register writes might alias them.
// In the checked modes a lane whose bytes are those the previous checked lane of the instruction
// accessed (a broadcast read) reuses that check: the sanitizer would find them recorded by this
// instruction already and skip them.
struct LdsLanes {
  uint8_t* plain;
  uint64_t bytes;
  uint8_t* last = nullptr;  // the checked path's previous result, for last_address/last_size
  uint32_t last_address = 0, last_size = 0;
  explicit LdsLanes(const Exec& e) : plain(e.plain_lds()), bytes(e.lds_bytes()) {}
  // In hazard mode, checks every active lane's accesses (`size` bytes at addr[l] + each offset)
  // at once, and the lane loop then runs on the plain array (Exec::sanitized_lds_lanes).
  LdsLanes(const Exec& e, const uint32_t* addr, std::span<const uint32_t> offsets, uint32_t size, Access access) : LdsLanes(e) {
    if (!plain) plain = e.sanitized_lds_lanes(addr, offsets, size, access == Access::Write);
  }
  const uint8_t* read(const Exec& e, uint32_t address, uint32_t size, int l) { return at(e, address, size, l, Access::Read); }
  uint8_t* write(const Exec& e, uint32_t address, uint32_t size, int l) { return at(e, address, size, l, Access::Write); }
  uint8_t* at(const Exec& e, uint32_t address, uint32_t size, int l, Access access) {
    if (plain && uint64_t{address} + size <= bytes) return plain + address;
    if (last && address == last_address && size == last_size) return last;
    last = access == Access::Read ? const_cast<uint8_t*>(e.lds_read(address, size, l)) : e.lds_write(address, size, l);
    last_address = address;
    last_size = size;
    return last;
  }
  // Whether all 64 lanes are active and each one's `size` bytes at addr[l] + offset lie in the
  // plain array: the lane loop then needs no per-lane check (a vectorized max decides).
  bool all_lanes_plain(const Exec& e, const uint32_t* addr, uint32_t offset, uint32_t size) const {
    if (!plain || e.w.exec() != ~0ull) return false;
    uint32_t highest = 0;
    for (int l = 0; l < kLanes; ++l) highest = std::max(highest, static_cast<uint32_t>(addr[l] + offset));
    return uint64_t{highest} + size <= bytes;
  }
};

template <uint32_t Bytes, Ext X>
void ds_read(Exec& e, const Inst& in) {
  // One pass, unlike the global accesses: LDS is mostly in the host's caches, and an address
  // pass first (LanePointers) measured slower here.
  constexpr uint32_t words = (Bytes + 3) / 4;
  const uint32_t dst = ds_vdst(in) + (ds_acc(in) ? 256 : 0), offset = ds_offset0(in) | (ds_offset1(in) << 8);
  const uint32_t* addr = e.w.vreg(ds_addr(in));
  uint32_t* out[words];
  for (uint32_t d = 0; d < words; ++d) out[d] = e.w.vreg(dst + d);
  LdsLanes lds(e, addr, {&offset, 1}, Bytes, Access::Read);
  if (lds.all_lanes_plain(e, addr, offset, Bytes)) {
    for (int l = 0; l < kLanes; ++l) {
      uint32_t v[4];
      extend_loaded<Bytes, X>(lds.plain + static_cast<uint32_t>(addr[l] + offset), v);
      for (uint32_t d = 0; d < words; ++d) out[d][l] = v[d];
    }
    return;
  }
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint32_t v[4];
    extend_loaded<Bytes, X>(lds.read(e, addr[l] + offset, Bytes, l), v);
    for (uint32_t d = 0; d < words; ++d) out[d][l] = v[d];
  }
}

// `FromByte` 2: ds_write_b8_d16_hi / ds_write_b16_d16_hi store from the data's high half.
template <uint32_t Bytes, uint32_t FromByte = 0>
void ds_write(Exec& e, const Inst& in) {
  constexpr uint32_t words = (Bytes + 3) / 4;
  const uint32_t src = ds_data0(in) + (ds_acc(in) ? 256 : 0), offset = ds_offset0(in) | (ds_offset1(in) << 8);
  const uint32_t* addr = e.w.vreg(ds_addr(in));
  const uint32_t* data[words];
  for (uint32_t d = 0; d < words; ++d) data[d] = e.w.vreg(src + d);
  LdsLanes lds(e, addr, {&offset, 1}, Bytes, Access::Write);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint8_t* p = lds.write(e, addr[l] + offset, Bytes, l);
    if constexpr (Bytes >= 4) {
      for (uint32_t d = 0; d < words; ++d) std::memcpy(p + 4 * d, &data[d][l], 4);
    } else {
      std::memcpy(p, reinterpret_cast<const uint8_t*>(&data[0][l]) + FromByte, Bytes);
    }
  }
}

// ds_read2 / ds_write2: two elements at vaddr + offset0 * size * stride and offset1 * size * stride.
template <uint32_t Bytes, uint32_t Stride>
void ds_read2(Exec& e, const Inst& in) {
  constexpr uint32_t words = Bytes / 4;
  const uint32_t dst = ds_vdst(in) + (ds_acc(in) ? 256 : 0);
  const uint32_t off[2] = {ds_offset0(in) * Bytes * Stride, ds_offset1(in) * Bytes * Stride};
  const uint32_t* addr = e.w.vreg(ds_addr(in));
  uint32_t* out[2 * words];
  for (uint32_t i = 0; i < 2 * words; ++i) out[i] = e.w.vreg(dst + i);
  // Each element for every lane in turn (in the checked path a broadcast's lanes then meet the
  // same bytes one after another), from the addresses as they were before any lane's result
  // lands: the destination may be the address register.
  uint32_t base[kLanes];
  std::memcpy(base, addr, sizeof base);
  LdsLanes lds(e, base, off, Bytes, Access::Read);
  if (lds.all_lanes_plain(e, base, off[0], Bytes) && lds.all_lanes_plain(e, base, off[1], Bytes)) {
    for (uint32_t k = 0; k < 2; ++k)
      for (int l = 0; l < kLanes; ++l) {
        uint32_t v[words];
        std::memcpy(v, lds.plain + static_cast<uint32_t>(base[l] + off[k]), Bytes);
        for (uint32_t d = 0; d < words; ++d) out[k * words + d][l] = v[d];
      }
    return;
  }
  for (uint32_t k = 0; k < 2; ++k)
    for (uint64_t m = e.w.exec(); m; m &= m - 1) {
      const int l = std::countr_zero(m);
      uint32_t v[words];
      std::memcpy(v, lds.read(e, base[l] + off[k], Bytes, l), Bytes);
      for (uint32_t d = 0; d < words; ++d) out[k * words + d][l] = v[d];
    }
}
template <uint32_t Bytes, uint32_t Stride>
void ds_write2(Exec& e, const Inst& in) {
  constexpr uint32_t words = Bytes / 4;
  const uint32_t acc = ds_acc(in) ? 256 : 0;
  const uint32_t off[2] = {ds_offset0(in) * Bytes * Stride, ds_offset1(in) * Bytes * Stride};
  const uint32_t* addr = e.w.vreg(ds_addr(in));
  const uint32_t* data[2 * words];
  for (uint32_t d = 0; d < words; ++d) {
    data[d] = e.w.vreg(ds_data0(in) + acc + d);
    data[words + d] = e.w.vreg(ds_data1(in) + acc + d);
  }
  LdsLanes lds(e, addr, off, Bytes, Access::Write);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    for (uint32_t k = 0; k < 2; ++k) {
      uint8_t* p = lds.write(e, addr[l] + off[k], Bytes, l);
      for (uint32_t d = 0; d < words; ++d) std::memcpy(p + 4 * d, &data[k * words + d][l], 4);
    }
  }
}

// ds_cmpst: data0 is the comparand, data1 the value stored where memory equals it.
template <Atomic Op, bool Return, class T = uint32_t>
void ds_atomic(Exec& e, const Inst& in) {
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const uint32_t address = ds_address(e, in, l);
    T old;
    std::memcpy(&old, e.lds_read(address, sizeof(T), l), sizeof(T));  // an atomic reads, then writes
    uint8_t* p = e.lds_write(address, sizeof(T), l);
    const T v = lane_value<T>(e.w, ds_data0(in), l), second = Op == Atomic::CmpSwap ? lane_value<T>(e.w, ds_data1(in), l) : 0;
    // LDS is private to the workgroup, whose waves run on one host thread: no host atomics needed.
    const T r = Op == Atomic::CmpSwap ? (old == v ? second : old) : atomic_apply<T>(Op, old, v, 0);
    std::memcpy(p, &r, sizeof(T));
    if (Return) set_lane_value<T>(e.w, ds_vdst(in), l, old);
  }
}

// ds_bpermute_b32: lane l reads data0 of the lane its address names (address / 4, mod 64);
// ds_permute_b32: lane l writes its data0 to that lane (the highest writer wins). A lane that
// is inactive, or that nobody writes, reads 0.
template <bool Backward>
void ds_permute(Exec& e, const Inst& in) {
  uint32_t out[kLanes] = {};
  const uint64_t exec = e.w.exec();
  const uint32_t* addr = e.w.vreg(ds_addr(in));
  const uint32_t* data = e.w.vreg(ds_data0(in));
  const uint32_t offset = ds_offset0(in) | (ds_offset1(in) << 8);
  for (uint64_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const int other = static_cast<int>(((addr[l] + offset) >> 2) & (kLanes - 1));
    if (Backward) out[l] = (exec >> other) & 1 ? data[other] : 0;
    else out[other] = data[l];
  }
  uint32_t* dst = e.w.vreg(ds_vdst(in));
  for (uint64_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    dst[l] = out[l];
  }
}

// A load's elements: dwords for loads of 8 bytes and more, else the one sub-dword value.
constexpr uint32_t element_bytes(uint32_t bytes) { return bytes > 4 ? 4 : bytes; }

template <uint32_t Bytes, Ext X>
void buffer_load(Exec& e, const Inst& in) {
  const BufferResource v = resource(e, in);
  const uint32_t dst = mubuf_vdata(in) + (mubuf_acc(in) ? 256 : 0);
  const bool to_lds = mubuf_lds(in);
  constexpr uint32_t elem = element_bytes(Bytes), lds_size = std::max(Bytes, 4u);
  // Per active lane: its source (nullptr when no element is in range), how many elements are in
  // range, and for the LDS form its destination, found in the order the checks ran lane by lane.
  int count = 0;
  uint8_t lane[kLanes], in_range[kLanes];
  const uint8_t* from[kLanes];
  uint8_t* to[kLanes];
  const uint32_t lds_first = (e.w.s[kM0] & 0x3ffff) + mubuf_offset(in);
  uint8_t* const lds = to_lds ? lds_dma_destination(e, lds_first, lds_size) : nullptr;
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const BufferLane a = buffer_lane(e, in, v, l);
    const uint32_t n = elements_in_range(in, v, a, elem, Bytes / elem);
    const uint8_t* p = n ? e.global(v.base + a.offset, n * elem, l) : nullptr;
    if (p) __builtin_prefetch(p, 0);
    lane[count] = static_cast<uint8_t>(l);
    in_range[count] = static_cast<uint8_t>(n);
    from[count] = p;
    if (to_lds) {  // LDS address = M0 + inst_offset + lane * size; an out-of-range lane writes zeros
      const uint32_t at = lds_first + static_cast<uint32_t>(l) * lds_size;
      to[count] = lds ? lds + at : e.lds_write(at, lds_size, l);
    }
    ++count;
  }
  for (int i = 0; i < count; ++i) {
    // The in-range elements from memory (bounds-checked against the allocations above, so an
    // access inside num_records but outside every buffer is still an error), zeros for the rest.
    uint8_t bytes[16] = {};
    if (in_range[i] == Bytes / elem) std::memcpy(bytes, from[i], Bytes);
    else if (from[i]) std::memcpy(bytes, from[i], in_range[i] * elem);
    if (to_lds) {
      uint32_t value[4];
      extend_loaded<Bytes, X>(bytes, value);
      std::memcpy(to[i], value, lds_size);
    } else {
      load_into_registers<Bytes, X>(e.w, dst, lane[i], bytes);
    }
  }
}

// Stores write the in-range elements and drop the rest; `FromByte` 2: the *_d16_hi stores.
template <uint32_t Bytes, uint32_t FromByte = 0>
void buffer_store(Exec& e, const Inst& in) {
  ++e.w.stores;
  const BufferResource v = resource(e, in);
  const uint32_t src = mubuf_vdata(in) + (mubuf_acc(in) ? 256 : 0);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const BufferLane a = buffer_lane(e, in, v, l);
    const uint32_t elem = element_bytes(Bytes), n = elements_in_range(in, v, a, elem, Bytes / elem);
    if (n == 0) continue;  // dropped
    uint8_t* p = e.global(v.base + a.offset, n * elem, l);
    if constexpr (Bytes >= 4) {
      for (uint32_t d = 0; d < n; ++d) std::memcpy(p + 4 * d, &e.w.vreg(src + d)[l], 4);
    } else {
      std::memcpy(p, reinterpret_cast<const uint8_t*>(&e.w.vreg(src)[l]) + FromByte, Bytes);
    }
  }
}

// Buffer atomics: data in vdata (value, then the comparand for cmpswap); with sc0 the old value
// comes back in vdata. Range-checked all or nothing: out of range, memory is untouched and a
// returning atomic returns 0, as an out-of-range load does.
template <Atomic Op, class T = uint32_t>
void buffer_atomic(Exec& e, const Inst& in) {
  ++e.w.stores;
  constexpr uint32_t words = sizeof(T) / 4;
  const BufferResource v = resource(e, in);
  const uint32_t data = mubuf_vdata(in) + (mubuf_acc(in) ? 256 : 0);
  const bool returns = mubuf_sc0(in);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const BufferLane a = buffer_lane(e, in, v, l);
    if (elements_in_range(in, v, a, sizeof(T), 1) == 0) {
      if (returns) set_lane_value<T>(e.w, data, l, 0);
      continue;
    }
    uint8_t* p = e.global(v.base + a.offset, sizeof(T), l);
    if (reinterpret_cast<uintptr_t>(p) % sizeof(T)) e.fail("misaligned buffer atomic at lane " + std::to_string(l));
    std::atomic_ref<T> cell(*reinterpret_cast<T*>(p));
    const T value = lane_value<T>(e.w, data, l);
    const T cmp = Op == Atomic::CmpSwap ? lane_value<T>(e.w, data + words, l) : 0;
    T old = cell.load();
    while (!cell.compare_exchange_weak(old, atomic_apply<T>(Op, old, value, cmp))) {
    }
    if (returns) set_lane_value<T>(e.w, data, l, old);
  }
}

}  // namespace

void register_memory_semantics(SemanticsTable& t) {
  for (const char* seg : {"global_", "flat_", "scratch_"}) {
    const std::string s = seg;
    t[s + "load_ubyte"] = flat_load<1, Ext::Zero>;
    t[s + "load_sbyte"] = flat_load<1, Ext::Sign>;
    t[s + "load_ushort"] = flat_load<2, Ext::Zero>;
    t[s + "load_sshort"] = flat_load<2, Ext::Sign>;
    t[s + "load_dword"] = flat_load<4, Ext::None>;
    t[s + "load_dwordx2"] = flat_load<8, Ext::None>;
    t[s + "load_dwordx3"] = flat_load<12, Ext::None>;
    t[s + "load_dwordx4"] = flat_load<16, Ext::None>;
    t[s + "store_byte"] = flat_store<1>;
    t[s + "store_short"] = flat_store<2>;
    t[s + "store_byte_d16_hi"] = flat_store<1, 2>;
    t[s + "store_short_d16_hi"] = flat_store<2, 2>;
    t[s + "store_dword"] = flat_store<4>;
    t[s + "store_dwordx2"] = flat_store<8>;
    t[s + "store_dwordx3"] = flat_store<12>;
    t[s + "store_dwordx4"] = flat_store<16>;
  }
  t["global_load_lds_ubyte"] = global_load_lds<1, Ext::Zero>;
  t["global_load_lds_sbyte"] = global_load_lds<1, Ext::Sign>;
  t["global_load_lds_ushort"] = global_load_lds<2, Ext::Zero>;
  t["global_load_lds_sshort"] = global_load_lds<2, Ext::Sign>;
  t["global_load_lds_dword"] = global_load_lds<4, Ext::None>;
  t["global_load_lds_dwordx3"] = global_load_lds<12, Ext::None>;
  t["global_load_lds_dwordx4"] = global_load_lds<16, Ext::None>;
  for (const char* seg : {"global_", "flat_"}) {
    const std::string s = seg;
    t[s + "atomic_add"] = flat_atomic<Atomic::Add>;
    t[s + "atomic_sub"] = flat_atomic<Atomic::Sub>;
    t[s + "atomic_smin"] = flat_atomic<Atomic::SMin>;
    t[s + "atomic_umin"] = flat_atomic<Atomic::UMin>;
    t[s + "atomic_smax"] = flat_atomic<Atomic::SMax>;
    t[s + "atomic_umax"] = flat_atomic<Atomic::UMax>;
    t[s + "atomic_and"] = flat_atomic<Atomic::And>;
    t[s + "atomic_or"] = flat_atomic<Atomic::Or>;
    t[s + "atomic_xor"] = flat_atomic<Atomic::Xor>;
    t[s + "atomic_swap"] = flat_atomic<Atomic::Swap>;
    t[s + "atomic_cmpswap"] = flat_atomic<Atomic::CmpSwap>;
    t[s + "atomic_add_f32"] = flat_atomic<Atomic::AddF32>;
    t[s + "atomic_inc"] = flat_atomic<Atomic::Inc>;
    t[s + "atomic_dec"] = flat_atomic<Atomic::Dec>;
    t[s + "atomic_pk_add_f16"] = flat_atomic<Atomic::PkAddF16>;
    t[s + "atomic_pk_add_bf16"] = flat_atomic<Atomic::PkAddBF16>;
    t[s + "atomic_add_x2"] = flat_atomic<Atomic::Add, uint64_t>;
    t[s + "atomic_sub_x2"] = flat_atomic<Atomic::Sub, uint64_t>;
    t[s + "atomic_smin_x2"] = flat_atomic<Atomic::SMin, uint64_t>;
    t[s + "atomic_umin_x2"] = flat_atomic<Atomic::UMin, uint64_t>;
    t[s + "atomic_smax_x2"] = flat_atomic<Atomic::SMax, uint64_t>;
    t[s + "atomic_umax_x2"] = flat_atomic<Atomic::UMax, uint64_t>;
    t[s + "atomic_and_x2"] = flat_atomic<Atomic::And, uint64_t>;
    t[s + "atomic_or_x2"] = flat_atomic<Atomic::Or, uint64_t>;
    t[s + "atomic_xor_x2"] = flat_atomic<Atomic::Xor, uint64_t>;
    t[s + "atomic_swap_x2"] = flat_atomic<Atomic::Swap, uint64_t>;
    t[s + "atomic_cmpswap_x2"] = flat_atomic<Atomic::CmpSwap, uint64_t>;
  }
  t["ds_read_b32"] = ds_read<4, Ext::None>;
  t["ds_read_b64"] = ds_read<8, Ext::None>;
  t["ds_read_b96"] = ds_read<12, Ext::None>;
  t["ds_read_b128"] = ds_read<16, Ext::None>;
  t["ds_read_u8"] = ds_read<1, Ext::Zero>;
  t["ds_read_i8"] = ds_read<1, Ext::Sign>;
  t["ds_read_u16"] = ds_read<2, Ext::Zero>;
  t["ds_read_i16"] = ds_read<2, Ext::Sign>;
  t["ds_write_b32"] = ds_write<4>;
  t["ds_write_b64"] = ds_write<8>;
  t["ds_write_b96"] = ds_write<12>;
  t["ds_write_b128"] = ds_write<16>;
  t["ds_write_b8"] = ds_write<1>;
  t["ds_write_b16"] = ds_write<2>;
  t["ds_write_b8_d16_hi"] = ds_write<1, 2>;
  t["ds_write_b16_d16_hi"] = ds_write<2, 2>;
  t["ds_read2_b32"] = ds_read2<4, 1>;
  t["ds_read2_b64"] = ds_read2<8, 1>;
  t["ds_read2st64_b32"] = ds_read2<4, 64>;
  t["ds_read2st64_b64"] = ds_read2<8, 64>;
  t["ds_write2_b32"] = ds_write2<4, 1>;
  t["ds_write2_b64"] = ds_write2<8, 1>;
  t["ds_write2st64_b32"] = ds_write2<4, 64>;
  t["ds_write2st64_b64"] = ds_write2<8, 64>;
  t["ds_bpermute_b32"] = ds_permute<true>;
  t["ds_permute_b32"] = ds_permute<false>;
  t["ds_add_u32"] = ds_atomic<Atomic::Add, false>;
  t["ds_add_rtn_u32"] = ds_atomic<Atomic::Add, true>;
  t["ds_add_u64"] = ds_atomic<Atomic::Add, false, uint64_t>;
  t["ds_add_rtn_u64"] = ds_atomic<Atomic::Add, true, uint64_t>;
  t["ds_add_f32"] = ds_atomic<Atomic::AddF32, false>;
  t["ds_add_rtn_f32"] = ds_atomic<Atomic::AddF32, true>;
  t["ds_pk_add_f16"] = ds_atomic<Atomic::PkAddF16, false>;
  t["ds_pk_add_rtn_f16"] = ds_atomic<Atomic::PkAddF16, true>;
  t["ds_pk_add_bf16"] = ds_atomic<Atomic::PkAddBF16, false>;
  t["ds_pk_add_rtn_bf16"] = ds_atomic<Atomic::PkAddBF16, true>;
  t["ds_max_u32"] = ds_atomic<Atomic::UMax, false>;
  t["ds_max_rtn_u32"] = ds_atomic<Atomic::UMax, true>;
  t["ds_min_u32"] = ds_atomic<Atomic::UMin, false>;
  t["ds_min_rtn_u32"] = ds_atomic<Atomic::UMin, true>;
  t["ds_max_i32"] = ds_atomic<Atomic::SMax, false>;
  t["ds_max_rtn_i32"] = ds_atomic<Atomic::SMax, true>;
  t["ds_min_i32"] = ds_atomic<Atomic::SMin, false>;
  t["ds_min_rtn_i32"] = ds_atomic<Atomic::SMin, true>;
  t["ds_max_u64"] = ds_atomic<Atomic::UMax, false, uint64_t>;
  t["ds_max_rtn_u64"] = ds_atomic<Atomic::UMax, true, uint64_t>;
  t["ds_min_u64"] = ds_atomic<Atomic::UMin, false, uint64_t>;
  t["ds_min_rtn_u64"] = ds_atomic<Atomic::UMin, true, uint64_t>;
  t["ds_max_i64"] = ds_atomic<Atomic::SMax, false, uint64_t>;
  t["ds_max_rtn_i64"] = ds_atomic<Atomic::SMax, true, uint64_t>;
  t["ds_min_i64"] = ds_atomic<Atomic::SMin, false, uint64_t>;
  t["ds_min_rtn_i64"] = ds_atomic<Atomic::SMin, true, uint64_t>;
  t["ds_sub_u32"] = ds_atomic<Atomic::Sub, false>;
  t["ds_sub_rtn_u32"] = ds_atomic<Atomic::Sub, true>;
  t["ds_sub_u64"] = ds_atomic<Atomic::Sub, false, uint64_t>;
  t["ds_sub_rtn_u64"] = ds_atomic<Atomic::Sub, true, uint64_t>;
  t["ds_and_b32"] = ds_atomic<Atomic::And, false>;
  t["ds_and_rtn_b32"] = ds_atomic<Atomic::And, true>;
  t["ds_and_b64"] = ds_atomic<Atomic::And, false, uint64_t>;
  t["ds_and_rtn_b64"] = ds_atomic<Atomic::And, true, uint64_t>;
  t["ds_or_b32"] = ds_atomic<Atomic::Or, false>;
  t["ds_or_rtn_b32"] = ds_atomic<Atomic::Or, true>;
  t["ds_or_b64"] = ds_atomic<Atomic::Or, false, uint64_t>;
  t["ds_or_rtn_b64"] = ds_atomic<Atomic::Or, true, uint64_t>;
  t["ds_xor_b32"] = ds_atomic<Atomic::Xor, false>;
  t["ds_xor_rtn_b32"] = ds_atomic<Atomic::Xor, true>;
  t["ds_xor_b64"] = ds_atomic<Atomic::Xor, false, uint64_t>;
  t["ds_xor_rtn_b64"] = ds_atomic<Atomic::Xor, true, uint64_t>;
  t["ds_inc_u32"] = ds_atomic<Atomic::Inc, false>;  // old >= data ? 0 : old + 1, as the global ones
  t["ds_inc_rtn_u32"] = ds_atomic<Atomic::Inc, true>;
  t["ds_inc_u64"] = ds_atomic<Atomic::Inc, false, uint64_t>;
  t["ds_inc_rtn_u64"] = ds_atomic<Atomic::Inc, true, uint64_t>;
  t["ds_dec_u32"] = ds_atomic<Atomic::Dec, false>;  // old == 0 || old > data ? data : old - 1
  t["ds_dec_rtn_u32"] = ds_atomic<Atomic::Dec, true>;
  t["ds_dec_u64"] = ds_atomic<Atomic::Dec, false, uint64_t>;
  t["ds_dec_rtn_u64"] = ds_atomic<Atomic::Dec, true, uint64_t>;
  t["ds_wrxchg_rtn_b32"] = ds_atomic<Atomic::Swap, true>;
  t["ds_wrxchg_rtn_b64"] = ds_atomic<Atomic::Swap, true, uint64_t>;
  t["ds_cmpst_b32"] = ds_atomic<Atomic::CmpSwap, false>;
  t["ds_cmpst_rtn_b32"] = ds_atomic<Atomic::CmpSwap, true>;
  t["ds_cmpst_b64"] = ds_atomic<Atomic::CmpSwap, false, uint64_t>;
  t["ds_cmpst_rtn_b64"] = ds_atomic<Atomic::CmpSwap, true, uint64_t>;
  // The caches' write-back and invalidation (what an agent-scope release and acquire emit): the
  // emulator's memory is one coherent copy, so there is nothing to write back or drop.
  for (const char* name : {"buffer_wbl2", "buffer_inv"}) t[name] = [](Exec&, const Inst&) {};
  t["buffer_load_ubyte"] = buffer_load<1, Ext::Zero>;
  t["buffer_load_sbyte"] = buffer_load<1, Ext::Sign>;
  t["buffer_load_ushort"] = buffer_load<2, Ext::Zero>;
  t["buffer_load_sshort"] = buffer_load<2, Ext::Sign>;
  t["buffer_load_dword"] = buffer_load<4, Ext::None>;
  t["buffer_load_dwordx2"] = buffer_load<8, Ext::None>;
  t["buffer_load_dwordx3"] = buffer_load<12, Ext::None>;
  t["buffer_load_dwordx4"] = buffer_load<16, Ext::None>;
  t["buffer_store_byte"] = buffer_store<1>;
  t["buffer_store_short"] = buffer_store<2>;
  t["buffer_store_byte_d16_hi"] = buffer_store<1, 2>;
  t["buffer_store_short_d16_hi"] = buffer_store<2, 2>;
  t["buffer_store_dword"] = buffer_store<4>;
  t["buffer_store_dwordx2"] = buffer_store<8>;
  t["buffer_store_dwordx3"] = buffer_store<12>;
  t["buffer_store_dwordx4"] = buffer_store<16>;
  t["buffer_atomic_add"] = buffer_atomic<Atomic::Add>;
  t["buffer_atomic_sub"] = buffer_atomic<Atomic::Sub>;
  t["buffer_atomic_smin"] = buffer_atomic<Atomic::SMin>;
  t["buffer_atomic_umin"] = buffer_atomic<Atomic::UMin>;
  t["buffer_atomic_smax"] = buffer_atomic<Atomic::SMax>;
  t["buffer_atomic_umax"] = buffer_atomic<Atomic::UMax>;
  t["buffer_atomic_and"] = buffer_atomic<Atomic::And>;
  t["buffer_atomic_or"] = buffer_atomic<Atomic::Or>;
  t["buffer_atomic_xor"] = buffer_atomic<Atomic::Xor>;
  t["buffer_atomic_swap"] = buffer_atomic<Atomic::Swap>;
  t["buffer_atomic_cmpswap"] = buffer_atomic<Atomic::CmpSwap>;
  t["buffer_atomic_inc"] = buffer_atomic<Atomic::Inc>;
  t["buffer_atomic_dec"] = buffer_atomic<Atomic::Dec>;
  t["buffer_atomic_add_f32"] = buffer_atomic<Atomic::AddF32>;
  t["buffer_atomic_pk_add_f16"] = buffer_atomic<Atomic::PkAddF16>;
  t["buffer_atomic_pk_add_bf16"] = buffer_atomic<Atomic::PkAddBF16>;
  t["buffer_atomic_add_x2"] = buffer_atomic<Atomic::Add, uint64_t>;
  t["buffer_atomic_sub_x2"] = buffer_atomic<Atomic::Sub, uint64_t>;
  t["buffer_atomic_smin_x2"] = buffer_atomic<Atomic::SMin, uint64_t>;
  t["buffer_atomic_umin_x2"] = buffer_atomic<Atomic::UMin, uint64_t>;
  t["buffer_atomic_smax_x2"] = buffer_atomic<Atomic::SMax, uint64_t>;
  t["buffer_atomic_umax_x2"] = buffer_atomic<Atomic::UMax, uint64_t>;
  t["buffer_atomic_and_x2"] = buffer_atomic<Atomic::And, uint64_t>;
  t["buffer_atomic_or_x2"] = buffer_atomic<Atomic::Or, uint64_t>;
  t["buffer_atomic_xor_x2"] = buffer_atomic<Atomic::Xor, uint64_t>;
  t["buffer_atomic_swap_x2"] = buffer_atomic<Atomic::Swap, uint64_t>;
  t["buffer_atomic_cmpswap_x2"] = buffer_atomic<Atomic::CmpSwap, uint64_t>;
  t["buffer_atomic_inc_x2"] = buffer_atomic<Atomic::Inc, uint64_t>;
  t["buffer_atomic_dec_x2"] = buffer_atomic<Atomic::Dec, uint64_t>;
}

}  // namespace weft::emu
