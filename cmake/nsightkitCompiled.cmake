# The optional component nsightkit::compiled, nsightkit's compiled mode (docs/compile-cost.md): a
# static library built from src/nsightkit.cpp and src/nsightkit_cuda.cpp. It holds the report
# engine, the emit engine (NVTX), the formatting of range and module names and the pinned pool's
# members, and defines NSIGHTKIT_COMPILED for everything that links it, whose translation units
# then only declare those parts: a translation unit that includes <nsightkit/nsightkit.hpp>
# compiles in a fraction of the header-only time and memory.
# Included by nsightkitDependencies.cmake, so the build tree, add_subdirectory and the installed
# package (find_package(nsightkit COMPONENTS compiled)) define it the same way. The library is
# compiled in the project that asks for it, with that project's compiler and flags: the installed
# package carries the two sources (in src/ beside this file), not a binary.
#
# nsightkit_add_compiled_component([GLOBAL])
# Defines nsightkit::compiled (an ALIAS of nsightkit_compiled) when both sources are found, and
# sets NSIGHTKIT_COMPILED_FOUND and NSIGHTKIT_COMPILED_REASON (why not) in the caller's scope.
# Never stops the configure. GLOBAL is accepted as the other components take it; a library target
# is seen from every directory anyway.
include_guard(GLOBAL)

function(nsightkit_add_compiled_component)
  set(NSIGHTKIT_COMPILED_FOUND FALSE PARENT_SCOPE)
  # Defined once per project: a second find_package, or one in a sibling directory, reuses it.
  if(TARGET nsightkit_compiled)
    set(NSIGHTKIT_COMPILED_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  # The installed package has nsightkit-config.cmake beside this file and the sources in src/;
  # the source tree has them in ../src. A package manager may ship the headers alone.
  set(here "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  if(EXISTS "${here}/nsightkit-config.cmake")
    set(src_dir "${here}/src")
  else()
    get_filename_component(src_dir "${here}/../src" ABSOLUTE)
  endif()
  set(sources "")
  set(missing "")
  foreach(file IN ITEMS nsightkit.cpp nsightkit_cuda.cpp)
    if(EXISTS "${src_dir}/${file}")
      list(APPEND sources "${src_dir}/${file}")
    else()
      list(APPEND missing "${src_dir}/${file}")
    endif()
  endforeach()
  if(missing)
    list(JOIN missing ", " missing)
    string(CONCAT reason "the compiled mode's sources are not in this nsightkit (a package of "
      "the headers only?): ${missing} missing; install nsightkit with its CMake install rules "
      "(cmake --install), or compile src/nsightkit.cpp yourself (docs/compile-cost.md)")
    set(NSIGHTKIT_COMPILED_REASON "${reason}" PARENT_SCOPE)
    return()
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    set(NSIGHTKIT_COMPILED_REASON
      "the compiled mode compiles C++ sources: enable CXX first (project(... LANGUAGES CXX))"
      PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET Threads::Threads)
    find_package(Threads QUIET)
  endif()
  if(NOT TARGET Threads::Threads)
    set(NSIGHTKIT_COMPILED_REASON "no thread library found (find_package(Threads))" PARENT_SCOPE)
    return()
  endif()
  # Two objects: the CUDA one (PinnedMemoryPool) is linked only into programs that use the pool.
  # Not in `all`: built only for a target that links it (add_subdirectory defines it for every
  # project that includes nsightkit).
  add_library(nsightkit_compiled STATIC EXCLUDE_FROM_ALL ${sources})
  add_library(nsightkit::compiled ALIAS nsightkit_compiled)
  target_link_libraries(nsightkit_compiled
    PUBLIC nsightkit::nsightkit Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_definitions(nsightkit_compiled PUBLIC NSIGHTKIT_COMPILED)
  # Linked into shared libraries too; the report's entry points keep default visibility.
  set_target_properties(nsightkit_compiled PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(NSIGHTKIT_COMPILED_FOUND TRUE PARENT_SCOPE)
endfunction()
