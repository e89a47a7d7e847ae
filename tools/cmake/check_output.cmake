# Runs a program for a CTest test and passes only when it exits with 0 and its standard output
# is as expected. (CTest's own PASS_REGULAR_EXPRESSION ignores the exit code, so a program that
# printed the right line and then crashed would pass; this checks both.)
#
#   cmake -DCOMMAND=<program> [-DEXPECT_FILE=<file>] [-DEXPECT_REGEX=<regex>] -P check_output.cmake
#
# EXPECT_FILE: stdout must equal the file's text (trailing whitespace ignored).
# EXPECT_REGEX: stdout must match the regular expression.
if(NOT COMMAND)
  message(FATAL_ERROR "check_output.cmake: pass -DCOMMAND=<program>")
endif()
execute_process(COMMAND ${COMMAND} OUTPUT_VARIABLE out RESULT_VARIABLE status)
message("---- stdout of ${COMMAND} ----\n${out}----")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${COMMAND} exited with ${status}")
endif()
if(EXPECT_FILE)
  file(READ "${EXPECT_FILE}" expected)
  string(STRIP "${expected}" expected)
  string(STRIP "${out}" actual)
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "stdout differs from ${EXPECT_FILE}; expected:\n${expected}")
  endif()
endif()
if(DEFINED EXPECT_REGEX AND NOT out MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "stdout does not match the regular expression: ${EXPECT_REGEX}")
endif()
