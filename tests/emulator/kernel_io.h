// Moving test data in and out of the emulator's global memory.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "weft/dsl/error.h"
#include "weft/emulator/emulator.h"

namespace weft::testing {

template <typename T>
uint64_t upload(emu::GlobalMemory& mem, const std::vector<T>& v, const char* name) {
  const uint64_t a = mem.allocate(v.size() * sizeof(T), name);
  std::memcpy(mem.data(a), v.data(), v.size() * sizeof(T));
  return a;
}

template <typename T>
std::vector<T> download(emu::GlobalMemory& mem, uint64_t address, size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), mem.data(address), n * sizeof(T));
  return v;
}

// The message of the weft::Error `f` throws, or "" when it throws none.
inline std::string error_of(auto&& f) {
  try {
    f();
  } catch (const weft::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace weft::testing
