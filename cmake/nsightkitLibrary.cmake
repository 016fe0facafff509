# libnsightkit: the report engine, the emit engine (NVTX), name formatting, the cold paths of module
# hooks and the capture window, and the CUDA utilities' members, compiled once per program
# (docs/compile-cost.md). nsightkit::nsightkit carries it in every CMake route: the build tree,
# add_subdirectory and the installed package build it from the sources (src/ in a checkout,
# src/ beside this file when installed) in the project that uses it, with that project's compiler
# and flags, and make its users compile in the compiled mode (NSIGHTKIT_COMPILED), where the
# public headers only declare those parts.
#
# The archive holds each source twice: built enabled and built with NSIGHTKIT_DISABLE (each mode
# has its own ABI namespace, config.hpp), so a target that defines NSIGHTKIT_DISABLE itself links
# the same library and finds what a disabled program still calls (the report's outputs, the pool).
# Members are linked when referenced, so a disabled program links nothing of the engine. One member
# is linked on purpose, src/nsightkit_startup.cpp (the NSIGHTKIT_REPORT start-up and, through it,
# the engine): the link option -u of its anchor, given to every executable and shared library
# that links nsightkit::nsightkit, also a program that calls nothing of nsightkit (its only ranges
# raw NVTX calls). A target that defines NSIGHTKIT_DISABLE, NVTX_DISABLE or
# NSIGHTKIT_REPORT_NO_AUTOSTART (target_compile_definitions, also through linked targets) is
# linked without it.
include_guard(GLOBAL)

# The symbol src/nsightkit_startup.cpp defines for the -u link option.
set(NSIGHTKIT_STARTUP_SYMBOL nsightkit_detail_startup)

