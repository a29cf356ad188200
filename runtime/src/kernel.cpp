#include "weft/runtime/kernel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <utility>

#include "weft/dsl/error.h"
#include "weft/dsl/print.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/compiler_identity.h"
#include "weft/runtime/inspect.h"
#include "weft/runtime/nvrtc.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/lowering/amdgpu_codegen.h"
#endif

namespace weft::rt {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string param_text(const lower::KernelParam& p) {
  std::string dims;
  for (const UOp& d : p.shape) dims += (dims.empty() ? "" : ", ") + expr_string(d);
  return p.name + " " + p.dtype.name() + (p.kind == lower::KernelParam::Kind::Buffer ? "[" + dims + "]" : "");
}

// A scalar parameter that sizes things (a launch dimension, a buffer's extent): the one filter
// both integer_names_ (at compile time) and integer_values (at each launch) use, so that their
// orders agree.
bool is_integer_scalar(const lower::KernelParam& p) { return p.kind == lower::KernelParam::Kind::Scalar && !p.dtype.is_float(); }

// The integer scalars' values in `names` order (the kernel's integer scalar parameters, in
// parameter order), each checked against its parameter: given, an integer, within its bounds;
// and no scalar given that the kernel does not take.
std::vector<int64_t> integer_values(const lower::LoweredKernel& k, std::span<const std::string> names,
                                    const std::map<std::string, ScalarValue>& scalars) {
  std::vector<int64_t> out;
  out.reserve(names.size());
  size_t scalar_params = 0;
  for (const auto& p : k.params) {
    if (p.kind != lower::KernelParam::Kind::Scalar) continue;
    ++scalar_params;
    auto it = scalars.find(p.name);
    if (it == scalars.end()) throw Error("kernel " + k.name + ": scalar argument " + param_text(p) + " is not given");
    if (!is_integer_scalar(p)) {
      if (!std::holds_alternative<float>(it->second)) throw Error("kernel " + k.name + ": scalar " + p.name + " is float32, given an integer");
      continue;
    }
    if (!std::holds_alternative<int64_t>(it->second)) throw Error("kernel " + k.name + ": scalar " + p.name + " is an integer, given a float");
    const int64_t v = std::get<int64_t>(it->second);
    const auto& bounds = p.variable.arg_as<VarArg>();
    if (v < bounds.min || v > bounds.max)
      throw Error("kernel " + k.name + ": scalar " + p.name + " = " + std::to_string(v) + " is outside its bounds [" +
                  wide_to_string(bounds.min) + ", " + wide_to_string(bounds.max) + "]");
    out.push_back(v);
  }
  if (out.size() != names.size()) throw Error("kernel " + k.name + ": internal: " + std::to_string(names.size()) + " integer scalars prepared, " +
                                              std::to_string(out.size()) + " found");
  if (scalars.size() != scalar_params)  // every parameter was found, so some name is not one
    for (const auto& [name, v] : scalars) {
      (void)v;
      bool known = false;
      for (const auto& p : k.params) known |= p.kind == lower::KernelParam::Kind::Scalar && p.name == name;
      if (!known) throw Error("kernel " + k.name + " has no scalar parameter named " + name);
    }
  return out;
}

}  // namespace

DeviceArray upload(Device& device, DType dtype, std::span<const uint8_t> bytes, std::string label) {
  if (bytes.size() % static_cast<size_t>(dtype.itemsize()) != 0)
    throw Error("upload: " + std::to_string(bytes.size()) + " bytes are not a whole number of " + dtype.name() + " values");
  DeviceArray a{device.allocate(bytes.size(), std::move(label)), dtype, bytes.size() / static_cast<size_t>(dtype.itemsize())};
  device.copy_to_device(a.buffer, bytes);
  return a;
}

std::vector<uint8_t> download(Device& device, const DeviceArray& array) {
  std::vector<uint8_t> out(array.buffer.bytes);
  device.copy_from_device(out, array.buffer);
  return out;
}

OwnedArray::~OwnedArray() {
  try {
    reset();
  } catch (const Error&) {  // freed by hand already: nothing is left to free
  }
}

OwnedArray::OwnedArray(OwnedArray&& other) noexcept : device_(std::exchange(other.device_, nullptr)), array_(other.array_) {}

