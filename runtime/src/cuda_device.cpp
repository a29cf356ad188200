// cuda / cuda:N: an NVIDIA GPU through the CUDA driver API, loaded with dlopen (libcuda.so.1) so
// that weft builds and runs where no driver is installed; opening the device then fails with a
// clear message. Modules are cubins (NVRTC's output, nvrtc.h); kernel parameters are passed in
// order, each at its own size.
#include <dlfcn.h>

#include <map>

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
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;  // CUdevice_attribute

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
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

template <typename F>
void resolve(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw Error(std::string("device 'cuda': the CUDA driver lacks ") + name);
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
    resolve(lib, "cuModuleLoadData", a.cuModuleLoadData);
    resolve(lib, "cuModuleUnload", a.cuModuleUnload);
    resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction);
    resolve(lib, "cuLaunchKernel", a.cuLaunchKernel);
    resolve(lib, "cuGetErrorString", a.cuGetErrorString);
    return a;
  }();
  return api;
}

void check(CUresult r, const std::string& what) {
  if (r == 0) return;
  const char* text = nullptr;
  cuda_api().cuGetErrorString(r, &text);
  throw Error("CUDA: " + what + ": " + (text ? text : "error " + std::to_string(r)));
}

class CudaModule : public Module {
 public:
  CudaModule(CUmodule handle, std::string arch) : handle_(handle), arch_(std::move(arch)) {}
  ~CudaModule() override { cuda_api().cuModuleUnload(handle_); }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  std::vector<std::string> kernels() const override {
    std::vector<std::string> names;
    for (const auto& [name, f] : functions_) names.push_back(name);
    return names;
  }
  CUfunction function(const std::string& kernel) {
    auto it = functions_.find(kernel);
    if (it != functions_.end()) return it->second;
    CUfunction f = nullptr;
    check(cuda_api().cuModuleGetFunction(&f, handle_, kernel.c_str()), "looking up kernel " + kernel + " in the cubin");
    return functions_[kernel] = f;
  }

 private:
  CUmodule handle_;
  std::string arch_;
  std::map<std::string, CUfunction> functions_;
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
    check(api.cuDevicePrimaryCtxRetain(&context_, device_), "creating the context");
    check(api.cuCtxSetCurrent(context_), "making the context current");
  }
  ~CudaDevice() override {
    for (CUdeviceptr p : allocations_) cuda_api().cuMemFree(p);
    cuda_api().cuDevicePrimaryCtxRelease(device_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return "cuda:" + std::to_string(index_) + " (" + product_ + ", " + arch_ + ")"; }
  std::string arch() const override { return arch_; }

  Buffer allocate(size_t bytes, std::string label) override {
    CUdeviceptr p = 0;
    check(cuda_api().cuMemAlloc(&p, bytes ? bytes : 1), "allocating " + std::to_string(bytes) + " bytes for " + label);
    allocations_.push_back(p);
    return {p, bytes};
  }
  void copy_to_device(const Buffer& dst, std::span<const uint8_t> src) override {
    if (src.size() > dst.bytes) throw Error("copy of " + std::to_string(src.size()) + " bytes into a " + std::to_string(dst.bytes) + "-byte buffer");
    check(cuda_api().cuMemcpyHtoD(dst.address, src.data(), src.size()), "copy to device");
  }
  void copy_from_device(std::span<uint8_t> dst, const Buffer& src) override {
    if (dst.size() > src.bytes) throw Error("copy of " + std::to_string(dst.size()) + " bytes out of a " + std::to_string(src.bytes) + "-byte buffer");
    check(cuda_api().cuMemcpyDtoH(dst.data(), src.address, dst.size()), "copy from device");
  }
  std::shared_ptr<Module> load(std::vector<uint8_t> cubin) override {
    CUmodule handle = nullptr;
    check(cuda_api().cuModuleLoadData(&handle, cubin.data()), "loading the cubin on " + name());
    return std::make_shared<CudaModule>(handle, arch_);
  }
  void launch(Module& module, const std::string& kernel, Dim3 grid, Dim3 block, std::span<const Arg> args) override {
    auto* m = dynamic_cast<CudaModule*>(&module);
    if (!m) throw Error("device " + name() + ": the module was loaded on another device");
    std::vector<uint64_t> storage(args.size());
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      storage[i] = args[i].bits;  // little-endian: a 4-byte parameter reads the low half
      params[i] = &storage[i];
    }
    check(cuda_api().cuLaunchKernel(m->function(kernel), grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, nullptr, params.data(),
                                    nullptr),
          "launching kernel " + kernel);
  }
  void synchronize() override { check(cuda_api().cuCtxSynchronize(), "synchronize (a kernel failed while running)"); }

 private:
  int index_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string product_, arch_;
  std::vector<CUdeviceptr> allocations_;
};

}  // namespace

std::unique_ptr<Device> open_cuda(int index) { return std::make_unique<CudaDevice>(index); }

}  // namespace weft::rt
