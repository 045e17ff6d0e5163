# Runs lucidq once and checks its exit status, stdout and stderr (a ctest helper).
#
# cmake -DLUCIDQ=<exe> -DARGS=<list> -DEXIT=0|nonzero [-DSTDOUT=<regex list>]
#       [-DSTDERR=<regex list>] [-DNOT_STDOUT=<regex list>] -P check_cli.cmake
# Every regex of STDOUT (STDERR) must match stdout (stderr), none of NOT_STDOUT
# may match stdout; "." matches newlines.
cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND "${LUCIDQ}" ${ARGS}
                RESULT_VARIABLE status
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err)

set(failures "")
if(EXIT STREQUAL "0")
  if(NOT status STREQUAL "0")
    list(APPEND failures "exit status ${status} (expected 0)")
  endif()
elseif(EXIT STREQUAL "nonzero")
  if(status STREQUAL "0")
    list(APPEND failures "exit status 0 (expected non-zero)")
  endif()
else()
  message(FATAL_ERROR "check_cli.cmake: EXIT = '${EXIT}' (expected 0 or nonzero)")
endif()
foreach(regex IN LISTS STDOUT)
  if(NOT out MATCHES "${regex}")
    list(APPEND failures "stdout does not match '${regex}'")
  endif()
endforeach()
foreach(regex IN LISTS NOT_STDOUT)
  if(out MATCHES "${regex}")
    list(APPEND failures "stdout matches '${regex}' (it should not)")
  endif()
endforeach()
foreach(regex IN LISTS STDERR)
  if(NOT err MATCHES "${regex}")
    list(APPEND failures "stderr does not match '${regex}'")
  endif()
endforeach()

if(failures)
  list(JOIN ARGS " " shown)
  list(JOIN failures "\n  " reasons)
  message(FATAL_ERROR "lucidq ${shown}:\n  ${reasons}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
endif()