OwnedArray& OwnedArray::operator=(OwnedArray&& other) noexcept {
  if (this != &other) {
    try {
      reset();
    } catch (const Error&) {
    }
    device_ = std::exchange(other.device_, nullptr);
    array_ = other.array_;
  }
  return *this;
}

void OwnedArray::reset() {
  if (Device* d = std::exchange(device_, nullptr)) d->free(array_.buffer);
}

namespace {

// WEFT_DUMP=llvm|asm|cuda|all: which of the back end's stages to print to stderr (lower() prints
// the passes' IR and the linear program for a pass name and for all).
struct BackendDump {
  bool llvm_ir = false, assembly = false, cuda_source = false;
  static BackendDump from_environment() {
    BackendDump d;
    const char* v = std::getenv("WEFT_DUMP");
    const std::string_view w = v ? v : "";
    d.llvm_ir = w == "llvm" || w == "all";
    d.assembly = w == "asm" || w == "all";
    d.cuda_source = w == "cuda" || w == "all";
    return d;
  }

  // The stages asked for, after a compile (`compiled`, the LLVM IR given) or a cache hit (the
  // text is rendered again, for reading). The CUDA C++ of a compile was printed before NVRTC ran.
  void print(const lower::LoweredKernel& k, const std::string& target, const std::vector<uint8_t>& code_object, bool compiled,
             std::string& ir_before, std::string& ir_after) const;
};

void print_stage(const std::string& kernel, const std::string& what, const std::string& text) {
  std::cerr << "# " << kernel << ": " << what << "\n" << text << (text.ends_with('\n') ? "" : "\n");
}

void BackendDump::print(const lower::LoweredKernel& k, const std::string& target, const std::vector<uint8_t>& code_object,
                        bool compiled, std::string& ir_before, std::string& ir_after) const {
  if (target.starts_with("sm_")) {
    if (cuda_source && !compiled) print_stage(k.name, "CUDA C++ for " + target, cuda::render_cuda(k, cuda::sm_number(target)));
    return;
  }
#ifdef WEFT_HAVE_LLVM
  if (llvm_ir && !compiled) amdgpu::compile_kernel(k, target, &ir_before, &ir_after);
#endif
  if (llvm_ir) {
    print_stage(k.name, "LLVM IR as rendered", ir_before);
    print_stage(k.name, "LLVM IR after O3", ir_after);
  }
  if (assembly) print_stage(k.name, target + " code object", disassemble(code_object));
}

}  // namespace

CompiledKernel CompiledKernel::compile(Device& device, const UOp& authored, CompileCache* cache) {
  const BackendDump dump = BackendDump::from_environment();
  std::string ir_before, ir_after;
  CompiledKernel k;
  auto t = std::chrono::steady_clock::now();
  const UOp kernel = lower::canonical_allocations(authored);
  const std::string target = device.arch();
  lower::LowerOptions options;
  options.wave_size = target.starts_with("sm_") ? 32 : 64;
  k.lowered_ = lower::lower(kernel, options);
  k.resource_slots_ = lower::buffer_resource_slots(k.lowered_);
  k.prepare_launch_sizes();
  k.order_ = launch_order(k.lowered_, target);
  k.times_.lower = seconds_since(t);
  bool compiled = false;
  std::function<std::vector<uint8_t>()> build;
  if (target.starts_with("sm_")) {
    build = [&] {
      auto t0 = std::chrono::steady_clock::now();
      const int sm = cuda::sm_number(target);
      k.cuda_source_ = cuda::render_cuda(k.lowered_, sm);
      k.times_.render = seconds_since(t0);
      if (dump.cuda_source) print_stage(k.lowered_.name, "CUDA C++ for " + target, k.cuda_source_);  // before NVRTC can fail
      t0 = std::chrono::steady_clock::now();
      // sm_90a where the kernel uses Hopper's arch-specific instructions (cuda_codegen.h).
      std::vector<uint8_t> cubin = nvrtc_compile(k.cuda_source_, k.lowered_.name, cuda::nvrtc_arch(k.lowered_, sm));
      k.times_.codegen = seconds_since(t0);
      compiled = true;
      return cubin;
    };
  } else {
#ifdef WEFT_HAVE_LLVM
    build = [&] {
      auto code = amdgpu::compile_kernel(k.lowered_, target, dump.llvm_ir ? &ir_before : nullptr, dump.llvm_ir ? &ir_after : nullptr);
      k.times_.render = code.times.parse_seconds;
      k.times_.optimize = code.times.optimize_seconds;
      k.times_.codegen = code.times.llvm_seconds;
      k.times_.link = code.times.link_seconds;
      compiled = true;
      return code.code_object;
    };
#else
    throw Error("device " + device.name() + ": this build of weft has no AMDGPU code generator (configure with WEFT_LLVM=ON and LLVM 22)");
#endif
  }
  k.code_object_ = cache ? cache->get(kernel_cache_key(kernel, compiler_identity(target)), target, build) : build();
  k.times_.cached = !compiled;
  dump.print(k.lowered_, target, k.code_object_, compiled, ir_before, ir_after);
  t = std::chrono::steady_clock::now();
  k.module_ = device.load(k.code_object_);
  k.times_.load = seconds_since(t);
  return k;
}

