// Packing kernel arguments into a kernarg segment as the code object's metadata lays it out,
// checking each value against the argument it is for.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "weft/emulator/code_object.h"

namespace weft::emu {

struct ArgValue {
  enum class Kind { Pointer, I32, U32, I64, U64, F32 };
  Kind kind = Kind::U32;
  uint64_t bits = 0;  // the value's bit pattern, zero-extended
  static ArgValue pointer(uint64_t address) { return {Kind::Pointer, address}; }
  static ArgValue i32(int32_t v) { return {Kind::I32, static_cast<uint32_t>(v)}; }
  static ArgValue u32(uint32_t v) { return {Kind::U32, v}; }
  static ArgValue i64(int64_t v) { return {Kind::I64, static_cast<uint64_t>(v)}; }
  static ArgValue u64(uint64_t v) { return {Kind::U64, v}; }
  static ArgValue f32(float v);
  uint32_t size() const { return kind == Kind::I32 || kind == Kind::U32 || kind == Kind::F32 ? 4 : 8; }
};
const char* arg_kind_name(ArgValue::Kind k);  // "pointer", "i32", ...

// The explicit (non-hidden) arguments of `k`, in order.
std::vector<const KernelArg*> explicit_args(const Kernel& k);

// Throws weft::Error naming the argument (position, name, kind, size) that a value does not fit,
// or saying how many arguments the kernel takes.
std::vector<uint8_t> pack_kernel_args(const Kernel& k, std::span<const ArgValue> values);

}  // namespace weft::emu
