# Finds nsightkit's dependencies and links them to a target. Used by the build tree and, installed
# beside nsightkit-config.cmake, by consumers of the installed package: providers are chosen when
# the consumer configures, never baked into the exported target. Nothing here stops the caller's
# configure: a missing dependency is reported through NSIGHTKIT_DEPENDENCIES_FOUND/_REASON, and
# the caller decides (the package config sets nsightkit_FOUND to FALSE with that reason).
#
# NVTX3 (headers only; nsightkit needs nvtx3/nvtx3.hpp) is taken from the first provider found:
#   1. yours: a target that already exists (nvtx3::nvtx3-cpp from NVIDIA/NVTX's CMake, nvtx3-cpp
#      from add_subdirectory(NVTX/c), nvtx::nvtx from Conan center's nvtx), the directory named
#      by NSIGHTKIT_NVTX3_INCLUDE_DIR (variable or environment), or an installed package found
#      by find_package(nvtx3 CONFIG) / find_package(nvtx CONFIG)
#   2. the CUDA toolkit (FindCUDAToolkit's CUDA::nvtx3) when it ships nvtx3/nvtx3.hpp (CUDA 12.9
#      and later; 12.0-12.8 have NVTX3's C headers only), else nvtx3/nvtx3.hpp in CMake's search
#      prefixes (CMAKE_PREFIX_PATH, /usr/include: distribution or conda packages)
#   3. PyPI's nvidia-nvtx package: in NSIGHTKIT_NVTX3_PYPI_DIR (variable or environment: the
#      directory pip installed it into), else in the Python interpreter NSIGHTKIT_PYTHON_EXECUTABLE
#      (default: Python3_EXECUTABLE, else python3 on PATH), asked by nsightkit-find-nvtx3.py
#   4. none: the reason lists what was found and these three ways.
# CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON skips FindCUDAToolkit (not the prefix search).
#
# fmt: NSIGHTKIT_FMT_TARGET names any target; otherwise fmt::fmt, else fmt::fmt-header-only (what a
# header-only fmt package provides). Users of nsightkit::nsightkit compile in the compiled mode and
# get {fmt}'s headers only (nsightkit::fmt_headers): their programs need no libfmt; libnsightkit
# (nsightkitLibrary.cmake) takes fmt::fmt-header-only where the package has it.
include_guard(GLOBAL)

