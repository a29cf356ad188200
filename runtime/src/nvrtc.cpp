#include "weft/runtime/nvrtc.h"

#include <dlfcn.h>

#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

using nvrtcResult = int;
using nvrtcProgram = void*;

struct NvrtcApi {
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*log_size)(nvrtcProgram, size_t*);
  nvrtcResult (*log)(nvrtcProgram, char*);
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*);
  nvrtcResult (*cubin)(nvrtcProgram, char*);
  nvrtcResult (*destroy)(nvrtcProgram*);
  const char* (*error_string)(nvrtcResult);
  nvrtcResult (*version)(int*, int*);
};

void* open_library() {
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"})
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
  return nullptr;
}

template <typename F>
void resolve(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw Error(std::string("NVRTC lacks ") + name);
}

const NvrtcApi& api() {
  static const NvrtcApi a = [] {
    void* lib = open_library();
    if (!lib) throw Error("NVRTC (libnvrtc.so) was not found: install the CUDA toolkit to compile for NVIDIA GPUs");
    NvrtcApi x{};
    resolve(lib, "nvrtcCreateProgram", x.create);
    resolve(lib, "nvrtcCompileProgram", x.compile);
    resolve(lib, "nvrtcGetProgramLogSize", x.log_size);
    resolve(lib, "nvrtcGetProgramLog", x.log);
    resolve(lib, "nvrtcGetCUBINSize", x.cubin_size);
    resolve(lib, "nvrtcGetCUBIN", x.cubin);
    resolve(lib, "nvrtcDestroyProgram", x.destroy);
    resolve(lib, "nvrtcGetErrorString", x.error_string);
    resolve(lib, "nvrtcVersion", x.version);
    return x;
  }();
  return a;
}

class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    check(api().create(&p_, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "creating the program for " + name);
  }
  ~Program() { api().destroy(&p_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }
  std::string log() const {
    size_t n = 0;
    if (api().log_size(p_, &n) != 0 || n <= 1) return "";
    std::string s(n, '\0');
    api().log(p_, s.data());
    s.resize(n - 1);
    return s;
  }
  static void check(nvrtcResult r, const std::string& what) {
    if (r != 0) throw Error("NVRTC: " + what + ": " + api().error_string(r));
  }

 private:
  nvrtcProgram p_ = nullptr;
};

}  // namespace

bool nvrtc_available() {
  try {
    api();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  Program::check(api().version(&major, &minor), "reading NVRTC's version");
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtc_options(const std::string& arch) {
  // --fmad=false: a multiply and an add stay two roundings, as the IR says (MULACC is the fused
  // form); weft's kernels write MULACC where they want an FMA.
  return {"--gpu-architecture=" + arch, "-std=c++17", "--fmad=false", "--extra-device-vectorization"};
}

std::vector<uint8_t> nvrtc_compile(const std::string& source, const std::string& kernel_name, const std::string& arch) {
  return nvrtc_compile_with_log(source, kernel_name, arch).cubin;
}

NvrtcOutput nvrtc_compile_with_log(const std::string& source, const std::string& kernel_name, const std::string& arch,
                                   const std::vector<std::string>& extra) {
  Program program(source, kernel_name);
  std::vector<std::string> options = nvrtc_options(arch);
  options.insert(options.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = api().compile(program.get(), static_cast<int>(argv.size()), argv.data());
  if (r != 0)
    throw Error("NVRTC could not compile kernel " + kernel_name + " for " + arch + " (" + api().error_string(r) + "):\n" + program.log());
  size_t n = 0;
  Program::check(api().cubin_size(program.get(), &n), "reading the cubin's size");
  std::vector<uint8_t> cubin(n);
  Program::check(api().cubin(program.get(), reinterpret_cast<char*>(cubin.data())), "reading the cubin");
  return {std::move(cubin), program.log()};
}

}  // namespace weft::rt
