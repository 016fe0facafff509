# Runs a vcpkg portfile for nsightkit without vcpkg, for scripts/check-vcpkg-port.sh.
#
#   cmake -DPORT_DIR=<ports/nsightkit> -DWORK=<dir> -DTRIPLET=x64-linux [-DFEATURES=core;cuda]
#         [-DCUDA_ROOT=<toolkit>] [-DDOWNLOADS=<dir>] [-DALLOW_MISSING_COPYRIGHT=ON]
#         -P emulate-port.cmake
#
# The portfile itself is include()d unchanged; the vcpkg helpers it calls are replaced by functions
# that do what vcpkg's do for this port, with plain CMake:
#   VERSION, FEATURES          -> from the port's vcpkg.json and -DFEATURES (default core)
#   vcpkg_from_github          -> the archive vcpkg would download, <DOWNLOADS>/<org>-<repo>-<ref>
#                                 .tar.gz (no network here), checked against SHA512 and extracted
#   vcpkg_check_features       -> FEATURES / INVERTED_FEATURES into -D<option>=ON|OFF
#   vcpkg_find_cuda            -> CUDA_ROOT (the cuda port only checks that a toolkit exists)
#   vcpkg_cmake_configure      -> cmake -G Ninja with the port's OPTIONS plus the options vcpkg
#                                 always adds for a release build; an unused variable not listed
#                                 in MAYBE_UNUSED_VARIABLES fails (vcpkg reports them too)
#   vcpkg_cmake_install        -> cmake --install into CURRENT_PACKAGES_DIR
#   vcpkg_cmake_config_fixup   -> checks the end state the real fixup produces: the config in
#                                 share/<PACKAGE_NAME>, nothing left in share/cmake or lib/cmake,
#                                 no absolute path of the packages directory in it
#   vcpkg_fixup_pkgconfig      -> each .pc's prefix line becomes prefix=${pcfiledir}/<up>, package
#                                 paths become ${prefix}, and pkg-config must resolve the module
#                                 (vcpkg runs the same check)
#   vcpkg_install_copyright    -> concatenates FILE_LIST into share/<port>/copyright
# Then vcpkg's post-build checks (post_build_checks.py, beside this file) must find no problem.
# Not emulated: vcpkg's toolchain file and environment, the binary cache, the RPATH fixup of ELF
# files, and the ports the port depends on (fmt, nlohmann-json and cuda are the system's).
cmake_minimum_required(VERSION 3.22)
foreach(v PORT_DIR WORK TRIPLET)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "emulate-port.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED FEATURES)
  set(FEATURES core)
endif()
if(NOT DEFINED DOWNLOADS)
  set(DOWNLOADS "${WORK}/downloads")
endif()

get_filename_component(CURRENT_PORT_DIR "${PORT_DIR}" ABSOLUTE)
get_filename_component(PORT "${CURRENT_PORT_DIR}" NAME)
set(TARGET_TRIPLET "${TRIPLET}")
set(CURRENT_PACKAGES_DIR "${WORK}/packages/${PORT}_${TRIPLET}")
set(CURRENT_BUILDTREES_DIR "${WORK}/buildtrees/${PORT}")
set(CURRENT_INSTALLED_DIR "${WORK}/installed/${TRIPLET}")
set(VCPKG_TARGET_IS_LINUX ON)
file(READ "${CURRENT_PORT_DIR}/vcpkg.json" _emu_manifest)
string(JSON VERSION GET "${_emu_manifest}" version-semver)
foreach(f IN LISTS FEATURES)
  if(NOT f STREQUAL "core")
    string(JSON _emu_feature ERROR_VARIABLE _emu_err GET "${_emu_manifest}" features ${f})
    if(_emu_err)
      message(FATAL_ERROR "emulate-port: the port has no feature '${f}'")
    endif()
  endif()
endforeach()
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")
file(MAKE_DIRECTORY "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")

function(_emu_run log)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  file(APPEND "${CURRENT_BUILDTREES_DIR}/${log}" "$ ${ARGN}\n${out}\n")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "emulate-port: command failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(_emu_out "${out}" PARENT_SCOPE)
endfunction()