# nsightkit_add_library(<source dir> <include dir>)
# Defines the static library nsightkit_library (libnsightkit.a) from <source dir>'s nsightkit.cpp,
# nsightkit_cuda.cpp and nsightkit_startup.cpp, compiled against the headers in <include dir>
# and the dependencies nsightkit_find_dependencies() found (NSIGHTKIT_NVTX_PROVIDER,
# NSIGHTKIT_FMT_PROVIDER; {fmt} header-only when the fmt package has it, so that the library needs
# no libfmt). Sets NSIGHTKIT_LIBRARY_FOUND and NSIGHTKIT_LIBRARY_REASON (why not) in the caller's
# scope; never stops the configure. Defined once per project: a second call reuses it. Not in
# `all` unless NSIGHTKIT_LIBRARY_IN_ALL is set (nsightkit's own build installs it).
function(nsightkit_add_library src_dir include_dir)
  set(NSIGHTKIT_LIBRARY_FOUND FALSE PARENT_SCOPE)
  if(TARGET nsightkit_library)
    set(NSIGHTKIT_LIBRARY_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  set(sources "")
  set(missing "")
  foreach(file IN ITEMS nsightkit.cpp nsightkit_cuda.cpp nsightkit_startup.cpp)
    if(EXISTS "${src_dir}/${file}")
      list(APPEND sources "${src_dir}/${file}")
    else()
      list(APPEND missing "${src_dir}/${file}")
    endif()
  endforeach()
  if(missing)
    list(JOIN missing ", " missing)
    set(NSIGHTKIT_LIBRARY_REASON "nsightkit's library sources are missing (${missing}): install "
      "nsightkit with its CMake install rules (cmake --install), which install them" PARENT_SCOPE)
    return()
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    set(NSIGHTKIT_LIBRARY_REASON
      "nsightkit's library is C++: enable CXX first (project(... LANGUAGES CXX))" PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET Threads::Threads)
    find_package(Threads QUIET)
  endif()
  if(NOT TARGET Threads::Threads)
    set(NSIGHTKIT_LIBRARY_REASON "no thread library found (find_package(Threads))" PARENT_SCOPE)
    return()
  endif()
  # The CUDA object defines the pool's members for translation units that see the CUDA runtime's
  # headers: it must see them wherever the machine has them (headers only; the program that uses
  # the pool links the runtime).
  if(NOT TARGET CUDA::cudart AND NOT CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit)
    find_package(CUDAToolkit QUIET)
  endif()
  set(fmt_target ${NSIGHTKIT_FMT_PROVIDER})
  if(TARGET fmt::fmt-header-only)
    set(fmt_target fmt::fmt-header-only)
  endif()

  set(all EXCLUDE_FROM_ALL)
  if(NSIGHTKIT_LIBRARY_IN_ALL)
    set(all "")
  endif()
  # The disabled build of the same sources; its objects go into the one archive.
  add_library(nsightkit_library_disabled OBJECT ${all} "${src_dir}/nsightkit.cpp"
                                                       "${src_dir}/nsightkit_cuda.cpp")
  target_compile_definitions(nsightkit_library_disabled PRIVATE NSIGHTKIT_DISABLE)
  add_library(nsightkit_library STATIC ${all} ${sources}
                                      $<TARGET_OBJECTS:nsightkit_library_disabled>)
  set_target_properties(nsightkit_library PROPERTIES OUTPUT_NAME nsightkit)
  target_link_libraries(nsightkit_library INTERFACE Threads::Threads ${CMAKE_DL_LIBS})
  # The runtime's headers come after the NVTX provider's (link order sets the search order): the
  # toolkit's include directory holds an nvtx3/ too, and the library must read the NVTX3 headers
  # the program's own files read.
  set(cuda_headers "")
  if(TARGET CUDA::cudart)
    add_library(nsightkit_library_cuda_headers INTERFACE)
    target_include_directories(nsightkit_library_cuda_headers SYSTEM INTERFACE
      $<TARGET_PROPERTY:CUDA::cudart,INTERFACE_INCLUDE_DIRECTORIES>)
    set(cuda_headers nsightkit_library_cuda_headers)
  endif()
  foreach(target IN ITEMS nsightkit_library nsightkit_library_disabled)
    target_include_directories(${target} PRIVATE "${include_dir}")
    target_compile_features(${target} PRIVATE cxx_std_17)
    target_compile_definitions(${target} PRIVATE NSIGHTKIT_COMPILED)
    target_link_libraries(${target} PRIVATE ${fmt_target} ${NSIGHTKIT_NVTX_PROVIDER} ${cuda_headers}
                                            Threads::Threads)
    # Linked into shared libraries too; the entry points keep default visibility (config.hpp).
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endforeach()
  set(NSIGHTKIT_LIBRARY_FOUND TRUE PARENT_SCOPE)
endfunction()

# nsightkit_link_startup(<interface target> [BUILD_ONLY])
# Gives every executable and shared library that links <interface target> the link option -u of the
# start-up's anchor, unless it defines NSIGHTKIT_DISABLE, NVTX_DISABLE or
# NSIGHTKIT_REPORT_NO_AUTOSTART (its compile definitions, as target_compile_definitions and linked
# targets set them). Also used by the Conan package's build module, whose target links the
# prebuilt libnsightkit. BUILD_ONLY: see nsightkit_link_library.
function(nsightkit_link_startup target)
  set(defs "$<TARGET_PROPERTY:COMPILE_DEFINITIONS>")
  set(quiet "")
  foreach(word IN ITEMS NSIGHTKIT_DISABLE NVTX_DISABLE NSIGHTKIT_REPORT_NO_AUTOSTART)
    list(APPEND quiet "$<IN_LIST:${word},${defs}>" "$<IN_LIST:${word}=1,${defs}>")
  endforeach()
  list(JOIN quiet "," quiet)
  set(startup "$<$<NOT:$<OR:${quiet}>>:LINKER:-u,${NSIGHTKIT_STARTUP_SYMBOL}>")
  if("BUILD_ONLY" IN_LIST ARGN)
    set(startup "$<BUILD_INTERFACE:${startup}>")
  endif()
  target_link_options(${target} INTERFACE "${startup}")
endfunction()

# nsightkit_link_library(<interface target> [BUILD_ONLY])
# Makes <interface target> carry the compiled mode: NSIGHTKIT_COMPILED for its users, the library,
# and the start-up's link option (nsightkit_link_startup). BUILD_ONLY wraps them in
# $<BUILD_INTERFACE:...> so install(EXPORT) does not record them (the installed config adds them).
function(nsightkit_link_library target)
  if("BUILD_ONLY" IN_LIST ARGN)
    target_compile_definitions(${target} INTERFACE $<BUILD_INTERFACE:NSIGHTKIT_COMPILED>)
    target_link_libraries(${target} INTERFACE $<BUILD_INTERFACE:nsightkit_library>)
  else()
    target_compile_definitions(${target} INTERFACE NSIGHTKIT_COMPILED)
    target_link_libraries(${target} INTERFACE nsightkit_library)
  endif()
  nsightkit_link_startup(${target} ${ARGN})
endfunction()
