# cmake -DTOOL=<program> -DNAME=<name> -DVERSION=<version> -DOUT=<file.1.gz> -P KairosManPage.cmake
# A section-1 man page made from the program's own --help, so it can never disagree with it:
# NAME from the first line of the help ("<name>: <summary>", up to a further ": "), DESCRIPTION the whole help text
# as printed (no-fill, roff's special characters escaped), then compressed with gzip -9n as
# Debian wants (no name or time stamp in the .gz: the same help gives the same bytes).
foreach(v TOOL NAME VERSION OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "KairosManPage.cmake: -D${v}=... is required")
  endif()
endforeach()
execute_process(COMMAND ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "${TOOL} --help failed (${rc}): ${err}")
endif()
# The usage line names the program by the path it was run from: name it as installed.
string(REPLACE "${TOOL}" "${NAME}" help "${help}")
string(REGEX MATCH "^[^\n]*" first_line "${help}")
string(REGEX REPLACE "^${NAME}: *" "" summary "${first_line}")
string(REGEX REPLACE ": .*$" "" summary "${summary}")   # "judges latency reports: <inputs>"
string(REGEX REPLACE "[,;: ]+$" "" summary "${summary}")
if(summary STREQUAL first_line OR summary STREQUAL "")
  set(summary "a kairos tool")
endif()
# roff: a backslash is \e, a minus sign \-; a line starting with . or ' would be a request:
# \& before it.
string(REPLACE "\\" "\\e" body "${help}")
string(REPLACE "-" "\\-" body "${body}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" body "${body}")
string(REPLACE "-" "\\-" summary_roff "${summary}")
string(TOUPPER "${NAME}" upper)
file(WRITE ${OUT}.tmp
".TH ${upper} 1 \"\" \"kairos ${VERSION}\" \"User Commands\"
.SH NAME
${NAME} \\- ${summary_roff}
.SH SYNOPSIS
.B ${NAME}
[\\fIOPTIONS\\fR]
.SH DESCRIPTION
The text of
.BR \"${NAME} --help\" :
.PP
.nf
${body}
.fi
.SH SEE ALSO
The kairos documentation: docs/latency-tools.md and tools/lat/README.md in the kairos sources.
")
find_program(GZIP gzip REQUIRED)
execute_process(COMMAND ${GZIP} -9nc ${OUT}.tmp OUTPUT_FILE ${OUT} COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE ${OUT}.tmp)
