"""Test fixture: a local `nvtx` package made from the CUDA toolkit's NVTX3 headers.

scripts/check-conan.sh creates it in its throwaway Conan cache to test, offline, the path where
nsightkit's NVTX3 comes from a Conan package instead of [platform_requires]. Its package_info
copies conan center's `nvtx` recipe (recipes/nvtx/all/conanfile.py): file name `nvtx`, target
`nvtx::nvtx`, aliases `nvtx3::nvtx3-cpp` and `nvtx3::nvtx3-c`, `dl` on Linux. Only the source of
the headers differs (conan center downloads NVIDIA/NVTX's release). Not meant to be uploaded.

    conan create packaging/conan/nvtx-standin --version 3.1.0 -o "nvtx/*:cuda_root=/usr/local/cuda"
"""
import os

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.files import copy


class NvtxStandinConan(ConanFile):
    name = "nvtx"
    description = "NVTX3 headers copied from a local CUDA toolkit (test fixture for nsightkit)"
    license = "Apache-2.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"cuda_root": ["ANY"]}
    default_options = {"cuda_root": "/usr/local/cuda"}
    no_copy_source = True

    def package_id(self):
        self.info.clear()

    def _include_dir(self):
        return os.path.join(str(self.options.cuda_root), "include")

    def validate(self):
        if not os.path.isfile(os.path.join(self._include_dir(), "nvtx3", "nvtx3.hpp")):
            raise ConanInvalidConfiguration(
                f"nvtx stand-in: {self._include_dir()}/nvtx3/nvtx3.hpp not found; set -o nvtx/*:cuda_root=<CUDA toolkit>")

    def build(self):
        pass

    def package(self):
        copy(self, "*", os.path.join(self._include_dir(), "nvtx3"),
             os.path.join(self.package_folder, "include", "nvtx3"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "nvtx")
        self.cpp_info.set_property("cmake_target_name", "nvtx::nvtx")
        self.cpp_info.set_property("cmake_target_aliases", ["nvtx3::nvtx3-cpp", "nvtx3::nvtx3-c"])
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        if self.settings.os in ["Linux", "FreeBSD"]:
            self.cpp_info.system_libs.append("dl")
