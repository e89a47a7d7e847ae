# Configures the reader fuzzers (tests/fuzz/data_readers) with clang++ into BUILD_DIR, builds
# them, and runs each fuzzer for SECONDS through its CTest. The main build registers this
# script as the CTest fuzz.data_readers (tools/CMakeLists.txt), so `ctest` in build/ fuzzes the
# readers too.
#
#   cmake -DBUILD_DIR=... -DCXX_COMPILER=clang++ -DSECONDS=20 [-DGENERATOR=Ninja] [-DJOBS=2]
#         -P run_fuzzers.cmake
foreach(var BUILD_DIR CXX_COMPILER SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzers.cmake: -D${var}=... is missing")
  endif()
endforeach()
if(NOT DEFINED GENERATOR)
  set(GENERATOR Ninja)
endif()

function(run_step what)
  message(STATUS "${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status})")
  endif()
endfunction()

run_step("configure the fuzzers" "${CMAKE_COMMAND}" -S "${CMAKE_CURRENT_LIST_DIR}"
         -B "${BUILD_DIR}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
         "-DMINIDL_FUZZ_SECONDS=${SECONDS}")
set(parallel)
if(DEFINED JOBS)
  set(parallel --parallel ${JOBS})
endif()
run_step("build the fuzzers" "${CMAKE_COMMAND}" --build "${BUILD_DIR}" ${parallel})
run_step("run the fuzzers for ${SECONDS} s each" "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD_DIR}"
         --output-on-failure --no-tests=error)
