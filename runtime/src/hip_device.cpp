// hip / hip:N: an AMD GPU through the HIP runtime API, loaded with dlopen so that weft builds and
// runs where no ROCm is installed (opening the device then fails with a clear message). Kernel
// arguments are packed from the code object's own metadata, as on the emulator.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <unordered_set>

#include "devices.h"
#include "weft/dsl/error.h"

namespace weft::rt {

namespace {

using hipError_t = int;
using hipModule_t = void*;
using hipFunction_t = void*;
using hipEvent_t = void*;
constexpr int kHipMemcpyHostToDevice = 1, kHipMemcpyDeviceToHost = 2, kHipMemcpyDeviceToDevice = 3;
// hipModuleLaunchKernel's `extra` keys (HIP_LAUNCH_PARAM_*).
void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);
void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);
void* const kLaunchParamEnd = reinterpret_cast<void*>(3);

// The part of the HIP runtime API weft uses, resolved from libamdhip64.so.
struct HipApi {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipGetDeviceCount)(int*);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGetName)(char*, int, int);
  hipError_t (*hipMalloc)(void**, size_t);
  hipError_t (*hipFree)(void*);
  hipError_t (*hipMemcpy)(void*, const void*, size_t, int);
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                                      void**, void**);
  hipError_t (*hipDeviceSynchronize)();
  const char* (*hipGetErrorString)(hipError_t);
  hipError_t (*hipEventCreate)(hipEvent_t*);
  hipError_t (*hipEventRecord)(hipEvent_t, void*);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t);
  hipError_t (*hipEventDestroy)(hipEvent_t);
};

template <typename F>
void resolve(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw Error(std::string("device 'hip': the HIP runtime lacks ") + name);
}

const HipApi& hip_api() {
  static const HipApi api = [] {
    void* lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw Error(std::string("device 'hip': the HIP runtime (libamdhip64.so) was not found (") + dlerror() +
                  "); without an AMD GPU use emu:gfx950 or emu:gfx942");
    HipApi a{};
    resolve(lib, "hipInit", a.hipInit);
    resolve(lib, "hipGetDeviceCount", a.hipGetDeviceCount);
    resolve(lib, "hipSetDevice", a.hipSetDevice);
    resolve(lib, "hipDeviceGetName", a.hipDeviceGetName);
    resolve(lib, "hipMalloc", a.hipMalloc);
    resolve(lib, "hipFree", a.hipFree);
    resolve(lib, "hipMemcpy", a.hipMemcpy);
    resolve(lib, "hipModuleLoadData", a.hipModuleLoadData);
    resolve(lib, "hipModuleUnload", a.hipModuleUnload);
    resolve(lib, "hipModuleGetFunction", a.hipModuleGetFunction);
    resolve(lib, "hipModuleLaunchKernel", a.hipModuleLaunchKernel);
    resolve(lib, "hipDeviceSynchronize", a.hipDeviceSynchronize);
    resolve(lib, "hipGetErrorString", a.hipGetErrorString);
    resolve(lib, "hipEventCreate", a.hipEventCreate);
    resolve(lib, "hipEventRecord", a.hipEventRecord);
    resolve(lib, "hipEventSynchronize", a.hipEventSynchronize);
    resolve(lib, "hipEventElapsedTime", a.hipEventElapsedTime);
    resolve(lib, "hipEventDestroy", a.hipEventDestroy);
    return a;
  }();
  return api;
}

void check(hipError_t e, const std::string& what) {
  if (e != 0) throw Error("HIP: " + what + ": " + hip_api().hipGetErrorString(e));
}

// The target of a GPU, from its product name (HIP's properties struct changes layout between
// ROCm versions; the name does not).
std::string arch_of(const std::string& name) {
  for (const char* gfx950 : {"MI350", "MI355"})
    if (name.find(gfx950) != std::string::npos) return "gfx950";
  for (const char* gfx942 : {"MI300", "MI325"})
    if (name.find(gfx942) != std::string::npos) return "gfx942";
  throw Error("device 'hip': cannot tell the target of '" + name + "' (weft compiles for MI300-class gfx942 and MI350-class gfx950)");
}

