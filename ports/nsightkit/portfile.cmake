# vcpkg overlay port for nsightkit, kept in nsightkit's own repository (ports/nsightkit): the
# sources are this checkout, two directories up, so nothing is downloaded. The port for a
# registry, which fetches a release with vcpkg_from_github, is packaging/vcpkg/registry/ports/
# nsightkit; below the source line both portfiles are the same (scripts/check-vcpkg-port.sh
# compares them).
# Note: vcpkg hashes the port directory, not the sources, for its binary cache: after changing
# nsightkit's headers, `vcpkg remove nsightkit` (classic mode) or bump "port-version".
get_filename_component(SOURCE_PATH "${CURRENT_PORT_DIR}/../.." ABSOLUTE)
if(NOT EXISTS "${SOURCE_PATH}/include/nsightkit/nsightkit.hpp")
  message(FATAL_ERROR "nsightkit overlay port: no nsightkit sources at ${SOURCE_PATH}")
endif()

# ---- the same in both ports from here on ----
# Header-only: one configuration, nothing compiled, no debug tree.
set(VCPKG_BUILD_TYPE release)

# NVTX3 is not a vcpkg dependency: the installed CMake package finds it when the consumer
# configures (NSIGHTKIT_NVTX3_INCLUDE_DIR, the CUDA toolkit 12.9+, or PyPI's nvidia-nvtx; see
# usage). The `cuda` feature adds vcpkg's cuda port (which checks that a toolkit is installed)
# and installs the pkg-config module of nsightkit's CUPTI component; without it the toolkit is
# not looked at, so the package does not depend on what this machine happens to have.
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  INVERTED_FEATURES
    cuda CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit
)
set(cuda_options "")
if("cuda" IN_LIST FEATURES)
  vcpkg_find_cuda(OUT_CUDA_TOOLKIT_ROOT cuda_toolkit_root)
  set(cuda_options "-DCUDAToolkit_ROOT=${cuda_toolkit_root}")
endif()

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${FEATURE_OPTIONS}
    ${cuda_options}
    -DNSIGHTKIT_INSTALL=ON
    -DNSIGHTKIT_BUILD_TESTS=OFF
    -DNSIGHTKIT_BUILD_EXAMPLES=OFF
    -DNSIGHTKIT_BUILD_BENCHMARKS=OFF
    -DNSIGHTKIT_CUDA=OFF
    "-DNSIGHTKIT_INSTALL_CMAKEDIR=share/${PORT}"
  MAYBE_UNUSED_VARIABLES
    CUDAToolkit_ROOT
    CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit
)
vcpkg_cmake_install()
# The config is installed straight into share/nsightkit; the fixup checks and normalises it.
vcpkg_cmake_config_fixup()
# nsightkit.pc has no Libs (header-only): share/pkgconfig. nsightkit-cupti.pc links CUPTI:
# lib/pkgconfig. Both are relative to their own directory already.
vcpkg_fixup_pkgconfig()

# NSIGHTKIT_DISABLE is deliberately not a feature: features must be additive, and disabling is the
# final application's choice (target_compile_definitions(app PRIVATE NSIGHTKIT_DISABLE)).
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
