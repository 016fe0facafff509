# Runs ports/nsightkit/portfile.cmake without vcpkg, for scripts/check-vcpkg-port.sh.
#
#   cmake -DPORT_DIR=<ports/nsightkit> -DWORK=<dir> -DTRIPLET=x64-linux -DCUDA_ROOT=<toolkit>
#         [-DALLOW_MISSING_COPYRIGHT=ON] -P emulate-port.cmake
#
# The portfile itself is include()d unchanged; the vcpkg helpers it calls are replaced by functions
# that do what vcpkg's do for this header-only port, with plain CMake:
#   vcpkg_find_cuda            -> CUDA_ROOT (the cuda port only checks that a toolkit exists)
#   vcpkg_cmake_configure      -> cmake -G Ninja with the port's OPTIONS plus the options vcpkg
#                                 always adds for a release build; an unused variable not listed
#                                 in MAYBE_UNUSED_VARIABLES fails (vcpkg reports them too)
#   vcpkg_cmake_install        -> cmake --install into CURRENT_PACKAGES_DIR
#   vcpkg_cmake_config_fixup   -> checks the end state the real fixup produces: the config in
#                                 share/<PACKAGE_NAME>, nothing left in share/cmake or lib/cmake,
#                                 no absolute path of the packages directory in it
#   vcpkg_fixup_pkgconfig      -> prefix=${pcfiledir}/../.. in share/pkgconfig and lib/pkgconfig
#   vcpkg_install_copyright    -> concatenates FILE_LIST into share/<port>/copyright
# Not emulated: vcpkg's toolchain file and environment, its post-build checks beyond the ones
# below, the binary cache, and the ports the port depends on (fmt and cuda are the system's).
cmake_minimum_required(VERSION 3.22)
foreach(v PORT_DIR WORK TRIPLET CUDA_ROOT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "emulate-port.cmake: -D${v}=... is required")
  endif()
endforeach()

get_filename_component(CURRENT_PORT_DIR "${PORT_DIR}" ABSOLUTE)
get_filename_component(PORT "${CURRENT_PORT_DIR}" NAME)
set(TARGET_TRIPLET "${TRIPLET}")
set(CURRENT_PACKAGES_DIR "${WORK}/packages/${PORT}_${TRIPLET}")
set(CURRENT_BUILDTREES_DIR "${WORK}/buildtrees/${PORT}")
set(CURRENT_INSTALLED_DIR "${WORK}/installed/${TRIPLET}")
set(VCPKG_TARGET_IS_LINUX ON)
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

function(vcpkg_find_cuda)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_CUDA_TOOLKIT_ROOT" "")
  if(NOT EXISTS "${CUDA_ROOT}/bin/nvcc")
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
    string(REPLACE "prefix=${CURRENT_PACKAGES_DIR}\n" "prefix=\${pcfiledir}/../..\n" text "${text}")
    string(REPLACE "${CURRENT_PACKAGES_DIR}" "\${prefix}" text "${text}")
    file(WRITE "${pc}" "${text}")
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

# A few of vcpkg's post-build checks that apply to a header-only port.
foreach(dir debug bin lib)
  if(EXISTS "${CURRENT_PACKAGES_DIR}/${dir}")
    file(GLOB_RECURSE files "${CURRENT_PACKAGES_DIR}/${dir}/*")
    if(files)
      message(FATAL_ERROR "emulate-port: a header-only port installed files in ${dir}/: ${files}")
    endif()
    file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/${dir}")
  endif()
endforeach()
foreach(required include/${PORT} share/${PORT}/usage)
  if(NOT EXISTS "${CURRENT_PACKAGES_DIR}/${required}")
    message(FATAL_ERROR "emulate-port: the package lacks ${required}")
  endif()
endforeach()
file(GLOB_RECURSE all_files "${CURRENT_PACKAGES_DIR}/*")
foreach(f IN LISTS all_files)
  file(READ "${f}" text)
  foreach(p "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")
    string(FIND "${text}" "${p}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "emulate-port: ${f} holds the absolute path ${p} (vcpkg's absolute-path check)")
    endif()
  endforeach()
endforeach()

# `vcpkg install` then copies the package into installed/<triplet>; the packages dir goes away.
file(REMOVE_RECURSE "${CURRENT_INSTALLED_DIR}")
file(MAKE_DIRECTORY "${CURRENT_INSTALLED_DIR}")
file(COPY "${CURRENT_PACKAGES_DIR}/" DESTINATION "${CURRENT_INSTALLED_DIR}")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}")
message(STATUS "emulate-port: installed ${PORT}:${TARGET_TRIPLET} into ${CURRENT_INSTALLED_DIR}")
