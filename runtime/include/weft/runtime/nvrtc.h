// NVRTC, loaded with dlopen (libnvrtc.so.13, .12 or unversioned): CUDA C++ source to a cubin
// for one architecture, in this process. Needs no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt {

// `arch`: "sm_90", "sm_80", ... Throws weft::Error with NVRTC's log (and the kernel's name) when
// the source does not compile, or saying that NVRTC is not installed.
std::vector<uint8_t> nvrtc_compile(const std::string& source, const std::string& kernel_name, const std::string& arch);
// The same with `extra` options after nvrtc_options(arch), and NVRTC's log of a successful compile
// (its warnings; with "--ptxas-options=-v", ptxas's notes, such as C7508 for a setmaxnreg it drops).
struct NvrtcOutput {
  std::vector<uint8_t> cubin;
  std::string log;
};
NvrtcOutput nvrtc_compile_with_log(const std::string& source, const std::string& kernel_name, const std::string& arch,
                                   const std::vector<std::string>& extra = {});

// Whether libnvrtc can be loaded here.
bool nvrtc_available();

// "NVRTC 12.8": the version of the NVRTC loaded here (nvrtcVersion). Throws weft::Error where
// NVRTC is not installed.
std::string nvrtc_version();

// The options nvrtc_compile passes for `arch` (part of the compile cache's key).
std::vector<std::string> nvrtc_options(const std::string& arch);

}  // namespace weft::rt