LaunchOrder launch_order(const lower::LoweredKernel& kernel, std::string_view arch) {
  const bool programmatic = arch.starts_with("sm_") && cuda::waits_for_predecessor(kernel, cuda::sm_number(arch));
  return programmatic ? LaunchOrder::programmatic : LaunchOrder::serialized;
}

void CompiledKernel::prepare_launch_sizes() {
  integer_names_.clear();
  for (const lower::KernelParam& p : lowered_.params)
    if (is_integer_scalar(p)) integer_names_.push_back(p.name);
  for (size_t i = 0; i < 3; ++i) {
    grid_[i] = lower::IndexProgram(lowered_.launch.grid[i], integer_names_);
    block_[i] = lower::IndexProgram(lowered_.launch.block[i], integer_names_);
  }
  param_dims_.clear();
  for (const lower::KernelParam& p : lowered_.params) {
    std::vector<lower::IndexProgram>& dims = param_dims_.emplace_back();
    for (const UOp& d : p.shape) dims.emplace_back(d, integer_names_);
  }
}

std::pair<Dim3, Dim3> CompiledKernel::launch_dims(const std::map<std::string, int64_t>& variables) const {
  return launch_dims_with([&](const lower::IndexProgram& p) { return p.evaluate(variables); });
}

std::pair<Dim3, Dim3> CompiledKernel::launch_dims_in_order(std::span<const int64_t> values) const {
  return launch_dims_with([&](const lower::IndexProgram& p) { return p.evaluate_in_order(values); });
}

template <class Evaluate>
std::pair<Dim3, Dim3> CompiledKernel::launch_dims_with(const Evaluate& evaluate) const {
  auto dim = [&](const std::array<lower::IndexProgram, 3>& d, const char* what) {
    uint32_t v[3];
    for (size_t i = 0; i < 3; ++i) {
      const int64_t n = evaluate(d[i]);
      if (n < 1 || n > int64_t{1} << 31)
        throw Error("kernel " + lowered_.name + ": " + what + " dimension " + std::to_string(i) + " is " + std::to_string(n));
      v[i] = static_cast<uint32_t>(n);
    }
    return Dim3{v[0], v[1], v[2]};
  };
  const Dim3 grid = dim(grid_, "grid");
  if (grid.x % static_cast<uint32_t>(lowered_.cluster) != 0)
    throw Error("kernel " + lowered_.name + ": grid dimension 0 is " + std::to_string(grid.x) + ", not a multiple of its cluster of " +
                std::to_string(lowered_.cluster) + " CTAs");
  return {grid, dim(block_, "block")};
}

