// The s_waitcnt immediate of gfx9 targets (gfx942, gfx950), from LLVM's AMDGPU operand docs
// (gfx940_waitcnt): vmcnt in bits [3:0] (low) and [15:14] (high), 0..63; expcnt in [6:4], 0..7;
// lgkmcnt in [11:8], 0..15. A counter at its maximum is not waited on (s_waitcnt vmcnt(0) is
// 0x0F70; waiting on nothing is 0xCF7F).
#pragma once

#include <cstdint>

namespace weft::amdgpu {

inline constexpr int64_t kMaxVmcnt = 63;
inline constexpr int64_t kMaxExpcnt = 7;
inline constexpr int64_t kMaxLgkmcnt = 15;

// vm and lgkm in range (the caller checks); -1 means "do not wait": the counter's maximum.
constexpr uint32_t waitcnt_immediate(int64_t vm, int64_t lgkm) {
  const auto v = static_cast<uint32_t>(vm < 0 ? kMaxVmcnt : vm);
  const auto l = static_cast<uint32_t>(lgkm < 0 ? kMaxLgkmcnt : lgkm);
  return (v & 0xF) | ((v >> 4) << 14) | (static_cast<uint32_t>(kMaxExpcnt) << 4) | (l << 8);
}
static_assert(waitcnt_immediate(0, -1) == 0x0F70, "vmcnt(0)");
static_assert(waitcnt_immediate(-1, -1) == 0xCF7F, "no wait");
static_assert(waitcnt_immediate(-1, 0) == 0xC07F, "lgkmcnt(0)");  // 49279 in MLIR's amdgpu.waitcnt lgkmcnt(0) test

}  // namespace weft::amdgpu
