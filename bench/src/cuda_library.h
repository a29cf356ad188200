// Loading a CUDA library for a peer with dlopen (cuBLAS, cuBLASLt), so that weft builds and
// runs where it is absent: the first of the sonames that loads, and its functions by name.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

#include "weft/dsl/error.h"

namespace weft::bench {

// `peer` names the peer in errors ("cuBLAS peer"); `base` is the library ("libcublas"), tried
// as .so.13, .so.12, .so and under /usr/local/cuda/lib64.
inline void* open_cuda_library(const std::string& peer, const std::string& base) {
  for (const std::string& n : {base + ".so.13", base + ".so.12", base + ".so", "/usr/local/cuda/lib64/" + base + ".so.13"})
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  throw Error(peer + ": " + base + " not found (tried " + base + ".so.13, .so.12, .so, /usr/local/cuda/lib64)");
}

template <typename F>
void resolve(void* lib, const std::string& peer, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw Error(peer + ": the library has no " + name);
}

}  // namespace weft::bench
