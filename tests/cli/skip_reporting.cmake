# How a test that cannot run is reported: as skipped, with its reason, never as passed.
#   cmake -DKERNELS=<weft_tests_kernels> -DLLVM=ON|OFF -DSUMMARY=<tests/skip_summary.cmake>
#         -DTESTS_DIR=<build dir>/tests -DWORK=<scratch dir> -P skip_reporting.cmake
# 1. A [cuda] case without its device prints the WEFT-SKIPPED marker and records its reason.
# 2. Its [emulator] twin runs (assertions pass, no marker).
# 3. The summary after ctest's run lists the skipped case under its reason.
# 4. Every doctest case is registered with SKIP_REGULAR_EXPRESSION, so ctest counts the marker.
set(case "add one through views: pad\\, flip\\, expand")
# Fails with the output it saw, its markers defused (a marker in this test's output is not a skip).
function(fail text)
  string(REPLACE "WEFT-SKIPPED" "WEFT_SKIPPED(marker)" text "${text}")
  message(FATAL_ERROR "${text}")
endfunction()
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env WEFT_TEST_SKIP_CUDA=1 "WEFT_TEST_SKIP_DIR=${WORK}"
                        "${KERNELS}" "--test-case=${case} [cuda]"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "WEFT-SKIPPED: the NVIDIA runs were turned off")
  fail("the [cuda] case did not report a skip (status ${rc}):\n${out}\n${err}")
endif()
file(GLOB records "${WORK}/*.skip")
list(LENGTH records n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one skip record in ${WORK}, found ${n}")
endif()

if(LLVM)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env WEFT_TEST_SKIP_CUDA=1 "WEFT_TEST_SKIP_DIR=${WORK}"
                          "${KERNELS}" "--test-case=${case} [emulator]"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR out MATCHES "WEFT-SKIPPED" OR NOT out MATCHES "assertions: *[1-9][0-9]* *\\| *[1-9][0-9]* passed")
    fail("the [emulator] case did not run and pass (status ${rc}):\n${out}\n${err}")
  endif()
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" "-DDIR=${WORK}" -P "${SUMMARY}" OUTPUT_VARIABLE out ERROR_VARIABLE summary)
string(APPEND summary "${out}")
if(NOT summary MATCHES "1 test\\(s\\) skipped" OR NOT summary MATCHES "turned off \\(WEFT_TEST_SKIP_CUDA=1\\)"
   OR NOT summary MATCHES "add one through views: pad, flip, expand \\[cuda\\]")
  message(FATAL_ERROR "the skip summary does not list the case and its reason:\n${summary}")
endif()

# The discovered tests' registrations (doctest_discover_tests writes one file per suite); reading
# them, not running ctest, leaves the running ctest's records alone.
file(GLOB registrations "${TESTS_DIR}/*_tests-*.cmake")
set(doctest_cases 0)
foreach(f IN LISTS registrations)
  file(STRINGS "${f}" lines REGEX "^set_tests_properties\\(")
  foreach(line IN LISTS lines)
    math(EXPR doctest_cases "${doctest_cases} + 1")
    if(NOT line MATCHES "SKIP_REGULAR_EXPRESSION WEFT-SKIPPED:")
      message(FATAL_ERROR "a doctest case has no SKIP_REGULAR_EXPRESSION (a skip would count as a pass):\n${line}")
    endif()
  endforeach()
endforeach()
if(doctest_cases EQUAL 0)
  message(FATAL_ERROR "no doctest registrations found in ${TESTS_DIR}")
endif()
file(REMOVE_RECURSE "${WORK}")
message("skip reporting: a skipped [cuda] case is marked, recorded and summarized; its [emulator] twin runs; "
        "${doctest_cases} doctest cases carry SKIP_REGULAR_EXPRESSION")
