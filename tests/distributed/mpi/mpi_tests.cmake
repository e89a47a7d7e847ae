# Data-parallel tests under mpirun (label mpi), included from tests/CMakeLists.txt. Built when
# minidl found MPI and mpirun is there.
#   mpi.collectives_and_ddp_np2, _np4: minidl_distributed_mpi_tests (GoogleTest; every rank runs
#     every test) under `mpirun --oversubscribe -np 2` and `-np 4`; it also holds the tests of
#     the MPI files' plain logic (diagnosis_mpi.cpp), which a build without MPI does not have;
#   mpi.fault_<case>_np<N>: run_fault_case.sh with fault_program (a rank that exits 0, exits 1,
#     aborts, is killed by SIGKILL or SIGTERM, or skips a collective).
# mpirun refuses to run as root unless told: the tests set OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
if(NOT MINIDL_WITH_MPI OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "minidl: MPI or mpirun not found, the mpi tests are not built")
  return()
endif()

set(mpi_test_dir ${CMAKE_CURRENT_SOURCE_DIR}/distributed/mpi)
set(mpi_test_environment
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # No InfiniBand/network probing on CI machines: shared memory and TCP loopback only.
    OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none)

add_executable(minidl_distributed_mpi_tests
  ${mpi_test_dir}/main_mpi.cpp ${mpi_test_dir}/collectives_mpi.cpp ${mpi_test_dir}/ddp_mpi.cpp
  ${mpi_test_dir}/diagnosis_mpi.cpp ${CMAKE_CURRENT_SOURCE_DIR}/train/trainer_accumulation_mpi.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/train/trainer_next_token_mpi.cpp)
target_link_libraries(minidl_distributed_mpi_tests PRIVATE minidl::minidl GTest::gtest)
target_include_directories(minidl_distributed_mpi_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(np 2 4)
  add_test(NAME mpi.collectives_and_ddp_np${np}
           COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np ${np}
                   $<TARGET_FILE:minidl_distributed_mpi_tests>)
  # A hang would show as a timeout error after 60 s, not as a stuck test. The test's own time
  # is ~10 s in Release; under ThreadSanitizer (tools/test.sh, Debug) the 2-rank run took 224 s on
  # a loaded 2-core machine, hence the room.
  set_tests_properties(mpi.collectives_and_ddp_np${np} PROPERTIES LABELS mpi TIMEOUT 600
                       ENVIRONMENT "${mpi_test_environment};MINIDL_COLLECTIVE_TIMEOUT_S=60")
endforeach()

add_executable(minidl_mpi_fault_program ${mpi_test_dir}/fault_program.cpp)
target_link_libraries(minidl_mpi_fault_program PRIVATE minidl::minidl)
foreach(case_np exit0:2 exit1:2 abort:2 sigkill:2 sigterm:2 desync:2 sigkill:4 exit1:4 desync:4)
  string(REPLACE ":" ";" case_np ${case_np})
  list(GET case_np 0 fault)
  list(GET case_np 1 np)
  add_test(NAME mpi.fault_${fault}_np${np}
           COMMAND bash ${mpi_test_dir}/run_fault_case.sh ${MPIEXEC_EXECUTABLE}
                   $<TARGET_FILE:minidl_mpi_fault_program> ${fault} ${np})
  set_tests_properties(mpi.fault_${fault}_np${np} PROPERTIES LABELS mpi TIMEOUT 120
                       ENVIRONMENT "${mpi_test_environment}")
endforeach()

# ZeRO-1 (distributed/zero_redundancy_optimizer.h) against DDP, and in the Trainer, in a program of
# its own.
add_executable(minidl_zero_mpi_tests ${mpi_test_dir}/main_mpi.cpp ${mpi_test_dir}/zero_mpi.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/train/trainer_zero_mpi.cpp)
target_link_libraries(minidl_zero_mpi_tests PRIVATE minidl::minidl GTest::gtest)
target_include_directories(minidl_zero_mpi_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(np 2 4)
  add_test(NAME mpi.zero_np${np}
           COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np ${np}
                   $<TARGET_FILE:minidl_zero_mpi_tests>)
  set_tests_properties(mpi.zero_np${np} PROPERTIES LABELS mpi TIMEOUT 600
                       ENVIRONMENT "${mpi_test_environment};MINIDL_COLLECTIVE_TIMEOUT_S=60")
endforeach()
