# vcpkg port for nsightkit — the one port, for nsightkit's repository and for a registry alike. In
# the repository (ports/nsightkit, an overlay port: `vcpkg install nsightkit --overlay-ports=ports`)
# it builds this checkout, two directories up, and downloads nothing. Copied into a registry
# (microsoft/vcpkg or your own) it fetches the release with vcpkg_from_github: REPO and SHA512
# below are written for each release by packaging/vcpkg/update-registry-port.sh.
# Note: vcpkg hashes the port directory, not the sources, for its binary cache: after changing
# the checkout, `vcpkg remove nsightkit` (classic mode) or bump "port-version".
get_filename_component(checkout "${CURRENT_PORT_DIR}/../.." ABSOLUTE)
if(EXISTS "${checkout}/include/nsightkit/config.hpp" AND EXISTS "${checkout}/ports/nsightkit/portfile.cmake")
  set(SOURCE_PATH "${checkout}")
else()
  vcpkg_from_github(
    OUT_SOURCE_PATH SOURCE_PATH
    REPO nsightkit/nsightkit
    REF "v${VERSION}"
    SHA512 0
    HEAD_REF main
  )
endif()

# One configuration: libnsightkit is what pkg-config users link (the CMake package compiles its
# own in the consumer's project, in the consumer's build type); the nsightkit command and its NVTX
# tool libraries are release programs.
set(VCPKG_BUILD_TYPE release)

# NVTX3's headers (compiled into libnsightkit and the command) are not a vcpkg port: nsightkit finds
# them on this machine, in its order (NSIGHTKIT_NVTX3_INCLUDE_DIR, the CUDA toolkit 12.9+, PyPI's
# nvidia-nvtx), and the installed CMake package again when a consumer configures. The `cuda`
# feature adds vcpkg's cuda port (which checks that a toolkit is installed) and builds against
# that toolkit: the pinned pool's members in libnsightkit, the CUPTI tool library and
# nsightkit-cupti.pc; without it, a toolkit nsightkit finds on its own is used the same way.
set(cuda_options "")
if("cuda" IN_LIST FEATURES)
  vcpkg_find_cuda(OUT_CUDA_TOOLKIT_ROOT cuda_toolkit_root)
  set(cuda_options "-DCUDAToolkit_ROOT=${cuda_toolkit_root}")
endif()

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${cuda_options}
    -DNSIGHTKIT_INSTALL=ON
    -DNSIGHTKIT_BUILD_TOOLS=ON
    -DNSIGHTKIT_BUILD_TESTS=OFF
    -DNSIGHTKIT_BUILD_EXAMPLES=OFF
    -DNSIGHTKIT_BUILD_BENCHMARKS=OFF
    -DNSIGHTKIT_CUDA=OFF
    "-DNSIGHTKIT_INSTALL_CMAKEDIR=share/${PORT}"
    # vcpkg keeps programs in tools/<port>; the command finds its tool libraries relative to it.
    "-DCMAKE_INSTALL_BINDIR=tools/${PORT}"
  MAYBE_UNUSED_VARIABLES
    CUDAToolkit_ROOT
)
vcpkg_cmake_install()
# The config is installed straight into share/nsightkit; the fixup checks and normalises it.
vcpkg_cmake_config_fixup()
# nsightkit.pc and nsightkit-cupti.pc have Libs: lib/pkgconfig, relative to their own directory.
vcpkg_fixup_pkgconfig()

# NSIGHTKIT_DISABLE is deliberately not a feature: features must be additive, and disabling is the
# final application's choice (target_compile_definitions(app PRIVATE NSIGHTKIT_DISABLE)).
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