// On AMD devices a buffer read through a buffer resource (direct-to-LDS copies) takes 32-bit byte
// offsets: a larger one would wrap silently, so it is an error here.
void CompiledKernel::check_buffer_resource(const Device& device, const lower::KernelParam& p, const DeviceArray& a) const {
  // The slots first: most kernels have none, and arch() returns a string by value.
  if (std::find(resource_slots_.begin(), resource_slots_.end(), p.slot) == resource_slots_.end() || !device.arch().starts_with("gfx")) return;
  const uint64_t bytes = static_cast<uint64_t>(a.elements) * static_cast<uint64_t>(a.dtype.itemsize());
  if (bytes > lower::kMaxBufferResourceBytes)
    throw Error("kernel " + lowered_.name + ": buffer argument " + std::to_string(p.slot) + " holds " + std::to_string(bytes) + " bytes; on " +
                device.arch() + " the kernel reads it with direct-to-LDS copies (buffer_load ... lds), whose byte offsets are 32-bit: at most " +
                std::to_string(lower::kMaxBufferResourceBytes) + " bytes (split the tensor)");
}

void CompiledKernel::launch(Device& device, std::span<const DeviceArray> buffers, const std::map<std::string, ScalarValue>& scalars) const {
  if (!lowered_.mesh.empty())
    throw Error("kernel " + lowered_.name + " runs over a device mesh (" + std::to_string(lowered_.mesh.size()) +
                " DEVICE range(s)); launch it with rt::MeshKernel on an rt::Mesh");
  launch_on(device, *module_, buffers, scalars);
}

void CompiledKernel::launch_on(Device& device, Module& module, std::span<const DeviceArray> buffers,
                               const std::map<std::string, ScalarValue>& scalars) const {
  const auto& k = lowered_;
  const std::vector<int64_t> ints = integer_values(k, integer_names_, scalars);  // in integer_names_ order
  size_t buffer_params = 0;
  for (const auto& p : k.params) buffer_params += p.kind == lower::KernelParam::Kind::Buffer;
  if (buffers.size() != buffer_params)
    throw Error("kernel " + k.name + " takes " + std::to_string(buffer_params) + " buffers, given " + std::to_string(buffers.size()));
  std::vector<Arg> args;
  args.reserve(k.params.size());
  size_t next_buffer = 0;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const lower::KernelParam& p = k.params[i];
    const std::vector<lower::IndexProgram>& dims = param_dims_[i];
    if (p.kind == lower::KernelParam::Kind::Scalar) {
      const ScalarValue& v = scalars.at(p.name);
      if (p.dtype == dtypes::float32) args.push_back(Arg::f32(std::get<float>(v)));
      else if (p.dtype == dtypes::int32) args.push_back(Arg::i32(static_cast<int32_t>(std::get<int64_t>(v))));
      else args.push_back(Arg::i64(std::get<int64_t>(v)));
      continue;
    }
    if (p.kind == lower::KernelParam::Kind::TensorMap) {  // after every buffer (kernel_params), whose slots are 0..n-1
      const DeviceArray& a = buffers[static_cast<size_t>(p.slot)];
      TensorMapArg t;
      t.address = a.buffer.address;
      t.dtype = p.dtype;
      t.rows = static_cast<uint64_t>(dims[0].evaluate_in_order(ints));
      t.cols = static_cast<uint64_t>(dims[1].evaluate_in_order(ints));
      t.box_rows = static_cast<uint32_t>(p.box.rows);
      t.box_cols = static_cast<uint32_t>(p.box.cols);
      t.swizzle_bytes = static_cast<int>(swizzle_row_bytes(p.box.swizzle));
      args.push_back(Arg::tensor(t));
      continue;
    }
    const DeviceArray& a = buffers[next_buffer++];
    if (!(a.dtype == p.dtype))
      throw Error("kernel " + k.name + ": buffer argument " + std::to_string(p.slot) + " holds " + a.dtype.name() + ", the kernel's " +
                  param_text(p) + " is " + p.dtype.name());
    int64_t elements = 1;
    for (const lower::IndexProgram& d : dims) elements *= d.evaluate_in_order(ints);
    if (a.elements != static_cast<size_t>(elements))
      throw Error("kernel " + k.name + ": buffer argument " + std::to_string(p.slot) + " holds " + std::to_string(a.elements) +
                  " elements, the kernel's " + param_text(p) + " has " + std::to_string(elements));
    check_buffer_resource(device, p, a);
    args.push_back(Arg::buffer(a.buffer));
  }
  auto [grid, block] = launch_dims_in_order(ints);
  device.launch(module, k.name, grid, block, args, {order_, k.cooperative});
}

}  // namespace weft::rt
