# pkg-config files for the installed package (included by CMakeLists.txt inside NSIGHTKIT_INSTALL).
# Every path in them is relative to the .pc file (prefix=${pcfiledir}/...), so the installed tree
# can be moved, and none names a directory of this machine: pkg-config cannot search, so NVTX3's
# and the CUDA toolkit's directories are variables with conventional defaults that the user
# overrides with --define-variable (nvtx3_finder prints the NVTX3 one, see nsightkit.pc.in).
#   nsightkit.pc        the headers in the compiled mode and libnsightkit
#   nsightkit-cupti.pc  the CUPTI component (only where CUPTI was found)
# Both have Libs, so both go to <libdir>/pkgconfig (where vcpkg and distributions expect them).
# libnsightkit is static: what it needs of the system (threads, dlopen) is in Libs, where the C
# library does not have it already (glibc before 2.34).
include(CheckCXXSymbolExists)
check_cxx_symbol_exists(dlopen dlfcn.h NSIGHTKIT_DLOPEN_IN_LIBC)

# _nsightkit_pc_prefix(<pc dir> <out>): the prefix seen from <pc dir>, as ${pcfiledir}/../..
function(_nsightkit_pc_prefix pcdir out)
  file(RELATIVE_PATH up "/nsightkit-root/${pcdir}" "/nsightkit-root")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(${out} "\${pcfiledir}/${up}" PARENT_SCOPE)
endfunction()
# _nsightkit_pc_path(<dir> <out>): <dir> under ${prefix} unless it was given absolute.
function(_nsightkit_pc_path dir out)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

find_package(Threads REQUIRED)  # CMAKE_THREAD_LIBS_INIT, in this scope
set(NSIGHTKIT_PC_SYSTEM_LIBS "")
if(CMAKE_THREAD_LIBS_INIT)
  string(APPEND NSIGHTKIT_PC_SYSTEM_LIBS " ${CMAKE_THREAD_LIBS_INIT}")
endif()
if(CMAKE_DL_LIBS AND NOT NSIGHTKIT_DLOPEN_IN_LIBC)
  string(APPEND NSIGHTKIT_PC_SYSTEM_LIBS " -l${CMAKE_DL_LIBS}")
endif()
set(NSIGHTKIT_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
_nsightkit_pc_prefix("${NSIGHTKIT_PC_DIR}" NSIGHTKIT_PC_PREFIX)
_nsightkit_pc_path("${CMAKE_INSTALL_INCLUDEDIR}" NSIGHTKIT_PC_INCLUDEDIR)
_nsightkit_pc_path("${CMAKE_INSTALL_LIBDIR}" NSIGHTKIT_PC_LIBDIR)
_nsightkit_pc_path("${NSIGHTKIT_CMAKE_DIR}/nsightkit-find-nvtx3.py" NSIGHTKIT_PC_NVTX3_FINDER)
configure_file(cmake/nsightkit.pc.in "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/nsightkit.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/nsightkit.pc" DESTINATION ${NSIGHTKIT_PC_DIR})

# CUPTI lives in the CUDA toolkit: its directories are written relative to the toolkit's root
# (the layout found now), the root itself is a variable (default /usr/local/cuda).
if(NSIGHTKIT_CUPTI_FOUND)
  find_package(CUDAToolkit QUIET)  # its variables, in this scope
  get_target_property(_nsk_cupti_lib CUDA::cupti IMPORTED_LOCATION)
  get_filename_component(_nsk_cupti_libdir "${_nsk_cupti_lib}" DIRECTORY)
  find_path(NSIGHTKIT_PC_CUPTI_INCLUDEDIR cupti.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
    "${CUDAToolkit_TARGET_DIR}/extras/CUPTI/include" NO_DEFAULT_PATH)
  mark_as_advanced(NSIGHTKIT_PC_CUPTI_INCLUDEDIR)
  get_filename_component(_nsk_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  get_filename_component(_nsk_cuda_root "${_nsk_cuda_root}" REALPATH)
  get_filename_component(_nsk_cupti_libdir "${_nsk_cupti_libdir}" REALPATH)
  get_filename_component(_nsk_cupti_incdir "${NSIGHTKIT_PC_CUPTI_INCLUDEDIR}" REALPATH)
  file(RELATIVE_PATH NSIGHTKIT_PC_CUPTI_REL_LIBDIR "${_nsk_cuda_root}" "${_nsk_cupti_libdir}")
  file(RELATIVE_PATH NSIGHTKIT_PC_CUPTI_REL_INCLUDEDIR "${_nsk_cuda_root}" "${_nsk_cupti_incdir}")
  configure_file(cmake/nsightkit-cupti.pc.in "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/nsightkit-cupti.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/nsightkit-cupti.pc" DESTINATION ${NSIGHTKIT_PC_DIR})
endif()
