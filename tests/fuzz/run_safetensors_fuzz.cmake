# The CTest driver of the safetensors fuzz target (test fuzz.safetensors in tests/CMakeLists.txt):
# configures and builds tests/fuzz with clang++ (two sources and the fuzzer), writes the seed
# corpus with SEEDS_PROGRAM (the main build's safetensors_fuzz_seeds), and fuzzes for a bounded
# time. A crash, a sanitizer report or a leak
# fails the test and leaves the input under BUILD_DIR/artifacts/. Without clang++ it prints
# "SKIPPED: ...", which CTest reports as a skipped test.
#
#   cmake -DSOURCE_DIR=<minidl source> -DBUILD_DIR=<dir> -DCLANGXX=<clang++> -DGENERATOR=Ninja
#         -DSEEDS_PROGRAM=<safetensors_fuzz_seeds> [-DMAKE_PROGRAM=<ninja>] [-DSECONDS=60]
#         [-DJOBS=<build jobs>]
#         -P tests/fuzz/run_safetensors_fuzz.cmake
#
# The environment variables MINIDL_FUZZ_SECONDS and MINIDL_FUZZ_JOBS override SECONDS and JOBS.
foreach(var SOURCE_DIR BUILD_DIR GENERATOR SEEDS_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_safetensors_fuzz.cmake: -D${var}=... is missing")
  endif()
endforeach()
if(NOT CLANGXX OR NOT EXISTS "${CLANGXX}")
  message("SKIPPED: clang++ was not found; libFuzzer needs it")
  return()
endif()
if(DEFINED ENV{MINIDL_FUZZ_SECONDS})
  set(SECONDS $ENV{MINIDL_FUZZ_SECONDS})
elseif(NOT DEFINED SECONDS)
  set(SECONDS 60)
endif()
if(DEFINED ENV{MINIDL_FUZZ_JOBS})
  set(JOBS $ENV{MINIDL_FUZZ_JOBS})
elseif(NOT DEFINED JOBS)
  cmake_host_system_information(RESULT JOBS QUERY NUMBER_OF_LOGICAL_CORES)
endif()

function(run_step what)
  message(STATUS "${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(configure_args -S "${SOURCE_DIR}/tests/fuzz" -B "${BUILD_DIR}" -G "${GENERATOR}"
                   "-DCMAKE_CXX_COMPILER=${CLANGXX}")
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configure ${BUILD_DIR} with ${CLANGXX}" "${CMAKE_COMMAND}" ${configure_args})
run_step("build the fuzzer (${JOBS} jobs)" "${CMAKE_COMMAND}" --build "${BUILD_DIR}" -j ${JOBS}
         --target safetensors_fuzzer)
run_step("write the seed corpus" "${SEEDS_PROGRAM}" "${BUILD_DIR}/seeds")

file(MAKE_DIRECTORY "${BUILD_DIR}/corpus" "${BUILD_DIR}/artifacts")
message(STATUS "fuzz read_safetensors for ${SECONDS} s")
# New inputs go to corpus/ (kept between runs, so coverage grows); seeds/ is read only.
execute_process(
  COMMAND "${BUILD_DIR}/safetensors_fuzzer" -max_total_time=${SECONDS} -timeout=10
          -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
          "-dict=${SOURCE_DIR}/tests/fuzz/safetensors.dict"
          "-artifact_prefix=${BUILD_DIR}/artifacts/" "${BUILD_DIR}/corpus" "${BUILD_DIR}/seeds"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a problem (exit ${status}); the input is in "
                      "${BUILD_DIR}/artifacts/:\n${out}")
endif()
# The final statistics (runs, coverage), for the log.
string(REGEX MATCH "Done [0-9]+ runs[^\n]*" done_line "${out}")
string(REGEX MATCHALL "stat::[a-z_]+: +[0-9]+" stats "${out}")
string(REPLACE ";" "\n" stats "${stats}")
message("${done_line}\n${stats}")
