# Checks that README.md contains each file of EXAMPLES verbatim inside a fenced code block.
file(READ "${README}" readme)
foreach(example IN LISTS EXAMPLES)
  file(READ "${example}" text)
  string(FIND "${readme}" "\n${text}```" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not show ${example} verbatim in a code block; "
                        "paste the file's current text into the README's example block")
  endif()
endforeach()
message(STATUS "README examples in sync: ${EXAMPLES}")
