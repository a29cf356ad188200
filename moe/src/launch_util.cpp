#include "launch_util.h"

#include <span>
#include <vector>

namespace weft::moe::detail {

void expect_array(const char* op, const rt::DeviceArray& a, const char* name, DType dtype, int64_t elements) {
  if (a.dtype != dtype || a.elements != static_cast<size_t>(elements))
    throw Error(std::string("moe ") + op + ": " + name + " must hold " + std::to_string(elements) + " " + dtype.name() + " values, got " +
                std::to_string(a.elements) + " " + a.dtype.name());
}

rt::OwnedArray poisoned(rt::Device& device, DType dtype, int64_t elements, const std::string& label) {
  return rt::OwnedArray(device, rt::upload(device, dtype, std::vector<uint8_t>(static_cast<size_t>(elements * dtype.itemsize()), 0xCD), label));
}

void launch(rt::Device& device, const UOp& kernel, std::initializer_list<rt::DeviceArray> buffers, const MoeShape& shape,
            rt::CompileCache* cache) {
  launch(device, rt::CompiledKernel::compile(device, kernel, cache), buffers, shape);
}

void launch(rt::Device& device, const rt::CompiledKernel& compiled, std::initializer_list<rt::DeviceArray> buffers, const MoeShape& shape) {
  std::map<std::string, rt::ScalarValue> scalars;
  for (const lower::KernelParam& p : compiled.lowered().params) {
    if (p.kind != lower::KernelParam::Kind::Scalar) continue;
    if (p.name == "T") scalars[p.name] = shape.tokens;
    else if (p.name == "R") scalars[p.name] = shape.max_rows();
    else throw Error("moe: internal: kernel " + compiled.lowered().name + " has a variable " + p.name + " no launch binds");
  }
  compiled.launch(device, std::span<const rt::DeviceArray>(buffers.begin(), buffers.size()), scalars);
}

}  // namespace weft::moe::detail
