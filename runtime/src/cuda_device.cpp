// cuda / cuda:N: an NVIDIA GPU through the CUDA driver API, loaded with dlopen (libcuda.so.1) so
// that weft builds and runs where no driver is installed; opening the device then fails with a
// clear message. Modules are cubins (NVRTC's output, nvrtc.h); kernel parameters are passed in
// order, each at its own size.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <tuple>
#include <unordered_set>

#include "devices.h"
#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUdeviceptr = unsigned long long;
using CUevent = void*;
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76, kMultiprocessorCount = 16;  // CUdevice_attribute
constexpr int kMaxDynamicSharedBytes = 8;                                  // CUfunction_attribute
constexpr int kNotFound = 500;                                             // CUDA_ERROR_NOT_FOUND
constexpr int kCooperative = 2, kProgrammaticStreamSerialization = 6;      // CUlaunchAttributeID
constexpr int kCooperativeLaunchTooLarge = 720;                            // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE

// cuLaunchKernelEx's configuration, as cuda.h lays out CUlaunchAttribute (a 4-byte id, padding,
// a 64-byte value union) and CUlaunchConfig.
struct LaunchAttribute {
  int id;
  char pad[4];
  alignas(8) unsigned char value[64];
};
static_assert(sizeof(LaunchAttribute) == 72 && offsetof(LaunchAttribute, value) == 8);
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  void* stream;
  LaunchAttribute* attributes;
  unsigned attribute_count;
};
static_assert(sizeof(LaunchConfig) == 56 && offsetof(LaunchConfig, stream) == 32 && offsetof(LaunchConfig, attributes) == 40 &&
              offsetof(LaunchConfig, attribute_count) == 48);

// Device::hold's spin: one thread reads the global nanosecond timer until `ns` have passed. PTX,
// which the driver compiles for whichever GPU it is (cuModuleLoadData takes PTX text), so that
// the runtime needs no compiler of its own.
constexpr const char* kHoldPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry weft_hold(.param .u64 weft_hold_ns)
{
  .reg .pred %p;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [weft_hold_ns];
  mov.u64 %rd1, %globaltimer;
$L_spin:
  mov.u64 %rd2, %globaltimer;
  sub.u64 %rd3, %rd2, %rd1;
  setp.lt.u64 %p, %rd3, %rd0;
  @%p bra $L_spin;
  ret;
}
)";

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  // cuTensorMapEncodeTiled(map, data type, rank, address, dims, strides, box, element strides,
  // interleave, swizzle, L2 promotion, out-of-bounds fill); absent before CUDA 12.
  CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*, const unsigned*, const unsigned*, int, int,
                                     int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  CUresult (*cuLaunchKernelEx)(const LaunchConfig*, CUfunction, void**, void**);  // absent before CUDA 12
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, void*);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
};

template <typename F>
void resolve(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw Error(std::string("device 'cuda': the CUDA driver lacks ") + name);
}

// The newest of several versions of an entry point (CUDA 13's headers name the _v2 one).
template <typename F>
void resolve_newest(void* lib, std::initializer_list<const char*> names, F& fn) {
  for (const char* name : names)
    if ((fn = reinterpret_cast<F>(dlsym(lib, name)))) return;
  throw Error(std::string("device 'cuda': the CUDA driver lacks ") + *names.begin());
}

