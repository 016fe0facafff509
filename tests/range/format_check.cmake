# Run by ctest (range.cmake): a format string that does not fit its arguments must be a compile
# error in NSIGHTKIT_RANGE and NSIGHTKIT_MODULE (C++17 included), header-only and in the compiled
# mode, and the matching one must compile. -DCXX= -DSTD= -DINCLUDES= (;-list) -DDEFINES= (;-list)
# -DDIR= (scratch directory).
cmake_minimum_required(VERSION 3.20)
foreach(v CXX STD DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "format_check.cmake: -D${v}= is required")
  endif()
endforeach()
file(MAKE_DIRECTORY "${DIR}")
set(flags -std=c++${STD} -fsyntax-only)
foreach(i IN LISTS INCLUDES)
  list(APPEND flags "-I${i}")
endforeach()
foreach(d IN LISTS DEFINES)
  list(APPEND flags "-D${d}")
endforeach()

set(source_good [=[#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
void f(int i, double d) {
  NSIGHTKIT_RANGE("step {}", i);
  NSIGHTKIT_MODULE("layer{}:{:.1f}", i, d);
}
]=])
set(source_bad_range [=[#include <nsightkit/range.hpp>
void f(int i) { NSIGHTKIT_RANGE("step {:s}", i); }
]=])
set(source_bad_module [=[#include <nsightkit/module.hpp>
void f(int i) { NSIGHTKIT_MODULE("layer{} {}", i); }
]=])

set(failures 0)
foreach(mode header-only compiled)
  set(mode_flags ${flags})
  if(mode STREQUAL "compiled")
    list(APPEND mode_flags -DNSIGHTKIT_COMPILED)
  endif()
  foreach(case good bad_range bad_module)
    set(src "${DIR}/${mode}_${case}.cpp")
    file(WRITE "${src}" "${source_${case}}")
    execute_process(COMMAND ${CXX} ${mode_flags} "${src}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE out)
    if(case STREQUAL "good" AND NOT rc EQUAL 0)
      message(SEND_ERROR "${mode}: matching format strings did not compile:\n${out}")
      math(EXPR failures "${failures} + 1")
    elseif(NOT case STREQUAL "good")
      if(rc EQUAL 0)
        message(SEND_ERROR "${mode}: ${case} compiled; a format string that does not fit its "
                           "arguments must be a compile error")
        math(EXPR failures "${failures} + 1")
      elseif(NOT out MATCHES "format")
        message(SEND_ERROR "${mode}: ${case} failed, but not for its format string:\n${out}")
        math(EXPR failures "${failures} + 1")
      else()
        message(STATUS "${mode}: ${case} is a compile error, as it must be")
      endif()
    endif()
  endforeach()
endforeach()
if(failures EQUAL 0)
  message(STATUS "format strings are checked at compile time in both modes")
endif()
