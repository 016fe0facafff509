# The optional component nsightkit::mpi (include/nsightkit/mpi.hpp: every rank's report gathered
# to rank 0 and merged, bounded waits, a failing rank ending the job; docs/multi-gpu.md).
# Included by nsightkitDependencies.cmake, so the build tree and the installed package
# (find_package(nsightkit COMPONENTS mpi)) define it the same way, at the consumer's configure.
#
# nsightkit_add_mpi_component([GLOBAL])
# Defines nsightkit::mpi (nsightkit::nsightkit + MPI::MPI_CXX + {fmt}; call after
# nsightkit_find_dependencies: NSIGHTKIT_FMT_PROVIDER) when find_package(MPI COMPONENTS
# CXX) finds an MPI (Open MPI, MPICH — also MPICH's PyPI wheel through MPI_HOME or
# MPI_CXX_COMPILER=<wheel>/bin/mpicxx — Intel MPI, ...), and sets NSIGHTKIT_MPI_FOUND and
# NSIGHTKIT_MPI_REASON (why not) in the caller's scope. Never stops the configure.
include_guard(GLOBAL)

function(nsightkit_add_mpi_component)
  set(NSIGHTKIT_MPI_FOUND FALSE PARENT_SCOPE)
  if(TARGET nsightkit::mpi)
    set(NSIGHTKIT_MPI_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET MPI::MPI_CXX)
    # Only MPI's C API is used: keep the deprecated C++ bindings (mpicxx.h) out of the build.
    if(NOT DEFINED MPI_CXX_SKIP_MPICXX)
      set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "Skip MPI's deprecated C++ bindings")
    endif()
    find_package(MPI QUIET COMPONENTS CXX)
  endif()
  if(NOT TARGET MPI::MPI_CXX)
    set(NSIGHTKIT_MPI_REASON
      "MPI (MPI::MPI_CXX) was not found: install one (Debian: libopenmpi-dev openmpi-bin; or pip's mpich, then MPI_HOME=<its data dir>) or point MPI_CXX_COMPILER at its mpicxx"
      PARENT_SCOPE)
    return()
  endif()
  if("GLOBAL" IN_LIST ARGN)
    add_library(nsightkit::mpi INTERFACE IMPORTED GLOBAL)
  else()
    add_library(nsightkit::mpi INTERFACE IMPORTED)
  endif()
  # mpi.hpp's merge is header-only: its translation units format with {fmt} in place.
  set_target_properties(nsightkit::mpi PROPERTIES
    INTERFACE_LINK_LIBRARIES "nsightkit::nsightkit;MPI::MPI_CXX;${NSIGHTKIT_FMT_PROVIDER}")
  set(NSIGHTKIT_MPI_FOUND TRUE PARENT_SCOPE)
endfunction()