const CudaApi& cuda_api() {
  static const CudaApi api = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw Error(std::string("device 'cuda': no NVIDIA driver was found (libcuda.so.1: ") + dlerror() +
                  "); this machine has no usable NVIDIA GPU. Without one, use emu:gfx950 or emu:gfx942");
    CudaApi a{};
    resolve(lib, "cuInit", a.cuInit);
    resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount);
    resolve(lib, "cuDeviceGet", a.cuDeviceGet);
    resolve(lib, "cuDeviceGetName", a.cuDeviceGetName);
    resolve(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute);
    resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain);
    resolve(lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease);
    resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent);
    resolve(lib, "cuCtxSynchronize", a.cuCtxSynchronize);
    resolve(lib, "cuMemAlloc_v2", a.cuMemAlloc);
    resolve(lib, "cuMemFree_v2", a.cuMemFree);
    resolve(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD);
    resolve(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH);
    resolve(lib, "cuMemcpyDtoD_v2", a.cuMemcpyDtoD);
    resolve(lib, "cuModuleLoadData", a.cuModuleLoadData);
    resolve(lib, "cuModuleUnload", a.cuModuleUnload);
    resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction);
    resolve(lib, "cuModuleGetGlobal_v2", a.cuModuleGetGlobal);
    resolve(lib, "cuFuncSetAttribute", a.cuFuncSetAttribute);
    a.cuTensorMapEncodeTiled = reinterpret_cast<decltype(a.cuTensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
    resolve(lib, "cuLaunchKernel", a.cuLaunchKernel);
    a.cuLaunchKernelEx = reinterpret_cast<decltype(a.cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
    resolve(lib, "cuGetErrorString", a.cuGetErrorString);
    resolve(lib, "cuEventCreate", a.cuEventCreate);
    resolve(lib, "cuEventRecord", a.cuEventRecord);
    resolve(lib, "cuEventSynchronize", a.cuEventSynchronize);
    resolve_newest(lib, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, a.cuEventElapsedTime);
    resolve(lib, "cuEventDestroy_v2", a.cuEventDestroy);
    return a;
  }();
  return api;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

void check(CUresult r, const std::string& what) {
  if (r == 0) return;
  const char* text = nullptr;
  cuda_api().cuGetErrorString(r, &text);
  throw Error("CUDA: " + what + ": " + (text ? text : "error " + std::to_string(r)));
}

// A CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h).
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

// CUtensorMapDataType (cuda.h) of an element dtype.
int tensor_map_type(DType d) {
  switch (d.scalar) {
    case Scalar::UInt8: case Scalar::Int8: case Scalar::Fp8E4M3: case Scalar::Fp8E5M2: case Scalar::Fp8E4M3Fnuz: case Scalar::Fp8E5M2Fnuz: return 0;
    case Scalar::UInt16: case Scalar::Int16: return 1;
    case Scalar::UInt32: return 2;
    case Scalar::Int32: return 3;
    case Scalar::UInt64: return 4;
    case Scalar::Int64: return 5;
    case Scalar::Float16: return 6;
    case Scalar::Float32: return 7;
    case Scalar::Float64: return 8;
    case Scalar::BFloat16: return 9;
    default: throw Error("CUDA: no tensor map element type for " + d.name());
  }
}

// The tensor map of a 2-D row-major tensor: dims and strides innermost first; elements outside
// the tensor read as zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE).
TensorMap encode(const TensorMapArg& t, const std::string& kernel) {
  const CudaApi& api = cuda_api();
  if (!api.cuTensorMapEncodeTiled) throw Error("CUDA: kernel " + kernel + " uses TMA, and this driver lacks cuTensorMapEncodeTiled (CUDA 12 or newer)");
  const uint64_t item = static_cast<uint64_t>(t.dtype.itemsize());
  if (t.address % 16 != 0 || (t.cols * item) % 16 != 0)
    throw Error("CUDA: kernel " + kernel + ": a TMA tensor needs a 16-byte aligned address and rows a multiple of 16 bytes (" +
                std::to_string(t.cols) + " x " + std::to_string(item) + " bytes)");
  TensorMap map{};
  const uint64_t dims[2] = {t.cols, t.rows};
  const uint64_t strides[1] = {t.cols * item};
  const unsigned box[2] = {t.box_cols, t.box_rows};
  const unsigned element_strides[2] = {1, 1};
  constexpr int kInterleaveNone = 0, kSwizzleNone = 0, kSwizzle64B = 2, kSwizzle128B = 3, kL2Promotion128B = 2, kOobFillZeros = 0;
  const int swizzle = t.swizzle_bytes == 128 ? kSwizzle128B : t.swizzle_bytes == 64 ? kSwizzle64B : kSwizzleNone;
  if (const CUresult r = api.cuTensorMapEncodeTiled(&map, tensor_map_type(t.dtype), 2, reinterpret_cast<void*>(t.address), dims, strides, box,
                                                     element_strides, kInterleaveNone, swizzle, kL2Promotion128B, kOobFillZeros);
      r != 0)
    check(r, "encoding the tensor map of a " + std::to_string(t.rows) + " x " + std::to_string(t.cols) + " " + t.dtype.name() + " tensor (box " +
                 std::to_string(t.box_rows) + " x " + std::to_string(t.box_cols) + ") for kernel " + kernel);
  return map;
}

class CudaModule : public Module {
 public:
  CudaModule(CUmodule handle, CUcontext context, std::string arch) : handle_(handle), context_(context), arch_(std::move(arch)) {}
  ~CudaModule() override {
    if (cuda_api().cuCtxSetCurrent(context_) == 0) cuda_api().cuModuleUnload(handle_);
  }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  std::vector<std::string> kernels() const override {
    std::vector<std::string> names;
    for (const auto& [name, f] : functions_) names.push_back(name);
    return names;
  }
  CUcontext context() const { return context_; }
  struct Function {
    CUfunction handle = nullptr;
    unsigned dynamic_shared_bytes = 0;  // passed at every launch
  };
  const Function& function(const std::string& kernel) {
    auto it = functions_.find(kernel);
    if (it != functions_.end()) return it->second;
    Function f;
    check(cuda_api().cuModuleGetFunction(&f.handle, handle_, kernel.c_str()), "looking up kernel " + kernel + " in the cubin");
    f.dynamic_shared_bytes = dynamic_shared_bytes(kernel);
    if (f.dynamic_shared_bytes > 0)
      check(cuda_api().cuFuncSetAttribute(f.handle, kMaxDynamicSharedBytes, static_cast<int>(f.dynamic_shared_bytes)),
            "allowing kernel " + kernel + " " + std::to_string(f.dynamic_shared_bytes) + " bytes of dynamic shared memory");
    return functions_[kernel] = f;
  }

 private:
  // The dynamic shared memory a kernel needs: the cubin's `weft_dynamic_shared_<kernel>` global
  // (lowering/cuda_codegen.h; every weft kernel has one), 0 for a cubin not made by weft.
  unsigned dynamic_shared_bytes(const std::string& kernel) {
    CUdeviceptr p = 0;
    size_t size = 0;
    const std::string symbol = "weft_dynamic_shared_" + kernel;
    const CUresult r = cuda_api().cuModuleGetGlobal(&p, &size, handle_, symbol.c_str());
    if (r == kNotFound) return 0;
    check(r, "looking up " + symbol + " in the cubin");
    unsigned long long bytes = 0;
    if (size != sizeof bytes) throw Error("CUDA: " + symbol + " has " + std::to_string(size) + " bytes, expected 8");
    check(cuda_api().cuMemcpyDtoH(&bytes, p, sizeof bytes), "reading " + symbol);
    return static_cast<unsigned>(bytes);
  }

  CUmodule handle_;
  CUcontext context_;  // the device's, current whenever the module is used (its device makes it so)
  std::string arch_;
  std::map<std::string, Function> functions_;
};

// A CUDA event on the default stream.
class CudaEvent : public Event {
 public:
  CudaEvent(const void* device, CUcontext context) : device_(device), context_(context) {
    check(cuda_api().cuEventCreate(&event_, 0), "creating an event");
  }
  ~CudaEvent() override {
    if (cuda_api().cuCtxSetCurrent(context_) == 0) cuda_api().cuEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CUevent get() const { return event_; }
  const void* device() const { return device_; }

 private:
  const void* device_;
  CUcontext context_;
  CUevent event_ = nullptr;
};

class CudaDevice : public Device {
 public:
  explicit CudaDevice(int index) : index_(index) {
    const CudaApi& api = cuda_api();
    check(api.cuInit(0), "cuInit (is an NVIDIA GPU present and its driver loaded?)");
    int count = 0;
    check(api.cuDeviceGetCount(&count), "counting GPUs");
    if (index >= count)
      throw Error("device 'cuda:" + std::to_string(index) + "': this machine has " + std::to_string(count) + " NVIDIA GPU(s)");
    check(api.cuDeviceGet(&device_, index), "opening GPU " + std::to_string(index));
    char buf[256] = {};
    check(api.cuDeviceGetName(buf, sizeof buf, device_), "reading the GPU's name");
    product_ = buf;
    int major = 0, minor = 0;
    check(api.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, device_), "reading the compute capability");
    check(api.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, device_), "reading the compute capability");
    arch_ = "sm_" + std::to_string(major * 10 + minor);
    int sms = 0;
    check(api.cuDeviceGetAttribute(&sms, kMultiprocessorCount, device_), "reading the multiprocessor count");
    multiprocessors_ = sms;
    check(api.cuDevicePrimaryCtxRetain(&context_, device_), "creating the context");
    make_current();
  }
  ~CudaDevice() override {
    if (cuda_api().cuCtxSetCurrent(context_) == 0) {
      for (CUdeviceptr p : allocations_) cuda_api().cuMemFree(p);
      if (hold_module_) cuda_api().cuModuleUnload(hold_module_);
    }
    cuda_api().cuDevicePrimaryCtxRelease(device_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::optional<int64_t> compute_units() const override { return multiprocessors_; }
  int ordinal() const { return index_; }

  std::string name() const override { return "cuda:" + std::to_string(index_) + " (" + product_ + ", " + arch_ + ")"; }
  std::string arch() const override { return arch_; }

  Buffer allocate(size_t bytes, std::string label) override {
    make_current();
    CUdeviceptr p = 0;
    check(cuda_api().cuMemAlloc(&p, bytes ? bytes : 1), "allocating " + std::to_string(bytes) + " bytes for " + label);
    allocations_.insert(p);
    return {p, bytes};
  }
  void free(const Buffer& buffer) override {
    make_current();
    if (allocations_.erase(buffer.address) == 0)
      throw Error("device " + name() + ": free of a buffer it does not hold (at 0x" + hex(buffer.address) + "; freed already?)");
    check(cuda_api().cuMemFree(buffer.address), "freeing a buffer");
  }
  void copy_to_device(const Buffer& dst, std::span<const uint8_t> src) override {
    make_current();
    if (src.size() > dst.bytes) throw Error("copy of " + std::to_string(src.size()) + " bytes into a " + std::to_string(dst.bytes) + "-byte buffer");
    check(cuda_api().cuMemcpyHtoD(dst.address, src.data(), src.size()), "copy to device");
  }
  void copy_from_device(std::span<uint8_t> dst, const Buffer& src) override {
    make_current();
    if (dst.size() > src.bytes) throw Error("copy of " + std::to_string(dst.size()) + " bytes out of a " + std::to_string(src.bytes) + "-byte buffer");
    check(cuda_api().cuMemcpyDtoH(dst.data(), src.address, dst.size()), "copy from device");
  }
  void copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes) override {
    make_current();
    check_copy_on_device(dst, src, bytes);
    check(cuda_api().cuMemcpyDtoD(dst.address, src.address, bytes), "copy on device");
  }
  std::shared_ptr<Module> load(std::vector<uint8_t> cubin) override {
    make_current();
    CUmodule handle = nullptr;
    check(cuda_api().cuModuleLoadData(&handle, cubin.data()), "loading the cubin on " + name());
    return std::make_shared<CudaModule>(handle, context_, arch_);
  }
  void launch(Module& module, const std::string& kernel, Dim3 grid, Dim3 block, std::span<const Arg> args, LaunchMode mode) override {
    make_current();
    auto* m = dynamic_cast<CudaModule*>(&module);
    if (!m || m->context() != context_) throw Error("device " + name() + ": the module was loaded on another device");
    std::vector<uint64_t> storage(args.size());
    if (tensor_maps_.size() >= kMaxTensorMaps) tensor_maps_.clear();  // (never during a launch: params point into it)
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].kind == Arg::Kind::TensorMap) {
        params[i] = &tensor_map(args[i].tensor_map, kernel);  // the driver copies it
        continue;
      }
      storage[i] = args[i].bits;  // little-endian: a 4-byte parameter reads the low half
      params[i] = &storage[i];
    }
    const CudaModule::Function& f = m->function(kernel);
    // Programmatic stream serialization where the driver has it; a serialized launch is always
    // correct for a kernel that waits for its predecessor (the wait finds it done). A cooperative
    // launch has no fallback: a grid barrier whose workgroups are not all resident never ends.
    const bool programmatic = mode.order == LaunchOrder::programmatic && cuda_api().cuLaunchKernelEx;
    if (mode.cooperative && !cuda_api().cuLaunchKernelEx)
      throw Error("device " + name() + ": kernel " + kernel + " has a grid barrier, and this driver has no cuLaunchKernelEx for a cooperative launch (CUDA 12 or newer)");
    if (programmatic || mode.cooperative) {
      LaunchAttribute attributes[2]{};
      unsigned count = 0;
      const int on = 1;  // the value union's programmaticStreamSerializationAllowed and cooperative, ints
      for (const auto& [wanted, id] : {std::pair{programmatic, kProgrammaticStreamSerialization}, std::pair{mode.cooperative, kCooperative}}) {
        if (!wanted) continue;
        attributes[count].id = id;
        std::memcpy(attributes[count++].value, &on, sizeof on);
      }
      const LaunchConfig config{grid.x, grid.y, grid.z, block.x, block.y, block.z, f.dynamic_shared_bytes, nullptr, attributes, count};
      const CUresult r = cuda_api().cuLaunchKernelEx(&config, f.handle, params.data(), nullptr);
      if (r == kCooperativeLaunchTooLarge)
        throw Error("device " + name() + ": kernel " + kernel + " has a grid barrier, so its " + std::to_string(uint64_t{grid.x} * grid.y * grid.z) +
                    " workgroups must all be resident at once, and this GPU cannot hold them (its multiprocessors times the workgroups each "
                    "holds, cuOccupancyMaxActiveBlocksPerMultiprocessor); launch fewer");
      if (r != 0) check(r, "launching kernel " + kernel + (mode.cooperative ? " (cooperative)" : " (programmatic dependent launch)"));
      return;
    }
    // (The error's text only on an error: a launch is on the host's critical path.)
    if (const CUresult r = cuda_api().cuLaunchKernel(f.handle, grid.x, grid.y, grid.z, block.x, block.y, block.z, f.dynamic_shared_bytes, nullptr,
                                                     params.data(), nullptr);
        r != 0)
      check(r, "launching kernel " + kernel);
  }
  void synchronize() override {
    make_current();
    check(cuda_api().cuCtxSynchronize(), "synchronize (a kernel failed while running)");
  }

  std::shared_ptr<Event> record_event() override {
    make_current();
    auto e = std::make_shared<CudaEvent>(this, context_);
    check(cuda_api().cuEventRecord(e->get(), nullptr), "recording an event");
    return e;
  }
  double elapsed_seconds(const Event& start, const Event& end) override {
    const auto* a = dynamic_cast<const CudaEvent*>(&start);
    const auto* b = dynamic_cast<const CudaEvent*>(&end);
    if (!a || !b || a->device() != this || b->device() != this) throw Error("device " + name() + ": an event recorded on another device");
    make_current();
    check(cuda_api().cuEventSynchronize(b->get()), "waiting for an event (a kernel failed while running)");
    float ms = 0;
    check(cuda_api().cuEventElapsedTime(&ms, a->get(), b->get()), "reading the time between two events");
    return ms * 1e-3;
  }
  bool hold(double seconds) override {
    make_current();
    if (!hold_kernel_ && !load_hold_kernel()) return false;
    unsigned long long ns = seconds > 0 ? static_cast<unsigned long long>(seconds * 1e9) : 0;
    void* params[] = {&ns};
    check(cuda_api().cuLaunchKernel(hold_kernel_, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "launching the hold kernel");
    return true;
  }

 private:
  // The driver's current context is per thread, and a mesh holds several devices: every call
  // makes its own device's context current first (a pointer swap in the driver). Everything runs
  // on the primary context's legacy default stream, which is also the stream NCCL's collectives
  // are given (nccl_collectives.cpp: stream 0 of the same primary context), so kernels, copies and
  // collectives on one GPU run in the order they were issued. A private context or stream here
  // would have to be handed to NCCL too.
  void make_current() const {
    if (const CUresult r = cuda_api().cuCtxSetCurrent(context_); r != 0) check(r, "making the context of cuda:" + std::to_string(index_) + " current");
  }

  // The hold kernel, compiled from PTX by the driver at first use. A driver that cannot (PTX JIT
  // disabled, a PTX version newer than it knows) leaves the device without a hold: Device::hold
  // then returns false, as the interface allows, and is not tried again.
  bool load_hold_kernel() {
    if (hold_unavailable_) return false;
    if (cuda_api().cuModuleLoadData(&hold_module_, kHoldPtx) != 0) {
      hold_module_ = nullptr;
      hold_unavailable_ = true;
      return false;
    }
    if (cuda_api().cuModuleGetFunction(&hold_kernel_, hold_module_, "weft_hold") != 0) {
      cuda_api().cuModuleUnload(hold_module_);
      hold_module_ = nullptr;
      hold_kernel_ = nullptr;
      hold_unavailable_ = true;
      return false;
    }
    return true;
  }

  // Tensor maps by what they describe: encoding is a pure function of it, and a GEMM launched in
  // a loop would otherwise encode the same maps at every launch (host time before the launch).
  TensorMap& tensor_map(const TensorMapArg& t, const std::string& kernel) {
    const auto key = std::make_tuple(t.address, static_cast<int>(t.dtype.scalar), static_cast<int>(t.dtype.lanes), t.rows, t.cols, t.box_rows,
                                     t.box_cols, t.swizzle_bytes);
    if (const auto it = tensor_maps_.find(key); it != tensor_maps_.end()) return it->second;
    return tensor_maps_.emplace(key, encode(t, kernel)).first->second;
  }
  static constexpr size_t kMaxTensorMaps = 4096;

  int index_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string product_, arch_;
  int64_t multiprocessors_ = 0;
  std::unordered_set<CUdeviceptr> allocations_;
  CUmodule hold_module_ = nullptr;  // hold()'s, loaded at its first use
  CUfunction hold_kernel_ = nullptr;
  bool hold_unavailable_ = false;   // the driver could not load it
  std::map<std::tuple<uint64_t, int, int, uint64_t, uint64_t, uint32_t, uint32_t, int>, TensorMap> tensor_maps_;  // (one host thread at a time: Device)
};

}  // namespace

std::unique_ptr<Device> open_cuda(int index) { return std::make_unique<CudaDevice>(index); }

std::optional<int> cuda_ordinal(const Device& device) {
  const auto* cuda = dynamic_cast<const CudaDevice*>(&device);
  if (!cuda) return std::nullopt;
  return cuda->ordinal();
}

}  // namespace weft::rt