function(vcpkg_from_github)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_SOURCE_PATH;REPO;REF;SHA512;HEAD_REF" "PATCHES")
  string(REPLACE "/" "-" base "${arg_REPO}-${arg_REF}")
  set(archive "${DOWNLOADS}/${base}.tar.gz")
  if(NOT EXISTS "${archive}")
    message(FATAL_ERROR "emulate-port: vcpkg_from_github: no network here; vcpkg would download "
                        "https://github.com/${arg_REPO}/archive/${arg_REF}.tar.gz to ${archive}")
  endif()
  file(SHA512 "${archive}" actual)
  if(NOT actual STREQUAL arg_SHA512)
    message(FATAL_ERROR "emulate-port: vcpkg_from_github: ${archive}: SHA512 mismatch\n"
                        "  expected: ${arg_SHA512}\n  actual:   ${actual}")
  endif()
  set(src "${CURRENT_BUILDTREES_DIR}/src")
  file(REMOVE_RECURSE "${src}")
  file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${src}")
  file(GLOB top LIST_DIRECTORIES true "${src}/*")
  list(LENGTH top n)
  if(NOT n EQUAL 1 OR NOT IS_DIRECTORY "${top}")
    message(FATAL_ERROR "emulate-port: ${archive} does not hold exactly one top directory: ${top}")
  endif()
  set(${arg_OUT_SOURCE_PATH} "${top}" PARENT_SCOPE)
  message(STATUS "vcpkg_from_github: ${arg_REPO}@${arg_REF} (SHA512 ok) -> ${top}")
endfunction()

function(vcpkg_check_features)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_FEATURE_OPTIONS;PREFIX" "FEATURES;INVERTED_FEATURES")
  set(out "")
  foreach(kind FEATURES INVERTED_FEATURES)
    set(list ${arg_${kind}})
    list(LENGTH list len)
    math(EXPR last "${len} - 1")
    if(len GREATER 0)
      foreach(i RANGE 0 ${last} 2)
        math(EXPR j "${i} + 1")
        list(GET list ${i} feature)
        list(GET list ${j} option)
        set(value OFF)  # (not a variable named "on": if(on) reads the constant ON)
        if(feature IN_LIST FEATURES)
          set(value ON)
        endif()
        if(kind STREQUAL "INVERTED_FEATURES")
          if(value)
            set(value OFF)
          else()
            set(value ON)
          endif()
        endif()
        list(APPEND out "-D${option}=${value}")
      endforeach()
    endif()
  endforeach()
  set(${arg_OUT_FEATURE_OPTIONS} "${out}" PARENT_SCOPE)
endfunction()

function(vcpkg_find_cuda)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_CUDA_TOOLKIT_ROOT" "")
  if(NOT CUDA_ROOT OR NOT EXISTS "${CUDA_ROOT}/bin/nvcc")
    message(FATAL_ERROR "emulate-port: vcpkg_find_cuda: no nvcc in ${CUDA_ROOT}/bin")
  endif()
  set(${arg_OUT_CUDA_TOOLKIT_ROOT} "${CUDA_ROOT}" PARENT_SCOPE)
  message(STATUS "vcpkg_find_cuda: ${CUDA_ROOT}")
endfunction()

function(vcpkg_cmake_configure)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "SOURCE_PATH" "OPTIONS;OPTIONS_RELEASE;MAYBE_UNUSED_VARIABLES")
  if(NOT VCPKG_BUILD_TYPE STREQUAL "release")
    message(FATAL_ERROR "emulate-port: the port must set VCPKG_BUILD_TYPE release before configuring")
  endif()
  set(build "${CURRENT_BUILDTREES_DIR}/${TARGET_TRIPLET}-rel")
  # The options vcpkg_cmake_configure adds on its own that matter for an install tree.
  _emu_run(config-${TARGET_TRIPLET}-rel-out.log "${CMAKE_COMMAND}" -S "${arg_SOURCE_PATH}" -B "${build}" -G Ninja
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${CURRENT_PACKAGES_DIR}"
    -DCMAKE_INSTALL_LIBDIR:STRING=lib -DCMAKE_INSTALL_BINDIR:STRING=bin
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DCMAKE_EXPORT_NO_PACKAGE_REGISTRY=ON
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DCMAKE_INSTALL_SYSTEM_RUNTIME_LIBS_SKIP=TRUE
    ${arg_OPTIONS} ${arg_OPTIONS_RELEASE})
  string(REGEX MATCH "Manually-specified variables were not used by the project:\n\n([^\n]+\n)+" unused "${_emu_out}")
  if(unused)
    string(REGEX MATCHALL "\n    [A-Za-z0-9_]+" names "${unused}")
    foreach(n IN LISTS names)
      string(STRIP "${n}" n)
      # Only the port's own OPTIONS count (vcpkg's fixed ones are its business).
      set(from_port OFF)
      foreach(opt IN LISTS arg_OPTIONS arg_OPTIONS_RELEASE)
        if(opt MATCHES "^-D${n}(:[A-Z]+)?=")
          set(from_port ON)
        endif()
      endforeach()
      if(from_port AND NOT n IN_LIST arg_MAYBE_UNUSED_VARIABLES)
        message(FATAL_ERROR "emulate-port: the port passes ${n}, which nsightkit's CMakeLists.txt "
                            "does not use (not in MAYBE_UNUSED_VARIABLES)")
      endif()
    endforeach()
  endif()
  set(_EMU_BUILD_DIR "${build}" PARENT_SCOPE)
