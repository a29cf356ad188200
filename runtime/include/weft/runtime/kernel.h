// A DSL kernel compiled for a device and launched on it: the graph is lowered (lowering/),
// rendered and compiled for the device's target, loaded, and launched with buffers checked
// against the kernel's parameters and the grid and block taken from its GLOBAL/LOCAL ranges.
//
//   auto dev = weft::rt::open_device("emu:gfx950");
//   auto k = weft::rt::CompiledKernel::compile(*dev, graph, &cache);
//   k.launch(*dev, {a, b, c}, {{"n", int64_t{1000}}});
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "weft/dsl/uop.h"
#include "weft/lowering/index_program.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/compile_cache.h"
#include "weft/runtime/device.h"

namespace weft::rt {

// A device buffer holding `elements` values of `dtype`.
struct DeviceArray {
  Buffer buffer;
  DType dtype;
  size_t elements = 0;
};

// Allocates an array on the device and copies `values` into it (their bytes as the dtype lays
// them out). The array lives until Device::free(array.buffer) or the device's end; OwnedArray
// frees it at the end of a scope.
DeviceArray upload(Device& device, DType dtype, std::span<const uint8_t> bytes, std::string label);
std::vector<uint8_t> download(Device& device, const DeviceArray& array);

// A DeviceArray freed when it goes out of scope (move-only); it converts to the DeviceArray that
// launch() and download() take. The device must outlive it.
//
//   rt::OwnedArray a(*dev, rt::upload(*dev, dtypes::float32, bytes, "A"));
//   const rt::DeviceArray args[] = {a};
class OwnedArray {
 public:
  OwnedArray() = default;
  OwnedArray(Device& device, DeviceArray array) : device_(&device), array_(std::move(array)) {}
  ~OwnedArray();
  OwnedArray(OwnedArray&& other) noexcept;
  OwnedArray& operator=(OwnedArray&& other) noexcept;
  OwnedArray(const OwnedArray&) = delete;
  OwnedArray& operator=(const OwnedArray&) = delete;

  const DeviceArray& get() const { return array_; }
  operator const DeviceArray&() const { return array_; }
  // Frees the array now; throws weft::Error as Device::free does.
  void reset();

 private:
  Device* device_ = nullptr;
  DeviceArray array_;
};

using ScalarValue = std::variant<int64_t, float>;

// Seconds each stage of compile() took.
struct CompileTimes {
  double lower = 0;     // weft's passes and linearization
  double render = 0;    // the program to an LLVM module (AMD) or CUDA C++ (NVIDIA)
  double optimize = 0;  // LLVM's O3 pipeline (AMD)
  double codegen = 0;   // LLVM's code generator, module to object (AMD); NVRTC, source to cubin (NVIDIA)
  double link = 0;      // lld (AMD)
  double load = 0;      // loading the code object on the device
  bool cached = false;  // the code object came from the compile cache (no render/LLVM/link)
};

// How a kernel lowered as `kernel` is launched on a device of `arch`: programmatic where its CUDA
// code waits for its predecessor (cuda::waits_for_predecessor: KernelInfo::dependent_launch on
// sm_90 and newer), serialized otherwise.
LaunchOrder launch_order(const lower::LoweredKernel& kernel, std::string_view arch);

class CompiledKernel {
 public:
  // Throws weft::Error naming the pass, node or target that fails; a device this build cannot
  // compile for (no LLVM) is an error too.
  static CompiledKernel compile(Device& device, const UOp& kernel, CompileCache* cache = nullptr);

  // Buffers in slot order, scalars by variable name. Throws weft::Error for a missing or extra
  // argument, a buffer of another dtype or size than the kernel's parameter, a buffer an AMD
  // kernel reads through a buffer resource (direct-to-LDS copies) that is larger than their
  // 32-bit offsets reach (lower::kMaxBufferResourceBytes), a scalar outside its variable's
  // bounds, or an error the device reports while running.
  // A kernel over a device mesh (DEVICE ranges) launches through MeshKernel (mesh.h) instead.
  void launch(Device& device, std::span<const DeviceArray> buffers, const std::map<std::string, ScalarValue>& scalars = {}) const;

  const lower::LoweredKernel& lowered() const { return lowered_; }
  const std::vector<uint8_t>& code_object() const { return code_object_; }  // or the cubin
  const std::shared_ptr<Module>& module() const { return module_; }            // loaded on the device compile() was given
  // The CUDA C++ NVRTC compiled (NVIDIA devices; empty for AMD ones and cache hits).
  const std::string& cuda_source() const { return cuda_source_; }
  const CompileTimes& times() const { return times_; }
  // Grid and block of a launch with these variable values.
  std::pair<Dim3, Dim3> launch_dims(const std::map<std::string, int64_t>& variables) const;

 private:
  friend class MeshKernel;  // launches one shard per device, each on its own loaded module
  // launch() on `module`, loaded on `device`, with the device variables of a mesh launch among the scalars.
  void launch_on(Device& device, Module& module, std::span<const DeviceArray> buffers, const std::map<std::string, ScalarValue>& scalars) const;
  void check_buffer_resource(const Device& device, const lower::KernelParam& p, const DeviceArray& a) const;
  void prepare_launch_sizes();
  // launch_dims with the integer scalars' values in integer_names_ order (a launch's own form).
  std::pair<Dim3, Dim3> launch_dims_in_order(std::span<const int64_t> values) const;
  template <class Evaluate>  // int64_t(const lower::IndexProgram&)
  std::pair<Dim3, Dim3> launch_dims_with(const Evaluate& evaluate) const;

  lower::LoweredKernel lowered_;
  // The launch's index expressions, prepared once so that a launch walks no graph: grid and
  // block, and each parameter's dimensions (lowered_.params order; none for a scalar).
  // Their variables are the integer scalar parameters, bound by position (integer_names_).
  std::vector<std::string> integer_names_;
  std::array<lower::IndexProgram, 3> grid_, block_;
  std::vector<std::vector<lower::IndexProgram>> param_dims_;
  std::vector<int64_t> resource_slots_;  // lower::buffer_resource_slots
  LaunchOrder order_ = LaunchOrder::serialized;  // launch_order for the device it was compiled for
  std::vector<uint8_t> code_object_;
  std::string cuda_source_;
  std::shared_ptr<Module> module_;
  CompileTimes times_;
};

}  // namespace weft::rt
