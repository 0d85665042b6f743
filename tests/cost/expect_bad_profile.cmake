# Runs `gcsim profile show PROFILE` (or, with -DREFIT_OUT=FILE, `gcsim profile
# refit PROFILE --out FILE`) and requires exit status 2 with exactly one line on
# stderr of the form "FILE: /json/path: message". Its start (file name, path,
# message) is -DEXPECT or, for a bad profile of tests/cost/data, its companion
# PROFILE.expect.
if(DEFINED REFIT_OUT)
  set(command ${GCSIM} profile refit ${PROFILE} --out ${REFIT_OUT})
else()
  set(command ${GCSIM} profile show ${PROFILE})
endif()
execute_process(COMMAND ${command}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 2)
  message(FATAL_ERROR "expected exit status 2, got ${status}\nstdout: ${out}\nstderr: ${err}")
endif()
string(STRIP "${err}" err)
if(err MATCHES "\n")
  message(FATAL_ERROR "expected one line on stderr, got:\n${err}")
endif()
if(DEFINED EXPECT)
  set(expected "${EXPECT}")
else()
  file(READ ${PROFILE}.expect expected)
  string(STRIP "${expected}" expected)
endif()
if(NOT err MATCHES "^[^ ]*${expected}")
  message(FATAL_ERROR "expected stderr to start with FILE: ${expected}, got:\n${err}")
endif()
message(STATUS "ok: ${err}")
