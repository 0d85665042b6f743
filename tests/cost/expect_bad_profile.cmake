# Runs `gcsim profile show PROFILE` and requires exit status 2 with exactly one
# line on stderr of the form "FILE: /json/path: message", where the expected
# path is the file's "expect_path" field... kept in the file name's companion:
# PROFILE.expect holds the JSON path the message must name.
execute_process(COMMAND ${GCSIM} profile show ${PROFILE}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 2)
  message(FATAL_ERROR "expected exit status 2, got ${status}\nstdout: ${out}\nstderr: ${err}")
endif()
string(STRIP "${err}" err)
if(err MATCHES "\n")
  message(FATAL_ERROR "expected one line on stderr, got:\n${err}")
endif()
file(READ ${PROFILE}.expect expected)
string(STRIP "${expected}" expected)
if(NOT err MATCHES "^[^ ]*${expected}")
  message(FATAL_ERROR "expected stderr to start with FILE: ${expected}, got:\n${err}")
endif()
message(STATUS "ok: ${err}")