endfunction()

function(vcpkg_cmake_install)
  _emu_run(install-${TARGET_TRIPLET}-rel-out.log "${CMAKE_COMMAND}" --build "${_EMU_BUILD_DIR}" --target install)
endfunction()

function(vcpkg_cmake_config_fixup)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "PACKAGE_NAME;CONFIG_PATH" "")
  if(NOT arg_PACKAGE_NAME)
    set(arg_PACKAGE_NAME "${PORT}")
  endif()
  if(NOT arg_CONFIG_PATH)
    set(arg_CONFIG_PATH "share/${arg_PACKAGE_NAME}")
  endif()
  if(NOT arg_CONFIG_PATH STREQUAL "share/${arg_PACKAGE_NAME}")
    message(FATAL_ERROR "emulate-port: only an in-place fixup (CONFIG_PATH share/${arg_PACKAGE_NAME}) "
                        "is emulated; the port asks to move ${arg_CONFIG_PATH}")
  endif()
  set(dir "${CURRENT_PACKAGES_DIR}/${arg_CONFIG_PATH}")
  if(NOT EXISTS "${dir}/${arg_PACKAGE_NAME}-config.cmake" AND NOT EXISTS "${dir}/${arg_PACKAGE_NAME}Config.cmake")
    file(GLOB_RECURSE found RELATIVE "${CURRENT_PACKAGES_DIR}" "${CURRENT_PACKAGES_DIR}/*-config.cmake")
    message(FATAL_ERROR "emulate-port: vcpkg_cmake_config_fixup: no ${arg_PACKAGE_NAME}-config.cmake in "
                        "${arg_CONFIG_PATH} (config files found: ${found}). Does CMakeLists.txt honour "
                        "NSIGHTKIT_INSTALL_CMAKEDIR?")
  endif()
  foreach(stale share/cmake lib/cmake)
    if(EXISTS "${CURRENT_PACKAGES_DIR}/${stale}")
      message(FATAL_ERROR "emulate-port: ${stale} is left in the package (vcpkg would flag it)")
    endif()
  endforeach()
  file(GLOB cmake_files "${dir}/*.cmake")
  foreach(f IN LISTS cmake_files)
    file(READ "${f}" text)
    string(FIND "${text}" "${CURRENT_PACKAGES_DIR}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "emulate-port: ${f} holds the absolute packages path ${CURRENT_PACKAGES_DIR}")
    endif()
  endforeach()
endfunction()

function(vcpkg_fixup_pkgconfig)
  file(GLOB pcs "${CURRENT_PACKAGES_DIR}/share/pkgconfig/*.pc" "${CURRENT_PACKAGES_DIR}/lib/pkgconfig/*.pc")
  foreach(pc IN LISTS pcs)
    file(READ "${pc}" text)
    # Like vcpkg: one prefix line, relative to the file; package paths become ${prefix}.
    string(REGEX REPLACE "(^|\n)prefix[\t ]*=[^\n]*" "" text "${text}")
    string(REPLACE "${CURRENT_PACKAGES_DIR}" "\${prefix}" text "${text}")
    string(REPLACE "${CURRENT_INSTALLED_DIR}" "\${prefix}" text "${text}")
    get_filename_component(dir "${pc}" DIRECTORY)
    file(RELATIVE_PATH up "${dir}" "${CURRENT_PACKAGES_DIR}")
    string(REGEX REPLACE "/$" "" up "${up}")
    file(WRITE "${pc}" "prefix=\${pcfiledir}/${up}\n${text}")
  endforeach()
  # vcpkg then checks that pkg-config can use each module, with the package's and the installed
  # tree's directories searched (and the system's, where this emulation takes fmt from).
  set(search "${CURRENT_PACKAGES_DIR}/lib/pkgconfig:${CURRENT_PACKAGES_DIR}/share/pkgconfig")
  string(APPEND search ":${CURRENT_INSTALLED_DIR}/lib/pkgconfig:${CURRENT_INSTALLED_DIR}/share/pkgconfig")
  foreach(pc IN LISTS pcs)
    get_filename_component(module "${pc}" NAME_WE)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${search}"
                            pkg-config --print-errors --exists --cflags --libs "${module}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "emulate-port: vcpkg_fixup_pkgconfig: pkg-config cannot use ${module}:\n${out}")
    endif()
  endforeach()
endfunction()

function(vcpkg_install_copyright)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "FILE_LIST")
  set(text "")
  foreach(f IN LISTS arg_FILE_LIST)
    if(NOT EXISTS "${f}")
      if(ALLOW_MISSING_COPYRIGHT)
        message(WARNING "emulate-port: vcpkg_install_copyright: ${f} does not exist; real vcpkg stops here")
        file(WRITE "${WORK}/copyright-missing" "${f}\n")
        return()
      endif()
      message(FATAL_ERROR "emulate-port: vcpkg_install_copyright: ${f} does not exist")
    endif()
    file(READ "${f}" content)
    string(APPEND text "${content}")
  endforeach()
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright" "${text}")
endfunction()

