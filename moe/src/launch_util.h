// What the MoE launches share: buffer checks that name the buffer, and one compile + launch
// with the kernel's variables (T, R) taken from the shape.
#pragma once

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "weft/moe/plan.h"
#include "weft/runtime/kernel.h"

namespace weft::moe::detail {

// weft::Error "moe OP: NAME must hold N DTYPE values, got M DTYPE'" unless `a` matches.
void expect_array(const char* op, const rt::DeviceArray& a, const char* name, DType dtype, int64_t elements);

// Launches a compiled kernel on `buffers` in slot order, binding the variables it has of "T"
// (shape.tokens) and "R" (shape.max_rows()).
void launch(rt::Device& device, const rt::CompiledKernel& kernel, std::initializer_list<rt::DeviceArray> buffers, const MoeShape& shape);

// Compiles `kernel` (through `cache`) and launches it as above.
void launch(rt::Device& device, const UOp& kernel, std::initializer_list<rt::DeviceArray> buffers, const MoeShape& shape,
            rt::CompileCache* cache);

// An array of `elements` values of `dtype` on the device, every byte 0xCD (poison), so that a
// value no kernel wrote shows.
rt::OwnedArray poisoned(rt::Device& device, DType dtype, int64_t elements, const std::string& label);

// The array's bytes read back as values of T.
template <class T>
std::vector<T> fetch(rt::Device& device, const rt::DeviceArray& a) {
  const std::vector<uint8_t> bytes = rt::download(device, a);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace weft::moe::detail
