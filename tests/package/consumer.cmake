# The package test: install this build under WORK/install, build examples/consumer out of tree
# against it (find_package(weft) and weft::weft, nothing else), run its kernel on emu:gfx950,
# and run the installed tools. Run by ctest (tests/CMakeLists.txt) with
#   -DBUILD=<weft build dir> -DSOURCE=<weft source dir> -DWORK=<scratch dir> -DGENERATOR=... -DCXX=...
foreach(var BUILD SOURCE WORK GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/step.cmake)

file(REMOVE_RECURSE ${WORK})
step(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/install)
foreach(file bin/weft bin/weft-emu include/weft/version.h include/weft/dsl/builder.h lib/cmake/weft/weftConfig.cmake
             lib/cmake/weft/weftConfigVersion.cmake lib/cmake/weft/weft-dependencies.cmake)
  if(NOT EXISTS ${WORK}/install/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
step(${WORK}/install/bin/weft version)

step(${CMAKE_COMMAND} -S ${SOURCE}/examples/consumer -B ${WORK}/build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK}/install)
step(${CMAKE_COMMAND} --build ${WORK}/build)
set(ENV{WEFT_CACHE_DIR} ${WORK}/cache)
step(${WORK}/build/scaled_sum emu:gfx950)

# A component the build does not have is a clear configure error, not a link error later.
file(WRITE ${WORK}/missing/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)\nproject(m LANGUAGES CXX)\nfind_package(weft CONFIG REQUIRED COMPONENTS no_such_part)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/missing -B ${WORK}/missing/build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
                -DCMAKE_PREFIX_PATH=${WORK}/install RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "no_such_part")
  message(FATAL_ERROR "find_package(weft COMPONENTS no_such_part) should fail naming the component:\n${out}${err}")
endif()
file(REMOVE_RECURSE ${WORK})
