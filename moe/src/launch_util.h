// What the MoE launches share: buffer checks that name the buffer, and one compile + launch
// with the kernel's variables (T, R) taken from the shape.
#pragma once

#include <initializer_list>

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

}  // namespace weft::moe::detail
