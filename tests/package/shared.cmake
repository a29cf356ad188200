# The package test with shared libraries: weft configured from SOURCE with BUILD_SHARED_LIBS=ON
# and built under WORK (unoptimized, without the test suites and benchmarks: this checks that the
# shared libraries link, install and serve a consumer, not their speed), then consumer.cmake
# against that build. Run by ctest (tests/CMakeLists.txt) with
#   -DSOURCE=<weft source dir> -DWORK=<scratch dir> -DGENERATOR=... -DCXX=...
foreach(var SOURCE WORK GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "shared.cmake: -D${var}=... is required")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/step.cmake)

file(REMOVE_RECURSE ${WORK})
step(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DBUILD_SHARED_LIBS=ON -DWEFT_TESTS=OFF
     -DWEFT_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
step(${CMAKE_COMMAND} --build ${WORK}/build)
foreach(lib dsl/libweft_dsl.so runtime/libweft_runtime.so emulator/libweft_emulator.so)
  if(NOT EXISTS ${WORK}/build/${lib})
    message(FATAL_ERROR "BUILD_SHARED_LIBS=ON built no ${lib}")
  endif()
endforeach()
step(${CMAKE_COMMAND} -DBUILD=${WORK}/build -DSOURCE=${SOURCE} -DWORK=${WORK}/package -DGENERATOR=${GENERATOR} -DCXX=${CXX}
     -P ${CMAKE_CURRENT_LIST_DIR}/consumer.cmake)
file(REMOVE_RECURSE ${WORK})
