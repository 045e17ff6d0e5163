# Proves that code compiled with ISA flags is reached only through its kernels: no ISA object of lucidq
# defines a weak (mergeable) symbol, a global function outside the kernel naming scheme, or a static
# initializer. A weak symbol of an ISA object is the copy the linker may keep for every caller, so
# baseline code would run AVX2 / AVX-512 instructions (see lucidq_isolate_isa_sources in
# src/kernels/kernels.cmake, which compiles ISA files with -fno-weak).
#
# cmake -DNM=nm -DCXXFILT=c++filt -DOBJECTS=objects.txt -DISA_SOURCES="kernels/avx2/x.cpp;..."
#       -DOBJECT_EXTENSION=.o -P check_isa_symbols.cmake
# OBJECTS lists lucidq's object files, one a line; ISA_SOURCES are the ISA-flagged sources
# (relative to src/), whose objects end in /<source><OBJECT_EXTENSION>. CXXFILT may be empty.
# Data symbols are not checked: they hold no instructions (under -fno-weak the standard library's
# empty function objects, e.g. std::ranges::lexicographical_compare, become common symbols).

file(STRINGS "${OBJECTS}" objects)
if(NOT ISA_SOURCES)
  message(STATUS "isa_symbols: this target has no ISA-flagged sources: nothing to check")
  return()
endif()

# The ISA objects, and every other object of the library (what a weak copy would be merged with).
set(isa_objects "")
set(other_objects "")
set(unmatched_sources ${ISA_SOURCES})
foreach(object IN LISTS objects)
  set(matched "")
  foreach(source IN LISTS ISA_SOURCES)
    set(suffix "/${source}${OBJECT_EXTENSION}")
    string(LENGTH "${object}" object_length)
    string(LENGTH "${suffix}" suffix_length)
    if(object_length GREATER suffix_length)
      math(EXPR start "${object_length} - ${suffix_length}")
      string(SUBSTRING "${object}" ${start} -1 tail)
      if(tail STREQUAL suffix)
        set(matched "${source}")
      endif()
    endif()
  endforeach()
  if(matched)
    list(APPEND isa_objects "${object}")
    list(REMOVE_ITEM unmatched_sources "${matched}")
  else()
    list(APPEND other_objects "${object}")
  endif()
endforeach()
if(unmatched_sources)
  message(FATAL_ERROR "isa_symbols: no object file found for ISA sources: ${unmatched_sources}")
endif()

# defined_symbols(OBJECT OUT): `nm --defined-only` lines of OBJECT (mangled names: no list-breaking
# characters), as "TYPE NAME" items.
function(defined_symbols object out)
  execute_process(COMMAND ${NM} --defined-only "${object}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "isa_symbols: ${NM} failed on ${object}: ${err}")
  endif()
  string(REGEX REPLACE "(^|\n)[0-9a-fA-F]+ " "\\1" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# load_other_objects(): the raw `nm --defined-only` text of every other object ("ADDRESS TYPE NAME"
# lines) in other_text_<index>, read at the first weak symbol to name the objects it would merge with.
macro(load_other_objects)
  if(NOT other_objects_loaded)
    set(other_index 0)
    foreach(other IN LISTS other_objects)
      execute_process(COMMAND ${NM} --defined-only "${other}" OUTPUT_VARIABLE other_text_${other_index})
      math(EXPR other_index "${other_index} + 1")
    endforeach()
    set(other_objects_loaded TRUE)
  endif()
endmacro()

set(problems "")
set(names "")
foreach(object IN LISTS isa_objects)
  defined_symbols("${object}" lines)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^([A-Za-z]) (.+)$")
      continue()
    endif()
    set(type "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    if(type MATCHES "^[WwVvu]$")
      # The compiler's pointer to the C++ personality routine holds no code of the object's ISA.
      if(name STREQUAL "DW.ref.__gxx_personality_v0")
        continue()
      endif()
      load_other_objects()
      set(also "")
      set(other_index 0)
      foreach(other IN LISTS other_objects)
        foreach(other_type W V u T)
          string(FIND "${other_text_${other_index}}" " ${other_type} ${name}\n" position)
          if(position GREATER -1)
            string(REGEX REPLACE "^.*/CMakeFiles/[^/]+\\.dir/(\\./)?" "" other_name "${other}")
            string(APPEND also " ${other_name}")
            break()
          endif()
        endforeach()
        math(EXPR other_index "${other_index} + 1")
      endforeach()
      if(also)
        set(also " (also defined in:${also})")
      endif()
      list(APPEND problems "weak symbol ${name} in ${object}${also}")
      list(APPEND names "${name}")
    elseif(type STREQUAL "T")
      # Global functions of an ISA file are its kernels: <op>...__<variant> or in a per-ISA namespace.
      if(NOT name MATCHES "__avx|[0-9]avx2[0-9]|[0-9]avx512[0-9]")
        list(APPEND problems "global function ${name} in ${object} is not named for its ISA")
        list(APPEND names "${name}")
      endif()
    elseif(name MATCHES "^_GLOBAL__sub_I_")
      list(APPEND problems "static initializer ${name} in ${object} runs its ISA's code at load time")
    endif()
  endforeach()
endforeach()

list(LENGTH isa_objects isa_count)
list(LENGTH other_objects other_count)
if(problems)
  list(LENGTH problems problem_count)
  set(report "")
  foreach(problem IN LISTS problems)
    string(APPEND report "  ${problem}\n")
  endforeach()
  if(CXXFILT AND names)
    list(REMOVE_DUPLICATES names)
    execute_process(COMMAND ${CXXFILT} ${names} OUTPUT_VARIABLE demangled)
    string(APPEND report "demangled:\n${demangled}")
  endif()
  message(FATAL_ERROR "isa_symbols: ${problem_count} problems in ${isa_count} ISA objects "
                      "(checked against ${other_count} other objects):\n${report}")
endif()
message(STATUS "isa_symbols: ${isa_count} ISA objects define no weak symbol, no global function "
               "outside the kernel names and no static initializer (${other_count} other objects)")
