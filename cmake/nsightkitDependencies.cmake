# Finds nsightkit's dependencies and links them to a target. Used by the build tree and, installed
# beside nsightkit-config.cmake, by consumers of the installed package: providers are chosen when
# the consumer configures, never baked into the exported target.
#
# NVTX3 (header-only) is taken from the first provider found:
#   1. targets already defined: nvtx3::nvtx3-cpp (NVIDIA/NVTX CMake, vcpkg), nvtx3-cpp
#      (add_subdirectory of NVIDIA/NVTX), nvtx::nvtx (Conan center's nvtx package)
#   2. find_package(nvtx3 CONFIG), then find_package(nvtx CONFIG)
#   3. the CUDA toolkit through FindCUDAToolkit (CMake >= 3.25: CUDA::nvtx3)
#   4. NSIGHTKIT_NVTX3_INCLUDE_DIR, or a search for nvtx3/nvtx3.hpp
# fmt: NSIGHTKIT_FMT_TARGET if set (e.g. fmt::fmt-header-only, for binaries that must run where
# libfmt is not installed), else fmt::fmt, else fmt::fmt-header-only.
include_guard(GLOBAL)

function(_nsightkit_nvtx_target out)
  foreach(candidate IN ITEMS nvtx3::nvtx3-cpp nvtx3-cpp nvtx::nvtx)
    if(TARGET ${candidate})
      set(${out} ${candidate} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  if(NOT NSIGHTKIT_NVTX3_INCLUDE_DIR)
    find_package(nvtx3 CONFIG QUIET)
    if(TARGET nvtx3::nvtx3-cpp)
      set(${out} nvtx3::nvtx3-cpp PARENT_SCOPE)
      return()
    endif()
    find_package(nvtx CONFIG QUIET)
    if(TARGET nvtx::nvtx)
      set(${out} nvtx::nvtx PARENT_SCOPE)
      return()
    endif()
    if(NOT TARGET CUDA::nvtx3)
      find_package(CUDAToolkit QUIET)
    endif()
    if(TARGET CUDA::nvtx3)
      set(${out} CUDA::nvtx3 PARENT_SCOPE)
      return()
    endif()
  endif()
  if(NOT TARGET nsightkit::nvtx3_headers)
    find_path(NSIGHTKIT_NVTX3_INCLUDE_DIR nvtx3/nvtx3.hpp
      HINTS ENV CUDA_PATH ENV CUDA_HOME /usr/local/cuda
      PATH_SUFFIXES include
      DOC "Directory holding nvtx3/nvtx3.hpp")
    if(NOT NSIGHTKIT_NVTX3_INCLUDE_DIR)
      message(FATAL_ERROR
        "nsightkit: NVTX3 headers not found. Install the CUDA toolkit (it ships include/nvtx3), "
        "provide nvtx3::nvtx3-cpp (NVIDIA/NVTX, vcpkg 'nvtx3', Conan 'nvtx'), or set "
        "NSIGHTKIT_NVTX3_INCLUDE_DIR to the directory that contains nvtx3/nvtx3.hpp.")
    endif()
    add_library(nsightkit::nvtx3_headers INTERFACE IMPORTED GLOBAL)
    set_target_properties(nsightkit::nvtx3_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${NSIGHTKIT_NVTX3_INCLUDE_DIR}"
      INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${NSIGHTKIT_NVTX3_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  endif()
  set(${out} nsightkit::nvtx3_headers PARENT_SCOPE)
endfunction()

function(_nsightkit_fmt_target out)
  if(NSIGHTKIT_FMT_TARGET)
    if(NOT TARGET ${NSIGHTKIT_FMT_TARGET})
      find_package(fmt CONFIG REQUIRED)
    endif()
    if(NOT TARGET ${NSIGHTKIT_FMT_TARGET})
      message(FATAL_ERROR "nsightkit: NSIGHTKIT_FMT_TARGET=${NSIGHTKIT_FMT_TARGET} is not a target")
    endif()
    set(${out} ${NSIGHTKIT_FMT_TARGET} PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET fmt::fmt AND NOT TARGET fmt::fmt-header-only)
    find_package(fmt CONFIG REQUIRED)
  endif()
  if(TARGET fmt::fmt)
    set(${out} fmt::fmt PARENT_SCOPE)
  else()
    set(${out} fmt::fmt-header-only PARENT_SCOPE)
  endif()
endfunction()

# nsightkit_link_dependencies(<target> [BUILD_ONLY])
# BUILD_ONLY wraps the links in $<BUILD_INTERFACE:...> so install(EXPORT) does not record them.
function(nsightkit_link_dependencies target)
  _nsightkit_nvtx_target(nvtx)
  _nsightkit_fmt_target(fmt)
  if(ARGN STREQUAL "BUILD_ONLY")
    target_link_libraries(${target} INTERFACE $<BUILD_INTERFACE:${fmt}> $<BUILD_INTERFACE:${nvtx}>)
  else()
    target_link_libraries(${target} INTERFACE ${fmt} ${nvtx})
  endif()
  set(NSIGHTKIT_NVTX_PROVIDER ${nvtx} PARENT_SCOPE)
  set(NSIGHTKIT_FMT_PROVIDER ${fmt} PARENT_SCOPE)
endfunction()

# nsightkit_add_cupti_component([GLOBAL])
# Defines nsightkit::cupti (nsightkit::nsightkit + CUPTI + NSIGHTKIT_CUPTI=1: the report measures
# GPU work with CUPTI, docs/gpu-attribution.md) when the CUDA toolkit's CUPTI is found, and sets
# NSIGHTKIT_CUPTI_FOUND and NSIGHTKIT_CUPTI_REASON (why not) in the caller's scope.
function(nsightkit_add_cupti_component)
  set(NSIGHTKIT_CUPTI_FOUND FALSE PARENT_SCOPE)
  if(TARGET nsightkit::cupti)
    set(NSIGHTKIT_CUPTI_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET CUDA::cupti)
    find_package(CUDAToolkit QUIET)
  endif()
  if(NOT TARGET CUDA::cupti)
    set(NSIGHTKIT_CUPTI_REASON
      "CUPTI (CUDA::cupti) was not found: install the CUDA toolkit (CUPTI is part of it) or set CUDAToolkit_ROOT"
      PARENT_SCOPE)
    return()
  endif()
  if(ARGN STREQUAL "GLOBAL")
    add_library(nsightkit::cupti INTERFACE IMPORTED GLOBAL)
  else()
    add_library(nsightkit::cupti INTERFACE IMPORTED)
  endif()
  set_target_properties(nsightkit::cupti PROPERTIES
    INTERFACE_LINK_LIBRARIES "nsightkit::nsightkit;CUDA::cupti"
    INTERFACE_COMPILE_DEFINITIONS "NSIGHTKIT_CUPTI=1")
  set(NSIGHTKIT_CUPTI_FOUND TRUE PARENT_SCOPE)
endfunction()
