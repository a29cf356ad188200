// Buffer addressing shared by MUBUF and MTBUF (whose offset, offen, idxen, vaddr, vdata, srsrc
// and soffset fields sit where MUBUF's do): the V#, each lane's offset, and the range check.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "isa_fields.h"
#include "wave.h"

namespace weft::emu {

using namespace fields;

// MUBUF through a buffer resource: V# = {base[47:0], stride[61:48], num_records, flags}.
struct BufferResource {
  uint64_t base;
  uint32_t stride, num_records;
};
inline BufferResource resource(const Exec& e, const Inst& in) {
  const uint32_t r = mubuf_srsrc(in);
  const uint32_t w0 = e.w.s[r], w1 = e.w.s[r + 1], w2 = e.w.s[r + 2], w3 = e.w.s[r + 3];
  // ADD_TID_ENABLE (word 3, bit 23) adds the lane id to the index and changes the range check;
  // compilers use it only for scratch through buffers, which these targets do not need.
  if ((w3 >> 23) & 1) e.fail("buffer resource with ADD_TID_ENABLE set (word 3 = " + std::to_string(w3) + "): not emulated");
  return {w0 | (uint64_t{w1 & 0xffff} << 32), (w1 >> 16) & 0x3fff, w2};
}

// Where lane l of a MUBUF instruction points, and what its range check compares.
struct BufferLane {
  uint64_t offset;  // from the base: index * stride + (voffset + inst_offset) mod 2^32 + soffset
  uint32_t index;   // the VGPR index (IDXEN), else 0
};
inline BufferLane buffer_lane(const Exec& e, const Inst& in, const BufferResource& v, int l) {
  const uint32_t vaddr = mubuf_vaddr(in);
  const uint32_t index = mubuf_idxen(in) ? e.w.vreg(vaddr)[l] : 0;
  const uint32_t voffset = mubuf_offen(in) ? e.w.vreg(vaddr + (mubuf_idxen(in) ? 1 : 0))[l] : 0;
  const uint32_t offset = voffset + mubuf_offset(in);  // a 32-bit sum in hardware: it wraps
  return {uint64_t{index} * v.stride + offset + e.scalar(mubuf_soffset(in)), index};
}

// How many leading `elem`-byte elements of a lane's `count` pass the range check of CDNA3/CDNA4
// (the ISA guides' "Buffer Addressing", range checking; the same rule as LLVM's AMDGPUUsage
// "buffer OOB" notes and AMD's rocjitsu model of gfx950): with IDXEN and a nonzero stride the
// record index must be below num_records, all or nothing; otherwise element i is in range when
// its last byte is, offset + (i + 1) * elem <= num_records, with soffset counted in the offset.
// dwordx2/x3/x4 loads and stores are checked per dword (elem 4); atomics and sub-dword accesses
// as one element.
inline uint32_t elements_in_range(const Inst& in, const BufferResource& v, const BufferLane& a, uint32_t elem, uint32_t count) {
  if (mubuf_idxen(in) && v.stride != 0) return a.index < v.num_records ? count : 0;
  if (a.offset >= v.num_records) return 0;
  return static_cast<uint32_t>(std::min<uint64_t>(count, (v.num_records - a.offset) / elem));
}

}  // namespace weft::emu
