# The installed package: `cmake --install` puts weft's headers, libraries, the `weft` and
# `weft-emu` tools and a package config under the prefix, and a consumer writes
#
#   find_package(weft CONFIG REQUIRED)                  # or COMPONENTS dsl runtime emulator ...
#   target_link_libraries(app PRIVATE weft::weft)
#
# The config finds weft's own dependencies (cmake/weft-dependencies.cmake, installed beside it).
# examples/consumer is such a project; tests/package/consumer.cmake builds it against an install.
include(CMakePackageConfigHelpers)

# Every part under its short name in the weft:: namespace, in the build tree too (so a project
# that adds weft with add_subdirectory writes the same names).
set(_weft_parts dsl lowering emulator runtime kernels gemm attention moe bench version)
if(WEFT_LLVM)
  list(APPEND _weft_parts amdgpu)
endif()
foreach(part IN LISTS _weft_parts)
  set_target_properties(weft_${part} PROPERTIES EXPORT_NAME ${part})
  add_library(weft::${part} ALIAS weft_${part})
endforeach()

# weft::weft: all of it (the runtime with every device and backend built, the tile layer, the
# GEMM, attention and MoE kernels).
add_library(weft_all INTERFACE)
set_target_properties(weft_all PROPERTIES EXPORT_NAME weft)
target_link_libraries(weft_all INTERFACE weft_bench weft_gemm weft_attention weft_moe weft_kernels weft_runtime weft_emulator weft_lowering weft_dsl)
if(WEFT_LLVM)
  target_link_libraries(weft_all INTERFACE weft_amdgpu)
endif()
add_library(weft::weft ALIAS weft_all)

list(TRANSFORM _weft_parts PREPEND weft_ OUTPUT_VARIABLE _weft_targets)
install(TARGETS ${_weft_targets} weft_all EXPORT weftTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(part dsl lowering emulator runtime kernels gemm attention moe bench)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${part}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/generated/include/weft/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weft)

set(_weft_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${_weft_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in ${PROJECT_BINARY_DIR}/generated/weftConfig.cmake
  INSTALL_DESTINATION ${_weft_cmake_dir})
# 0.x: a minor version may change the API, so a consumer asking for 0.1 gets 0.1.*.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/generated/weftConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/generated/weftConfig.cmake ${PROJECT_BINARY_DIR}/generated/weftConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/weft-dependencies.cmake DESTINATION ${_weft_cmake_dir})
