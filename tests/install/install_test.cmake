# Builds and runs the small consumer project in consumer/ against minidl, the way a user would:
#
#   MODE=package       installs the build tree into a fresh prefix (cmake --install), then the
#                      consumer does find_package(minidl REQUIRED) from that prefix.
#   MODE=subdirectory  the consumer does add_subdirectory(<minidl source>), with MINIDL_CUDA as
#                      in the build under test (so ccache can serve its compilations).
#
# Run by CTest (tests/CMakeLists.txt), as
#   cmake -DMODE=... -DMINIDL_SOURCE_DIR=... -DMINIDL_BUILD_DIR=... -DWORK_DIR=...
#         -DGENERATOR=... -DMAKE_PROGRAM=... -DCXX_COMPILER=... -DBUILD_TYPE=... -DMINIDL_CUDA=...
#         -P install_test.cmake
foreach(var MODE MINIDL_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TYPE MINIDL_CUDA)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is missing")
  endif()
endforeach()

function(run_step what)
  message(STATUS "${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(consumer_build "${WORK_DIR}/consumer-build")
set(configure_args
  -S "${CMAKE_CURRENT_LIST_DIR}/consumer" -B "${consumer_build}" -G "${GENERATOR}"
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()

if(MODE STREQUAL "package")
  set(prefix "${WORK_DIR}/prefix")
  run_step("install" "${CMAKE_COMMAND}" --install "${MINIDL_BUILD_DIR}" --prefix "${prefix}"
           --config "${BUILD_TYPE}")
  foreach(installed include/minidl/minidl.h include/minidl/core/tensor.h
                    include/minidl/core/logging.h include/minidl/ops/elementwise.h)
    if(NOT EXISTS "${prefix}/${installed}")
      message(FATAL_ERROR "cmake --install did not install ${installed}")
    endif()
  endforeach()
  # Only the fresh prefix may satisfy find_package: no package registry, no system minidl.
  run_step("configure consumer" "${CMAKE_COMMAND}" ${configure_args}
           -DMINIDL_CONSUMER_MODE=package "-DCMAKE_PREFIX_PATH=${prefix}"
           -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  string(REGEX MATCH "minidl_DIR=([^\n]*)" _ "${step_output}")
  if(NOT CMAKE_MATCH_1 MATCHES "^${prefix}/")
    message(FATAL_ERROR "the consumer found minidl at '${CMAKE_MATCH_1}', not in ${prefix}:\n"
                        "${step_output}")
  endif()
elseif(MODE STREQUAL "subdirectory")
  run_step("configure consumer" "${CMAKE_COMMAND}" ${configure_args}
           -DMINIDL_CONSUMER_MODE=subdirectory "-DMINIDL_SOURCE_DIR=${MINIDL_SOURCE_DIR}"
           -DMINIDL_CUDA=${MINIDL_CUDA})
else()
  message(FATAL_ERROR "install_test.cmake: MODE must be package or subdirectory, got '${MODE}'")
endif()

run_step("build consumer" "${CMAKE_COMMAND}" --build "${consumer_build}")
run_step("run consumer" "${consumer_build}/minidl_consumer")
message("${step_output}")
# x = arange(6).view({2, 3}); the consumer prints x^T (a view made contiguous) and x @ x^T.
# (One check per regex: a CMake list would split wrongly at the regexes' square brackets.)
function(expect_output regex)
  if(NOT step_output MATCHES "${regex}")
    message(FATAL_ERROR "the consumer's output does not match '${regex}'")
  endif()
endfunction()
expect_output("xt = tensor\\(\\[\\[0\\.0000, 3\\.0000\\],")
expect_output("x @ xt = tensor\\(\\[\\[5\\.0000, 14\\.0000\\],|matmul: not implemented yet")
expect_output("consumer ok")