# nvtx3/nvtx3.hpp in one of a target's include directories? Unknown (generator expressions, or
# the directories come through linked targets) counts as yes.
function(_nsightkit_target_has_nvtx3_hpp target out)
  set(${out} TRUE PARENT_SCOPE)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT dirs)
    return()
  endif()
  foreach(dir IN LISTS dirs)
    if(dir MATCHES "\\$<" OR EXISTS "${dir}/nvtx3/nvtx3.hpp")
      return()
    endif()
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# An INTERFACE target for NVTX3 headers in <dir> (SYSTEM: NVTX's code is not nsightkit's to warn
# about). NVTX loads its tool with dlopen: -ldl where the platform has it apart from libc.
function(_nsightkit_nvtx3_headers_target dir)
  if(TARGET nsightkit::nvtx3_headers)
    set_target_properties(nsightkit::nvtx3_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${dir}" INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${dir}")
    return()
  endif()
  add_library(nsightkit::nvtx3_headers INTERFACE IMPORTED GLOBAL)
  set_target_properties(nsightkit::nvtx3_headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${dir}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${dir}"
    INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
endfunction()

# A directory pip installed nvidia-nvtx into (site-packages, or pip install --target), the package
# directory itself (nvidia/cu13, nvidia/nvtx), or its include directory.
function(_nsightkit_nvtx3_in_pypi_dir base out)
  set(${out} "" PARENT_SCOPE)
  foreach(inc IN ITEMS "${base}" "${base}/include")
    if(EXISTS "${inc}/nvtx3/nvtx3.hpp")
      set(${out} "${inc}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  file(GLOB hits "${base}/nvidia/*/include/nvtx3/nvtx3.hpp" "${base}/*/include/nvtx3/nvtx3.hpp")
  if(hits)
    list(SORT hits)
    list(GET hits 0 hit)
    get_filename_component(inc "${hit}" DIRECTORY)
    get_filename_component(inc "${inc}" DIRECTORY)
    set(${out} "${inc}" PARENT_SCOPE)
  endif()
endfunction()

# Sets, in the caller's scope, _nsk_nvtx (a target, or empty), _nsk_nvtx_source (where it came
# from, in words), _nsk_nvtx_passed_over (earlier providers seen but not usable) and
# _nsk_nvtx_reason (why none was found).
function(_nsightkit_find_nvtx3)
  set(_nsk_nvtx "" PARENT_SCOPE)
  set(notes "")  # providers seen and passed over, "\n  - why" each

  # 1. Yours: a target, an include directory, an installed package.
  foreach(candidate IN ITEMS nvtx3::nvtx3-cpp nvtx3-cpp nvtx::nvtx)
    if(TARGET ${candidate})
      set(_nsk_nvtx ${candidate} PARENT_SCOPE)
      set(_nsk_nvtx_source "target ${candidate}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(user_dir "${NSIGHTKIT_NVTX3_INCLUDE_DIR}")
  if(NOT user_dir AND DEFINED ENV{NSIGHTKIT_NVTX3_INCLUDE_DIR})
    set(user_dir "$ENV{NSIGHTKIT_NVTX3_INCLUDE_DIR}")
  endif()
  if(user_dir)
    if(NOT EXISTS "${user_dir}/nvtx3/nvtx3.hpp")
      # Asked for explicitly: never fall back silently to another NVTX.
      set(_nsk_nvtx_reason "NSIGHTKIT_NVTX3_INCLUDE_DIR=${user_dir} holds no nvtx3/nvtx3.hpp" PARENT_SCOPE)
      return()
    endif()
    _nsightkit_nvtx3_headers_target("${user_dir}")
    set(_nsk_nvtx nsightkit::nvtx3_headers PARENT_SCOPE)
    set(_nsk_nvtx_source "NSIGHTKIT_NVTX3_INCLUDE_DIR (${user_dir})" PARENT_SCOPE)
    return()
  endif()
  find_package(nvtx3 CONFIG QUIET)
  if(NOT TARGET nvtx3::nvtx3-cpp)
    find_package(nvtx CONFIG QUIET)
  endif()
  foreach(candidate IN ITEMS nvtx3::nvtx3-cpp nvtx::nvtx)
    if(TARGET ${candidate})
      set(_nsk_nvtx ${candidate} PARENT_SCOPE)
      set(_nsk_nvtx_source "the installed ${candidate} package" PARENT_SCOPE)
      return()
    endif()
  endforeach()

  # 2. The CUDA toolkit, if it has the C++ header; then CMake's search prefixes.
  if(CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit)
    string(APPEND notes "\n  - the CUDA toolkit was not searched (CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit)")
  else()
    if(NOT TARGET CUDA::nvtx3)
      find_package(CUDAToolkit QUIET)
    endif()
    if(TARGET CUDA::nvtx3)
      _nsightkit_target_has_nvtx3_hpp(CUDA::nvtx3 usable)
      get_target_property(dirs CUDA::nvtx3 INTERFACE_INCLUDE_DIRECTORIES)
      list(JOIN dirs ", " dirs)
      if(usable)
        set(_nsk_nvtx CUDA::nvtx3 PARENT_SCOPE)
        set(_nsk_nvtx_source "the CUDA toolkit ${CUDAToolkit_VERSION} (${dirs})" PARENT_SCOPE)
        return()
      endif()
      string(APPEND notes "\n  - the CUDA toolkit ${CUDAToolkit_VERSION} (${dirs}) has NVTX3's C headers but no "
                        "nvtx3/nvtx3.hpp: the toolkit ships it from CUDA 12.9 on")
    else()
      string(APPEND notes "\n  - no CUDA toolkit found (nvcc on PATH, CUDAToolkit_ROOT, CUDA_PATH, /usr/local/cuda)")
    endif()
  endif()
  find_path(NSIGHTKIT_NVTX3_PREFIX_INCLUDE_DIR nvtx3/nvtx3.hpp
    DOC "Directory holding nvtx3/nvtx3.hpp found in CMake's search prefixes (nsightkit)")
  mark_as_advanced(NSIGHTKIT_NVTX3_PREFIX_INCLUDE_DIR)
  if(NSIGHTKIT_NVTX3_PREFIX_INCLUDE_DIR)
    _nsightkit_nvtx3_headers_target("${NSIGHTKIT_NVTX3_PREFIX_INCLUDE_DIR}")
    set(_nsk_nvtx nsightkit::nvtx3_headers PARENT_SCOPE)
    set(_nsk_nvtx_source "${NSIGHTKIT_NVTX3_PREFIX_INCLUDE_DIR} (CMake's search prefixes)" PARENT_SCOPE)
    set(_nsk_nvtx_passed_over "${notes}" PARENT_SCOPE)
    return()
  endif()

  # 3. PyPI's nvidia-nvtx: a directory named by the user, else the Python interpreter's packages.
  set(pypi_dir "${NSIGHTKIT_NVTX3_PYPI_DIR}")
  if(NOT pypi_dir AND DEFINED ENV{NSIGHTKIT_NVTX3_PYPI_DIR})
    set(pypi_dir "$ENV{NSIGHTKIT_NVTX3_PYPI_DIR}")
  endif()
  if(pypi_dir)
    _nsightkit_nvtx3_in_pypi_dir("${pypi_dir}" inc)
    if(NOT inc)
      set(_nsk_nvtx_reason "NSIGHTKIT_NVTX3_PYPI_DIR=${pypi_dir} holds no nvtx3/nvtx3.hpp (looked in it, "
                           "its include/ and nvidia/*/include/; pip install --target <dir> nvidia-nvtx)"
          PARENT_SCOPE)
      return()
    endif()
    _nsightkit_nvtx3_headers_target("${inc}")
    set(_nsk_nvtx nsightkit::nvtx3_headers PARENT_SCOPE)
    set(_nsk_nvtx_source "PyPI's nvidia-nvtx in NSIGHTKIT_NVTX3_PYPI_DIR (${inc})" PARENT_SCOPE)
    set(_nsk_nvtx_passed_over "${notes}" PARENT_SCOPE)
    return()
  endif()
  if(NOT NSIGHTKIT_PYTHON_EXECUTABLE AND Python3_EXECUTABLE)
    set(NSIGHTKIT_PYTHON_EXECUTABLE "${Python3_EXECUTABLE}")
  endif()
  if(NOT NSIGHTKIT_PYTHON_EXECUTABLE)
    find_program(NSIGHTKIT_PYTHON_EXECUTABLE NAMES python3 python
      DOC "Python interpreter asked for PyPI's nvidia-nvtx headers (nsightkit)")
    mark_as_advanced(NSIGHTKIT_PYTHON_EXECUTABLE)
  endif()
  set(finder "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/nsightkit-find-nvtx3.py")
  if(NSIGHTKIT_PYTHON_EXECUTABLE AND EXISTS "${finder}")
    execute_process(COMMAND "${NSIGHTKIT_PYTHON_EXECUTABLE}" "${finder}" --source pypi
      RESULT_VARIABLE rc OUTPUT_VARIABLE inc ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND EXISTS "${inc}/nvtx3/nvtx3.hpp")
      _nsightkit_nvtx3_headers_target("${inc}")
      set(_nsk_nvtx nsightkit::nvtx3_headers PARENT_SCOPE)
      set(_nsk_nvtx_source "PyPI's nvidia-nvtx (${inc}, from ${NSIGHTKIT_PYTHON_EXECUTABLE})" PARENT_SCOPE)
      set(_nsk_nvtx_passed_over "${notes}" PARENT_SCOPE)
      return()
    endif()
    string(REPLACE ";" "," err "${err}")  # keep the notes one list element each
    string(REGEX MATCHALL "  - [^\n]+" found_notes "${err}")
    foreach(n IN LISTS found_notes)
      string(APPEND notes "\n${n}")
    endforeach()
    if(NOT found_notes)
      string(APPEND notes "\n  - ${NSIGHTKIT_PYTHON_EXECUTABLE} ${finder} failed (${rc}): ${err}")
    endif()
  elseif(NOT NSIGHTKIT_PYTHON_EXECUTABLE)
    string(APPEND notes "\n  - no Python interpreter to ask for PyPI's nvidia-nvtx (NSIGHTKIT_PYTHON_EXECUTABLE)")
  endif()

  # 4. None: say what was seen and how to get NVTX3.
  set(reason "NVTX3's C++ header nvtx3/nvtx3.hpp was not found.${notes}")
  string(APPEND reason
    "\nAny one of these provides it:"
    "\n  1. NVIDIA's NVTX headers: set NSIGHTKIT_NVTX3_INCLUDE_DIR to the directory holding"
    "\n     nvtx3/nvtx3.hpp, or provide an nvtx3 CMake package (NVIDIA/NVTX, Conan's nvtx: nvtx3_DIR),"
    "\n  2. the CUDA toolkit 12.9 or newer (CUDAToolkit_ROOT if it is not found by itself),"
    "\n  3. pip install nvidia-nvtx, in the Python CMake uses (NSIGHTKIT_PYTHON_EXECUTABLE), or set"
    "\n     NSIGHTKIT_NVTX3_PYPI_DIR to the directory pip installed it into.")
  set(_nsk_nvtx_reason "${reason}" PARENT_SCOPE)
endfunction()

# Sets _nsk_fmt (a target, or empty) and _nsk_fmt_reason in the caller's scope.
function(_nsightkit_find_fmt)
  set(_nsk_fmt "" PARENT_SCOPE)
  set(want "${NSIGHTKIT_FMT_TARGET}")
  set(have_want FALSE)
  if(want AND TARGET ${want})
    set(have_want TRUE)
  endif()
  if(NOT have_want AND NOT TARGET fmt::fmt AND NOT TARGET fmt::fmt-header-only)
    find_package(fmt CONFIG QUIET)
  endif()
  if(want)
    if(TARGET ${want})
      set(_nsk_fmt ${want} PARENT_SCOPE)
    elseif(TARGET fmt::fmt OR TARGET fmt::fmt-header-only)
      set(_nsk_fmt_reason "the fmt package found (${fmt_DIR}) has no target ${want}" PARENT_SCOPE)
    else()
      set(_nsk_fmt_reason "{fmt} was not found for ${want}: install it (Debian/Ubuntu: libfmt-dev) or set fmt_DIR"
          PARENT_SCOPE)
    endif()
  elseif(TARGET fmt::fmt)
    set(_nsk_fmt fmt::fmt PARENT_SCOPE)
  elseif(TARGET fmt::fmt-header-only)
    set(_nsk_fmt fmt::fmt-header-only PARENT_SCOPE)
  else()
    set(_nsk_fmt_reason "{fmt} (9 or newer) was not found: install it (Debian/Ubuntu: libfmt-dev; or "
                        "Conan, vcpkg, conda) or set fmt_DIR to its CMake package" PARENT_SCOPE)
  endif()
endfunction()

# nsightkit_find_dependencies()
# Sets in the caller's scope: NSIGHTKIT_NVTX_PROVIDER and NSIGHTKIT_FMT_PROVIDER (targets),
# NSIGHTKIT_NVTX_SOURCE (where NVTX3 came from, in words), NSIGHTKIT_NVTX_PASSED_OVER (providers
# tried before it and why they did not do, "\n  - ..." lines, often empty),
# NSIGHTKIT_DEPENDENCIES_FOUND and, when that is FALSE, NSIGHTKIT_DEPENDENCIES_REASON.
function(nsightkit_find_dependencies)
  set(_nsk_nvtx_passed_over "")
  _nsightkit_find_nvtx3()
  _nsightkit_find_fmt()
  set(NSIGHTKIT_NVTX_PROVIDER "${_nsk_nvtx}" PARENT_SCOPE)
  set(NSIGHTKIT_NVTX_SOURCE "${_nsk_nvtx_source}" PARENT_SCOPE)
  set(NSIGHTKIT_NVTX_PASSED_OVER "${_nsk_nvtx_passed_over}" PARENT_SCOPE)
  set(NSIGHTKIT_FMT_PROVIDER "${_nsk_fmt}" PARENT_SCOPE)
  # Plain strings, not lists: a reason may hold ';'.
  set(reason "")
  if(NOT _nsk_nvtx)
    string(APPEND reason "${_nsk_nvtx_reason}")
  endif()
  if(NOT _nsk_fmt)
    if(reason)
      string(APPEND reason "\n")
    endif()
    string(APPEND reason "${_nsk_fmt_reason}")
  endif()
  if(reason)
    set(NSIGHTKIT_DEPENDENCIES_FOUND FALSE PARENT_SCOPE)
    set(NSIGHTKIT_DEPENDENCIES_REASON "${reason}" PARENT_SCOPE)
  else()
    set(NSIGHTKIT_DEPENDENCIES_FOUND TRUE PARENT_SCOPE)
    set(NSIGHTKIT_DEPENDENCIES_REASON "" PARENT_SCOPE)
  endif()
endfunction()

# {fmt}'s include directories without its library or definitions (FMT_HEADER_ONLY would bring its
# formatting engine back into every translation unit): what a compiled-mode translation unit needs.
# Read now, not through a generator expression: the provider may be imported in another directory.
function(_nsightkit_fmt_headers_target provider)
  if(NOT TARGET nsightkit::fmt_headers)
    add_library(nsightkit::fmt_headers INTERFACE IMPORTED GLOBAL)
  endif()
  get_target_property(dirs ${provider} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT dirs)
    set(dirs "")
  endif()
  set_target_properties(nsightkit::fmt_headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${dirs}" INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${dirs}")
endfunction()

# nsightkit_link_dependencies(<target> [BUILD_ONLY] [HEADER_ONLY])
# Finds the dependencies (nsightkit_find_dependencies, same result variables) and, when both were
# found, links them to <target>: NVTX3's provider and {fmt}'s headers (nsightkit::fmt_headers), for
# the compiled mode; HEADER_ONLY links the fmt provider itself, for a target whose translation
# units format in place. BUILD_ONLY wraps the links in $<BUILD_INTERFACE:...> so install(EXPORT)
# does not record them.
function(nsightkit_link_dependencies target)
  # Found already in this scope (the installed config finds them first): a second search would see
  # the package's target it imported and call it "target nvtx3::nvtx3-cpp".
  if(NOT (NSIGHTKIT_DEPENDENCIES_FOUND AND TARGET "${NSIGHTKIT_NVTX_PROVIDER}"))
    nsightkit_find_dependencies()
  endif()
  foreach(v NVTX_PROVIDER NVTX_SOURCE NVTX_PASSED_OVER FMT_PROVIDER DEPENDENCIES_FOUND DEPENDENCIES_REASON)
    set(NSIGHTKIT_${v} "${NSIGHTKIT_${v}}" PARENT_SCOPE)
  endforeach()
  if(NOT NSIGHTKIT_DEPENDENCIES_FOUND)
    return()
  endif()
  if("HEADER_ONLY" IN_LIST ARGN)
    set(fmt ${NSIGHTKIT_FMT_PROVIDER})
  else()
    _nsightkit_fmt_headers_target(${NSIGHTKIT_FMT_PROVIDER})
    set(fmt nsightkit::fmt_headers)
  endif()
  if("BUILD_ONLY" IN_LIST ARGN)
    target_link_libraries(${target} INTERFACE $<BUILD_INTERFACE:${fmt}>
                                              $<BUILD_INTERFACE:${NSIGHTKIT_NVTX_PROVIDER}>)
  else()
    target_link_libraries(${target} INTERFACE ${fmt} ${NSIGHTKIT_NVTX_PROVIDER})
  endif()
endfunction()

# libnsightkit: nsightkit_add_library and nsightkit_link_library (the compiled mode every route
# gives nsightkit::nsightkit).
include(${CMAKE_CURRENT_LIST_DIR}/nsightkitLibrary.cmake)

# ---- optional components ----
# A component is a target nsightkit::<name> (nsightkit::nsightkit plus what it needs, an IMPORTED
# INTERFACE target),
# defined by a function nsightkit_add_<name>_component([GLOBAL]) that sets NSIGHTKIT_<NAME>_FOUND
# and, when not found, NSIGHTKIT_<NAME>_REASON in the caller's scope and never stops the
# configure. To add a component: write that function below and add its name in
# nsightkit_component_names; the build tree (CMakeLists.txt) and the installed config
# (find_package(nsightkit COMPONENTS ...)) both take their components from there.

# nsightkit_component_names(<out>): the components there are. (A function, not a variable: this
# file is included once per configure, and a variable would not reach every directory.)
function(nsightkit_component_names out)
  set(${out} cupti mpi PARENT_SCOPE)
endfunction()

# mpi: nsightkit_add_mpi_component (nsightkit/mpi.hpp: the ranks' reports merged on rank 0).
include(${CMAKE_CURRENT_LIST_DIR}/nsightkitMpi.cmake)

# nsightkit_add_component(<name> [GLOBAL])
# Calls nsightkit_add_<name>_component and passes its NSIGHTKIT_<NAME>_FOUND/_REASON up; for a
# name that is not a component, FOUND is FALSE and the reason lists the components there are.
function(nsightkit_add_component name)
  string(TOUPPER "${name}" upper)
  nsightkit_component_names(components)
  if(NOT name IN_LIST components)
    list(JOIN components ", " known)
    set(NSIGHTKIT_${upper}_FOUND FALSE PARENT_SCOPE)
    set(NSIGHTKIT_${upper}_REASON "nsightkit has no component '${name}' (its components: ${known})" PARENT_SCOPE)
    return()
  endif()
  cmake_language(CALL nsightkit_add_${name}_component ${ARGN})
  set(NSIGHTKIT_${upper}_FOUND "${NSIGHTKIT_${upper}_FOUND}" PARENT_SCOPE)
  set(NSIGHTKIT_${upper}_REASON "${NSIGHTKIT_${upper}_REASON}" PARENT_SCOPE)
endfunction()

# nsightkit_add_cupti_component([GLOBAL])
# Defines nsightkit::cupti (nsightkit::nsightkit + CUPTI + NSIGHTKIT_CUPTI=1 + {fmt}: the report
# measures GPU work with CUPTI, docs/gpu-attribution.md) when the CUDA toolkit's CUPTI is found
# (call after nsightkit_find_dependencies: NSIGHTKIT_FMT_PROVIDER), and sets
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
  # The CUPTI source is header-only: its translation units format with {fmt} in place.
  set_target_properties(nsightkit::cupti PROPERTIES
    INTERFACE_LINK_LIBRARIES "nsightkit::nsightkit;CUDA::cupti;${NSIGHTKIT_FMT_PROVIDER}"
    INTERFACE_COMPILE_DEFINITIONS "NSIGHTKIT_CUPTI=1")
  set(NSIGHTKIT_CUPTI_FOUND TRUE PARENT_SCOPE)
endfunction()
