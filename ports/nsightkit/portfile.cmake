# vcpkg overlay port for nsightkit, kept in nsightkit's own repository (ports/nsightkit): the
# sources are this checkout, two directories up, so nothing is downloaded. A port published in a
# registry would fetch a release instead (vcpkg_from_github / vcpkg_from_git).
# Note: vcpkg hashes the port directory, not the sources, for its binary cache: after changing
# nsightkit's headers, `vcpkg remove nsightkit` (classic mode) or bump "port-version".
get_filename_component(SOURCE_PATH "${CURRENT_PORT_DIR}/../.." ABSOLUTE)
if(NOT EXISTS "${SOURCE_PATH}/include/nsightkit/nsightkit.hpp")
  message(FATAL_ERROR "nsightkit overlay port: no nsightkit sources at ${SOURCE_PATH}")
endif()

# Header-only: one configuration, nothing compiled, no debug tree.
set(VCPKG_BUILD_TYPE release)

# NVTX3 comes from the CUDA toolkit (vcpkg has no NVTX port in its main registry); the `cuda`
# dependency checks that a toolkit is installed and tells where.
vcpkg_find_cuda(OUT_CUDA_TOOLKIT_ROOT cuda_toolkit_root)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DNSIGHTKIT_INSTALL=ON
    -DNSIGHTKIT_BUILD_TESTS=OFF
    -DNSIGHTKIT_BUILD_EXAMPLES=OFF
    -DNSIGHTKIT_BUILD_BENCHMARKS=OFF
    -DNSIGHTKIT_CUDA=OFF
    "-DNSIGHTKIT_INSTALL_CMAKEDIR=share/${PORT}"
    "-DCUDAToolkit_ROOT=${cuda_toolkit_root}"
  MAYBE_UNUSED_VARIABLES
    CUDAToolkit_ROOT
)
vcpkg_cmake_install()
# The config is installed straight into share/nsightkit; the fixup checks and normalises it.
vcpkg_cmake_config_fixup()
vcpkg_fixup_pkgconfig()

# NSIGHTKIT_DISABLE is deliberately not a feature: features must be additive, and disabling is the
# final application's choice (target_compile_definitions(app PRIVATE NSIGHTKIT_DISABLE)).
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