class HipModule : public Module {
 public:
  HipModule(emu::CodeObject code, hipModule_t handle, int device) : code_(std::move(code)), handle_(handle), device_(device) {}
  ~HipModule() override {
    if (hip_api().hipSetDevice(device_) == 0) hip_api().hipModuleUnload(handle_);
  }
  int device() const { return device_; }
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;
  std::vector<std::string> kernels() const override {
    std::vector<std::string> names;
    for (const emu::Kernel& k : code_.kernels()) names.push_back(k.name);
    return names;
  }
  const emu::CodeObject& code() const { return code_; }
  hipFunction_t function(const std::string& kernel) {
    auto it = functions_.find(kernel);
    if (it != functions_.end()) return it->second;
    code_.kernel(kernel);  // names the kernels there are if this one is not
    hipFunction_t f = nullptr;
    check(hip_api().hipModuleGetFunction(&f, handle_, kernel.c_str()), "looking up kernel " + kernel);
    return functions_[kernel] = f;
  }

 private:
  emu::CodeObject code_;  // its metadata lays out the kernel arguments
  hipModule_t handle_;
  int device_;  // the GPU it was loaded on
  std::map<std::string, hipFunction_t> functions_;
};

// A HIP event on the null stream.
class HipEvent : public Event {
 public:
  HipEvent(const void* device, int index) : device_(device), index_(index) { check(hip_api().hipEventCreate(&event_), "creating an event"); }
  ~HipEvent() override {
    if (hip_api().hipSetDevice(index_) == 0) hip_api().hipEventDestroy(event_);
  }
  HipEvent(const HipEvent&) = delete;
  HipEvent& operator=(const HipEvent&) = delete;
  hipEvent_t get() const { return event_; }
  const void* device() const { return device_; }

 private:
  const void* device_;
  int index_;  // its GPU
  hipEvent_t event_ = nullptr;
};

class HipDevice : public Device {
 public:
  explicit HipDevice(int index) : index_(index) {
    const HipApi& api = hip_api();
    check(api.hipInit(0), "hipInit");
    int count = 0;
    check(api.hipGetDeviceCount(&count), "counting GPUs");
    if (index >= count) throw Error("device 'hip:" + std::to_string(index) + "': this machine has " + std::to_string(count) + " AMD GPU(s)");
    check(api.hipSetDevice(index), "selecting GPU " + std::to_string(index));
    char buf[256] = {};
    check(api.hipDeviceGetName(buf, sizeof buf, index), "reading the GPU's name");
    product_ = buf;
    arch_ = arch_of(product_);
  }
  ~HipDevice() override {
    if (hip_api().hipSetDevice(index_) == 0)
      for (void* p : allocations_) hip_api().hipFree(p);
  }
  HipDevice(const HipDevice&) = delete;
  HipDevice& operator=(const HipDevice&) = delete;

  std::string name() const override { return "hip:" + std::to_string(index_) + " (" + product_ + ", " + arch_ + ")"; }
  std::string arch() const override { return arch_; }

