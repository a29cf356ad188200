# The third-party libraries weft links, as imported targets. One file for both users: weft's
# own build includes it, and the installed package config (weftConfig.cmake) includes the
# installed copy, so a consumer of find_package(weft) gets the same dependencies found the same
# way and never names LLVM, lld, zlib or zstd itself.
#
# Inputs: WEFT_LLVM (the LLVM AMDGPU code generator is built / was built).
include_guard(GLOBAL)
find_package(Threads REQUIRED)
find_package(Eigen3 REQUIRED NO_MODULE)

if(WEFT_LLVM)
  # No version in find_package: LLVM's version file only accepts its own major.minor, 22.1.
  find_package(LLVM REQUIRED CONFIG PATHS /usr/lib/llvm-22/lib/cmake/llvm NO_DEFAULT_PATH)
  find_package(ZLIB REQUIRED)
  if(NOT TARGET weft_dep::llvm)
    find_library(WEFT_LLD_ELF_LIB lldELF HINTS ${LLVM_LIBRARY_DIRS} REQUIRED)
    find_library(WEFT_LLD_COMMON_LIB lldCommon HINTS ${LLVM_LIBRARY_DIRS} REQUIRED)
    find_library(WEFT_LIBLLVM NAMES LLVM-22 LLVM HINTS ${LLVM_LIBRARY_DIRS} REQUIRED)
    find_library(WEFT_ZSTD_LIB zstd REQUIRED)
    # lld's ELF linker as a library: two static archives (ELF needs Common) over libLLVM.
    add_library(weft_dep::llvm UNKNOWN IMPORTED)
    set_target_properties(weft_dep::llvm PROPERTIES IMPORTED_LOCATION ${WEFT_LIBLLVM})
    add_library(weft_dep::lld_common UNKNOWN IMPORTED)
    set_target_properties(weft_dep::lld_common PROPERTIES IMPORTED_LOCATION ${WEFT_LLD_COMMON_LIB}
      INTERFACE_LINK_LIBRARIES "weft_dep::llvm;ZLIB::ZLIB;${WEFT_ZSTD_LIB}")
    add_library(weft_dep::lld_elf UNKNOWN IMPORTED)
    set_target_properties(weft_dep::lld_elf PROPERTIES IMPORTED_LOCATION ${WEFT_LLD_ELF_LIB}
      INTERFACE_LINK_LIBRARIES "weft_dep::lld_common;weft_dep::llvm")
  endif()
endif()
