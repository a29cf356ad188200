#include "weft/emulator/kernel_args.h"

#include <bit>
#include <cstring>

#include "weft/dsl/error.h"

namespace weft::emu {

ArgValue ArgValue::f32(float v) { return {Kind::F32, std::bit_cast<uint32_t>(v)}; }

const char* arg_kind_name(ArgValue::Kind k) {
  switch (k) {
    case ArgValue::Kind::Pointer: return "pointer";
    case ArgValue::Kind::I32: return "i32";
    case ArgValue::Kind::U32: return "u32";
    case ArgValue::Kind::I64: return "i64";
    case ArgValue::Kind::U64: return "u64";
    case ArgValue::Kind::F32: return "f32";
  }
  return "?";
}

std::vector<const KernelArg*> explicit_args(const Kernel& k) {
  std::vector<const KernelArg*> out;
  for (const KernelArg& a : k.args)
    if (!a.is_hidden()) out.push_back(&a);
  return out;
}

namespace {

std::string describe(const KernelArg& a, size_t index) {
  return "argument " + std::to_string(index + 1) + (a.name.empty() ? "" : " ('" + a.name + "')") + " (" + a.value_kind + ", " +
         std::to_string(a.size) + " bytes)";
}

bool is_pointer_kind(const std::string& kind) { return kind == "global_buffer" || kind == "dynamic_shared_pointer"; }

}  // namespace

std::vector<uint8_t> pack_kernel_args(const Kernel& k, std::span<const ArgValue> values) {
  const std::vector<const KernelArg*> args = explicit_args(k);
  if (args.size() != values.size())
    throw Error("kernel " + k.name + " takes " + std::to_string(args.size()) + " argument" + (args.size() == 1 ? "" : "s") + ", " +
                std::to_string(values.size()) + " given");
  std::vector<uint8_t> out(std::max<size_t>(k.kernarg_segment_size, 1), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = *args[i];
    const ArgValue& v = values[i];
    const bool pointer = is_pointer_kind(a.value_kind);
    if (pointer != (v.kind == ArgValue::Kind::Pointer))
      throw Error("kernel " + k.name + ", " + describe(a, i) + ": given " + arg_kind_name(v.kind) +
                  (pointer ? ", expected a buffer" : ", expected a scalar"));
    if (v.size() != a.size)
      throw Error("kernel " + k.name + ", " + describe(a, i) + ": given " + arg_kind_name(v.kind) + " (" + std::to_string(v.size()) +
                  " bytes)");
    if (a.offset + a.size > out.size()) throw Error("kernel " + k.name + ", " + describe(a, i) + ": lies outside the kernarg segment");
    std::memcpy(out.data() + a.offset, &v.bits, a.size);
  }
  return out;
}

}  // namespace weft::emu