  Buffer allocate(size_t bytes, std::string label) override {
    select();
    void* p = nullptr;
    check(hip_api().hipMalloc(&p, bytes), "allocating " + std::to_string(bytes) + " bytes for " + label);
    allocations_.insert(p);
    return {reinterpret_cast<uint64_t>(p), bytes};
  }
  void free(const Buffer& buffer) override {
    select();
    void* p = reinterpret_cast<void*>(buffer.address);
    if (allocations_.erase(p) == 0)
      throw Error("device " + name() + ": free of a buffer it does not hold (at " + std::to_string(buffer.address) + "; freed already?)");
    check(hip_api().hipFree(p), "freeing a buffer");
  }
  void copy_to_device(const Buffer& dst, std::span<const uint8_t> src) override {
    select();
    if (src.size() > dst.bytes) throw Error("copy of " + std::to_string(src.size()) + " bytes into a " + std::to_string(dst.bytes) + "-byte buffer");
    check(hip_api().hipMemcpy(reinterpret_cast<void*>(dst.address), src.data(), src.size(), kHipMemcpyHostToDevice), "copy to device");
  }
  void copy_from_device(std::span<uint8_t> dst, const Buffer& src) override {
    select();
    if (dst.size() > src.bytes) throw Error("copy of " + std::to_string(dst.size()) + " bytes out of a " + std::to_string(src.bytes) + "-byte buffer");
    check(hip_api().hipMemcpy(dst.data(), reinterpret_cast<void*>(src.address), dst.size(), kHipMemcpyDeviceToHost), "copy from device");
  }
  void copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes) override {
    select();
    check_copy_on_device(dst, src, bytes);
    check(hip_api().hipMemcpy(reinterpret_cast<void*>(dst.address), reinterpret_cast<void*>(src.address), bytes, kHipMemcpyDeviceToDevice),
          "copy on device");
  }
  std::shared_ptr<Module> load(std::vector<uint8_t> code_object) override {
    select();
    emu::CodeObject code = emu::CodeObject::load(code_object);
    if (emu::arch_name(code.arch()) != arch_)
      throw Error(std::string("the code object is for ") + emu::arch_name(code.arch()) + ", the device " + name() + " runs " + arch_);
    hipModule_t handle = nullptr;
    check(hip_api().hipModuleLoadData(&handle, code_object.data()), "loading the code object");
    return std::make_shared<HipModule>(std::move(code), handle, index_);
  }
  void launch(Module& module, const std::string& kernel, Dim3 grid, Dim3 block, std::span<const Arg> args, LaunchMode mode) override {
    if (mode.cooperative)
      throw Error("device " + name() + ": kernel " + kernel + " has a grid barrier; HIP devices do not launch cooperative kernels yet (the emulator and cuda do)");
    select();
    auto* m = dynamic_cast<HipModule*>(&module);
    if (!m || m->device() != index_) throw Error("device " + name() + ": the module was loaded on another device");
    std::vector<uint8_t> kernarg = pack_args(m->code().kernel(kernel), args);
    size_t size = kernarg.size();
    void* extra[] = {kLaunchParamBufferPointer, kernarg.data(), kLaunchParamBufferSize, &size, kLaunchParamEnd};
    check(hip_api().hipModuleLaunchKernel(m->function(kernel), grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, nullptr, nullptr,
                                          extra),
          "launching " + kernel);
  }
  void synchronize() override {
    select();
    check(hip_api().hipDeviceSynchronize(), "synchronize");
  }

  std::shared_ptr<Event> record_event() override {
    select();
    auto e = std::make_shared<HipEvent>(this, index_);
    check(hip_api().hipEventRecord(e->get(), nullptr), "recording an event");
    return e;
  }
  double elapsed_seconds(const Event& start, const Event& end) override {
    const auto* a = dynamic_cast<const HipEvent*>(&start);
    const auto* b = dynamic_cast<const HipEvent*>(&end);
    if (!a || !b || a->device() != this || b->device() != this) throw Error("device " + name() + ": an event recorded on another device");
    select();
    check(hip_api().hipEventSynchronize(b->get()), "waiting for an event (a kernel failed while running)");
    float ms = 0;
    check(hip_api().hipEventElapsedTime(&ms, a->get(), b->get()), "reading the time between two events");
    return ms * 1e-3;
  }

 private:
  // The runtime's current GPU is per thread, and a mesh holds several devices: every call
  // selects its own GPU first.
  void select() const {
    if (const hipError_t r = hip_api().hipSetDevice(index_); r != 0) check(r, "selecting GPU hip:" + std::to_string(index_));
  }

  int index_;
  std::string product_, arch_;
  std::unordered_set<void*> allocations_;
};

}  // namespace

std::unique_ptr<Device> open_hip(int index) { return std::make_unique<HipDevice>(index); }

}  // namespace weft::rt