message(STATUS "emulate-port: running ${CURRENT_PORT_DIR}/portfile.cmake for ${PORT}:${TARGET_TRIPLET}")
include("${CURRENT_PORT_DIR}/portfile.cmake")

# vcpkg's post-build checks (the ones that apply to a release-only Linux package).
if(EXISTS "${WORK}/copyright-missing")
  set(_emu_skip_copyright ON)  # reported by the caller; a real vcpkg stops in vcpkg_install_copyright
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright" "placeholder: LICENSE missing\n")
endif()
find_program(_emu_python NAMES python3 REQUIRED)
execute_process(COMMAND "${_emu_python}" "${CMAKE_CURRENT_LIST_DIR}/post_build_checks.py"
    --package "${CURRENT_PACKAGES_DIR}" --port "${CURRENT_PORT_DIR}"
    --forbid "${WORK}/packages" --forbid "${WORK}/installed" --forbid "${WORK}/buildtrees"
    --forbid "${DOWNLOADS}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "emulate-port: vcpkg's post-build checks found problems:\n${err}")
endif()
if(_emu_skip_copyright)
  file(REMOVE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright")
endif()
# What the port installs besides headers and share/: libnsightkit, the pkg-config modules, the NVTX
# tool libraries and the command in tools/<port>; no debug tree (release-only).
if(EXISTS "${CURRENT_PACKAGES_DIR}/debug")
  message(FATAL_ERROR "emulate-port: a release-only port installed debug/")
endif()
file(GLOB_RECURSE _emu_lib_files RELATIVE "${CURRENT_PACKAGES_DIR}" "${CURRENT_PACKAGES_DIR}/lib/*"
     "${CURRENT_PACKAGES_DIR}/tools/*")
foreach(f IN LISTS _emu_lib_files)
  if(NOT f MATCHES "^(lib/pkgconfig/[^/]+\\.pc|lib/lib${PORT}\\.a|lib/${PORT}/lib[^/]+\\.so|tools/${PORT}/${PORT})$")
    message(FATAL_ERROR "emulate-port: the port installed an unexpected file ${f}")
  endif()
endforeach()

# `vcpkg install` then copies the package into installed/<triplet>; the packages dir goes away.
file(REMOVE_RECURSE "${CURRENT_INSTALLED_DIR}")
file(MAKE_DIRECTORY "${CURRENT_INSTALLED_DIR}")
file(COPY "${CURRENT_PACKAGES_DIR}/" DESTINATION "${CURRENT_INSTALLED_DIR}")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}")
message(STATUS "emulate-port: installed ${PORT}:${TARGET_TRIPLET} into ${CURRENT_INSTALLED_DIR}")
