// The lowering pipeline: a kernel graph (a SINK) through the named passes of DESIGN.md, in
// order, to a linear program a renderer turns into target code.
//
//   auto lowered = weft::lower::lower(kernel);            // all passes
//   weft::lower::lower(kernel, {.after_pass = print});     // watch the IR after each one
//
// Every pass is a function from graph to graph; `passes()` lists them with their names, which
// `weft dump --after=NAME` and WEFT_DUMP=NAME accept.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::lower {

// A kernel parameter, in the order the compiled kernel takes them: GLOBAL buffers by slot,
// then scalar variables by name, then the tensor maps of the buffers TMA loads read, by slot.
struct KernelParam {
  // TensorMap: a CUtensorMap (128 bytes, by value) that the runtime encodes at launch from the
  // buffer argument of the same slot, its shape, the box and the swizzle (TMA_LOAD, TMA_STORE).
  enum class Kind { Buffer, Scalar, TensorMap };
  Kind kind = Kind::Buffer;
  std::string name;          // "buf0" for the buffer in slot 0; a variable's name; "tmap0"
  DType dtype;               // a buffer's element dtype; a scalar's dtype (int32, int64, float32)
  int64_t slot = -1;         // buffers and tensor maps
  std::vector<UOp> shape;    // buffers and tensor maps: dimensions (constants or index expressions of variables)
  UOp variable;              // scalars only: the DEFINE_VAR
  TmaArg box{};              // tensor maps only: the box and swizzle (the site is unused: 0)
};

// Grid (workgroups) and block (work-items) of a launch, as index expressions of the kernel's
// variables; GLOBAL ranges give the grid, LOCAL ranges the block, in range-id order (x, y, z).
struct LaunchDims {
  std::array<UOp, 3> grid, block;
};

// One step of the linear program. Values and effects appear after everything they use;
// LoopBegin/LoopEnd bracket the body of a RANGE; BranchBegin/BranchEnd (op: the WHEN, its
// condition src(0), wave-uniform) the effects of a region that runs only where it holds.
struct LinearOp {
  enum class Kind { Value, Effect, LoopBegin, LoopEnd, BranchBegin, BranchEnd };
  Kind kind;
  UOp op;
  // The statement an Effect step runs: `op` itself, or, for a when() around one statement (a
  // barrier or a Hopper statement under a warp-uniform condition, linearize), that statement.
  UOp statement() const { return kind == Kind::Effect && op.op() == Op::WHEN && op.src().size() == 2 ? op.src(1) : op; }
};

// One axis of the device mesh a kernel runs over: a DEVICE range. The launch runs one shard per
// device and sets `variable` (an int32 scalar parameter, 0..size-1) to the device's coordinate
// on this axis.
struct MeshAxis {
  int64_t range_id = 0;
  int64_t size = 1;
  std::string variable;  // "device<range id>", an int32 scalar parameter
};

struct LoweredKernel {
  std::string name;
  int64_t cluster = 1;              // CTAs per thread-block cluster along grid dimension 0 (KernelInfo)
  bool dependent_launch = false;    // programmatic dependent launch (KernelInfo)
  int64_t min_workgroups_per_processor = 0;  // occupancy the compiler keeps registers for (KernelInfo); 0: its choice
  bool cooperative = false;         // has a grid barrier: every workgroup must be resident at once (grid_barrier)
  std::vector<MeshAxis> mesh;       // DEVICE ranges by id (mesh axis 0, 1, ...); empty: one device
  // The GLOBAL buffers the kernel unshards over DEVICE ranges, by slot: per mesh axis, the tensor
  // axis split over it, or kReplicated (device_splits).
  std::map<int64_t, std::vector<int64_t>> device_splits;
  UOp graph;                        // after the last graph pass
  std::vector<LinearOp> program;    // from `linearize`
  std::vector<KernelParam> params;
  LaunchDims launch;
};

// What passes share: launch dimensions found by one and used by the renderer.
struct PassContext {
  LaunchDims launch;
  int64_t wave_size = 64;  // lanes of a wave (warp) on the target
};

struct Pass {
  std::string name;
  std::string summary;
  std::function<UOp(const UOp&, PassContext&)> run;
};

// The graph passes in pipeline order (linearization follows them).
const std::vector<Pass>& passes();
// Throws weft::Error listing the pass names if `name` is none of them (nor "all").
void check_pass_name(std::string_view name);

struct LowerOptions {
  // Lanes of a wave on the target: 64 on CDNA, 32 on NVIDIA (cross-thread reductions and WARP
  // ranges depend on it).
  int64_t wave_size = 64;
  // Called with each pass's name and the graph it produced.
  std::function<void(std::string_view pass, const UOp& graph)> after_pass;
};

// Runs every pass, then linearizes. Throws weft::Error naming the pass and the problem.
LoweredKernel lower(const UOp& kernel, const LowerOptions& options = {});

// The kernel with its LOCAL and REG buffers renumbered 0, 1, ... in the order a walk of the
// graph meets them: the same kernel built in any order (alloc_shared without an id takes ids
// from a per-thread counter) gets the same graph, and so the same hash and compile-cache key.
UOp canonical_allocations(const UOp& kernel);

// A DEVICE range's index on each device: the scalar variable "device<id>" (int32, bounds
// 0..size-1), which resolve_devices puts in the range's place (cast to index) and a mesh launch
// sets per shard.
UOp device_variable(const UOp& device_range);
// The kernel's DEVICE ranges, sorted by id: the axes of the mesh it runs over.
std::vector<MeshAxis> mesh_axes(const UOp& kernel);
// Per GLOBAL buffer the kernel unshards over DEVICE ranges (UNSHARD of the placeholder), the
// tensor axis each mesh axis splits, kReplicated where the buffer is whole along a mesh axis.
inline constexpr int64_t kReplicated = -1;
std::map<int64_t, std::vector<int64_t>> device_splits(const UOp& kernel, const std::vector<MeshAxis>& mesh);

// The kernel's parameters (see KernelParam), checked: buffer slots 0..n-1 without gaps; a DEVICE
// range's variable counts as a variable.
std::vector<KernelParam> kernel_params(const UOp& kernel);

// The buffer slots the AMD code addresses through buffer resources: the sources of direct-to-LDS
// copies (ASYNC_COPY, `buffer_load ... lds`). Their byte offsets are 32-bit and a range check
// against num_records makes lanes past the end read zeros, so such a buffer may hold at most
// kMaxBufferResourceBytes bytes: a larger one would wrap silently. The renderer rejects a larger
// constant-sized buffer; the runtime checks run-time sizes at each launch on an AMD device.
std::vector<int64_t> buffer_resource_slots(const LoweredKernel& kernel);
inline constexpr uint64_t kMaxBufferResourceBytes = 0xFFFFFFFFu;

// The linear program, one step per line, loop bodies indented.
std::string program_string(const LoweredKernel& kernel);

// Evaluates an index expression of variables (a launch dimension, a buffer size) with their
// bound values, once (IndexProgram prepares one for many launches). Throws naming a variable
// that is not bound.
int64_t evaluate_index(const UOp& expr, const std::map<std::string, int64_t>& variables);

}  // namespace weft::lower
